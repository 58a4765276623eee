"""tinyjax.pmap: JAX's parallel map on tinygrad's multi-device engine (docs/vmap.md, "pmap").

pmap is vmap with an axis name whose mapped inputs are first sharded across devices along the mapped axis, one example
per device (`Tensor.shard(devices, axis)`). The batching rules keep a batch sharded where it lies, so tinygrad's
multi-device lowering runs each example's kernels on its own device, and a collective over the axis becomes an op over
the sharded axis (psum: a reduce over it, which tinygrad lowers to an allreduce). The outputs come back sharded along
their out axis, as JAX's pmap returns them.
"""
from __future__ import annotations
import functools
from typing import Any, Callable, Hashable, Sequence
from tinyjax._tg import Tensor, sharding, shard_like, default_device
from tinyjax.config import config
from tinyjax.core import as_tensor
from tinyjax import pytree as tu
from tinyjax.transforms.vmap import vmap, size_error

__all__ = ["pmap", "device_names", "platform_of"]

_GPU_BACKENDS = ("CUDA", "NV", "AMD", "HIP", "CL", "METAL", "WEBGPU", "QCOM")

def platform_of(backend: str) -> str:
  """JAX's platform name ("cpu", "gpu") of a tinygrad backend."""
  return "gpu" if backend in _GPU_BACKENDS else "cpu" if backend in ("CPU", "LLVM", "CLANG", "PYTHON") else backend.lower()

def device_names(backend: str | None = None) -> list[str]:
  """The tinygrad devices tinyjax.devices(backend) lists and pmap maps over: on the CPU, CPU, CPU:1, ... as many as
  config.jax_num_cpu_devices (XLA's forced host device count), else one; on another backend its default device."""
  d = default_device()
  kind = d.partition(":")[0]
  cpus = [("CPU" if i == 0 else f"CPU:{i}") for i in range(max(config.jax_num_cpu_devices, 1))]
  if backend is None: return cpus if d == "CPU" else [d]
  if backend.lower() == "cpu": return cpus
  if backend.lower() in (platform_of(kind), kind.lower()): return [d]
  raise RuntimeError(f"Unknown backend {backend}. Available backends are {sorted({'cpu', platform_of(kind)})}")

def _tinygrad(d) -> str:
  if isinstance(d, str): return d
  if isinstance(name := getattr(d, "tinygrad", None), str): return name   # a tinyjax.Device
  raise TypeError(f"pmap devices must be tinyjax.Device objects or tinygrad device strings, got {d!r}")

def _split(t: Tensor, axis: int, devs: tuple[str, ...]) -> Tensor:
  """t split along `axis` over devs, one block per device: a copy from one device, none when t is replicated on devs."""
  if t.device is None: t = Tensor.zeros(*t.shape, dtype=t.dtype, device=devs[0]) + t   # a constant (axis_index): placed
  if len(devs) == 1: return t if t.device == devs[0] else t.to(devs[0])
  if t.device == devs and sharding(t) == axis: return t
  if t.device == devs and sharding(t) is None:   # replicated (a psum's result): each device keeps its own block
    like = Tensor.empty(*t.shape, dtype=t.dtype, device=devs[0]).shard(devs, axis).uop   # only its devices and axis are read
    return Tensor(shard_like(t.uop, like))
  if isinstance(t.device, tuple): t = t.to(t.device[0])   # sharded otherwise, or on other devices: gathered first
  return t.shard(devs, axis)

def pmap(fun: Callable, axis_name: Hashable | None = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Sequence[int] = ()) -> Callable:
  """Parallel map with jax.pmap's semantics: `fun` runs once per example of the mapped axis, example i on device i of
  `devices` (default `tinyjax.devices(backend)`), as one tinygrad multi-device computation; collectives (`lax.psum`,
  `all_gather`, `ppermute`, ...) communicate along `axis_name`. `static_broadcasted_argnums` are passed to every example
  as they are; `donate_argnums` is accepted and ignored (JAX's donation is an optimisation)."""
  if not callable(fun): raise TypeError(f"Expected a callable value, got {fun}")
  if devices is not None and not devices: raise ValueError("'devices' argument to pmap must be non-empty, or None.")
  static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) else tuple(static_broadcasted_argnums)
  if isinstance(in_axes, list): in_axes = tuple(in_axes)   # as JAX: a top-level list is a tuple
  if not all(type(a) is int for a in tu.tree_leaves(in_axes)):
    raise TypeError(f"pmap in_axes must be an int, None, or (nested) container with those types as leaves, but got {in_axes}.")
  if not all(type(a) is int for a in tu.tree_leaves(out_axes)):
    raise TypeError(f"pmap out_axes must be an int, None, or (nested) container with those types as leaves, but got {out_axes}.")

  @functools.wraps(fun)
  def pmapped(*args, **kwargs):
    if static and max(static) >= len(args):
      raise ValueError(f"pmapped function has static_broadcasted_argnums={static} but was called with only {len(args)} positional "
                       f"argument{'s' if len(args) > 1 else ''}. All static broadcasted arguments must be passed positionally.")
    dyn = [i for i in range(len(args)) if i not in static]
    dyn_axes = tuple(in_axes[i] for i in dyn) if static and isinstance(in_axes, tuple) else in_axes
    dargs = tuple(args[i] for i in dyn)

    # the mapped leaves, as vmap flattens them (keyword arguments mapped over axis 0)
    leaves, tree = tu.tree_flatten((dargs, kwargs))
    if isinstance(dyn_axes, tuple) and len(dyn_axes) != len(dargs):
      raise ValueError(f"pmap in_axes specification must be a tree prefix of the corresponding value, got specification {dyn_axes} "
                       f"for value tree {tu.tree_structure(dargs)}.")
    axes = tu.broadcast_prefix(dyn_axes, dargs, "pmap in_axes")
    axes += [0] * (len(leaves) - len(axes))
    mapped = [(i, ax) for i, ax in enumerate(axes) if ax is not None]
    for i, ax in mapped:
      leaves[i] = t = as_tensor(leaves[i])
      if not -t.ndim <= ax < t.ndim:
        raise ValueError(f"pmap was requested to map its argument along axis {ax}, which implies that its rank should be at "
                         f"least {ax + 1 if ax >= 0 else -ax}, but is only {t.ndim} (its shape is {tuple(t.shape)})")
    if not mapped: raise ValueError("pmap requires at least one argument with a mapped axis.")
    sizes = {leaves[i].shape[ax] for i, ax in mapped}
    if len(sizes) > 1:
      raise size_error(fun, dargs, kwargs, leaves, [(i, ax % leaves[i].ndim) for i, ax in mapped], None, "pmap")
    size = int(sizes.pop())
    if axis_size is not None and axis_size != size:
      raise ValueError(f"Specified axis_size {axis_size} doesn't match received axis_size {size}.")
    devs = tuple(_tinygrad(d) for d in (devices if devices is not None else device_names(backend)))
    if size > len(devs):
      raise ValueError(f"compiling computation that requires {size} logical devices, but only {len(devs)} devices are available "
                       f"(pmap's mapped axis has size {size}, devices: {devs})")
    devs = devs[:size]
    for i, ax in mapped: leaves[i] = _split(leaves[i], ax % leaves[i].ndim, devs)

    def body(*dyn_args, **kw):
      full = list(args)
      for i, a in zip(dyn, dyn_args, strict=True): full[i] = a
      return fun(*full, **kw)
    sargs, skwargs = tu.tree_unflatten(tree, leaves)
    out = vmap(body, dyn_axes, out_axes, axis_name=axis_name)(*sargs, **skwargs)
    outs, out_tree = tu.tree_flatten(out)
    oaxes = tu.broadcast_prefix(out_axes, out, "pmap out_axes")
    return tu.tree_unflatten(out_tree, [o if ax is None else _split(o, ax % o.ndim, devs) for o, ax in zip(outs, oaxes, strict=True)])
  return pmapped

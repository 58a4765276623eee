"""tinyjax.vmap: JAX's vmap on tinygrad, built from VMAPIN / VMAPOUT (see batching.py and docs/vmap.md)."""
from __future__ import annotations
import functools
from typing import Any, Callable, Hashable
from tinyjax.core import transform_entry, trace_scope, trace_state, as_tensor, is_array, type_str
from tinyjax import pytree as tu
from tinyjax.transforms.batching import Axis, vmapin, vmapout

def bound_axis(name: Hashable, collective: str) -> Axis:
  """The innermost vmap being traced whose axis_name is `name` (collectives resolve names here)."""
  for ax in reversed(trace_state().axes):
    if name is not None and ax.name == name: return ax
  raise NameError(f"Found an unbound axis name: {name}. To fix this, please call {collective} under `tinyjax.vmap` or "
                  f"`tinyjax.pmap` with axis_name={name!r}.")

def _keystr(path) -> str: return "".join(f"[{k}]" if isinstance(k, int) else f"[{k!r}]" for k in path)

def size_error(fun, args, kwargs, leaves, mapped, axis_size, api: str = "vmap") -> ValueError:
  """JAX's message for inconsistent mapped sizes (jax._src.api._mapped_axis_size), with the same grouping."""
  import collections, inspect
  try: params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
  except (TypeError, ValueError): params = None
  def arg_name(path):
    if params is None or path[0] >= len(params): return f"args{_keystr(path)}"
    return f"argument {params[path[0]]}{_keystr(path[1:])}"
  paths = [arg_name((i, *p)) for i, a in enumerate(args) for p in tu.optree.tree_paths(a, namespace=tu.NAMESPACE)]
  paths += [f"kwargs{_keystr(p)}" for p in tu.optree.tree_paths(kwargs, namespace=tu.NAMESPACE)]
  sizes = [leaves[i].shape[ax] for i, ax in mapped]
  first: dict[int, tuple[int, int]] = {}
  for (i, ax), sz in zip(mapped, sizes, strict=True): first.setdefault(sz, (i, ax))
  msg = [f"{api} got inconsistent sizes for array axes to be mapped:\n"]
  if axis_size is not None: msg.append(f"  * the `axis_size` argument was {axis_size};\n")
  for n, (sz, ct) in enumerate(collections.Counter(sizes).most_common()):
    i, ax = first[sz]
    ex = f"axis {ax} of {paths[i]} of type {type_str(leaves[i])}"
    if ct == 1: msg.append(f"  * one axis had size {sz}: {ex};\n")
    else: msg.append(f"  * {'most' if n == 0 else 'some'} axes ({ct} of them) had size {sz}, e.g. {ex};\n")
  return ValueError("".join(msg)[:-2])


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Hashable | None = None,
         axis_size: int | None = None) -> Callable:
  """Vectorizing map with jax.vmap's semantics; the batch becomes a real tinygrad dimension (no Python loop)."""
  if isinstance(in_axes, list): in_axes = tuple(in_axes)   # JAX treats a top-level list like a tuple
  if not (in_axes is None or type(in_axes) is int or isinstance(in_axes, tuple)):
    raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                    f"arguments passed to the function, but got {in_axes}.")
  axis_leaves: list = tu.optree.tree_leaves(in_axes, none_is_leaf=True, namespace=tu.NAMESPACE)  # type: ignore[arg-type]
  if any(a is not None and type(a) is not int for a in axis_leaves):
    raise TypeError("vmap in_axes must be an int, None, or (nested) container with those types as leaves, but got "
                    f"{in_axes}.")
  out_axis_leaves: list = tu.optree.tree_leaves(out_axes, none_is_leaf=True, namespace=tu.NAMESPACE)
  if any(a is not None and type(a) is not int for a in out_axis_leaves):
    raise TypeError("vmap out_axes must be an int, None, or (nested) container with those types as leaves, but got "
                    f"{out_axes}.")
  if axis_size is not None and (type(axis_size) is not int or axis_size < 0):
    raise ValueError(f"vmap axis_size must be a non-negative int, got {axis_size!r}")

  @functools.wraps(fun)
  @transform_entry
  def vmapped(*args, **kwargs):
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                       f"arguments passed to the function, but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    leaves, treedef = tu.tree_flatten((args, kwargs))
    arg_axes = tu.broadcast_prefix(in_axes, args, "vmap in_axes")
    axes = arg_axes + [0] * (len(leaves) - len(arg_axes))   # keyword arguments are mapped over axis 0, as in JAX
    mapped = []
    for i, (leaf, ax) in enumerate(zip(leaves, axes, strict=True)):
      if ax is None: continue
      t = leaves[i] = as_tensor(leaf)
      if not -t.ndim <= ax < t.ndim:
        raise ValueError(f"vmap was requested to map its argument along axis {ax}, which implies that its rank should "
                         f"be at least {ax + 1 if ax >= 0 else -ax}, but is only {t.ndim} (its shape is {tuple(t.shape)})")
      mapped.append((i, ax % t.ndim))

    sizes = {leaves[i].shape[ax] for i, ax in mapped}
    if axis_size is None and not leaves:
      raise ValueError("vmap wrapped function must be passed at least one argument containing an array or axis_size "
                       f"must be specified, got empty *args={args} and **kwargs={kwargs}")
    if axis_size is None and not mapped:
      raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must be specified")
    if len(sizes | ({axis_size} if axis_size is not None else set())) > 1:
      raise size_error(fun, args, kwargs, leaves, mapped, axis_size)
    size = axis_size if axis_size is not None else sizes.pop()

    axis = Axis(size, axis_name)
    for i, ax in mapped: leaves[i] = vmapin(leaves[i], ax, axis)
    in_scope = trace_state().axes
    in_scope.append(axis)
    try:
      with trace_scope("vmap", [leaves[i].uop for i, _ in mapped]):
        fargs, fkwargs = tu.tree_unflatten(treedef, leaves)
        out = fun(*fargs, **fkwargs)
    finally:
      in_scope.remove(axis)
      axis.release()   # from here its placeholders are this vmap's dead tracers, not pending ones

    out_leaves, out_tree = tu.tree_flatten(out)
    for i, leaf in enumerate(out_leaves):
      if not is_array(leaf):
        raise TypeError(f"Output from batched function {leaf!r} with type {type(leaf)} is not a valid Tensor type")
      out_leaves[i] = as_tensor(leaf)
    oaxes = tu.broadcast_prefix(out_axes, out, "vmap out_axes")
    return tu.tree_unflatten(out_tree, [vmapout(t, ax, axis) for t, ax in zip(out_leaves, oaxes, strict=True)])
  return vmapped

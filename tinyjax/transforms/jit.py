"""tinyjax.jit: JAX's jit on tinygrad's TinyJit.

One TinyJit per signature (tree structure, shapes, dtypes, devices, static values): new shapes trace again, as in
JAX, instead of TinyJit's shape-mismatch error. Outputs never alias: every call passes freshly allocated output
buffers into the TinyJit as extra inputs and the function assigns its results into them, so the last kernel stores
straight into a new buffer (no copy kernel) and results of successive calls are independent Tensors.
"""
from __future__ import annotations
import functools
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, TinyJit, static_shape, placeholder, jit_capturing, jit_kernel_names, allocated_buffer, assign_into
from tinyjax.core import trace_scope, trace_state, is_tracing, as_tensor
from tinyjax import tree_util as tu

def _is_dynamic(x) -> bool: return isinstance(x, (Tensor, np.ndarray))


class _Entry:
  """The TinyJit for one signature, with the output structure found by tracing the function once."""
  def __init__(self, call: Callable[[list[Tensor]], Any], tensors: list[Tensor]):
    self.call = call   # flat input Tensors -> the function's output pytree
    phs = [placeholder(tuple(t.shape), t.dtype, t.device) for t in tensors]
    with trace_scope("jit", [p.uop for p in phs]):
      out = call(phs)
    leaves, self.out_tree = tu.tree_flatten(out)
    for l in leaves:
      if not isinstance(l, (Tensor, int, float, bool, np.ndarray, np.generic)):
        raise TypeError(f"jit: output {l!r} of type {type(l)} is not a valid Tensor type")
    outs = [as_tensor(l) for l in leaves]
    self.out_specs = [(static_shape(o), o.dtype, o.device if isinstance(o.device, str) else tensors[0].device
                       if tensors else None) for o in outs]
    self.tinyjit = TinyJit(self._flat)

  def _flat(self, *bufs: Tensor):
    n = len(bufs) - len(self.out_specs)
    outs = [as_tensor(l) for l in tu.tree_leaves(self.call(list(bufs[:n])))]
    return tuple(assign_into(b, o) for b, o in zip(bufs[n:], outs, strict=True))

  def __call__(self, tensors: list[Tensor]):
    # flat buffers as TinyJit inputs (cheap for it to prepare), shaped views of them as the results
    flats, views = zip(*[allocated_buffer(s, d, dev) for s, d, dev in self.out_specs], strict=True) if self.out_specs else ((), ())
    running = trace_state().running_jit
    running.append(self)   # jitted functions it calls are inlined
    try: self.tinyjit(*tensors, *flats)
    finally: running.remove(self)
    return tu.tree_unflatten(self.out_tree, list(views))


class jit:
  """jax.jit for tinygrad: `tinyjax.jit(f)(*args)` traces f once per signature and replays its kernels with TinyJit.
  Tensor (and numpy array) leaves of the arguments are traced; other leaves and static arguments are part of the
  cache key, as are shapes, dtypes and devices."""
  def __init__(self, fun: Callable, static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    self._cache: dict[Any, _Entry] = {}

  def __get__(self, obj, objtype=None): return functools.partial(self.__call__, obj) if obj is not None else self

  def __call__(self, *args, **kwargs):
    # inside another jit or a transform's trace, a jitted function is just its function (inlined)
    if trace_state().running_jit or is_tracing() or jit_capturing(): return self.fun(*args, **kwargs)
    entry, tensors = self._entry(args, kwargs)
    return entry(tensors)

  def _entry(self, args, kwargs) -> tuple[_Entry, list[Tensor]]:
    nums = {a % len(args) for a in self.static_argnums} if args else set()
    static = tuple((i, args[i]) for i in sorted(nums)) + tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
    dyn = ([a for i, a in enumerate(args) if i not in nums], {k: v for k, v in kwargs.items() if k not in self.static_argnames})
    leaves, treedef = tu.tree_flatten(dyn)
    pos = [i for i, l in enumerate(leaves) if _is_dynamic(l)]
    tensors = [as_tensor(leaves[i]) for i in pos]
    # TinyJit inputs must be whole buffers: a view (x[0], x.T) is copied into one (contiguous() of a slice can stay a
    # view of the same buffer, which TinyJit would then replay at the captured offset), a constant realized
    tensors = [t if t.uop.has_buffer_identity() or not t.uop.is_realized else t.clone().realize() for t in tensors]
    tensors = [t.contiguous() if t.uop.is_virtual else t for t in tensors]
    # the same buffer passed twice is one TinyJit input (TinyJit refuses duplicates)
    uniq: list[Tensor] = []
    where = []
    for t in tensors:
      k = next((j for j, u in enumerate(uniq) if u is t), None)
      if k is None:
        uniq.append(t)
        k = len(uniq) - 1
      where.append(k)
    statics = tuple(l for i, l in enumerate(leaves) if i not in set(pos))
    key = (treedef, tuple(where), tuple((tuple(t.shape), t.dtype, str(t.device)) for t in uniq), statics, static)
    try: hash(key)
    except TypeError as e: raise ValueError(f"jit: non-Tensor arguments must be hashable (they are part of the cache key): {e}") from None

    if key not in self._cache:
      template = [None if i in set(pos) else l for i, l in enumerate(leaves)]
      nargs, static_pos, static_kw = len(args), {i: args[i] for i in nums}, dict(static[len(nums):])
      def call(flat: list[Tensor]):
        full = list(template)
        for i, k in zip(pos, where, strict=True): full[i] = flat[k]
        dargs, dkw = tu.tree_unflatten(treedef, full)
        it = iter(dargs)
        return self.fun(*[static_pos[i] if i in static_pos else next(it) for i in range(nargs)], **dkw, **static_kw)
      self._cache[key] = _Entry(call, uniq)
    return self._cache[key], uniq

  def kernels(self, *args, **kwargs) -> list[str]:
    """Names of the kernels a call with these arguments replays (captures the signature first if needed)."""
    entry, tensors = self._entry(args, kwargs)
    while entry.tinyjit.captured is None: entry(tensors)
    return jit_kernel_names(entry.tinyjit)

"""The one module that touches tinygrad internals (pinned: tinygrad==0.14.0).

Everything tinyjax needs from tinygrad's UOp IR is imported or wrapped here, so a
tinygrad upgrade is this file's work. See docs/design.md, "tinygrad 0.14 IR facts".
"""
from __future__ import annotations
import functools
from typing import Callable
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.engine.realize import capturing as _jit_capturing
from tinygrad.dtype import DType, strong_dtype
from tinygrad.helpers import GlobalCounters
from tinygrad.uop.ops import UOp, Ops, GroupOp, KernelInfo, shape_to_shape_arg
from tinygrad.mixin.gradient import compute_gradient   # tinygrad's reverse mode, used by tinyjax.vjp

__all__ = ["_pending", "poison_leaks", "TracedMarker", "dtype_name", "gather", "gather_args", "TinyJit", "jit_capturing", "allocated_buffer", "assign_into", "strong_dtype", "Tensor", "UOp", "Ops", "GroupOp", "DType", "dtypes", "GlobalCounters", "placeholder", "marker", "marker_arg",
           "inline_call", "custom_call", "custom_rule_of", "param_like", "move_axis", "traced_by", "trace_scope", "compute_gradient"]

# ---- placeholders and markers ---------------------------------------------------------------------------------------

def placeholder(shape: tuple[int, ...], dtype: DType, device) -> Tensor:
  """A fresh abstract input: an unallocated BUFFER (it is never realized: the transform substitutes it away)."""
  return Tensor.empty(*shape, dtype=dtype, device=device)

@functools.lru_cache(maxsize=None)
def _shape_arg(shape: tuple[int, ...]) -> UOp: return shape_to_shape_arg(shape)

def allocated_buffer(shape: tuple[int, ...], dtype: DType, device) -> tuple[Tensor, Tensor]:
  """A new, allocated, uninitialised buffer (no kernel) as (flat 1-D Tensor, Tensor of `shape` viewing it): a TinyJit
  input that the jitted function writes into. Built directly: Tensor.empty's graph rewrites cost ~0.2 ms per call."""
  n = 1
  for d in shape: n *= d
  buf = UOp.new_buffer(device, n, dtype)
  buf.buffer.ensure_allocated()
  flat = Tensor(buf)
  return flat, (flat if shape == (n,) else Tensor(UOp(Ops.RESHAPE, dtype, src=(buf, _shape_arg(shape)))))

def assign_into(buf: Tensor, value: Tensor) -> Tensor:
  """The 1-D buffer `buf` := value.flatten(). A tinyjax gather writes straight into buf (no copy kernel)."""
  u = value.uop
  if u.op is Ops.AFTER and (g := gather_args(u.src[1])) is not None and u.dtype == buf.dtype:
    return buf.custom_kernel(Tensor(g[0]), Tensor(g[1]), fxn=_gather_kernel)[0]
  return buf.assign(value.cast(buf.dtype).flatten())

def jit_capturing() -> bool: return bool(_jit_capturing)

# ---- gather: out[k] = src.flatten()[idx[k]] as one kernel ------------------------------------------------------------
# tinygrad lowers x[idx_tensor] to a one-hot compare + reduce; the scheduler folds it, but at 1e5 elements it still
# splits the reduce and recomputes the fused producer in every split (measured 50 ms vs 1.2 ms for this kernel).
GATHER = "tinyjax_gather"

def _gather_kernel(out: UOp, src: UOp, idx: UOp) -> UOp:
  i = UOp.range(out.numel(), 0)
  return out.flatten()[i].store(src.flatten()[idx.flatten()[i].cast(dtypes.weakint)]).end(i).sink(arg=KernelInfo(name=GATHER))

def gather(src: Tensor, idx: Tensor) -> Tensor:
  """src.flatten()[idx] (idx: int32 Tensor of any shape) with a direct-load kernel; src is realized first."""
  out = Tensor.empty(*idx.shape, dtype=src.dtype, device=src.device)
  return out.custom_kernel(src.contiguous(), idx, fxn=_gather_kernel)[0]

def gather_args(u: UOp) -> tuple[UOp, UOp] | None:
  """(src, idx) if u is the CALL of a tinyjax gather kernel."""
  if u.op is Ops.CALL and u.src[0].op is Ops.SINK and isinstance(u.src[0].arg, KernelInfo) and u.src[0].arg.name == GATHER:
    return u.src[2], u.src[3]
  return None

def dtype_name(dt: DType) -> str:
  """numpy's (and JAX's) name for a tinygrad dtype: float32, int64, bool..."""
  import numpy as np
  try: return np.dtype(dt.fmt).name if dt.fmt else dt.name
  except TypeError: return dt.name

def marker(src: UOp, arg, dtype: DType | None = None) -> UOp:
  """An inert node carrying `arg` that a transform lowers (collectives). CUSTOM takes its sources' broadcast shape."""
  return UOp(Ops.CUSTOM, dtype or src.dtype, src=(src,), arg=arg)

def marker_arg(u: UOp):
  return u.arg if u.op is Ops.CUSTOM else None

def inline_call(gettuple: UOp) -> UOp:
  """GETTUPLE(FUNCTION(body, *args)) -> the body's output with its PARAMs replaced by the call's arguments."""
  fn = gettuple.src[0]
  body, args = fn.src[0], fn.src[1:]
  out = body.src[gettuple.arg]
  params = {p: args[p.arg.slot] for p in out.toposort(enter_calls=False) if p.op is Ops.PARAM}
  return out.substitute(params)

def custom_call(body_outs: list[UOp], args: list[UOp], rule, grad_fxn) -> UOp:
  """A FUNCTION node for tinyjax's custom_jvp/custom_vjp: body over PARAMs, `rule` kept in CallInfo.aux, and a
  `grad_fxn` through which tinygrad's own reverse mode uses the custom rule."""
  return UOp.maketuple(*body_outs).call(*args, grad_fxn=grad_fxn, name=getattr(rule, "name", None), aux=rule)

def custom_rule_of(fn: UOp):
  return fn.arg.aux if fn.op is Ops.FUNCTION and fn.arg is not None and getattr(fn.arg, "aux", None) is not None else None

def param_like(u: UOp, slot: int) -> UOp: return u.param_like(slot)

def move_axis(u: UOp, src: int, dst: int) -> UOp:
  if src == dst: return u
  order = [i for i in range(u.ndim) if i != src]
  order.insert(dst, src)
  return u.permute(tuple(order))

# ---- reading traced values ------------------------------------------------------------------------------------------
# While a transform traces a user function, its placeholders stand for values that do not exist yet. Reading one
# (.numpy(), .item(), .tolist(), .data(), .realize(), bool()) must fail with a clear error, not compute on the garbage in
# an unallocated buffer. Values that do not depend on a placeholder (closed-over weights) can still be read, as in JAX.

_active: list[tuple[str, frozenset[UOp]]] = []   # (transform name, placeholder uops), innermost last
_leaked: set[UOp] = set()   # placeholders that Tensors still referred to when their transform raised
_pending: set[UOp] = set()  # placeholders of tinyjax.vmapin calls whose vmapout has not run yet

class TracedMarker:
  """Base of marker args (collectives) that stand for traced values inside a transform."""

class trace_scope:
  def __init__(self, transform: str, placeholders): self.entry = (transform, frozenset(placeholders))
  def __enter__(self): _active.append(self.entry)
  def __exit__(self, exc_type, *exc):
    _active.remove(self.entry)
    if exc_type is not None: poison_leaks(self.entry[1])

def poison_leaks(placeholders) -> None:
  """After a transform failed: a Tensor the function assigned to (buf.assign(traced)) still holds the traced value.
  Remember the placeholders, so that reading such a Tensor later raises instead of reading an unallocated buffer."""
  if not placeholders: return
  from tinygrad.tensor import all_tensors
  phs = set(placeholders)
  for ref in list(all_tensors):
    if (t := ref()) is not None and not phs.isdisjoint(t.uop.toposort()):
      _leaked.update(phs)
      return

def traced_by(t: Tensor) -> str | None:
  """Name of the innermost active transform whose placeholders (or markers) `t` depends on, or None."""
  if not _active and not _leaked and not _pending: return None
  deps = t.uop.toposort()
  for name, phs in reversed(_active):
    if any(p in deps for p in phs): return name
  if _pending and any(p in deps for p in _pending): return "vmap"
  if _active and any(u.op is Ops.CUSTOM and isinstance(u.arg, TracedMarker) for u in deps): return "vmap"
  if _leaked and any(p in deps for p in _leaked): return "leaked"
  return None

def _guard(method: str, orig: Callable):
  @functools.wraps(orig)
  def guarded(self, *args, **kwargs):
    if _active or _leaked or _pending:
      for t in (self,) + tuple(a for a in args if isinstance(a, Tensor)):
        if (name := traced_by(t)) is not None:
          from tinyjax.errors import ConcretizationTypeError, UnexpectedTracerError
          raise UnexpectedTracerError(method) if name == "leaked" else ConcretizationTypeError(name, method, t)
    return orig(self, *args, **kwargs)
  return guarded

for _m in ("realize", "numpy", "item", "tolist", "data", "__bool__", "_buffer"):
  setattr(Tensor, _m, _guard(_m, getattr(Tensor, _m)))

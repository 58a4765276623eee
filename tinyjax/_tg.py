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
from tinygrad.uop.ops import UOp, Ops, GroupOp
from tinygrad.mixin.gradient import compute_gradient   # tinygrad's reverse mode, used by tinyjax.vjp

__all__ = ["TinyJit", "jit_capturing", "allocated_empty", "strong_dtype", "Tensor", "UOp", "Ops", "GroupOp", "DType", "dtypes", "GlobalCounters", "placeholder", "marker", "marker_arg",
           "inline_call", "custom_call", "custom_rule_of", "param_like", "move_axis", "traced_by", "trace_scope", "compute_gradient"]

# ---- placeholders and markers ---------------------------------------------------------------------------------------

def placeholder(shape: tuple[int, ...], dtype: DType, device) -> Tensor:
  """A fresh abstract input: an unallocated BUFFER (it is never realized: the transform substitutes it away)."""
  return Tensor.empty(*shape, dtype=dtype, device=device)

def allocated_empty(shape: tuple[int, ...], dtype: DType, device) -> Tensor:
  """A new, allocated, uninitialised buffer (no kernel): a TinyJit input that the jitted function writes into."""
  t = Tensor.empty(*shape, dtype=dtype, device=device)
  t.uop.base.buffer.ensure_allocated()
  return t

def jit_capturing() -> bool: return bool(_jit_capturing)

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

class trace_scope:
  def __init__(self, transform: str, placeholders): self.entry = (transform, frozenset(placeholders))
  def __enter__(self): _active.append(self.entry)
  def __exit__(self, *exc): _active.remove(self.entry)

def traced_by(t: Tensor) -> str | None:
  """Name of the innermost active transform whose placeholders `t` depends on, or None."""
  if not _active: return None
  deps = t.uop.toposort()
  for name, phs in reversed(_active):
    if any(p in deps for p in phs): return name
  return None

def _guard(method: str, orig: Callable):
  @functools.wraps(orig)
  def guarded(self, *args, **kwargs):
    if _active:
      for t in (self,) + tuple(a for a in args if isinstance(a, Tensor)):
        if (name := traced_by(t)) is not None:
          from tinyjax.errors import ConcretizationTypeError
          raise ConcretizationTypeError(name, method, t)
    return orig(self, *args, **kwargs)
  return guarded

for _m in ("realize", "numpy", "item", "tolist", "data", "__bool__", "_buffer"):
  setattr(Tensor, _m, _guard(_m, getattr(Tensor, _m)))

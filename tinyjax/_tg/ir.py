"""tinygrad's UOp IR as tinyjax reads and builds it: the gather kernel, markers, calls (custom rules, tinygrad
@functions), PARAMs and raw movement ops."""
from __future__ import annotations
import math, types
from typing import Callable
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.dtype import DType
from tinygrad.uop.ops import UOp, Ops, GroupOp, KernelInfo
from tinyjax._tg.buffers import _new_buffer, sharding, static_shape, placeholder_like

# ---- gather: out[k] = src.flatten()[idx[k]] as one kernel ------------------------------------------------------------
# tinygrad lowers x[idx_tensor] to a one-hot compare + reduce; the scheduler folds it, but at 1e5 elements it still
# splits the reduce and recomputes the fused producer in every split (measured 50 ms vs 1.2 ms for this kernel).
GATHER = "tinyjax_gather"

def _gather_kernel(out: UOp, src: UOp, idx: UOp) -> UOp:
  i = UOp.range(out.numel(), 0)
  # the index is clamped to src's size: in range by construction, and the bound lets tinygrad drop the modulo with
  # which it would otherwise wrap the index of a reshaped source (a third of the kernel's time)
  j = idx.flatten()[i].cast(dtypes.weakint).maximum(0).minimum(src.numel() - 1)
  return out.flatten()[i].store(src.flatten()[j]).end(i).sink(arg=KernelInfo(name=GATHER))

def gather(src: Tensor, idx: Tensor) -> Tensor:
  """src.flatten()[idx] (idx: int32 Tensor of any shape) with a direct-load kernel; src is realized first. On several
  devices each runs the kernel on its own shards: idx indexes the device's shard of src, and the result is sharded
  like idx (a batched gather's rule makes the indices of a batch sharded along its batch axis local)."""
  if sharding(src) is not None and sharding(idx) != sharding(src):
    raise NotImplementedError(f"gather from an array sharded across devices along axis {sharding(src)} with indices that are not")
  out = Tensor.empty(*idx.shape, dtype=src.dtype, device=src.device) if sharding(idx) is None else \
    _new_buffer(static_shape(idx), src.dtype, idx.device, sharding(idx), allocate=False)[1]
  return out.custom_kernel(src.contiguous(), idx, fxn=_gather_kernel, grad_fxn=_gather_transpose)[0]

def _gather_transpose(ct: UOp, call: UOp) -> tuple:
  """Reverse mode of the gather: scatter-add the cotangent back to src's elements (a one-hot reduce, fused by tinygrad;
  only the gradient of sparse Jacobian values needs it)."""
  src, idx = call.src[2], call.src[3]
  n = src.numel()
  hit = Tensor(idx).flatten().reshape(-1, 1).eq(Tensor.arange(n).reshape(1, n))
  g = hit.where(Tensor(ct).flatten().reshape(-1, 1), 0).sum(0).reshape(src.shape)
  return (None, g.uop, None)

def _is_gather_call(u: UOp) -> bool:
  return u.op is Ops.CALL and u.src[0].op is Ops.SINK and isinstance(u.src[0].arg, KernelInfo) and u.src[0].arg.name == GATHER

def gather_args(u: UOp) -> tuple[UOp, UOp] | None:
  """(src, idx) if u is the value of a tinyjax gather: AFTER(out, CALL(kernel, out, src, idx))."""
  return (u.src[1].src[2], u.src[1].src[3]) if u.op is Ops.AFTER and _is_gather_call(u.src[1]) else None

def dtype_name(dt: DType) -> str:
  """numpy's (and JAX's) name for a tinygrad dtype: float32, int64, bool..."""
  try: return np.dtype(dt.fmt).name if dt.fmt else dt.name
  except TypeError: return dt.name

def marker(src: UOp, arg, dtype: DType | None = None) -> UOp:
  """An inert node carrying `arg` that a transform lowers (collectives). CUSTOM takes its sources' broadcast shape."""
  return UOp(Ops.CUSTOM, dtype or src.dtype, src=(src,), arg=arg)

def marker_arg(u: UOp):
  return u.arg if u.op is Ops.CUSTOM else None

def call_kind(u: UOp, inline_custom: bool) -> str | None:
  """How the interpreter treats a call-like node: "inline" (the GETTUPLE of a tinygrad @function, or of a custom call
  when inlining them, except control flow), "custom" (a tinyjax custom_jvp/custom_vjp FUNCTION), "gather" (the AFTER of a gather kernel),
  "skip" (a FUNCTION or CALL whose value its users carry), None (an ordinary op)."""
  if u.op is Ops.FUNCTION: return "skip" if _inlined(u, inline_custom) else "custom"
  if u.op is Ops.GETTUPLE and u.src[0].op is Ops.FUNCTION and _inlined(u.src[0], inline_custom): return "inline"
  if u.op is Ops.CALL and _is_gather_call(u): return "skip"
  if u.op is Ops.AFTER and _is_gather_call(u.src[1]): return "gather"
  return None

def _inlined(fn: UOp, inline_custom: bool) -> bool:
  # a custom call whose body is a host call (control flow: `opaque` rules) is never inlined: its body is no graph of ops
  return custom_rule_of(fn) is None or (inline_custom and not is_host_call(fn))

def is_host_call(u: UOp) -> bool:
  """u is the FUNCTION of a call whose body is a host call (its rule `opaque`: loops, branches, LAPACK, FFT)."""
  return u.op is Ops.FUNCTION and getattr(custom_rule_of(u), "opaque", False)

def inline_call(gettuple: UOp) -> UOp:
  """GETTUPLE(FUNCTION(body, *args)) -> the body's output with its PARAMs replaced by the call's arguments."""
  fn = gettuple.src[0]
  body, args = fn.src[0], fn.src[1:]
  out = body.src[gettuple.arg]
  params = {p: args[p.arg.slot] for p in out.toposort(enter_calls=False) if p.op is Ops.PARAM}
  return out.substitute(params)

def function_body(fn: Callable[..., list[Tensor]], like: list[Tensor]) -> UOp | None:
  """fn's outputs on inputs shaped like `like`, as the body of a tinygrad @function (a TUPLE over PARAMs: `call_body`
  calls it), or None where they read a buffer of their own (an array fn makes): that would be an input of the call."""
  phs = [placeholder_like(t) for t in like]
  body = UOp.maketuple(*[o.uop for o in fn(*phs)]).substitute({p.uop: p.uop.param_like(i) for i, p in enumerate(phs)})
  return None if any(u.op is Ops.BUFFER for u in body.toposort()) else body

def call_body(body: UOp, args: list[Tensor], name: str) -> list[Tensor]:
  """The outputs of a call of a `function_body` on args: one FUNCTION node, inlined by tinygrad's scheduler, by its
  gradient and by tinyjax's transforms (as a tinygrad @function's)."""
  fn = body.call(*[a.uop for a in args], name=name)
  return [Tensor(fn.gettuple(i)) for i in range(len(body.src))]

def custom_call(body_outs: list[UOp], args: list[UOp], rule, grad_fxn, precompile: bool = False) -> UOp:
  """A FUNCTION node for tinyjax's custom_jvp/custom_vjp/checkpoint: body over PARAMs, `rule` kept in CallInfo.aux, and
  a `grad_fxn` through which tinygrad's own reverse mode uses the custom rule. `precompile`: tinygrad schedules the
  call as a unit of its own instead of inlining it (a checkpoint's recomputation stays distinct from the forward)."""
  return UOp.maketuple(*body_outs).call(*args, grad_fxn=_stable(grad_fxn), name=getattr(rule, "name", None), aux=rule,
                                        precompile=precompile)

def _stable(grad_fxn):
  """One grad_fxn object per (rule, method). tinygrad keys a FUNCTION by str(CallInfo), which holds id(grad_fxn), and a
  bound method is a new object at each attribute access: every call of the same rule would be a new function to
  tinygrad's schedule cache, and an eager transform would schedule its graph again on every call."""
  if not isinstance(grad_fxn, types.MethodType) or not hasattr(owner := grad_fxn.__self__, "__dict__"): return grad_fxn
  return owner.__dict__.setdefault("_tinyjax_grad_fxns", {}).setdefault(grad_fxn.__func__, grad_fxn)

def custom_rule_of(fn: UOp):
  return fn.arg.aux if fn.op is Ops.FUNCTION and fn.arg is not None and getattr(fn.arg, "aux", None) is not None else None

def param_like(u: UOp, slot: int) -> UOp: return u.param_like(slot)

def set_items(x: Tensor, indices: tuple, values: Tensor) -> Tensor:
  """x with x[indices] = values, as a new value (tinygrad's functional setitem: `Tensor._getitem` with a value)."""
  return x._getitem(indices, values)


def const_value(u: UOp):
  """The Python number of a (broadcast) CONST, else None."""
  b = u.base
  return b.arg if b.op is Ops.CONST else None

def is_view(u: UOp) -> bool:
  """u is movement ops over a value (a transpose, a broadcast), not a buffer or a computed value itself."""
  return u.op in GroupOp.Movement and not u.has_buffer_identity()

def has_effects(u: UOp) -> bool:
  """Computing u would change state: write into a buffer that holds data (an assign to a realized Tensor; not the new
  buffer of a copy) or run a host call."""
  return any(x.op is Ops.CUSTOM_FUNCTION or (x.op is Ops.STORE and any(is_data(b) for b in x.src[0].toposort()))
             for x in u.toposort())

def is_data(u: UOp) -> bool:
  """u is a buffer holding data (a realized Tensor's, or numpy's): an input of any graph that uses it."""
  return u.op is Ops.BUFFER and u.is_realized

# tinygrad's raw movement/reduce constructors on UOps (no shape inference beyond the op's own)
def mop(u: UOp, op: Ops, arg) -> UOp: return u._mop(op, arg)
def rop(u: UOp, op: Ops, axes: tuple[int, ...]) -> UOp: return u._rop(op, axes)
def broadcast_to(u: UOp, shape: tuple) -> UOp: return u._broadcast_to(shape)

def move_axis(u: UOp, src: int, dst: int) -> UOp:
  if src == dst: return u
  order = [i for i in range(u.ndim) if i != src]
  order.insert(dst, src)
  return u.permute(tuple(order))


def param(slot: int, shape: tuple[int, ...], dtype: DType, device) -> UOp: return UOp.param(slot, dtype, shape, device)

def assign_into(buf: Tensor, value: Tensor) -> Tensor:
  """buf := value (buf from `allocated_buffer`). A tinyjax gather writes straight into a buffer on one device."""
  u = value.uop
  if (g := gather_args(u)) is not None and u.dtype == buf.dtype and isinstance(buf.device, str) and buf.ndim == 1:
    return buf.custom_kernel(Tensor(g[0]), Tensor(g[1]), fxn=_gather_kernel)[0]
  return buf.assign(value.cast(buf.dtype).reshape(buf.shape))

def stored_once(values: list[Tensor], store: Callable[[int, Tensor], Tensor]) -> list[Tensor]:
  """[store(i, values[i]) ...] (store: the Tensor of an assign of a value into an output), with a value that is part of
  another one read back from where it was stored instead of computed again: tinygrad computes each assign's value
  whole, so two outputs of one function that share work (a value and its square; a scan's carry and its ys) did it
  twice (the KS port's spectral constants: twice the code to compile)."""
  first: dict[UOp, int] = {}
  for i, v in enumerate(values):
    if v.uop.base.op not in (Ops.BUFFER, Ops.CONST, Ops.PARAM) and isinstance(v.device, str): first.setdefault(v.uop, i)
  out: list[Tensor | None] = [None] * len(values)
  new: dict[UOp, UOp] = {}
  for u in (UOp.sink(*first).toposort(enter_calls=False) if first and len(values) > 1 else ()):   # parts before wholes
    src = tuple(new.get(s, s) for s in u.src)
    n = u if src == u.src else u.replace(src=src)
    if (k := first.get(u)) is not None:
      out[k] = st = store(k, Tensor(n))
      if st.dtype == n.dtype and isinstance(st.device, str) and all(isinstance(d, int) for d in n.shape) and \
         st.numel() == math.prod(n.shape): n = st.reshape(n.shape).uop
    new[u] = n
  return [o if o is not None else store(i, Tensor(new.get(v.uop, v.uop))) for i, (v, o) in enumerate(zip(values, out, strict=True))]

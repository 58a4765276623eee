"""The one module that touches tinygrad internals (pinned: tinygrad==0.14.0).

Everything tinyjax needs from tinygrad's UOp IR is imported or wrapped here, so a
tinygrad upgrade is this file's work. See docs/design.md, "tinygrad 0.14 IR facts".
"""
from __future__ import annotations
import contextlib, functools, hashlib, re, threading, types
from typing import Any, Callable
import numpy as np
from tinygrad import Tensor, TinyJit, Device, dtypes
from tinygrad.engine.realize import capturing as _jit_capturing
from tinygrad.dtype import DType, strong_dtype, least_upper_dtype, _from_np_dtype, _to_np_dtype
from tinygrad.device import Buffer, MultiBuffer, canonicalize_device
from tinygrad.helpers import GlobalCounters
import tinygrad.helpers as _helpers
import sqlite3 as _sqlite3
import itertools, weakref
import tinygrad.engine.realize as _realize
from tinygrad.tensor import all_tensors as _all_tensors, _METADATA as _tensor_metadata
from tinygrad.helpers import Metadata as _Metadata
import tinygrad.schedule.rangeify as _rangeify
from tinygrad.engine.jit import jit_lower as _jit_lower
from tinygrad.codegen import to_program_key as _to_program_key, to_program_cache as _to_program_cache
from tinygrad.uop.ops import UOp, Ops, GroupOp, KernelInfo, AxisType, shape_to_shape_arg, buffers, ParamArg, CallInfo as _CallInfo
from tinygrad.mixin.gradient import compute_gradient   # tinygrad's reverse mode, used by tinyjax.vjp

__all__ = ["Tensor", "TinyJit", "UOp", "Ops", "GroupOp", "DType", "dtypes", "GlobalCounters", "strong_dtype", "compute_gradient",
           "static_shape", "placeholder", "kernel_search", "allocated_buffer", "assign_into", "jit_capturing", "jit_kernel_names",
           "sharding", "shard_like", "placeholder_like", "default_device", "np_dtype_of", "host_buffer", "jit_input", "gather", "gather_args",
           "dtype_name", "marker", "marker_arg", "call_kind", "inline_call", "custom_call", "custom_rule_of", "param_like",
           "move_axis", "mop", "rop", "broadcast_to", "install_read_guards", "TINYGRAD_LOCK", "least_upper_dtype",
           "np_dtype", "install_tensor_methods", "tensor_method", "param", "Step", "host_call", "scratch_like", "copy_buffer",
           "read_scalar", "holds_host_call", "preserved_tensors", "read_array", "write_array", "constant_array", "plain_buffer", "tensor_of",
           "canonical_key", "filled_buffer", "Replay", "captured_replay", "replay_buffers"]

# ---- placeholders and markers ---------------------------------------------------------------------------------------

def static_shape(x: Tensor | UOp) -> tuple[int, ...]:
  """x's shape as ints (tinyjax traces static shapes only; tinygrad's type also allows symbolic dimensions)."""
  assert all(isinstance(s, int) for s in x.shape), f"symbolic shapes are not supported, got {x.shape}"
  return tuple(int(s) for s in x.shape)

def placeholder(shape: tuple, dtype: DType, device) -> Tensor:
  """A fresh abstract input: an unallocated BUFFER (it is never realized: the transform substitutes it away)."""
  return Tensor.empty(*shape, dtype=dtype, device=device)

@functools.lru_cache(maxsize=None)
def _shape_arg(shape: tuple[int, ...]) -> UOp: return shape_to_shape_arg(shape)

def allocated_buffer(shape: tuple, dtype: DType, device, axis: int | None = None) -> tuple[UOp, Tensor]:
  """A new, allocated, uninitialised buffer (no kernel) as (TinyJit input, Tensor of `shape` viewing it), that the
  jitted function writes into with `assign_into`: the input is a flat 1-D buffer on one device or replicated over a
  device tuple (its UOp: `Tensor(input)` when a Tensor is needed), the shaped Tensor's when sharded on `axis`. Built
  directly: Tensor.empty's graph rewrites cost ~0.2 ms per call."""
  buf, shaped = _new_buffer(shape, dtype, device, axis, allocate=True)
  return (shaped.uop, shaped) if axis is not None else (buf, shaped)

def assign_into(buf: Tensor, value: Tensor) -> Tensor:
  """buf := value (buf from `allocated_buffer`). A tinyjax gather writes straight into a buffer on one device."""
  u = value.uop
  if (g := gather_args(u)) is not None and u.dtype == buf.dtype and isinstance(buf.device, str) and buf.ndim == 1:
    return buf.custom_kernel(Tensor(g[0]), Tensor(g[1]), fxn=_gather_kernel)[0]
  return buf.assign(value.cast(buf.dtype).reshape(buf.shape))

def _new_buffer(shape: tuple, dtype: DType, device, axis: int | None, allocate: bool) -> tuple[UOp, Tensor]:
  """A BUFFER uop and the Tensor of `shape` over it; sharded on `axis` it holds one shard per device."""
  shard = shape if axis is None else shape[:axis] + (shape[axis] // len(device),) + shape[axis+1:]
  n = 1
  for d in shard: n *= d
  # UOp.new_buffer, with its shape operand cached and its dtype given (inferring it is a tenth of a jitted call's dispatch)
  buf = UOp(Ops.BUFFER, dtype, src=(_shape_arg((n,)),), arg=ParamArg(next(UOp.unique_num), dtype, device=device))
  if allocate:   # what UOp.buffer does, without its shape inference (~10 us)
    buffers[buf] = b = (MultiBuffer(device, n, dtype) if isinstance(device, tuple) else Buffer(device, n, dtype)).ref(1)
    for x in _device_buffers(b): x.allocate()
  view = buf if shard == (n,) else UOp(Ops.RESHAPE, dtype, src=(buf, _shape_arg(shard)))
  return buf, tensor_of(view) if axis is None else Tensor(view.unshard(axis))

_REGISTERING = _Metadata(name="tinyjax.tensor_of")

def tensor_of(u: UOp) -> Tensor:
  """Tensor(u) for a UOp that has its device: what Tensor.__init__ does for it (canonicalizing the device, metadata
  wrappers) costs ~6 us, a quarter of a jitted call's dispatch."""
  t = object.__new__(Tensor)
  t.uop, t.grad, t.is_param = u, None, True
  # registering it hashes it, and Tensor.__hash__ runs tinygrad's metadata wrapper (a profiling context, ~3 us) unless
  # an op's metadata is already set: set it to the running op's (none here) for that moment
  saved = _tensor_metadata.state
  if saved is None: _tensor_metadata.state = _REGISTERING
  _all_tensors[weakref.ref(t)] = None
  _tensor_metadata.state = saved
  return t

def _device_buffers(b: Buffer | MultiBuffer) -> list[Buffer]: return b.bufs if isinstance(b, MultiBuffer) else [b]

def sharding(t: Tensor) -> int | None:
  """The axis a multi-device Tensor is sharded on (None: replicated, or on one device)."""
  return t.uop.axis if isinstance(t.device, tuple) else None

def shard_like(u: UOp, like: UOp) -> UOp:
  """u, when it is not sharded (replicated on like's devices, or with no device), split the way `like` is: each device
  keeps its block along like's sharded axis. tinygrad's STACK takes such a source whole next to sharded ones (its
  stack_multi stacks a (B, ...) replica with (B / devices, ...) shards, and a later op fails on the shape)."""
  if u.axis is not None or (ax := like.axis) is None: return u
  rng = UOp.range(len(like.device), -1, AxisType.DEVICE)
  return u._shard(ax, rng).unshard(ax, rng)

def placeholder_like(t: Tensor) -> Tensor:
  """`placeholder` with t's shape, dtype, device and sharding."""
  return _new_buffer(static_shape(t), t.dtype, t.device, sharding(t), allocate=False)[1]

def default_device() -> str: return Device.DEFAULT

def np_dtype(dt: DType):
  """numpy's dtype with dt's layout, or None (tinygrad maps bfloat16 and fp8 to float32)."""
  npdt = _to_np_dtype(dt)
  return np.dtype(npdt) if npdt is not None and np.dtype(npdt).itemsize == dt.itemsize else None

def host_buffer(a: np.ndarray, device, axis: int | None = None) -> Tensor | None:
  """numpy data copied into a new buffer on `device` (a device tuple: replicated, or sharded on `axis`) with no
  kernel, or None if tinygrad has no dtype with numpy's layout for it."""
  try: dt = _from_np_dtype(a.dtype)
  except KeyError: return None
  if np_dtype(dt) != a.dtype: return None
  buf, shaped = _new_buffer(a.shape, dt, canonicalize_device(device), axis, allocate=True)
  bufs = _device_buffers(buffers[buf])
  for b, part in zip(bufs, [a] * len(bufs) if axis is None else np.split(a, len(bufs), axis), strict=True): _copyin(b, part)
  return shaped

def _copyin(b: Buffer, a: np.ndarray) -> None:
  data = memoryview(bytearray(np.ascontiguousarray(a).tobytes()))
  # as tinygrad's own COPY does it (realize.exec_copy); Buffer.copy_from would run a COPY program (~0.3 ms)
  try: b.allocator._copyin(b._buf, data)
  except NotImplementedError: b.copy_from(Buffer("PYTHON", b.size, b.dtype, opaque=data))

def _copyout(b: Buffer) -> np.ndarray:
  """A buffer's data in a new numpy array: straight from the allocator (Buffer.numpy runs a COPY program, ~0.25 ms)."""
  out = np.empty(b.size, dtype=np_dtype(b.dtype))
  try: b.allocator._copyout(memoryview(out.data).cast("B"), b._buf)
  except NotImplementedError: return b.numpy().copy()
  return out

def _host_copy(t: Tensor) -> np.ndarray | None:
  """Tensor.numpy() of a realized whole buffer, copied out by its allocator: tinygrad's own path builds and runs a
  COPY program (280 us for 1000 floats; this: a few us). None for anything else (a view, a lazy graph, no numpy dtype)."""
  if (u := plain_buffer(t)) is None or (npdt := np_dtype(u.dtype)) is None: return None
  b = buffers[u]
  if not isinstance(b, Buffer) or b._base is not None: return None
  return _copyout(b).astype(npdt, copy=False).reshape(static_shape(t))

def read_array(u: UOp, shape: tuple[int, ...]) -> np.ndarray:
  """A buffer's data as a new numpy array of `shape` (a host read, for a host call's executor)."""
  return _copyout(_one(u).ensure_allocated()).reshape(shape)

def write_array(u: UOp, a: np.ndarray) -> None:
  """numpy data into a buffer, converted to its dtype (a host write, for a host call's executor)."""
  b = _one(u).ensure_allocated()
  _copyin(b, np.asarray(a, dtype=np_dtype(b.dtype)))

def np_dtype_of(a: np.ndarray) -> DType: return _from_np_dtype(a.dtype)

def _constant(u: UOp) -> UOp | None:
  """The CONST whose value fills all of u, if u is one moved around (not PAD: it adds zeros)."""
  while u.op in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP): u = u.src[0]
  return u if u.op is Ops.CONST else None

def _numpy_data(u: UOp) -> np.ndarray | None:
  """The numpy array behind `Tensor(array)` (a COPY to one device of a buffer on tinygrad's NPY device), else None."""
  if u.op is not Ops.COPY or not isinstance(u.arg, str) or (src := u.src[0]).op is not Ops.BUFFER or src.device != "NPY": return None
  b = buffers.get(src)
  if not isinstance(b, Buffer) or not b.is_allocated() or (npdt := np_dtype(src.dtype)) is None: return None
  return np.frombuffer(b.as_memoryview(), dtype=npdt)

def jit_input(t: Tensor, device, dtype: DType | None = None, copy: bool = False) -> tuple[Tensor, UOp | None]:
  """t's value as a TinyJit input: a realized buffer, in `dtype` if t is weakly typed, and the BUFFER it reads if that
  is one of t's (two inputs may not share one). A realized whole buffer is t itself (unless `copy`); a constant
  (Tensor(1.5), Tensor(2.0).expand(3)) is copied in from the host (no kernel); anything else (a view, a lazy or
  device-less graph) is copied into a new buffer, lazily (TinyJit realizes its inputs together). `device` is for
  values that have none."""
  u = t.uop
  if not copy and u.has_buffer_identity() and (b := u.unsharded_base).op is Ops.BUFFER:
    if (buf := buffers.get(b)) is None or not buf.is_allocated():   # Tensor.empty: TinyJit would ignore it
      for x in _device_buffers(b.buffer): x.ensure_allocated()
    return t, b
  dt = (dtype or strong_dtype(t.dtype)) if t.dtype in dtypes.weaks else t.dtype
  if (a := _numpy_data(u)) is not None and a.dtype == np_dtype(dt) and (out := host_buffer(a.reshape(static_shape(t)), u.arg)) is not None:
    return out, None   # Tensor(numpy array): copied in from the host, not by a COPY program (~1 ms)
  if u.device is None and (c := _constant(u)) is not None and (npdt := np_dtype(dt)) is not None:
    if (out := host_buffer(np.full(static_shape(t), c.arg, dtype=npdt), device)) is not None: return out, None
  return Tensor((u.cast(dt) if dt != u.dtype else u).clone(device=u.device or device)), None

def jit_capturing() -> bool: return bool(_jit_capturing)

def kernel_search(beam: int):
  """tinygrad's BEAM search over each kernel's optimizations while compiling (beam > 0; 0: tinygrad's own BEAM
  setting, from the environment). Results are kept in tinygrad's on-disk cache."""
  return _helpers.Context(BEAM=beam) if beam > 0 else contextlib.nullcontext()

def capturing_tinyjit(fn: Callable) -> Any:
  """A TinyJit that captures on its first call. TinyJit runs a first call plainly and captures on the second, which
  scheduled every function twice; the inputs tinyjax passes are realized buffers, so there is nothing to warm up."""
  tj = TinyJit(fn)
  tj.cnt = 1
  return tj

def captured_replay(jit) -> tuple[Replay, set[UOp]] | None:
  """A captured TinyJit's kernels as a Replay, with the buffers they write (None: not captured yet)."""
  return None if jit.captured is None else (Replay(jit.captured.linear), jit.captured._written_uops)

def plain_buffer(t: Tensor) -> UOp | None:
  """The BUFFER of a Tensor that is a realized whole buffer on one device (a strong dtype, not empty), else None: such
  an argument is passed to a TinyJit as it is."""
  u = t.uop
  if u.op is Ops.RESHAPE: u = u.src[0]
  if u.op is not Ops.BUFFER or u.dtype in dtypes.weaks or not isinstance(u.arg.device, str): return None
  return u if (b := buffers.get(u)) is not None and b.is_allocated() and b.size > 0 else None

def replay_buffers(tensors: list[Tensor], outs: list[UOp], written: set[UOp]) -> list[UOp] | None:
  """The input buffers TinyJit would pass for these Tensors (realized first) and the output buffers, or None where
  only TinyJit's own call will do: a multi-device input, or one the captured kernels write (TinyJit copies it first)."""
  def ready(u: UOp) -> bool: return u.op is Ops.BUFFER and (b := buffers.get(u)) is not None and b.is_allocated()
  if lazy := [t for t in tensors if not ready(t.uop.base)]: Tensor.realize(*lazy)
  bufs = [t.uop.base for t in tensors] + [o.base for o in outs]
  if any(b.op is not Ops.BUFFER or not isinstance(b.device, str) or b in written for b in bufs): return None
  return bufs

def jit_kernel_names(jit) -> list[str]:
  """Names of the kernels a captured TinyJit replays, in order."""
  names = []
  for u in jit.captured.linear.toposort():
    if u.op is Ops.PROGRAM: names.append(re.sub(r"\x1b\[[0-9;]*m", "", u.arg.name))
  return names

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
  import numpy as np
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
  return (rule := custom_rule_of(fn)) is None or (inline_custom and not getattr(rule, "opaque", False))

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
  return UOp.maketuple(*body_outs).call(*args, grad_fxn=_stable(grad_fxn), name=getattr(rule, "name", None), aux=rule)

def _stable(grad_fxn):
  """One grad_fxn object per (rule, method). tinygrad keys a FUNCTION by str(CallInfo), which holds id(grad_fxn), and a
  bound method is a new object at each attribute access: every call of the same rule would be a new function to
  tinygrad's schedule cache, and an eager transform would schedule its graph again on every call."""
  if not isinstance(grad_fxn, types.MethodType) or not hasattr(owner := grad_fxn.__self__, "__dict__"): return grad_fxn
  return owner.__dict__.setdefault("_tinyjax_grad_fxns", {}).setdefault(grad_fxn.__func__, grad_fxn)

def custom_rule_of(fn: UOp):
  return fn.arg.aux if fn.op is Ops.FUNCTION and fn.arg is not None and getattr(fn.arg, "aux", None) is not None else None

def param_like(u: UOp, slot: int) -> UOp: return u.param_like(slot)

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

# ---- reading traced values ------------------------------------------------------------------------------------------
# tinyjax.core keeps the trace state; here the Tensor methods that read data are wrapped to ask it first.
# tinygrad is not thread-safe (its Context flags and compile cache connection are process-global): realizing from two
# threads at once fails inside it ("usage of device CPU disallowed", sqlite objects used across threads). tinyjax
# serialises what it does with tinygrad, and the reads it wraps, on one re-entrant lock.
TINYGRAD_LOCK = threading.RLock()

def _shared_db_connection(orig=_helpers.db_connection):
  # tinygrad opens its compile cache's sqlite connection in whichever thread compiles first, and sqlite refuses it in
  # any other thread; under TINYGRAD_LOCK one connection can serve every thread
  if _helpers._db_connection is None:
    _helpers.sqlite3 = types.SimpleNamespace(connect=functools.partial(_sqlite3.connect, check_same_thread=False),  # type: ignore[assignment]
                                             OperationalError=_sqlite3.OperationalError)
    try: return orig()
    finally: _helpers.sqlite3 = _sqlite3
  return orig()
_helpers.db_connection = _shared_db_connection

class preserved_tensors:
  """`with preserved_tensors():` every Tensor that exists on entry gets its graph and gradient back on exit: what the
  function assigned into them (an optimizer's step into its parameters, zero_grad, backward) while it was traced on
  placeholders is undone, and no parameter is left holding a traced value."""
  def __enter__(self):
    self.saved = [(t, t.uop, t.grad) for r in list(_all_tensors) if (t := r()) is not None]
    return self
  def __exit__(self, *exc):
    self.assigned = [t for t, u, _ in self.saved if t.uop is not u]
    changed = [t.uop for t in self.assigned]
    for t, u, g in self.saved:
      if t.uop is not u: t.uop = u
      if t.grad is not g: t.grad = g
    self.graph_nodes = UOp.sink(*changed).toposort() if changed else {}
    self.saved_tensors = [t for t, _, _ in self.saved]
    self.saved.clear()

  def realize_state(self, outs: list[UOp], device) -> None:
    """Realize the Tensors that existed on entry and that the traced graphs (`outs`, and what was assigned into
    Tensors) read but that hold no data yet (a parameter's lazy initialization, an optimizer's zero moments), before a
    TinyJit captures: captured, every replay would compute them again and reset the state. One that was assigned into
    gets a buffer of its own even if it is a constant (Tensor.ones((1,)), an optimizer's b1_t, a 0-d Tensor, which
    tinygrad keeps as a constant with no device: on `device`): the capture would otherwise bake its first value into
    the kernels and every replay would start from it again."""
    nodes = {*self.graph_nodes, *(UOp.sink(*outs).toposort() if outs else {})}
    assigned = {id(t) for t in self.assigned}
    lazy = [t for t in self.saved_tensors if t.uop in nodes and not t.uop.has_buffer_identity()]
    for t in lazy:
      if id(t) in assigned: t.uop = t.uop.contiguous() if t.uop.device is not None else t.uop.clone(device=device)
    if lazy := [t for t in lazy if not t.uop.is_virtual]: Tensor.realize(*lazy)

# ---- write after read: a lazy value has the data its inputs held when it was built -----------------------------------
# tinygrad reads a buffer when a lazy value is realized, not when the value was built: a loss built from the parameters
# and realized after the optimizer's step (which assigned into them) is the loss of the new parameters, and p.grad read
# after the step is the gradient at them (tinygrad issue 17074). Its scheduler does order reads before writes within
# one schedule, so a realize that writes buffers also realizes the live values that read their old data, and a view
# assign (x[:1].assign(v)), which tinygrad makes every existing reader of x see, first realizes the values computed
# from x. A view of a buffer (x.reshape, x.T) is not a value of its own: it sees the write, as a view does in tinygrad
# and in numpy.

_ALIAS, _READ = 1, 2

def _old_data_readers(targets: set[UOp], done: set[UOp], keep: set[UOp]) -> list[Tensor]:
  """Live lazy Tensors that compute from one of `targets` (buffers, or a buffer's state) as it is before a write:
  not through an AFTER in `done` (the writes being realized), not views of it, not the Tensors of `keep`."""
  if not targets: return []
  cache: dict[UOp, int] = {}
  def visit(u: UOp) -> int:
    if u in targets: return _ALIAS
    if u.op is Ops.AFTER: return 0 if u in done or not any(cache[s] for s in u.src[1:]) else _READ   # src[0]: what it writes
    if u.op is Ops.STORE: return _READ if cache[u.src[1]] else 0
    if u.op in GroupOp.Movement or u.op is Ops.DETACH: return cache[u.src[0]]
    return _READ if any(cache[s] for s in u.src) else 0
  out = []
  for r in list(_all_tensors):
    if (t := r()) is None or t.uop in keep or t.uop.has_buffer_identity() or t.uop.topovisit(visit, cache) != _READ: continue
    try:
      if any(check("realize", (t,)) for check in _read_checks): continue   # jit's abstract trace: no data to keep
    except Exception: continue   # a traced value: the transform that made it computes it again
    out.append(t)
  return out

def _writes(sink: UOp) -> tuple[set[UOp], set[UOp]]:
  """The buffers the stores under `sink` write, and their AFTER nodes."""
  afters = {u for u in sink.toposort() if u.op is Ops.AFTER and any(s.op is Ops.STORE for s in u.src[1:])}
  return {b for a in afters for s in a.src[1:] if s.op is Ops.STORE for b in s.src[0].toposort() if b.op is Ops.BUFFER}, afters

def _linear_with_vars(self: Tensor, *lst: Tensor, _orig=Tensor.linear_with_vars):
  written, afters = _writes(UOp.sink(*[x.uop for x in (self, *lst)]))
  if readers := _old_data_readers(written, afters, {x.uop for x in (self, *lst)}): lst = (*lst, *readers)
  return _orig(self, *lst)
Tensor.linear_with_vars = _linear_with_vars  # type: ignore[method-assign]

def _assign(self: Tensor, x, _orig=Tensor.assign) -> Tensor:
  ib = self.uop
  while not ib.has_buffer_identity() and ib.op in GroupOp.Movement | {Ops.BITCAST, Ops.DETACH}: ib = ib.src[0]
  if ib is not self.uop and ib.has_buffer_identity(after_ok=True):   # a view assign: tinygrad rewrites ib in every reader
    keep = {self.uop, x.uop} if isinstance(x, Tensor) else {self.uop}
    if readers := _old_data_readers({ib}, set(), keep): Tensor.realize(*readers)
  return _orig(self, x)
Tensor.assign = _assign  # type: ignore[method-assign]

_READS = ("realize", "numpy", "item", "tolist", "data", "__bool__", "_buffer")

_read_checks: list[Callable[[str, tuple], list]] = []

def check_read(method: str, tensors: tuple) -> None:
  """Raise if one of `tensors` is traced (the check `install_read_guards` was given)."""
  for check in _read_checks: check(method, tensors)

def install_read_guards(check: Callable[[str, tuple], list]) -> None:
  """Wrap Tensor's data-reading methods: check(method, tensors) runs first and raises for a traced value, or returns
  the tensors a `realize` leaves alone (values that have no data yet and need none: jit's abstract trace)."""
  _read_checks.append(check)
  def guard(method: str, orig: Callable):
    @functools.wraps(orig)
    def guarded(self, *args, **kwargs):
      with TINYGRAD_LOCK:
        tensors = (self,) + tuple(a for a in args if isinstance(a, Tensor))
        if method == "realize" and (skip := check(method, tensors)):
          if rest := [t for t in tensors if not any(t is x for x in skip)]: orig(rest[0], *rest[1:], **kwargs)
          return self
        check(method, tensors)
        if method == "numpy" and (fast := _host_copy(self)) is not None: return fast
        return orig(self, *args, **kwargs)
    return guarded
  for m in _READS: setattr(Tensor, m, guard(m, getattr(Tensor, m)))
  # numpy functions applied to a Tensor (np.asarray(t), np.sin(t)) read it through __array__, which tinygrad lacks
  def __array__(self, dtype=None, copy=None):
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)
  Tensor.__array__ = guard("__array__", __array__)  # type: ignore[attr-defined]

# ---- JAX's array methods on tinygrad's Tensor ------------------------------------------------------------------------
# tinyjax's arrays are tinygrad Tensors, and JAX code calls methods on them (x.at[i].set(v), x.astype(t), keepdims=):
# tinyjax.numpy adds the ones tinygrad lacks, and lets the ones tinygrad has take JAX's keyword names too, without
# changing what tinygrad code that calls them gets.

def tensor_method(name: str) -> Callable:
  """Tensor's own method `name`, as tinygrad defines it (before tinyjax wrapped it)."""
  return _ORIGINAL.get(name) or getattr(Tensor, name)

_ORIGINAL: dict[str, Callable] = {}

def install_tensor_methods(methods: dict[str, object]) -> None:
  """Set Tensor attributes; a method tinygrad already has is remembered (`tensor_method`) before it is replaced."""
  for name, m in methods.items():
    if hasattr(Tensor, name) and name not in _ORIGINAL: _ORIGINAL[name] = getattr(Tensor, name)
    setattr(Tensor, name, m)


# ---- host loops: a compiled step replayed from Python (tinyjax.lax control flow) -------------------------------------
# A loop is one CALL in tinygrad's schedule, of a CUSTOM_FUNCTION whose executor (a Python callable) runs when tinygrad
# executes the schedule: eagerly, or from a TinyJit's replay, which records the CALL like any kernel. The executor replays
# the body's kernels, compiled once as TinyJit compiles a function (capture, PARAMs for the buffers, memory plan, graph),
# on the loop's buffers. tinygrad checks a CUSTOM_FUNCTION's arg is a str and rebuilds CALLs without their aux, so the
# executor is found from the CUSTOM_FUNCTION node itself, weakly: it lives as long as some graph or captured schedule
# still holds the node.

_host_executors: weakref.WeakKeyDictionary[UOp, Callable[[list[UOp]], None]] = weakref.WeakKeyDictionary()
_host_names = itertools.count()

def param(slot: int, shape: tuple[int, ...], dtype: DType, device) -> UOp: return UOp.param(slot, dtype, shape, device)

def host_call(run: Callable[[list[UOp]], None], outs: list[tuple[tuple[int, ...], DType]], ins: list[UOp], device) -> list[UOp]:
  """The outputs of one CALL that tinygrad executes by calling run(buffers): buffers are the UOps of the outputs' new
  buffers, then of the inputs' (realized contiguous first). Shapes must not be empty."""
  if not isinstance(device, str): raise NotImplementedError(f"tinyjax.lax control flow on multi-device (sharded) arrays, on {device}")
  fn = UOp(Ops.CUSTOM_FUNCTION, arg=f"tinyjax_host_{next(_host_names)}")
  _host_executors[fn] = run
  bufs = [UOp.new_buffer(device, max(1, _prod(s)), d) for s, d in outs]
  call = fn.call(*bufs, *[_stored(i) for i in ins])
  return [b.after(call).reshape(s) for b, (s, _) in zip(bufs, outs, strict=True)]

def _stored(u: UOp) -> UOp:
  """u as a buffer for the host call. The scheduler folds a contiguous one-element constant back into the constant
  (a value that only becomes constant when a transform substitutes its inputs, e.g. lax.cond's predicate), so those are
  stored into a new buffer."""
  if _prod(u.shape) != 1: return u.contiguous()
  return Tensor.empty(*u.shape, dtype=u.dtype, device=u.device).assign(Tensor(u)).uop

def holds_host_call(outs: list[UOp]) -> bool:
  """A host call (a loop, LAPACK) is among the nodes these values are computed from."""
  return any(u.op is Ops.CUSTOM_FUNCTION and u in _host_executors for u in UOp.sink(*outs).toposort())

def _constant_arguments(call: UOp) -> UOp | None:
  """A host call's arguments that the scheduler folded into constants are not buffers, which the kernel graph requires.
  A value can become constant after a host call was built: a placeholder substituted by a constant when a custom rule
  is inlined, vmap's broadcast of an unbatched constant, tinygrad's x*0. Each is computed here, once per schedule,
  dropped from the call, and filled into a buffer by a wrapping executor (a buffer filled now would be reused by the
  memory planner)."""
  if (run := _host_executors.get(call.src[0])) is None: return None
  # a cast of a buffer into a weak dtype (which has no storage of its own) is that buffer's bytes
  args = tuple(x.src[0] if x.op is Ops.CAST and x.dtype in dtypes.weaks and x.src[0].op in _BUFFER_ARGS
               and x.src[0].dtype == strong_dtype(x.dtype) else x for x in call.src[1:])
  consts = {i: v for i, x in enumerate(args) if x.op not in _BUFFER_ARGS and (v := constant_array(Tensor(x))) is not None}
  if not consts: return None if args == call.src[1:] else call.replace(src=(call.src[0], *args))
  device, filled = args[0].device, dict[int, UOp]()   # args[0]: the first output's buffer (a constant may have no device)
  def with_constants(bufs: list[UOp]) -> None:
    if not filled: filled.update((i, filled_buffer(v, device)) for i, v in consts.items())
    rest = iter(bufs)
    run([filled[i] if i in consts else next(rest) for i in range(len(args))])
  fn = UOp(Ops.CUSTOM_FUNCTION, arg=f"tinyjax_host_{next(_host_names)}")
  _host_executors[fn] = with_constants
  return call.replace(src=(fn, *(x for i, x in enumerate(args) if i not in consts)))

_BUFFER_ARGS = frozenset({Ops.BUFFER, Ops.AFTER, Ops.MSELECT, Ops.MSTACK})

# after the scheduler has folded constants, before it checks the kernel graph
_rangeify.pm_no_indexing_calls = _rangeify.pm_no_indexing_calls + _realize.PatternMatcher([
  (_realize.UPat(Ops.CALL, src=(_realize.UPat(Ops.CUSTOM_FUNCTION),), name="call", allow_any_len=True), _constant_arguments)])

# tinygrad's lower_and_compile swaps each compiled program into its CALL with a graph rewrite of the kernel's AST, at
# every realize, also when the program comes from its cache: a quarter of an eager realize of a small graph (a
# hand-written eager JVP of a 16x16 layer: 5.1 -> 3.9 ms). The rewrite is a pure function of the AST and the program,
# so its result is kept per (CALL body, AST, program); a kernel not compiled yet takes tinygrad's own path.
_swapped: dict[tuple[UOp, UOp, UOp], UOp] = {}
_lower_and_compile = _realize.lower_and_compile

def _cached_lower_and_compile(linear: UOp) -> UOp:
  calls = {c: a for c in linear.toposort() if c.op is Ops.CALL and (a := _realize._get_call_to_compile(c)) is not None}
  swaps = {}
  for c, (ast, renderer) in calls.items():
    if (program := _to_program_cache.get(_to_program_key(ast, renderer))) is None: return _lower_and_compile(linear)
    if (body := _swapped.get(key := (c.src[0], ast, program))) is None: body = _swapped[key] = c.src[0].substitute({ast: program})
    swaps[c] = c.replace(src=(body, *c.src[1:]))
  if not swaps: return linear
  return linear.substitute(swaps, name="precompile kernels")

_realize.lower_and_compile = _cached_lower_and_compile

def canonical_key(root: UOp) -> bytes:
  """root's key (tinygrad's: a hash of op, dtype, arg and the sources' keys) without what differs between two traces of
  the same computation, so compiled code can be found again by it: a FUNCTION's CallInfo (its grad_fxn's id; what a
  FUNCTION computes is its body, in its sources, or for a host call its rule's `content_key()`), a host call's name
  (fixed by its FUNCTION's rule) and the slots of buffers not yet allocated (scratch, numbered by first use)."""
  keys: dict[UOp, bytes] = {}
  scratch: dict[UOp, int] = {}
  for u in root.toposort():
    arg = u.arg
    if u.op is Ops.FUNCTION and isinstance(arg, _CallInfo):
      content = getattr(arg.aux, "content_key", None)
      arg = (arg.name, content() if content is not None else None)
    elif u.op is Ops.CUSTOM_FUNCTION and u in _host_executors: arg = "host"
    elif u.op is Ops.BUFFER and u not in buffers: arg = ("scratch", scratch.setdefault(u, len(scratch)), arg.dtype, arg.device)
    keys[u] = hashlib.sha256(str((u.op, u.dtype, arg)).encode() + b"".join(keys[x] for x in u.src)).digest()
  return keys[root]

def _prod(shape) -> int:
  n = 1
  for d in shape: n *= d
  return n

def _exec_host(ctx, call: UOp, ast: UOp):
  if (run := _host_executors.get(ast)) is None:
    if ast.arg.startswith("tinyjax_host_"): raise RuntimeError(f"tinyjax: the executor of {ast.arg} was freed while a schedule still calls it")
    return None
  run(_realize.resolve_params(call, ctx.input_uops))
  return []

_realize.pm_exec = _realize.pm_exec + _realize.PatternMatcher([
  (_realize.UPat(Ops.CALL, src=(_realize.UPat(Ops.CUSTOM_FUNCTION, name="ast"),), name="call", allow_any_len=True), _exec_host)])

def _call_name(call: UOp, *args, _orig=_realize.get_call_name, **kwargs) -> str:   # DEBUG=2's line for a loop
  return "tinyjax host loop" if call.src[0] in _host_executors else _orig(call, *args, **kwargs)
_realize.get_call_name = _call_name

class _Capture:
  """Collects what is scheduled while it is in tinygrad's capturing list, as TinyJit does."""
  def __init__(self): self.linears: list[UOp] = []
  def add_linear(self, linear: UOp, var_vals): self.linears.append(linear)

BufferType = tuple[tuple[int, ...], DType, "int | None"]   # shape, dtype, and the axis indexed by the step (None: whole)

class Step:
  """fn(inputs, ) -> outputs, compiled once for buffers of the given types and replayed on any buffers of those types
  with `run`. An input with an axis is the slice at the step index along it; an output with an axis is written at the
  index along it (tinygrad's bound Variable: one compiled program for every index). `nested`: fn's graph has calls
  (FUNCTIONs: loops, custom rules)."""
  VAR = "tinyjax_step"
  def __init__(self, fn: Callable[[list[Tensor]], list[Tensor]], ins: list[BufferType], outs: list[BufferType], device, steps: int = 1,
               nested: bool = False):
    # one name for every step's index: it is in the kernels' source, so the compile cache knows them again (each step's
    # linear runs with its own var_vals, nested loops included)
    i = UOp.variable(self.VAR, 0, max(steps - 1, 0)).bind(0)
    tin = [Tensor.empty(*s, dtype=d, device=device) for s, d, _ in ins]
    tout = [Tensor.empty(*s, dtype=d, device=device) for s, d, _ in outs]
    vals = fn([t if ax is None else _sliced(_at(t, i, ax).squeeze(ax), nested) for t, (_, _, ax) in zip(tin, ins, strict=True)])
    stores = [(o if ax is None else _at(o, i, ax)).assign((v if ax is None else v.unsqueeze(ax)).cast(o.dtype))
              for o, v, (_, _, ax) in zip(tout, vals, outs, strict=True)]
    cap = _Capture()
    _jit_capturing.append(cap)
    try: Tensor.realize(*stores)
    finally: _jit_capturing.remove(cap)
    self.bufs = [t.uop.base for t in tin + tout]
    big = UOp(Ops.LINEAR, src=tuple(c for lin in cap.linears for c in lin.src))
    self.linear = _realize.link_linear(_jit_lower(big, set(self.bufs), self.bufs))

    self.replay = Replay(self.linear)

  def run(self, bufs: list[UOp], index: int = 0) -> None:
    """One step on these buffers (the types the step was compiled for) at this index."""
    self.replay.run(bufs, {self.VAR: index})

class Replay:
  """A compiled linear (a Step's, a captured TinyJit's) replayed on new input buffers. Kernels are launched straight
  from a plan made once: run_linear's and TinyJit's per-call work (resolving PARAMs, rewriting input views, stats,
  multi-device lanes) is most of the time of a small program. Host calls run their executor; any other call (a copy, a
  graph) goes through run_linear."""
  def __init__(self, linear: UOp): self.plan = [self._kernel(c) for c in linear.src]

  @staticmethod
  def _kernel(call: UOp) -> tuple | UOp:
    """(runtime, its arguments: an input's slot or a fixed buffer, program info, device, fixed launch sizes), (a host
    call,) or the call itself (run by run_linear)."""
    if call.src[0] in _host_executors: return (call,)   # a host call (a loop, LAPACK): its executor, called directly
    if call.src[0].op is not Ops.PROGRAM or not isinstance(device := call.src[1].device, str): return call
    prg, args = call.src[0], _realize.get_call_arg_uops(call)
    if any(a.op not in (Ops.PARAM, Ops.BUFFER, Ops.BITCAST, Ops.SHRINK) for a in args): return call
    glob = [args[g] for g in prg.arg.globals]
    info = prg.arg   # launch sizes and values without variables are fixed: computed once
    dims = None if info.vars else (*info.launch_dims({}), info.vals({}))
    return (_realize.get_runtime(device, prg), [a.arg.slot if a.op is Ops.PARAM else _one(a) for a in glob], info, device, dims)

  def run(self, bufs: list[UOp], var_vals: dict[str, int]) -> None:
    real: dict[int, Any] = {}
    n = 0
    for item in self.plan:
      if isinstance(item, UOp):
        _realize.run_linear(UOp(Ops.LINEAR, src=(item,)), var_vals, input_uops=bufs, jit=True)
        continue
      if len(item) == 1:
        _host_executors[item[0].src[0]](_realize.resolve_params(item[0], tuple(bufs)))
        continue
      rt, args, info, device, dims = item
      launch = []
      for a in args:
        if isinstance(a, int):
          if (b := real.get(a)) is None: b = real[a] = _one(bufs[a]).get_buf(device)
          launch.append(b)
        else: launch.append(a.get_buf(device))
      gs, ls, vals = dims if dims is not None else (*info.launch_dims(var_vals), info.vals(var_vals))
      rt(*launch, global_size=gs, local_size=ls, vals=vals)
      n += 1
    GlobalCounters.kernel_count += n

def _one(u: UOp) -> Buffer:
  b = u.buffer
  assert isinstance(b, Buffer), "host loops run on one device"
  return b

def _sliced(t: Tensor, nested: bool) -> Tensor:
  # a slice at the step index cannot be an argument of a call inside the step (tinygrad moves the argument's movement
  # ops into the callee, whose graph has no room for the index variable): a step with calls gets it in a buffer
  return t.contiguous() if nested else t

def _at(t: Tensor, i: UOp, axis: int) -> Tensor:
  return t.shrink(tuple((i, i + 1) if a == axis else None for a in range(t.ndim)))

def scratch_like(u: UOp) -> UOp:
  """A new allocated buffer of u's size and dtype, on its device."""
  b = UOp.new_buffer(u.device, u.max_numel(), u.dtype)
  b.buffer.allocate()
  return b

_DATA = frozenset({Ops.BUFFER, Ops.PARAM, Ops.CUSTOM})

def constant_array(t: Tensor) -> np.ndarray | None:
  """t's value if it is a constant expression (no buffer, placeholder or marker in its graph), else None. The
  scheduler folds such a value into the kernels that read it, so it never reaches a host call as a buffer; it is
  computed here instead (with a TinyJit's capture suspended: it depends on none of the jitted function's inputs)."""
  if any(u.op in _DATA for u in t.uop.toposort()): return None
  saved = list(_jit_capturing)
  _jit_capturing.clear()
  try: return t.numpy()
  finally: _jit_capturing.extend(saved)

def filled_buffer(a: np.ndarray, device) -> UOp:
  """A new buffer holding numpy data (written from the host, no kernel)."""
  t = host_buffer(a, device)
  assert t is not None, f"no host layout for {a.dtype}"
  return t.uop.base

def copy_buffer(dst: UOp, src: UOp) -> None:
  _one(dst).ensure_allocated().copy_from(_one(src).ensure_allocated())

def read_scalar(u: UOp):
  """The first element of a buffer, as a Python value (a host read: the loop's condition, the branch index)."""
  return _copyout(_one(u).ensure_allocated())[0].item()

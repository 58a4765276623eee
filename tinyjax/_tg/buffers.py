"""Buffers and host data: placeholders, new and shaped buffers, numpy in and out without COPY programs, jit inputs."""

from __future__ import annotations
import functools, sys, weakref
from typing import Callable, cast
import numpy as np
from tinygrad import Tensor, Device, dtypes
from tinygrad.dtype import DType, strong_dtype, _from_np_dtype, _to_np_dtype
from tinygrad.device import Buffer, MultiBuffer, canonicalize_device
from tinygrad.helpers import Metadata as _Metadata, ContextVar
from tinygrad.tensor import all_tensors as _all_tensors, _METADATA as _tensor_metadata
from tinygrad.uop.ops import UOp, Ops, AxisType, shape_to_shape_arg, buffers, ParamArg

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

class OutputBuffers:
  """A jitted function's output buffers, reused by its later calls when nothing refers to them any more: a new buffer
  per output per call (allocate, free, its BUFFER and view UOps) was a third of a small jitted call's dispatch. A
  result is never overwritten while it is alive: anything that can read the buffer (the result Tensor, a Tensor viewing
  it, a lazy graph over it) holds its UOp, which shows in its reference count. Two buffers per output, used in turn, so
  that `r = f(x)` in a loop (the last result alive during the call) reuses too. Outputs over `POOLED_BYTES` get new
  buffers (their allocation is cheap next to computing them, and holding them after the caller dropped them is not)."""
  POOLED_BYTES, SLOTS = 1 << 20, 2
  def __init__(self, specs: list[tuple], weak: list[DType | None] | None = None):
    self.specs, self.weak = specs, weak or [None] * len(specs)   # weak: the results are weakly typed views of the data
    # per output: (flat buffer, the result's UOp, its free refcount, the result Tensor, its free refcount, the view of
    # the data, its free refcount): the view is the result's UOp unless that is weakly typed (a CAST of the view)
    self.held: list[list[tuple[UOp, UOp, int, Tensor, int, UOp, int]]] = [[] for _ in specs]
    self.turn = [0] * len(specs)

  def take(self, i: int) -> tuple[UOp, Tensor]:
    """Output i's (TinyJit input, shaped Tensor), as allocated_buffer gives them. The Tensor a caller dropped is given
    again (a new Tensor registers with tinygrad: a tenth of a small call's dispatch), its gradient cleared."""
    for h in self.held[i]:
      if sys.getrefcount(h[1]) == h[2] and sys.getrefcount(h[3]) == h[4] and h[3].uop is h[1] and sys.getrefcount(h[5]) == h[6]:
        h[3].grad, h[3].is_param = None, True
        return h[0], h[3]
    shape, dtype, device, axis = self.specs[i]
    buf, t = allocated_buffer(shape, dtype, device, axis)
    if (w := self.weak[i]) is not None: t = tensor_of(t.uop.cast(w))
    if axis is None and _prod(shape) * dtype.itemsize <= self.POOLED_BYTES:
      held, data = self.held[i], stored_view(t.uop)
      k = len(held) if len(held) < self.SLOTS else self.turn[i]   # a new slot, else the oldest
      if k == len(held): held.append((buf, t.uop, 0, t, 0, data, 0))
      else: held[k] = (buf, t.uop, 0, t, 0, data, 0)
      self.turn[i] = (k + 1) % self.SLOTS
      # the counts when only the pool refers to them, as take counts them: now, less the local `buf` (a view), the
      # local `data` and the local `t` (the Tensor, which keeps its reference to its UOp); each counted on a line of
      # its own (a tuple being built holds its items on the stack)
      free_view = sys.getrefcount(t.uop) - (buf is t.uop) - (data is t.uop)
      free_data = sys.getrefcount(data) - (buf is data) - 1
      free_tensor = sys.getrefcount(t) - 1
      held[k] = (buf, t.uop, free_view, t, free_tensor, data, free_data)
    return buf, t

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

def is_placeholder_buffer(u: UOp) -> bool:
  """u is a BUFFER with no data (a placeholder's: never allocated)."""
  return u.op is Ops.BUFFER and ((b := buffers.get(u)) is None or not b.is_allocated())

def placeholder_like(t: Tensor) -> Tensor:
  """`placeholder` with t's shape, dtype, device and sharding."""
  return _new_buffer(static_shape(t), t.dtype, t.device, sharding(t), allocate=False)[1]

def default_device() -> str: return Device.DEFAULT

def dtype_supported(dt: DType, device) -> bool:
  """The device (the default one for None, the first of several) computes in dt (a float64 on a GPU may not)."""
  d = device[0] if isinstance(device, tuple) else device or Device.DEFAULT
  try: return dt in Device[d].renderer.supported_dtypes()
  except Exception: return False

# The width weakly typed floats (tinygrad's weakfloat: a Python float's value) are computed and stored at: JAX's for a
# Python float, float64 with x64 (tinyjax.config sets it). tinygrad's own is its DEFAULT_FLOAT, which also types new
# Tensors (Tensor([0.1]): tinygrad's optimizers assign such values into float32 parameters), so patches.py puts this
# width in its place only where a weak value is lowered or stored. A ContextVar: part of tinygrad's kernel cache keys.
WEAK_FLOAT = ContextVar("TINYJAX_WEAK_FLOAT", "float32")

def weak_storage(dt: DType) -> DType:
  """The dtype a value of dtype dt is stored in: dt itself, or for a weak one the width it is computed at."""
  if dt is dtypes.weakfloat: return dtypes.float64 if WEAK_FLOAT.value == "float64" else dtypes.float32
  return strong_dtype(dt)

@functools.cache
def np_dtype(dt: DType):
  """numpy's dtype with dt's layout, or None (tinygrad maps bfloat16 and fp8 to float32)."""
  npdt = _to_np_dtype(dt)
  return np.dtype(npdt) if npdt is not None and np.dtype(npdt).itemsize == dt.itemsize else None

@functools.cache
def host_dtype(npdt: np.dtype) -> DType | None:
  """tinygrad's dtype with numpy's layout for numpy data of this dtype, or None (there is none)."""
  try: dt = _from_np_dtype(npdt)
  except KeyError: return None
  return dt if np_dtype(dt) == npdt else None

def host_buffer(a: np.ndarray, device, axis: int | None = None) -> Tensor | None:
  """numpy data copied into a new buffer on `device` (a device tuple: replicated, or sharded on `axis`) with no
  kernel, or None if tinygrad has no dtype with numpy's layout for it."""
  if (dt := host_dtype(a.dtype)) is None: return None
  buf, shaped = _new_buffer(a.shape, dt, canonicalize_device(device), axis, allocate=True)
  bufs = _device_buffers(buffers[buf])
  for b, part in zip(bufs, [a] * len(bufs) if axis is None else np.split(a, len(bufs), axis), strict=True): _copyin(b, part)
  return shaped

def host_input(pool: OutputBuffers, i: int, a: np.ndarray) -> Tensor:
  """numpy data (of pool's spec i) copied into pool's buffer i: a jitted call's numpy argument, in a buffer it had
  before when nothing refers to that any more (a new buffer per call was half of a solver callback's dispatch)."""
  buf, t = pool.take(i)
  for b in _device_buffers(buffers[buf]): _copyin(b, a)   # (replicated on a device tuple)
  return t

def _copyin(b: Buffer, a: np.ndarray) -> None:
  a = np.ascontiguousarray(a)   # (at least 1-d)
  # numpy's own memory when it is writable (ctypes reads through a writable view only), else a copy
  data = a.data.cast("B") if a.flags.writeable else memoryview(bytearray(a.tobytes()))
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

def host_views(us: list[UOp], shapes: list[tuple[int, ...]]) -> list[np.ndarray] | None:
  """numpy arrays over the buffers' own memory (no copy), after one synchronize of their device; None if a buffer's
  allocator has no host memory."""
  bufs = [_one(u).ensure_allocated() for u in us]
  if not bufs or not all(hasattr(b.allocator, "_as_buffer") and np_dtype(b.dtype) is not None for b in bufs): return None
  bufs[0].allocator.dev.synchronize()
  return [np.frombuffer(b.allocator._as_buffer(b._buf), dtype=np_dtype(b.dtype), count=b.size).reshape(s)  # type: ignore[attr-defined]
          for b, s in zip(bufs, shapes, strict=True)]

def run_on_host(bufs: list[UOp], n_out: int, shapes: list[tuple[int, ...]], fn: Callable[[list[np.ndarray]], list[np.ndarray]]) -> None:
  """A host call's work: fn(the inputs' data) -> the outputs' data, on its buffers (the outputs first, then the inputs,
  of `shapes`). On the CPU the arrays are the buffers' memory (the inputs read-only: fn must not write them), with one
  synchronize; elsewhere copies out and in (each copy synchronizes: ~50 us a buffer on the CPU)."""
  if (views := host_views(bufs, shapes)) is not None:
    for v in views[n_out:]: v.flags.writeable = False
    for v, r in zip(views[:n_out], fn(views[n_out:]), strict=True): np.copyto(v, r, casting="unsafe")
    return
  res = fn([read_array(b, s) for b, s in zip(bufs[n_out:], shapes[n_out:], strict=True)])
  for b, r in zip(bufs[:n_out], res, strict=True): write_array(b, r)

def np_dtype_of(a: np.ndarray) -> DType: return _from_np_dtype(a.dtype)

def unfilled(u: UOp) -> UOp:
  """The value of a new buffer filled with a constant (AFTER(buf, STORE(buf, value)), tinygrad's layout), else u.
  tinygrad clones a constant cotangent into a buffer before calling a grad_fxn (a kernel: the unit cotangent of grad
  is a CONST so as not to cost one) and jvp passes zeros_like() buffers for arguments without a tangent: the constant
  itself is what the rules need."""
  if u.op is Ops.AFTER and len(u.src) == 2 and u.src[1].op is Ops.STORE and u.src[1].src[0] is u.src[0] and u.src[1].src[1].device is None:
    return u.src[1].src[1]
  return u

_MOVES = (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP)

def host_value(t: Tensor) -> np.ndarray | None:
  """t's value as a read-only numpy array with no kernel and no copy, when t is a realized buffer on a device with host
  memory, a buffer filled with a constant, or movement ops of either (applied as numpy views); None otherwise (a
  computation: realize it first). The array is the buffer's memory: read it while t lives, before anything writes it."""
  u, moves = t.uop, []
  while u.op in _MOVES:
    if not all(isinstance(d, int) for d in u.shape): return None
    moves.append(u)
    u = u.src[0]
  if (v := unfilled(u)) is not u and v.base.op is Ops.CONST and (npdt := np_dtype(u.dtype)) is not None and \
     all(isinstance(d, int) for d in u.shape):   # a constant fill
    a = np.broadcast_to(np.asarray(v.base.arg, dtype=npdt), static_shape(u))
  elif u.op is Ops.BUFFER and isinstance(u.device, str) and isinstance(buf := buffers.get(u), Buffer) and \
       buf.is_allocated() and buf._base is None and (views := host_views([u], [(buf.size,)])) is not None:
    a = views[0]
    a.flags.writeable = False
  else: return None
  for m in reversed(moves):
    shape = static_shape(m)
    if m.op is Ops.RESHAPE: a = a.reshape(shape)
    elif m.op is Ops.EXPAND: a = np.broadcast_to(a, shape)
    elif m.op is Ops.PERMUTE: a = a.transpose(m.arg)
    elif m.op is Ops.SHRINK: a = a[tuple(slice(lo, lo + n) for (lo, _), n in zip(m.marg, shape, strict=True))]
    else: a = a[tuple(slice(None, None, -1) if f else slice(None) for f in m.arg)]
  return a

def _constant(u: UOp) -> UOp | None:
  """The CONST whose value fills all of u, if u is one moved around (not PAD: it adds zeros)."""
  while u.op in _MOVES: u = u.src[0]
  return u if u.op is Ops.CONST else None

def _numpy_data(u: UOp) -> np.ndarray | None:
  """The numpy array behind `Tensor(array)` (a COPY to one device of a buffer on tinygrad's NPY device), else None."""
  if u.op is not Ops.COPY or not isinstance(u.arg, str) or (src := u.src[0]).op is not Ops.BUFFER or src.device != "NPY": return None
  b = buffers.get(src)
  if not isinstance(b, Buffer) or not b.is_allocated() or (npdt := np_dtype(src.dtype)) is None: return None
  return np.frombuffer(b.as_memoryview(), dtype=npdt)

def host_view(t: Tensor) -> np.ndarray | None:
  """`host_value` of a view of a buffer (movement ops: a slice `x[:, 0]`, `x.T`), else None."""
  return None if t.uop.op not in _MOVES else host_value(t)

def host_copy(t: Tensor) -> Tensor | None:
  """A view of a buffer (`host_view`) copied into a new buffer on the host, with no program (tinygrad's realize of it
  is a schedule and a kernel: ~0.1 ms; ~1.3 ms as a jitted call's argument); else None."""
  return None if (v := host_view(t)) is None else host_buffer(np.ascontiguousarray(v), t.uop.device)

_ROWS_MAX = 1 << 16   # elements copied on the host at most by `host_rows`

def host_rows(t: Tensor) -> list[Tensor] | None:
  """The rows of a realized buffer (or a view of one) with host memory, each copied into a new buffer on the host; else
  None. Iterating over an array (`key, sub = random.split(key)`) built a view per row, ~90 us each in tinygrad's
  indexing, and copied it again where a jitted function took it."""
  if t.ndim == 0 or t.dtype in dtypes.weaks or (a := host_value(t)) is None or not 0 < a.size <= _ROWS_MAX: return None
  rows = [host_buffer(np.array(r, copy=True), t.uop.device) for r in a]   # (0-d for a vector's elements)
  return None if any(r is None for r in rows) else cast(list[Tensor], rows)

def jit_input(t: Tensor, device, dtype: DType | None = None, copy: bool = False) -> tuple[Tensor, UOp | None]:
  """t's value as a TinyJit input: a realized buffer, in `dtype` if t is weakly typed, and the BUFFER it reads if that
  is one of t's (two inputs may not share one). A realized whole buffer is t itself (unless `copy`); a constant
  (Tensor(1.5), Tensor(2.0).expand(3)) is copied in from the host (no kernel); anything else (a view, a lazy or
  device-less graph) is copied into a new buffer, lazily (TinyJit realizes its inputs together). `device` is for
  values that have none."""
  u = t.uop
  if not copy and t.dtype in dtypes.weaks and (v := stored_view(u)) is not u and v.dtype == dtype:
    return jit_input(tensor_of(v), device)   # weakly typed data stored as the signature says: that data
  if not copy and u.has_buffer_identity() and (b := u.unsharded_base).op is Ops.BUFFER:
    if (buf := buffers.get(b)) is None or not buf.is_allocated():   # Tensor.empty: TinyJit would ignore it
      for x in _device_buffers(b.buffer): x.ensure_allocated()
    return t, b
  dt = (dtype or weak_storage(t.dtype)) if t.dtype in dtypes.weaks else t.dtype
  if (a := _numpy_data(u)) is not None and a.dtype == np_dtype(dt) and (out := host_buffer(a.reshape(static_shape(t)), u.arg)) is not None:
    return out, None   # Tensor(numpy array): copied in from the host, not by a COPY program (~1 ms)
  if dt == u.dtype and (out := host_copy(t)) is not None: return out, None   # a view (x[i], x.T): copied on the host
  if u.device is None and (c := _constant(u)) is not None and (npdt := np_dtype(dt)) is not None:
    if (out := host_buffer(np.full(static_shape(t), c.arg, dtype=npdt), device)) is not None: return out, None
  return Tensor((u.cast(dt) if dt != u.dtype else u).clone(device=u.device or device)), None


# the dtypes a weakly typed value is stored at (JAX's for a Python scalar: 32 or 64 bits as x64 says)
_WEAK_STORAGE = {dtypes.weakfloat: (dtypes.float32, dtypes.float64), dtypes.weakint: (dtypes.int32, dtypes.int64)}

def stored_view(u: UOp) -> UOp:
  """u, or for a weakly typed view of stored data (a jitted function's weakly typed result: CAST to weakfloat of a
  float64 buffer) that data's own view: the cast changes no value, only how the value promotes."""
  return u.src[0] if u.op is Ops.CAST and u.dtype in dtypes.weaks and u.src[0].dtype in _WEAK_STORAGE[u.dtype] else u

def stored_data(t: Tensor) -> Tensor:
  """t, or for a weakly typed view of stored data (`stored_view`) a Tensor of that data."""
  return t if (v := stored_view(t.uop)) is t.uop else tensor_of(v)

def plain_buffer(t: Tensor) -> UOp | None:
  """The BUFFER of a Tensor that is a realized whole buffer on one device (not empty; a weakly typed one as the data it
  views, `stored_view`), else None: such an argument is passed to a TinyJit as it is."""
  u = stored_view(t.uop)
  if u.op is Ops.RESHAPE: u = u.src[0]
  if u.op is not Ops.BUFFER or u.dtype in dtypes.weaks or not isinstance(u.arg.device, str): return None
  return u if (b := buffers.get(u)) is not None and b.is_allocated() and b.size > 0 else None


# plain_buffer_key's memo by the Tensor's UOp (its id; the entry goes when the UOp does): a jitted call asks it of every
# argument, and computing it (a weak dictionary's lookup, the shape) is a tenth of a one-kernel call's dispatch. The
# entry holds the buffer's UOp only when it is not the Tensor's UOp itself (a view of it, which holds it anyway): held,
# a whole buffer would never go, nor its entry (every flat result passed to a jitted call or realized stayed in memory)
_PLAIN: dict[int, tuple[weakref.ref, UOp | None, tuple, Buffer | MultiBuffer]] = {}

def _forget(memo: dict, key: int, _) -> None:
  # (the memo bound, not looked up: at interpreter exit the module's globals are None when the last UOps go)
  memo.pop(key, None)

def plain_buffer_key(t: Tensor) -> tuple[UOp, tuple] | None:
  """(plain_buffer(t), t's (shape, dtype, device)), or None where plain_buffer is None."""
  u = t.uop
  if (e := _PLAIN.get(id(u))) is not None and e[0]() is u and e[3].is_allocated(): return u if e[1] is None else e[1], e[2]
  if (b := plain_buffer(t)) is None: return None
  key = id(u)
  # a weakly typed one is told apart by its (weak) dtype: (shape, dtype it is stored at, device, weak dtype)
  item = (t.shape, b.dtype, b.arg.device) if t.dtype not in dtypes.weaks else (t.shape, b.dtype, b.arg.device, t.dtype)
  _PLAIN[key] = (weakref.ref(u, functools.partial(_forget, _PLAIN, key)), None if b is u else b, item, buffers[b])
  return b, item

def _one(u: UOp) -> Buffer:
  b = u.buffer
  assert isinstance(b, Buffer), "host loops run on one device"
  return b

def _prod(shape) -> int:
  n = 1
  for d in shape: n *= d
  return n


"""Every change importing tinyjax makes to tinygrad, applied by `install()` (called once by tinyjax/__init__.py) and
listed in `APPLIED` (name -> reason; docs/design.md, "What importing tinyjax changes in tinygrad", lists the same, and
tests/test_patches.py fails when the two or the real changes differ). Moving the tinygrad pin starts here."""
from __future__ import annotations
import builtins, contextlib, functools, math, os, types, weakref
from typing import Any, Callable
from tinygrad import Tensor, dtypes
from tinygrad.dtype import DType
import numpy as np
import tinygrad.helpers as _helpers
import sqlite3 as _sqlite3
import tinygrad.engine.realize as _realize
import tinygrad.schedule.rangeify as _rangeify
import tinygrad.schedule.indexing as _indexing
from tinygrad.device import Device
import tinygrad.uop.ops as _ops
import tinygrad.codegen.opt.heuristic as _heuristic
import tinygrad.codegen as _codegen
import tinygrad.codegen.late.linearizer as _linearizer
import tinygrad.schedule as _schedule
import tinygrad.uop.weak as _weak
import tinygrad.mixin.reduce as _reduce
import tinygrad.mixin.op as _mixin_op
import tinygrad.mixin.elementwise as _elementwise
import tinygrad.tensor as _tensor
import tinygrad.runtime.ops_cpu as _ops_cpu
import tinygrad.renderer.cstyle as _cstyle
import tinygrad.codegen.decomp.transcendental as _transcendental
import tinyjax._tg.transcendental as _transcendental_fixes
import tinygrad.runtime.support.compiler_cpu as _compiler_cpu
import tinygrad.runtime.support.hcq2 as _hcq2
from tinygrad.codegen.opt import Opt as _Opt, OptOps as _OptOps, KernelOptError as _KernelOptError
from tinygrad.uop.ops import AxisType as _AxisType, identity_element as _identity_element
from tinygrad.dtype import AddrSpace as _AddrSpace
from tinygrad.dtype import ConstFloat
from tinygrad.codegen import to_program_key as _to_program_key, to_program_cache as _to_program_cache
from tinygrad.uop.ops import UOp, Ops, GroupOp, _rebuild_dtype
from tinygrad.helpers import argfix, strip_parens
from tinyjax._tg.buffers import _host_copy, host_view, np_dtype, WEAK_FLOAT, weak_storage, plain_buffer_key, \
  _new_buffer, tensor_of, static_shape
from tinyjax._tg.fold import folded_array
from tinyjax._tg.compile import compile_kernels, load_programs, save_programs, schedule_from_disk
import tinyjax._tg.compile as _compile
from tinyjax._tg import gemm as _gemm
from tinyjax._tg import plain_c as _plain_c
from tinyjax._tg.runtime import TINYGRAD_LOCK, reading, _host_executors, executor_node, _BUFFER_ARGS, check_read, concrete_stand_in, constant_array, \
  filled_buffer, _ORIGINAL, jit_capturing, is_lazy, realize_lazy, computed_early, old_data_readers, holds_host_call

APPLIED: dict[str, str] = {}   # "owner.name" -> why, filled by install()
_installed = False

def _patch(owner, name: str, value, why: str) -> None:
  APPLIED[f"{owner.__module__}.{owner.__qualname__}.{name}" if isinstance(owner, type) else f"{owner.__name__}.{name}"] = why
  setattr(owner, name, value)

def _shared_db_connection(orig=_helpers.db_connection):
  # tinygrad opens its compile cache's sqlite connection in whichever thread compiles first, and sqlite refuses it in
  # any other thread; under TINYGRAD_LOCK one connection can serve every thread
  if _helpers._db_connection is None:
    _helpers.sqlite3 = types.SimpleNamespace(connect=functools.partial(_sqlite3.connect, check_same_thread=False),  # type: ignore[assignment]
                                             OperationalError=_sqlite3.OperationalError)
    try: return orig()
    finally: _helpers.sqlite3 = _sqlite3
  return orig()


# ---- write after read: a lazy value has the data its inputs held when it was built -----------------------------------
# tinygrad reads a buffer when a lazy value is realized, not when the value was built: a loss built from the parameters
# and realized after the optimizer's step (which assigned into them) is the loss of the new parameters, and p.grad read
# after the step is the gradient at them (tinygrad issue 17074). Its scheduler does order reads before writes within
# one schedule, so a realize that writes buffers also realizes the live values that read their old data, and a view
# assign (x[:1].assign(v)), which tinygrad makes every existing reader of x see, first realizes the values computed
# from x. A view of a buffer (x.reshape, x.T) is not a value of its own: it sees the write, as a view does in tinygrad
# and in numpy.

def _writes(sink: UOp) -> tuple[set[UOp], set[UOp]]:
  """The buffers the stores under `sink` write, and their AFTER nodes."""
  afters = {u for u in sink.toposort() if u.op is Ops.AFTER and any(s.op is Ops.STORE for s in u.src[1:])}
  return {b for a in afters for s in a.src[1:] if s.op is Ops.STORE for b in s.src[0].toposort() if b.op is Ops.BUFFER}, afters

def _linear_with_vars(self: Tensor, *lst: Tensor, _orig=Tensor.linear_with_vars):
  written, afters = _writes(UOp.sink(*[x.uop for x in (self, *lst)]))
  if readers := old_data_readers(written, afters, {x.uop for x in (self, *lst)}): lst = (*lst, *readers)
  return _orig(self, *lst)

def _assign(self: Tensor, x, _orig=Tensor.assign) -> Tensor:
  ib = self.uop
  while not ib.has_buffer_identity() and ib.op in GroupOp.Movement | {Ops.BITCAST, Ops.DETACH}: ib = ib.src[0]
  if ib is not self.uop and ib.has_buffer_identity(after_ok=True):   # a view assign: tinygrad rewrites ib in every reader
    keep = {self.uop, x.uop} if isinstance(x, Tensor) else {self.uop}
    if readers := old_data_readers({ib}, set(), keep): Tensor.realize(*readers)
  return _orig(self, x)

def _gradient(self: Tensor, *targets: Tensor, gradient: Tensor | None = None, _orig=Tensor.gradient) -> list[Tensor]:
  if computed_early and any(u in computed_early for u in self.uop.toposort()):
    raise RuntimeError("tinygrad's gradient through a value that a tinyjax transform computed before this backward(): a "
                       "transform called outside jit first computes every pending Tensor (as JAX computes at once), and "
                       "no gradient would flow through it. Call backward() before the transform, or build the loss after it.")
  return _orig(self, *targets, gradient=gradient)

_READS = ("realize", "numpy", "item", "tolist", "data", "__bool__", "_buffer")
# reads of a device-less graph of constants, from its folded value (tinygrad would run a kernel to store it)
_FOLDED_READS: dict[str, Callable[[np.ndarray], object]] = {"numpy": lambda a: a, "item": lambda a: a.item(), "tolist": lambda a: a.tolist()}


def _guard(method: str, orig: Callable):
  """Tensor.<method> that asks the read checks first (tinyjax.core's: a read of a traced value raises)."""
  @functools.wraps(orig)
  def guarded(self, *args, **kwargs):
    # realize() of what is a buffer already (a jitted function's results): nothing to check or compute, and tinygrad's
    # own call, an empty schedule, took ~15 us, as long as the replay that made the results
    if method == "realize" and plain_buffer_key(self) is not None and all(plain_buffer_key(a) is not None for a in args if isinstance(a, Tensor)):
      return self
    with TINYGRAD_LOCK:
      tensors = (self,) + tuple(a for a in args if isinstance(a, Tensor))
      if method == "realize" and (skip := check_read(method, tensors)):
        if rest := [t for t in tensors if not any(t is x for x in skip)]: orig(rest[0], *rest[1:], **kwargs)
        return self
      if method != "realize" and (stand_in := concrete_stand_in(method, self)) is not None: return orig(stand_in, *args, **kwargs)
      check_read(method, tensors)
      if (fast := _copied_out(method, self)) is not None: return fast
      if method in _FOLDED_READS and self.device is None and (a := folded_array(self)) is not None: return _FOLDED_READS[method](a)
      if method in _FOLDED_READS and self.device is None and is_lazy(self) and not jit_capturing():
        # one that does not fold here (a float reduce, over 4096 elements): computed on the default device by a program
        # found again by its structure, the Tensor left as it is (device-less values mix with any device); tinygrad's
        # read would clone it to the CPU through its scheduler (~2.5 ms)
        realize_lazy([stand_in := Tensor(self.uop)], on=Device.DEFAULT)
        if (fast := _copied_out(method, stand_in)) is not None: return fast
        if not is_lazy(stand_in): return orig(stand_in, *args, **kwargs)
      # outside a capture, lazy values are computed by programs found again by their structure (runtime.realize_lazy)
      # a read's realizes are part of the read (runtime.in_read)
      with contextlib.nullcontext() if method == "realize" else reading(method):
        if lazy := [] if jit_capturing() else [t for t in tensors if is_lazy(t)]:
          realize_lazy(lazy)
          if (fast := _copied_out(method, self)) is not None: return fast
        return orig(self, *args, **kwargs)
  return guarded

def _copied_out(method: str, t: Tensor) -> object:
  """numpy(), item() or tolist() of a realized whole buffer from its data copied out by the allocator (tinygrad's
  reads run a COPY program, 0.3-0.5 ms), or of a view of one (x[1:3], x.T) read through numpy; else None."""
  if method not in _FOLDED_READS or (method == "item" and t.numel() != 1): return None
  if (a := _host_copy(t)) is None:
    if (v := host_view(t)) is None: return None
    a = np.array(v)   # (tinygrad computed the view by a kernel: x[1:3] of a 64x32 array 0.59 ms)
  return _FOLDED_READS[method](a)

def _array(self, dtype=None, copy=None):
  a = self.numpy()
  return a if dtype is None else a.astype(dtype)

# ---- JAX's array methods on tinygrad's Tensor ------------------------------------------------------------------------
# tinyjax's arrays are tinygrad Tensors, and JAX code calls methods on them (x.at[i].set(v), x.astype(t), keepdims=):
# tinyjax.numpy adds the ones tinygrad lacks, and lets the ones tinygrad has take JAX's keyword names too, without
# changing what tinygrad code that calls them gets (`runtime.tensor_method` is tinygrad's own).

_TENSOR_METHODS: dict[str, tuple[object, str]] = {}

def add_tensor_methods(methods: dict[str, object], why: str) -> None:
  """Tensor attributes to set (by install(), or now if it ran); a method tinygrad already has is remembered first."""
  _TENSOR_METHODS.update((name, (m, why)) for name, m in methods.items())
  if _installed: _install_tensor_methods(methods)

def _install_tensor_methods(methods: dict[str, object]) -> None:
  for name, m in methods.items():
    if hasattr(Tensor, name) and name not in _ORIGINAL: _ORIGINAL[name] = getattr(Tensor, name)
    _patch(Tensor, name, m, _TENSOR_METHODS[name][1])

def _constant_arguments(call: UOp) -> UOp | None:
  """A host call's arguments that the scheduler folded into constants are not buffers, which the kernel graph requires.
  A value can become constant after a host call was built: a placeholder substituted by a constant when a custom rule
  is inlined, vmap's broadcast of an unbatched constant, tinygrad's x*0. Each is computed here, once per schedule,
  dropped from the call, and filled into a buffer by a wrapping executor (a buffer filled now would be reused by the
  memory planner)."""
  if (run := _host_executors.get(call.src[0])) is None: return None
  # a cast of a buffer into a weak dtype (which has no storage of its own) is that buffer's bytes
  args = tuple(x.src[0] if x.op is Ops.CAST and x.dtype in dtypes.weaks and x.src[0].op in _BUFFER_ARGS
               and x.src[0].dtype == weak_storage(x.dtype) else x for x in call.src[1:])
  consts = {i: v for i, x in enumerate(args) if x.op not in _BUFFER_ARGS and (v := constant_array(Tensor(x))) is not None}
  if not consts: return None if args == call.src[1:] else call.replace(src=(call.src[0], *args))
  device, filled = args[0].device, dict[int, UOp]()   # args[0]: the first output's buffer (a constant may have no device)
  def with_constants(bufs: list[UOp]) -> None:
    if not filled: filled.update((i, filled_buffer(v, device)) for i, v in consts.items())
    rest = iter(bufs)
    run([filled[i] if i in consts else next(rest) for i in range(len(args))])
  return call.replace(src=(executor_node(with_constants), *(x for i, x in enumerate(args) if i not in consts)))


# tinygrad's lower_and_compile swaps each compiled program into its CALL with a graph rewrite of the kernel's AST, at
# every realize, also when the program comes from its cache: a quarter of an eager realize of a small graph (a
# hand-written eager JVP of a 16x16 layer: 5.1 -> 3.9 ms). The rewrite is a pure function of the AST and the program,
# so its result is kept per (CALL body, AST, program); a kernel not compiled yet takes tinygrad's own path.
_swapped: dict[tuple[UOp, UOp, UOp], UOp] = {}
_lower_and_compile = _realize.lower_and_compile

# tinygrad's schedule cache, backed by its disk cache (compile.schedule_from_disk)
def _disk_schedule(function: UOp, orig=_schedule.lower_sink_to_linear) -> UOp | None:
  return schedule_from_disk(function, _schedule.schedule_cache, orig)

# Kernels not compiled yet are compiled first by `compile.compile_kernels` (one clang process for all of them) where it
# applies; otherwise, or if it fails, tinygrad's own lower_and_compile compiles them. Their programs are looked up in
# and kept on disk (compile.load_programs / save_programs).
def _cached_lower_and_compile(linear: UOp) -> UOp:
  calls = {c: a for c in linear.toposort() if c.op is Ops.CALL and (a := _realize._get_call_to_compile(c)) is not None}
  todo = load_programs({k: a for a in calls.values() if (k := _to_program_key(*a)) not in _to_program_cache})
  try: compiled = not todo or compile_kernels(list(todo.values()), _direct_program)
  except Exception:
    if _compile.RAISE: raise
    compiled = False
  if compiled:
    save_programs(todo)
    swaps = {}
    for c, (ast, renderer) in calls.items():
      if (program := _to_program_cache.get(_to_program_key(ast, renderer))) is None: break
      if (body := _swapped.get(key := (c.src[0], ast, program))) is None: body = _swapped[key] = c.src[0].substitute({ast: program})
      swaps[c] = c.replace(src=(body, *c.src[1:]))
    else: return linear.substitute(swaps, name="precompile kernels") if swaps else linear
  # tinygrad's path, its kernels generated in this process: its spawned workers import tinygrad alone, without the
  # patches below of its code generation (IEEE constant folding, the soft transcendentals' lanes); BEAM keeps them
  beam = any(getattr(ast.arg, "beam", 0) for ast, _ in calls.values())
  with _helpers.Context(PARALLEL=_helpers.PARALLEL.value if beam else 0): out = _lower_and_compile(linear)
  save_programs(todo)
  return out


# ---- the CPU heuristic: small reductions over a broadcast operand; software transcendentals' lanes -----------------
# tinygrad's heuristic upcasts output axes only for kernels of >= 1024 outputs (a GPU's threads). On a CPU (a renderer
# without locals) a reduce reading an operand that does not depend on an output axis (a matrix-vector product's
# vector) computes 4 outputs per loop instead: 4 independent accumulators, each element of that operand read once for
# 4. The RK4 scan of bench/loops.py (four 64x64 matvecs a step): 12.8 -> 5.7 ms per 1000 steps (idle); BEAM=2 found
# the same shape (UPCAST 4, UNROLL 4).
#
# Where the renderer has no sin/exp2/log2 (clang), each is a long polynomial (float64 sin: Payne-Hanek reduction), and
# each lane of an UPCAST/UNROLL over its axes is another copy of it: tinygrad's heuristic unrolls a reduce of up to 32
# whole (the KS port's mean over 16 contour points of complex exps: 9 s to generate and compile one kernel, 2.7 s at 4
# lanes). Their run time is the same at 4 lanes (bench: exp/sin reduced over 16, float32 and float64). Lanes of axes a
# transcendental does not depend on (an UNROLL of the reduce before a tanh of its result) make no copy of it.
_SOFT_LANES = 4
# the lanes of accumulators a reduce's UNROLL by 4 is widened within on a CPU: 16 (the matvec UPCAST 4 x UNROLL 4). 32
# (UNROLL 8) ran the RK4 scan's forward step 8% faster (1.31 against 1.41 ms per 1000 steps) but doubled each such
# kernel's code generation (~100 against ~55 ms): first calls of the bench's transforms 15-35% slower (HVP 0.71
# against 0.48 s).
_ACC_LANES = 16
_SOFT = (Ops.SIN, Ops.EXP2, Ops.LOG2)

def _output_upcast(k):
  """k with an UPCAST of 4 on its first output axis that some operand does not depend on (a reduce on a CPU), or None."""
  if k.reduceop is None or k.ren.has_local: return None
  for axis in k.upcastable_dims:
    if not isinstance(sz := k.full_shape[axis], int) or sz % 4 or all(k.rngs[axis] in b.src[1].get_idx().ranges for b in k.bufs):
      continue
    t = k.copy()
    try: t.apply_opt(_Opt(_OptOps.UPCAST, axis, 4))
    except _KernelOptError: continue
    return t
  return None

def _soft_copies(k, kinds=(_AxisType.UPCAST, _AxisType.UNROLL)) -> int:
  """How many copies of its most copied software transcendental the kernel's lanes of these kinds make."""
  lanes = {r: s for r, s, t in zip(k.rngs, k.full_shape, k.axis_types, strict=True) if t in kinds}
  soft = [u for u in k.ast.backward_slice if u.op in _SOFT and u.op not in k.ren.code_for_op]
  return max((math.prod(lanes.get(r, 1) for r in u.ranges) for u in soft), default=0)

def _plain_loop(k, out):
  """An elementwise kernel on a CPU (a renderer without locals) without an UPCAST of its innermost loop (its other
  choices kept; out itself where they do not apply without it): a plain inner loop, which clang vectorises itself, at
  the machine's vector width, branches as selects. tinygrad's 4 lanes are 4 copies of the scalar code, which clang
  vectorised at most 4 wide, and often not for most of a long expression: tanh of 10^6 float32 3984 -> 520 us, exp
  3100 -> 440 us, random.normal of 10^6 4.7 -> 1.6 ms (threefry and the normal's transform), the RK4 scan's step (its
  tanh epilogues) 2.9 -> 1.3 us. An UPCAST of an outer axis stays: its lanes share what does not depend on them (1-D
  Bratu's Jacobian, exp(u[i]) once per 4 rows: 58 us a Newton step with it, 66 without), unless a software
  transcendental is then copied by more than 4 lanes (each lane another copy of its polynomial: see above). The
  values are the same bits: each element is computed by the same operations."""
  for every in (False, True):   # a software transcendental copied by more lanes than 4: no UPCAST at all
    plain = k.copy()
    for opt in out.applied_opts:
      if opt.op is _OptOps.UPCAST and (every or plain.upcastable_dims[-1:] == [opt.axis]): continue
      try: plain.apply_opt(opt)
      except _KernelOptError: return out
    if every or _soft_copies(plain) <= _SOFT_LANES: return plain
  return out

def _unroll_lanes(k, out, lanes_for):
  """out with its last UNROLL set to the first of lanes_for(out, its lanes now) that applies, else out."""
  opts = list(out.applied_opts)
  if k.ren.has_local or out.reduceop is None or not (unrolls := [i for i, o in enumerate(opts) if o.op is _OptOps.UNROLL]): return out
  now = opts[unrolls[-1]].arg or next((s for s, t in zip(out.full_shape, out.axis_types, strict=True) if t is _AxisType.UNROLL), 0)
  for lanes in (lanes_for(out, now) if isinstance(now, int) and now > 1 else ()):
    trial = k.copy()
    try:
      for i, o in enumerate(opts): trial.apply_opt(_Opt(o.op, o.axis, lanes) if i == unrolls[-1] else o)
    except _KernelOptError: continue
    return trial
  return out

def _wider_unroll(k, out):
  """out with the reduce split it UNROLLs by 4 widened to 16 or 8 lanes, within _ACC_LANES lanes of accumulators (a
  reduce on a CPU: each lane its own accumulator), else out."""
  return _unroll_lanes(k, out, lambda o, now: [n for n in (16, 8) if now == 4 and o.upcast_size() // 4 * n <= _ACC_LANES])

def _narrower_unroll(k, out):
  """out with a reduce's UNROLL narrowed where the kernel has over twice _ACC_LANES lanes of accumulators, to within
  _ACC_LANES, or to 2 (tinygrad unrolls a reduce of up to 32 whole: 4x4 outputs x 32 lanes made 512 accumulators, slow
  to generate and spilled)."""
  return _unroll_lanes(k, out, lambda o, now: [n for n in (16, 8, 4, 2) if n < now and (o.upcast_size() // now * n <= _ACC_LANES or n == 2)]
                       if o.upcast_size() > 2 * _ACC_LANES else [])

def _hand_coded_optimizations(k, _orig=_heuristic.hand_coded_optimizations):
  out = _orig(k)
  if not any(o.op is _OptOps.UPCAST for o in out.applied_opts) and (pre := _output_upcast(k)) is not None: out = _orig(pre)
  if k.reduceop is None and not k.ren.has_local: return _plain_loop(k, out)
  out = _wider_unroll(k, out)
  cap = _SOFT_LANES
  if out.upcast_size() <= cap or _soft_copies(out) <= cap: return _narrower_unroll(k, out)   # (the first: no scan of the kernel)
  capped = k.copy()
  for opt in out.applied_opts:   # the same choices, an UPCAST/UNROLL narrowed to 4 or 2 lanes, or left out
    if opt.op not in (_OptOps.UPCAST, _OptOps.UNROLL):
      try: capped.apply_opt(opt)
      except _KernelOptError: return out   # its axes moved with a narrowed one: tinygrad's choice stands
      continue
    for lanes in (opt.arg, 4, 2):
      trial = capped.copy()
      try: trial.apply_opt(_Opt(opt.op, opt.axis, lanes))
      except _KernelOptError: continue
      if _soft_copies(trial) <= cap:
        capped = trial
        break
  return _narrower_unroll(k, capped)

# ---- a reduce's unrolled lanes as accumulators of their own, on a CPU --------------------------------------------------
# tinygrad sums a reduce's UNROLL lanes into its one accumulator at every iteration (acc + p0 + p1 + p2 + p3): a chain
# of dependent float adds the compiler may not reorder, so a 64x64 matrix-vector product ran at the adds' latency
# (1.4 us a kernel). On a renderer without locals (a CPU) each lane accumulates on its own and the lanes are summed
# once, after the loop: independent chains the compiler vectorises (0.64 us; the RK4 scan of bench/loops.py 5.4 -> 4.0
# ms per 1000 steps, with more lanes below 2.6 ms). The sum's order changes as a vectorised sum's does (XLA's does too);
# a GPU keeps tinygrad's way (registers per thread are its occupancy).
_lane_accumulators = False   # set while a kernel for a renderer without locals is generated

def _reduce_to_lane_accumulators(ctx, r: UOp, _orig=_codegen.reduce_ranges_to_acc):
  if not (_lane_accumulators and r.arg[1]): return _orig(ctx, r)
  lanes = r.src[0]
  acc = UOp.placeholder(lanes.max_shape, r.dtype, ctx.acc_num, _AddrSpace.REG)
  ctx.acc_num += 1
  topo = lanes.toposort()
  ended = {e for x in topo if x.op is Ops.END for e in x.ended_ranges}
  outer = tuple(x for x in topo if x.op is Ops.RANGE and x not in r.src[1:] and x not in ended)
  initted = acc.after(acc.after(*outer).store(UOp.const(_identity_element(r.arg[0], r.dtype))), *r.src[1:])
  summed = initted.store(initted.alu(r.arg[0], lanes)).end(*r.src[1:]).rtag("mergeable")
  return acc.after(summed).reduce(arg=r.arg)   # the lanes' own reduce, after the loop (expand_horizontal_reduce)

def _full_rewrite_to_sink(ast: UOp, ren, *args, _orig=_codegen.full_rewrite_to_sink, **kwargs):
  global _lane_accumulators
  was, _lane_accumulators = _lane_accumulators, not ren.has_local
  try: return _orig(ast, ren, *args, **kwargs)
  finally: _lane_accumulators = was

# ---- on a CPU, a reduce's transcendental epilogue in a kernel of its own -----------------------------------------------
# tanh(v @ A): tinygrad computes the tanh in the matvec's kernel, at each output as the reduce's loop ends, where clang
# does not vectorise it (0.58 us for a 64x64 matvec with its tanh; the matvec alone 0.24 us, the tanh of 64 floats as
# a kernel of its own 0.03 us: a plain loop clang vectorises). Where the renderer has no transcendentals of its own and
# no locals, a reduce whose result a software transcendental takes elementwise (as many elements, at least 32: not
# broadcast back over a larger axis, as softmax's max is) is stored by its kernel, and so are the ends of the elementwise values of
# that size computed from the transcendental (what the next kernels read): the epilogue is a kernel of its own, as
# XLA's fusions are. Storing only the reduce let tinygrad fuse the epilogue into the next matvec's loop, computed
# again for each group of outputs (15 ms per 1000 RK4 steps instead of 2.7).
_soft_devices: dict[str, bool] = {}
_EPILOGUE_MIN = 32   # elements: below, the kernel launched more costs what vectorising saves

def _soft_device(device) -> bool:
  if not isinstance(device, str): return False
  if (soft := _soft_devices.get(device)) is None:
    ren = Device[device].renderer
    soft = _soft_devices[device] = not ren.has_local and Ops.EXP2 not in ren.code_for_op
  return soft

def _size(u: UOp) -> int | None:
  dims = [d for d in u.shape if isinstance(d, int)]
  return math.prod(dims) if len(dims) == len(u.shape) else None

def _realize_soft_epilogues(ctx, order: list[UOp], users: Callable[[], dict[UOp, list[UOp]]]) -> None:
  """Marks for tinygrad's scheduler (its realize map) the reduces and epilogue ends above, not to be fused away
  (`order`: the scheduled graph's nodes, sources first, holding a software transcendental; `users()`: their consumers,
  made once when needed)."""
  consumers = users()
  elementwise = GroupOp.ALU | {Ops.CAST}
  for t in order:
    if t.op not in _SOFT or not _soft_device(t.device) or (n := _size(t)) is None or n < _EPILOGUE_MIN: continue
    reduces, todo, seen = [], list(t.src), set()
    while todo:   # the reduces whose result t takes elementwise, as many elements
      if (u := todo.pop()) in seen: continue
      seen.add(u)
      if u.op is Ops.REDUCE: reduces += [u] if _size(u) == n else []
      elif u.op in elementwise or u.op is Ops.RESHAPE: todo.extend(u.src)
    if not reduces: continue
    region, todo, ends = {t}, [t], []
    while todo:   # the elementwise values of t's size computed from it: their ends are stored, for the next kernels
      u = todo.pop()
      for c in consumers.get(u, []):
        if c.op in elementwise and _size(c) == n:
          if c not in region:
            region.add(c)
            todo.append(c)
        elif c.op not in _gemm.STORING and u not in ends: ends.append(u)   # (a value stored anyway is not stored twice)
    for u in reduces + ends: ctx.realize_map[u] = ctx.non_removable[u] = None
  return None

def _realize_padded_soft(ctx, order: list[UOp]) -> None:
  """Marks for tinygrad's scheduler the software transcendentals a PAD or a STACK spreads over at least twice their
  elements: in the kernel every element computes every piece's expression and then selects its own (only loads are
  gated), so a concatenation of k such pieces computed each transcendental k times per element."""
  elementwise = GroupOp.ALU | {Ops.CAST}
  soft: dict[UOp, frozenset] = {}
  none: frozenset = frozenset()
  for u in order:
    if u in ctx.realize_map: soft[u] = none
    elif u.op in _SOFT and _soft_device(u.device): soft[u] = frozenset([u])
    elif u.op in elementwise or u.op in GroupOp.Movement: soft[u] = none.union(*(soft.get(s, none) for s in u.src))
  for p in order:
    if p.op not in (Ops.PAD, Ops.STACK) or (m := _size(p)) is None: continue
    for piece in p.src[:1] if p.op is Ops.PAD else p.src:
      if (ts := soft.get(piece)) and (n := _size(piece)) is not None and m >= 2 * n:
        for t in ts: ctx.realize_map[t] = ctx.non_removable[t] = None

# ---- short loops are not vectorised by clang -----------------------------------------------------------------------
# clang's loop vectoriser spends ~40 ms on each loop of a software transcendental (AVX-512 bodies, masked remainders),
# which a loop of a few dozen elements gains ~1 us a call from: the kernels of the transcendentals a PAD spreads (above)
# took the bicycle's Jacobian's clang run from 0.19 to 0.60 s. A loop of fewer than _SHORT_LOOP iterations is left scalar.
_SHORT_LOOP = _plain_c.SHORT_LOOP   # (plain_c.py writes its kernels' short loops the same way)

def _short_loop(ctx, x: UOp) -> str | None:
  if x.dtype == dtypes.void or (n := x.src[0]).vmin != n.vmax or n.vmax >= _SHORT_LOOP: return None   # (a constant bound)
  return f'_Pragma("clang loop vectorize(disable)") for ({ctx.render_dtype(x.dtype)} {ctx[x]} = 0; {ctx[x]} < {ctx[n]}; {ctx[x]}++) {{'

# ---- float chains keep their order -------------------------------------------------------------------------------------
# tinygrad's C-style renderers write an operand of the same associative op without its parentheses, on either side:
# a + (b + c) as (a+b+c), which C reads as (a + b) + c. For floats that is another sum: 1e8 + (-1e8 + 1) was 1 in
# float32 where JAX (and an eager call) give 0, a * (b * c) overflowed, and the Cody-Waite reductions of tinygrad's sine
# (x - q*PI_A - q*PI_B - ..., built right-nested) added their small terms first: float64 sin(x) near a multiple of pi
# was off by ~1e-16 * |x| absolutely (1e-11 relative at |x| ~ 10). Here the right operand of a float add or multiply
# keeps its parentheses (integers and bitwise ops are associative: as tinygrad writes them); plain_c.py writes the same.
_ASSOCIATIVE = {Ops.ADD, Ops.MUL, Ops.XOR, Ops.OR, Ops.AND}

def _ordered_chain(ctx, x: UOp) -> str | None:
  # (and a - -b, - -b: tinygrad writes a negation without parentheses, `a--b`, which C reads as a decrement)
  if x.op is Ops.SUB and len(x.src) == 2 and (b := ctx[x.src[1]]).startswith("-"): return ctx.code_for_op[Ops.SUB](ctx[x.src[0]], f"({b})", x.dtype)
  if x.op is Ops.NEG and (b := ctx[x.src[0]]).startswith("-"): return ctx.code_for_op[Ops.NEG](f"({b})", x.dtype)
  if x.op not in _ASSOCIATIVE or not dtypes.is_float(x.dtype) or len(x.src) != 2: return None
  a, b = x.src
  return ctx.code_for_op[x.op](strip_parens(ctx[a]) if a.op is x.op else ctx[a], ctx[b], x.dtype)

def _c_renderers() -> list[type[_cstyle.CStyleLanguage]]:
  """tinygrad's C-style renderer classes (their string_rewrite is built from base_rewrite when the class is made)."""
  found: list[type[_cstyle.CStyleLanguage]] = []
  todo: list[type[_cstyle.CStyleLanguage]] = [_cstyle.CStyleLanguage]
  while todo:
    found.append(c := todo.pop())
    todo.extend(c.__subclasses__())
  return found

# ---- a kernel's linear order without comparing whole subgraphs ---------------------------------------------------------
# tinygrad's linearize sorts a kernel's nodes by (priority, tuplize), tuplize being a node's whole subgraph as nested
# tuples: two nodes of a deep chain (threefry's rounds, an unrolled iteration) are compared down to where they differ,
# and again at every comparison that reaches them. On ADVI's two deep kernels (4240 and 5796 nodes, 293 and 452 deep)
# that sort took 1.7 s of the port's 7.3 s first run. Here the same comparison is made node by node, each pair of nodes
# compared once: the same order (so the same kernel), 0.17 s. Small or shallow kernels keep Python's sort (C-speed tuple
# comparisons, 2-4x faster there).
_DEEP_SORT = 200_000   # nodes x depth from which a kernel's nodes are compared pair by pair

def _linearizer_sorted(iterable, key=None, reverse=False, _orig=builtins.sorted):
  """The linearizer module's `sorted`: its sort of a large, deep kernel's nodes by (priority, tuplize) as above, every
  other sort Python's."""
  items = iterable if isinstance(iterable, list) else list(iterable)
  # (nodes x depth is at most nodes^2: a smaller kernel, most of them, takes Python's sort without looking further)
  if key is None or reverse or len(items) ** 2 < _DEEP_SORT: return _orig(items, key=key, reverse=reverse)
  keys = [key(u) for u in items]   # (linearize's: the priority's 3 items, then those of the node's tuplize)
  def by_keys() -> list: return [items[i] for i in _orig(range(len(items)), key=keys.__getitem__)]   # (Python's order, keys made once)
  if not all(type(u) is UOp and type(k) is tuple and type(t := u.__dict__.get("tuplize")) is tuple and len(k) == 3 + len(t) and
             all(a is b for a, b in zip(k[3:], t, strict=True)) for u, k in zip(items, keys, strict=True)):
    return by_keys()
  depth: dict[UOp, int] = {}
  for u in items: depth[u] = 1 + max((depth.get(s, 0) for s in u.src), default=0)   # (toposorted: sources first)
  if len(items) * max(depth.values()) < _DEEP_SORT: return by_keys()
  try: return _pairwise_sorted(items, keys)
  except RecursionError: return by_keys()

def _pairwise_sorted(items: list[UOp], keys: list[tuple], _orig=builtins.sorted) -> list[UOp]:
  """items in the order of their keys (3 items of priority, then the node's tuplize), a node's tuplize compared with
  another's source by source, each pair of nodes once."""
  memo: dict[tuple[UOp, UOp], int] = {}
  def node_cmp(a: UOp, b: UOp) -> int:   # -1, 0, 1 as a.tuplize against b.tuplize: Python's tuple comparison, memoised
    if a is b: return 0
    if (r := memo.get((a, b))) is not None: return r
    r = 0
    for x, y in ((a.op.value, b.op.value), (a.arg, b.arg), (a.dtype, b.dtype)):
      if x is y or x == y: continue
      r = -1 if x < y else 1
      break
    else:
      for x, y in zip(a.src, b.src, strict=False):   # (a longer tuple after an equal prefix is the larger)
        if (r := node_cmp(x, y)) != 0: break
      else: r = (len(a.src) > len(b.src)) - (len(a.src) < len(b.src))
    memo[(a, b)] = r
    return r
  def cmp(i: int, j: int) -> int:
    pi, pj = keys[i][:3], keys[j][:3]
    if pi != pj: return -1 if pi < pj else 1
    return node_cmp(items[i], items[j])
  return [items[i] for i in _orig(range(len(items)), key=functools.cmp_to_key(cmp))]

# ---- matrix products by BLAS on the CPU (gemm.py), plain kernels written as C (plain_c.py) ----------------------------

def _direct_program(ast: UOp, renderer) -> UOp | None:
  """A kernel's program made without tinygrad's code generation: a BLAS call, or a plain kernel's C, else None."""
  if (prg := _gemm.program(ast, renderer)) is not None: return prg
  return _plain_c.program(ast, renderer)

def _do_to_program(ast: UOp, renderer, _orig=_codegen.do_to_program) -> UOp:
  if type(renderer.compiler) is _compiler_cpu.ClangCompiler: _compile.prepare()   # (clang starting while the code is generated)
  if (prg := _direct_program(ast, renderer)) is not None: return prg
  return _orig(ast, renderer)

def _get_runtime(device: str, ast: UOp, cache=True, _orig=_realize.get_runtime):
  return _gemm.runtime(device, tuple(words)) if (words := _gemm.words_of(ast)) is not None else _orig(device, ast, cache)


def _kernels_apart(ctx, sink: UOp) -> None:
  order = list(sink.toposort(enter_calls=False))   # (walked once for both, their consumers mapped once)
  users = functools.cache(lambda: _gemm.consumers_of(order))
  if any(u.op in _SOFT and _soft_device(u.device) for u in order):   # (both walk the graph: only where they can apply)
    _realize_soft_epilogues(ctx, order, users)
    _realize_padded_soft(ctx, order)
  _gemm.realize_gemms(ctx, order, users)


def _exec_host(ctx, call: UOp, ast: UOp):
  if (run := _host_executors.get(ast)) is None:
    if ast.arg.startswith("tinyjax_host_"): raise RuntimeError(f"tinyjax: the executor of {ast.arg} was freed while a schedule still calls it")
    return None
  run(_realize.resolve_params(call, ctx.input_uops))
  return []


def _call_name(call: UOp, *args, _orig=_realize.get_call_name, **kwargs) -> str:   # DEBUG=2's line for a loop
  return "tinyjax host loop" if call.src[0] in _host_executors else _orig(call, *args, **kwargs)


# ---- constant folding of float comparisons, IEEE's way ----------------------------------------------------------------
# tinygrad keeps a float constant as a ConstFloat, whose nan == nan (so that UOps of a nan constant hash-cons), and its
# constant folding compares those objects: Tensor(nan) != Tensor(nan) folded to False, so jnp.isnan of a 0-d array (a
# constant in tinygrad) was False and jnp.maximum(1.0, nan) was 1.0, where JAX gives True and nan.

def _ieee(x): return float(x) if isinstance(x, ConstFloat) else x

# The ALU table itself, not `exec_alu`: tinygrad's compiled pattern matchers copy the globals of their rewrite functions
# (`deconstruct_function`) when first used, so a matcher compiled before `import tinyjax` (a device opened earlier, or
# at tinyjax's own import) kept the original `exec_alu`; every caller looks the table up in the ops module at call time.
_IEEE_ALU = {**_ops.python_alu, Ops.CMPNE: lambda x, y: _ieee(x) != _ieee(y), Ops.CMPEQ: lambda x, y: _ieee(x) == _ieee(y)}


# ---- a DType compares with numpy's dtypes, as a JAX array's dtype (which is numpy's) ------------------------------------
# JAX code writes x.dtype == np.float32, x.dtype in (np.float32, np.float64), x.dtype == "float32", np.dtype(x.dtype),
# np.zeros(n, x.dtype). A DType stays equal only to itself among DTypes (its identity hash is unchanged: tinygrad keys
# dicts by it); against a numpy dtype, scalar type or dtype name it compares as numpy's dtype of the same layout would.
# As with numpy's own dtypes (np.dtype("float32") == "float32"), equal objects of different kinds hash differently.

def _dtype_eq(self: DType, other) -> bool:
  if self is other: return True
  if isinstance(other, DType): return False
  if not isinstance(other, (np.dtype, type, str)): return NotImplemented
  try: o = np.dtype(other)
  except TypeError: return NotImplemented
  return (npdt := np_dtype(weak_storage(self))) is not None and npdt == o

def _dtype_np(self: DType) -> np.dtype:
  # numpy's np.dtype(obj) takes obj.dtype: np.dtype(x.dtype), np.zeros(3, x.dtype); no attribute for a dtype numpy lacks.
  # A weak dtype is the one it is stored in (a JAX array's dtype is float64, weak_type=True)
  if (npdt := np_dtype(weak_storage(self))) is None: raise AttributeError(f"{self!r} has no numpy dtype")
  return npdt

def _dtype_str(self: DType) -> str:
  # print(x.dtype) shows numpy's name (float32), as a JAX array's dtype does; repr stays tinygrad's (dtypes.float)
  return repr(self) if type(self) is not DType or (npdt := np_dtype(weak_storage(self))) is None else npdt.name

# ---- weakly typed floats at JAX's width ------------------------------------------------------------------------------
# tinygrad lowers and stores its weakfloat at DEFAULT_FLOAT (float32); a Python float is float64 in JAX with x64. Where
# tinygrad lowers or stores a weak value it now asks `buffers.weak_storage`, whose width is in its kernel cache keys;
# its schedule cache (keyed by the graph, where the value is still weak) is one per width.
_schedule_caches: dict[str, dict] = {}

def _weak_default_dtype(u: UOp, orig=_weak.default_dtype) -> DType:
  return weak_storage(u.dtype) if u.dtype is dtypes.weakfloat else orig(u)

# tinygrad's exp and cos compute a float narrower than float32 at float32: least_upper_dtype(x, float32), which for a
# weakly typed float (a Python scalar's) is float32, so jnp.exp(0.3) was float32's exp under x64. A weak float is
# computed at its width instead, as sin and log2 of it are (Ops on it, lowered at its width)
# (Tensor has its own copies of the mixin's methods: tinygrad wraps them for its metadata)
_WEAK_WIDTH = {"exp": lambda x: x.mul(1 / math.log(2)).exp2(), "cos": lambda x: ((math.pi / 2) - x).sin()}

def _at_weak_width(name: str, orig: Callable) -> Callable:
  @functools.wraps(orig)
  def method(self):
    return _WEAK_WIDTH[name](self) if self.dtype is dtypes.weakfloat else orig(self)
  return method

def _weak_sum_acc_dtype(dt: DType, orig=_reduce.sum_acc_dtype) -> DType:
  return orig(weak_storage(dt) if dt is dtypes.weakfloat else dt)

def set_weak_float(x64: bool) -> None:
  """Weakly typed floats are computed and stored at float64 (x64) or float32 from now on (tinyjax.config's x64)."""
  width = "float64" if x64 else "float32"
  if WEAK_FLOAT.value == width: return
  _schedule_caches[WEAK_FLOAT.value] = _schedule.schedule_cache
  _schedule.schedule_cache = _schedule_caches.get(width, {})
  WEAK_FLOAT.value = width

# ---- Tensor.arange: a constant graph, built once per arguments ----------------------------------------------------
# tinygrad builds an arange as a cumulative sum through pads and pools (~1 ms of Python each), and one_hot, sorts,
# argmax and indexing ask for one at every call; its graph has no buffer and no device, and UOps are immutable values,
# so the same arguments can share one graph.
_ARANGES: dict[tuple, UOp] = {}

def _arange(cls, start, stop=None, step=1, dtype=None, orig=Tensor.arange.__func__):  # type: ignore[attr-defined]
  args = (start, stop, step)
  if cls is not Tensor or not all(x is None or type(x) in (int, float) for x in args): return orig(cls, start, stop, step, dtype)
  key = (*((type(x), repr(x)) for x in args), type(dtype), dtype)   # repr: -0.0 is not 0.0, nan is nan
  try: u = _ARANGES.get(key)
  except TypeError: return orig(cls, start, stop, step, dtype)   # an unhashable dtype argument
  if u is None:
    if len(_ARANGES) >= 4096: _ARANGES.clear()
    u = _ARANGES[key] = orig(cls, start, stop, step, dtype).uop
  return Tensor(u)

# ---- Tensor.full: the value's graph built once per arguments ------------------------------------------------------
# tinygrad builds a fill as a const reshaped and expanded into a new buffer (AFTER(buffer, STORE(buffer, value)):
# ~260 us of Python for jnp.zeros(16), where JAX's eager fill is ~5 us). The value's graph is the same for the same
# arguments (UOps are immutable values), and so is the buffer's type: both are taken from a first tinygrad call, and
# each call makes a new buffer of that type, written with that value, as tinygrad would.
_FULLS: dict[tuple, tuple[UOp, tuple | None]] = {}   # arguments -> (the value, (shape, dtype, device) of the buffer)

def _full(cls, shape, fill_value, dtype=None, device=None, buffer=True, orig=Tensor.full.__func__):  # type: ignore[attr-defined]
  shp = argfix(shape)
  if cls is not Tensor or type(fill_value) not in (int, float, bool) or not all(type(d) is int for d in shp) or isinstance(device, tuple):
    return orig(cls, shape, fill_value, dtype, device, buffer)
  key = (shp, type(fill_value), repr(fill_value), dtype, device, buffer, dtypes.default_float, dtypes.default_int, WEAK_FLOAT.value)
  try: found = _FULLS.get(key)
  except TypeError: return orig(cls, shape, fill_value, dtype, device, buffer)   # an unhashable dtype argument
  if found is None:
    t = orig(cls, shape, fill_value, dtype, device, buffer)
    u = t.uop
    if buffer and not (u.op is Ops.AFTER and u.src[1].op is Ops.STORE and u.src[1].src[0] is u.src[0] and u.src[0].base.op is Ops.BUFFER):
      return t   # (not the layout this knows how to make again)
    if len(_FULLS) >= 4096: _FULLS.clear()
    _FULLS[key] = (u.src[1].src[1], (static_shape(u), u.dtype, u.device)) if buffer else (u, None)
    return t
  value, typ = found
  if typ is None: return Tensor(value)
  shp, dt, dev = typ
  view = _new_buffer(shp, dt, dev, None, allocate=False)[1].uop
  return tensor_of(view.after(view.store(value)))

# ---- UOp.substitute without the pattern matcher ---------------------------------------------------------------------
# tinygrad substitutes through graph_rewrite with a pattern that matches every node (a dictionary lookup in a compiled
# matcher, a deque of stages per node): a third of an eager grad's time (the transforms substitute their placeholders
# at the end). The same walk, written out: bottom-up, each node first replaced through `dvars` to a fixed point, then
# its sources (not a FUNCTION's or an opaque CALL's body), then rebuilt if they changed (its dtype as tinygrad
# re-derives it) and the rebuilt node walked again. Other options (a pattern of its own, walk, enter_calls) stay
# tinygrad's.
# A FUNCTION whose body holds a host call (a LAPACK call, a loop) takes buffers: its arguments are made contiguous when
# it is built (CallRule.node, HostCallRule), but an argument that was a placeholder then (a custom rule's primal, whose
# contiguous() is itself) may be substituted by a computation or a view here, which tinygrad's scheduler moves into the
# callee (slogdet's jvp rule on `2 * a`: "UOp verification failed"): such an argument gets its CONTIGUOUS here.
_OPAQUE_BODIES = UOp._OPAQUE_CALL_BODIES
_HOST_BODIES: weakref.WeakKeyDictionary[UOp, bool] = weakref.WeakKeyDictionary()

def _buffer_args(m: UOp, src: tuple[UOp, ...]) -> tuple[UOp, ...]:
  if m.op is not Ops.FUNCTION or all(a.has_buffer_identity() or a.op is Ops.CONTIGUOUS for a in src[1:]): return src
  if getattr(m.arg, "precompile", False) and any(a.device is None for a in src[1:]): src = _constants_filled(src)
  if (host := _HOST_BODIES.get(src[0])) is None: host = _HOST_BODIES[src[0]] = holds_host_call(list(src[0].src))
  return (src[0], *[a if a.has_buffer_identity() else a.contiguous() for a in src[1:]]) if host else src

def _constants_filled(src: tuple[UOp, ...]) -> tuple[UOp, ...]:
  """A precompiled call's device-less arguments (constants: a Python scalar substituted for a transform's placeholder,
  eager `grad(checkpoint(f))(1.0)`) as new buffers filled with them on their PARAMs' devices (tinygrad's fill, which
  an eager realize writes from the host): tinygrad's scheduler takes only buffers as the arguments of a call it does not
  inline ("input to kernel must resolve to a buffer state"); one it inlines folds the constants in. The call keeps its
  arguments, in number and order, for its rules."""
  params = {p.arg.slot: p for p in src[0].toposort(enter_calls=False) if p.op is Ops.PARAM}
  def filled(i: int, a: UOp) -> UOp:
    # (an argument the body does not read goes on the default device: it has no PARAM to say)
    d = Device.DEFAULT if (p := params.get(i)) is None else p.device
    if a.device is not None or not isinstance(d, str) or a.dtype in dtypes.weaks: return a
    dest = UOp.new_buffer(d, a.max_numel(), a.dtype).reshape(a.shape)
    return dest.after(dest.store(a))
  return (src[0], *[filled(i, a) for i, a in enumerate(src[1:])])

def _substitute(self: UOp, dvars: dict, name=None, extra_pm=None, walk=False, enter_calls=False, orig=UOp.substitute) -> UOp:
  if extra_pm is not None or walk or enter_calls: return orig(self, dvars, name, extra_pm, walk, enter_calls)
  dvars = {k: v for k, v in dvars.items() if k is not v}
  if not dvars: return self
  replace: dict[UOp, UOp] = {}
  stack: list[tuple[UOp, int, UOp | None]] = [(self, 0, None)]
  pending: set[UOp] = set()   # walked into, not done: met again below itself, a cycle
  while stack:
    n, stage, m = stack.pop()
    if stage == 0:
      if n in replace: continue
      if n in pending: raise RuntimeError("infinite loop in graph_rewrite (a replacement holds what it replaces)")
      pending.add(n)
      m, seen = n, set()
      while (r := dvars.get(m)) is not None:
        if m in seen: raise RuntimeError("infinite loop in fixed_point_rewrite")
        seen.add(m)
        m = r
      stack.append((n, 1, m))
      if m.op is Ops.FUNCTION or (m.op is Ops.CALL and m.src[0].op in _OPAQUE_BODIES): replace.setdefault(m.src[0], m.src[0])
      stack.extend((x, 0, None) for x in reversed(m.src) if x not in replace)
    elif stage == 1:
      assert m is not None
      new_src = _buffer_args(m, tuple(replace[x] for x in m.src))
      if all(a is b for a, b in zip(new_src, m.src, strict=True)): replace[n] = m
      else:
        rebuilt = UOp(m.op, _rebuild_dtype(m, new_src), new_src, m.arg, m.tag)
        if (done := replace.get(rebuilt)) is None:
          stack.extend(((n, 2, rebuilt), (rebuilt, 0, None)))
          continue
        replace[n] = done
      pending.discard(n)
    else:
      assert m is not None
      replace[n] = replace[m]
      pending.discard(n)
  return replace[self]

# ---- IEEE arithmetic on floats ---------------------------------------------------------------------------------------
# tinygrad's symbolic rewrites fold x * 0 to 0, x / x to 1 and (x * y) / y to x for floats too, so x - x (x + x*-1 ->
# x*0), x * 0 and x / x were 0, 0 and 1 at an inf or a nan, where IEEE and JAX (XLA folds none of them for floats) give
# nan: a silent difference in every kernel; and x/(1+x) becomes 1-1/(1+x), 1 at x = inf (the gradient of log(1 + e^x)
# at 1000). The first three keep their folding for integers (index arithmetic), a float constant times 0 still folds
# (tinygrad gives nan for an inf or nan constant), the last is not applied.
def _div_self(x: UOp) -> UOp | None: return None if dtypes.is_float(x.dtype) else x.const_like(1)
def _mul_div(x: UOp, x2: UOp) -> UOp | None: return None if dtypes.is_float(x.dtype) else x

def _ieee_rules() -> dict:
  """The three rules' functions (by the comments tinygrad's source puts on them) -> their IEEE-safe replacements."""
  import inspect
  import tinygrad.uop.symbolic as _symbolic
  out: dict = {}
  for _, fn in _symbolic.sym.patterns:
    src = inspect.getsource(fn) if isinstance(fn, types.FunctionType) and fn.__name__ == "<lambda>" else ""
    if "# x/x -> 1" in src: out[fn] = _div_self
    elif "# (x*x2)/x2 -> x" in src: out[fn] = _mul_div
    elif "x.const_like(float(\"nan\") if x.op is Ops.CONST" in src:
      out[fn] = lambda x, orig=fn: None if dtypes.is_float(x.dtype) and x.op is not Ops.CONST else orig(x)
    # x/(1+x) -> 1-1/(1+x) (and with a factor or a term): 1 at x = inf, where x/(1+x) is nan (float only: a reciprocal)
    elif "lambda x,d: 1-d" in src or "lambda x,y,d: y*(1-d)" in src or "lambda x,y,d: (1-d)+x*y" in src: out[fn] = _never
    # float reassociations XLA does not make: (x + c1) + c2 -> x + (c1 + c2) (and *): log1p's test (x + 1) - 1 == x
    # folded to true, so jnp.log1p(1e-10) was 8e-8 off in float64, log1p(1e-5) 1.4e-3 in float32; x*c0 + x*c1 ->
    # x*(c0 + c1), x + x*c -> x*(c + 1), (x/x2)/x3 -> x/(x2*x3) (another rounding, or an overflow)
    # (no closures in tinygrad's matchers: the rule is a default argument)
    # (a product by a power of two is exact: (x * 2) * c is x * (2c), x * -1 * -1 is x)
    elif "x.alu(f.op,c1.alu(f.op,c2))" in src:
      out[fn] = lambda _rule=fn, **kw: _unless_float(_rule, kw, kw["f"].op is Ops.ADD or (kw["f"].op is Ops.MUL and not _power_of_two(kw)))
    elif "x*(c0+c1)" in src or "x*(c+1)" in src or "# (x/x2)/x3 -> x/(x2*x3)" in src: out[fn] = lambda _rule=fn, **kw: _unless_float(_rule, kw)
    # a constant moved to the end of a sum or a product ((x + c) + y -> (x + y) + c, * too), (y + x) + x -> y + 2x, and
    # two selects' constant branches summed: float reassociations XLA does not make ((x + 1.0) - x was 1 at 1e16, not
    # 0; a compensated sum's error term folded away; (x * c) * y overflowed where x * y does (gelu near the largest
    # float, x * log y; also by a power of two: (x * 0.5) * y) and rounded twice in erfc's square
    elif "(x+y)+c1 if y.op is not Ops.CONST" in src or "lambda y,x: y+x*2" in src or "(x*y)*c1 if y.op is not Ops.CONST" in src:
      out[fn] = lambda _rule=fn, **kw: _unless_float(_rule, kw)
    elif "y+c.where(t+tt, f+ff)" in src: out[fn] = lambda _rule=fn, **kw: _unless_float(_rule, kw, of="y")
    # c ** x -> exp2(x log2 c): log2 c rounded, an error of ~|x log2 c| ulps; pow (xpow) is exact to an ulp (c = 2 and 1 stay)
    elif "(x*math.log2(c.val)).exp2()" in src:
      out[fn] = lambda _rule=fn, **kw: _unless_float(_rule, kw, kw["c"].arg not in (1, 2, 1.0, 2.0))
  assert len(out) >= 18, f"tinygrad's float-unsafe folding rules moved: found {len(out)} of 18"
  return out

def _never(**_) -> None: return None

def _power_of_two(kw: dict) -> bool:
  return any(isinstance(v := c.arg, float) and v != 0 and math.isfinite(v) and math.frexp(abs(v))[0] == 0.5 for c in (kw["c1"], kw["c2"]))

def _unless_float(rule: Callable, kw: dict, applies: bool = True, of: str = "x") -> UOp | None:
  return None if applies and dtypes.is_float(kw[of].dtype) else rule(**kw)

def _ieee_matchers() -> list[tuple[Any, str, Any]]:
  """(module, attribute, new matcher) for every tinygrad module attribute holding a PatternMatcher with those rules."""
  import sys
  rules, new = _ieee_rules(), {}
  found = []
  for name, mod in sorted(sys.modules.items()):
    if not name.startswith("tinygrad") or mod is None: continue
    for k, v in list(vars(mod).items()):
      if isinstance(v, _realize.PatternMatcher) and any(f in rules for _, f in v.patterns):
        if id(v) not in new: new[id(v)] = _realize.PatternMatcher([(p, rules.get(f, f)) for p, f in v.patterns])
        found.append((mod, k, new[id(v)]))
  return found

# ---- a new node's recursive properties ----------------------------------------------------------------------------------
# tinygrad computes a recursive property (a UOp's shape, ranges, device) of a new node by a gated toposort of it,
# ~10 us per node per property: a new node of an op over nodes that have it (every op a trace builds) needs only itself
def _recursive_get(self, x, owner=None, orig=_ops.recursive_property.__get__):
  if x is None: return self
  if (v := x.__dict__.get(nm := self.nm, _MISSING)) is not _MISSING: return v
  if all(nm in s.__dict__ for s in x.src):
    v = x.__dict__[nm] = self.fxn(x)
    return v
  return orig(self, x, owner)

_MISSING = object()

# ---- shape arguments of ints are built once ------------------------------------------------------------------------
# every movement op turns its shape arguments into UOps (a CONST per int and a STACK: a quarter of an eager slice);
# UOps are immutable, so the same ints give the same node
@functools.lru_cache(maxsize=4096)
def _int_shape_arg(arg: tuple[int, ...], orig=_ops.shape_to_shape_arg) -> UOp: return orig(arg)

def _shape_to_shape_arg(arg, orig=_ops.shape_to_shape_arg) -> UOp:
  return _int_shape_arg(tuple(arg)) if all(type(x) is int for x in arg) else orig(arg)

# ---- shapes of ints are not simplified ---------------------------------------------------------------------------
# every movement op (reshape, expand, pad, shrink) simplifies its shape arguments with tinygrad's symbolic rewrite
# (~50 us, half of an eager `x[:, 0]`); arguments that are ints (CONSTs, STACKs of CONSTs) are left as they are by it.
def _simplify(self: UOp, tracked=False, orig=UOp.simplify):
  if self.op is Ops.SINK and all(s.op is Ops.CONST or (s.op is Ops.STACK and all(x.op is Ops.CONST for x in s.src)) for s in self.src):
    return self
  return orig(self, tracked)

# ---- synchronize with nothing pending ------------------------------------------------------------------------------
# tinyjax's CPU launches are synchronous (cpu_graph, BLAS), so a user's synchronize (block_until_ready, a benchmark's)
# mostly finds tinygrad's queues drained; tinygrad's check makes new memoryviews of four signal words each time (~4 us,
# a fifth of a small jitted call). The views are made once here and the check returns when every word says done.
_SYNC_VIEWS: dict = {}   # device -> (workers seen, [(put, done)], timeline signal, timeline value)

def _words(b): return b._buf.cpu_view().view(fmt='Q')

def _synchronize(self, timeout=None, orig=_ops_cpu.CPUDevice.synchronize):
  if (v := _SYNC_VIEWS.get(self)) is None or v[0] != len(self.workers):
    v = _SYNC_VIEWS[self] = (len(self.workers), [(_words(w.put), _words(w.done)) for w in self.workers],
                             _words(self.signal("timeline")), _words(self.signal("value", 1, device="CPU")))
  if all(done[0] >= put[0] for put, done in v[1]) and v[2][0] >= v[3][0] - 1 and not self.prof_ents \
     and _hcq2.HCQ_RUNTIME_DEV.value == self.device: return
  orig(self, timeout)

def install() -> None:
  """Apply every patch (once)."""
  global _installed
  if _installed: return
  _installed = True
  # (a setting, not a patch: tinygrad records which Tensor method made each node, for its profiler and DEBUG names,
  # creating a Metadata and a profiling context per method call: ~13% of a trace. Off unless the environment asks.)
  if "TRACEMETA" not in os.environ: _helpers.TRACEMETA.value = 0
  _patch(_helpers, "db_connection", _shared_db_connection, "tinygrad's compile cache connection usable from any thread "
         "(its sqlite connection refuses the threads that did not open it; tinyjax serialises tinygrad on one lock)")
  if _helpers._db_connection is not None:   # opened while tinyjax was imported (its token's kernel): opened again, shareable
    _helpers._db_connection.close()
    _helpers._db_connection = None
  _patch(Tensor, "linear_with_vars", _linear_with_vars, "a realize that writes buffers also realizes the live values that "
         "read their old data (a value keeps the data it was built from: tinygrad issue 17074)")
  _patch(Tensor, "assign", _assign, "a view assign first realizes the values computed from the buffer (tinygrad rewrites "
         "every reader of it to read after the write)")
  _patch(Tensor, "gradient", _gradient, "a gradient through a value a transform computed early raises (docs/jit.md, \"Eager values\")")
  for m in _READS: _patch(Tensor, m, _guard(m, getattr(Tensor, m)), "reading a traced value raises (ConcretizationTypeError...)")
  _patch(Tensor, "__array__", _guard("__array__", _array), "numpy functions of a Tensor (np.asarray(t)) read it, guarded")
  _patch(_rangeify, "pm_no_indexing_calls", _rangeify.pm_no_indexing_calls + _realize.PatternMatcher([
    (_realize.UPat(Ops.CALL, src=(_realize.UPat(Ops.CUSTOM_FUNCTION),), name="call", allow_any_len=True), _constant_arguments)]),
    "a host call's arguments that the scheduler folded into constants are filled into buffers")
  _patch(_schedule, "pm_schedule", _realize.PatternMatcher([(_realize.UPat(Ops.SINK, name="function"), _disk_schedule)]),
         "tinygrad's schedule cache backed by its disk cache (CCACHE): a new process takes a graph's schedule instead of "
         "making it again (_tg/compile.py)")
  _patch(_realize, "lower_and_compile", _cached_lower_and_compile, "the swap of compiled programs into their CALLs memoised "
         "(a quarter of an eager realize of a small graph); new CPU kernels compiled by one clang process (_tg/compile.py)")
  _patch(_realize, "pm_exec", _realize.pm_exec + _realize.PatternMatcher([
    (_realize.UPat(Ops.CALL, src=(_realize.UPat(Ops.CUSTOM_FUNCTION, name="ast"),), name="call", allow_any_len=True), _exec_host)]),
    "host calls (loops, LAPACK) run their executor")
  _patch(_realize, "get_call_name", _call_name, "DEBUG=2 names a host loop")
  _patch(_heuristic, "hand_coded_optimizations", _hand_coded_optimizations, "kernels of software transcendental "
         "functions (sin/exp2/log2 without the renderer's own) get at most 4 lanes of UPCAST/UNROLL: each lane copies "
         "the polynomial, and a 16-lane unroll took seconds to compile for the same run time")
  _patch(_codegen, "full_rewrite_to_sink", _full_rewrite_to_sink, "code generation knows whether the renderer has "
         "locals (a CPU's unrolled reduce lanes accumulate on their own)")
  _patch(_codegen, "pm_reduce_local", _codegen.PatternMatcher([(p, _reduce_to_lane_accumulators if f is _codegen.reduce_ranges_to_acc else f)
                                                               for p, f in _codegen.pm_reduce_local.patterns]),
         "on a CPU a reduce's UNROLL lanes are accumulators of their own, summed after the loop: independent chains of "
         "adds the compiler vectorises, not one chain of dependent adds")
  _patch(_indexing, "pm_generate_realize_map", _indexing.pm_generate_realize_map + _realize.PatternMatcher([
    (_realize.UPat(Ops.SINK, name="sink"), _kernels_apart)]),
    "on a CPU a reduce whose result a software transcendental takes elementwise is stored by its kernel, and the "
    "transcendental's elementwise epilogue is a kernel of its own (clang vectorises its loop; in the reduce's kernel it "
    "was scalar code at each output); a matrix product big enough for BLAS is a kernel of its own, its operands stored")
  _patch(_transcendental, "xsin", _transcendental_fixes.xsin, "sin and cos right over the whole range: float64 arguments past 30 were "
         "reduced with 32 bits of their mantissa, a cosine was the sine of pi/2 - x rounded (_tg/transcendental.py)")
  _patch(_transcendental, "xexp2", _transcendental_fixes.xexp2, "an exponential (EXP2 of x log2 e) to 1 ulp: tinygrad's rounded x log2 e "
         "was ~|x| ulps off (_tg/transcendental.py)")
  import tinygrad.uop.symbolic as _symbolic
  for module in (_transcendental, _symbolic):
    _patch(module, "xpow", _transcendental_fixes.xpow, "pow to ~1 ulp with C's special cases: tinygrad's exp2(y log2 x) was ~|y log2 x| "
           "ulps off, pow(max, 1) inf, pow(-0, -1) +inf (_tg/transcendental.py)")
  _transcendental.get_transcendental_patterns.cache_clear()   # (its patterns hold the function they were made with)
  chains = _cstyle.PatternMatcher([(_cstyle.UPat(GroupOp.ALU, name="x"), _ordered_chain)])
  why = "a float add or multiply keeps the parentheses of its right operand of the same op (a + (b + c) was (a + b) + c)"
  _patch(_cstyle, "base_rewrite", chains + _cstyle.base_rewrite, why)
  for renderer in _c_renderers():
    if "string_rewrite" in vars(renderer): _patch(renderer, "string_rewrite", chains + renderer.string_rewrite, why)
  _patch(_cstyle.ClangRenderer, "string_rewrite", _cstyle.PatternMatcher([
    (_cstyle.UPat(Ops.RANGE, name="x"), _short_loop)]) + _cstyle.ClangRenderer.string_rewrite,
    "clang does not vectorise a loop of fewer than 64 iterations (its vectoriser took ~40 ms for each short loop of a "
    "software transcendental, which gains ~1 us a call)")
  _patch(_compiler_cpu, "subprocess", _compile.StandbyClang, "clang is started ahead of each compile, waiting at its stdin "
         "with the same command line (~20 ms of a small kernel's ~33 ms is clang starting)")
  _patch(_linearizer, "sorted", _linearizer_sorted, "a large, deep kernel's nodes are put in tinygrad's linear order by "
         "comparing them pair by pair, each pair once, instead of their whole subgraphs at every comparison (the same order)")
  _patch(_codegen, "do_to_program", _do_to_program, "on a CPU a kernel that is a float matrix product is a BLAS call "
         "(sgemm/dgemm: ~50 GFLOP/s where tinygrad's code reaches ~9), its PROGRAM's binary describing the call; a small "
         "plain kernel (loops, loads, stores, reduces, arithmetic) is written in C from its AST (plain_c.py), without "
         "tinygrad's rewrite passes")
  _patch(UOp, "substitute", _substitute, "substitution walks the graph itself instead of through graph_rewrite (the same "
         "result, 3-5x faster)")
  _patch(_ops.recursive_property, "__get__", _recursive_get, "a recursive property of a node whose sources have it is computed "
         "for the node alone (tinygrad's gated toposort finds the same, ~10 us a node)")
  _patch(_ops, "shape_to_shape_arg", _shape_to_shape_arg, "a movement op's shape argument of ints is built once (a CONST per "
         "int and a STACK: a quarter of an eager slice)")
  for mod, name, matcher in _ieee_matchers():
    _patch(mod, name, matcher, "x * 0, x / x and (x * y) / y are not folded for floats (0, 1 and x at an inf or a nan, "
           "where IEEE and JAX give nan), nor x/(1+x) into 1-1/(1+x) (1 at inf)")
  _patch(UOp, "simplify", _simplify, "shape arguments that are ints skip the symbolic rewrite (it leaves them as they are)")
  _patch(Tensor, "full", classmethod(_full), "a fill's value graph is built once per arguments (tinygrad's takes ~260 us)")
  _patch(Tensor, "arange", classmethod(_arange), "the graph of an arange is built once per arguments (tinygrad's takes ~1 ms)")
  _patch(_ops_cpu.CPUDevice, "synchronize", _synchronize, "returns at once when the CPU's queues are drained (the signal words "
         "read through views made once: tinygrad makes them at every call, ~4 us)")
  _patch(_realize, "get_runtime", _get_runtime, "the program of a BLAS call is cpu_graph's gemm (a row of its tables)")
  _patch(_ops, "python_alu", _IEEE_ALU, "constant folding compares float constants as IEEE floats (tinygrad's "
         "ConstFloat has nan == nan: isnan of a constant folded to False)")
  _patch(DType, "__eq__", _dtype_eq, "a DType equals numpy's dtype of its layout (x.dtype == np.float32, as a JAX array's)")
  _patch(DType, "dtype", property(_dtype_np), "numpy's dtype of a DType (np.dtype(x.dtype), np.zeros(3, x.dtype))")
  _patch(DType, "__str__", _dtype_str, "print(x.dtype) shows numpy's name (float32), as JAX's")
  _install_tensor_methods({name: m for name, (m, _) in _TENSOR_METHODS.items()})
  weak = "weakly typed floats are computed and stored at JAX's width for a Python float (float64 with x64), not at " \
         "tinygrad's DEFAULT_FLOAT, which also types its new Tensors"
  _patch(_weak, "default_dtype", _weak_default_dtype, weak)
  for mod in (_weak, _rangeify, _reduce, _tensor, _ops): _patch(mod, "strong_dtype", weak_storage, weak + " (where tinygrad stores one)")
  for mod in (_reduce, _mixin_op): _patch(mod, "sum_acc_dtype", _weak_sum_acc_dtype, weak + " (a sum of them)")
  for owner in (_elementwise.ElementwiseMixin, Tensor):
    for name in _WEAK_WIDTH: _patch(owner, name, _at_weak_width(name, owner.__dict__[name]), weak + f" (tinygrad's {name} computed them at float32)")
  _patch(_codegen, "to_program_config", (*_codegen.to_program_config, WEAK_FLOAT, _plain_c.PLAIN_C), "the weak float width "
         "and whether plain kernels are written as C directly (plain_c.py) are part of a compiled kernel's cache key")
  context = (*_codegen.to_program_context, WEAK_FLOAT, _plain_c.PLAIN_C)
  for mod in (_codegen, _realize): _patch(mod, "to_program_context", context, "code generation workers generate at the "
                                          "weak float width of the caller, and plain C kernels as it does")

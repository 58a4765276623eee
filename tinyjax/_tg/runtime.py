"""Running what tinygrad scheduled, tinyjax's way: TinyJit support, the read checks' registry, the state a jit's
abstract trace puts back, host calls (loops, LAPACK) and their compiled steps, replaying a compiled linear."""
from __future__ import annotations
import contextlib, dataclasses, functools, hashlib, itertools, re, threading, weakref
from typing import Any, Callable, Literal, Sequence, cast
import numpy as np
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.engine.realize import capturing as _jit_capturing
from tinygrad.dtype import DType
from tinygrad.device import Buffer, MultiBuffer
from tinygrad.helpers import GlobalCounters
import tinygrad.helpers as _helpers
import tinygrad.engine.realize as _realize
import tinygrad.codegen as _codegen
from tinygrad.tensor import all_tensors as _all_tensors, _apply_map_to_tensors
from tinygrad.engine.jit import jit_lower as _jit_lower
from tinygrad.uop.ops import UOp, Ops, GroupOp, buffers, CallInfo as _CallInfo
from tinygrad.runtime.ops_cpu import CPUProgram as _CPUProgram
from tinyjax._tg.buffers import _copyout, _one, _prod, host_buffer, allocated_buffer, np_dtype, write_array, stored_view
from tinyjax._tg import cpu_graph
from tinyjax._tg.compile import prepare as prepare_compile
from tinyjax._tg.gemm import GemmProgram
from tinyjax._tg.fold import folded_scalar, folded_value
from tinyjax._tg.ir import stored_once, is_host_call
from tinyjax._tg.buffers import unfilled

def jit_capturing() -> bool: return bool(_jit_capturing)

def kernel_search(beam: int):
  """tinygrad's BEAM search over each kernel's optimizations while compiling (beam > 0; 0: tinygrad's own BEAM
  setting, from the environment). Results are kept in tinygrad's on-disk cache."""
  return _helpers.Context(BEAM=beam) if beam > 0 else contextlib.nullcontext()

def codegen_settings() -> tuple:
  """The settings tinygrad's programs depend on (its program key's: NOOPT, ..., tinyjax's plain C kernels): a capture
  made under others is not another's."""
  return tuple(x.value for x in _codegen.to_program_config)

def capturing_tinyjit(fn: Callable) -> Any:
  """A TinyJit that captures on its first call. TinyJit runs a first call plainly and captures on the second, which
  scheduled every function twice; the inputs tinyjax passes are realized buffers, so there is nothing to warm up."""
  tj = TinyJit(fn)
  tj.cnt = 1
  return tj

def captured_nbytes(jit) -> int:
  """The bytes of the buffers a captured TinyJit holds (its intermediates and the closed-over data it reads)."""
  return sum(x.nbytes for u in jit.captured.linear.toposort() if u.op is Ops.BUFFER and (b := buffers.get(u)) is not None
             for x in (b.bufs if isinstance(b, MultiBuffer) else (b,)))

def closed_buffers(root: UOp, inputs: Sequence[UOp]) -> list[UOp]:
  """The data root reads that is not among `inputs`: allocated single-device buffers (a function's closed-over
  Tensors), in the order `canonical_key` meets them."""
  ins = {u.base for u in inputs}
  return [u for u in root.toposort() if u.op is Ops.BUFFER and u not in ins and isinstance(u.device, str) and u in buffers]

def rebound_capture(jit, subs: dict[UOp, UOp]) -> Any:
  """A TinyJit replaying jit's compiled kernels with the buffers of `subs` read instead (another function's closed-over
  data of the same types): the same programs and intermediates, no scheduling or compiling."""
  c = jit.captured
  return type(jit)(None, type(c)(c.ret, c._linear.substitute(subs, walk=True), c.expected_names, c.expected_input_info))

def captured_replay(jit) -> tuple[Replay, set[UOp]] | None:
  """A captured TinyJit's kernels as a Replay, with the buffers they write (None: not captured yet). The Tensors the
  capture returned are dropped: tinyjax returns outputs of its own, and those held the first call's output buffers (a
  slot of the jit's pool never free again, so that the second call allocated)."""
  if jit.captured is None: return None
  jit.captured.ret = None
  return Replay(jit.captured.linear), _written(jit.captured.linear)

def _written(linear: UOp) -> set[UOp]:
  """The buffers a linear's calls write, as TinyJit's `_written_uops`, which walks every kernel's AST and asks every
  written argument for its contiguous view (~0.3 ms each: 50 ms of kursiv's warm 0.23 s went to two captures)."""
  out: set[UOp] = set()
  for call in linear.src:
    if call.op is not Ops.CALL: continue
    args = _realize.get_call_arg_uops(call)
    outs, ins = _realize.get_call_outs_ins(call)
    for k in set(outs) - set(ins):
      if (b := _viewed(args[k])).op is Ops.BUFFER: out.add(b)
  return out

def _viewed(u: UOp) -> UOp:
  """The buffer u is a contiguous view of (u itself, or u where it is none). A slice of the memory plan's arena,
  BITCAST(SHRINK(1-d BUFFER)), is read off directly."""
  if u.op in (Ops.BUFFER, Ops.PARAM): return u
  if (x := u.src[0] if u.op is Ops.BITCAST else u).op is Ops.SHRINK and x.src[0].op is Ops.BUFFER and len(x.src[0].shape) == 1:
    return x.src[0]
  return u if (cv := u.contiguous_view()) is None else cv[0]


def replay_buffers(tensors: Sequence[Tensor], outs: list[UOp], written: set[UOp], plain: bool = False) -> list[UOp] | None:
  """The input buffers TinyJit would pass for these Tensors (realized first) and the output buffers, or None where
  only TinyJit's own call will do: a multi-device input, or one the captured kernels write (TinyJit copies it first).
  `plain`: the inputs are known to be realized whole buffers on one device (jit's `plain_buffer`s)."""
  if plain:
    if any(o.op is not Ops.BUFFER for o in outs): return None   # a sharded output
    bufs = [t.uop.base for t in tensors] + outs
  else:
    def ready(u: UOp) -> bool: return u.op is Ops.BUFFER and (b := buffers.get(u)) is not None and b.is_allocated()
    if lazy := [t for t in tensors if not ready(t.uop.base)]: Tensor.realize(*lazy)
    bufs = [t.uop.base for t in tensors] + [o.base for o in outs]
    if any(b.op is not Ops.BUFFER or not isinstance(b.device, str) for b in bufs): return None
  return None if written and any(b in written for b in bufs) else bufs

def jit_captured(jit) -> bool:
  """The TinyJit has captured its kernels (its first calls run eagerly, then it captures)."""
  return jit.captured is not None

def jit_kernel_names(jit) -> list[str]:
  """Names of the kernels a captured TinyJit replays, in order."""
  names = []
  for u in jit.captured.linear.toposort():
    if u.op is Ops.PROGRAM: names.append(re.sub(r"\x1b\[[0-9;]*m", "", u.arg.name))
  return names

# ---- reading traced values ------------------------------------------------------------------------------------------
# tinyjax.core keeps the trace state; here the Tensor methods that read data are wrapped to ask it first.
# tinygrad is not thread-safe (its Context flags and compile cache connection are process-global): realizing from two
# threads at once fails inside it ("usage of device CPU disallowed", sqlite objects used across threads). tinyjax
# serialises what it does with tinygrad, and the reads it wraps, on one re-entrant lock.
TINYGRAD_LOCK = threading.RLock()


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


def tensor_method(name: str) -> Callable:
  """Tensor's own method `name`, as tinygrad defines it (before tinyjax wrapped it)."""
  return _ORIGINAL.get(name) or getattr(Tensor, name)

_ORIGINAL: dict[str, Callable] = {}

# ---- the read checks: tinyjax.core's check of a read of a traced value (patches.py wraps Tensor's reads to ask it) -----

_read_checks: list[Callable[[str, tuple], list]] = []

def add_read_check(check: Callable[[str, tuple], list]) -> None:
  """check(method, tensors) runs before every read of Tensor data: it raises for a traced value, or returns the
  tensors a `realize` leaves alone (values that have no data yet and need none: jit's abstract trace)."""
  _read_checks.append(check)

_stand_ins: list[Callable[[str, Tensor], Tensor | None]] = []

def add_concrete_stand_in(stand_in: Callable[[str, Tensor], Tensor | None]) -> None:
  """stand_in(method, t) runs before a read of t's data: a Tensor to read instead (t computed from concrete inputs
  that placeholders stand for), or None."""
  _stand_ins.append(stand_in)

def concrete_stand_in(method: str, t: Tensor) -> Tensor | None:
  for stand_in in _stand_ins:
    if (c := stand_in(method, t)) is not None: return c
  return None

_reading: list[str] = []   # the data reads (numpy, item, ...) running: the realizes they make are part of them

@contextlib.contextmanager
def reading(method: str):
  _reading.append(method)
  try: yield
  finally: _reading.pop()

def in_read() -> bool:
  """A realize made by a read of data (numpy(), item(), ...), not asked for by itself."""
  return bool(_reading)

def check_read(method: str, tensors: tuple) -> list:
  """Raise if one of `tensors` is traced; else the tensors a realize leaves alone."""
  skip: list = []
  for check in _read_checks: skip += check(method, tensors)
  return skip

# ---- host loops: a compiled step replayed from Python (tinyjax.lax control flow) -------------------------------------
# A loop is one CALL in tinygrad's schedule, of a CUSTOM_FUNCTION whose executor (a Python callable) runs when tinygrad
# executes the schedule: eagerly, or from a TinyJit's replay, which records the CALL like any kernel. The executor replays
# the body's kernels, compiled once as TinyJit compiles a function (capture, PARAMs for the buffers, memory plan, graph),
# on the loop's buffers. tinygrad checks a CUSTOM_FUNCTION's arg is a str and rebuilds CALLs without their aux, so the
# executor is found from the CUSTOM_FUNCTION node itself, weakly: it lives as long as some graph or captured schedule
# still holds the node.

_host_executors: weakref.WeakKeyDictionary[UOp, Callable[[list[UOp]], None]] = weakref.WeakKeyDictionary()
_host_names = itertools.count()
_row_calls: weakref.WeakSet[UOp] = weakref.WeakSet()   # host calls whose executor can be a command row (`makes_rows`)


def executor_node(run: Callable[[list[UOp]], None], rows: bool = False) -> UOp:
  """A new CUSTOM_FUNCTION node that tinygrad executes by calling run(buffers); `rows`: run can be a command row."""
  fn = UOp(Ops.CUSTOM_FUNCTION, arg=f"tinyjax_host_{next(_host_names)}")
  _host_executors[fn] = run
  if rows: _row_calls.add(fn)
  return fn

def host_call(run: Callable[[list[UOp]], None], outs: list[tuple[tuple[int, ...], DType]], ins: list[UOp], device) -> list[UOp]:
  """The outputs of one CALL that tinygrad executes by calling run(buffers): buffers are the UOps of the outputs' new
  buffers, then of the inputs' (realized contiguous first). Shapes must not be empty."""
  if not isinstance(device, str): raise NotImplementedError(f"tinyjax.lax control flow on multi-device (sharded) arrays, on {device}")
  fn = executor_node(run, getattr(run, "makes_rows", False))
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

def reusable(outs: list[UOp]) -> bool:
  """These graphs may be used again on other inputs (kept by a cache, substituted anew): they hold no host call and no
  write of a value computed from an input, calls' bodies included. Those write into buffers the build made, which two
  uses would share. (A fill writes a constant: tinygrad's zeros, a device-less cotangent put on a device.)"""
  return not any(u.op is Ops.CUSTOM_FUNCTION or (u.op is Ops.STORE and not _constant_value(u.src[1]))
                 for u in UOp.sink(*outs).toposort())

# (held weakly: an lru_cache of the graphs kept up to 1024 of them alive, and an eager training loop ran 1.5x slower)
_reusable_bodies: weakref.WeakKeyDictionary[UOp, bool] = weakref.WeakKeyDictionary()

def _reusable_body(body: UOp) -> bool:
  if (r := _reusable_bodies.get(body)) is None: r = _reusable_bodies[body] = reusable([body])
  return r

def _constant_value(u: UOp) -> bool: return not any(x.op in (Ops.BUFFER, Ops.PARAM, Ops.AFTER) for x in u.toposort())

@dataclasses.dataclass(frozen=True)
class Scratch:
  """What `with_fresh_scratch` gives anew in graphs kept from a build: the buffers the build made, its host calls'
  nodes, and the nodes computed from either (calls' bodies included), in topological order."""
  buffers: tuple[UOp, ...]
  hosts: tuple[UOp, ...]
  above: tuple[UOp, ...]

def scratch_of(outs: list[UOp]) -> Scratch | None:
  """The `Scratch` of these graphs: the buffers they write that their build made (a host call's outputs, a write's
  target: no data yet), taken now (their first use may fill them). None if they write data (a realized buffer) or a
  host call among them runs effects (its executor remembers the runs it made)."""
  bufs: list[UOp] = []
  hosts: list[UOp] = []
  above: list[UOp] = []
  dirty: set[UOp] = set()
  for u in UOp.sink(*outs).toposort(enter_calls=True):
    if u.op is Ops.STORE and u.src[0].base not in dirty: return None
    if u.op is Ops.FUNCTION and getattr(getattr(u.arg, "aux", None), "effectful", False): return None
    if u.op is Ops.BUFFER and ((b := buffers.get(u)) is None or not b.is_allocated()): bufs.append(u)
    elif u.op is Ops.CUSTOM_FUNCTION:
      if u not in _host_executors: return None
      hosts.append(u)
    elif u.op is not Ops.SINK and not dirty.isdisjoint(u.src): above.append(u)
    else: continue
    dirty.add(u)
  return Scratch(tuple(bufs), tuple(hosts), tuple(above))

def with_fresh_scratch(outs: list[UOp], scratch: Scratch) -> list[UOp]:
  """Graphs kept from a build with each of its host calls a new node of the same executor and each buffer it made a
  new one (`scratch`, taken at the build): a use of a structural custom function's build computes into buffers of its
  own, as a new build would, shared within its graphs as that build shared them."""
  new: dict[UOp, UOp] = {b: _fresh(b) for b in scratch.buffers}
  for u in scratch.hosts: new[u] = executor_node(_host_executors[u], u in _row_calls)
  for u in scratch.above: new[u] = u.replace(src=tuple(new.get(x, x) for x in u.src))
  return [new.get(o, o) for o in outs]


_BUFFER_ARGS = frozenset({Ops.BUFFER, Ops.AFTER, Ops.MSELECT, Ops.MSTACK})


def canonical_key(root: UOp, inputs: Sequence[UOp] = ()) -> bytes:
  """root's key (tinygrad's: a hash of op, dtype, arg and the sources' keys) without what differs between two traces of
  the same computation, so compiled code can be found again by it: a FUNCTION's CallInfo (its grad_fxn's id; what a
  FUNCTION computes is its body, in its sources, or for a host call its rule's `content_key()`), a host call's name
  (fixed by its FUNCTION's rule) and the slots of buffers not yet allocated (scratch: the `inputs`' buffers, allocated or
  not, numbered by position, the others by first use)."""
  keys: dict[UOp, bytes] = {}
  scratch: dict[UOp, int] = {u.base: i for i, u in enumerate(inputs)}
  for u in root.toposort():
    arg = u.arg
    if u.op is Ops.FUNCTION and isinstance(arg, _CallInfo):
      content = getattr(arg.aux, "content_key", None)
      arg = (arg.name, content() if content is not None else None)
    elif u.op is Ops.CUSTOM_FUNCTION and u in _host_executors: arg = "host"
    elif u.op is Ops.BUFFER and (u in scratch or u not in buffers): arg = ("scratch", scratch.setdefault(u, len(scratch)), arg.dtype, arg.device)
    keys[u] = hashlib.sha256(str((u.op, u.dtype, arg)).encode() + b"".join(keys[x] for x in u.src)).digest()
  return keys[root]

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
    def store(k: int, v: Tensor) -> Tensor:
      o, ax = tout[k], outs[k][2]
      return (o if ax is None else _at(o, i, ax)).assign((v if ax is None else v.unsqueeze(ax)).cast(o.dtype))
    stores = stored_once(list(vals), store)
    cap = _Capture()
    _jit_capturing.append(cap)
    try: Tensor.realize(*stores)
    finally: _jit_capturing.remove(cap)
    self.bufs = [t.uop.base for t in tin + tout]
    big = UOp(Ops.LINEAR, src=tuple(c for lin in cap.linears for c in lin.src))
    self.linear = _realize.link_linear(_jit_lower(big, set(self.bufs), self.bufs))

    self.replay = Replay(self.linear)
    self.device, self.loops = device, dict[tuple, Any]()   # (run_steps' loops over this body, by its buffers' pattern)

  def run(self, bufs: list[UOp], index: int = 0) -> None:
    """One step on these buffers (the types the step was compiled for) at this index."""
    self.replay.run(bufs, {self.VAR: index})

  def batch(self) -> _Batch | None:
    """The step's kernels as one run of CPU kernels (cpu_graph), if that is all it is."""
    plan = self.replay.plan
    return plan[0] if len(plan) == 1 and isinstance(plan[0], _Batch) else None

StepBuffers = tuple[list[UOp], list[UOp], list[UOp]]   # a step's buffers at step 0, at later even steps, at odd steps

def run_steps(body: Any, bufs: StepBuffers, steps: int, index: tuple[int, int] = (0, 1),
              cond: tuple[Any, StepBuffers, UOp] | None = None, copies: Sequence[tuple[UOp, UOp, UOp, UOp]] = ()) -> int | None:
  """Run the step `body` `steps` times in compiled code (cpu_graph), without returning to Python between steps: step j
  on the buffers `bufs` give for it (a carry swapped between two sets by pointer) at index index[0] + index[1] * j. With
  `cond` (a step, its buffers, its boolean output): before each step, stop if it computes False. After the loop each of
  `copies` (destination, sources after 0 / an even / an odd number of steps) is copied. The steps run, or None where
  they cannot run in compiled code (not a CPU device, a step holding a host call that makes no row): the caller loops.
  While a step holding this loop is made into rows (`makes_rows`), the loop becomes a row of it (0 is returned)."""
  where = [u for s in bufs for u in s] + ([] if cond is None else [u for s in cond[1] for u in s] + [cond[2]]) + [u for c in copies for u in c]
  if _describing:
    loop = _loop(body, bufs, steps, index, cond, copies, _marker_value, keep=where)
    if loop is None: raise NotARow
    _describing[-1][1].append(loop)
    return 0
  if not isinstance(body, Step) or cpu_graph.executor(body.device) is None: return None
  ids: dict[UOp, int] = {}
  key = (None if cond is None else cond[0], steps, index, tuple(ids.setdefault(u, len(ids)) for u in where))
  if key not in body.loops:
    if len(body.loops) >= 16: body.loops.clear()
    body.loops[key] = _loop(body, bufs, steps, index, cond, copies, lambda u: ("slot", ids[u]))
  if (loop := body.loops[key]) is None: return None
  addrs = _addresses(list(ids), body.device)
  for a, w, s in loop.slot_words: a[w] = addrs[s]
  done, kernels = cpu_graph.run_loop(body.device, loop)
  GlobalCounters.kernel_count += kernels
  return done

class NotARow(Exception):
  """A host executor asked for its row (`makes_rows`) cannot make one: the step holding it runs from Python."""

# the steps being made into rows, innermost last: markers standing for the step's buffers (by slot), the rows made
_describing: list[tuple[dict[UOp, int], list[cpu_graph.Nested]]] = []

def makes_rows(run: Callable) -> Callable:
  """Marks a host executor that, called while a step holding it is made into command rows (`making_rows()`), adds its
  row (a loop by `run_steps`, a LAPACK call by `library_row`) instead of running: a loop holding it then runs in
  compiled code. Its buffers then stand for the step's (markers: never read nor written)."""
  run.makes_rows = True   # type: ignore[attr-defined]
  return run

def making_rows() -> bool: return bool(_describing)

def library_row(routine: str, args: tuple, bufs: list[UOp]) -> None:
  """(making rows) a host library's routine as a row: cpu_graph's row `routine` (LuSolve, Cholesky, TriangularSolve,
  Lu, Factor: LAPACK and BLAS; Fft: numpy's pocketfft) with these arguments, then these buffers (the outputs first).
  A routine whose checks fail here (cpu_graph.pocketfft_loop's) makes no row."""
  try: row = getattr(cpu_graph, routine)(bufs[0].device, *args, *[_marker_value(b) for b in bufs])
  except RuntimeError as e: raise NotARow from e
  _describing[-1][1].append(row)

def row_or_run(run: Callable, routine: str, args: tuple) -> Callable:
  """A host executor `run` whose work is also a library routine's row (`library_row(routine, args, ...)`): in a replay
  or a loop's step made into command rows (on the CPU) the same routine is called from compiled code."""
  def rows_or_run(bufs: list[UOp]) -> None:
    if making_rows(): library_row(routine, args, bufs)
    else: run(bufs)
  return makes_rows(rows_or_run)

def switch_row(index: UOp, branches: list[tuple[Any, list[UOp]]]) -> None:
  """(making rows) a switch as a row: of the steps `branches` (each with its buffers), the one `index` (a signed integer)
  names runs."""
  if (tables := _tables([s for s, _ in branches])) is None: raise NotARow
  words = []
  for t, (_, bufs) in zip(tables, branches, strict=True):
    for a, w, s in t.slot_words:
      if isinstance(v := _marker_value(bufs[s]), tuple): words.append((a, w, v[1]))
      else: a[w] = v
    for w, _ in t.var_words: t.table[w] = 0   # (a step's index: 0, as Step.run)
  row = cpu_graph.Switch(index.device, _marker_value(index), index.dtype.itemsize, tables)
  row.slot_words += words
  row.keep = ([s for s, _ in branches], [b for _, bs in branches for b in bs])
  _describing[-1][1].append(row)

def _marker_value(u: UOp) -> Any:
  """The word for buffer u in a step being made into rows: the slot a marker stands for, a fixed buffer's address."""
  markers = _describing[-1][0]
  if (s := markers.get(u)) is not None: return ("slot", s)
  # a view of a marker is resolved per call (not a row); a fixed buffer or a view of one (a BITCAST of the memory plan) is
  if not isinstance(u.device, str) or any(x in markers for x in u.toposort()): raise NotARow
  return _addresses([u], u.device)[0]

def _step_rows(step: Any) -> tuple[list, int] | None:
  """A step's plan as command rows (its launches, and a row per host call, which makes its own) and its kernel count,
  or None: not all of it can be a row."""
  if not isinstance(step, Step) or cpu_graph.executor(step.device) is None: return None
  return _plan_rows(step.replay.plan, step.bufs)

def _plan_rows(plan: list, bufs: list[UOp]) -> tuple[list, int] | None:
  """A replay's plan as command rows and its kernel count, or None: not all of it can be a row. Its host calls make
  their rows on markers standing for `bufs` (what the slots hold)."""
  launches: list = []
  kernels, markers = 0, None
  for item in plan:
    if isinstance(item, _Batch):
      launches += item.table().launches
      kernels += len(item.kernels)
    elif isinstance(item, tuple) and len(item) == 1 and item[0].src[0] in _row_calls:
      if markers is None: markers = [UOp.new_buffer(b.device, b.max_numel(), b.dtype) for b in bufs]
      rows: list[cpu_graph.Nested] = []
      _describing.append(({m: i for i, m in enumerate(markers)}, rows))
      try: _host_executors[item[0].src[0]](_realize.resolve_params(item[0], tuple(markers)))
      except NotARow: return None
      finally: _describing.pop()
      if len(rows) != 1: return None
      launches.append(rows[0])
    else: return None
  return (launches, kernels) if launches else None

def _tables(steps: list[Any]) -> list[cpu_graph.Commands] | None:
  """The steps' rows as command tables of one width (a loop's body and condition, a switch's branches: the executor
  walks them alike), or None: a step cannot be made into rows."""
  rows = [_step_rows(s) for s in steps]
  if any(r is None for r in rows): return None
  width = max(len(l.row) if isinstance(l, cpu_graph.Nested) else 1 + len(l[1]) for r in rows if r for l in r[0])
  return [cpu_graph.Commands(r[0], r[1], width) for r in rows if r is not None]

def _loop(body: Any, bufs: StepBuffers, steps: int, index: tuple[int, int], cond: tuple[Any, StepBuffers, UOp] | None,
          copies: Sequence[tuple[UOp, UOp, UOp, UOp]], value: Callable[[UOp], Any], keep: list[UOp] | None = None) -> cpu_graph.Loop | None:
  """run_steps' loop as a cpu_graph.Loop, each buffer's word `value(buffer)` (an address, or a slot), or None."""
  parts = [(body, bufs)] + ([] if cond is None else [(cond[0], cond[1])])
  if (tables := _tables([s for s, _ in parts])) is None: return None
  patches: list = []
  words: list = []
  for t, (_, (first, even, odd)) in zip(tables, parts, strict=True):
    for a, w, s in t.slot_words:
      v0, ve, vo = value(first[s]), value(even[s]), value(odd[s])
      if v0 != ve or v0 != vo: patches.append(((a, w), 1, ve, vo, v0))
      elif isinstance(v0, tuple): words.append((a, w, v0[1]))
      else: a[w] = v0
    for w, v in t.var_words:
      assert v == Step.VAR, f"a loop step's kernel takes the variable {v}"
      patches.append(((t.table, w), 0, *index, 0))
  nbytes = [d.max_numel() * d.dtype.itemsize for d, *_ in copies]
  loop = cpu_graph.Loop(body.device, tables[0], steps, patches, tables[1] if cond is not None else None, 0 if cond is None else value(cond[2]),
                        [(*(value(u) for u in c), n) for c, n in zip(copies, nbytes, strict=True)], words)
  loop.keep = (body, cond, keep)   # the steps (their kernels, fixed buffers) and, nested, the scratch buffers its words hold
  return loop

class Replay:
  """A compiled linear (a Step's, a captured TinyJit's) replayed on new input buffers. Kernels are launched straight
  from a plan made once: run_linear's and TinyJit's per-call work (resolving PARAMs, rewriting input views, stats,
  multi-device lanes) is most of the time of a small program. Host calls run their executor; any other call (a copy, a
  graph) goes through run_linear."""
  def __init__(self, linear: UOp):
    self.plan: list = []
    for item in (self._kernel(c) for c in linear.src):   # runs of kernels on a CPU device: one call into cpu_graph
      if isinstance(item, tuple) and len(item) == 5 and _batchable(item):
        if self.plan and isinstance(self.plan[-1], _Batch) and self.plan[-1].device == item[3]: self.plan[-1].kernels.append(item)
        else: self.plan.append(_Batch(item[3], [item]))
      else: self.plan.append(item)
    # (made on the first run) the plan as one table when it has host calls that make rows (a LAPACK solve, a loop, a
    # switch) between its runs of kernels: the Python between them was most of a small call (jitted solve, n = 8)
    self.whole: tuple[str, cpu_graph.Commands] | None | Literal[False] = \
      None if any(isinstance(i, tuple) and len(i) == 1 and i[0].src[0] in _row_calls for i in self.plan) else False

  def _whole(self, bufs: list[UOp]) -> tuple[str, cpu_graph.Commands] | Literal[False]:
    devices = {b.device for b in bufs} | {i.device for i in self.plan if isinstance(i, _Batch)}
    if len(devices) != 1 or cpu_graph.executor(device := devices.pop()) is None: return False
    if (rows := _plan_rows(self.plan, bufs)) is None: return False
    return device, cpu_graph.Commands(*rows)

  @staticmethod
  def _kernel(call: UOp) -> tuple | UOp:
    """(runtime, its arguments: an input's slot or a fixed buffer, program info, device, fixed launch sizes), (a host
    call,) or the call itself (run by run_linear)."""
    if call.src[0] in _host_executors: return (call,)   # a host call (a loop, LAPACK): its executor, called directly
    if call.src[0].op is not Ops.PROGRAM or not isinstance(device := call.src[1].device, str): return call
    prg, args = call.src[0], _realize.get_call_arg_uops(call)
    if any(a.op not in (Ops.PARAM, Ops.BUFFER, Ops.BITCAST, Ops.SHRINK) for a in args): return call
    # a view of an input (a slice at an offset: tinygrad passes it as a buffer view) is resolved per call by run_linear
    if any(a.op is not Ops.PARAM and any(x.op is Ops.PARAM for x in a.toposort()) for a in args): return call
    glob = [args[g] for g in prg.arg.globals]
    info = prg.arg   # launch sizes and values without variables are fixed: computed once
    dims = None if info.vars else (*info.launch_dims({}), info.vals({}))
    rt = _realize.get_runtime(device, prg)
    if "core_id" in getattr(rt, "runtimevars", ()) and rt not in _work: _work[rt] = _kernel_work(prg.src[0])
    return (rt, [a.arg.slot if a.op is Ops.PARAM else _one(a) for a in glob], info, device, dims)

  def prepare(self, bufs: list[UOp]) -> None:
    """Makes the plan's command tables now, on the capture's buffers, so that the first replay only fills them in
    (made there, they were ~0.1-0.2 ms of a solver's first iteration per function)."""
    if self.whole is None: self.whole = self._whole(bufs)
    for device, commands in [self.whole] if self.whole else [(i.device, i.table()) for i in self.plan if isinstance(i, _Batch)]:
      cpu_graph.prepare(device, commands)

  def run(self, bufs: list[UOp], var_vals: dict[str, int]) -> None:
    if self.whole is None: self.whole = self._whole(bufs)
    if self.whole:   # the whole plan, host calls included, in one table: one call into compiled code
      device, commands = self.whole
      commands.fill(_addresses(bufs, device), var_vals)
      GlobalCounters.kernel_count += cpu_graph.run(device, commands)
      return
    real: dict[int, Any] = {}
    n = 0
    for item in self.plan:
      if isinstance(item, _Batch):
        n += item.run(bufs, var_vals)
        continue
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

# the work of a kernel tinygrad split over the cores, by its program: its rows run at once only when it computes much
# per element loaded (cpu_graph.PARALLEL_WORK); split memory-bound kernels, on data the kernel before left in this
# core's caches, ran slower on two (bench.models' per-example CNN: 376 -> 700 us)
_work: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_TRANSCENDENTAL = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.POW})

def _kernel_work(ast: UOp) -> int:
  """Its output elements (the ranges its stores index) times its ALU operations (a transcendental counts as 20): how
  much it computes, reduces counted once per output; 0 when a size is symbolic."""
  try:
    topo = ast.toposort()
    outputs = max(_prod([int(r.vmax) + 1 for r in u.src[0].toposort() if r.op is Ops.RANGE])
                  for u in topo if u.op is Ops.STORE and u.src[0].src[0].op is Ops.PARAM)   # (stores into the kernel's buffers)
    return outputs * sum(20 if u.op in _TRANSCENDENTAL else 1 for u in topo if u.op in GroupOp.ALU)
  except Exception: return 0

def _batchable(kernel: tuple) -> bool:
  rt, _, info, device, _ = kernel
  return cpu_graph.executor(device) is not None and (isinstance(rt, _CPUProgram) and not rt.lvp or isinstance(rt, GemmProgram) and bool(rt.addr)) \
    and all(isinstance(s, int) for s in info.global_size)

class _Batch:
  """A run of kernels of a Replay's plan on one CPU device, launched by one call into cpu_graph's executor. Its command
  table is made on the first run (the fixed buffers are allocated by then)."""
  def __init__(self, device: str, kernels: list[tuple]):
    self.device, self.kernels, self.commands = device, kernels, cast(cpu_graph.Commands | None, None)

  def table(self) -> cpu_graph.Commands:
    if self.commands is None:
      launches = []
      for rt, args, info, device, _ in self.kernels:
        words: list = [("slot", a) if isinstance(a, int) else a.get_buf(device).va_addr for a in args]
        words += [None if k.expr in info.runtimevars else ("var", k.expr) for k in info.vars]
        cores = info.global_size[0] if "core_id" in rt.runtimevars else 1
        if (group := cpu_graph.parallel_group(cores, _work.get(rt, 0))) is not None: launches.append(group)   # the rows at once
        for tid in range(cores):   # one row per core, as CPUProgram launches them (one after the other)
          row = list(words)
          if "core_id" in rt.runtimevars: row[rt.runtimevars["core_id"]] = tid
          launches.append((rt.addr, [*getattr(rt, "leading", ()), *row]))   # (a BLAS call's spec first)
      self.commands = cpu_graph.Commands(launches, len(self.kernels))
    return self.commands

  def run(self, bufs: list[UOp], var_vals: dict[str, int]) -> int:
    c = self.table()
    c.fill(_addresses(bufs, self.device), var_vals)
    return cpu_graph.run(self.device, c)

def _addresses(bufs: list[UOp], device: str) -> list[int]:
  # `buffers` first: UOp.buffer, which also makes views' Buffers, costs ~2 us per call
  return [cast(Buffer, buffers.get(b) or _one(b)).get_buf(device).va_addr for b in bufs]

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
  d, s = _one(dst).ensure_allocated(), _one(src).ensure_allocated()
  if d.device == s.device and hasattr(d.allocator, "_as_buffer"):   # (the CPU) memory to memory, after one synchronize:
    d.allocator.dev.synchronize()                                   # Buffer.copy_from runs a COPY program (~0.15 ms)
    d.allocator._as_buffer(d._buf)[:] = s.allocator._as_buffer(s._buf)  # type: ignore[attr-defined]
  else: d.copy_from(s)

def read_scalar(u: UOp):
  """The first element of a buffer, as a Python value (a host read: the loop's condition, the branch index)."""
  return _copyout(_one(u).ensure_allocated())[0].item()


# ---- eager values: lazy graphs computed by compiled programs found again by their structure ---------------------------
# tinygrad's realize rewrites and schedules the whole graph on every call (~2.5 ms for one small kernel), and a Python
# float in a graph is baked into the kernel, so an eager loop whose step size or bias correction changes every
# iteration would compile new kernels every iteration. Here a graph over realized buffers is keyed by its structure
# (its buffers as inputs by position, its constants by value), compiled once as a `Step` and replayed on new buffers; a
# float constant whose value differs between two calls of the same structure becomes an input from then on (a slot of
# one float64 buffer filled per call): one compile more, then every iteration replays.

# nodes whose graphs go through tinygrad's own realize: host calls, writes, copies between devices, multi-device
# values, markers, PARAMs outside a call's body (placeholders, symbolic values). tinygrad @functions (JAX primitives
# among them) are keyed by their body's node and name; the walk does not enter bodies.
_EAGER_UNSUPPORTED = frozenset({Ops.CUSTOM_FUNCTION, Ops.CALL, Ops.AFTER, Ops.STORE, Ops.COPY, Ops.CUSTOM, Ops.CUSTOMI, Ops.SPECIAL,
                                Ops.MSELECT, Ops.MSTACK, Ops.UNSHARD, Ops.ALLREDUCE, Ops.PARAM})

class _EagerProgram:
  """The compiled program of one graph structure, over its input buffers (and the packed constants `lifted`, by
  position among the graph's float constants, if any), writing one new buffer per output."""
  def __init__(self, sink: UOp, ins: list[UOp], consts: list[UOp], lifted: tuple[int, ...], device):
    if isinstance(device, str) and device.startswith("CPU"): prepare_compile()   # (clang starting while it is scheduled and generated)
    self.lifted, self.values = lifted, [c.arg for c in consts]
    self.out_types = [(tuple(int(s) for s in o.shape), o.dtype) for o in sink.src]
    types: list[BufferType] = [((int(b.shape[0]),), b.dtype, None) for b in ins]
    if lifted: types.append(((len(lifted),), dtypes.float64, None))
    def fn(ts: list[Tensor]) -> list[Tensor]:
      subs = {b: t.uop for b, t in zip(ins, ts, strict=False)}
      if lifted:
        users = _user_dtypes(sink)
        for j, i in enumerate(lifted):   # a weak constant takes the dtype of the nodes using it (one: `_liftable`)
          subs[consts[i]] = ts[-1][j].cast(next(iter(users[consts[i]]))).uop
      return [Tensor(u) for u in sink.substitute(subs).src]
    self.step = Step(fn, types, [(s, d, None) for s, d in self.out_types], device)

def _user_dtypes(sink: UOp) -> dict[UOp, set]:
  users: dict[UOp, set] = {}
  for u in sink.toposort(enter_calls=False):
    for s in u.src: users.setdefault(s, set()).add(u.dtype)
  return users

def _liftable(c: UOp, users: dict[UOp, set]) -> bool:
  """A constant that can become an input: every node using it computes in one float dtype, the dtype its value is cast
  to (a weak one resolves as the constant would); one used in two dtypes stays baked in."""
  return len(ds := users.get(c, set())) == 1 and dtypes.is_float(next(iter(ds)))

_eager_programs: dict[tuple, _EagerProgram] = {}
_MAX_EAGER_PROGRAMS = 1024   # the oldest goes first (a long program of ever new shapes kept every one)
eager_compiles = 0           # programs compiled by realize_lazy (read by tests)

@functools.lru_cache(maxsize=512)
def _body_key(body: UOp) -> tuple:
  """What a call's body computes, its nested calls by their bodies and names: a custom_jvp function defined again (the
  same code run again) makes new CallInfos (their rules' ids), not a new computation. (Not `canonical_key`: that keys
  a host call's CUSTOM_FUNCTION as "host" and leaves what it runs to its FUNCTION's content key, which this name-only
  key of calls would drop: two scans of different bodies would share a program.)"""
  index: dict[UOp, int] = {}
  parts: list[tuple] = []
  for u in body.toposort(enter_calls=False):
    arg = _call_key(u) if u.op is Ops.FUNCTION and isinstance(u.arg, _CallInfo) else u.arg
    index[u] = len(parts)
    parts.append((u.op, u.dtype, arg, tuple(index[s] for s in u.src if s in index)))
  return tuple(parts)

def _call_key(u: UOp) -> tuple:
  """What a call computes, whatever the rules of its derivatives: its body and name; a host call (its rule `opaque`)
  by its rule's `content_key()` and its outputs' types, as the step cache keys it: its body is the call of an executor
  made anew at each build, with new output buffers, so two builds of the same call are one program. Raises TypeError
  where the rule cannot say what it computes, or runs effects (a replay of its first build's executor would not run
  them again): such a graph is computed by tinygrad."""
  if not is_host_call(u): return (_body_key(u.src[0]), u.arg.name)
  if getattr(rule := u.arg.aux, "effectful", False): raise TypeError(f"tinyjax: the effects of {u.arg.name} run once per build")
  return ("host", u.arg.name, rule.content_key(), tuple((o.shape, o.dtype) for o in u.src[0].src))

def _host_operands(calls: list[UOp]) -> set[UOp]:
  """The nodes these host calls' arguments are computed from, up to buffers: a constant among them is filled by the
  host call's executor when first run (lax.host_call), so it is part of what the call computes, kept by value."""
  return set(UOp.sink(*[a for c in calls for a in c.src[1:]]).toposort(gate=lambda x: x.op is not Ops.BUFFER, enter_calls=False))

def _structure(sink: UOp, reject: Callable[[UOp], bool], values_only: bool,
               by_value: set[UOp] | None = None) -> tuple[tuple, list[UOp], list[UOp], list[UOp]] | None:
  """(key, leaves, consts, host calls): what the graphs under `sink` compute whatever their buffers (the `leaves`, by
  position), None if `reject` holds for a node. A call is its body's node (not entered) and CallInfo, its arguments
  sources like any other; a host call (its body the build's own: new buffers, a new executor node) is what it computes
  (`_call_key`). `values_only` (a key of the values, for realize_lazy): a call by its name only (its derivative rule
  does not change its value) and float constants by position (`consts`: their values are compared apart), but those in
  `by_value` (what host calls' arguments are computed from); the host calls are those at the top. Else (GraphMemo's
  key) constants by value, and the host calls are the calls whose bodies are a build's own, in the graphs and in the
  bodies of uses of a structural call's build (`_renewed`), one per body, each numbered in the key where it is met."""
  index: dict[UOp, int] = {}
  leaves: dict[UOp, int] = {}
  consts: list[UOp] = []
  parts: list[tuple] = []
  hosts: list[UOp] = []
  bodies: dict[UOp, int] = {}
  def own(f: UOp) -> int:
    if (i := bodies.get(f.src[0])) is None:
      i = bodies[f.src[0]] = len(hosts)
      hosts.append(f)
    return i
  for u in sink.toposort(enter_calls=False):
    if reject(u): return None
    arg: Any = u.arg
    if u.op is Ops.BUFFER: arg = ("leaf", leaves.setdefault(u, len(leaves)), u.shape, u.device)
    elif u.op is Ops.FUNCTION and isinstance(arg, _CallInfo):
      if values_only or is_host_call(u):
        try: arg = _call_key(u)
        except TypeError: return None
        if values_only and is_host_call(u): hosts.append(u)
        elif not values_only: arg = (arg, own(u))
      elif (build := _renewed(u)) is not None:
        nested = [x for x in u.src[0].toposort(enter_calls=True) if x.op is Ops.FUNCTION and (is_host_call(x) or _renewed(x))]
        arg = ("use", build, own(u), tuple(own(x) for x in nested))
      else: arg = (u.src[0], arg)
    elif values_only and u.op is Ops.CONST and not u.src and dtypes.is_float(u.dtype) and (by_value is None or u not in by_value):
      arg = ("const", len(consts))
      consts.append(u)
    index[u] = len(parts)
    parts.append((u.op, u.dtype, arg, tuple(index[s] for s in u.src if s in index)))
  # (once more, with the constants host calls fill keyed by value: only for graphs that hold one)
  if hosts and by_value is None and values_only: return _structure(sink, reject, values_only, _host_operands(hosts))
  return tuple(parts), list(leaves), consts, hosts

def _not_memoisable(u: UOp) -> bool:
  # a write of a computed value, also in a call's body, or a host call outside a call of its own (a host call's call
  # is kept, its body given at each hit: GraphMemo); or a call whose rules are a user's Python, which may branch on
  # values (CallRule.structural)
  if is_host_call(u): return getattr(u.arg.aux, "effectful", False)
  # (a fill, a constant written into a buffer, is structure: the buffer is a leaf)
  if u.op is Ops.STORE: return not _constant_value(u.src[1])
  if u.op is Ops.AFTER: return not all(x.op is Ops.STORE and _constant_value(x.src[1]) for x in u.src[1:])
  return u.op is Ops.CUSTOM_FUNCTION or (u.op is Ops.FUNCTION and (
    not getattr(getattr(u.arg, "aux", None), "structural", True) or (not _reusable_body(u.src[0]) and _renewed(u) is None)))

def _renewed(u: UOp) -> tuple | None:
  """The build a call's body is a use of (a structural custom call whose body holds host calls: each use has the
  build's graphs with new host calls and buffers, `with_fresh_scratch`), or None."""
  return getattr(getattr(u.arg, "aux", None), "build", None) if u.op is Ops.FUNCTION and not _reusable_body(u.src[0]) else None

@dataclasses.dataclass
class _Calls:
  """The calls in a rewrite's result whose body is a build's own (host calls, uses of a structural custom call's
  build): `kept`, each with the position of its body among the rewritten graphs' host calls (a rewrite keeps such a
  call, with new arguments, or calls its rules, whose graphs hold the calls in its body), and `made` by the rewrite
  (host calls: a derivative's LAPACK solve), with their bodies' `scratch`."""
  kept: list[tuple[UOp, int]]
  made: list[UOp]
  scratch: Scratch | None

def _result_calls(out: list[UOp], hosts: list[UOp]) -> _Calls | None:
  """`_Calls` of a rewrite's result; None if it cannot be stored: a write of a computed value the rewrite made (its
  buffer is this result's own), or a call the rewrite made whose body cannot be renewed."""
  bodies = {h.src[0]: i for i, h in enumerate(hosts)}
  calls = _Calls([], [], None)
  for u in UOp.sink(*out).toposort(enter_calls=False):
    if u.op is Ops.FUNCTION and not _reusable_body(u.src[0]):
      if (i := bodies.get(u.src[0])) is not None: calls.kept.append((u, i))
      # (not one that computes another call's outputs too: vjp merges it with that call, found by its rule's identity)
      elif is_host_call(u) and getattr(u.arg.aux, "forward_of", None) is None: calls.made.append(u)
      else: return None
    elif u.op is Ops.CUSTOM_FUNCTION or (u.op is Ops.STORE and not _constant_value(u.src[1])): return None
  if calls.made:
    if (scratch := scratch_of([u.src[0] for u in calls.made])) is None: return None
    calls.scratch = scratch
  return calls

def _renewing(calls: _Calls, hosts: list[UOp]) -> dict[UOp, UOp]:
  """The substitutions that give a stored result's calls this hit's bodies: the rewritten graphs' own (by position),
  and new ones for those the rewrite made."""
  subs = {u: u.replace(src=(hosts[i].src[0], *u.src[1:]), arg=hosts[i].arg) for u, i in calls.kept}
  if calls.made:
    assert calls.scratch is not None
    made = [u.src[0] for u in calls.made]
    fresh = dict(zip(made, with_fresh_scratch(made, calls.scratch), strict=True))
    subs.update((u, u.replace(src=(fresh[u.src[0]], *u.src[1:]))) for u in calls.made)
  return subs

_MEMO_SLOT = 1 << 40   # canonical leaves of memoised graphs: PARAM slots no traced graph uses

class GraphMemo:
  """A rewrite of traced graphs (a pure function of their structure), memoised by `_structure`: on a hit, the stored
  result with this call's leaves in place of the canonical ones, and its host calls with this call's bodies (a host
  call's buffers are its build's own: the rewritten graphs' host calls are the ones it keeps). Graphs holding writes or
  calls with a user's rules (`_not_memoisable`), and results with a host call or a write the rewrite made, are
  rewritten every time. `as_call` (a result computed at once, outside any trace, holding no host call): a hit is one
  tinygrad @function call of the stored result on this call's leaves, instead of the result substituted node by node
  (~5 us a node); the scheduler inlines it. Its arguments are the leaves' BUFFERs themselves, not the views of them the
  graphs hold: a caller that substitutes a view substitutes its buffer too."""
  def __init__(self, rewrite: Callable[[list[UOp]], list[UOp]], size: int = 256):
    self.rewrite, self.size = rewrite, size
    # key -> (canonical leaves, result, its fill buffers, its calls whose bodies each hit renews; None: none)
    self.memo = dict[tuple, tuple[list[UOp], list[UOp], list[UOp], _Calls | None]]()
    self.calls = dict[tuple, tuple[UOp, list[int]] | None]()   # key -> (@function body over PARAMs 0..k-1, the leaves it reads)
  def __call__(self, uops: list[UOp], as_call: bool = False) -> list[UOp]:
    if (found := _structure(UOp.sink(*uops), _not_memoisable, values_only=False)) is None: return self.rewrite(uops)
    key, leaves, _, hosts = found
    if key not in self.memo:
      out = self.rewrite(uops)
      if (found_calls := _result_calls(out, hosts)) is None: return out   # (its buffers are this result's own)
      canon = [UOp.param(_MEMO_SLOT + i, l.dtype, l.shape, l.device) for i, l in enumerate(leaves)]
      if len(self.memo) >= self.size:
        self.memo.clear()
        self.calls.clear()
      stored = list(UOp.sink(*out).substitute(dict(zip(leaves, canon, strict=True))).src) if canon else out
      calls = _result_calls(stored, hosts) if found_calls.kept or found_calls.made else None
      self.memo[key] = (canon, stored, _filled(out), calls)
      # (the first call too is a call of the stored graph: the graph computed is the same at every call, and so is
      # the program that computes it, found again by its structure)
      if not (as_call and canon and calls is None): return out
    canon, out, filled, calls = self.memo[key]
    if as_call and canon and calls is None:
      if key not in self.calls: self.calls[key] = _call_body(canon, out)
      if (call := self.calls[key]) is not None:
        body, used = call
        fn = body.call(*[leaves[i] for i in used], name=getattr(self.rewrite, "__name__", "memo"))
        return [fn.gettuple(i) for i in range(len(out))]
    # (a fill's buffer is the result's own: two results in one graph, or one closed over by a jit, would share it.
    # The call body above keeps its fills: inlined at each call, they are written again, with the same constant)
    subs = {**dict(zip(canon, leaves, strict=True)), **{b: _fresh(b) for b in filled},
            **(_renewing(calls, hosts) if calls is not None else {})}
    return list(UOp.sink(*out).substitute(subs).src) if subs else out

def _filled(out: list[UOp]) -> list[UOp]:
  """The buffers of the fills (a constant written into a new buffer) in these graphs."""
  return [u.src[0].base for u in UOp.sink(*out).toposort() if u.op is Ops.STORE and u.src[0].base.op is Ops.BUFFER]

def _fresh(b: UOp) -> UOp: return b.replace(arg=dataclasses.replace(b.arg, slot=next(UOp.unique_num)))

def _call_body(canon: list[UOp], out: list[UOp]) -> tuple[UOp, list[int]] | None:
  """A memoised result as a @function body: its canonical leaves renumbered 0..k-1 in the order of `used`. None if it
  reads host data (a buffer `Tensor(np_array)` copies to the device: no argument of a call on the device)."""
  present = set(UOp.sink(*out).toposort(enter_calls=False))
  used = [i for i, c in enumerate(canon) if c in present]
  if any(not isinstance(d := canon[i].device, str) or d.startswith(_HOST_DATA) for i in used): return None
  renumbered = {canon[i]: UOp.param(j, canon[i].dtype, canon[i].shape, canon[i].device) for j, i in enumerate(used)}
  return UOp.maketuple(*out).substitute(renumbered), used

_tinygrad_realize = Tensor.realize   # tinygrad's own (patches.py wraps Tensor.realize to come here)

def live_tensors() -> list[Tensor]: return [t for r in list(_all_tensors) if (t := r()) is not None]

_NOT_LAZY = frozenset({Ops.BUFFER, Ops.CONST, Ops.PARAM})
def is_lazy(t: Tensor) -> bool:
  """t is a computation not done yet (not a buffer, a view of one, a weakly typed view of one, or a constant)."""
  return stored_view(t.uop).base.op not in _NOT_LAZY

# buffers computed by `realize_lazy(early=True)` (what a transform computes before it starts): tinygrad's backward()
# through one would silently skip what it was computed from, so patches.py's Tensor.gradient refuses it
computed_early: weakref.WeakSet[UOp] = weakref.WeakSet()

def _not_computable(u: UOp) -> bool:
  return u.op in _EAGER_UNSUPPORTED or (u.op is Ops.BUFFER and ((b := buffers.get(u)) is None or not b.is_allocated()))

def _placeholder_in(t: Tensor) -> bool:
  return any(x.op is Ops.PARAM or (x.op is Ops.BUFFER and ((b := buffers.get(x)) is None or not b.is_allocated()))
             for x in t.uop.toposort(enter_calls=False))

_HOST_DATA = ("NPY", "PYTHON")

def _derived(t: Tensor) -> bool:
  """t is computed from device buffers (which Tensors hold: a gradient could flow to them), not written into state nor
  made from host data (`Tensor(np_array)`), the values `computed_early` keeps."""
  nodes = t.uop.toposort(enter_calls=False)
  return not any(x.op in (Ops.AFTER, Ops.STORE) for x in nodes) and \
    any(x.op is Ops.BUFFER and not (isinstance(x.device, str) and x.device.startswith(_HOST_DATA)) for x in nodes)

def _realize_by_tinygrad(tensors: list[Tensor], early: bool) -> None:
  """tinygrad's realize; `early`: the values derived from other Tensors are remembered in computed_early."""
  derived = [t for t in tensors if _derived(t)] if early else []
  _tinygrad_realize(*tensors)
  computed_early.update(t.uop.base for t in derived if t.uop.base.op is Ops.BUFFER)

def _host_copy(u: UOp) -> bool:
  """u copies host data (`Tensor(np_array)`: a BUFFER on NPY, or a whole reshape of one) to one device."""
  return u.op is Ops.COPY and ((b := u.src[0]).op is Ops.BUFFER or (b.op is Ops.RESHAPE and (b := b.src[0]).op is Ops.BUFFER)) \
    and isinstance(b.device, str) and b.device.startswith(_HOST_DATA) \
    and isinstance(u.device, str) and (hb := buffers.get(b)) is not None and hb.is_allocated() and hb.size > 0 and np_dtype(b.dtype) is not None

def host_copies_filled(uops: list[UOp]) -> list[UOp]:
  """The graphs with their copies of host data (`Tensor(np_array)` made while a function is traced) replaced by
  buffers written from the host now: a capture would copy the data again at every replay, and JAX takes such data into
  the trace as it is when traced."""
  sink = UOp.sink(*uops)
  subs = {u: _host_copied(u) for u in sink.toposort(enter_calls=False) if _host_copy(u)}
  return list(sink.substitute(subs).src) if subs else uops

def _host_copied(u: UOp) -> UOp:
  """A `_host_copy`'s data in a buffer written from the host now, shaped as u."""
  return filled_buffer(_copyout(_one(u.src[0])), u.device).reshape(u.shape)

# the constant fills written from the host, by buffer: another live Tensor may still read the fill's AFTER (only the
# Tensors realized are rebound), and the buffer holds that value until a write, which realizes its readers first
# (patches.py: a write's old-data readers)
_host_fills: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()

def _constant_fill(u: UOp) -> bool:
  """u fills a new buffer with a constant (`ir.unfilled`'s AFTER(buf, STORE(buf, value)), the value a broadcast CONST)
  over a whole BUFFER with no data yet, or one this fill was written into before: tinygrad's Tensor.full and
  zeros_like, the constant cotangents its gradient clones into buffers."""
  return (v := unfilled(u)) is not u and all(x.op in (Ops.RESHAPE, Ops.EXPAND, Ops.CONST, Ops.STACK) for x in v.toposort()) \
    and ((b := u.src[0]).op is Ops.BUFFER or (b.op is Ops.RESHAPE and (b := b.src[0]).op is Ops.BUFFER)) and \
    isinstance(b.device, str) and ((hb := buffers.get(b)) is None or not hb.is_allocated() or _host_fills.get(b) is u) \
    and np_dtype(b.dtype) is not None and isinstance(n := b.numel(), int) and n > 0

def _host_data_filled(sink: UOp) -> UOp:
  """sink with its copies of host data, and its constant fills of new buffers, replaced by buffers written from the
  host: a graph holding a COPY or a STORE went through tinygrad's scheduler at every realize (jnp functions and
  tinygrad code make them from numpy data; tinygrad's full() is a fill). A fill writes its own buffer, as tinygrad's
  kernel would, so any other reader of that buffer sees the value."""
  subs: dict[UOp, UOp] = {}
  for u in sink.toposort(enter_calls=False):
    if _host_copy(u): subs[u] = _host_copied(u)
    elif _constant_fill(u):
      if _host_fills.get(buf := u.src[0].base) is not u:
        write_array(buf, np.full(buf.numel(), u.src[1].src[1].base.arg, np_dtype(buf.dtype)))
        _host_fills[buf] = u
      subs[u] = u.src[0]
  return sink.substitute(subs) if subs else sink

def _folded_in_place(t: Tensor) -> bool:
  """A device-less scalar graph of constants becomes its folded constant (what tinygrad's realize leaves a graph
  that tinygrad's scheduler would fold), so that eager scalar chains do not grow."""
  if t.device is not None or t.uop.op is Ops.CONST or t.shape != () or (v := folded_scalar(t.uop)) is None: return False
  t.uop = UOp.const(v, t.dtype)
  return True

_ALIAS, _READ = 1, 2

def old_data_readers(targets: set[UOp], done: set[UOp], keep: set[UOp]) -> list[Tensor]:
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
    if (t := r()) is None or t.uop in keep or t.uop.has_buffer_identity() or t.uop.is_virtual or t.uop.topovisit(visit, cache) != _READ:
      continue   # is_virtual: no device or a weak dtype, nothing tinygrad can store (its strong consumers are readers)
    try:
      if check_read("realize", (t,)): continue   # jit's abstract trace: no data to keep
    except Exception: continue   # a traced value: the transform that made it computes it again
    out.append(t)
  return out

_BUFFER_IDENTITY = frozenset({Ops.BUFFER, Ops.AFTER, Ops.PARAM, Ops.MSELECT, Ops.MSTACK, Ops.BITCAST, Ops.CUSTOM})

def _target(write: UOp) -> UOp:
  """What a write writes: a buffer (through the writes before it and reshapes), or the value it writes into."""
  d = write.src[0]
  while d.op in (Ops.AFTER, Ops.RESHAPE): d = d.src[0]
  return d

def _plain(dest: UOp, writes: set[UOp]) -> UOp:
  """A write's destination without the writes before it: the buffer (or its reshape) they all write."""
  if dest in writes: return _plain(dest.src[0], writes)
  if dest.op is Ops.RESHAPE and dest.src[0] in writes: return dest.replace(src=(_plain(dest.src[0], writes), *dest.src[1:]))
  return dest

def _raw_reads(value: UOp, writes: set[UOp]) -> set[UOp]:
  """The buffers `value` reads as they are before the writes (not through one of `writes`)."""
  out: set[UOp] = set()
  todo, seen = [value], set()
  while todo:
    if (u := todo.pop()) in seen or u in writes: continue
    seen.add(u)
    if u.op is Ops.BUFFER: out.add(u)
    todo.extend(u.src)
  return out

def _eager_writes(tensors: list[Tensor], early: bool) -> list[Tensor] | None:
  """The lazy writes under these Tensors (tinygrad's assign, AFTER(dest, STORE(dest, value)): a port's
  `params[k] -= lr * g` on realized state, `out += term` into `jnp.zeros`, `ml -= prior` on a lazy sum) done here,
  innermost first: each value computed as any lazy value (`realize_lazy`: a compiled program found again by its
  structure; a device-less constant folded on the host) and copied into the buffer, after the live values that read
  its old data (as the patched realize of tinygrad does); a write into a value that is no buffer is that value's new
  value, stored anew. Then every Tensor that reads a write is rebound to the result, as tinygrad's realize rebinds
  them. tinygrad's scheduler took 4-8 ms per write. Left to tinygrad, all of them: writes where a value reads the old
  data of another write's buffer, or of its own after an earlier write (tinygrad's schedule orders those reads before
  the writes; done one by one here they would see new data), writes into a view, on several devices, over
  placeholders, and with `early` (a transform starting) of a computed value into a buffer with no data yet, which
  stays lazy as other graphs over such buffers do. Returns the Tensors whose graphs held a write (with `early`; else
  none), or None: nothing was written."""
  writes = [u for u in UOp.sink(*[t.uop for t in tensors]).toposort(enter_calls=False)
            if u.op is Ops.AFTER and len(u.src) == 2 and u.src[1].op is Ops.STORE and u.src[1].src[0] is u.src[0]]
  if not writes: return None
  every, targets = set(writes), [_target(w) for w in writes]
  written = {b for b in targets if b.op is Ops.BUFFER}
  first = {b: w for w, b in reversed(list(zip(writes, targets, strict=True)))}
  for w, b in zip(writes, targets, strict=True):
    # into a buffer (or its reshape) or into a value that is no buffer, on one device; not into a view (a slice:
    # tinygrad's view assign)
    if b.op is not Ops.BUFFER and (b.op in _BUFFER_IDENTITY or b.op in GroupOp.Movement) or not isinstance(w.device, str): return None
    raw = _raw_reads(w.src[1].src[1], every) & written
    if raw - {b} or (raw and first[b] is not w) or w.src[1].src[1].max_numel() == 0: return None
    # a value that is no buffer, written into: only a computation from buffers and these writes (tinygrad's lazy state,
    # such as an rng counter copied to the device and incremented, or parameters initialised from it, stays tinygrad's)
    if b.op not in _BUFFER_IDENTITY and any(x.op is Ops.COPY or (x.op is Ops.AFTER and x not in every) for x in b.toposort(enter_calls=False)):
      return None
  held = [t for t in tensors if any(u.op is Ops.AFTER for u in t.uop.toposort(enter_calls=False))] if early else []
  # the live values that read a written buffer's old data are computed first; one that itself holds a write goes with
  # all of them to tinygrad's realize (which schedules them together)
  if written and (readers := old_data_readers(written, every, {t.uop for t in tensors})):
    if any(u.op is Ops.AFTER for r in readers for u in r.uop.toposort(enter_calls=False)): return None
    Tensor.realize(*readers)
  # each write's buffer: its own, or for a value that is no buffer (`ml -= prior` on a lazy sum) a new one that its
  # writes go into (the value's new value: other Tensors hold the old value's graph, not a buffer). Each value reads
  # the writes before it as those buffers (their data when it is computed): rewritten once for all (substituting what
  # is done before each value cost O(writes^2): qujax's chains of 38 writes)
  fresh: dict[UOp, UOp] = {}
  def into(w: UOp, b: UOp) -> UOp:
    if b.op is Ops.BUFFER: return _plain(w.src[0], every)
    if b not in fresh: fresh[b] = UOp.new_buffer(w.device, w.max_numel(), w.dtype)
    return fresh[b].reshape(w.shape)
  plain = {w: into(w, b) for w, b in zip(writes, targets, strict=True)}
  values = dict(zip(writes, UOp.sink(*[w.src[1].src[1] for w in writes]).substitute(plain).src, strict=True))
  done: dict[UOp, UOp] = {}
  for u, target in zip(writes, targets, strict=True):
    dest, value = plain[u], values[u]
    buf = dest.src[0] if dest.op is Ops.RESHAPE else dest
    # a value of constants only (no device: `Tensor.empty(n).assign(0)`, a host call's one-element argument) is folded
    constant = folded_value(value) if value.device is None else None
    if value.dtype != dest.dtype or _placeholder_in(Tensor(value)): break
    if early and constant is None and target.op is Ops.BUFFER and _placeholder_in(Tensor(dest)): break   # (a constant: a fill)
    if buf.op is not Ops.BUFFER or not isinstance(buf.device, str) or value.device not in (None, buf.device): break
    if constant is not None: write_array(buf, np.broadcast_to(constant, tuple(int(d) for d in dest.shape)).reshape(-1).astype(np_dtype(buf.dtype)))
    else:
      # (a device-less value, such as a clone of `jnp.linspace(...)` to read it, is computed on the buffer's device)
      realize_lazy([v := Tensor(value).contiguous()], on=buf.device if value.device is None else None)
      if (got := v.uop.base).op is not Ops.BUFFER or got.max_numel() != buf.max_numel(): break
      copy_buffer(buf, got)
    done[u] = dest
  if not done: return None
  _apply_map_to_tensors(done, name="tinyjax writes")
  return held

def realize_lazy(tensors: list[Tensor], early: bool = False, on: str | None = None) -> None:
  """Compute these Tensors' lazy graphs, each Tensor rebound to a new buffer holding its value, by a compiled program
  found again by the graphs' structure (a graph of constants only: if it has a device, or on the device `on`, given
  for a device-less value read or written into a buffer there). Graphs it does not take (_EAGER_UNSUPPORTED, buffers on several devices,
  device-less constants) go through tinygrad's realize. `early` (values computed before a
  transform starts): graphs over placeholders or unallocated buffers (a transform's pending values, linearize's
  tangents) are left as they are: tinygrad would allocate the placeholders and compute on garbage."""
  global eager_compiles
  # a value of no elements goes through tinygrad's realize: a program's output buffer cannot have size 0 (tinygrad's
  # allocator asserts), so `x[1:] - x[:-1]` of a 1-element x failed to read
  if empty := [t for t in tensors if 0 in t.shape]:
    _realize_by_tinygrad(empty, early)
    if rest := [t for t in tensors if 0 not in t.shape]: realize_lazy(rest, early, on)
    return
  # (the ops present, from one walk: the writes, host data and fills below are each looked for only if there)
  ops = {u.op for u in UOp.sink(*[t.uop for t in tensors]).toposort(enter_calls=False)}
  if Ops.AFTER in ops and (held := _eager_writes(tensors, early)) is not None:
    # (values that held a write are not `computed_early`, as when tinygrad's realize did the write: they are state)
    if early and (state := [t for t in held if is_lazy(t)]): realize_lazy(state)
    if not (tensors := [t for t in tensors if is_lazy(t)]): return
  by_uop: dict[UOp, list[Tensor]] = {}
  for t in tensors:
    if not _folded_in_place(t): by_uop.setdefault(t.uop, []).append(t)
  if not by_uop: return
  sink = _host_data_filled(UOp.sink(*by_uop)) if Ops.COPY in ops or Ops.AFTER in ops else UOp.sink(*by_uop)
  # a value that is now a buffer written from the host (numpy data, a fill) is that buffer: nothing to compute
  if any(whole := [f.op in (Ops.BUFFER, Ops.RESHAPE) and f.base.op is Ops.BUFFER for f in sink.src]):
    for (u, ts), f, w in zip(list(by_uop.items()), sink.src, whole, strict=True):
      if w:
        for t in ts: t.uop = f
        del by_uop[u]
    if not by_uop: return
    sink = UOp.sink(*[f for f, w in zip(sink.src, whole, strict=True) if not w])
  tensors = [t for ts in by_uop.values() for t in ts]
  if (found := _structure(sink, _not_computable, values_only=True)) is None:
    if early and len(keep := [t for t in tensors if not _placeholder_in(t)]) < len(tensors):
      if keep: realize_lazy(keep, early)
      return
    # tinygrad realizes the graphs that hold such nodes (which rebinds every Tensor that reads them), then the others;
    # copies of host data and constant fills are not such nodes (written from the host above)
    filled = dict(zip(by_uop, sink.src, strict=True))
    hard = [t for t in tensors if any(x.op in _EAGER_UNSUPPORTED for x in filled[t.uop].toposort(enter_calls=False))]
    if hard: _realize_by_tinygrad(hard, early)
    if (rest := [t for t in tensors if is_lazy(t)]) and len(rest) < len(tensors): realize_lazy(rest, early)
    elif rest: _realize_by_tinygrad(rest, early)
    return
  key, ins, consts, _ = found
  # graphs of constants only on a device are computed there by a program of no inputs; with no device (f(3.0)),
  # tinygrad folds them to a constant that goes on any device (a buffer on the default device would not mix with
  # sharded values); a weak dtype has no storage (`asarray(ints) * 2.5`: tinygrad stores it in its default dtype)
  devices = {b.device for b in ins} if ins else {t.device for t in tensors}
  if not ins and devices == {None} and on is not None: devices = {on}
  if not ins: key = (key, *devices)
  if None in devices or any(t.dtype in dtypes.weaks for t in tensors): devices = set()
  if len(devices) != 1 or not isinstance(device := next(iter(devices)), str):
    by_device: dict[Any, list[Tensor]] = {}
    for t in tensors: by_device.setdefault(t.device, []).append(t)
    if len(by_device) == 1 or not devices: _realize_by_tinygrad(tensors, early)
    else:
      for group in by_device.values(): realize_lazy(group, early)
    return
  values = [c.arg for c in consts]
  prog = _eager_programs.get(key)
  if prog is None or any(values[i] != prog.values[i] for i in range(len(consts)) if i not in prog.lifted):
    users = _user_dtypes(sink) if prog is not None else {}
    lifted = () if prog is None else tuple(i for i in range(len(consts)) if i in prog.lifted or
                                           (values[i] != prog.values[i] and _liftable(consts[i], users)))
    while prog is None and len(_eager_programs) >= _MAX_EAGER_PROGRAMS: _eager_programs.pop(next(iter(_eager_programs)))
    prog = _eager_programs[key] = _EagerProgram(sink, list(ins), consts, lifted, device)
    eager_compiles += 1
  bufs = list(ins)
  if prog.lifted: bufs.append(filled_buffer(np.array([float(values[i]) for i in prog.lifted], np.float64), device))
  made = [allocated_buffer(s, d, device) for s, d in prog.out_types]
  prog.step.run(bufs + [m[0] for m in made])
  for u, (buf, shaped) in zip(by_uop, made, strict=True):
    for t in by_uop[u]: t.uop = shaped.uop
    if early: computed_early.add(buf)

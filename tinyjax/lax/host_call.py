"""Host calls: a node whose lowering is a call from the device's queue into Python, which replays compiled bodies.

What lax's loops and branches (`lax.control_flow`) and LAPACK calls (`lax.linalg`) share: a function of flat Tensors
traced once into a `Body`; the `HostCallRule`, whose node is one host call (`_tg.host_call`) running the rule's
executor on the arguments' buffers; and the step cache (`compiled`), which compiles a body once per kind of buffers
and reuses it for every loop that computes the same.

Constant arguments are handled at two points in time, both for the host calls built here. A host call takes buffers,
and tinygrad folds a buffer of a constant back into the constant. (1) When the node is built
(`HostCallRule.call_node`), an argument that is a constant expression is left out of the host call: its executor fills
a buffer with it on first run. (2) An argument that becomes a constant only later, when the schedule is made (a
placeholder substituted by a constant when a custom rule is inlined, vmap's broadcast of an unbatched constant,
tinygrad's x*0), is computed once per schedule and filled into a buffer by `_tg.patches._constant_arguments`, a rule
added to tinygrad's scheduler, the one place that sees that graph; `_tg.host_call` also stores one-element arguments
into buffers of their own (`_stored`), which the scheduler would fold. tests/test_control_flow.py pins each
(`test_loop_constant_arguments`, `test_loop_arguments_that_become_constants`).
"""
from __future__ import annotations
import contextlib, dataclasses, functools
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence
from tinyjax._tg import Tensor, UOp, Ops, GroupOp, DType, dtypes, param_like, param, host_call, Step, constant_array, filled_buffer, \
  canonical_key, static_shape, default_device, jit_capturing, scratch_like, copy_buffer
from tinyjax.core import trace_scope, substitute, trace_state
from tinyjax.transforms.batching import vmapout
from tinyjax.custom import closure, new_slot
from tinyjax.call_rule import CallRule, BatchedCall

__all__ = ["Type", "type_of", "Body", "trace", "shared", "loop_device", "HostCallRule", "compiled", "emit", "TOKEN", "first_token"]

Type = tuple[tuple[int, ...], DType]

def type_of(t: Tensor) -> Type: return static_shape(t), t.dtype

# ---- traced functions ------------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Body:
  """A function of flat Tensors traced once: its outputs as graphs over `params` (PARAMs of unique slots), and the
  token of the effects it runs (host callbacks: debug.print, io_callback), if any, also a graph over `params`."""
  params: list[UOp]
  outs: list[UOp]
  effects: list[UOp] = field(default_factory=list)
  def __call__(self, xs: Sequence[Tensor]) -> list[Tensor]:
    """The outputs for these inputs (the effects left out: a derivative's body recomputes the primal, whose effects the
    primal's own node runs, as JAX runs them once)."""
    return [Tensor(u) for u in substitute(self.outs, {p: x.uop for p, x in zip(self.params, xs, strict=True)})]

  def replay(self, xs: Sequence[Tensor]) -> list[Tensor]:
    """The outputs for these inputs, the effects emitted again into the current scope (a body traced again under vmap:
    its callbacks run per example)."""
    done = substitute(self.outs + self.effects, {p: x.uop for p, x in zip(self.params, xs, strict=True)})
    for e in done[len(self.outs):]: emit(functools.partial(_effect, e))
    return [Tensor(u) for u in done[:len(self.outs)]]

  def with_effects(self, xs: Sequence[Tensor]) -> list[Tensor]:
    """The outputs, then the effects' tokens (what a compiled step computes)."""
    return [Tensor(u) for u in substitute(self.outs + self.effects, {p: x.uop for p, x in zip(self.params, xs, strict=True)})]

  @property
  def has_calls(self) -> bool: return any(u.op is Ops.FUNCTION for u in UOp.sink(*self.outs).toposort(enter_calls=False))

  @functools.cached_property
  def key(self) -> bytes:
    """What the body computes, whatever its PARAMs' slots and the names of its nested calls: equal for two traces of
    the same function and closure (`_tg.canonical_key`)."""
    canon = {p: param(i, static_shape(p), p.dtype, p.device) for i, p in enumerate(self.params)}
    return canonical_key(UOp.sink(*substitute(self.outs + self.effects, canon)))

def _effect(u: UOp, _token: Tensor | None) -> Tensor: return Tensor(u)

def trace(fun: Callable[[list[Tensor]], list[Tensor]], types: list[Type], device, what: str) -> tuple[Body, list[Tensor]]:
  """fun traced on placeholders of `types`; the values it closes over that are traced (or data) become extra inputs,
  as a custom function's do (custom.closure). Returns the Body over (inputs, closed-over values) and those values."""
  own = [param(new_slot(), s, d, device) for s, d in types]
  # the body's effects are collected here (a sink at this scope's depth), chained after those before the loop
  # the outer token (that of the effects before the loop) is an argument of its own: closed over, the computation of
  # those effects would be inlined into the body and run again at each step
  outer = _find_sink()[0].token
  tp = None if outer is None else param_like(outer.uop, new_slot())
  with trace_scope(what, own), _body_sink(None if tp is None else Tensor(tp)) as sink:
    outs = [o.uop for o in fun([Tensor(p) for p in own])]
  effects = [sink.token.uop] if sink.emitted and sink.token is not None else []
  n = len(outs)
  hidden = _inputs(outs + effects, set(own) | ({tp} if tp is not None else set()))
  extra = [param_like(h, new_slot()) for h in hidden]
  if tp is not None and outer is not None and effects and tp in UOp.sink(*effects).toposort():
    hidden, extra = [outer.uop] + hidden, [tp] + extra
  done = substitute(outs + effects, dict(zip(hidden, extra, strict=True)))
  return Body(own + extra, done[:n], done[n:]), [Tensor(h) for h in hidden]

def _inputs(outs: list[UOp], own: set[UOp]) -> list[UOp]:
  """What a body reads besides its own inputs: custom.closure's (traced values, markers, data), and every other
  buffer or PARAM (with the movement ops over it: the whole node a transform substitutes). A placeholder of a
  transform whose trace has ended (a custom_vjp's bwd builds its loop while the vjp substitutes its residuals) is not
  traced any more, but is still substituted later: only as an argument of the
  loop node, not inside its compiled body."""
  hidden = closure(outs, own)
  seen = own | set(hidden)
  def view_of_input(u: UOp) -> bool:   # a placeholder is a view of a BUFFER (Tensor.empty: RESHAPE(BUFFER)), keyed so
    while u.op in GroupOp.Movement:
      # a view of an input found already (v @ A's transpose of A) stays in the body: as an input of its own it would be
      # copied contiguous each run, and the body's kernels would read that copy, not A's own layout
      if (u := u.src[0]) in seen: return False
    return u.op in (Ops.BUFFER, Ops.PARAM) and u not in own
  def gate(u: UOp) -> bool:
    if u in seen: return False
    if view_of_input(u):
      hidden.append(u)
      seen.add(u)
      return False
    return True
  UOp.sink(*outs).toposort(gate=gate, enter_calls=False)
  return hidden

def shared(bodies: list[tuple[Body, list[Tensor]]], n_own: int, device) -> tuple[list[Body], list[Tensor]]:
  """Bodies traced apart, as bodies of the same inputs: their own `n_own` ones and all of their closed-over values."""
  consts: dict[UOp, Tensor] = {}
  for _, hidden in bodies:
    for h in hidden: consts.setdefault(h.uop, h)
  ks = list(consts.values())
  out = []
  for body, hidden in bodies:
    ps = body.params[:n_own] + [param(new_slot(), *type_of(k), device) for k in ks]
    where = {h.uop: i for i, h in enumerate(hidden)}
    subs = {body.params[n_own + where[k.uop]]: ps[n_own + i] for i, k in enumerate(ks) if k.uop in where}
    done = substitute(body.outs + body.effects, subs)
    out.append(Body(ps, done[:len(body.outs)], done[len(body.outs):]))
  return out, ks

def host_device(x: Tensor):
  """Where a host call on x runs: its device; a device-less value (a constant graph: tinygrad's constants have no
  device) the default device, as JAX's constants."""
  return x.device if x.device is not None else default_device()

def loop_device(xs: Sequence[Tensor]):
  """The device a loop runs on: its arguments' (closed-over numpy data sits on tinygrad's NPY device: not that one)."""
  for x in xs:
    if x.device is not None and not str(x.device).startswith("NPY"): return x.device
  return default_device()


# ---- the node ----------------------------------------------------------------------------------------------------------

class HostCallRule(CallRule):
  """A call run by a host executor (scan, while_loop and switch nodes, LAPACK calls): its body is one host call
  (`_tg.host_call`) that runs `executor(...)` on the arguments' buffers when tinygrad runs the node."""
  opaque = True   # never inlined (_tg.call_kind): the FUNCTION's body is a host call, not a graph of ops
  def out_types(self, xs: list[Tensor]) -> list[Type]: raise NotImplementedError
  def content_key(self) -> tuple:
    """All the executor depends on besides its arguments (their types, and the constants among them, are in the graph):
    the rule's fields, each body by what it computes. A field of another kind raises: never a key that misses one."""
    def key(v):
      if isinstance(v, Body): return v.key
      if isinstance(v, (list, tuple)): return tuple(key(x) for x in v)
      if isinstance(v, (int, float, bool, str, DType, type(None))): return v
      raise TypeError(f"tinyjax: no content key for a {type(v).__name__} in {type(self).__name__}")
    return (type(self).__name__, *((f.name, key(getattr(self, f.name))) for f in dataclasses.fields(self)))  # type: ignore[arg-type]

  def executor(self, ins: list[Type], outs: list[Type]) -> Callable[[list[UOp]], None]:
    """run(buffers): the outputs' buffers, then the inputs' (flat: their types are ins and outs)."""
    raise NotImplementedError

  def batched_leading(self, flags: Sequence[int | None], size: int) -> BatchedCall:
    """`batched` for a rule that takes leading batch axes itself (LAPACK, FFT): each batched argument's axis moved
    first, an unbatched one broadcast, and the same rule called."""
    def make(xs: list[Tensor]) -> list[UOp]:
      xs = [x.unsqueeze(0).expand(size, *x.shape) if f is None else x.permute(f, *(i for i in range(x.ndim) if i != f))
            for x, f in zip(xs, flags, strict=True)]
      return [o.uop for o in self.call(xs)]
    return BatchedCall(self.name, make)

  @property
  def effectful(self) -> bool:
    """A body of this call runs effects (callbacks): its node has one more output, a token (`emit`)."""
    def bodies(v) -> list[Body]:
      return [v] if isinstance(v, Body) else [b for x in v for b in bodies(x)] if isinstance(v, (list, tuple)) else []
    return any(b.effects for f in dataclasses.fields(self) for b in bodies(getattr(self, f.name)))  # type: ignore[arg-type]

  def call(self, xs: list[Tensor]) -> list[Tensor]:
    """The outputs; an effectful call's token is emitted into the current scope (its effects run where it does)."""
    outs = super().call(xs)
    if not self.effectful: return outs
    emit(lambda _: outs[-1])
    return outs[:-1]

  def grad_fxn(self, *args: UOp, call: UOp | None = None) -> tuple[UOp | None, ...]:
    if call is not None and self.effectful: args = args[:-1]   # the token's (zero) cotangent
    return super().grad_fxn(*args, call=call)

  def call_node(self, xs: list[Tensor]) -> UOp:
    if not self.effectful: return self._call_node(xs)
    # an effectful call built twice on the same arguments is one node (vmap batches a callback's token, then its
    # outputs, each time through the rule): it runs once
    key = (self.content_key(), tuple(x.uop for x in xs))
    if (fn := _EFFECT_NODES.get(key)) is None:
      if len(_EFFECT_NODES) >= 64: _EFFECT_NODES.pop(next(iter(_EFFECT_NODES)))
      fn = _EFFECT_NODES[key] = self._call_node(xs)
    return fn

  def _call_node(self, xs: list[Tensor]) -> UOp:
    device = loop_device(xs)
    # contiguous outside the FUNCTION: tinygrad moves an argument's movement ops into the FUNCTION's body, where a
    # broadcast fails its kernel-graph check (and the host call takes buffers)
    xs = [(x if x.device == device else x.to(device)).contiguous() for x in xs]
    params = [param_like(x.uop, i) for i, x in enumerate(xs)]
    out_types = self.out_types(xs) + ([TOKEN] if (effectful := self.effectful) else [])
    # constant arguments do not reach the host call (the scheduler folds a buffer of a constant back into the constant,
    # and a host call takes buffers): its executor fills buffers with them
    fixed = {i: v for i, x in enumerate(xs) if (v := constant_array(x)) is not None}
    n_out, n_args = len(out_types) - effectful, len(xs)   # (the executor keeps no Tensor: `xs` are traced values)
    run, filled = self.executor([type_of(x) for x in xs], out_types[:n_out]), dict[int, UOp]()
    done: list[UOp] = []
    def with_constants(bufs: list[UOp]) -> None:
      if effectful and _once(done, bufs[:len(out_types)]): return
      outs, ins = bufs[:n_out], iter(bufs[len(out_types):])
      for i, v in fixed.items():
        if i not in filled: filled[i] = filled_buffer(v, device)
      _EAGER_RUN.append(False)   # the host calls it runs (a loop body's callbacks) run at every step
      try: run(outs + [filled[i] if i in fixed else next(ins) for i in range(n_args)])
      finally: _EAGER_RUN.pop()
    with_constants.makes_rows = getattr(run, "makes_rows", False)   # type: ignore[attr-defined]
    outs = host_call(with_constants, out_types, [p for i, p in enumerate(params) if i not in fixed], device)
    return self.node(outs, [x.uop for x in xs])


_EFFECT_NODES: dict[tuple, UOp] = {}
_STEPS: dict[tuple, Step] = {}   # compiled bodies by what they compute: a loop traced again (eager code) reuses its step
_MAX_STEPS = 256

def compiled(body: Body, ins: list, outs: list, steps: int = 1) -> Callable[[Any], Step | _WithTokens]:
  """The step of `body` for buffers of these types, compiled on first use (when the loop first runs: its inputs are
  concrete then) and shared by loops whose bodies compute the same."""
  tokens = [(s, d, None) for s, d in [TOKEN] * len(body.effects)]
  def get(device) -> Step | _WithTokens:
    key = (body.key, tuple(ins), tuple(outs), device, steps)
    if (step := _STEPS.get(key)) is None:
      if len(_STEPS) >= _MAX_STEPS: _STEPS.pop(next(iter(_STEPS)))
      step = _STEPS[key] = Step(body.with_effects, ins, outs + tokens, device, steps, body.has_calls) if tokens else \
        Step(body, ins, outs, device, steps, body.has_calls)
    return _WithTokens(step, device) if tokens else step
  return get

class _WithTokens:
  """A step whose body runs effects: each run also writes their tokens, into scratch buffers of its own."""
  def __init__(self, step: Step, device):
    self.step, self.scratch = step, [scratch_like(UOp.new_buffer(device, 1, TOKEN[1]))]
  def run(self, bufs: list[UOp], index: int = 0) -> None: self.step.run(bufs + self.scratch, index)


# ---- effects ----------------------------------------------------------------------------------------------------------
# A callback with no output that is used (debug.print, io_callback, a loop whose body prints) must still run, once per
# run of the code around it, in program order. Its node has one more output, a token, that `emit` keeps alive: it is
# carried out of the scopes being traced (through vmap by vmapout: the callback's batching rule runs it per example;
# through jvp/vjp/custom rules by substituting the primal values their placeholders stand for) to a sink: eagerly it
# is computed at once; in a jit's trace or capture it is assigned into `_TOKEN`, a Tensor the jit keeps as state, so its
# capture computes it at each call; in a loop or branch body it becomes the body's effect, which the compiled step
# computes at each iteration and which the loop's own node carries (its token) to the scope around the loop. Each
# callback takes the token of the previous one in its sink as an (ignored) argument: the order is program order.

TOKEN: Type = ((1,), dtypes.int32)

class _Sink:
  """Where emitted tokens go; `token` is the last one (the next callback's argument), `emitted`: any was."""
  def __init__(self, depth: int, token: Tensor | None = None): self.depth, self.token, self.emitted = depth, token, False
  def add(self, t: Tensor) -> None: self.token, self.emitted = t, True

class _Eager(_Sink):
  def add(self, t: Tensor) -> None:
    _EAGER_RUN.append(True)
    try: t.realize()
    finally: _EAGER_RUN.pop()

class _Jit(_Sink):
  @property
  def token(self) -> Tensor: return _jit_token()
  @token.setter
  def token(self, t) -> None: pass
  def add(self, t: Tensor) -> None:
    tok = _jit_token()
    tok.assign(t.reshape(-1)[:1].to(tok.device).cast(tok.dtype))

# The Tensor a jit's effects are assigned into: a jit must find it existing when it starts tracing, to see the
# assignment as state it keeps, so it is made at import, unallocated (no device work; its data is never read).
_TOKEN = Tensor.empty(*TOKEN[0], dtype=TOKEN[1])
def _jit_token() -> Tensor: return _TOKEN

_EAGER_RUN: list[bool] = []   # True on top: an eager sink is computing a token (see `_once`)

def _once(done: list[UOp], outs: list[UOp]) -> bool:
  """True if this effectful node already ran for an eager sink (its outputs then copied from that run's): a transform
  outside jit runs the effect when it is emitted (JAX runs it then), and computing the node's other outputs later (the
  transform's results) must not run it again."""
  if done:
    for d, s in zip(outs, done, strict=True): copy_buffer(d, s)
    return True
  if _EAGER_RUN and _EAGER_RUN[-1]: done.extend(outs)
  return False

_sinks: ContextVar[tuple[_Sink, ...]] = ContextVar("tinyjax_effect_sinks", default=())

@contextlib.contextmanager
def _body_sink(token: Tensor | None):
  sink = _Sink(len(trace_state().active), token)
  reset = _sinks.set(_sinks.get() + (sink,))
  try: yield sink
  finally: _sinks.reset(reset)

# scopes whose function is only traced, never run (JAX does not run callbacks there either)
_NOT_RUN = frozenset({"eval_shape", "make_jaxpr"})

def _find_sink() -> tuple[_Sink, list[int] | None]:
  """The sink an effect emitted now goes to, and the active scopes it is carried out of (innermost first; None: a
  scope whose function is only traced, nothing runs)."""
  s, sinks = trace_state(), _sinks.get()
  lifts: list[int] = []
  for i in range(len(s.active) - 1, -1, -1):
    if sinks and sinks[-1].depth == i + 1: return sinks[-1], lifts
    name = s.active[i][0]
    if name == "jit": return _Jit(i), lifts
    if name in _NOT_RUN: return _Sink(i), None
    lifts.append(i)
  return (_Jit(0) if s.running_jit or jit_capturing() else _Eager(0)), lifts

def _lift(i: int, t: Tensor) -> Tensor:
  """t, a value of the active scope i, as a value of the scope around it."""
  s = trace_state()
  name, phs = s.active[i]
  if name == "vmap":
    axis = s.axes[sum(n == "vmap" for n, _ in s.active[:i])]
    return vmapout(t, 0, axis)
  if subs := {p: s.values[p] for p in phs if p in s.values}: return Tensor(substitute([t.uop], subs)[0])
  if not phs or not (phs & set(t.uop.toposort())): return t
  raise NotImplementedError(f"tinyjax: callbacks (debug.print, io_callback) under tinyjax.{name}")

def emit(make: Callable[[Tensor | None], Tensor]) -> None:
  """Run an effect where the current code runs: make(token) builds its node (after `token`, the previous effect's, or
  None) and returns its token, which is carried out of the active scopes to its sink."""
  sink, lifts = _find_sink()
  t = make(sink.token)
  if lifts is None: return
  for i in lifts: t = _lift(i, t)
  sink.add(t)

_FIRST = Tensor.empty(*TOKEN[0], dtype=TOKEN[1])

def first_token() -> Tensor:
  """The token an effect that comes first in its sink takes: a buffer (a constant would be realized into a new buffer
  by the first realize, and the same call built again would not be found again by `call_node`)."""
  return _FIRST

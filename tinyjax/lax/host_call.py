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
import dataclasses, functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from tinyjax._tg import Tensor, UOp, Ops, GroupOp, DType, param_like, param, host_call, Step, constant_array, filled_buffer, \
  canonical_key, static_shape, default_device
from tinyjax.core import trace_scope, substitute
from tinyjax.custom import closure, new_slot
from tinyjax.call_rule import CallRule

__all__ = ["Type", "type_of", "Body", "trace", "shared", "loop_device", "HostCallRule", "compiled"]

Type = tuple[tuple[int, ...], DType]

def type_of(t: Tensor) -> Type: return static_shape(t), t.dtype

# ---- traced functions ------------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Body:
  """A function of flat Tensors traced once: its outputs as graphs over `params` (PARAMs of unique slots)."""
  params: list[UOp]
  outs: list[UOp]
  def __call__(self, xs: Sequence[Tensor]) -> list[Tensor]:
    return [Tensor(u) for u in substitute(self.outs, {p: x.uop for p, x in zip(self.params, xs, strict=True)})]

  @property
  def has_calls(self) -> bool: return any(u.op is Ops.FUNCTION for u in UOp.sink(*self.outs).toposort(enter_calls=False))

  @functools.cached_property
  def key(self) -> bytes:
    """What the body computes, whatever its PARAMs' slots and the names of its nested calls: equal for two traces of
    the same function and closure (`_tg.canonical_key`)."""
    canon = {p: param(i, static_shape(p), p.dtype, p.device) for i, p in enumerate(self.params)}
    return canonical_key(UOp.sink(*substitute(self.outs, canon)))

def trace(fun: Callable[[list[Tensor]], list[Tensor]], types: list[Type], device, what: str) -> tuple[Body, list[Tensor]]:
  """fun traced on placeholders of `types`; the values it closes over that are traced (or data) become extra inputs,
  as a custom function's do (custom.closure). Returns the Body over (inputs, closed-over values) and those values."""
  own = [param(new_slot(), s, d, device) for s, d in types]
  with trace_scope(what, own):
    outs = [o.uop for o in fun([Tensor(p) for p in own])]
  hidden = _inputs(outs, set(own))
  extra = [param_like(h, new_slot()) for h in hidden]
  return Body(own + extra, substitute(outs, dict(zip(hidden, extra, strict=True)))), [Tensor(h) for h in hidden]

def _inputs(outs: list[UOp], own: set[UOp]) -> list[UOp]:
  """What a body reads besides its own inputs: custom.closure's (traced values, markers, data), and every other
  buffer or PARAM (with the movement ops over it: the whole node a transform substitutes). A placeholder of a
  transform whose trace has ended (a custom_vjp's bwd builds its loop while the vjp substitutes its residuals) is not
  traced any more, but is still substituted later: only as an argument of the
  loop node, not inside its compiled body."""
  hidden = closure(outs, own)
  seen = own | set(hidden)
  def view_of_input(u: UOp) -> bool:   # a placeholder is a view of a BUFFER (Tensor.empty: RESHAPE(BUFFER)), keyed so
    while u.op in GroupOp.Movement: u = u.src[0]
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
    out.append(Body(ps, substitute(body.outs, subs)))
  return out, ks

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

  def call_node(self, xs: list[Tensor]) -> UOp:
    device = loop_device(xs)
    # contiguous outside the FUNCTION: tinygrad moves an argument's movement ops into the FUNCTION's body, where a
    # broadcast fails its kernel-graph check (and the host call takes buffers)
    xs = [(x if x.device == device else x.to(device)).contiguous() for x in xs]
    params = [param_like(x.uop, i) for i, x in enumerate(xs)]
    out_types = self.out_types(xs)
    # constant arguments do not reach the host call (the scheduler folds a buffer of a constant back into the constant,
    # and a host call takes buffers): its executor fills buffers with them
    fixed = {i: v for i, x in enumerate(xs) if (v := constant_array(x)) is not None}
    run, filled = self.executor([type_of(x) for x in xs], out_types), dict[int, UOp]()
    def with_constants(bufs: list[UOp]) -> None:
      outs, ins = bufs[:len(out_types)], iter(bufs[len(out_types):])
      for i, v in fixed.items():
        if i not in filled: filled[i] = filled_buffer(v, device)
      run(outs + [filled[i] if i in fixed else next(ins) for i in range(len(xs))])
    outs = host_call(with_constants, out_types, [p for i, p in enumerate(params) if i not in fixed], device)
    return self.node(outs, [x.uop for x in xs])


_STEPS: dict[tuple, Step] = {}   # compiled bodies by what they compute: a loop traced again (eager code) reuses its step
_MAX_STEPS = 256

def compiled(body: Body, ins: list, outs: list, steps: int = 1) -> Callable[[Any], Step]:
  """The step of `body` for buffers of these types, compiled on first use (when the loop first runs: its inputs are
  concrete then) and shared by loops whose bodies compute the same."""
  def get(device) -> Step:
    key = (body.key, tuple(ins), tuple(outs), device, steps)
    if (step := _STEPS.get(key)) is None:
      if len(_STEPS) >= _MAX_STEPS: _STEPS.pop(next(iter(_STEPS)))
      step = _STEPS[key] = Step(body, ins, outs, device, steps, body.has_calls)
    return step
  return get

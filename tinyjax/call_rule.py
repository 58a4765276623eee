"""The primitive protocol: what every call-like node of tinyjax asks of the rule it carries.

tinyjax has one notion of a primitive beyond tinygrad's ops: a **call**, a tinygrad FUNCTION node
(`FUNCTION(TUPLE(body over PARAMs), *args)`, built by `_tg.custom_call`) whose `CallInfo.aux` is a `CallRule`. The
body says what the call computes (tinygrad's scheduler inlines it, or runs it as a host call when the rule is
`opaque`); the rule says how every transform treats it:

  =================  =========================================  =============================================
  method             called by                                  must return
  =================  =========================================  =============================================
  call_node(xs)      the API that builds the call, and vmap     the FUNCTION (its outputs are its GETTUPLEs)
  call(xs)           the API                                    the outputs as Tensors
  jvp(xs, ts)        jvp (forward mode), on the call's          one tangent per output (ts: one per argument,
                     arguments and their tangents               a constant 0 standing for a symbolic zero)
  vjp(xs, cts)       reverse mode, through grad_fxn             one cotangent per argument (None: zero)
  grad_fxn(...)      tinygrad's own reverse mode                (decodes tinygrad's calling convention, then vjp)
  batched(fl, n)     vmap: arguments batched along axis 0       a CallRule for the batched arguments, whose
                     where fl[i] is 0, unbatched where None     call_node builds the batched call
  content_key()      the step cache of host calls (opaque)      what the call computes, beyond its arguments
  =================  =========================================  =============================================

The rules: `custom.CustomRule` (custom_jvp / custom_vjp), `primitives.PrimitiveRule` (JAX's primitives found in
tinygrad's lowerings), `lax.host_call.HostCallRule` (a call run by a host executor: the loops and branches of
`lax.control_flow`, LAPACK calls in `lax.linalg`). docs/design.md walks through `lax.scan`'s rule.
"""
from __future__ import annotations
from typing import Callable
from tinyjax._tg import Tensor, UOp, Ops, dtypes, custom_call, custom_rule_of, unfilled, const_value, holds_host_call, is_view


class CallRule:
  """The rule of one kind of call. Subclasses set `name` and implement the methods their transforms need; a missing
  one raises NotImplementedError naming the call and the transform, never a wrong result."""
  name: str
  opaque = False   # True: the body is a host call, never inlined into the graph a transform interprets
  # True: its derivative rules build graphs from the call's graph alone (no user Python that may read values), so a
  # derivative of a graph holding it can be memoised by structure (vjp._gradients)
  structural = False
  # the rule whose call this one computes too, on the same arguments, as its first outputs (`shared_forwards`)
  forward_of: CallRule | None = None

  def call_node(self, xs: list[Tensor]) -> UOp:
    raise NotImplementedError(f"tinyjax: the call {self.name} builds no node")

  def call(self, xs: list[Tensor]) -> list[Tensor]:
    fn = self.call_node(xs)
    return [Tensor(fn.gettuple(i)) for i in range(len(fn.src[0].src))]

  def node(self, body: list[UOp], args: list[UOp]) -> UOp:
    """The FUNCTION of this rule: body over PARAMs, called on args. tinygrad moves a view argument's movement ops into
    the callee, where a host call (a loop, LAPACK) would get a view instead of a buffer: such a body gets them
    contiguous."""
    if holds_host_call(body): args = [Tensor(a).contiguous().uop if is_view(a) else a for a in args]
    return custom_call(body, args, self, self.grad_fxn)

  def jvp(self, xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
    raise NotImplementedError(f"tinyjax.jvp: no jvp rule for the call {self.name}")

  def vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]:
    raise NotImplementedError(f"tinyjax.vjp: no vjp rule for the call {self.name}")

  def batched(self, flags: list[int | None], size: int) -> CallRule:
    raise NotImplementedError(f"tinyjax.vmap: no batching rule for the call {self.name}")

  def derivative_args(self, call: UOp) -> tuple[UOp, ...]:
    """The arguments of `call` (this rule's FUNCTION) whose derivatives its rules carry to the outputs: all of them,
    unless the rule ignores some (a custom function's closed-over values)."""
    return call.src[1:]

  def content_key(self) -> tuple | None:
    """What the call computes beyond its arguments' types and constants, for a cache of compiled host calls (None: the
    body says it all)."""
    return None

  def grad_fxn(self, *args: UOp, call: UOp | None = None) -> tuple[UOp | None, ...]:
    """tinygrad's reverse mode of the call: grad_fxn(ct, call) for a FUNCTION with one output, grad_fxn(*cts, call=call)
    for several (tinygrad then passes only the cotangents of the outputs that have one: tinyjax.vjp gives every output
    of a multi-output call one). Integer and bool arguments get no cotangent (JAX's float0)."""
    cts, call = (args, call) if call is not None else (args[:-1], args[-1])
    xs = [Tensor(a) for a in call.src[1:]]
    grads = self.vjp(xs, [Tensor(c) for c in cts])
    return tuple(None if g is None or not dtypes.is_float(x.dtype) else g.uop for x, g in zip(xs, grads, strict=True))


class BatchedCall(CallRule):
  """What `batched` returns when the batched computation is built anew from the arguments (a loop traced again on
  vmapped bodies, a call with broadcast arguments): call_node(xs) -> make(xs), the batched FUNCTION or, where the
  batched computation is not one call (a branch chosen per example), its outputs."""
  def __init__(self, name: str, make: Callable[[list[Tensor]], UOp | list[UOp]]):
    self.name, self.make = name, make
  def call_node(self, xs: list[Tensor]):
    return self.make(xs)


def is_zero(t: Tensor) -> bool:
  """A constant 0: a tangent that stands for JAX's symbolic zero (its term is left out: 0 * inf is nan)."""
  return const_value(unfilled(t.uop)) == 0


def shared_forwards(uops: list[UOp]) -> dict[UOp, UOp]:
  """The outputs of calls in these graphs that another call of them computes too, each mapped to the other's. A rule's
  reverse mode may run its call again with more outputs (a scan saving the carries its reverse pass reads): that call's
  rule names the primal's rule as `forward_of`, and its first outputs are the primal's, on the same arguments. The
  graphs then run that one call, as JAX runs one forward pass."""
  if not uops: return {}
  calls = [u for u in UOp.sink(*uops).toposort(enter_calls=False) if u.op is Ops.FUNCTION and custom_rule_of(u) is not None]
  def args(u: UOp) -> tuple[UOp, ...]: return tuple(a.src[0] if a.op is Ops.CONTIGUOUS else a for a in u.src[1:])
  primal = {(id(custom_rule_of(u)), args(u)): u for u in calls}
  subs: dict[UOp, UOp] = {}
  for u in calls:
    if (of := custom_rule_of(u).forward_of) is not None and (p := primal.get((id(of), args(u)))) is not None:
      subs.update({p.gettuple(i): u.gettuple(i) for i in range(len(p.src[0].src))})
  return subs

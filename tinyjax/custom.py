"""custom_jvp and custom_vjp with JAX's API, honoured by every transform.

Inside a transform, calling a custom function puts one node in the traced graph: a tinygrad FUNCTION whose body is
the primal function over PARAMs and whose CallInfo carries a `CustomRule` (`_tg.custom_call`). Each transform has a
rule for it (vmap: a new custom call whose functions are vmapped; jvp: the user's jvp; reverse mode: tinygrad calls the
FUNCTION's grad_fxn, which runs the user's bwd, or transposes the user's jvp). Outside transforms the function just
runs.

Closure conversion: traced values the body closes over (a vmapped value, an argument of an enclosing custom function,
a traced Tensor among custom_jvp's nondiff_argnums) become extra, hidden arguments of the FUNCTION, so every transform
sees them. As in JAX, the custom rule says nothing about them: differentiating with respect to one is an error.
"""
from __future__ import annotations
import contextlib, dataclasses, functools, inspect, itertools, weakref
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar
from tinyjax._tg import Tensor, UOp, Ops, dtypes, param_like, is_data, reusable, scratch_of, with_fresh_scratch
from tinyjax.call_rule import CallRule
from tinyjax.core import composite, forget_traced, traced_by, is_tracing, trace_scope, trace_state, pending, substitute, TracedMarker, \
  perturbed
from tinyjax.errors import UnexpectedTracerError
from tinyjax.config import config
from tinyjax.dtypes import type_str, short_type, weak_storage_dtype
from tinyjax.transforms.vmap import vmap
from tinyjax.transforms.vjp import vjp
from tinyjax.transforms.jvp import jvp
from tinyjax import pytree as tu

DIFFERENTIATING = ("jvp", "vjp")   # transforms whose traced values carry derivatives (grad, jacfwd... trace with these)

# `built`'s again: (body, rule) of a build once more, its graphs renamed as one
_Again = Callable[[Callable[[list[UOp]], list[UOp]]], tuple[list[UOp], "CustomRule"]]

_slots = itertools.count(1 << 24)   # PARAM slots to trace custom function bodies on: unique, see CustomRule.call_node

def new_slot() -> int:
  """A PARAM slot no other traced body uses (custom functions' and loops' bodies are traced on them)."""
  return next(_slots)

# values a running closure-converted rule stands in for: nested custom calls inside the rule hoist them too
_rule_closure: ContextVar[frozenset[UOp]] = ContextVar("tinyjax_rule_closure", default=frozenset())

def _traced_now() -> set[UOp]:
  """Every value that stands for a traced one at this moment: placeholders of active transforms and of custom function
  bodies being traced, vmapin's, and the closed-over values of running rules."""
  return set().union(*(phs for _, phs in trace_state().active), pending, _rule_closure.get())

def closure(outs: list[UOp], own: set[UOp]) -> list[UOp]:
  """The values a custom function's body (over its placeholders `own`) closes over: placeholders, and, as whole units,
  collective markers (their vmap lowers them) and DETACHes of traced values (they keep a traced value, e.g. a
  custom_jvp nondiff argument, out of differentiation); and realized buffers (a closed-over Tensor's data, a constant
  made from numpy), as tinygrad's @function hoists them: left in the body, tinygrad's memory planner takes them for
  the call's scratch buffers and overwrites them. In the order of the body's graph."""
  srcs, hoisted = _traced_now() - own, dict[UOp, None]()
  def unit(u: UOp) -> bool:
    if not (u.op is Ops.DETACH or (u.op is Ops.CUSTOM and isinstance(u.arg, TracedMarker))): return False
    deps = u.toposort(enter_calls=False)
    return own.isdisjoint(deps) and (u.op is Ops.CUSTOM or not srcs.isdisjoint(deps) or
                                     any(isinstance(d.arg, TracedMarker) and d.op is Ops.CUSTOM for d in deps))
  def gate(u: UOp) -> bool:
    if u in own: return False
    if u in srcs or unit(u) or is_data(u):
      hoisted[u] = None
      return False
    return True
  UOp.sink(*outs).toposort(gate=gate, enter_calls=False)
  return list(hoisted)

def _tracer_error(msg: str) -> UnexpectedTracerError: return UnexpectedTracerError(message=msg)

def _fun_name(f: Callable) -> str:
  """JAX's name for a function in messages: __name__, a partial's function's, else <unknown>."""
  if (name := getattr(f, "__name__", None)) is not None: return name
  return _fun_name(f.func) if isinstance(f, functools.partial) else "<unknown>"


# trace-state entries of the transforms whose custom rules are running (_rule_traced): custom calls the rules make are
# not differentiated by those (JAX applies a rule below the level of the transform that runs it)
_rule_levels: ContextVar[frozenset[tuple]] = ContextVar("tinyjax_rule_levels", default=frozenset())

def _differentiating_level(vals: list[UOp]) -> tuple | None:
  """The innermost active transform that differentiates these values (its trace-state entry), or None. A value traced
  by an inner scope stands for a value of the outer one (a custom function's argument, a nested grad's input): the
  values are followed outward through what each scope's placeholders stand for. A jit traced inside that transform
  (JAX stages it: the function is traced, the rule runs later on its graph) means None, as does a transform whose
  custom rule is running."""
  for entry, seen in _outward(vals):
    name, phs = entry
    if name == "jit": return None
    if name in DIFFERENTIATING and entry not in _rule_levels.get():
      pert = perturbed(seen, set(phs))
      if any(v in pert for v in seen): return entry
  return None

def _differentiated(vals: list[UOp], level: tuple) -> list[bool]:
  """Which of these values the transform `level` (a trace-state entry) differentiates."""
  for entry, seen in _outward(vals):
    if entry is level:
      pert = perturbed(seen, set(entry[1]))
      return [v in pert for v in seen]
  return [True] * len(vals)

def _outward(vals: list[UOp]):
  """Each active trace-state entry, innermost first, with the values as it sees them (followed outward through what
  each scope's placeholders stand for)."""
  s = trace_state()
  entries = list(reversed(s.active))
  for i, entry in enumerate(entries):
    yield entry, vals
    # (not past the outermost: a substitution of the values' whole graphs, per custom call)
    if i + 1 < len(entries) and (subs := {p: s.values[p] for p in entry[1] if p in s.values}): vals = substitute(vals, subs)

def _context_key(vals: list[UOp]) -> tuple:
  """What a structural custom call's graphs depend on beyond its arguments' types: the active transforms, innermost
  first, each with whether its custom rules are running and which of the values it differentiates (which decides
  `_differentiating_level`), and the x64 flag (the defaults of constants)."""
  running, parts = _rule_levels.get(), list[tuple]()
  for entry, seen in _outward(vals):
    name, phs = entry
    if name not in DIFFERENTIATING: parts.append((name,))
    else:
      pert = perturbed(seen, set(phs))
      parts.append((name, entry in running, tuple(v in pert for v in seen)))
  return tuple(parts), config.jax_enable_x64

@contextlib.contextmanager
def _applied_by_innermost():
  """A rule applied by a transform's rewrite (the innermost differentiating scope): the custom calls it makes are not
  differentiated by that transform."""
  level = next((e for e in reversed(trace_state().active) if e[0] in DIFFERENTIATING), None)
  token = _rule_levels.set(_rule_levels.get() | _inner_levels(level)) if level is not None else None
  try: yield
  finally:
    if token is not None: _rule_levels.reset(token)

def _inner_levels(level: tuple) -> frozenset[tuple]:
  """The active trace-state entries from `level` inward."""
  active = trace_state().active
  return frozenset(active[active.index(level):])

def _same(rule: "CustomRule", _graphs: list[UOp]) -> "CustomRule": return rule   # a rule that keeps no graph

def _subs(keys: list[UOp], xs: list[Tensor]) -> dict[UOp, UOp]: return dict(zip(keys, (x.uop for x in xs), strict=True))

def _substituting(keys: list[UOp], outs: list[UOp]) -> Callable[[list[Tensor]], list[Tensor]]:
  """The function of xs that `outs`, traced on `keys`, computes."""
  return lambda xs: [Tensor(u) for u in substitute(outs, _subs(keys, xs))]


@dataclass(eq=False)
class CustomRule(CallRule):
  """A custom function on flat lists of Tensors. fun(xs) -> outs; jvp_fun(xs, ts) -> tangent outs;
  fwd(xs) -> (outs, residuals); bwd(residuals, cts) -> arg cotangents (None: zero). Arguments from position `nuser` on
  are closed-over values (closure conversion): the rules ignore their tangents and give them no cotangent."""
  name: str
  fun: Callable[[list], list]
  jvp_fun: Callable[[list, list], list] | None = None
  fwd: Callable[[list], tuple[list, Any]] | None = None
  bwd: Callable[[Any, list], list] | None = None
  nuser: int | None = None   # None: all arguments are the user's
  user_rules: bool = False   # the rules are user code, which may close over traced values: check what they return
  jvp_pair: Callable[[list, list], tuple[list, list]] | None = None   # the user's jvp rule: (primal outs, tangent outs)
  structural: bool = False   # tinyjax's own function (`structural`): graphs holding its calls may be memoised
  build: tuple | None = None   # a structural call's (function, key among its builds): its uses compute the same graphs
  # the jvp rule gets a constant zero (a symbolic zero: `is_zero`) for an argument its transform does not differentiate,
  # as code that JAX inlines does; a custom_jvp's rule gets zeros it computes with (JAX instantiates them)
  symbolic_zeros: bool = False

  @property
  def kind(self) -> str: return "jvp" if self.jvp_fun is not None else "vjp"

  def derivative_args(self, call: UOp) -> tuple[UOp, ...]: return call.src[1:] if self.nuser is None else call.src[1:1 + self.nuser]

  def call_node(self, xs: list[Tensor]) -> UOp:
    """One custom-call node (a FUNCTION) for these arguments; its outputs are its GETTUPLEs."""
    level = _differentiating_level([x.uop for x in xs]) if self.user_rules else None
    body, rule, args, _, _ = self.built(xs, level)
    return rule.node(body, args)

  def built(self, xs: list[Tensor], level: tuple | None) -> tuple[list[UOp], "CustomRule", list[UOp], list[UOp], _Again]:
    """(body over PARAMs, the node's rule, the node's arguments: xs and the closed-over values, the graphs the rule
    keeps, `again`) of the custom call on xs, where `level` is the transform that differentiates them
    (`_differentiating_level`): the rule runs then. again(rename) is (body, rule) once more, from the graphs traced now
    renamed as one (`_tg.with_fresh_scratch`), for a node on other arguments of the same types."""
    # the body is traced on PARAMs of unique slots in a scope of its own: reading one is a ConcretizationTypeError, and
    # a custom call nested in the body sees them as traced values, which it hoists (PARAMs of the final slots would be
    # the same nodes as the nested body's own)
    tmp = [param_like(x.uop, new_slot()) for x in xs]
    # the PARAMs stand for the arguments: Python control flow reads them where those are concrete (under grad outside jit)
    with trace_scope(f"custom_{self.kind}", tmp, dict(zip(tmp, (x.uop for x in xs), strict=True))):
      traced: list[UOp] = []
      made: Callable[[list[UOp]], CustomRule] = functools.partial(_same, self)
      if level is None: outs = [o.uop for o in self.fun([Tensor(t) for t in tmp])]
      else: outs, traced, made = self._rule_traced(tmp, level, _differentiated([x.uop for x in xs], level)
                                                    if self.symbolic_zeros else [True] * len(xs))
    if self.structural: forget_traced(tmp)   # (tinyjax's own: its graphs are substituted before any use)
    hidden = closure(outs + traced, set(tmp))
    args = [x.uop for x in xs] + hidden
    params = [param_like(a, i) for i, a in enumerate(args)]
    nuser = len(xs) if self.nuser is None else self.nuser
    def make(body: list[UOp], kept: list[UOp]) -> CustomRule:
      rule = made(kept)
      return rule._bound(body, params, hidden, nuser) if hidden or rule.user_rules else rule
    body = substitute(outs, dict(zip(tmp + hidden, params, strict=True)))
    self._check_not_differentiated(args[nuser:], params[nuser:], body)
    def again(rename: Callable[[list[UOp]], list[UOp]]) -> tuple[list[UOp], CustomRule]:
      new = rename(body + outs + traced)
      return new[:len(body)], make(new[:len(body)], new[len(body):])
    return body, make(body, outs + traced), args, traced, again

  def _rule_traced(self, tmp: list[UOp], level: tuple, diff: list[bool]) -> tuple[list[UOp], list[UOp], Callable[[list[UOp]], "CustomRule"]]:
    """A call whose arguments a transform differentiates: as JAX's tracer applies the rule there and never runs the
    function, the rule runs now, once, instead of the function (whose outputs it gives: JAX's primal output is the
    rule's), and is kept as the graphs it traced, which the transforms substitute into. Returns (the primal outputs,
    the graphs the rule keeps, made): made(outputs + graphs) is the rule on those graphs, or on the same renamed
    (`built`'s again). Custom calls made by the rule are differentiated by the transforms outside `level` only (its
    primals are those transforms' values, as in JAX). `diff`: which arguments get a tangent (the others a zero)."""
    ps = [Tensor(t) for t in tmp]
    token = _rule_levels.set(_rule_levels.get() | _inner_levels(level))
    try:
      if self.jvp_pair is not None:
        moved = [dtypes.is_float(t.dtype) and d for t, d in zip(tmp, diff, strict=True)]
        tans = [param_like(t, new_slot()) for t, m in zip(tmp, moved, strict=True) if m]
        it = iter(tans)
        ts = [Tensor(next(it)) if m else Tensor(t).zeros_like(buffer=False) for t, m in zip(tmp, moved, strict=True)]
        with trace_scope(f"custom_{self.kind}", tans):   # tangents: traced values with no concrete value
          p_out, t_out = self.jvp_pair(ps, ts)
        if self.structural: forget_traced(tans)
        outs, touts = [o.uop for o in p_out], [t.uop for t in t_out]
        def made_jvp(graphs: list[UOp]) -> CustomRule:
          outs, touts = graphs[:len(p_out)], graphs[len(p_out):]
          def jvp_fun(xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
            subs = {**_subs(tmp, xs), **_subs(tans, [t for t, m in zip(ts, moved, strict=True) if m])}
            return [Tensor(u) for u in substitute(touts, subs)]
          return dataclasses.replace(self, fun=_substituting(tmp, outs), jvp_fun=jvp_fun, jvp_pair=None)
        return outs, touts, made_jvp
      assert self.fwd is not None
      o, res = self.fwd(ps)
      outs, (r_leaves, r_tree) = [x.uop for x in o], tu.tree_flatten(res)
      pos = [i for i, r in enumerate(r_leaves) if isinstance(r, Tensor)]
      r_uops = [r_leaves[i].uop for i in pos]
      # (the residuals' graphs kept, not their Tensors: the rule lives in caches, and traced Tensors it kept alive
      # were walked by every later eager transform)
      r_static = [None if isinstance(r, Tensor) else r for r in r_leaves]
      def made_vjp(graphs: list[UOp]) -> CustomRule:
        outs = graphs[:len(o)]
        def fwd(xs: list[Tensor]) -> tuple[list[Tensor], Any]:
          done, leaves = substitute(graphs, _subs(tmp, xs)), list(r_static)
          for i, u in zip(pos, done[len(outs):], strict=True): leaves[i] = Tensor(u)
          return [Tensor(u) for u in done[:len(outs)]], tu.tree_unflatten(r_tree, leaves)
        return dataclasses.replace(self, fun=_substituting(tmp, outs), fwd=fwd)
      return outs, r_uops, made_vjp
    finally: _rule_levels.reset(token)

  def _check_not_differentiated(self, vals: list[UOp], params: list[UOp], body: list[UOp]) -> None:
    """JAX raises when a custom function is differentiated with respect to a value it closes over: its rule does not
    cover that value. A closed-over value that only reaches the outputs through zero-derivative ops is fine."""
    if not vals: return
    for transform, phs in reversed(trace_state().active):
      if transform not in DIFFERENTIATING: continue
      pert = perturbed(vals, set(phs))
      seeds = {p for v, p in zip(vals, params, strict=True) if v in pert}
      if seeds and not perturbed(body, seeds).isdisjoint(body):
        v = next(v for v in vals if v in pert)
        raise _tracer_error(
          f"Encountered an unexpected tracer: the custom_{self.kind} function {self.name} closes over a value of type "
          f"{type_str(Tensor(v))} that tinyjax.{transform} differentiates (directly, or through a function among its "
          f"nondiff_argnums). A custom_{self.kind} rule only says how to differentiate with respect to the function's "
          f"arguments, so JAX refuses this too: pass the value as an argument instead.")

  def _bound(self, body: list[UOp], params: list[UOp], hidden: list[UOp], nuser: int) -> "CustomRule":
    """The rule of one custom-call node: its functions take all the node's arguments, `hidden` last. fun inlines the
    traced body; the user's rules still close over `hidden`, which is replaced in what they return by the values passed
    for it (the same values when a transform runs them on this node; vmap passes new ones)."""
    # (the traced values now, weakly: a cached rule holding them kept them traced nodes, and every later eager read
    # walked its graph in `traced_by`)
    n, context = len(params) - len(hidden), weakref.WeakSet(_traced_now())
    def closed(f: Callable, vals: list[Tensor], *a):
      token = _rule_closure.set(_rule_closure.get() | set(hidden))
      try: out = f(*a)
      finally: _rule_closure.reset(token)
      return _replace(out, {h: v.uop for h, v in zip(hidden, vals, strict=True)}, context, (a, vals), self)
    jvp = fwd = bwd = None
    if (ujvp := self.jvp_fun) is not None:
      def jvp(xs, ts): return closed(ujvp, xs[n:], xs[:n], ts[:n])
    if (ufwd := self.fwd) is not None and (ubwd := self.bwd) is not None:
      def fwd(xs):
        outs, res = closed(ufwd, xs[n:], xs[:n])
        return outs, (res, xs[n:])   # the residuals carry the closed-over values to bwd
      def bwd(res, cts):
        r, vals = res
        return list(closed(ubwd, vals, r, cts)) + [None] * len(hidden)
    return dataclasses.replace(self, fun=_substituting(params, body), jvp_fun=jvp, fwd=fwd, bwd=bwd, nuser=nuser, user_rules=False,
                               jvp_pair=None)

  def batched(self, flags: list[int | None], size: int) -> "CustomRule":
    """The rule of this custom function vmapped over arguments with batch dims `flags` (0 or None): what vmap
    puts in the graph instead of inlining, so that the custom derivative survives vmap."""
    fl = tuple(flags)
    def fun(xs): return list(vmap(lambda *a: self.fun(list(a)), in_axes=fl, axis_size=size)(*xs))
    def jvp(xs, ts):
      f = self.jvp_fun
      assert f is not None
      return list(vmap(lambda p, t: f(list(p), list(t)), in_axes=(fl, fl), axis_size=size)(tuple(xs), tuple(ts)))
    def fwd(xs):
      f = self.fwd
      assert f is not None
      outs, res = vmap(lambda *a: f(list(a)), in_axes=fl, axis_size=size)(*xs)
      return list(outs), res
    def bwd(res, cts):
      f = self.bwd
      assert f is not None
      gs = vmap(lambda r, c: f(r, list(c)), axis_size=size)(res, tuple(cts))
      return [None if g is None else g if b is not None else g.sum(0) for g, b in zip(gs, fl, strict=True)]   # unbatched args: sum
    return CustomRule(self.name, fun, jvp if self.jvp_fun else None, fwd if self.fwd else None, bwd if self.bwd else None, self.nuser)

  def jvp(self, xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
    if self.jvp_fun is None: raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
    with _applied_by_innermost(): return self.jvp_fun(xs, ts)

  def vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]:
    with _applied_by_innermost(): return self._vjp(xs, cts)

  def _vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]:
    n = len(xs) if self.nuser is None else self.nuser
    if self.fwd is not None and self.bwd is not None:
      _, res = self.fwd(xs)
      return self.bwd(res, cts)
    # reverse mode of a custom_jvp: transpose its (linear) tangent map, as JAX does
    assert self.jvp_fun is not None
    jvp, rest = self.jvp_fun, [x.zeros_like() for x in xs[n:]]   # closed-over values: no tangent
    _, pullback = vjp(lambda *ts: jvp(xs, list(ts) + rest), *[x.zeros_like() for x in xs[:n]])
    return list(pullback(cts)) + [None] * len(rest)


def _replace(tree, subs: dict[UOp, UOp], context: weakref.WeakSet[UOp], inputs, rule: CustomRule):
  """tree with the Tensor leaves' closed-over values replaced per `subs`. A value that was traced when the node was
  built, is no longer traced and is still in there without coming from the rule's `inputs` (its arguments and the
  node's closed-over values), was closed over by the rule but not by the function: it is not an argument of the node, so
  it cannot be replaced, and its transform has ended. Say so rather than compute on an unallocated buffer."""
  leaves, tree_def = tu.tree_flatten(tree)
  pos = [i for i, l in enumerate(leaves) if isinstance(l, Tensor)]
  if not pos: return tree
  uops = substitute([leaves[i].uop for i in pos], subs)
  # (bodies of nested custom calls too: one the rule makes after the transform ended could not hoist such a value)
  if (stale := set(context) - _traced_now()) and not stale.isdisjoint(out := UOp.sink(*uops).toposort()):
    given = UOp.sink(*[t.uop for t in tu.tree_leaves(inputs) if isinstance(t, Tensor)]).toposort(enter_calls=False)
    if any(u in out and u not in given for u in stale):
      raise NotImplementedError(f"tinyjax.custom_{rule.kind}: a rule of {rule.name} closes over a traced value that the "
                                f"function {rule.name} itself does not use, and runs after the transform that traced it has "
                                "ended (e.g. differentiated outside a vmap); pass the value as an argument")
  for i, u in zip(pos, uops, strict=True): leaves[i] = Tensor(u)
  return tu.tree_unflatten(tree_def, leaves)


_CF = TypeVar("_CF", bound="_CustomFunction")

def structural(f: _CF) -> _CF:
  """Marks one of tinyjax's own custom functions whose function and rules build graphs from their arguments' types
  alone (no value read, no closed-over traced value; constants they make are kept): a call is built once per argument
  types and transforms (the rule traced once, one rule object), and a graph holding its calls is memoised by structure
  (an eager gradient through it is then a replay, as through any op). A user's function may read values: never."""
  f.structural = True
  return f


# ---- the user-facing classes ----------------------------------------------------------------------------------------

def _resolve_kwargs(fun: Callable, sig: inspect.Signature | None, args: tuple, kwargs: dict, kind: str, name: str) -> tuple:
  """Keyword arguments and defaults become positional arguments, as JAX's custom_jvp/custom_vjp do (a partial's
  signature is opaque: no keyword arguments)."""
  try:
    if sig is None:
      if kwargs: raise TypeError(f"The following keyword arguments could not be resolved to positions: {', '.join(kwargs)}")
      return args
    ba = sig.bind(*args, **kwargs)
    ba.apply_defaults()
    if passed := [k for k in ba.kwargs if k in kwargs]:
      raise TypeError(f"The following keyword arguments could not be resolved to positions: {', '.join(passed)}")
  except TypeError as e:
    raise TypeError(f"The input arguments to the custom_{kind}-decorated function {name} could not be resolved to "
                    f"positional-only arguments. Binding failed with the error:\n{e}") from e
  return ba.args

def _signature(fun: Callable) -> inspect.Signature | None:
  if isinstance(fun, functools.partial): return None
  try: return inspect.signature(fun)
  except (TypeError, ValueError): return None


class _FlatCall:
  """One call's arguments split into Tensor leaves (the custom call's inputs) and the rest (nondiff_argnums and
  non-Tensor leaves, kept as they are); rebuild(xs) puts Tensors back in place."""
  def __init__(self, nondiff_argnums: Sequence[int], args: tuple):
    self.args = args
    self.nondiff = {a % len(args) for a in nondiff_argnums}
    self.nd = [args[i] for i in sorted(self.nondiff)]
    self.dyn = [a for i, a in enumerate(args) if i not in self.nondiff]
    self.leaves, self.tree = tu.tree_flatten(tuple(self.dyn))
    self.pos = [i for i, l in enumerate(self.leaves) if isinstance(l, Tensor)]
    # a weakly typed Tensor (Tensor(2.0), t + 0.25) enters the call stored at its width and is weak again inside it
    self.weak = [self.leaves[i].dtype if self.leaves[i].dtype in dtypes.weaks else None for i in self.pos]
    self.xs = [_stored(self.leaves[i], w) for i, w in zip(self.pos, self.weak, strict=True)]

  def rebuild(self, xs: Sequence[Tensor]) -> tuple:
    """The full argument tuple with the Tensor leaves replaced by xs."""
    full = list(self.leaves)
    for i, x, w in zip(self.pos, xs, self.weak, strict=True): full[i] = x if w is None else x.cast(w)
    dyn = iter(tu.tree_unflatten(self.tree, full))
    nd = iter(self.nd)
    return tuple(next(nd) if i in self.nondiff else next(dyn) for i in range(len(self.args)))

  def diff_args(self, full: tuple) -> tuple: return tuple(a for i, a in enumerate(full) if i not in self.nondiff)

  def release(self) -> None:
    """Keep the Tensor arguments' types, not the Tensors, once the call is made: its rules live as long as graphs
    holding the call (in caches), and traced arguments they kept alive were walked by every later eager transform.
    (`rebuild` puts new Tensors at their places; the cotangents' checks read their shapes and dtypes.)"""
    self.leaves = [_ArgType(tuple(l.shape), l.dtype) if isinstance(l, Tensor) else l for l in self.leaves]
    self.args, self.dyn, self.xs = (None,) * len(self.args), [None] * len(self.dyn), []

@dataclass(frozen=True)
class _ArgType:
  shape: tuple
  dtype: Any


def _as_leaf(x) -> Tensor:
  return x if isinstance(x, Tensor) else Tensor(x)

def _stored(t: Tensor, weak) -> Tensor:
  """A weakly typed value as the call stores it (at its width); anything else as it is."""
  return t if weak is None else t.cast(weak_storage_dtype(weak))

def _outputs(box: dict, tree, leaves: list) -> list[Tensor]:
  """The function's (or a rule's primal) output leaves as the call stores them. The first to come sets the output's
  structure and which leaves are weak: they are stored at their width and weak again outside the call, as in JAX."""
  outs = [_as_leaf(o) for o in leaves]
  if "tree" not in box:
    # their types, not the Tensors: the box lives as long as the call's rule (in caches of graphs holding the call),
    # and traced Tensors kept there would be scanned by every eager transform (realize_pending) long after
    box["tree"], box["types"] = tree, [(tuple(o.shape), o.dtype) for o in outs]
    box["weak"] = [o.dtype if o.dtype in dtypes.weaks else None for o in outs]
  return [_stored(o, w) for o, w in zip(outs, box["weak"], strict=True)]

def _matches(t: Tensor, shape: tuple, dtype) -> bool:
  """Same shape, and same dtype unless one is weak (a Python number or Tensor(2.0) takes the other's)."""
  return tuple(t.shape) == tuple(shape) and (t.dtype == dtype or t.dtype in dtypes.weaks or dtype in dtypes.weaks)

def _ty_tree(tree, types: list[str]) -> str:
  """JAX's rendering of an output's types in its container: {a: float32[], b: (float32[3],)}."""
  return str(tu.tree_unflatten(tree, types)).replace("'", "")

def _keystr(path) -> str: return "".join(f"[{k!r}]" for k in path)


class _CustomFunction:
  """What custom_jvp and custom_vjp share: outside transforms the function just runs; inside one, a call becomes one
  custom-call node built from the subclass's CustomRule."""
  kind = ""
  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
    functools.update_wrapper(self, fun)
    self.fun, self._sig = fun, _signature(fun)
    nums = set(nondiff_argnums)
    if nondiff_argnames:
      if self._sig is None: raise ValueError(f"nondiff_argnames needs a function with a signature, got {fun!r}")
      names = list(self._sig.parameters)
      nums |= {names.index(a) for a in nondiff_argnames}
    self.nondiff_argnums = tuple(sorted(nums))
    self.structural = False   # `structural`: tinyjax's own function, its calls built once per argument types
    self.symbolic_zeros = False   # (CustomRule.symbolic_zeros)
    # key -> (box, body, rule, hidden, None or a use's own (body, rule): `built`'s again with fresh host calls)
    self._built: dict[tuple, tuple[dict, list[UOp], CustomRule, list[UOp], Callable[[], tuple[list[UOp], CustomRule]] | None]] = {}

  def _built_key(self, call: _FlatCall) -> tuple | None:
    """The key of a structural function's call among those built: its arguments' types, structure and static values,
    and the transforms' view of them (`_context_key`). None where a static value is unhashable or a Tensor, or a
    running rule closes over values."""
    static = [l for i, l in enumerate(call.leaves) if i not in set(call.pos)] + list(call.nd)
    if _rule_closure.get() or any(isinstance(l, Tensor) for l in tu.tree_leaves(static)): return None
    types = tuple((tuple(call.leaves[i].shape), call.leaves[i].dtype, call.leaves[i].device) for i in call.pos)
    key = (call.tree, types, tuple(static), _context_key([x.uop for x in call.xs]))
    try: hash(key)
    except TypeError: return None
    return key

  def _defined(self) -> bool: raise NotImplementedError
  def _rule(self, name: str, call: _FlatCall, box: dict, fun: Callable) -> CustomRule: raise NotImplementedError
  def _nondiff(self, name: str, call: _FlatCall) -> None: pass

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if not self._defined():
      raise AttributeError(f"No {self.kind.upper()} defined for custom_{self.kind} function {name} using def{self.kind}.")
    args = _resolve_kwargs(self.fun, self._sig, args, kwargs, self.kind, name)
    if not is_tracing(): return self.fun(*args)
    call = _FlatCall(self.nondiff_argnums, args)
    self._nondiff(name, call)
    key = self._built_key(call) if self.structural else None
    if (hit := self._built.get(key) if key is not None else None) is None:
      box = dict[str, Any]()   # the function's output: box["tree"] and box["types"], once traced
      def fun(xs: list[Tensor]) -> list[Tensor]:
        o_leaves, tree = tu.tree_flatten(self.fun(*call.rebuild(xs)))
        return _outputs(box, tree, o_leaves)
      rule = self._rule(name, call, box, fun)
      if key is not None: rule.build = (self, key)   # (every rule made from it keeps it: dataclasses.replace)
      level = _differentiating_level([x.uop for x in call.xs])
      body, rule, node_args, graphs, again = rule.built(call.xs, level)
      hidden = node_args[len(call.xs):]
      # (closed-over constants the function made are kept with its graphs, traced ones differ between calls; the host
      # calls and the buffers the build made are given anew to each later use: `again`)
      if key is not None and all(is_data(h) for h in hidden) and (scratch := scratch_of(body + graphs)) is not None:
        if len(self._built) >= 64: self._built.clear()
        fresh: Callable[[], tuple[list[UOp], CustomRule]] | None = None
        if not reusable(body + graphs): fresh = functools.partial(again, functools.partial(with_fresh_scratch, scratch=scratch))
        self._built[key] = (box, body, rule, hidden, fresh)
    else:
      box, body, rule, hidden, fresh = hit
      if fresh is not None: body, rule = fresh()
    fn = rule.node(body, [x.uop for x in call.xs] + hidden)
    outs = [Tensor(fn.gettuple(i)) for i in range(len(body))]
    call.release()
    return tu.tree_unflatten(box["tree"], [o if w is None else o.cast(w) for o, w in zip(outs, box["weak"], strict=True)])

  def _check_primal(self, rule: str, name: str, out, box: dict) -> list[Tensor]:
    """The primal output a rule returns has the function's output structure, shapes and dtypes, where the function was
    traced first (JAX checks this then only: under a differentiating transform the rule runs instead of the function,
    and its output is the primal output). `rule`: "JVP rule f_jvp" or "VJP fwd rule f_fwd"."""
    p_leaves, p_tree = tu.tree_flatten(out)
    ps = [_as_leaf(p) for p in p_leaves]
    if "tree" not in box: return _outputs(box, p_tree, ps)
    k = self.kind
    def msg(what: str, of: str, end: str) -> str:
      head = (f"(equal in value to the output of the custom_jvp-decorated function {name}, and in particular {what}), but "
              "instead the JVP rule output's first element had " if k == "jvp" else
              f"(equal to the output of the custom_vjp-decorated function {name}) and the second element represents "
              "residuals (i.e. values stored from the forward pass for use on the backward pass), but instead the fwd rule "
              "output's first element had ")
      return (f"Custom {rule} for function {name} must produce a pair (list or tuple of length two) where the first element "
              f"represents the primal output {head}{of}:\n    {_ty_tree(p_tree, [type_str(p) for p in ps])}\nwhile the custom_{k}-decorated "
              f"function {name} had output {of}:\n    {_ty_tree(box['tree'], [short_type(d, sh) for sh, d in box['types']])}{end}")
    if p_tree != box["tree"]: raise TypeError(msg("of the same container/pytree structure", "container/pytree structure", "."))
    if not all(_matches(p, shape, dtype) for p, (shape, dtype) in zip(ps, box["types"], strict=True)):
      raise TypeError(msg("with leaves of the same shape/dtype", "shapes/dtypes of", ""))
    return [_stored(p, w) for p, w in zip(ps, box["weak"], strict=True)]


class custom_jvp(_CustomFunction):
  """jax.custom_jvp: f = custom_jvp(f); @f.defjvp def f_jvp(primals, tangents): return primal_out, tangent_out."""
  kind = "jvp"
  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
    super().__init__(fun, nondiff_argnums, nondiff_argnames)
    self.jvp: Callable | None = None

  def defjvp(self, jvp: Callable) -> Callable:
    self.jvp = jvp
    return jvp

  def defjvps(self, *jvps: Callable | None) -> None:
    """One function per argument: jvp_i(tangent_i, primal_out, *primals) -> its contribution to the tangent out (None:
    the argument does not contribute)."""
    if self.nondiff_argnums: raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")
    def jvp(primals, tangents):
      out = self.fun(*primals)
      parts = [j(t, out, *primals) for j, t in zip(jvps, tangents, strict=False) if j is not None]
      zero = tu.tree_map(lambda o: _as_leaf(o).zeros_like(), out)
      return out, functools.reduce(lambda a, b: tu.tree_map(lambda x, y: x + y, a, b), parts, zero)
    self.defjvp(jvp)

  def _defined(self) -> bool: return self.jvp is not None

  def _nondiff(self, name: str, call: _FlatCall) -> None:
    # JAX stops the gradient of nondiff arguments: a traced Tensor among them is a closed-over constant of the rule
    call.nd = tu.tree_map(lambda l: l.detach() if isinstance(l, Tensor) and traced_by(l) is not None else l, call.nd)

  def _rule(self, name: str, call: _FlatCall, box: dict, fun: Callable) -> CustomRule:
    jvp = self.jvp
    assert jvp is not None
    jname = _fun_name(jvp)
    def jvp_pair(ps, ts):
      # non-Tensor arguments (Python numbers) are constants: their tangent is zero, as in JAX (made here: a list made
      # once would keep the call's Tensors alive in the rule, which a structural function's cache keeps)
      full_t = [type(l)(0) if isinstance(l, (int, float)) and not isinstance(l, bool) else l for l in call.leaves]
      for i, t in zip(call.pos, ts, strict=True): full_t[i] = t
      pair = jvp(*call.nd, call.diff_args(call.rebuild(ps)), tu.tree_unflatten(call.tree, full_t))
      if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise TypeError(f"Custom JVP rule {jname} for function {name} must produce a pair (list or tuple of length two) "
                        f"representing primal and tangent outputs, but got {pair}.")
      t_leaves, t_tree = tu.tree_flatten(pair[1])
      if (p_tree := tu.tree_structure(pair[0])) != t_tree:
        raise TypeError(f"Custom JVP rule {jname} for function {name} must produce primal and tangent outputs with equal "
                        f"container (pytree) structures, but got {p_tree} and {t_tree} respectively.")
      p_out = self._check_primal(f"JVP rule {jname}", name, pair[0], box)
      return p_out, _check_tangents(p_out, [_as_leaf(t) for t in t_leaves])
    return CustomRule(name, fun, jvp_fun=lambda ps, ts: jvp_pair(ps, ts)[1], user_rules=True, jvp_pair=jvp_pair,
                      structural=self.structural, symbolic_zeros=self.symbolic_zeros)


def _check_tangents(ps: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
  """A float output's tangent has its shape and dtype (JAX's TypeError otherwise); an integer or bool output has none
  (JAX's float0): whatever the rule returns for it is replaced by zeros."""
  bad = [(p, t) for p, t in zip(ps, ts, strict=True) if dtypes.is_float(p.dtype) and not _matches(t, p.shape, p.dtype)]
  if len(bad) == 1 and len(ps) == 1:
    (p, t), = bad
    raise TypeError("Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes. "
                    f"Expected {type_str(p)} (tangent type of {type_str(p)}) but got {type_str(t)}.")
  if bad:
    raise TypeError("Custom JVP rule must produce primal and tangent outputs with corresponding shapes and dtypes, but got:\n"
                    + "\n".join(f"  primal {type_str(p)} with tangent {type_str(t)}, expecting tangent {type_str(p)}" for p, t in bad))
  return [t.cast(p.dtype) if dtypes.is_float(p.dtype) and t.dtype != p.dtype else t if dtypes.is_float(p.dtype) else p.zeros_like()
          for p, t in zip(ps, ts, strict=True)]


class custom_vjp(_CustomFunction):
  """jax.custom_vjp: f = custom_vjp(f); f.defvjp(fwd, bwd), fwd(*args) -> (out, res), bwd(res, g) -> arg cotangents."""
  kind = "vjp"
  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (), nondiff_argnames: Sequence[str] = ()):
    super().__init__(fun, nondiff_argnums, nondiff_argnames)
    self.fwd: Callable | None = None
    self.bwd: Callable | None = None

  def defvjp(self, fwd: Callable, bwd: Callable) -> None:
    self.fwd, self.bwd = fwd, bwd

  def _defined(self) -> bool: return self.fwd is not None and self.bwd is not None

  def _nondiff(self, name: str, call: _FlatCall) -> None:
    if any(isinstance(l, Tensor) and traced_by(l) is not None for l in tu.tree_leaves(call.nd)):
      raise _tracer_error(
        "Found a tinyjax tracer (a Tensor that depends on a traced value) passed as an argument to a custom_vjp function "
        "in a position indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed as non-differentiable "
        "arguments to custom_vjp functions; instead, nondiff_argnums should only be used for arguments that can't be or "
        "contain tracers, e.g. function-valued arguments. In particular, array-valued arguments should typically not be "
        "indicated as nondiff_argnums.")

  def _rule(self, name: str, call: _FlatCall, box: dict, fun: Callable) -> CustomRule:
    fwd, bwd = self.fwd, self.bwd
    assert fwd is not None and bwd is not None
    fname = _fun_name(fwd)
    def fwd_flat(xs):
      pair = fwd(*call.rebuild(xs))
      if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise TypeError(f"Custom VJP fwd rule {fname} for function {name} must produce a pair (list or tuple of length two) "
                        f"where the first element represents the primal output (equal to those of the custom_vjp-decorated "
                        f"function {name}) and the second element represents residuals (i.e. values stored from the forward "
                        f"pass for use on the backward pass), but instead of a pair the fwd rule {fname} produced {pair}.")
      return self._check_primal(f"VJP fwd rule {fname}", name, pair[0], box), pair[1]
    def bwd_flat(res, cts):
      g = bwd(*call.nd, res, tu.tree_unflatten(box["tree"], cts))
      return _bwd_cotangents(g, call)
    return CustomRule(name, fun, fwd=fwd_flat, bwd=bwd_flat, user_rules=True, structural=self.structural)


def _bwd_cotangents(g, call: _FlatCall) -> list[Tensor | None]:
  """JAX's checks of what bwd returns, and its cotangents, one per Tensor argument (None: zero). None may stand for a
  whole argument (or any subtree of it), and a single array for a subtree; a cotangent of another float dtype is cast."""
  if isinstance(g, list) and len(g) == len(call.dyn): g = tuple(g)
  zero = object()
  dummy = tu.tree_unflatten(call.tree, [object()] * len(call.leaves))
  flat: list = []
  def add(x, d):
    k = len(tu.tree_leaves(d))
    if x is None and d is not None: flat.extend([zero] * k)
    elif x is not None: flat.extend([x] * k)
  try:
    if not isinstance(g, tuple): raise ValueError
    tu.optree.tree_map(add, g, dummy, is_leaf=lambda x: x is None, namespace=tu.NAMESPACE)  # type: ignore[arg-type]
  except ValueError:
    raise TypeError("Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args "
                    "tuple of the primal function, and in particular must produce a tuple of length equal to the number of "
                    f"arguments to the primal function, but got bwd output structure {tu.tree_structure(g)} for primal input "
                    f"structure {call.tree}.") from None
  paths = tu.optree.tree_paths(dummy, namespace=tu.NAMESPACE)
  out: list[Tensor | None] = []
  for i in call.pos:
    x, ct = call.leaves[i], flat[i]
    if ct is zero or not dtypes.is_float(x.dtype):   # integer arguments have no cotangent (JAX's float0)
      out.append(None)
      continue
    ct = _as_leaf(ct)
    if tuple(ct.shape) != tuple(x.shape):
      why = (["the dtypes do not match"] if ct.dtype != x.dtype and ct.dtype not in dtypes.weaks else []) + ["the shapes do not match"]
      raise ValueError("Custom VJP bwd rule must produce an output with the same type as the args tuple of the primal "
                       f"function, but at output{_keystr(paths[i])} the bwd rule produced an output of type {type_str(ct)} "
                       f"corresponding to an input of type {type_str(x)}, so {', and '.join(why)}")
    out.append(ct if ct.dtype == x.dtype else ct.cast(x.dtype))
  return out


def _traced_composite(fn: Callable, tree, static: list, name: str) -> _CustomFunction:
  """A composite under a trace (`core.composite`): fn on its Tensor leaves (the static ones baked in) as a structural
  custom_jvp differentiated by its own jvp, so that a trace builds one call and its derivative is built once per
  argument types."""
  def flat(*ts):
    it = iter(ts)
    a, k = tu.tree_unflatten(tree, [next(it) if x is composite.ARG else x for x in static])
    return fn(*a, **k)
  flat.__name__ = flat.__qualname__ = name
  cf = structural(custom_jvp(flat))
  cf.symbolic_zeros = True   # (JAX inlines such code: an argument that is not differentiated has no tangent)
  cf.defjvp(lambda primals, tangents: jvp(flat, primals, tangents))
  return cf

composite.traced_function = staticmethod(_traced_composite)

"""Forward mode: tinyjax.jvp and tinyjax.linearize, with one JVP rule per tinygrad op.

A tangent is a UOp with its primal node's shape, or None: a symbolic zero (JAX's `Zero`). Rules get the primal node
`u` (its sources are the primal inputs) and the sources' tangents; a node whose sources all have zero tangents is
never visited, so inputs that do not influence an output cost nothing.
"""
from __future__ import annotations
import math
from typing import Callable
from tinyjax._tg import dtype_name, Tensor, UOp, Ops, GroupOp, dtypes, placeholder, custom_rule_of, gather, rop, broadcast_to, GraphMemo
from tinyjax.core import at_top_level, fill_like, with_buffers, transform_entry, enclosing_inputs, trace_scope, \
  interpret, table_rule, operands, as_tensor, trace_flat, placeholder_subs, substitute, \
  substitute_with_aux, jax_conventions, primal_graph, CUSTOM_CALL, GATHER, ZERO_DERIVATIVE, PASSTHROUGH
from tinyjax import pytree as tu
from tinyjax.transforms.batching import Collective, COLLECTIVE_RULES

LN2 = math.log(2)

def _fit(t: UOp | None, u: UOp) -> UOp | None:
  """A tangent for node u: broadcast to u's shape (ALU sources broadcast implicitly) and in u's dtype."""
  if t is None: return None
  if t.shape != u.shape: t = broadcast_to(t, u.shape)
  return t.cast(u.dtype) if t.dtype != u.dtype and u.dtype not in dtypes.weaks else t

def _add(*terms):
  ts = [t for t in terms if t is not None]
  if not ts: return None
  out = ts[0]
  for t in ts[1:]: out = out + t
  return out

def _scale(t, s): return None if t is None else t * s

def _balanced(x, y):
  """d max(x, y) / dx as JAX defines it: 1 where x wins, 1/2 at ties, 0 where y wins."""
  return (x > y).where(1.0, x.eq(y).where(0.5, 0.0)).cast(x.dtype)

def _reduce_max(u, a, t):
  mask = a.eq(u).cast(t.dtype)   # u broadcasts right-aligned against a: REDUCE removes leading axes
  k = u.arg[1]
  return rop(mask * t, Ops.ADD, tuple(range(k))) / rop(mask, Ops.ADD, tuple(range(k)))

def _reduce(u, t):
  # REDUCE MUL never gets here: jax_conventions turns float products into trees of multiplications first
  if u.arg[0] is Ops.ADD: return u.replace(src=(t[0],))
  if u.arg[0] is Ops.MAX: return _reduce_max(u, u.src[0], t[0])
  raise NotImplementedError(f"tinyjax.jvp: no jvp rule for a {u.arg[0].name} reduction")

def _stack(u, ts):
  return u.replace(src=tuple(s.const_like(0) if t is None else _fit(t, s) for s, t in zip(u.src, ts, strict=True)))

def _collective(u, ts):
  # a collective marker: its rule in batching.COLLECTIVE_RULES (integer values, axis_index, carry no tangent)
  if ts[0] is None or not dtypes.is_float(u.dtype): return None
  if (rule := COLLECTIVE_RULES[u.arg.kind].jvp) is None: raise NotImplementedError(f"tinyjax.jvp: no jvp rule for the collective {u.arg.kind}")
  return rule(u, ts[0])

def _zero(u, ts): return None
def _same_op(u, ts): return u.replace(src=(ts[0],) + u.src[1:])   # linear ops: apply the op to the tangent

# rule(u, tangents) with a, b, c = u.src (the primals); each returns u's tangent or None (zero). The ops are those
# tinygrad 0.14's Tensor methods emit: -x, a - b and a / b are written with MUL, ADD and RECIPROCAL (no NEG/SUB/FDIV).
JVP_RULES: dict[Ops | str, Callable] = {
  Ops.ADD: lambda u, t: _add(*t),
  Ops.MUL: lambda u, t: _add(_scale(t[0], u.src[1]), _scale(t[1], u.src[0])),
  Ops.RECIPROCAL: lambda u, t: -t[0] * u * u,
  Ops.SQRT: lambda u, t: t[0] / (u * 2),
  Ops.EXP2: lambda u, t: t[0] * u * LN2,
  Ops.LOG2: lambda u, t: t[0] / (u.src[0] * LN2),
  Ops.SIN: lambda u, t: t[0] * (math.pi / 2 - u.src[0]).sin(),
  Ops.MAX: lambda u, t: _add(_scale(t[0], _balanced(u.src[0], u.src[1])), _scale(t[1], _balanced(u.src[1], u.src[0]))),
  Ops.POW: lambda u, t: _add(
    _scale(t[0], u.src[1].eq(0).where(0, u.src[1] * u.src[0].pow(u.src[1] - 1))),
    _scale(t[1], u.src[0].eq(0).where(0, u * u.src[0].log2() * LN2))),
  Ops.WHERE: lambda u, t: None if t[1] is None and t[2] is None else u.src[0].where(
    u.const_like(0) if t[1] is None else t[1], u.const_like(0) if t[2] is None else t[2]),
  Ops.CAST: lambda u, t: t[0].cast(u.dtype) if dtypes.is_float(u.dtype) else None,
  Ops.REDUCE: _reduce,
  Ops.STACK: _stack,
  Ops.CUSTOM: _collective,
  **{op: _zero for op in ZERO_DERIVATIVE},   # DETACH is stop_gradient
  **{op: _same_op for op in GroupOp.Movement | PASSTHROUGH},
  # call-like nodes: custom_jvp/custom_vjp calls run the user's rule (one tangent per output); the gather is linear
  CUSTOM_CALL: lambda u, t: _custom_call(u, t),
  GATHER: lambda u, t: None if t[0] is None else gather(Tensor(t[0]), Tensor(operands(u)[1])).uop,
  Ops.GETTUPLE: lambda u, t: t[0][u.arg],
}
jvp_rule_for = table_rule(JVP_RULES, "jvp")

def _custom_call(u: UOp, ts: list) -> list[UOp]:
  rule = custom_rule_of(u)
  xs = [Tensor(a) for a in u.src[1:]]
  return [t.uop for t in rule.jvp(xs, [fill_like(x, 0) if t is None else Tensor(t) for x, t in zip(xs, ts[1:], strict=True)])]

def jvp_rule(u: UOp, tangents: list) -> UOp | list | None:
  rule = jvp_rule_for(u)
  if u.op is Ops.FUNCTION: return rule(u, tangents)   # a list: one tangent per output, not fitted to the node
  if not dtypes.is_float(u.dtype) and u.op is not Ops.CUSTOM: return None   # integer/bool values have no tangent
  if u.op is Ops.CUSTOM and not isinstance(u.arg, Collective): raise NotImplementedError(f"tinyjax.jvp: no jvp rule for {u.arg}")
  if u.op in (Ops.GETTUPLE, Ops.AFTER): return _fit(rule(u, tangents), u)   # operands that are not u's sources
  return _fit(rule(u, [None if t is None else _fit(t, s) for t, s in zip(tangents, u.src, strict=True)]), u)


# ---- API -----------------------------------------------------------------------------------------------------------

def _check_pair(primals, tangents):
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; "
                    f"found {type(primals).__name__} and {type(tangents).__name__}.")
  p_leaves, p_tree = tu.tree_flatten(primals)   # as given: a tuple of primals with a list of tangents is an error
  t_leaves, t_tree = tu.tree_flatten(tangents)
  if p_tree != t_tree:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree structure; primals have tree "
                    f"structure {p_tree} whereas tangents have tree structure {t_tree}.")
  p_leaves = [as_tensor(p) for p in p_leaves]
  t_leaves = [as_tensor(t, like=p) for p, t in zip(p_leaves, t_leaves, strict=True)]
  for p, t in zip(p_leaves, t_leaves, strict=True):
    if tuple(p.shape) != tuple(t.shape):
      raise ValueError(f"jvp called with different primal and tangent shapes;Got primal shape {tuple(p.shape)} and "
                       f"tangent shape as {tuple(t.shape)}")
    if dtypes.is_float(p.dtype) and p.dtype != t.dtype:
      raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case of "
                      f"int/bool primal dtype the tangent dtype must be float0.Got primal dtype {dtype_name(p.dtype)} and so "
                      f"expected tangent dtype {dtype_name(p.dtype)}, but got tangent dtype {dtype_name(t.dtype)} instead.")
  return p_leaves, t_leaves, p_tree


def _compute_tangents(uops: list[UOp]) -> list[UOp]:
  """The tangents of outputs (a tuple) for inputs (a tuple) with tangents (a tuple); zeros where none flows."""
  outs, ins, tans = (u.src for u in uops)
  got = interpret(list(outs), dict(zip(ins, tans, strict=True)), jvp_rule)
  return [o.const_like(0) if t is None else t for o, t in zip(outs, got, strict=True)]

# memoised by the graphs' structure (an eager loop differentiates the same graph every call); not where a user's custom
# rule runs, which may branch on the primals' values (GraphMemo)
_tangent_memo = GraphMemo(_compute_tangents)

def _tangents(outs: list[UOp], env: dict[UOp, UOp], as_call: bool = False) -> list[UOp]:
  return _tangent_memo([UOp.maketuple(*outs), UOp.maketuple(*env), UOp.maketuple(*env.values())], as_call=as_call)

def _jvp_flat(fun, p_leaves, t_leaves, p_tree, has_aux, at_once: bool = False):
  """`at_once`: the results are computed now (eager values), and a memoised tangent graph can be one call of it."""
  phs, outs, out_tree, aux = trace_flat(fun, "jvp", p_leaves, p_tree, has_aux)
  env = {ph.uop: t.uop for ph, p, t in zip(phs, p_leaves, t_leaves, strict=True) if ph is not p}
  traced = jax_conventions([o.uop for o in outs])
  # custom rules run here, on the placeholders: they stand for the primals (Python control flow in a rule)
  with trace_scope("jvp", env, {ph.uop: p.uop for ph, p in zip(phs, p_leaves, strict=True) if ph is not p}):
    tans = _tangents(traced, env, at_once)
  subs = placeholder_subs(phs, p_leaves)
  if at_once: subs = with_buffers(subs)
  n = len(outs)
  done, aux = substitute_with_aux(primal_graph([o.uop for o in outs], traced) + tans, aux, subs)
  return done[:n], done[n:], out_tree, aux


@transform_entry
def jvp(fun: Callable, primals=None, tangents=None, has_aux: bool = False):
  """jax.jvp: (primals_out, tangents_out) of fun at primals along tangents. `jvp(fun)` alone is the curried function
  (primals, tangents) -> (primals_out, tangents_out), e.g. for vmap(jvp(f), in_axes=(None, 0))."""
  if primals is None and tangents is None:
    return lambda primals, tangents: jvp(fun, primals, tangents, has_aux=has_aux)
  p_leaves, t_leaves, p_tree = _check_pair(primals, tangents)
  outs, tans, out_tree, aux = _jvp_flat(fun, p_leaves, t_leaves, p_tree, has_aux, at_top_level())
  res = (tu.tree_unflatten(out_tree, outs), tu.tree_unflatten(out_tree, tans))
  return res + (aux,) if has_aux else res


@transform_entry
def linearize(fun: Callable, *primals, has_aux: bool = False):
  """jax.linearize: (primals_out, f_jvp[, aux]) where f_jvp(*tangents) evaluates the JVP at primals (traced once).
  f_jvp is a tree_util.Partial over its residuals: the primals and the enclosing values fun closes over."""
  p_leaves, p_tree = tu.tree_flatten(primals)
  p_leaves = [as_tensor(p) for p in p_leaves]
  t_phs = [placeholder(tuple(p.shape), p.dtype, p.device) for p in p_leaves]
  outs, tans, out_tree, aux = _jvp_flat(lambda *a: fun(*a), p_leaves, t_phs, p_tree, has_aux)
  keys = list(dict.fromkeys(p.uop for p in p_leaves))
  outer = enclosing_inputs() - set(keys)
  keys += [u for u in UOp.sink(*[t.uop for t in tans]).toposort() if u in outer] if outer else []

  @transform_entry
  def f_jvp(res, *tangents):
    t_leaves, t_tree = tu.tree_flatten(tangents)
    if t_tree != p_tree:
      raise TypeError(f"linearized function called on tangent values inconsistent with the original primal values: "
                      f"expected tree structure {p_tree}, got {t_tree}")
    t_leaves = [as_tensor(t) for t in t_leaves]
    for p, t in zip(p_leaves, t_leaves, strict=True):
      if tuple(p.shape) != tuple(t.shape) or p.dtype != t.dtype:
        raise ValueError(f"linearized function called on tangent values inconsistent with the original primal values: "
                         f"got tangent {dtype_name(t.dtype)}{list(t.shape)} for primal {dtype_name(p.dtype)}{list(p.shape)}")
    subs = {**dict(zip(keys, [r.uop for r in res], strict=True)), **{ph.uop: t.uop for ph, t in zip(t_phs, t_leaves, strict=True)}}
    return tu.tree_unflatten(out_tree, [Tensor(u) for u in substitute([t.uop for t in tans], subs)])
  res = (tu.tree_unflatten(out_tree, outs), tu.Partial(f_jvp, [Tensor(u) for u in keys]))
  return res + (aux,) if has_aux else res

"""Forward mode: tinyjax.jvp and tinyjax.linearize, with one JVP rule per tinygrad op.

A tangent is a UOp with its primal node's shape, or None: a symbolic zero (JAX's `Zero`). Rules get the primal node
`u` (its sources are the primal inputs) and the sources' tangents; a node whose sources all have zero tangents is
never visited, so inputs that do not influence an output cost nothing.
"""
from __future__ import annotations
import math
from typing import Callable
from tinyjax._tg import dtype_name, Tensor, UOp, Ops, GroupOp, dtypes, placeholder, trace_scope, custom_rule_of, gather, gather_args
from tinyjax.core import interpret, table_rule
from tinyjax import tree_util as tu
from tinyjax.transforms.batching import Collective
from tinyjax.transforms.vmap import as_tensor

LN2 = math.log(2)

def _fit(t: UOp | None, u: UOp) -> UOp | None:
  """A tangent for node u: broadcast to u's shape (ALU sources broadcast implicitly) and in u's dtype."""
  if t is None: return None
  if t.shape != u.shape: t = t._broadcast_to(u.shape)
  return t.cast(u.dtype) if t.dtype != u.dtype and u.dtype not in dtypes.weaks else t

def _add(*ts):
  ts = [t for t in ts if t is not None]
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
  return (mask * t)._rop(Ops.ADD, tuple(range(k))) / mask._rop(Ops.ADD, tuple(range(k)))

def _reduce_mul(u, a, t):
  # d prod(a) / d a_j = prod_{i != j} a_i: u / a_j where a_j != 0, else the product of the others (zero-safe)
  axes = tuple(range(u.arg[1]))
  is_zero = a.eq(0)
  safe = is_zero.where(1, a)
  zeros = is_zero.cast(dtypes.int32)._rop(Ops.ADD, axes)
  d = is_zero.where(zeros.eq(1).where(safe._rop(Ops.MUL, axes), 0), u / safe)
  return (d * t)._rop(Ops.ADD, axes)

def _stack(u, ts):
  return u.replace(src=tuple(s.const_like(0) if t is None else _fit(t, s) for s, t in zip(u.src, ts)))

def _collective(u, ts):
  if u.arg.kind in ("psum", "pmean"): return u.replace(src=(ts[0],))   # linear
  raise NotImplementedError(f"tinyjax.jvp: no jvp rule for the collective {u.arg.kind}")

def _zero(u, ts): return None
def _same_op(u, ts): return u.replace(src=(ts[0],) + u.src[1:])   # linear ops: apply the op to the tangent

# rule(u, tangents) with a, b, c = u.src (the primals); each returns u's tangent or None (zero)
JVP_RULES: dict[Ops, Callable] = {
  Ops.ADD: lambda u, t: _add(*t),
  Ops.SUB: lambda u, t: _add(t[0], _scale(t[1], -1)),
  Ops.MUL: lambda u, t: _add(_scale(t[0], u.src[1]), _scale(t[1], u.src[0])),
  Ops.FDIV: lambda u, t: _add(_scale(t[0], u.src[1].reciprocal()), _scale(t[1], -u / u.src[1])),
  Ops.NEG: lambda u, t: -t[0],
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
  Ops.MULACC: lambda u, t: _add(_scale(t[0], u.src[1]), _scale(t[1], u.src[0]), t[2]),
  Ops.CAST: lambda u, t: t[0].cast(u.dtype) if dtypes.is_float(u.dtype) else None,
  Ops.REDUCE: lambda u, t: {Ops.ADD: lambda: u.replace(src=(t[0],)), Ops.MAX: lambda: _reduce_max(u, u.src[0], t[0]),
                            Ops.MUL: lambda: _reduce_mul(u, u.src[0], t[0])}[u.arg[0]](),
  Ops.STACK: lambda u, t: _stack(u, t),
  Ops.CONTIGUOUS_BACKWARD: lambda u, t: t[0],
  Ops.DETACH: _zero,    # stop_gradient
  Ops.CUSTOM: _collective,
  **{op: _zero for op in (Ops.TRUNC, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.XOR, Ops.OR, Ops.AND, Ops.SHL, Ops.SHR,
                          Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD, Ops.THREEFRY, Ops.BITCAST)},
  **{op: _same_op for op in GroupOp.Movement | {Ops.CONTIGUOUS, Ops.COPY}},
}
jvp_rule_for = table_rule(JVP_RULES, "jvp")

def _custom_call(u: UOp, ts: list) -> list[UOp]:
  rule = custom_rule_of(u)
  if rule.jvp is None: raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
  xs = [Tensor(a) for a in u.src[1:]]
  return [t.uop for t in rule.jvp(xs, [x.zeros_like() if t is None else Tensor(t) for x, t in zip(xs, ts[1:])])]

def _gather(u: UOp, ts: list) -> UOp | None:
  if gather_args(u) is None: raise NotImplementedError("tinyjax.jvp: no jvp rule for an opaque tinygrad CALL")
  return None if ts[2] is None else gather(Tensor(ts[2]), Tensor(u.src[3])).uop   # linear in src

def jvp_rule(u: UOp, tangents: list) -> UOp | list | None:
  if u.op is Ops.FUNCTION: return _custom_call(u, tangents)   # tinyjax custom_jvp / custom_vjp calls
  if u.op is Ops.CALL: return _gather(u, tangents)
  if u.op is Ops.AFTER and gather_args(u.src[1]) is not None: return tangents[1]
  if u.op is Ops.GETTUPLE: return _fit(tangents[0][u.arg], u) if dtypes.is_float(u.dtype) else None
  if not dtypes.is_float(u.dtype) and u.op is not Ops.CUSTOM: return None   # integer/bool values have no tangent
  if u.op is Ops.CUSTOM and not isinstance(u.arg, Collective): raise NotImplementedError(f"tinyjax.jvp: no jvp rule for {u.arg}")
  return _fit(jvp_rule_for(u.op)(u, [None if t is None else _fit(t, s) for t, s in zip(tangents, u.src)]), u)


# ---- API -----------------------------------------------------------------------------------------------------------

def _check_pair(primals, tangents):
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; "
                    f"found {type(primals).__name__} and {type(tangents).__name__}.")
  p_leaves, p_tree = tu.tree_flatten(tuple(primals))
  t_leaves, t_tree = tu.tree_flatten(tuple(tangents))
  if p_tree != t_tree:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree structure; primals have tree "
                    f"structure {p_tree} whereas tangents have tree structure {t_tree}.")
  p_leaves = [as_tensor(p) for p in p_leaves]
  t_leaves = [as_tensor(t, like=p) for p, t in zip(p_leaves, t_leaves)]
  for p, t in zip(p_leaves, t_leaves):
    if tuple(p.shape) != tuple(t.shape):
      raise ValueError(f"jvp called with different primal and tangent shapes;Got primal shape {tuple(p.shape)} and "
                       f"tangent shape as {tuple(t.shape)}")
    if dtypes.is_float(p.dtype) and p.dtype != t.dtype:
      raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case of "
                      f"int/bool primal dtype the tangent dtype must be float0.Got primal dtype {dtype_name(p.dtype)} and so "
                      f"expected tangent dtype {dtype_name(p.dtype)}, but got tangent dtype {dtype_name(t.dtype)} instead.")
  return p_leaves, t_leaves, p_tree


def split_aux(out, has_aux: bool, name: str):
  if not has_aux: return out, None
  if not (isinstance(out, (tuple, list)) and len(out) == 2):
    raise TypeError(f"expected function with aux output to return a two-element tuple, but got type {type(out)} with "
                    f"value {out!r}")
  return out[0], out[1]


def trace_flat(fun: Callable, transform: str, p_leaves: list[Tensor], p_tree, has_aux: bool = False):
  """Run fun on placeholders for the float leaves. Returns (placeholders, output leaves, output tree, aux)."""
  phs = [placeholder(tuple(p.shape), p.dtype, p.device) if dtypes.is_float(p.dtype) else p for p in p_leaves]
  with trace_scope(transform, [ph.uop for ph, p in zip(phs, p_leaves) if ph is not p]):
    out = fun(*tu.tree_unflatten(p_tree, phs))
  out, aux = split_aux(out, has_aux, transform)
  out_leaves, out_tree = tu.tree_flatten(out)
  for leaf in out_leaves:
    if not isinstance(leaf, (Tensor, int, float, bool)) and not hasattr(leaf, "__array__"):
      raise TypeError(f"{transform}: output {leaf!r} of type {type(leaf)} is not a valid Tensor type")
  return phs, [as_tensor(o) for o in out_leaves], out_tree, aux


def substitute(uops: list[UOp], subs: dict[UOp, UOp]) -> list[UOp]:
  """Replace placeholders by the real inputs, in one pass over all the graphs."""
  return list(UOp.sink(*uops).substitute(subs).src) if uops and subs else uops


def _is_sign_of(s: UOp, x: UOp) -> bool:
  """s is tinygrad's sign(x): WHERE(x != 0, WHERE(x < 0, -1, 1), 0)."""
  return s.op is Ops.WHERE and s.src[0].op is Ops.CMPNE and s.src[0].src[0] is x and s.src[1].op is Ops.WHERE \
    and s.src[1].src[0].op is Ops.CMPLT and s.src[1].src[0].src[0] is x

def _is_literal(u: UOp) -> bool:
  """A constant written in the program (a CONST, possibly broadcast or cast): no data, no inputs."""
  return all(n.op in (Ops.CONST, Ops.RESHAPE, Ops.EXPAND, Ops.STACK, Ops.CAST) for n in u.toposort())

def _product_tree(u: UOp) -> UOp:
  """prod over the leading k axes as a tree of pairwise products: the same value, and derivatives of every order that
  are exact at zeros (tinygrad's zero-safe prod gradient is a `where` whose own derivative vanishes at two zeros)."""
  x, k = u.src[0], u.arg[1]
  rest = tuple(x.shape[k:])
  y = Tensor(x).reshape((-1,) + rest)
  while y.shape[0] > 1:
    h = y.shape[0] // 2
    z = y[:h] * y[h:2 * h]
    y = z.cat(y[2 * h:]) if y.shape[0] % 2 else z
  return y.reshape(rest).uop

def jax_conventions(uops: list[UOp]) -> list[UOp]:
  """Rewrite tinygrad lowerings whose derivative at non-smooth points differs from JAX's, before differentiating.
  - abs(x) is x * sign(x) in tinygrad (derivative 0 at 0); JAX's abs has derivative 1 at 0: (x < 0).where(-x, x).
  - prod: a tree of pairwise products (exact higher derivatives at zeros, as JAX's).
  - clip(x, lo, hi) is (x < lo).where(lo, x) then (hi < r).where(hi, r); JAX's clip is min(max(x, lo), hi), whose
    derivative is 1/2 at the bounds: rewritten to MAX. (relu, (0 < x).where(x, 0), has the constant on the other side
    and keeps JAX's relu derivative, 0 at 0.)"""
  subs = {}
  for u in UOp.sink(*uops).toposort():
    if u.op is Ops.MUL:
      for x, s in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
        if _is_sign_of(s, x): subs[u] = (x < 0).where(-x, x); break
    if u.op is Ops.REDUCE and u.arg[0] is Ops.MUL and dtypes.is_float(u.dtype): subs[u] = _product_tree(u)
    if u.op is Ops.WHERE and u.src[0].op is Ops.CMPLT and dtypes.is_float(u.dtype):
      (a, b), t, f = u.src[0].src, u.src[1], u.src[2]
      if t is b and f is a and _is_literal(b) and not _is_literal(a): subs[u] = a.maximum(b)         # clip's lower bound
      elif t is a and f is b and _is_literal(a) and not _is_literal(b): subs[u] = b.minimum(a)       # clip's upper bound
  return substitute(uops, subs)

def substitute_with_aux(uops: list[UOp], aux, subs: dict[UOp, UOp]) -> tuple[list[Tensor], object]:
  """`substitute` for the outputs and the Tensor leaves of a has_aux auxiliary pytree, in one pass."""
  aux_leaves, aux_tree = tu.tree_flatten(aux)
  done = substitute(uops + [a.uop for a in aux_leaves if isinstance(a, Tensor)], subs)
  it = iter(done[len(uops):])
  aux = tu.tree_unflatten(aux_tree, [Tensor(next(it)) if isinstance(a, Tensor) else a for a in aux_leaves])
  return [Tensor(u) for u in done[:len(uops)]], aux

def _jvp_flat(fun, p_leaves, t_leaves, p_tree, has_aux):
  phs, outs, out_tree, aux = trace_flat(fun, "jvp", p_leaves, p_tree, has_aux)
  env = {ph.uop: t.uop for ph, p, t in zip(phs, p_leaves, t_leaves) if ph is not p}
  tans = interpret(jax_conventions([o.uop for o in outs]), env, jvp_rule)
  tans = [o.uop.const_like(0) if t is None else t for o, t in zip(outs, tans)]   # materialise zeros only at the end
  subs = {ph.uop: p.uop for ph, p in zip(phs, p_leaves) if ph is not p}
  n = len(outs)
  done, aux = substitute_with_aux([o.uop for o in outs] + tans, aux, subs)
  return done[:n], done[n:], out_tree, aux


def jvp(fun: Callable, primals=None, tangents=None, has_aux: bool = False):
  """jax.jvp: (primals_out, tangents_out) of fun at primals along tangents. `jvp(fun)` alone is the curried function
  (primals, tangents) -> (primals_out, tangents_out), e.g. for vmap(jvp(f), in_axes=(None, 0))."""
  if primals is None and tangents is None:
    return lambda primals, tangents: jvp(fun, primals, tangents, has_aux=has_aux)
  p_leaves, t_leaves, p_tree = _check_pair(primals, tangents)
  outs, tans, out_tree, aux = _jvp_flat(fun, p_leaves, t_leaves, p_tree, has_aux)
  res = (tu.tree_unflatten(out_tree, outs), tu.tree_unflatten(out_tree, tans))
  return res + (aux,) if has_aux else res


def linearize(fun: Callable, *primals):
  """jax.linearize: (primals_out, f_jvp) where f_jvp(*tangents) evaluates the JVP at primals (traced once)."""
  p_leaves, p_tree = tu.tree_flatten(primals)
  p_leaves = [as_tensor(p) for p in p_leaves]
  t_phs = [placeholder(tuple(p.shape), p.dtype, p.device) for p in p_leaves]
  outs, tans, out_tree, _ = _jvp_flat(lambda *a: fun(*a), p_leaves, t_phs, p_tree, False)

  def f_jvp(*tangents):
    t_leaves, t_tree = tu.tree_flatten(tangents)
    if t_tree != p_tree:
      raise TypeError(f"linearized function called on tangent values inconsistent with the original primal values: "
                      f"expected tree structure {p_tree}, got {t_tree}")
    t_leaves = [as_tensor(t) for t in t_leaves]
    for p, t in zip(p_leaves, t_leaves):
      if tuple(p.shape) != tuple(t.shape) or p.dtype != t.dtype:
        raise ValueError(f"linearized function called on tangent values inconsistent with the original primal values: "
                         f"got tangent {dtype_name(t.dtype)}{list(t.shape)} for primal {dtype_name(p.dtype)}{list(p.shape)}")
    res = substitute([t.uop for t in tans], {ph.uop: t.uop for ph, t in zip(t_phs, t_leaves)})
    return tu.tree_unflatten(out_tree, [Tensor(u) for u in res])
  return tu.tree_unflatten(out_tree, outs), f_jvp

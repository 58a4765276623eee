"""lax's branches: cond, switch, select.

A cond or switch is one node: a call whose rule is a `Switch` holding every branch traced once (`Body`s over the same
inputs); its host call runs the chosen branch's compiled kernels only. Under vmap a batched index runs every branch
and selects, as JAX does.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from tinyjax._tg import Tensor, UOp, dtypes, read_scalar, static_shape, dtype_name, makes_rows, making_rows, switch_row
from tinyjax.core import as_tensor
from tinyjax.call_rule import BatchedCall, is_zero
from tinyjax.lax.host_call import Type, Body, HostCallRule, trace, shared, loop_device, compiled, type_of, first_token
from tinyjax.lax.control_flow.common import _tstr, _is_float, _flat_weak, as_weak, _jvp, _vjp, _vmap
from tinyjax import pytree as tu

__all__ = ["cond", "switch", "select"]

# ---- switch ------------------------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Switch(HostCallRule):
  """branches[index](operands, consts) -> outs; arguments index (int32 scalar), operands, consts."""
  branches: list[Body]
  types: list[Type]   # the outputs'
  name = "switch"

  def out_types(self, xs): return list(self.types)

  def executor(self, ins, outs):
    steps = [compiled(b, [(s, d, None) for s, d in ins[1:]], [(s, d, None) for s, d in outs]) for b in self.branches]
    n = len(outs)
    def run(bufs: list[UOp]) -> None:
      if making_rows(): return switch_row(bufs[n], [(s(bufs[0].device), bufs[n + 1:] + bufs[:n]) for s in steps])   # in a loop's step
      i = min(max(int(read_scalar(bufs[n])), 0), len(steps) - 1)   # clamped, as JAX
      steps[i](bufs[0].device).run(bufs[n + 1:] + bufs[:n])
    return makes_rows(run) if dtypes.is_int(ins[0][1]) and not dtypes.is_unsigned(ins[0][1]) and not self.effectful else run

  def jvp(self, xs, ts):
    ops, tops = xs[1:], ts[1:]
    fo = [i for i, (v, t) in enumerate(zip(ops, tops, strict=True)) if _is_float(v) and not is_zero(t)]
    fy = [i for i, (_, d) in enumerate(self.types) if dtypes.is_float(d)]
    def branch(b: Body):
      def f(a):
        p, d = a[:len(ops)], a[len(ops):]
        tans: list[Tensor | None] = [None] * len(ops)
        for i, t in zip(fo, d, strict=True): tans[i] = t
        outs, touts = _jvp(b, p, tans)
        return outs + [touts[i] for i in fy]
      return f
    outs = _switch(xs[0], [branch(b) for b in self.branches], ops + [tops[i] for i in fo])
    out_t = [Tensor.zeros(*s, dtype=d) for s, d in self.types]
    for i, t in zip(fy, outs[len(self.types):], strict=True): out_t[i] = t
    return out_t

  def vjp(self, xs, cts):
    ops = xs[1:]
    fy = [i for i, (_, d) in enumerate(self.types) if dtypes.is_float(d)]
    fo = [i for i, v in enumerate(ops) if _is_float(v)]
    def branch(b: Body):
      def f(a):
        p, c = a[:len(ops)], a[len(ops):]
        ct: list[Tensor | None] = [None] * len(self.types)
        for i, t in zip(fy, c, strict=True): ct[i] = t
        g = _vjp(b, p, ct)
        return [g[i] for i in fo]
      return f
    outs = _switch(xs[0], [branch(b) for b in self.branches], ops + [cts[i] for i in fy])
    grads: list[Tensor | None] = [None] * len(xs)
    for i, g in zip(fo, outs, strict=True): grads[1 + i] = g
    return grads

  def batched(self, flags, size):
    in_axes = [None if f is None else 0 for f in flags[1:]]
    def make(xs: list[Tensor]) -> list[UOp]:
      # (an effectful switch's token was emitted by its call, or by the branches: in its place, a constant)
      tok = [first_token().uop] if self.effectful else []
      if flags[0] is None: return [t.uop for t in _switch(xs[0], [_vmap(b, in_axes, size) for b in self.branches], xs[1:])] + tok
      outs = [_vmap(b, in_axes, size)(xs[1:]) for b in self.branches]
      # a batched index: every branch runs, each example takes its own branch's outputs (JAX's select_n)
      idx = xs[0].clip(0, len(self.branches) - 1)
      res = []
      for j in range(len(self.types)):
        v = outs[0][j]
        for b in range(1, len(outs)):
          v = idx.reshape(idx.shape + (1,) * (v.ndim - 1)).eq(b).where(outs[b][j], v)
        res.append(v.uop)
      return res + tok
    return BatchedCall(self.name, make)

def _switch(index: Tensor, branches: list[Callable], ops: list[Tensor]) -> list[Tensor]:
  device = loop_device([index] + ops)
  bodies, ks = shared([trace(b, [type_of(o) for o in ops], device, "switch") for b in branches], len(ops), device)
  return Switch(bodies, [(static_shape(u), u.dtype) for u in bodies[0].outs]).call([index.cast(dtypes.int32)] + ops + ks)


# ---- the API -----------------------------------------------------------------------------------------------------------

_no_operand = object()

def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_no_operand):
  """jax.lax.cond: `true_fun(*operands) if pred else false_fun(*operands)`. Only the chosen branch runs (a batched
  predicate under vmap runs both and selects, as in JAX)."""
  if operand is not _no_operand:
    if operands: raise TypeError("if `operand` is passed, `operands` should not be passed")
    operands = (operand,)
  p = as_tensor(pred)
  if p.shape != (): raise TypeError(f"Pred must be a scalar, got {pred} of shape {tuple(p.shape)}.")
  if not (p.dtype == dtypes.bool or dtypes.is_int(p.dtype) or dtypes.is_float(p.dtype)):
    raise TypeError(f"Pred type must be either boolean or number, got {p.dtype}.")
  return _branches("cond", p.ne(0).cast(dtypes.int32), [false_fun, true_fun], operands)

def switch(index, branches: Sequence[Callable], *operands, operand=_no_operand):
  """jax.lax.switch: `branches[clamp(index, 0, len(branches) - 1)](*operands)`; only that branch runs."""
  if operand is not _no_operand: operands = (operand,)
  if not isinstance(branches, (list, tuple)) or not branches: raise ValueError("Empty branch sequence")
  i = as_tensor(index)
  if i.shape != (): raise TypeError(f"Branch index must be scalar, got {index} of shape {tuple(i.shape)}.")
  if not dtypes.is_int(i.dtype): raise TypeError(f"Index type must be an integer, got {index} as {dtype_name(i.dtype)}")
  if len(branches) == 1: return branches[0](*operands)
  return _branches("switch", i, list(branches), operands)

def _branches(api: str, index: Tensor, funs: list[Callable], operands: tuple):
  leaves, tree, weak = _flat_weak(operands)
  trees: list[Any] = []
  out_weak: list[list] = []
  def wrap(f):
    def g(a: list[Tensor]) -> list[Tensor]:
      out, t, w = _flat_weak(f(*tu.tree_unflatten(tree, as_weak(a, weak))))
      trees.append((t, [type_of(v) for v in out]))
      out_weak.append(w)
      return out
    return g
  device = loop_device([index] + leaves)
  traced = [trace(wrap(f), [type_of(v) for v in leaves], device, api) for f in funs]
  _check_branches(api, funs, trees)
  bodies, ks = shared(traced, len(leaves), device)
  outs = Switch(bodies, trees[0][1]).call([index] + leaves + ks)
  # an output is weak if every branch returns it weak (JAX joins the branches' types)
  return tu.tree_unflatten(trees[0][0], as_weak(outs, [ws[0] if all(w is not None for w in ws) else None for ws in zip(*out_weak, strict=True)]))

def _check_branches(api: str, funs: list[Callable], trees: list) -> None:
  names = ("true_fun", "false_fun") if api == "cond" else tuple(f"branches[{i}]" for i in range(len(funs)))
  order = [1, 0] if api == "cond" else list(range(len(funs)))   # cond's funs are (false, true); JAX names true first
  a = order[0]
  for b in order[1:]:
    (ta, ya), (tb, yb) = trees[a], trees[b]
    where = (f"{names[0]} is {_fun_desc(funs[a])}\n{names[1]} is {_fun_desc(funs[b])}\n\n" if api == "cond" else "")
    if ta != tb:
      raise TypeError(f"{api} branch outputs must have the same pytree structure, but they differ:\n\n{where}"
                      f"{names[0]} output is {ta} but {names[order.index(b)]} output is {tb}.")
    for x, y in zip(ya, yb, strict=True):
      if x != y:
        why = "the dtypes do not match" if x[0] == y[0] else "the shapes do not match"
        raise TypeError(f"{api} branches must have equal output types but they differ.\n\n{where}The output of "
                        f"{names[0]} has type {_tstr(x)} but the corresponding output of {names[order.index(b)]} has type "
                        f"{_tstr(y)}, so {why}.")

def _fun_desc(f: Callable) -> str:
  code = getattr(f, "__code__", None)
  return f"{getattr(f, '__name__', repr(f))} at {code.co_filename}:{code.co_firstlineno}" if code else repr(f)

def select(pred, on_true, on_false) -> Tensor:
  """jax.lax.select: elementwise on_true where pred else on_false (same shapes; pred bool, scalar or of that shape)."""
  p, t, f = as_tensor(pred), as_tensor(on_true), as_tensor(on_false)
  if p.dtype != dtypes.bool: raise TypeError(f"select `which` must be boolean or integer type; got {dtype_name(p.dtype)}")
  if t.shape != f.shape or t.dtype != f.dtype:
    raise TypeError(f"select cases must have the same shapes and dtypes, got [{_tstr(type_of(t))}, {_tstr(type_of(f))}].")
  if p.shape not in ((), t.shape):
    raise TypeError(f"select `which` must be scalar or have the same shape as cases, got `which` shape {tuple(p.shape)} "
                    f"but case shape {tuple(t.shape)}.")
  return p.where(t, f)

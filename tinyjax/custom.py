"""custom_jvp and custom_vjp with JAX's API, honoured by every transform.

Inside a transform, calling a custom function puts one node in the traced graph: a tinygrad FUNCTION whose body is
the primal function over PARAMs and whose CallInfo carries a `CustomRule` (`_tg.custom_call`). Each transform has a
rule for it (vmap: a new custom call whose functions are vmapped; jvp: the user's jvp; reverse mode: tinygrad calls the
FUNCTION's grad_fxn, which runs the user's bwd, or transposes the user's jvp). Outside transforms the function just
runs.
"""
from __future__ import annotations
import functools, inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from tinyjax._tg import Tensor, UOp, dtypes, custom_call, param_like
from tinyjax.core import traced_by, is_tracing
from tinyjax import tree_util as tu


@dataclass(eq=False)
class CustomRule:
  """A custom function on flat lists of Tensors. fun(xs) -> outs; jvp(xs, ts) -> tangent outs;
  fwd(xs) -> (outs, residuals); bwd(residuals, cts) -> arg cotangents (None: zero)."""
  name: str
  fun: Callable[[list], list]
  jvp: Callable[[list, list], list] | None = None
  fwd: Callable[[list], tuple[list, Any]] | None = None
  bwd: Callable[[Any, list], list] | None = None

  def call_node(self, xs: list[Tensor]) -> UOp:
    """One custom-call node (a FUNCTION) for these arguments; its outputs are its GETTUPLEs."""
    outs = self.fun([Tensor(param_like(x.uop, i)) for i, x in enumerate(xs)])
    # the body must depend on its arguments only: a traced value it closes over (or a Tensor among nondiff_argnums)
    # would be invisible to the transforms (its FUNCTION looks independent of them) and silently wrong
    if any(traced_by(o) is not None for o in outs):
      raise NotImplementedError(f"tinyjax.{self.name}: a custom_jvp/custom_vjp function that closes over a traced value "
                                "(or gets a traced Tensor through nondiff_argnums) is not supported; pass it as a "
                                "differentiable argument")
    return custom_call([o.uop for o in outs], [x.uop for x in xs], self, self.grad_fxn)

  def call(self, xs: list[Tensor]) -> list[Tensor]:
    fn = self.call_node(xs)
    return [Tensor(fn.gettuple(i)) for i in range(len(fn.src[0].src))]

  def batched(self, flags: list[int | None], size: int) -> "CustomRule":
    """The rule of this custom function vmapped over arguments with batch dims `flags` (0 or None): what vmap
    puts in the graph instead of inlining, so that the custom derivative survives vmap."""
    from tinyjax.transforms.vmap import vmap
    fl = tuple(flags)
    def fun(xs): return list(vmap(lambda *a: self.fun(list(a)), in_axes=fl, axis_size=size)(*xs))
    def jvp(xs, ts):
      f = self.jvp
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
    return CustomRule(self.name, fun, jvp if self.jvp else None, fwd if self.fwd else None, bwd if self.bwd else None)

  # tinygrad's compute_gradient calls grad_fxn(ct, call) for one output, grad_fxn(*cts, call=call) for several
  def grad_fxn(self, *args: UOp, call: UOp | None = None) -> tuple[UOp | None, ...]:
    cts, call = (args, call) if call is not None else (args[:-1], args[-1])
    xs = [Tensor(a) for a in call.src[1:]]
    ct = [Tensor(c) for c in cts]
    if self.fwd is not None and self.bwd is not None:
      _, res = self.fwd(xs)
      grads = self.bwd(res, ct)
    else:   # reverse mode of a custom_jvp: transpose its (linear) tangent map, as JAX does
      from tinyjax.transforms.vjp import vjp
      assert self.jvp is not None
      jvp = self.jvp
      _, pullback = vjp(lambda *ts: jvp(xs, list(ts)), *[x.zeros_like() for x in xs])
      grads = pullback(ct)
    return tuple(None if g is None or not dtypes.is_float(x.dtype) else g.uop for x, g in zip(xs, grads, strict=True))


def _resolve_kwargs(fun: Callable, args: tuple, kwargs: dict) -> tuple:
  """Keyword arguments and defaults become positional arguments, as JAX's custom_jvp/custom_vjp do."""
  if not kwargs and not any(p.default is not inspect.Parameter.empty for p in _params(fun)): return args
  ba = inspect.signature(fun).bind(*args, **kwargs)
  ba.apply_defaults()
  if ba.kwargs: raise TypeError("keyword-only arguments are not supported by custom_jvp/custom_vjp functions")
  return ba.args

def _params(fun: Callable):
  try: return inspect.signature(fun).parameters.values()
  except (TypeError, ValueError): return ()


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
    self.xs = [self.leaves[i] for i in self.pos]

  def rebuild(self, xs: Sequence[Tensor]) -> tuple:
    """The full argument tuple with the Tensor leaves replaced by xs."""
    full = list(self.leaves)
    for i, x in zip(self.pos, xs, strict=True): full[i] = x
    dyn = iter(tu.tree_unflatten(self.tree, full))
    return tuple(a if i in self.nondiff else next(dyn) for i, a in enumerate(self.args))

  def diff_args(self, full: tuple) -> tuple: return tuple(a for i, a in enumerate(full) if i not in self.nondiff)


def _out_flat(out, box: dict) -> list[Tensor]:
  o_leaves, o_tree = tu.tree_flatten(out)
  box["tree"] = o_tree
  return [o if isinstance(o, Tensor) else Tensor(o) for o in o_leaves]


class _CustomFunction:
  """What custom_jvp and custom_vjp share: outside transforms the function just runs; inside one, a call becomes one
  custom-call node built from the subclass's CustomRule."""
  kind = ""
  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)

  def _defined(self) -> bool: raise NotImplementedError
  def _rule(self, name: str, call: _FlatCall, box: dict) -> CustomRule: raise NotImplementedError

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", f"custom_{self.kind}")
    if not self._defined():
      raise AttributeError(f"No {self.kind.upper()} defined for custom_{self.kind} function {name} using def{self.kind}.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    if not is_tracing(): return self.fun(*args)
    call, box = _FlatCall(self.nondiff_argnums, args), dict[str, Any]()   # box["tree"]: the output tree, once traced
    outs = self._rule(name, call, box).call(call.xs)
    return tu.tree_unflatten(box["tree"], outs)


class custom_jvp(_CustomFunction):
  """jax.custom_jvp: f = custom_jvp(f); @f.defjvp def f_jvp(primals, tangents): return primal_out, tangent_out."""
  kind = "jvp"
  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    super().__init__(fun, nondiff_argnums)
    self.jvp: Callable | None = None

  def defjvp(self, jvp: Callable) -> Callable:
    self.jvp = jvp
    return jvp

  def defjvps(self, *jvps: Callable | None) -> None:
    """One function per argument: jvp_i(tangent_i, primal_out, *primals) -> its contribution to the tangent out."""
    def jvp(primals, tangents):
      out = self.fun(*primals)
      parts = [j(t, out, *primals) for j, t in zip(jvps, tangents, strict=False) if j is not None]
      return out, functools.reduce(lambda a, b: tu.tree_map(lambda x, y: x + y, a, b), parts)
    self.defjvp(jvp)

  def _defined(self) -> bool: return self.jvp is not None

  def _rule(self, name: str, call: _FlatCall, box: dict) -> CustomRule:
    # non-Tensor arguments (Python numbers) are constants: their tangent is zero, as in JAX
    zeros = [type(l)(0) if isinstance(l, (int, float)) and not isinstance(l, bool) else l for l in call.leaves]
    jvp = self.jvp
    assert jvp is not None
    def jvp_flat(ps, ts):
      full_t = list(zeros)
      for i, t in zip(call.pos, ts, strict=True): full_t[i] = t
      _, t_out = jvp(*call.nd, call.diff_args(call.rebuild(ps)), tu.tree_unflatten(call.tree, full_t))
      return [o if isinstance(o, Tensor) else Tensor(o) for o in tu.tree_leaves(t_out)]
    return CustomRule(name, lambda xs: _out_flat(self.fun(*call.rebuild(xs)), box), jvp=jvp_flat)


class custom_vjp(_CustomFunction):
  """jax.custom_vjp: f = custom_vjp(f); f.defvjp(fwd, bwd), fwd(*args) -> (out, res), bwd(res, g) -> arg cotangents."""
  kind = "vjp"
  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    super().__init__(fun, nondiff_argnums)
    self.fwd: Callable | None = None
    self.bwd: Callable | None = None

  def defvjp(self, fwd: Callable, bwd: Callable) -> None:
    self.fwd, self.bwd = fwd, bwd

  def _defined(self) -> bool: return self.fwd is not None

  def _rule(self, name: str, call: _FlatCall, box: dict) -> CustomRule:
    fwd, bwd = self.fwd, self.bwd
    assert fwd is not None and bwd is not None
    def fwd_flat(xs):
      out, res = fwd(*call.rebuild(xs))
      return _out_flat(out, {}), res
    def bwd_flat(res, cts):
      g = bwd(*call.nd, res, tu.tree_unflatten(box["tree"], cts))
      if not isinstance(g, tuple): raise TypeError(f"Custom VJP bwd rule must produce a tuple, got {type(g).__name__}")
      if len(g) != len(call.dyn):
        raise TypeError(f"Custom VJP bwd rule must produce an output with the same container (pytree) structure as the "
                        f"args tuple of the primal function, and in particular must produce a tuple of length equal to "
                        f"the number of arguments to the primal function, but got bwd output of length {len(g)} for "
                        f"{len(call.dyn)} arguments.")
      flat = []   # one entry per leaf of the differentiable args; None (a zero) may stand for a whole argument
      for a, gi in zip(call.dyn, g, strict=True):
        flat += [None] * len(tu.tree_leaves(a)) if gi is None else \
          tu.optree.tree_leaves(gi, none_is_leaf=True, namespace=tu.NAMESPACE)
      return [flat[i] for i in call.pos]
    return CustomRule(name, lambda xs: _out_flat(self.fun(*call.rebuild(xs)), box), fwd=fwd_flat, bwd=bwd_flat)

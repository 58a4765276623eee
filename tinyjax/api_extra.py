"""jax.fwd_and_bwd, jax.closure_convert and jax.custom_gradient, on tinyjax's public vjp, jit and custom_vjp (JAX's
definitions: jax/_src/api.py and jax/_src/custom_derivatives.py)."""
from __future__ import annotations
import functools, inspect, operator
from typing import Any, Callable
from tinyjax._tg import Tensor, placeholder, is_data
from tinyjax.core import as_tensor, substitute, trace_scope
from tinyjax.custom import custom_vjp, closure
from tinyjax.transforms.jit import jit
from tinyjax.transforms.vjp import vjp
from tinyjax import pytree as tu

__all__ = ["fwd_and_bwd", "closure_convert", "custom_gradient"]

def _check_callable(fun: Any) -> None:
  if isinstance(fun, staticmethod): raise TypeError(f"staticmethod arguments are not supported, got {fun}")
  if not callable(fun): raise TypeError(f"Expected a callable value, got {fun}")
  if inspect.isgeneratorfunction(fun): raise TypeError(f"Expected a function, got a generator function: {fun}")

def _index(x: Any) -> int | tuple[int, ...]:
  try: return operator.index(x)
  except TypeError: return tuple(map(operator.index, x))

def _inbounds(num_args: int, argnums: tuple[int, ...]) -> tuple[int, ...]:
  for i in argnums:
    if not -num_args <= i < num_args:
      raise ValueError("Positional argument indices, e.g. for `static_argnums`, must have value greater than or equal to "
                       f"-len(args) and less than len(args), but got value {i} for len(args) == {num_args}.")
  return tuple(i % num_args for i in argnums)

def fwd_and_bwd(fun: Callable, argnums: int | tuple[int, ...], has_aux: bool = False, jitted: bool = True) -> tuple[Callable, Callable]:
  """(fwd, bwd): fwd(*args) is vjp of fun in the arguments `argnums`, (out, residuals[, aux]), the residuals being
  vjp's function (a pytree over its residual arrays); bwd(residuals, cotangent) the cotangents of those arguments (one
  array for an int argnums). Both jitted by default, so bwd compiles once however often fwd runs."""
  _check_callable(fun)
  nums = _index(argnums)
  def fwd(*args, **kwargs):
    dyn = _inbounds(len(args), (nums,) if isinstance(nums, int) else nums)
    def partial(*dyn_args):
      full = list(args)
      for i, x in zip(dyn, dyn_args, strict=True): full[i] = x
      return fun(*full)
    return vjp(partial, *(args[i] for i in dyn), has_aux=has_aux)
  def bwd(f_vjp, outgrad):
    g = f_vjp(outgrad)
    return g[0] if isinstance(nums, int) else g
  return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)

def closure_convert(fun: Callable, *example_args) -> tuple[Callable, list[Tensor]]:
  """(converted, consts): fun traced on placeholders of example_args' types; the traced values it closes over (those
  of enclosing transforms, which a custom rule could otherwise not differentiate) become `consts`, extra arguments of
  `converted(*args, *consts)`. Concrete arrays stay closed over, as JAX keeps values that cannot be perturbed. A
  closed-over value computed from a transform's input is given as that input: the consts stand for what fun depends on."""
  leaves, in_tree = tu.tree_flatten(example_args)
  ts = [as_tensor(x) for x in leaves]
  phs = [placeholder(tuple(t.shape), t.dtype, t.device) for t in ts]
  own = {p.uop for p in phs}
  with trace_scope("closure_convert", own):   # reading an argument's value is an error, as in JAX's abstract trace
    out = fun(*tu.tree_unflatten(in_tree, phs))
  out_leaves, out_tree = tu.tree_flatten(out)
  outs = [as_tensor(o).uop for o in out_leaves]
  hidden = [u for u in closure(outs, own) if not is_data(u)]
  def converted_fun(*args_hconsts):
    n = len(args_hconsts) - len(hidden)
    args, consts = args_hconsts[:n], args_hconsts[n:]
    flat, in_tree2 = tu.tree_flatten(tuple(args))
    if in_tree != in_tree2:
      raise TypeError("The inputs to the closure produced by closure_convert must have the same Pytree structure as the "
                      f"example arguments passed when closure_convert was called. Expected {in_tree}, but got {in_tree2}")
    subs = {p.uop: as_tensor(a).uop for p, a in zip(phs, flat, strict=True)}
    subs.update({h: as_tensor(c).uop for h, c in zip(hidden, consts, strict=True)})
    return tu.tree_unflatten(out_tree, [Tensor(u) for u in substitute(outs, subs)])
  return converted_fun, [Tensor(h) for h in hidden]

def _apply_rule(converted: Callable, *consts_and_ct):
  *consts, ct = consts_and_ct
  return converted(ct, *consts)

def custom_gradient(fun: Callable) -> Callable:
  """TensorFlow's custom_gradient API on custom_vjp: fun(*args) returns (value, rule) and rule(cotangent) the
  arguments' cotangents (a tuple, or one array for one argument). The rule may close over values fun computed: it is
  closure-converted, so its residuals are arrays (a pytree that vmap and jit carry)."""
  @custom_vjp
  def wrapped_fun(*args, **kwargs):
    ans, _ = fun(*args, **kwargs)
    return ans
  def fwd(*args, **kwargs):
    ans, rule = fun(*args, **kwargs)
    converted, consts = closure_convert(rule, ans)
    return ans, tu.Partial(functools.partial(_apply_rule, converted), *consts)
  def bwd(res, cts):
    out = res(cts)
    return out if not tu.treedef_is_leaf(tu.tree_structure(out)) else (out,)
  wrapped_fun.defvjp(fwd, bwd)
  return wrapped_fun

"""Reverse mode: tinyjax.vjp, grad, value_and_grad, on tinygrad's own gradient of the traced graph."""
from __future__ import annotations
import weakref
from typing import Callable, Sequence
import numpy as np
from tinyjax._tg import dtype_name, Tensor, UOp, dtypes, compute_gradient, custom_rule_of, GraphMemo
from tinyjax import pytree as tu
from tinyjax.dtypes import float0
from tinyjax.complex_array import ComplexArray
from tinyjax.core import at_top_level, transform_entry, enclosing_inputs, trace_flat, trace_scope, placeholder_subs, substitute, \
  substitute_with_aux, jax_conventions, primal_graph, as_tensor, with_buffers
from tinyjax.transforms.batching import differentiable
from tinyjax.call_rule import shared_forwards


def _compute_gradients(uops: list[UOp]) -> list[UOp]:
  """tinygrad's gradient of outputs (a tuple) with cotangents (a tuple) for each target (a zero where none flows)."""
  outs, cts, *targets = uops
  grads = compute_gradient(outs, cts, set(targets))
  return [grads.get(t, t.const_like(0)) for t in targets]

# memoised by the graphs' structure (an eager loop differentiates the same graph every iteration); not where a user's
# custom rule runs, which may branch on the primals' values (GraphMemo)
_gradients = GraphMemo(_compute_gradients)


def _vjp_flat(fun, p_leaves, p_tree, has_aux, transform="vjp"):
  """(primals_out, out_tree, vjp_flat, residuals, aux): vjp_flat(residuals, cotangents) reads the inputs only through
  `residuals` (the primals, and the values of enclosing transforms or jits that fun closes over)."""
  phs, outs, out_tree, aux = trace_flat(fun, transform, p_leaves, p_tree, has_aux)
  subs = placeholder_subs(phs, p_leaves)
  traced = jax_conventions([o.uop for o in outs])
  # collective markers become calls whose grad_fxn is their rule (batching.COLLECTIVE_RULES); the results get them back
  traced, unwrap = differentiable(traced)
  primals_out, aux = substitute_with_aux(primal_graph([o.uop for o in outs], traced), aux, {**subs, **unwrap})
  outer = enclosing_inputs()
  closed = [u for u in UOp.sink(*traced).toposort() if u in outer] if outer else []
  keys = list(subs) + closed
  residuals = [Tensor(u) for u in subs.values()] + [Tensor(u) for u in closed]
  # (the primal outputs held weakly: a jitted function returning the pullback keeps it in its output tree, which would
  # keep its trace's values alive, and every later eager transform would walk them)
  out_refs = [weakref.ref(p) for p in primals_out]

  def vjp_flat(res: list[Tensor], cts: list[Tensor]) -> list[Tensor]:
    pairs = [(o, c.uop) for o, c in zip(traced, cts, strict=True) if dtypes.is_float(o.dtype)]
    # tinygrad hands a custom call's grad_fxn only the cotangents of outputs that have one, without their positions:
    # give every output of a multi-output custom call a (zero) cotangent, so the positions are all there
    pairs += [(fn.gettuple(i), fn.gettuple(i).const_like(0)) for fn in UOp.sink(*traced).toposort()
              if custom_rule_of(fn) is not None and len(fn.src[0].src) > 1 for i in range(len(fn.src[0].src))]
    targets = list(subs)
    at_once = at_top_level()   # computed now (eager values): a memoised gradient can be one call of the stored graph
    # custom rules run here, on the placeholders: they stand for this call's primals (Python control flow in a rule)
    with trace_scope(transform, targets, {k: r.uop for k, r in zip(keys, res[:len(subs)], strict=False)}):
      grads = dict(zip(targets, _gradients([UOp.maketuple(*[o for o, _ in pairs]), UOp.maketuple(*[c for _, c in pairs]), *targets], as_call=at_once),
                       strict=True)) if pairs and targets else {}
    g = [grads.get(ph.uop, ph.uop.const_like(0)) if ph is not p else p.uop.const_like(0) for ph, p in zip(phs, p_leaves, strict=True)]
    bound = dict(zip(keys, [r.uop for r in res], strict=True))
    g = substitute(g, {**(with_buffers(bound) if at_once else bound), **unwrap})
    # a call whose reverse mode computed it again with more outputs (a scan's forward pass saving its carries): the
    # gradients and the primal outputs read that one
    alive = [p for r in out_refs if (p := r()) is not None]
    if shared := shared_forwards(g + [p.uop for p in alive]):
      g = substitute(g, shared)
      for p, u in zip(alive, substitute([p.uop for p in alive], shared), strict=True): p.uop = u
    return [Tensor(u) for u in g]
  return primals_out, out_tree, vjp_flat, residuals, aux


_VJP_ARGS_MSG = """
The function returned by `tinyjax.vjp` applied to {name} was called with {n} arguments,
but functions returned by `tinyjax.vjp` must be called with a single argument
corresponding to the single value returned by the function being differentiated
(even if that returned value is a tuple or other container).

For example, if we have:

  def f(x):
    return (x, x)
  _, f_vjp = tinyjax.vjp(f, 1.0)

the function `f` returns a single tuple as output, and so we call `f_vjp` with a
single tuple as its argument:

  x_bar, = f_vjp((2.0, 2.0))

If we instead call `f_vjp(2.0, 2.0)`, with the values 'splatted out' as
arguments rather than in a tuple, this error can arise.
"""


@transform_entry
def vjp(fun: Callable, *primals, has_aux: bool = False):
  """jax.vjp: (primals_out, vjp_fn[, aux]); vjp_fn(cotangents) returns one cotangent per primal, as a tuple."""
  p_leaves, p_tree = tu.tree_flatten(primals)
  p_leaves = [as_tensor(p) for p in p_leaves]
  outs, out_tree, vjp_flat, residuals, aux = _vjp_flat(fun, p_leaves, p_tree, has_aux)
  # JAX's complex convention: the vjp of the pair of real parts, between conjugates (cotangent in, cotangents out)
  p_imag, out_imag = tu.imaginary_parts(primals), tu.imaginary_parts(tu.tree_unflatten(out_tree, outs))
  # (vjp_fn keeps the outputs' types, not the outputs: a jitted function returning it keeps it in its output tree,
  # which would keep its trace's values alive)
  out_types = [(tuple(o.shape), o.dtype) for o in outs]

  @transform_entry
  def vjp_fn(res, *args):
    if len(args) != 1: raise TypeError(_VJP_ARGS_MSG.format(name=getattr(fun, "__name__", "the function"), n=len(args)))
    c_leaves, c_tree = tu.tree_flatten(args[0])
    if c_tree != out_tree:
      raise ValueError(f"unexpected tree structure of argument to vjp function: got {c_tree}, but expected to match "
                       f"the structure of the differentiated function's output {out_tree}")
    c_leaves = [as_tensor(c, like=dt) for (_, dt), c in zip(out_types, c_leaves, strict=True)]
    for (shape, dt), c in zip(out_types, c_leaves, strict=True):
      if shape != tuple(c.shape) or (dtypes.is_float(dt) and dt != c.dtype):
        raise ValueError(f"unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got {dtype_name(c.dtype)}"
                         f"{list(c.shape)}, but expected {dtype_name(dt)}{list(shape)} because the corresponding output "
                         f"of the differentiated function had JAX type {dtype_name(dt)}{list(shape)}")
    if any(out_imag): c_leaves = [-c if m else c for c, m in zip(c_leaves, out_imag, strict=True)]
    cts = vjp_flat(res, c_leaves)
    if any(p_imag): cts = [-c if m else c for c, m in zip(cts, p_imag, strict=True)]
    return tu.tree_unflatten(p_tree, cts)

  res = (tu.tree_unflatten(out_tree, outs), tu.Partial(vjp_fn, residuals))
  return res + (aux,) if has_aux else res


def _argnums(argnums, nargs: int, positional_check: bool = False) -> tuple[int, ...]:
  """argnums normalised; out of range: JAX's errors (jacfwd/jacrev check every index like static_argnums)."""
  nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
  for a in nums:
    if a < -nargs or (positional_check and a >= nargs):
      raise ValueError("Positional argument indices, e.g. for `static_argnums`, must have value greater than or equal "
                       f"to -len(args) and less than len(args), but got value {a} for len(args) == {nargs}.")
  if any(a >= nargs for a in nums):
    need = max(a + 1 for a in nums)
    raise TypeError(f"differentiating with respect to argnums={argnums} requires at least {need} positional arguments "
                    f"to be passed by the caller, but got only {nargs} positional arguments.")
  return tuple(a % nargs for a in nums)


def real_only(transform: str, allow_int: bool = False) -> None:
  """JAX's allow_int= option: grad and value_and_grad take allow_int=True (float0 cotangents for integer inputs)."""
  if allow_int and transform not in ("grad", "value_and_grad"):
    raise NotImplementedError(f"tinyjax.{transform}(allow_int=True): tinyjax differentiates float inputs only "
                              "(integer inputs have JAX's float0 tangents there; see docs/porting.md)")

def check_holomorphic_inputs(transform: str, diff) -> None:
  """holomorphic=True: every differentiated input is complex (JAX's TypeError otherwise)."""
  for x in tu.tree_leaves(diff, is_leaf=tu.jax_leaf(None)):
    if not isinstance(x, ComplexArray):
      raise TypeError(f"{transform} with holomorphic=True requires inputs with complex dtype, but got {dtype_name(as_tensor(x).dtype)}.")

def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False) -> Callable:
  """jax.value_and_grad: fun must return a float scalar (or (scalar, aux) with has_aux)."""
  real_only("value_and_grad", allow_int)
  @transform_entry
  def vg(*args, **kwargs):
    nums = _argnums(argnums, len(args))
    diff = tuple(args[i] for i in nums)
    if holomorphic: check_holomorphic_inputs("grad", diff)
    for leaf in tu.tree_leaves(diff):
      t = as_tensor(leaf)
      if not dtypes.is_float(t.dtype) and not allow_int:
        raise TypeError(f"grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), "
                        f"but got {dtype_name(t.dtype)}. If you want to use Boolean- or integer-valued inputs, use vjp or set "
                        f"allow_int to True.")
    def f(*d):
      full = list(args)
      for i, x in zip(nums, d, strict=True): full[i] = x
      return fun(*full, **kwargs)
    out, pullback, *aux = vjp(f, *diff, has_aux=has_aux)
    if isinstance(out, ComplexArray) and not holomorphic:
      raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got {out.dtype.name}. "
                      "For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions "
                      "involving complex outputs, use jax.vjp directly.")
    if holomorphic and not isinstance(out, ComplexArray):
      raise TypeError(f"grad with holomorphic=True requires outputs with complex dtype, but got {dtype_name(out.dtype)}.")
    if holomorphic:
      if out.shape != (): raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {out.shape}.")
      g = pullback(ComplexArray(Tensor(out.re.uop.const_like(1)), Tensor(out.im.uop.const_like(0))))
      g = g[0] if isinstance(argnums, int) else g
      return ((out, aux[0]) if has_aux else out), g
    if not isinstance(out, Tensor) or out.shape != ():
      what = f"had shape: {tuple(out.shape)}" if isinstance(out, Tensor) else f"was {out}"
      raise TypeError(f"Gradient only defined for scalar-output functions. Output {what}.")
    if not dtypes.is_float(out.dtype):
      raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got "
                      f"{dtype_name(out.dtype)}. For differentiation of functions with integer outputs, use jax.vjp directly.")
    g = pullback(Tensor(out.uop.const_like(1)))   # a CONST: no buffer, no kernel
    if allow_int:   # as JAX: an integer or bool input's cotangent is a numpy array of dtype float0
      g = tuple(tu.tree_map(lambda x, ct: ct if dtypes.is_float(as_tensor(x).dtype) else np.zeros(np.shape(x), float0), d, c)
                for d, c in zip(diff, g, strict=True))
    g = g[0] if isinstance(argnums, int) else g
    return ((out, aux[0]) if has_aux else out), g
  return vg


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False) -> Callable:
  """jax.grad: the gradient of a float-scalar function with respect to argument(s) `argnums`."""
  real_only("grad", allow_int)
  vg = value_and_grad(fun, argnums, has_aux, holomorphic=holomorphic, allow_int=allow_int)
  def g(*args, **kwargs):
    value, gr = vg(*args, **kwargs)
    return (gr, value[1]) if has_aux else gr
  return g

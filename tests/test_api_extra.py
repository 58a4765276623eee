"""jax.fwd_and_bwd, jax.closure_convert, jax.custom_gradient and the jax.tree_util leftovers against JAX: values under
grad, vmap and jit, and JAX's errors."""
import collections
from functools import partial
import numpy as np
import jax
import jax.numpy as jjnp
import tinyjax
import tinyjax.numpy as tjnp
from conftest import assert_close, same_error

X = np.array([0.5, -1.2, 2.0])
W = np.array([[1.0, -0.5], [0.3, 0.8], [-1.1, 0.2]])

# ---- fwd_and_bwd --------------------------------------------------------------------------------------------------

def _layer(np_):
  def layer(W, x, scale):
    y = np_.tanh(x @ W) * scale
    return y, {"norm": (y * y).sum()}
  return layer

def test_fwd_and_bwd():
  """fwd gives fun's output (and aux), bwd the cotangents of the argnums arguments, for several cotangents of one fwd
  and for an int argnums (one array); jitted=False gives the same."""
  ct1, ct2 = np.ones(2), np.array([0.5, -2.0])
  for argnums, has_aux, jitted in (((0, 1), True, True), (0, True, False), (1, True, True)):
    outs = []
    for api, np_ in ((tinyjax, tjnp), (jax, jjnp)):
      fun = _layer(np_) if has_aux else (lambda *a, f=_layer(np_): f(*a)[0])
      fwd, bwd = api.fwd_and_bwd(fun, argnums=argnums, has_aux=has_aux, jitted=jitted)
      y, res, aux = fwd(np_.asarray(W), np_.asarray(X), 1.5)
      outs.append((y, aux, bwd(res, np_.asarray(ct1)), bwd(res, np_.asarray(ct2))))
    assert_close(outs[0], outs[1])

def test_fwd_and_bwd_errors():
  same_error(lambda: tinyjax.fwd_and_bwd(3, 0), lambda: jax.fwd_and_bwd(3, 0))
  same_error(lambda: tinyjax.fwd_and_bwd(lambda x: x, 2)[0](tjnp.ones(2)),
             lambda: jax.fwd_and_bwd(lambda x: x, 2)[0](jjnp.ones(2)))

# ---- closure_convert ----------------------------------------------------------------------------------------------

def _fixed_point_grad(api, np_):
  """JAX's closure_convert docstring pattern: a custom_vjp taking a closure-converted function and its hoisted values."""
  @partial(api.custom_vjp, nondiff_argnums=(0,))
  def apply(f, x, *args): return f(x, *args)
  def fwd(f, x, *args): return apply(f, x, *args), (x, args)
  def bwd(f, res, g):
    x, args = res
    return api.vjp(f, x, *args)[1](g)
  apply.defvjp(fwd, bwd)
  def outer(w, x):
    def fn(y): return np_.sin(w * y).sum() + (w * w).sum()
    converted, consts = api.closure_convert(fn, x)
    assert len(consts) == 1   # w, which grad traces
    return apply(converted, x, *consts)
  return outer

def test_closure_convert_under_grad():
  w = np.array([0.7, -0.3, 1.1])
  t, j = _fixed_point_grad(tinyjax, tjnp), _fixed_point_grad(jax, jjnp)
  assert_close(tinyjax.grad(t, argnums=(0, 1))(tjnp.asarray(w), tjnp.asarray(X)), jax.grad(j, argnums=(0, 1))(w, X))
  assert_close(tinyjax.jit(tinyjax.grad(t))(tjnp.asarray(w), tjnp.asarray(X)), jax.grad(j)(w, X))

def test_closure_convert_concrete():
  """Outside transforms nothing is hoisted (the closed-over array is concrete); the converted function takes pytrees."""
  outs = []
  for api, np_ in ((tinyjax, tjnp), (jax, jjnp)):
    w = np_.asarray(W)
    f, consts = api.closure_convert(lambda d: {"y": d["a"] @ w + d["b"]}, {"a": np_.asarray(X), "b": np_.ones(2)})
    assert consts == []
    outs.append(f({"a": np_.asarray(X) * 2, "b": np_.zeros(2)}))
  assert_close(*outs)
  same_error(lambda: tinyjax.closure_convert(lambda x: x * 2, tjnp.ones(2))[0]((tjnp.ones(2),)),
             lambda: jax.closure_convert(lambda x: x * 2, jjnp.ones(2))[0]((jjnp.ones(2),)), upto="Expected")

# ---- custom_gradient ----------------------------------------------------------------------------------------------

def _custom(api, np_):
  @api.custom_gradient
  def f(x, y):
    e = np_.exp(x)   # the rule closes over a value the function computed
    return (e * y).sum(), lambda g: (g * e * 10.0, g * x)
  @api.custom_gradient
  def one(x):
    return np_.sin(x), lambda g: g * 3.0   # one argument: a single array is its cotangent
  return f, one

def test_custom_gradient():
  (tf, tone), (jf, jone) = _custom(tinyjax, tjnp), _custom(jax, jjnp)
  y = np.array([1.0, 2.0, -1.0])
  assert_close(tf(tjnp.asarray(X), tjnp.asarray(y)), jf(X, y))
  assert_close(tinyjax.grad(tf, argnums=(0, 1))(tjnp.asarray(X), tjnp.asarray(y)), jax.grad(jf, argnums=(0, 1))(X, y))
  assert_close(tinyjax.vmap(tinyjax.grad(tone))(tjnp.asarray(X)), jax.vmap(jax.grad(jone))(X))
  xs = np.stack([X, X * 0.5])   # the rule's closed-over exp(x) batched: grad of vmap
  assert_close(tinyjax.grad(lambda x: tinyjax.vmap(tf, in_axes=(0, None))(x, tjnp.asarray(y)).sum())(tjnp.asarray(xs)),
               jax.grad(lambda x: jax.vmap(jf, in_axes=(0, None))(x, y).sum())(xs))
  assert_close(tinyjax.jit(tinyjax.grad(lambda x: tf(x, tjnp.asarray(y)) * tone(x).sum()))(tjnp.asarray(X)),
               jax.grad(lambda x: jf(x, y) * jone(x).sum())(X))

# ---- jax.tree_util leftovers --------------------------------------------------------------------------------------

Pair = collections.namedtuple("Pair", "a b")

def test_tree_util_leftovers():
  tu, ju = tinyjax.tree_util, jax.tree_util
  for tree in ({"b": [1, 2], "a": {"c": 3}}, (1, (2,)), [3, 4], None):
    assert tu.flatten_one_level(tree) == tuple(tuple(x) if isinstance(x, list) else x for x in ju.flatten_one_level(tree))
    got, want = tu.flatten_one_level_with_keys(tree), ju.flatten_one_level_with_keys(tree)
    assert [(str(k), c) for k, c in got[0]] == [(str(k), c) for k, c in want[0]] and got[1] == want[1]
  assert tu.flatten_one_level(Pair(1, 2)) == (tuple(ju.flatten_one_level(Pair(1, 2))[0]), Pair)
  for typ in (dict, list, tuple, Pair, type(None), int, np.ndarray, tinyjax.tree_util.Partial):
    assert tu.is_tree_node(typ) == ju.is_tree_node(typ if typ is not tinyjax.tree_util.Partial else jax.tree_util.Partial)
  x, y = [1, (2, 3)], {"k": 4}
  assert tu.treedef_tuple([tu.tree_structure(x), tu.tree_structure(y)]) == tu.tree_structure((x, y))
  def op(a, b): return f"({a}+{b})"
  assert tu.tree_reduce_associative(op, [1, {"a": 2, "b": (3, 4)}, 5]) == ju.tree_reduce_associative(op, [1, {"a": 2, "b": (3, 4)}, 5])
  assert tu.tree_reduce_associative(op, [], identity=0) == 0
  same_error(lambda: tu.tree_reduce_associative(op, []), lambda: ju.tree_reduce_associative(op, []))
  same_error(lambda: tu.flatten_one_level(3), lambda: ju.flatten_one_level(3))
  same_error(lambda: tu.flatten_one_level_with_keys(3.0), lambda: ju.flatten_one_level_with_keys(3.0))
  assert tu.KeyPath.__origin__ is tuple and tu.KeyEntry.__name__ == "KeyEntry"   # JAX's type names, for annotations

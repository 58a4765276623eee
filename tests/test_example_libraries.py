"""tinyjax.example_libraries (stax, optimizers) against jax.example_libraries: each stax layer's init_fun on the same
key gives JAX's output shape and parameters, its apply_fun JAX's outputs; each optimizer's steps give JAX's parameters;
the schedules, pack/unpack, clip_grads and l2_norm give JAX's numbers. Run with x64 off (float32 defaults), as the
published examples run."""
import numpy as np
import pytest
import jax
import jax.numpy as jjnp
from jax.example_libraries import stax as jstax, optimizers as jopt
import tinyjax
import tinyjax.numpy as tjnp
from tinyjax.example_libraries import stax as tstax, optimizers as topt
from conftest import assert_close, same_error, to_np
from jnp_table import x64_off

@pytest.fixture(autouse=True)
def _x64_off():
  with x64_off(): yield

# float32: glorot_normal draws truncated_normal, within a few float32 eps of JAX's (docs/porting.md, random)
F32 = dict(rtol=2e-6, atol=1e-6)

def _x(*shape, seed=0): return (np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)

# (id, layer from a stax module, input shape); FanIn layers take a list of shapes and a list of inputs
LAYERS = [
  ("Dense", lambda s: s.Dense(3), (2, 4)),
  ("Conv", lambda s: s.Conv(3, (2, 2), strides=(1, 2), padding="SAME"), (1, 4, 5, 2)),
  ("ConvTranspose", lambda s: s.ConvTranspose(2, (2, 3), strides=(2, 1), padding="VALID"), (1, 3, 3, 2)),
  ("Conv1DTranspose", lambda s: s.Conv1DTranspose(2, (3,), strides=(2,), padding="SAME"), (2, 4, 3)),
  ("BatchNorm", lambda s: s.BatchNorm(axis=(0, 1)), (3, 2, 4)),
  ("BatchNorm-noscale", lambda s: s.BatchNorm(axis=0, scale=False), (3, 4)),
  ("MaxPool", lambda s: s.MaxPool((2, 2), strides=(1, 2)), (1, 4, 5, 2)),
  ("SumPool", lambda s: s.SumPool((2, 1), padding="SAME"), (1, 3, 3, 2)),
  ("AvgPool", lambda s: s.AvgPool((2, 2), padding="SAME"), (1, 3, 3, 2)),
  ("Flatten", lambda s: s.Flatten, (2, 3, 2)),
  ("Identity", lambda s: s.Identity, (2, 3)),
  ("elementwise", lambda s: s.serial(s.Tanh, s.Relu, s.Exp, s.LogSoftmax, s.Softmax, s.Softplus, s.Sigmoid, s.Elu,
                                     s.LeakyRelu, s.Selu, s.Gelu), (2, 5)),
  ("serial", lambda s: s.serial(s.Dense(4), s.Relu, s.Dense(2), s.LogSoftmax), (3, 5)),
  ("parallel", lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Identity), s.FanInConcat()), (2, 3)),
  ("residual", lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Identity), s.FanInSum), (2, 3)),
  ("shape_dependent", lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1] + 1)), (2, 3)),
]

@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[r[0] for r in LAYERS])
def test_stax_layer(name, make, shape):
  (ti, ta), (ji, ja) = make(tstax), make(jstax)
  tshape, tparams = ti(tinyjax.random.PRNGKey(1), shape)
  jshape, jparams = ji(jax.random.PRNGKey(1), shape)
  assert tshape == jshape
  assert_close(tparams, jparams, **F32)
  x = _x(*shape)
  assert_close(ta(tparams, tjnp.asarray(x)), ja(jparams, jjnp.asarray(x)), rtol=2e-5, atol=1e-6)

def test_stax_typed_key():
  """init_fun with a typed key (random.key) gives JAX's parameters for JAX's typed key."""
  (ti, _), (ji, _) = tstax.serial(tstax.Dense(3), tstax.Relu), jstax.serial(jstax.Dense(3), jstax.Relu)
  assert_close(ti(tinyjax.random.key(2), (2, 4))[1], ji(jax.random.key(2), (2, 4))[1], **F32)

def test_stax_dropout_and_rng():
  """Dropout draws from the key apply_fun is given (serial splits it per layer, as JAX); without one it raises JAX's error."""
  x = _x(3, 4)
  (_, ta), (_, ja) = tstax.serial(tstax.Dense(4), tstax.Dropout(0.5)), jstax.serial(jstax.Dense(4), jstax.Dropout(0.5))
  params = [(_x(4, 4, seed=1), _x(4, seed=2)), ()]
  assert_close(ta([tuple(tjnp.asarray(p) for p in params[0]), ()], tjnp.asarray(x), rng=tinyjax.random.PRNGKey(3)),
               ja(params, x, rng=jax.random.PRNGKey(3)), **F32)
  _, ta1 = tstax.Dropout(0.5, mode="test")
  assert_close(ta1((), tjnp.asarray(x), rng=tinyjax.random.PRNGKey(0)), x)
  same_error(lambda: tstax.Dropout(0.5)[1]((), tjnp.asarray(x)), lambda: jstax.Dropout(0.5)[1]((), x))

def test_stax_fan_in():
  xs = [_x(2, 3), _x(2, 3, seed=1)]
  for (ti, ta), (ji, ja) in ((tstax.FanInSum, jstax.FanInSum), (tstax.FanInConcat(0), jstax.FanInConcat(0))):
    assert ti(None, [(2, 3), (2, 3)]) == ji(None, [(2, 3), (2, 3)])
    assert_close(ta((), [tjnp.asarray(x) for x in xs]), ja((), xs))

# ---- optimizers ---------------------------------------------------------------------------------------------------

P0 = {"w": _x(3, 2, seed=3), "b": _x(2, seed=4)}
DATA = _x(4, 3, seed=5)

def _loss(np_):
  def loss(p): return np_.sum(np_.tanh(DATA @ p["w"] + p["b"]) ** 2)
  return loss

OPTIMIZERS = [
  ("sgd", lambda o: o.sgd(0.1)),
  ("momentum", lambda o: o.momentum(0.1, 0.9)),
  ("nesterov", lambda o: o.nesterov(0.1, 0.9)),
  ("adagrad", lambda o: o.adagrad(0.1)),
  ("rmsprop", lambda o: o.rmsprop(0.1)),
  ("rmsprop_momentum", lambda o: o.rmsprop_momentum(0.1)),
  ("adam", lambda o: o.adam(0.1)),
  ("adamax", lambda o: o.adamax(0.1)),
  ("sm3", lambda o: o.sm3(0.1)),
  ("adam-schedule", lambda o: o.adam(o.exponential_decay(0.1, 2, 0.5))),
]

@pytest.mark.parametrize("name,make", OPTIMIZERS, ids=[r[0] for r in OPTIMIZERS])
def test_optimizer_steps(name, make):
  """Three jitted steps, as the published examples write them: the parameters after each are JAX's. sm3 runs un-jitted:
  its state holds the parameter's shape as ints, which jit traces, and get_params reshapes to it (JAX's jit refuses too)."""
  def run(lib, api, np_):
    init, update, get_params = make(lib)
    step = (lambda f: f) if name == "sm3" else api.jit
    step = step(lambda i, s: update(i, api.grad(_loss(np_))(get_params(s)), s))
    state, out = init({k: np_.asarray(v) for k, v in P0.items()}), []
    for i in range(3):
      state = step(i, state)
      out.append(get_params(state))
    return out
  got, want = run(topt, tinyjax, tjnp), run(jopt, jax, jjnp)
  for g, w in zip(got, want, strict=True): assert_close(g, w, rtol=1e-5, atol=1e-6)

def test_optimizer_eager_scalar_param():
  """Un-jitted steps on a 0-d parameter (sm3 reshapes it to 1-d and back)."""
  for make in (lambda o: o.sm3(0.1), lambda o: o.adagrad(0.1)):
    outs = []
    for lib, api, np_ in ((topt, tinyjax, tjnp), (jopt, jax, jjnp)):
      init, update, get_params = make(lib)
      s = init(np_.asarray(np.float32(1.5)))
      for i in range(2): s = update(i, api.grad(lambda x: np_.sin(x) * x)(get_params(s)), s)
      outs.append(get_params(s))
    assert_close(outs[0], outs[1], rtol=1e-6)

@pytest.mark.parametrize("sched", [
  lambda o: o.constant(0.3), lambda o: o.exponential_decay(0.1, 3, 0.5), lambda o: o.inverse_time_decay(0.1, 3, 0.5),
  lambda o: o.inverse_time_decay(0.1, 3, 0.5, staircase=True), lambda o: o.polynomial_decay(0.1, 4, 0.01, power=2.0),
  lambda o: o.piecewise_constant([2, 5], [1.0, 0.5, 0.1])], ids=["constant", "exponential", "inverse_time",
  "inverse_time_staircase", "polynomial", "piecewise"])
def test_schedules(sched):
  t, j = sched(topt), sched(jopt)
  got = [to_np(tjnp.asarray(t(tjnp.asarray(i)))) for i in range(7)]
  want = [np.asarray(j(jjnp.asarray(i))) for i in range(7)]
  for g, w in zip(got, want, strict=True): np.testing.assert_allclose(g, w, rtol=1e-6)

def test_schedule_errors():
  same_error(lambda: topt.piecewise_constant([1, 2], [1.0]), lambda: jopt.piecewise_constant([1, 2], [1.0]))
  same_error(lambda: topt.piecewise_constant([[1]], [[1.0, 2.0]]), lambda: jopt.piecewise_constant([[1]], [[1.0, 2.0]]))
  same_error(lambda: topt.make_schedule([0.1, 0.2]), lambda: jopt.make_schedule([0.1, 0.2]))

def test_pack_unpack_clip_l2():
  tree = {"a": _x(3), "b": (_x(2, 2, seed=1), _x(1, seed=2))}
  t_init, _, t_get = topt.momentum(0.1, 0.9)
  j_init, _, j_get = jopt.momentum(0.1, 0.9)
  ts, js = t_init(tinyjax.tree_util.tree_map(tjnp.asarray, tree)), j_init(tree)
  tu, ju = topt.unpack_optimizer_state(ts), jopt.unpack_optimizer_state(js)
  assert isinstance(tu["a"], topt.JoinPoint)
  assert_close(tu["b"][0].subtree, ju["b"][0].subtree)
  back = topt.pack_optimizer_state(tu)
  assert back.tree_def == ts.tree_def and back.subtree_defs == ts.subtree_defs
  assert_close(t_get(back), j_get(jopt.pack_optimizer_state(ju)))
  for max_norm in (0.5, 100.0):
    assert_close(topt.clip_grads(tinyjax.tree_util.tree_map(tjnp.asarray, tree), max_norm), jopt.clip_grads(tree, max_norm), **F32)
  assert_close(topt.l2_norm(tinyjax.tree_util.tree_map(tjnp.asarray, tree)), jopt.l2_norm(tree), **F32)

def test_update_tree_mismatch():
  """A gradient tree that is not the parameters' raises JAX's TypeError."""
  t_init, t_update, _ = topt.sgd(0.1)
  j_init, j_update, _ = jopt.sgd(0.1)
  same_error(lambda: t_update(0, [tjnp.ones(2)], t_init((tjnp.ones(2),))),
             lambda: j_update(0, [jjnp.ones(2)], j_init((jjnp.ones(2),))), upto="did not match the parameter tree")

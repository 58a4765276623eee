"""tinyjax.nn, tinyjax.scipy.special and tinyjax.scipy.stats against JAX: one table row per function (value and dtype,
vmap (along a new last axis too for rows with axes or several arguments), jvp, grad; x64), edge values, the initializers
that exist before tinyjax.random, kernels."""
import math
import numpy as np
import pytest
import jax
import jax.nn as jnn
import jax.scipy.special as jsp
import jax.scipy.stats as jst
import tinyjax
import tinyjax.nn as tnn
import tinyjax.scipy.special as tsp
import tinyjax.scipy.stats as tst
from tinygrad import Tensor
from conftest import rnd, assert_close, to_np, kernel_count
from jnp_table import Row, params, run, x64_off

X = rnd(3, 4) * 2
P = 1 / (1 + np.exp(-rnd(3, 4, seed=1)))      # in (0, 1)
POS = np.abs(rnd(3, 4, seed=2)) * 3 + 0.3
NEGX = -(np.abs(rnd(3, 4, seed=3)) * 3 + 0.05)   # negative non-integers: the reflection formulas
F32 = dict(rtol=2e-6, atol=5e-7)   # the erf family: tinygrad's erf is float32-accurate, also in float64 (docs/porting.md)

NN = ["relu", "relu6", "gelu", "silu", "swish", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "elu", "celu", "selu",
      "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu", "tanh", "softmax", "log_softmax"]
ROWS = [Row(f"nn.{n}", getattr(tnn, n), getattr(jnn, n), (X,)) for n in NN]
ROWS += [
  Row("nn.gelu-exact", lambda x: tnn.gelu(x, approximate=False), lambda x: jnn.gelu(x, approximate=False), (X,), **F32),
  Row("nn.softmax-axis0", lambda x: tnn.softmax(x, axis=0), lambda x: jnn.softmax(x, axis=0), (X,)),
  Row("nn.softmax-axes", lambda x: tnn.softmax(x, axis=(0, 1)), lambda x: jnn.softmax(x, axis=(0, 1)), (X,), vmap_last=True),
  Row("nn.log_softmax-where", lambda x: tnn.log_softmax(x, where=x > -1),
      lambda x: jnn.log_softmax(x, where=x > -1), (X,), vmap=False, diff=False),
  Row("nn.standardize", tnn.standardize, jnn.standardize, (X,)),
  Row("nn.logsumexp", lambda x: tnn.logsumexp(x, axis=1), lambda x: jnn.logsumexp(x, axis=1), (X,)),
  Row("nn.glu", tnn.glu, jnn.glu, (X,)),
  Row("nn.one_hot", lambda k: tnn.one_hot(k, 4), lambda k: jnn.one_hot(k, 4), (np.array([0, 3, 5, -1, 2]),), diff=False),
  Row("nn.one_hot-axis0", lambda k: tnn.one_hot(k, 3, axis=0), lambda k: jnn.one_hot(k, 3, axis=0), (np.array([2, 0, 1]),), diff=False),
  Row("special.logsumexp", tsp.logsumexp, jsp.logsumexp, (X,)),
  Row("special.logsumexp-b", lambda x, b: tsp.logsumexp(x, axis=0, b=b), lambda x, b: jsp.logsumexp(x, axis=0, b=b), (X, POS), vmap_last=True),
  Row("special.logsumexp-keepdims", lambda x: tsp.logsumexp(x, axis=-1, keepdims=True),
      lambda x: jsp.logsumexp(x, axis=-1, keepdims=True), (X,), vmap_last=True),
  Row("special.logsumexp-sign", lambda x, b: tsp.logsumexp(x, axis=1, b=b, return_sign=True),
      lambda x, b: jsp.logsumexp(x, axis=1, b=b, return_sign=True), (X, X), diff=False),
  Row("special.erf", tsp.erf, jsp.erf, (X,), **F32),
  Row("special.erfc", tsp.erfc, jsp.erfc, (X / 3,), **F32),
  Row("special.erfinv", tsp.erfinv, jsp.erfinv, (2 * P - 1,), **F32),
  Row("special.gammaln", tsp.gammaln, jsp.gammaln, (POS,), rtol=1e-10, atol=1e-12),
  Row("special.gammaln-negative", tsp.gammaln, jsp.gammaln, (NEGX,), rtol=1e-7, atol=1e-9),
  Row("special.digamma", tsp.digamma, jsp.digamma, (POS,), rtol=1e-9, atol=1e-10, diff=False),
  Row("special.digamma-negative", tsp.digamma, jsp.digamma, (NEGX,), rtol=1e-7, atol=1e-8, diff=False, vmap=False),
  Row("special.xlogy", tsp.xlogy, jsp.xlogy, (X, POS)),
  Row("special.xlog1py", tsp.xlog1py, jsp.xlog1py, (X, P)),
  Row("special.expit", tsp.expit, jsp.expit, (X,)),
  Row("special.logit", tsp.logit, jsp.logit, (P,)),
  Row("special.ndtr", tsp.ndtr, jsp.ndtr, (X,), **F32),
  Row("special.ndtri", tsp.ndtri, jsp.ndtri, (P,), **F32),
  Row("special.log_ndtr", tsp.log_ndtr, jsp.log_ndtr, (X * 4,), rtol=2e-5, atol=1e-6),
  Row("special.entr", tsp.entr, jsp.entr, (P,)),
  Row("stats.norm.logpdf", lambda x, m, s: tst.norm.logpdf(x, m, s), lambda x, m, s: jst.norm.logpdf(x, m, s), (X, P, POS), vmap_last=True),
  Row("stats.norm.pdf", tst.norm.pdf, jst.norm.pdf, (X,)),
  Row("stats.norm.cdf", lambda x, m: tst.norm.cdf(x, m, 2.0), lambda x, m: jst.norm.cdf(x, m, 2.0), (X, P), **F32),
  Row("stats.norm.logcdf", tst.norm.logcdf, jst.norm.logcdf, (X,), rtol=1e-5, atol=1e-6),
  Row("stats.norm.sf", tst.norm.sf, jst.norm.sf, (X,), **F32),
  Row("stats.norm.ppf", tst.norm.ppf, jst.norm.ppf, (P,), **F32),
  Row("stats.multivariate_normal.logpdf", lambda x, m: tst.multivariate_normal.logpdf(x, m, np.eye(4) + 0.3),
      lambda x, m: jst.multivariate_normal.logpdf(x, m, np.eye(4) + 0.3), (X, X[0]), rtol=1e-8, atol=1e-9),
  Row("stats.bernoulli.logpmf", lambda p: tst.bernoulli.logpmf(np.array([0, 1, 1, 2]), p),
      lambda p: jst.bernoulli.logpmf(np.array([0, 1, 1, 2]), p), (P[0],)),
  Row("stats.poisson.logpmf", lambda mu: tst.poisson.logpmf(np.array([0, 1, 3, 7]), mu),
      lambda mu: jst.poisson.logpmf(np.array([0, 1, 3, 7]), mu), (POS[0],), rtol=1e-9, atol=1e-11),
  # poisson.cdf sums max_terms pmfs in one kernel (64 by default: ~12 s to compile per check): the transforms with 8 terms,
  # enough for k <= 7, and the value once with the default
  Row("stats.poisson.cdf", lambda mu: tst.poisson.cdf(np.array([0, 1, 3, 7]), mu, max_terms=8),
      lambda mu: jst.poisson.cdf(np.array([0, 1, 3, 7]), mu), (POS[0],), rtol=1e-8, atol=1e-10),
  Row("stats.poisson.cdf", lambda mu: tst.poisson.cdf(np.array([0, 1, 3, 7]), mu),
      lambda mu: jst.poisson.cdf(np.array([0, 1, 3, 7]), mu), (POS[0],), rtol=1e-8, atol=1e-10, vmap=False, diff=False,
      id="stats.poisson.cdf-64-terms"),
  Row("stats.gamma.logpdf", lambda x, a: tst.gamma.logpdf(x, a), lambda x, a: jst.gamma.logpdf(x, a), (POS, POS[::-1]), rtol=1e-9, atol=1e-10),
  Row("stats.beta.logpdf", lambda x, a: tst.beta.logpdf(x, a, 2.5), lambda x, a: jst.beta.logpdf(x, a, 2.5), (P * 0.7, POS), rtol=1e-6, atol=1e-8),
  Row("stats.t.logpdf", lambda x, df: tst.t.logpdf(x, df), lambda x, df: jst.t.logpdf(x, df), (X, POS), rtol=1e-9, atol=1e-10),
  Row("stats.uniform.logpdf", lambda x: tst.uniform.logpdf(x, -1.0, 2.0), lambda x: jst.uniform.logpdf(x, -1.0, 2.0), (X,), diff=False),
  Row("stats.expon.logpdf", tst.expon.logpdf, jst.expon.logpdf, (X,), diff=False),
  Row("stats.laplace.logpdf", tst.laplace.logpdf, jst.laplace.logpdf, (X,)),
  Row("stats.logistic.logpdf", tst.logistic.logpdf, jst.logistic.logpdf, (X,)),
  Row("stats.cauchy.logpdf", tst.cauchy.logpdf, jst.cauchy.logpdf, (X,)),
]

@pytest.mark.parametrize("row,check", params(ROWS, vmap_last="none"))
def test_table(row, check): run(row, check)

EDGES = np.array([0.0, -0.0, 6.0, -1e-3, 40.0, -40.0, np.inf, -np.inf], np.float32)

@pytest.mark.parametrize("name", NN)
def test_nn_edges_and_kinks(name):
  """Values at edges and JAX's derivatives at the kinks (relu'(0) = 0, relu6 at 6, leaky_relu at 0...), float32."""
  with x64_off():
    x = EDGES[:6] if name not in ("softmax", "log_softmax") else EDGES[:6]
    assert_close(getattr(tnn, name)(x), np.asarray(getattr(jnn, name)(x)), rtol=6e-6, atol=1e-7)
    g = tinyjax.vmap(tinyjax.grad(lambda v: getattr(tnn, name)(v).sum()))(Tensor(x[:, None]))
    want = jax.vmap(jax.grad(lambda v: getattr(jnn, name)(v).sum()))(x[:, None])
    if name == "tanh":   # 1 - tanh(6)^2 from a float32 tanh: one ulp of tanh is 0.5% of it, and JAX's tanh(6) is 2 ulps
      want = (1 - np.tanh(x.astype(np.float64)) ** 2)[:, None].astype(np.float32)   # off where tinyjax's is correctly rounded: the exact value
    assert_close(g, np.asarray(want), rtol=2e-6 if name != "tanh" else 5e-3, atol=1e-7)

def test_logsumexp_edges():
  """all -inf gives -inf (and gradient 0, not nan); an inf gives inf; b = 0 drops a term."""
  m = np.array([[-np.inf, -np.inf], [0.0, -np.inf], [np.inf, 1.0]])
  assert_close(tsp.logsumexp(m, axis=1), np.asarray(jsp.logsumexp(m, axis=1)))
  assert_close(tsp.logsumexp(X, axis=1, b=(X > 0) * 1.0), np.asarray(jsp.logsumexp(X, axis=1, b=(X > 0) * 1.0)))

def test_cross_entropy_hessian():
  """hessian of a log_softmax cross-entropy, as JAX."""
  y = np.eye(4)[[1, 3, 0]]
  def ce(lib_nn, w, x): return -(lib_nn.log_softmax(x @ w) * y).sum()
  W, Xs = rnd(3, 4, seed=5), rnd(3, 3, seed=6)
  assert_close(tinyjax.hessian(lambda w: ce(tnn, w, Xs))(W), lambda: jax.hessian(lambda w: ce(jnn, w, Xs))(W))

def test_dtypes_x64_off():
  with x64_off():
    for fn, jfn in [(tnn.relu, jnn.relu), (tnn.softmax, jnn.softmax), (tsp.erf, jsp.erf), (tsp.gammaln, jsp.gammaln)]:
      for x in (np.array([1, 2]), np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0], np.float16)):
        assert to_np(fn(x)).dtype == np.asarray(jfn(x)).dtype, (fn, x.dtype)
    assert to_np(tnn.one_hot(np.array([0, 1]), 2)).dtype == np.asarray(jnn.one_hot(np.array([0, 1]), 2)).dtype

def test_initializers():
  """zeros/ones/constant as JAX's; fans as JAX's; the random ones draw JAX's parameters from the same key (normal and
  truncated_normal within 6 float32 eps, as the samplers: erfinv)."""
  import jax.nn.initializers as jinit
  import tinyjax.random as tr
  from jax._src.nn.initializers import _compute_fans
  key = jax.random.key(0)
  assert_close(tnn.initializers.zeros(None, (2, 3)), np.asarray(jinit.zeros(key, (2, 3))))
  assert_close(tnn.initializers.constant(2.5)(None, (2,)), np.asarray(jinit.constant(2.5)(key, (2,))))
  for shape in [(3, 4), (5, 3, 4), (2, 3, 5, 7)]:
    assert tnn.initializers.compute_fans(shape) == tuple(float(f) for f in _compute_fans(shape))
  with x64_off():
    for name, args in [("glorot_normal", ()), ("glorot_uniform", ()), ("he_normal", ()), ("lecun_uniform", ()), ("normal", (0.5,)),
                       ("uniform", (2.0,)), ("truncated_normal", (0.3,))]:
      got = getattr(tnn.initializers, name)(*args)(tr.PRNGKey(3), (16, 8))
      want = getattr(jinit, name)(*args)(jax.random.PRNGKey(3), (16, 8))
      np.testing.assert_allclose(to_np(got), np.asarray(want), rtol=8e-7, atol=2e-7, err_msg=name)
    got = tnn.initializers.variance_scaling(2.0, "fan_geo_avg", "normal", in_axis=1, out_axis=0)(tr.PRNGKey(1), (4, 6, 3))
    want = jinit.variance_scaling(2.0, "fan_geo_avg", "normal", in_axis=1, out_axis=0)(jax.random.PRNGKey(1), (4, 6, 3))
    np.testing.assert_allclose(to_np(got), np.asarray(want), rtol=8e-7, atol=2e-7)
  with pytest.raises(ValueError, match="invalid mode"): tnn.initializers.variance_scaling(1.0, "fan_x", "normal")

def test_kernels_as_hand_written():
  x = Tensor(rnd(8, 16)).realize()
  assert kernel_count(lambda: tnn.relu(x).realize()) == kernel_count(lambda: x.relu().realize())
  assert kernel_count(lambda: tnn.softmax(x).realize()) == kernel_count(lambda: x.softmax().realize())

def test_missing_name():
  with pytest.raises(AttributeError, match=r"jax.scipy.stats.vonmises is not implemented in tinyjax"): tst.vonmises  # noqa: B018

def test_math_constants():
  assert math.isclose(float(tsp.gammaln(np.array(0.5))), math.lgamma(0.5), rel_tol=1e-12)

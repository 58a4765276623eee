"""tinyjax.random against jax.random (threefry2x32, partitionable, as jax 0.10's defaults): keys, split, fold_in and bits
bit for bit, uniform exactly, normal within a few ulps; under vmap over keys and jit with traced keys; JAX's errors."""
import numpy as np
import pytest
import jax
import jax.random as jr
import tinyjax
from tinygrad import Tensor
import tinyjax.random as tr
from conftest import to_np
from jnp_table import x64_off

SEEDS = [0, 1, -1, 42, 2**31 - 1, -2**31]

def same(got, want):
  got, want = to_np(got), np.asarray(want)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  np.testing.assert_array_equal(got, want)

def ulps(got, want) -> float:
  got, want = to_np(got), np.asarray(want)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  return float((np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want)).astype(np.float64)).max())

@pytest.mark.parametrize("x64", [False, True])
def test_keys_split_fold_in_bits_are_jax_bits(x64):
  import contextlib
  with (contextlib.nullcontext() if x64 else x64_off()):
    seeds = SEEDS + ([2**40 + 5, -2**40, np.int32(-7)] if x64 else [np.int32(-7)])
    for s in seeds:
      same(tr.PRNGKey(s), jr.PRNGKey(s))
      same(tr.key_data(tr.key(s)), jr.key_data(jr.key(s)))
    k, t = jr.PRNGKey(42), tr.PRNGKey(42)
    for num in (2, 5, (2, 3)): same(tr.split(t, num), jr.split(k, num))
    for d in (0, 7, 2**32 - 1, np.uint32(5)): same(tr.fold_in(t, d), jr.fold_in(k, d))
    same(tr.bits(t, (3, 5)), jr.bits(k, (3, 5)))   # uint32, or uint64 with x64
    same(tr.bits(t), jr.bits(k))
    for dt in (np.uint8, np.uint16, np.uint32) + ((np.uint64,) if x64 else ()): same(tr.bits(t, (7,), dt), jr.bits(k, (7,), dt))
    same(tr.split(tr.fold_in(tr.split(t)[1], 3), 4), jr.split(jr.fold_in(jr.split(k)[1], 3), 4))   # chains of them

def test_uniform_is_jax_uniform():
  with x64_off():
    k, t = jr.PRNGKey(3), tr.PRNGKey(3)
    same(tr.uniform(t, (2000,)), jr.uniform(k, (2000,)))   # the same bits under the exponent of 1: exactly
    same(tr.uniform(t, (10, 20), minval=-2, maxval=3), jr.uniform(k, (10, 20), minval=-2, maxval=3))
    same(tr.uniform(t, (100,), np.float16), jr.uniform(k, (100,), np.float16))
  same(tr.uniform(tr.PRNGKey(3), (2000,)), jr.uniform(jr.PRNGKey(3), (2000,)))   # x64: float64 from 64 bits

def test_normal_within_3_ulps():
  """sqrt(2) erfinv(u) with XLA's float32 erfinv: the same u, and at most 3 ulps apart (the tails, where erfinv is
  steep)."""
  with x64_off():
    for seed in (0, 1, 2):
      assert ulps(tr.normal(tr.PRNGKey(seed), (20000,)), jr.normal(jr.PRNGKey(seed), (20000,))) <= 3

def test_float64_normal_and_erf_inv_are_xlas():
  """float64 normal takes XLA's double precision ErfInv64 (it refined the float32 approximation by Newton steps on
  tinygrad's float32-accurate erf: up to 1.7e-4 from JAX's draws, and wrong at tiny x): within a few ulps of JAX's, most
  draws bit for bit."""
  a = np.asarray(tr.normal(tr.PRNGKey(3), (20000,), dtype=np.float64))
  b = np.asarray(jr.normal(jr.PRNGKey(3), (20000,), dtype=np.float64))
  assert a.dtype == b.dtype == np.float64 and np.mean(a == b) > 0.8
  np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)   # (|draws| < 6: a few ulps)
  x = np.concatenate([np.linspace(-1, 1, 4001), 1 - np.logspace(-16, -1, 200), [1e-300, -1e-300, 0.5e-8]])
  got, want = np.asarray(tinyjax.lax.erf_inv(tinyjax.numpy.asarray(x))), np.asarray(jax.lax.erf_inv(x))
  np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
  fin = np.isfinite(want)
  np.testing.assert_allclose(got[fin], want[fin], rtol=2e-14, atol=0)

def test_vmap_over_keys_gives_each_example_jax_numbers():
  with x64_off():
    keys_j = jr.split(jr.PRNGKey(0), 6)
    keys_t = tr.split(tr.PRNGKey(0), 6)
    same(tinyjax.vmap(lambda k: tr.uniform(k, (4,)))(keys_t), jax.vmap(lambda k: jr.uniform(k, (4,)))(keys_j))
    same(tinyjax.vmap(lambda k: tr.split(k, 3))(keys_t), jax.vmap(lambda k: jr.split(k, 3))(keys_j))
    same(tinyjax.vmap(tr.fold_in, in_axes=(None, 0))(keys_t[0], np.arange(5, dtype=np.uint32)),
         jax.vmap(jr.fold_in, in_axes=(None, 0))(keys_j[0], np.arange(5, dtype=np.uint32)))
    same(tinyjax.vmap(lambda k: tr.bits(k, (2, 3)), in_axes=1, out_axes=1)(keys_t.T),
         jax.vmap(lambda k: jr.bits(k, (2, 3)), in_axes=1, out_axes=1)(keys_j.T))

def test_grad_through_uniform_bounds_and_vmap_of_grad():
  """uniform is differentiable in minval and maxval, as in JAX; grad inside vmap over keys."""
  with x64_off():
    k, t = jr.PRNGKey(1), tr.PRNGKey(1)
    def f(lo, hi): return (jr.uniform(k, (50,), minval=lo, maxval=hi) ** 2).sum()
    def g(lo, hi): return (tr.uniform(t, (50,), minval=lo, maxval=hi) ** 2).sum()
    np.testing.assert_allclose(to_np(list(tinyjax.grad(g, (0, 1))(-0.5, 2.0))), np.asarray(jax.grad(f, (0, 1))(-0.5, 2.0)), rtol=2e-6)
    want = jax.vmap(lambda kk: jax.grad(lambda s: (jr.normal(kk, (3,)) * s).sum())(1.0))(jr.split(k, 2))
    got = tinyjax.vmap(lambda kk: tinyjax.grad(lambda s: (tr.normal(kk, (3,)) * s).sum())(1.0))(tr.split(t, 2))
    np.testing.assert_allclose(to_np(got), np.asarray(want), rtol=2e-6)

def test_jit_traces_keys():
  """A key is an argument like any other: a new key gives new numbers without retracing."""
  with x64_off():
    traces = []
    @tinyjax.jit
    def f(k):
      traces.append(1)
      k1, k2 = tr.split(k)
      return tr.uniform(k1, (3,)) + tr.bits(k2, (3,)).astype(tinyjax.numpy.float32)
    def g(k):
      k1, k2 = jr.split(k)
      return jr.uniform(k1, (3,)) + jr.bits(k2, (3,)).astype(np.float32)
    for s in range(4): same(f(tr.PRNGKey(s)), jax.jit(g)(jr.PRNGKey(s)))
    n = len(traces)
    same(f(tr.PRNGKey(9)), jax.jit(g)(jr.PRNGKey(9)))
    assert len(traces) == n

def test_errors():
  with x64_off():
    k = tr.PRNGKey(0)
    with pytest.raises(ValueError, match="split accepts a single key, but was given a key array of shape"): tr.split(tr.split(k))
    with pytest.raises(TypeError, match="fold_in accepts a scalar"): tr.fold_in(k, np.arange(2))
    with pytest.raises(OverflowError): tr.fold_in(k, -3)
    with pytest.raises(ValueError, match="must be an unsigned int dtype"): tr.bits(k, (2,), np.int32)
    with pytest.raises(ValueError, match="must be a float dtype"): tr.uniform(k, (2,), np.int32)
    with pytest.raises(TypeError, match="PRNG key seed must be an integer"): tr.PRNGKey(1.5)
    with pytest.raises(TypeError, match="a PRNG key is a uint32 array of shape"): tr.uniform(np.zeros(2, np.float32))
    with pytest.raises(AttributeError, match="jax.random.rbg_key is not implemented in tinyjax"): tr.rbg_key  # noqa: B018


def test_one_uniform_samplers_match_jax():
  """bernoulli and rademacher bit for bit; exponential, laplace, logistic and gumbel (JAX's formulas on the same uniform
  draw) within 2 float32 eps of max(|x|, 1): log and log1p differ from XLA's by an ulp, which the formulas amplify where
  the result is near 0."""
  with x64_off():
    k, t = jr.PRNGKey(7), tr.PRNGKey(7)
    p = np.linspace(0, 1, 50, dtype=np.float32)
    assert (tr.bernoulli(t, 0.3, (500,)).numpy() == np.asarray(jr.bernoulli(k, 0.3, (500,)))).all()
    assert (tr.bernoulli(t, Tensor(p)).numpy() == np.asarray(jr.bernoulli(k, p))).all()
    assert (tr.rademacher(t, (100,)).numpy() == np.asarray(jr.rademacher(k, (100,)))).all()
    for name in ["exponential", "laplace", "logistic", "gumbel"]:
      a, b = getattr(tr, name)(t, (2000,)).numpy(), np.asarray(getattr(jr, name)(k, (2000,)))
      assert a.dtype == b.dtype == np.float32
      err = np.abs(a.astype(np.float64) - b) / (np.finfo(np.float32).eps * np.maximum(np.abs(b), 1))
      assert err.max() <= 2.0, (name, err.max())
  with pytest.raises(TypeError, match="bernoulli probability `p` must have a floating dtype"):
    tr.bernoulli(t, 1)


def test_randint_and_permutation_are_jax_bits():
  with x64_off():
    k, t = jr.PRNGKey(11), tr.PRNGKey(11)
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    lo = np.array([0, 10, 100], np.int32)
    got = [tr.randint(t, (300,), 0, 10), tr.randint(t, (300,), -5, 1000003), tr.randint(t, (4,), 5, 5),
           tr.randint(t, (2, 3), Tensor(lo), 200), tr.permutation(t, 10),
           tr.permutation(t, Tensor(x)), tr.permutation(t, Tensor(x), axis=1, independent=True),
           tinyjax.vmap(lambda kk: tr.permutation(kk, 7))(tr.split(t, 3)),
           tinyjax.jit(lambda kk: tr.randint(kk, (5,), 0, 100))(tr.fold_in(t, 3))]
    want = [jr.randint(k, (300,), 0, 10), jr.randint(k, (300,), -5, 1000003), jr.randint(k, (4,), 5, 5),
            jr.randint(k, (2, 3), lo, 200), jr.permutation(k, 10),
            jr.permutation(k, x), jr.permutation(k, x, axis=1, independent=True),
            jax.vmap(lambda kk: jr.permutation(kk, 7))(jr.split(k, 3)), jr.randint(jr.fold_in(k, 3), (5,), 0, 100)]
    for g, w in zip(got, want, strict=True): same(g, w)
  with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
    tr.randint(t, (2,), 0, 5, dtype=np.float32)
  with pytest.raises(TypeError, match="x must be an integer or at least 1-dimensional"):
    tr.permutation(t, Tensor(2.5))


def close(got, want, bound, exact_nan=True):
  """at most `bound` eps of max(|want|, 1) apart, NaNs in the same places"""
  got, want = to_np(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
  err = np.abs(got.astype(np.float64) - want) / (np.finfo(want.dtype).eps * np.maximum(np.abs(want), 1))
  assert np.nanmax(err) <= bound, np.nanmax(err)


def test_composed_samplers_match_jax():
  """categorical and choice bit for bit (Gumbel argmax and top k, randint, permutation, a search in cumsum(p));
  truncated_normal, cauchy and multivariate_normal within a few eps (erf, erfinv, tan and cholesky against XLA's)."""
  with x64_off():
    k, t = jr.PRNGKey(5), tr.PRNGKey(5)
    lg = np.random.RandomState(0).randn(5, 7).astype(np.float32)
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    p = np.array([0.1, 0.2, 0.3, 0.15, 0.25], np.float32)
    got = [tr.categorical(t, Tensor(lg[0]), shape=(300,)), tr.categorical(t, Tensor(lg), axis=0),
           tr.categorical(t, Tensor(lg[0]), shape=(3,), replace=False), tr.choice(t, 10, (20,)),
           tr.choice(t, 10, (5,), replace=False), tr.choice(t, Tensor(x), (2,), replace=False, axis=1),
           tr.choice(t, Tensor(x), (4,)), tr.choice(t, 5, (30,), p=Tensor(p)), tr.choice(t, 5, (3,), replace=False, p=Tensor(p))]
    want = [jr.categorical(k, lg[0], shape=(300,)), jr.categorical(k, lg, axis=0), jr.categorical(k, lg[0], shape=(3,), replace=False),
            jr.choice(k, 10, (20,)), jr.choice(k, 10, (5,), replace=False), jr.choice(k, x, (2,), replace=False, axis=1),
            jr.choice(k, x, (4,)), jr.choice(k, 5, (30,), p=p), jr.choice(k, 5, (3,), replace=False, p=p)]
    for g, w in zip(got, want, strict=True): same(g, w)
    close(tr.truncated_normal(t, -1.5, 2.0, (2000,)), jr.truncated_normal(k, -1.5, 2.0, (2000,)), 6)
    close(tr.cauchy(t, (2000,)), jr.cauchy(k, (2000,)), 2)
    cov = np.array([[2., .5, .1], [.5, 1., .2], [.1, .2, .7]], np.float32)
    mean = np.array([1., 2., 3.], np.float32)
    close(tr.multivariate_normal(t, Tensor(mean), Tensor(cov), (50,)), jr.multivariate_normal(k, mean, cov, (50,)), 6)
    # reparameterised: gradients in the parameters, as JAX's
    g = tinyjax.grad(lambda m, lo: (tr.truncated_normal(t, lo, 2.0, (5,)) * m).sum(), (0, 1))(1.5, -1.0)
    w = jax.grad(lambda m, lo: (jr.truncated_normal(k, lo, 2.0, (5,)) * m).sum(), (0, 1))(1.5, -1.0)
    np.testing.assert_allclose(to_np(list(g)), np.asarray(w), rtol=1e-5)
    g = tinyjax.grad(lambda m, c: tr.multivariate_normal(t, m, c, (3,)).sum(), (0, 1))(Tensor(mean), Tensor(cov))
    w = jax.grad(lambda m, c: jr.multivariate_normal(k, m, c, (3,)).sum(), (0, 1))(mean, cov)
    for a, b in zip(g, w, strict=True): np.testing.assert_allclose(to_np(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Cannot take a larger sample"): tr.choice(t, 3, (5,), replace=False)
    with pytest.raises(ValueError, match="p must be None or a 1D vector"): tr.choice(t, 3, (2,), p=Tensor(p))
    with pytest.raises(ValueError, match="Number of samples without replacement"):
      tr.categorical(t, Tensor(lg[0]), shape=(9,), replace=False)


def test_rejection_samplers_match_jax():
  """gamma, loggamma (in beta and dirichlet), beta, dirichlet and t run JAX's Marsaglia-Tsang loop per element (lax.while_loop, keys split as
  JAX splits them), poisson JAX's Knuth and Hormann loops over the array: the same draws are accepted, so poisson is
  bit for bit and the floats are within a few eps; under vmap over keys and under jit with a traced key. Every gamma
  draw here has 8 elements: one compiled loop body (a new size compiles the body's threefry kernels again, seconds)."""
  with x64_off():
    k, t = jr.PRNGKey(5), tr.PRNGKey(5)
    a = np.array([0.3, 1.0, 2.5, 10.], np.float32)
    close(tr.gamma(t, Tensor(a), (2, 4)), jr.gamma(k, a, (2, 4)), 4)
    close(tr.beta(t, 2.0, 0.5, (8,)), jr.beta(k, 2.0, 0.5, (8,)), 3)
    alpha = np.array([1., 2.], np.float32)
    close(tr.dirichlet(t, Tensor(alpha), (4,)), jr.dirichlet(k, alpha, (4,)), 3)
    close(tr.t(t, 3.0, (8,)), jr.t(k, 3.0, (8,)), 3)
    jitted = tinyjax.jit(lambda kk: tr.gamma(kk, 2.0, (8,)))
    for s in (1, 2): close(jitted(tr.PRNGKey(s)), jr.gamma(jr.PRNGKey(s), 2.0, (8,)), 4)
    lam = np.array([0., 0.5, 5., 20., 500., 3., 11., 9.9], np.float32)
    same(tr.poisson(t, Tensor(lam)), jr.poisson(k, lam))
    keys_t, keys_j = tr.split(t, 2), jr.split(k, 2)
    same(tinyjax.vmap(lambda kk: tr.poisson(kk, 4.0, (4,)))(keys_t), jax.vmap(lambda kk: jr.poisson(kk, 4.0, (4,)))(keys_j))
    with pytest.raises(NotImplementedError, match="derivative with respect to the shape parameter"):
      tinyjax.grad(lambda aa: tr.gamma(t, aa, (3,)).sum())(2.0)
    with pytest.raises(ValueError, match="dtype argument to `poisson` must be an int dtype"): tr.poisson(t, 2.0, (2,), np.float32)

def test_eager_key_chains_and_draws_are_jax_numbers_without_graphs():
  """Outside transforms, split/fold_in hash a concrete key on the host (also a row of a key array: the tuple unpacking
  `key, sub = split(key)`) and a sampler runs one compiled kernel on it: JAX's numbers, computed (no lazy graph)."""
  from tinygrad.helpers import GlobalCounters
  from tinyjax._tg import is_lazy
  with x64_off():
    for mk_t, mk_j in ((tr.PRNGKey, jr.PRNGKey), (tr.key, jr.key)):
      kt, kj = mk_t(7), mk_j(7)
      for i in range(3):
        kt, st = tr.split(kt)
        kj, sj = jr.split(kj)
        before = GlobalCounters.kernel_count
        draws = [tr.normal(st, (3,)), tr.uniform(st, (1,)), tr.randint(st, (), 0, 2 + i)]
        assert GlobalCounters.kernel_count - before == 3 and not any(is_lazy(d) for d in draws)
        assert ulps(draws[0], jr.normal(sj, (3,))) <= 3
        same(draws[1], jr.uniform(sj, (1,)))
        same(draws[2], jr.randint(sj, (), 0, 2 + i))
        kt, kj = tr.fold_in(kt, i), jr.fold_in(kj, i)
      same(tr.key_data(tr.split(kt, 43)), jr.key_data(jr.split(kj, 43)))   # many keys: hashed as numpy arrays
      same(tr.key_data(tr.split(tr.split(kt, 4)[::-1][1], (2, 2))), jr.key_data(jr.split(jr.split(kj, 4)[::-1][1], (2, 2))))
      keys_t, keys_j = tr.split(kt, 3), jr.split(kj, 3)
      assert ulps(tinyjax.vmap(lambda k: tr.normal(k, (2,)))(keys_t), jax.vmap(lambda k: jr.normal(k, (2,)))(keys_j)) <= 3
      assert ulps(tinyjax.jit(lambda k: tr.normal(k, (2,)))(kt), jax.jit(lambda k: jr.normal(k, (2,)))(kj)) <= 3

def test_normal_float32_transform_at_every_uniform_value():
  """float32 normal is a function of 23 random bits: at all 2^23 values its branch-free transform gives the numbers of
  sqrt(2) erf_inv(u) (the float64 path's formula; what normal computed before) and is within 3 ulps of JAX's."""
  import math
  from jax import lax
  from tinyjax._tg import dtypes
  from tinyjax.lax import special
  bits = np.arange(2 ** 23, dtype=np.uint32) << 9
  lo = np.nextafter(np.float32(-1), np.float32(0))
  u = lambda b: tr._from_bits(b, dtypes.float32, float(lo), 1.0)   # noqa: E731
  fast = tinyjax.jit(lambda b: tr._normal_of(u(b), dtypes.float32))(Tensor(bits))
  general = tinyjax.jit(lambda b: special.erf_inv(u(b)) * float(np.float32(math.sqrt(2))))(Tensor(bits))
  same(fast, general)
  def jax_normal(b):   # jax.random's _uniform and _normal_real after the bits
    f = lax.bitcast_convert_type(lax.shift_right_logical(b, np.uint32(9)) | np.uint32(0x3F800000), np.float32) - np.float32(1)
    return np.float32(np.sqrt(2)) * lax.erf_inv(lax.max(lo, f * (np.float32(1) - lo) + lo))
  assert ulps(fast, jax.jit(jax_normal)(bits)) <= 3

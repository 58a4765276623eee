"""tinyjax.lax.special's kernels against JAX, and against the exact values where JAX is worse (its CPU flushes denormals
to 0; its lgamma and digamma cancel near their zeros): expm1 up to the overflow bound, cbrt within an ulp (denormals and
huge values too), acosh near 1 and below -1, the signed zeros of asin, atan, asinh and atan2, lgamma and digamma at
their zeros and poles, softmax and log_softmax of rows with infinities. float32 and float64, eager and under jit, in
ulps; derivatives as JAX's."""
import numpy as np
import pytest
import jax
import jax.numpy as jnp
import jax.scipy.special as jss
from jax import lax as jlax
import scipy.special as sps
import tinyjax
import tinyjax.numpy as tnp
import tinyjax.nn as tnn
import tinyjax.scipy.special as tss
from tinyjax import lax as tlax
from conftest import to_np
from jnp_table import x64_off

F32, F64 = np.float32, np.float64
DTYPES = [F32, F64]
LD = np.longdouble
EXTENDED = np.finfo(LD).eps < 1e-18   # the float64 references below are computed in x87 long double
needs_extended = pytest.mark.skipif(not EXTENDED, reason="float64 references need an extended long double")

def ulps(got, want) -> np.ndarray:
  """|got - want| in ulps of their dtype (0 where both are nan, inf where one is); signed zeros are 0 apart."""
  got, want = np.asarray(got), np.asarray(want, got.dtype)
  it = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
  def ordinal(a):
    i = a.view(it).astype(np.int64)
    return np.where(i < 0, np.iinfo(it).min - i, i).astype(object)   # (Python ints: no overflow)
  d = np.abs(ordinal(got) - ordinal(want)).astype(np.float64)
  return np.where(np.isnan(got) & np.isnan(want), 0, np.where(np.isnan(got) | np.isnan(want), np.inf, d))

def runs(fn, *args):
  """fn's values eagerly and under tinyjax.jit."""
  return [to_np(fn(*args)), to_np(tinyjax.jit(fn)(*args))]

def assert_within(got, want, bound, x, what):
  u = ulps(got, want)
  i = int(np.argmax(u))
  assert u.max() <= bound, f"{what}: {u.max()} ulps at x={x[i]!r}: {got[i]!r}, want {want[i]!r}"

def normal(a, dt) -> np.ndarray:
  """a is finite and 0 or not a denormal (where JAX's CPU flushes)."""
  a = np.asarray(a, np.float64)
  return np.isfinite(a) & ((a == 0) | (np.abs(a) >= np.finfo(dt).tiny))

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan]

def edges(dt) -> list[float]:
  f = np.finfo(dt)
  return [float(v) for v in (f.max, -f.max, f.tiny, -f.tiny, f.smallest_subnormal, -f.smallest_subnormal)]

def exact(f, x: np.ndarray) -> np.ndarray:
  """f at double precision for float32 (rounded once more), at long double precision for float64."""
  with np.errstate(all="ignore"): return f(x.astype(F64 if x.dtype == F32 else LD)).astype(x.dtype)

def same_specials(got, want):
  """Equal values, signs of zeros and nans."""
  assert (np.isnan(got) == np.isnan(want)).all(), (got, want)
  ok = ~np.isnan(want)
  assert (got[ok] == want[ok]).all() and (np.signbit(got[ok]) == np.signbit(want[ok])).all(), (got, want)


# ---- expm1 ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
def test_expm1_up_to_the_overflow_bound(dt):
  # Kahan's (u - 1) x / log u overflowed in its product: inf from 84.3 (float32) / 703.2 (float64) on, though e^x - 1
  # is finite up to 88.72 / 709.78. XLA's: tanh(x/2) (e^x + 1) for |x| <= 1/2, e^x - 1 beyond
  if dt == F64 and not EXTENDED: pytest.skip("float64 references need an extended long double")
  top = float(np.log(np.finfo(dt).max))
  tiny = float(np.finfo(dt).smallest_subnormal)
  x = np.concatenate([np.linspace(-110, top, 3000), np.linspace(top - 6, top, 500), np.geomspace(tiny, 2, 1500),
                      -np.geomspace(tiny, 2, 1500), np.linspace(-0.6, 0.6, 801), edges(dt)]).astype(dt)
  x = x[np.isfinite(exact(np.expm1, x))]
  want, jx = exact(np.expm1, x), np.asarray(jnp.expm1(x))
  assert np.isfinite(jx[x > 84.3]).all()   # (the oracle: finite up to the bound)
  for got in runs(tnp.expm1, x):
    assert np.isfinite(got).all()
    assert_within(got, want, 2, x, "expm1 vs exact")
    ok = normal(x, dt) & normal(jx, dt)
    assert_within(got[ok], jx[ok], 5, x[ok], "expm1 vs JAX")
  sp = np.array(SPECIALS, dt)
  for got in runs(tnp.expm1, sp): same_specials(got, np.asarray(jnp.expm1(sp)))


# ---- cbrt ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
def test_cbrt_within_an_ulp(dt):
  # x.sign() * |x|^(1/3) was up to 51 (float32) / 438 (float64) ulps off, cbrt(27) = 3.0000002 and cbrt(-0.) +0.; JAX's
  # are within 1 / 3 ulps (0 or garbage for denormal inputs, which its CPU flushes: the exact cube root is the oracle)
  if dt == F64 and not EXTENDED: pytest.skip("float64 references need an extended long double")
  f = np.finfo(dt)
  with np.errstate(over="ignore"): mags = np.geomspace(float(f.smallest_subnormal), float(f.max), 6000)   # (its last power)
  cubes = np.arange(1, 300, dtype=np.float64) ** 3
  x = np.concatenate([mags, -mags, cubes, -cubes, [-5.483576396723166e-36, -2.709440089046915e+284 if dt == F64 else 8.0], edges(dt)]).astype(dt)
  want, jx = exact(np.cbrt, x), np.asarray(jnp.cbrt(x))
  for got in runs(tnp.cbrt, x):
    assert_within(got, want, 1, x, "cbrt vs exact")
    ok = normal(x, dt)
    assert_within(got[ok], jx[ok], 3, x[ok], "cbrt vs JAX")
    n = len(mags) * 2
    np.testing.assert_array_equal(got[n:n + 2 * len(cubes)], np.concatenate([np.arange(1, 300), -np.arange(1, 300)]).astype(dt))
  sp = np.array(SPECIALS, dt)
  for got in runs(tnp.cbrt, sp): same_specials(got, np.asarray(jnp.cbrt(sp)))
  assert float(tnp.cbrt(27.0)) == 3.0 and np.signbit(to_np(tnp.cbrt(np.array([-0.0], dt)))).all()


# ---- acosh ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
def test_acosh_near_one_and_below_minus_one(dt):
  # log(x + sqrt(x^2 - 1)) cancelled near 1 (983 / 2.5e7 ulps off; JAX's CHLO log1p form is within 3), and x <= -1e10
  # gave -+inf (nan: acosh is undefined below 1)
  if dt == F64 and not EXTENDED: pytest.skip("float64 references need an extended long double")
  f = np.finfo(dt)
  with np.errstate(over="ignore"): huge = np.geomspace(1, float(f.max), 2000)
  x = np.concatenate([1 + np.arange(0, 200) * float(f.eps), 1 + np.geomspace(float(f.eps), 1, 2000), huge,
                      [float(f.max) / 2, np.nextafter(f.max / 2, 0), 1e10]]).astype(dt)
  want, jx = exact(np.arccosh, x), np.asarray(jnp.arccosh(x))
  below = np.array([0.999, 0.5, 0.0, -0.0, -1.0, -1.5, -1e10, -float(f.max), -np.inf, np.nan,
                    np.nextafter(dt(1), dt(0))], dt)
  for got in runs(tnp.arccosh, x):
    assert_within(got, want, 6, x, "acosh vs exact")
    assert_within(got, jx, 6, x, "acosh vs JAX")
  for got in runs(tnp.arccosh, below): assert np.isnan(got).all() and np.isnan(np.asarray(jnp.arccosh(below))).all()
  same_specials(to_np(tnp.arccosh(np.array([1.0, np.inf], dt))), np.asarray(jnp.arccosh(np.array([1.0, np.inf], dt))))

def test_acosh_of_python_floats_at_their_width():
  for x in (1.0000001, 3e38, 1e300):
    assert ulps(to_np(tnp.arccosh(x)), np.asarray(jnp.arccosh(x))) <= 6
  with x64_off():
    got, want = to_np(tnp.arccosh(3e38)), np.asarray(jnp.arccosh(3e38))
    assert got.dtype == want.dtype == F32 and ulps(got, want) <= 1


# ---- signed zeros --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
def test_signed_zeros(dt):
  # asin, atan and asinh of -0. were +0. (JAX: -0.), and so was atan2(-y, +inf)
  z = np.array([-0.0, 0.0], dt)
  for name in ("arcsin", "arctan", "arcsinh"):
    for got in runs(getattr(tnp, name), z): same_specials(got, np.asarray(getattr(jnp, name)(z)))
  v = np.array(SPECIALS + [1.5, -1.5, 7.7, -7.7] + edges(dt), dt)
  y, x = (a.ravel() for a in np.meshgrid(v, v, indexing="ij"))
  want = np.asarray(jnp.arctan2(y, x))
  ok = normal(y, dt) & normal(x, dt) & normal(exact(lambda a: np.arctan2(a, x.astype(a.dtype)), y), dt)   # (JAX flushes)
  for got in runs(tnp.arctan2, y, x):
    assert (np.signbit(got) == np.signbit(want))[ok & ~np.isnan(want)].all()
    assert_within(got[ok], want[ok], 1, np.stack([y, x], 1)[ok], "atan2 vs JAX")


# ---- lgamma, digamma -----------------------------------------------------------------------------------------------------

EULER = LD("0.577215664901532860606512090082402431")

def lgamma_series(d: np.ndarray, at: int) -> np.ndarray:
  """lgamma(at + d), at = 1 or 2, |d| <= 1/8, in long double: -gamma d + sum_k (-1)^k zeta(k) / k d^k (DLMF 5.7.3),
  + log1p(d) for lgamma(2 + d)."""
  d = d.astype(LD)
  s = -EULER * d
  for k in range(2, 40): s = s + LD((-1) ** k * sps.zeta(k)) / k * d ** k
  return s + np.log1p(d) if at == 2 else s

_STIRLING = [LD(1) / 12, LD(-1) / 360, LD(1) / 1260, LD(-1) / 1680, LD(1) / 1188, LD(-691) / 360360, LD(1) / 156,
             LD(-3617) / 122400]

def lgamma_stirling(x: np.ndarray) -> np.ndarray:
  """lgamma(x), x in [1/2, 3), in long double: Stirling's series at x + 16, less the logs of x ... x + 15."""
  x = x.astype(LD)
  z = x + 16
  s = (z - LD(0.5)) * np.log(z) - z + np.log(LD("6.28318530717958647692528676655900577")) / 2
  for k, c in enumerate(_STIRLING): s = s + c / z ** (2 * k + 1)
  for k in range(16): s = s - np.log(x + k)
  return s

@pytest.mark.parametrize("dt", DTYPES)
def test_lgamma_at_and_near_its_zeros(dt):
  # XLA's Lanczos sum cancels towards lgamma's zeros 1 and 2 with 4-16 eps of absolute error: gammaln(2) was 2.4e-7
  # (float32) / -7.8e-16 (float64), gammaln(1) 6e-8 / -4.4e-16, signs wrong near both. JAX's are as far off (its
  # float32 lgamma(1) is 4.8e-7, its signs wrong too, lgamma(2) = 0 by a rounding's luck): the exact values are the
  # oracle on [1/2, 3), where tinyjax uses Boost's rational approximations
  if dt == F64 and not EXTENDED: pytest.skip("float64 references need an extended long double")
  eps, rng = float(np.finfo(dt).eps), np.random.default_rng(0)
  d = np.concatenate([np.arange(-60, 61) * eps / 2, rng.uniform(-1 / 8, 1 / 8, 400), [2.0 ** -k for k in range(4, 40)]])
  near_1 = np.unique((1 + d).astype(dt))
  near_2 = np.unique((2 + 2 * d).astype(dt))
  wide = rng.uniform(0.5, 3, 2000).astype(dt)
  wide = wide[(np.abs(wide - 1) > 1 / 8) & (np.abs(wide - 2) > 1 / 8)]
  x = np.concatenate([near_1, near_2, wide])
  want = np.concatenate([lgamma_series(near_1.astype(F64) - 1, 1), lgamma_series(near_2.astype(F64) - 2, 2),
                         lgamma_stirling(wide)]).astype(dt)
  jx = np.asarray(jss.gammaln(x))
  assert np.abs(jx.astype(F64) - want).max() > 2 * eps   # (JAX's own error here: its values are no oracle)
  for got in runs(tss.gammaln, x):
    assert_within(got, want, 6, x, "lgamma vs exact")
    assert (np.sign(got) == np.sign(want)).all()
    assert np.abs(got.astype(F64) - jx).max() <= 20 * eps   # JAX's, to its absolute error
  for got in runs(tlax.lgamma, np.array([1.0, 2.0], dt)):
    np.testing.assert_array_equal(got, [0.0, 0.0])
    assert not np.signbit(got).any()

@pytest.mark.parametrize("dt", DTYPES)
def test_lgamma_special_values(dt):
  sp = np.array(SPECIALS + [-1.0, -2.0, -30.0, 3.0, 0.25, 1e-30, -1e-30, -0.5, 1e-7, -1e-7, 1e20] + edges(dt), dt)
  want = np.asarray(jss.gammaln(sp))
  ok = normal(sp, dt)
  for got in runs(tss.gammaln, sp):
    assert (np.isnan(got) == np.isnan(want)).all() and (np.isinf(got) == np.isinf(want))[ok].all()
    assert_within(got[ok], want[ok], 4, sp[ok], "lgamma vs JAX")
  # a denormal: -log(x) (JAX's CPU flushes it to 0: inf)
  tiny = np.array([np.finfo(dt).smallest_subnormal], dt)
  assert_within(to_np(tss.gammaln(tiny)), -np.log(tiny.astype(F64)).astype(dt), 1, tiny, "lgamma of a denormal")

@pytest.mark.parametrize("dt", DTYPES)
def test_digamma_poles_and_positive_root(dt):
  # digamma(+-0) was -inf (XLA's math.cc; JAX lowers CHLO's: nan at every non-positive integer); on [1, 2] XLA's Lanczos
  # cancels to the root 1.4616 (JAX's and tinyjax's values a median 17 ulps off on [1.1, 1.7]): Boost's rational there
  rng = np.random.default_rng(1)
  poles = np.array([0.0, -0.0, -1.0, -2.0, -25.0, -np.inf], dt)
  for got in runs(tss.digamma, poles): assert np.isnan(got).all() and np.isnan(np.asarray(jss.digamma(poles))).all()
  root = 1.4616321449683622
  x = np.concatenate([rng.uniform(1, 2, 2000), root + rng.uniform(-1e-3, 1e-3, 200), root * (1 + np.arange(-50, 51) * float(np.finfo(dt).eps)),
                      [1.0, 1.5, 2.0]]).astype(dt)
  want = sps.psi(x.astype(F64)).astype(dt)   # (scipy's psi: within 2 ulps of the exact values on [1, 2])
  for got in runs(tss.digamma, x): assert_within(got, want, 2 if dt == F32 else 4, x, "digamma vs exact")
  sp = np.array([np.inf, np.nan, 3.0, 30.0, 1e30, 0.5, -0.5, -25.7508544921875, 1e-30, -1e-30], dt)
  want = np.asarray(jss.digamma(sp))
  for got in runs(tss.digamma, sp):
    assert (np.isnan(got) == np.isnan(want)).all()
    assert_within(got, want, 128, sp, "digamma vs JAX")   # (-25.75: the reflection's cancellation, 30x for both)

@pytest.mark.parametrize("dt", [np.float16])
def test_16_bit_floats_at_float32(dt):
  # XLA computes lgamma and digamma of 16-bit floats at float32 (lgamma was computed at float16: 1.4e4 ulps off)
  x = np.concatenate([np.linspace(-9.75, 9.75, 79), np.linspace(0.6, 2.9, 47)]).astype(dt)
  x = x[x != np.floor(x)]
  for t, j in ((tlax.lgamma, jlax.lgamma), (tlax.digamma, jlax.digamma), (tlax.cbrt, jlax.cbrt), (tlax.expm1, jlax.expm1)):
    got, want = to_np(t(x)), np.asarray(j(x))
    assert got.dtype == want.dtype == dt
    assert_within(got, want, 8, x, t.__name__)


# ---- softmax, log_softmax ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
def test_softmax_of_rows_with_infinities(dt):
  # the shift by the row's maximum was 0 where that is infinite: [inf, 0, 0, 0] gave [nan, 0, 0, 0] (log_softmax
  # [nan, -inf, -inf, -inf]); JAX subtracts the maximum as it is: all nan. A row with no entry in `where` is 0 (-inf)
  inf, nan = np.inf, np.nan
  x = np.array([[inf, 0, 0, 0], [-inf, -inf, -inf, -inf], [-inf, 0, 1, 2], [inf, -inf, 1, 2], [nan, 0, 1, 2],
                [1, 2, 3, 4], [-1e30, 0, 1e30, 5]], dt)
  w = np.array([[True] * 4, [True] * 4, [False] * 4, [True, False, True, False], [False, True, True, True],
                [True, True, False, True], [False] * 4])
  tol = dict(rtol=2e-6 if dt == F32 else 1e-14, atol=0)
  cases = [(tnn.softmax, jax.nn.softmax, {}), (tnn.log_softmax, jax.nn.log_softmax, {}),
           (tnn.softmax, jax.nn.softmax, {"where": w}), (tnn.log_softmax, jax.nn.log_softmax, {"where": w}),
           (lambda v: tnn.softmax(v, axis=0), lambda v: jax.nn.softmax(v, axis=0), {}),
           (lambda v: tss.softmax(v, axis=1), lambda v: jss.softmax(v, axis=1), {}),
           (lambda v: tss.log_softmax(v, axis=1), lambda v: jss.log_softmax(v, axis=1), {})]
  for t, j, kw in cases:
    want = np.asarray(j(x, **kw))
    for got in runs(lambda v: t(v, **kw), x): np.testing.assert_allclose(got, want, **tol)


# ---- derivatives ---------------------------------------------------------------------------------------------------------

GRADS = {
  "expm1": [-3.0, -0.6, -0.3, -1e-3, 1e-8, 0.2, 0.5, 0.7, 5.0, 80.0, 700.0],
  "cbrt": [-8.0, -0.3, 1e-5, 2.0, 27.0, 1e10, 1e-200],
  "acosh": [1.0001, 1.5, 3.0, 1e5, 1e300],
  "asin": [-0.9, -0.2, 0.0, 0.4, 0.99],
  "atan": [-30.0, -1.0, 0.0, 0.3, 2.5],
  "asinh": [-50.0, -0.5, 0.0, 1e-3, 4.0],
  "lgamma": [0.7, 1.0, 1.2, 1.7, 2.0, 2.5, 3.3, -0.4, -2.7, 12.0],
  "digamma": [0.7, 1.0, 1.2, 1.4616, 1.7, 2.0, 2.5, 3.3, -0.4, -2.7, 12.0],
}

@pytest.mark.parametrize("name", list(GRADS))
def test_derivatives_are_jaxs(name):
  x = np.array(GRADS[name])
  got = to_np(tinyjax.vmap(tinyjax.grad(getattr(tlax, name)))(x))
  want = np.asarray(jax.vmap(jax.grad(getattr(jlax, name)))(x))
  np.testing.assert_allclose(got, want, rtol=1e-12)
  got = to_np(tinyjax.jit(tinyjax.vmap(tinyjax.grad(getattr(tlax, name))))(x))
  np.testing.assert_allclose(got, want, rtol=1e-12)

def test_derivatives_of_atan2_and_softmax_are_jaxs():
  y, x = np.array([-1.0, 0.5, 3.0, -2.0]), np.array([2.0, -0.3, 1.0, -4.0])
  for g, w in zip(to_np(tinyjax.grad(lambda a, b: tlax.atan2(a, b).sum(), argnums=(0, 1))(y, x)),
                  jax.grad(lambda a, b: jlax.atan2(a, b).sum(), argnums=(0, 1))(y, x), strict=True):
    np.testing.assert_allclose(g, np.asarray(w), rtol=1e-14)
  v, c = np.array([[0.3, -1.2, 2.0, 0.1], [5.0, 4.0, -3.0, 0.0]]), np.array([[1.0, 2.0, -1.0, 0.5]])
  for t, j in ((tnn.softmax, jax.nn.softmax), (tnn.log_softmax, jax.nn.log_softmax)):
    got = to_np(tinyjax.grad(lambda a: (t(a) * c).sum())(v))
    np.testing.assert_allclose(got, np.asarray(jax.grad(lambda a: (j(a) * c).sum())(v)), rtol=1e-13)

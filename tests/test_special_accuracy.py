"""tinyjax.scipy.special against JAX where an accuracy sweep found it wrong: ndtri for small p (sqrt 2 erfinv(2p - 1)
lost p below an ulp of 1: -inf from 1.5e-8 in float32) and outside [0, 1]; ndtr's tails (0.5 erfc(-x / sqrt 2): 250 /
3000 ulps) and log_ndtr's (up to 1e6 ulps); entr and xlogy overflowing (x * log2(y) * ln 2) near the largest float;
xlogy(0, nan) and xlog1py(0, nan) 0, not nan; softmax's default axis (all of them, as scipy's). float32 and float64,
eagerly and under jit, in ulps; the derivatives as JAX's (log_ndtr's and entr's custom rules, xlogy's at x = 0)."""
import numpy as np
import pytest
import jax
import jax.numpy as jnp
import jax.scipy.special as jss
import tinyjax
import tinyjax.numpy as tnp
import tinyjax.scipy.special as tss
from conftest import to_np, same_error, ulps, eager_and_jitted

F32, F64 = np.float32, np.float64
DTYPES = pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan]


def assert_ulps(got, want, bound, x, what):
  u = ulps(got, want)
  i = int(np.argmax(u))
  assert u.max() <= bound, f"{what}: {u.max()} ulps at x={x[i]!r}: {got[i]!r}, want {want[i]!r}"

def cast(x, dt) -> np.ndarray:
  """x in dt, without the denormals (JAX's CPU reads them as 0)."""
  with np.errstate(over="ignore", under="ignore"): x = np.asarray(x, np.float64).astype(dt)
  return x[~((x != 0) & (np.abs(x) < np.finfo(dt).tiny))]

def both_signs(lo, hi, n=1000): return np.concatenate([np.geomspace(lo, hi, n), -np.geomspace(lo, hi, n)])


@DTYPES
def test_ndtr(dt):
  """JAX's erf / erfc split at |x| / sqrt 2 = sqrt(1/2), in its lower tail down to the denormals (float32 erfc is a few
  ulps from XLA's)."""
  x = cast(np.concatenate([np.linspace(-40, 10, 8001), both_signs(1e-30, 40), SPECIALS]), dt)
  want = np.asarray(jss.ndtr(x))
  for how, got in eager_and_jitted(tss.ndtr, x): assert_ulps(got, want, 10 if dt == F32 else 4, x, f"ndtr {how}")

@DTYPES
def test_log_ndtr(dt):
  """JAX's three pieces: -ndtr(-x) above 5 (float64: 8) and the asymptotic series below -10 (-20) within a few ulps;
  log(ndtr(x)) between, within 8 eps (a log near 0 of ndtr's rounding: JAX's own numbers are only that precise)."""
  x = cast(np.concatenate([np.linspace(-60, 40, 8001), both_signs(1e-30, 1e30), SPECIALS]), dt)
  want = np.asarray(jss.log_ndtr(x))
  middle = (x > -3) & (x <= (5 if dt == F32 else 8))
  for how, got in eager_and_jitted(tss.log_ndtr, x):
    assert_ulps(got[~middle], want[~middle], 6, x[~middle], f"log_ndtr {how}")
    np.testing.assert_allclose(got[middle], want[middle], rtol=4 * np.finfo(dt).eps, atol=8 * np.finfo(dt).eps)

@DTYPES
@pytest.mark.parametrize("order", [0, 1, 2, 5, 30])
def test_log_ndtr_series_order(order, dt):
  x = cast(np.concatenate([np.linspace(-60, -3, 2001), [-1e10, -1e30, -np.inf]]), dt)
  want = np.asarray(jss.log_ndtr(x, series_order=order))
  assert_ulps(to_np(tss.log_ndtr(x, series_order=order)), want, 6, x, f"log_ndtr series_order={order}")

def test_log_ndtr_series_order_errors():
  for order in (-1, 31, 2.0):
    assert same_error(lambda: tss.log_ndtr(1.0, series_order=order), lambda: jss.log_ndtr(1.0, series_order=order))

@DTYPES
def test_ndtri(dt):
  """Cephes' three rational approximations, as JAX's: down to the smallest normal p and up to 1 - eps / 2, 0 and 1
  (-inf and inf), nan outside [0, 1]."""
  f = np.finfo(dt)
  p = cast(np.concatenate([np.geomspace(f.tiny, 1, 4000), 1 - np.geomspace(f.eps / 2, 0.5, 1000), np.linspace(0, 1, 4001),
                           [-1e-30, -0.5, 1.5, 1 + 4 * f.eps, -1.0, 2.0], SPECIALS]), dt)
  want = np.asarray(jss.ndtri(p))
  for how, got in eager_and_jitted(tss.ndtri, p): assert_ulps(got, want, 8, p, f"ndtri {how}")

def test_sweep_reproducers():
  p = np.array([1e-7, 1e-8, 1e-20, -1e-30], F32)
  assert_ulps(to_np(tss.ndtri(p)), np.asarray(jss.ndtri(p)), 4, p, "ndtri")
  assert np.isnan(to_np(tss.ndtri(p))[3])
  y = np.array([-34.40232315325005, -32.45316089019695])
  assert_ulps(to_np(tss.ndtr(y)), np.asarray(jss.ndtr(y)), 2, y, "ndtr")
  x = np.array([3.3e36], F32)
  assert_ulps(to_np(tss.entr(x)), np.asarray(jss.entr(x)), 2, x, "entr")
  zero, nan = np.zeros(1), np.full(1, np.nan)
  assert np.isnan(to_np(tss.xlogy(zero, nan))) and np.isnan(to_np(tss.xlog1py(zero, nan)))

def test_python_scalars():
  """A Python float (weakly typed, float64 with x64) as JAX's: its value and dtype."""
  for v in (-30.0, -9.0, -0.0, 1e-30, 0.3, 1.0, 9.0, 1e300, float("inf"), float("nan")):
    for fn, jfn in [(tss.ndtr, jss.ndtr), (tss.log_ndtr, jss.log_ndtr), (tss.ndtri, jss.ndtri), (tss.entr, jss.entr),
                    (lambda x: tss.xlogy(x, x), lambda x: jss.xlogy(x, x)), (lambda x: tss.xlogy(0.0, x), lambda x: jss.xlogy(0.0, x))]:
      with np.errstate(all="ignore"): got, want = to_np(fn(v)), np.asarray(jfn(v))   # (folded on the host by numpy)
      assert got.dtype == want.dtype and ulps(got, want) <= 4, (v, got, want)

@DTYPES
def test_entr_xlogy_xlog1py(dt):
  """x log(y) as JAX computes it (no overflow before the last rounding: xlogy(3.3e36, 3.3e36) in float32 is finite),
  0 at x = 0 unless y is nan, entr's -inf below 0 and -0. at 0."""
  f = np.finfo(dt)
  x = cast(np.concatenate([np.geomspace(f.tiny, f.max * (1 - 1e-6), 3000), [0.0, -0.0, -1.0, -f.max, 1.0, f.max], SPECIALS[2:]]), dt)
  cases = [("entr", tss.entr, jss.entr, (x,)),
           ("xlogy", tss.xlogy, jss.xlogy, (x, x)),
           ("xlogy-reversed", tss.xlogy, jss.xlogy, (x[::-1], x)),
           ("xlog1py", tss.xlog1py, jss.xlog1py, (x, x)),
           ("xlog1py-reversed", tss.xlog1py, jss.xlog1py, (x[::-1], x - 1))]
  for name, fn, jfn, args in cases:
    want = np.asarray(jfn(*args))
    # (and log1p's own distance from XLA's: lax.special's is up to 128 ulps off in float64 near -0.41)
    bound = 4 + 2 * ulps(to_np(tnp.log1p(args[1])), np.asarray(jnp.log1p(args[1]))) if "log1p" in name else 4
    for how, got in eager_and_jitted(fn, *args):
      assert got.dtype == want.dtype
      u = ulps(got, want)
      assert (u <= bound).all(), f"{name} {how}: at {x[u > bound][:4]}: {got[u > bound][:4]}, want {want[u > bound][:4]}"
  # x = 0 against every y, and x against y = 0 and -1
  zeros = np.zeros_like(x)
  for fn, jfn in [(tss.xlogy, jss.xlogy), (tss.xlog1py, jss.xlog1py)]:
    for args in [(zeros, x), (-zeros, x), (x, zeros), (x, zeros - 1)]:
      assert_ulps(to_np(fn(*args)), np.asarray(jfn(*args)), 4, x, fn.__name__)

def test_softmax_axes():
  """jax.scipy.special's softmax and log_softmax are over every axis by default (scipy's; jax.nn's over the last)."""
  x = np.random.default_rng(0).standard_normal((3, 4))
  for fn, jfn in [(tss.softmax, jss.softmax), (tss.log_softmax, jss.log_softmax)]:
    for kw in [{}, {"axis": 0}, {"axis": 1}, {"axis": (0, 1)}, {"axis": None}]:
      np.testing.assert_allclose(to_np(fn(x, **kw)), np.asarray(jfn(x, **kw)), rtol=1e-14, atol=1e-15, err_msg=str(kw))


# ---- derivatives ------------------------------------------------------------------------------------------------------

def grads(fn, jfn, x, argnum=0, other=None):
  """d fn / d arg `argnum` at each x (the other argument `other`), tinyjax's (eager and jit) and JAX's."""
  def at(f):
    if other is None: return f
    return (lambda v: f(v, other)) if argnum == 0 else (lambda v: f(other, v))
  g = tinyjax.vmap(tinyjax.grad(at(fn)))
  return [to_np(g(x)), to_np(tinyjax.jit(g)(x))], np.asarray(jax.vmap(jax.grad(at(jfn)))(x))

@DTYPES
def test_derivatives(dt):
  x = np.array([-40, -25, -12, -9, -5, -3, -1, -1e-4, -0.0, 0.0, 1e-4, 0.5, 1, 3, 5, 6, 9, 12, 40, np.inf, -np.inf, np.nan], dt)
  p = np.array([0.0, 1e-30, 1e-10, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1 - 1e-6, 1.0, -0.5, 1.5, np.nan], dt)
  pos = np.array([0.0, -0.0, 1e-30, 1e-3, 0.5, 1, 2, 10, 1e30, -1.0, np.inf, np.nan], dt)
  cases = [("ndtr", tss.ndtr, jss.ndtr, x, 0, None), ("ndtri", tss.ndtri, jss.ndtri, p, 0, None),
           ("entr", tss.entr, jss.entr, pos, 0, None),
           ("xlogy dx", tss.xlogy, jss.xlogy, pos, 0, dt(2.0)), ("xlogy dy", tss.xlogy, jss.xlogy, pos, 1, dt(0.5)),
           ("xlogy dy at x=0", tss.xlogy, jss.xlogy, pos, 1, dt(0.0)), ("xlogy dx at y=0", tss.xlogy, jss.xlogy, pos, 0, dt(0.0)),
           ("xlog1py dx", tss.xlog1py, jss.xlog1py, pos, 0, dt(-1.0)), ("xlog1py dy at x=0", tss.xlog1py, jss.xlog1py, pos - 1, 1, dt(0.0))]
  for name, fn, jfn, at, argnum, other in cases:
    got, want = grads(fn, jfn, at, argnum, other)
    for g in got: assert_ulps(g, want, 4, at, f"{name} ({dt.__name__})")

@DTYPES
@pytest.mark.parametrize("order", [3, 0, 5])
def test_log_ndtr_derivative(order, dt):
  """JAX's custom rule: pdf / cdf as exp(log pdf - log_ndtr(x)), whose exponential turns log_ndtr's few ulps into
  ~ x^2 / 2 of them."""
  x = np.array([-60, -40, -25, -18, -12, -9, -5, -3, -1, -1e-4, -0.0, 0.0, 1e-4, 0.5, 1, 3, 5, 6, 9, 12, 40, np.inf, -np.inf,
                np.nan], dt)
  got, want = grads(lambda v: tss.log_ndtr(v, order), lambda v: jss.log_ndtr(v, order), x)
  bound = 4 + 2 * x.astype(F64) ** 2
  for g in got:
    u = ulps(g, want)
    assert (u <= np.where(np.isfinite(bound), bound, 4)).all(), f"at {x[u > bound]}: {g[u > bound]}, want {want[u > bound]}"

"""tinyjax.nn's activations against JAX where an accuracy sweep found them wrong: relu6 past 2^24, at inf and nan
(relu(x) - relu(x - 6) cancelled); elu, selu and celu for small negative x (exp(x) - 1 for expm1), at nan and at -0.;
gelu's exact form in the negative tail (1 + erf cancelled: a wrong sign) and both forms past max / 2 (an overflow);
softmax and log_softmax of a row holding +inf. float32 and float64, eagerly and under jit, in ulps; the derivatives as
JAX's, at the kinks too (relu6 at 0 and 6, elu and celu at 0, hard_sigmoid at -3 and 3)."""
import numpy as np
import pytest
import jax
import tinyjax
import tinyjax.nn as tnn
from conftest import to_np, ulps, eager_and_jitted

F32, F64 = np.float32, np.float64
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan]

def points(dt) -> np.ndarray:
  """Both signs from 1e-30 to the largest float, -10..10 finely, 6 and its neighbours, 2^24 and up, the specials."""
  big = np.finfo(dt).max
  mag = np.geomspace(1e-30, float(big) * (1 - 1e-6), 1500)
  x = np.concatenate([mag, -mag, np.linspace(-10, 10, 2001), [6.0, 5.999999, 6.000001, 2.0 ** 24, 1e8, 1e30, 3e38],
                      [big / 2, big / 1.5, big], SPECIALS])
  with np.errstate(over="ignore"): return x.astype(dt)


def assert_ulps(got, want, bound, x, what):
  u = ulps(got, want)
  i = int(np.argmax(u))
  assert u.max() <= bound, f"{what}: {u.max()} ulps at x={x[i]!r}: {got[i]!r}, want {want[i]!r}"

# (name, tinyjax's, JAX's, ulps allowed: float32, float64); the bounds are the primitives' (expm1 and erfc: a few ulps
# from XLA's)
ACTIVATIONS = [
  ("relu6", tnn.relu6, jax.nn.relu6, 0, 0),
  ("hard_sigmoid", tnn.hard_sigmoid, jax.nn.hard_sigmoid, 0, 0),
  ("elu", tnn.elu, jax.nn.elu, 6, 4),
  ("elu-0.3", lambda x: tnn.elu(x, 0.3), lambda x: jax.nn.elu(x, 0.3), 6, 4),
  ("selu", tnn.selu, jax.nn.selu, 6, 4),
  ("celu", tnn.celu, jax.nn.celu, 6, 4),
  ("celu-3", lambda x: tnn.celu(x, 3.0), lambda x: jax.nn.celu(x, 3.0), 6, 4),
  ("gelu-exact", lambda x: tnn.gelu(x, approximate=False), lambda x: jax.nn.gelu(x, approximate=False), 12, 4),
]

@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
@pytest.mark.parametrize("name,fn,jfn,b32,b64", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_ulps(name, fn, jfn, b32, b64, dt):
  x = points(dt)
  if name == "gelu-exact":   # (below, erfc's value is a denormal, which JAX's CPU flushes to 0: -0. where it is -8e-38)
    x = x[~(x < (-12.9 if dt == F32 else -37.4))]
  want = np.asarray(jfn(x))
  for how, got in eager_and_jitted(fn, x):
    assert got.dtype == want.dtype
    assert_ulps(got, want, b32 if dt == F32 else b64, x, f"{name} {how}")

@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_gelu_tanh(dt):
  """The tanh form: JAX's numbers past max / 2 (x, not inf) and at the specials; elsewhere within the error of its 1 +
  tanh, which cancels for x < 0: tinyjax's tanh is a few ulps from XLA's, so |error| <= 8 eps |x| + 4 ulps."""
  x = points(dt)
  want = np.asarray(jax.nn.gelu(x))
  eps = np.finfo(dt).eps
  for how, got in eager_and_jitted(tnn.gelu, x):
    assert got.dtype == want.dtype
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(invalid="ignore", over="ignore"):
      ok = same | (np.abs(got.astype(F64) - want) <= 8 * eps * np.abs(x.astype(F64)) + 4 * np.spacing(np.abs(want)))
    assert ok.all(), f"gelu {how}: at {x[~ok][:5]}: {got[~ok][:5]}, want {want[~ok][:5]}"
    big = np.abs(x) > np.finfo(dt).max / 4
    np.testing.assert_array_equal(got[big], want[big])

def test_sweep_reproducers():
  """The sweep's cases: relu6 [8 0 nan 0] for [6 6 6 nan]; elu of small negatives 0 and 1.3% off, elu(nan) 0; gelu's
  exact form of the same sign as x, -0. in float64 below -8.3, inf at 3e38; celu(-0.) -0., JAX's +0."""
  x = np.array([1e8, 1e30, np.inf, np.nan], F32)
  np.testing.assert_array_equal(to_np(tnn.relu6(x)), [6, 6, 6, np.nan])
  x = np.array([-1e-4, -1e-6, -1e-8, np.nan], F32)
  for fn, jfn in [(tnn.elu, jax.nn.elu), (tnn.selu, jax.nn.selu), (tnn.celu, jax.nn.celu)]:
    assert_ulps(to_np(fn(x)), np.asarray(jfn(x)), 2, x, fn.__name__)
  x = np.array([-4.0, -5.4162702560424805, 3e38], F32)
  assert_ulps(to_np(tnn.gelu(x, approximate=False)), np.asarray(jax.nn.gelu(x, approximate=False)), 2, x, "gelu")
  x = np.array([-8.5, -10.0, -20.0, -30.0])
  got = to_np(tnn.gelu(x, approximate=False))
  assert (got < 0).all()
  assert_ulps(got, np.asarray(jax.nn.gelu(x, approximate=False)), 4, x, "gelu float64")
  for dt in (F32, F64):
    zeros = np.array([-0.0, 0.0], dt)
    for fn, jfn in [(tnn.celu, jax.nn.celu), (tnn.relu6, jax.nn.relu6), (tnn.elu, jax.nn.elu), (tnn.selu, jax.nn.selu)]:
      np.testing.assert_array_equal(np.signbit(to_np(fn(zeros))), np.signbit(np.asarray(jfn(zeros))), err_msg=fn.__name__)

def test_python_scalars():
  """A Python float (weakly typed, float64 with x64) as JAX's: its value and dtype."""
  for v in (7.0, 3.0, -0.0, -1e-8, -9.0, 1e300, float("nan")):
    for fn, jfn in [(tnn.relu6, jax.nn.relu6), (tnn.elu, jax.nn.elu), (tnn.celu, jax.nn.celu), (tnn.selu, jax.nn.selu),
                    (tnn.hard_sigmoid, jax.nn.hard_sigmoid), (lambda x: tnn.gelu(x, approximate=False), lambda x: jax.nn.gelu(x, approximate=False))]:
      with np.errstate(all="ignore"): got, want = to_np(fn(v)), np.asarray(jfn(v))   # (folded on the host by numpy)
      assert got.dtype == want.dtype and ulps(got, want) <= 4, (v, got, want)

def test_softmax_of_a_row_with_inf():
  """A +inf in a row makes it all nan (inf - inf), as JAX's; rows of -inf and masked rows too."""
  x = np.array([[np.inf, 0.0, 0.0, 0.0], [1.0, np.inf, np.inf, 2.0], [-np.inf] * 4, [np.nan, 0, 1, 2], [-np.inf, 0, 1, 2]], F32)
  where = np.array([[True, True, False, True]] * 5)
  for fn, jfn in [(tnn.softmax, jax.nn.softmax), (tnn.log_softmax, jax.nn.log_softmax)]:
    for got, want in [(fn(x), jfn(x)), (tinyjax.jit(fn)(x), jfn(x)), (fn(x, where=where), jfn(x, where=where))]:
      np.testing.assert_allclose(to_np(got), np.asarray(want), rtol=4e-7, atol=0)   # (nan where JAX's is)

# the derivatives: at the kinks (relu6 at 0 and 6, elu and celu at 0, hard_sigmoid at -3 and 3), the specials and the
# regions above
KINKS = np.array([-40, -10, -6, -3, -1, -1e-4, -1e-8, -0.0, 0.0, 1e-8, 1e-4, 0.5, 1, 3, 5.99, 6, 6.01, 10, 40, np.inf, -np.inf,
                  np.nan])
GRADS = [
  ("relu6", tnn.relu6, jax.nn.relu6),
  ("hard_sigmoid", tnn.hard_sigmoid, jax.nn.hard_sigmoid),
  ("hard_silu", tnn.hard_silu, jax.nn.hard_silu),
  ("elu", tnn.elu, jax.nn.elu),
  ("elu-0.3", lambda x: tnn.elu(x, 0.3), lambda x: jax.nn.elu(x, 0.3)),
  ("selu", tnn.selu, jax.nn.selu),
  ("celu", tnn.celu, jax.nn.celu),
  ("celu-3", lambda x: tnn.celu(x, 3.0), lambda x: jax.nn.celu(x, 3.0)),
  ("gelu-exact", lambda x: tnn.gelu(x, approximate=False), lambda x: jax.nn.gelu(x, approximate=False)),
]

@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
@pytest.mark.parametrize("name,fn,jfn", GRADS, ids=[g[0] for g in GRADS])
def test_derivatives(name, fn, jfn, dt):
  """grad, eagerly and under jit, and the second derivative, as JAX's (relu6 0 at 0 and 6; elu's negative branch at 0:
  alpha)."""
  x = KINKS.astype(dt)
  g1, g2 = tinyjax.vmap(tinyjax.grad(fn)), tinyjax.vmap(tinyjax.grad(tinyjax.grad(fn)))
  want1, want2 = np.asarray(jax.vmap(jax.grad(jfn))(x)), np.asarray(jax.vmap(jax.grad(jax.grad(jfn)))(x))
  finite = np.isfinite(x)   # (JAX's second derivatives at +-inf are nan or 0 by the order of its rule's products)
  for how, got in [("grad", to_np(g1(x))), ("jit grad", to_np(tinyjax.jit(g1)(x)))]:
    assert_ulps(got, want1, 4, x, f"{name} {how}")
  assert_ulps(to_np(g2(x))[finite], want2[finite], 8, x[finite], f"{name} second derivative")

@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_gelu_tanh_derivative(dt):
  """gelu's tanh form: JAX's derivative, within its 1 + tanh's error (tinyjax's tanh is a few ulps from XLA's)."""
  x = KINKS.astype(dt)
  x = x[np.isfinite(x)]   # (JAX's own derivative is nan or 1 there, by how its x^3 overflows)
  got, want = to_np(tinyjax.vmap(tinyjax.grad(tnn.gelu))(x)), np.asarray(jax.vmap(jax.grad(jax.nn.gelu))(x))
  np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dt).eps, atol=16 * np.finfo(dt).eps * 4)

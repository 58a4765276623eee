"""Sine, cosine and the exponential (tinyjax/_tg/transcendental.py): JAX's numbers over the whole range (numpy's for sin
and cos: JAX's CPU sin and cos of doubles equal them), jitted and eager, through tinyjax's C kernels and tinygrad's
code generation.

tinygrad's float64 sine reduced arguments past 30 with 32 bits of their mantissa (sin(1e5 + 0.3) was 1.2e-5 off,
sin(1e15) any value), its float32 reductions missed pi by 1.2e-10 or lost the remainder near k pi (float32 sin near its
zeros up to 1e7 ulps off) and its cosine is the sine of pi/2 - x rounded (float32 cos(1e4) up to 5e-4 off)."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
import tinyjax
import tinyjax.numpy as jnp

MAGNITUDES = [1, 10, 30, 1e3, 1e5, 1e8, 1e13, 1e14, 1e15, 1e20, 1e100, 1e300]

def _args(dtype) -> np.ndarray:
  rng = np.random.default_rng(5)
  mags = [m for m in MAGNITUDES if m < float(np.finfo(dtype).max)]
  x = np.concatenate([rng.uniform(-m, m, 300) for m in mags] + [np.array([0.0, -0.0, np.pi / 2, np.pi, 1e14, 1e14 * (1 - 2**-52)])])
  return np.concatenate([x, [np.inf, -np.inf, np.nan]]).astype(dtype)

def _ulps(got: np.ndarray, want: np.ndarray, dtype) -> float:
  finite = np.isfinite(want)
  assert np.array_equal(np.isnan(got), np.isnan(want))
  return float((np.abs(got[finite].astype(np.float64) - want[finite]) / np.maximum(np.abs(want[finite]), np.finfo(dtype).tiny)).max()
               / np.finfo(dtype).eps)

@pytest.mark.parametrize("plain", [0, 1])
@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_float64_sin_cos_within_two_ulps_everywhere(fn, plain):
  x = _args(np.float64)
  with np.errstate(invalid="ignore"): want = getattr(np, fn)(x)   # (of inf)
  with Context(TINYJAX_PLAIN_C=plain):
    jitted = tinyjax.jit(lambda v: getattr(Tensor, fn)(v))(Tensor(x)).numpy()
  assert jitted.dtype == np.float64
  assert _ulps(jitted, want, np.float64) <= 2.5

@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_jnp_float64_sin_cos_are_jaxs(fn):
  import jax
  x = _args(np.float64)
  want = np.asarray(getattr(jax.numpy, fn)(x))   # (the suite runs with x64 on)
  eager = np.asarray(getattr(jnp, fn)(jnp.asarray(x)))
  jitted = np.asarray(tinyjax.jit(getattr(jnp, fn))(x))
  for got in (eager, jitted): assert _ulps(got, want, np.float64) <= 2.5

def _float32_args() -> np.ndarray:
  """float32s of every magnitude (random bit patterns, both signs), the nearest ones to k pi/2 (sin or cos near a
  zero: where the reduction's error shows) and their neighbours, the reductions' switch (30), the ends."""
  rng = np.random.default_rng(7)
  bits = rng.integers(0, 0x7F800000, 20000).astype(np.uint32).view(np.float32)
  near = (np.round(np.exp(rng.uniform(0, np.log(1e37), 5000))) * np.pi / 2).astype(np.float32)
  ends = np.float32([np.pi, np.pi / 2, 30, np.nextafter(np.float32(30), np.float32(0)), 3.4028235e38, 1e-45, 0, -0.0, np.inf, -np.inf, np.nan])
  return np.concatenate([bits, -bits, near, np.nextafter(near, np.float32(np.inf)), ends])

def _ulps32(got: np.ndarray, want: np.ndarray) -> float:
  """The largest error in float32 ulps of the exact value (want, float64)."""
  assert np.array_equal(np.isnan(got), np.isnan(want))
  finite = np.isfinite(want)
  ulp = np.spacing(np.abs(want[finite]).astype(np.float32)).astype(np.float64)
  return float((np.abs(got[finite].astype(np.float64) - want[finite]) / ulp).max())

@pytest.mark.parametrize("plain", [0, 1])
@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_float32_sin_cos_within_a_few_ulps_everywhere(fn, plain):
  # tinygrad's float32 reductions: the Cody-Waite one's parts of pi summed to pi + 1.2e-10 and the Payne-Hanek one
  # subtracted pi/2 from a rounded remainder, so near k pi (k pi/2 for cos) sin(x) was up to 1e7 ulps off, some of the
  # wrong sign (JAX: 0.6 ulps); the cosine was the sine of pi/2 - x rounded
  x = _float32_args()
  with np.errstate(invalid="ignore"): want = getattr(np, fn)(x.astype(np.float64))   # exact, then within float32's
  with Context(TINYJAX_PLAIN_C=plain):
    got = tinyjax.jit(getattr(jnp, fn))(x).numpy()
  assert got.dtype == np.float32
  assert _ulps32(got, want) <= 3.5
  signed = np.isfinite(want) & (want != 0)
  assert np.array_equal(np.signbit(got[signed]), np.signbit(want[signed]))

@pytest.mark.parametrize("fn", ["sin", "cos", "tan"])
def test_jnp_float32_sin_cos_tan_are_jaxs_within_a_few_ulps(fn):
  import jax
  x = _float32_args()
  want = np.asarray(getattr(jax.numpy, fn)(x)).astype(np.float64)   # (JAX's within 1 ulp of the exact value)
  eager = np.asarray(getattr(jnp, fn)(jnp.asarray(x)))
  assert eager.dtype == np.float32
  assert _ulps32(eager, want) <= (5.5 if fn == "tan" else 4.5)

def test_sin_of_pi_over_2_minus_x_is_cos_x():
  # a SIN of pi/2 - x is expanded as the cosine of x, also where tinygrad's symbolic folds the negation into a factor
  x = _args(np.float64)[:-3]
  got = tinyjax.jit(lambda v: (np.pi / 2 - v * 3).sin())(Tensor(x)).numpy()
  assert _ulps(got, np.cos(x * 3), np.float64) <= 2.5

# 2/pi in 24-bit words: fdlibm's table (k_rem_pio2.c's ipio2), an oracle independent of tinyjax's own bits of 1/pi
_IPIO2 = [0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163, 0xABDEBB, 0xC561B7,
          0x246E3A, 0x424DD2, 0xE00649, 0x2EEA09, 0xD1921C, 0xFE1DEB, 0x1CB129, 0xA73EE8, 0x8235F5, 0x2EBB44, 0x84E99C,
          0x7026B4, 0x5F7E41, 0x3991D6, 0x398353, 0x39F49C, 0x845F8B, 0xBDF928, 0x3B1FF8, 0x97FFDE, 0x05980F, 0xEF2F11,
          0x8B5A0A, 0x6D1F6D, 0x367ECF, 0x27CB09, 0xB74F46, 0x3F669E, 0x5FEA2D, 0x7527BA, 0xC7EBE5, 0xF17B3D, 0x0739F7,
          0x8A5292, 0xEA6BFB, 0x5FB11F, 0x8D5D08, 0x560330, 0x46FC7B, 0x6BABF0, 0xCFBC20, 0x9AF436, 0x1DA9E3, 0x91615E,
          0xE61B08, 0x659985, 0x5F14A0, 0x68408D, 0xFFD880, 0x4D7327, 0x310606, 0x1556CA, 0x73A8C9, 0x60E27B, 0xC08C6B]

def _exact(x: float) -> tuple[float, float]:
  """(sin x, cos x) rounded from the exact reduction x = k pi/2 + r (r to ~2^-1000 of pi/2, Taylor series in fractions)."""
  from fractions import Fraction
  two_over_pi = Fraction(int("".join(f"{w:06x}" for w in _IPIO2), 16), 1 << (24 * len(_IPIO2)))
  t = Fraction(x) * two_over_pi
  k = round(t)
  r = (t - k) / two_over_pi   # |r| <= pi/4
  s, c, term, n = Fraction(0), Fraction(0), Fraction(1), 0
  while n < 60:   # r^n / n!
    if n % 2: s += term * (-1) ** (n // 2)
    else: c += term * (-1) ** (n // 2)
    n += 1
    term = term * r / n
  return [(float(s), float(c)), (float(c), float(-s)), (float(-s), float(-c)), (float(-c), float(s))][k % 4]

@pytest.mark.parametrize("x", [6381956970095103 * 2.0**797, 5.319372648326541e+255, 1e22, 2.0**1023, 1e14 * (1 + 2**-40),
                               11696476555.083485, 87598474685.45233, 776439596658.6399, 1690250243100.6738, 19156169421807.637,
                               72117343705628.75, 1e9, 1e9 * (1 - 2**-52)])
def test_float64_reduction_at_its_hardest_arguments(x):
  # Muller's worst case (the double nearest a multiple of pi/2: ~61 more bits of 1/pi needed) and other large ones, against
  # the exact value (glibc's, so numpy's and JAX's, cos of the first is ~8 ulp away from it); the doubles nearest k pi/2
  # in binades from 1e10 to 1e14 (continued fractions of 2^e 2/pi), where the Cody-Waite reduction (SLEEF's range: 1e14)
  # was up to 4045 ulps off
  want = np.array(_exact(x))
  got = tinyjax.jit(lambda v: Tensor.stack(v.sin(), v.cos()))(Tensor([x], dtype=dtypes.float64)).numpy().ravel()
  assert (np.abs(got - want) / np.abs(want)).max() <= 2.5 * np.finfo(np.float64).eps, (got, want)

def test_trig_of_float64_is_float64_arithmetic():
  # the Payne-Hanek reduction's limbs are integer arithmetic: a kernel of uint64 ops besides the float64 ones
  y = (Tensor([1e20, 3.0], dtype=dtypes.float64).sin() * 2).numpy()
  np.testing.assert_allclose(y, np.sin([1e20, 3.0]) * 2, rtol=4e-16)


# ---- the exponential: tinygrad's exp2(x log2 e) rounded x log2 e (float32 exp(80) 32 ulps off, float64 exp(700) 219)

@pytest.mark.parametrize("plain", [0, 1])
# (bounds with normal results: JAX flushes float32 denormals to 0)
@pytest.mark.parametrize("dtype, bounds", [(np.float32, (-87.0, 87.0)), (np.float64, (-708.0, 708.0))])
def test_exp_within_about_an_ulp_of_jaxs(dtype, bounds, plain):
  import jax
  rng = np.random.default_rng(6)
  x = np.concatenate([rng.uniform(*bounds, 2000), rng.uniform(-1, 1, 500), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e5, -1e5]]).astype(dtype)
  # exp(x), and exp(-x), exp(x/2) whose factors tinygrad's symbolic folds into log2 e's
  fns = (lambda v: v.exp(), lambda v: (-v).exp(), lambda v: (v * 0.5).exp())
  jfns = (jax.numpy.exp, lambda v: jax.numpy.exp(-v), lambda v: jax.numpy.exp(v * 0.5))
  for fn, jfn in zip(fns, jfns, strict=True):
    with Context(TINYJAX_PLAIN_C=plain): got = tinyjax.jit(fn)(Tensor(x)).numpy().astype(np.float64)
    want = np.asarray(jax.jit(jfn)(x)).astype(np.float64)
    finite = np.isfinite(want) & (want > 0)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
    assert (np.abs(got[finite] - want[finite]) / want[finite]).max() <= 2.5 * np.finfo(dtype).eps


# ---- the power function: tinygrad's exp2(y log2 x) rounded y log2 x: ~|y log2 x| ulps off (float64 up to 1210 ulps from
# JAX's, float32 141), and pow(max, 1) was inf, pow(-0, -1) +inf, pow(1, nan) nan

def _pow_args(dtype) -> tuple[np.ndarray, np.ndarray]:
  rng = np.random.default_rng(9)
  lim = 200 if dtype == np.float64 else 40
  x = np.concatenate([np.exp(rng.uniform(-lim, lim, 2000)), rng.uniform(0, 3, 2000), -np.exp(rng.uniform(-5, 5, 500))])
  y = np.concatenate([rng.uniform(-3, 3, 2000), rng.uniform(-lim * 1.5, lim * 1.5, 2000), np.round(rng.uniform(-20, 20, 500))])
  return x.astype(dtype), y.astype(dtype)

@pytest.mark.parametrize("plain", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_within_two_ulps_of_jaxs(dtype, plain):
  import jax
  x, y = _pow_args(dtype)
  want = np.asarray(jax.jit(jax.numpy.power)(x, y)).astype(np.float64)   # (within an ulp of the exact value)
  with Context(TINYJAX_PLAIN_C=plain):
    jitted = tinyjax.jit(jnp.power)(x, y).numpy()
  eager = jnp.power(jnp.asarray(x), jnp.asarray(y)).numpy()
  normal = np.isfinite(want) & (np.abs(want) >= np.finfo(dtype).tiny)   # (JAX flushes denormal results to 0)
  for got in (jitted, eager):
    assert got.dtype == dtype and np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want))
    assert (np.abs(got[normal] - want[normal]) / np.spacing(np.abs(want[normal]).astype(dtype))).max() <= 2

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_special_values_are_cs(dtype):
  # C99's (and JAX's) pow at zeros of both signs, infinities, nan, +-1 and the largest float, signs included
  import jax
  sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, 3.0, -3.0, 2.5, -2.5, np.finfo(dtype).max], dtype)
  x, y = (a.ravel() for a in np.meshgrid(sp, sp))
  want = np.asarray(jax.numpy.power(x, y))
  for got in (jnp.power(jnp.asarray(x), jnp.asarray(y)).numpy(), tinyjax.jit(jnp.power)(x, y).numpy()):
    ok = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
    ok |= np.abs(want) < np.finfo(dtype).tiny * 2 ** 10   # (max ** -1 and the like: JAX flushes the denormal to 0)
    ok |= np.isclose(got, want, rtol=2 * np.finfo(dtype).eps, atol=0)   # (max ** 0.5: an ulp)
    assert ok.all(), [(a, b, g, w) for a, b, g, w, o in zip(x, y, got, want, ok, strict=True) if not o]

def test_pow_of_a_constant_base():
  # c ** x was exp2(x log2 c) with log2 c rounded (tinygrad's symbolic), now pow: within an ulp or two of numpy's
  x = np.linspace(-300, 300, 601)
  for c in (0.5, 10.0, 1.1, 3.0):
    got = tinyjax.jit(lambda v, c=c: c ** v)(Tensor(x)).numpy()
    np.testing.assert_allclose(got, c ** x, rtol=3 * np.finfo(np.float64).eps, atol=0)

"""tinyjax.numpy's elementwise functions against jax.numpy: one table row per function (value and dtype, vmap (along a
new last axis too for the broadcasting rows), jvp, grad; x64), special values (inf, nan, signed zeros), integer
semantics and dtypes with x64 off, kernels."""
import math
import numpy as np
import pytest
import jax
import jax.numpy as jxn
import tinyjax.numpy as jnp
from tinyjax import lax as tlax
from tinygrad import Tensor
from conftest import rnd, assert_close, to_np, kernel_count
from jnp_table import Row, params, run, x64_off

X = rnd(3, 4)
POS = np.abs(rnd(3, 4, seed=1)) + 0.2
UNIT = np.tanh(rnd(3, 4, seed=2)) * 0.9
Y = rnd(3, 4, seed=3)
ROW = rnd(4, seed=4)
DOMAIN = {"log": POS, "log2": POS, "log10": POS, "log1p": POS, "sqrt": POS, "rsqrt": POS, "reciprocal": POS, "cbrt": POS,
          "arccosh": POS + 1, "acosh": POS + 1, "arcsin": UNIT, "arccos": UNIT, "asin": UNIT, "acos": UNIT, "arctanh": UNIT,
          "atanh": UNIT}
UNARY = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "exp",
         "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "reciprocal", "square", "negative", "positive",
         "abs", "fabs", "sign", "deg2rad", "rad2deg", "sinc"]
NONDIFF = ["floor", "ceil", "trunc", "rint", "round", "isnan", "isinf", "isfinite", "signbit", "logical_not"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp",
          "logaddexp2", "copysign", "heaviside", "mod", "fmod", "floor_divide"]
POWER_BASE = POS

ROWS = [Row(n, getattr(jnp, n), getattr(jxn, n), (DOMAIN.get(n, X),)) for n in UNARY]
ROWS += [Row(n, getattr(jnp, n), getattr(jxn, n), (X * 3,), diff=False) for n in NONDIFF]
ROWS += [Row(n, getattr(jnp, n), getattr(jxn, n), (X, Y), diff=n not in ("heaviside", "floor_divide")) for n in BINARY]
ROWS += [
  Row("add-broadcast", jnp.add, jxn.add, (X, ROW), vmap_last=True),
  Row("add-weak-scalar", lambda x: jnp.add(x, 2.5), lambda x: jxn.add(x, 2.5), (X,)),
  Row("power", jnp.power, jxn.power, (POWER_BASE, Y)),
  Row("power-int-exponent", lambda x: jnp.power(x, 3), lambda x: jxn.power(x, 3), (X,)),
  Row("float_power", jnp.float_power, jxn.float_power, (POWER_BASE, Y)),
  Row("where", lambda c, x, y: jnp.where(c > 0, x, y), lambda c, x, y: jxn.where(c > 0, x, y), (Y, X, ROW), vmap_last=True),
  Row("where-scalar", lambda x: jnp.where(x > 0, x, 0.1 * x), lambda x: jxn.where(x > 0, x, 0.1 * x), (X,)),
  Row("clip", lambda x: jnp.clip(x, -0.5, 0.5), lambda x: jxn.clip(x, -0.5, 0.5), (X,)),
  Row("clip-arrays", lambda x, lo: jnp.clip(x, lo, 1.0), lambda x, lo: jxn.clip(x, lo, 1.0), (X, -np.abs(ROW)), vmap_last=True),
  Row("clip-a_min", lambda x: jnp.clip(x, a_min=0.0), lambda x: jxn.clip(x, min=0.0), (X,)),
  Row("nan_to_num", lambda x: jnp.nan_to_num(x / (x > 0)), lambda x: jxn.nan_to_num(x / (x > 0)), (X,)),
  Row("isclose", lambda x, y: jnp.isclose(x, x + 1e-9 * y), lambda x, y: jxn.isclose(x, x + 1e-9 * y), (X, Y), diff=False),
  Row("allclose", lambda x, y: jnp.allclose(x, y), lambda x, y: jxn.allclose(x, y), (X, Y), diff=False),
  Row("array_equal", lambda x: jnp.array_equal(x, x), lambda x: jxn.array_equal(x, x), (X,), diff=False),
  Row("round-decimals", lambda x: jnp.round(x, 2), lambda x: jxn.round(x, 2), (X,), diff=False),
  Row("less_equal", jnp.less_equal, jxn.less_equal, (X, Y), diff=False),
  Row("logical_and", lambda x, y: jnp.logical_and(x > 0, y > 0), lambda x, y: jxn.logical_and(x > 0, y > 0), (X, Y), diff=False),
]

@pytest.mark.parametrize("row,check", params(ROWS, vmap_last="none"))
def test_table(row, check): run(row, check)

SPECIAL = np.array([0., -0., np.inf, -np.inf, np.nan, 1.5, 2.5, -2.5, 1e-30, 1e30], np.float32)

# documented differences (docs/porting.md): trigonometric functions of huge arguments (tinygrad's argument reduction in
# float32), and fmod/mod/floor_divide when the quotient exceeds float precision (x - trunc(x/y) y, not C's exact fmod)
HUGE_DIFFERS = {"sin", "cos", "tan", "mod", "fmod", "floor_divide"}

@pytest.mark.parametrize("name", UNARY + NONDIFF + BINARY + ["power"])
def test_special_values(name):
  """inf, nan, signed zeros and tiny/huge values, in float32 (x64 off), pairwise for binary functions."""
  with x64_off(), np.errstate(all="ignore"):
    sp = SPECIAL[:-2] if name in HUGE_DIFFERS else SPECIAL
    args = (sp,) if name in UNARY + NONDIFF else (sp[:, None], sp[None, :])
    want = np.asarray(getattr(jxn, name)(*args))
    got = to_np(getattr(jnp, name)(*args))
  assert got.dtype == want.dtype
  np.testing.assert_allclose(got, want, rtol=3e-6, atol=1e-30)

INTS = np.array([-7, -3, -1, 0, 2, 5, 7], np.int32)

@pytest.mark.parametrize("name", ["floor_divide", "mod", "remainder", "fmod", "maximum", "minimum", "add", "multiply", "power",
                                  "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd,lcm", "divide"])
def test_integers(name):
  """Integer semantics incl. division by zero (XLA's answers; a compiled x // 0 must never stop the process)."""
  if "," in name:   # lcm is built on gcd: one test realizes gcd's kernel first, and lcm reuses its compile
    for n in name.split(","): test_integers(n)
    return
  a, b = INTS[:, None], INTS[None, :]
  if name == "power": b = np.abs(b)
  if name in ("left_shift", "right_shift"): a, b = np.abs(a), np.abs(b) % 5
  with x64_off():
    want = np.asarray(getattr(jxn, name)(a, b))
    got = to_np(getattr(jnp, name)(a, b))
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  if name == "divide": np.testing.assert_allclose(got, want, rtol=3e-7)   # tinygrad divides as x * (1/y): 1 ulp
  else: np.testing.assert_array_equal(got, want)

@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_gcd_worst_case(dt):
  """Consecutive Fibonacci numbers take the most Euclid steps (Lame): the largest pair of each width must come out right
  (an unrolled Euclid of 32 steps gave gcd(F46, F45) = 377 instead of 1)."""
  fib = [1, 1]
  while fib[-1] < np.iinfo(dt).max: fib.append(fib[-1] + fib[-2])
  a = np.array([fib[-2], fib[-6] * 6, 12, 0, -fib[-3]], dt)
  b = np.array([fib[-3], fib[-7] * 6, 18, 5, 6], dt)
  want_gcd, want_lcm = np.asarray(jxn.gcd(a, b)), np.asarray(jxn.lcm(a, b))   # x64 on here: int64 stays int64
  np.testing.assert_array_equal(want_gcd, [math.gcd(int(p), int(q)) for p, q in zip(a, b, strict=True)])
  assert want_gcd[0] == 1 and want_gcd[1] == 6
  np.testing.assert_array_equal(to_np(jnp.gcd(a, b)), want_gcd)
  np.testing.assert_array_equal(to_np(jnp.lcm(a, b)), want_lcm)

def test_operators_follow_jax():
  """Tensor's // and % by zero and <= / >= with nan give JAX's answers (tinygrad's: SIGFPE, and True for nan)."""
  a, b = Tensor(INTS), Tensor(np.zeros(7, np.int32))
  np.testing.assert_array_equal((a // b).numpy(), np.asarray(jxn.asarray(INTS) // jxn.zeros(7, jxn.int32)))
  np.testing.assert_array_equal((a % b).numpy(), np.zeros(7))
  n = Tensor([1.0, math.nan])
  assert (n <= 1).tolist() == [True, False] and (n >= 1).tolist() == [True, False]

@pytest.mark.parametrize("name", ["sin", "exp", "sqrt", "abs", "floor", "sign", "negative", "square", "reciprocal", "isnan"])
@pytest.mark.parametrize("dt", ["int32", "bool", "float16", "float32", "uint8"])
def test_unary_dtypes(name, dt):
  """JAX's result dtypes with x64 off: integer inputs of transcendental functions become float32."""
  x = np.array([1, 2, 3]).astype(dt)
  with x64_off():
    try: want = np.asarray(getattr(jxn, name)(x)).dtype
    except (TypeError, ValueError): return   # JAX refuses the dtype: nothing to compare
    assert to_np(getattr(jnp, name)(x)).dtype == want

@pytest.mark.parametrize("a,b", [("int32", 2), ("int8", 2), ("int8", 2.5), ("float16", 2), ("uint8", "int8"), ("int32", "float32"),
                                 ("bool", "int32"), ("float16", "float32"), ("bool", 1.5)])
def test_binary_promotion(a, b):
  with x64_off():
    x = np.array([1, 2, 3]).astype(a)
    y = np.array([3, 1, 2]).astype(b) if isinstance(b, str) else b
    for name in ("add", "multiply", "maximum", "divide"):
      assert to_np(getattr(jnp, name)(x, y)).dtype == np.asarray(getattr(jxn, name)(x, y)).dtype, name

def test_errors():
  with pytest.raises(ValueError, match="Either both or neither"): jnp.where(X > 0, X)

def test_kernels_as_hand_written():
  x = Tensor(rnd(64)).realize()
  assert kernel_count(lambda: (jnp.exp(x) * 2 + jnp.sin(x)).realize()) == kernel_count(lambda: (x.exp() * 2 + x.sin()).realize())
  assert kernel_count(lambda: jnp.where(x > 0, x, 0.1 * x).realize()) == kernel_count(lambda: (x > 0).where(x, 0.1 * x).realize())

def test_weak_scalar_keeps_dtype():
  x = jnp.asarray(np.ones(3, np.float16))
  assert_close(jnp.multiply(x, 2.0), np.full(3, 2, np.float16))


def test_tanh_is_accurate():
  """jnp.tanh within 1.25 ulp of the true value in float32 and float64 (JAX's: 3.4 ulps in float32), where tinygrad's
  2 sigmoid(2x) - 1 loses the digits of small x (1.7e-4 relative error at x = 1e-4); odd, tanh(-0.0) = -0.0; JAX's
  derivative 1 - tanh^2, finite at |x| = 1000."""
  import tinyjax
  grid = np.concatenate([np.linspace(-6, 6, 1201), np.geomspace(1e-8, 1, 60), -np.geomspace(1e-8, 1, 60), [0.0, 30.0, -30.0]])
  for dt in (np.float32, np.float64):
    x = grid.astype(dt)
    exact = np.tanh(x.astype(np.float64))
    got = jnp.tanh(Tensor(x)).numpy()   # a float64 Tensor stays float64
    assert got.dtype == dt and np.max(np.abs(got - exact) / np.spacing(np.abs(exact).astype(dt) + np.finfo(dt).tiny)) < 1.25
  assert np.signbit(jnp.tanh(Tensor(np.array([-0.0]))).numpy()[0]) and np.isnan(jnp.tanh(Tensor(np.array([np.nan]))).numpy()[0])
  d1, d2 = tinyjax.grad(lambda v: jnp.tanh(v).sum()), tinyjax.grad(tinyjax.grad(lambda v: jnp.tanh(v)))
  x = np.array([-1000.0, -2.0, 0.0, 0.3, 1000.0])
  np.testing.assert_allclose(d1(Tensor(x)).numpy(), 1 - np.tanh(x) ** 2, rtol=1e-15)
  np.testing.assert_allclose([float(d2(Tensor(v))) for v in x], -2 * np.tanh(x) * (1 - np.tanh(x) ** 2), rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("fn", ["isnan", "isfinite", "maximum", "minimum", "fmax", "equal", "not_equal", "less", "greater_equal"])
def test_comparisons_of_constants_follow_ieee(fn):
  """A 0-d array or Python scalar is a constant in tinygrad, folded when the graph is built: nan != nan stays True there
  (tinygrad's ConstFloat has nan == nan; _tg.patches folds comparisons as IEEE floats)."""
  vals = [float("nan"), 1.0, -0.0, float("inf")]
  for a in vals:
    for b in vals if fn not in ("isnan", "isfinite") else [None]:
      args = (a,) if b is None else (a, b)
      for conv in (lambda v: v, lambda v: jnp.array(v)):
        got = getattr(jnp, fn)(*[conv(v) for v in args]).numpy()
        want = np.asarray(getattr(jxn, fn)(*args))
        np.testing.assert_array_equal(got, want, err_msg=f"{fn}{args}")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_zero_results_have_jax_signs(dt):
  """A zero remainder has the dividend's sign (C's fmod; x - x is +0), a quotient or a rounding that is zero has its
  value's sign (tinygrad's round gives +0 for -0.3 and -0 for 0.3): JAX's signs of zero, bit for bit."""
  a = np.array([-3.0, 3.0, -0.0, 0.0, -6.0, 6.0, 5.5, -5.5, 1.0, -1.0, -0.3, 0.3], dt)
  b = np.array([-3.0, -3.0, 2.0, -2.0, 3.0, -3.0, 5.5, 5.5, np.inf, -np.inf, 2.0, -2.0], dt)
  def same(g, w):
    g, w = to_np(g), np.asarray(w)
    assert g.dtype == w.dtype and np.array_equal(np.signbit(g), np.signbit(w)) and np.array_equal(g, w, equal_nan=True), (g, w)
  for f in ("mod", "remainder", "fmod", "floor_divide"):
    same(getattr(jnp, f)(jnp.asarray(a), jnp.asarray(b)), getattr(jxn, f)(a, b))
  for g, w in zip(jnp.divmod(jnp.asarray(a), jnp.asarray(b)), jxn.divmod(a, b), strict=True): same(g, w)
  same(tlax.rem(jnp.asarray(a), jnp.asarray(b)), jax.lax.rem(a, b))
  x = np.array([-0.3, -0.5, -0.0, 0.0, 0.3, 0.5, -1.5, -2.5, 2.5, -0.7], dt)
  for f in ("round", "rint"): same(getattr(jnp, f)(jnp.asarray(x)), getattr(jxn, f)(x))
  same(jnp.round(jnp.asarray(x), 1), jxn.round(x, 1))
  same(tlax.round(jnp.asarray(x), 1), jax.lax.round(x, 1))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_remainders_at_near_multiples_are_exact(dt):
  """C's fmod is exact, and JAX's mod, remainder, floor_divide and divmod are built on it: at x near a multiple of y the
  rounded quotient x / y is the integer next to the true one (-1.5 / 0.3 in float32 is -5.0), and x - trunc(x/y) y was
  off by |y| (fmod(-1.5, 0.3) gave 6e-8, not -0.29999995; floor_divide(3.0, 0.3) 10, not 9). JAX's numbers, bit for
  bit, eagerly and jitted."""
  r = np.random.default_rng(0)
  b = (r.uniform(0.05, 3, 4000) * np.where(r.random(4000) < 0.5, -1, 1)).astype(dt)
  a = (r.integers(-2000, 2000, 4000) * b).astype(dt)   # near multiples, rounded: the hard cases
  a[:8], b[:8] = np.array([-1.5, 1.5, 3.0, -2.1, 0.9, 1e6, -3e7, 5.0], dt), np.array([0.3] * 7 + [0.7], dt)
  for f in ("fmod", "mod", "remainder", "floor_divide"):
    want = np.asarray(getattr(jxn, f)(a, b))
    for got in (getattr(jnp, f)(jnp.asarray(a), jnp.asarray(b)), __import__("tinyjax").jit(getattr(jnp, f))(jnp.asarray(a), jnp.asarray(b))):
      np.testing.assert_array_equal(to_np(got), want, err_msg=f)
  np.testing.assert_array_equal(to_np(tlax.rem(jnp.asarray(a), jnp.asarray(b))), np.asarray(jax.lax.rem(a, b)))
  np.testing.assert_array_equal(to_np(jnp.fmod(jnp.asarray(a), 0.3)), np.asarray(jxn.fmod(a, 0.3)))

def test_inf_and_nan_propagate_through_x_minus_x_and_friends():
  """x - x, x * 0, x / x and (x * y) / y at an inf or a nan are nan, as IEEE and JAX give (tinygrad's symbolic
  rewrites folded them to 0, 0, 1 and x for floats: a silent difference in every kernel); eager, jitted, and in a
  gradient (d/dx of log(1 + e^x) at 1000 is nan in float64, as JAX's)."""
  import tinyjax
  x = np.array([np.inf, np.nan, 1.5, -np.inf, 0.0, -2.0])
  y = np.array([2.0, 3.0, np.inf, 0.0, 5.0, np.nan])
  def f(np_):
    return lambda a, b: (a - a, a * 0, 0 * a, a / a, (a * b) / b, a * 0 + b, (a - a) * 0)
  want = jax.jit(f(jxn))(x, y)
  for got in (f(jnp)(jnp.asarray(x), jnp.asarray(y)), tinyjax.jit(f(jnp))(jnp.asarray(x), jnp.asarray(y))):
    for g, w in zip(got, want, strict=True): np.testing.assert_array_equal(to_np(g), np.asarray(w))
  g = tinyjax.grad(lambda a: jnp.log(1 + jnp.exp(a)).sum())(jnp.asarray(np.array([1000.0, 1.0])))
  # (the nan exactly; the value within 2 ulps: tinygrad's derivatives of log and exp carry its ln 2 and log2 e factors,
  # (g ln2) / (x ln2) and e^x ln2 log2e, a rounding or two from JAX's g / x and g e^x; their bits were JAX's only while
  # tinygrad's symbolic moved a product's constants together, a float reassociation it no longer makes)
  np.testing.assert_allclose(to_np(g), np.asarray(jax.grad(lambda a: jxn.log(1 + jxn.exp(a)).sum())(np.array([1000.0, 1.0]))),
                             rtol=4.5e-16, atol=0)

@pytest.mark.parametrize("name", ["abs", "absolute", "fabs"])
def test_abs_clears_the_sign_of_zero(name):
  """abs(-0.) is +0. as XLA's (the sign bit cleared; tinygrad's x * sign(x) kept -0., so 1 / abs(-0.) was -inf), for
  every float width, eagerly and jitted; the derivative is JAX's (1 at both zeros) at every order, under vmap."""
  import tinyjax
  f, g = getattr(jnp, name), getattr(jxn, name)
  xs = np.array([-0.0, 0.0, -2.5, 3.0, np.nan, -np.inf, np.inf])
  for dt in (np.float16, np.float32, np.float64):
    for fn in (f, tinyjax.jit(f)):
      got, want = to_np(fn(Tensor(xs.astype(dt)))), np.asarray(g(xs.astype(dt)))
      assert got.dtype == want.dtype and (np.signbit(got) == np.signbit(want)).all() and np.array_equal(got, want, equal_nan=True)
  assert to_np(tlax.abs(Tensor(np.array([-0.0])))).tolist() == [0.0] and not np.signbit(to_np(tlax.abs(Tensor(np.array([-0.0])))))
  z = np.array([-0.0, 0.0, -2.0, 3.0])
  def loss(m): return lambda x: (getattr(m, name)(x) ** 3).sum() + getattr(m, name)(x).sum()
  for tj, jx in ((tinyjax.grad(loss(jnp)), jax.grad(loss(jxn))), (tinyjax.hessian(loss(jnp)), jax.hessian(loss(jxn))),
                 (tinyjax.vmap(tinyjax.grad(f)), jax.vmap(jax.grad(g))), (tinyjax.jit(tinyjax.grad(loss(jnp))), jax.grad(loss(jxn)))):
    assert_close(tj(Tensor(z)), jx(z))


@pytest.mark.parametrize("name", ["exp", "cos", "tan", "sinh", "cosh", "tanh", "expm1", "arcsinh", "arccosh", "sin", "log1p"])
def test_a_python_float_is_computed_at_its_width(name):
  # a Python float is weakly typed, float64 with x64: tinygrad's exp and cos computed it at float32 (jnp.exp(0.3) was
  # float32's exp), tanh, asinh and acosh chose their float32 formulas
  import tinyjax
  fn = getattr(jnp, name)
  for x in (1.3, 1.7, 700.0 if name in ("exp", "cosh", "sinh") else 1e10 if name in ("cos", "sin") else 25.5):
    want = float(getattr(jxn, name)(x))
    for got in (fn(x), tinyjax.jit(fn)(x)):
      assert got.dtype == np.float64
      assert abs(float(got) - want) <= 4 * np.finfo(np.float64).eps * abs(want), (x, float(got), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, magnitudes", [("sinh", [1e-8, 0.1, 1, 20, 80]), ("cosh", [0.1, 1, 20, 80]), ("log1p", [1e-10, 1e-5, 0.1, 10]),
                                              ("expm1", [1e-10, 1e-5, 0.1, 1, 50]), ("exp", [1, 10, 80]), ("softplus", [1, 10, 50]),
                                              ("log_sigmoid", [1, 30])])
def test_elementary_functions_within_a_few_ulps_of_jaxs(name, magnitudes, dtype):
  # tinygrad's sinh cancelled for small x (sinh(1e-8) 1.8e10 ulps off), its symbolic folded log1p's test (x + 1) - 1 == x
  # to true (log1p(1e-10) 8e-8 off in float64), its exp rounded x log2 e (32 ulps of float32 near 80), its logaddexp
  # lost e^-|a-b| below an ulp of 1 (softplus(-50) was 0)
  rng = np.random.default_rng(3)
  x = np.concatenate([rng.uniform(-m, m, 300) for m in magnitudes]).astype(dtype)
  if name == "log1p": x = np.abs(x)
  import jax
  import tinyjax
  jfn, fn = (getattr(jax.nn, name), getattr(tinyjax.nn, name)) if name in ("softplus", "log_sigmoid") else (getattr(jxn, name), getattr(jnp, name))
  want = np.asarray(jfn(x)).astype(np.float64)
  got = np.asarray(fn(jnp.asarray(x))).astype(np.float64)
  normal = np.isfinite(want) & (np.abs(want) >= np.finfo(dtype).tiny)
  assert (np.abs(got - want)[normal] / np.abs(want[normal])).max() <= 8 * np.finfo(dtype).eps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arctanh_keeps_its_precision_for_small_x(dtype):
  # tinygrad's log((1 + x) / (1 - x)) / 2 cancelled (atanh(1e-8) 1e-5 off relatively); XLA's (log1p(x) - log1p(-x)) / 2
  # is within 2 ulps of numpy (JAX's own float64 atanh is ~70 ulps from it near 0.4: numpy is the oracle here)
  rng = np.random.default_rng(4)
  x = np.concatenate([rng.uniform(-m, m, 300) for m in (1e-8, 1e-3, 0.5, 0.999)]).astype(dtype)
  got = np.asarray(jnp.arctanh(jnp.asarray(x))).astype(np.float64)
  want = np.arctanh(x.astype(np.float64))
  assert (np.abs(got - want) / np.abs(want)).max() <= 4 * np.finfo(dtype).eps
  np.testing.assert_array_equal(np.asarray(jnp.arctanh(jnp.asarray(np.array([1.0, -1.0, 1.5, np.nan], dtype)))), [np.inf, -np.inf, np.nan, np.nan])


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_float64_erf_and_erfc_are_xlas(name):
  # XLA's Cephes approximations for float64 (tinygrad's erf, 2e-7 absolute, was float64's too: 1e-5 off near 0.5)
  import jax.scipy.special as jss
  import tinyjax
  import tinyjax.scipy.special as tss
  rng = np.random.default_rng(8)
  x = np.concatenate([rng.uniform(-m, m, 400) for m in (1e-8, 0.5, 3, 10, 27)])
  want, got = np.asarray(getattr(jss, name)(x)), np.asarray(getattr(tss, name)(jnp.asarray(x)))
  normal = np.abs(want) >= np.finfo(np.float64).tiny
  assert (np.abs(got - want)[normal] / np.abs(want[normal])).max() <= 4 * np.finfo(np.float64).eps
  g, jg = tinyjax.vmap(tinyjax.grad(getattr(tss, name))), jax.vmap(jax.grad(getattr(jss, name)))
  np.testing.assert_allclose(np.asarray(g(x[:50])), np.asarray(jg(x[:50])), rtol=4e-16)


def test_float32_erf_is_jaxs_bit_for_bit():
  # Eigen's rational interpolant, as XLA's CPU erf (tinygrad's erf was 2e-7 absolute: 2491 ulps near 0.5); erfc is XLA's
  # ErfcLargeImpl32 / ErfcSmallImpl32 (within a few ulps: its exp is tinyjax's)
  import jax.scipy.special as jss
  import tinyjax
  import tinyjax.scipy.special as tss
  rng = np.random.default_rng(9)
  x = np.concatenate([rng.uniform(-m, m, 1000) for m in (1e-6, 0.5, 2, 4, 6, 12)]).astype(np.float32)
  np.testing.assert_array_equal(np.asarray(tinyjax.jit(tss.erf)(x)), np.asarray(jss.erf(x)))
  want, got = np.asarray(jss.erfc(x)).astype(np.float64), np.asarray(tinyjax.jit(tss.erfc)(x)).astype(np.float64)
  normal = want >= np.finfo(np.float32).tiny
  assert (np.abs(got - want)[normal] / want[normal]).max() <= 10 * np.finfo(np.float32).eps

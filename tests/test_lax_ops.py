"""tinyjax.lax's array functions against jax.lax: values and dtypes, and under jit, vmap (also over traced start indices),
jvp and grad. Several functions share one comparison (kernels compile per distinct graph: few, small graphs keep the
file fast); errors are compared with JAX's type and message."""
import numpy as np
import pytest
import jax
import jax.numpy as jxn
from jax import lax as jl
import tinyjax
import tinyjax.numpy
import tinyjax.lax as L
from tinygrad import Tensor
from conftest import rnd, tg, assert_close, same_error, ref

pytestmark = pytest.mark.usefixtures("compile_in_process")

def _stack(args: tuple, batches: dict) -> tuple:
  """Each argument as a batch of 3: the given batch, or the argument perturbed (floats scaled and shifted)."""
  return tuple(batches[k] if k in batches else np.stack([a * (1 + 0.1 * j) + 0.05 * j for j in range(3)]) for k, a in enumerate(args))

def check(tj, jx, args: tuple, diff: tuple[int, ...], batches: dict | None = None, rtol=1e-9, atol=1e-11):
  """tj == jx on args: the value eagerly and under jit, vmap over every argument (integer ones from `batches`), and jvp
  and grad (of <w, out> with a random w per output) in the arguments `diff`, the others fixed."""
  assert_close(tj(*tg(args)), lambda: jx(*args), rtol, atol)
  assert_close(tinyjax.jit(tj)(*tg(args)), lambda: jx(*args), rtol, atol)
  bargs = _stack(args, batches or {})
  assert_close(tinyjax.vmap(tj)(*tg(bargs)), lambda: jax.vmap(jx)(*bargs), rtol, atol)
  def bind(f, fixed):
    def g(*xs):
      full = list(fixed)
      for k, x in zip(diff, xs, strict=True): full[k] = x
      return f(*full)
    return g
  def floats(f, tree_leaves):   # the float outputs (JAX's jvp gives integer outputs float0 tangents)
    return lambda *xs: [o for o in tree_leaves(f(*xs)) if np.issubdtype(np.dtype(o.dtype.name if isinstance(o, Tensor) else o.dtype), np.floating)]
  tj, jx = floats(tj, tinyjax.tree_util.tree_leaves), floats(jx, jax.tree_util.tree_leaves)
  prim = tuple(args[k] for k in diff)
  tans = tuple(rnd(*np.shape(p), seed=7 + k) for k, p in enumerate(prim))
  assert_close(tinyjax.jvp(bind(tj, tg(args)), tg(prim), tg(tans)), lambda: jax.jvp(bind(jx, args), prim, tans), rtol, atol)
  ws = [rnd(*np.shape(o), seed=3 + k) for k, o in enumerate(ref(lambda: jx(*args)))]
  def loss(f, wrap): return lambda *xs: sum((o * wrap(w)).sum() for o, w in zip(f(*xs), ws, strict=True))
  argnums = tuple(range(len(diff)))
  got = tinyjax.grad(loss(bind(tj, tg(args)), Tensor), argnums=argnums)(*tg(prim))
  assert_close(got, lambda: jax.grad(loss(bind(jx, args), np.asarray), argnums=argnums)(*prim), rtol, atol)

# ---- dynamic slicing, pad, stop_gradient ---------------------------------------------------------------------------------

def slicing(lax, x, u, i, j):
  """Every dynamic slicing function with traced starts (i, j), static ones (clamped, negative) and pad."""
  return (lax.dynamic_slice(x, (i, j), (2, 2)), lax.dynamic_update_slice(x, u, (i, j)),
          lax.dynamic_slice_in_dim(x, j, 3, axis=1), lax.dynamic_index_in_dim(x, i, 0, keepdims=False),
          lax.dynamic_update_index_in_dim(x, u[0], j, 1), lax.dynamic_update_slice_in_dim(x, u, i, axis=0),
          lax.dynamic_slice(x, (5, -1), (2, 3)), lax.dynamic_update_slice(x, u * 2, (-1, 1)),
          lax.pad(x, 0.5, [(1, -1, 1), (-2, 2, 2)]), lax.pad(u, x[0, 0], [(0, 1, 1), (2, 0, 0)]),
          x * lax.stop_gradient(x))

X, U = rnd(3, 4), rnd(2, 2, seed=1)
I, J = np.array(1), np.array(-3)

def test_slicing():
  # starts under vmap: negative, out of bounds on either side (clamped), in range
  check(lambda *a: slicing(L, *a), lambda *a: slicing(jl, *a), (X, U, I, J), diff=(0, 1),
        batches={2: np.array([-1, 7, 0]), 3: np.array([2, -9, 1])})

def test_dynamic_int_dtypes_and_bool():
  x = np.arange(12, dtype=np.int32).reshape(3, 4)
  b = x % 3 == 0
  i = np.int32(2)
  def f(lax, x, b, i):
    return (lax.dynamic_slice(x, (i, i), (2, 2)), lax.dynamic_update_slice(b, ~b[:2, :2], (i, np.int32(1))),
            lax.dynamic_slice(b, (1, 2), (2, 2)), lax.pad(b, True, [(1, 0, 1), (0, 0, 0)]))
  assert_close(tinyjax.jit(lambda *a: f(L, *a))(*tg((x, b, np.asarray(i)))), lambda: f(jl, x, b, i))

def test_stop_gradient_tree():
  x = rnd(3)
  got = tinyjax.grad(lambda t: (L.stop_gradient({"a": t, "b": t * 2})["b"] * t).sum())(Tensor(x))
  assert_close(got, lambda: jax.grad(lambda t: (jl.stop_gradient({"a": t, "b": t * 2})["b"] * t).sum())(x))


# ---- conv_general_dilated, reduce_window ------------------------------------------------------------------------------------

def windows(lax, lhs, rhs, v):
  tr = jxn.transpose if lax is jl else tinyjax.numpy.transpose
  nhwc, hwio = tr(lhs, (0, 2, 3, 1)), tr(rhs, (2, 3, 1, 0))
  return (lax.conv_general_dilated(lhs, rhs, (2, 1), "SAME", rhs_dilation=(1, 2), feature_group_count=2),
          lax.conv_general_dilated(nhwc, hwio, (1, 2), ((1, -1), (2, 0)), lhs_dilation=(2, 1), feature_group_count=2,
                                   dimension_numbers=("NHWC", "HWIO", "NHWC")),
          lax.conv(lhs[:, :2, 0], rhs[:2, :, 0], (1,), "VALID"),   # 1-D
          lax.conv_general_dilated(lhs[:, :, None], rhs[:, :, None], (1, 1, 1), "SAME", feature_group_count=2),   # 3-D
          lax.reduce_window(lhs, -jxn.inf, lax.max, (1, 1, 2, 3), (1, 1, 2, 1), "SAME"),
          lax.reduce_window(lhs, 0., lax.add, (1, 2, 2, 2), (1, 1, 1, 2), ((0, 0), (0, 0), (1, 0), (0, 1)), base_dilation=(1, 1, 2, 1)),
          lax.reduce_window(v, -jxn.inf, lax.max, (2,), (1,), "VALID"),   # ties: the first maximum gets the derivative
          lax.reduce_window(v, 0., lax.add, (3,), (1,), "SAME", window_dilation=(2,)))

def test_conv_and_reduce_window():
  check(lambda *a: windows(L, *a), lambda *a: windows(jl, *a), (rnd(1, 4, 5, 4), rnd(4, 2, 2, 3, seed=1), np.array([1., 3., 3., 0., 2.])),
        diff=(0, 1, 2))

def test_reduce_window_generic_and_int():
  x = np.arange(12.).reshape(3, 4)
  xi = np.arange(12).reshape(3, 4) - 5
  def f(lax, x, xi):
    # a non-identity init counts once per window and padding takes no part; a lambda folds like lax.add
    return (lax.reduce_window(x, 1., lambda a, b: a + b, (2, 3), (2, 1), ((1, 0), (1, 2))),
            lax.reduce_window(x, 0., lax.add, (2, 2), (1, 1), "VALID", base_dilation=(2, 1), window_dilation=(1, 2)),
            lax.reduce_window(xi, 0, lax.max, (2, 2), (1, 1), "SAME"), lax.reduce_window(xi, 100, lax.min, (3, 1), (1, 1), "VALID"))
  assert_close(tinyjax.jit(lambda *a: f(L, *a))(*tg((x, xi))), lambda: f(jl, x, xi))


# ---- sorting, elementwise ------------------------------------------------------------------------------------------------------

def sorting(lax, x, y, k):
  return (lax.sort(x, dimension=0), lax.sort((k, x, y), num_keys=2), lax.sort_key_val(k, y), lax.top_k(x, 2),
          lax.top_k(y, 2, axis=0), lax.integer_pow(x, 3), lax.integer_pow(y, -2), lax.clamp(-0.5, x, y),
          lax.rsqrt(lax.abs(y)), lax.logistic(x), lax.div(lax.sub(x, y), lax.add(x, 3.)),
          lax.max(lax.sqrt(lax.square(x)), lax.neg(y)), lax.pow(lax.exp(x), y), lax.rem(x, y), lax.sign(y) * lax.log(lax.abs(y)))

K = np.array([[1, 0, 1, 0], [2, 2, 0, 0], [1, 1, 1, 1]])

def test_sorting_and_elementwise():
  check(lambda *a: sorting(L, *a), lambda *a: sorting(jl, *a), (rnd(3, 4), rnd(3, 4, seed=1), K), diff=(0, 1),
        batches={2: np.stack([K, K[::-1], np.roll(K, 1, axis=1)])})

def test_sort_order():
  # sort: NaNs last and -0.0 equal to 0.0 (checked through the permutation of a second operand), ties in order;
  # top_k: IEEE's total order (NaN first, -NaN last, 0.0 before -0.0)
  v = np.array([3., np.nan, -np.inf, -0., 0., 1., -np.nan, -1., 3.])
  ints, small = np.array([3, -2, 7, 3, 0, -2, 5, 1, 0], np.int32), np.array([2, 9, 0, 2], np.uint8)
  def f(lax, v, ints, small):
    return (lax.sort((v, np.arange(9.))), lax.top_k(v, 9), lax.sort((ints, v)), lax.top_k(ints, 5), lax.sort(small),
            lax.top_k(small, 3), lax.sort_key_val(v < 1, ints))
  assert_close(tinyjax.jit(lambda *a: f(L, *a))(*tg((v, ints, small))), lambda: f(jl, v, ints, small))

def test_integer_ops():
  a, b = np.array([-7, 7, 3, 0, -8], np.int32), np.array([2, -2, 0, 5, 3], np.int32)
  def f(lax, a, b):
    return (lax.div(a, b), lax.rem(a, b), lax.integer_pow(a, 3), lax.integer_pow(a, 0), lax.clamp(np.int32(-1), a, np.int32(4)), lax.abs(a),
            lax.sign(a), lax.max(a, b), lax.min(a, np.int32(2)), lax.square(b), lax.lt(a, b), lax.ge(a, np.int32(0)))
  assert_close(f(L, *tg((a, b))), f(jl, a, b))   # eagerly: XLA's constant folding of x / 0 under jit stops the process

def test_erf_inv():
  # tinyjax.scipy.special.erfinv refines with tinygrad's erf, accurate to about 1e-7: so is erf_inv in float64
  x = np.array([-1., -0.9, 0.3, 0.99, 1., 1.5])
  assert_close(L.erf_inv(Tensor(x)), lambda: jl.erf_inv(x), rtol=1e-5)
  assert_close(tinyjax.vmap(tinyjax.grad(L.erf_inv))(Tensor(x[1:4])), lambda: jax.vmap(jax.grad(jl.erf_inv))(x[1:4]), rtol=1e-5)

def test_clamp_ties_and_nan():
  # at x == min (or max) JAX's derivative is zero for all three arguments
  x = np.array([0.5, 0.7, 0.2, 1.0, np.nan])
  assert_close(L.clamp(0.5, Tensor(x), 1.), lambda: jl.clamp(0.5, x, 1.))
  lo, hi = np.array([0.5, 0.5, 0.5, 0.0]), np.array([1., 1., 0.1, 1.])   # JAX differentiates arrays of x's shape only
  g = tinyjax.grad(lambda *a: L.clamp(*a).sum(), (0, 1, 2))(*tg((lo, x[:4], hi)))
  assert_close(g, lambda: jax.grad(lambda *a: jl.clamp(*a).sum(), (0, 1, 2))(lo, x[:4], hi))


# ---- errors --------------------------------------------------------------------------------------------------------------------

def test_errors():
  x, xf, xi = np.arange(12.).reshape(3, 4), np.ones(4, np.float32), np.arange(3)
  def both(f, upto=None): return same_error(lambda: f(L, tg_(x)), lambda: f(jl, x), upto)
  def tg_(a): return Tensor(a)
  both(lambda lax, x: lax.dynamic_slice(x, (1,), (2, 2)))
  both(lambda lax, x: lax.dynamic_slice(x, (1, 1), (4, 2)))
  both(lambda lax, x: lax.dynamic_slice(x, (np.int32(1), 1), (2, 2)))
  both(lambda lax, x: lax.dynamic_slice(x, (1.0, 1), (2, 2)))
  both(lambda lax, x: lax.dynamic_update_slice(x, np.ones((2, 2), np.float32), (1, 3)))
  both(lambda lax, x: lax.dynamic_update_slice(x, np.ones(2), (1, 3)))
  both(lambda lax, x: lax.dynamic_update_slice(x, np.ones((4, 2)), (1, 3)))
  both(lambda lax, x: lax.dynamic_slice_in_dim(x, -1, 2, allow_negative_indices=False))
  both(lambda lax, x: lax.pad(x, np.float32(0), [(1, 1, 0), (0, 0, 0)]))
  both(lambda lax, x: lax.pad(x, 0., [(1, 1, -1), (0, 0, 0)]))
  both(lambda lax, x: lax.pad(x, 0., [(1, 1, 0)]))
  both(lambda lax, x: lax.pad(x, 0., [(-3, -1, 0), (0, 0, 0)]))
  both(lambda lax, x: lax.pad(x, np.zeros(2), [(1, 1, 0), (0, 0, 0)]))
  both(lambda lax, x: lax.sort((x, x[:2])))
  both(lambda lax, x: lax.sort((x, x), num_keys=3))
  both(lambda lax, x: lax.sort(x, dimension=2))
  both(lambda lax, x: lax.top_k(x, 5))
  both(lambda lax, x: lax.top_k(x, -1))
  both(lambda lax, x: lax.integer_pow(np.arange(3), -1))
  both(lambda lax, x: lax.clamp(np.zeros(2), x, 1.))
  both(lambda lax, x: lax.clamp(np.float32(0), x, 1.))
  both(lambda lax, x: lax.erf_inv(np.arange(3)))
  both(lambda lax, x: lax.exp(np.arange(3)))
  both(lambda lax, x: lax.abs(np.array([True])))
  both(lambda lax, x: lax.add(xf, x[0]))
  both(lambda lax, x: lax.add(xi, 2.5))
  both(lambda lax, x: lax.add(np.array([True]), np.array([False])))
  both(lambda lax, x: lax.add(x[0], x))
  both(lambda lax, x: lax.pow(x, np.float32(2)))
  both(lambda lax, x: lax.reduce_window(x, 0., lax.add, (2,), (1,), "VALID"))
  both(lambda lax, x: lax.reduce_window(x, np.zeros(2), lax.add, (2, 2), (1, 1), "VALID"))
  lhs, rhs = np.ones((1, 4, 5)), np.ones((6, 3, 2))
  for kw in (dict(feature_group_count=2), dict(lhs_dilation=(2,))):
    same_error(lambda: L.conv_general_dilated(Tensor(lhs), Tensor(rhs), (1,), "SAME", **kw),
               lambda: jl.conv_general_dilated(lhs, rhs, (1,), "SAME", **kw))
  same_error(lambda: L.conv_general_dilated(Tensor(lhs), Tensor(np.ones((5, 2, 2))), (1,), "VALID", feature_group_count=2),
             lambda: jl.conv_general_dilated(lhs, np.ones((5, 2, 2)), (1,), "VALID", feature_group_count=2))
  same_error(lambda: L.conv_general_dilated(Tensor(lhs), Tensor(rhs[:, :1]), (1,), "FOO"),
             lambda: jl.conv_general_dilated(lhs, rhs[:, :1], (1,), "FOO"))
  same_error(lambda: L.conv(Tensor(lhs), Tensor(np.ones((6, 4, 2), np.float32)), (1,), "VALID"),
             lambda: jl.conv(lhs, np.ones((6, 4, 2), np.float32), (1,), "VALID"))
  with pytest.raises(NotImplementedError, match="batch_group_count"):
    L.conv_general_dilated(Tensor(lhs), Tensor(rhs), (1,), "VALID", batch_group_count=2)
  with pytest.raises(NotImplementedError, match="reduce_window: a tree of operands"):
    L.reduce_window((Tensor(x),), (0.,), L.add, (2, 2), (1, 1), "VALID")


@pytest.mark.parametrize("dt", [np.int32, np.uint8])
def test_integer_div_rem_at_zero_and_int_min(dt):
  """lax.div / lax.rem by 0 and INT_MIN by -1 give XLA's values (a compiled division by them stopped the process with
  SIGFPE): the divisor goes through the same guard as jnp's (lax.ops.int_divisor)."""
  info = np.iinfo(dt)
  a = np.array([info.min, 7, 5, info.max, 3], dt)
  b = np.array([-1 if info.min < 0 else 3, 0, 2, -1 if info.min < 0 else 1, 0], dt)
  for fn in ("div", "rem"):
    np.testing.assert_array_equal(getattr(L, fn)(Tensor(a), Tensor(b)).numpy(), np.asarray(getattr(jl, fn)(a, b)), err_msg=fn)


# ---- the elementwise and cumulative functions of issue 29 (3) -----------------------------------------------------------------

def special(lax, x, u, p):
  """x: any real, u: in (-0.6, 0.6) (atanh), p: positive (lgamma, digamma, cbrt away from its kink)."""
  return (lax.tan(u), lax.sinh(x), lax.cosh(x), lax.atanh(u), lax.exp2(x), lax.cbrt(p), lax.cbrt(-p), lax.reciprocal(p),
          lax.round(x * 3), lax.round(x * 3, 1), lax.is_finite(lax.div(x, u)), lax.lgamma(p), lax.digamma(p), lax.lgamma(-p - 0.5))

def test_special_elementwise():
  x, u, p = rnd(3, 4), np.clip(rnd(3, 4, seed=1) * 0.3, -0.4, 0.4), np.abs(rnd(3, 4, seed=2)) + 0.5
  check(lambda *a: special(L, *a), lambda *a: special(jl, *a), (x, u, p), diff=(0, 1, 2), rtol=1e-7, atol=1e-9)

def inverse_trig(lax, u, x, y, c):
  """u: in (-1, 1) (asin, acos), x, y: any real (atan, atan2, asinh), c: > 1 (acosh)."""
  return lax.asin(u), lax.acos(u), lax.atan(x), lax.atan2(y, x), lax.asinh(x), lax.acosh(c)

def test_inverse_trig_and_hyperbolic():
  # the kernels jnp.arcsin/... share (tinyjax.lax.special: Cephes' atan, accurate in float64)
  u, x, y, c = np.clip(rnd(2, 3) * 0.4, -0.9, 0.9), rnd(2, 3, seed=1), rnd(2, 3, seed=2), np.abs(rnd(2, 3, seed=3)) + 1.2
  check(lambda *a: inverse_trig(L, *a), lambda *a: inverse_trig(jl, *a), (u, x, y, c), diff=(0, 1, 2, 3))
  for f in (lambda lax: lax.asin(np.arange(3)), lambda lax: lax.acosh(1), lambda lax: lax.atan2(np.int32(1), np.int32(1)),
            lambda lax: lax.atan2(np.float32(1), np.float64(1))):
    same_error(lambda: f(L), lambda: f(jl))

def test_erf_erfc():
  # tinygrad's erf is accurate to about 2e-7 absolute, also in float64 (docs/porting.md): so are lax.erf and lax.erfc
  x = rnd(3, 4)
  check(lambda x: (L.erf(x), L.erfc(x)), lambda x: (jl.erf(x), jl.erfc(x)), (x,), diff=(0,), rtol=1e-6, atol=5e-7)

def test_round_halves_and_signed_zeros():
  x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.3, -0., 2.4, -3.7, np.nan, np.inf, -np.inf])
  for method in (0, 1):
    got, want = L.round(Tensor(x), method).numpy(), np.asarray(jl.round(x, method))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
  x32 = x.astype(np.float32)   # float32: 0.49999997 + 0.5 rounds up to 1 (the trap of floor(x + 0.5))
  np.testing.assert_array_equal(L.round(Tensor(x32)).numpy(), np.asarray(jl.round(x32)))

def cumulative(lax, x):
  return tuple(getattr(lax, f)(x, axis, reverse) for f in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
               for axis, reverse in ((0, False), (1, True)))

def test_cumulative():
  check(lambda x: cumulative(L, x), lambda x: cumulative(jl, x), (rnd(3, 5),), diff=(0,))

def test_cumulative_dtypes_nan_inf():
  # narrow integers wrap in their dtype; NaN propagates through max/min; a prefix of -inf stays -inf in cumlogsumexp
  i8, u8 = np.array([100, 100, -128, 5], np.int8), np.array([200, 100, 3, 0], np.uint8)
  v = np.array([1., np.nan, 2., -np.inf, np.inf])
  w = np.array([-np.inf, -np.inf, -1000., 0., 1000.])
  def f(lax, i8, u8, v, w):
    return (*(getattr(lax, n)(t) for n in ("cumsum", "cumprod", "cummax", "cummin") for t in (i8, u8)),
            *(getattr(lax, n)(v, reverse=r) for n in ("cumsum", "cummax", "cummin", "cumlogsumexp") for r in (False, True)),
            lax.cumlogsumexp(w), lax.cumsum(v.astype(np.float32)))
  assert_close(f(L, *tg((i8, u8, v, w))), f(jl, i8, u8, v, w))

def bitwise(lax, a, b, p, q):
  return (lax.bitwise_and(a, b), lax.bitwise_or(a, b), lax.bitwise_xor(a, np.int32(6)), lax.bitwise_not(a), lax.bitwise_and(p, q),
          lax.bitwise_or(p, True), lax.bitwise_xor(p, q), lax.bitwise_not(p))

def test_bitwise():
  a, b = np.array([-7, 7, 3, 0, -8], np.int32), np.array([2, -2, 0, 5, 3], np.int32)
  p, q = np.array([True, False, True, False]), np.array([True, True, False, False])
  assert_close(tinyjax.jit(lambda *t: bitwise(L, *t))(*tg((a, b, p, q))), bitwise(jl, a, b, p, q))
  u = np.array([255, 1, 128], np.uint8)
  assert_close(L.bitwise_not(Tensor(u)), jl.bitwise_not(u))

def test_errors_of_the_new_functions():
  xi, xb, x = np.arange(3), np.array([True, False]), np.ones((2, 3))
  for f in (lambda lax: lax.erfc(xi), lambda lax: lax.erf(xi), lambda lax: lax.lgamma(xi), lambda lax: lax.digamma(xi),
            lambda lax: lax.sinh(xi), lambda lax: lax.cbrt(xi), lambda lax: lax.is_finite(xi), lambda lax: lax.round(xi),
            lambda lax: lax.round(x, 3), lambda lax: lax.reciprocal(xi), lambda lax: lax.cumsum(xb), lambda lax: lax.cummax(xb),
            lambda lax: lax.cumsum(x, axis=2), lambda lax: lax.cumsum(x, axis=-1), lambda lax: lax.cumlogsumexp(np.float64(1.)),
            lambda lax: lax.bitwise_and(x, x), lambda lax: lax.bitwise_not(x), lambda lax: lax.bitwise_xor(xi, 1.5),
            lambda lax: lax.bitwise_and(xi, xi.astype(np.int32)), lambda lax: lax.bitwise_or(xi, xi[None])):
    same_error(lambda: f(L), lambda: f(jl))


# ---- jnp.convolve, jnp.correlate (written on lax.conv_general_dilated) ------------------------------------------------------

from jnp_table import Row, params, run   # noqa: E402

A, V = rnd(7), rnd(4, seed=1)
CONV_ROWS = [Row(f"{fn}-{mode}-{which}", lambda a, v, fn=fn, mode=mode: getattr(tinyjax.numpy, fn)(a, v, mode),
                 lambda a, v, fn=fn, mode=mode: getattr(jxn, fn)(a, v, mode), args)
             for fn in ("convolve", "correlate") for mode in ("full", "same", "valid")
             for which, args in (("long-short", (A, V)), ("short-long", (V, A)))]
CONV_ROWS += [Row("convolve-int", lambda a, v: tinyjax.numpy.convolve(a, v), lambda a, v: jxn.convolve(a, v),
                  (np.arange(5), np.array([1, -2, 3])), diff=False),
              Row("correlate-f32-default", lambda a, v: tinyjax.numpy.correlate(a, v), lambda a, v: jxn.correlate(a, v),
                  (A.astype(np.float32), V.astype(np.float32)), rtol=1e-6, atol=1e-6)]

@pytest.mark.parametrize("row,check_", params(CONV_ROWS, vmap_last="first"))
def test_convolve_correlate(row, check_):
  run(row, check_)

def test_convolve_errors():
  for f in (lambda np_: np_.convolve(np.ones((2, 2)), np.ones(2)), lambda np_: np_.correlate(np.ones(3), np.ones(0)),
            lambda np_: np_.convolve(np.ones(3), np.ones(2), mode="wide")):
    same_error(lambda: f(tinyjax.numpy), lambda: f(jxn))

"""tinyjax.numpy's composed functions (numpy/_extra.py) against jax.numpy: differences and integrals, statistics,
polynomials, isin, index helpers, utilities and windows; one table row per function and variant (value and dtype, vmap,
jvp, grad; x64), and JAX's errors."""
import numpy as np
import pytest
import jax
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from conftest import rnd, assert_close, same_error
from jnp_table import Row, params, run, same

pytestmark = pytest.mark.usefixtures("compile_in_process")

A, V, W = rnd(3, 4), rnd(5, seed=1), rnd(4, seed=2)
IV = np.array([3, 1, 4, 1, 5], np.int64)
BV = np.array([True, False, False, True])
NANS = np.where(rnd(3, 5, seed=3) > 0.7, np.nan, rnd(3, 5, seed=4))
NANS[1] = np.nan                                  # a row of NaNs only
XP = np.sort(rnd(6, seed=5))
PH = np.cumsum(rnd(7, seed=6) * 3)                # phases with jumps larger than pi
C3 = rnd(3, 4, 5, seed=21)
TIES = np.array([[2.0, 1.0, 2.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0]])

def uf(m):
  """A ufunc made with frompyfunc (not associative: its reductions' order shows)."""
  return m.frompyfunc(lambda a, b: a * b + 1, nin=2, nout=1, identity=1)

def U(method: str, *args, id: str = "", **kw) -> Row:  # noqa: A002
  """A row calling uf(jnp).method / uf(jxn).method."""
  opts = {k: kw.pop(k) for k in ("vmap", "diff", "diff_args", "batch_args") if k in kw}
  def call(m): return lambda *a: (uf(m) if method == "call" else getattr(uf(m), method))(*a, **kw)
  return Row("ufunc." + method, call(jnp), call(jxn), args, id=id or "ufunc." + method, **opts)

def flat(name, *args, **kw):
  """`same` for a function returning several arrays: compared raveled and concatenated (grad takes one output)."""
  row = same(name, *args, **kw)
  tj, jx = row.tj, row.jx
  row.tj = lambda *a: jnp.concatenate([jnp.ravel(o) for o in tinyjax.tree_util.tree_leaves(tj(*a))])
  row.jx = lambda *a: jxn.concatenate([jxn.ravel(o) for o in jax.tree_util.tree_leaves(jx(*a))])
  return row

ROWS = [
  same("diff", A), same("diff", A, n=2, axis=0, id="diff-n2-axis0"), same("diff", IV, id="diff-int"),
  same("diff", BV, id="diff-bool"), same("diff", A, prepend=1.5, append=A[:, :1], id="diff-ends"),
  same("diff", IV, prepend=2, id="diff-int-prepend"),
  same("ediff1d", A), same("ediff1d", V, to_begin=np.array([1.0, 2.0]), to_end=3.0, id="ediff1d-ends"),
  same("gradient", V), same("gradient", V, XP[:5], id="gradient-coords"), flat("gradient", A, id="gradient-2d"),
  same("gradient", A, 0.5, axis=1, id="gradient-axis-spacing"), same("gradient", IV, id="gradient-int"),
  same("trapezoid", A), same("trapezoid", A, dx=0.3, axis=0, id="trapezoid-dx"),
  same("trapezoid", W, XP[:4], id="trapezoid-x"), same("trapezoid", A, np.sort(rnd(3, 4, seed=8), 1), id="trapezoid-x2d"),
  same("interp", rnd(7, seed=7) * 2, XP, V[:1].repeat(6) + rnd(6, seed=9)),
  same("interp", rnd(7, seed=7) * 2, XP, rnd(6, seed=9), left=-5.0, right=5.0, id="interp-left-right"),
  same("interp", rnd(7, seed=7) * 2, XP, rnd(6, seed=9), left="extrapolate", right="extrapolate", id="interp-extrapolate"),
  same("interp", rnd(7, seed=7) * 4, XP, rnd(6, seed=9), period=2.0, id="interp-period"),
  same("unwrap", PH), same("unwrap", np.stack([PH, -PH]), axis=1, discont=2.0, id="unwrap-discont"),
  same("unwrap", np.array([0, 5, 11, 3, 9], np.int64), period=8, id="unwrap-int"),
  flat("modf", rnd(6, seed=10) * 3), flat("modf", IV, id="modf-int"),
  same("cov", A), same("cov", A, rowvar=False, bias=True, id="cov-cols"), same("cov", V, rnd(5, seed=12), id="cov-xy"),
  same("cov", A, fweights=np.array([1, 2, 1, 3]), aweights=np.array([0.5, 1.0, 2.0, 1.5]), id="cov-weights"),
  same("cov", V, ddof=0, id="cov-1d"),
  same("corrcoef", A), same("corrcoef", A, rowvar=False, id="corrcoef-cols"),
  same("nanargmax", NANS, axis=1, diff=False), same("nanargmin", NANS, axis=0, diff=False),
  same("nanargmax", NANS.T, id="nanargmax-all", diff=False),
  same("nanargmin", NANS, axis=1, keepdims=True, id="nanargmin-keepdims", diff=False),
  same("nanmedian", NANS, axis=1), same("nanmedian", NANS[0], id="nanmedian-all"),
  same("nanquantile", NANS, 0.3, axis=1), same("nanquantile", NANS, np.array([0.1, 0.9]), axis=1, method="nearest",
                                               keepdims=True, id="nanquantile-q1"),
  same("nanquantile", NANS, 0.7, axis=0, method="lower", id="nanquantile-lower"),
  same("nanpercentile", NANS, np.array([25.0, 50.0]), axis=1),
  # method 'inverted_cdf' (with weights: the first sorted element whose cumulative weight reaches q of the total)
  same("quantile", C3, np.array([0.1, 0.5, 0.93]), axis=2, method="inverted_cdf", id="quantile-inverted_cdf"),
  same("quantile", C3, 0.4, axis=(2, 0), method="inverted_cdf", weights=np.abs(C3[:, 0, :].T) + 0.1, keepdims=True,
       id="quantile-inverted_cdf-weights", diff_args=(0,)),
  same("nanquantile", NANS, np.array([0.2, 0.7]), axis=1, method="inverted_cdf", weights=np.arange(1.0, 6.0),
       id="nanquantile-inverted_cdf-weights", diff_args=(0,)),
  same("quantile", C3, 0.5, axis=1, method="inverted_cdf", weights=np.array([1.0, -1.0, 2.0, 0.5]),
       id="quantile-inverted_cdf-negative-weight", diff_args=(0,)),
  same("isin", IV, np.array([1, 5, 7])), same("isin", A, A[0], invert=True, id="isin-invert", diff=False),
  flat("histogram", V), flat("histogram", V, bins=3, range=(-1.0, 1.0), weights=rnd(5, seed=11) ** 2, id="histogram-weights"),
  flat("histogram", V, bins=XP, density=True, id="histogram-edges"),
  same("histogram_bin_edges", V, bins=4), same("histogram_bin_edges", np.ones(3), bins=2, id="histogram_bin_edges-flat"),
  same("vander", V), same("vander", IV, N=3, increasing=True, id="vander-int"),
  same("polyval", W, V), same("polyval", IV, np.array(2, np.int64), id="polyval-int"), same("polyval", rnd(3, 2), V[:2], id="polyval-2d"),
  same("polyadd", W, V[:2]), same("polyadd", IV[:2], IV, id="polyadd-int"), same("polysub", V[:3], W),
  same("polymul", W, V[:3]), same("polymul", IV[:2], IV, id="polymul-int"),
  same("polyder", V), same("polyder", V, m=3, id="polyder-m3"), same("polyint", W), same("polyint", W, m=2, k=np.array([1.0, 2.0]), id="polyint-k"),
  same("fill_diagonal", A, 7.0, inplace=False, diff_args=(0,)),
  same("fill_diagonal", A, V[:2], inplace=False, id="fill_diagonal-values"),
  same("fill_diagonal", rnd(3, 3, 3), V[:3], inplace=False, id="fill_diagonal-3d"),
  same("rollaxis", rnd(2, 3, 4), 2), same("rollaxis", rnd(2, 3, 4), 0, 2, id="rollaxis-start"),
  flat("unstack", A), flat("unstack", A, axis=1, id="unstack-axis1"),
  same("matvec", rnd(2, 3, 4), W), same("vecmat", V[:3], rnd(2, 3, 4), id="vecmat"),
  same("astype", A, np.float32), same("astype", IV, None, id="astype-none"), same("copy", A),
  Row("apply_along_axis", lambda a: jnp.apply_along_axis(lambda s: jnp.cumsum(s) * s[0], 1, a),
      lambda a: jxn.apply_along_axis(lambda s: jxn.cumsum(s) * s[0], 1, a), (rnd(2, 3, 4),)),
  same("partition", rnd(3, 6, seed=13), 2), same("partition", TIES, 3, id="partition-ties"),
  same("partition", np.array([3, 0, 2, 0, 7], np.uint32), 1, axis=0, id="partition-uint"),
  same("argpartition", rnd(3, 6, seed=13), 2, axis=1, diff=False), same("argpartition", TIES, 1, id="argpartition-ties", diff=False),
  same("argpartition", rnd(5, 3, seed=14), 3, axis=0, id="argpartition-axis0", diff=False),
  same("put_along_axis", A, np.array([[0], [2], [1]]), np.array([[1.0], [2.0], [3.0]]), 1, inplace=False),
  same("put_along_axis", A, np.array([[0, 2, 1, 1]]), 9.0, 0, inplace=False, id="put_along_axis-scalar", diff_args=(0,)),
  same("put_along_axis", A, np.array([1, 11]), np.array([5.0, 6.0]), None, inplace=False, id="put_along_axis-flat"),
  same("put", A, np.array([0, 5, -1, 20]), np.array([1.0, 2.0]), inplace=False),
  same("put", A, np.array([0, 5, -1, 20]), np.array([1.0, 2.0]), mode="wrap", inplace=False, id="put-wrap"),
  same("put", A, np.array([0, 5, -1, 20]), np.array([1.0, 2.0, 3.0]), mode="clip", inplace=False, id="put-clip"),
  same("place", A, A > 0, np.array([7.0, 8.0]), inplace=False),
  same("union1d", IV, np.array([7, 3, 0]), vmap=False), same("union1d", IV, np.array([7, 3, 0]), size=9, fill_value=-1, id="union1d-size"),
  same("intersect1d", IV, np.array([5, 1, 7, 1]), vmap=False),
  flat("intersect1d", IV, np.array([5, 1, 7, 1]), return_indices=True, vmap=False, id="intersect1d-indices"),
  same("intersect1d", V, np.concatenate([V[3:], W]), size=4, id="intersect1d-size"),
  flat("intersect1d", IV, np.array([5, 1, 7, 1]), return_indices=True, size=4, id="intersect1d-size-indices"),
  same("intersect1d", IV, np.array([5, 1, 7]), size=3, fill_value=-1, id="intersect1d-fill"),
  same("setdiff1d", IV, np.array([5, 0]), vmap=False), same("setdiff1d", V, V[1:3], size=5, id="setdiff1d-size"),
  same("setxor1d", IV, np.array([5, 0, 0, 8]), vmap=False), same("setxor1d", V, V[1:3] * 2, size=8, id="setxor1d-size"),
  same("unique_values", IV, vmap=False), same("unique_values", V, size=6, fill_value=0.5, id="unique_values-size"),
  flat("unique_counts", IV, vmap=False), flat("unique_inverse", IV, vmap=False), flat("unique_all", IV, vmap=False),
  flat("unique_all", IV, size=5, id="unique_all-size"),
  # jnp.unique itself: counts when size= keeps fewer groups than there are, NaNs one value (equal_nan=True)
  flat("unique", IV, return_counts=True, return_index=True, size=3, id="unique-truncated-counts"),
  same("unique", np.array([1.0, np.nan, 2.0, np.nan, 1.0]), vmap=False, diff=False, id="unique-nan"),
  # (not under jvp: tinyjax's concrete values are those of no transform; JAX reads a JVP tracer's primal)
  same("trim_zeros", np.array([0.0, 0.0, 1.5, 0.0, 2.0, 0.0]), vmap=False, diff=False),
  same("trim_zeros", np.array([0, 0, 1, 0, 2, 0]), trim="f", vmap=False, id="trim_zeros-f"),
  same("spacing", np.array([1.0, -2.0, 0.0, -0.0, 1e300, -1e-310, np.inf]), diff=False),
  same("spacing", np.array([1.0, -3.0, 0.0, -0.0], np.float16), id="spacing-f16", diff=False),
  same("bitwise_invert", IV), same("bitwise_left_shift", IV, np.array([1, 2, 0, 3, 1])), same("bitwise_right_shift", IV * 9, 2),
  same("polyfit", XP, np.sin(XP), 2), same("polyfit", XP, np.stack([XP ** 2, XP]).T, 1, w=np.abs(V[:1].repeat(6)) + XP ** 2, id="polyfit-2d-w"),
  flat("polyfit", XP, np.cos(XP), 2, cov=True, id="polyfit-cov"),
  Row("apply_over_axes", lambda a: jnp.apply_over_axes(jnp.sum, a, [0, 2]), lambda a: jxn.apply_over_axes(jxn.sum, a, [0, 2]), (rnd(2, 3, 4),)),
  same("bitwise_count", np.array([-128, 127, -1, 0, 5], np.int8)),
  same("bitwise_count", np.array([2 ** 62 + 3, -7], np.int64), id="bitwise_count-64"),
  same("bitwise_count", np.array([3, 255], np.uint16), id="bitwise_count-u16"), same("bitwise_count", BV, id="bitwise_count-bool"),
  same("packbits", rnd(3, 11, seed=16) > 0, axis=1), same("packbits", IV, bitorder="little", id="packbits-little"),
  same("unpackbits", np.array([[7, 200], [1, 255]], np.uint8), axis=0),
  same("unpackbits", np.array([7, 200, 3], np.uint8), count=10, bitorder="little", id="unpackbits-count"),
  same("unpackbits", np.array([7, 200, 3], np.uint8), count=30, id="unpackbits-pad"),
  flat("histogramdd", rnd(20, 3, seed=17), bins=(2, 3, 4)),
  flat("histogramdd", rnd(20, 2, seed=17), bins=3, range=[(-1.0, 1.0), None], weights=rnd(20, seed=18) ** 2, density=True,
       id="histogramdd-weights"),
  flat("histogram2d", rnd(10, seed=19), rnd(10, seed=20), bins=(3, XP)),
  flat("polydiv", V, W[:2]), flat("polydiv", IV[:2], W[:3], id="polydiv-short"),
  same("poly", V[:3]), same("poly", IV, id="poly-int"), same("poly", np.array(2.0), id="poly-scalar"),
  same("i0", np.array([0.0, 0.5, -3.0, 7.9, 8.1, 30.0, -700.0])),
  same("i0", np.array([0.0, 1.5, -9.0, 20.0], np.float32), id="i0-f32", rtol=1e-6),   # (float32 rounding)
  same("i0", IV, id="i0-int"),
  Row("kaiser", lambda b: jnp.kaiser(7, b), lambda b: jxn.kaiser(7, b), (np.array(4.5),)),
  U("call", A, W), U("reduce", A, axis=1), U("reduce", A, axis=None, id="ufunc.reduce-all"),
  U("reduce", A, axis=0, keepdims=True, initial=0.5, id="ufunc.reduce-initial"),
  Row("ufunc.reduce", lambda a: uf(jnp).reduce(a, axis=1, where=A > 0), lambda a: uf(jxn).reduce(a, axis=1, where=A > 0), (A,),
      id="ufunc.reduce-where"),
  U("accumulate", A, axis=1), U("at", A, (np.array([0, 0, 2]), np.array([1, 1, 3])), np.array([2.0, 3.0, 4.0]), inplace=False,
                                batch_args=(0, 2)),
  U("reduceat", V, np.array([0, 2, 3])), U("outer", V[:3], W),
  Row("fromfunction", lambda a: jnp.fromfunction(lambda i, j: i * a[0] + j, (2, 3)),
      lambda a: jxn.fromfunction(lambda i, j: i * a[0] + j, (2, 3)), (V,)),
  Row("vectorize", lambda a, b: jnp.vectorize(lambda x, y: x * y + jnp.sin(x))(a, b),
      lambda a, b: jxn.vectorize(lambda x, y: x * y + jxn.sin(x))(a, b), (A, W)),
  Row("vectorize-signature", lambda a, b: jnp.vectorize(lambda x, y: jnp.dot(x, y) * x, signature="(n),(n)->(n)")(a, b),
      lambda a, b: jxn.vectorize(lambda x, y: jxn.dot(x, y) * x, signature="(n),(n)->(n)")(a, b), (rnd(2, 1, 4), rnd(3, 4, seed=15))),
  Row("vectorize-excluded", lambda a: jnp.vectorize(lambda x, n: x ** n, excluded={1})(a, 3),
      lambda a: jxn.vectorize(lambda x, n: x ** n, excluded={1})(a, 3), (A,)),
]

@pytest.mark.parametrize("row,check", params(ROWS, vmap_last="first"))
def test_table(row, check): run(row, check)

def test_no_arrays():
  """The functions of static arguments: indices, windows, predicates."""
  for name in ("bartlett", "blackman", "hamming", "hanning"):
    for m in (0, 1, 6): assert_close(getattr(jnp, name)(m), getattr(jxn, name)(m))
  for m in (0, 1, 6): assert_close(jnp.kaiser(m, 3.0), jxn.kaiser(m, 3.0))
  assert_close(jnp.diag_indices(3), jxn.diag_indices(3))
  assert_close(jnp.diag_indices(2, 3), jxn.diag_indices(2, 3))
  assert_close(jnp.diag_indices_from(np.zeros((3, 3))), jxn.diag_indices_from(np.zeros((3, 3))))
  assert_close(jnp.tril_indices_from(np.zeros((3, 4)), 1), jxn.tril_indices_from(np.zeros((3, 4)), 1))
  assert_close(jnp.triu_indices_from(np.zeros((4, 3)), -1), jxn.triu_indices_from(np.zeros((4, 3)), -1))
  for x in (1, 2.5, 1j, np.float32(1), np.zeros(()), np.zeros(2), [1], "a", None):
    assert jnp.isscalar(x) == jxn.isscalar(x) and jnp.iterable(x) == jxn.iterable(x), x
  assert jnp.isscalar(jnp.zeros(())) and not jnp.isscalar(jnp.zeros(2))

def test_dtype_names():
  """The scalar type aliases and isdtype, as JAX's."""
  assert jnp.bool == jnp.bool_ and jnp.float_ == jnp.float64 and jnp.int_ == jnp.int64 and jnp.uint == jnp.uint64
  assert (jnp.object_, jnp.character, jnp.flexible) == (jxn.object_, jxn.character, jxn.flexible)
  assert_close(jnp.float_(1.5), jxn.float_(1.5))
  assert_close(jnp.bool(1), jxn.bool(1))
  kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric", np.float32,
           ("integral", np.float16)]
  for d in (np.float32, np.int8, "uint16", np.bool_, np.complex64, np.dtype("float16"), np.int64):
    for k in kinds: assert jnp.isdtype(d, k) == jxn.isdtype(d, k), (d, k)
  assert jnp.isdtype(jnp.bfloat16, "real floating") and jnp.isdtype(jnp.int16, "signed integer")
  same_error(lambda: jnp.isdtype(np.float32, "x"), lambda: jxn.isdtype(np.float32, "x"))
  same_error(lambda: jnp.isdtype(np.float32, 3.5), lambda: jxn.isdtype(np.float32, 3.5))

def test_roots():
  """roots: complex eigenvalues of the companion matrix (LAPACK geev, as JAX: the same order); leading zeros stripped
  (concrete p) or, with strip_zeros=False, NaN roots last, under jit and vmap."""
  def close(got, want): np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12)
  for p in ([1.0, -6, 11, -6], [0.0, 0, 1, 2, 5], [3.0], [0.0, 0.0], [2, 0, -8]):
    for strip in (True, False):
      got, want = jnp.roots(np.array(p), strip_zeros=strip), jxn.roots(np.array(p), strip_zeros=strip)
      assert np.asarray(got).dtype == want.dtype
      close(got, want)
  P = np.array([[0.0, 1, -3, 2], [1.0, 2, 5, 1], [2.0, -1, 0, 3]])
  close(tinyjax.jit(lambda p: jnp.roots(p, strip_zeros=False))(P[1]), jxn.roots(P[1], strip_zeros=False))
  close(tinyjax.vmap(lambda p: jnp.roots(p, strip_zeros=False))(P), jax.vmap(lambda p: jxn.roots(p, strip_zeros=False))(P))
  with pytest.raises(tinyjax.errors.ConcretizationTypeError): tinyjax.jit(jnp.roots)(P[0])

def test_sort_complex():
  """sort_complex: by real part, then imaginary part (NaN last), as a complex array; under vmap; JAX's ComplexWarning."""
  def close(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
  for a in (np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 0j]), np.array([2.0, np.nan, 1.0]), np.array([1, 2], np.float32),
            np.array([[1 + 1j, np.nan, 1 - 2j], [0, 1j, -1j]]), IV):
    close(jnp.sort_complex(a), jxn.sort_complex(a))
  Z = rnd(3, 4) + 1j * rnd(3, 4, seed=1)
  close(tinyjax.vmap(jnp.sort_complex)(Z), jax.vmap(jxn.sort_complex)(Z))
  assert jnp.ComplexWarning is jxn.ComplexWarning

def test_nextafter():
  """nextafter from the bits, every dtype: zeros of either sign, infinities, NaN, equal arguments (x2), the largest
  float; under vmap and jit; no derivative, as JAX."""
  x = np.array([1.0, -1.0, 0.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 2.0, 1.0, 1.7976931348623157e308, 0.0, -0.0, 3.0])
  y = np.array([2.0, 0.0, 1.0, -1.0, -1.0, 0.0, 0.0, 1.0, np.nan, 1.0, np.inf, -0.0, 0.0, -np.inf])
  for d in (np.float64, np.float32, np.float16):
    with np.errstate(over="ignore"): xd, yd = x.astype(d), y.astype(d)   # (the largest float64 is inf in the others)
    got, want = np.asarray(jnp.nextafter(xd, yd)), np.asarray(jxn.nextafter(xd, yd))
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want)), d
  assert_close(jnp.nextafter(IV, 3), jxn.nextafter(IV, 3))
  assert_close(tinyjax.vmap(jnp.nextafter)(x, y), jax.vmap(jxn.nextafter)(x, y))
  assert_close(tinyjax.jit(jnp.nextafter)(x, y), jax.jit(jxn.nextafter)(x, y))
  same_error(lambda: tinyjax.grad(jnp.nextafter)(1.0, 2.0), lambda: jax.grad(jxn.nextafter)(1.0, 2.0))

def test_complex_arguments():
  """The linear functions on complex arrays (their parts) and poly's complex results, against JAX; the others raise
  NotImplementedError."""
  z = np.array([[1 + 2j, 3 - 1j, 0.5j], [2, 1j, -1 - 1j]])
  for call in (lambda m: m.copy(z), lambda m: m.diff(z, axis=0), lambda m: m.diff(z, prepend=1.5, append=np.ones((2, 1))),
               lambda m: m.diff(np.ones(3), prepend=1j), lambda m: m.unstack(z, axis=1), lambda m: m.rollaxis(z, 1),
               # poly of a square matrix (its eigenvalues) and of complex zeros: complex
               lambda m: m.poly(np.array([[1., 2], [3, 4]])), lambda m: m.poly(np.array([[0., -1], [1, 0]])),
               lambda m: m.poly(z[0]), lambda m: m.poly(z[:, :2]), lambda m: m.poly(np.array([], complex))):
    got, want = call(jnp), call(jxn)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True):
      assert np.asarray(g).dtype == np.asarray(w).dtype
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
  with pytest.raises(NotImplementedError, match="jnp.isin of complex"): jnp.isin(z, z)

def test_trim_leading_zeros():
  """polymul and polydiv with trim_leading_zeros (concrete values, as JAX's: under jit a ConcretizationTypeError)."""
  for call in (lambda m: m.polymul(np.array([0., 0, 1, 2]), np.array([0., 3]), trim_leading_zeros=True),
               lambda m: m.polymul(np.array([0.]), np.array([0., 0]), trim_leading_zeros=True),
               lambda m: m.polymul(np.array([0., 0]), np.array([1., 2]), trim_leading_zeros=True),
               lambda m: m.polydiv(np.array([1., 3, 2]), np.array([1., 1]), trim_leading_zeros=True),
               lambda m: m.polydiv(np.array([1., 3, 3]), np.array([1., 1]), trim_leading_zeros=True)):
    assert_close(call(jnp), call(jxn))
  with pytest.raises(tinyjax.errors.ConcretizationTypeError):
    tinyjax.jit(lambda a: jnp.polymul(a, a, trim_leading_zeros=True))(V)

def test_frexp_ldexp():
  """frexp and ldexp from the bits (they went through log2 and exp2: the largest floats came out as (0, 1025)), every
  float dtype, zeros, infinities, NaN, exponents that overflow by one or underflow; their derivatives (2**-e, 2**n).
  Not subnormals: XLA's CPU flushes them to zero (DAZ), numpy and tinyjax do not."""
  x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -3.0, 2.2250738585072014e-308, 1.7976931348623157e308, 1e308, 1.0, 0.1, 3.5])
  n = np.array([0, 1, -1, 1024, 1023, -1022, 5, -2000, 2000, -5, 0, 3])
  for d in (np.float64, np.float32, np.float16):
    with np.errstate(over="ignore"): xd = x.astype(d)
    assert_close(jnp.frexp(xd), jxn.frexp(xd))
    xn = np.where(np.isnan(xd), 0.5, xd).astype(d)
    assert_close(jnp.ldexp(xn, n), jxn.ldexp(xn, n))
  assert_close(jnp.ldexp(np.float32(0.5), np.int32(3)), jxn.ldexp(np.float32(0.5), np.int32(3)))
  assert_close(tinyjax.vmap(jnp.frexp)(V), jax.vmap(jxn.frexp)(V))
  assert_close(tinyjax.grad(lambda v: jnp.frexp(v)[0].sum())(V), jax.grad(lambda v: jxn.frexp(v)[0].sum())(V))
  assert_close(tinyjax.grad(lambda v: jnp.ldexp(v, IV).sum())(V), jax.grad(lambda v: jxn.ldexp(v, IV).sum())(V))
  same_error(lambda: jnp.ldexp(V, 2.0), lambda: jxn.ldexp(V, 2.0))

def test_einsum_path():
  ops = (np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
  for opt in ("auto", "greedy", True, False):
    got, want = jnp.einsum_path("ij,jk,kl->il", *ops, optimize=opt), jxn.einsum_path("ij,jk,kl->il", *ops, optimize=opt)
    assert got[0] == want[0] and str(got[1]) == str(want[1])

def test_empty_results():
  """Results with no elements, computed from data (a program's output buffer cannot have size 0: tinygrad's realize
  computes them), eagerly and under jit."""
  for call in (lambda m: m.diff(np.array([5.0])), lambda m: m.diff(V, n=6), lambda m: m.ediff1d(np.ones(1)),
               lambda m: m.setdiff1d(IV, IV), lambda m: m.intersect1d(IV, IV + 10)):
    assert_close(call(jnp), call(jxn))
  assert_close(tinyjax.jit(lambda x: (x[1:] - x[:-1], x * 2))(np.ones(1)), jax.jit(lambda x: (x[1:] - x[:-1], x * 2))(np.ones(1)))

def test_under_jit():
  f = tinyjax.jit(lambda x, xp, fp: (jnp.interp(x, xp, fp), jnp.histogram(x, 4)[0], jnp.isin(x, fp), jnp.nanmedian(x)))
  x, xp, fp = rnd(7, seed=7), XP, rnd(6, seed=9)
  assert_close(f(x, xp, fp), (jxn.interp(x, xp, fp), jxn.histogram(x, 4)[0], jxn.isin(x, fp), jxn.nanmedian(x)))

ERRORS = [
  lambda m: m.diff(A, n=-1),
  lambda m: m.diff(np.float64(1.0)),
  lambda m: m.gradient(np.ones(1)),
  lambda m: m.gradient(V, 1.0, 2.0),
  lambda m: m.gradient(V, edge_order=2),
  lambda m: m.interp(V, XP, V),
  lambda m: m.interp(V, XP, XP, left="x"),
  lambda m: m.cov(rnd(2, 2, 2)),
  lambda m: m.cov(A, fweights=np.ones(4)),
  lambda m: m.nanquantile(A, 0.5, method="x"),
  lambda m: m.isin(V, W, method="x"),
  lambda m: m.histogram(V, weights=W),
  lambda m: m.histogram(V, bins="auto"),
  lambda m: m.vander(A),
  lambda m: m.vander(BV),
  lambda m: m.polyder(V, -1),
  lambda m: m.polyint(V, 2, k=np.ones(3)),
  lambda m: m.fill_diagonal(A, 1.0),
  lambda m: m.fill_diagonal(A, 1.0, wrap=True, inplace=False),
  lambda m: m.fill_diagonal(rnd(2, 3, 3), 1.0, inplace=False),
  lambda m: m.diag_indices_from(A),
  lambda m: m.diag_indices(-1),
  lambda m: m.tril_indices_from(V),
  lambda m: m.rollaxis(A, 0, 5),
  lambda m: m.matvec(A, V),
  lambda m: m.matvec(V, V),
  lambda m: m.vecmat(A, A),
  lambda m: m.partition(V, 5),
  lambda m: m.argpartition(A, 0, axis=2),
  lambda m: m.put_along_axis(A, np.array([[0]]), 1.0, 1),
  lambda m: m.put_along_axis(A, np.array([0]), 1.0, 1, inplace=False),
  lambda m: m.put_along_axis(A, np.array([[0, 1]]), np.ones(3), 0, inplace=False),
  lambda m: m.put(A, np.array([0]), 1.0),
  lambda m: m.put(A, np.array([0]), 1.0, mode="x", inplace=False),
  lambda m: m.place(A, A > 0, 1.0),
  lambda m: m.place(A, V > 0, 1.0, inplace=False),
  lambda m: m.place(A, A > 0, np.zeros(0), inplace=False),
  lambda m: m.ix_(A),
  lambda m: m.ix_(BV),
  lambda m: m.r_["x", 1, 2],
  lambda m: m.r_[1, "r"],
  lambda m: m.vectorize(lambda x: x, signature="(n)->")(V),
  lambda m: m.vectorize(lambda x, y: x, signature="(n),(n)->(n)")(V, W),
  lambda m: m.vectorize(lambda x: x, signature="(n)->(n)")(np.float64(1.0)),
  lambda m: m.vectorize(lambda x: x.sum(), signature="(n)->(n)")(V),
  lambda m: m.vectorize(lambda x: x, signature="(n)->(n)")(V, V),
  lambda m: m.vectorize(lambda x: x, excluded={-1}),
  lambda m: m.vectorize(lambda x: x, excluded={1.5}),
  lambda m: m.polyfit(A, V, 1),
  lambda m: m.polyfit(V, V, -1),
  lambda m: m.polyfit(V, W, 1),
  lambda m: m.apply_over_axes(lambda x, ax: x.sum(), A, [0]),
  lambda m: m.bitwise_count(V),
  lambda m: m.packbits(V),
  lambda m: m.packbits(IV, bitorder="x"),
  lambda m: m.unpackbits(IV),
  lambda m: m.histogramdd(A, bins=(2, 2)),
  lambda m: m.histogramdd(A, range=[(0, 1)]),
  lambda m: m.histogramdd(A, weights=W),
  lambda m: m.poly(A),
  lambda m: m.frompyfunc(lambda a, b: a + b, 2, 1).reduce(A, where=A > 0),
  lambda m: uf(m).reduce(A, where=A),
  lambda m: m.frompyfunc(lambda a, b: a + b, 2, 1).reduce(np.zeros((0, 2))),
  lambda m: uf(m).at(A, 0, 1.0),
  lambda m: m.frompyfunc(lambda a: a, 1, 1).reduce(A),
  lambda m: m.frompyfunc(lambda a, b: (a, b), 2, 2).accumulate(A),
  lambda m: uf(m).reduceat(A, np.array([[0]])),
  lambda m: uf(m).accumulate(A, axis=None),
]

@pytest.mark.parametrize("call", ERRORS, ids=range(len(ERRORS)))
def test_errors(call): same_error(lambda: call(jnp), lambda: call(jxn), "got" if call is ERRORS[1] else None)

def test_data_dependent_shapes_under_jit():
  """Without size= the set functions need concrete values (JAX's ConcretizationTypeError under jit); with it they trace."""
  for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
    with pytest.raises(jax.errors.ConcretizationTypeError): jax.jit(getattr(jxn, name))(IV, IV[:2])
    with pytest.raises(tinyjax.errors.ConcretizationTypeError): tinyjax.jit(getattr(jnp, name))(IV, IV[:2])
    got = tinyjax.jit(lambda a, b, f=getattr(jnp, name): f(a, b, size=6))(IV, IV[:2] * 2)
    assert_close(got, jax.jit(lambda a, b, f=getattr(jxn, name): f(a, b, size=6))(IV, IV[:2] * 2))
  with pytest.raises(tinyjax.errors.ConcretizationTypeError): tinyjax.jit(jnp.trim_zeros)(IV)
  assert_close(tuple(tinyjax.jit(lambda x: jnp.unique_counts(x, size=3))(IV)), tuple(jax.jit(lambda x: jxn.unique_counts(x, size=3))(IV)))

def test_index_objects():
  """mgrid, ogrid, r_, c_, s_, index_exp as JAX's (x64 on: int64 and float64 grids)."""
  assert_close(jnp.mgrid[0:3, 1:4:2], jxn.mgrid[0:3, 1:4:2])
  assert_close(jnp.mgrid[0:1:5j], jxn.mgrid[0:1:5j])
  assert_close(jnp.mgrid[0:2, 0:1:3j], jxn.mgrid[0:2, 0:1:3j])
  assert_close(tuple(jnp.ogrid[0:3, 0:2]), tuple(jxn.ogrid[0:3, 0:2]))
  assert_close(jnp.r_[1:4, 7, np.array([8.5, 9])], jxn.r_[1:4, 7, np.array([8.5, 9])])
  assert_close(jnp.r_["0,2", V[:2], W[:2]], jxn.r_["0,2", V[:2], W[:2]])
  assert_close(jnp.r_["0,2,0", V[:2], W[:2]], jxn.r_["0,2,0", V[:2], W[:2]])
  assert_close(jnp.r_["c", 1, 2], jxn.r_["c", 1, 2])
  assert_close(jnp.r_["1,2,0", A, A], jxn.r_["1,2,0", A, A])
  assert_close(jnp.c_[V, V * 2], jxn.c_[V, V * 2])
  assert_close(jnp.c_[A, A[:, :1], 5:8], jxn.c_[A, A[:, :1], 5:8])
  assert jnp.s_[1:2, ::3] == jxn.s_[1:2, ::3] and jnp.index_exp[2:] == jxn.index_exp[2:]
  assert_close(jnp.ix_(np.array([0, 2]), np.array([1, 2, 3])), jxn.ix_(np.array([0, 2]), np.array([1, 2, 3])))
  assert_close(jnp.ix_(np.array([], np.int32)), jxn.ix_(np.array([], np.int32)))
  assert_close(jnp.fromfunction(lambda i, j: i - j, (2, 3), dtype=int), jxn.fromfunction(lambda i, j: i - j, (2, 3), dtype=int))
  assert_close(jnp.mask_indices(3, jnp.triu, 1), jxn.mask_indices(3, jxn.triu, 1))

def test_not_implemented():
  with pytest.raises(NotImplementedError, match="keyword arguments"): jnp.vectorize(lambda x, y=1: x + y)(V, y=2)

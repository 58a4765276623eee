"""tinyjax.numpy's composed functions (numpy/_extra.py) against jax.numpy: differences and integrals, statistics,
polynomials, isin, index helpers, utilities and windows; one table row per function and variant (value and dtype, vmap,
jvp, grad; x64), and JAX's errors."""
import numpy as np
import pytest
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from conftest import rnd, assert_close, same_error
from jnp_table import Row, params, run

pytestmark = pytest.mark.usefixtures("compile_in_process")

A, V, W = rnd(3, 4), rnd(5, seed=1), rnd(4, seed=2)
IV = np.array([3, 1, 4, 1, 5], np.int64)
BV = np.array([True, False, False, True])
NANS = np.where(rnd(3, 5, seed=3) > 0.7, np.nan, rnd(3, 5, seed=4))
NANS[1] = np.nan                                  # a row of NaNs only
XP = np.sort(rnd(6, seed=5))
PH = np.cumsum(rnd(7, seed=6) * 3)                # phases with jumps larger than pi

def same(name, *args, **kw):
  """A row calling jnp.name / jxn.name with the same positional arrays and keywords."""
  rid = kw.pop("id", None) or name
  opts = {k: kw.pop(k) for k in ("vmap", "diff", "diff_args", "batch_args", "rtol", "atol") if k in kw}
  return Row(name, lambda *a: getattr(jnp, name)(*a, **kw), lambda *a: getattr(jxn, name)(*a, **kw), args, id=rid, **opts)

def flat(name, *args, **kw):
  """`same` for a function returning several arrays: compared raveled and concatenated (grad takes one output)."""
  row = same(name, *args, **kw)
  tj, jx = row.tj, row.jx
  row.tj = lambda *a: jnp.concatenate([jnp.ravel(o) for o in tj(*a)])
  row.jx = lambda *a: jxn.concatenate([jxn.ravel(o) for o in jx(*a)])
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
]

@pytest.mark.parametrize("row,check", params(ROWS, vmap_last="first"))
def test_table(row, check): run(row, check)

def test_no_arrays():
  """The functions of static arguments: indices, windows, predicates."""
  for name in ("bartlett", "blackman", "hamming", "hanning"):
    for m in (0, 1, 6): assert_close(getattr(jnp, name)(m), getattr(jxn, name)(m))
  assert_close(jnp.diag_indices(3), jxn.diag_indices(3))
  assert_close(jnp.diag_indices(2, 3), jxn.diag_indices(2, 3))
  assert_close(jnp.diag_indices_from(np.zeros((3, 3))), jxn.diag_indices_from(np.zeros((3, 3))))
  assert_close(jnp.tril_indices_from(np.zeros((3, 4)), 1), jxn.tril_indices_from(np.zeros((3, 4)), 1))
  assert_close(jnp.triu_indices_from(np.zeros((4, 3)), -1), jxn.triu_indices_from(np.zeros((4, 3)), -1))
  for x in (1, 2.5, 1j, np.float32(1), np.zeros(()), np.zeros(2), [1], "a", None):
    assert jnp.isscalar(x) == jxn.isscalar(x) and jnp.iterable(x) == jxn.iterable(x), x
  assert jnp.isscalar(jnp.zeros(())) and not jnp.isscalar(jnp.zeros(2))

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
]

@pytest.mark.parametrize("call", ERRORS, ids=range(len(ERRORS)))
def test_errors(call): same_error(lambda: call(jnp), lambda: call(jxn), "got" if call is ERRORS[1] else None)

def test_not_implemented():
  with pytest.raises(NotImplementedError, match="trim_leading_zeros"): jnp.polymul(V, W, trim_leading_zeros=True)
  with pytest.raises(NotImplementedError, match="nanquantile"): jnp.nanquantile(V, 0.5, method="inverted_cdf")

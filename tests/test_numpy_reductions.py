"""tinyjax.numpy's reductions against jax.numpy: one row per function and variant (axis None/int/negative/tuple,
keepdims, where=, initial=, dtype=), each checked for value, dtype, vmap (along a new last axis too for a function's first row),
jvp and grad; JAX's dtypes with x64 off,
JAX's errors, and kernel counts equal to the hand-written tinygrad code."""
from dataclasses import replace
import numpy as np
import pytest
import jax.numpy as jxn
import tinyjax.numpy as jnp
from tinygrad import Tensor
from conftest import raises, rnd, assert_close, kernel_count, same_error
from jnp_table import Row, params, run, x64_off

pytestmark = pytest.mark.usefixtures("compile_in_process")

X = rnd(3, 4, 5)
M = rnd(3, 4, 5, seed=1) > 0                                   # a where= mask
TIES = np.array([[1., 3., 3., 0.], [2., 2., -1., 2.], [0., 0., 0., 0.]])   # tied maxima and minima: split gradients
ZEROS = np.array([[1.5, 0., 2., -1.], [0., 3., 0., .5], [1., 2., 3., 4.]])  # prod's gradient at zeros
NANS = np.where(rnd(3, 4, seed=2) > 0.8, np.nan, rnd(3, 4, seed=3))
NANS[2] = np.nan                                                # a row of NaNs only
BOOLS = rnd(3, 4, 5, seed=4) > -0.5
Q = np.array([0.1, 0.5, 0.93])

def R(fn: str, *args, id: str = "", **kw) -> Row:  # noqa: A002
  """A row calling jnp.fn / jax.numpy.fn on the positional arrays `args` with the keywords `kw`."""
  def tj(*a): return getattr(jnp, fn)(*a, **kw)
  def jx(*a): return getattr(jxn, fn)(*a, **kw)
  return Row(fn, tj, jx, args, id=id or fn + ("-" + ",".join(f"{k}={v!r}" for k, v in kw.items() if k != "where") if kw else "")
             + ("-where" if "where" in kw else ""), diff=not fn.startswith(("arg", "all", "any", "count")))

ROWS = [
  R("sum", X), R("sum", X, axis=-1), R("sum", X, axis=(-1, 0), keepdims=True),
  R("sum", X, axis=()), R("sum", X, axis=1, where=M), R("sum", X, initial=2.5), R("sum", X, axis=0, where=M, keepdims=True),
  # prod over all axes: prod-zeros-all (the grad of R("prod", X), 60 elements, takes ~30 s to compile)
  R("prod", X, axis=2), R("prod", ZEROS, axis=1, id="prod-zeros"), R("prod", ZEROS, id="prod-zeros-all"),
  R("prod", X, axis=1, where=M),
  R("mean", X), R("mean", X, axis=(0, -1), keepdims=True), R("mean", X, axis=2, where=M),
  R("var", X), R("var", X, axis=1), R("var", X, axis=(0, 2), ddof=1), R("var", X, axis=-1, keepdims=True, where=M),
  R("std", X, axis=0), R("std", X, ddof=1), R("std", X, axis=2, where=M, correction=1), R("std", X, axis=1, keepdims=True),
  R("max", X), R("max", X, axis=(0, 2), keepdims=True), R("max", X, axis=-1, where=M, initial=-1.0),
  R("max", TIES, axis=1, id="max-ties"), R("max", TIES, id="max-ties-all"), R("max", X, initial=1.5),
  R("min", X), R("min", X, axis=(1, 2)), R("min", X, axis=1, where=M, initial=0.5),
  R("min", TIES, axis=1, id="min-ties"), R("amax", X, axis=2), R("amin", X, axis=-2, keepdims=True),
  R("ptp", X, axis=1), R("ptp", X), R("ptp", TIES, axis=1, keepdims=True, id="ptp-ties"),
  R("argmax", X), R("argmax", X, axis=-1, keepdims=True), R("argmax", TIES, axis=1, id="argmax-ties"),
  R("argmin", X, axis=0), R("argmin", X, keepdims=True), R("argmin", TIES, axis=1, id="argmin-ties"),
  R("all", BOOLS), R("all", BOOLS, axis=1), R("all", X, axis=(0, 2), keepdims=True), R("all", BOOLS, axis=2, where=M),
  R("any", BOOLS, axis=0), R("any", ~BOOLS), R("any", BOOLS, axis=-1, where=M),
  R("count_nonzero", BOOLS, axis=1), R("count_nonzero", np.floor(X)), R("count_nonzero", BOOLS, axis=(0, 2), keepdims=True),
  R("cumsum", X), R("cumsum", X, axis=-1), R("cumsum", BOOLS, axis=2),
  # cumprod flattened: 8 elements (its grad over X[0]'s 20 takes ~12 s to compile)
  R("cumprod", X, axis=2), R("cumprod", ZEROS, axis=1, id="cumprod-zeros"), R("cumprod", X[0, :, :2]),
  R("cumulative_sum", X, axis=1), R("cumulative_sum", X[0, 0], include_initial=True), R("cumulative_prod", X, axis=-1),
  R("nansum", NANS), R("nansum", NANS, axis=1), R("nanprod", NANS, axis=0), R("nanmean", NANS, axis=0, keepdims=True),
  R("nanmax", NANS, axis=1), R("nanmin", NANS, axis=0), R("nanmax", NANS),
  # NaN propagates through max/min and is what argmax/argmin find first (tinygrad's reduce dropped it, and its argmax
  # then returned the axis length); the derivatives at a slice holding a NaN are 0, JAX's NaN (porting.md)
  replace(R("max", NANS, axis=1, id="max-nan"), diff=False), replace(R("min", NANS, id="min-nan-all"), diff=False),
  R("argmax", NANS, axis=1, id="argmax-nan"), R("argmin", NANS.T, axis=0, id="argmin-nan"), R("argmax", NANS, id="argmax-nan-all"),
  R("nanvar", NANS, axis=1), R("nanstd", NANS, axis=0, ddof=1), R("nancumsum", NANS, axis=1), R("nancumprod", NANS),
  R("median", X), R("median", X, axis=-1, keepdims=True), R("median", X, axis=(0, 2)),
  R("median", TIES, axis=1, id="median-ties"),
  R("quantile", X, 0.3), R("quantile", X, 0.75, axis=(0, 2), keepdims=True),
  R("quantile", X, Q, axis=2, method="lower"), R("quantile", X, Q, axis=0, method="higher"),
  R("quantile", X, Q, axis=1, method="nearest"), R("quantile", X, Q, axis=-1, method="midpoint"),
  R("quantile", X, Q[:, None][0], axis=1, keepdims=True, id="quantile-q1"),
  R("percentile", X, Q * 100, axis=1),
  R("average", X),
  Row("average-weights", lambda x, w: jnp.average(x, axis=2, weights=w), lambda x, w: jxn.average(x, axis=2, weights=w),
      (X, rnd(5, seed=5) ** 2)),
  Row("average-returned", lambda x, w: jnp.average(x, axis=(0, 1), weights=w, returned=True),
      lambda x, w: jxn.average(x, axis=(0, 1), weights=w, returned=True), (X, rnd(3, 4, 5, seed=5) ** 2), diff=False),  # a pair
  R("average", X, axis=1, keepdims=True),
]

@pytest.mark.parametrize("row,check", params(ROWS, vmap_last="first"))
def test_table(row, check): run(row, check)

def test_order_statistics_by_sorting(monkeypatch):
  """Slices longer than _RANK_MAX are sorted instead of ranked: the same numbers and gradients."""
  import jax
  import tinyjax
  import tinyjax.numpy._reductions as red
  monkeypatch.setattr(red, "_RANK_MAX", 2)
  x = rnd(3, 5)
  assert_close(jnp.quantile(Tensor(x), Q, axis=1), lambda: jxn.quantile(x, Q, axis=1))
  assert_close(tinyjax.grad(lambda x: jnp.median(x, axis=0).sum())(Tensor(x)), lambda: jax.grad(lambda x: jxn.median(x, axis=0).sum())(x))

def test_nan_in_quantile():
  x = X[0].copy()
  x[1, 2] = np.nan
  assert_close(jnp.median(Tensor(x), axis=1), lambda: jxn.median(x, axis=1))
  assert_close(jnp.quantile(Tensor(x), Q), lambda: jxn.quantile(x, Q))

DTYPE_CASES = [   # (function, input dtype, keywords): the result dtype (and value) must be JAX's with x64 off
  ("sum", "int8", {}), ("sum", "bool", {}), ("sum", "uint8", {}), ("sum", "int32", {"axis": 1}), ("sum", "float16", {}),
  ("sum", "int8", {"dtype": "float32"}), ("sum", "float32", {"dtype": "int32"}), ("sum", "bool", {"dtype": "bool"}),
  ("prod", "int16", {}), ("prod", "bool", {}), ("max", "int8", {}), ("min", "uint8", {"axis": 0}), ("max", "bool", {}),
  ("mean", "int32", {}), ("mean", "bool", {"axis": 1}), ("mean", "float16", {}), ("mean", "int8", {"dtype": "float16"}),
  ("var", "int32", {}), ("std", "uint8", {"axis": 1}), ("median", "int32", {}), ("quantile", "int8", {"q": 0.3}),
  ("average", "int32", {}), ("argmax", "float32", {}), ("argmin", "int8", {"axis": 1}), ("count_nonzero", "int8", {}),
  ("cumsum", "int8", {}), ("cumsum", "bool", {}), ("cumsum", "int32", {"dtype": "bool"}), ("cumprod", "uint8", {"axis": 1}),
  ("cumulative_sum", "int8", {"axis": 1}), ("all", "float32", {}), ("any", "int32", {"axis": 0}), ("ptp", "int16", {}),
  ("nansum", "int8", {}), ("nanmean", "int32", {}), ("nanmax", "float16", {}),
]

@pytest.mark.parametrize("fn,dt,kw", DTYPE_CASES, ids=[f"{f}-{d}-{k}" for f, d, k in DTYPE_CASES])
def test_dtypes_x64_off(fn, dt, kw):
  x = (np.arange(12).reshape(3, 4) % 5 - 1).astype(dt)
  with x64_off():
    assert_close(getattr(jnp, fn)(jnp.asarray(x), **kw), lambda: getattr(jxn, fn)(x, **kw), rtol=1e-3, atol=1e-3)

E = np.ones((2, 3))

@pytest.mark.parametrize("call", [
  "sum(x, axis=2)", "sum(x, axis=(0, 0))", "sum(x, axis=-3)", "prod(x, axis=(1, -1))", "max(x, where=x > 0)",
  "min(x[:0], axis=0)", "sum(x, where=x)", "mean(x, axis=2)", "mean(x, axis=-3)", "var(x, axis=5)", "argmax(x, axis=2)",
  "argmin(x[:, :0], axis=1)", "cumsum(x, axis=2)", "median(x, axis=3)", "quantile(x, 0.5, method='foo')",
  "quantile(x, x)", "cumulative_sum(x)", "cumulative_sum(x[0, 0])", "all(x, axis=-4)", "max(x, initial=x[0])",
  "average(x, weights=x[0])", "average(x, axis=0, weights=x[0])", "var(x, ddof=1, correction=1)",
])
def test_errors(call):
  tj = lambda: eval(call, {"x": jnp.asarray(E)}, dict(vars(jnp)))   # noqa: E731
  jx = lambda: eval(call, {"x": jxn.asarray(E)}, dict(vars(jxn)))   # noqa: E731
  if str(raises(jx)) == "tuple index out of range":   # JAX 0.10's message for a bad axis is Python's: ours says what is wrong
    err = raises(tj)
    assert type(err) is type(raises(jx)) and "is out of bounds for array of dimension" in str(err), err
  else: same_error(tj, jx)

def test_unsupported():
  x = jnp.asarray(E)
  with pytest.raises(NotImplementedError, match="'out' argument to jnp.sum"): jnp.sum(x, out=x)
  # weights only with method 'inverted_cdf' (tests/test_numpy_extra.py has that method), as JAX
  same_error(lambda: jnp.quantile(x, 0.5, weights=jnp.ones_like(x)), lambda: jxn.quantile(E, 0.5, weights=np.ones_like(E)))

def test_kernel_counts():
  """jnp reductions launch what the same tinygrad code launches."""
  x = Tensor(rnd(16, 32)).realize()
  assert kernel_count(lambda: jnp.sum(x, axis=1).realize()) == kernel_count(lambda: x.sum(axis=1).realize())
  assert kernel_count(lambda: jnp.mean(x ** 2).realize()) == kernel_count(lambda: (x ** 2).mean().realize())
  assert kernel_count(lambda: jnp.max(x, axis=0).realize()) == kernel_count(lambda: x.max(axis=0).realize())

@pytest.mark.parametrize("name,args", [("sum", ([1.0, 2.0],)), ("mean", ((1.0, 2.0),)), ("var", ([1.0],)), ("argmax", ([1, 2],)),
                                       ("nansum", ([1.0],)), ("all", ([True],)), ("sin", ([1.0],)), ("power", ([1.0, 2.0], 1.5)),
                                       ("maximum", (1.0, (2.0, 3.0))), ("add", (np.ones(2), [1.0, 2.0])), ("cumsum", ([1.0],)),
                                       ("reshape", ([1.0, 2.0], (2,))), ("transpose", ([[1.0]],)), ("sort", ([2.0, 1.0],)),
                                       ("argsort", ([2.0, 1.0],)), ("where", ([True], 1.0, 2.0)), ("clip", ([1.0], 0.0, 1.0)),
                                       ("dot", ([1.0], np.ones(1))), ("matmul", (np.ones((1, 1)), [[1.0]]))])
def test_lists_are_not_arrays(name, args):
  """jnp's elementwise functions, reductions, products and the common shape functions take arrays and scalars, not
  lists or tuples: JAX's TypeError."""
  same_error(lambda: getattr(jnp, name)(*args), lambda: getattr(jxn, name)(*args))

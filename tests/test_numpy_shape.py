"""tinyjax.numpy's shape functions against jax.numpy: reshaping, joining and splitting, pad (every mode), flip/roll,
tile/repeat, sorting and searching, and the data-dependent ones (unique, nonzero, ...) with concrete inputs or size=."""
import numpy as np
import pytest
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from conftest import rnd, assert_close, same_error, kernel_count
from jnp_table import Row, params, run, same, eager, x64_off

pytestmark = pytest.mark.usefixtures("compile_in_process")

A, B, C = rnd(3, 4), rnd(3, 4, seed=1), rnd(2, 3, 4, seed=2)
V, W = rnd(5, seed=3), rnd(4, seed=4)
TIES = np.array([3., 1., 2., 1., 3., 0.])
NANS = np.array([3., np.nan, 1., np.inf, np.nan, 1., -np.inf])   # JAX sorts NaNs last
SORTED = np.sort(rnd(6, seed=5))
IV = np.array([0, 3, 1, 3, 2], np.int64)

def flat(name, *args, **kw):
  """`same` for a function returning several arrays: compared raveled and concatenated (grad takes one output)."""
  row = same(name, *args, **kw)
  tj, jx = row.tj, row.jx
  row.tj = lambda *a: jnp.concatenate([jnp.ravel(o) for o in tj(*a)])
  row.jx = lambda *a: jxn.concatenate([jxn.ravel(o) for o in jx(*a)])
  return row

def cat_row(name, tj, jx, args, **kw):
  return Row(name, lambda *a: jnp.concatenate([jnp.ravel(o) for o in tj(*a)]), lambda *a: jxn.concatenate([jxn.ravel(o) for o in jx(*a)]),
             args, **kw)

ROWS = [
  # ---- reshaping
  same("reshape", A, (2, -1)), same("reshape", A, 12, id="reshape-int"), same("ravel", C),
  same("transpose", C), same("transpose", C, (1, 0, 2), id="transpose-axes"), same("permute_dims", C, (2, 0, 1)),
  same("matrix_transpose", C), same("moveaxis", C, 0, -1), same("moveaxis", C, (0, 1), (2, 0), id="moveaxis-tuple"),
  same("swapaxes", C, 0, 2), same("expand_dims", A, 1), same("expand_dims", A, (0, -1), id="expand_dims-tuple"),
  same("squeeze", rnd(3, 1, 4, 1), id="squeeze"), same("squeeze", rnd(3, 1, 4, 1), axis=1, id="squeeze-axis"),
  Row("atleast_1d", lambda x: jnp.atleast_1d(x), lambda x: jxn.atleast_1d(x), (np.float64(2.0),), vmap=False),
  Row("atleast_2d", lambda x: jnp.atleast_2d(x), lambda x: jxn.atleast_2d(x), (V,)),
  Row("atleast_3d", lambda x: jnp.atleast_3d(x), lambda x: jxn.atleast_3d(x), (A,)),
  cat_row("atleast_2d-several", lambda x, y: jnp.atleast_2d(x, y), lambda x, y: jxn.atleast_2d(x, y), (V, A)),
  same("broadcast_to", W, (3, 4)),
  cat_row("broadcast_arrays", lambda x, y: jnp.broadcast_arrays(x, y), lambda x, y: jxn.broadcast_arrays(x, y), (W, A)),
  # ---- joining and splitting
  Row("concatenate", lambda x, y: jnp.concatenate([x, y]), lambda x, y: jxn.concatenate([x, y]), (A, B)),
  Row("concatenate-axis1", lambda x, y: jnp.concatenate((x, y), axis=1), lambda x, y: jxn.concatenate((x, y), axis=1), (A, B)),
  Row("concatenate-None", lambda x, y: jnp.concatenate([x, y], axis=None), lambda x, y: jxn.concatenate([x, y], axis=None), (A, V)),
  Row("concat", lambda x, y: jnp.concat([x, y], axis=-1), lambda x, y: jxn.concat([x, y], axis=-1), (A, B)),
  Row("stack", lambda x, y: jnp.stack([x, y], axis=1), lambda x, y: jxn.stack([x, y], axis=1), (A, B)),
  Row("vstack", lambda x, y: jnp.vstack([x, y]), lambda x, y: jxn.vstack([x, y]), (W, A)),
  Row("hstack", lambda x, y: jnp.hstack([x, y]), lambda x, y: jxn.hstack([x, y]), (A, B)),
  Row("hstack-1d", lambda x, y: jnp.hstack([x, y]), lambda x, y: jxn.hstack([x, y]), (V, W)),
  Row("dstack", lambda x, y: jnp.dstack([x, y]), lambda x, y: jxn.dstack([x, y]), (A, B)),
  Row("column_stack", lambda x, y: jnp.column_stack([x, y]), lambda x, y: jxn.column_stack([x, y]), (rnd(3), A)),
  flat("split", rnd(6, 4), 3), flat("split", rnd(6, 4), [1, 4], axis=0, id="split-indices"),
  flat("split", A, 2, axis=1, id="split-axis"), flat("array_split", rnd(7, 2), 3), flat("hsplit", A, 2),
  flat("vsplit", rnd(4, 3), [1]), flat("dsplit", rnd(2, 2, 4), 2),
  same("tile", A, (2, 1, 2)), same("tile", V, 3, id="tile-int"),
  same("repeat", A, 2), same("repeat", A, 2, axis=1, id="repeat-axis"),
  same("repeat", A, np.array([1, 0, 3]), axis=0, id="repeat-per-element", batch_args=(0,)),
  same("repeat", V, np.array([1, 2, 0, 1, 3]), total_repeat_length=9, id="repeat-total-longer", batch_args=(0,)),
  same("repeat", V, 2, total_repeat_length=4, id="repeat-total-shorter"),
  same("resize", A, (5, 3)), same("append", A, B), same("append", A, B, axis=1, id="append-axis"),
  same("delete", A, 1, axis=1), same("delete", V, np.array([0, 3]), id="delete-list", batch_args=(0,)),
  same("delete", A, slice(0, 2), axis=0, id="delete-slice"),
  same("insert", V, 2, 7.0), same("insert", A, 1, W, axis=0, id="insert-row"),
  same("insert", A, np.array([0, 2]), np.array([[9.0], [8.0], [7.0]]), axis=1, id="insert-list", batch_args=(0, 2)),
  # ---- pad
  same("pad", A, 2), same("pad", A, ((1, 2), (0, 3)), constant_values=((1.5, 2.0), (-1.0, 3.0)), id="pad-constant_values"),
  *[same("pad", A, ((2, 3), (4, 1)), mode=m, id=f"pad-{m}") for m in ("edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean")],
  same("pad", A, ((5, 7), (6, 9)), mode="reflect", id="pad-reflect-wide"), same("pad", A, ((5, 7), (6, 9)), mode="wrap", id="pad-wrap-wide"),
  same("pad", A, ((5, 7), (6, 9)), mode="symmetric", id="pad-symmetric-wide"),
  same("pad", A, ((2, 1), (1, 2)), mode="reflect", reflect_type="odd", id="pad-reflect-odd"),
  same("pad", A, ((2, 3), (1, 2)), mode="linear_ramp", end_values=(1.0, -2.0), id="pad-linear_ramp"),
  same("pad", A, ((2, 1), (1, 2)), mode="mean", stat_length=2, id="pad-mean-stat_length"),
  # ---- flip, roll, triangles
  same("flip", C), same("flip", C, axis=(0, 2), id="flip-axes"), same("fliplr", A), same("flipud", A),
  same("rot90", A), same("rot90", C, 3, axes=(1, 2), id="rot90-k3"), same("rot90", A, 2, id="rot90-k2"),
  same("roll", A, 2), same("roll", A, -1, axis=1, id="roll-axis"), same("roll", C, (1, -2), axis=(0, 2), id="roll-tuple"),
  same("triu", A), same("tril", A, -1), same("triu", C, 1, id="triu-batched"),
  # ---- sorting and searching (ties: the stable order and the derivative follow each element, as JAX's)
  same("sort", A), same("sort", A, axis=0, id="sort-axis0"), same("sort", A, axis=None, id="sort-None"),
  same("sort", TIES, id="sort-ties"), same("sort", TIES, descending=True, id="sort-descending"),
  same("argsort", TIES, diff=False), same("argsort", TIES, descending=True, id="argsort-descending", diff=False),
  same("argsort", A, axis=0, id="argsort-axis0", diff=False),
  same("sort", NANS, id="sort-nan", diff=False), same("argsort", NANS, descending=True, id="argsort-nan-descending", diff=False),
  Row("lexsort", lambda a, b: jnp.lexsort((a, b)), lambda a, b: jxn.lexsort((a, b)), (np.array([1., 0, 1, 0]), np.array([2., 2, 1, 1])), diff=False),
  same("searchsorted", SORTED, V, diff=False, batch_args=(1,)),
  same("searchsorted", SORTED, np.concatenate([SORTED[:3], V[:2]]), side="right", id="searchsorted-right", diff=False, batch_args=(1,)),
  same("digitize", V, SORTED, diff=False, batch_args=(0,)),
  same("digitize", V, SORTED[::-1].copy(), right=True, id="digitize-decreasing", diff=False, batch_args=(0,)),
  same("bincount", IV, length=5, diff=False), same("bincount", IV, V, length=6, id="bincount-weights"),
  same("bincount", IV, vmap=False, diff=False, id="bincount-concrete"),
  # ---- indices and data-dependent shapes
  cat_row("unravel_index", lambda i: jnp.unravel_index(i, (3, 4)), lambda i: jxn.unravel_index(i, (3, 4)), (np.array([0, 5, 11, 13, -2]),),
          diff=False),
  Row("ravel_multi_index", lambda i, j: jnp.ravel_multi_index((i, j), (3, 4), mode="clip"),
      lambda i, j: jxn.ravel_multi_index((i, j), (3, 4), mode="clip"), (np.array([0, 2, 5]), np.array([3, 1, -1])), diff=False),
  flat("nonzero", A > 0, vmap=False, diff=False), flat("nonzero", A > 0, size=9, fill_value=-1, id="nonzero-size", diff=False),
  same("flatnonzero", A > 0, vmap=False, diff=False), same("argwhere", A > 0, vmap=False, diff=False),
  same("argwhere", A > 0, size=8, id="argwhere-size", diff=False),
  Row("unique", lambda x: jnp.unique(x), eager(lambda x: jxn.unique(x)), (np.array([3., 1, 3, 2, 1]),), vmap=False, diff=False),
  cat_row("unique-all", lambda x: jnp.unique(x, return_index=True, return_inverse=True, return_counts=True),
      eager(lambda x: jxn.unique(x, return_index=True, return_inverse=True, return_counts=True)), (np.array([3., 1, 3, 2, 1, 2, 2]),),
      vmap=False, diff=False),
  Row("unique-size", lambda x: jnp.unique(x, size=5, fill_value=0.0), lambda x: jxn.unique(x, size=5, fill_value=0.0), (np.array([3., 1, 3, 2]),)),
  Row("extract", lambda c, x: jnp.extract(c, x), eager(lambda c, x: jxn.extract(c, x)), (A > 0, A), vmap=False),
  Row("compress", lambda c, x: jnp.compress(c, x, axis=1), eager(lambda c, x: jxn.compress(c, x, axis=1)),
      (np.array([True, False, True, True]), A), vmap=False),
  Row("compress-size", lambda c, x: jnp.compress(c, x, axis=0, size=2, fill_value=-1.0),
      lambda c, x: jxn.compress(c, x, axis=0, size=2, fill_value=-1.0), (np.array([False, True, True]), A)),
  Row("select", lambda x, y: jnp.select([x > 0.5, x < -0.5], [x, y], -1.0), lambda x, y: jxn.select([x > 0.5, x < -0.5], [x, y], -1.0), (A, B)),
  Row("piecewise", lambda x: jnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v ** 2, 0.5]),
      lambda x: jxn.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v ** 2, 0.5]), (A * 2,)),
]

@pytest.mark.parametrize("row,check", params(ROWS, vmap_last="first"))
def test_table(row, check): run(row, check)

def test_shape_functions_and_dtypes():
  assert jnp.shape(A) == (3, 4) and jnp.ndim(C) == 3 and jnp.size(C) == 24 and jnp.size(C, 1) == 3
  assert jnp.broadcast_shapes((3, 1), (1, 4)) == (3, 4)
  with x64_off():
    # joining promotes as JAX does: int32 with float32 is float32, bool with int8 is int8
    got = jnp.concatenate([jnp.asarray(np.arange(3)), jnp.asarray(np.ones(2, np.float32))])
    assert got.dtype == jnp.float32
    assert jnp.stack([np.array([True]), np.array([3], np.int8)]).dtype == jnp.int8
    assert jnp.argsort(jnp.asarray(np.ones(3, np.float32))).dtype == jnp.int32 and jnp.nonzero(np.ones(2))[0].dtype == jnp.int32
  assert_close(jnp.searchsorted(SORTED, 0.1), lambda: jxn.searchsorted(SORTED, 0.1))
  xi = np.arange(12, dtype=np.int32).reshape(3, 4)   # int ramps round down, int means round
  for mode, kw in (("linear_ramp", {"end_values": -5}), ("mean", {}), ("constant", {"constant_values": 2.7})):
    assert_close(jnp.pad(xi, 2, mode, **kw), lambda mode=mode, kw=kw: jxn.pad(xi, 2, mode, **kw))

def test_traced_data_dependent():
  """A data-dependent shape needs a concrete input (JAX's error type); size= makes it traceable, as in JAX."""
  with pytest.raises(tinyjax.errors.ConcretizationTypeError):
    tinyjax.vmap(lambda x: jnp.nonzero(x > 0)[0])(jnp.asarray(rnd(2, 3)))
  with pytest.raises(tinyjax.errors.ConcretizationTypeError): tinyjax.vmap(lambda x: jnp.unique(x))(jnp.asarray(rnd(2, 3)))

def test_errors():
  same_error(lambda: jnp.split(np.ones(5), 2), lambda: jxn.split(np.ones(5), 2), upto="array split does not result in an equal division")
  same_error(lambda: jnp.squeeze(np.ones((2, 1)), 0), lambda: jxn.squeeze(np.ones((2, 1)), 0), upto="cannot select an axis to squeeze out")
  same_error(lambda: jnp.concatenate([]), lambda: jxn.concatenate([]))
  same_error(lambda: jnp.concatenate([np.ones(2), np.ones((2, 2))]), lambda: jxn.concatenate([np.ones(2), np.ones((2, 2))]),
             upto="Cannot concatenate arrays with different numbers of dimensions")
  same_error(lambda: jnp.broadcast_to(np.ones(3), (2, 4)), lambda: jxn.broadcast_to(np.ones(3), (2, 4)), upto="Incompatible types for broadcasting")
  same_error(lambda: jnp.triu(np.ones(3)), lambda: jxn.triu(np.ones(3)))
  same_error(lambda: jnp.moveaxis(np.ones((2, 3)), 2, 0), lambda: jxn.moveaxis(np.ones((2, 3)), 2, 0), upto="out of bounds")
  with pytest.raises(NotImplementedError, match="mode='median'"): jnp.pad(A, 1, mode="median")
  with pytest.raises(NotImplementedError, match="order='F'"): jnp.reshape(A, (4, 3), order="F")
  with pytest.raises(NotImplementedError, match="axis"): jnp.unique(A, axis=0)

def test_static_take_kernels():
  """pad/roll/repeat with known indices are movement ops: one fused kernel, as a hand-written tinygrad pad."""
  # separate inputs: tinygrad reuses the result of a graph it has already realized
  x, y = (jnp.asarray(rnd(3, 4, seed=s)).realize() for s in (10, 11))
  assert kernel_count(lambda: jnp.pad(x, 2, mode="edge").realize()) <= kernel_count(lambda: y.pad(((2, 2), (2, 2)), mode="replicate").realize())
  assert kernel_count(lambda: jnp.roll(x, 1, axis=1).realize()) <= kernel_count(lambda: y.roll(1, 1).realize())

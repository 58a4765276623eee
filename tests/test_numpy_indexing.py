"""Indexing against JAX: x[idx] for every kind of index (basic, negative, strided slices, None, Ellipsis, int arrays,
numpy's rule for separated advanced indices, boolean masks, JAX's clamping of out-of-bounds indices), x.at[idx] (every
method x index kind, under vmap/jvp/grad), take/take_along_axis/choose, errors, and kernel counts."""
import numpy as np
import pytest
import jax
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from tinygrad import Tensor
from conftest import rnd, assert_close, same_error, kernel_count
from jnp_table import Row, params, run, check_jvp
from tinyjax.numpy._indexing import _orig_getitem

pytestmark = pytest.mark.usefixtures("compile_in_process")

def J(x): return jxn.asarray(x)   # the harness hands JAX's functions numpy arrays

A, C = rnd(4, 5), rnd(3, 4, 5, seed=1)
I2 = np.array([[0, 2], [2, 1]])
MASK = np.array([True, False, True, True])

INDICES = {
  "int": (1,), "negative": (-1, -2), "slices-steps": (slice(1, 3), slice(None, None, -2)), "None-Ellipsis": (None, Ellipsis, 1, None),
  "int-array": (np.array([2, 0, 2]),), "nested-int-array": (I2,), "adjacent-advanced": (slice(None), np.array([0, 3]), np.array([4, 1])),
  "separated-advanced": (np.array([0, 2]), slice(1, 4), np.array([1, 3])), "int-with-array": (1, slice(None), np.array([0, 4])),
  "bool-mask": (slice(None), MASK), "bool-mask-2d": (C[..., 0] > 0,), "oob-int": (5, -9),
  "array-None-array": (np.array([0, 2]), None, np.array([1, 3])),
}

# JAX's x[idx] promises in-bounds indices: its value and jvp clamp out-of-bounds ones, its grad drops them (the
# transpose of a clamping gather is a dropping scatter). tinyjax clamps in all three: the grad check is left out.
OOB = np.array([7, -9, 1])

def index_row(kind):
  idx = INDICES[kind]
  # vmap along a new last axis too where an index array moves the batch axis (numpy's rules for advanced indices)
  return Row(f"getitem-{kind}", lambda x: x[idx], lambda x: J(x)[idx], (C,), vmap_last=any(isinstance(i, np.ndarray) for i in idx))

ROWS = [index_row(k) for k in INDICES] + [
  # indices as traced arguments (mapped by vmap as well)
  Row("getitem-traced-indices", lambda x, i: x[i, 1:], lambda x, i: J(x)[i, 1:], (A, np.array([3, 0, 3, -1]))),
  Row("getitem-traced-2-indices", lambda x, i, j: x[i, :, j], lambda x, i, j: J(x)[i, :, j], (C, np.array([2, 0]), np.array([4, -5]))),
  Row("getitem-oob-array", lambda x: x[OOB], lambda x: J(x)[OOB], (C,), diff=False),
  Row("getitem-plain-list", lambda x: x[[0, 2]], lambda x: J(x)[np.array([0, 2])], (A,)),
  # take / take_along_axis / choose (JAX's take fills out-of-bounds places with NaN)
  Row("take", lambda x: jnp.take(x, np.array([1, 7, -1])), lambda x: jxn.take(x, np.array([1, 7, -1])), (A,)),
  Row("take-axis-clip", lambda x: jnp.take(x, np.array([[1, 9]]), axis=1, mode="clip"),
      lambda x: jxn.take(x, np.array([[1, 9]]), axis=1, mode="clip"), (A,)),
  Row("take-wrap", lambda x: jnp.take(x, np.array([1, 7, -6]), axis=0, mode="wrap"),
      lambda x: jxn.take(x, np.array([1, 7, -6]), axis=0, mode="wrap"), (A,)),
  Row("take-fill_value", lambda x: jnp.take(x, np.array([1, 70]), axis=1, fill_value=-3.0),
      lambda x: jxn.take(x, np.array([1, 70]), axis=1, fill_value=-3.0), (A,)),
  Row("take_along_axis", lambda x, i: jnp.take_along_axis(x, i, axis=1), lambda x, i: jxn.take_along_axis(x, i, axis=1),
      (A, np.argsort(A, axis=1)[:, :3])),
  Row("take_along_axis-oob-broadcast", lambda x: jnp.take_along_axis(x, np.array([[0, 9, -1]]), axis=1),
      lambda x: jxn.take_along_axis(x, np.array([[0, 9, -1]]), axis=1), (A,)),
  Row("take_along_axis-clip", lambda x: jnp.take_along_axis(x, np.array([[0], [9], [-9], [2]]), axis=1, mode="clip"),
      lambda x: jxn.take_along_axis(x, np.array([[0], [9], [-9], [2]]), axis=1, mode="clip"), (A,)),
  Row("choose", lambda a, b: jnp.choose(np.array([0, 1, 1, 0, 2]), [a, b, a * 2], mode="clip"),
      lambda a, b: jxn.choose(np.array([0, 1, 1, 0, 2]), [a, b, a * 2], mode="clip"), (rnd(5), rnd(5, seed=2))),
  Row("choose-wrap", lambda a, b: jnp.choose(np.array([0, 3, -1]), [a, b], mode="wrap"),
      lambda a, b: jxn.choose(np.array([0, 3, -1]), [a, b], mode="wrap"), (rnd(3), rnd(3, seed=2))),
]

# the variants of take/take_along_axis/choose (modes, fill values) map along the first axis only
for r in ROWS: r.vmap_last = False if r.id in ("getitem-plain-list", "take-axis-clip", "take-wrap", "take-fill_value",
                                              "take_along_axis-clip", "choose-wrap") else r.vmap_last

@pytest.mark.parametrize("row,check", params(ROWS))
def test_indexing(row, check): run(row, check)

def test_getitem_oob_jvp(): check_jvp(Row("getitem-oob", lambda x: x[OOB], lambda x: J(x)[OOB], (C,)))

# ---- x.at[idx] ------------------------------------------------------------------------------------------------------------

AT_INDICES = {
  "int": (2,), "slice": (slice(1, None, 2),), "int-array-repeats": (np.array([3, 1, 3, 0]),), "oob": (np.array([1, 9, -9, -1]),),
  "2d-mixed": (np.array([[0], [3]]), slice(None, 4, 3)), "bool-mask": (MASK,), "unique-array": (np.array([2, 0, -1]),),
}

def _update(x, idx):
  """An update of x.at[idx]'s shape (its values depend on the row, so vmap maps it)."""
  return rnd(*np.asarray(jxn.asarray(x)[idx]).shape, seed=9) * 0.5 + 1.5

METHODS = {   # method -> the index kinds its derivative exists for in JAX (multiply/divide/power need unique indices)
  "set": ("int", "slice", "int-array-repeats", "oob", "2d-mixed", "bool-mask"),
  "add": ("int", "slice", "int-array-repeats", "oob", "2d-mixed", "bool-mask"),
  "subtract": ("slice", "int-array-repeats", "bool-mask"),
  # multiply: "oob" has unique in-bounds indices too; "unique-array" and "bool-mask" are the same code path (a product
  # over the updates at each index), whose grad takes ~20 s to compile per index kind
  "multiply": ("int", "slice", "oob"), "divide": ("slice", "unique-array"), "power": ("slice", "unique-array"),
  "min": ("int", "slice", "int-array-repeats", "oob", "2d-mixed", "bool-mask"),
  "max": ("slice", "int-array-repeats", "2d-mixed"),
}

def at_row(method, kind):
  idx = AT_INDICES[kind]
  kw = {"unique_indices": True} if method in ("multiply", "divide", "power") else {}
  return Row(f"at-{method}-{kind}", lambda x, v: getattr(x.at[idx], method)(v, **kw), lambda x, v: getattr(J(x).at[idx], method)(v, **kw),
             (np.abs(A) + 0.5 if method == "power" else A, _update(A, idx)),   # tinyjax's x**y jvp at x < 0: see the report
             vmap_last=method in ("set", "add"))   # the batching of a scatter depends on the index kind, not the method

AT_ROWS = [at_row(m, k) for m, kinds in METHODS.items() for k in kinds] + [
  # ties between x and updates share min/max derivatives equally, as in JAX
  Row("at-max-ties", lambda x, v: x.at[np.array([1, 1, 2])].max(v), lambda x, v: J(x).at[np.array([1, 1, 2])].max(v),
      (np.array([0., 5., 7.]), np.array([5., 5., 7.]))),
  Row("at-set-scalar", lambda x: x.at[1:3, 2].set(0.5), lambda x: J(x).at[1:3, 2].set(0.5), (A,)),
  Row("at-set-new-axis", lambda x: x.at[1, 2:, None].set(0.5), lambda x: J(x).at[1, 2:, None].set(0.5), (A,)),
  Row("at-add-clip", lambda x, v: x.at[np.array([1, 9])].add(v, mode="clip"), lambda x, v: J(x).at[np.array([1, 9])].add(v, mode="clip"),
      (A, rnd(2, 5, seed=3))),
  Row("at-add-traced-indices", lambda x, i, v: x.at[i].add(v), lambda x, i, v: J(x).at[i].add(v), (A, np.array([1, 3, 1, 7]), rnd(4, 5, seed=3)),
      vmap_last=True),
  Row("at-set-traced-indices", lambda x, i, v: x.at[:, i].set(v), lambda x, i, v: J(x).at[:, i].set(v), (A, np.array([1, 3, 1]), rnd(4, 3, seed=3)),
      vmap_last=True),
  Row("at-apply-int-array", lambda x: x.at[np.array([1, 3, 1])].apply(lambda t: t * 2 + 1),
      lambda x: J(x).at[np.array([1, 3, 1])].apply(lambda t: t * 2 + 1), (A,), diff=False),
  Row("at-apply-slice", lambda x: x.at[1:].apply(Tensor.sin), lambda x: J(x).at[1:].apply(jxn.sin), (A,), diff=False),
  Row("at-get-fill", lambda x: x.at[np.array([1, 9, -1])].get(mode="fill", fill_value=-2.0),
      lambda x: J(x).at[np.array([1, 9, -1])].get(mode="fill", fill_value=-2.0), (A,)),
  Row("at-get-fill-mixed", lambda x: x.at[1, np.array([0, 7]), 2:].get(mode="fill"),
      lambda x: J(x).at[1, np.array([0, 7]), 2:].get(mode="fill"), (C,)),
  Row("at-get-default", lambda x: x.at[np.array([1, 9, -9])].get(), lambda x: J(x).at[np.array([1, 9, -9])].get(), (A,), diff=False),
]

@pytest.mark.parametrize("row,check", params(AT_ROWS, vmap_last="none"))
def test_at(row, check): run(row, check)

# ---- behaviour, errors, kernels ----------------------------------------------------------------------------------------

def test_functional_and_dtypes():
  x = jnp.asarray(A)
  y = x.at[0].set(1.0)
  assert_close(x, A)   # x is unchanged
  assert y.dtype == x.dtype and x.at[np.array([0])].add(np.array([1], np.int32)).dtype == x.dtype
  xi = jnp.asarray(np.arange(5))
  assert_close(xi.at[np.array([1, 1])].add(2), lambda: jxn.asarray(np.arange(5)).at[np.array([1, 1])].add(2))
  assert_close(xi.at[3].get(mode="fill"), np.int64(3))
  assert_close(jnp.take(xi, np.array([9])), lambda: jxn.take(np.arange(5), np.array([9])))   # int fill: the minimum int

def test_plain_tinygrad_indexing():
  """tinygrad code's own indexing keeps working: ints, slices, Tensor indices, lists."""
  t = Tensor.arange(12).reshape(3, 4)
  assert t[1, 2].item() == 6 and t[0:2, ::2].tolist() == [[0, 2], [4, 6]] and t[:, None].shape == (3, 1, 4)
  assert t[Tensor([2, 0, 1]), Tensor([1, 2, 3])].tolist() == [9, 2, 7] and t[[0, 2]].shape == (2, 4)
  assert t[-1].tolist() == [8, 9, 10, 11]

def test_errors():
  x = np.arange(4.0)
  same_error(lambda: tinyjax.vmap(lambda m: jnp.asarray(x)[m])(jnp.asarray(np.ones((2, 4), bool))),
             lambda: jax.vmap(lambda m: jxn.asarray(x)[m])(np.ones((2, 4), bool)), upto="Array boolean indices must be concrete; got bool[4]")
  same_error(lambda: tinyjax.vmap(lambda m: jnp.asarray(x).at[m > 0].set(0.0))(jnp.asarray(np.ones((2, 4)))),
             lambda: jax.vmap(lambda m: jxn.asarray(x).at[m > 0].set(0.0))(np.ones((2, 4))), upto="Array boolean indices must be concrete")
  same_error(lambda: jnp.asarray(x)[np.array([1.0])], lambda: jxn.asarray(x)[np.array([1.0])])
  same_error(lambda: jnp.asarray(x)[0, 0], lambda: jxn.asarray(x)[0, 0])
  same_error(lambda: jnp.asarray(x)[..., ...], lambda: jxn.asarray(x)[..., ...])
  same_error(lambda: jnp.asarray(x)[1.5], lambda: jxn.asarray(x)[1.5])
  same_error(lambda: jnp.take(x, np.array([1]), mode="raise"), lambda: jxn.take(x, np.array([1]), mode="raise"))
  assert_close(jnp.choose(np.array([1, 0]), [np.ones(2), np.zeros(2)]), np.array([0., 1.]))   # mode='raise', concrete
  with pytest.raises(ValueError, match="invalid entry in choice array"): jnp.choose(np.array([2]), [np.ones(1)])
  with pytest.raises(ValueError, match="Incompatible shapes"): jnp.asarray(A).at[np.array([0, 1])].set(np.ones(3))

def test_kernels():
  """JAX's indexing costs no more kernels than tinygrad's own / a hand-written one-hot scatter."""
  x, y = (jnp.asarray(rnd(6, 8, seed=s)).realize() for s in (20, 21))   # separate inputs: tinygrad reuses realized graphs
  def tiny(): return (_orig_getitem(y, (slice(1, 3), slice(None, None, 2))) + 1).realize()
  assert kernel_count(lambda: (x[1:3, ::2] + 1).realize()) <= kernel_count(tiny)
  idx, v = Tensor(np.array([1, 4, 1])).realize(), Tensor(rnd(3, 8, seed=22)).realize()
  def hand(): return (y + (idx.reshape(3, 1, 1) == Tensor.arange(6).reshape(1, 6, 1)).where(v.reshape(3, 1, 8), 0).sum(0)).realize()
  assert kernel_count(lambda: x.at[idx].add(v).realize()) <= kernel_count(hand) == 1
  assert kernel_count(lambda: x.at[1:3].add(1.0).realize()) <= 1


@pytest.mark.parametrize("axis", [0, None], ids=["sharded", "replicated"])
def test_array_indices_on_a_multi_device_array(axis):
  # index data from the host (lists, numpy arrays, masks, the ints that join them) goes to the indexed array's devices,
  # as tinygrad's own indexing puts it: made on the default device, tinygrad refused it ("expected index and self on
  # the same device"), which broke plain tinygrad code once tinyjax was imported, and vmap over a sharded batch
  a = rnd(6, 4)
  x = Tensor(a).shard(("CPU:0", "CPU:1"), axis=axis)
  np.testing.assert_array_equal(x[[2, 0, 5]].numpy(), a[[2, 0, 5]])
  np.testing.assert_array_equal(x[np.array([1, 3]), 2].numpy(), a[[1, 3], 2])
  np.testing.assert_array_equal(x[a[:, 0] > 0].numpy(), a[a[:, 0] > 0])
  np.testing.assert_array_equal(x.at[[0, 2]].get(mode="fill", fill_value=-1.0).numpy(), a[[0, 2]])
  np.testing.assert_array_equal(x.at[[0, 2, 2]].add(1.0).numpy(), a + np.array([1, 0, 2, 0, 0, 0])[:, None])

"""tinyjax.numpy's creation functions against jax.numpy: values and dtypes with x64 off and on, arrays as arguments
(vmap/grad through linspace's bounds, diag of a traced vector), and that constants cost no kernel of their own."""
import numpy as np
import pytest
import jax.numpy as jxn
import tinyjax.numpy as jnp
from tinygrad import Tensor
from conftest import rnd, to_np, kernel_count
from jnp_table import Row, params, run, x64_off

CALLS = [
  ("zeros", (3,), {}), ("zeros", ((2, 3),), {"dtype": "int32"}), ("ones", ((2, 2),), {}), ("full", ((2, 3), 1.5), {}),
  ("full", (3, 7), {}), ("full", ((2, 2), True), {}), ("empty", (3,), {}), ("arange", (5,), {}), ("arange", (1, 7, 2), {}),
  ("arange", (0.0, 1.0, 0.1), {}), ("arange", (5,), {"dtype": "float32"}), ("arange", (-3, 3), {}), ("arange", (2.5,), {}),
  ("linspace", (0, 1, 7), {}), ("linspace", (0, 1, 5), {"endpoint": False}), ("linspace", (-2, 3, 4), {"dtype": "int32"}),
  ("linspace", (1, 2, 1), {}), ("linspace", (1, 2, 0), {}), ("logspace", (0, 2, 4), {}), ("logspace", (0, 3, 4), {"base": 2.0}),
  ("geomspace", (1, 1000, 4), {}), ("eye", (3,), {}), ("eye", (3, 4, 1), {}), ("eye", (4, 3, -2), {"dtype": "int32"}),
  ("identity", (3,), {}), ("tri", (3,), {}), ("tri", (3, 4, -1), {}), ("tril_indices", (4,), {}), ("triu_indices", (4, 1), {}),
]

@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("i", range(len(CALLS)), ids=[f"{c[0]}{c[1]}{c[2] or ''}" for c in CALLS])
def test_creation(i, x64):
  name, args, kw = CALLS[i]
  def both():
    got = to_np(getattr(jnp, name)(*args, **{k: getattr(jnp, v) if k == "dtype" else v for k, v in kw.items()}))
    want = getattr(jxn, name)(*args, **{k: getattr(jxn, v) if k == "dtype" else v for k, v in kw.items()})
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True):
      w = np.asarray(w)
      assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
      np.testing.assert_allclose(g, w, rtol=1e-6)
  if x64: both()
  else:
    with x64_off(): both()

A = rnd(3, 4)
V = rnd(3, seed=1)
ROWS = [
  Row("zeros_like", jnp.zeros_like, jxn.zeros_like, (A,), diff=False),
  Row("ones_like-int", lambda x: jnp.ones_like(x, dtype=jnp.int32), lambda x: jxn.ones_like(x, dtype=jxn.int32), (A,), diff=False),
  Row("full_like", lambda x: jnp.full_like(x, 2.5), lambda x: jxn.full_like(x, 2.5), (A,), diff=False),
  Row("full-array-fill", lambda v: jnp.full((2, 3), v), lambda v: jxn.full((2, 3), v), (V,)),
  Row("linspace-array-bounds", lambda a, b: jnp.linspace(a, b, 5), lambda a, b: jxn.linspace(a, b, 5), (V, V + 1)),
  Row("linspace-axis", lambda a, b: jnp.linspace(a, b, 4, axis=-1), lambda a, b: jxn.linspace(a, b, 4, axis=-1), (V, V * 2)),
  Row("diag-1d", jnp.diag, jxn.diag, (V,)),
  Row("diag-1d-k", lambda v: jnp.diag(v, 2), lambda v: jxn.diag(v, 2), (V,)),
  Row("diag-1d-negk", lambda v: jnp.diag(v, -1), lambda v: jxn.diag(v, -1), (V,)),
  Row("diag-2d", jnp.diag, jxn.diag, (A,)),
  Row("diag-2d-k", lambda a: jnp.diag(a, 1), lambda a: jxn.diag(a, 1), (A,)),
  Row("diagonal-3d", lambda a: jnp.diagonal(a, -1, 0, 2), lambda a: jxn.diagonal(a, -1, 0, 2), (rnd(4, 2, 3),)),
  Row("diagflat", jnp.diagflat, jxn.diagflat, (rnd(2, 2),)),
  Row("meshgrid-xy", lambda x, y: jnp.meshgrid(x, y)[0], lambda x, y: jxn.meshgrid(x, y)[0], (V, rnd(4, seed=2))),
  Row("meshgrid-ij-sparse", lambda x, y: jnp.meshgrid(x, y, indexing="ij", sparse=True)[1],
      lambda x, y: jxn.meshgrid(x, y, indexing="ij", sparse=True)[1], (V, rnd(4, seed=2))),
  Row("array-of-traced", lambda x, y: jnp.array([x, y, x * y]), lambda x, y: jxn.array([x, y, x * y]), (V, V + 2)),
  Row("asarray-nested", lambda x: jnp.asarray([[x[0], 1.0], [2.0, x[1]]]), lambda x: jxn.asarray([[x[0], 1.0], [2.0, x[1]]]), (V,)),
]

@pytest.mark.parametrize("row,check", params(ROWS))
def test_table(row, check): run(row, check)

def test_constants_have_no_kernel():
  """zeros/ones/eye are tinygrad's constants: the kernels of the same tinygrad code."""
  x = Tensor(rnd(4, 4)).realize()
  assert kernel_count(lambda: (x * jnp.ones((4, 4)) + jnp.eye(4)).realize()) == \
    kernel_count(lambda: (x * Tensor.ones(4, 4, dtype=x.dtype) + Tensor.eye(4, dtype=x.dtype)).realize())
  assert kernel_count(lambda: (x + jnp.eye(4) + jnp.tri(4)).realize()) == 1

def test_fills_under_jit_fuse_into_their_users():
  """Under jit (and any trace) a fill is a constant, as JAX's broadcast: no kernel of its own (tinygrad's Tensor.full
  writes a new buffer: each jnp.zeros was a kernel per call), and no write in a traced graph (a write kept an eager
  gradient from being found again: qujax's state `jnp.zeros(...).at[0].set(1.0)`)."""
  import tinyjax, jax
  def f(np_, fft=True): return lambda x: ((np_.zeros((4, 4)).at[0, 1].set(1.0) + np_.full((4, 4), 2.0)) * x * x +
                                         np_.zeros_like(x) + np_.ones(4) + (np_.fft.fft(np_.ones(4)).real if fft else 0)).sum(0)
  x = rnd(4, 4)
  jf = tinyjax.jit(f(jnp))
  jf(Tensor(x))
  assert kernel_count(lambda: jf(Tensor(x)).realize()) == 1
  np.testing.assert_array_equal(to_np(jf(Tensor(x))), np.asarray(jax.jit(f(jxn))(x)))   # the FFT of ones: exact zeros
  calls = []
  for _ in range(2):
    g = tinyjax.grad(lambda x: f(jnp, False)(x).sum())(Tensor(x))
    calls.append([u.arg.name for u in g.uop.toposort(enter_calls=False) if u.op.name == "FUNCTION"])
  assert calls == [["_compute_gradients"]] * 2
  np.testing.assert_allclose(to_np(g), np.asarray(jax.grad(lambda x: f(jxn, False)(x).sum())(x)), rtol=1e-6)

def test_errors():
  with pytest.raises(ValueError, match="negative dimensions"): jnp.zeros((2, -1))
  with pytest.raises(ValueError, match="must be non-negative"): jnp.linspace(0, 1, -1)
  with pytest.raises(ValueError, match="Valid values for indexing"): jnp.meshgrid(V, V, indexing="xx")


def test_empty_host_arrays_compute():
  """Values computed from an empty array of host data (qujax's `jnp.array([])` of a gate with no parameters): the
  eager path copied the empty host buffer out and failed."""
  for fn in (lambda m: m.any(m.isnan(m.array([]))), lambda m: m.sum(m.asarray(np.zeros((0, 3))), axis=0), lambda m: m.array([]) * 2):
    got, want = fn(jnp), fn(jxn)
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    assert got.numpy().dtype == np.asarray(want).dtype

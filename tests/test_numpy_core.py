"""tinyjax.numpy's foundations against jax.numpy: asarray/array, dtypes and promotion (x64 on and off), the array
methods JAX code calls on Tensors, and the error for a name tinyjax lacks."""
import numpy as np
import pytest
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from conftest import rnd, assert_close, to_np
from jnp_table import Row, params, run, x64_off

ROWS = [
  Row("asarray", lambda x: jnp.asarray(x), lambda x: jxn.asarray(x), (rnd(3, 4),)),
  Row("array-list-of-arrays", lambda x, y: jnp.array([x, y, x]), lambda x, y: jxn.array([x, y, x]), (rnd(3), rnd(3, seed=1))),
  Row("astype", lambda x: x.astype(jnp.float32), lambda x: x.astype(jxn.float32), (rnd(3, 4),), rtol=1e-6),
  Row("sum-keepdims", lambda x: x.sum(axis=1, keepdims=True), lambda x: x.sum(axis=1, keepdims=True), (rnd(3, 4),)),
  Row("std-ddof", lambda x: x.std(axis=0, ddof=0), lambda x: x.std(axis=0, ddof=0), (rnd(3, 4),)),
  Row("ravel", lambda x: x.ravel(), lambda x: x.ravel(), (rnd(3, 4),)),
]

@pytest.mark.parametrize("row,check", params(ROWS))
def test_table(row, check): run(row, check)

DATA = [1, 1.5, True, [1, 2], [1.0, 2], [[1, 2], [3, 4]], (1, 2.5), np.arange(3), np.arange(3.0), np.float32(2), np.int8(3),
        np.array([1, 2], np.uint8), [True, False]]

@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("i", range(len(DATA)))
def test_asarray_dtypes(i, x64):
  def both():
    got, want = jnp.asarray(DATA[i]), jxn.asarray(DATA[i])
    assert to_np(got).dtype == np.asarray(want).dtype, (DATA[i], got.dtype, want.dtype)
    np.testing.assert_array_equal(to_np(got), np.asarray(want))
  if x64: both()
  else:
    with x64_off(): both()

@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_asarray_of_a_python_float_is_weakly_typed(x64):
  """jnp.asarray(1.5) (and jnp.array) is weakly typed, as JAX's: it takes the dtype of the arrays it meets. (A numpy
  float64 scalar is not, nor a list.)"""
  def both():
    for fn in ("asarray", "array"):
      for other in (np.float16, np.float32, np.int8):
        got = getattr(jnp, fn)(1.5) * jnp.asarray(np.ones(2, other))
        want = getattr(jxn, fn)(1.5) * jxn.asarray(np.ones(2, other))
        assert to_np(got).dtype == np.asarray(want).dtype, (fn, other, got.dtype, want.dtype)
        np.testing.assert_array_equal(to_np(got), np.asarray(want))
      assert to_np(getattr(jnp, fn)(np.float64(1.5)) * jnp.ones(2, jnp.float16)).dtype == \
        np.asarray(getattr(jxn, fn)(np.float64(1.5)) * jxn.ones(2, jxn.float16)).dtype
  if x64: both()
  else:
    with x64_off(): both()

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
SCALARS = [True, 2, 2.5]

@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_promotion(x64):
  """jnp.result_type of every pair of dtypes and of each dtype with a weakly typed Python scalar."""
  def both():
    for a in DTYPES:
      for b in DTYPES + SCALARS:
        bj = getattr(jxn, b) if isinstance(b, str) else b
        bt = getattr(jnp, b if b != "bool" else "bool_") if isinstance(b, str) else b
        want = jxn.result_type(getattr(jxn, a), bj) if isinstance(b, str) else jxn.result_type(jxn.zeros(1, getattr(jxn, a)), b)
        got = jnp.result_type(getattr(jnp, a if a != "bool" else "bool_"), bt) if isinstance(b, str) else \
          jnp.result_type(jnp.asarray(np.zeros(1), getattr(jnp, a if a != "bool" else "bool_")), b)
        assert got == getattr(jnp, str(want) if str(want) != "bool" else "bool_"), (a, b, got, want)
  if x64: both()
  else:
    with x64_off(): both()

def test_dtype_names():
  x = jnp.asarray(rnd(3))
  assert x.dtype == jnp.float64 and jnp.float32 != x.dtype and jnp.dtype(jnp.float32) == np.float32
  assert jnp.issubdtype(x.dtype, jnp.floating) and not jnp.issubdtype(jnp.int32, jnp.floating)
  assert jnp.finfo(jnp.float32).eps == jxn.finfo(jxn.float32).eps and jnp.iinfo(jnp.int8).max == 127
  assert_close(jnp.float32(1.5), np.float32(1.5))

def test_size_is_an_int_and_tinygrads_method():
  x = jnp.asarray(rnd(3, 4))
  assert x.size == 12 and x.size * 2 == 24 and x.size() == (3, 4) and x.size(1) == 4 and x.ndim == 2 and x.T.shape == (4, 3)
  assert x.block_until_ready() is x

def test_T_of_a_vector_is_itself():
  """JAX's x.T of a 1-d or 0-d array is x (Newton's method in jax-ml/jax's examples writes gradient.T); tinygrad's .T
  raised IndexError there, and keeps its meaning for matrices."""
  import jax
  v, m = rnd(3), rnd(2, 3)
  assert_close(jnp.asarray(v).T, v)
  assert_close(jnp.asarray(np.float64(2.5)).T, np.float64(2.5))
  assert_close(jnp.asarray(m).T, m.T)
  assert_close(tinyjax.grad(lambda x: (jnp.asarray(m).dot(x.T) ** 2).sum())(jnp.asarray(v)),
               jax.grad(lambda x: (jxn.asarray(m).dot(x.T) ** 2).sum())(v))

def test_T_reverses_all_axes():
  """JAX's x.T of an n-d array reverses its axes (tinygrad's swaps axes 1 and 0). A Gaussian-mixture EM program's
  e_step returned `exp(ll - normalizer).T[-1]` of a (K, N, 1) array: (N, K) in JAX, (K, 1) before, which the m_step's
  vmap then refused."""
  import jax
  a, b = rnd(4, 5, 1), rnd(2, 1, 3, 2)
  assert_close(jnp.asarray(b).T, b.T)
  def e_step(np_, j): return j.jit(lambda r: np_.exp(r - r.max(axis=0)).T[-1])
  assert_close(e_step(jnp, tinyjax)(jnp.asarray(a)), e_step(jxn, jax)(a))
  def batched(j): return j.vmap(lambda m: m.T * 2.)
  assert_close(batched(tinyjax)(jnp.asarray(b)), batched(jax)(b))

def test_missing_name():
  with pytest.raises(AttributeError, match=r"jax.numpy.frobnicate is not implemented in tinyjax \(see docs/porting.md\)"):
    jnp.frobnicate   # noqa: B018

def test_numpy_operands_under_transforms():
  """numpy arrays and scalars mix with Tensors in both orders (numpy defers to Tensor), traced or not, with JAX's dtypes."""
  import jax
  import tinyjax
  W, x = rnd(2, 3), rnd(3, seed=1)
  def f(x): return (W @ x + np.float64(2) * x[:2] - x[:2] / np.ones(2)).sum() + (x @ W.T).sum()
  f_tj = f_jx = f   # the same code runs on Tensors and on JAX arrays
  assert_close(f_tj(jnp.asarray(x)), f_jx(x))
  assert_close(tinyjax.grad(f_tj)(jnp.asarray(x)), lambda: jax.grad(f_jx)(x))
  assert_close(tinyjax.vmap(f_tj)(jnp.asarray(rnd(4, 3))), lambda: jax.vmap(f_jx)(rnd(4, 3)))
  with x64_off():
    assert (jnp.asarray(np.ones(3), jnp.float32) * np.float64(2)).dtype == jnp.float32

def test_python_protocols():
  """float(), int(), f-strings, iteration, abs() and use as an index, as on a JAX array."""
  s = jnp.asarray(np.float64(2.5))
  assert float(s) == 2.5 and int(s) == 2 and f"{s:.3f}" == "2.500" and abs(jnp.asarray(-np.ones(2))).tolist() == [1.0, 1.0]
  assert [0, 1, 2][jnp.asarray(np.int32(2))] == 2
  rows = list(jnp.asarray(rnd(2, 3)))
  assert len(rows) == 2 and rows[1].shape == (3,)
  with pytest.raises(TypeError, match="iteration over a 0-d array"): list(s)
  with pytest.raises(TypeError, match="only integer scalar arrays"): [0, 1][s]
  with pytest.raises(TypeError, match="unsupported format string"): f"{jnp.asarray(rnd(2)):.2f}"

def test_printing():
  """print(x) shows the values as JAX's str (numpy's); a traced value shows what it is; repr: tests/test_array_protocols.py."""
  x = rnd(2, 3)
  assert str(jnp.asarray(x)) == str(jxn.asarray(x)) == str(x) and f"{jnp.asarray(x) * 2}" == str(x * 2)
  with x64_off(): assert str(jnp.arange(3) > 0) == str(jxn.arange(3) > 0)
  assert repr(jnp.asarray(x)) == repr(jxn.asarray(x))
  seen = []
  tinyjax.vmap(lambda v: seen.append(str(v)) or v)(jnp.asarray(x))
  tinyjax.grad(lambda v: seen.append(f"{v}") or v.sum())(jnp.asarray(x))
  assert seen == ["Traced<double[3]> (vmap)", "Traced<double[2, 3]> (vjp)"]
  # a 0-d array formats as its numpy scalar, as JAX's: "{}".format of a float32 shows the float's digits
  with x64_off():
    for v in (np.float32(316.8586730957031), np.int32(7), np.bool_(True)):
      for spec in ("", ".3f" if v.dtype.kind == "f" else "d" if v.dtype.kind == "i" else ""):
        assert format(jnp.asarray(v), spec) == format(jxn.asarray(v), spec), (v, spec)

def test_bool():
  """bool() of a concrete size-1 array is its value (a Newton loop's `if err < tol: break`), as with JAX; a larger one
  raises numpy's ValueError; a traced one raises ConcretizationTypeError."""
  x, steps = jnp.asarray(2.0), 0
  while jnp.abs(x * x - 2.0) > 1e-6: x, steps = x - (x * x - 2.0) / (2 * x), steps + 1
  assert steps == 4 and abs(float(x) - 2 ** 0.5) < 1e-6
  assert bool(jnp.asarray([[3]])) is True and bool(jnp.zeros(1)) is False and bool((jnp.asarray(rnd(3)) > -10).all())
  with pytest.raises(ValueError, match="truth value of an array with more than one element is ambiguous"):
    bool(jnp.ones(2))
  with pytest.raises(tinyjax.ConcretizationTypeError, match=r"bool\(\) was called .* tinyjax.jit"):
    tinyjax.jit(lambda v: v if v > 0 else -v)(jnp.ones(()))

def test_shape_from_a_traced_argument():
  """jnp.ones((n,)) with n traced by jit raises JAX's TypeError (not a concretization error); a concrete array is a size."""
  import jax
  def ones(n, v): return jnp.ones((n,)) * v
  with pytest.raises(TypeError) as got: tinyjax.jit(ones)(10, 4)
  with pytest.raises(TypeError) as want: jax.jit(lambda n, v: jxn.ones((n,)) * v)(10, 4)
  assert type(got.value) is type(want.value) is TypeError
  assert str(got.value).split(", got")[0] == str(want.value).split(", got")[0]
  np.testing.assert_array_equal(tinyjax.jit(ones, static_argnums=0)(3, 4).numpy(), np.full(3, 4.0, np.float32))
  assert jnp.zeros((jnp.asarray(2), 1)).shape == (2, 1)

"""A tinyjax array as JAX code sees one: repr(x) as JAX's `Array([1., 2.], dtype=float32)`, and x.dtype compared with
numpy's dtypes, scalar types and names (`x.dtype == np.float32`, `np.dtype(x.dtype)`), against JAX."""
import numpy as np
import pytest
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from tinygrad import Tensor, dtypes
from jnp_table import x64_off

# (name, build) with `build(np_module)`: the same array in jax.numpy and tinyjax.numpy
REPRS = [
  ("f32", lambda m: m.array([1., 2.], dtype=m.float32)),
  ("f64-2d", lambda m: m.ones((2, 3))),
  ("f32-0d", lambda m: m.float32(3)),
  ("i64", lambda m: m.arange(3)),
  ("i8", lambda m: m.array([1, -2], dtype=m.int8)),
  ("u32-0d", lambda m: m.array(7, dtype=m.uint32)),
  ("bool", lambda m: m.array([True, False])),
  ("bool-0d", lambda m: m.array(True)),
  ("f16", lambda m: m.array([1.5], dtype=m.float16)),
  ("empty", lambda m: m.zeros((0, 3))),
  ("summarised", lambda m: m.arange(2000.)),
  ("wide", lambda m: m.arange(30.).reshape(3, 10) * 1.234567),
  ("nan-inf", lambda m: m.array([np.nan, np.inf, -1e10])),
  ("weak", lambda m: m.arange(3) * 2.5),   # int array * Python float: weakly typed in both
]

@pytest.mark.parametrize("build", [b for _, b in REPRS], ids=[n for n, _ in REPRS])
def test_repr_as_jax(build):
  assert repr(build(jnp)) == repr(build(jxn))

def test_repr_x64_off_and_traced():
  with x64_off():
    assert repr(jnp.arange(3.) / 4) == repr(jxn.arange(3.) / 4) == "Array([0.  , 0.25, 0.5 ], dtype=float32)"
  seen = []
  tinyjax.vmap(lambda v: seen.append(repr(v)) or v)(jnp.ones(3))
  assert seen == ["Traced<double[]> (vmap)"]   # a traced value's repr is its str, as JAX's repr of a tracer is
  # tinygrad's own Tensors print the same way (the patch is on Tensor): docs/porting.md, "Printing"
  assert repr(Tensor([1, 2], dtype=dtypes.int32)) == "Array([1, 2], dtype=int32)"

DTYPES = ["float32", "float64", "int32", "int8", "uint8", "bool", "float16"]

@pytest.mark.parametrize("name", DTYPES)
def test_dtype_compares_as_numpys(name):
  """Each comparison JAX code makes with a dtype gives JAX's answer."""
  def checks(x, m):
    d, short = x.dtype, name if name != "bool" else "bool_"
    np_t = getattr(np, short)
    return [d == np_t, np_t == d, d == getattr(m, short), d == name, d != np_t, d != "int16", d == np.dtype(name),
            np.dtype(name) == d, d in (np.float32, np.float64), d in ("int8", np.uint8), d == np.int64,
            d == float, d == "not a dtype",  # noqa: E721 (JAX code compares dtypes with float)
            str(np.dtype(d)), np.zeros(2, d).dtype.name, np.issubdtype(d, np.floating), np.issubdtype(d, np.integer)]
  a = np.zeros(2, name)
  assert checks(jnp.asarray(a), jnp) == checks(jxn.asarray(a), jxn)

def test_dtype_stays_tinygrads_among_dtypes():
  """Among DTypes equality is identity, and hashing is unchanged (tinygrad keys dicts by DType)."""
  # numpy's np.dtype("float64") == None is True (None reads as the default dtype); a DType is never equal to None
  assert dtypes.float64 != None and dtypes.float32 == dtypes.float  # noqa: E711
  assert dtypes.float32 != dtypes.float64 and dtypes.weakfloat != dtypes.float32
  assert hash(dtypes.float32) == object.__hash__(dtypes.float32)
  assert {dtypes.float32: 1, dtypes.float64: 2}[dtypes.float] == 1 and dtypes.float32 not in {np.float32: 0}
  with pytest.raises(TypeError, match="Cannot interpret 'dtypes.bfloat16' as a data type"): np.dtype(dtypes.bfloat16)
  # a weak dtype's numpy dtype is the one it is stored in, as a JAX array's (float64 weak_type=True with x64)
  assert np.dtype(dtypes.weakfloat) == np.float64 and dtypes.weakfloat == np.float64 and dtypes.weakfloat != np.float32
  with x64_off(): assert np.dtype(dtypes.weakfloat) == np.float32 and dtypes.weakfloat == "float32"


def test_dtype_prints_as_jax():
  """print(x.dtype) shows numpy's name, as JAX's: a port printing a dtype printed tinygrad's `dtypes.float`."""
  for fn in (lambda m: m.ones(3), lambda m: m.arange(3), lambda m: m.ones(2, m.bool_), lambda m: m.arange(3) * 0.5):
    assert str(fn(jnp).dtype) == str(fn(jxn).dtype) and f"{fn(jnp).dtype}" == f"{fn(jxn).dtype}"

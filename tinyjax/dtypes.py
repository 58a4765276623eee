"""JAX's dtype policy, in one place (jax/_src/dtypes.py): the default dtypes, weak types, type promotion, the narrowing
of 64-bit types with x64 off, and the short type string (`float32[3,4]`). `core`, `transforms/jit`, `api` and
`tinyjax.numpy` read it; it needs only the config and tinygrad's dtypes.

With x64 off (JAX's default) float32 and int32 are the defaults and 64-bit data and dtypes are narrowed to 32 bits, as
JAX does; with `tinyjax.config.update("jax_enable_x64", True)` the defaults are float64 and int64.

Weak types: a Python int or float (and tinygrad's `Tensor(2.0)`, whose dtype is `dtypes.weakfloat`) is weakly typed,
as in JAX: it takes the dtype of the array it meets, and when it must have one of its own it is stored in the default
dtype of its kind (`weak_storage_dtype`).
"""
from __future__ import annotations
from typing import Any, Sequence
import numpy as np
from tinyjax import _tg
from tinyjax._tg import Tensor, DType, dtypes
from tinyjax.config import config

__all__ = ["default_float", "default_int", "canonical_array", "canonical_dtype", "weak_storage_dtype", "python_weak_dtype",
           "is_weak_scalar", "python_scalar_dtype", "to_inexact_dtype", "DTypeName", "to_dtype", "dtype_of", "result_type",
           "promote_types", "holds_tensor", "short_type", "type_str", "extended", "prng_key", "KeyTy", "is_key_dtype", "float0",
           "ComplexDType", "complex64", "complex128", "complex_of", "is_complex", "default_complex", "np_dtype"]

# ---- defaults and x64 -------------------------------------------------------------------------------------------------

def default_float() -> DType: return dtypes.float64 if config.jax_enable_x64 else dtypes.float32
def default_int() -> DType: return dtypes.int64 if config.jax_enable_x64 else dtypes.int32

# with x64 off (JAX's default), 64-bit types are their 32-bit kin, for data (jnp.asarray) as for dtypes
_NARROW = {dtypes.float64: dtypes.float32, dtypes.int64: dtypes.int32, dtypes.uint64: dtypes.uint32}
_NARROW_NP = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32, np.dtype(np.uint64): np.uint32}

def canonical_array(x: Any) -> np.ndarray:
  """A Python scalar, numpy scalar or array as JAX would take it in: Python floats/ints are float32/int32 (64-bit with
  x64), 64-bit numpy data is narrowed to 32 bits unless x64 is on."""
  a = np.asarray(x)
  if isinstance(x, int) and not isinstance(x, bool) and not config.jax_enable_x64 and not -2**31 <= x < 2**31:
    raise OverflowError(f"Python int {x} too large to convert to int32")
  if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
    a = np.asarray(x, dtype=np.bool_ if isinstance(x, bool) else np.int64 if isinstance(x, int) else np.float64)
  return a if config.jax_enable_x64 or a.dtype not in _NARROW_NP else a.astype(_NARROW_NP[a.dtype])

def canonical_dtype(dt: Any) -> Any:
  """dt as JAX stores it: a weak dtype takes its kind's default, and with x64 off 64-bit types are 32-bit."""
  if isinstance(dt, ComplexDType): return complex_of(canonical_dtype(dt.part))
  if dt in dtypes.weaks: dt = weak_storage_dtype(dt)
  return dt if config.jax_enable_x64 else _NARROW.get(dt, dt)

def to_inexact_dtype(dt: DType) -> DType:
  """The float dtype of a float function's input of dtype dt (JAX's to_inexact_dtype): dt if it is a float, float64 for
  64-bit integers (float32 with x64 off), float32 for bool and narrower integers (even with x64 on: sqrt of an int32
  array is float32). A weak int (a Python int) is the default int, so it gives the default float."""
  if dtypes.is_float(dt): return dt
  if dt in dtypes.weaks: dt = weak_storage_dtype(dt)
  return canonical_dtype(dtypes.float64) if dt.itemsize == 8 else dtypes.float32

# ---- complex dtypes ---------------------------------------------------------------------------------------------------

class ComplexDType:
  """complex64 / complex128. tinygrad has no complex dtype: a complex array is a pair of real Tensors of dtype `part`
  (float32, float64, or weakfloat for a weakly typed value such as `jnp.array(1j)`; `tinyjax.complex_array`)."""
  __slots__ = ("part",)
  def __init__(self, part: DType): self.part = part
  @property
  def weak(self) -> bool: return self.part in dtypes.weaks
  @property
  def name(self) -> str: return "complex128" if canonical_dtype(self.part) == dtypes.float64 else "complex64"
  @property
  def itemsize(self) -> int: return 2 * canonical_dtype(self.part).itemsize
  @property
  def dtype(self) -> np.dtype: return np.dtype(self.name)   # np.dtype(z.dtype) works, as for a JAX array
  def __eq__(self, other) -> bool:
    if isinstance(other, ComplexDType): return self.part == other.part
    if isinstance(other, DType) or other is None: return False
    try: return to_dtype(other) == canonical_dtype(self)
    except (TypeError, NotImplementedError): return NotImplemented
  def __hash__(self) -> int: return hash(("complex", self.part))
  def __repr__(self) -> str: return f"dtype('{self.name}')"
  def __str__(self) -> str: return self.name

complex64, complex128 = ComplexDType(dtypes.float32), ComplexDType(dtypes.float64)

def complex_of(part: DType) -> ComplexDType:
  """The complex dtype whose parts are `part` (a float16 or bfloat16 part widens to float32: there is no complex32)."""
  if part in (dtypes.float16, dtypes.bfloat16): part = dtypes.float32
  return complex64 if part == dtypes.float32 else complex128 if part == dtypes.float64 else ComplexDType(part)

def is_complex(dt: Any) -> bool: return isinstance(dt, ComplexDType)

def default_complex() -> ComplexDType: return complex128 if config.jax_enable_x64 else complex64

def np_dtype(dt: Any) -> np.dtype | None:
  """numpy's dtype for a tinygrad or complex dtype (None where numpy has none: bfloat16)."""
  return np.dtype(canonical_dtype(dt).name) if isinstance(dt, ComplexDType) else _tg.np_dtype(dt)

# ---- weak types -------------------------------------------------------------------------------------------------------

def weak_storage_dtype(w: DType) -> DType:
  """The dtype a weakly typed value (a Python int or float, tinygrad's Tensor(1.5)) takes when it must have one: JAX's
  for a Python scalar of its kind (64 bits with x64)."""
  return default_float() if dtypes.is_float(w) else default_int()

def computed_dtype(dt: DType) -> DType:
  """The dtype values of dt are computed at: dt, or for a weakly typed one its width (weak_storage_dtype)."""
  return weak_storage_dtype(dt) if dt in dtypes.weaks else dt

def python_weak_dtype(x: Any) -> DType | None:
  """The weak dtype JAX traces a Python int or float with (tinygrad's weakint, weakfloat); None for anything else (a
  Python bool and numpy values are strongly typed)."""
  return dtypes.weakint if type(x) is int else dtypes.weakfloat if type(x) is float else None

def weak_dtype_of(x: Any) -> DType | None:
  """The weak dtype of a value: a weakly typed array's (tinygrad's weakint, weakfloat), a Python int's or float's;
  None for anything else."""
  return x.dtype if isinstance(getattr(x, "dtype", None), DType) and x.dtype in dtypes.weaks else python_weak_dtype(x)

def weak_float(x: Any) -> DType | None:
  """weakfloat for a weakly typed float (a Python float, a weak array), else None: what lax's loops and branches keep
  weak across their boundary. A weak int is kept strong: tinygrad stores a computed weak int at 32 bits, where JAX's
  width with x64 is 64."""
  return dtypes.weakfloat if weak_dtype_of(x) == dtypes.weakfloat else None

def is_weak_scalar(x: Any) -> bool:
  """A Python scalar: weakly typed in JAX (it takes the dtype of the array it meets)."""
  return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)

def python_scalar_dtype(x: bool | int | float | complex) -> Any:
  """The dtype a Python scalar is stored in: bool, or the default int, float or complex."""
  return dtypes.bool if isinstance(x, bool) else default_int() if isinstance(x, int) else default_float() if isinstance(x, float) \
    else default_complex()

# ---- dtypes as JAX takes them -----------------------------------------------------------------------------------------

class DTypeName:
  """A dtype name (`jnp.float32`): usable wherever JAX takes a dtype, and equal to the Tensor dtype it names
  (`x.dtype == jnp.float32`). `tinyjax.numpy.ScalarType` makes it callable as in JAX (`jnp.float32(1.5)`)."""
  def __init__(self, name: str, dtype: Any):
    self.__name__, self.name, self.tinygrad_dtype = name, name, dtype
  @property
  def dtype(self) -> np.dtype | None:
    """numpy's dtype, as JAX's (so numpy takes it too: np.zeros(3, jnp.float32)); None for bfloat16."""
    return _tg.np_dtype(self.tinygrad_dtype)
  def __eq__(self, other) -> bool:
    try: return to_dtype(other) == to_dtype(self)
    except TypeError: return NotImplemented
  def __hash__(self) -> int: return hash(self.tinygrad_dtype)
  def __repr__(self) -> str: return f"tinyjax.numpy.{self.name}"

# JAX's float0: the dtype of the cotangent of an integer or bool input (grad(allow_int=True)), numpy's zero-size void
float0 = np.dtype([("float0", np.void, 0)])

class extended:   # noqa: N801 (JAX's name)
  """jax.dtypes.extended: the abstract category of dtypes that are not numpy's (typed PRNG keys here)."""

class prng_key(extended):   # noqa: N801 (JAX's name)
  """jax.dtypes.prng_key: the abstract category of PRNG key dtypes (jnp.issubdtype(k.dtype, jax.dtypes.prng_key))."""

class KeyTy:
  """The dtype of typed PRNG keys (tinyjax.random.key): JAX's `key<fry>`, the threefry2x32 implementation's."""
  type = prng_key   # the category, as JAX's ExtendedDType.type
  name = "key<fry>"
  def __eq__(self, other) -> bool: return isinstance(other, KeyTy)
  def __hash__(self) -> int: return hash(KeyTy)
  def __repr__(self) -> str: return self.name
  __str__ = __repr__

def is_key_dtype(d: Any) -> bool:
  """Whether `d` is a typed key dtype or one of the categories above it: jnp.issubdtype decides those itself."""
  return isinstance(d, KeyTy) or (isinstance(d, type) and issubclass(d, extended))

def to_dtype(d: Any) -> Any:
  """A tinygrad DType (a ComplexDType for a complex one) for anything JAX accepts as a dtype (None stays None): a DType,
  `jnp.float32`, numpy dtypes and scalar types, names ("float32"), and Python's float/int/bool/complex (the default of
  their kind). Canonical for x64."""
  if d is None: return None
  if isinstance(d, DTypeName): return canonical_dtype(d.tinygrad_dtype)
  if isinstance(d, (DType, ComplexDType)): return canonical_dtype(d)
  if d is complex: return default_complex()
  if d is float: return default_float()
  if d is int: return default_int()
  if d is bool: return dtypes.bool
  if isinstance(d, str) and d == "bfloat16" or getattr(d, "__name__", None) == "bfloat16": return dtypes.bfloat16
  try: npdt = np.dtype(d)
  except TypeError as e: raise TypeError(f"Cannot interpret {d!r} as a data type") from e
  if npdt.kind == "c": return canonical_dtype(complex64 if npdt.itemsize == 8 else complex128)
  return canonical_dtype(_tg.np_dtype_of(np.empty(0, npdt)))

def dtype_of(d: Any) -> Any:
  """`to_dtype` for a dtype that must be given."""
  if (dt := to_dtype(d)) is None: raise TypeError("a dtype is required, got None")
  return dt

# ---- promotion --------------------------------------------------------------------------------------------------------

def _kind_rank(x: Any) -> int: return 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2 if isinstance(x, float) else 3

def holds_tensor(x: Any) -> bool:
  """x is a Tensor, or a (nested) list or tuple holding one."""
  return isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and any(holds_tensor(e) for e in x))

def _sequence_dtype(a: list | tuple) -> DType:
  """The dtype of `jnp.asarray(a)` for a list or tuple: its elements' common dtype if it holds Tensors (they are
  stacked), else numpy's for the data, canonical (an empty one is the default float)."""
  return result_type(*a) if holds_tensor(a) else _tg.np_dtype_of(canonical_array(a))

def result_type(*args: Any) -> Any:
  """JAX's type promotion of arrays, dtypes and weakly typed Python scalars (jnp.result_type): the least upper bound
  of the strongly typed dtypes on tinygrad's lattice, lifted to the default dtype of a higher kind of weak value."""
  strong: list[Any] = []
  weak = -1   # the highest kind among the weak values: 0 bool, 1 int, 2 float, 3 complex
  for a in args:
    if (dt := getattr(a, "dtype", None)) is not None and isinstance(dt, ComplexDType):   # a complex array
      if dt.weak: weak = 3
      else: strong.append(dt)
    elif isinstance(a, Tensor):
      if a.dtype in dtypes.weaks: weak = max(weak, 2 if dtypes.is_float(a.dtype) else 1)
      else: strong.append(a.dtype)
    elif is_weak_scalar(a): weak = max(weak, _kind_rank(a))
    elif isinstance(a, (np.ndarray, np.generic)): strong.append(dtype_of(a.dtype))
    elif isinstance(a, (list, tuple)): strong.append(_sequence_dtype(a))
    elif (dt := to_dtype(a)) is not None: strong.append(dt)
  if not strong: return dtypes.bool if weak <= 0 else default_int() if weak == 1 else default_float() if weak == 2 else default_complex()
  if weak == 3 or any(isinstance(d, ComplexDType) for d in strong):
    # JAX's lattice above the floats: complex64 over float32, complex128 over float64 and complex64; a weak complex
    # lifts a float array to the complex of its width, an integer or bool one to the default complex
    part = _tg.least_upper_dtype(*[d.part if isinstance(d, ComplexDType) else d for d in strong])
    return canonical_dtype(complex_of(part) if dtypes.is_float(part) else complex64 if any(isinstance(d, ComplexDType) for d in strong)
                           else default_complex())
  dt = _tg.least_upper_dtype(*strong)
  # a weak value of a higher kind lifts the result to that kind's default (int32 array + 1.5 -> float32)
  if weak == 2 and not dtypes.is_float(dt): dt = default_float()
  elif weak == 1 and dt == dtypes.bool: dt = default_int()
  return canonical_dtype(dt)

def promote_types(a: Any, b: Any) -> Any: return result_type(to_dtype(a), to_dtype(b))

# ---- the short type string --------------------------------------------------------------------------------------------

def short_type(dtype: DType, shape: Sequence) -> str:
  """JAX's short type string, float32[3,4]; a weakly typed value shows the dtype it is stored in, as JAX."""
  if isinstance(dtype, ComplexDType): name = canonical_dtype(dtype).name
  else: name = _tg.dtype_name(weak_storage_dtype(dtype) if dtype in dtypes.weaks else dtype)
  return f"{name}[{','.join(str(d) for d in shape)}]"

def type_str(t: Any) -> str:
  """`short_type` of a Tensor (or anything with a shape and a dtype)."""
  return short_type(t.dtype, t.shape)

"""What every tinyjax.numpy function shares: JAX's dtypes (defaults, scalar types such as `jnp.float32`, promotion with
weakly typed Python scalars) and `asarray`, which takes what `jnp.asarray` takes and returns a tinygrad Tensor.

With x64 off (JAX's default) float32 and int32 are the defaults and 64-bit requests are narrowed to 32 bits, as JAX
does; with `tinyjax.config.update("jax_enable_x64", True)` they are float64 and int64.
"""
from __future__ import annotations
from typing import Any
import numpy as np
from tinyjax import _tg
from tinyjax._tg import Tensor, DType, dtypes
from tinyjax.config import config
from tinyjax.core import canonical_array, weak_storage_dtype

__all__ = ["asarray", "array", "result_type", "promote_types", "promote", "to_dtype", "default_float", "default_int",
           "canonical_dtype", "dtype_of", "ScalarType", "is_weak_scalar", "PORTING"]

from tinyjax.errors import PORTING

def default_float() -> DType: return dtypes.float64 if config.jax_enable_x64 else dtypes.float32
def default_int() -> DType: return dtypes.int64 if config.jax_enable_x64 else dtypes.int32

_NARROW = {dtypes.float64: dtypes.float32, dtypes.int64: dtypes.int32, dtypes.uint64: dtypes.uint32}

def canonical_dtype(dt: DType) -> DType:
  """dt as JAX stores it: a weak dtype takes its kind's default, and with x64 off 64-bit types are 32-bit."""
  if dt in dtypes.weaks: dt = weak_storage_dtype(dt)
  return dt if config.jax_enable_x64 else _NARROW.get(dt, dt)

class ScalarType:
  """`jnp.float32` and the other dtype names: usable wherever JAX takes a dtype, equal to the Tensor dtype they name
  (`x.dtype == jnp.float32`), and callable as in JAX (`jnp.float32(1.5)` is a 0-d array)."""
  def __init__(self, name: str, dtype: DType):
    self.__name__, self.name, self._dtype = name, name, dtype
  @property
  def dtype(self) -> np.dtype | None:
    """numpy's dtype, as JAX's (so numpy takes it too: np.zeros(3, jnp.float32)); None for bfloat16."""
    return _tg.np_dtype(self._dtype)
  def __call__(self, x: Any = 0) -> Tensor: return asarray(x, dtype=self)
  def __eq__(self, other) -> bool:
    try: return to_dtype(other) == to_dtype(self)
    except TypeError: return NotImplemented
  def __hash__(self) -> int: return hash(self._dtype)
  def __repr__(self) -> str: return f"tinyjax.numpy.{self.name}"

def dtype_of(d: Any) -> DType:
  """`to_dtype` for a dtype that must be given."""
  if (dt := to_dtype(d)) is None: raise TypeError("a dtype is required, got None")
  return dt

def to_dtype(d: Any) -> DType | None:
  """A tinygrad DType for anything JAX accepts as a dtype (None stays None): a DType, `jnp.float32`, numpy dtypes and
  scalar types, names ("float32"), and Python's float/int/bool (the default of their kind). Canonical for x64."""
  if d is None: return None
  if isinstance(d, ScalarType): return canonical_dtype(d._dtype)
  if isinstance(d, DType): return canonical_dtype(d)
  if d is float: return default_float()
  if d is int: return default_int()
  if d is bool: return dtypes.bool
  if isinstance(d, str) and d == "bfloat16" or getattr(d, "__name__", None) == "bfloat16": return dtypes.bfloat16
  try: npdt = np.dtype(d)
  except TypeError as e: raise TypeError(f"Cannot interpret {d!r} as a data type") from e
  if npdt.kind == "c": raise NotImplementedError(f"complex dtype {npdt}: tinygrad has no complex numbers ({PORTING})")
  return canonical_dtype(_tg.np_dtype_of(np.empty(0, npdt)))

def is_weak_scalar(x: Any) -> bool:
  """A Python scalar: weakly typed in JAX (it takes the dtype of the array it meets)."""
  return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)

def _kind_rank(x: Any) -> int: return 0 if isinstance(x, bool) else 1 if isinstance(x, int) else 2

def result_type(*args: Any) -> DType:
  """JAX's type promotion of arrays, dtypes and weakly typed Python scalars (jnp.result_type)."""
  strong: list[DType] = []
  weak = -1   # the highest kind among the weak values: 0 bool, 1 int, 2 float
  for a in args:
    if isinstance(a, Tensor):
      if a.dtype in dtypes.weaks: weak = max(weak, 2 if dtypes.is_float(a.dtype) else 1)
      else: strong.append(a.dtype)
    elif is_weak_scalar(a): weak = max(weak, _kind_rank(a))
    elif isinstance(a, (np.ndarray, np.generic)): strong.append(to_dtype(a.dtype))  # type: ignore[arg-type]
    elif isinstance(a, (list, tuple)): strong.append(asarray(a).dtype)
    elif (dt := to_dtype(a)) is not None: strong.append(dt)
  if not strong: return dtypes.bool if weak <= 0 else default_int() if weak == 1 else default_float()
  dt = _tg.least_upper_dtype(*strong)
  # a weak value of a higher kind lifts the result to that kind's default (int32 array + 1.5 -> float32)
  if weak == 2 and not dtypes.is_float(dt): dt = default_float()
  elif weak == 1 and dt == dtypes.bool: dt = default_int()
  return canonical_dtype(dt)

def promote_types(a: Any, b: Any) -> DType: return result_type(to_dtype(a), to_dtype(b))

def promote(*args: Any) -> list[Tensor]:
  """The arguments as Tensors of their common dtype (`result_type`): what jnp's binary functions compute in."""
  dt = result_type(*args)
  return [asarray(a, dtype=dt) for a in args]

def _has_tensor(x: Any) -> bool:
  return isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and any(_has_tensor(e) for e in x))

def asarray(a: Any, dtype: Any = None, copy: bool | None = None) -> Tensor:
  """jnp.asarray: a Tensor stays itself (cast if `dtype` says so); numpy data, Python scalars and nested lists or tuples
  of them take JAX's dtypes; a list holding Tensors is stacked."""
  dt = to_dtype(dtype)
  if isinstance(a, Tensor):
    if a.dtype in dtypes.weaks: a = a.cast(dt or canonical_dtype(a.dtype))
    return a if dt is None or a.dtype == dt else a.cast(dt)
  if isinstance(a, (list, tuple)) and _has_tensor(a):
    if len(a) == 0: return asarray(np.zeros(0), dtype)
    elems = [asarray(e) for e in a]
    common = dt or result_type(*a)
    return Tensor.stack(*[e.cast(common) if e.dtype != common else e for e in elems])
  if hasattr(a, "__jax_array__"): return asarray(a.__jax_array__(), dtype)
  if dt is not None and (npdt := _tg.np_dtype(dt)) is not None:
    if is_weak_scalar(a) or isinstance(a, (list, tuple)):
      # Python data goes straight to the requested dtype, without a 64-bit detour (JAX checks int ranges the same way)
      return Tensor(np.asarray(a, dtype=npdt))
    return Tensor(np.asarray(canonical_array(a)).astype(npdt))
  t = Tensor(canonical_array(a))
  return t if dt is None or t.dtype == dt else t.cast(dt)

def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = None, ndmin: int = 0) -> Tensor:  # noqa: A002
  """jnp.array (arrays are immutable values here, so `copy` changes nothing a program can see)."""
  t = asarray(object, dtype)
  return t.reshape((1,) * (ndmin - t.ndim) + tuple(t.shape)) if ndmin > t.ndim else t

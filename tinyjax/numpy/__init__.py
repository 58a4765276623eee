"""tinyjax.numpy: JAX's `jax.numpy` on tinygrad Tensors (`import tinyjax.numpy as jnp`).

Every function takes what its jax.numpy namesake takes (Tensors, numpy arrays, Python scalars and lists) and returns a
tinygrad Tensor with JAX's dtype, so tinygrad code, tinyjax's transforms and these functions mix freely. A name JAX has
and tinyjax does not raises AttributeError naming it (docs/porting.md lists what differs).
"""
from __future__ import annotations
import math
from typing import Any as _Any, Callable as _Callable
import numpy as _np
from tinyjax._tg import Tensor, dtypes, np_dtype as _np_dtype
from tinyjax.errors import missing_names
from tinyjax.dtypes import KeyTy, is_key_dtype
from tinyjax.numpy._core import asarray, array, result_type, promote_types, ScalarType, to_dtype, dtype_of, PORTING  # noqa: F401
from tinyjax.numpy import _array   # noqa: F401  (installs JAX's array methods on Tensor)
from tinyjax.numpy._creation import *      # noqa: F403
from tinyjax.numpy._math import *          # noqa: F403
from tinyjax.numpy._reductions import *    # noqa: F403
from tinyjax.numpy._products import *      # noqa: F403
from tinyjax.numpy._shape import *         # noqa: F403
from tinyjax.numpy._indexing import *      # noqa: F403
from tinyjax.numpy._extra import *         # noqa: F403
from tinyjax.numpy._extra import isscalar, iterable, ComplexWarning   # noqa: F401
from tinyjax.numpy._index_tricks import *  # noqa: F403
from tinyjax.numpy._vectorize import vectorize   # noqa: F401
from tinyjax.numpy._ufunc import ufunc, frompyfunc   # noqa: F401
from tinyjax.numpy import linalg           # noqa: F401
from tinyjax.numpy import fft              # noqa: F401
from tinyjax.numpy import _complex
from tinyjax.numpy._complex import angle, iscomplexobj, isrealobj, iscomplex, isreal   # noqa: F401
from tinyjax.numpy import _creation, _math, _reductions, _products, _shape, _indexing, _extra
from tinyjax.dtypes import complex64 as _c64, complex128 as _c128
import functools as _functools, builtins as _builtins

ndarray = Array = Tensor   # isinstance(x, jnp.ndarray)

# ---- dtypes ---------------------------------------------------------------------------------------------------------
bool_ = ScalarType("bool", dtypes.bool)
int8, int16, int32, int64 = (ScalarType(f"int{b}", getattr(dtypes, f"int{b}")) for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (ScalarType(f"uint{b}", getattr(dtypes, f"uint{b}")) for b in (8, 16, 32, 64))
float16, float32, float64 = (ScalarType(f"float{b}", getattr(dtypes, f"float{b}")) for b in (16, 32, 64))
bfloat16 = ScalarType("bfloat16", dtypes.bfloat16)
complex64, complex128 = ScalarType("complex64", _c64), ScalarType("complex128", _c128)
complex_, csingle, cdouble = complex128, complex64, complex128
bool = bool_  # noqa: A001   (JAX's alias: inside this module the builtin is _builtins.bool)
float_, int_, uint = float64, int64, uint64
object_, character, flexible = _np.object_, _np.character, _np.flexible
half, single, double = float16, float32, float64
# the abstract scalar types, for jnp.issubdtype(x.dtype, jnp.floating)
generic, number, inexact, floating, integer, signedinteger, unsignedinteger, complexfloating = \
  _np.generic, _np.number, _np.inexact, _np.floating, _np.integer, _np.signedinteger, _np.unsignedinteger, _np.complexfloating

def dtype(d) -> _np.dtype:
  """numpy's dtype for anything JAX takes as one (jnp.dtype), canonical for x64."""
  dt = dtype_of(d)
  if dt == dtypes.bfloat16: raise NotImplementedError(f"jnp.dtype(bfloat16): numpy has no bfloat16 ({PORTING})")
  return dt.dtype if isinstance(dt, type(_c64)) else _np_dtype(dt)

def _np_like(d):
  if isinstance(d, (Tensor, _complex.C)): d = d.dtype
  return dtype(d)

def issubdtype(arg1, arg2) -> _builtins.bool:
  if is_key_dtype(arg1) or is_key_dtype(arg2):   # typed PRNG keys' dtype: under prng_key and extended only
    sub = arg1.type if isinstance(arg1, KeyTy) else arg1
    return (isinstance(arg1, KeyTy) and arg1 == arg2) or (isinstance(sub, type) and isinstance(arg2, type) and issubclass(sub, arg2))
  return _np.issubdtype(_np_like(arg1) if not (isinstance(arg1, type) and issubclass(arg1, _np.generic)) else arg1, arg2 if
                        isinstance(arg2, type) and issubclass(arg2, _np.generic) else _np_like(arg2))

def finfo(d): return _np.finfo(_np_like(d))
def iinfo(d): return _np.iinfo(_np_like(d))
def can_cast(from_, to, casting="safe") -> _builtins.bool: return _builtins.bool(_np.can_cast(_np_like(from_), _np_like(to), casting))

_KINDS: dict[str, _Callable[[_Any], _Any]] = {
  "bool": lambda d: d == dtypes.bool, "signed integer": lambda d: dtypes.is_int(d) and not dtypes.is_unsigned(d),
  "unsigned integer": dtypes.is_unsigned, "integral": dtypes.is_int, "real floating": dtypes.is_float,
  "complex floating": lambda d: isinstance(d, type(_c64)), "numeric": lambda d: d != dtypes.bool}

def isdtype(dtype, kind) -> _builtins.bool:
  """Whether dtype is of `kind` (jnp.isdtype, the array API's): a kind name ('integral', 'real floating', ...), a dtype,
  or a tuple of them."""
  dt = dtype_of(dtype)
  for k in kind if isinstance(kind, tuple) else (kind,):
    if isinstance(k, str) and k in _KINDS:
      if _KINDS[k](dt): return True
      continue
    try: kd = dtype_of(k)
    except (TypeError, ValueError) as e:
      if isinstance(k, str):
        raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_KINDS)}, or a compatible input for jnp.dtype()") from None
      raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}") from e
    if kd == dt: return True
  return False

# ---- constants ------------------------------------------------------------------------------------------------------
pi, e, euler_gamma, inf, nan = math.pi, math.e, 0.5772156649015329, math.inf, math.nan
newaxis = None

# ---- complex arguments ----------------------------------------------------------------------------------------------
# A jnp function called with a complex argument (a complex array, complex data, a complex dtype) runs its complex
# version (numpy/_complex.py), or raises NotImplementedError naming it: never the real function on complex input.

def _with_complex(name: str, fn):
  impl = _complex.COMPLEX.get(name)
  is_complex, any_ = _complex.is_complex_argument, _builtins.any   # (jnp.any is this module's any)
  @_functools.wraps(fn)
  def f(*args, **kwargs):
    if any_(map(is_complex, args)) or (kwargs and any_(map(is_complex, kwargs.values()))):
      if impl is None: raise NotImplementedError(f"jnp.{name} of complex values is not supported yet (see docs/porting.md, \"Complex numbers\")")
      return impl(*args, **kwargs)
    return fn(*args, **kwargs)
  return f

for _name in ["asarray", "array", *_creation.__all__, *_math.__all__, *_reductions.__all__, *_products.__all__, *_shape.__all__,
              *_indexing.__all__, *_extra.__all__]:
  if callable(_fn := globals()[_name]) and not isinstance(_fn, type): globals()[_name] = _with_complex(_name, _fn)

__getattr__ = missing_names("tinyjax.numpy", "jax.numpy")

"""Complex arrays. tinygrad has no complex dtype, so a complex array is a pair of real Tensors of one float dtype and
shape, its real and imaginary parts (docs/design.md, "Complex numbers"). The transforms see the two parts: the pair is
a pytree node in `tinyjax.pytree`, the trees they flatten, so vmap, jvp, jit, loops and custom rules carry complex values
as two real ones with no rule of their own; JAX's complex conventions are added where they differ from the pair's
(grad's conjugate, `holomorphic=`) in `transforms/vjp.py`. To user code (`tinyjax.tree_util`) a complex array is one
leaf, as in JAX. The arithmetic, jnp's functions and the array methods are installed by `tinyjax.numpy`."""
from __future__ import annotations
from typing import Any
import numpy as np
from tinyjax import _tg
from tinyjax._tg import Tensor
from tinyjax.dtypes import ComplexDType, DTypeName, complex_of, canonical_dtype, default_complex, np_dtype, is_complex

__all__ = ["ComplexArray", "is_complex_value", "is_complex_data", "from_data", "is_complex_dtype", "is_complex_argument"]

class ComplexArray:
  """A complex array: `re + 1j * im` for real Tensors `re`, `im` of one shape and float dtype. Its parts may be other
  objects while a tree of them is rebuilt (vmap's axes, a transform's zeros), so nothing is checked here."""
  __slots__ = ("re", "im")
  __array_priority__ = 200   # numpy defers to the reflected operators, and so do Tensor's (they return NotImplemented)

  def __init__(self, re: Any, im: Any): self.re, self.im = re, im

  @property
  def dtype(self) -> ComplexDType: return complex_of(self.re.dtype)
  @property
  def weak_type(self) -> bool: return self.dtype.weak
  @property
  def shape(self) -> tuple: return tuple(self.re.shape)
  @property
  def ndim(self) -> int: return len(self.re.shape)
  @property
  def size(self) -> int: return int(np.prod(self.shape, dtype=np.int64))
  @property
  def device(self): return self.re.device
  @property
  def real(self) -> Tensor: return self.re
  @property
  def imag(self) -> Tensor: return self.im
  def conj(self) -> ComplexArray: return ComplexArray(self.re, -self.im)
  conjugate = conj
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of unsized object")
    return self.shape[0]

  # ---- reading values ------------------------------------------------------------------------------------------------
  def numpy(self) -> np.ndarray:
    """The values as numpy's complex64 or complex128 (reading a traced value raises, as reading its parts does)."""
    re, im = self.re.numpy(), self.im.numpy()
    out = np.empty(re.shape, canonical_dtype(self.dtype).dtype)
    out.real, out.imag = re, im
    return out
  def __array__(self, dtype=None, copy=None) -> np.ndarray:
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)
  def item(self) -> complex: return complex(self.numpy().item())
  def tolist(self) -> Any: return self.numpy().tolist()
  def __complex__(self) -> complex:
    if self.size != 1: raise TypeError("only size-1 arrays can be converted to Python scalars")
    return complex(self.numpy().reshape(()))
  def __float__(self) -> float:
    raise TypeError("float() of a complex array: take its .real or abs() first (numpy and JAX would drop the imaginary part)")
  def realize(self) -> ComplexArray:
    Tensor.realize(self.re, self.im)
    return self

def is_complex_data(x: Any) -> bool:
  """x is a Python or numpy complex scalar or numpy complex data: what `from_data` takes."""
  return type(x) is complex or (isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind == "c")

def from_data(x: Any, dtype: ComplexDType | None = None) -> ComplexArray:
  """Complex data as a complex array: a Python complex is weakly typed (parts of tinygrad's weakfloat), numpy data has
  its dtype (complex128 narrowed to complex64 with x64 off, as JAX), or `dtype`."""
  if type(x) is complex and dtype is None: return ComplexArray(Tensor(x.real), Tensor(x.imag))
  a = np.asarray(x)
  dt = canonical_dtype(dtype or (complex_of(_tg.np_dtype_of(np.empty(0, a.real.dtype))) if a.dtype.kind == "c" else default_complex()))
  a = a.astype(np_dtype(dt))
  return ComplexArray(_host(a.real), _host(a.imag))

def _host(a: np.ndarray) -> Tensor:
  a = np.array(a, order="C")   # (ascontiguousarray makes a 0-d array 1-d)
  if a.ndim and a.size and (t := _tg.host_buffer(a, _tg.default_device())) is not None: return t
  return Tensor(a)

def is_complex_value(x: Any) -> bool:
  """x is a complex array, a Python or numpy complex scalar, or numpy complex data."""
  return isinstance(x, (ComplexArray, complex)) or (isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind == "c")

def is_complex_dtype(a: Any) -> bool:
  """a names a complex dtype: a ComplexDType, `jnp.complex64`, numpy's complex dtypes and types, "complex64", complex."""
  if isinstance(a, ComplexDType) or a is complex: return True
  if isinstance(a, DTypeName): return is_complex(a.tinygrad_dtype)
  if isinstance(a, str): return a.startswith("complex")
  if isinstance(a, (np.dtype, type)):
    try: return np.dtype(a).kind == "c"
    except TypeError: return False
  return False

_REAL_TYPES = frozenset({Tensor, int, float, bool, type(None), slice})

def is_complex_argument(a: Any) -> bool:
  """a is complex data or a complex dtype, or a list or tuple holding one (concatenate's arrays): what sends a
  jax.numpy call to its complex version. Called on every argument of every jnp call: the common cases first."""
  t = type(a)
  if t in _REAL_TYPES: return False
  if t is ComplexArray or t is complex: return True
  if t in (list, tuple): return any(is_complex_argument(e) for e in a)
  if t is str: return a.startswith("complex")
  return is_complex_data(a) or is_complex_dtype(a)

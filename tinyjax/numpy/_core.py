"""What every tinyjax.numpy function shares: `asarray`, which takes what `jnp.asarray` takes and returns a tinygrad
Tensor with JAX's dtype; the scalar types (`jnp.float32`); promotion of arguments to their common dtype (`promote`,
`promote_inexact`); and JAX's axis arguments (`canonicalize_axes`). The dtype policy itself (defaults, weak types,
promotion, x64) lives in `tinyjax.dtypes`, whose names the numpy package takes from here.
"""
from __future__ import annotations
from typing import Any, Sequence
import numpy as np
from tinyjax import _tg
from tinyjax._tg import Tensor, dtypes
from tinyjax.dtypes import canonical_array, canonical_dtype, default_float, default_int, to_dtype, dtype_of, result_type, \
  promote_types, is_weak_scalar, to_inexact_dtype, holds_tensor, DTypeName
from tinyjax.errors import PORTING
from tinyjax.core import canonicalize_axis

__all__ = ["asarray", "array", "result_type", "promote_types", "promote", "promote_inexact", "as_inexact", "to_dtype", "to_inexact_dtype",
           "default_float", "default_int", "canonical_dtype", "dtype_of", "ScalarType", "is_weak_scalar", "canonicalize_axis",
           "canonicalize_axes", "PORTING"]

class ScalarType(DTypeName):
  """`jnp.float32` and the other dtype names (`tinyjax.dtypes.DTypeName`), callable as in JAX: `jnp.float32(1.5)` is
  a 0-d array."""
  def __call__(self, x: Any = 0) -> Tensor: return asarray(x, dtype=self)

def check_arraylike(name: str, *args: Any) -> None:
  """JAX's check of a jnp function's array arguments: a list or tuple is not an array (jnp.asarray makes one)."""
  for pos, a in enumerate(args):
    if isinstance(a, (list, tuple)):
      raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} at position {pos}.")

def promote(*args: Any) -> list[Tensor]:
  """The arguments as Tensors of their common dtype (`result_type`): what jnp's binary functions compute in."""
  dt = result_type(*args)
  return [asarray(a, dtype=dt) for a in args]

def promote_inexact(*args: Any) -> list[Tensor]:
  """The arguments as Tensors of their common float dtype (JAX's promote_args_inexact): integers and bools promote to
  the default float."""
  dt = to_inexact_dtype(result_type(*args))
  return [asarray(a, dt) for a in args]

def as_inexact(x: Any) -> Tensor:
  """x as a float array: integers and bools become the default float dtype (`promote_inexact` of one argument)."""
  t = asarray(x)
  return t if (dt := to_inexact_dtype(t.dtype)) == t.dtype else t.cast(dt)

# ---- axes -------------------------------------------------------------------------------------------------------------

def canonicalize_axes(axis: Any, ndim: int, err: type[Exception] = ValueError, repeated: str = "duplicate value in 'axis': {}") \
    -> tuple[int, ...]:
  """An axis argument (None: every axis; an int; a sequence of ints) as non-negative ints in the order given, with
  JAX's errors: `err` for an axis out of range, ValueError (the message `repeated`) for a repeated one."""
  if axis is None: return tuple(range(ndim))
  many = isinstance(axis, Sequence) or (isinstance(axis, np.ndarray) and axis.ndim > 0)
  axes = tuple(canonicalize_axis(a, ndim, err) for a in (axis if many else (axis,)))
  if len(set(axes)) != len(axes): raise ValueError(repeated.format(axis))
  return axes

# ---- asarray ----------------------------------------------------------------------------------------------------------

def asarray(a: Any, dtype: Any = None, copy: bool | None = None) -> Tensor:
  """jnp.asarray: a Tensor stays itself (cast if `dtype` says so); numpy data, Python scalars and nested lists or tuples
  of them take JAX's dtypes; a list holding Tensors is stacked."""
  dt = to_dtype(dtype)
  if isinstance(a, Tensor):
    if a.dtype in dtypes.weaks: a = a.cast(dt or canonical_dtype(a.dtype))
    return a if dt is None or a.dtype == dt else a.cast(dt)
  if isinstance(a, (list, tuple)) and holds_tensor(a):
    if len(a) == 0: return asarray(np.zeros(0), dtype)
    elems = [asarray(e) for e in a]
    common = dt or result_type(*a)
    return Tensor.stack(*[e.cast(common) if e.dtype != common else e for e in elems])
  if hasattr(a, "__jax_array__"): return asarray(a.__jax_array__(), dtype)
  # a Python float is weakly typed, as JAX's jnp.asarray(1.0): it takes the dtype of the arrays it meets. (A Python
  # int stays int32/int64: tinygrad stores a weak int in 32 bits whatever x64 says, so 2**40 would read back as 0.)
  if dt is None and isinstance(a, float) and not isinstance(a, np.generic): return Tensor(a)
  if dt is not None and (npdt := _tg.np_dtype(dt)) is not None:
    if is_weak_scalar(a) or isinstance(a, (list, tuple)):
      # Python data goes straight to the requested dtype, without a 64-bit detour (JAX checks int ranges the same way)
      return _from_host(np.asarray(a, dtype=npdt))
    return _from_host(np.asarray(canonical_array(a)).astype(npdt))
  t = _from_host(canonical_array(a))
  return t if dt is None or t.dtype == dt else t.cast(dt)

def _from_host(a: Any) -> Tensor:
  """Host data in a new buffer on the default device, written from the host: `Tensor(array)` is a copy node that an
  eager value holding it takes through tinygrad's scheduler (~1 ms each time it is computed). A 0-d array stays
  tinygrad's constant (no device: it broadcasts onto any)."""
  if isinstance(a, np.ndarray) and a.ndim and a.size and (t := _tg.host_buffer(a, _tg.default_device())) is not None: return t
  return Tensor(a)

def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = None, ndmin: int = 0) -> Tensor:  # noqa: A002
  """jnp.array (arrays are immutable values here, so `copy` changes nothing a program can see)."""
  t = asarray(object, dtype)
  return t.reshape((1,) * (ndmin - t.ndim) + tuple(t.shape)) if ndmin > t.ndim else t

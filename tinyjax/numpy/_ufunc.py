"""tinyjax.numpy.ufunc and frompyfunc: a scalar function with numpy's ufunc methods (reduce, accumulate, at, reduceat,
outer), built as JAX builds them: vectorize for the call, tinyjax.lax loops (fori_loop, scan) for the rest. (The jnp
functions themselves, jnp.add ..., are plain functions here, not ufunc objects: jnp.add.reduce is jnp.sum.)"""
from __future__ import annotations
import math, operator
from typing import Any, Callable
import numpy as np
from tinyjax._tg import Tensor, dtypes, np_dtype, static_shape as _S
from tinyjax.core import canonicalize_axis
from tinyjax.transforms.vmap import vmap
from tinyjax.lax import fori_loop, scan
from tinyjax.numpy._core import asarray, to_dtype
from tinyjax.numpy._shape import moveaxis, broadcast_to, append
from tinyjax.numpy._math import where
from tinyjax.numpy._indexing import take, _IndexUpdateHelper
from tinyjax.numpy._vectorize import vectorize

__all__ = ["ufunc", "frompyfunc"]

_AT_INPLACE = ("Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like\nnp.ufunc.at(). Instead, you can pass "
               "inplace=False and capture the result; e.g.\n>>> arr = jnp.add.at(arr, ind, val, inplace=False)\n")

class ufunc:  # noqa: N801 (numpy's name)
  """A function of `nin` scalars returning `nout` values, with numpy's ufunc methods (jnp.ufunc); make one with
  jnp.frompyfunc."""
  def __init__(self, func: Callable, /, nin: int, nout: int, *, name: str | None = None, nargs: int | None = None,
               identity: Any = None) -> None:
    self.__doc__ = func.__doc__
    self.__name__ = name or func.__name__
    self._func, self.nin, self.nout = func, operator.index(nin), operator.index(nout)
    self.nargs, self.identity = operator.index(nargs or nin), identity

  def __hash__(self) -> int: return hash((self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs))
  def __eq__(self, other: Any) -> bool:
    return isinstance(other, ufunc) and (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs) == \
      (other._func, other.__name__, other.identity, other.nin, other.nout, other.nargs)
  def __repr__(self) -> str: return f"<jnp.ufunc '{self.__name__}'>"

  def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
    if out is not None: raise NotImplementedError(f"out argument of {self}")
    if where is not None: raise NotImplementedError(f"where argument of {self}")
    return vectorize(self._func)(*args)

  def _binary(self, method: str) -> None:
    if self.nin != 2: raise ValueError(f"{method} only supported for binary ufuncs")
    if self.nout != 1: raise ValueError(f"{method} only supported for functions returning a single value")

  def _dtype(self, *args: Tensor) -> Any:
    """The dtype of func on these arguments' dtypes (JAX's eval_shape: here func on ones, which costs a scalar op)."""
    return asarray(self._func(*(Tensor(1, dtype=a.dtype) for a in args))).dtype   # (a constant: weak dtypes too)

  def reduce(self, a: Any, axis: int | None = 0, dtype: Any = None, out: None = None, keepdims: bool = False, initial: Any = None,
             where: Any = None) -> Tensor:
    """The reduction of a along axis by this binary function (numpy's ufunc.reduce), one element after another."""
    self._binary("reduce")
    if out is not None: raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    arr = asarray(a)
    if where is not None:
      w = asarray(where)
      if self.identity is None and initial is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, so to use a where mask one has to specify 'initial'.")
      if w.dtype != dtypes.bool: raise ValueError(f"where argument must have dtype=bool; got dtype={np_dtype(w.dtype)}")
      where = broadcast_to(w, _S(arr))
    if initial is None: initial = self.identity
    dt = to_dtype(dtype) or self._dtype(arr, arr)
    if isinstance(axis, tuple): raise NotImplementedError("tuple of axes")
    if axis is None:
      final = (1,) * arr.ndim if keepdims else ()
      arr, axis = arr.flatten(), 0
      where = where.flatten() if where is not None else None
    else:
      axis = canonicalize_axis(axis, arr.ndim)
      final = (*_S(arr)[:axis], 1, *_S(arr)[axis + 1:]) if keepdims else (*_S(arr)[:axis], *_S(arr)[axis + 1:])
    if axis != 0:
      arr = moveaxis(arr, axis, 0)
      where = moveaxis(where, axis, 0) if where is not None else None
    if _S(arr)[0] == 0:
      if initial is None: raise ValueError(f"zero-size array to reduction operation {self.__name__} which has no identity")
      return asarray(initial, dt).expand(final) if final else asarray(initial, dt)
    def body(i, val):
      new = self(val, arr[i].cast(dt))
      return new if where is None else _where(where[i], new, val)
    start, first = (1, arr[0]) if initial is None else (0, initial)
    result = fori_loop(start, _S(arr)[0], body, broadcast_to(asarray(first).cast(dt), _S(arr)[1:]))
    return result.reshape(final) if keepdims else result

  def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Tensor:
    """The running reduction along axis (numpy's ufunc.accumulate)."""
    self._binary("accumulate")
    if out is not None: raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    arr = asarray(a)
    dt = to_dtype(dtype) or self._dtype(arr, arr)
    if axis is None or isinstance(axis, tuple): raise ValueError("accumulate does not allow multiple axes")
    axis = canonicalize_axis(axis, arr.ndim)
    if not arr.numel(): return Tensor.zeros(*_S(arr), dtype=dt)
    arr = moveaxis(arr, axis, 0)
    def step(carry, _):
      i, x = carry
      y = _where(i == 0, arr[0].cast(dt), self(x.cast(dt), arr[i].cast(dt)))
      return (i + 1, y), y
    _, result = scan(step, (0, arr[0].cast(dt)), None, length=_S(arr)[0])
    return moveaxis(result, 0, axis)

  def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Tensor:
    """a with func applied at indices, repeated indices applied one after another (numpy's ufunc.at): a new array,
    so `inplace=False` is required."""
    if inplace: raise NotImplementedError(_AT_INPLACE)
    args: tuple[Tensor, ...] = () if b is None else (asarray(b),)
    at = asarray(a)
    dt = self._dtype(at, *args)
    at, args = at.cast(dt), tuple(x.cast(dt) for x in args)
    idx = indices if isinstance(indices, tuple) else (indices,)
    if not idx: return at
    shapes = [np.shape(i) if not isinstance(i, Tensor) else _S(i) for i in idx if not isinstance(i, slice)]
    shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    if not shape: return _IndexUpdateHelper(at)[idx].set(self(at[idx], *args))
    if args: args = (broadcast_to(args[0], (*shape, *_S(args[0])[len(shape):])).reshape(math.prod(shape), *_S(args[0])[len(shape):]),)
    flat = [i if isinstance(i, slice) else broadcast_to(asarray(i), shape).flatten() for i in idx]
    def step(carry, x):
      i, cur = carry
      ix = tuple(j if isinstance(j, slice) else j[i] for j in flat)
      return (i + 1, _IndexUpdateHelper(cur)[ix].set(self(cur[ix], *(g[i] for g in args)))), x
    (_, result), _ = scan(step, (0, at), None, length=math.prod(shape))
    return result

  def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Tensor:
    """Reductions over the segments [indices[i], indices[i+1]) along axis (numpy's ufunc.reduceat)."""
    self._binary("reduceat")
    if out is not None: raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    arr, ind = asarray(a), asarray(indices)
    if arr.ndim == 0: raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={_S(arr)}")
    if ind.ndim != 1: raise ValueError(f"reduceat: indices must be one-dimensional, got indices.shape={_S(ind)}")
    if axis is None or isinstance(axis, (tuple, list)): raise ValueError("reduceat requires a single integer axis.")
    axis = canonicalize_axis(axis, arr.ndim)
    out_ = take(arr, ind, axis=axis)
    if dtype is not None: out_ = out_.cast(to_dtype(dtype))
    bounds = append(ind, _S(arr)[axis]).reshape(tuple(-1 if d == axis else 1 for d in range(out_.ndim)))
    lo = bounds[(slice(None),) * axis + (slice(0, -1),)]
    hi = bounds[(slice(None),) * axis + (slice(1, None),)]
    def body(i, cur):
      return _where((i > lo) & (i < hi), self(cur, take(arr, i.reshape(1), axis=axis)), cur)
    return fori_loop(0, _S(arr)[axis], body, out_)

  def outer(self, A: Any, B: Any, /) -> Tensor:  # noqa: N803
    """func of every pair of elements of A and B: shape A.shape + B.shape (numpy's ufunc.outer)."""
    self._binary("outer")
    at, bt = asarray(A), asarray(B)
    result = vmap(vmap(self, (None, 0)), (0, None))(at.flatten(), bt.flatten())
    return result.reshape(*_S(at), *_S(bt))

def _where(c: Any, x: Any, y: Any) -> Tensor: return where(c, x, y)   # (reduce's argument `where` hides jnp.where)

def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
  """func (of nin scalars, returning nout values) as a jnp.ufunc."""
  return ufunc(func, nin, nout, identity=identity)

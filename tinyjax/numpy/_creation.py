"""tinyjax.numpy: creation functions: zeros, ones, full, empty, *_like, arange, linspace, logspace, geomspace, eye,
identity, meshgrid, diag, diagflat, diagonal, tri, tril_indices, triu_indices, indices."""
from __future__ import annotations
import math
from typing import Any, Sequence
import numpy as np
from tinyjax._tg import Tensor, dtypes
from tinyjax.numpy._core import asarray, to_dtype, default_float, result_type, dtype_of, to_inexact_dtype
from tinyjax.errors import ConcretizationTypeError
from tinyjax.core import static_ints, shape_ints, fill as _fill, fill_like as _fill_like, composite

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace",
           "logspace", "geomspace", "eye", "identity", "meshgrid", "diag", "diagflat", "diagonal", "tri", "tril_indices",
           "triu_indices", "indices"]

def _shape(shape: Any) -> tuple[int, ...]:
  if isinstance(shape, Tensor): shape = (shape,) if shape.ndim == 0 else tuple(shape[i] for i in range(int(shape.shape[0])))
  try: shape = shape_ints(shape)
  except ConcretizationTypeError as e:   # a shape from a traced argument: JAX's TypeError (not a concretization error)
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got ({', '.join(map(str, shape))},).\nIf using `jit`, "
                    f"try using `static_argnums` or applying `jit` to smaller subfunctions.\n{e}") from None
  if any(s < 0 for s in shape): raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
  return shape

def full(shape: Any, fill_value: Any, dtype: Any = None) -> Tensor:
  """jnp.full: a constant (under a trace or jit no buffer: it fuses into its users). An array fill_value is broadcast."""
  if isinstance(fill_value, Tensor) or np.ndim(fill_value):
    v = asarray(fill_value, dtype)
    return v.expand(*_shape(shape)) if v.shape != _shape(shape) else v
  dt = to_dtype(dtype) or result_type(fill_value) if not isinstance(fill_value, (np.ndarray, np.generic)) else \
    to_dtype(dtype) or to_dtype(np.asarray(fill_value).dtype)
  return _fill(_shape(shape), fill_value, dt)

def zeros(shape: Any, dtype: Any = None) -> Tensor: return _fill(_shape(shape), 0, to_dtype(dtype) or default_float())
def ones(shape: Any, dtype: Any = None) -> Tensor: return _fill(_shape(shape), 1, to_dtype(dtype) or default_float())
def empty(shape: Any, dtype: Any = None) -> Tensor:
  """jnp.empty: zeros, as in JAX (arrays are values: there is no uninitialised memory to see)."""
  return zeros(shape, dtype)

def _like(a: Any, dtype: Any, shape: Any) -> tuple[tuple[int, ...], Any]:
  a = asarray(a)
  return (tuple(a.shape) if shape is None else _shape(shape)), (to_dtype(dtype) or a.dtype)

def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> Tensor:
  s, dt = _like(a, dtype, shape)
  return _fill(s, 0, dt)
def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> Tensor:
  s, dt = _like(a, dtype, shape)
  return _fill(s, 1, dt)
def empty_like(a: Any, dtype: Any = None, shape: Any = None) -> Tensor: return zeros_like(a, dtype, shape)
def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Tensor:
  s, dt = _like(a, dtype, shape)
  return full(s, fill_value, dt)

def _concrete(x: Any, what: str) -> Any:
  # a traced value raises ConcretizationTypeError here, as in JAX; a typed array is read as a numpy scalar (strongly typed)
  if isinstance(x, Tensor): return x.item() if x.dtype in dtypes.weaks or x.dtype == dtypes.bfloat16 else x.numpy()[()]
  return x

def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Tensor:
  """jnp.arange: the bounds' result_type (Python ints give the default int, any Python float the default float, a numpy
  scalar its own dtype, narrowed with x64 off); the bounds must be concrete."""
  start, stop, step = (_concrete(v, "arange") for v in (start, stop, step))
  if stop is None: start, stop = 0, start
  if step is None: step = 1
  dt = to_dtype(dtype) or result_type(start, stop, step)
  # tinygrad computes the values from Python numbers
  start, stop, step = (v.item() if isinstance(v, np.generic) else v for v in (start, stop, step))
  n = max(0, math.ceil((stop - start) / step))
  if dtypes.is_float(dt): return (Tensor.arange(n, dtype=dtypes.int32).cast(dt) * step + start).cast(dt) if n else zeros(0, dt)
  return Tensor.arange(start, stop, step, dtype=dt) if n else zeros(0, dt)

def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype: Any = None,
             axis: int = 0) -> Any:
  """jnp.linspace (start/stop may be arrays: the samples go along `axis`)."""
  num = int(num)
  if num < 0: raise ValueError(f"Number of samples, {num}, must be non-negative.")
  dt = to_dtype(dtype) or to_inexact_dtype(result_type(start, stop))   # the bounds' types as given (weak or typed)
  comp = to_inexact_dtype(dt)
  s, e = asarray(start, comp), asarray(stop, comp)
  div = (num - 1) if endpoint else num
  step = (e - s) / div if div > 0 else e * math.nan if num > 1 else _fill_like(e, 0)
  bshape = tuple(np.broadcast_shapes(tuple(s.shape), tuple(e.shape)))
  # JAX's samples, start * (1 - t) + stop * t with t = i / div (they recover the bounds in float32 arithmetic)
  i = Tensor.arange(num, dtype=dtypes.int32).cast(comp).reshape((num,) + (1,) * len(bshape))
  t = i / div if div > 0 else _fill_like(i, 0)
  out = s.reshape((1,) + tuple(s.shape)) * (1 - t) + e.reshape((1,) + tuple(e.shape)) * t if num else zeros((0,) + bshape, comp)
  if endpoint and num > 1:   # the last sample is exactly stop, as in JAX
    out = (i == num - 1).where(e.reshape((1,) + tuple(e.shape)), out)
  if axis != 0: out = out.permute(*_moved_to(0, axis % out.ndim, out.ndim))
  out = out if out.dtype == dt else (out.floor() if dtypes.is_int(dt) else out).cast(dt)
  return (out, step.cast(dt) if dtypes.is_float(dt) else step) if retstep else out

def _moved_to(src: int, dst: int, ndim: int) -> list[int]:
  order = [i for i in range(ndim) if i != src]
  order.insert(dst, src)
  return order

def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Tensor:
  dt = to_dtype(dtype) or to_inexact_dtype(result_type(start, stop))
  comp = to_inexact_dtype(dt)
  lin = linspace(start, stop, num, endpoint, dtype=comp, axis=axis)
  out = asarray(base, comp).pow(lin)
  return out if out.dtype == dt else out.cast(dt)

def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None, axis: int = 0) -> Tensor:
  dt = to_dtype(dtype) or to_inexact_dtype(result_type(start, stop))
  comp = to_inexact_dtype(dt)
  s, e = asarray(start), asarray(stop)
  sign = s.cast(comp).sign()
  out = sign * logspace(s.cast(comp).abs().log10(), e.cast(comp).abs().log10(), num, endpoint, 10.0, comp, axis)
  return out if out.dtype == dt else out.cast(dt)

def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Tensor:  # noqa: N803
  N, M, k = static_ints((N, N if M is None else M, k))
  i = Tensor.arange(N, dtype=dtypes.int32).reshape(N, 1)
  j = Tensor.arange(M, dtype=dtypes.int32).reshape(1, M)
  return (j - i == k).cast(to_dtype(dtype) or default_float())

def identity(n: int, dtype: Any = None) -> Tensor: return eye(n, dtype=dtype)

def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Tensor:  # noqa: N803
  N, M, k = static_ints((N, N if M is None else M, k))
  i = Tensor.arange(N, dtype=dtypes.int32).reshape(N, 1)
  j = Tensor.arange(M, dtype=dtypes.int32).reshape(1, M)
  return (j <= i + k).cast(to_dtype(dtype) or dtypes.float32)   # JAX's tri is float32 by default, even with x64

def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list[Tensor]:
  if indexing not in ("xy", "ij"): raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  xs = [asarray(x).flatten() for x in xi]
  n = len(xs)
  shapes = [[1] * n for _ in xs]
  for i, x in enumerate(xs): shapes[i][i] = int(x.shape[0])
  if indexing == "xy" and n >= 2:
    for s in shapes: s[0], s[1] = s[1], s[0]
  out = [x.reshape(s) for x, s in zip(xs, shapes, strict=True)]
  if sparse: return out
  full_shape = tuple(max(s[d] for s in shapes) for d in range(n))
  return [o.expand(full_shape) for o in out]

@composite
def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
  """jnp.diagonal: the diagonal goes last (numpy's rule)."""
  a = asarray(a)
  nd = a.ndim
  axis1, axis2 = axis1 % nd, axis2 % nd
  rest = [d for d in range(nd) if d not in (axis1, axis2)]
  a = a.permute(*rest, axis1, axis2)
  n, m = a.shape[-2], a.shape[-1]
  rows = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
  if rows == 0: return zeros(tuple(a.shape[:-2]) + (0,), a.dtype)
  r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
  sub = a[..., r0:r0 + rows, c0:c0 + rows]
  # the diagonal of a square block: flatten its last two axes and take every (rows+1)-th element
  flat = sub.reshape(*sub.shape[:-2], rows * rows)
  return flat.pad(((0, 0),) * (flat.ndim - 1) + ((0, rows),))[..., :rows * (rows + 1)].reshape(*sub.shape[:-2], rows, rows + 1)[..., 0]

def diag(v: Any, k: int = 0) -> Tensor:
  """jnp.diag: a 1-D input gives the matrix with v on diagonal k; a 2-D input gives its diagonal k."""
  v = asarray(v)
  if v.ndim == 2: return diagonal(v, k)
  if v.ndim != 1: raise ValueError("diag input must be 1d or 2d")
  n = v.shape[0] + abs(k)
  i = Tensor.arange(n, dtype=dtypes.int32).reshape(n, 1)
  j = Tensor.arange(n, dtype=dtypes.int32).reshape(1, n)
  # on diagonal k, row i holds v[i] (k >= 0) and column j holds v[j] (k < 0)
  vv = v.pad(((0, abs(k)),)).reshape((n, 1) if k >= 0 else (1, n))
  return (j - i == k).where(vv, _fill((1, 1), 0, v.dtype))

def diagflat(v: Any, k: int = 0) -> Tensor: return diag(asarray(v).flatten(), k)

def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Tensor, Tensor]:
  r, c = np.tril_indices(n, k, m)
  return asarray(r.astype(np.int64)), asarray(c.astype(np.int64))

def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Tensor, Tensor]:
  r, c = np.triu_indices(n, k, m)
  return asarray(r.astype(np.int64)), asarray(c.astype(np.int64))

def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
  dt = dtype_of(dtype) if dtype is not None else to_dtype(int)
  dimensions = static_ints(tuple(dimensions))
  n = len(dimensions)
  out = []
  for i, d in enumerate(dimensions):
    shape = [1] * n
    shape[i] = d
    t = Tensor.arange(d, dtype=dt).reshape(shape)
    out.append(t if sparse else t.expand(*dimensions))
  return tuple(out) if sparse else Tensor.stack(*out) if out else zeros((0,), dt)

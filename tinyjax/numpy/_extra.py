"""tinyjax.numpy: the functions built from the other modules' ones, as JAX builds them: differences and integrals (diff,
gradient, trapezoid, interp, unwrap), statistics (cov, corrcoef, histograms, the NaN-ignoring arg/order statistics),
polynomials (poly*, roots), sets (isin, union1d, ...: `size=` under jit, as JAX), partial sorts, functional updates
(put, place, put_along_axis, fill_diagonal), index helpers, bits (packbits, bitwise_count, spacing), small utilities
(astype, copy, rollaxis, unstack, matvec, apply_along_axis, fromfunction), i0 and the window functions. They run under
vmap, grad and jit as the functions they compose."""
from __future__ import annotations
import math, operator
from builtins import range as builtins_range   # (histogramdd's `range` argument hides the builtin)
from typing import Any, Callable, NamedTuple, Sequence
import numpy as np
from tinyjax._tg import Tensor, dtypes, np_dtype, static_shape as _S
from tinyjax.dtypes import computed_dtype
from tinyjax.numpy._core import asarray, array, promote, promote_inexact, as_inexact, result_type, to_dtype, default_float, \
  default_int, canonicalize_axis, canonicalize_axes, to_inexact_dtype, canonical_dtype
from tinyjax.lax import sorting
from tinyjax.transforms.vmap import vmap
from tinyjax.complex_array import ComplexArray
from tinyjax.numpy._math import where, mod, floor_divide, abs as _abs, isnan, clip, sqrt, cos, power, floor, ceil, true_divide, \
  copysign, invert, left_shift, right_shift
from tinyjax.numpy._reductions import cumsum, argmax, argmin, average, quantile_of, all as _all, sum as _sum
from tinyjax.numpy._shape import concatenate, broadcast_to, moveaxis, searchsorted, argsort, tile, ravel, \
  broadcast_shapes, unique, nonzero, unravel_index, _concrete, _nonzero_flat, stack, ravel_multi_index, bincount, _2d
from tinyjax.numpy._creation import zeros, ones, full, arange, linspace, diag, tril_indices, triu_indices, indices as _indices
from tinyjax.numpy._products import dot, matmul, convolve
from tinyjax.numpy._indexing import _IndexUpdateHelper
from tinyjax.numpy import _complex, linalg

__all__ = ["diff", "ediff1d", "gradient", "trapezoid", "interp", "unwrap", "modf", "cov", "corrcoef", "nanargmax", "nanargmin",
           "nanquantile", "nanpercentile", "nanmedian", "isin", "histogram_bin_edges", "histogram", "vander", "polyval",
           "polyadd", "polysub", "polymul", "polyder", "polyint", "tril_indices_from", "triu_indices_from", "diag_indices",
           "diag_indices_from", "fill_diagonal", "rollaxis", "unstack", "matvec", "vecmat", "astype",
           "copy", "apply_along_axis", "bartlett", "blackman", "hamming", "hanning", "partition", "argpartition", "put_along_axis",
           "put", "place", "ix_", "fromfunction", "apply_over_axes", "mask_indices", "union1d", "intersect1d", "setdiff1d",
           "setxor1d", "unique_all", "unique_counts", "unique_inverse", "unique_values", "trim_zeros", "spacing", "bitwise_invert",
           "bitwise_left_shift", "bitwise_right_shift", "polyfit", "bitwise_count", "packbits", "unpackbits", "histogramdd",
           "histogram2d", "polydiv", "poly", "i0", "kaiser", "einsum_path", "roots", "sort_complex"]
# (isscalar and iterable are exported apart: they take any object, complex numbers too, and return a bool; and
# ComplexWarning, a class)

def _along(x: Tensor, axis: int, lo: int | None, hi: int | None) -> Tensor:
  """x[..., lo:hi, ...] with the slice on `axis`."""
  return x[(slice(None),) * axis + (slice(lo, hi),)]

# ---- differences and integrals --------------------------------------------------------------------------------------

def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Tensor:
  """n-th discrete difference along axis (jnp.diff); bools differ by `!=`, as in JAX."""
  arr = asarray(a)
  n = operator.index(n)
  axis = operator.index(axis)
  if n == 0: return arr
  if n < 0: raise ValueError(f"order must be non-negative but got {n}")
  if arr.ndim == 0: raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  ax = canonicalize_axis(axis, arr.ndim)
  if prepend is not None or append is not None:
    # (the ends promote with arr as JAX's concatenate does: a Python scalar weakly)
    dt = result_type(arr, *(v for v in (prepend, append) if v is not None))
    def end(v: Any) -> Tensor:
      t = asarray(v, dt)
      return t if t.ndim else broadcast_to(t, tuple(1 if d == ax else s for d, s in enumerate(_S(arr))))
    arr = concatenate([*([end(prepend)] if prepend is not None else []), arr, *([end(append)] if append is not None else [])], ax)
  for _ in range(n):
    hi, lo = _along(arr, ax, 1, None), _along(arr, ax, None, -1)
    arr = hi != lo if arr.dtype == dtypes.bool else hi - lo
  return arr

def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Tensor:
  """Differences of the flattened array (jnp.ediff1d); `to_begin`/`to_end` take the array's dtype."""
  arr = ravel(ary)
  r = arr[1:] - arr[:-1]
  if to_begin is not None: r = concatenate([ravel(asarray(to_begin, arr.dtype)), r])
  if to_end is not None: r = concatenate([r, ravel(asarray(to_end, arr.dtype))])
  return r

def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None, edge_order: int | None = None) -> Any:
  """Central differences inside, one-sided at the ends (jnp.gradient); spacings are scalars or 1-D coordinates.
  `edge_order` is not supported (as in JAX)."""
  if edge_order is not None: raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  a, *spacing = promote_inexact(f, *varargs)
  def along(h: Tensor, ax: int) -> Tensor:
    s = lambda lo, hi: _along(a, ax, lo, hi)   # noqa: E731
    upper, lower = s(1, 2) - s(0, 1), s(-1, None) - s(-2, -1)
    if h.ndim == 0: return concatenate([upper / h, (s(2, None) - s(None, -2)) * 0.5 / h, lower / h], ax)
    if h.ndim != 1: raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    if _S(h)[0] != _S(a)[ax]:
      raise ValueError("Spacing arrays must have the same length as the dimension along which the gradient is calculated.")
    hx = h.reshape(tuple(-1 if d == ax else 1 for d in range(a.ndim)))
    t = lambda lo, hi: _along(hx, ax, lo, hi)   # noqa: E731
    dx1, dx2 = t(1, -1) - t(0, -2), t(2, None) - t(1, -1)
    inner = -dx2 / (dx1 * (dx1 + dx2)) * s(0, -2) + (dx2 - dx1) / (dx1 * dx2) * s(1, -1) + dx1 / (dx2 * (dx1 + dx2)) * s(2, None)
    return concatenate([upper / (t(1, 2) - t(0, 1)), inner, lower / (t(-1, None) - t(-2, -1))], ax)
  axes = tuple(range(a.ndim)) if axis is None else canonicalize_axes(axis, a.ndim)
  if not axes: return []
  if min(_S(a)[i] for i in axes) < 2:
    raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 elements are required.")
  if not spacing: dx = [asarray(1.0, a.dtype)] * len(axes)
  elif len(spacing) == 1: dx = spacing * len(axes)
  elif len(spacing) == len(axes): dx = spacing
  else: raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
  out = [along(h, ax) for ax, h in zip(axes, dx, strict=True)]
  return out[0] if len(axes) == 1 else out

def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Tensor:
  """Integral by the trapezoidal rule along axis (jnp.trapezoid)."""
  if x is None:
    yt, = promote_inexact(y)
    d = asarray(dx)
    if d.ndim > 0: d = moveaxis(d.reshape((1,) * (yt.ndim - d.ndim) + _S(d)), axis, -1)
  else:
    yt, xt = promote_inexact(y, x)
    d = diff(xt) if xt.ndim == 1 else moveaxis(diff(xt, axis=axis), axis, -1)
  yt = moveaxis(yt, axis, -1)
  if d.ndim == 0 or _S(d)[-1] == 1:   # constant spacing (JAX's fast path: its own rounding)
    d0 = d if d.ndim == 0 else d[..., 0]
    return d0 * (yt.sum(-1) - 0.5 * (yt[..., 0] + yt[..., -1]))
  return 0.5 * (d * (yt[..., 1:] + yt[..., :-1])).sum(-1)

def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Tensor:
  """Piecewise-linear interpolation (jnp.interp); `left`/`right` may be 'extrapolate', as in JAX."""
  xt, xpt, fpt = asarray(x), asarray(xp), asarray(fp)
  if _S(xpt) != _S(fpt) or xpt.ndim != 1: raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  xt, xpt = promote_inexact(xt, xpt)
  fpt = as_inexact(fpt)
  ext = []
  for name, v in (("left", left), ("right", right)):
    if isinstance(v, str) and v != "extrapolate":
      raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but got: {v!r}")
    ext.append(isinstance(v, str))
  if period is not None:
    if np.ndim(period) != 0: raise ValueError(f"period must be a scalar; got {period}")
    p = _abs(period)
    xt, xpt = mod(xt, p), mod(xpt, p)
    order = argsort(xpt)
    xpt, fpt = xpt[order], fpt[order]
    xpt = concatenate([xpt[-1:] - p, xpt, xpt[:1] + p])
    fpt = concatenate([fpt[-1:], fpt, fpt[:1]])
  i = clip(searchsorted(xpt, xt, side="right"), 1, _S(xpt)[0] - 1)
  df, dx = fpt[i] - fpt[i - 1], xpt[i] - xpt[i - 1]
  delta = xt - xpt[i - 1]
  eps = np.spacing(np.finfo(np_dtype(xpt.dtype)).eps)
  dx0 = _abs(dx) <= eps   # (JAX: no NaN gradient where two xp coincide)
  f = where(dx0, fpt[i - 1], fpt[i - 1] + (delta / where(dx0, 1, dx)) * df)
  if not ext[0] and period is None: f = where(xt < xpt[0], fpt[0] if left is None else left, f)
  if not ext[1] and period is None: f = where(xt > xpt[-1], fpt[-1] if right is None else right, f)
  return f

def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Tensor:
  """Unwrap jumps larger than discont (default period/2) by multiples of period (jnp.unwrap)."""
  pt, per = promote(p, period)
  if _S(pt)[axis] == 0: return pt
  if discont is None: discont = per / 2
  interval = floor_divide(per, 2) if dtypes.is_int(pt.dtype) else per / 2
  dd = diff(pt, axis=axis)
  ddmod = mod(dd + interval, per) - interval
  ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
  correct = where(_abs(dd) < discont, 0, ddmod - dd)
  ax = canonicalize_axis(axis, pt.ndim)
  return concatenate([_along(pt, ax, 0, 1), _along(pt, ax, 1, None) + cumsum(correct, axis=ax)], ax)

def modf(x: Any, /, out: None = None) -> tuple[Tensor, Tensor]:
  """Fractional and integral parts, both with x's sign (jnp.modf)."""
  if out is not None: raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
  t = as_inexact(x)
  whole = where(t >= 0, floor(t), ceil(t))
  return t - whole, whole

# ---- statistics -------------------------------------------------------------------------------------------------------


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None, fweights: Any = None,
        aweights: Any = None, dtype: Any = None) -> Tensor:
  """Covariance matrix (jnp.cov). Negative weights count by their absolute value, as in JAX (numpy raises)."""
  if y is not None:
    mt, yt = promote_inexact(m, y)
    if yt.ndim > 2: raise ValueError("y has more than 2 dimensions")
  else: mt = as_inexact(m)
  if mt.ndim > 2: raise ValueError("m has more than 2 dimensions")
  if dtype is not None and not dtypes.is_float(to_dtype(dtype)):
    raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
  X = _2d(mt)
  if not rowvar and mt.ndim != 1: X = X.T
  if _S(X)[0] == 0: return zeros((0, 0), default_float())
  if y is not None:
    Y = _2d(yt)
    if not rowvar and _S(Y)[0] != 1: Y = Y.T
    X = concatenate([X, Y], 0)
  k, n = _S(X)
  if n == 0: return full(() if k == 1 else (k, k), math.nan, X.dtype)
  if ddof is None: ddof = 1 if not bias else 0
  w = aw = None
  if fweights is not None:
    fw = asarray(fweights)
    if fw.ndim > 1: raise RuntimeError("cannot handle multidimensional fweights")
    if _S(fw)[0] != n: raise RuntimeError("incompatible numbers of samples and fweights")
    if not dtypes.is_int(fw.dtype): raise TypeError("fweights must be integer.")
    w = _abs(fw)
  if aweights is not None:
    aw = asarray(aweights)
    if aw.ndim > 1: raise RuntimeError("cannot handle multidimensional aweights")
    if _S(aw)[0] != n: raise RuntimeError("incompatible numbers of samples and aweights")
    aw = _abs(aw)
    w = aw if w is None else w * aw
  if dtype is not None:
    X = X.cast(to_dtype(dtype))
    w = None if w is None else w.cast(to_dtype(dtype))
  avg, w_sum = average(X, axis=1, weights=w, returned=True)
  w_sum = w_sum[0]
  if w is None: f: Any = n - ddof
  elif ddof == 0: f = w_sum
  elif aw is None: f = w_sum - ddof
  else: f = w_sum - ddof * _sum(w * aw) / w_sum
  X = X - avg[:, None]
  XT = X.T if w is None else (X * w).T
  r = true_divide(dot(X, XT), f)
  return r.reshape(()) if k == 1 else r

def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Tensor:
  """Pearson correlation coefficients (jnp.corrcoef), clipped to [-1, 1]."""
  if dtype is not None and not dtypes.is_float(to_dtype(dtype)):
    raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got dtype={dtype}")
  c = cov(x, y, rowvar, dtype=dtype)
  if c.ndim == 0: return c / c   # NaN for 0/0 and inf/inf, as JAX
  sd = sqrt(diag(c))
  return clip(c / sd[:, None] / sd[None, :], -1, 1)

def _nanarg(name: str, fn: Callable, fill: float, a: Any, axis: Any, out: Any, keepdims: Any) -> Tensor:
  if out is not None: raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
  x = asarray(a)
  axis = None if axis is None else operator.index(axis)
  if not dtypes.is_float(x.dtype): return fn(x, axis, keepdims=bool(keepdims))
  nan = isnan(x)
  r = fn(where(nan, fill, x), axis, keepdims=bool(keepdims))
  return where(_all(nan, axis, keepdims=bool(keepdims)), -1, r)

def nanargmax(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None) -> Tensor:
  """argmax ignoring NaNs (jnp.nanargmax): -1 where a slice is all NaN (numpy raises)."""
  return _nanarg("nanargmax", argmax, -math.inf, a, axis, out, keepdims)

def nanargmin(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None) -> Tensor:
  """argmin ignoring NaNs (jnp.nanargmin): -1 where a slice is all NaN (numpy raises)."""
  return _nanarg("nanargmin", argmin, math.inf, a, axis, out, keepdims)

def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: Any = None) -> Tensor:
  """Quantiles of the non-NaN elements (jnp.nanquantile); NaN for a slice of NaNs only. Not 'inverted_cdf' nor `weights`."""
  if overwrite_input or out is not None:
    raise ValueError("jax.numpy.nanquantile does not support overwrite_input=True or out != None")
  return quantile_of("nanquantile", a, q, axis, method, keepdims, weights, nan=True)

def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Tensor:
  """Percentiles of the non-NaN elements (jnp.nanpercentile: nanquantile of q / 100)."""
  return nanquantile(a, as_inexact(q) / 100, axis, out, overwrite_input, method, keepdims, weights=weights)

def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False, keepdims: bool = False) -> Tensor:
  """Median of the non-NaN elements (jnp.nanmedian)."""
  return nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)

def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Tensor:  # noqa: A002
  """The edges jnp.histogram uses: `bins` edges as given, or bins + 1 evenly spaced over `range` (default: a's min and
  max, widened by 0.5 each way when they are equal). No string `bins`, as in JAX."""
  if isinstance(bins, str): raise NotImplementedError("string values for `bins` not implemented.")
  arr = asarray(a)
  dt = to_inexact_dtype(arr.dtype)
  if np.ndim(bins) == 1: return asarray(bins, dt)
  nbins = operator.index(bins)
  r = asarray([arr.min(), arr.max()] if range is None else range, dt)
  if _S(r) != (2,): raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
  same = r[1] == r[0]
  return linspace(where(same, r[0] - 0.5, r[0]), where(same, r[1] + 0.5, r[1]), nbins + 1, dtype=dt)

def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None, density: bool | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
  """Counts (or weight sums) per bin and the edges (jnp.histogram); the last bin includes its right edge."""
  if isinstance(bins, str): raise TypeError(f"asarray: expected ArrayLike, got {bins} of type {type(bins)}.")
  if weights is None:
    at = as_inexact(a)
    w = ones(_S(at), at.dtype)
  else:
    at, w = asarray(a), asarray(weights)
    if _S(at) != _S(w): raise ValueError("weights should have the same shape as a.")
    at, w = promote_inexact(at, w)
  edges = histogram_bin_edges(at, bins, range, w)
  ne = _S(edges)[0]
  idx = searchsorted(edges, at, side="right")
  idx = where(at == edges[-1], ne - 1, idx).flatten()
  # the sum of the weights per bin: a one-hot compare (JAX scatters-adds; out-of-range values fall in bins 0 and ne)
  counts = (idx.unsqueeze(-1) == Tensor.arange(1, ne)).where(w.flatten().unsqueeze(-1), 0).sum(0)
  if density: counts = counts / diff(edges) / counts.sum()
  return counts, edges

# ---- sets -------------------------------------------------------------------------------------------------------------

def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *, method: str = "auto") -> Tensor:
  """Whether each element is in test_elements (jnp.isin), by comparing all pairs: the methods 'binary_search' and
  'sort' give the same values."""
  if method not in ("auto", "compare_all", "binary_search", "sort"):
    raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', 'binary_search', 'sort', and 'auto'")
  e, t = promote(element, test_elements)
  shape = _S(e)
  e, t = e.flatten(), t.flatten()
  if not _S(e)[0] or not _S(t)[0]: return (ones if invert else zeros)(shape, dtypes.bool)
  r = (e.unsqueeze(-1) != t.unsqueeze(0)).all(-1) if invert else (e.unsqueeze(-1) == t.unsqueeze(0)).any(-1)
  return r.reshape(shape)

# ---- polynomials ------------------------------------------------------------------------------------------------------

def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
  """Vandermonde matrix (jnp.vander): the columns are x's powers, decreasing unless `increasing`."""
  xt = asarray(x)
  if xt.ndim != 1: raise ValueError("x must be a one-dimensional array")
  if xt.dtype == dtypes.bool:
    raise TypeError("iota does not accept dtype bool. Accepted dtypes are subtypes of integer, floating, complexfloating.")
  N = _S(xt)[0] if N is None else operator.index(N)
  if N < 0: raise ValueError("N must be nonnegative")
  k = np.arange(N) if increasing else np.arange(N - 1, -1, -1)
  return power(xt[:, None], asarray(k, xt.dtype))

def polyval(p: Any, x: Any, *, unroll: int = 16) -> Tensor:
  """p's value at x by Horner's rule (jnp.polyval; p's leading axis holds the coefficients, highest power first)."""
  pt, xt = promote(p, x)
  y = zeros(broadcast_shapes(_S(pt)[1:], _S(xt)), xt.dtype)
  for i in range(_S(pt)[0]): y = y * xt + pt[i]
  return y

def polyadd(a1: Any, a2: Any) -> Tensor:
  """Sum of two polynomials (jnp.polyadd): the shorter one aligned to the end."""
  x, y = promote(a1, a2)
  if _S(y)[0] > _S(x)[0]: x, y = y, x
  return x + y.pad(((_S(x)[0] - _S(y)[0], 0),) + ((0, 0),) * (y.ndim - 1))

def polysub(a1: Any, a2: Any) -> Tensor:
  """Difference of two polynomials (jnp.polysub)."""
  x, y = promote(a1, a2)
  return polyadd(x, -y)

def _trim_leading(t: Tensor, tol: float, what: str) -> Tensor:
  """t without its leading entries of magnitude below tol: its values (concrete), as JAX's trim_zeros(_tol)."""
  size = np.abs(_concrete(t, what))
  small = size <= tol if tol == 0 else size < tol
  return t[int(np.argmin(small)):] if not small.all() else t[:0]

def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Tensor:
  """Product of two polynomials (jnp.polymul), a full convolution; `trim_leading_zeros` needs concrete values, as in JAX."""
  x, y = promote_inexact(a1, a2)
  if trim_leading_zeros and (_S(x)[0] > 1 or _S(y)[0] > 1):
    x, y = _trim_leading(x, 0, "polymul(trim_leading_zeros=True)"), _trim_leading(y, 0, "polymul(trim_leading_zeros=True)")
  if not _S(x)[0]: x = zeros(1, y.dtype)
  if not _S(y)[0]: y = zeros(1, x.dtype)
  return convolve(x, y, mode="full")

def polyder(p: Any, m: int = 1) -> Tensor:
  """m-th derivative of a polynomial (jnp.polyder)."""
  m = operator.index(m)
  pt = as_inexact(p)
  if m < 0: raise ValueError("Order of derivative must be positive")
  if m == 0: return pt
  n = _S(pt)[0]
  coeff = (np.arange(m, n)[None] - np.arange(m)[:, None]).prod(0)[::-1] if n > m else np.zeros(0)
  return pt[:-m] * asarray(coeff.astype(np.float64), pt.dtype)

def polyint(p: Any, m: int = 1, k: Any = None) -> Tensor:
  """m-th antiderivative of a polynomial (jnp.polyint), with integration constants k (a scalar or m of them)."""
  m = operator.index(m)
  pt, kt = promote_inexact(p, 0 if k is None else k)
  if m < 0: raise ValueError("Order of integral must be positive (see polyder)")
  kt = kt.reshape(1) if kt.ndim == 0 else kt
  if _S(kt)[0] == 1: kt = broadcast_to(kt, (m,))
  if _S(kt) != (m,): raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  if m == 0: return pt
  grid = np.arange(_S(pt)[0] + m)[None] - np.arange(m)[:, None]
  coeff = np.maximum(1, grid).prod(0)[::-1]
  return concatenate([pt, kt]) / asarray(coeff.astype(np.float64), pt.dtype)

# ---- index helpers ----------------------------------------------------------------------------------------------------

def _shape_of(arr: Any) -> tuple[int, ...]:
  return tuple(arr.shape) if hasattr(arr, "shape") else _S(asarray(arr))

def tril_indices_from(arr: Any, k: int = 0) -> tuple[Tensor, Tensor]:
  s = _shape_of(arr)
  if len(s) != 2: raise ValueError("Only 2-D inputs are accepted")
  return tril_indices(s[0], k=k, m=s[1])

def triu_indices_from(arr: Any, k: int = 0) -> tuple[Tensor, Tensor]:
  s = _shape_of(arr)
  if len(s) != 2: raise ValueError("Only 2-D inputs are accepted")
  return triu_indices(s[0], k=k, m=s[1])

def diag_indices(n: int, ndim: int = 2) -> tuple[Tensor, ...]:
  """The indices of the main diagonal of an n x ... x n array (jnp.diag_indices), in the default int dtype."""
  n = operator.index(n)
  ndim = operator.index(ndim)
  if n < 0: raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0: raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  return (arange(n, dtype=default_int() if n < 2 ** 31 else dtypes.int64),) * ndim

def diag_indices_from(arr: Any) -> tuple[Tensor, ...]:
  s = _S(asarray(arr))
  if len(s) < 2: raise ValueError("input array must be at least 2-d")
  if len(set(s)) != 1: raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(s[0], len(s))

def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Tensor:
  """a with its main diagonal set to val (jnp.fill_diagonal): a new array, so `inplace=False` is required, as in JAX."""
  if inplace: raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap: raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  at, v = asarray(a), asarray(val)
  if at.ndim < 2: raise ValueError("array must be at least 2-d")
  if at.ndim > 2 and len(set(_S(at))) != 1: raise ValueError("All dimensions of input must be of equal length")
  n = min(_S(at))
  if v.ndim: v = _tile_to_size(ravel(v), n)   # JAX: the values repeat to the diagonal's length
  on = Tensor.ones(*_S(at), dtype=dtypes.bool, device=at.device)
  for d in range(1, at.ndim):   # the positions whose indices are all equal (and below n)
    shape = [1] * at.ndim
    i0, id_ = list(shape), list(shape)
    i0[0], id_[d] = _S(at)[0], _S(at)[d]
    on = on & (Tensor.arange(_S(at)[0]).reshape(i0) == Tensor.arange(_S(at)[d]).reshape(id_))
  if v.ndim: v = v.pad(((0, _S(at)[0] - n),)).reshape((-1,) + (1,) * (at.ndim - 1))
  return where(on, v.cast(at.dtype), at)

# ---- small utilities --------------------------------------------------------------------------------------------------

def rollaxis(a: Any, axis: int, start: int = 0) -> Tensor:
  """Roll `axis` backwards until it lies before `start` (jnp.rollaxis; moveaxis is clearer)."""
  t = asarray(a)
  start = operator.index(start)
  ax = canonicalize_axis(axis, t.ndim)
  if not -t.ndim <= start <= t.ndim: raise ValueError(f"start={start} must satisfy {-t.ndim}<=start<={t.ndim}")
  if start < 0: start += t.ndim
  if start > ax: start -= 1
  return moveaxis(t, ax, start)

def unstack(x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
  """The slices of x along axis (jnp.unstack)."""
  t = asarray(x)
  if t.ndim == 0: raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
  ax = canonicalize_axis(axis, t.ndim)
  return tuple(t[(slice(None),) * ax + (i,)] for i in range(_S(t)[ax]))

def _core_dims(x1: Tensor, x2: Tensor, sig: str, dims: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
  """JAX's checks of jnp.vectorize's signature `sig`: enough axes for each argument's core dimensions `dims`, and one
  size per dimension name."""
  sizes: dict[str, int] = {}
  for x, names in zip((x1, x2), dims, strict=True):
    if x.ndim < len(names):
      raise ValueError(f"input with shape {_S(x)!r} does not have enough dimensions for all core dimensions {names!r} on "
                       f"vectorized function with excluded=frozenset() and signature={sig!r}")
    for name, size in zip(names, _S(x)[x.ndim - len(names):], strict=True):
      if sizes.setdefault(name, size) != size:
        raise ValueError(f"inconsistent size for core dimension {name!r}: {size} vs {sizes[name]} on vectorized function "
                         f"with excluded=frozenset() and signature={sig!r}")

def matvec(x1: Any, x2: Any, /) -> Tensor:
  """Batched matrix-vector product (jnp.matvec: signature (n,m),(m)->(n), the batch axes broadcast)."""
  a, b = asarray(x1), asarray(x2)
  _core_dims(a, b, "(n,m),(m)->(n)", (("n", "m"), ("m",)))
  return matmul(a, b[..., None])[..., 0]

def vecmat(x1: Any, x2: Any, /) -> Tensor:
  """Batched vector-matrix product (jnp.vecmat: signature (n),(n,m)->(m); x1 conjugated)."""
  a, b = asarray(x1), asarray(x2)
  _core_dims(a, b, "(n),(n,m)->(m)", (("n",), ("n", "m")))
  return matmul(a[..., None, :], b)[..., 0, :]

def isscalar(element: Any) -> bool:
  """Whether element is a scalar: a Python or numpy scalar, or a 0-d array (jnp.isscalar; numpy's says False for one)."""
  if np.isscalar(element): return True
  if isinstance(element, (np.ndarray, Tensor)): return element.ndim == 0
  if getattr(element, "__jax_array__", None) is not None: return asarray(element).ndim == 0
  return False

iterable = np.iterable

def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Tensor:
  """x cast to dtype (jnp.astype; None: the default float)."""
  t = asarray(x)
  dt = to_dtype(dtype) or default_float()
  return t if t.dtype == dt else t.cast(dt)

def copy(a: Any, order: str | None = None) -> Tensor:
  """A copy of a (jnp.copy): arrays are values here, so the copy is a, which no program can tell apart."""
  return array(a, copy=True, order=order)

def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
  """func1d on every 1-D slice along axis (jnp.apply_along_axis: vmap over the other axes, as JAX does)."""
  t = asarray(arr)
  ax = canonicalize_axis(axis, t.ndim)
  func = lambda s: func1d(s, *args, **kwargs)   # noqa: E731
  for i in range(1, t.ndim - ax): func = vmap(func, in_axes=i, out_axes=-1)
  for _ in range(ax): func = vmap(func, in_axes=0, out_axes=0)
  return func(t)

# ---- window functions -------------------------------------------------------------------------------------------------

def _window(name: str, M: int, fn: Callable[[Tensor, int], Tensor]) -> Tensor:  # noqa: N803
  M = operator.index(M)
  dt = default_float()
  if M <= 1: return ones((max(M, 0),), dt)
  return fn(arange(M, dtype=dt), M)

def bartlett(M: int) -> Tensor:  # noqa: N803
  return _window("bartlett", M, lambda n, M: 1 - _abs(2 * n + 1 - M) / (M - 1))

def blackman(M: int) -> Tensor:  # noqa: N803
  return _window("blackman", M, lambda n, M: 0.42 - 0.5 * cos(2 * np.pi * n / (M - 1)) + 0.08 * cos(4 * np.pi * n / (M - 1)))

def hamming(M: int) -> Tensor:  # noqa: N803
  return _window("hamming", M, lambda n, M: 0.54 - 0.46 * cos(2 * np.pi * n / (M - 1)))

def hanning(M: int) -> Tensor:  # noqa: N803
  return _window("hanning", M, lambda n, M: 0.5 * (1 - cos(2 * np.pi * n / (M - 1))))

# ---- partial sorts ------------------------------------------------------------------------------------------------------

def _partition_setup(a: Any, kth: int, axis: int) -> tuple[Tensor, int, int]:
  """a with `axis` last, that axis, and kth in range (JAX's error otherwise)."""
  t = asarray(a)
  ax = canonicalize_axis(axis, t.ndim)
  return t.transpose(ax, -1) if ax != t.ndim - 1 else t, ax, canonicalize_axis(kth, _S(t)[ax])

def _bottom(t: Tensor, k: int) -> tuple[Tensor, Tensor]:
  """The k smallest along the last axis, ascending, and their indices: JAX's top_k of -t (unsigned: of -(t + 1))."""
  neg = (t + 1).neg() if dtypes.is_unsigned(t.dtype) else -t
  v, i = sorting.top_k(neg, k, -1)
  return (-v - 1 if dtypes.is_unsigned(t.dtype) else -v), i

def partition(a: Any, kth: int, axis: int = -1) -> Tensor:
  """a with its kth-smallest element along axis in place, the smaller ones before it (ascending) and the others after
  (descending: JAX's order, from two top_k; numpy's is unspecified). NaNs are not treated as numpy does, as in JAX."""
  t, ax, k = _partition_setup(a, kth, axis)
  n = _S(t)[-1]
  out = concatenate([_bottom(t, k + 1)[0].cast(t.dtype), sorting.top_k(t, n - k - 1, -1)[0]], -1)
  return out.transpose(ax, -1) if ax != t.ndim - 1 else out

def argpartition(a: Any, kth: int, axis: int = -1) -> Tensor:
  """The indices that partition a (jnp.argpartition): those of the kth + 1 smallest, ascending, then the others in
  index order, as JAX's."""
  t, ax, k = _partition_setup(a, kth, axis)
  n = _S(t)[-1]
  low = _bottom(t, k + 1)[1]
  # the other indices in index order: top_k of a proxy, 1 off the bottom ones (JAX's way: equal values keep index order)
  proxy = 1 - (low.unsqueeze(-1) == Tensor.arange(n).cast(low.dtype)).any(-2).cast(default_float())
  out = concatenate([low, sorting.top_k(proxy, n - k - 1, -1)[1]], -1)   # (int32, as JAX's top_k indices)
  return out.transpose(ax, -1) if ax != t.ndim - 1 else out

# ---- functional updates -------------------------------------------------------------------------------------------------

def _tile_to_size(v: Tensor, n: int) -> Tensor:
  if _S(v)[0] < n: v = tile(v, -(-n // _S(v)[0]))
  return v[:n] if _S(v)[0] > n else v

def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True, *, mode: str | None = None) -> Tensor:
  """arr with values written at indices along axis (jnp.put_along_axis): a new array, `inplace=False` required."""
  if inplace:
    raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays"   # (JAX's message, as it is)
                     "are immutable. "
                     "Pass inplace=False to instead return an updated array.")
  t, i, v = asarray(arr), asarray(indices), asarray(values)
  shape = _S(t)
  if axis is None: t, axis = t.flatten(), 0
  if t.ndim != i.ndim:
    raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. Got arr.ndim={t.ndim} and indices.ndim={i.ndim}.")
  try: v = broadcast_to(v, _S(i))
  except ValueError:
    raise ValueError(f"put_along_axis argument 'values' must be broadcastable to 'indices'. Got values.shape={_S(v)} and "
                     f"indices.shape={_S(i)}.") from None
  ax = canonicalize_axis(axis, t.ndim)
  idx = list(_indices(_S(t), sparse=True))
  idx[ax] = i
  return _IndexUpdateHelper(t)[tuple(idx)].set(v, mode=mode).reshape(shape)

def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Tensor:
  """a with the flat positions ind set to v, v repeated to ind's length (jnp.put): `inplace=False` required; mode
  'clip' (the default) or 'wrap'."""
  if inplace:
    raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are immutable. "
                     "Pass inplace=False to instead return an updated array.")
  t, i, vt = asarray(a), ravel(ind), ravel(v)
  if not t.numel() or not _S(i)[0] or not _S(vt)[0]: return t
  vt = _tile_to_size(vt, _S(i)[0])
  n = t.numel()
  if mode == "clip": i = clip(i, 0, n - 1)
  elif mode == "wrap": i = mod(i, n)
  elif mode == "raise": raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
  elif mode is not None: raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  return _IndexUpdateHelper(t)[unravel_index(i, _S(t))].set(vt, mode="drop" if mode is None else "promise_in_bounds")

def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Tensor:
  """arr with its entries where mask is true set to vals in order, vals repeated as needed (jnp.place): `inplace=False`
  required."""
  t, m, v = asarray(arr), asarray(mask), ravel(vals)
  if inplace:
    raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are immutable. "
                     "Pass inplace=False to instead return an updated array.")
  if t.numel() != m.numel(): raise ValueError("place: arr and mask must be the same size")
  if not _S(v)[0]: raise ValueError("Cannot place values from an empty array")
  if not t.numel(): return t
  # the k-th true entry takes vals[k]: its rank among the true entries
  mf = m.flatten() != 0
  rank = mf.cast(dtypes.int32).cumsum(0) - 1
  vt = _tile_to_size(v, _S(mf)[0])
  return where(mf, vt[rank.maximum(0)].cast(t.dtype), t.flatten()).reshape(_S(t))

def ix_(*args: Any) -> tuple[Tensor, ...]:
  """Open-mesh index arrays from 1-D sequences (jnp.ix_); boolean ones are not supported, as in JAX."""
  out = []
  for i, a in enumerate(args):
    t = asarray(a)
    if t.ndim != 1: raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {_S(t)}")
    if t.dtype == dtypes.bool: raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    shape = tuple(_S(t)[0] if d == i else 1 for d in range(len(args)))
    out.append(zeros(shape, default_int()) if not _S(t)[0] else t.reshape(shape))   # numpy: an empty index is an int one
  return tuple(out)

def fromfunction(function: Callable, shape: Any, *, dtype: Any = float, **kwargs: Any) -> Any:
  """function of the index grids of shape (jnp.fromfunction: vmapped over each axis, so function sees scalars)."""
  shape = tuple(operator.index(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
  for i in range(len(shape)):
    function = vmap(function, in_axes=tuple(0 if i == j else None for j in range(len(shape)))[::-1])
  return function(*(arange(s, dtype=dtype) for s in shape), **kwargs)

def apply_over_axes(func: Callable, a: Any, axes: Sequence[int]) -> Tensor:
  """func(a, axis) for each axis in turn, a reduced axis put back (jnp.apply_over_axes)."""
  t = asarray(a)
  for axis in axes:
    b = asarray(func(t, axis))
    if b.ndim == t.ndim: t = b
    elif b.ndim == t.ndim - 1: t = b.unsqueeze(canonicalize_axis(axis, t.ndim))
    else: raise ValueError("function is not returning an array of the correct shape")
  return t

def mask_indices(n: int, mask_func: Callable, k: int = 0, *, size: int | None = None) -> tuple[Tensor, Tensor]:
  """The indices where mask_func(ones((n, n)), k) is nonzero (jnp.mask_indices); under jit `size` is needed."""
  i, j = nonzero(mask_func(ones((n, n)), k), size=size)
  return i, j

# ---- sets -----------------------------------------------------------------------------------------------------------------

def _sorted_first(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """x (1-D) sorted (stably), the sorting permutation, and the mask of each run's first element."""
  perm = argsort(x)
  s = x[perm]
  n = _S(x)[0]
  first = Tensor.ones(1, dtype=dtypes.bool).cat(s[1:] != s[:-1]) if n > 1 else Tensor.ones(n, dtype=dtypes.bool)
  return s, perm, first

def _select(name: str, s: Tensor, keep: Tensor, size: int | None, fill: Any) -> tuple[Tensor, Tensor, Tensor, int]:
  """The entries of s where keep is true, in order, as `size` of them (None: as many as there are, which must then be
  concrete); the slots beyond them hold fill (None: the first entry kept, else 0: JAX's fill). Also the positions taken
  and whether each slot is valid."""
  if size is None: size = int(_concrete(keep, name).sum())
  else: size = operator.index(size)
  pos = _nonzero_flat(keep, size, -1)
  valid = pos >= 0
  safe = where(valid, pos, 0)
  vals = s[safe] if _S(s)[0] else zeros(size, s.dtype)
  if fill is None: fill = where(valid[0], vals[0], 0) if size else 0
  return where(valid, vals, asarray(fill, s.dtype)) if size else vals, safe, valid, size

def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Tensor:
  """The sorted unique values of both arrays (jnp.union1d); under jit `size` is needed."""
  return unique(concatenate([ravel(ar1), ravel(ar2)]), size=size, fill_value=fill_value)

def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False, *, size: int | None = None,
                fill_value: Any = None) -> Any:
  """The sorted unique values in both arrays (jnp.intersect1d), with return_indices the first index of each in ar1 and
  ar2 (the arrays' sizes in the padding slots); under jit `size` is needed. (`assume_unique` changes nothing here.)"""
  a, b = promote(ar1, ar2)
  a, b = a.flatten(), b.flatten()
  s, perm, first = _sorted_first(a)
  vals, safe, valid, size = _select("intersect1d", s, first & isin(s, b), size, fill_value)
  if not return_indices: return vals
  n1, n2 = _S(a)[0], _S(b)[0]
  i1 = where(valid, perm[safe] if n1 else safe, n1).cast(default_int())
  hit = (b.unsqueeze(0) == vals.unsqueeze(-1)) & valid.unsqueeze(-1)
  i2 = where(hit, Tensor.arange(n2).unsqueeze(0), n2).min(-1).cast(default_int()) if n2 else full((size,), 0, default_int())
  return vals, i1, i2

def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None, fill_value: Any = None) -> Tensor:
  """The sorted unique values of ar1 not in ar2 (jnp.setdiff1d; padding: fill_value, default 0); under jit `size` is
  needed. (`assume_unique` changes nothing here.)"""
  a, b = ravel(ar1), ravel(ar2)
  if not _S(a)[0]: return full((size or 0,), 0 if fill_value is None else fill_value, a.dtype)
  s, _, first = _sorted_first(a)
  return _select("setdiff1d", s, first & isin(s, b, invert=True), size, 0 if fill_value is None else fill_value)[0]

def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None, fill_value: Any = None) -> Tensor:
  """The sorted unique values in exactly one of the arrays (jnp.setxor1d); under jit `size` is needed. (`assume_unique`
  changes nothing here.)"""
  a, b = promote(ravel(ar1), ravel(ar2))
  both = concatenate([a, b])
  if not _S(both)[0]: return zeros((size or 0,), both.dtype)
  s, _, first = _sorted_first(both)
  return _select("setxor1d", s, first & (isin(s, a) != isin(s, b)), size, fill_value)[0]

class UniqueAllResult(NamedTuple):
  values: Tensor
  indices: Tensor
  inverse_indices: Tensor
  counts: Tensor

class UniqueCountsResult(NamedTuple):
  values: Tensor
  counts: Tensor

class UniqueInverseResult(NamedTuple):
  values: Tensor
  inverse_indices: Tensor

def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueAllResult:
  """jnp.unique_all: values, first indices, inverse indices and counts (NaNs distinct, as in JAX)."""
  return UniqueAllResult(*unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False, size=size,
                                 fill_value=fill_value))

def unique_counts(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueCountsResult:
  return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value))

def unique_inverse(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueInverseResult:
  return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value))

def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Tensor:
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)

def trim_zeros(filt: Any, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Tensor:
  """filt without its leading ('f') and trailing ('b') zeros (jnp.trim_zeros): the length depends on the values, so
  filt must be concrete, as in JAX."""
  t = asarray(filt)
  v = _concrete(t, "trim_zeros")
  axes = set(canonicalize_axes(axis, t.ndim))
  if not axes or ("f" not in trim.lower() and "b" not in trim.lower()): return t
  def cut(ax: int) -> slice:
    if ax not in axes: return slice(None)
    m = np.asarray(v.any(axis=tuple(i for i in range(t.ndim) if i != ax)))
    if not m.any(): return slice(0, 0)
    return slice(int(m.argmax()) if "f" in trim.lower() else None, _S(t)[ax] - int(m[::-1].argmax()) if "b" in trim.lower() else None)
  return t[tuple(cut(ax) for ax in range(t.ndim))]

# ---- ufunc-like -------------------------------------------------------------------------------------------------------------

def spacing(x: Any, /) -> Tensor:
  """The distance from x to the next float away from zero (jnp.spacing; float16: towards +inf, as JAX), from x's bits
  (tinyjax has no nextafter yet)."""
  t = as_inexact(x)
  t = t.cast(comp) if (comp := canonical_dtype(t.dtype)) != t.dtype else t   # (a Python float: its bits in the default float)
  it = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[t.dtype.itemsize]
  bits = t.bitcast(it) & (2 ** (8 * t.dtype.itemsize - 1) - 1)   # |x|'s bits (tinygrad's abs keeps -0.0's sign)
  mag = bits.bitcast(t.dtype)
  up = (bits + 1).bitcast(t.dtype) - mag   # the next float above |x| (inf after the largest, NaN after inf)
  if t.dtype == dtypes.float16: r = where(t < 0, mag - (bits - 1).bitcast(t.dtype), up)
  else:
    r = copysign(up, t)
    r = where(r == 0, copysign(float(np.finfo(np_dtype(t.dtype)).smallest_subnormal), t), r)
  return r   # (in the default float for a Python float, not weakly typed: as JAX's, whose nextafter is not)

def bitwise_invert(x: Any, /) -> Tensor: return invert(x)
def bitwise_left_shift(x1: Any, x2: Any, /) -> Tensor: return left_shift(x1, x2)
def bitwise_right_shift(x1: Any, x2: Any, /) -> Tensor: return right_shift(x1, x2)

# ---- polyfit ----------------------------------------------------------------------------------------------------------------

def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False, w: Any = None, cov: Any = False) -> Any:
  """Least-squares polynomial fit (jnp.polyfit): the coefficients, highest power first; `full` and `cov` as JAX."""
  xt, yt = asarray(x), asarray(y)
  deg = operator.index(deg)
  order = deg + 1
  if deg < 0: raise ValueError("expected deg >= 0")
  if xt.ndim != 1: raise TypeError("expected 1D vector for x")
  if not xt.numel(): raise TypeError("expected non-empty vector for x")
  if yt.ndim < 1 or yt.ndim > 2: raise TypeError("expected 1D or 2D array for y")
  if _S(xt)[0] != _S(yt)[0]: raise TypeError("expected x and y to have same length")
  if rcond is None: rcond = _S(xt)[0] * float(np.finfo(np_dtype(to_inexact_dtype(xt.dtype))).eps)
  lhs, rhs = vander(xt, order), yt
  if w is not None:
    wt = as_inexact(w)
    if wt.ndim != 1: raise TypeError("expected a 1-d array for weights")
    if _S(wt)[0] != _S(yt)[0]: raise TypeError("expected w and y to have the same length")
    lhs = lhs * wt[:, None]
    rhs = rhs * (wt[:, None] if rhs.ndim == 2 else wt)
  scale = sqrt((lhs * lhs).sum(0))   # (the columns scaled to a better condition number)
  lhs = lhs / scale[None, :]
  c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
  c = (c.T / scale[None, :]).T if c.ndim > 1 else c / scale
  if full: return c, resids, rank, s, asarray(float(rcond))
  if cov:
    vbase = linalg.inv(dot(lhs.T, lhs)) / (scale[:, None] * scale[None, :])
    if cov == "unscaled": fac: Any = asarray(1.0)
    else:
      if _S(xt)[0] <= order: raise ValueError("the number of data points must exceed order to scale the covariance matrix")
      fac = resids / (_S(xt)[0] - order)
    fac = fac.reshape(-1) if fac.ndim == 0 else fac
    return (c, vbase * fac[None]) if yt.ndim == 1 else (c, vbase[:, :, None] * fac[None, None, :])
  return c

# ---- bits ---------------------------------------------------------------------------------------------------------------------

def bitwise_count(x: Any, /) -> Tensor:
  """The number of 1 bits of |x| (jnp.bitwise_count), as uint8; bools count as 0/1."""
  t = asarray(x)
  if dtypes.is_float(t.dtype):
    raise TypeError(f"population_count does not accept dtype {np_dtype(t.dtype).name}. Accepted dtypes are subtypes of integer.")
  if t.dtype == dtypes.bool: return t.cast(dtypes.uint8)
  if not dtypes.is_unsigned(t.dtype):   # |x|'s bits (the smallest int stays itself, as in JAX), read as unsigned
    t = t.abs().bitcast({1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[t.dtype.itemsize])
  count = (t & 1).cast(dtypes.uint8)
  for k in range(1, 8 * t.dtype.itemsize): count = count + ((t >> k) & 1).cast(dtypes.uint8)
  return count

def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Tensor:
  """The nonzero flags of a packed 8 to a uint8 along axis (jnp.packbits), padded with zeros."""
  t = asarray(a)
  if dtypes.is_float(t.dtype): raise TypeError("Expected an input array of integer or boolean data type")
  if bitorder not in ("little", "big"): raise ValueError("'order' must be either 'little' or 'big'")
  t = (t != 0).cast(dtypes.int32)
  if axis is None: t, axis = t.flatten(), 0
  ax = canonicalize_axis(axis, t.ndim)
  t = t.transpose(ax, -1) if ax != t.ndim - 1 else t
  if rem := _S(t)[-1] % 8: t = t.pad(((0, 0),) * (t.ndim - 1) + ((0, 8 - rem),))
  t = t.reshape(_S(t)[:-1] + (_S(t)[-1] // 8, 8))
  weights = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else [1, 2, 4, 8, 16, 32, 64, 128], np.int32)
  packed = (t * asarray(weights)).sum(-1).cast(dtypes.uint8)
  return packed.transpose(ax, -1) if ax != packed.ndim - 1 else packed

def unpackbits(a: Any, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Tensor:
  """The bits of a uint8 array along axis, 8 per element (jnp.unpackbits); `count` keeps or pads to that many."""
  t = asarray(a)
  if t.dtype != dtypes.uint8: raise TypeError("Expected an input array of unsigned byte data type")
  if bitorder not in ("little", "big"): raise ValueError("'order' must be either 'little' or 'big'")
  if axis is None: t, axis = t.flatten(), 0
  ax = canonicalize_axis(axis, t.ndim)
  t = t.transpose(ax, -1) if ax != t.ndim - 1 else t
  bits = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else [1, 2, 4, 8, 16, 32, 64, 128], np.uint8)
  out = ((t.unsqueeze(-1) & asarray(bits)) != 0).cast(dtypes.uint8)
  out = out.reshape(_S(out)[:-2] + (-1,))
  if count is not None:
    n = _S(out)[-1]
    out = out.pad(((0, 0),) * (out.ndim - 1) + ((0, count - n),)) if count > n else out[..., :count]
  return out.transpose(ax, -1) if ax != out.ndim - 1 else out

# ---- more histograms and polynomials ------------------------------------------------------------------------------------------

def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: Any = None, density: bool | None = None) -> tuple[Tensor, list[Tensor]]:  # noqa: A002
  """D-dimensional histogram of N samples (sample: N x D) and each dimension's edges (jnp.histogramdd)."""
  if weights is None: s = as_inexact(sample)
  else:
    s, w = asarray(sample), asarray(weights)
    if _S(w) != _S(s)[:1]: raise ValueError("should have one weight for each sample.")
    s, w = promote_inexact(s, w)
  N, D = _S(s)
  if range is not None and (len(range) != D or any(r is not None and np.shape(r)[0] != 2 for r in range)):
    raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or Nones; got range={range}")
  try: per_dim = list(bins)
  except TypeError: per_dim = D * [bins]
  else:
    if len(per_dim) != D: raise ValueError("should be a bin for each dimension.")
  idx, edges = [], []
  for i in builtins_range(D):
    e = histogram_bin_edges(s[:, i], per_dim[i], None if range is None else range[i], weights)
    b = searchsorted(e, s[:, i], side="right")
    idx.append(where(s[:, i] == e[-1], b - 1, b))
    edges.append(e)
  nbins = tuple(_S(e)[0] + 1 for e in edges)
  xy = ravel_multi_index(tuple(idx), nbins, mode="clip")
  hist = bincount(xy, weights, length=math.prod(nbins)).reshape(nbins)[(slice(1, -1),) * D]
  if density:
    hist = hist.cast(s.dtype)
    hist = hist / hist.sum()
    for norm in ix_(*(diff(e) for e in edges)): hist = hist / norm
  return hist, edges

def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None, density: bool | None = None) -> tuple[Tensor, Tensor, Tensor]:  # noqa: A002
  """2-D histogram of the points (x, y) and the edges along x and y (jnp.histogram2d)."""
  try: n = len(bins)
  except TypeError: n = 1
  if n not in (1, 2): bins = [asarray(bins), asarray(bins)]
  hist, edges = histogramdd(stack([asarray(x), asarray(y)], 1), bins, range, weights, density)
  return hist, edges[0], edges[1]

def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Tensor, Tensor]:
  """Quotient and remainder of polynomial division (jnp.polydiv; the remainder keeps u's length, or with
  `trim_leading_zeros`, which needs concrete values as in JAX, loses its leading entries below sqrt(eps))."""
  ut, vt = promote_inexact(u, v)
  m, n = _S(ut)[0] - 1, _S(vt)[0] - 1
  scale = 1.0 / vt[0]
  q = []
  for k in range(m - n + 1):   # long division, one leading coefficient at a time
    d = scale * ut[k]
    q.append(d)
    ut = ut - (d * vt).pad(((k, m - n - k),))
  if trim_leading_zeros: ut = _trim_leading(ut, math.sqrt(float(np.finfo(np_dtype(ut.dtype)).eps)), "polydiv(trim_leading_zeros=True)")
  return (stack(q) if q else zeros(1, ut.dtype)), ut

def _poly_complex(z: Any) -> Any:
  """The monic polynomial of complex zeros z (a ComplexArray, 1-D): one factor (x - z_k) at a time, on the parts."""
  re, im = ones((1,), z.re.dtype), zeros((1,), z.re.dtype)
  for k in range(_S(z.re)[0]):   # a * (x - z_k): a shifted up one power, minus z_k * a
    zr, zi = z.re[k], z.im[k]
    re, im = re.pad(((0, 1),)) - (zr * re - zi * im).pad(((1, 0),)), im.pad(((0, 1),)) - (zr * im + zi * re).pad(((1, 0),))
  return ComplexArray(re, im)

def poly(seq_of_zeros: Any) -> Any:
  """The coefficients of the monic polynomial with the given zeros (jnp.poly); of a square matrix, its characteristic
  polynomial (from its eigenvalues: complex, as JAX's)."""
  z = as_inexact(seq_of_zeros)
  z = z.reshape(1) if z.ndim == 0 else z
  if z.ndim == 2 and _S(z)[0] == _S(z)[1] and _S(z)[0]: return _poly_complex(linalg.eigvals(z))
  if z.ndim != 1: raise ValueError("input must be 1d or non-empty square 2d array.")
  if not _S(z)[0]: return ones((), z.dtype)
  a = ones((1,), z.dtype)
  for k in range(_S(z)[0]): a = convolve(a, stack([ones((), z.dtype), -z[k]]), mode="full")
  return a

# ---- Bessel i0 and the Kaiser window -----------------------------------------------------------------------------------------
# Cephes' i0e by Chebyshev series (float64 and float32 coefficients), as XLA's and JAX's bessel_i0e

_I0E_A64 = [-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16, 1.71539128555513303061E-15,
            -1.16853328779934516808E-14, 7.67618549860493561688E-14, -4.85644678311192946090E-13, 2.95505266312963983461E-12,
            -1.72682629144155570723E-11, 9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9]
_I0E_A32 = [-1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7, 1.11738753912010371815E-6,
            -4.41673835845875056359E-6, 1.64484480707288970893E-5, -5.75419501008210370398E-5, 1.88502885095841655729E-4,
            -5.76375574538582365885E-4, 1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
            -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2, 1.71620901522208775349E-1,
            -3.04682672343198398683E-1, 6.76795274409476084995E-1]
_I0E_B64 = [-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17, 3.46122286769746109310E-17,
            -2.82762398051658348494E-16, -3.42548561967721913462E-16, 1.77256013305652638360E-15, 3.81168066935262242075E-15,
            -9.55484669882830764870E-15, -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
            7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11, -3.14991652796324136454E-11,
            1.18891471078464383424E-11, 4.94060238822496958910E-10]
_I0E_B32 = [3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7, 2.89137052083475648297E-6,
            6.88975834691682398426E-5, 3.36911647825569408990E-3, 8.04490411014108831608E-1]

def _chebyshev(x: Tensor, coeffs: list[float]) -> Tensor:
  b0, b1, b2 = zeros((), x.dtype), zeros((), x.dtype), zeros((), x.dtype)
  for c in coeffs: b0, b1, b2 = x * b0 - b1 + c, b0, b1
  return 0.5 * (b0 - b2)

def _i0e(x: Tensor) -> Tensor:
  wide = computed_dtype(x.dtype) == dtypes.float64   # (a Python float's: float64 with x64)
  a, b = (_I0E_A64 + _I0E_A32, _I0E_B64 + _I0E_B32) if wide else (_I0E_A32, _I0E_B32)
  small = _chebyshev(0.5 * x - 2.0, a)
  xl = where(x <= 8.0, 8.0, x)   # (the large-x series at 0 would be NaN, and so its cotangent there)
  return where(x <= 8.0, small, _chebyshev(32.0 / xl - 2.0, b) / sqrt(xl))

def i0(x: Any) -> Tensor:
  """Modified Bessel function of the first kind, order 0 (jnp.i0): exp(|x|) i0e(|x|), Cephes' series as JAX's. Its
  derivative is that of the series (JAX's uses i1e; they agree to ~1e-13), 0 at 0 as JAX's."""
  t = as_inexact(x)
  comp = canonical_dtype(t.dtype)   # (a Python float: in the default float, as JAX)
  if comp in (dtypes.float16, dtypes.bfloat16): comp = dtypes.float32   # (as XLA: the coefficients need float32)
  ax = t.cast(comp).abs()
  r = ax.exp() * _i0e(ax)
  r = where(ax == 0, r.detach(), r)
  return r.cast(t.dtype) if comp != t.dtype else r

def kaiser(M: int, beta: Any) -> Tensor:  # noqa: N803
  """The Kaiser window of M points (jnp.kaiser)."""
  M = operator.index(M)
  dt = default_float()
  if M <= 1: return ones((max(M, 0),), dt)
  n = arange(M, dtype=dt)
  alpha = 0.5 * (M - 1)
  # (at the ends XLA's exact division gives 1 - 1 = 0; tinygrad's x * (1/alpha) can give -1e-16, whose sqrt is NaN)
  return i0(beta * sqrt((1 - ((n - alpha) / alpha) ** 2).maximum(0))) / i0(beta)

# ---- einsum_path and roots ------------------------------------------------------------------------------------------------------

def einsum_path(subscripts: Any, /, *operands: Any, optimize: Any = "auto") -> tuple[list[tuple[int, ...]], Any]:
  """The contraction order opt_einsum chooses, and its report (jnp.einsum_path, which is opt_einsum's contract_path
  with optimize=False as one pairwise step after another). Needs the opt_einsum package (JAX's dependency)."""
  try: import opt_einsum
  except ImportError: raise NotImplementedError("jnp.einsum_path needs the opt_einsum package (pip install opt_einsum)") from None
  if optimize is True: optimize = "optimal"
  elif optimize is False:   # JAX's Unoptimized: the operands in order, pairwise
    class _Unoptimized(opt_einsum.paths.PathOptimizer):
      def __call__(self, inputs, *args, **kwargs): return [(0, 1)] * (len(inputs) - 1)
    optimize = _Unoptimized()
  shapes = [tuple(o.shape) if hasattr(o, "shape") else np.shape(o) for o in operands]
  return opt_einsum.contract_path(subscripts, *shapes, optimize=optimize, shapes=True)

def roots(p: Any, *, strip_zeros: bool = True) -> Any:
  """The roots of a polynomial (jnp.roots): the eigenvalues of its companion matrix, complex. strip_zeros (the default)
  drops leading zero coefficients, so p must then be concrete; with strip_zeros=False they give NaN roots last, as JAX."""
  pt = as_inexact(p)
  pt = pt.reshape(1) if pt.ndim == 0 else pt
  if pt.ndim != 1: raise ValueError("Input must be a rank-1 array.")
  n = _S(pt)[0]
  if n < 2: return ComplexArray(zeros(0, pt.dtype), zeros(0, pt.dtype))
  def companion_roots(c: Tensor) -> Any:
    k = _S(c)[0]
    if k < 2: return ComplexArray(zeros(0, c.dtype), zeros(0, c.dtype))
    first = (Tensor.arange(k - 1) == 0).unsqueeze(-1)   # the first row holds -c[1:]/c[0], the subdiagonal ones
    return linalg.eigvals(where(first, (-c[1:] / c[0]).unsqueeze(0), diag(ones((k - 2,), c.dtype), -1)))
  if strip_zeros:   # (the number of leading zeros: p's values; numpy data read as it is, not through its Tensor)
    nonzero_at = np.flatnonzero((_concrete(pt, "roots(strip_zeros=True)") if isinstance(p, Tensor) else np.asarray(p)).reshape(-1) != 0)
    return companion_roots(pt[int(nonzero_at[0]) if nonzero_at.size else n:])
  zero = pt == 0
  lead = where(zero.all(), n, argmin(zero))   # the number of leading zeros
  pt = where(lead == n, 1.0, pt)   # (no LAPACK error for a zero polynomial)
  r = companion_roots(pt[mod(arange(n) + lead, n)])   # the leading zeros rolled to the end: zero roots
  m = _S(r.re)[0]
  order = argsort((r.re == 0) & (r.im == 0))           # the zero roots last, stably
  keep = arange(m) < m - lead
  return ComplexArray(where(keep, r.re[order], math.nan), where(keep, r.im[order], math.nan))

# ---- complex ordering -----------------------------------------------------------------------------------------------------------

ComplexWarning = np.exceptions.ComplexWarning

def sort_complex(a: Any) -> Any:
  """a sorted along its last axis, as a complex array (jnp.sort_complex): by real part, then imaginary part."""
  return _complex._sort(_complex.as_complex(a), -1)

# the complex versions of the linear functions above: the same function on the real and imaginary parts

def _c_diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
  z, *ends = _complex.promote_complex(a, *(e for e in (prepend, append) if e is not None))
  pre = ends.pop(0) if prepend is not None else None
  app = ends.pop(0) if append is not None else None
  part = lambda f: diff(f(z), n, axis, None if pre is None else f(pre), None if app is None else f(app))   # noqa: E731
  return ComplexArray(part(lambda c: c.re), part(lambda c: c.im))

def _c_unstack(x: Any, /, *, axis: int = 0) -> tuple:
  z = _complex.as_complex(x)
  return tuple(ComplexArray(r, i) for r, i in zip(unstack(z.re, axis=axis), unstack(z.im, axis=axis), strict=True))

def _c_rollaxis(a: Any, axis: int, start: int = 0) -> Any:
  z = _complex.as_complex(a)
  return ComplexArray(rollaxis(z.re, axis, start), rollaxis(z.im, axis, start))

def _c_poly(seq_of_zeros: Any) -> Any:
  z = _complex.as_complex(seq_of_zeros)
  if z.ndim == 2 and _S(z.re)[0] == _S(z.re)[1] and _S(z.re)[0]: return _poly_complex(linalg.eigvals(z))
  if z.ndim > 1: raise ValueError("input must be 1d or non-empty square 2d array.")
  if z.re.numel() == 0: return ComplexArray(ones((), z.re.dtype), zeros((), z.re.dtype))
  return _poly_complex(ComplexArray(z.re.reshape(-1), z.im.reshape(-1)))

_complex.COMPLEX.update({
  "sort_complex": sort_complex,   # (a complex argument: the same function)
  "copy": lambda a, order=None: _complex.as_complex(a),
  "rollaxis": _c_rollaxis,
  "diff": _c_diff, "unstack": _c_unstack,
  "poly": _c_poly})

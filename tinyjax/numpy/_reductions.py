"""tinyjax.numpy: reductions (axis None, int or tuple, keepdims, where=) and cumulative ones, with JAX's dtypes."""
from __future__ import annotations
import builtins, math
from typing import Any
from tinyjax import _tg
from tinyjax._tg import Tensor, DType, dtypes
from tinyjax.core import fill_like, composite
from tinyjax.numpy._core import asarray, check_arraylike, as_inexact, promote_inexact, to_dtype, dtype_of, default_int, canonical_dtype, \
  canonicalize_axis, canonicalize_axes, to_inexact_dtype
from tinyjax.lax import sorting

__all__ = ["sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "ptp", "argmax", "argmin", "all", "any",
           "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nansum", "nanprod", "nanmean", "nanvar", "nanstd",
           "nanmax", "nanmin", "nancumsum", "nancumprod", "median", "quantile", "percentile", "average", "count_nonzero"]


# ---- shared machinery -----------------------------------------------------------------------------------------------

def _no_out(name: str, out: Any) -> None:
  if out is not None: raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")

def _where_mask(name: str, where: Any) -> Tensor | None:
  if where is None: return None
  w = asarray(where)
  if w.dtype != dtypes.bool:
    raise ValueError(f"jnp.{name}: where must be None or a boolean array; got where.dtype=dtype('{_tg.dtype_name(w.dtype)}').")
  return w

def _promote_int(dt: DType) -> DType:
  """JAX's promote_integers: bool and narrow integers sum in the default (unsigned) int."""
  if dt == dtypes.bool: return default_int()
  if dtypes.is_unsigned(dt): return builtins.max(dt, canonical_dtype(dtypes.uint64), key=lambda d: d.itemsize)
  if dtypes.is_int(dt): return builtins.max(dt, default_int(), key=lambda d: d.itemsize)
  return dt

def _upcast_f16(dt: DType) -> DType: return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt

def _keep(r: Tensor, shape: tuple, axes: tuple[int, ...], keepdims: bool) -> Tensor:
  return r.reshape(tuple(1 if i in axes else s for i, s in enumerate(shape))) if keepdims else r

def _identity(op: str, dt: DType) -> Any:
  if op == "sum": return False if dt == dtypes.bool else 0
  if op == "prod": return True if dt == dtypes.bool else 1
  if dt == dtypes.bool: return op == "min"
  if dtypes.is_float(dt): return -math.inf if op == "max" else math.inf
  bits = 8 * dt.itemsize   # the integer's range: its smallest value is max's identity, its largest min's
  lo, hi = (0, 2 ** bits - 1) if dtypes.is_unsigned(dt) else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
  return lo if op == "max" else hi

def _reduce(name: str, op: str, a: Any, axis: Any, dtype: Any, out: Any, keepdims: bool, initial: Any, where: Any,
            promote_integers: bool = False) -> Tensor:
  """What every jnp reduction does (JAX's `_reduction`): dtype, where-mask, initial, keepdims."""
  _no_out(name, out)
  check_arraylike(name, a)
  x, mask = asarray(a), _where_mask(name, where)
  axes = canonicalize_axes(axis, x.ndim)
  has_identity = op in ("sum", "prod")
  if not has_identity and mask is not None and initial is None:
    raise ValueError(f"reduction operation {name} does not have an identity, so to use a where mask one has to specify 'initial'")
  if not has_identity and initial is None and builtins.any(x.shape[i] == 0 for i in axes):
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
  out_dt = to_dtype(dtype) or (_promote_int(x.dtype) if promote_integers else x.dtype)
  comp = _upcast_f16(out_dt) if dtype is None and has_identity else out_dt
  shape = x.shape
  if x.dtype != comp: x = x.cast(comp)
  if mask is not None: x = mask.where(x, _identity(op, comp))
  if axes:
    if comp == dtypes.bool and op in ("sum", "prod"): op = "max" if op == "sum" else "min"   # JAX: bitwise or/and
    # tinygrad's reduce in the dtype asked for (its own accumulator choice is not JAX's)
    r = getattr(x, op)(axes) if op in ("max", "min") else getattr(x, op)(axes, dtype=comp)
    # XLA's max/min propagate NaN; tinygrad's reduce keeps or drops it depending on where it sits (one kernel still)
    if op in ("max", "min") and dtypes.is_float(comp): r = x.isnan().any(axes).where(math.nan, r)
  else: r = x
  if initial is not None:
    init = asarray(initial, comp)
    if init.shape != (): raise ValueError(f"initial value must be a scalar. Got array of shape {init.shape}")
    r = {"sum": r.__add__, "prod": r.__mul__, "max": r.maximum, "min": r.minimum}[op](init) if comp != dtypes.bool else \
      {"sum": r.__or__, "prod": r.__and__, "max": r.__or__, "min": r.__and__}[op](init)
  r = _keep(r, shape, axes, keepdims)
  return r if r.dtype == out_dt else r.cast(out_dt)

def _count(x: Tensor, axes: tuple[int, ...], keepdims: bool, mask: Tensor | None, dt: DType) -> Tensor | int:
  """The number of elements each reduction sees: an int, or a Tensor counting the where-mask."""
  if mask is None: return math.prod(int(x.shape[i]) for i in axes)
  return _keep(mask.expand(x.shape).cast(dt).sum(axes, dtype=dt) if axes else mask.expand(x.shape).cast(dt), x.shape, axes, keepdims)

# ---- reductions -----------------------------------------------------------------------------------------------------

def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True) -> Tensor:  # noqa: A001
  """Sum of array elements (jnp.sum): bool and narrow ints sum in the default int, float16 accumulates in float32."""
  return _reduce("sum", "sum", a, axis, dtype, out, keepdims, initial, where, promote_integers)

def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True) -> Tensor:
  """Product of array elements (jnp.prod)."""
  return _reduce("prod", "prod", a, axis, dtype, out, keepdims, initial, where, promote_integers)

def max(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
  """Maximum of array elements (jnp.max); with `where=` JAX requires `initial=`. Ties share the gradient equally, as in JAX."""
  return _reduce("max", "max", a, axis, None, out, keepdims, initial, where)

def min(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:  # noqa: A001
  """Minimum of array elements (jnp.min); with `where=` JAX requires `initial=`."""
  return _reduce("min", "min", a, axis, None, out, keepdims, initial, where)

amax, amin = max, min

def all(a, axis=None, out=None, keepdims=False, *, where=None) -> Tensor:  # noqa: A001
  """Whether all elements are true (jnp.all)."""
  check_arraylike("all", a)
  return _reduce("all", "prod", asarray(a).cast(dtypes.bool), axis, None, out, keepdims, None, where)

def any(a, axis=None, out=None, keepdims=False, *, where=None) -> Tensor:  # noqa: A001
  """Whether any element is true (jnp.any)."""
  check_arraylike("any", a)
  return _reduce("any", "sum", asarray(a).cast(dtypes.bool), axis, None, out, keepdims, None, where)

@composite
def ptp(a, axis=None, out=None, keepdims=False) -> Tensor:
  """Peak-to-peak range, max - min (jnp.ptp)."""
  _no_out("ptp", out)
  return max(a, axis, keepdims=keepdims) - min(a, axis, keepdims=keepdims)

def count_nonzero(a, axis=None, keepdims=False) -> Tensor:
  """The number of nonzero elements (jnp.count_nonzero), in the default int dtype."""
  return sum(asarray(a) != 0, axis, dtype=default_int(), keepdims=keepdims)

def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None) -> Tensor:
  """Arithmetic mean (jnp.mean): integers and bools average in the default float."""
  _no_out("mean", out)
  check_arraylike("mean", a)
  x, mask = asarray(a), _where_mask("mean", where)
  axes = canonicalize_axes(axis, x.ndim, IndexError)   # JAX raises IndexError here (it looks the axis up in the shape first)
  out_dt = to_dtype(dtype) or to_inexact_dtype(x.dtype)
  comp = _upcast_f16(out_dt) if dtype is None else out_dt
  n = _count(x, axes, keepdims, mask, comp)
  r = sum(x, axes, dtype=comp, keepdims=keepdims, where=mask) / n
  return r if r.dtype == out_dt else r.cast(out_dt)

@composite   # (eagerly built once per signature: ~10-30 ops)
def _var(name: str, a, axis, dtype, out, ddof, keepdims, where, mean_, correction, nan: bool) -> Tensor:
  """var (or nanvar: `nan` drops NaN elements) with JAX's dtypes: integers in the default float."""
  _no_out(name, out)
  if correction is None: correction = ddof
  elif ddof != 0: raise ValueError("ddof and correction can't be provided simultaneously.")
  check_arraylike(name, a)
  x, mask = asarray(a), _where_mask(name, where)
  axes = canonicalize_axes(axis, x.ndim, IndexError)
  out_dt = to_dtype(dtype) or to_inexact_dtype(x.dtype)
  comp = _upcast_f16(out_dt)
  x = x.cast(comp) if x.dtype != comp else x
  if nan:
    m = x.isnan().logical_not() if mask is None else x.isnan().logical_not() & mask
    avg = nanmean(x, axes, keepdims=True, where=mask) if mean_ is None else asarray(mean_, comp)
    centered = x.isnan().where(0, x - avg).square()   # where after the subtraction: the NaN elements get no gradient
    n = sum(m, axes, keepdims=keepdims) - correction
    r = sum(centered, axes, keepdims=keepdims, where=mask)
    bad = n <= 0
    r = bad.where(math.nan, r) / bad.where(1, n).cast(comp)
  else:
    avg = mean(x, axes, keepdims=True, where=mask) if mean_ is None else asarray(mean_, comp)
    n = _count(x, axes, keepdims, mask, comp)
    n = n - correction
    r = sum((x - avg).square(), axes, dtype=comp, keepdims=keepdims, where=mask)
    if isinstance(n, Tensor): r = (n > 0).where(r / n, math.nan)
    else: r = r / n if n > 0 else fill_like(r, math.nan)
  return r if r.dtype == out_dt else r.cast(out_dt)

def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None) -> Tensor:
  """Variance (jnp.var), ddof=0 by default as in JAX (tinygrad's Tensor.var has correction=1)."""
  return _var("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction, nan=False)

def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None) -> Tensor:
  """Standard deviation (jnp.std), ddof=0 by default as in JAX."""
  if dtype is not None and not dtypes.is_float(dt := to_dtype(dtype)):
    raise ValueError(f"dtype argument to jnp.std must be inexact; got {dt}")
  return _var("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction, nan=False).sqrt()

def _first(x: Tensor, name: str, ax: int, keepdims: bool) -> Tensor:
  """argmax/argmin along `ax` as XLA's: the first extremum, or the first NaN if there is one (tinygrad's compare with
  its max, which a NaN makes arbitrary, so it could return the axis length)."""
  if not dtypes.is_float(x.dtype): return getattr(x, name)(ax, keepdim=keepdims)
  nan, n = x.isnan(), int(x.shape[ax])
  hit = nan.any(ax, keepdim=True).where(nan, x == getattr(x, name[3:])(ax, keepdim=True))
  idx = hit.where(Tensor.arange(n, 0, -1, dtype=dtypes.int32).reshape(n, *[1] * (x.ndim - ax - 1)), 0)
  return n - idx.max(ax, keepdim=keepdims)

@composite   # (eagerly built once per signature: ~10-30 ops)
def _arg(name: str, a, axis, out, keepdims) -> Tensor:
  _no_out(name, out)
  check_arraylike(name, a)
  x = asarray(a)
  if axis is None:
    if x.numel() == 0: raise ValueError(f"attempt to get {name} of an empty sequence")
    r = _first(x.flatten(), name, 0, False)
    return (r.reshape((1,) * x.ndim) if keepdims else r).cast(default_int())
  ax = canonicalize_axis(axis, x.ndim, IndexError)   # JAX raises IndexError for an out-of-range axis here
  if x.shape[ax] == 0: raise ValueError(f"attempt to get {name} of an empty sequence")
  return _first(x, name, ax, keepdims).cast(default_int())

def argmax(a, axis=None, out=None, keepdims=None) -> Tensor:
  """Index of the maximum (jnp.argmax), the first one among ties."""
  return _arg("argmax", a, axis, out, bool(keepdims))

def argmin(a, axis=None, out=None, keepdims=None) -> Tensor:
  """Index of the minimum (jnp.argmin), the first one among ties."""
  return _arg("argmin", a, axis, out, bool(keepdims))

# ---- NaN-ignoring reductions ----------------------------------------------------------------------------------------

def _nan_reduce(name: str, fn, a, axis, keepdims, where, fill: float, nan_if_all_nan: bool, **kw) -> Tensor:
  """fn over the non-NaN elements (JAX's _nan_reduction): NaNs are replaced by `fill` (fn's identity)."""
  check_arraylike(name, a)
  x = asarray(a)
  if not dtypes.is_float(x.dtype): return fn(x, axis=axis, keepdims=keepdims, where=where, **kw)
  isnan = x.isnan()
  r = fn(isnan.where(fill, x), axis=axis, keepdims=keepdims, where=where, **kw)
  return isnan.all(canonicalize_axes(axis, x.ndim), keepdim=keepdims).where(math.nan, r) if nan_if_all_nan else r

def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:
  """Sum ignoring NaNs (jnp.nansum)."""
  return _nan_reduce("nansum", sum, a, axis, keepdims, where, 0, False, dtype=dtype, out=out, initial=initial)

def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:
  """Product ignoring NaNs (jnp.nanprod)."""
  return _nan_reduce("nanprod", prod, a, axis, keepdims, where, 1, False, dtype=dtype, out=out, initial=initial)

def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:
  """Maximum ignoring NaNs (jnp.nanmax): NaN where every element is NaN."""
  return _nan_reduce("nanmax", max, a, axis, keepdims, where, -math.inf, initial is None, out=out, initial=initial)

def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None) -> Tensor:
  """Minimum ignoring NaNs (jnp.nanmin): NaN where every element is NaN."""
  return _nan_reduce("nanmin", min, a, axis, keepdims, where, math.inf, initial is None, out=out, initial=initial)

@composite
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None) -> Tensor:
  """Mean ignoring NaNs (jnp.nanmean)."""
  _no_out("nanmean", out)
  x = asarray(a)
  if not dtypes.is_float(x.dtype): return mean(x, axis, dtype, keepdims=keepdims, where=where)
  dt = to_dtype(dtype) or x.dtype
  n = sum(x.isnan().logical_not(), axis, dtype=dt, keepdims=keepdims, where=where)
  return nansum(x, axis, dtype=dt, keepdims=keepdims, where=where) / n

def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None) -> Tensor:
  """Variance ignoring NaNs (jnp.nanvar)."""
  return _var("nanvar", a, axis, dtype, out, ddof, keepdims, where, mean, None, nan=True)

def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None) -> Tensor:
  """Standard deviation ignoring NaNs (jnp.nanstd)."""
  return nanvar(a, axis, dtype, out, ddof, keepdims, where, mean).sqrt()

# ---- cumulative -----------------------------------------------------------------------------------------------------

@composite   # (eagerly built once per signature: ~10-30 ops)
def _cumulative(name: str, op: str, a, axis, dtype, out, promote: bool = False, nan_fill: float | None = None) -> Tensor:
  """JAX's _cumulative_reduction: axis=None flattens; bools (and with `promote` narrow ints) accumulate in the default int."""
  _no_out(name, out)
  check_arraylike(name, a)
  x = asarray(a)
  if axis is None or x.ndim == 0: x, axis = x.flatten(), 0
  ax = canonicalize_axis(axis, x.ndim)
  if nan_fill is not None and dtypes.is_float(x.dtype): x = x.isnan().where(nan_fill, x)
  if dtype is None: out_dt = comp = _promote_int(x.dtype) if promote or x.dtype == dtypes.bool else x.dtype
  elif (out_dt := dtype_of(dtype)) == dtypes.bool:
    x, comp = (x != 0) if x.dtype != dtypes.bool else x, default_int()
  else: comp = out_dt
  if x.dtype != comp: x = x.cast(comp)
  r = x.cumsum(ax) if op == "sum" else x.cumprod(ax)
  return r if r.dtype == out_dt else r.cast(out_dt)

def cumsum(a, axis=None, dtype=None, out=None) -> Tensor:
  """Cumulative sum (jnp.cumsum); axis=None flattens (tinygrad's Tensor.cumsum defaults to axis 0)."""
  return _cumulative("cumsum", "sum", a, axis, dtype, out)

def cumprod(a, axis=None, dtype=None, out=None) -> Tensor:
  """Cumulative product (jnp.cumprod); axis=None flattens."""
  return _cumulative("cumprod", "prod", a, axis, dtype, out)

def nancumsum(a, axis=None, dtype=None, out=None) -> Tensor:
  """Cumulative sum treating NaNs as 0 (jnp.nancumsum)."""
  return _cumulative("nancumsum", "sum", a, axis, dtype, out, nan_fill=0)

def nancumprod(a, axis=None, dtype=None, out=None) -> Tensor:
  """Cumulative product treating NaNs as 1 (jnp.nancumprod)."""
  return _cumulative("nancumprod", "prod", a, axis, dtype, out, nan_fill=1)

def _cumulative_api(name: str, op: str, x, axis, dtype, include_initial: bool) -> Tensor:
  x = asarray(x)
  if x.ndim == 0:
    raise ValueError(f"The input must be non-scalar to take a cumulative {'sum' if op == 'sum' else 'product'}, however a "
                     "scalar value or scalar array was given.")
  if axis is None:
    if x.ndim > 1:
      raise ValueError(f"The input array has rank {x.ndim}, however axis was not set to an explicit value. The axis argument "
                       "is only optional for one-dimensional arrays.")
    axis = 0
  r = _cumulative(name, op, x, canonicalize_axis(axis, x.ndim), dtype, None, promote=True)
  if not include_initial: return r
  ax = canonicalize_axis(axis, x.ndim)
  return r.pad(tuple((1, 0) if i == ax else (0, 0) for i in range(r.ndim)), value=0 if op == "sum" else 1)

def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) -> Tensor:
  """Cumulative sum (jnp.cumulative_sum, the array API's): narrow ints accumulate in the default int."""
  return _cumulative_api("cumulative_sum", "sum", x, axis, dtype, include_initial)

def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False) -> Tensor:
  """Cumulative product (jnp.cumulative_prod)."""
  return _cumulative_api("cumulative_prod", "prod", x, axis, dtype, include_initial)

# ---- order statistics -----------------------------------------------------------------------------------------------

_RANK_MAX = 1024   # up to this many elements a slice is ranked by comparing all pairs (one kernel); longer ones are sorted

def _order_stat(x: Tensor, k: Tensor) -> Tensor:
  """The k-th smallest element of each slice x[..., :] (k: integer Tensor broadcasting against x[..., 0]) in JAX's
  sort order (`tinyjax.lax.sorting`). Its gradient goes to that one element, as through JAX's sort."""
  n = x.shape[-1]
  # short slices: each element's position in the sort, and the element at position k selected (no permutation)
  if n <= _RANK_MAX: vals, pos = x, sorting.rank(sorting.order_key(x))
  else: vals, pos = sorting.sort([x], -1)[0], Tensor.arange(n, dtype=dtypes.int32).to(x.device)
  return (pos == k.unsqueeze(-1)).where(vals, 0).sum(-1)

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")

def quantile_of(name: str, a, q, axis, method: str, keepdims: bool, weights, nan: bool) -> Tensor:
  """quantile, or with `nan` nanquantile (the quantiles of the non-NaN elements of each slice)."""
  if method not in (*_METHODS, "inverted_cdf"):
    raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or 'inverted_cdf'")
  if weights is not None and method != "inverted_cdf":
    raise NotImplementedError(f"{method} doesn't support weights. Only method 'inverted_cdf' supports weights.")
  if method == "inverted_cdf": return _inverted_cdf(a, q, axis, keepdims, weights, nan)
  return _quantile(a, q, axis, method, keepdims, nan)

def _inverted_cdf(a, q, axis, keepdims: bool, weights, nan: bool) -> Tensor:
  """JAX's method 'inverted_cdf': the first element (in sorted order) whose cumulative weight reaches q times the
  total; NaN where a weight is negative or NaN, or where the slice holds a NaN (nanquantile: holds only NaNs)."""
  if weights is None: x, w = as_inexact(a), None
  else: x, w = promote_inexact(a, weights)
  if w is not None and w.shape != x.shape:
    if axis is None: raise ValueError("Weights shape must match 'a' shape when axis is None.")
    given = canonicalize_axes(axis, x.ndim)
    if tuple(w.shape) != tuple(x.shape[i] for i in given):
      raise ValueError(f"Weights shape {tuple(w.shape)} must match reduction axes {tuple(x.shape[i] for i in given)}")
    # (JAX's broadcast_in_dim: w's axes are the given ones, in their order)
    order = sorted(range(len(given)), key=lambda i: given[i])
    w = w.permute(*order).reshape(tuple(x.shape[i] if i in given else 1 for i in range(x.ndim))).expand(x.shape)
  if w is None: w = x.ones_like()
  qt = asarray(q)
  if qt.ndim > 1: raise ValueError(f"q must be have rank <= 1, got shape {qt.shape}")
  axes = tuple(sorted(canonicalize_axes(axis, x.ndim, repeated="repeated axis")))
  keep = [i for i in range(x.ndim) if i not in axes]
  def last(t: Tensor) -> Tensor: return t.permute(*keep, *axes).reshape(*[x.shape[i] for i in keep], -1) if axes else t.unsqueeze(-1)
  xs, ws = sorting.sort([last(x), last(w)], -1)   # (by x: JAX's sort_key_val, NaNs last)
  n = int(xs.shape[-1])
  bad, nan_data = (ws < 0) | ws.isnan(), xs.isnan()
  cum = (bad | nan_data).where(0, ws).cumsum(-1)
  target = qt.cast(x.dtype).reshape(qt.shape + (1,) * (len(keep) + 1)) * cum[..., -1:]
  valid = nan_data.logical_not().sum(-1, dtype=default_int()) if nan else None
  idx = (cum < target).cast(default_int()).sum(-1)   # (shape q + kept)
  limit: Tensor | int = valid - 1 if valid is not None else n - 1
  idx = idx.minimum(limit).maximum(0)
  xb = xs.reshape((1,) * qt.ndim + tuple(xs.shape)).expand(qt.shape + tuple(xs.shape))
  r = xb.gather(-1, idx.unsqueeze(-1).cast(dtypes.int32)).squeeze(-1)
  force = bad.any(-1) | ((valid == 0) if valid is not None else nan_data.any(-1))
  r = force.where(math.nan, r)
  if keepdims: r = r.reshape(qt.shape + tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
  return r.cast(x.dtype) if r.dtype != x.dtype else r

@composite
def _quantile(a, q, axis, method: str, keepdims: bool, nan: bool) -> Tensor:
  x = as_inexact(a)
  qt = asarray(q)
  if qt.ndim > 1: raise ValueError(f"q must be have rank <= 1, got shape {qt.shape}")
  axes = tuple(sorted(canonicalize_axes(axis, x.ndim, repeated="repeated axis")))
  keep = [i for i in range(x.ndim) if i not in axes]
  xs = x.permute(*keep, *axes).reshape(*[x.shape[i] for i in keep], -1) if axes else x.unsqueeze(-1)
  n = xs.shape[-1]
  qf = qt.cast(x.dtype).reshape(qt.shape + (1,) * len(keep))
  # nanquantile: the positions among the slice's non-NaN elements, which sort first (JAX's order puts NaNs last); its
  # NaNs are constants, as in JAX (an all-NaN slice's NaN result has no derivative)
  if nan: xs = xs.isnan().where(math.nan, xs)
  last = xs.isnan().logical_not().sum(-1, dtype=x.dtype) - 1 if nan else int(n) - 1
  pos = qf * last
  low, high = pos.floor(), pos.ceil()
  low, high = (low.minimum(last).maximum(0), high.minimum(last).maximum(0)) if nan else (low.clip(0, n - 1), high.clip(0, n - 1))
  hw = pos - pos.floor()
  lo, hi = _order_stat(xs, low.cast(dtypes.int32)), _order_stat(xs, high.cast(dtypes.int32))
  if method == "linear": r = lo * (1 - hw) + hi * hw
  elif method == "lower": r = lo
  elif method == "higher": r = hi
  elif method == "nearest": r = (hw <= 0.5).where(lo, hi)
  else: r = (lo + hi) * 0.5
  if not nan: r = xs.isnan().any(-1).where(math.nan, r)   # JAX sorts NaNs last and returns NaN for a slice holding one
  if keepdims: r = r.reshape(qt.shape + tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
  return r.cast(x.dtype) if r.dtype != x.dtype else r

def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None) -> Tensor:
  """q-th quantiles (jnp.quantile; q a scalar or 1-D; `weights` with method 'inverted_cdf' only, as JAX). A slice
  holding a NaN gives NaN."""
  if overwrite_input or out is not None:
    raise ValueError("jax.numpy.quantile does not support overwrite_input=True or out != None")
  return quantile_of("quantile", a, q, axis, method, keepdims, weights, nan=False)

@composite
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None) -> Tensor:
  """q-th percentiles (jnp.percentile: quantile of q / 100)."""
  return quantile(a, as_inexact(q) / 100, axis, out, overwrite_input, method, keepdims, weights=weights)

@composite
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False) -> Tensor:
  """Median (jnp.median): the midpoint of the two middle elements."""
  return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)

def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """Weighted average (jnp.average); `returned=True` also gives the sum of the weights."""
  x = asarray(a)
  axes = canonicalize_axes(axis, x.ndim)
  if weights is None:
    x = as_inexact(x)
    avg = mean(x, axis, keepdims=keepdims)
    wsum = fill_like(avg, math.prod(int(x.shape[i]) for i in axes))
  else:
    x, w = promote_inexact(x, weights)
    if x.shape != w.shape:
      if axis is None: raise ValueError("Axis must be specified when shapes of a and weights differ.")
      ax_given = tuple(canonicalize_axis(i, x.ndim) for i in (axis if isinstance(axis, (tuple, list)) else (axis,)))
      if w.shape != tuple(x.shape[i] for i in ax_given):
        raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
      order = sorted(range(len(ax_given)), key=lambda i: ax_given[i])
      w = w.permute(*order).reshape(tuple(s if i in axes else 1 for i, s in enumerate(x.shape)))
    wsum = sum(w, axis, keepdims=keepdims)
    avg = sum(x * w, axis, keepdims=keepdims) / wsum
  if returned: return avg, (wsum.expand(avg.shape) if wsum.shape != avg.shape else wsum)
  return avg

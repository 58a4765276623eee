"""tinyjax.numpy: shape manipulation, joining and splitting, pad, flip, roll, tile, repeat, sort, argsort, triu/tril,
and the data-dependent functions (unique, nonzero, ...), which need concrete inputs unless given JAX's `size=`."""
from __future__ import annotations
import math
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, dtypes, np_dtype, static_shape as _S
from tinyjax.core import traced_by, shape_ints, fill_like, composite
from tinyjax.errors import ConcretizationTypeError
from tinyjax.dtypes import short_type
from tinyjax.lax import sorting
from tinyjax.numpy._core import asarray, check_arraylike, promote, result_type, default_int, default_float, to_dtype, canonicalize_axes

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "moveaxis", "swapaxes", "expand_dims", "squeeze",
           "atleast_1d", "atleast_2d", "atleast_3d", "concatenate", "concat", "stack", "vstack", "hstack", "dstack", "column_stack",
           "split", "array_split", "hsplit", "vsplit", "dsplit", "tile", "repeat", "broadcast_to", "broadcast_arrays",
           "broadcast_shapes", "pad", "flip", "fliplr", "flipud", "rot90", "roll", "sort", "argsort", "lexsort", "triu", "tril",
           "block", "shape", "ndim", "size", "resize", "unique", "nonzero", "argwhere", "flatnonzero", "searchsorted", "digitize", "bincount",
           "unravel_index", "ravel_multi_index", "delete", "insert", "append", "select", "piecewise", "extract", "compress"]

# ---- helpers ----------------------------------------------------------------------------------------------------------

def _axis(axis: int, ndim: int) -> int:
  """axis in [0, ndim), JAX's error otherwise."""
  if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim if ndim else 0

def _concrete(x: Any, what: str) -> np.ndarray:
  """x's value, which the output's shape depends on: numpy data, or a Tensor not traced by a transform."""
  if isinstance(x, Tensor):
    if traced_by(x) is not None:
      raise ConcretizationTypeError(traced_by(x) or "jit", "numpy", x) from \
        ValueError(f"{what}: the output shape depends on this value, so it must be concrete (JAX's size= argument, where the "
                   "function has one, makes it traceable)")
    return x.numpy()
  return np.asarray(x)

def _take_static(x: Tensor, idx: Sequence[int] | np.ndarray, axis: int) -> Tensor:
  """x's entries idx (known ints in range) along axis. Runs of consecutive, reversed or repeated indices are slices,
  flips and expands (movement ops that fuse); many scattered ones gather with a one-hot compare."""
  idx = [int(i) for i in np.asarray(idx).reshape(-1)]
  runs: list[tuple[int, int, int]] = []   # (first, step, length)
  i = 0
  while i < len(idx):
    step = idx[i+1] - idx[i] if i + 1 < len(idx) and abs(idx[i+1] - idx[i]) <= 1 else 1
    j = i + 1
    while j < len(idx) and idx[j] - idx[j-1] == step: j += 1
    runs.append((idx[i], step, j - i))
    i = j
  def view(lo: int, hi: int) -> Tensor: return x.shrink(tuple((lo, hi) if d == axis else None for d in range(x.ndim)))
  if not runs: return view(0, 0)
  if len(runs) > 8:
    return x[(slice(None),) * axis + (Tensor(np.asarray(idx, np.int32), device=x.device),)]
  pieces = []
  for first, step, n in runs:
    if step == 1: pieces.append(view(first, first + n))
    elif step == -1: pieces.append(view(first - n + 1, first + 1).flip(axis))
    else: pieces.append(view(first, first + 1).expand(tuple(n if d == axis else s for d, s in enumerate(_S(x)))))
  return pieces[0].cat(*pieces[1:], dim=axis) if len(pieces) > 1 else pieces[0]

def _index_dtype(n: int) -> Any:
  """JAX's dtype for indices into a dimension of size n: int32 unless n needs 64 bits."""
  return dtypes.int64 if n > 2**31 - 1 else dtypes.int32

# ---- shapes -------------------------------------------------------------------------------------------------------------

def shape(a: Any) -> tuple[int, ...]: return _S(a) if isinstance(a, Tensor) else np.shape(a)
def ndim(a: Any) -> int: return len(shape(a))
def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
  s = shape(a)
  return math.prod(s) if axis is None else math.prod(s[i] for i in canonicalize_axes(axis, len(s)))

def reshape(a: Any, shape: Sequence[int] | int | None = None, order: str = "C", *, copy: bool | None = None,
            newshape: Any = None) -> Tensor:
  """jnp.reshape (order='C' only)."""
  if order != "C": raise NotImplementedError(f"reshape(order={order!r}): only order='C'")
  if shape is None: shape = newshape
  check_arraylike("reshape", a)
  return asarray(a).reshape(shape_ints(shape))

def ravel(a: Any, order: str = "C") -> Tensor:
  """jnp.ravel (order='C' only)."""
  if order != "C": raise NotImplementedError(f"ravel(order={order!r}): only order='C'")
  return asarray(a).flatten()

def transpose(a: Any, axes: Sequence[int] | None = None) -> Tensor:
  check_arraylike("transpose", a)
  t = asarray(a)
  perm = tuple(range(t.ndim))[::-1] if axes is None else canonicalize_axes(axes, t.ndim)
  if len(perm) != t.ndim: raise ValueError(f"axes {axes} don't match array of dimension {t.ndim}")
  return t.permute(perm) if perm else t

def permute_dims(a: Any, /, axes: Sequence[int]) -> Tensor: return transpose(a, axes)

def matrix_transpose(x: Any, /) -> Tensor:
  t = asarray(x)
  if t.ndim < 2: raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={t.ndim}")
  return t.transpose(-1, -2)

def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
  t = asarray(a)
  src, dst = canonicalize_axes(source, t.ndim), canonicalize_axes(destination, t.ndim)
  if len(src) != len(dst): raise ValueError("Inconsistent number of elements: {} vs {}".format(len(src), len(dst)))
  order = [i for i in range(t.ndim) if i not in src]
  for d, s in sorted(zip(dst, src, strict=False)): order.insert(d, s)
  return t.permute(tuple(order)) if t.ndim else t

def swapaxes(a: Any, axis1: int, axis2: int) -> Tensor:
  t = asarray(a)
  perm = list(range(t.ndim))
  i, j = _axis(axis1, t.ndim), _axis(axis2, t.ndim)
  perm[i], perm[j] = perm[j], perm[i]
  return t.permute(tuple(perm))

def expand_dims(a: Any, axis: int | Sequence[int]) -> Tensor:
  t = asarray(a)
  n = t.ndim + (1 if isinstance(axis, (int, np.integer)) else len(axis))
  new = set(canonicalize_axes(axis, n))
  it = iter(_S(t))
  return t.reshape(tuple(1 if d in new else next(it) for d in range(n)))

def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Tensor:
  t = asarray(a)
  axes = tuple(d for d, s in enumerate(_S(t)) if s == 1) if axis is None else canonicalize_axes(axis, t.ndim)
  if any(_S(t)[d] != 1 for d in axes):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one, got shape={_S(t)} "
                     f"and dimensions={axes}")
  return t.reshape(tuple(s for d, s in enumerate(_S(t)) if d not in axes))

def _atleast(arys: tuple, n: int, fix: Callable[[Tensor], Tensor]) -> Tensor | list[Tensor]:
  out = [fix(t) if (t := asarray(a)).ndim < n else t for a in arys]
  return out[0] if len(out) == 1 else out

def atleast_1d(*arys: Any) -> Tensor | list[Tensor]: return _atleast(arys, 1, lambda t: t.reshape(1))
def _2d(t: Tensor) -> Tensor: return t.reshape((1,) * (2 - t.ndim) + _S(t)) if t.ndim < 2 else t   # (one array's atleast_2d)
def atleast_2d(*arys: Any) -> Tensor | list[Tensor]: return _atleast(arys, 2, _2d)
def atleast_3d(*arys: Any) -> Tensor | list[Tensor]:
  return _atleast(arys, 3, lambda t: t.reshape((1, 1, 1) if t.ndim == 0 else (1, _S(t)[0], 1) if t.ndim == 1 else (*_S(t), 1)))

def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
  try: return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
  except ValueError: raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}") from None

def broadcast_to(array: Any, shape: int | Sequence[int]) -> Tensor:
  t, shp = asarray(array), (shape,) if isinstance(shape, int) else tuple(shape)
  if len(shp) < t.ndim or any(s != 1 and s != d for s, d in zip(_S(t)[::-1], shp[::-1], strict=False)):
    raise ValueError(f"Incompatible types for broadcasting: input type={short_type(t.dtype, _S(t))} and requested type="
                     f"{short_type(t.dtype, shp)}")
  return t.reshape((1,) * (len(shp) - t.ndim) + _S(t)).expand(shp)

def broadcast_arrays(*args: Any) -> list[Tensor]:
  ts = [asarray(a) for a in args]
  shp = broadcast_shapes(*(_S(t) for t in ts))
  return [broadcast_to(t, shp) for t in ts]

# ---- joining and splitting ----------------------------------------------------------------------------------------------

def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Tensor:
  """jnp.concatenate (axis=None ravels the arrays first)."""
  if isinstance(arrays, Tensor): arrays = list(arrays)
  if not len(arrays): raise ValueError("Need at least one array to concatenate.")
  ts = promote(*arrays) if dtype is None else [asarray(a, dtype) for a in arrays]
  if axis is None: ts, axis = [t.flatten() for t in ts], 0
  if ts[0].ndim == 0: raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  if any(t.ndim != ts[0].ndim for t in ts):
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got {', '.join(str(_S(t)) for t in ts)}.")
  ax = _axis(axis, ts[0].ndim)
  return ts[0].cat(*ts[1:], dim=ax) if len(ts) > 1 else ts[0]

def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Tensor: return concatenate(arrays, axis)

def block_of(xs: Any, as_array: Callable, concat: Callable) -> tuple[Any, int]:
  """jnp.block's recursion (JAX's _block): nested lists joined along the last axis at the innermost level, the one before
  it a level up..., the blocks first given as many axes as the deepest level (leading 1s). Returns the array and its
  depth; `as_array` and `concat` make it work for complex blocks too (numpy._complex)."""
  if isinstance(xs, tuple): raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
  if not isinstance(xs, list): return as_array(xs), 1
  if not xs: raise ValueError("jax.numpy.block does not allow empty list arguments")
  parts = [block_of(x, as_array, concat) for x in xs]
  depth = parts[0][1]
  if any(d != depth for _, d in parts): raise ValueError("Mismatched list depths in jax.numpy.block")
  rank = max(depth, *(a.ndim for a, _ in parts))
  return concat([a.reshape((1,) * (rank - a.ndim) + tuple(a.shape)) for a, _ in parts], -depth), depth + 1

def block(arrays: Any) -> Tensor: return block_of(arrays, asarray, concatenate)[0]

def stack(arrays: Sequence[Any], axis: int = 0, out: None = None, dtype: Any = None) -> Tensor:
  if isinstance(arrays, Tensor): arrays = list(arrays)
  if not len(arrays): raise ValueError("Need at least one array to stack.")
  ts = promote(*arrays) if dtype is None else [asarray(a, dtype) for a in arrays]
  if any(_S(t) != _S(ts[0]) for t in ts): raise ValueError("All input arrays must have the same shape.")
  ax = _axis(axis, ts[0].ndim + 1)
  return concatenate([expand_dims(t, ax) for t in ts], axis=ax)

def _seq(tup: Any) -> list: return list(tup)

def vstack(tup: Sequence[Any], dtype: Any = None) -> Tensor:
  return concatenate([atleast_2d(t) for t in promote(*_seq(tup))], 0, dtype)
def hstack(tup: Sequence[Any], dtype: Any = None) -> Tensor:
  ts = [atleast_1d(t) for t in promote(*_seq(tup))]
  return concatenate(ts, 0 if ts[0].ndim == 1 else 1, dtype)  # type: ignore[union-attr]
def dstack(tup: Sequence[Any], dtype: Any = None) -> Tensor:
  return concatenate([atleast_3d(t) for t in promote(*_seq(tup))], 2, dtype)
def column_stack(tup: Sequence[Any]) -> Tensor:
  return concatenate([t.reshape(-1, 1) if t.ndim < 2 else t for t in promote(*_seq(tup))], 1)

def _split(name: str, ary: Any, sections: Any, axis: int, even: bool) -> list[Tensor]:
  t = asarray(ary)
  ax = _axis(axis, t.ndim)
  n = _S(t)[ax]
  if isinstance(sections, (int, np.integer)) or (isinstance(sections, (np.ndarray, Tensor)) and sections.ndim == 0):
    k = int(sections)  # type: ignore[arg-type]
    if even and n % k: raise ValueError(f"array split does not result in an equal division: {n} into {k}")
    sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    bounds = np.cumsum([0] + sizes)
  else:
    cuts = [min(max(int(c) + (n if c < 0 else 0), 0), n) for c in _concrete(sections, name).reshape(-1)]
    bounds = np.array([0] + cuts + [n])
  return [t.shrink(tuple((int(lo), max(int(lo), int(hi))) if d == ax else None for d in range(t.ndim)))
          for lo, hi in zip(bounds[:-1], bounds[1:], strict=False)]

def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
  return _split("split", ary, indices_or_sections, axis, True)
def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
  return _split("array_split", ary, indices_or_sections, axis, False)
def vsplit(ary: Any, indices_or_sections: Any) -> list[Tensor]: return _split("vsplit", ary, indices_or_sections, 0, True)
def hsplit(ary: Any, indices_or_sections: Any) -> list[Tensor]:
  return _split("hsplit", ary, indices_or_sections, 0 if asarray(ary).ndim == 1 else 1, True)
def dsplit(ary: Any, indices_or_sections: Any) -> list[Tensor]: return _split("dsplit", ary, indices_or_sections, 2, True)

def tile(A: Any, reps: int | Sequence[int]) -> Tensor:
  t = asarray(A)
  r = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
  n = max(len(r), t.ndim)
  t = t.reshape((1,) * (n - t.ndim) + _S(t))
  return t.repeat((1,) * (n - len(r)) + r) if n else t

@composite
def repeat(a: Any, repeats: Any, axis: int | None = None, *, total_repeat_length: int | None = None, out_sharding: Any = None) -> Tensor:
  """jnp.repeat; per-element `repeats` must be concrete (JAX also takes traced ones with total_repeat_length)."""
  t = asarray(a)
  if axis is None: t, axis = t.flatten(), 0
  ax = _axis(axis, t.ndim)
  n = _S(t)[ax]
  r = _concrete(repeats, "repeat").astype(np.int64)
  idx = np.repeat(np.arange(n), np.broadcast_to(r, (n,)))
  if total_repeat_length is not None:
    # JAX drops what is beyond the length, and repeats the last element to fill it
    idx = idx[:total_repeat_length]
    if len(idx) < total_repeat_length: idx = np.concatenate([idx, np.full(total_repeat_length - len(idx), n - 1)])
  return _take_static(t, idx, ax)

def resize(a: Any, new_shape: int | Sequence[int]) -> Tensor:
  t = asarray(a).flatten()
  shp = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
  total = math.prod(shp)
  if _S(t)[0] == 0: return t.pad(((0, total),)).reshape(shp) if total else t.reshape(shp)
  k = -(-total // _S(t)[0])
  return t.repeat(k)[:total].reshape(shp)

# ---- pad, flip, roll ---------------------------------------------------------------------------------------------------

def _pairs(v: Any, nd: int, what: str, dtype: Any = np.int64) -> np.ndarray:
  """pad_width-like values as an (nd, 2) array (numpy's broadcasting: int, (b, a), ((b, a),), or one pair per axis)."""
  try: return np.broadcast_to(np.asarray(_concrete(v, what) if isinstance(v, Tensor) else v, dtype=dtype), (nd, 2))
  except ValueError: raise ValueError(f"jnp.pad: {what} with shape {np.shape(v)} cannot be broadcast to ({nd}, 2)") from None

_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum", "minimum", "mean")

def _reflect_index(n: int, before: int, after: int, mode: str, reflect_type: str) -> np.ndarray:
  """The source index of each output position along one axis for the index-based modes."""
  i = np.arange(-before, n + after)
  if mode == "edge" or n == 1: return np.clip(i, 0, n - 1)
  if mode == "wrap": return i % n
  if mode == "reflect":
    p = 2 * (n - 1)
    j = i % p
    return np.where(j < n, j, p - j)
  j = i % (2 * n)   # symmetric
  return np.where(j < n, j, 2 * n - 1 - j)

def _odd(t: Tensor, idx: np.ndarray, ax: int, before: int, after: int, n: int, mode: str) -> Tensor:
  """reflect_type='odd': 2*edge - the even reflection, applied in the padded regions (numpy's rule)."""
  i = np.arange(-before, n + after)
  out = _take_static(t, idx, ax)
  # how many reflections a position went through about which edge: numpy extends one period at a time
  first, last = _take_static(t, [0], ax), _take_static(t, [n - 1], ax)
  period = 2 * (n - 1) if mode == "reflect" else 2 * n
  lo_k, hi_k = np.ceil(-i / period * 2).clip(0) if before else 0, np.ceil((i - n + 1) / period * 2).clip(0) if after else 0
  if np.any(np.asarray(lo_k) > 1) or np.any(np.asarray(hi_k) > 1):
    raise NotImplementedError(f"jnp.pad(mode={mode!r}, reflect_type='odd') with pad widths beyond the array's size")
  shp = tuple(-1 if d == ax else 1 for d in range(t.ndim))
  lo = Tensor((i < 0).reshape(shp), device=t.device)
  hi = Tensor((i >= n).reshape(shp), device=t.device)
  return lo.where(2 * first - out, hi.where(2 * last - out, out))

def pad(array: Any, pad_width: Any, mode: str | Callable = "constant", **kwargs: Any) -> Tensor:
  """jnp.pad with modes constant, edge, reflect, symmetric, wrap, linear_ramp, maximum, minimum, mean (not median or a
  callable); pad widths and constant/end values must be concrete."""
  t = asarray(array)
  if not isinstance(mode, str) or mode not in _PAD_MODES:
    raise NotImplementedError(f"jnp.pad(mode={mode!r}): tinyjax supports {', '.join(_PAD_MODES)}")
  allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"}, "reflect": {"reflect_type"},
             "symmetric": {"reflect_type"}, "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"}}
  if bad := set(kwargs) - allowed.get(mode, set()):
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {bad}")
  nd = t.ndim
  pw = _pairs(pad_width, nd, "pad_width")
  if np.any(pw < 0): raise ValueError("index can't contain negative values")
  if mode == "constant":
    cv = kwargs.get("constant_values", 0)
    if isinstance(cv, Tensor): cv = _concrete(cv, "jnp.pad constant_values")
    vals = _pairs(cv, nd, "constant_values", dtype=np.float64 if dtypes.is_float(t.dtype) else np.int64)
    for ax in range(nd):
      (b, a), (vb, va) = pw[ax], vals[ax]
      if vb == va: t = t.pad(tuple((int(b), int(a)) if d == ax else None for d in range(nd)), value=vb.item())
      else: t = t.pad(tuple((int(b), 0) if d == ax else None for d in range(nd)), value=vb.item()) \
                 .pad(tuple((0, int(a)) if d == ax else None for d in range(nd)), value=va.item())
    return t
  for ax in range(nd):
    b, a = int(pw[ax][0]), int(pw[ax][1])
    if b == 0 and a == 0: continue
    n = _S(t)[ax]
    if n == 0: raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
    if mode in ("edge", "reflect", "symmetric", "wrap"):
      idx = _reflect_index(n, b, a, mode, kwargs.get("reflect_type", "even"))
      t = _odd(t, idx, ax, b, a, n, mode) if kwargs.get("reflect_type", "even") == "odd" else _take_static(t, idx, ax)
      continue
    before, after = _take_static(t, [0], ax), _take_static(t, [n - 1], ax)
    if mode == "linear_ramp":
      ends = _pairs(kwargs.get("end_values", 0), nd, "end_values", dtype=np.float64)[ax]
      shp = tuple(-1 if d == ax else 1 for d in range(nd))
      # numpy: linspace(end, edge, b, endpoint=False) before; the mirror image after
      wb, wa = (Tensor(w.reshape(shp), device=t.device) for w in (np.arange(b) / max(b, 1), np.arange(a - 1, -1, -1) / max(a, 1)))
      lo = ends[0] + (before.cast(default_float()) - ends[0]) * wb
      hi = ends[1] + (after.cast(default_float()) - ends[1]) * wa
      # an int array's ramp is rounded down, as jnp.linspace does for ints
      lo, hi = (x.floor().cast(t.dtype) if not dtypes.is_float(t.dtype) else x.cast(t.dtype) for x in (lo, hi))
    else:
      sl = _pairs(kwargs.get("stat_length") or n, nd, "stat_length")[ax]
      def stat(x: Tensor) -> Tensor:
        if mode == "mean":
          m = x.mean(ax, keepdim=True)
          return m.round().cast(t.dtype) if not dtypes.is_float(t.dtype) else m
        return x.max(ax, keepdim=True) if mode == "maximum" else x.min(ax, keepdim=True)
      lo = stat(t.shrink(tuple((0, max(1, min(int(sl[0]), n))) if d == ax else None for d in range(nd))))
      hi = stat(t.shrink(tuple((n - max(1, min(int(sl[1]), n)), n) if d == ax else None for d in range(nd))))
      lo, hi = (x.expand(tuple(k if d == ax else s for d, s in enumerate(_S(x)))) for x, k in ((lo, b), (hi, a)))
    t = lo.cat(t, hi, dim=ax)
  return t

def flip(m: Any, axis: int | Sequence[int] | None = None) -> Tensor:
  t = asarray(m)
  axes = tuple(range(t.ndim)) if axis is None else canonicalize_axes(axis, t.ndim)
  return t.flip(axes) if axes else t

def fliplr(m: Any) -> Tensor:
  if (t := asarray(m)).ndim < 2: raise ValueError(f"fliplr requires an array of at least two dimensions, got shape={_S(t)}")
  return t.flip(1)

def flipud(m: Any) -> Tensor:
  if (t := asarray(m)).ndim < 1: raise ValueError(f"flipud requires an array of at least one dimension, got shape={_S(t)}")
  return t.flip(0)

def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Tensor:
  t = asarray(m)
  if t.ndim < 2: raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got first argument of shape {_S(t)}")
  a, b = canonicalize_axes(axes, t.ndim)
  k %= 4
  if k == 0: return t
  if k == 2: return t.flip((a, b))
  t = swapaxes(t, a, b)
  return t.flip(a) if k == 1 else t.flip(b)

def roll(a: Any, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Tensor:
  """jnp.roll (the shift must be concrete)."""
  t = asarray(a)
  if isinstance(shift, Tensor): shift = _concrete(shift, "roll").tolist()
  if axis is None: return roll(t.flatten(), shift, 0).reshape(_S(t))
  sh, ax = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
  for s, d in zip(sh.reshape(-1), ax.reshape(-1), strict=False):
    d = _axis(int(d), t.ndim)
    if _S(t)[d]: t = t.roll(int(s), d)
  return t

@composite
def triu(m: Any, k: int = 0) -> Tensor:
  if (t := asarray(m)).ndim < 2: raise ValueError("Argument to jax.numpy.triu must be at least 2D")
  return t.triu(k)

@composite
def tril(m: Any, k: int = 0) -> Tensor:
  if (t := asarray(m)).ndim < 2: raise ValueError("Argument to jax.numpy.tril must be at least 2D")
  return t.tril(k)

# ---- sorting and searching --------------------------------------------------------------------------------------------

def _no_order(name: str, kind: Any, order: Any) -> None:
  if kind is not None:
    raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or stable=False to specify sort stability.")
  if order is not None: raise TypeError(f"'order' argument to {name} is not supported.")

@composite   # (eagerly built once per signature: a sort is a network of ~100 ops, 1.8 -> ~0.2 ms)
def argsort(a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None, stable: bool = True, descending: bool = False,
            dtype: Any = None) -> Tensor:
  """jnp.argsort: stable (ties keep their order, also with descending=True), NaNs sorted last (first with descending),
  -0.0 equal to 0.0, as JAX's (`tinyjax.lax.sorting`)."""
  _no_order("argsort", kind, order)
  check_arraylike("argsort", a)
  t = asarray(a)
  if axis is None: t, axis = t.flatten(), 0
  if t.ndim == 0: return Tensor(np.zeros((), np_dtype(default_int())), device=t.device)
  return sorting.argsort(t, _axis(axis, t.ndim), descending).cast(to_dtype(dtype) or default_int())

@composite   # (eagerly built once per signature: a sort is a network of ~100 ops, 1.8 -> ~0.2 ms)
def sort(a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None, stable: bool = True, descending: bool = False) -> Tensor:
  """jnp.sort: stable, NaNs last, -0.0 equal to 0.0, as JAX's (`tinyjax.lax.sorting`); descending is the ascending sort
  reversed, as in JAX (ties in reverse order, NaNs first). The values are gathered by the permutation, so each
  output's derivative is its source element's."""
  _no_order("sort", kind, order)
  check_arraylike("sort", a)
  t = asarray(a)
  if axis is None: t, axis = t.flatten(), 0
  if t.ndim == 0: return t
  ax = _axis(axis, t.ndim)
  out, = sorting.sort([t], ax)
  return out.flip(ax) if descending else out

def lexsort(keys: Any, axis: int = -1) -> Tensor:
  """jnp.lexsort: indices sorting by the last key, then the one before, ..."""
  ks = [asarray(k) for k in (list(keys) if not isinstance(keys, Tensor) else [keys[i] for i in range(_S(keys)[0])])]
  if not ks: raise TypeError("need sequence of keys with len > 0 in lexsort")
  shp = broadcast_shapes(*(_S(k) for k in ks))
  ks = [broadcast_to(k, shp) for k in ks]
  return sorting.lexsort(ks[::-1], _axis(axis, len(shp))).cast(default_int())

@composite
def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *, method: str = "scan") -> Tensor:
  """jnp.searchsorted (a compare-and-count: every `method` computes the same)."""
  if side not in ("left", "right"): raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of ['left', 'right']")
  at, vt = promote(a, v)
  if at.ndim != 1: raise ValueError("a should be 1-dimensional")
  if sorter is not None: at = at[asarray(sorter)]
  if _S(at)[0] == 0: return fill_like(vt, 0, dtypes.int32)
  x = vt.unsqueeze(-1)
  below = (at < x) if side == "left" else (at <= x)
  return below.sum(-1, dtype=_index_dtype(_S(at)[0]))

def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Tensor:
  xt, b = asarray(x), asarray(bins)
  if b.ndim != 1: raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
  if _S(b)[0] == 0: return fill_like(xt, 0, dtypes.int32)
  side = "left" if right else "right"
  inc = searchsorted(b, xt, side)
  dec = (_S(b)[0] - searchsorted(b.flip(0), xt, side)).cast(inc.dtype)
  return (b[-1] >= b[0]).where(inc, dec)

def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None, out_sharding: Any = None) -> Tensor:
  """jnp.bincount (negative values count as 0, as in JAX); without `length` the input must be concrete."""
  xt = asarray(x)
  if dtypes.is_float(xt.dtype): raise TypeError(f"x argument to bincount must have an integer type; got {xt.dtype}")
  if xt.ndim != 1: raise ValueError("only 1-dimensional input supported.")
  if length is None:
    xs = _concrete(xt, "bincount")
    length = max(int(minlength), int(xs.max()) + 1 if xs.size else 0)
  xt = xt.maximum(0)
  hit = xt.unsqueeze(-1) == Tensor.arange(length)
  if weights is None: return hit.sum(0, dtype=default_int())
  w = asarray(weights)
  return hit.where(w.unsqueeze(-1), 0).sum(0).cast(w.dtype if w.dtype != dtypes.bool else default_int())

# ---- data-dependent shapes --------------------------------------------------------------------------------------------

def _nonzero_flat(mask: Tensor, size: int, fill: Any) -> Tensor:
  """The flat positions of the first `size` true entries of a 1-D mask, then `fill`: Tensor ops (traceable)."""
  n = _S(mask)[0]
  m = mask.cast(dtypes.int32)
  rank = m.cumsum(0) - 1                        # the output slot of each true entry
  slot = Tensor.arange(size).unsqueeze(-1)
  hit = (rank.unsqueeze(0) == slot) & mask.unsqueeze(0)      # (size, n)
  pos = hit.where(Tensor.arange(n).unsqueeze(0), 0).sum(-1, dtype=default_int())
  return hit.any(-1).where(pos, fill)

def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple[Tensor, ...]:
  """jnp.nonzero; without `size` the input must be concrete."""
  t = asarray(a)
  if t.ndim == 0: raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() instead.")
  mask = t.flatten() != 0
  if size is None: size = int(_concrete(mask, "nonzero").sum())
  flat = _nonzero_flat(mask, size, 0)
  fills = (fill_value,) * t.ndim if fill_value is None or np.ndim(fill_value) == 0 else tuple(fill_value)
  if len(fills) != t.ndim: raise ValueError(f"fill_value must be a scalar or a tuple of length {t.ndim}; got {fill_value}")
  valid = _nonzero_flat(mask, size, -1) >= 0 if fill_value is not None else None
  out = unravel_index(flat, _S(t)) if t.ndim > 1 else (flat,)
  return tuple(valid.where(o, f) if valid is not None and f is not None else o for o, f in zip(out, fills, strict=False))

def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Tensor:
  return nonzero(ravel(a), size=size, fill_value=fill_value)[0]

def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Tensor:
  t = asarray(a)
  if t.ndim == 0: t = t.reshape(1)
  res = nonzero(t, size=size, fill_value=fill_value)
  return res[0].reshape(-1, 1) if t.ndim == 1 else Tensor.stack(*res, dim=1) if asarray(a).ndim else res[0].reshape(-1, 0)

@composite
def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, axis: int | None = None,
           *, equal_nan: bool = True, size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:  # noqa: A002
  """jnp.unique of the flattened array (axis=None only); without `size` the input must be concrete. With `equal_nan`
  (the default) the NaNs are one value."""
  if axis is not None: raise NotImplementedError("jnp.unique(axis=...): only axis=None")
  t = ravel(ar)
  n = _S(t)[0]
  perm = argsort(t)
  s = t.gather(0, perm) if n else t
  new = s[1:] != s[:-1]
  if equal_nan and dtypes.is_float(t.dtype): new = new & (s[1:].isnan() & s[:-1].isnan()).logical_not()   # NaNs: one value
  first = Tensor.ones(1, dtype=dtypes.bool, device=t.device).cat(new) if n else s.cast(dtypes.bool)
  if size is None: size = int(_concrete(first, "unique").sum())
  pos = _nonzero_flat(first, size, -1) if n else Tensor.full((size,), -1, dtype=default_int())
  valid = pos >= 0
  safe = valid.where(pos, 0)
  vals = s[safe] if n else t.zeros_like().pad(((0, size),))
  fill = s[0] if fill_value is None and n else fill_value if fill_value is not None else 0
  vals = valid.where(vals, fill) if size else vals
  out = [vals.cast(t.dtype)]
  if return_index: out.append(perm[safe].cast(default_int()) if n else safe)   # (a padding slot: perm[0], as JAX)
  if return_inverse:
    group = first.cast(default_int()).cumsum(0) - 1                # the unique-value slot of each sorted element
    inv = Tensor.zeros(n, dtype=default_int(), device=t.device) if not n else \
      (perm.unsqueeze(0) == Tensor.arange(n).unsqueeze(-1)).where(group.unsqueeze(0), 0).sum(-1, dtype=default_int())
    out.append(inv.reshape(asarray(ar).shape) if asarray(ar).ndim != 1 else inv)
  if return_counts:
    # each group ends where the next starts: the next start past the `size` kept too, when there are more groups
    nxt = _nonzero_flat(first, size + 1, -1)[1:] if n else pos
    nxt = (nxt >= 0).where(nxt, n)
    out.append(valid.where(nxt - safe, 0).cast(default_int()))
  return out[0] if len(out) == 1 else tuple(out)

def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Tensor:
  return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)

def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None, fill_value: Any = 0, out: None = None) -> Tensor:
  """jnp.compress; without `size` the condition must be concrete."""
  c, t = asarray(condition), asarray(a)
  if c.ndim != 1: raise ValueError("condition must be a 1D array")
  if axis is None: t, axis = t.flatten(), 0
  ax = _axis(axis, t.ndim)
  if size is None:
    keep = np.flatnonzero(_concrete(c, "compress"))
    if keep.size and keep[-1] >= _S(t)[ax]: raise ValueError("condition contains entries that are out of bounds")
    return _take_static(t, keep, ax)
  c = c[:_S(t)[ax]] != 0
  if _S(c)[0] < _S(t)[ax]: c = c.pad(((0, _S(t)[ax] - _S(c)[0]),))
  pos = _nonzero_flat(c, size, -1)
  got = t[(slice(None),) * ax + ((pos >= 0).where(pos, 0),)]
  ok = (pos >= 0).reshape(tuple(-1 if d == ax else 1 for d in range(t.ndim)))
  return ok.where(got, fill_value)

def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Tensor, ...]:
  """jnp.unravel_index: out-of-bound indices are clipped, as in JAX."""
  i = asarray(indices)
  total = math.prod(shape)
  i = (i < 0).where(i + total, i).clip(0, max(total - 1, 0))
  out, strides = [], [math.prod(shape[d+1:]) for d in range(len(shape))]
  for d, (s, st) in enumerate(zip(shape, strides, strict=False)):
    q = i // st if st != 1 else i
    out.append((q % s if d else q).cast(i.dtype) if s else q)
  return tuple(out)

def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise", order: str = "C", *, dtype: Any = None) -> Tensor:
  """jnp.ravel_multi_index (order='C'; mode 'raise' needs concrete indices, as in JAX)."""
  if order != "C": raise NotImplementedError(f"ravel_multi_index(order={order!r}): only order='C'")
  if len(multi_index) != len(dims): raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
  idx = [asarray(i) for i in multi_index]
  if mode == "raise":
    for i, d in zip(idx, dims, strict=False):
      v = _concrete(i, "ravel_multi_index(mode='raise')")
      if np.any((v < 0) | (v >= d)): raise ValueError("invalid entry in coordinates array")
  elif mode == "wrap": idx = [i % d for i, d in zip(idx, dims, strict=False)]
  elif mode == "clip": idx = [i.clip(0, d - 1) for i, d in zip(idx, dims, strict=False)]
  else: raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
  dt = to_dtype(dtype) or result_type(*idx)
  out = idx[0].cast(dt) * 0
  for i, st in zip(idx, [math.prod(dims[d+1:]) for d in range(len(dims))], strict=False): out = out + i.cast(dt) * st
  return out

def _obj_indices(obj: Any, n: int, what: str) -> np.ndarray:
  if isinstance(obj, slice): return np.arange(n)[obj]
  return _concrete(obj, what).astype(np.int64)

def delete(arr: Any, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False) -> Tensor:
  """jnp.delete with concrete `obj`."""
  t = asarray(arr)
  if axis is None: t, axis = t.flatten(), 0
  ax = _axis(axis, t.ndim)
  n = _S(t)[ax]
  drop = _obj_indices(obj, n, "delete").reshape(-1)
  if np.any((drop < -n) | (drop >= n)): raise IndexError(f"index out of bounds for axis {ax} with size {n}")
  return _take_static(t, np.delete(np.arange(n), drop % n if drop.size else drop), ax)

def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Tensor:
  """jnp.insert with concrete `obj`."""
  t = asarray(arr)
  if axis is None: t, axis = t.flatten(), 0
  ax = _axis(axis, t.ndim)
  n = _S(t)[ax]
  pos = _obj_indices(obj, n, "insert")
  v = asarray(values, dtype=t.dtype)
  if pos.ndim == 0 and not isinstance(obj, slice):
    # numpy: values as an array of t.ndim dims whose first axis is the inserted one
    v = v.reshape((1,) * (t.ndim - v.ndim) + _S(v)) if v.ndim < t.ndim else v
    v = moveaxis(v, 0, ax) if v.ndim else v
    k = _S(v)[ax] if v.ndim else 1
    v = broadcast_to(v, tuple(k if d == ax else s for d, s in enumerate(_S(t))))
    slots = np.full(k, int(pos))
  else:
    slots = pos.reshape(-1)
    v = broadcast_to(v, tuple(len(slots) if d == ax else s for d, s in enumerate(_S(t))))
  mapping = np.insert(np.arange(n), slots, np.arange(n, n + len(slots)))
  return _take_static(t.cat(v, dim=ax), mapping, ax)

def append(arr: Any, values: Any, axis: int | None = None) -> Tensor:
  if axis is None: return concatenate([ravel(arr), ravel(values)])
  return concatenate([arr, values], axis)

def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Tensor:
  if len(condlist) != len(choicelist):
    raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})")
  if not len(condlist): raise ValueError("condlist must be non-empty")
  *choices, d = promote(*choicelist, default)
  out = d
  for c, ch in zip(reversed(condlist), reversed(choices), strict=False):
    ct = asarray(c)
    if ct.dtype != dtypes.bool: raise TypeError(f"condlist must be boolean arrays, got {ct.dtype}")
    out = ct.where(ch, out)
  return broadcast_to(out, broadcast_shapes(*(_S(asarray(x)) for x in (*condlist, *choices, d))))

def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Tensor:
  xt = asarray(x)
  conds = [asarray(condlist)] if isinstance(condlist, bool) or asarray(condlist).ndim == xt.ndim and \
    not isinstance(condlist, (list, tuple)) else [asarray(c) for c in condlist]
  if len(funclist) not in (len(conds), len(conds) + 1):
    raise ValueError(f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} functions are expected; got {len(funclist)}")
  def val(f: Any) -> Tensor: return asarray(f(xt, *args, **kw) if callable(f) else f, dtype=xt.dtype).expand(_S(xt))
  out = val(funclist[-1]) if len(funclist) == len(conds) + 1 else fill_like(xt, 0)
  for c, f in zip(conds, funclist, strict=False):   # numpy: a later condition wins
    out = c.where(val(f), out)
  return out

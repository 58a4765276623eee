"""tinyjax.numpy: JAX/numpy indexing on Tensors (advanced, boolean masks, clamping), take, take_along_axis, choose, and
x.at[idx].

`x[idx]` keeps tinygrad's own indexing for what tinygrad already does as JAX does (ints in range, slices, None, Ellipsis:
no extra work), and adds JAX's rules for the rest: numpy arrays and lists of ints, concrete boolean masks, Python ints
mixed with arrays (numpy's advanced-index rule), and out-of-bounds integer indices, which JAX clamps.
"""
from __future__ import annotations
import math
from types import EllipsisType, NoneType
from typing import Any, Callable
import numpy as np
from tinyjax import _tg
from tinyjax._tg import Tensor, dtypes, DType, np_dtype, set_items, static_shape as _S
from tinyjax.core import traced_by, static_ints, trace_state, fill_like
from tinyjax.dtypes import type_str, canonical_dtype
from tinyjax.numpy._core import asarray, promote, default_int, canonicalize_axis
from tinyjax.numpy._shape import _take_static

__all__ = ["take", "take_along_axis", "choose", "NonConcreteBooleanIndexError"]

class NonConcreteBooleanIndexError(IndexError):
  """A boolean mask index whose value is traced (JAX's jax.errors.NonConcreteBooleanIndexError)."""
  def __init__(self, mask: Tensor):
    super().__init__(f"Array boolean indices must be concrete; got {type_str(mask)}\n\n"
                     "The output shape of x[mask] depends on how many entries are true. Use jnp.where(mask, x, fill) to keep "
                     "the shape, jnp.nonzero(mask, size=n) for a fixed number of indices, or x.at[mask] only with a concrete mask.")

_orig_getitem = _tg.tensor_method("__getitem__")

# ---- parsing an index -----------------------------------------------------------------------------------------------

def _traced(t: Tensor) -> bool:
  return traced_by(t) is not None

def _index_array(i: Any, device: Any) -> Tensor | list[Tensor] | None:
  """An array-like index as an int Tensor, or the index Tensors of a boolean mask (one per dimension it covers); None if i
  is not array-like. Index data from the host goes to `device`, the indexed array's (a device tuple for a multi-device
  array, as tinygrad's own indexing does)."""
  if isinstance(i, (list, np.ndarray)) or (isinstance(i, np.generic) and i.dtype == np.bool_):
    a = np.asarray(i)
    if a.dtype == np.bool_: return [Tensor(n.astype(np_dtype(default_int())), device=device) for n in np.nonzero(a)]
    if a.dtype.kind not in "iu": raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {a.dtype}")
    return Tensor(a.astype(np_dtype(default_int())), device=device)
  if isinstance(i, Tensor):
    if i.dtype == dtypes.bool:
      if _traced(i): raise NonConcreteBooleanIndexError(i)
      return [Tensor(n.astype(np_dtype(default_int())), device=i.device) for n in np.nonzero(i.numpy())]
    if not dtypes.is_int(i.dtype):
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {_tg.dtype_name(canonical_dtype(i.dtype))}")
    return i
  return None

def _parse(shape: tuple[int, ...], idx: Any, device: Any = None) -> list[Any]:
  """idx as a list with one entry per indexed dimension and None for new axes: ints, slices, int Tensors (masks expanded
  into their index arrays, made on `device`), Ellipsis expanded."""
  items = list(idx) if isinstance(idx, tuple) else [idx]
  out: list[Any] = []
  for i in items:
    if i is None or i is Ellipsis: out.append(i)
    elif isinstance(i, slice): out.append(static_ints(i))
    elif isinstance(i, (bool, np.bool_)):
      if not i: raise NotImplementedError("x[False] (an empty new axis) is not supported")
      out.append(None)
    elif isinstance(i, (int, np.integer)): out.append(int(i))
    elif (a := _index_array(i, device)) is not None:
      if isinstance(a, list): out.extend(a)
      else: out.append(a)
    else:
      what = _tg.dtype_name(canonical_dtype(asarray(i).dtype)) if isinstance(i, (float, np.floating)) else type(i).__name__
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {what}")
  if sum(i is Ellipsis for i in out) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
  used = sum(i is not None and i is not Ellipsis for i in out)
  if used > len(shape): raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {used} were indexed")
  rest = [slice(None)] * (len(shape) - used)
  ell = [k for k, i in enumerate(out) if i is Ellipsis]
  return out[:ell[0]] + rest + out[ell[0]+1:] if ell else out + rest

def _dims(items: list[Any]) -> list[int | None]:
  """The dimension of x each parsed entry indexes (None for new axes)."""
  d, out = 0, []
  for i in items:
    out.append(None if i is None else d)
    if i is not None: d += 1
  return out

def _fill_default(dt: DType) -> Any:
  """JAX's fill for out-of-bounds gathers: NaN, the minimum of a signed int, the maximum of an unsigned one, True."""
  if dtypes.is_float(dt): return math.nan
  if dt == dtypes.bool: return True
  return dt.max if dtypes.is_unsigned(dt) else dt.min

_MODES = (None, "clip", "fill", "drop", "promise_in_bounds", "wrap")

def _mode(mode: Any, allowed: tuple = _MODES) -> str | None:
  m = getattr(mode, "name", mode)
  m = m.lower() if isinstance(m, str) else m
  if m == "fill_or_drop": m = "fill"
  if m not in allowed: raise ValueError(f"Invalid mode {mode!r}: expected one of {[a for a in allowed if a]}")
  return m

def _bounds(items: list[Any], shape: tuple[int, ...], mode: str, wrap_negative: bool = True) -> tuple[list[Any], Tensor | None, bool]:
  """The entries with negative indices wrapped and out-of-bounds ones clamped ('clip'), wrapped ('wrap') or kept in range
  with a validity mask ('fill', 'drop'); and whether a Python int is out of bounds in those modes."""
  out, valid, int_oob = [], None, False
  for i, d in zip(items, _dims(items), strict=False):
    if d is None or isinstance(i, slice): out.append(i)
    elif isinstance(i, int):
      n = shape[d]
      j = i + n if i < 0 and wrap_negative else i
      if mode == "wrap": j = i % n if n else 0
      elif not 0 <= j < n:
        if mode != "clip": int_oob = True
        j = min(max(j, 0), n - 1)
      out.append(j)
    else:
      n = shape[d]
      j = (i < 0).where(i + n, i) if wrap_negative else i
      if mode == "wrap": j = i % n
      elif mode == "clip": j = j.clip(0, n - 1)
      else:
        ok = (j >= 0) & (j < n)
        valid = ok if valid is None else valid & ok
        j = ok.where(j, 0)
      out.append(j.cast(default_int()) if j.dtype != default_int() else j)
  return out, valid, int_oob

def _advanced(items: list[Any], device: Any = None) -> list[Any]:
  """numpy's rule: with array indices present, an int is an advanced index too (it moves with them)."""
  if not any(isinstance(i, Tensor) for i in items): return items
  return [Tensor(np.asarray(i, np_dtype(default_int())), device=device) if isinstance(i, int) else i for i in items]

# ---- x[idx] ---------------------------------------------------------------------------------------------------------------

_BASIC = (int, slice, NoneType, EllipsisType)

def _getitem(self: Tensor, idx: Any) -> Tensor:
  """x[idx] with JAX's rules (see the module docstring)."""
  idx = static_ints(idx)
  items = idx if type(idx) is tuple else (idx,)
  if all(type(i) in _BASIC for i in items):
    # tinygrad's own path, unless an int is out of bounds (JAX clamps it) or there are too many indices
    shp, k, ok = _S(self), 0, True
    ell = next((p for p, i in enumerate(items) if i is Ellipsis), None)
    after = sum(1 for i in items[ell+1:] if i is not None) if ell is not None else 0
    for p, i in enumerate(items):
      if ell is not None and p == ell: k = len(shp) - after
      elif i is Ellipsis: ok = False
      elif i is not None:
        if type(i) is int and (k >= len(shp) or not -shp[k] <= i < shp[k]): ok = False
        k += 1
    if ok and k <= len(shp): return _orig_getitem(self, idx)
  try:
    parsed = _parse(_S(self), idx, self.device)
    if (static := _static_take(self, parsed, "clip", True)) is not None: return static
    items_p, _, _ = _bounds(parsed, _S(self), "clip")
  except TypeError as e:
    # lists of tinygrad's own index objects (sints, UOps: tinygrad's reflect pad) are not JAX indexers: tinygrad's rules
    if str(e).endswith("with type object"): return _orig_getitem(self, idx)
    raise
  return _orig_getitem(self, tuple(_advanced(items_p, self.device)))

_STATIC_INDEX = 256   # elements: a concrete index array up to this size is read on the host

def _static_take(x: Tensor, items: list[Any], mode: str, wrap_negative: bool) -> Tensor | None:
  """x[items] for one concrete integer index array along one axis (the other entries whole slices), in bounds in this
  mode: its values read and taken as slices (`_take_static`, movement ops). tinygrad's indexing by a Tensor compares
  it with an arange over the axis, ~60 nodes a take (qujax's `jnp.take(params, inds)` per gate: 13 ms each to build,
  most of an eager circuit's graph). Not under jit, whose capture keeps reading a closed-over buffer (it may be
  written later); the value read is an immutable JAX array everywhere else."""
  adv = [p for p, i in enumerate(items) if isinstance(i, Tensor)]
  if len(adv) != 1 or any(i != slice(None) for p, i in enumerate(items) if p != adv[0]): return None
  i = items[d := adv[0]]
  if not (i.uop.is_realized and dtypes.is_int(i.dtype) and i.numel() <= _STATIC_INDEX) or traced_by(i) is not None or \
     any(name == "jit" for name, _ in trace_state().active) or trace_state().running_jit or _tg.jit_capturing(): return None
  n, a = _S(x)[d], i.numpy().astype(np.int64)
  if wrap_negative: a = np.where(a < 0, a + n, a)
  if mode == "wrap": a = a % n if n else a
  elif mode == "clip": a = np.clip(a, 0, n - 1)
  if a.size and (n == 0 or a.min() < 0 or a.max() >= n): return None   # fill/drop of an index out of bounds: the general path
  return _take_static(x, a.reshape(-1), d).reshape(_S(x)[:d] + a.shape + _S(x)[d+1:])

def _gather(x: Tensor, idx: Any, mode: str | None, fill_value: Any, wrap_negative: bool = True) -> Tensor:
  """x[idx] with JAX's gather modes: clip (x[idx]'s default), fill (fill_value where an index is out of bounds), wrap."""
  shp = _S(x)
  items = _parse(shp, idx, x.device)
  if (static := _static_take(x, items, mode or "clip", wrap_negative)) is not None: return static
  if mode in (None, "clip", "wrap", "promise_in_bounds"):
    out, _, _ = _bounds(items, shp, mode or "clip", wrap_negative)
    return _orig_getitem(x, tuple(_advanced(out, x.device)))
  out, valid, int_oob = _bounds(items, shp, "fill", wrap_negative)
  fill = _fill_default(x.dtype) if fill_value is None else fill_value
  adv = _advanced(out, x.device)   # once: its int indices become host copies
  res = _orig_getitem(x, tuple(adv))
  if valid is None and not int_oob: return res
  # the validity of each output element: gather an all-true mask the same way, with the invalid places cleared
  ok = _positions(shp, adv, valid, int_oob) >= 0
  return ok.where(res, Tensor(fill, dtype=x.dtype, device=x.device) if not isinstance(fill, Tensor) else fill.cast(x.dtype))

# ---- flat positions of an index (for scatters) -----------------------------------------------------------------------

def _positions(shape: tuple[int, ...], items: list[Any], valid: Tensor | None, int_oob: bool) -> Tensor:
  """The flat position in x of every element of x[items] (in x[items]'s layout), -1 where an index is out of bounds: only
  elementwise ops (numpy's layout rule: the broadcast block of advanced indices replaces them where they stand if they
  are adjacent, else goes first)."""
  dims = _dims(items)
  strides = [math.prod(shape[d+1:]) for d in range(len(shape))]
  adv = [p for p, i in enumerate(items) if isinstance(i, Tensor)]
  bshape = tuple(np.broadcast_shapes(*(_S(items[p]) for p in adv))) if adv else ()
  front = bool(adv) and adv != list(range(adv[0], adv[-1] + 1))
  # the output's axes: (kind, entry position) in order
  axes: list[tuple[str, int]] = []
  for p, i in enumerate(items):
    if isinstance(i, Tensor):
      if p == adv[0]: axes.append(("adv", p))
    elif isinstance(i, int): continue
    else: axes.append(("basic", p))
  if front: axes = [a for a in axes if a[0] == "adv"] + [a for a in axes if a[0] != "adv"]
  out_shape: list[int] = []
  for kind, p in axes:
    if kind == "adv": out_shape.extend(bshape)
    elif items[p] is None: out_shape.append(1)
    else: out_shape.append(len(range(*items[p].indices(shape[dims[p]]))))   # type: ignore[index]
  nd = len(out_shape)
  pos: Tensor = Tensor(sum(i * strides[d] for i, d in zip(items, dims, strict=False) if isinstance(i, int)), dtype=default_int())  # type: ignore[misc,index]
  r, adv_r = 0, 0
  for kind, p in axes:
    if kind == "adv":
      adv_r = r
      for q in adv:
        t = items[q].reshape((1,) * (len(bshape) - items[q].ndim) + _S(items[q]))
        pos = pos + (t * strides[dims[q]]).reshape((1,) * r + _S(t) + (1,) * (nd - r - len(bshape)))   # type: ignore[index]
      r += len(bshape)
      continue
    if items[p] is not None:
      start, _, step = items[p].indices(shape[dims[p]])   # type: ignore[index]
      n = out_shape[r]
      coord = Tensor.arange(n, dtype=default_int()) * (step * strides[dims[p]]) + start * strides[dims[p]]   # type: ignore[index]
      pos = pos + coord.reshape((1,) * r + (n,) + (1,) * (nd - r - 1))
    r += 1
  pos = pos.expand(tuple(out_shape)) if nd else pos
  if valid is not None:
    vb = valid.reshape((1,) * (len(bshape) - valid.ndim) + _S(valid))
    pos = vb.reshape((1,) * adv_r + _S(vb) + (1,) * (nd - adv_r - len(bshape))).where(pos, -1)
  if int_oob: pos = pos.const_like(-1)
  return pos

# ---- x.at[idx] ------------------------------------------------------------------------------------------------------------

def _identity(kind: str, dt: DType) -> Any:
  if kind == "mul": return 1
  if dt == dtypes.bool: return kind == "min"
  if dtypes.is_float(dt): return math.inf if kind == "min" else -math.inf
  return dt.max if kind == "min" else dt.min

def _box_set(x: Tensor, items: list[Any], new: Tensor) -> Tensor | None:
  """x with the box that ints and unit-step slices select set to `new` (x[items]'s shape), as one where over a padded
  mask: a few nodes, where tinygrad's functional setitem builds index compares through arange (~7 ms eager). None for
  other indices (new axes, strides)."""
  if len(items) != x.ndim: return None   # new axes
  box = []
  for i, n in zip(items, _S(x), strict=True):
    if isinstance(i, int): box.append((i, i + 1))
    elif isinstance(i, slice) and (r := range(*i.indices(n))).step == 1: box.append((r.start, max(r.start, r.stop)))
    else: return None
  shape, pads = tuple(e - b for b, e in box), tuple((b, n - e) for (b, e), n in zip(box, _S(x), strict=True))
  if 0 in shape: return x
  mask = Tensor.full(shape, True, dtype=dtypes.bool, buffer=False).pad(pads)
  return mask.where(new.reshape(shape).pad(pads), x)

class _IndexUpdateRef:
  """x.at[idx]: JAX's functional indexed updates. Each returns a new Tensor (x is unchanged), computed with masks and
  one-hot compares that tinygrad fuses; updates at out-of-bounds indices are dropped (mode='clip' clamps them)."""
  def __init__(self, array: Tensor, index: Any):
    self.array, self.index = array, index
  def __repr__(self) -> str: return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None, fill_value: Any = None,
          out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx]; mode='fill' gives fill_value (default NaN for floats) at out-of-bounds indices."""
    return _gather(self.array, self.index, _mode(mode), fill_value, wrap_negative_indices)

  def _scatter(self, values: Any, kind: str, mode: Any, wrap_negative: bool, fn: Callable | None = None) -> Tensor:
    x = self.array
    m = _mode(mode, (None, "clip", "drop", "fill", "promise_in_bounds"))
    shp = _S(x)
    items, valid, int_oob = _bounds(_parse(shp, self.index, x.device), shp, "clip" if m == "clip" else "drop", wrap_negative)
    if int_oob: return x   # an out-of-bounds Python int drops the whole update
    v = None if fn is not None else asarray(values).cast(x.dtype) if asarray(values).dtype != x.dtype else asarray(values)
    if not any(isinstance(i, Tensor) for i in items):
      # basic index: no repeats, no out-of-bounds: the update is x[idx] combined with v, merged back by a mask
      cur = _orig_getitem(x, tuple(items))
      if v is not None and not _broadcastable(_S(v), _S(cur)):
        raise ValueError(f"Incompatible shapes for broadcasting: {_S(v)} and requested shape {_S(cur)}")
      new = fn(cur) if fn is not None else _combine(kind, cur, v)   # type: ignore[arg-type]
      new = new.expand(_S(cur)) if _S(new) != _S(cur) else new
      return out if (out := _box_set(x, items, new)) is not None else set_items(x, tuple(items), new)
    pos = _positions(shp, _advanced(items, x.device), valid, False)
    n, k = math.prod(shp), math.prod(_S(pos))
    hit = pos.reshape(k, 1) == Tensor.arange(n, dtype=default_int()).reshape(1, n)   # (updates, elements)
    xf = x.flatten()
    if fn is not None:
      count = hit.sum(0)
      reps = k if _traced(pos) else int(count.max().item()) if k else 0
      out = xf
      for r in range(reps): out = (count > r).where(fn(out), out)   # JAX applies fn once per repeat of an index
      return out.reshape(shp)
    assert v is not None
    if not _broadcastable(_S(v), _S(pos)):
      raise ValueError(f"Incompatible shapes for broadcasting: {_S(v)} and requested shape {_S(pos)}")
    vf = v.expand(_S(pos)).reshape(k, 1) if _S(v) != _S(pos) else v.reshape(k, 1)
    if kind == "add": return (xf + hit.where(vf, 0).sum(0, dtype=x.dtype)).reshape(shp)
    if kind == "set":
      # repeated indices: the last update wins, as with JAX's scatter
      order = Tensor.arange(k, dtype=dtypes.int32).reshape(k, 1)
      last = hit.where(order, -1).max(0)
      win = hit & (order == last.reshape(1, n))
      return (last >= 0).where(win.where(vf, 0).sum(0, dtype=x.dtype), xf).reshape(shp)
    if kind == "mul": return (xf * hit.where(vf, 1).prod(0, dtype=x.dtype)).reshape(shp)
    # min/max: one reduction over x and its updates, so tied derivatives are shared equally, as in JAX
    both = xf.reshape(1, n).cat(hit.where(vf, _identity(kind, x.dtype)), dim=0)
    return (both.max(0) if kind == "max" else both.min(0)).reshape(shp)

  def set(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
          out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] = values (with repeated indices the last value wins)."""
    return self._scatter(values, "set", mode, wrap_negative_indices)
  def add(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
          out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] += values (repeated indices accumulate)."""
    return self._scatter(values, "add", mode, wrap_negative_indices)
  def subtract(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
               out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] -= values."""
    return self._scatter(-asarray(values), "add", mode, wrap_negative_indices)
  def multiply(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
               out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] *= values."""
    return self._scatter(values, "mul", mode, wrap_negative_indices)
  mul = multiply
  def divide(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
             out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] /= values (as JAX: x divided by the product of the updates at each index)."""
    return self.array / _IndexUpdateRef(fill_like(self.array, 1), self.index)._scatter(values, "mul", mode, wrap_negative_indices)
  def power(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
            out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] **= values (as JAX: x to the product of the updates at each index)."""
    return self.array ** _IndexUpdateRef(fill_like(self.array, 1), self.index)._scatter(values, "mul", mode, wrap_negative_indices)
  def min(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
          out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] = minimum(x[idx], values)."""
    return self._scatter(values, "min", mode, wrap_negative_indices)
  def max(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
          out_sharding: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] = maximum(x[idx], values)."""
    return self._scatter(values, "max", mode, wrap_negative_indices)
  def apply(self, func: Callable[[Tensor], Tensor], *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, wrap_negative_indices: bool = True) -> Tensor:
    """x[idx] = func(x[idx]) for an elementwise func, applied once per occurrence of an index (as JAX)."""
    return self._scatter(None, "apply", mode, wrap_negative_indices, fn=func)

def _broadcastable(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
  return len(src) <= len(dst) and all(s in (1, d) for s, d in zip(src[::-1], dst[::-1], strict=False))

def _combine(kind: str, cur: Tensor, v: Tensor) -> Tensor:
  if kind == "set": return v.cast(cur.dtype).expand(_S(cur)) if _S(v) != _S(cur) else v.cast(cur.dtype)
  if kind == "add": return cur + v
  if kind == "mul": return cur * v
  return cur.maximum(v) if kind == "max" else cur.minimum(v)

class _IndexUpdateHelper:
  """x.at: index it (x.at[idx]) for JAX's functional indexed updates."""
  __slots__ = ("array",)
  def __init__(self, array: Tensor): self.array = array
  def __getitem__(self, index: Any) -> _IndexUpdateRef: return _IndexUpdateRef(self.array, index)
  def __repr__(self) -> str: return f"_IndexUpdateHelper({self.array!r})"

# ---- take, take_along_axis, choose -------------------------------------------------------------------------------------

def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value: Any = None) -> Tensor:
  """jnp.take: out-of-bounds indices give fill_value (default NaN for floats) unless mode='clip' or 'wrap'."""
  if out is not None: raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
  if mode == "raise": raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
  t = asarray(a)
  if axis is None: t, axis = t.flatten(), 0
  ax = canonicalize_axis(axis, t.ndim)
  i = asarray(indices)
  m = _mode(mode)
  return _gather(t, (slice(None),) * ax + (i,), "fill" if m is None else m, fill_value)

def take_along_axis(arr: Any, indices: Any, axis: int | None = -1, mode: Any = None, fill_value: Any = None, *,
                    wrap_negative_indices: bool | None = None) -> Tensor:
  """jnp.take_along_axis: out-of-bounds indices give fill_value (default NaN for floats) unless mode='clip'."""
  t, i = asarray(arr), asarray(indices)
  if axis is None: t, i, axis = t.flatten(), i.flatten(), 0
  if i.ndim != t.ndim:
    raise ValueError(f"indices and arr must have the same number of dimensions; {i.ndim} vs. {t.ndim}")
  if not dtypes.is_int(i.dtype): raise TypeError(f"take_along_axis indices must be of integer type, got {_tg.dtype_name(i.dtype)}")
  ax = canonicalize_axis(axis, t.ndim)
  m = _mode(mode)
  n = _S(t)[ax]
  if wrap_negative_indices is not False: i = (i < 0).where(i + n, i)
  shp = tuple(_S(i)[d] if d == ax else max(_S(i)[d], _S(t)[d]) for d in range(t.ndim))
  t = t.expand(tuple(_S(t)[d] if d == ax else shp[d] for d in range(t.ndim)))
  i = i.expand(shp)
  if m in ("clip", "promise_in_bounds"): return t.gather(ax, i.clip(0, n - 1))
  if m == "wrap": return t.gather(ax, i % n)
  ok = (i >= 0) & (i < n)
  fill = _fill_default(t.dtype) if fill_value is None else fill_value
  return ok.where(t.gather(ax, ok.where(i, 0)), Tensor(fill, dtype=t.dtype, device=t.device))

def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Tensor:
  """jnp.choose (mode 'raise' needs a concrete `a`)."""
  if out is not None: raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  idx = asarray(a)
  cs = promote(*(list(choices) if not isinstance(choices, Tensor) else [choices[k] for k in range(_S(choices)[0])]))
  n = len(cs)
  if mode == "raise":
    if _traced(idx): raise ValueError("jnp.choose(mode='raise') needs a concrete index array; use mode='clip' or 'wrap'")
    v = idx.numpy()
    if np.any((v < 0) | (v >= n)): raise ValueError("invalid entry in choice array")
  elif mode == "wrap": idx = idx % n
  elif mode == "clip": idx = idx.clip(0, n - 1)
  else: raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  out_t = cs[-1]
  for k in range(n - 2, -1, -1): out_t = (idx == k).where(cs[k], out_t)
  shp = tuple(np.broadcast_shapes(_S(idx), *(_S(c) for c in cs)))
  return out_t.expand(shp) if _S(out_t) != shp else out_t

_tg.add_tensor_methods({"__getitem__": _getitem, "at": property(lambda self: _IndexUpdateHelper(self))},
                       "JAX's indexing (numpy's rules, x.at[i].set(v)) on tinyjax's arrays, which are Tensors")

"""tinyjax.numpy: the index objects mgrid, ogrid, r_, c_ (JAX's index_tricks, on arange/linspace/meshgrid/concatenate),
and numpy's s_ and index_exp, which build plain index tuples."""
from __future__ import annotations
from typing import Any
import numpy as np
from tinyjax._tg import Tensor
from tinyjax.numpy._core import asarray, array, promote
from tinyjax.numpy._creation import arange, linspace, meshgrid
from tinyjax.numpy._shape import concatenate, stack, transpose, expand_dims

__all__ = ["mgrid", "ogrid", "r_", "c_", "s_", "index_exp"]

s_, index_exp = np.s_, np.index_exp

def _grid_1d(s: slice) -> Tensor:
  """start:stop:step as arange, or with an imaginary step (5j) as linspace of that many points."""
  start, stop, step = s.start or 0, s.stop, s.step or 1
  return linspace(start, stop, int(abs(step))) if np.iscomplex(step) else arange(start, stop, step)

class _Mgrid:
  """jnp.mgrid[0:3, 0:4]: the dense index grids, stacked (meshgrid with indexing='ij')."""
  def __getitem__(self, key: slice | tuple[slice, ...]) -> Tensor:
    if isinstance(key, slice): return _grid_1d(key)
    out = meshgrid(*promote(*(_grid_1d(k) for k in key)), indexing="ij", sparse=False) if key else []
    return stack(out, 0) if out else arange(0)

class _Ogrid:
  """jnp.ogrid[0:3, 0:4]: the open (sparse) index grids, which broadcast against each other."""
  def __getitem__(self, key: slice | tuple[slice, ...]) -> Any:
    if isinstance(key, slice): return _grid_1d(key)
    return meshgrid(*promote(*(_grid_1d(k) for k in key)), indexing="ij", sparse=True) if key else []

class _AxisConcat:
  """r_ and c_: slices (as mgrid's), scalars and arrays concatenated along `axis`, after an optional directive string
  ('r', 'c', or 'axis,ndmin,trans1d'), as numpy's."""
  axis, ndmin, trans1d = 0, 1, -1

  def __getitem__(self, key: Any) -> Tensor:
    items = key if isinstance(key, tuple) else (key,)
    params = [self.axis, self.ndmin, self.trans1d, -1]
    if isinstance(items[0], str):
      directive, items = items[0], items[1:]
      if directive == "r": params[-1] = 0
      elif directive == "c": params[-1] = 1
      else:
        vec: list[Any] = directive.split(",")
        vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
        try: params = [int(v) for v in vec]
        except ValueError as err: raise ValueError(f"could not understand directive {directive!r}") from err
    axis, ndmin, trans1d, matrix = params
    out = []
    for item in items:
      if isinstance(item, slice): new, item_ndim = _grid_1d(item), 0
      elif isinstance(item, str): raise ValueError("string directive must be placed at the beginning")
      else:
        new = asarray(item)
        item_ndim = new.ndim
      new = array(new, ndmin=ndmin)
      if trans1d != -1 and ndmin - item_ndim > 0:
        order = tuple(range(ndmin))
        shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
        new = transpose(new, order[shifts:] + order[:shifts])
      out.append(new)
    res = concatenate(out, axis=axis)
    return expand_dims(res, matrix) if matrix != -1 and res.ndim == 1 else res

  def __len__(self) -> int: return 0

class RClass(_AxisConcat):
  """jnp.r_: concatenation along the first axis."""
  axis, ndmin, trans1d = 0, 1, -1

class CClass(_AxisConcat):
  """jnp.c_: concatenation along the last axis, 1-D inputs as columns."""
  axis, ndmin, trans1d = -1, 2, 0

mgrid, ogrid, r_, c_ = _Mgrid(), _Ogrid(), RClass(), CClass()

"""Collectives over named vmap axes (jax.lax names). Inside `tinyjax.vmap(f, axis_name=...)` they reduce over, or
enumerate, the mapped axis; they are marker nodes in the traced graph that VMAPOUT of that axis lowers."""
from __future__ import annotations
from typing import Hashable
from tinyjax._tg import Tensor, UOp, dtypes, marker
from tinyjax.core import traced_by, as_tensor, remember_traced
from tinyjax.tree_util import tree_map
from tinyjax.transforms.batching import Collective
from tinyjax.transforms.vmap import bound_axis

def _names(axis_name) -> tuple:
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)

def _constant(t: Tensor) -> bool:
  """t depends on no traced value of any active transform (a closed-over constant): the same for every example.
  (A placeholder of an inner transform can stand for a mapped value, so any traced dependency counts.)"""
  return traced_by(t) is None

def _traced(u: UOp) -> Tensor:
  remember_traced(u)   # a marker that escapes its vmap is a leaked tracer
  return Tensor(u)

def _collective(kind: str, x, axis_name):
  def one(leaf):
    t = as_tensor(leaf)
    for n in _names(axis_name):
      ax = bound_axis(n, kind)
      if _constant(t): t = t * ax.size if kind == "psum" else t   # as JAX: a concrete result
      else: t = _traced(marker(t.uop, Collective(kind, ax)))
    return t
  for n in _names(axis_name): bound_axis(n, kind)   # NameError for unbound names, even on an empty tree
  return tree_map(one, x)

def psum(x, axis_name: Hashable | tuple):
  """Sum of x over the named mapped axis (or axes); x may be a pytree."""
  return _collective("psum", x, axis_name)

def pmean(x, axis_name: Hashable | tuple):
  return _collective("pmean", x, axis_name)

def pmax(x, axis_name: Hashable | tuple):
  return _collective("pmax", x, axis_name)

def pmin(x, axis_name: Hashable | tuple):
  return _collective("pmin", x, axis_name)

def axis_index(axis_name: Hashable | tuple) -> Tensor:
  """Position along the named mapped axis, as an int32 scalar; for a tuple of names, the row-major combined index."""
  idx: Tensor | None = None
  for n in _names(axis_name):
    ax = bound_axis(n, "axis_index")
    i = _traced(marker(UOp.const(0, dtypes.int32), Collective("axis_index", ax), dtypes.int32))
    idx = i if idx is None else idx * ax.size + i
  assert idx is not None, "axis_index needs an axis name"
  return idx

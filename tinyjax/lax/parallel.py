"""Collectives over named vmap axes (jax.lax.psum, all_gather, ppermute, ...). Inside `tinyjax.vmap(f, axis_name=...)` they reduce over, or move data
between, the examples of the mapped axis. They are built from marker nodes of the primitives in batching.COLLECTIVE_RULES
(psum, pmean, pmax, pmin, axis_index, ppermute and all_to_all over the last axis), which VMAPOUT of that axis lowers and every
transform differentiates, and from ordinary movement ops: all_gather, psum_scatter and all_to_all in general inherit their vmap,
jvp and vjp rules from those of the primitives."""
from __future__ import annotations
import math
from typing import Hashable, Sequence
from tinyjax._tg import Tensor, UOp, dtypes, marker
from tinyjax.core import traced_by, as_tensor, remember_traced, canonicalize_axis
from tinyjax.pytree import tree_map
from tinyjax.transforms.batching import Axis, Collective, collective
from tinyjax.transforms.vmap import bound_axis

__all__ = ["psum", "pmean", "pmax", "pmin", "axis_index", "all_gather", "psum_scatter", "all_to_all", "ppermute"]

def _names(axis_name) -> tuple:
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)

def _bound(axis_name, api: str, axis_index_groups=None) -> list[Axis]:
  """The vmap axes the names resolve to: NameError for an unbound name (even when x is an empty tree), as JAX."""
  axes = [bound_axis(n, api) for n in _names(axis_name)]
  if axis_index_groups is not None: raise NotImplementedError("axis_index_groups not supported in vmap collectives")
  return axes

def _constant(t: Tensor) -> bool:
  """t depends on no traced value of any active transform (a closed-over constant): the same for every example.
  (A placeholder of an inner transform can stand for a mapped value, so any traced dependency counts.)"""
  return traced_by(t) is None

def _traced(u: UOp) -> Tensor:
  remember_traced(u)   # a marker that escapes its vmap is a leaked tracer
  return Tensor(u)

def _marker(kind: str, t: Tensor, ax: Axis) -> Tensor: return _traced(collective(kind, t.uop, ax))

def _exchange(t: Tensor, axes: list[Axis], d: int) -> Tensor:
  """Axes d, d+1, ... of t have the sizes of `axes`; for each, example i gets at index k of that axis example k's value at
  index i (all_to_all, the primitive that exchanges the batch with the last axis)."""
  for k, ax in enumerate(axes): t = _marker("all_to_all", t.transpose(d + k, -1), ax).transpose(d + k, -1)
  return t

def _split(t: Tensor, d: int, sizes: tuple[int, ...], tiled: bool) -> Tensor:
  """Axis d of t as the axes `sizes` (the examples' blocks), followed by the block size when tiled."""
  n = t.shape[d]
  return t.reshape(t.shape[:d] + sizes + ((n // math.prod(sizes),) if tiled else ()) + t.shape[d + 1:])

def _merge(t: Tensor, d: int, k: int) -> Tensor:
  return t.reshape(t.shape[:d] + (math.prod(t.shape[d:d + k]),) + t.shape[d + k:])


# ---- reductions ------------------------------------------------------------------------------------------------------

def _reduction(kind: str, x, axis_name, axis_index_groups):
  axes = _bound(axis_name, kind, axis_index_groups)
  def one(leaf):
    t = as_tensor(leaf)
    if kind == "psum" and t.dtype == dtypes.bool: t = t.cast(dtypes.int32)   # as JAX
    for ax in axes: t = (t * ax.size if kind == "psum" else t) if _constant(t) else _marker(kind, t, ax)   # constant: concrete, as JAX
    return t
  return tree_map(one, x)

def psum(x, axis_name: Hashable | tuple, *, axis_index_groups=None):
  """Sum of x over the named mapped axis (or axes); x may be a pytree."""
  return _reduction("psum", x, axis_name, axis_index_groups)

def pmean(x, axis_name: Hashable | tuple, *, axis_index_groups=None):
  return _reduction("pmean", x, axis_name, axis_index_groups)

def pmax(x, axis_name: Hashable | tuple, *, axis_index_groups=None):
  """Maximum over the examples; its derivative is shared equally by the examples that attain it (jnp.max's convention: JAX
  has no derivative for pmax). Over a tuple of names, ties are shared name by name."""
  return _reduction("pmax", x, axis_name, axis_index_groups)

def pmin(x, axis_name: Hashable | tuple, *, axis_index_groups=None):
  return _reduction("pmin", x, axis_name, axis_index_groups)

def axis_index(axis_name: Hashable | tuple) -> Tensor:
  """Position along the named mapped axis, as an int32 scalar; for a tuple of names, the row-major combined index."""
  idx: Tensor | None = None
  for n in _names(axis_name):
    ax = bound_axis(n, "axis_index")
    i = _traced(marker(UOp.const(0, dtypes.int32), Collective("axis_index", ax), dtypes.int32))
    idx = i if idx is None else idx * ax.size + i
  assert idx is not None, "axis_index needs an axis name"
  return idx


# ---- collectives that move blocks between examples: movement ops around all_to_all markers -----------------------------
# Over a tuple of names the examples are numbered row-major (as axis_index), like one axis of the product size.

def all_gather(x, axis_name: Hashable | tuple, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
  """x of every example, stacked along a new axis `axis` (tiled: concatenated along axis `axis`)."""
  axes = _bound(axis_name, "all_gather", axis_index_groups)
  sizes = tuple(ax.size for ax in axes)
  def one(leaf):
    t = as_tensor(leaf)
    a = canonicalize_axis(axis, t.ndim if tiled else t.ndim + 1)
    g = t.reshape(t.shape[:a] + (1,) * len(sizes) + t.shape[a:]).expand(t.shape[:a] + sizes + t.shape[a:])
    if not _constant(t): g = _exchange(g, axes, a)   # example i has its own x at index i: exchanged, x of example k at k
    return _merge(g, a, len(sizes) + int(tiled))
  return tree_map(one, x) if axes else x

def psum_scatter(x, axis_name: Hashable | tuple, *, scatter_dimension: int = 0, axis_index_groups=None, tiled: bool = False):
  """psum(x)[i] for example i along `scatter_dimension`, which has the axis size (tiled: example i gets block i of it)."""
  axes = _bound(axis_name, "psum_scatter", axis_index_groups)
  sizes = tuple(ax.size for ax in axes)
  size = math.prod(sizes)
  def one(leaf):
    t = as_tensor(leaf)
    d = canonicalize_axis(scatter_dimension, t.ndim)
    n = t.shape[d]
    if tiled and n % size:
      raise ValueError(f"tiled reduce_scatter operand scatter dimension size {n} must be divisible by shard_count {size}")
    if not tiled and n != size: raise ValueError(f"reduce_scatter operand scatter dimension size {n} must match shard count {size}")
    return _exchange(_split(t, d, sizes, tiled), axes, d).sum(tuple(range(d, d + len(sizes))))
  return tree_map(one, x) if axes else x

def all_to_all(x, axis_name: Hashable | tuple, split_axis: int, concat_axis: int, *, axis_index_groups=None, tiled: bool = False):
  """Block j of x along `split_axis` goes to example j, which stacks the blocks it receives, in the examples' order, along a
  new axis `concat_axis` of the result without `split_axis` (tiled: concatenates them along `concat_axis`)."""
  axes = _bound(axis_name, "all_to_all", axis_index_groups)
  sizes = tuple(ax.size for ax in axes)
  size = math.prod(sizes)
  def one(leaf):
    t = as_tensor(leaf)
    s, c = canonicalize_axis(split_axis, t.ndim), canonicalize_axis(concat_axis, t.ndim)
    n = t.shape[s]
    if tiled and n % size:
      raise ValueError(f"The size of all_to_all split_axis ({n}) has to be divisible by the size of the named axis {axis_name} ({size})")
    if not tiled and n != size:
      raise ValueError("all_to_all requires the size of the mapped axis axis_name to equal x.shape[split_axis], but they are "
                       f"{size} and {n} respectively.")
    g = _split(t, s, sizes, tiled)
    order = [i for i in range(g.ndim) if not s <= i < s + len(sizes)]
    order[c:c] = range(s, s + len(sizes))   # the blocks' axes to concat_axis, then exchanged
    return _merge(_exchange(g.permute(order), axes, c), c, len(sizes) + int(tiled))
  return tree_map(one, x) if axes else x

def ppermute(x, axis_name: Hashable | tuple, perm: Sequence[tuple[int, int]]):
  """Example src's x goes to example dst for each (src, dst) in perm; examples that are no destination get zeros."""
  names = _names(axis_name)
  if len(names) != 1: raise NotImplementedError("tinyjax.lax.ppermute over a tuple of axis names is not supported (nor by jax.vmap)")
  ax = bound_axis(names[0], "ppermute")
  given, size = tuple(tuple(int(i) for i in p) for p in perm), ax.size
  if any(len(p) != 2 or not all(-size <= i < size for i in p) for p in given):
    raise ValueError(f"ppermute perm must be (source, destination) pairs of indices into an axis of size {size}, got {given}.")
  pairs = [(s % size, d % size) for s, d in given]
  if len({s for s, _ in pairs}) < len(pairs) or len({d for _, d in pairs}) < len(pairs):
    raise ValueError(f"ppermute sources and destinations must be unique, got {given}.")
  src = dict((d, s) for s, d in pairs)
  sources = tuple(src.get(k) for k in range(size))
  def one(leaf):
    t = as_tensor(leaf)
    if _constant(t) and len(pairs) == size: return t
    return _traced(collective("ppermute", t.uop, ax, sources))
  return tree_map(one, x)

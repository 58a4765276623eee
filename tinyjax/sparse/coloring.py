"""Graph colorings for compressed sparse derivatives (Gebremedhin, Manne & Pothen, "What color is your Jacobian?").

- Columns of J: distance-2 coloring of the bipartite row/column graph = distance-1 coloring of the column
  intersection graph (columns conflict when they share a row). Same for rows with J's transpose.
- Hessians: star coloring of H's adjacency graph (every path on four vertices uses at least three colors), which
  allows direct recovery of every nonzero from H @ seeds.
Each coloring is greedy; we try several vertex orderings (natural, largest-first, and DSATUR's dynamic one for
Jacobians) and keep the one with the fewest colors. The loops are over vertices (not matrix elements).
"""
from __future__ import annotations
import heapq
from typing import NamedTuple
import numpy as np
import scipy.sparse as sp


def conflict_graph(P: sp.spmatrix) -> sp.csr_matrix:
  """Columns of P that share a row (the column intersection graph), without self loops."""
  B = sp.csr_matrix(P, dtype=np.int32)
  G = (B.T @ B).tocsr()
  G.setdiag(0)
  G.eliminate_zeros()
  return G


def _largest_first(G: sp.csr_matrix) -> np.ndarray:
  return np.argsort(-np.diff(G.indptr), kind="stable")


def dsatur(G: sp.csr_matrix) -> np.ndarray:
  """Brélaz's DSATUR: always color the vertex with the most distinct colors among its neighbours (ties: larger
  degree). A dynamic ordering; on a 2-D 5-point stencil it finds the optimal 5 colors where static orders give 7."""
  n = G.shape[0]
  indptr, indices = G.indptr.tolist(), G.indices.tolist()
  deg = np.diff(G.indptr).tolist()
  color = [-1] * n
  seen = [0] * n            # bitmask of the colors among each vertex's colored neighbours
  heap = [(0, -deg[v], v) for v in range(n)]
  heapq.heapify(heap)
  while heap:
    s, _, v = heapq.heappop(heap)
    if color[v] >= 0 or -s != seen[v].bit_count(): continue   # stale entry
    m = seen[v]
    c = (~m & (m + 1)).bit_length() - 1                        # smallest color not in m
    color[v] = c
    bit = 1 << c
    for w in indices[indptr[v]:indptr[v + 1]]:
      if color[w] < 0 and not seen[w] & bit:
        seen[w] |= bit
        heapq.heappush(heap, (-seen[w].bit_count(), -deg[w], w))
  return np.array(color, dtype=np.int64)


def greedy_distance1(G: sp.csr_matrix, order: np.ndarray) -> np.ndarray:
  n = G.shape[0]
  color, forbidden = [-1] * n, [-1] * (n + 1)
  indptr, indices = G.indptr.tolist(), G.indices.tolist()   # Python lists: far faster than numpy per vertex
  for v in order.tolist():
    for w in indices[indptr[v]:indptr[v + 1]]:
      if (cw := color[w]) >= 0: forbidden[cw] = v
    c = 0
    while forbidden[c] == v: c += 1
    color[v] = c
  return np.array(color, dtype=np.int64)


def _best(candidates, lower: int) -> np.ndarray:
  """The coloring with the fewest colors; stops as soon as one reaches the lower bound (it is optimal)."""
  best: np.ndarray | None = None
  for make in candidates:
    c = make()
    if best is None or (len(c) and c.max() < best.max()): best = c
    if not len(best) or best.max() + 1 <= lower: break
  assert best is not None, "no coloring candidates"
  return best


def column_lower_bound(P: sp.spmatrix) -> int:
  """Columns sharing a row need distinct colors: the densest row is a lower bound on the number of colors."""
  P = sp.csr_matrix(P)
  return int(np.diff(P.indptr).max(initial=0))


def proper_columns(P: sp.csr_matrix, color: np.ndarray) -> bool:
  """No two columns of one color share a row (vectorised: each (row, color) pair appears once)."""
  if not P.nnz: return True
  rows = np.repeat(np.arange(P.shape[0], dtype=np.int64), np.diff(P.indptr))
  return bool(np.bincount(rows * (int(color.max()) + 1) + color[P.indices]).max() <= 1)

def lattice_colorings(P: sp.csr_matrix, lower: int, tries: int = 64):
  """Colorings of the columns of a grid stencil's pattern, vectorised: a column's index is read as coordinates in the
  grid whose strides are the pattern's frequent diagonal offsets (1-D: none; 2-D 5-point: the row length k), and its
  color is a weighted sum of the coordinates mod p, from p = the lower bound up (the 5-point stencil's optimal coloring
  is (i + 2j) mod 5). Only candidates; the caller keeps a proper one (`proper_columns`)."""
  m, n = P.shape
  rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(P.indptr))
  offs, counts = np.unique(np.abs(P.indices.astype(np.int64) - rows), return_counts=True)
  strides = [int(o) for o, c in zip(offs, counts, strict=True) if o > 1 and c >= max(m, 1) // 8][:2]
  strides = [s for i, s in enumerate(strides) if all(s % t == 0 for t in strides[:i])]   # nested: digits of one grid
  bounds = [1] + strides
  for p in range(max(lower, 1), max(lower, 1) + 3):
    weights = [np.arange(1, p)] * (len(bounds) - 1)
    for w in (np.stack(np.meshgrid(*weights, indexing="ij"), -1).reshape(-1, len(weights)) if weights else np.zeros((1, 0), np.int64))[:tries]:
      lattice = Lattice(tuple(bounds), (1, *(int(a) for a in w)), p)
      yield lattice.colors(n), lattice

def optimal_lattice(P: sp.csr_matrix, lower: int) -> tuple[np.ndarray, Lattice] | None:
  """The first proper lattice coloring of P's columns with `lower` colors (then optimal), if there is one."""
  for c, lattice in lattice_colorings(P, lower):
    if c.max(initial=-1) + 1 > lower: return None   # the lattice only pays when it is optimal
    if proper_columns(P, c): return c, lattice
  return None

class Lattice(NamedTuple):
  """color(v) = (sum_i weights[i] * digit_i(v)) mod p, with v's digits in the mixed radix of `bounds` (1, then the
  grid strides): a coloring as a formula, which the seed matrix can be computed from instead of stored."""
  bounds: tuple[int, ...]
  weights: tuple[int, ...]
  p: int
  def digits(self, v, floordiv, mod) -> list:
    b = self.bounds
    return [mod(floordiv(v, x), b[i + 1] // x) if i + 1 < len(b) else floordiv(v, x) for i, x in enumerate(b)]
  def colors(self, n: int) -> np.ndarray:
    d = self.digits(np.arange(n, dtype=np.int64), np.floor_divide, np.mod)
    return sum((w * x for w, x in zip(self.weights, d, strict=True)), np.zeros(n, np.int64)) % self.p

def color_columns(P: sp.spmatrix) -> np.ndarray:
  """A coloring of P's columns such that columns of one color never share a row (fewest colors found)."""
  return color_columns_lattice(P)[0]

def color_columns_lattice(P: sp.spmatrix) -> tuple[np.ndarray, Lattice | None]:
  """color_columns, and the lattice formula of the coloring if it is one. Grid stencils get the lower bound from a
  vectorised lattice coloring; otherwise greedy orderings and DSATUR on the column intersection graph (Python loops
  over vertices: seconds at 10^6 columns)."""
  P = sp.csr_matrix(P)
  lower = column_lower_bound(P)
  if (found := optimal_lattice(P, lower)) is not None: return found
  G = conflict_graph(P)
  return _best([lambda: greedy_distance1(G, np.arange(G.shape[0])), lambda: greedy_distance1(G, _largest_first(G)),
                lambda: dsatur(G)], lower), None


def color_rows(P: sp.spmatrix) -> np.ndarray:
  return color_columns(sp.csr_matrix(P).T)

def color_rows_lattice(P: sp.spmatrix) -> tuple[np.ndarray, Lattice | None]:
  return color_columns_lattice(sp.csr_matrix(P).T)


def greedy_star(G: sp.csr_matrix, order: np.ndarray) -> np.ndarray:
  """Greedy star coloring (GMP 2005, Algorithm 4.1): a distance-1 coloring in which no path on four vertices is
  two-colored."""
  n = G.shape[0]
  color = np.full(n, -1, dtype=np.int64)
  forbidden = np.full(n + 1, -1, dtype=np.int64)
  indptr, indices = G.indptr, G.indices
  def nbrs(v): return indices[indptr[v]:indptr[v + 1]]
  for v in order:
    for w in nbrs(v):
      cw = color[w]
      if cw >= 0: forbidden[cw] = v
      for x in nbrs(w):
        if x == v or (cx := color[x]) < 0: continue
        if cw < 0: forbidden[cx] = v                    # v - w - x: v may not repeat x's color through uncolored w
        else:
          # path v - w - x - y with color[y] == color[w] would be two-colored if v took x's color
          if any(color[y] == cw for y in nbrs(x) if y != w): forbidden[cx] = v
    c = 0
    while forbidden[c] == v: c += 1
    color[v] = c
  return color


def star_color(P: sp.spmatrix) -> np.ndarray:
  """Star coloring of a symmetric pattern's adjacency graph (the diagonal is ignored). A grid stencil (no row denser
  than twice the median row) first tries its optimal lattice column coloring (distance 2, so also a star coloring):
  5 colors for the 5-point stencil where the greedy star orders find 6, vectorised (the star loop takes seconds at
  10^5). With a dense row (an arrowhead) a star coloring can need far fewer colors than any distance-2 one."""
  Pc = sp.csr_matrix(P)
  per_row = np.diff(Pc.indptr)
  lower = column_lower_bound(Pc)
  if len(per_row) and lower <= 2 * np.median(per_row) and (found := optimal_lattice(Pc, lower)) is not None: return found[0]
  G = sp.csr_matrix(P, dtype=np.int32)
  G = ((G + G.T) != 0).astype(np.int32).tocsr()
  G.setdiag(0)
  G.eliminate_zeros()
  deg = np.diff(G.indptr)
  return _best([lambda: greedy_star(G, np.arange(G.shape[0])), lambda: greedy_star(G, _largest_first(G))],
               int(deg.max(initial=0)) + 1)

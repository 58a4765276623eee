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


def color_columns(P: sp.spmatrix) -> np.ndarray:
  """A coloring of P's columns such that columns of one color never share a row (fewest colors found)."""
  G = conflict_graph(P)
  return _best([lambda: greedy_distance1(G, np.arange(G.shape[0])), lambda: greedy_distance1(G, _largest_first(G)),
                lambda: dsatur(G)], column_lower_bound(P))


def color_rows(P: sp.spmatrix) -> np.ndarray:
  return color_columns(sp.csr_matrix(P).T)


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
  """Star coloring of a symmetric pattern's adjacency graph (the diagonal is ignored)."""
  G = sp.csr_matrix(P, dtype=np.int32)
  G = ((G + G.T) != 0).astype(np.int32).tocsr()
  G.setdiag(0)
  G.eliminate_zeros()
  deg = np.diff(G.indptr)
  return _best([lambda: greedy_star(G, np.arange(G.shape[0])), lambda: greedy_star(G, _largest_first(G))],
               int(deg.max(initial=0)) + 1)

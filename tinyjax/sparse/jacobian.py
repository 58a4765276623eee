"""spjacobian / sphessian: sparse derivatives in a fixed pattern, for nonlinear solvers.

Built once per input shape: the pattern is detected from the traced graph (detect.py), columns (forward mode) or
rows (reverse mode) are colored (coloring.py), and the seed matrix and the gather indices are made once. Calling the
object evaluates all colors in one batched pass — vmap of jvp over the column seeds, or of the vjp over the row
seeds — followed by a single gather of the nonzeros, in CSR order. The Jacobian is that of the flattened (and
concatenated) output leaves with respect to the flattened, concatenated input leaves.
"""
from __future__ import annotations
import functools, operator
from typing import Callable
import numpy as np
import scipy.sparse as sp
from tinyjax._tg import Tensor, dtypes, static_shape, placeholder, gather, host_buffer, np_dtype, default_device, sharding
from tinyjax import pytree as tu
from tinyjax.core import serialized, trace_scope, as_tensor, concrete_inputs
from tinyjax.transforms.vmap import vmap
from tinyjax.transforms.jvp import jvp
from tinyjax.transforms.vjp import vjp, grad
from tinyjax.sparse.detect import detect
from tinyjax.sparse.coloring import color_columns_lattice, color_rows_lattice, star_color, column_lower_bound, Lattice


def _flat(leaves: list[Tensor], dtype) -> Tensor:
  flat = [l.flatten().cast(dtype) for l in leaves]
  return flat[0] if len(flat) == 1 else Tensor.cat(*flat)

def _unflat(v: Tensor, specs, tree):
  """A flat vector back into the pytree `tree` of leaves with (shape, dtype) `specs`."""
  leaves, off = [], 0
  for shape, dt in specs:
    n = int(np.prod(shape, dtype=np.int64))
    leaves.append(v[off:off + n].reshape(shape).cast(dt))
    off += n
  return tu.tree_unflatten(tree, leaves)

def _device_data(a: np.ndarray, dtype, device=None, axis: int | None = None) -> Tensor:
  """numpy data as a realized Tensor of `dtype` on `device` (the default one; a tuple: replicated, or sharded on
  `axis`), copied in from the host: no cast kernel to compile (Tensor(a).cast(dtype).realize() was half of a small
  spjacobian's setup)."""
  device = default_device() if device is None else device
  if (t := host_buffer(a.astype(np_dtype(dtype)), device, axis)) is None:
    t = Tensor(a).cast(dtype)
    return (t.to(device) if axis is None else t.shard(device, axis)).realize()
  return t

def _span(counts: np.ndarray) -> str: return f"{counts.min()}..{counts.max()}" if len(counts) else "0..0"

def _inputs(x):
  leaves, tree = tu.tree_flatten(x)
  leaves = [as_tensor(l) for l in leaves]
  for l in leaves:
    if not dtypes.is_float(l.dtype): raise TypeError(f"sparse derivatives need floating-point inputs, got {l.dtype.name}")
  return leaves, tree


@serialized
def sparsity(fun: Callable, x) -> sp.csr_matrix:
  """The structural sparsity pattern of fun's Jacobian at x's shapes (boolean scipy CSR), from the traced graph:
  d flatten(outputs) / d flatten(inputs), leaves concatenated in tree order. No numerical probing of x."""
  leaves, tree = _inputs(x)
  phs = [placeholder(tuple(l.shape), l.dtype, l.device) for l in leaves]
  with trace_scope("sparsity", [p.uop for p in phs]):
    outs = [as_tensor(o) for o in tu.tree_leaves(fun(tu.tree_unflatten(tree, phs)))]
  return detect([o.uop for o in outs], [p.uop for p in phs])


def _as_pattern(pattern, shape) -> sp.csr_matrix:
  if isinstance(pattern, tuple) and len(pattern) == 2 and not sp.issparse(pattern):
    r, c = (np.asarray(a, dtype=np.int64) for a in pattern)
    P = sp.csr_matrix((np.ones(len(r), dtype=bool), (r, c)), shape=shape)
  else:
    P = sp.csr_matrix(pattern, dtype=bool)
  if P.shape != shape: raise ValueError(f"sparsity pattern has shape {P.shape}, but the Jacobian has shape {shape}")
  P.sum_duplicates()
  P.sort_indices()
  return P


class SparseJacobian:
  """Nonzeros of a sparse Jacobian (or Hessian) in a fixed CSR pattern. See tinyjax.spjacobian."""
  kind = "Jacobian"

  @serialized
  def __init__(self, fun: Callable, x, sparsity=None, mode: str = "auto", args: tuple = (), devices=None):
    self.fun = fun
    self.devices = None if devices is None else tuple(devices)
    self._templates: dict = {}   # the device(s) it runs on -> (placeholders, values)
    self._consts: dict = {}      # the device(s) it runs on -> (seeds, gather index)
    leaves, self.in_tree = _inputs(x)
    self.in_specs = [(static_shape(l), l.dtype) for l in leaves]
    arg_leaves, self.arg_tree = tu.tree_flatten(tuple(args))
    arg_leaves = [as_tensor(a) for a in arg_leaves]
    self.arg_specs = [(static_shape(a), a.dtype) for a in arg_leaves]
    self.dtype = leaves[0].dtype
    phs = [placeholder(s, d, l.device) for (s, d), l in zip(self.in_specs + self.arg_specs, leaves + arg_leaves, strict=True)]
    k = len(self.in_specs)
    with trace_scope("spjacobian", [p.uop for p in phs]):
      out_leaves, self.out_tree = tu.tree_flatten(self._fun(tu.tree_unflatten(self.in_tree, phs[:k]), phs[k:]))
    outs = [as_tensor(o) for o in out_leaves]
    self.out_specs = [(static_shape(o), o.dtype) for o in outs]
    m, n = (sum(int(np.prod(s, dtype=np.int64)) for s, _ in specs) for specs in (self.out_specs, self.in_specs))
    self.shape = self._matrix_shape(m, n)
    self.pattern = self._detect(phs, outs) if sparsity is None else _as_pattern(sparsity, self.shape)
    self.pattern.sort_indices()
    self._setup(mode)

  def _fun(self, x, arg_leaves: list[Tensor]):
    """fun(x, *args), the arguments given as their flat leaves."""
    return self.fun(x, *tu.tree_unflatten(self.arg_tree, arg_leaves))

  def _matrix_shape(self, m: int, n: int) -> tuple[int, int]: return (m, n)

  def _detect(self, phs: list[Tensor], outs: list[Tensor]) -> sp.csr_matrix:
    k = len(self.in_specs)
    return detect([o.uop for o in outs], [p.uop for p in phs[:k]], [p.uop for p in phs[k:]])

  def _setup(self, mode: str):
    P, (m, n) = self.pattern, self.shape
    self.rows = np.repeat(np.arange(m), np.diff(P.indptr)).astype(np.int64)
    self.cols = P.indices.astype(np.int64)
    def ncol(c): return int(c.max()) + 1 if c is not None and len(c) else 0
    fwd, fwd_lattice = color_columns_lattice(P) if mode in ("fwd", "auto") else (None, None)
    # auto: rows need at least (densest column) colors; if forward already has no more, reverse cannot win
    skip_rev = mode == "auto" and ncol(fwd) <= column_lower_bound(P.T)
    rev, rev_lattice = color_rows_lattice(P) if mode == "rev" or (mode == "auto" and not skip_rev) else (None, None)
    self.mode = mode if mode != "auto" else ("fwd" if rev is None or ncol(fwd) <= ncol(rev) else "rev")
    colors, lattice = (fwd, fwd_lattice) if self.mode == "fwd" else (rev, rev_lattice)
    assert colors is not None
    self.colors, self.ncolors = colors, ncol(colors)
    w = self._width()
    if self.mode == "fwd": self._set_seeds(n, self.rows * w + self.colors[self.cols], lattice)
    else: self._set_seeds(m, self.cols * w + self.colors[self.rows], lattice)

  def _width(self) -> int:
    """Seed rows: the colors, padded with zero seeds to a multiple of the devices they are split across."""
    d = len(self.devices) if self.devices else 1
    return -(-self.ncolors // d) * d

  def _set_seeds(self, k: int, index: np.ndarray, lattice: Lattice | None = None):
    """Seed matrix (ncolors, k), one-hot by color, and the gather index of the nonzeros in the compressed result
    (position * ncolors + color), made on the default device now and on others when a call runs there."""
    self._seed_spec = (k, index, lattice)
    self._constants(self.devices or default_device())

  def _constants(self, device) -> tuple[Tensor, Tensor]:
    """The seeds and the gather index for a call on `device` (a tuple: replicated on those devices; or, built with
    devices=, the seeds split across them by color). A cyclic coloring's seeds are its formula, computed in the kernel
    from the column index: no seed buffer to read (the 1-D Bratu JVP kernel at n = 10^5: 511-716 us with the buffer,
    157 us without), and no device, so it runs wherever the input is. Not split across devices= (a Tensor with no
    device cannot be sharded: each device computed every color), nor a grid's lattice formula: its integer divisions
    per neighbour and color cost more than the loads (2-D Bratu: 185 us with the buffer, 511 us with the formula)."""
    if device in self._consts: return self._consts[device]
    (k, index, lattice), home = self._seed_spec, self.devices[0] if self.devices else device
    if lattice is not None and len(lattice.bounds) == 1 and not self.devices:   # a cyclic coloring (banded problems): v % p
      # no op for a radix or weight of 1: each one left in would stop tinygrad folding the formula into the kernel
      digits = lattice.digits(Tensor.arange(k), lambda a, b: a if b == 1 else a // b, operator.mod)
      terms = [d if w == 1 else w * d for w, d in zip(lattice.weights, digits, strict=True)]
      color = functools.reduce(operator.add, terms) % lattice.p
      seeds = (color.unsqueeze(0) == Tensor.arange(self.ncolors, dtype=dtypes.int32).unsqueeze(1)).cast(self.dtype)
    else:   # with devices=, the (padded) colors split across them: each computes the JVPs of its rows of seeds
      onehot = np.zeros((self._width(), k))
      onehot[self.colors, np.arange(k)] = 1
      seeds = _device_data(onehot, self.dtype, device, 0 if self.devices else None)
    self._consts[device] = seeds, _device_data(index, dtypes.int32, home)
    return self._consts[device]

  @property
  def nnz(self) -> int: return int(self.pattern.nnz)

  def _compressed(self, x, arg_leaves: list[Tensor], seeds: Tensor) -> Tensor:
    """All colors in one batched pass: (m, ncolors) = J @ seeds.T (fwd) or (n, ncolors) = (seeds @ J).T (rev). Colors
    last: tinygrad then computes a row's colors in one loop iteration, sharing what does not depend on the seed (the
    2-D Bratu kernel at n = 10^4: 175 us with colors first, 18 us last; 1-D: 40 -> 52 us, dispatch-bound anyway)."""
    (it, ispecs), (ot, ospecs) = (self.in_tree, self.in_specs), (self.out_tree, self.out_specs)
    def fun(x): return self._fun(x, arg_leaves)
    def flat_out(y): return _flat([as_tensor(l) for l in tu.tree_leaves(y)], self.dtype)
    if self.mode == "fwd":
      return vmap(lambda s: flat_out(jvp(fun, (x,), (_unflat(s, ispecs, it),))[1]), out_axes=1)(seeds)
    _, pullback = vjp(fun, x)
    return vmap(lambda s: _flat(tu.tree_leaves(pullback(_unflat(s, ospecs, ot))[0]), self.dtype), out_axes=1)(seeds)

  @serialized
  def __call__(self, x, *args) -> Tensor:
    """The nonzero values at x (and the arguments `args` the object was built with: same shapes, any values), a lazy
    Tensor of length nnz in the fixed CSR order (self.rows, self.cols)."""
    leaves, tree = _inputs(x)
    got = [(tuple(l.shape), l.dtype) for l in leaves]
    if tree != self.in_tree or got != self.in_specs:
      raise ValueError(f"this Sparse{self.kind} was built for inputs {self.in_tree} with (shape, dtype) {self.in_specs}, "
                       f"got {tree} with {got}: build one per input shape")
    arg_leaves, arg_tree = tu.tree_flatten(tuple(args))
    arg_leaves = [as_tensor(a) for a in arg_leaves]
    if arg_tree != self.arg_tree or (got_args := [(tuple(a.shape), a.dtype) for a in arg_leaves]) != self.arg_specs:
      raise ValueError(f"this Sparse{self.kind} was built with args {self.arg_tree} of (shape, dtype) {self.arg_specs}, "
                       f"got {arg_tree}" + ("" if arg_tree != self.arg_tree else f" with {got_args}"))
    if self.devices:   # every device gets the whole input (replicated); the values are gathered on the first device
      leaves, arg_leaves = ([(l.to(self.devices[0]) if isinstance(l.device, tuple) else l).shard(self.devices) for l in ls]
                            for ls in (leaves, arg_leaves))
      device = self.devices
    else:
      if sharded := [(l.device, ax) for l in leaves + arg_leaves if (ax := sharding(l)) is not None]:
        raise ValueError(f"this Sparse{self.kind} was built without devices=, got inputs sharded (devices, axis) {sharded}: a point split "
                         f"across devices is not supported. Build it with devices=... to split its colors across devices, or "
                         f"vmap it over a batch sharded along the batch axis")
      # on several devices (replicated, as a vmapped example of a batch sharded along its axis is): each computes it,
      # with the inputs on one device copied there
      device = next((l.device for l in leaves + arg_leaves if isinstance(l.device, tuple)), leaves[0].device)
      if isinstance(device, tuple): leaves, arg_leaves = ([l.to(device) for l in ls] for ls in (leaves, arg_leaves))
    # the batched JVP/VJP graph is traced once per device(s), on placeholders; each call only substitutes the inputs
    if (template := self._templates.get(device)) is None:
      seeds, index = self._constants(device)
      phs = [placeholder(s, d, device) for s, d in self.in_specs + self.arg_specs]
      k = len(self.in_specs)
      compressed = self._compressed(tu.tree_unflatten(self.in_tree, phs[:k]), phs[k:], seeds)
      if self.devices: compressed = compressed.to(self.devices[0])
      template = self._templates[device] = (phs, gather(compressed, index).uop)
    phs, vals = template
    concrete_inputs(leaves + arg_leaves)
    return Tensor(vals.substitute({p.uop: l.uop for p, l in zip(phs, leaves + arg_leaves, strict=True)}))

  def to_scipy(self, x, *args) -> sp.csr_matrix:
    return self.matrix(self(x, *args))

  def matrix(self, values) -> sp.csr_matrix:
    """The scipy CSR matrix with these nonzero values (e.g. from a jitted call, `tinyjax.jit(jac)(x)`)."""
    P = self.pattern
    vals = values.numpy() if isinstance(values, Tensor) else np.asarray(values)
    return sp.csr_matrix((vals, P.indices.copy(), P.indptr.copy()), shape=self.shape)

  def todense(self, x, *args) -> np.ndarray: return self.to_scipy(x, *args).toarray()

  def structure(self) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the nonzeros, int64, in the order of the values a call returns: IPOPT's `jacobianstructure`
    (and cyipopt's), scipy's COO coordinates."""
    return self.rows.copy(), self.cols.copy()

  def summary(self) -> str:
    """A few lines for a person: shape, nonzeros, density, nonzeros per row and column, bandwidth, coloring."""
    (m, n), P = self.shape, self.pattern
    per_row, per_col = np.diff(P.indptr), np.bincount(P.indices, minlength=n)
    band = int(np.abs(self.rows - self.cols).max(initial=0))
    return "\n".join([f"Sparse{self.kind} {m} x {n}: {self.nnz:,} nonzeros ({self.nnz / max(m * n, 1):.3%} dense)",
                      f"  per row: {_span(per_row)} (mean {per_row.mean() if m else 0:.2f}); per column: {_span(per_col)}; "
                      f"bandwidth {band}",
                      f"  {self.ncolors} colors ({self.mode}): {self.ncolors} batched "
                      f"{'Hessian-vector products' if self.mode == 'star' else 'JVPs' if self.mode == 'fwd' else 'VJPs'} per call "
                      f"instead of {min(m, n) if self.mode != 'star' else n} for a dense {self.kind}"])

  def spy(self, path=None, ax=None, markersize: float | None = None):
    """The sparsity pattern drawn with matplotlib (`ax.spy`): into `ax` if given, else a new figure, written to `path`
    (a PNG, for example) if given. Returns the axes. matplotlib is needed (`pip install matplotlib`)."""
    try: from matplotlib.figure import Figure
    except ImportError: raise ImportError(f"Sparse{self.kind}.spy needs matplotlib: pip install matplotlib") from None
    if ax is None:
      size = (5, max(1.0, 5 * self.shape[0] / max(self.shape[1], 1)))
      if path is not None: ax = Figure(figsize=size).subplots()   # no pyplot: leaves the user's backend alone
      else:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=size)
    ax.spy(self.pattern, markersize=markersize if markersize is not None else max(0.2, min(4.0, 300 / max(self.shape))))
    ax.set_title(f"{self.shape[0]} x {self.shape[1]}, {self.nnz:,} nonzeros, {self.ncolors} colors", fontsize=9)
    if path is not None: ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax

  def picture(self, max_rows: int = 16, max_cols: int = 48) -> str:
    """The pattern as text, one character per block of entries: '#' where the block has a nonzero."""
    (m, n), P = self.shape, self.pattern.tocoo()
    h, w = min(m, max_rows), min(n, max_cols)
    grid = np.zeros((h, w), dtype=bool)
    grid[P.row * h // max(m, 1), P.col * w // max(n, 1)] = True
    return "\n".join("".join("#" if c else "." for c in row) for row in grid)

  def __repr__(self):
    m, n = self.shape
    density = self.nnz / max(m * n, 1)
    return (f"Sparse{self.kind}(shape={self.shape}, nnz={self.nnz}, density={density:.2%}, mode='{self.mode}', "
            f"colors={self.ncolors})\n{self.picture()}")


class SparseHessian(SparseJacobian):
  """Nonzeros of the Hessian of a scalar function: star coloring, batched Hessian-vector products."""
  kind = "Hessian"

  def __init__(self, fun: Callable, x, sparsity=None, args: tuple = (), devices=None):
    super().__init__(fun, x, sparsity, mode="star", args=args, devices=devices)

  def _matrix_shape(self, m: int, n: int) -> tuple[int, int]:
    if m != 1 or len(self.out_specs) != 1:
      raise TypeError(f"sphessian needs a scalar-output function, got output shapes {[s for s, _ in self.out_specs]}")
    return (n, n)

  def _detect(self, phs: list[Tensor], outs: list[Tensor]) -> sp.csr_matrix:
    k = len(self.in_specs)
    with trace_scope("sphessian", [p.uop for p in phs]):
      g = tu.tree_leaves(grad(lambda x: self._fun(x, phs[k:]))(tu.tree_unflatten(self.in_tree, phs[:k])))
    P = detect([l.uop for l in g], [p.uop for p in phs[:k]], [p.uop for p in phs[k:]])
    return ((P + P.T) != 0).tocsr()   # symmetric by construction; make it exactly so

  def _setup(self, mode: str):
    P, n = self.pattern, self.shape[1]
    self.rows = np.repeat(np.arange(n), np.diff(P.indptr)).astype(np.int64)
    self.cols = P.indices.astype(np.int64)
    self.mode, self.colors = "star", star_color(P)
    self.ncolors = int(self.colors.max()) + 1 if n else 0
    # star coloring recovery: H_ij = B[color(j), i] when color(j) appears once among row i's off-diagonal
    # neighbours, else H_ij = B[color(i), j] (one of the two holds on every edge of a star coloring)
    r, c = self.rows, self.cols
    key = r * self.ncolors + self.colors[c]
    off = r != c
    uniq, counts = np.unique(key[off], return_counts=True)
    once = np.ones(len(r), dtype=bool)
    once[off] = counts[np.searchsorted(uniq, key[off])] == 1
    w = self._width()
    self._set_seeds(n, np.where(once, r * w + self.colors[c], c * w + self.colors[r]))

  def structure(self, lower: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the nonzeros in the order of the values; `lower=True`: of the lower triangle only (row >= col),
    in the order of `lower(values)`: IPOPT's `hessianstructure`."""
    keep = self.rows >= self.cols if lower else slice(None)
    return self.rows[keep].copy(), self.cols[keep].copy()

  def lower(self, values):
    """The values of the lower triangle (row >= col), in `structure(lower=True)`'s order, from a call's values (a
    Tensor: a lazy gather that jit fuses into the call; or a numpy array): IPOPT's `hessian` callback."""
    idx = np.flatnonzero(self.rows >= self.cols)
    if isinstance(values, Tensor): return gather(values, _device_data(idx, dtypes.int32, values.device))
    return np.asarray(values)[idx]

  def _compressed(self, x, arg_leaves: list[Tensor], seeds: Tensor) -> Tensor:
    it, ispecs = self.in_tree, self.in_specs
    g = grad(lambda x: self._fun(x, arg_leaves))
    return vmap(lambda s: _flat(tu.tree_leaves(jvp(g, (x,), (_unflat(s, ispecs, it),))[1]), self.dtype), out_axes=1)(seeds)


def spjacobian(fun: Callable, x, *, args: tuple = (), sparsity=None, mode: str = "auto", devices=None) -> SparseJacobian:
  """A SparseJacobian for fun at x's shapes: `jac(x)` gives the nonzeros (length nnz, CSR order jac.rows/jac.cols).
  `args`: further arguments, fun(x, *args), not differentiated and whose values may change between calls
  (`jac(x, *args)`): the pattern assumes nothing of their values (a Lagrange multiplier that is zero now is not a
  structural zero). `sparsity` (a scipy.sparse matrix or (rows, cols)) skips detection; mode 'fwd' colors columns and uses JVPs, 'rev'
  colors rows and uses VJPs, 'auto' picks fewer colors (forward on ties)."""
  if mode not in ("auto", "fwd", "rev"): raise ValueError(f"mode must be 'auto', 'fwd' or 'rev', got {mode!r}")
  return SparseJacobian(fun, x, sparsity, mode, args, devices)


def sphessian(fun: Callable, x, *, args: tuple = (), sparsity=None, devices=None) -> SparseHessian:
  """A SparseHessian for scalar fun at x's shapes: star coloring and batched Hessian-vector products. `args` as in
  spjacobian: a Lagrangian's multipliers and objective factor, `sphessian(L, z, args=(lam, sigma))`, then
  `H(z, lam, sigma)`."""
  return SparseHessian(fun, x, sparsity, args, devices)

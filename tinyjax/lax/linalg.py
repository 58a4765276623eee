"""lax.linalg: the matrix factorizations and solves the array library is written on, with their derivative rules.

Every function takes batches of matrices (leading axes) and works under vmap, jit and every derivative transform.
Which path runs depends on where the data lives (`on_host`, docs/linalg.md): on tinygrad's CPU device each
factorization is one host call of the LAPACK routine JAX's CPU calls (`LapackCall`: potrf, syevd, gesdd, geqrf/orgqr,
getrf, trsm, gesv), so the numbers, eigenvector signs included, are JAX's; on every other device it is an algorithm in
tinygrad Tensor ops in static Python loops. The derivatives are JAX's rules (`jax/_src/lax/linalg.py`), written once
on the factorization's outputs (the `_*_tangent` functions): the LAPACK rules' `jvp`, transposed for reverse mode, and
the op path's `custom_jvp`s, so the loops are never differentiated. A custom_jvp rule only applies custom functions to
primal values and keeps the tangent in plain Tensor ops: reverse mode transposes the rule, and a custom call on a
tangent would have to be transposed through its own rule again. `lu` and `triangular_solve` are JAX's `lax.linalg`
functions; the other names are tinyjax's kernels, which `tinyjax.numpy.linalg` and `tinyjax.scipy.linalg` wrap in
their APIs.
"""
from __future__ import annotations
import functools, math
from typing import Any, Callable
from dataclasses import dataclass
import numpy as np
import scipy.linalg
from tinygrad import Tensor
from tinyjax._tg import UOp, DType, dtypes, static_shape as _sh, run_on_host, np_dtype, host_buffer, jit_capturing, \
  row_or_run
from tinyjax.core import is_tracing, as_tensor, fill_like
from tinyjax.complex_array import ComplexArray, from_data, is_complex_data
from tinyjax.dtypes import canonical_dtype, to_inexact_dtype
from tinyjax.custom import custom_jvp, structural
from tinyjax.transforms.vjp import vjp
from tinyjax.lax.host_call import HostCallRule, host_device

__all__ = ["lu", "lu_pivots_to_permutation", "triangular_solve", "tri_inv", "cholesky_lower", "lu_parts", "permutation_matrix",
           "LapackSolve", "solve",
           "inv", "det", "slogdet", "householder", "qr_reduced", "qr_complete", "sym_eigh", "svd_reduced", "svd_full_or_reduced",
           "HOST_LAPACK", "on_host", "LapackCall", "LapackCholeskySolve", "expm",
           "singular_values", "eig", "mT", "batch_shape", "eye_like", "const_like", "tril", "triu", "diag", "embed_diag", "sign1"]

# ---- helpers --------------------------------------------------------------------------------------------------------

def mT(x: Tensor) -> Tensor: return x.transpose(-2, -1)
def batch_shape(x: Tensor) -> tuple[int, ...]: return tuple(_sh(x)[:-2])

# The constant matrices the rules use, built once per shape: tinygrad builds an identity or a triangle mask from
# aranges (a cumsum through pooling), ~10 ms of Python each, and numpy data through a copy, ~1 ms; a derivative rule
# builds several per call. The cached graphs are the same nodes tinygrad builds (the same kernels).
@functools.lru_cache(maxsize=512)
def _eye(n: int, dt: DType) -> UOp: return Tensor.eye(n, dtype=dt).uop
@functools.lru_cache(maxsize=512)
def _tri(r: int, c: int, d: int) -> UOp: return Tensor._tri(r, c, d).uop
@functools.lru_cache(maxsize=512)
def _const(data: bytes, shape: tuple[int, ...], device, dt: DType) -> UOp:
  a = np.frombuffer(data, np.float64).reshape(shape)
  # a buffer filled from the host (Tensor(array) is a copy node, which eager values cannot take: every eager graph
  # holding one was scheduled by tinygrad anew, ~50 ms)
  if (npdt := np_dtype(dt)) is not None and (t := host_buffer(a.astype(npdt), device)) is not None: return t.uop
  return Tensor(a, device=device).cast(dt).uop

def eye_like(n: int, like: Tensor) -> Tensor: return Tensor(_eye(n, like.dtype))
def const_like(a: np.ndarray, like: Tensor) -> Tensor:
  a = np.ascontiguousarray(a, dtype=np.float64)
  return Tensor(_const(a.tobytes(), a.shape, like.device, like.dtype))
def tril(x: Tensor, k: int = 0) -> Tensor:
  """x.tril(k), its mask built once per shape."""
  return Tensor(_tri(_sh(x)[-2], _sh(x)[-1], k + 1)).where(x.const_like(0), x)
def triu(x: Tensor, k: int = 0) -> Tensor:
  """x.triu(k), its mask built once per shape."""
  return Tensor(_tri(_sh(x)[-2], _sh(x)[-1], k)).where(x, x.const_like(0))

def diag(x: Tensor) -> Tensor:
  """The diagonal of the last two (square) axes."""
  return _diag_blocks(x, 1)[..., 0, 0]

def _diag_blocks(x: Tensor, s: int) -> Tensor:
  """The diagonal s x s blocks of the (p, p) matrices x (s divides p), as (..., p // s, s, s)."""
  p, b = _sh(x)[-1], batch_shape(x)
  k = p // s
  nb = len(b)
  y = x.reshape(*b, k, s, k, s).permute(*range(nb), nb, nb + 2, nb + 1, nb + 3).reshape(*b, k * k, s, s)
  # the flat block index of block (i, i) is i * (k + 1): pad to k * (k + 1) blocks and take column 0 of each row
  y = y.pad(((0, 0),) * nb + ((0, k), (0, 0), (0, 0))).reshape(*b, k, k + 1, s, s)
  return y[..., 0, :, :]

def embed_diag(d: Tensor) -> Tensor:
  """Matrices with the last axis of d on their diagonals."""
  n = _sh(d)[-1]
  return d.unsqueeze(-1) * eye_like(n, d)

def sign1(x: Tensor) -> Tensor: return (x < 0).where(-1.0, 1.0).cast(x.dtype)   # sign with sign(0) = +1

def _nan_like(x: Tensor, bad: Tensor) -> Tensor:
  """x, all NaN in every matrix whose `bad` (shape batch) is set: how JAX reports a failed factorization."""
  return bad.reshape(*bad.shape, 1, 1).where(math.nan, x).cast(x.dtype)

def _swap_last(x: Tensor, i: int, j: int) -> list[int]:
  order = list(range(x.ndim))
  order[i], order[j] = order[j], order[i]
  return order

# ---- LAPACK on the host ------------------------------------------------------------------------------------------------
# JAX's CPU factorizations are LAPACK calls (jaxlib calls scipy's LAPACK: the same routines as scipy.linalg.lapack).
# On the CPU tinyjax runs the same routines as one host call each (lax.host_call.HostCallRule: a node whose lowering is
# a call into Python, replayed under jit like a loop), so it gets JAX's numbers, signs of eigenvectors included. The
# tinygrad-op algorithms below stay for every other device. An LU in tinygrad ops unrolls into n steps of kernels
# (534 kernels and 38 s of compiling for n = 100); one host call runs it at LAPACK's speed.

HOST_LAPACK = True   # False: every device runs the tinygrad-op algorithms (tests pin both paths with it)

def on_host(x: Tensor) -> bool:
  """Whether a factorization of x runs LAPACK on the host: x lives on tinygrad's CPU device ("CPU", "CPU:LLVM", ...),
  whose buffers are host memory. Every other device (a GPU, the PYTHON emulator, a multi-device tuple) runs the
  tinygrad-op algorithm: its data would go to the host and back, and tinygrad's kernels run there anyway."""
  return HOST_LAPACK and isinstance(d := host_device(x), str) and d.split(":")[0] == "CPU"

_PREFIX: dict[type, str] = {np.float64: "d", np.float32: "s", np.complex128: "z", np.complex64: "c"}

def _routine(name: str, work: type) -> Callable:
  """The LAPACK routine of this precision: float32 stays float32 (sgesv, spotrf, ...), as JAX; complex data the
  complex routines (zgetrf, cgeev, ...)."""
  return getattr(scipy.linalg.lapack, _PREFIX[work] + name)

class LapackCall(HostCallRule):
  """One LAPACK routine on the host, per matrix of a batch. A subclass gives the outputs' types for one matrix
  (`core_types`) and `one(*matrices)`, the routine on one matrix per argument (float64 arrays for float64 data,
  float32 otherwise: LAPACK has no half precision). Every argument has the same batch axes (leading); the batch loops
  in numpy (`compute`), vmap moves its axis to the front (`batched`). Failed routines give NaN, as JAX."""
  name = "lapack"
  core_ndim = 2   # the arguments are matrices (1: vectors), after the batch axes
  def core_types(self, shapes: list[tuple[int, ...]], dt: DType) -> list[tuple[tuple[int, ...], DType]]: raise NotImplementedError
  one: Callable[..., tuple[np.ndarray, ...]]   # the routine on one matrix per argument

  def out_types(self, xs):
    b = _sh(xs[0])[:xs[0].ndim - self.core_ndim]
    return [(b + s, d) for s, d in self.core_types([_sh(x)[len(b):] for x in xs], xs[0].dtype)]

  def call(self, xs: list[Tensor]) -> list[Tensor]:
    types = self.out_types(xs)
    if all(0 in s for s, _ in types):   # an empty batch: nothing to compute (and a host call takes no empty buffer)
      return [Tensor.zeros(*s, dtype=d, device=xs[0].device) for s, d in types]
    if not is_tracing() and not jit_capturing() and isinstance(device := host_device(xs[0]), str) and \
       all(np_dtype(d) is not None for d in [x.dtype for x in xs] + [d for _, d in types]):
      # eager (concrete arguments, no transform): the routine runs now, as JAX dispatches an op, and its results are new
      # buffers. The graph of a host call would be scheduled and compiled anew at every call (its executor is a new
      # closure each time): ~20 ms instead of ~0.1 ms.
      Tensor.realize(*xs)   # (computed first: numpy() copies a realized buffer straight out)
      outs = [host_buffer(r, device) for r in self._run([x.numpy() for x in xs], types)]
      assert all(o is not None for o in outs), "numpy dtypes checked above"
      return outs  # type: ignore[return-value]
    return super().call(xs)

  def compute(self, vals: list[np.ndarray], outs: list[tuple[tuple[int, ...], type]]) -> list[np.ndarray]:
    """The outputs (shapes and numpy dtypes `outs`) for the arguments' data: `one` per matrix of the batch."""
    batch = vals[0].shape[:vals[0].ndim - self.core_ndim]
    if not batch: return list(self.one(*vals))   # one matrix (~15 us less than the loop below for n = 8)
    res: list[np.ndarray] = [np.empty(s, d) for s, d in outs]
    for i in np.ndindex(batch):
      for o, r in zip(res, self.one(*(v[i] for v in vals)), strict=True): o[i] = r
    return res

  def _run(self, vals: list[np.ndarray], outs: list[tuple[tuple[int, ...], DType]]) -> list[np.ndarray]:
    """The outputs (in the outputs' dtypes) for the arguments' data: the routine in float64 for float64 data, in float32
    for other floats (LAPACK has no half precision), integers as they are."""
    work = np.float64 if vals[0].dtype == np.float64 else np.float32
    vals = [v.astype(work, copy=False) if v.dtype.kind == "f" else v for v in vals]
    # (the LAPACK and BLAS wrappers report failures in `info`, not as warnings; expm's numpy products silence their own)
    res = self.compute(vals, [(s, work if dtypes.is_float(d) else _np(d)) for s, d in outs])
    return [r.astype(_np(d), copy=False) for r, (_, d) in zip(res, outs, strict=True)]

  def row(self, ins, outs) -> tuple[str, tuple] | None:
    """The routine as a row of compiled code for arguments and outputs of these types: the row's name and its
    arguments before the buffers (`_tg.row_or_run`), or None (no row: it runs from Python)."""
    return None

  def executor(self, ins, outs):
    shapes = [s for s, _ in outs] + [s for s, _ in ins]
    def run(bufs) -> None: run_on_host(bufs, len(outs), shapes, lambda vals: self._run(vals, outs))
    return run if (row := self.row(ins, outs)) is None else row_or_run(run, *row)

  def batched(self, flags, size): return self.batched_leading(flags, size)

  # the derivatives: `jvp` is JAX's rule for the factorization, the same function of its outputs as the tinygrad-op
  # path's custom_jvp rule (the `_*_tangent` functions); it calls LAPACK on primal values only and is linear in the
  # tangents, so reverse mode transposes it, as JAX does (and as custom.py does for a custom_jvp). (The host call is not
  # wrapped in a custom_jvp: a custom function whose body holds a host call fails under jit when its argument is a
  # view, as vmap's moved axis or a transpose are.)
  def vjp(self, xs, cts):
    outs = self.call(xs)
    cts = [o.zeros_like() if c is None else c for o, c in zip(outs, cts, strict=True)]
    _, pullback = vjp(lambda *ts: tuple(self.jvp(xs, list(ts))), *[x.zeros_like() for x in xs])
    return list(pullback(tuple(cts)))

_ROW_DTYPES = (dtypes.float32, dtypes.float64)   # the routines' rows (_tg.row_or_run) are real, of these precisions

def _failed(o: np.ndarray) -> np.ndarray: return np.full_like(o, np.nan)

_np = functools.lru_cache(maxsize=None)(np_dtype)

def _permutation(piv: np.ndarray, m: int) -> np.ndarray:
  """The row permutation of LAPACK's 0-based interchanges (rows i and piv[i] swapped in turn), on Python ints (numpy
  indexing per swap took 1.5 ms at n = 512)."""
  perm = list(range(m))
  for i, p in enumerate(piv.tolist()): perm[i], perm[p] = perm[p], perm[i]
  return np.array(perm)   # (~4 us a call, per output and host call)

def _host(a: Tensor) -> bool: return on_host(a) and min(_sh(a)[-2:]) > 0   # (empty matrices: the op path's shapes)

# ---- triangular inverse (the building block of every solve) ----------------------------------------------------------

def _tri_inv_lower(t: Tensor) -> Tensor:
  """Inverse of lower-triangular matrices by recursive doubling: the inverses of all diagonal blocks of one size are
  combined in one batched step, inv([[A, 0], [C, D]]) = [[A^-1, 0], [-D^-1 C A^-1, D^-1]], so the graph has log2(n)
  levels of matmuls (n padded with identity to a power of two)."""
  n, b = _sh(t)[-1], batch_shape(t)
  p = 1 << max(n - 1, 0).bit_length()
  if p != n: t = t.pad(((0, 0),) * len(b) + ((0, p - n), (0, p - n))) + const_like(np.diag((np.arange(p) >= n).astype(float)), t)
  inv = (1 / diag(t)).reshape(*b, p, 1, 1)
  s = 1
  while s < p:
    k = p // (2 * s)
    c = _diag_blocks(t, 2 * s)[..., s:, :s]
    pair = inv.reshape(*b, k, 2, s, s)
    a_i, d_i = pair[..., 0, :, :], pair[..., 1, :, :]
    low = -(d_i @ (c @ a_i))
    inv = a_i.pad(((0, 0),) * (len(b) + 2) + ((0, s),)).cat(low.cat(d_i, dim=-1), dim=-2)
    s *= 2
  return inv.reshape(*b, p, p)[..., :n, :n] if p != 1 or inv.ndim != len(b) + 2 else inv.reshape(*b, 1, 1)

def _tri_inv_impl(t: Tensor, lower: bool, unit: bool) -> Tensor:
  if not lower: return mT(_tri_inv_impl(mT(t), True, unit))
  n = _sh(t)[-1]
  t = tril(t, -1) + eye_like(n, t) if unit else tril(t)
  return _tri_inv_lower(t)

def tri_inv(t: Tensor, lower: bool, unit: bool) -> Tensor:
  """The inverse of triangular matrices (the `lower` or upper triangle read; unit: ones assumed on the diagonal)."""
  if _host(t): return triangular_solve(t, eye_like(_sh(t)[-1], t).expand(*_sh(t)), left_side=True, lower=lower, unit_diagonal=unit)
  return _tri_inv_ops(t, lower, unit)

@structural
@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _tri_inv_ops(t: Tensor, lower: bool, unit: bool) -> Tensor:
  return _tri_inv_impl(t, lower, unit)

def _triangle(x: Tensor, lower: bool, unit: bool) -> Tensor:
  """The part of x a triangular solve reads (the strict triangle with a unit diagonal)."""
  return tril(x, -1 if unit else 0) if lower else triu(x, 1 if unit else 0)

@_tri_inv_ops.defjvp
def _tri_inv_jvp(lower, unit, primals, tangents):
  (t,), (dt,) = primals, tangents
  x = _tri_inv_ops(t, lower, unit)
  return x, -(x @ (_triangle(dt, lower, unit) @ x))

@dataclass(eq=False)
class LapackTriangularSolve(LapackCall):
  """x with op(a) x = b (left_side) or x op(a) = b, a triangular: BLAS trsm, as JAX's CPU triangular_solve."""
  left_side: bool
  lower: bool
  transpose_a: bool
  unit: bool
  name = "lapack_triangular_solve"
  def core_types(self, shapes, dt): return [(shapes[1], dt)]
  def row(self, ins, outs):
    (sa, da), (sb, db) = ins
    chars = "LR"[not self.left_side] + "UL"[self.lower] + "NT"[self.transpose_a] + "NU"[self.unit]
    return ("TriangularSolve", (da == dtypes.float64, sb[-2], sb[-1], sa[-1], math.prod(sa[:-2]), chars)) \
      if da == db == outs[0][1] in _ROW_DTYPES else None
  def one(self, a, b):
    trsm = getattr(scipy.linalg.blas, ("d" if a.dtype == np.float64 else "s") + "trsm")
    return (trsm(1.0, a, b, side=int(not self.left_side), lower=int(self.lower), trans_a=int(self.transpose_a), diag=int(self.unit)),)

  def _solve(self, a: Tensor, b: Tensor, transpose: bool) -> Tensor:
    return LapackTriangularSolve(self.left_side, self.lower, transpose, self.unit).call([a, b])[0]

  # JAX's rules: they solve with a again, on the tangent and on the cotangent (triangular_solve is linear in b); a
  # derivative of those goes through these rules again
  def jvp(self, xs, ts):
    (a, _), (ta, tb) = xs, ts
    x = self.call(xs)[0]
    op = _triangle(ta, self.lower, self.unit)
    if self.transpose_a: op = mT(op)
    return [self._solve(a, tb - (op @ x if self.left_side else x @ op), self.transpose_a)]

  def vjp(self, xs, cts):
    x, ct = self.call(xs)[0], cts[0]
    if ct is None: return [None, None]
    ctb = self._solve(xs[0], ct, not self.transpose_a)
    g = -(ctb @ mT(x) if self.left_side else mT(x) @ ctb)   # the cotangent of op(a)
    return [_triangle(mT(g) if self.transpose_a else g, self.lower, self.unit), ctb]

def triangular_solve(a: Tensor, b: Tensor, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False) -> Tensor:
  """jax.lax.linalg.triangular_solve: x with op(a) x = b (left_side) or x op(a) = b, op(a) = a or a^T (transpose_a), for
  triangular a (the `lower` or upper triangle is read; unit_diagonal: ones assumed on it), batched. Real matrices only:
  conjugate_a changes nothing."""
  if _host(a):
    batch = tuple(np.broadcast_shapes(batch_shape(a), batch_shape(b)))
    args = [a.expand(*batch, *_sh(a)[-2:]), b.expand(*batch, *_sh(b)[-2:])]
    return LapackTriangularSolve(left_side, lower, transpose_a, unit_diagonal).call(args)[0]
  ai = tri_inv(a, lower, unit_diagonal)
  if transpose_a: ai = mT(ai)
  return ai @ b if left_side else b @ ai

# ---- Cholesky ---------------------------------------------------------------------------------------------------------

_NB = 32   # block size of the blocked factorizations: below it the column loop, above it a recursion into matmuls

def _chol_unblocked(a: Tensor) -> Tensor:
  """Right-looking column Cholesky of the lower triangle: step j takes column j and updates the shrinking trailing
  matrix with one outer product."""
  n, nb = _sh(a)[-1], len(batch_shape(a))
  cols = []
  for j in range(n):
    col = a[..., :, :1] / a[..., :1, :1].sqrt()
    cols.append(col.pad(((0, 0),) * nb + ((j, 0), (0, 0))))
    rest = col[..., 1:, :]
    # a kernel boundary per step: fused, each entry would recompute the whole chain of updates (n = 20 took 53 s to
    # compile as 2 kernels)
    a = (a[..., 1:, 1:] - rest @ mT(rest)).contiguous()
  return Tensor.cat(*cols, dim=-1)

def _chol_impl(a: Tensor) -> Tensor:
  """Recursive blocked Cholesky: L11 = chol(A11), L21 = A21 L11^-T, L22 = chol(A22 - L21 L21^T)."""
  n, nb = _sh(a)[-1], len(batch_shape(a))
  if n <= _NB: return _chol_unblocked(a)
  h = (n // 2 + _NB - 1) // _NB * _NB
  l11 = _chol_impl(a[..., :h, :h])
  l21 = a[..., h:, :h] @ mT(_tri_inv_impl(l11, True, False))
  l22 = _chol_impl(a[..., h:, h:] - l21 @ mT(l21))
  return l11.pad(((0, 0),) * nb + ((0, 0), (0, n - h))).cat(l21.cat(l22, dim=-1), dim=-2)

@dataclass(eq=False)
class LapackCholesky(LapackCall):
  """The lower Cholesky factor from the lower triangle (LAPACK potrf, as JAX); NaN in the lower triangle of a matrix
  that is not positive definite, zeros above, as JAX."""
  name = "lapack_cholesky"
  def core_types(self, shapes, dt): return [(shapes[0], dt)]

  def row(self, ins, outs):
    (sa, da), = ins
    return ("Cholesky", (da == dtypes.float64, sa[-1], math.prod(sa[:-2]))) if da == outs[0][1] in _ROW_DTYPES else None

  def one(self, a):
    l, info = _routine("potrf", a.dtype.type)(a, lower=1, clean=1)
    return (np.tril(_failed(l)) if info else l,)
  def jvp(self, xs, ts): return [_cholesky_tangent(self.call(xs)[0], ts[0])]
  def vjp(self, xs, cts):
    """The jvp's transpose, written out (tracing the transposition of the jvp cost ~0.2 s per gradient trace):
    dA-bar = L^-T Phi(L^T L-bar) L^-1."""
    if cts[0] is None: return [None]
    l = self.call(xs)[0]
    p = tril(mT(l) @ cts[0]) / const_like(1 + np.eye(_sh(l)[-1]), l)
    return [triangular_solve(l, triangular_solve(l, p, lower=True), left_side=True, lower=True, transpose_a=True)]

def cholesky_lower(a: Tensor) -> Tensor:
  """Lower Cholesky factor from the lower triangle of a; NaN in the lower triangle of a matrix that is not positive
  definite, zeros above, as JAX."""
  if not _sh(a)[-1]: return a   # 0 x 0
  return LapackCholesky().call([a])[0] if _host(a) else _cholesky_ops(a)

@structural
@custom_jvp
def _cholesky_ops(a: Tensor) -> Tensor:
  l = _chol_impl(a)
  return tril(_nan_like(l, diag(l).isnan().any(-1)))   # JAX: NaN in the lower triangle, zeros above

@dataclass(eq=False)
class LapackCholeskySolve(LapackCall):
  """x = a^-1 b for a symmetric positive definite a given by its lower (or upper) triangle: potrf then potrs
  (scipy.linalg.solve(assume_a='pos')). Its derivatives are JAX's (lax.custom_linear_solve of the matvec a @ x): all of
  da counts, not only the triangle read."""
  lower: bool
  name = "lapack_cholesky_solve"
  def core_types(self, shapes, dt): return [(shapes[1], dt)]
  def one(self, a, b):
    c, info = _routine("potrf", a.dtype.type)(a, lower=int(self.lower))
    return (_failed(b) if info else _routine("potrs", a.dtype.type)(c, b, lower=int(self.lower))[0],)
  def jvp(self, xs, ts):
    (a, _), (ta, tb) = xs, ts
    return [self.call([a, tb - ta @ self.call(xs)[0]])[0]]
  def vjp(self, xs, cts):
    if cts[0] is None: return [None, None]
    ctb = self.call([xs[0], cts[0]])[0]
    return [-(ctb @ mT(self.call(xs)[0])), ctb]

def _cholesky_tangent(l: Tensor, da: Tensor) -> Tensor:
  """JAX's: dL = L Phi(L^-1 dA L^-T), Phi taking the lower triangle with its diagonal halved."""
  x = triangular_solve(l, triangular_solve(l, da, left_side=True, lower=True), lower=True, transpose_a=True)
  return l @ (tril(x) / const_like(1 + np.eye(_sh(l)[-1]), x))

@_cholesky_ops.defjvp
def _cholesky_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  l = _cholesky_ops(a)
  return l, _cholesky_tangent(l, da)

# ---- LU with partial pivoting -------------------------------------------------------------------------------------

def _lu_impl(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """Right-looking LU with partial pivoting (the first row of largest magnitude, as LAPACK). Row swaps are one-hot
  updates, so the data-dependent pivots stay in the graph. Returns (lu, pivots, permutation) as lax.linalg.lu."""
  m, n = _sh(a)[-2], _sh(a)[-1]
  rows = Tensor.arange(m)
  cols = Tensor.arange(n)
  perm = rows.cast(a.dtype).expand(*batch_shape(a), m)
  pivots = []
  for j in range(min(m, n)):
    cand = (rows >= j).where(a[..., :, j].abs(), -1)
    p = cand.argmax(-1)
    pivots.append(p)
    swap = (rows == p.unsqueeze(-1)).cast(a.dtype) - (rows == j).cast(a.dtype)   # e_p - e_j
    row_p = ((rows == p.unsqueeze(-1)).unsqueeze(-1)).where(a, 0).sum(-2)
    a = a + swap.unsqueeze(-1) * (a[..., j, :] - row_p).unsqueeze(-2)
    perm_p = (rows == p.unsqueeze(-1)).where(perm, 0).sum(-1, keepdim=True)
    perm = perm + swap * (perm[..., j:j + 1] - perm_p)
    below = (rows > j).unsqueeze(-1)
    l = a[..., :, j:j + 1] / a[..., j:j + 1, j:j + 1]
    upd = below & (cols > j)
    a = upd.where(a - l * a[..., j:j + 1, :], a)
    a = (below & (cols == j)).where(l, a).contiguous()   # a kernel boundary per step, as in _chol_unblocked
    perm = perm.contiguous()
  piv = Tensor.stack(*pivots, dim=-1).cast(dtypes.int32) if pivots else Tensor.zeros(*batch_shape(a), 0, dtype=dtypes.int32)
  return a, piv, perm.cast(dtypes.int32)

def lu_parts(lu: Tensor) -> tuple[Tensor, Tensor]:
  """Unit lower L (m, k) and upper U (k, n) of a packed LU."""
  m, n = _sh(lu)[-2], _sh(lu)[-1]
  k = min(m, n)
  l = tril(lu[..., :, :k], -1) + const_like(np.eye(m, k), lu)
  return l, triu(lu[..., :k, :])

def permutation_matrix(perm: Tensor, like: Tensor) -> Tensor:
  """P with (P @ x) = x[perm]: P[i, perm[i]] = 1."""
  m = _sh(perm)[-1]
  return (perm.unsqueeze(-1) == Tensor.arange(m)).cast(like.dtype)

@dataclass(eq=False)
class LapackLu(LapackCall):
  """(lu, pivots, permutation) as lax.linalg.lu: LAPACK getrf (packed L and U, 0-based row interchanges), as JAX."""
  name = "lapack_lu"
  def core_types(self, shapes, dt):
    m, n = shapes[0]
    return [((m, n), dt), ((min(m, n),), dtypes.int32), ((m,), dtypes.int32)]
  def row(self, ins, outs):
    (sa, da), = ins
    return ("Lu", (da == dtypes.float64, sa[-2], sa[-1], math.prod(sa[:-2]))) if da == outs[0][1] in _ROW_DTYPES else None
  def one(self, a):
    lu_, piv, _ = _routine("getrf", a.dtype.type)(a)   # info > 0: an exact zero pivot, the factors are still returned
    perm = _permutation(piv, a.shape[0])
    return lu_, piv, perm
  def jvp(self, xs, ts):
    packed, piv, perm = self.call(xs)
    return [_lu_tangent(packed, perm, ts[0]), fill_like(piv, 0), fill_like(perm, 0)]

@dataclass(eq=False)
class PivotsToPermutation(LapackCall):
  """The row permutation of LAPACK's 0-based row interchanges (rows i and pivots[i] swapped in turn), on the host:
  JAX's CPU lu_pivots_to_permutation is a host kernel too."""
  size: int
  name = "lu_pivots_to_permutation"
  core_ndim = 1
  def core_types(self, shapes, dt): return [((self.size,), dtypes.int32)]
  def one(self, piv):
    return (_permutation(piv, self.size),)
  def jvp(self, xs, ts): return [fill_like(t, 0) for t in self.call(xs)]   # integers: no derivative
  def vjp(self, xs, cts): return [None]

def lu_pivots_to_permutation(pivots: Tensor, permutation_size: int) -> Tensor:
  """jax.lax.linalg.lu_pivots_to_permutation: the permutation (int32) that the interchanges produce."""
  if on_host(pivots) and _sh(pivots)[-1]: return PivotsToPermutation(permutation_size).call([pivots.cast(dtypes.int32)])[0]
  m, rows = permutation_size, Tensor.arange(permutation_size)
  perm = rows.expand(*_sh(pivots)[:-1], m)
  for i in range(_sh(pivots)[-1]):   # one-hot updates: the op path's graph
    p = pivots[..., i:i + 1]
    at_p, at_i = rows == p, rows == i
    val_i, val_p = perm[..., i:i + 1], at_p.where(perm, 0).sum(-1, keepdim=True)
    perm = at_i.where(val_p, at_p.where(val_i, perm))
  return perm.cast(dtypes.int32)

def lu(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """jax.lax.linalg.lu: (lu, pivots, permutation) of LU with partial pivoting."""
  if not _host(a): return _lu_ops(a)
  packed, piv, perm = LapackLu().call([a])
  return packed, piv, perm

@structural
@custom_jvp
def _lu_ops(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  return _lu_impl(a)

@_lu_ops.defjvp
def _lu_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  packed, piv, perm = _lu_ops(a)
  return (packed, piv, perm), (_lu_tangent(packed, perm, da), fill_like(piv, 0), fill_like(perm, 0))

def _lu_tangent(packed: Tensor, perm: Tensor, da: Tensor) -> Tensor:
  """JAX's (_lu_jvp_inner): L^-1 P dA U^-1 split into its strict lower and upper parts."""
  a = packed
  m, n = _sh(a)[-2], _sh(a)[-1]
  k = min(m, n)
  l, u = lu_parts(packed)
  # square L (m, m) and U (n, n) completed with identity, as JAX's _lu_jvp_inner
  l = l.pad(((0, 0),) * len(batch_shape(a)) + ((0, 0), (0, m - k))) + const_like(np.diag((np.arange(m) >= k).astype(float)), a)
  u = u.pad(((0, 0),) * len(batch_shape(a)) + ((0, n - k), (0, 0))) + const_like(np.diag((np.arange(n) >= k).astype(float)), a)
  la = triangular_solve(l, permutation_matrix(perm, a) @ da, left_side=True, lower=True, unit_diagonal=True)
  lau = triangular_solve(u, la, lower=False)
  dlu = l @ tril(lau, -1) + triu(lau) @ u
  return dlu[..., :m, :n]

# ---- solve and inv ----------------------------------------------------------------------------------------------------

def _lu_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """a^-1 b as JAX's LU solve on the CPU: getrf, b's rows permuted, trsm with L (unit diagonal), then with U."""
  t = a.dtype.type
  lu_, piv, _ = _routine("getrf", t)(a)
  perm = _permutation(piv, a.shape[0])
  trsm = getattr(scipy.linalg.blas, _PREFIX[t] + "trsm")
  return trsm(1.0, lu_, trsm(1.0, lu_, b[perm], lower=1, diag=1), lower=0)

@dataclass(eq=False)
class LapackSolve(LapackCall):
  """x = a^-1 b for a (..., n, n) and b (..., n, k) of the same batch shape (LAPACK getrf, then BLAS trsm, as JAX), or
  a^-1 itself with `inverse` (the solve on the identity, what JAX's inv does)."""
  inverse: bool
  name = "lapack_solve"
  def core_types(self, shapes, dt): return [(shapes[-1], dt)]

  def row(self, ins, outs):
    (sa, da), (sb, db) = ins[0], ins[-1]   # (the inverse: a solve on the identity, of a's shape)
    return ("LuSolve", (da == dtypes.float64, sa[-1], sb[-1], math.prod(sa[:-2]))) if da == db == outs[0][1] in _ROW_DTYPES else None

  def one(self, a, b=None):
    # JAX's LU solve: getrf, the rows of b permuted, then trsm with L (unit diagonal) and U (jnp.linalg.inv is a solve
    # on the identity). An exactly singular matrix gives LAPACK's inf/nan, as JAX, not an exception. (numpy.linalg's
    # own LAPACK build took 3x longer at n = 512.)
    return (_lu_solve(a, np.eye(a.shape[-1], dtype=a.dtype) if self.inverse else b),)

  # the derivatives (JAX's) apply the LAPACK calls to primal values only: the tangents and cotangents stay in plain
  # ops, and a derivative of a derivative differentiates those calls again through these same rules
  def jvp(self, xs, ts):
    x = self.call(xs)[0]
    if self.inverse: return [-(x @ (ts[0] @ x))]
    a, (ta, tb) = xs[0], ts
    return [inv(a) @ (tb - ta @ x)]

  def vjp(self, xs, cts):
    x, ct = self.call(xs)[0], cts[0]
    if ct is None: return [None] * len(xs)
    if self.inverse: return [-(mT(x) @ ct @ mT(x))]
    ctb = mT(inv(xs[0])) @ ct
    return [-(ctb @ mT(x)), ctb]

def solve(a: Tensor, b: Tensor) -> Tensor:
  """a^-1 b for matrix stacks of the same batch shape."""
  return b if not _sh(a)[-1] else LapackSolve(False).call([a, b])[0]   # no unknowns: nothing to solve

def inv(a: Tensor) -> Tensor: return a if not _sh(a)[-1] else LapackSolve(True).call([a])[0]

def _lu_det_parts(a: Tensor) -> tuple[Tensor, Tensor]:
  """(sign, the diagonal of U) of a's LU: det = sign * prod(diag)."""
  packed, piv, _ = lu(a)
  n = _sh(a)[-1]
  swaps = (piv != Tensor.arange(n)).cast(dtypes.int32).sum(-1)
  parity = (1 - 2 * (swaps % 2)).cast(a.dtype)
  return parity, diag(packed)

@structural
@custom_jvp
def det(a: Tensor) -> Tensor:
  parity, d = _lu_det_parts(a)
  return parity * d.prod(-1)

@det.defjvp
def _det_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  y = det(a)
  return y, y * (mT(inv(a)) * da).sum((-2, -1))

@structural
@custom_jvp
def slogdet(a: Tensor) -> tuple[Tensor, Tensor]:
  parity, d = _lu_det_parts(a)
  return parity * _sign_prod(d), d.abs().log().sum(-1)

def _sign_prod(d: Tensor) -> Tensor:
  neg = (d < 0).cast(dtypes.int32).sum(-1)
  zero = (d == 0).any(-1)
  return zero.where(0.0, (1 - 2 * (neg % 2)).cast(d.dtype)).cast(d.dtype)

@slogdet.defjvp
def _slogdet_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  sign, logdet = slogdet(a)
  return (sign, logdet), (fill_like(sign, 0), (mT(inv(a)) * da).sum((-2, -1)))

def householder(a: Tensor, want_q: bool) -> tuple[Tensor | None, Tensor]:
  """Householder QR with LAPACK's reflectors (beta = -sign(alpha) |x|, no reflection when the column below the diagonal
  is zero), so Q and R equal LAPACK's. Returns (Q (m, m) or None, R (m, n))."""
  m, n = _sh(a)[-2], _sh(a)[-1]
  rows = Tensor.arange(m)
  q = eye_like(m, a).expand(*batch_shape(a), m, m) if want_q else None
  r = a
  for i in range(min(m, n)):
    x = r[..., :, i]
    alpha = r[..., i, i]
    xnorm = (rows > i).where(x, 0).square().sum(-1).sqrt()
    beta = -sign1(alpha) * (alpha.square() + xnorm.square()).sqrt()
    active = xnorm != 0
    tau = active.where((beta - alpha) / active.where(beta, 1), 0)
    scale = active.where(alpha - beta, 1)
    v = (rows == i).where(1.0, (rows > i).where(x / scale.unsqueeze(-1), 0)).cast(a.dtype).unsqueeze(-1)   # (..., m, 1)
    tv = tau.reshape(*tau.shape, 1, 1) * v
    r = r - tv @ (mT(v) @ r)
    if q is not None: q = q - (q @ tv) @ mT(v)
  return q, triu(r)

@dataclass(eq=False)
class LapackQr(LapackCall):
  """(q, r), complete (`full`: q (m, m), r (m, n)) or reduced (q (m, k), r (k, n)): LAPACK geqrf then orgqr, as JAX."""
  full: bool
  name = "lapack_qr"
  def core_types(self, shapes, dt):
    m, n = shapes[0]
    k = m if self.full else min(m, n)
    return [((m, k), dt), ((k, n), dt)]
  def row(self, ins, outs):
    (sa, da), = ins
    m, n = sa[-2:]
    kq = m if self.full else min(m, n)
    return ("Factor", ("qr", da == dtypes.float64, m, n, math.prod(sa[:-2]), kq, "")) if da in _ROW_DTYPES else None
  def one(self, a):
    m, n = a.shape
    t = a.dtype.type
    # the workspace sizes LAPACK asks for (scipy's defaults are the minimum, which runs the unblocked algorithms: 7x
    # slower at n = 512)
    r, tau, _, _ = _routine("geqrf", t)(a, lwork=int(_routine("geqrf_lwork", t)(m, n)[0]))
    # JAX's qr: orgqr on the reflectors of the first m columns (wide), of r padded to m columns (complete), or of r
    q_in = r[:, :m] if m < n else np.pad(r, ((0, 0), (0, m - n))) if self.full else r
    q = _routine("orgqr", t)(q_in, tau, lwork=int(_routine("orgqr", t)(q_in, tau, lwork=-1)[1][0]))[0]
    return q, np.triu(r if self.full or m < n else r[:n])
  def jvp(self, xs, ts):
    if self.full: raise NotImplementedError("qr: derivative of the complete QR of a non-square matrix (JAX has none either)")
    q, r = self.call(xs)
    return list(_qr_tangent(q, r, ts[0]))

def qr_complete(a: Tensor) -> tuple[Tensor, Tensor]:
  """(q (m, m), r (m, n)), not differentiable (JAX's rule raises for complete QR of a non-square matrix too)."""
  if _host(a):
    q, r = LapackQr(True).call([a])
    return q, r
  q_, r = householder(a, True)
  assert q_ is not None
  return q_, r

def qr_reduced(a: Tensor) -> tuple[Tensor, Tensor]:
  """(q (m, k), r (k, n)), k = min(m, n)."""
  if not _host(a): return _qr_ops(a)
  q, r = LapackQr(False).call([a])
  return q, r

@structural
@custom_jvp
def _qr_ops(a: Tensor) -> tuple[Tensor, Tensor]:
  q, r = householder(a, True)
  assert q is not None
  k = min(_sh(a)[-2], _sh(a)[-1])
  return q[..., :, :k], r[..., :k, :]

@_qr_ops.defjvp
def _qr_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  q, r = _qr_ops(a)
  return (q, r), _qr_tangent(q, r, da)

def _qr_tangent(q: Tensor, r: Tensor, da: Tensor) -> tuple[Tensor, Tensor]:
  """JAX's (qr_jvp_rule) for m >= n."""
  if _sh(q)[-2] < _sh(r)[-1]: raise NotImplementedError("qr: derivative of a wide matrix (m < n) is not implemented")
  dx_rinv = triangular_solve(r, da, lower=False)
  qt = mT(q) @ dx_rinv
  low = tril(qt, -1)
  do = low - mT(low)
  return q @ (do - qt) + dx_rinv, (qt - do) @ r

# ---- Jacobi eigensolver and SVD ---------------------------------------------------------------------------------------

def _tournament(m: int) -> list[int]:
  """The round-robin step on positions (m even): positions k and k + m/2 are paired; the player at position 0 stays and
  the others rotate, so each pair meets once in m - 1 rounds. Returns the source position of each new position."""
  h = m // 2
  return [0, h] + list(range(1, h - 1)) + list(range(h + 1, m)) + [h - 1] if h > 1 else [0, 1]

def _sweeps(n: int, dt) -> int:
  """Jacobi sweeps: convergence is quadratic once the off-diagonal part is small. The fewest that reach full accuracy
  on random matrices (eigenvalues, eigenvectors, SVD reconstruction), measured for n < 16 (docs/linalg.md)."""
  if n < 16: return 4 + (n > 4) + (n > 8) - (dt != dtypes.float64)
  return (6 if dt != dtypes.float64 else 8) + (n >= 64) + (n >= 256)

def _permute_axis(x: Tensor, src: list[int], axis: int) -> Tensor:
  """x with positions along `axis` taken from `src` (static), as contiguous slices."""
  parts, i = [], 0
  while i < len(src):
    j = i
    while j + 1 < len(src) and src[j + 1] == src[j] + 1: j += 1
    parts.append(x.shrink(tuple((src[i], src[j] + 1) if d == axis % x.ndim else None for d in range(x.ndim))))
    i = j + 1
  return Tensor.cat(*parts, dim=axis) if len(parts) > 1 else parts[0]

def _rotation(app: Tensor, aqq: Tensor, apq: Tensor) -> tuple[Tensor, Tensor]:
  """(c, s) of the rotation [[c, s], [-s, c]] diagonalizing [[app, apq], [apq, aqq]] (symmetric Schur, Golub & Van Loan
  8.5.2), for every pair at once."""
  nz = apq != 0
  tau = (aqq - app) / (2 * nz.where(apq, 1))
  t = nz.where(sign1(tau) / (tau.abs() + (1 + tau.square()).sqrt()), 0)
  c = 1 / (1 + t.square()).sqrt()
  # realized per round: inlined into the rotation, the scheduler recomputes them per element and slows down badly
  return c.unsqueeze(-2).contiguous(), (t * c).unsqueeze(-2).contiguous()

def _rotate_cols(x: Tensor, c: Tensor, s: Tensor, h: int) -> Tensor:
  """x G for G = [[C, S], [-S, C]] acting on the column pairs (k, k + h)."""
  x1, x2 = x[..., :, :h], x[..., :, h:]
  return (x1 * c - x2 * s).cat(x1 * s + x2 * c, dim=-1)

def _jacobi(x: Tensor, two_sided: bool) -> tuple[Tensor, Tensor]:
  """Parallel cyclic Jacobi. two_sided (eigh): x symmetric, x <- G^T x G zeroes the paired off-diagonal entries.
  One-sided (Hestenes SVD): x <- x G orthogonalizes the paired columns. Each round rotates m/2 disjoint pairs at once
  with elementwise ops, then moves to the next pairing by a static permutation; odd sizes get a zero dummy row/column.
  Returns (x, v) in the original order, v accumulating the rotations."""
  n, b = _sh(x)[-1], batch_shape(x)
  m = n + n % 2
  if m != n: x = x.pad(((0, 0),) * len(b) + (((0, 1) if two_sided else (0, 0)), (0, 1)))
  v = eye_like(m, x).expand(*b, m, m)
  h, src = m // 2, _tournament(m)
  pos = list(range(m))   # pos[i]: the original index at position i
  perm = const_like(np.eye(m)[:, src], x)   # y @ perm: the columns of y in the next pairing order
  for _ in range(_sweeps(n, x.dtype) * (m - 1)):
    if two_sided:
      d = diag(x)
      c, s = _rotation(d[..., :h], d[..., h:], diag(x[..., :h, h:]))
      x = mT(_rotate_cols(mT(_rotate_cols(x, c, s, h)), c, s, h))
      x = mT(perm) @ x @ perm
    else:
      x1, x2 = x[..., :, :h], x[..., :, h:]
      c, s = _rotation(x1.square().sum(-2), x2.square().sum(-2), (x1 * x2).sum(-2))
      x = _rotate_cols(x, c, s, h) @ perm
    # a kernel boundary per round: without it the chain of movement ops grows with every round
    x, v = x.contiguous(), (_rotate_cols(v, c, s, h) @ perm).contiguous()
    pos = [pos[i] for i in src]
  back = [pos.index(i) for i in range(n)]   # undo the pairing order, drop the dummy
  if two_sided: x = _permute_axis(x, back, -2)
  return _permute_axis(x, back, -1), _permute_axis(v, back, -1)[..., :n, :]

def _eigh_impl(a: Tensor) -> tuple[Tensor, Tensor]:
  """Eigenvalues ascending; each eigenvector's largest-magnitude entry is made positive."""
  x, v = _jacobi(a, True) if _sh(a)[-1] > 1 else (a, eye_like(1, a).expand(*a.shape))
  w, idx = diag(x).sort(-1)
  v = v.gather(-1, idx.unsqueeze(-2).expand(*v.shape))
  return _normalize_signs(v), w

def _normalize_signs(v: Tensor) -> Tensor:
  """Columns of v times the sign of their largest-magnitude entry (the first of equal ones)."""
  big = v.abs().argmax(-2, keepdim=True)
  s = sign1(v.gather(-2, big))
  return v * s

@dataclass(eq=False)
class LapackEigh(LapackCall):
  """(v, w) of a symmetric matrix from its lower triangle: LAPACK syevd, as JAX (eigenvalues ascending, LAPACK's
  eigenvector signs); NaN if it fails to converge."""
  name = "lapack_eigh"
  def core_types(self, shapes, dt): return [(shapes[0], dt), (shapes[0][-1:], dt)]
  def row(self, ins, outs):
    (sa, da), = ins
    return ("Factor", ("eigh", da == dtypes.float64, sa[-1], sa[-1], math.prod(sa[:-2]), 0, "")) if da in _ROW_DTYPES else None
  def one(self, a):
    w, v, info = _routine("syevd", a.dtype.type)(a, compute_v=1, lower=1)
    return (_failed(v), _failed(w)) if info else (v, w)
  def jvp(self, xs, ts):
    v, w = self.call(xs)
    return list(_eigh_tangent(v, w, ts[0]))

def sym_eigh(a: Tensor) -> tuple[Tensor, Tensor]:
  """(eigenvectors v, eigenvalues w ascending) of symmetric matrices, as JAX's lax.linalg.eigh: LAPACK's on the CPU,
  parallel cyclic Jacobi elsewhere (eigenvectors normalised: largest-magnitude entry positive)."""
  if not _host(a): return _eigh_ops(a)
  v, w = LapackEigh().call([a])
  return v, w

@structural
@custom_jvp
def _eigh_ops(a: Tensor) -> tuple[Tensor, Tensor]:
  return _eigh_impl(a)

@_eigh_ops.defjvp
def _eigh_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  v, w = _eigh_ops(a)
  return (v, w), _eigh_tangent(v, w, da)

def _eigh_tangent(v: Tensor, w: Tensor, da: Tensor) -> tuple[Tensor, Tensor]:
  """JAX's (non-degenerate perturbation theory; the tangent is not symmetrized)."""
  eye = eye_like(_sh(w)[-1], w)
  fmat = 1 / (eye + w.unsqueeze(-2) - w.unsqueeze(-1)) - eye
  vda = mT(v) @ da @ v
  return v @ (fmat * vda), diag(vda)

def _svd_square(r: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """One-sided (Hestenes) Jacobi on a square matrix: s = column norms (descending) of the rotated r, U its normalised
  columns, V the rotations."""
  n = _sh(r)[-1]
  u, v = _jacobi(r, False) if n > 1 else (r, eye_like(1, r).expand(*r.shape))
  s, idx = u.square().sum(-2).sqrt().sort(-1, descending=True)
  gi = idx.unsqueeze(-2).expand(*u.shape)
  u, v = u.gather(-1, gi), v.gather(-1, gi)
  u = u / (s != 0).where(s, 1).unsqueeze(-2)
  # the sign of each singular pair: largest-magnitude entry of the right singular vector positive
  sg = sign1(v.gather(-2, v.abs().argmax(-2, keepdim=True)))
  return u * sg, s, v * sg

@dataclass(eq=False)
class LapackSvd(LapackCall):
  """(u, s, vt), or s alone without `uv`, with full or reduced u and vt: LAPACK gesdd, as JAX (singular values
  descending, LAPACK's signs); NaN if it fails to converge."""
  full: bool
  uv: bool
  name = "lapack_svd"
  def core_types(self, shapes, dt):
    m, n = shapes[0]
    k = min(m, n)
    s = ((k,), dt)
    return [((m, m if self.full else k), dt), s, ((n if self.full else k, n), dt)] if self.uv else [s]
  def row(self, ins, outs):
    (sa, da), = ins
    jobz = "N" if not self.uv else "A" if self.full else "S"
    return ("Factor", ("svd", da == dtypes.float64, *sa[-2:], math.prod(sa[:-2]), 0, jobz)) if da in _ROW_DTYPES else None
  def one(self, a):
    t, uv, full = a.dtype.type, int(self.uv), int(self.full)
    lwork = int(_routine("gesdd_lwork", t)(*a.shape, compute_uv=uv, full_matrices=full)[0])   # as in LapackQr
    u, s, vt, info = _routine("gesdd", t)(a, compute_uv=uv, full_matrices=full, lwork=lwork)
    out = (u, s, vt) if self.uv else (s,)
    return tuple(_failed(o) for o in out) if info else out
  def jvp(self, xs, ts):
    a, (da,) = xs[0], ts
    if self.uv and self.full and _sh(a)[-2] != _sh(a)[-1]:
      raise NotImplementedError("svd: derivative with full_matrices=True of a non-square matrix (JAX has none either)")
    u, s, vt = self.call(xs) if self.uv else svd_reduced(a)
    if not self.uv: return [diag(mT(u) @ da @ mT(vt))]
    return list(_svd_tangent(u, s, vt, da))

def svd_full_or_reduced(a: Tensor, full: bool) -> tuple[Tensor, Tensor, Tensor]:
  """(u, s, vt), u (m, m) and vt (n, n) if full. Differentiable when reduced or square (svd_reduced: its rule)."""
  if _host(a):
    u, s, vt = LapackSvd(full, True).call([a])
    return u, s, vt
  m, n = _sh(a)[-2], _sh(a)[-1]
  if m < n:
    u, s, vt = svd_full_or_reduced(mT(a), full)
    return mT(vt), s, mT(u)
  qf, r = householder(a, True)
  assert qf is not None
  ur, s, v = _svd_square(r[..., :n, :])
  nb = ((0, 0),) * len(batch_shape(a))
  if full and m > n: u = qf @ ur.pad(nb + ((0, m - n), (0, m - n))) + qf[..., :, n:].pad(nb + ((0, 0), (n, 0)))
  else: u = qf[..., :, :n] @ ur
  return u, s, mT(v)

def svd_reduced(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  if _host(a): return svd_full_or_reduced(a, False)
  u, s, vt = _svd_ops(a)
  return u, s, vt

@structural
@custom_jvp
def _svd_ops(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  return svd_full_or_reduced(a, False)

@_svd_ops.defjvp
def _svd_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  u, s, vt = _svd_ops(a)
  return (u, s, vt), _svd_tangent(u, s, vt, da)

def _svd_tangent(u: Tensor, s: Tensor, vt: Tensor, da: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """JAX's (svd_jvp_rule), with its terms for m != n."""
  ut, v = mT(u), mT(vt)
  sd = s.unsqueeze(-2)
  ds_mat = ut @ da @ v
  ds = diag(ds_mat)
  k = _sh(s)[-1]
  eye = eye_like(k, s)
  diffs = (sd + mT(sd)) * (sd - mT(sd))
  f = 1 / (diffs + eye) - eye
  dss, sds = sd * ds_mat, mT(sd) * ds_mat
  s_zero = (s == 0).cast(s.dtype)
  s_inv = 1 / (s + s_zero) - s_zero
  dudv_diag = 0.5 * (ds_mat - mT(ds_mat)) * embed_diag(s_inv)
  du = u @ (f * (dss + mT(dss)) + dudv_diag)
  dv = v @ (f * (sds + mT(sds)))
  m, n = _sh(u)[-2], _sh(vt)[-1]
  if m > n:
    dav = da @ v
    du = du + (dav - u @ (ut @ dav)) / sd
  if n > m:
    dahu = mT(da) @ u
    dv = dv + (dahu - v @ (vt @ dahu)) / sd
  return du, ds, mT(dv)

def singular_values(a: Tensor) -> Tensor:
  return LapackSvd(False, False).call([a])[0] if _host(a) else _singular_values_ops(a)

@structural
@custom_jvp
def _singular_values_ops(a: Tensor) -> Tensor:
  m, n = _sh(a)[-2], _sh(a)[-1]
  r = householder(a if m >= n else mT(a), False)[1]
  k = min(m, n)
  return _svd_square(r[..., :k, :])[1]

@_singular_values_ops.defjvp
def _svdvals_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  u, s, vt = _svd_ops(a)
  return s, diag(mT(u) @ da @ mT(vt))


# ---- expm -------------------------------------------------------------------------------------------------------------

# JAX's scaling and squaring (jax.scipy.linalg.expm): Pade coefficients, the L1-norm thresholds of each degree and the
# largest norm of the scaled matrix, float64 and float32 (degrees 3, 5, 7 only)
PADE = {3: (120., 60., 12., 1.), 5: (30240., 15120., 3360., 420., 30., 1.),
        7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
        9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880., 3960., 90., 1.),
        13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
             10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)}
EXPM_F64 = (5.371920351148152, [1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001, 2.097847961257068e+000], [3, 5, 7, 9, 13])
EXPM_F32 = (3.925724783138660, [4.258730016922831e-001, 1.880152677804762e+000], [3, 5, 7])

def _pade_np(a: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
  """(U, V) of the Pade approximant of degree m, the products grouped as JAX's _pade3 ... _pade13."""
  b, eye = PADE[m], np.eye(a.shape[-1], dtype=a.dtype)
  a2 = a @ a
  if m == 13:
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    return u, a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
  ev = [eye, a2]
  while len(ev) < m // 2 + 1: ev.append(ev[-1] @ a2 if len(ev) < 4 else ev[3] @ a2)   # a4 = a2 a2, a6 = a4 a2, a8 = a6 a2
  return a @ sum(b[2 * i + 1] * p for i, p in enumerate(ev)), sum(b[2 * i] * p for i, p in enumerate(ev))

@dataclass(eq=False)
class LapackExpm(LapackCall):
  """The matrix exponential by JAX's algorithm (the Pade degree and the squarings chosen per matrix by its L1 norm,
  `solve(Q, P)`: LAPACK gesv, or trsm for `upper` triangular input), on the host with BLAS products: JAX runs only the
  selected degree and squarings (lax.switch, lax.cond in a scan), which tinygrad ops can only select with `where` after
  computing all of them. NaN beyond max_squarings, as JAX. The derivative is the Frechet derivative, from the
  exponential of the block matrix [[A, E], [0, A]] (jvp) and of [[A^T, C], [0, A^T]] (vjp)."""
  upper: bool
  max_squarings: int
  name = "lapack_expm"
  def core_types(self, shapes, dt): return [(shapes[0], dt)]
  def one(self, a):
    with np.errstate(all="ignore"): return self._expm(a)   # overflow gives inf/nan, as JAX's

  def row(self, ins, outs):
    (sa, da), = ins
    if da != outs[0][1] or da not in _ROW_DTYPES: return None
    maxnorm, conds, degrees = EXPM_F64 if da == dtypes.float64 else EXPM_F32
    return ("Expm", (da == dtypes.float64, sa[-1], math.prod(sa[:-2]), self.upper, self.max_squarings, maxnorm, tuple(conds),
                     tuple(degrees), PADE))

  def _expm(self, a: np.ndarray) -> tuple[np.ndarray]:
    maxnorm, conds, degrees = EXPM_F64 if a.dtype == np.float64 else EXPM_F32
    l1 = np.abs(a).sum(0).max()
    if not np.isfinite(l1): return (np.full_like(a, np.nan),)
    # floor(log2(l1 / maxnorm)), at least 0, from the quotient's exponent (as the compiled row: exact where a rounded
    # log2 of a quotient just below a power of two would round up to it)
    n_sq = max(0, int(np.frexp(l1 / maxnorm)[1]) - 1)
    if n_sq > self.max_squarings: return (np.full_like(a, np.nan),)
    a = a / a.dtype.type(2 ** n_sq)
    u, v = _pade_np(a, degrees[int(np.digitize(l1, conds))])
    p, q = u + v, v - u
    trsm = getattr(scipy.linalg.blas, ("d" if a.dtype == np.float64 else "s") + "trsm")
    r = trsm(1.0, q, p, lower=0) if self.upper else _lu_solve(q, p)
    for _ in range(int(n_sq)): r = r @ r
    return (r,)

  def _frechet(self, a: Tensor, e: Tensor) -> Tensor:
    """L(a, e), the derivative of expm at a in the direction e: the upper right block of expm([[a, e], [0, a]]). e is
    scaled to a's size first (the block's norm sets its squarings), and the block may take more squarings than a."""
    n = _sh(a)[-1]
    def big(x: Tensor) -> Tensor: return x.abs().max((-2, -1), keepdim=True)
    scale = (big(e) / big(a).maximum(1e-30)).detach()
    scale = (scale == 0).where(1, scale).cast(a.dtype)
    block = a.cat(e / scale, dim=-1).cat(fill_like(a, 0).cat(a, dim=-1), dim=-2)
    return LapackExpm(False, self.max_squarings + 64).call([block])[0][..., :n, n:] * scale
  def jvp(self, xs, ts): return [self._frechet(xs[0], ts[0])]
  def vjp(self, xs, cts): return [None if cts[0] is None else self._frechet(mT(xs[0]), cts[0])]

def expm(a: Tensor, upper_triangular: bool, max_squarings: int) -> Tensor:
  """expm of CPU data (LapackExpm)."""
  return LapackExpm(upper_triangular, max_squarings).call([a])[0]


# ---- complex matrices ---------------------------------------------------------------------------------------------------
# tinyjax's complex array is a pair of real Tensors (tinyjax.complex_array), so every transform sees the real and
# imaginary parts. A host call takes a complex matrix as its two parts, joins them into numpy's complex array on the
# host, runs LAPACK's complex routine of that precision (z* for float64 parts, c* for float32) and splits the results
# again. The derivative rules are JAX's, written on pairs (re, im): the jvp of the map on pairs of reals, which is JAX's
# jvp (tinyjax.transforms.vjp conjugates at the boundary for JAX's vjp and grad). Only the CPU (LAPACK) runs them.

Z = tuple[Tensor, Tensor]   # a complex matrix stack as (real part, imaginary part)

def _join(re: np.ndarray, im: np.ndarray) -> np.ndarray:
  z = np.empty(re.shape, np.complex128 if re.dtype == np.float64 else np.complex64)
  z.real, z.imag = re, im
  return z

def _parts(*zs: np.ndarray) -> tuple[np.ndarray, ...]: return tuple(p for z in zs for p in (z.real, z.imag))

def _pairs(ts: list[Tensor]) -> list[Z]: return [(ts[i], ts[i + 1]) for i in range(0, len(ts), 2)]

def _cmm(a: Z, b: Z) -> Z: return a[0] @ b[0] - a[1] @ b[1], a[0] @ b[1] + a[1] @ b[0]
def _cmul(a: Z, b: Z) -> Z: return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]
def _csub(a: Z, b: Z) -> Z: return a[0] - b[0], a[1] - b[1]
def _cH(a: Z) -> Z: return mT(a[0]), -mT(a[1])
def _crecip(a: Z) -> Z:
  d = a[0].square() + a[1].square()
  return a[0] / d, -a[1] / d

def require_host(a: Tensor, name: str) -> None:
  """The complex factorizations run LAPACK on the host only (tinygrad's CPU device)."""
  if not on_host(a):
    raise NotImplementedError(f"{name} of complex matrices (and eig) runs LAPACK on tinygrad's CPU device only; "
                              f"this matrix is on {a.device} (or HOST_LAPACK is off)")

def _unpack_pairs(wi: np.ndarray, v: np.ndarray) -> np.ndarray:
  """Real geev's eigenvectors as complex ones: a conjugate pair of eigenvalues (the one with positive imaginary part
  first) shares the columns j, j + 1 as v_j = x + iy, v_{j+1} = x - iy."""
  out = v.astype(np.complex128 if v.dtype == np.float64 else np.complex64)
  j = np.flatnonzero(wi > 0)
  out[:, j] = v[:, j] + 1j * v[:, j + 1]
  out[:, j + 1] = v[:, j] - 1j * v[:, j + 1]
  return out

@functools.lru_cache(maxsize=256)
def _geev_lwork(t: Any, n: int, left: bool, right: bool) -> int:
  """The workspace geev asks for (lwork = -1), as JAX's kernel: the blocked Hessenberg QR needs it for large n."""
  return max(int(_routine("geev_lwork", t)(n, compute_vl=int(left), compute_vr=int(right))[0].real), 1)

_EIGVEC_DERIVS = ("Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input that JAX cannot check "
                  "(see the enable_eigvec_derivs argument to jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to "
                  "jax.lax.linalg.eig to opt in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")

@dataclass(eq=False)
class LapackEig(LapackCall):
  """(w, vl, vr) of general matrices (the vectors as `left`/`right` ask), each complex output as its two parts: LAPACK
  geev, as JAX's CPU eig (eigenvectors of unit 2-norm with their largest-magnitude entry real). The argument is a real
  matrix, or the two parts of a complex one (`complex_input`). NaN if geev fails, as JAX."""
  left: bool
  right: bool
  complex_input: bool
  vec_derivs: bool
  name = "lapack_eig"
  def core_types(self, shapes, dt):
    n = shapes[0][-1]
    return [((n,), dt)] * 2 + [((n, n), dt)] * (2 * (int(self.left) + int(self.right)))
  def one(self, *parts):
    a = _join(*parts) if self.complex_input else parts[0]
    t: Any = a.dtype.type
    n = a.shape[-1]
    kw = dict(compute_vl=int(self.left), compute_vr=int(self.right), lwork=_geev_lwork(t, n, self.left, self.right))
    if self.complex_input: w, vl, vr, info = _routine("geev", t)(a, **kw)
    else:
      wr, wi, vl, vr, info = _routine("geev", t)(a, **kw)
      w, vl, vr = _join(wr, wi), _unpack_pairs(wi, vl), _unpack_pairs(wi, vr)
    outs = [w] + [vl] * self.left + [vr] * self.right
    return _parts(*(_failed(o) if info else o for o in outs))

  def row(self, ins, outs):
    (sa, da), = ins[:1]
    if self.complex_input or da not in _ROW_DTYPES or any(d != da for _, d in outs): return None
    return ("Factor", ("eig", da == dtypes.float64, sa[-1], sa[-1], math.prod(sa[:-2]), 0, "L" * self.left + "R" * self.right))

  def outputs(self, xs: list[Tensor]) -> list[Z]: return _pairs(self.call(xs))

  def jvp(self, xs, ts):
    """JAX's (eig_jvp_rule): eigenvalues dw = diag(v^-1 da v); eigenvectors (enable_eigvec_derivs) by non-degenerate
    perturbation theory under geev's normalisation (_eig_vec_jvp)."""
    if (self.left or self.right) and not self.vec_derivs: raise NotImplementedError(_EIGVEC_DERIVS)
    outs = LapackEig(self.left, True, self.complex_input, self.vec_derivs).outputs(xs)
    w, vr = outs[0], outs[-1]
    da: Z = (ts[0], ts[1]) if self.complex_input else (ts[0], fill_like(ts[0], 0))
    if not (self.left or self.right):
      p = _cmm(_cmm(cinv(vr), da), vr)
      return [diag(p[0]), diag(p[1])]
    dw, dvr = _eig_vec_tangent(w, vr, da)
    tangents = [dw]
    if self.left: tangents.append(_eig_vec_tangent((w[0], -w[1]), outs[1], _cH(da))[1])
    if self.right: tangents.append(dvr)
    return [p for z in tangents for p in z]

  def vjp(self, xs, cts):
    """Eigenvalues only: the jvp's transpose written out, da-bar = v^-H diag(w-bar) v^H (the adjoint of the complex-
    linear jvp is the transpose of the map on pairs; a real a takes its real part), a smaller graph than tracing it."""
    if self.left or self.right: return super().vjp(xs, cts)
    if cts[0] is None and cts[1] is None: return [None] * len(xs)
    ct = tuple(c if c is not None else o.zeros_like() for c, o in zip(cts, self.call(xs), strict=True))
    vr = LapackEig(False, True, self.complex_input, False).outputs(xs)[-1]
    g = _cmm(_cH(cinv(vr)), _cmm((embed_diag(ct[0]), embed_diag(ct[1])), _cH(vr)))
    return list(g) if self.complex_input else [g[0]]

def _eig_vec_tangent(w: Z, v: Z, da: Z) -> tuple[Z, Z]:
  """JAX's _eig_vec_jvp: dv_j = u_j + c_j v_j, c_j fixed by geev's normalisation (unit norm, largest entry real)."""
  n = _sh(w[0])[-1]
  eye = eye_like(n, w[0])
  fr, fi = _crecip((eye + w[0].unsqueeze(-2) - w[0].unsqueeze(-1), w[1].unsqueeze(-2) - w[1].unsqueeze(-1)))
  f = (fr - eye, fi)
  p = _cmm(_cmm(cinv(v), da), v)
  dw = (diag(p[0]), diag(p[1]))
  u = _cmm(v, _cmul(f, p))
  k = (v[0].square() + v[1].square()).argmax(-2, keepdim=True)   # the largest-magnitude entry of each column
  mask = (Tensor.arange(n).reshape(n, 1) == k).cast(w[0].dtype)
  re = -(v[0] * u[0] + v[1] * u[1]).sum(-2)   # -Re(v^H u) per column
  im = -(mask * u[1]).sum(-2) / (mask * v[0]).sum(-2)
  c = (re.unsqueeze(-2), im.unsqueeze(-2))
  vc = _cmul(v, c)
  return dw, (u[0] + vc[0], u[1] + vc[1])

def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False) -> list:
  """jax.lax.linalg.eig: [w, vl?, vr?] of a real or complex matrix stack, as complex arrays."""
  z = x if isinstance(x, ComplexArray) else from_data(x) if is_complex_data(x) else as_tensor(x)
  if isinstance(z, Tensor) and (dt := canonical_dtype(to_inexact_dtype(z.dtype))) != z.dtype: z = z.cast(dt)
  if z.ndim < 2: raise TypeError(f"Input 0 to eig must have rank at least 2, but got shape={tuple(z.shape)}")
  if z.shape[-1] != z.shape[-2]: raise ValueError(f"The input to eig must be a square matrix. Got shape {tuple(z.shape)}.")
  outs = eig_parts((z.re, z.im) if isinstance(z, ComplexArray) else z, compute_left_eigenvectors, compute_right_eigenvectors,
                   enable_eigvec_derivs)
  return [ComplexArray(*o) for o in outs]

def eig_parts(x: Tensor | Z, left: bool, right: bool, vec_derivs: bool) -> list[Z]:
  """eig of a real matrix stack or of a complex one given as its parts: [w, vl?, vr?], each as (re, im)."""
  cplx = isinstance(x, tuple)
  a = x[0] if isinstance(x, tuple) else x
  require_host(a, "eig")
  if not _sh(a)[-1]: return [(a.sum(-1), a.sum(-1))] + [(a, a)] * (int(left) + int(right))
  return LapackEig(left, right, cplx, vec_derivs).outputs(list(x) if isinstance(x, tuple) else [x])

@dataclass(eq=False)
class LapackComplexSolve(LapackCall):
  """x = a^-1 b for complex a, b given as their parts (LAPACK getrf, then BLAS trsm, as JAX's LU solve), or a^-1 with
  `inverse` (the solve on the identity, as JAX's inv). The derivatives are JAX's, as LapackSolve's."""
  inverse: bool
  name = "lapack_complex_solve"
  def core_types(self, shapes, dt): return [(shapes[-1], dt)] * 2
  def one(self, ar, ai, br=None, bi=None):
    a = _join(ar, ai)
    return _parts(_lu_solve(a, np.eye(a.shape[-1], dtype=a.dtype) if self.inverse else _join(br, bi)))
  def jvp(self, xs, ts):
    x = _pairs(self.call(xs))[0]
    if self.inverse: return list(_cmm(x, _cmm((-ts[0], -ts[1]), x)))
    da, db = _pairs(ts)
    return list(_cmm(cinv((xs[0], xs[1])), _csub(db, _cmm(da, x))))

def csolve(a: Z, b: Z) -> Z:
  """a^-1 b for complex matrix stacks of the same batch shape."""
  require_host(a[0], "solve")
  if not _sh(a[0])[-1]: return b
  x = LapackComplexSolve(False).call([*a, *b])
  return x[0], x[1]

def cinv(a: Z) -> Z:
  require_host(a[0], "inv")
  if not _sh(a[0])[-1]: return a
  x = LapackComplexSolve(True).call(list(a))
  return x[0], x[1]

@dataclass(eq=False)
class LapackComplexDet(LapackCall):
  """det (re, im) or, with `log`, slogdet's (sign re, sign im, log|det|) of complex matrices from LAPACK getrf, as
  JAX's (the parity of the pivots times the product of U's diagonal). The derivatives are JAX's: d det = det tr(a^-1 da);
  d log|det| = Re tr(a^-1 da), d sign = i Im tr(a^-1 da) sign."""
  log: bool
  name = "lapack_complex_det"
  def core_types(self, shapes, dt): return [(shapes[0][:-2], dt)] * (3 if self.log else 2)
  def one(self, ar, ai):
    a = _join(ar, ai)
    lu_, piv, _ = _routine("getrf", a.dtype.type)(a)
    d = np.diagonal(lu_)
    parity = -1.0 if np.count_nonzero(piv != np.arange(len(piv))) % 2 else 1.0
    if not self.log:
      det_ = parity * np.prod(d)
      return np.array(det_.real), np.array(det_.imag)
    mag = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore"):
      sign = parity * np.prod(d / mag) if np.all(mag) else np.zeros((), a.dtype)
      return np.array(sign.real), np.array(sign.imag), np.array(np.sum(np.log(mag)))
  def jvp(self, xs, ts):
    g = _cmm(cinv((xs[0], xs[1])), (ts[0], ts[1]))
    tr = (diag(g[0]).sum(-1), diag(g[1]).sum(-1))
    out = self.call(xs)
    if not self.log: return list(_cmul((out[0], out[1]), tr))
    sr, si = out[0], out[1]
    return [-(tr[1] * si), tr[1] * sr, tr[0]]   # (i Im tr) sign, Re tr

def cdet(a: Z) -> Z:
  require_host(a[0], "det")
  if not _sh(a[0])[-1]: return a[0].sum((-2, -1)) + 1, a[0].sum((-2, -1))
  out = LapackComplexDet(False).call(list(a))
  return out[0], out[1]

def cslogdet(a: Z) -> tuple[Z, Tensor]:
  require_host(a[0], "slogdet")
  if not _sh(a[0])[-1]: return (a[0].sum((-2, -1)) + 1, a[0].sum((-2, -1))), a[0].sum((-2, -1))
  out = LapackComplexDet(True).call(list(a))
  return (out[0], out[1]), out[2]

@dataclass(eq=False)
class LapackHermitianEigh(LapackCall):
  """(v re, v im, w) of Hermitian matrices from their lower (or upper) triangle: LAPACK heevd, as JAX (eigenvalues ascending,
  real); NaN if it fails to converge. The derivative is JAX's (_eigh_jvp_rule): dv = v (F * v^H da v), dw = Re diag."""
  lower: bool
  name = "lapack_hermitian_eigh"
  def core_types(self, shapes, dt): return [(shapes[0], dt), (shapes[0], dt), (shapes[0][-1:], dt)]
  def one(self, ar, ai):
    w, v, info = _routine("heevd", _join(ar, ai).dtype.type)(_join(ar, ai), compute_v=1, lower=int(self.lower))
    return (*_parts(_failed(v)), _failed(w)) if info else (*_parts(v), w)
  def _fmat(self, xs: list[Tensor]) -> tuple[Z, Tensor]:
    vr, vi, w = self.call(xs)
    eye = eye_like(_sh(w)[-1], w)
    return (vr, vi), 1 / (eye + w.unsqueeze(-2) - w.unsqueeze(-1)) - eye
  def jvp(self, xs, ts):
    v, f = self._fmat(xs)
    p = _cmm(_cmm(_cH(v), (ts[0], ts[1])), v)
    dv = _cmm(v, (f * p[0], f * p[1]))
    return [dv[0], dv[1], diag(p[0])]
  def vjp(self, xs, cts):
    """The jvp's adjoint written out: da-bar = v (F * (v^H v-bar) + diag(w-bar)) v^H (F real)."""
    if all(c is None for c in cts): return [None, None]
    v, f = self._fmat(xs)
    cv = _cmm(_cH(v), (cts[0] if cts[0] is not None else fill_like(v[0], 0), cts[1] if cts[1] is not None else fill_like(v[1], 0)))
    inner = (f * cv[0] + (embed_diag(cts[2]) if cts[2] is not None else 0), f * cv[1])
    return list(_cmm(_cmm(v, inner), _cH(v)))

def hermitian_eigh(a: Z, lower: bool = True) -> tuple[Z, Tensor]:
  """((v re, v im), w) of Hermitian matrices (the lower or upper triangle read), as JAX's lax.linalg.eigh."""
  require_host(a[0], "eigh")
  if not _sh(a[0])[-1]: return a, a[0].sum(-1)
  vr, vi, w = LapackHermitianEigh(lower).call(list(a))
  return (vr, vi), w

def _cadd(a: Z, b: Z) -> Z: return a[0] + b[0], a[1] + b[1]
def _ctril(a: Z, k: int = 0) -> Z: return tril(a[0], k), tril(a[1], k)
def _cslice(a: Z, rows: slice = slice(None), cols: slice = slice(None)) -> Z: return a[0][..., rows, cols], a[1][..., rows, cols]
def _cdiv_cols(a: Z, s: Tensor) -> Z: return a[0] / s, a[1] / s   # (a real divisor broadcast over the rows)

@dataclass(eq=False)
class LapackComplexSvd(LapackCall):
  """(u re, u im, s, vt re, vt im), or s alone without `uv`, full or reduced: LAPACK gesdd (c/z), as JAX's CPU svd
  (singular values real, descending; the same singular vectors, phases included); NaN if it fails to converge. The
  derivative is JAX's (_svd_jvp_rule, complex terms included)."""
  full: bool
  uv: bool
  name = "lapack_complex_svd"
  def core_types(self, shapes, dt):
    m, n = shapes[0]
    k = min(m, n)
    if not self.uv: return [((k,), dt)]
    u, vt = ((m, m if self.full else k), dt), ((n if self.full else k, n), dt)
    return [u, u, ((k,), dt), vt, vt]
  def one(self, ar, ai):
    a = _join(ar, ai)
    t, uv, full = a.dtype.type, int(self.uv), int(self.full)
    lwork = int(_routine("gesdd_lwork", t)(*a.shape, compute_uv=uv, full_matrices=full)[0].real)   # as in LapackQr
    u, s, vt, info = _routine("gesdd", t)(a, compute_uv=uv, full_matrices=full, lwork=lwork)
    if not self.uv: return (_failed(s) if info else s,)
    u, s, vt = (_failed(u), _failed(s), _failed(vt)) if info else (u, s, vt)
    return (*_parts(u), s, *_parts(vt))
  def _reduced(self, xs: list[Tensor]) -> tuple[Z, Tensor, Z]:
    ur, ui, s, vr, vi = (self if self.uv and not self.full else LapackComplexSvd(False, True)).call(xs)
    return (ur, ui), s, (vr, vi)
  def jvp(self, xs, ts):
    m, n = _sh(xs[0])[-2:]
    if self.uv and self.full and m != n:
      raise NotImplementedError("svd: derivative with full_matrices=True of a non-square matrix (JAX has none either)")
    u, s, vt = self._reduced(xs)
    if not self.uv: return [_csvd_ds(u, vt, (ts[0], ts[1]))]
    du, ds, dvt = _csvd_tangent(u, s, vt, (ts[0], ts[1]))
    return [*du, ds, *dvt]
  def vjp(self, xs, cts):
    """The jvp's transpose on pairs, written out (tracing the transposition of the jvp made a gradient's graph ~5x
    larger in compile time): da-bar = u [(F * (gu - gu^H)) s + s (F * (gv - gv^H)) + diag(s-bar + i Im(gu)_ii / s)] vt
    with gu = u^H u-bar, gv = v^H v-bar, plus the terms of non-square matrices."""
    if all(c is None for c in cts): return [None, None]
    m, n = _sh(xs[0])[-2:]
    if self.uv and self.full and m != n: return super().vjp(xs, cts)   # (raises as the jvp)
    u, s, vt = self._reduced(xs)
    if not self.uv: return list(_cmm((u[0] * cts[0].unsqueeze(-2), u[1] * cts[0].unsqueeze(-2)), vt))
    def ct(i: int, like: Tensor) -> Tensor: return fill_like(like, 0) if cts[i] is None else cts[i]
    ub, sb, vtb = (ct(0, u[0]), ct(1, u[1])), ct(2, s), (ct(3, vt[0]), ct(4, vt[1]))
    k = _sh(s)[-1]
    eye = eye_like(k, s)
    sd = s.unsqueeze(-2)
    f = 1 / ((sd + mT(sd)) * (sd - mT(sd)) + eye) - eye
    s_zero = (s == 0).cast(s.dtype)
    s_inv = 1 / (s + s_zero) - s_zero
    gu, gv = _cmm(_cH(u), ub), _cmm(vt, _cH(vtb))
    au, av = _csub(gu, _cH(gu)), _csub(gv, _cH(gv))
    inner = (f * au[0] * sd + mT(sd) * (f * av[0]) + embed_diag(sb), f * au[1] * sd + mT(sd) * (f * av[1]) + embed_diag(diag(gu[1]) * s_inv))
    g = _cmm(_cmm(u, inner), vt)
    if m > n: g = _cadd(g, _cmm(_cdiv_cols(_csub(ub, _cmm(u, gu)), sd), vt))
    if n > m: g = _cadd(g, _cmm(u, _cdiv_cols(_csub(vtb, _cmm(_cmm(vtb, _cH(vt)), vt)), mT(sd))))
    return list(g)

def _csvd_ds(u: Z, vt: Z, da: Z) -> Tensor:
  """ds = Re diag(u^H da v): the real part of sum_j conj(u_ji) (da v)_ji."""
  dav = _cmm(da, _cH(vt))
  return (u[0] * dav[0] + u[1] * dav[1]).sum(-2)

def _csvd_tangent(u: Z, s: Tensor, vt: Z, da: Z) -> tuple[Z, Tensor, Z]:
  """JAX's _svd_jvp_rule on pairs: as the real rule, with dS = u^H da v complex, ds = Re diag(dS), and dU's extra
  diagonal term (dS - dS^H) / 2 / s = i Im diag(dS) / s."""
  ut, v = _cH(u), _cH(vt)
  sd = s.unsqueeze(-2)
  ds_mat = _cmm(_cmm(ut, da), v)
  k = _sh(s)[-1]
  eye = eye_like(k, s)
  f = 1 / ((sd + mT(sd)) * (sd - mT(sd)) + eye) - eye
  dss, sds = (sd * ds_mat[0], sd * ds_mat[1]), (mT(sd) * ds_mat[0], mT(sd) * ds_mat[1])
  s_zero = (s == 0).cast(s.dtype)
  s_inv = 1 / (s + s_zero) - s_zero
  du = _cmm(u, (f * (dss[0] + mT(dss[0])), f * (dss[1] - mT(dss[1])) + embed_diag(diag(ds_mat[1]) * s_inv)))
  dv = _cmm(v, (f * (sds[0] + mT(sds[0])), f * (sds[1] - mT(sds[1]))))
  m, n = _sh(u[0])[-2], _sh(vt[0])[-1]
  if m > n:
    dav = _cmm(da, v)
    du = _cadd(du, _cdiv_cols(_csub(dav, _cmm(u, _cmm(ut, dav))), sd))
  if n > m:
    dahu = _cmm(_cH(da), u)
    dv = _cadd(dv, _cdiv_cols(_csub(dahu, _cmm(v, _cmm(vt, dahu))), sd))
  return du, diag(ds_mat[0]), _cH(dv)

def _ceye(r: int, c: int, like: Tensor, one: float = 1.0) -> Z:
  """Identity blocks (r, c) (or zeros) of like's batch shape, as complex: an empty result's factors."""
  re = (Tensor.eye(r, c, dtype=like.dtype).to(like.device) * one).expand(*batch_shape(like), r, c)
  return re, fill_like(re, 0)

def csvd(a: Z, full: bool) -> tuple[Z, Tensor, Z]:
  """((u re, u im), s, (vt re, vt im)) of complex matrices, full or reduced, as JAX's lax.linalg.svd."""
  require_host(a[0], "svd")
  m, n = _sh(a[0])[-2:]
  if not min(m, n):   # JAX's _empty_svd: identities for full u / vt, empty otherwise
    return _ceye(m, m if full else 0, a[0]), _csvd_empty(a[0]), _ceye(n if full else 0, n, a[0])
  outs = LapackComplexSvd(full, True).call(list(a))
  return (outs[0], outs[1]), outs[2], (outs[3], outs[4])

def csvdvals(a: Z) -> Tensor:
  """The singular values (real, descending) of complex matrices."""
  require_host(a[0], "svd")
  return LapackComplexSvd(False, False).call(list(a))[0] if min(_sh(a[0])[-2:]) else _csvd_empty(a[0])

def _csvd_empty(like: Tensor) -> Tensor: return Tensor.zeros(*batch_shape(like), 0, dtype=like.dtype, device=like.device)

@dataclass(eq=False)
class LapackComplexQr(LapackCall):
  """(q re, q im, r re, r im), complete (`full`: q (m, m), r (m, n)) or reduced (q (m, k), r (k, n)): LAPACK geqrf then
  ungqr (c/z), as JAX's CPU qr. The derivative is JAX's (qr_jvp_rule: the thin rule with its complex diagonal
  correction, the wide case, and the complete QR of a tall matrix)."""
  full: bool
  name = "lapack_complex_qr"
  def core_types(self, shapes, dt):
    m, n = shapes[0]
    k = m if self.full else min(m, n)
    return [((m, k), dt)] * 2 + [((k, n), dt)] * 2
  def one(self, ar, ai):
    a = _join(ar, ai)
    (m, n), t = a.shape, a.dtype.type
    r, tau, _, _ = _routine("geqrf", t)(a, lwork=int(_routine("geqrf_lwork", t)(m, n)[0].real))   # as LapackQr
    q_in = r[:, :m] if m < n else np.pad(r, ((0, 0), (0, m - n))) if self.full else r
    q = _routine("ungqr", t)(q_in, tau, lwork=int(_routine("ungqr", t)(q_in, tau, lwork=-1)[1][0].real))[0]
    return (*_parts(q), *_parts(np.triu(r if self.full or m < n else r[:n])))
  def jvp(self, xs, ts):
    q, r = _pairs(self.call(xs))
    dq, dr = _cqr_tangent(q, r, (xs[0], xs[1]), (ts[0], ts[1]), self.full)
    return [*dq, *dr]
  def vjp(self, xs, cts):
    """The jvp's transpose on pairs, written out but for the complete QR of a tall matrix (traced): with
    M = q^H q-bar - r-bar r^H, x-bar = (q-bar + q (tril(M - M^H, -1) + i Im diag(M) - M)) r^-H; a wide matrix adds
    x2 r2-bar^H to q-bar and takes q r2-bar for x2."""
    m, n = _sh(xs[0])[-2:]
    if self.full and m > n: return super().vjp(xs, cts)
    if all(c is None for c in cts): return [None, None]
    q, r = _pairs(self.call(xs))
    qb, rb = [(cts[i] if cts[i] is not None else fill_like(p, 0), cts[i + 1] if cts[i + 1] is not None else fill_like(p, 0))
              for i, p in ((0, q[0]), (2, r[0]))]
    if m >= n: return list(_cthin_qr_cotangent(q, r, qb, rb))
    x2, rb1, rb2 = _cslice((xs[0], xs[1]), cols=slice(m, None)), _cslice(rb, cols=slice(0, m)), _cslice(rb, cols=slice(m, None))
    g1 = _cthin_qr_cotangent(q, _cslice(r, cols=slice(0, m)), _cadd(qb, _cmm(x2, _cH(rb2))), rb1)
    g2 = _cmm(q, rb2)
    return [g1[0].cat(g2[0], dim=-1), g1[1].cat(g2[1], dim=-1)]

def _cthin_qr_cotangent(q: Z, r: Z, qb: Z, rb: Z) -> Z:
  """The transpose of _cthin_qr_tangent on pairs."""
  mm = _csub(_cmm(_cH(q), qb), _cmm(rb, _cH(r)))
  low = _ctril(_csub(mm, _cH(mm)), -1)
  qtb = _csub((low[0], low[1] + embed_diag(diag(mm[1]))), mm)
  return _cmm(_cadd(qb, _cmm(q, qtb)), _cH(cinv(r)))

def _cthin_qr_tangent(q: Z, r: Z, dx: Z) -> tuple[Z, Z]:
  """JAX's _thin_qr_jvp (m >= n) on pairs: dx r^-1 (r's inverse from LAPACK, a primal value), the skew-Hermitian
  do plus i Im diag(q^H dx r^-1)."""
  dx_rinv = _cmm(dx, cinv(r))
  qt = _cmm(_cH(q), dx_rinv)
  low = _ctril(qt, -1)
  do = _csub(low, _cH(low))
  do = (do[0], do[1] + embed_diag(diag(qt[1])))
  return _cadd(_cmm(q, _csub(do, qt)), dx_rinv), _cmm(_csub(qt, do), r)

def _cqr_tangent(q: Z, r: Z, x: Z, dx: Z, full: bool) -> tuple[Z, Z]:
  """JAX's qr_jvp_rule on pairs."""
  m, n = _sh(x[0])[-2:]
  if m < n:   # wide: the square block's rule, then dR2 = dQ^H X2 + Q^H dX2
    dq, dr1 = _cthin_qr_tangent(q, _cslice(r, cols=slice(0, m)), _cslice(dx, cols=slice(0, m)))
    dr2 = _cadd(_cmm(_cH(dq), _cslice(x, cols=slice(m, None))), _cmm(_cH(q), _cslice(dx, cols=slice(m, None))))
    return dq, (dr1[0].cat(dr2[0], dim=-1), dr1[1].cat(dr2[1], dim=-1))
  q_mn, r_nn = (_cslice(q, cols=slice(0, n)), _cslice(r, slice(0, n))) if full else (q, r)
  dq_mn, dr_nn = _cthin_qr_tangent(q_mn, r_nn, dx)
  if not full or m == n: return dq_mn, dr_nn
  # the complete QR of a tall matrix (arXiv 2409.13374, eqs. 32-33): Z = Q_pn (Q_nn - I)^-1
  q_nn, q_pn, q_mp = _cslice(q_mn, slice(0, n)), _cslice(q_mn, slice(n, None)), _cslice(q, cols=slice(n, None))
  dq_nn, dq_pn = _cslice(dq_mn, slice(0, n)), _cslice(dq_mn, slice(n, None))
  z_h = csolve(_cH((q_nn[0] - eye_like(n, q_nn[0]), q_nn[1])), _cH(q_pn))
  z = _cH(z_h)
  dq_mp = _csub(_cmm(dq_mn, z_h), _cmm(_cadd(q_mn, _cmm(q_mp, z)), _cH(_csub(dq_pn, _cmm(z, dq_nn)))))
  dr = (dr_nn[0].pad(((0, 0),) * (dr_nn[0].ndim - 2) + ((0, m - n), (0, 0))), dr_nn[1].pad(((0, 0),) * (dr_nn[1].ndim - 2) + ((0, m - n), (0, 0))))
  return (dq_mn[0].cat(dq_mp[0], dim=-1), dq_mn[1].cat(dq_mp[1], dim=-1)), dr

def cqr(a: Z, full: bool) -> tuple[Z, Z]:
  """((q re, q im), (r re, r im)) of complex matrices, complete or reduced, as JAX's lax.linalg.qr."""
  require_host(a[0], "qr")
  m, n = _sh(a[0])[-2:]
  if not min(m, n):   # JAX's: q an identity block, r zeros
    k = m if full else min(m, n)
    return _ceye(m, k, a[0]), _ceye(k, n, a[0], 0)
  qr_, qi, rr, ri = LapackComplexQr(full).call(list(a))
  return (qr_, qi), (rr, ri)

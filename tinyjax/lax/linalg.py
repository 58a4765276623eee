"""lax.linalg: the matrix factorizations and solves the array library is written on, with their derivative rules.

Every function takes batches of matrices (leading axes) and works under vmap, jit and every derivative transform. The
factorizations are written with tinygrad Tensor ops in static Python loops (docs/linalg.md explains the algorithms);
their derivatives are JAX's rules (`jax/_src/lax/linalg.py`) as `custom_jvp`s, so the loops are never differentiated.
A rule only applies custom functions to primal values and keeps the tangent in plain Tensor ops: reverse mode
transposes the rule, and a custom call on a tangent would have to be transposed through its own rule again. solve and
inv are one host call of LAPACK (`LapackSolve`). `lu` and `triangular_solve` are JAX's `lax.linalg` functions; the
other names are tinyjax's kernels, which `tinyjax.numpy.linalg` and `tinyjax.scipy.linalg` wrap in their APIs.
"""
from __future__ import annotations
import functools, math, warnings
from dataclasses import dataclass
import numpy as np
import scipy.linalg
from tinygrad import Tensor
from tinyjax._tg import UOp, dtypes, static_shape as _sh, read_array, write_array
from tinyjax.call_rule import BatchedCall
from tinyjax.custom import custom_jvp
from tinyjax.lax.host_call import HostCallRule, type_of

__all__ = ["lu", "triangular_solve", "tri_inv", "cholesky_lower", "lu_parts", "permutation_matrix", "LapackSolve", "solve",
           "inv", "det", "slogdet", "householder", "qr_reduced", "eigh_jacobi", "svd_reduced", "svd_full_or_reduced",
           "singular_values", "mT", "batch_shape", "eye_like", "const_like", "diag", "embed_diag", "sign1"]

# ---- helpers --------------------------------------------------------------------------------------------------------

def mT(x: Tensor) -> Tensor: return x.transpose(-2, -1)
def batch_shape(x: Tensor) -> tuple[int, ...]: return tuple(_sh(x)[:-2])
def eye_like(n: int, like: Tensor) -> Tensor: return Tensor.eye(n, dtype=like.dtype)
def const_like(a: np.ndarray, like: Tensor) -> Tensor: return Tensor(np.asarray(a, dtype=np.float64), device=like.device).cast(like.dtype)

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
  t = t.tril(-1) + eye_like(n, t) if unit else t.tril()
  return _tri_inv_lower(t)

@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def tri_inv(t: Tensor, lower: bool, unit: bool) -> Tensor:
  return _tri_inv_impl(t, lower, unit)

@tri_inv.defjvp
def _tri_inv_jvp(lower, unit, primals, tangents):
  (t,), (dt,) = primals, tangents
  x = tri_inv(t, lower, unit)
  dt = (dt.tril(-1 if unit else 0) if lower else dt.triu(1 if unit else 0))
  return x, -(x @ (dt @ x))

def triangular_solve(a: Tensor, b: Tensor, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False) -> Tensor:
  """jax.lax.linalg.triangular_solve: x with op(a) x = b (left_side) or x op(a) = b, op(a) = a or a^T (transpose_a), for
  triangular a (the `lower` or upper triangle is read; unit_diagonal: ones assumed on it), batched. Real matrices only:
  conjugate_a changes nothing."""
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

@custom_jvp
def cholesky_lower(a: Tensor) -> Tensor:
  """Lower Cholesky factor from the lower triangle of a; NaN everywhere for a matrix that is not positive definite."""
  l = _chol_impl(a)
  return _nan_like(l, diag(l).isnan().any(-1)).tril()   # JAX: NaN in the lower triangle, zeros above

@cholesky_lower.defjvp
def _cholesky_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  l = cholesky_lower(a)
  li = tri_inv(l, True, False)
  x = li @ da @ mT(li)
  n = _sh(a)[-1]
  phi = x.tril() / const_like(1 + np.eye(n), x)
  return l, l @ phi

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
  l = lu[..., :, :k].tril(-1) + const_like(np.eye(m, k), lu)
  return l, lu[..., :k, :].triu()

def permutation_matrix(perm: Tensor, like: Tensor) -> Tensor:
  """P with (P @ x) = x[perm]: P[i, perm[i]] = 1."""
  m = _sh(perm)[-1]
  return (perm.unsqueeze(-1) == Tensor.arange(m)).cast(like.dtype)

@custom_jvp
def lu(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  return _lu_impl(a)

@lu.defjvp
def _lu_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  packed, piv, perm = lu(a)
  m, n = _sh(a)[-2], _sh(a)[-1]
  k = min(m, n)
  l, u = lu_parts(packed)
  # square L (m, m) and U (n, n) completed with identity, as JAX's _lu_jvp_inner
  l = l.pad(((0, 0),) * len(batch_shape(a)) + ((0, 0), (0, m - k))) + const_like(np.diag((np.arange(m) >= k).astype(float)), a)
  u = u.pad(((0, 0),) * len(batch_shape(a)) + ((0, n - k), (0, 0))) + const_like(np.diag((np.arange(n) >= k).astype(float)), a)
  lau = tri_inv(l, True, True) @ (permutation_matrix(perm, a) @ da) @ tri_inv(u, False, False)
  dlu = l @ lau.tril(-1) + lau.triu() @ u
  return (packed, piv, perm), (dlu[..., :m, :n], piv.zeros_like(), perm.zeros_like())

# ---- inverse, solve, determinants -------------------------------------------------------------------------------------

# ---- solve and inv: LAPACK on the host ---------------------------------------------------------------------------------
# JAX's CPU solve is LAPACK's getrf + getrs. An LU in tinygrad ops unrolls into n steps of kernels (534 kernels and 38 s
# of compiling for n = 100) and inv(a) @ b loses accuracy (4x JAX's error); one host call of LAPACK gives JAX's numbers
# at once, as lax's loops run on the host (lax.host_call.HostCallRule: a call whose lowering is a host call).

@dataclass(eq=False)
class LapackSolve(HostCallRule):
  """x = a^-1 b for a (..., n, n) and b (..., n, k) of the same batch shape (numpy.linalg.solve: LAPACK gesv), or
  a^-1 itself with `inverse` (numpy.linalg.inv: gesv on the identity, what JAX's inv does)."""
  inverse: bool
  name = "lapack"
  def out_types(self, xs): return [type_of(xs[-1])]

  def executor(self, ins, outs):
    shapes = [s for s, _ in ins]
    def run(bufs) -> None:
      vals = [read_array(b, s) for b, s in zip(bufs[1:], shapes, strict=True)]
      work = np.float64 if vals[0].dtype == np.float64 else np.float32   # LAPACK has no half precision
      vals = [v.astype(work) for v in vals]
      try: x = np.linalg.inv(vals[0]) if self.inverse else np.linalg.solve(*vals)
      except np.linalg.LinAlgError:   # a singular matrix: LAPACK's inf/nan for it, as JAX, instead of an exception
        a = vals[0]
        b = np.broadcast_to(np.eye(a.shape[-1], dtype=work), a.shape) if self.inverse else vals[1]
        x = np.empty(b.shape, dtype=work)
        with warnings.catch_warnings():
          warnings.simplefilter("ignore")
          for i in np.ndindex(a.shape[:-2]): x[i] = scipy.linalg.lu_solve(scipy.linalg.lu_factor(a[i], check_finite=False), b[i], check_finite=False)
      write_array(bufs[0], x)
    return run

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

  def batched(self, flags, size):
    def make(xs: list[Tensor]) -> list[UOp]:
      xs = [x.unsqueeze(0).expand(size, *x.shape) if f is None else x.permute(f, *(i for i in range(x.ndim) if i != f))
            for x, f in zip(xs, flags, strict=True)]
      return [self.call(xs)[0].uop]
    return BatchedCall(self.name, make)

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

@custom_jvp
def det(a: Tensor) -> Tensor:
  parity, d = _lu_det_parts(a)
  return parity * d.prod(-1)

@det.defjvp
def _det_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  y = det(a)
  return y, y * (mT(inv(a)) * da).sum((-2, -1))

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
  return (sign, logdet), (sign.zeros_like(), (mT(inv(a)) * da).sum((-2, -1)))

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
  return q, r.triu()

def _qr_thin(a: Tensor) -> tuple[Tensor, Tensor]:
  q, r = householder(a, True)
  assert q is not None
  k = min(_sh(a)[-2], _sh(a)[-1])
  return q[..., :, :k], r[..., :k, :]

@custom_jvp
def qr_reduced(a: Tensor) -> tuple[Tensor, Tensor]:
  return _qr_thin(a)

@qr_reduced.defjvp
def _qr_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  q, r = qr_reduced(a)
  m, n = _sh(a)[-2], _sh(a)[-1]
  if m < n: raise NotImplementedError("qr: derivative of a wide matrix (m < n) is not implemented")
  dx_rinv = da @ tri_inv(r, False, False)
  qt = mT(q) @ dx_rinv
  low = qt.tril(-1)
  do = low - mT(low)
  return (q, r), (q @ (do - qt) + dx_rinv, (qt - do) @ r)

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

@custom_jvp
def eigh_jacobi(a: Tensor) -> tuple[Tensor, Tensor]:
  return _eigh_impl(a)

@eigh_jacobi.defjvp
def _eigh_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  v, w = eigh_jacobi(a)
  n = _sh(a)[-1]
  eye = eye_like(n, a)
  fmat = 1 / (eye + w.unsqueeze(-2) - w.unsqueeze(-1)) - eye
  vda = mT(v) @ da @ v
  return (v, w), (v @ (fmat * vda), diag(vda))

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

def svd_full_or_reduced(a: Tensor, full: bool) -> tuple[Tensor, Tensor, Tensor]:
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

@custom_jvp
def svd_reduced(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  return svd_full_or_reduced(a, False)

@svd_reduced.defjvp
def _svd_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  u, s, vt = svd_reduced(a)
  ut, v = mT(u), mT(vt)
  sd = s.unsqueeze(-2)
  ds_mat = ut @ da @ v
  ds = diag(ds_mat)
  k = _sh(s)[-1]
  eye = eye_like(k, a)
  diffs = (sd + mT(sd)) * (sd - mT(sd))
  f = 1 / (diffs + eye) - eye
  dss, sds = sd * ds_mat, mT(sd) * ds_mat
  s_zero = (s == 0).cast(s.dtype)
  s_inv = 1 / (s + s_zero) - s_zero
  dudv_diag = 0.5 * (ds_mat - mT(ds_mat)) * embed_diag(s_inv)
  du = u @ (f * (dss + mT(dss)) + dudv_diag)
  dv = v @ (f * (sds + mT(sds)))
  m, n = _sh(a)[-2], _sh(a)[-1]
  if m > n:
    dav = da @ v
    du = du + (dav - u @ (ut @ dav)) / sd
  if n > m:
    dahu = mT(da) @ u
    dv = dv + (dahu - v @ (vt @ dahu)) / sd
  return (u, s, vt), (du, ds, mT(dv))

@custom_jvp
def singular_values(a: Tensor) -> Tensor:
  m, n = _sh(a)[-2], _sh(a)[-1]
  r = householder(a if m >= n else mT(a), False)[1]
  k = min(m, n)
  return _svd_square(r[..., :k, :])[1]

@singular_values.defjvp
def _svdvals_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  u, s, vt = svd_reduced(a)
  return s, diag(mT(u) @ da @ mT(vt))
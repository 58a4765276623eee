"""tinyjax.numpy.linalg: JAX's jnp.linalg on tinygrad Tensors.

Every function takes batches of matrices (leading axes) and works under vmap, jit and every derivative transform. The
factorizations are written with tinygrad Tensor ops in static Python loops (docs/linalg.md explains the algorithms);
their derivatives are JAX's rules (`jax/_src/lax/linalg.py`) as `custom_jvp`s, so the loops are never differentiated.
A rule only applies custom functions to primal values and keeps the tangent in plain Tensor ops: reverse mode
transposes the rule, and a custom call on a tangent would have to be transposed through its own rule again.
"""
from __future__ import annotations
import functools, math, warnings
from dataclasses import dataclass
from typing import Any, Sequence
import numpy as np
import scipy.linalg
from tinyjax._tg import Tensor, UOp, dtypes, static_shape as _sh, read_array, write_array
from tinyjax.lax.host_call import HostCallRule, type_of as _ctype
from tinyjax.call_rule import BatchedCall
from tinyjax.custom import custom_jvp
from tinyjax.numpy._core import asarray, default_float, result_type

__all__ = ["norm", "inv", "solve", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "pinv",
           "lstsq", "matrix_power", "matrix_rank", "multi_dot", "cond", "matrix_norm", "vector_norm", "outer", "matmul",
           "matrix_transpose", "trace", "diagonal", "tensordot", "vecdot", "cross"]

# ---- helpers --------------------------------------------------------------------------------------------------------

def _mT(x: Tensor) -> Tensor: return x.transpose(-2, -1)
def _batch(x: Tensor) -> tuple[int, ...]: return tuple(_sh(x)[:-2])
def _eye(n: int, like: Tensor) -> Tensor: return Tensor.eye(n, dtype=like.dtype)
def _const(a: np.ndarray, like: Tensor) -> Tensor: return Tensor(np.asarray(a, dtype=np.float64), device=like.device).cast(like.dtype)

def _inexact(x: Any) -> Tensor:
  """x as a float Tensor (jnp.linalg promotes integers to the default float, as JAX)."""
  t = asarray(x)
  return t if dtypes.is_float(t.dtype) else t.cast(default_float())

def _square(x: Tensor, name: str) -> Tensor:
  if x.ndim < 2: raise ValueError(f"{name}: input must have at least 2 dimensions, got shape {tuple(x.shape)}")
  if _sh(x)[-1] != _sh(x)[-2]:
    raise ValueError(f"{name}: last two dimensions of the input must be square, got shape {tuple(x.shape)}")
  return x

def _matrix(x: Tensor, name: str) -> Tensor:
  if x.ndim < 2: raise ValueError(f"{name}: input must have at least 2 dimensions, got shape {tuple(x.shape)}")
  return x

def _diag(x: Tensor) -> Tensor:
  """The diagonal of the last two (square) axes."""
  return _diag_blocks(x, 1)[..., 0, 0]

def _diag_blocks(x: Tensor, s: int) -> Tensor:
  """The diagonal s x s blocks of the (p, p) matrices x (s divides p), as (..., p // s, s, s)."""
  p, b = _sh(x)[-1], _batch(x)
  k = p // s
  nb = len(b)
  y = x.reshape(*b, k, s, k, s).permute(*range(nb), nb, nb + 2, nb + 1, nb + 3).reshape(*b, k * k, s, s)
  # the flat block index of block (i, i) is i * (k + 1): pad to k * (k + 1) blocks and take column 0 of each row
  y = y.pad(((0, 0),) * nb + ((0, k), (0, 0), (0, 0))).reshape(*b, k, k + 1, s, s)
  return y[..., 0, :, :]

def _embed_diag(d: Tensor) -> Tensor:
  """Matrices with the last axis of d on their diagonals."""
  n = _sh(d)[-1]
  return d.unsqueeze(-1) * _eye(n, d)

def _sign1(x: Tensor) -> Tensor: return (x < 0).where(-1.0, 1.0).cast(x.dtype)   # sign with sign(0) = +1

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
  n, b = _sh(t)[-1], _batch(t)
  p = 1 << max(n - 1, 0).bit_length()
  if p != n: t = t.pad(((0, 0),) * len(b) + ((0, p - n), (0, p - n))) + _const(np.diag((np.arange(p) >= n).astype(float)), t)
  inv = (1 / _diag(t)).reshape(*b, p, 1, 1)
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
  if not lower: return _mT(_tri_inv_impl(_mT(t), True, unit))
  n = _sh(t)[-1]
  t = t.tril(-1) + _eye(n, t) if unit else t.tril()
  return _tri_inv_lower(t)

@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _tri_inv(t: Tensor, lower: bool, unit: bool) -> Tensor:
  return _tri_inv_impl(t, lower, unit)

@_tri_inv.defjvp
def _tri_inv_jvp(lower, unit, primals, tangents):
  t, = primals
  dt, = tangents
  x = _tri_inv(t, lower, unit)
  dt = (dt.tril(-1 if unit else 0) if lower else dt.triu(1 if unit else 0))
  return x, -(x @ (dt @ x))

def triangular_solve(a: Tensor, b: Tensor, lower: bool, trans: bool = False, unit: bool = False, left: bool = True) -> Tensor:
  """op(a) x = b (left) or x op(a) = b, op(a) = a or a^T, for triangular a (batched, b a matrix stack)."""
  ai = _tri_inv(a, lower, unit)
  if trans: ai = _mT(ai)
  return ai @ b if left else b @ ai

# ---- Cholesky ---------------------------------------------------------------------------------------------------------

_NB = 32   # block size of the blocked factorizations: below it the column loop, above it a recursion into matmuls

def _chol_unblocked(a: Tensor) -> Tensor:
  """Right-looking column Cholesky of the lower triangle: step j takes column j and updates the shrinking trailing
  matrix with one outer product."""
  n, nb = _sh(a)[-1], len(_batch(a))
  cols = []
  for j in range(n):
    col = a[..., :, :1] / a[..., :1, :1].sqrt()
    cols.append(col.pad(((0, 0),) * nb + ((j, 0), (0, 0))))
    rest = col[..., 1:, :]
    # a kernel boundary per step: fused, each entry would recompute the whole chain of updates (n = 20 took 53 s to
    # compile as 2 kernels)
    a = (a[..., 1:, 1:] - rest @ _mT(rest)).contiguous()
  return Tensor.cat(*cols, dim=-1)

def _chol_impl(a: Tensor) -> Tensor:
  """Recursive blocked Cholesky: L11 = chol(A11), L21 = A21 L11^-T, L22 = chol(A22 - L21 L21^T)."""
  n, nb = _sh(a)[-1], len(_batch(a))
  if n <= _NB: return _chol_unblocked(a)
  h = (n // 2 + _NB - 1) // _NB * _NB
  l11 = _chol_impl(a[..., :h, :h])
  l21 = a[..., h:, :h] @ _mT(_tri_inv_impl(l11, True, False))
  l22 = _chol_impl(a[..., h:, h:] - l21 @ _mT(l21))
  return l11.pad(((0, 0),) * nb + ((0, 0), (0, n - h))).cat(l21.cat(l22, dim=-1), dim=-2)

@custom_jvp
def _cholesky(a: Tensor) -> Tensor:
  """Lower Cholesky factor from the lower triangle of a; NaN everywhere for a matrix that is not positive definite."""
  l = _chol_impl(a)
  return _nan_like(l, _diag(l).isnan().any(-1)).tril()   # JAX: NaN in the lower triangle, zeros above

@_cholesky.defjvp
def _cholesky_jvp(primals, tangents):
  a, = primals
  da, = tangents
  l = _cholesky(a)
  li = _tri_inv(l, True, False)
  x = li @ da @ _mT(li)
  n = _sh(a)[-1]
  phi = x.tril() / _const(1 + np.eye(n), x)
  return l, l @ phi

# ---- LU with partial pivoting -------------------------------------------------------------------------------------

def _lu_impl(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """Right-looking LU with partial pivoting (the first row of largest magnitude, as LAPACK). Row swaps are one-hot
  updates, so the data-dependent pivots stay in the graph. Returns (lu, pivots, permutation) as lax.linalg.lu."""
  m, n = _sh(a)[-2], _sh(a)[-1]
  rows = Tensor.arange(m)
  cols = Tensor.arange(n)
  perm = rows.cast(a.dtype).expand(*_batch(a), m)
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
  piv = Tensor.stack(*pivots, dim=-1).cast(dtypes.int32) if pivots else Tensor.zeros(*_batch(a), 0, dtype=dtypes.int32)
  return a, piv, perm.cast(dtypes.int32)

def _lu_parts(lu: Tensor) -> tuple[Tensor, Tensor]:
  """Unit lower L (m, k) and upper U (k, n) of a packed LU."""
  m, n = _sh(lu)[-2], _sh(lu)[-1]
  k = min(m, n)
  l = lu[..., :, :k].tril(-1) + _const(np.eye(m, k), lu)
  return l, lu[..., :k, :].triu()

def _perm_matrix(perm: Tensor, like: Tensor) -> Tensor:
  """P with (P @ x) = x[perm]: P[i, perm[i]] = 1."""
  m = _sh(perm)[-1]
  return (perm.unsqueeze(-1) == Tensor.arange(m)).cast(like.dtype)

@custom_jvp
def _lu(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  return _lu_impl(a)

@_lu.defjvp
def _lu_jvp(primals, tangents):
  a, = primals
  da, = tangents
  lu, piv, perm = _lu(a)
  m, n = _sh(a)[-2], _sh(a)[-1]
  k = min(m, n)
  l, u = _lu_parts(lu)
  # square L (m, m) and U (n, n) completed with identity, as JAX's _lu_jvp_inner
  l = l.pad(((0, 0),) * len(_batch(a)) + ((0, 0), (0, m - k))) + _const(np.diag((np.arange(m) >= k).astype(float)), a)
  u = u.pad(((0, 0),) * len(_batch(a)) + ((0, n - k), (0, 0))) + _const(np.diag((np.arange(n) >= k).astype(float)), a)
  lau = _tri_inv(l, True, True) @ (_perm_matrix(perm, a) @ da) @ _tri_inv(u, False, False)
  dlu = l @ lau.tril(-1) + lau.triu() @ u
  return (lu, piv, perm), (dlu[..., :m, :n], piv.zeros_like(), perm.zeros_like())

# ---- inverse, solve, determinants -------------------------------------------------------------------------------------

# ---- solve and inv: LAPACK on the host ---------------------------------------------------------------------------------
# JAX's CPU solve is LAPACK's getrf + getrs. An LU in tinygrad ops unrolls into n steps of kernels (534 kernels and 38 s
# of compiling for n = 100) and inv(a) @ b loses accuracy (4x JAX's error); one host call of LAPACK gives JAX's numbers
# at once, as lax's loops run on the host (lax.host_call.HostCallRule: a call whose lowering is a host call).

@dataclass(eq=False)
class _Lapack(HostCallRule):
  """x = a^-1 b for a (..., n, n) and b (..., n, k) of the same batch shape (numpy.linalg.solve: LAPACK gesv), or
  a^-1 itself with `inverse` (numpy.linalg.inv: gesv on the identity, what JAX's inv does)."""
  inverse: bool
  name = "lapack"
  def out_types(self, xs): return [_ctype(xs[-1])]

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
    return [_inv(a) @ (tb - ta @ x)]

  def vjp(self, xs, cts):
    x, ct = self.call(xs)[0], cts[0]
    if ct is None: return [None] * len(xs)
    if self.inverse: return [-(_mT(x) @ ct @ _mT(x))]
    ctb = _mT(_inv(xs[0])) @ ct
    return [-(ctb @ _mT(x)), ctb]

  def batched(self, flags, size):
    def make(xs: list[Tensor]) -> list[UOp]:
      xs = [x.unsqueeze(0).expand(size, *x.shape) if f is None else x.permute(f, *(i for i in range(x.ndim) if i != f))
            for x, f in zip(xs, flags, strict=True)]
      return [self.call(xs)[0].uop]
    return BatchedCall(self.name, make)

def _solve(a: Tensor, b: Tensor) -> Tensor:
  """a^-1 b for matrix stacks of the same batch shape."""
  return b if not _sh(a)[-1] else _Lapack(False).call([a, b])[0]   # no unknowns: nothing to solve

def _inv(a: Tensor) -> Tensor: return a if not _sh(a)[-1] else _Lapack(True).call([a])[0]

def inv(a: Any) -> Tensor:
  """Inverse of square matrices (batched), via LU with partial pivoting."""
  return _inv(_square(_inexact(a), "inv"))

def _solve_shapes(a: Tensor, b: Tensor) -> tuple[Tensor, bool]:
  """b as a matrix stack, and whether it was a vector (JAX's rule: b is a vector if b.ndim == 1 or it has one axis
  fewer than a)."""
  if b.ndim < 1: raise ValueError(f"solve: b must have at least 1 dimension, got shape {tuple(b.shape)}")
  vec = b.ndim == 1 or b.ndim == a.ndim - 1
  bm = b.unsqueeze(-1) if vec else b
  if _sh(bm)[-2] != _sh(a)[-1]:
    raise ValueError(f"solve: incompatible shapes {tuple(a.shape)} and {tuple(b.shape)}")
  return bm, vec

def solve(a: Any, b: Any) -> Tensor:
  """Solution of a x = b (b a vector or a stack of matrices, broadcast over batch axes) by LAPACK's LU with partial
  pivoting on the host, as JAX on the CPU; its derivative is JAX's (dx = a^-1 (db - da x))."""
  a = _square(_inexact(a), "solve")
  dt = result_type(a, asarray(b))
  a, bt = a.cast(dt) if a.dtype != dt else a, _inexact(b).cast(dt)
  bm, vec = _solve_shapes(a, bt)
  batch = tuple(np.broadcast_shapes(_batch(a), _batch(bm)))
  x = _solve(a.expand(*batch, *_sh(a)[-2:]), bm.expand(*batch, *_sh(bm)[-2:]))
  return x[..., 0] if vec else x

def _lu_det_parts(a: Tensor) -> tuple[Tensor, Tensor]:
  """(sign, the diagonal of U) of a's LU: det = sign * prod(diag)."""
  lu, piv, _ = _lu(a)
  n = _sh(a)[-1]
  swaps = (piv != Tensor.arange(n)).cast(dtypes.int32).sum(-1)
  parity = (1 - 2 * (swaps % 2)).cast(a.dtype)
  return parity, _diag(lu)

@custom_jvp
def _det(a: Tensor) -> Tensor:
  parity, d = _lu_det_parts(a)
  return parity * d.prod(-1)

@_det.defjvp
def _det_jvp(primals, tangents):
  a, = primals
  da, = tangents
  y = _det(a)
  return y, y * (_mT(_inv(a)) * da).sum((-2, -1))

def det(a: Any) -> Tensor:
  """Determinant (batched), from LU; its derivative is det(a) * tr(a^-1 da) (JAX's cofactor rule for singular a is not
  reproduced: at a singular matrix the gradient is NaN here)."""
  return _det(_square(_inexact(a), "det"))

@custom_jvp
def _slogdet(a: Tensor) -> tuple[Tensor, Tensor]:
  parity, d = _lu_det_parts(a)
  return parity * _sign_prod(d), d.abs().log().sum(-1)

def _sign_prod(d: Tensor) -> Tensor:
  neg = (d < 0).cast(dtypes.int32).sum(-1)
  zero = (d == 0).any(-1)
  return zero.where(0.0, (1 - 2 * (neg % 2)).cast(d.dtype)).cast(d.dtype)

@_slogdet.defjvp
def _slogdet_jvp(primals, tangents):
  a, = primals
  da, = tangents
  sign, logdet = _slogdet(a)
  return (sign, logdet), (sign.zeros_like(), (_mT(_inv(a)) * da).sum((-2, -1)))

class SlogdetResult(tuple):
  """(sign, logabsdet), as JAX's namedtuple."""
  def __new__(cls, sign: Tensor, logabsdet: Tensor): return super().__new__(cls, (sign, logabsdet))
  @property
  def sign(self) -> Tensor: return self[0]
  @property
  def logabsdet(self) -> Tensor: return self[1]

def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
  """(sign, log|det|) of square matrices (batched), from LU."""
  if method not in (None, "lu"): raise NotImplementedError(f"slogdet: method={method!r} (only 'lu')")
  return SlogdetResult(*_slogdet(_square(_inexact(a), "slogdet")))

# ---- Cholesky, QR ----------------------------------------------------------------------------------------------------

def _symmetrize(a: Tensor) -> Tensor: return (a + _mT(a)) / 2

def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Tensor:
  """Cholesky factor (lower, or upper with upper=True) of symmetric positive definite matrices (batched); NaN for a
  matrix that is not positive definite, as JAX."""
  a = _inexact(a)
  if symmetrize_input and a.ndim >= 2 and _sh(a)[-1] != _sh(a)[-2]:   # JAX fails adding a to a^T: a TypeError
    raise TypeError(f"cholesky: last two dimensions of the input must be square, got shape {tuple(a.shape)}")
  a = _square(a, "cholesky")
  l = _cholesky(_symmetrize(a) if symmetrize_input else a)
  return _mT(l) if upper else l

def _householder(a: Tensor, want_q: bool) -> tuple[Tensor | None, Tensor]:
  """Householder QR with LAPACK's reflectors (beta = -sign(alpha) |x|, no reflection when the column below the diagonal
  is zero), so Q and R equal LAPACK's. Returns (Q (m, m) or None, R (m, n))."""
  m, n = _sh(a)[-2], _sh(a)[-1]
  rows = Tensor.arange(m)
  q = _eye(m, a).expand(*_batch(a), m, m) if want_q else None
  r = a
  for i in range(min(m, n)):
    x = r[..., :, i]
    alpha = r[..., i, i]
    xnorm = (rows > i).where(x, 0).square().sum(-1).sqrt()
    beta = -_sign1(alpha) * (alpha.square() + xnorm.square()).sqrt()
    active = xnorm != 0
    tau = active.where((beta - alpha) / active.where(beta, 1), 0)
    scale = active.where(alpha - beta, 1)
    v = (rows == i).where(1.0, (rows > i).where(x / scale.unsqueeze(-1), 0)).cast(a.dtype).unsqueeze(-1)   # (..., m, 1)
    tv = tau.reshape(*tau.shape, 1, 1) * v
    r = r - tv @ (_mT(v) @ r)
    if q is not None: q = q - (q @ tv) @ _mT(v)
  return q, r.triu()

def _qr_thin(a: Tensor) -> tuple[Tensor, Tensor]:
  q, r = _householder(a, True)
  assert q is not None
  k = min(_sh(a)[-2], _sh(a)[-1])
  return q[..., :, :k], r[..., :k, :]

@custom_jvp
def _qr(a: Tensor) -> tuple[Tensor, Tensor]:
  return _qr_thin(a)

@_qr.defjvp
def _qr_jvp(primals, tangents):
  a, = primals
  da, = tangents
  q, r = _qr(a)
  m, n = _sh(a)[-2], _sh(a)[-1]
  if m < n: raise NotImplementedError("qr: derivative of a wide matrix (m < n) is not implemented")
  dx_rinv = da @ _tri_inv(r, False, False)
  qt = _mT(q) @ dx_rinv
  low = qt.tril(-1)
  do = low - _mT(low)
  return (q, r), (q @ (do - qt) + dx_rinv, (qt - do) @ r)

def qr(a: Any, mode: str = "reduced") -> Any:
  """QR decomposition by Householder reflections with LAPACK's signs; mode 'reduced', 'complete' or 'r'."""
  a = _matrix(_inexact(a), "qr")
  if mode not in ("reduced", "complete", "r", "raw"): raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  if mode == "raw": raise NotImplementedError("qr: mode='raw' is not implemented")
  m, n = _sh(a)[-2], _sh(a)[-1]
  if mode == "complete" and m > n:
    q, r = _householder(a, True)   # not differentiable by JAX either (its rule raises for complete, m != n)
    assert q is not None
    return QRResult(q, r)
  q, r = _qr(a)
  return r if mode == "r" else QRResult(q, r)

class QRResult(tuple):
  def __new__(cls, Q: Tensor, R: Tensor): return super().__new__(cls, (Q, R))
  @property
  def Q(self) -> Tensor: return self[0]
  @property
  def R(self) -> Tensor: return self[1]

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
  t = nz.where(_sign1(tau) / (tau.abs() + (1 + tau.square()).sqrt()), 0)
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
  n, b = _sh(x)[-1], _batch(x)
  m = n + n % 2
  if m != n: x = x.pad(((0, 0),) * len(b) + (((0, 1) if two_sided else (0, 0)), (0, 1)))
  v = _eye(m, x).expand(*b, m, m)
  h, src = m // 2, _tournament(m)
  pos = list(range(m))   # pos[i]: the original index at position i
  perm = _const(np.eye(m)[:, src], x)   # y @ perm: the columns of y in the next pairing order
  for _ in range(_sweeps(n, x.dtype) * (m - 1)):
    if two_sided:
      d = _diag(x)
      c, s = _rotation(d[..., :h], d[..., h:], _diag(x[..., :h, h:]))
      x = _mT(_rotate_cols(_mT(_rotate_cols(x, c, s, h)), c, s, h))
      x = _mT(perm) @ x @ perm
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
  x, v = _jacobi(a, True) if _sh(a)[-1] > 1 else (a, _eye(1, a).expand(*a.shape))
  w, idx = _diag(x).sort(-1)
  v = v.gather(-1, idx.unsqueeze(-2).expand(*v.shape))
  return _normalize_signs(v), w

def _normalize_signs(v: Tensor) -> Tensor:
  """Columns of v times the sign of their largest-magnitude entry (the first of equal ones)."""
  big = v.abs().argmax(-2, keepdim=True)
  s = _sign1(v.gather(-2, big))
  return v * s

@custom_jvp
def _eigh(a: Tensor) -> tuple[Tensor, Tensor]:
  return _eigh_impl(a)

@_eigh.defjvp
def _eigh_jvp(primals, tangents):
  a, = primals
  da, = tangents
  v, w = _eigh(a)
  n = _sh(a)[-1]
  eye = _eye(n, a)
  fmat = 1 / (eye + w.unsqueeze(-2) - w.unsqueeze(-1)) - eye
  vda = _mT(v) @ da @ v
  return (v, w), (v @ (fmat * vda), _diag(vda))

class EighResult(tuple):
  def __new__(cls, eigenvalues: Tensor, eigenvectors: Tensor): return super().__new__(cls, (eigenvalues, eigenvectors))
  @property
  def eigenvalues(self) -> Tensor: return self[0]
  @property
  def eigenvectors(self) -> Tensor: return self[1]

def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
  """Eigenvalues (ascending) and eigenvectors of symmetric matrices (batched), by parallel cyclic Jacobi. Eigenvectors
  are normalized so their largest-magnitude entry is positive (JAX's are LAPACK's, of arbitrary sign)."""
  a = _square(_inexact(a), "eigh")
  if UPLO not in (None, "L", "U"): raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
  if symmetrize_input: a = _symmetrize(a)
  else:   # only the named triangle is read, as LAPACK
    t = a.triu() if UPLO == "U" else a.tril()
    a = t + _mT(t) - _embed_diag(_diag(a))
  v, w = _eigh(a)
  return EighResult(w, v)

def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Tensor:
  """Eigenvalues (ascending) of symmetric matrices."""
  return eigh(a, UPLO, symmetrize_input).eigenvalues

def _svd_square(r: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """One-sided (Hestenes) Jacobi on a square matrix: s = column norms (descending) of the rotated r, U its normalised
  columns, V the rotations."""
  n = _sh(r)[-1]
  u, v = _jacobi(r, False) if n > 1 else (r, _eye(1, r).expand(*r.shape))
  s, idx = u.square().sum(-2).sqrt().sort(-1, descending=True)
  gi = idx.unsqueeze(-2).expand(*u.shape)
  u, v = u.gather(-1, gi), v.gather(-1, gi)
  u = u / (s != 0).where(s, 1).unsqueeze(-2)
  # the sign of each singular pair: largest-magnitude entry of the right singular vector positive
  sg = _sign1(v.gather(-2, v.abs().argmax(-2, keepdim=True)))
  return u * sg, s, v * sg

def _svd_impl(a: Tensor, full: bool) -> tuple[Tensor, Tensor, Tensor]:
  m, n = _sh(a)[-2], _sh(a)[-1]
  if m < n:
    u, s, vt = _svd_impl(_mT(a), full)
    return _mT(vt), s, _mT(u)
  qf, r = _householder(a, True)
  assert qf is not None
  ur, s, v = _svd_square(r[..., :n, :])
  nb = ((0, 0),) * len(_batch(a))
  if full and m > n: u = qf @ ur.pad(nb + ((0, m - n), (0, m - n))) + qf[..., :, n:].pad(nb + ((0, 0), (n, 0)))
  else: u = qf[..., :, :n] @ ur
  return u, s, _mT(v)

@custom_jvp
def _svd(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  return _svd_impl(a, False)

@_svd.defjvp
def _svd_jvp(primals, tangents):
  a, = primals
  da, = tangents
  u, s, vt = _svd(a)
  ut, v = _mT(u), _mT(vt)
  sd = s.unsqueeze(-2)
  ds_mat = ut @ da @ v
  ds = _diag(ds_mat)
  k = _sh(s)[-1]
  eye = _eye(k, a)
  diffs = (sd + _mT(sd)) * (sd - _mT(sd))
  f = 1 / (diffs + eye) - eye
  dss, sds = sd * ds_mat, _mT(sd) * ds_mat
  s_zero = (s == 0).cast(s.dtype)
  s_inv = 1 / (s + s_zero) - s_zero
  dudv_diag = 0.5 * (ds_mat - _mT(ds_mat)) * _embed_diag(s_inv)
  du = u @ (f * (dss + _mT(dss)) + dudv_diag)
  dv = v @ (f * (sds + _mT(sds)))
  m, n = _sh(a)[-2], _sh(a)[-1]
  if m > n:
    dav = da @ v
    du = du + (dav - u @ (ut @ dav)) / sd
  if n > m:
    dahu = _mT(da) @ u
    dv = dv + (dahu - v @ (vt @ dahu)) / sd
  return (u, s, vt), (du, ds, _mT(dv))

@custom_jvp
def _svdvals(a: Tensor) -> Tensor:
  m, n = _sh(a)[-2], _sh(a)[-1]
  r = _householder(a if m >= n else _mT(a), False)[1]
  k = min(m, n)
  return _svd_square(r[..., :k, :])[1]

@_svdvals.defjvp
def _svdvals_jvp(primals, tangents):
  a, = primals
  da, = tangents
  u, s, vt = _svd(a)
  return s, _diag(_mT(u) @ da @ _mT(vt))

class SVDResult(tuple):
  def __new__(cls, U: Tensor, S: Tensor, Vh: Tensor): return super().__new__(cls, (U, S, Vh))
  @property
  def U(self) -> Tensor: return self[0]
  @property
  def S(self) -> Tensor: return self[1]
  @property
  def Vh(self) -> Tensor: return self[2]

def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: Any = None) -> Any:
  """Singular value decomposition (batched) by QR then one-sided Jacobi. Singular vectors are normalized so the
  largest-magnitude entry of each right singular vector is positive (JAX's are LAPACK's, of arbitrary sign)."""
  a = _matrix(_inexact(a), "svd")
  if hermitian: raise NotImplementedError("svd: hermitian=True is not implemented")
  if subset_by_index is not None: raise NotImplementedError("svd: subset_by_index is not implemented")
  if not compute_uv: return _svdvals(a)
  m, n = _sh(a)[-2], _sh(a)[-1]
  if full_matrices and m != n: return SVDResult(*_svd_impl(a, True))   # JAX has no derivative here either
  return SVDResult(*_svd(a))

def svdvals(x: Any) -> Tensor:
  """Singular values, descending."""
  return svd(x, compute_uv=False)

# ---- functions of the factorizations ----------------------------------------------------------------------------------

def _eps(dt) -> float: return float(np.finfo(np.float64 if dt == dtypes.float64 else np.float32 if dt != dtypes.float16 else np.float16).eps)

def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Tensor:
  """Moore-Penrose pseudo-inverse from the SVD; singular values below rtol * largest are dropped (rtol default
  10 * max(m, n) * eps, as JAX). Its derivative is that of the SVD (JAX has a custom rule; they agree at full rank)."""
  a = _matrix(_inexact(a), "pinv")
  if hermitian: raise NotImplementedError("pinv: hermitian=True is not implemented")
  if rcond is not None:
    if rtol is not None: raise ValueError("pinv: only one of rtol and rcond may be specified")
    rtol = rcond
  m, n = _sh(a)[-2], _sh(a)[-1]
  if rtol is None: rtol = 10 * max(m, n) * _eps(a.dtype)
  u, s, vt = svd(a, full_matrices=False)
  cutoff = asarray(rtol, dtype=a.dtype).unsqueeze(-1) * s[..., :1]
  keep = s > cutoff
  sinv = keep.where(1 / keep.where(s, 1), 0)
  return _mT(vt) @ (sinv.unsqueeze(-1) * _mT(u))

def lstsq(a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """Least squares by SVD, JAX's 4-tuple (x, residuals, rank, singular values); residuals are empty unless a is
  tall with full rank (numpy's convention with numpy_resid=True; JAX's default returns them always... see docs)."""
  a, b = _inexact(a), _inexact(b)
  if a.ndim != 2: raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
  if b.ndim not in (1, 2): raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
  m, n = a.shape
  if _sh(b)[0] != m: raise TypeError(f"Leading dimensions of input arrays must match, got {a.shape} and {b.shape}")
  dt = result_type(a, b)
  a, b = a.cast(dt), b.cast(dt)
  vec = b.ndim == 1
  bm = b.unsqueeze(-1) if vec else b
  if rcond is None: rcond = _eps(dt) * max(n, m)
  elif rcond < 0: rcond = _eps(dt)
  u, s, vt = svd(a, full_matrices=False)
  mask = s >= asarray(rcond, dtype=s.dtype) * s[0]
  rank = mask.cast(dtypes.int32).sum()
  safe_s = mask.where(s, 1)
  s_inv = mask.where(1 / safe_s, 0).unsqueeze(-1)
  uTb = _mT(u) @ bm
  x = _mT(vt) @ (s_inv * uTb)
  if numpy_resid:
    raise NotImplementedError("lstsq: numpy_resid=True (data-dependent residual shape) is not implemented")
  resid = (bm - a @ x).square().sum(0)
  if vec: x, resid = x[..., 0], resid.reshape(())
  return x, resid, rank, s

def matrix_power(a: Any, n: int) -> Tensor:
  """a to the integer power n by repeated squaring; negative n inverts first."""
  a = _square(_inexact(a) if not isinstance(a, Tensor) else a, "matrix_power")
  if not isinstance(n, (int, np.integer)): raise TypeError(f"exponent must be an integer, got {n}")
  n = int(n)
  if n == 0: return (_eye(_sh(a)[-1], a).expand(*a.shape)).contiguous()
  if n < 0: a, n = inv(a), -n
  result = None
  z = a
  while True:
    if n & 1: result = z if result is None else result @ z
    n >>= 1
    if not n: break
    z = z @ z
  assert result is not None
  return result

def matrix_rank(M: Any, rtol: Any = None, *, tol: Any = None) -> Tensor:
  """Number of singular values above rtol * largest (default max(m, n) * eps, as JAX), as int32."""
  M = _inexact(M)
  if tol is not None:
    if rtol is not None: raise ValueError("matrix_rank: only one of rtol and tol may be specified")
    rtol = tol
  if M.ndim < 2: return (M != 0).any().cast(dtypes.int32)
  s = svdvals(M)
  if rtol is None: rtol = s.max(-1) * max(M.shape[-2:]) * _eps(M.dtype)
  else: rtol = asarray(rtol, dtype=s.dtype) * s.max(-1)
  return (s > asarray(rtol).unsqueeze(-1)).cast(dtypes.int32).sum(-1)

def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Tensor:
  """Product of a chain of matrices in the cheapest order (numpy's dynamic program); the first and last may be vectors."""
  ts = [asarray(x) for x in arrays]
  if len(ts) < 2: raise ValueError("Expecting at least two arrays.")
  first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
  if first_vec: ts[0] = ts[0].unsqueeze(0)
  if last_vec: ts[-1] = ts[-1].unsqueeze(-1)
  dims = [_sh(t)[0] for t in ts] + [_sh(ts[-1])[1]]
  k = len(ts)
  cost: list[list[float]] = [[0.0] * k for _ in range(k)]
  split = [[0] * k for _ in range(k)]
  for length in range(1, k):
    for i in range(k - length):
      j = i + length
      cost[i][j] = math.inf
      for s in range(i, j):
        c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
        if c < cost[i][j]: cost[i][j], split[i][j] = c, s
  def prod(i: int, j: int) -> Tensor: return ts[i] if i == j else prod(i, split[i][j]) @ prod(split[i][j] + 1, j)
  out = prod(0, k - 1)
  if first_vec: out = out[0]
  if last_vec: out = out[..., 0]
  return out

# ---- norms ----------------------------------------------------------------------------------------------------------

def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
  ax = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  out = []
  for a in ax:
    if not -ndim <= a < ndim: raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
    out.append(int(a) % ndim)
  return tuple(out)

def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
  """Vector or matrix norm, as jnp.linalg.norm (ord None/p/inf/-inf/0 for vectors; 'fro', 'nuc', 1, -1, 2, -2,
  inf, -inf for matrices)."""
  x = _inexact(x)
  if axis is None:
    if ord is None: return _vnorm(x.reshape(-1), None, 0, False).reshape((1,) * x.ndim if keepdims else ())
    axis = tuple(range(x.ndim))
  ax = _axes(axis, x.ndim)
  if len(ax) == 1: return _vnorm(x, ord, ax[0], keepdims)
  if len(ax) == 2: return _mnorm(x, ord, ax, keepdims)
  raise ValueError(f"Invalid axis values ({axis}) for jnp.linalg.norm.")

def _vnorm(x: Tensor, ord: Any, ax: int, keepdims: bool) -> Tensor:  # noqa: A002
  if ord is None or ord == 2: return x.square().sum(ax, keepdim=keepdims).sqrt()
  if ord == math.inf: return x.abs().max(ax, keepdim=keepdims)
  if ord == -math.inf: return x.abs().min(ax, keepdim=keepdims)
  if ord == 0: return (x != 0).cast(x.dtype).sum(ax, keepdim=keepdims)
  if ord == 1: return x.abs().sum(ax, keepdim=keepdims)
  if isinstance(ord, str): raise ValueError(f"Invalid order '{ord}' for vector norm.")
  p = float(ord)
  return x.abs().pow(p).sum(ax, keepdim=keepdims).pow(1.0 / p)

def _mnorm(x: Tensor, ord: Any, ax: tuple[int, ...], keepdims: bool) -> Tensor:  # noqa: A002
  r, c = ax
  if r == c: raise ValueError("Duplicate axes given.")
  if ord is None or ord == "fro": out = x.square().sum(ax).sqrt()
  elif ord == 1: out = x.abs().sum(r).max(c - (c > r))
  elif ord == -1: out = x.abs().sum(r).min(c - (c > r))
  elif ord == math.inf: out = x.abs().sum(c).max(r - (r > c))
  elif ord == -math.inf: out = x.abs().sum(c).min(r - (r > c))
  elif ord in (2, -2, "nuc"):
    y = x.permute(*[i for i in range(x.ndim) if i not in ax], r, c)
    s = svdvals(y)
    out = s[..., 0] if ord == 2 else s[..., -1] if ord == -2 else s.sum(-1)
  else: raise ValueError(f"Invalid order '{ord}' for matrix norm.")
  if keepdims:
    for a in sorted(ax): out = out.unsqueeze(a)
  return out

def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:  # noqa: A002
  x = _inexact(x)
  if axis is None:
    out = _vnorm(x.reshape(-1), ord, 0, False)
    return out.reshape((1,) * x.ndim) if keepdims else out
  ax = _axes(axis, x.ndim)
  if len(ax) != 1:
    keep = [i for i in range(x.ndim) if i not in ax]
    y = x.permute(*keep, *ax).reshape(*[_sh(x)[i] for i in keep], -1)
    out = _vnorm(y, ord, -1, False)
    if keepdims:
      for a in sorted(ax): out = out.unsqueeze(a)
    return out
  return _vnorm(x, ord, ax[0], keepdims)

def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:  # noqa: A002
  return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)

def cond(x: Any, p: Any = None) -> Tensor:
  """Condition number: s_max / s_min for p None/2/-2, else norm(x, p) * norm(inv(x), p)."""
  x = _matrix(_inexact(x), "cond")
  if p is None or p in (2, -2):
    s = svdvals(x)
    return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
  _square(x, "cond")
  return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))

# ---- aliases of jnp functions -----------------------------------------------------------------------------------------

def outer(x1: Any, x2: Any, /) -> Tensor:
  """Outer product of two vectors (jnp.linalg.outer: 1-D inputs only)."""
  a, b = asarray(x1), asarray(x2)
  if a.ndim != 1 or b.ndim != 1: raise ValueError(f"Input arrays must be one-dimensional, but they are {a.ndim=} {b.ndim=}")
  dt = result_type(a, b)
  return a.cast(dt).unsqueeze(-1) * b.cast(dt).unsqueeze(0)

def matmul(x1: Any, x2: Any, /) -> Tensor:
  a, b = asarray(x1), asarray(x2)
  dt = result_type(a, b)
  return a.cast(dt) @ b.cast(dt)

def matrix_transpose(x: Any, /) -> Tensor:
  t = asarray(x)
  if t.ndim < 2: raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got {t.ndim=}")
  return _mT(t)

def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
  t = asarray(x)
  n, m = _sh(t)[-2], _sh(t)[-1]
  rows = np.arange(max(0, -offset), min(n, m - offset))
  if len(rows) == 0: return t[..., :0, 0]
  return Tensor.stack(*[t[..., int(i), int(i + offset)] for i in rows], dim=-1)

def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
  d = diagonal(x, offset=offset)
  out = d.sum(-1)
  return out if dtype is None else asarray(out, dtype)

def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
  from tinyjax import numpy as jnp
  fn = getattr(jnp, "tensordot")
  return fn(x1, x2, axes=axes)

def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
  a, b = asarray(x1), asarray(x2)
  dt = result_type(a, b)
  return (a.cast(dt) * b.cast(dt)).sum(axis)

def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
  a, b = asarray(x1), asarray(x2)
  if _sh(a)[axis] != 3 or _sh(b)[axis] != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
                     f"{_sh(a)[axis]=} and {_sh(b)[axis]=}")
  from tinyjax import numpy as jnp
  return getattr(jnp, "cross")(a, b, axis=axis)

"""tinyjax.numpy.linalg: JAX's jnp.linalg on tinygrad Tensors.

Every function takes batches of matrices (leading axes) and works under vmap, jit and every derivative transform. The
factorizations, solves and their derivative rules are `tinyjax.lax.linalg`'s; this module is JAX's API over them
(argument checks, dtype promotion, result types, the functions built from the factorizations).
"""
from __future__ import annotations
import math
from typing import Any, NamedTuple, Sequence
import numpy as np
import functools
from tinyjax._tg import Tensor, dtypes, static_shape as _sh, jit_capturing, plain_buffer, host_copy
from tinyjax.core import is_tracing
from tinyjax.transforms.jit import jit
from tinyjax.lax import linalg as lax_linalg
from tinyjax.lax.linalg import mT, batch_shape, eye_like, diag, embed_diag
from tinyjax.numpy._core import asarray, result_type, as_inexact, canonicalize_axes
from tinyjax.numpy import _products, _complex
from tinyjax.complex_array import is_complex_value, ComplexArray
from tinyjax.dtypes import default_int

__all__ = ["norm", "inv", "solve", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eig", "eigvals", "eigh", "eigvalsh", "pinv",
           "lstsq", "matrix_power", "matrix_rank", "multi_dot", "cond", "matrix_norm", "vector_norm", "outer", "matmul",
           "matrix_transpose", "trace", "diagonal", "tensordot", "vecdot", "cross"]

def jitted(*static: str):
  """JAX's jnp.linalg functions are jitted, and so are these: called on arrays outside transforms, a call replays the
  function compiled once per signature (the host call and the few kernels around it: ~0.2 ms) instead of building its
  graph op by op in Python and computing it (1-15 ms). Inside a transform's trace or a jit it is the function itself,
  and with other arguments (lists, as JAX's jit would not take them)."""
  def wrap(fun):
    fast = jit(fun, static_argnames=static)
    @functools.wraps(fun)
    def call(*args, **kwargs):
      if is_tracing() or jit_capturing() or not lax_linalg.HOST_LAPACK or not all(isinstance(x, (Tensor, np.ndarray, ComplexArray)) for x in args):
        return fun(*args, **kwargs)   # (HOST_LAPACK off: not a jit's key, so not jitted)
      return fast(*map(_ready, args), **kwargs)
    return call
  return wrap

def _ready(x: Any) -> Any:
  """Views and lazy values computed first (by a program found again by their structure): a jit copies them into new
  buffers through tinygrad's scheduler at every call. A complex array's parts alike."""
  if isinstance(x, ComplexArray): return ComplexArray(_ready(x.re), _ready(x.im))
  if not isinstance(x, Tensor) or plain_buffer(x) is not None: return x
  return copied if (copied := host_copy(x)) is not None else x.contiguous().realize()

def check_square(x: Tensor, name: str) -> Tensor:
  if x.ndim < 2: raise ValueError(f"{name}: input must have at least 2 dimensions, got shape {tuple(x.shape)}")
  if _sh(x)[-1] != _sh(x)[-2]:
    raise ValueError(f"{name}: last two dimensions of the input must be square, got shape {tuple(x.shape)}")
  return x

def check_matrix(x: Tensor, name: str) -> Tensor:
  if x.ndim < 2: raise ValueError(f"{name}: input must have at least 2 dimensions, got shape {tuple(x.shape)}")
  return x

@jitted()
def inv(a: Any) -> Tensor:
  """Inverse of square matrices (batched), via LU with partial pivoting."""
  return lax_linalg.inv(check_square(as_inexact(a), "inv"))

def solve_shapes(a: Tensor, b: Tensor) -> tuple[Tensor, bool]:
  """b as a matrix stack, and whether it was a vector (JAX's rule: b is a vector if b.ndim == 1 or it has one axis
  fewer than a)."""
  if b.ndim < 1: raise ValueError(f"solve: b must have at least 1 dimension, got shape {tuple(b.shape)}")
  vec = b.ndim == 1 or b.ndim == a.ndim - 1
  bm = b.unsqueeze(-1) if vec else b
  if _sh(bm)[-2] != _sh(a)[-1]:
    raise ValueError(f"solve: incompatible shapes {tuple(a.shape)} and {tuple(b.shape)}")
  return bm, vec

@jitted()
def solve(a: Any, b: Any) -> Tensor:
  """Solution of a x = b (b a vector or a stack of matrices, broadcast over batch axes) by LAPACK's LU with partial
  pivoting on the host, as JAX on the CPU; its derivative is JAX's (dx = a^-1 (db - da x))."""
  a = check_square(as_inexact(a), "solve")
  dt = result_type(a, asarray(b))
  a, bt = a.cast(dt) if a.dtype != dt else a, as_inexact(b).cast(dt)
  bm, vec = solve_shapes(a, bt)
  batch = tuple(np.broadcast_shapes(batch_shape(a), batch_shape(bm)))
  x = lax_linalg.solve(a.expand(*batch, *_sh(a)[-2:]), bm.expand(*batch, *_sh(bm)[-2:]))
  return x[..., 0] if vec else x

@jitted()
def det(a: Any) -> Tensor:
  """Determinant (batched), from LU; its derivative is det(a) * tr(a^-1 da) (JAX's cofactor rule for singular a is not
  reproduced: at a singular matrix the gradient is NaN here)."""
  return lax_linalg.det(check_square(as_inexact(a), "det"))

class SlogdetResult(NamedTuple):
  """(sign, logabsdet), as JAX's: a named tuple, so a pytree of two arrays (sign complex for a complex matrix)."""
  sign: Any
  logabsdet: Tensor

@jitted("method")
def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
  """(sign, log|det|) of square matrices (batched), from LU."""
  if method not in (None, "lu"): raise NotImplementedError(f"slogdet: method={method!r} (only 'lu')")
  return SlogdetResult(*lax_linalg.slogdet(check_square(as_inexact(a), "slogdet")))

# ---- Cholesky, QR ----------------------------------------------------------------------------------------------------

def _symmetrize(a: Tensor) -> Tensor: return (a + mT(a)) / 2

@jitted("upper", "symmetrize_input")
def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
  """Cholesky factor (lower, or upper with upper=True) of symmetric positive definite matrices (batched; LAPACK's potrf
  on the CPU); NaN for a matrix that is not positive definite, as JAX."""
  if is_complex_value(a): return _complex.cholesky(a, upper=upper, symmetrize_input=symmetrize_input)
  a = as_inexact(a)
  if symmetrize_input and a.ndim >= 2 and _sh(a)[-1] != _sh(a)[-2]:   # JAX fails adding a to a^T: a TypeError
    raise TypeError(f"cholesky: last two dimensions of the input must be square, got shape {tuple(a.shape)}")
  a = check_square(a, "cholesky")
  l = lax_linalg.cholesky_lower(_symmetrize(a) if symmetrize_input else a)
  return mT(l) if upper else l

@jitted("mode")
def qr(a: Any, mode: str = "reduced") -> Any:
  """QR decomposition, mode 'reduced', 'complete' or 'r': LAPACK's geqrf/orgqr on the CPU, as JAX, elsewhere
  Householder reflections with LAPACK's signs (docs/linalg.md)."""
  a = check_matrix(as_inexact(a), "qr")
  if mode not in ("reduced", "complete", "r", "raw"): raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  if mode == "raw": raise NotImplementedError("qr: mode='raw' is not implemented")
  m, n = _sh(a)[-2], _sh(a)[-1]
  if mode == "complete" and m > n:
    return QRResult(*lax_linalg.qr_complete(a))   # not differentiable by JAX either (its rule raises for complete, m != n)
  q, r = lax_linalg.qr_reduced(a)
  return r if mode == "r" else QRResult(q, r)

class QRResult(NamedTuple):
  """(Q, R), as JAX's (complex arrays for a complex matrix)."""
  Q: Any
  R: Any

class EighResult(NamedTuple):
  """(eigenvalues, eigenvectors), as JAX's (the eigenvectors complex for a Hermitian matrix)."""
  eigenvalues: Tensor
  eigenvectors: Any

@jitted("UPLO", "symmetrize_input")
def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
  """Eigenvalues (ascending) and eigenvectors of symmetric matrices (batched): LAPACK's syevd on the CPU, as JAX (the
  same eigenvectors, signs included); elsewhere parallel cyclic Jacobi, whose eigenvectors are normalized so their
  largest-magnitude entry is positive (docs/linalg.md)."""
  a = check_square(as_inexact(a), "eigh")
  if UPLO not in (None, "L", "U"): raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
  if symmetrize_input: a = _symmetrize(a)
  else:   # only the named triangle is read, as LAPACK
    t = lax_linalg.triu(a) if UPLO == "U" else lax_linalg.tril(a)
    a = t + mT(t) - embed_diag(diag(a))
  v, w = lax_linalg.sym_eigh(a)
  return EighResult(w, v)

def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Tensor:
  """Eigenvalues (ascending) of symmetric matrices."""
  return eigh(a, UPLO, symmetrize_input).eigenvalues

class SVDResult(NamedTuple):
  """(U, S, Vh), as JAX's (U and Vh complex for a complex matrix, S real)."""
  U: Any
  S: Tensor
  Vh: Any

@jitted("full_matrices", "compute_uv", "hermitian", "subset_by_index")
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: Any = None) -> Any:
  """Singular value decomposition (batched): LAPACK's gesdd on the CPU, as JAX (the same singular vectors, signs
  included); elsewhere QR then one-sided Jacobi, whose singular vectors are normalized so the largest-magnitude entry
  of each right singular vector is positive (docs/linalg.md)."""
  a = check_matrix(as_inexact(a), "svd")
  if hermitian: raise NotImplementedError("svd: hermitian=True is not implemented")
  if subset_by_index is not None: raise NotImplementedError("svd: subset_by_index is not implemented")
  if not compute_uv: return lax_linalg.singular_values(a)
  m, n = _sh(a)[-2], _sh(a)[-1]
  if full_matrices and m != n: return SVDResult(*lax_linalg.svd_full_or_reduced(a, True))   # JAX has no derivative here either
  return SVDResult(*lax_linalg.svd_reduced(a))

def svdvals(x: Any) -> Tensor:
  """Singular values, descending."""
  return svd(x, compute_uv=False)

# ---- functions of the factorizations ----------------------------------------------------------------------------------

def _eps(dt) -> float: return float(np.finfo(np.float64 if dt == dtypes.float64 else np.float32 if dt != dtypes.float16 else np.float16).eps)

@jitted("hermitian")
def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Tensor:
  """Moore-Penrose pseudo-inverse from the SVD; singular values below rtol * largest are dropped (rtol default
  10 * max(m, n) * eps, as JAX). Its derivative is that of the SVD (JAX has a custom rule; they agree at full rank)."""
  a = check_matrix(as_inexact(a), "pinv")
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
  return mT(vt) @ (sinv.unsqueeze(-1) * mT(u))

def _lstsq_check(a: tuple, b: tuple) -> None:
  """JAX's errors, in its order."""
  if not a or not b or a[0] != b[0]: raise ValueError("Leading dimensions of input arrays must match")
  if len(a) != 2: raise TypeError(f"{len(a)}-dimensional array given. Array must be two-dimensional")
  if len(b) not in (1, 2): raise TypeError(f"{len(b)}-dimensional array given. Array must be one or two-dimensional")

@jitted("rcond", "numpy_resid")
def lstsq(a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """Least squares by SVD, JAX's 4-tuple (x, residuals, rank, singular values); residuals are empty unless a is
  tall with full rank (numpy's convention with numpy_resid=True; JAX's default returns them always... see docs)."""
  a, b = as_inexact(a), as_inexact(b)
  _lstsq_check(tuple(a.shape), tuple(b.shape))
  m, n = a.shape
  dt = result_type(a, b)
  a, b = a.cast(dt), b.cast(dt)
  vec = b.ndim == 1
  bm = b.unsqueeze(-1) if vec else b
  if rcond is None: rcond = _eps(dt) * max(n, m)
  elif rcond < 0: rcond = _eps(dt)
  u, s, vt = svd(a, full_matrices=False)
  mask = s >= asarray(rcond, dtype=s.dtype) * s[0]
  rank = mask.cast(default_int()).sum()
  safe_s = mask.where(s, 1)
  s_inv = mask.where(1 / safe_s, 0).unsqueeze(-1)
  uTb = mT(u) @ bm
  x = mT(vt) @ (s_inv * uTb)
  if numpy_resid:
    raise NotImplementedError("lstsq: numpy_resid=True (data-dependent residual shape) is not implemented")
  resid = (bm - a @ x).square().sum(0)
  if vec: x = x[..., 0]   # (the residuals keep their axis of length 1, as JAX's)
  return x, resid, rank, s

def matrix_power(a: Any, n: int) -> Tensor:
  """a to the integer power n by repeated squaring; negative n inverts first."""
  a = check_square(as_inexact(a) if not isinstance(a, Tensor) else a, "matrix_power")
  if not isinstance(n, (int, np.integer)): raise TypeError(f"exponent must be an integer, got {n}")
  n = int(n)
  if n == 0: return (eye_like(_sh(a)[-1], a).expand(*a.shape)).contiguous()
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
  """Number of singular values above rtol * largest (default max(m, n) * eps, as JAX), as JAX's default int."""
  M = as_inexact(M)
  if M.ndim < 2: return (M != 0).any().cast(dtypes.int32)
  return _rank(svdvals(M), M.shape, rtol, tol)

def _rank(s: Tensor, shape: tuple, rtol: Any, tol: Any) -> Tensor:
  """matrix_rank from the singular values s of matrices of `shape`."""
  if tol is not None:
    if rtol is not None: raise ValueError("matrix_rank: only one of rtol and tol may be specified")
    rtol = tol
  if rtol is None: rtol = s.max(-1) * max(shape[-2:]) * _eps(s.dtype)
  else: rtol = asarray(rtol, dtype=s.dtype) * s.max(-1)
  return (s > asarray(rtol).unsqueeze(-1)).cast(default_int()).sum(-1)

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

def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
  """Vector or matrix norm, as jnp.linalg.norm (ord None/p/inf/-inf/0 for vectors; 'fro', 'nuc', 1, -1, 2, -2,
  inf, -inf for matrices)."""
  x = as_inexact(x)
  if axis is None:
    if ord is None: return _vnorm(x.reshape(-1), None, 0, False).reshape((1,) * x.ndim if keepdims else ())
    axis = tuple(range(x.ndim))
  ax = canonicalize_axes(axis, x.ndim)
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
  x = as_inexact(x)
  if axis is None:
    out = _vnorm(x.reshape(-1), ord, 0, False)
    return out.reshape((1,) * x.ndim) if keepdims else out
  ax = canonicalize_axes(axis, x.ndim)
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
  """Condition number, as JAX's: s_max / s_min for p None/2, s_min / s_max for -2, else norm(x, p) * norm(inv(x), p);
  NaN becomes inf (but for p None/2) unless x holds a NaN."""
  x = as_inexact(x)
  _cond_check(tuple(x.shape))
  if p is None or p in (2, -2): return _cond_svd(svdvals(x), p, x.isnan().any((-2, -1)))
  if _sh(x)[-2] != _sh(x)[-1]: raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got arr.shape={tuple(x.shape)}")
  return _nan_to_inf(norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1)), x.isnan().any((-2, -1)))

def _cond_check(shape: tuple) -> None:
  if len(shape) < 2: raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={shape}")
  if not shape[-1] or not shape[-2]: raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={shape}")

def _cond_svd(s: Tensor, p: Any, x_nan: Tensor) -> Tensor:
  return s[..., 0] / s[..., -1] if p != -2 else _nan_to_inf(s[..., -1] / s[..., 0], x_nan)

def _nan_to_inf(r: Tensor, x_nan: Tensor) -> Tensor: return (r.isnan() & x_nan.logical_not()).where(math.inf, r).cast(r.dtype)

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
  return mT(t)

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
  return _products.tensordot(x1, x2, axes=axes)

def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
  a, b = asarray(x1), asarray(x2)
  dt = result_type(a, b)
  return (a.cast(dt) * b.cast(dt)).sum(axis)

def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
  a, b = asarray(x1), asarray(x2)
  if _sh(a)[axis] != 3 or _sh(b)[axis] != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
                     f"{_sh(a)[axis]=} and {_sh(b)[axis]=}")
  return _products.cross(a, b, axis=axis)

# ---- general eigenproblem ---------------------------------------------------------------------------------------------

class EigResult(NamedTuple):
  """(eigenvalues, eigenvectors), as JAX's."""
  eigenvalues: Any
  eigenvectors: Any

def _eig_input(a: Any, name: str) -> Tensor | tuple[Tensor, Tensor]:
  """A real (float) matrix stack, or a complex one as its parts, with JAX's errors for the wrong shape."""
  z = _complex.as_complex(a) if _complex.is_complex_argument(a) else as_inexact(a)
  if z.ndim < 2: raise TypeError(f"Input 0 to {name} must have rank at least 2, but got shape={tuple(z.shape)}")
  if z.shape[-1] != z.shape[-2]: raise ValueError(f"The input to {name} must be a square matrix. Got shape {tuple(z.shape)}.")
  return (z.re, z.im) if isinstance(z, ComplexArray) else z

@jitted()
def eig(a: Any) -> EigResult:
  """Eigenvalues and right eigenvectors of general (non-symmetric) matrices, always complex (complex64 for float32
  input, complex128 for float64), batched: LAPACK geev on the CPU, as JAX (eigenvectors of unit norm, largest entry
  real). Eigenvalue derivatives are JAX's; eigenvector derivatives raise as JAX's do (lax.linalg.eig with
  enable_eigvec_derivs=True has them)."""
  w, v = lax_linalg.eig_parts(_eig_input(a, "eig"), False, True, False)
  return EigResult(ComplexArray(*w), ComplexArray(*v))

@jitted()
def eigvals(a: Any) -> ComplexArray:
  """Eigenvalues of general matrices (geev without eigenvectors, as JAX), complex."""
  w, = lax_linalg.eig_parts(_eig_input(a, "eig"), False, False, False)
  return ComplexArray(*w)

# ---- complex matrices -------------------------------------------------------------------------------------------------
# A jnp.linalg function called with a complex argument runs its complex version here (LAPACK's complex routines on the
# host, lax.linalg's "complex matrices"), or raises NotImplementedError naming it: never the real function on the parts.

def _cparts(a: Any, name: str) -> tuple[Tensor, Tensor]:
  z = _complex.as_complex(a)
  check_square(z.re, name)
  return z.re, z.im

def _c(z: tuple[Tensor, Tensor]) -> ComplexArray: return ComplexArray(*z)

@jitted()
def _cinv(a: Any) -> ComplexArray: return _c(lax_linalg.cinv(_cparts(a, "inv")))

@jitted()
def _csolve(a: Any, b: Any) -> ComplexArray:
  za, zb = _complex.promote_complex(a, b)
  check_square(za.re, "solve")
  bm, vec = solve_shapes(za.re, zb.re)
  bi = zb.im.unsqueeze(-1) if vec else zb.im
  batch = tuple(np.broadcast_shapes(batch_shape(za.re), batch_shape(bm)))
  def ex(t: Tensor) -> Tensor: return t.expand(*batch, *_sh(t)[-2:])
  xr, xi = lax_linalg.csolve((ex(za.re), ex(za.im)), (ex(bm), ex(bi)))
  return ComplexArray(xr[..., 0], xi[..., 0]) if vec else ComplexArray(xr, xi)

@jitted()
def _cdet(a: Any) -> ComplexArray: return _c(lax_linalg.cdet(_cparts(a, "det")))

@jitted("method")
def _cslogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
  if method not in (None, "lu"): raise NotImplementedError(f"slogdet: method={method!r} (only 'lu')")
  sign, logabs = lax_linalg.cslogdet(_cparts(a, "slogdet"))
  return SlogdetResult(_c(sign), logabs)

@jitted("UPLO", "symmetrize_input")
def _ceigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
  """Hermitian eigh: LAPACK heevd reading the UPLO triangle (eigenvalues real, ascending), as JAX; symmetrize_input:
  of (a + a^H) / 2. Its derivative is JAX's, of all of a (not only the triangle read), as JAX's."""
  if UPLO not in (None, "L", "U"): raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
  re, im = _cparts(a, "eigh")
  if symmetrize_input: re, im = (re + mT(re)) / 2, (im - mT(im)) / 2
  v, w = lax_linalg.hermitian_eigh((re, im), lower=UPLO != "U")
  return EighResult(w, _c(v))

def _cmatrix_power(a: Any, n: int) -> ComplexArray:
  z = _complex.as_complex(a)
  check_square(z.re, "matrix_power")
  if not isinstance(n, (int, np.integer)): raise TypeError(f"exponent must be an integer, got {n}")
  n = int(n)
  if n == 0: return _complex.as_complex(eye_like(_sh(z.re)[-1], z.re).expand(*z.shape).contiguous())
  if n < 0: z, n = _cinv(z), -n
  mm, result = _complex.COMPLEX["matmul"], None
  while True:
    if n & 1: result = z if result is None else mm(result, z)
    n >>= 1
    if not n: break
    z = mm(z, z)
  assert result is not None
  return result

def _cnorm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
  # every norm of a complex array is that of its magnitudes but the spectral ones (2, -2, 'nuc' of a matrix: its SVD)
  z = _complex.as_complex(x)
  if ord in (2, -2, "nuc") and (axis is None and z.ndim == 2 or axis is not None and not isinstance(axis, int) and len(axis) == 2):
    r, c = ax = canonicalize_axes((0, 1) if axis is None else axis, z.ndim)
    if r == c: raise ValueError("Duplicate axes given.")
    order = [i for i in range(z.ndim) if i not in ax] + [r, c]
    s = _csvd(ComplexArray(z.re.permute(*order), z.im.permute(*order)), compute_uv=False)
    out = s[..., 0] if ord == 2 else s[..., -1] if ord == -2 else s.sum(-1)
    if keepdims:
      for a in sorted(ax): out = out.unsqueeze(a)
    return out
  return norm(_complex._abs(z), ord, axis, keepdims)

def _cmatrix(a: Any, name: str) -> tuple[Tensor, Tensor]:
  z = _complex.as_complex(a)
  if z.ndim < 2: raise TypeError(f"Input 0 to {name} must have rank at least 2, but got shape={z.shape}")
  return z.re, z.im

@jitted("full_matrices", "compute_uv", "hermitian", "subset_by_index")
def _csvd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False, subset_by_index: Any = None) -> Any:
  """LAPACK gesdd (c/z), as JAX's CPU svd: the same singular vectors, phases included; singular values real."""
  z = _cmatrix(a, "svd")
  if hermitian: raise NotImplementedError("svd: hermitian=True is not implemented")
  if subset_by_index is not None: raise NotImplementedError("svd: subset_by_index is not implemented")
  m, n = _sh(z[0])[-2:]
  if not compute_uv: return lax_linalg.csvdvals(z)
  u, s, vt = lax_linalg.csvd(z, full_matrices and m != n)   # (square: full is reduced, with its derivative)
  return SVDResult(_c(u), s, _c(vt))

@jitted("mode")
def _cqr(a: Any, mode: str = "reduced") -> Any:
  """LAPACK geqrf + ungqr (c/z), as JAX's CPU qr; JAX's derivatives, complete QR of a tall matrix included."""
  z = _cmatrix(a, "qr")
  if mode not in ("reduced", "complete", "r", "raw"): raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  if mode == "raw": raise NotImplementedError("qr: mode='raw' is not implemented")
  q, r = lax_linalg.cqr(z, mode == "complete")
  return _c(r) if mode == "r" else QRResult(_c(q), _c(r))

@jitted("hermitian")
def _cpinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> ComplexArray:
  """JAX's: v s^-1 u^H from the SVD of conj(a) (vh^T (u^T / s)), singular values up to rtol * largest dropped. Its
  derivative is the SVD's (JAX's custom pinv rule gives the same at full rank; at lower rank the SVD's is not finite)."""
  re, im = _cmatrix(a, "pinv")
  if hermitian: raise NotImplementedError("pinv: hermitian=True is not implemented")
  if rcond is not None:
    if rtol is not None: raise ValueError("pinv: only one of rtol and rcond may be specified.")
    rtol = rcond
  m, n = _sh(re)[-2:]
  if not m or not n: return ComplexArray(mT(re), mT(im))
  if rtol is None: rtol = 10 * max(m, n) * _eps(re.dtype)
  (ur, ui), s, (vr, vi) = lax_linalg.csvd((re, -im), False)
  rt = asarray(rtol, dtype=s.dtype)
  cutoff = rt.reshape(*_sh(rt), *(1,) * (s.ndim - rt.ndim)) * s[..., :1]
  s = (s > cutoff).where(s, math.inf).unsqueeze(-1)
  return _c(lax_linalg._cmm((mT(vr), mT(vi)), (mT(ur) / s, mT(ui) / s)))

@jitted("rcond", "numpy_resid")
def _clstsq(a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False) -> tuple[ComplexArray, Tensor, Tensor, Tensor]:
  """JAX's lstsq from the SVD, complex: x = v s^-1 u^H b, residuals |b - a x|^2 per column (real)."""
  za, zb = _complex.promote_complex(a, b)
  _lstsq_check(za.shape, zb.shape)
  m, n = za.shape
  if numpy_resid: raise NotImplementedError("lstsq: numpy_resid=True (data-dependent residual shape) is not implemented")
  vec = zb.ndim == 1
  bm = (zb.re.unsqueeze(-1), zb.im.unsqueeze(-1)) if vec else (zb.re, zb.im)
  eps = _eps(za.re.dtype)
  rc = eps * max(n, m) if rcond is None else eps if rcond < 0 else rcond
  u, s, vt = lax_linalg.csvd((za.re, za.im), False)
  mask = (s > 0) & (s >= rc * s[0])
  s_inv = mask.where(1 / mask.where(s, 1), 0).unsqueeze(-1)
  utb = lax_linalg._cmm(lax_linalg._cH(u), bm)
  x = lax_linalg._cmm(lax_linalg._cH(vt), (s_inv * utb[0], s_inv * utb[1]))
  r = lax_linalg._csub(bm, lax_linalg._cmm((za.re, za.im), x))
  resid = (r[0].square() + r[1].square()).sum(0).sqrt().square()   # JAX's norm(b - a x, axis=0) ** 2
  rank = mask.cast(default_int()).sum()
  if vec: return ComplexArray(x[0][..., 0], x[1][..., 0]), resid, rank, s
  return _c(x), resid, rank, s

def _cmatrix_rank(M: Any, rtol: Any = None, *, tol: Any = None) -> Tensor:
  z = _complex.as_complex(M)
  if z.ndim < 2: return ((z.re != 0) | (z.im != 0)).any().cast(dtypes.int32)
  return _rank(_csvd(z, compute_uv=False), z.shape, rtol, tol)

def _ccond(x: Any, p: Any = None) -> Tensor:
  z = _complex.as_complex(x)
  _cond_check(z.shape)
  x_nan = (z.re.isnan() | z.im.isnan()).any((-2, -1))
  if p is None or p in (2, -2): return _cond_svd(_csvd(z, compute_uv=False), p, x_nan)
  if z.shape[-2] != z.shape[-1]: raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got arr.shape={z.shape}")
  return _nan_to_inf(_cnorm(z, p, axis=(-2, -1)) * _cnorm(_cinv(z), p, axis=(-2, -1)), x_nan)

def _cvector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:  # noqa: A002
  return vector_norm(_complex._abs(_complex.as_complex(x)), axis=axis, keepdims=keepdims, ord=ord)

def _cmatrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:  # noqa: A002
  return _cnorm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)

def _cmulti_dot(arrays: Sequence[Any], *, precision: Any = None) -> ComplexArray:
  if len(arrays) < 2: raise ValueError("Expecting at least two arrays.")
  out = arrays[0]
  for x in arrays[1:]: out = _complex.COMPLEX["matmul"](out, x)   # left to right (numpy's cheapest order only reorders)
  return out

_COMPLEX_LINALG = {
  "cholesky": cholesky,   # (its complex version is numpy._complex's: it dispatches itself)
  "inv": _cinv, "solve": _csolve, "det": _cdet, "slogdet": _cslogdet, "eigh": _ceigh, "matrix_power": _cmatrix_power,
  "norm": _cnorm, "svd": _csvd, "svdvals": lambda x: _csvd(x, compute_uv=False), "qr": _cqr, "pinv": _cpinv, "lstsq": _clstsq,
  "matrix_rank": _cmatrix_rank, "cond": _ccond, "vector_norm": _cvector_norm, "matrix_norm": _cmatrix_norm, "multi_dot": _cmulti_dot,
  "eigvalsh": lambda a, UPLO="L", *, symmetrize_input=True: _ceigh(a, UPLO, symmetrize_input).eigenvalues,
  "matmul": _complex.COMPLEX["matmul"], "tensordot": lambda x1, x2, /, *, axes=2, **kw: _complex.COMPLEX["tensordot"](x1, x2, axes=axes),
  "vecdot": lambda x1, x2, /, *, axis=-1, **kw: _complex.COMPLEX["vecdot"](x1, x2, axis=axis),
  "outer": lambda x1, x2, /: _complex.COMPLEX["outer"](x1, x2),
  "matrix_transpose": lambda x, /: _complex.COMPLEX["swapaxes"](x, -1, -2),
  "diagonal": lambda x, /, *, offset=0: _complex.COMPLEX["diagonal"](x, offset, -2, -1),
  "trace": lambda x, /, *, offset=0, dtype=None: _complex.COMPLEX["trace"](x, offset, -2, -1, dtype),
}

def _with_complex(name: str, fn):
  impl = _COMPLEX_LINALG.get(name)
  is_complex = _complex.is_complex_argument
  @functools.wraps(fn)
  def f(*args, **kwargs):
    if any(map(is_complex, args)) or (kwargs and any(map(is_complex, kwargs.values()))):
      if impl is None:
        raise NotImplementedError(f"jnp.linalg.{name} of complex values is not supported yet (see docs/linalg.md, \"Complex matrices\")")
      return impl(*args, **kwargs)
    return fn(*args, **kwargs)
  return f

for _name in __all__:
  if _name not in ("eig", "eigvals"): globals()[_name] = _with_complex(_name, globals()[_name])

"""tinyjax.scipy.linalg: JAX's jax.scipy.linalg on tinygrad Tensors (built on tinyjax.numpy.linalg's factorizations;
docs/linalg.md)."""
from __future__ import annotations
import functools
from typing import Any
import numpy as np
from tinyjax._tg import Tensor, dtypes, static_shape as _sh
from tinyjax.custom import custom_jvp, structural
from tinyjax.numpy._core import asarray, result_type, as_inexact
from tinyjax.numpy import linalg as _la
from tinyjax.complex_array import is_complex_argument
from tinyjax.numpy.linalg import check_square, check_matrix, solve_shapes, jitted
from tinyjax.lax.linalg import mT, eye_like, cholesky_lower, lu as lax_lu, lu_parts, permutation_matrix, triangular_solve, tri_inv, \
  on_host, batch_shape, LapackCholeskySolve, lu_pivots_to_permutation, \
  expm as lapack_expm, PADE

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "lu_factor", "lu_solve", "lu", "solve", "inv", "det",
           "qr", "svd", "eigh", "expm", "block_diag"]

@jitted("lower", "overwrite_a", "check_finite")
def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Tensor:
  """Cholesky factor, upper by default (scipy's convention); reads only the lower (lower=True) or upper triangle."""
  a = check_square(as_inexact(a), "cholesky")
  l = cholesky_lower(a if lower else mT(a))
  return l if lower else mT(l)

def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Tensor, bool]:
  """(c, lower) for cho_solve: c is the Cholesky factor (zeros in the other triangle)."""
  return cholesky(a, lower=lower), lower

def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Tensor:
  """Solution of A x = b from A's Cholesky factor."""
  c, lower = c_and_lower
  c, b = as_inexact(c), as_inexact(b)
  if c.ndim < 2 or _sh(c)[-1] != _sh(c)[-2] or _sh(b)[0 if b.ndim == 1 else -2] != _sh(c)[-1]:
    raise ValueError(f"Incompatible shapes for cho_solve: {tuple(c.shape)} and {tuple(b.shape)}")
  bm = b.unsqueeze(-1) if b.ndim == 1 else b
  l = c if lower else mT(c)
  x = triangular_solve(l, triangular_solve(l, bm, left_side=True, lower=True), left_side=True, lower=True, transpose_a=True)
  return x[..., 0] if b.ndim == 1 else x

_TRANS = {0: False, 1: True, 2: True, "N": False, "T": True, "C": True}

@jitted("trans", "lower", "unit_diagonal", "overwrite_b", "debug", "check_finite")
def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug: Any = None, check_finite: bool = True) -> Tensor:
  """Solution of op(a) x = b for triangular a (op per trans: 0/'N', 1/'T', 2/'C'); b a vector or matrix (batched)."""
  if trans not in _TRANS: raise ValueError(f"Invalid 'trans' value {trans}")
  a, b = as_inexact(a), as_inexact(b)
  dt = result_type(a, b)
  a, b = a.cast(dt), b.cast(dt)
  check_square(a, "solve_triangular")
  vec = b.ndim == a.ndim - 1
  bm = b.unsqueeze(-1) if vec else b
  if _sh(bm)[-2] != _sh(a)[-1]:
    raise ValueError(f"solve_triangular: incompatible shapes {tuple(a.shape)} and {tuple(b.shape)}")
  x = triangular_solve(a, bm, left_side=True, lower=lower, transpose_a=_TRANS[trans], unit_diagonal=unit_diagonal)
  return x[..., 0] if vec else x

@jitted("overwrite_a", "check_finite")
def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Tensor, Tensor]:
  """(lu, pivots): packed LU with partial pivoting and LAPACK's 0-based row interchanges (int32)."""
  a = check_matrix(as_inexact(a), "lu_factor")
  lu_, piv, _ = lax_lu(a)
  return lu_, piv

def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True) -> Tensor:
  """Solution of a x = b (trans=0) or a^T x = b (1, 2) from lu_factor's output."""
  lu_, piv = lu_and_piv
  lu_, b, piv = as_inexact(lu_), as_inexact(b), asarray(piv)
  m = _sh(lu_)[-1]
  if trans not in (0, 1, 2): raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
  if _sh(b)[0 if b.ndim == 1 else -2] != m:
    raise ValueError(f"Incompatible shapes for lu_solve: {tuple(lu_.shape)} and {tuple(b.shape)}")
  bm = b.unsqueeze(-1) if b.ndim == 1 else b
  l, u = lu_parts(lu_)
  p = permutation_matrix(lu_pivots_to_permutation(piv, m), lu_)
  if trans == 0: x = triangular_solve(u, triangular_solve(l, p @ bm, left_side=True, lower=True, unit_diagonal=True), left_side=True, lower=False)
  else:
    y = triangular_solve(u, bm, left_side=True, lower=False, transpose_a=True)
    x = mT(p) @ triangular_solve(l, y, left_side=True, lower=True, transpose_a=True, unit_diagonal=True)
  return x[..., 0] if b.ndim == 1 else x

def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
  """(p, l, u) with a = p @ l @ u, or (p @ l, u) with permute_l=True."""
  a = check_matrix(as_inexact(a), "lu")
  lu_, _, perm = lax_lu(a)
  l, u = lu_parts(lu_)
  p = mT(permutation_matrix(perm, a))
  return (p @ l, u) if permute_l else (p, l, u)

def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False, debug: bool = False,
          check_finite: bool = True, assume_a: str = "gen") -> Tensor:
  """Solution of a x = b; assume_a 'gen'/'sym'/'her' use LU, 'pos' Cholesky (reading the lower or upper triangle)."""
  if assume_a not in ("gen", "sym", "her", "pos"): raise ValueError(f"Expected assume_a to be one of ['gen', 'sym', 'her', 'pos'], got {assume_a!r}.")
  if assume_a != "pos": return _la.solve(a, b)
  a = check_square(as_inexact(a), "solve")
  dt = result_type(a, asarray(b))
  a, bt = a.cast(dt), as_inexact(b).cast(dt)
  bm, vec = solve_shapes(a, bt)
  if on_host(a) and _sh(a)[-1]:   # LAPACK potrf + potrs, one host call
    batch = tuple(np.broadcast_shapes(batch_shape(a), batch_shape(bm)))
    x = LapackCholeskySolve(lower).call([a.expand(*batch, *_sh(a)[-2:]), bm.expand(*batch, *_sh(bm)[-2:])])[0]
  else: x = _solve_pos(a, bm, lower)
  return x[..., 0] if vec else x

def _pos_solve_primal(a: Tensor, b: Tensor, lower: bool) -> tuple[Tensor, Tensor]:
  """(x, L^-1) for a x = b, a = L L^T from a's lower (or upper) triangle."""
  li = tri_inv(cholesky_lower(a if lower else mT(a)), True, False)
  return mT(li) @ (li @ b), li

@structural
@functools.partial(custom_jvp, nondiff_argnums=(2,))
def _solve_pos(a: Tensor, b: Tensor, lower: bool) -> Tensor:
  return _pos_solve_primal(a, b, lower)[0]

@_solve_pos.defjvp
def _solve_pos_jvp(lower, primals, tangents):
  """JAX's (lax.custom_linear_solve with the matvec a @ x): the whole of da counts, not only the triangle read."""
  (a, b), (da, db) = primals, tangents
  x, li = _pos_solve_primal(a, b, lower)
  return x, mT(li) @ (li @ (db - da @ x))

def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Tensor: return _la.inv(a)
def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Tensor: return _la.det(a)

def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True) -> Any:
  """QR with scipy's modes: 'full' (complete Q), 'economic', 'r' (returns the 1-tuple (r,)); pivoting not supported."""
  if pivoting: raise NotImplementedError("qr: pivoting=True is not implemented")
  if mode not in ("full", "r", "economic"): raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  if mode == "r": return (_la.qr(a, mode="complete")[1],)
  return tuple(_la.qr(a, mode="complete" if mode == "full" else "reduced"))

def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False, check_finite: bool = True,
        lapack_driver: str = "gesdd") -> Any:
  out = _la.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
  return tuple(out) if compute_uv else out

def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, type: int = 1, check_finite: bool = True, subset_by_index: Any = None,  # noqa: A002
         subset_by_value: Any = None, driver: Any = None) -> Any:
  """(w, v) of a symmetric matrix from its lower (or upper) triangle; the generalized problem (b) is not supported."""
  if b is not None: raise NotImplementedError("eigh: the generalized problem (b) is not implemented")
  if subset_by_index is not None or subset_by_value is not None: raise NotImplementedError("eigh: subsets are not implemented")
  w, v = _la.eigh(a, UPLO="L" if lower else "U", symmetrize_input=False)
  return w if eigvals_only else (w, v)

# ---- expm ------------------------------------------------------------------------------------------------------------

_PADE = PADE   # JAX's coefficients (tinyjax.lax.linalg: the host path's too)

def _pade(a: Tensor, m: int, powers: dict[int, Tensor]) -> tuple[Tensor, Tensor]:
  """(U, V) of JAX's Pade approximant of degree m (odd and even parts), with JAX's grouping of the products."""
  b, eye = _PADE[m], eye_like(_sh(a)[-1], a)
  a2, a4, a6 = powers[2], powers[4], powers[6]
  if m == 13:
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    return u, v
  ev = [eye, a2, a4, a6, powers[8]][:m // 2 + 1]
  return a @ sum((b[2 * i + 1] * p for i, p in enumerate(ev)), a.zeros_like()), sum((b[2 * i] * p for i, p in enumerate(ev)), a.zeros_like())

@jitted("upper_triangular", "max_squarings")
def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Tensor:
  """Matrix exponential by JAX's Pade scaling and squaring. On the CPU one host call runs only the degree and the
  squarings each matrix needs (lax.linalg.LapackExpm); on other devices the degree and the number of squarings depend
  on the data, so every candidate is computed and selected with where (traced or concrete), max_squarings squarings
  applied conditionally. NaN beyond max_squarings, as JAX."""
  a = as_inexact(A)
  if a.ndim < 2 or _sh(a)[-1] != _sh(a)[-2]: raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={tuple(a.shape)}.")
  if on_host(a) and _sh(a)[-1]: return lapack_expm(a, upper_triangular, max_squarings)   # CPU: one host call
  f64 = a.dtype == dtypes.float64
  l1 = a.abs().sum(-2).max(-1).reshape(*_sh(a)[:-2], 1, 1)
  maxnorm = 5.371920351148152 if f64 else 3.925724783138660
  n_sq = (l1 / maxnorm).log2().floor().maximum(0)
  a = a / (2 ** n_sq).cast(a.dtype)
  conds = [1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001, 2.097847961257068e+000] if f64 else \
    [4.258730016922831e-001, 1.880152677804762e+000]
  degrees = [3, 5, 7, 9, 13] if f64 else [3, 5, 7]
  idx = sum(((l1 >= c).cast(dtypes.int32) for c in conds), l1.zeros_like().cast(dtypes.int32))   # jnp.digitize
  a2 = a @ a
  a4 = a2 @ a2
  a6 = a4 @ a2
  powers = {2: a2, 4: a4, 6: a6, 8: a6 @ a2 if f64 else a6}
  u, v = _pade(a, degrees[0], powers)
  for k, m in enumerate(degrees[1:], 1):
    um, vm = _pade(a, m, powers)
    u, v = (idx == k).where(um, u), (idx == k).where(vm, v)
  p, q = u + v, -u + v
  r = solve_triangular(q, p) if upper_triangular else _la.solve(q, p)
  for i in range(max_squarings): r = (n_sq > i).where(r @ r, r)
  return (n_sq > max_squarings).where(float("nan"), r).cast(r.dtype)

def block_diag(*arrs: Any) -> Tensor:
  """The block-diagonal matrix of the arguments (scalars and vectors count as 1 x 1 and 1 x n blocks)."""
  if not arrs: return asarray(np.zeros((1, 0)))
  ts = [asarray(x) for x in arrs]
  dt = result_type(*ts)
  ts = [t.cast(dt).reshape(1, 1) if t.ndim == 0 else t.cast(dt).reshape(1, -1) if t.ndim == 1 else t.cast(dt) for t in ts]
  if any(t.ndim != 2 for t in ts): raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 dimensions, "
                                                    f"got {arrs[[t.ndim for t in ts].index(max(t.ndim for t in ts))]}")
  ncol = sum(_sh(t)[1] for t in ts)
  rows, c = [], 0
  for t in ts:
    rows.append(t.pad(((0, 0), (c, ncol - c - _sh(t)[1]))))
    c += _sh(t)[1]
  return Tensor.cat(*rows, dim=0)

# ---- complex matrices -------------------------------------------------------------------------------------------------
# solve, inv, det, eigh, qr and svd take complex matrices through tinyjax.numpy.linalg's complex versions (LAPACK's complex
# routines); the others raise NotImplementedError naming themselves for a complex argument, never run on its parts.

_COMPLEX_OK = ("solve", "inv", "det", "eigh", "qr", "svd")

def _with_complex(name: str, fn):
  is_complex = is_complex_argument
  @functools.wraps(fn)
  def f(*args, **kwargs):
    if any(map(is_complex, args)) or any(map(is_complex, kwargs.values())):
      if name == "solve" and kwargs.get("assume_a", args[8] if len(args) > 8 else "gen") == "pos":
        raise NotImplementedError("jax.scipy.linalg.solve of complex values with assume_a='pos' is not supported yet")
      if name not in _COMPLEX_OK:
        raise NotImplementedError(f"jax.scipy.linalg.{name} of complex values is not supported yet (see docs/linalg.md, \"Complex matrices\")")
    return fn(*args, **kwargs)
  return f

for _name in __all__: globals()[_name] = _with_complex(_name, globals()[_name])

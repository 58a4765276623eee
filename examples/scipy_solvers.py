"""tinyjax's sparse Jacobians inside scipy's solvers, on 2-D Bratu (Laplace(u) + lam e^u = 0, k x k unknowns).

1. scipy.optimize.least_squares(F, u0, jac=..., jac_sparsity=...): the trust-region reflective method with its
   sparse (LSMR) inner solver, given the exact Jacobian as a scipy CSR matrix at every point it asks for.
2. Newton's method with the exact sparse Jacobian, each step solved by scipy's sparse direct solver (SuperLU with a
   COLAMD ordering: n = 10^6 in 3 steps and 37 s, of which 0.7 s are the three Jacobians) or, Newton-Krylov, by GMRES
   preconditioned with an incomplete LU of that Jacobian (spilu; its factorization dominates from n ~ 10^5 on).

The Jacobian comes from `tinyjax.jit(tinyjax.spjacobian(F, u0))`: pattern detected and colored once, then every call
replays the kernels of one batched JVP pass (5 colors) and returns the nonzeros in CSR order.
Run: .venv/bin/python examples/scipy_solvers.py [k]      (k = 1000: n = 10^6 unknowns; GMRES runs at k <= 100)
"""
from __future__ import annotations
import sys, time
from pathlib import Path
import numpy as np
import scipy.optimize as so
import scipy.sparse.linalg as spla
from tinygrad import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinyjax
import problems


def setup(k: int, lam: float = 1.0):
  """The residual as numpy -> numpy, and numpy -> scipy CSR Jacobian (jitted tinyjax), with the SparseJacobian."""
  F = lambda u: problems.bratu2d(u, k, lam)
  J = tinyjax.spjacobian(F, Tensor(np.zeros(k * k)))   # float64, as scipy's solvers work
  jac_values, residual = tinyjax.jit(J), tinyjax.jit(F)
  def res(u: np.ndarray) -> np.ndarray: return residual(Tensor(u)).numpy()
  def jac(u: np.ndarray): return J.matrix(jac_values(Tensor(u)).numpy())
  return res, jac, J


def solve_least_squares(k: int, verbose: bool = True) -> np.ndarray:
  res, jac, J = setup(k)
  t = time.perf_counter()
  out = so.least_squares(res, np.zeros(k * k), jac=jac, jac_sparsity=J.pattern, method="trf", tr_solver="lsmr",
                         xtol=1e-10, ftol=1e-10, gtol=1e-10)
  if verbose:
    print(f"least_squares, k = {k}: |F| = {np.linalg.norm(out.fun):.2e} after {out.nfev} residuals and {out.njev} "
          f"Jacobians, {time.perf_counter() - t:.2f} s; max u = {out.x.max():.6f}")
  return out.x


def solve_newton(k: int, linear: str = "direct", tol: float = 1e-10, verbose: bool = True) -> np.ndarray:
  """Newton steps until |F| <= tol |F(0)|, each solved by spsolve (`linear="direct"`) or GMRES with ILU ("gmres")."""
  res, jac, J = setup(k)
  u = np.zeros(k * k)
  r = res(u)
  r0 = np.linalg.norm(r)
  t, t_jac = time.perf_counter(), 0.0
  for it in range(1, 20):
    t0 = time.perf_counter()
    A = jac(u).tocsc()
    t_jac += time.perf_counter() - t0
    if linear == "direct": du = spla.spsolve(A, -r, permc_spec="COLAMD")
    else:
      ilu = spla.spilu(A, drop_tol=1e-3, fill_factor=2)
      du, info = spla.gmres(A, -r, M=spla.LinearOperator(A.shape, ilu.solve), rtol=1e-10, restart=50, maxiter=200)
      assert info == 0, f"GMRES did not converge (info {info})"
    u, r = u + du, res(u + du)
    if verbose: print(f"  Newton {it}: |F| = {np.linalg.norm(r):.3e}")
    if np.linalg.norm(r) <= tol * r0: break
  if verbose:
    print(f"Newton ({linear}), k = {k} (n = {k * k:,}): {it} Newton steps, {time.perf_counter() - t:.2f} s "
          f"({t_jac:.2f} s in {it} Jacobians of {J.nnz:,} nonzeros, {J.ncolors} colors); max u = {u.max():.6f}")
  return u


if __name__ == "__main__":
  k = int(sys.argv[1]) if len(sys.argv) > 1 else 60
  solve_least_squares(min(k, 60))
  solve_newton(min(k, 100), "gmres")
  solve_newton(k, "direct")

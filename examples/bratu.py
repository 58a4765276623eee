"""Newton's method on the Bratu problem with tinyjax.spjacobian and scipy's sparse direct solver.

  1-D: u'' + lam e^u = 0 on (0, 1), u(0) = u(1) = 0, n interior points        (tridiagonal Jacobian, 3 colors)
  2-D: Laplace(u) + lam e^u = 0 on the unit square, k x k interior points     (5-point stencil, 5 colors)

The Jacobian's pattern is detected once from the traced graph and colored; each Newton iteration then evaluates all
nonzeros in one batched pass (a handful of JVPs instead of n) and solves with scipy.sparse.linalg.spsolve.
Run: .venv/bin/python examples/bratu.py
"""
import sys, time
from pathlib import Path
import numpy as np
import scipy.sparse.linalg as spla
from scipy.optimize import brentq
from tinygrad import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinyjax
import problems


def timed(fn, reps: int = 3) -> float:
  """Best wall time of fn() over reps calls (after one warm-up call that compiles the kernels)."""
  fn()
  best = float("inf")
  for _ in range(reps):
    t = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t)
  return best


def newton(F, n: int, title: str, tol: float = 1e-9, maxit: int = 20):
  print(f"\n== {title}: n = {n} unknowns " + "=" * max(0, 60 - len(title)))
  u = np.zeros(n)
  t = time.perf_counter()
  J = tinyjax.spjacobian(F, Tensor(u))
  t_build = time.perf_counter() - t
  print(f"spjacobian: shape {J.shape}, nnz {J.nnz} ({J.nnz / n:.1f} per row), mode '{J.mode}', "
        f"{J.ncolors} colors (dense forward mode would need {n} JVPs); detection + coloring {t_build * 1e3:.0f} ms")
  resid = lambda u: F(Tensor(u)).numpy()
  r = resid(u)
  print(f"  iter 0: |F(u)| = {np.linalg.norm(r):.3e}")
  t = time.perf_counter()
  for it in range(1, maxit + 1):
    A = J.to_scipy(Tensor(u))
    du = spla.spsolve(A.tocsc(), -r)
    u = u + du
    r = resid(u)
    print(f"  iter {it}: |F(u)| = {np.linalg.norm(r):.3e}   |du| = {np.linalg.norm(du):.3e}")
    if np.linalg.norm(r) < tol: break
  t_newton = time.perf_counter() - t
  print(f"converged in {it} Newton iterations ({t_newton:.2f} s, including the first-call kernel compiles); "
        f"max u = {u.max():.6f}")

  # the Jacobian values against a dense tinyjax.jacfwd at the solution
  x = Tensor(u)
  err = np.abs(J.todense(x) - tinyjax.jacfwd(F)(x).numpy()).max()
  print(f"sparse vs dense jacfwd at the solution: max |diff| = {err:.1e}")
  compare_times(F, J, u)
  return u


def compare_times(F, J, u):
  """Time per Jacobian, eager (graph built and scheduled on every call) and under tinyjax.jit (kernels replayed)."""
  sp_jit, dense_jit = tinyjax.jit(lambda x: J(x)), tinyjax.jit(tinyjax.jacfwd(F))
  t_sp = timed(lambda: J(Tensor(u)).numpy())
  t_scipy = timed(lambda: J.to_scipy(Tensor(u)))
  t_dense = timed(lambda: tinyjax.jacfwd(F)(Tensor(u)).numpy())
  t_sp_jit = timed(lambda: sp_jit(Tensor(u)).numpy())
  t_dense_jit = timed(lambda: dense_jit(Tensor(u)).numpy())
  print(f"time per Jacobian (n = {len(u)}): eager  spjacobian {t_sp * 1e3:6.1f} ms (to_scipy {t_scipy * 1e3:.1f} ms)   "
        f"dense jacfwd {t_dense * 1e3:6.1f} ms")
  print(f"                              jitted spjacobian {t_sp_jit * 1e3:6.1f} ms                      "
        f"dense jacfwd {t_dense_jit * 1e3:6.1f} ms")
  return u


if __name__ == "__main__":
  t0 = time.perf_counter()
  u1 = newton(problems.bratu1d, 200, "1-D Bratu, lam = 1")
  theta = brentq(lambda t: t - np.sqrt(2) * np.cosh(t / 4), 0.1, 4)   # exact solution of the continuous problem
  print(f"  u(1/2) ~ {u1[99:101].mean():.6f}   (continuous problem: 2 log cosh(theta/4) = {2 * np.log(np.cosh(theta / 4)):.6f})")
  k = 20
  u2 = newton(lambda u: problems.bratu2d(u, k), k * k, f"2-D Bratu {k}x{k}, lam = 1")
  n_big = 2000
  print(f"\n== a larger 1-D grid, Jacobian timing only " + "=" * 28)
  Jb = tinyjax.spjacobian(problems.bratu1d, Tensor(np.zeros(n_big)))
  compare_times(problems.bratu1d, Jb, np.full(n_big, 0.1))
  print(f"\ntotal {time.perf_counter() - t0:.1f} s")

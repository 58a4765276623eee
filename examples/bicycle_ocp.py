"""Sparse constraint Jacobians of a multiple-shooting optimal-control problem, with tinyjax.spjacobian.

Kinematic bicycle (state x, y, heading psi, speed v; controls acceleration a, steering delta), one RK4 step per stage,
N stages; decision vector z = [s_0, u_0, s_1, u_1, ..., s_N]. Constraints: s_0 = s_init and s_{k+1} = RK4(s_k, u_k).
The constraint Jacobian is block banded: its pattern is read off the traced graph, colored once, and all its
nonzeros come out of a handful of batched JVPs/VJPs, whatever N is. We then move an infeasible initial guess onto
the constraints with minimum-norm Gauss-Newton steps  dz = -J^T (J J^T)^{-1} c(z)  (scipy's sparse solver).
Run: .venv/bin/python examples/bicycle_ocp.py
"""
import sys, time
from pathlib import Path
import numpy as np
import scipy.sparse.linalg as spla
from tinygrad import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinyjax
import problems
from problems import NX, NU

S_INIT = np.array([0.0, 0.0, 0.0, 5.0])   # at the origin, heading east at 5 m/s
DT = 0.1


def initial_guess(N: int, rng) -> np.ndarray:
  """States on a straight line at constant speed (ignoring the steering) plus noise; random controls: infeasible."""
  t = np.arange(N + 1) * DT
  S = np.stack([S_INIT[3] * t, np.zeros_like(t), np.zeros_like(t), np.full_like(t, S_INIT[3])], axis=1)
  S += 0.05 * rng.standard_normal(S.shape)
  U = np.stack([0.5 * rng.standard_normal(N), 0.2 * rng.standard_normal(N)], axis=1)
  return np.concatenate([np.concatenate([S[:N], U], axis=1).ravel(), S[N]])


def rollout(z: np.ndarray, N: int) -> np.ndarray:
  """Simulate the controls in z from S_INIT with the same RK4 step (numpy): the states a feasible z must hold."""
  U = z[:N * (NX + NU)].reshape(N, NX + NU)[:, NX:]
  def f(s, u):
    return np.array([s[3] * np.cos(s[2]), s[3] * np.sin(s[2]), s[3] * np.tan(u[1]) / problems.WHEELBASE, u[0]])
  s, out = S_INIT.copy(), [S_INIT.copy()]
  for k in range(N):
    k1 = f(s, U[k]); k2 = f(s + DT / 2 * k1, U[k]); k3 = f(s + DT / 2 * k2, U[k]); k4 = f(s + DT * k3, U[k])
    s = s + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    out.append(s)
  return np.array(out)


def main():
  rng = np.random.default_rng(0)
  t0 = time.perf_counter()

  print("== the constraint Jacobian's structure for growing horizons " + "=" * 20)
  print(f"{'N':>4} {'shape':>12} {'nnz':>6} {'density':>8} {'fwd colors':>11} {'rev colors':>11} {'auto':>5} {'build':>8}")
  for N in (20, 30, 40, 50):
    c = lambda z, N=N: problems.bicycle_constraints(z, N, S_INIT, DT)
    z0 = Tensor(initial_guess(N, rng))
    t = time.perf_counter()
    J = tinyjax.spjacobian(c, z0)
    t_build = time.perf_counter() - t
    fwd = tinyjax.spjacobian(c, z0, sparsity=J.pattern, mode="fwd")
    rev = tinyjax.spjacobian(c, z0, sparsity=J.pattern, mode="rev")
    m, n = J.shape
    print(f"{N:>4} {str(J.shape):>12} {J.nnz:>6} {J.nnz / (m * n):>8.2%} {fwd.ncolors:>11} {rev.ncolors:>11} "
          f"{J.mode:>5} {t_build * 1e3:>6.0f}ms")

  N = 20
  c = lambda z: problems.bicycle_constraints(z, N, S_INIT, DT)
  z = initial_guess(N, rng)
  J = tinyjax.spjacobian(c, Tensor(z))
  print(f"\n== N = {N}: {J.shape[0]} constraints, {J.shape[1]} variables " + "=" * 30)
  print(J)
  print(f"a {NX}x{NX + NU} block per stage plus the identity on the next state; "
        f"{J.ncolors} {'VJPs' if J.mode == 'rev' else 'JVPs'} give all {J.nnz} nonzeros "
        f"(dense: {min(J.shape)} {'VJPs' if J.shape[0] <= J.shape[1] else 'JVPs'})")

  # values against the dense Jacobian at a random point
  zr = Tensor(rng.standard_normal(J.shape[1]))
  t = time.perf_counter(); sparse_vals = J.todense(zr); t_sparse = time.perf_counter() - t
  t = time.perf_counter(); dense = tinyjax.jacfwd(c)(zr).numpy(); t_dense = time.perf_counter() - t
  print(f"spjacobian vs dense tinyjax.jacfwd at a random point: max |diff| = {np.abs(sparse_vals - dense).max():.1e}, "
        f"dense nonzeros outside the pattern: {int(((dense != 0) & ~J.pattern.toarray()).sum())}   "
        f"(first calls, with compiles: {t_sparse:.1f} s vs {t_dense:.1f} s)")

  # minimum-norm Gauss-Newton steps onto the constraints
  print("\nGauss-Newton, dz = -J^T (J J^T)^{-1} c(z):")
  viol = lambda z: c(Tensor(z)).numpy()
  r = viol(z)
  print(f"  iter 0: max |c(z)| = {np.abs(r).max():.3e}")
  for it in range(1, 9):
    A = J.to_scipy(Tensor(z))
    y = spla.spsolve((A @ A.T).tocsc(), r)
    z = z - A.T @ y
    r = viol(z)
    print(f"  iter {it}: max |c(z)| = {np.abs(r).max():.3e}")
    if np.abs(r).max() < 1e-12: break
  S = np.concatenate([z[:N * (NX + NU)].reshape(N, NX + NU)[:, :NX], z[None, N * (NX + NU):]])
  print(f"feasible: the states equal a numpy RK4 rollout of the controls from s_init, max |diff| = "
        f"{np.abs(S - rollout(z, N)).max():.1e}; final state (x, y, psi, v) = {np.round(S[-1], 4).tolist()}")
  print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
  main()

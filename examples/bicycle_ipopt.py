"""The kinematic-bicycle optimal-control problem solved by IPOPT (cyipopt), with every derivative from tinyjax.

Multiple shooting with one RK4 step per stage (examples/problems.py): decision vector z = [s_0, u_0, ..., s_N], states
s = (x, y, heading, speed), controls u = (acceleration, steering). A lane change: start at the origin at 5 m/s, end
near (5 T, 3) with the same heading and speed (a soft terminal cost), with the least control effort; the controls are
bounded, the dynamics are equality constraints. IPOPT gets
- the objective gradient: `tinyjax.jit(tinyjax.grad(f))`;
- the constraint Jacobian: `tinyjax.spjacobian(c, z)`, its `structure()` as `jacobianstructure`, its jitted values;
- the Hessian of the Lagrangian sigma f + lam . c: `tinyjax.sphessian(L, z, args=(lam, sigma))`, the lower triangle
  (`structure(lower=True)`, `lower(values)`) as IPOPT wants it, jitted.
Run: .venv/bin/python examples/bicycle_ipopt.py [N]      (needs cyipopt: scripts/setup.sh installs it with the test extra)
"""
from __future__ import annotations
import sys, time
from pathlib import Path
import numpy as np
from tinygrad import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinyjax
import problems
from problems import NX, NU

# IPOPT works in float64 and hands the callbacks numpy float64 arrays: with x64 on (as a JAX user sets it for this),
# they enter the jitted functions as float64, copied in from the host. Wrapping each in a tinygrad Tensor first costs
# more than the derivative itself (Tensor(numpy) ~0.2 ms per argument).
tinyjax.config.update("jax_enable_x64", True)

S_INIT = np.array([0.0, 0.0, 0.0, 5.0])
DT = 0.1
A_MAX, DELTA_MAX = 3.0, 0.5


def goal(N: int) -> np.ndarray: return np.array([5.0 * N * DT, 3.0, 0.0, 5.0])

def objective(z: Tensor, N: int) -> Tensor:
  """dt * sum(a^2 + 10 delta^2) + 100 |s_N - goal|^2."""
  U = z[:N * (NX + NU)].reshape(N, NX + NU)[:, NX:]
  e = z[N * (NX + NU):] - Tensor(goal(N))
  return DT * (U[:, 0].square().sum() + 10 * U[:, 1].square().sum()) + 100 * e.square().sum()

def initial_guess(N: int) -> np.ndarray:
  """Straight ahead at the initial speed, zero controls (feasible dynamics, far from the goal)."""
  t = np.arange(N + 1) * DT
  S = np.stack([S_INIT[3] * t, np.zeros_like(t), np.zeros_like(t), np.full_like(t, S_INIT[3])], axis=1)
  z = np.zeros(problems.bicycle_size(N))
  SU = z[:N * (NX + NU)].reshape(N, NX + NU)
  SU[:, :NX] = S[:N]
  z[N * (NX + NU):] = S[N]
  return z

def bounds(N: int) -> tuple[np.ndarray, np.ndarray]:
  lo, hi = np.full(problems.bicycle_size(N), -1e19), np.full(problems.bicycle_size(N), 1e19)
  for k in range(N):
    lo[k * (NX + NU) + NX:(k + 1) * (NX + NU)] = [-A_MAX, -DELTA_MAX]
    hi[k * (NX + NU) + NX:(k + 1) * (NX + NU)] = [A_MAX, DELTA_MAX]
  return lo, hi


class BicycleDerivatives:
  """cyipopt's problem object: every callback a jitted tinyjax function; `times` adds up the derivative calls."""
  def __init__(self, N: int):
    self.N, n, m = N, problems.bicycle_size(N), NX * (N + 1)
    z0 = Tensor(initial_guess(N))
    f = lambda z: objective(z, N)
    c = lambda z: problems.bicycle_constraints(z, N, S_INIT, DT)
    def lagrangian(z, lam, sigma): return sigma * f(z) + (lam * c(z)).sum()
    t = time.perf_counter()
    self.J = tinyjax.spjacobian(c, z0)
    self.H = tinyjax.sphessian(lagrangian, z0, args=(Tensor(np.zeros(m)), Tensor(1.0)))
    self.setup = time.perf_counter() - t
    self._f, self._g, self._c = tinyjax.jit(f), tinyjax.jit(tinyjax.grad(f)), tinyjax.jit(c)
    self._jac = tinyjax.jit(self.J)
    self._hess = tinyjax.jit(lambda z, lam, sigma: self.H.lower(self.H(z, lam, sigma)))
    # the first call of each traces and compiles: done here, so that the solve's figures are per-iteration costs
    t = time.perf_counter()
    z0n, lam0, one = initial_guess(N), np.zeros(m), np.float64(1.0)
    for out in (self._f(z0n), self._g(z0n), self._c(z0n), self._jac(z0n), self._hess(z0n, lam0, one)): out.numpy()
    self.compile = time.perf_counter() - t
    self.times = {"gradient": 0.0, "jacobian": 0.0, "hessian": 0.0}
    self.calls = dict.fromkeys(self.times, 0)
    self.iterations = 0

  def _timed(self, what: str, fn, *args) -> np.ndarray:
    t = time.perf_counter()
    out = fn(*args).numpy()
    self.times[what] += time.perf_counter() - t
    self.calls[what] += 1
    return out

  # the cyipopt interface
  def objective(self, z): return float(self._f(z).numpy())
  def gradient(self, z): return self._timed("gradient", self._g, z)
  def constraints(self, z): return self._c(z).numpy()
  def jacobianstructure(self): return self.J.structure()
  def jacobian(self, z): return self._timed("jacobian", self._jac, z)
  def intermediate(self, alg_mod, iter_count, *args): self.iterations = iter_count
  def hessianstructure(self): return self.H.structure(lower=True)
  def hessian(self, z, lam, sigma): return self._timed("hessian", self._hess, z, np.asarray(lam, np.float64), np.float64(sigma))


def solve(N: int, print_level: int = 0, tol: float = 1e-8) -> dict:
  import cyipopt
  d = BicycleDerivatives(N)
  lo, hi = bounds(N)
  m = NX * (N + 1)
  nlp = cyipopt.Problem(n=len(lo), m=m, problem_obj=d, lb=lo, ub=hi, cl=np.zeros(m), cu=np.zeros(m))
  for k, v in {"tol": tol, "print_level": print_level, "max_iter": 500, "hessian_approximation": "exact", "sb": "yes"}.items():
    nlp.add_option(k, v)
  t = time.perf_counter()
  z, info = nlp.solve(initial_guess(N))
  total = time.perf_counter() - t
  return dict(z=z, status=info["status"], obj=info["obj_val"], total=total, setup=d.setup, compile=d.compile, times=d.times,
              calls=d.calls, iters=d.iterations, colors=(d.J.ncolors, d.H.ncolors), nnz=(d.J.nnz, d.H.nnz),
              mult_g=info["mult_g"], mult_x_L=info["mult_x_L"], mult_x_U=info["mult_x_U"], derivatives=d)


if __name__ == "__main__":
  N = int(sys.argv[1]) if len(sys.argv) > 1 else 50
  r = solve(N)
  z = r["z"]
  s_N = z[N * (NX + NU):]
  deriv = sum(r["times"].values())
  print(f"bicycle lane change, N = {N} stages ({len(z)} unknowns, {NX * (N + 1)} constraints): IPOPT status {r['status']}, "
        f"objective {r['obj']:.6f}, {r['iters']} iterations")
  print(f"  final state {np.round(s_N, 3)} (goal {goal(N)}); max |c| = "
        f"{np.abs(problems.bicycle_constraints(Tensor(z), N, S_INIT, DT).numpy()).max():.1e}")
  print(f"  Jacobian {r['nnz'][0]} nonzeros, {r['colors'][0]} colors; Lagrangian Hessian {r['nnz'][1]} nonzeros, "
        f"{r['colors'][1]} colors; setup {r['setup']:.2f} s, first calls (trace + compile) {r['compile']:.2f} s")
  print(f"  solve {r['total']:.2f} s, of which derivatives {deriv:.2f} s "
        "(" + ", ".join(f"{k} {v * 1e3:.1f} ms / {r['calls'][k]} calls" for k, v in r["times"].items()) + ")")

"""The bicycle optimal-control problem (examples/bicycle_ipopt.py) solved three ways, for N = 50, 200 and 1000 stages:

  tinyjax + IPOPT   cyipopt (Debian's IPOPT) with tinyjax's jitted gradient, spjacobian and sphessian of the Lagrangian
  CasADi + IPOPT    the same cyipopt and IPOPT, with CasADi's derivatives (SX graphs, its own sparsity and Hessian)
  CasADi nlpsol     CasADi's own nlpsol('ipopt') (the IPOPT bundled with its wheel), its derivative time from stats()

Same problem, same starting point, same options: the first two must take the same iterations (same solver, the same
derivatives up to rounding). Columns: iterations, derivative time per iteration (gradient + Jacobian + Hessian calls
over the iteration count), total solve time, nonzeros and colors (CasADi: -, it colors internally).
  python -m bench.ocp_casadi [--sizes 50,200,1000]
Writes bench/out/ocp_casadi.md.
"""
from __future__ import annotations
import argparse, sys, time
from pathlib import Path
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import bicycle_ipopt as B   # noqa: E402
import problems            # noqa: E402
from problems import NX, NU, WHEELBASE   # noqa: E402

OUT = Path(__file__).parent / "out"
OPTIONS = {"tol": 1e-8, "max_iter": 500, "hessian_approximation": "exact"}

def casadi_model(N: int):
  """Objective, constraints and the Lagrangian's Hessian as CasADi SX functions, written as examples/problems.py."""
  import casadi as ca
  n, m = problems.bicycle_size(N), NX * (N + 1)
  z, lam, sigma = ca.SX.sym("z", n), ca.SX.sym("lam", m), ca.SX.sym("sigma")
  def dyn(s, u): return ca.vertcat(s[3] * ca.cos(s[2]), s[3] * ca.sin(s[2]), s[3] * ca.tan(u[1]) / WHEELBASE, u[0])
  def rk4(s, u):
    k1 = dyn(s, u); k2 = dyn(s + B.DT / 2 * k1, u); k3 = dyn(s + B.DT / 2 * k2, u); k4 = dyn(s + B.DT * k3, u)  # noqa: E702
    return s + B.DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
  S = [z[k * (NX + NU):k * (NX + NU) + NX] for k in range(N)] + [z[N * (NX + NU):]]
  U = [z[k * (NX + NU) + NX:(k + 1) * (NX + NU)] for k in range(N)]
  g = ca.vertcat(S[0] - B.S_INIT, *[S[k + 1] - rk4(S[k], U[k]) for k in range(N)])
  e = S[N] - B.goal(N)
  f = B.DT * sum(U[k][0] ** 2 + 10 * U[k][1] ** 2 for k in range(N)) + 100 * ca.dot(e, e)
  H = ca.tril(ca.hessian(sigma * f + ca.dot(lam, g), z)[0])
  J = ca.jacobian(g, z)
  fns = dict(f=ca.Function("f", [z], [f]), grad=ca.Function("grad", [z], [ca.gradient(f, z)]), g=ca.Function("g", [z], [g]),
             jac=ca.Function("jac_g", [z], [J]), hess=ca.Function("hess_l", [z, lam, sigma], [H]))
  return fns, J.sparsity(), H.sparsity(), (z, f, g)

class CasadiDerivatives:
  """cyipopt callbacks from CasADi's functions (the values in the nonzero order of their sparsity's triplets)."""
  def __init__(self, N: int):
    self.fns, self.Js, self.Hs, _ = casadi_model(N)
    self.times = {"gradient": 0.0, "jacobian": 0.0, "hessian": 0.0}
    self.iterations = 0
  def _t(self, what, fn, *a):
    t = time.perf_counter()
    out = np.asarray(fn(*a)).ravel() if what == "gradient" else np.asarray(fn(*a).nonzeros())
    self.times[what] += time.perf_counter() - t
    return out
  def objective(self, z): return float(self.fns["f"](z))
  def gradient(self, z): return self._t("gradient", self.fns["grad"], z)
  def constraints(self, z): return np.asarray(self.fns["g"](z)).ravel()
  def jacobianstructure(self): return tuple(np.asarray(a) for a in self.Js.get_triplet())
  def jacobian(self, z): return self._t("jacobian", self.fns["jac"], z)
  def hessianstructure(self): return tuple(np.asarray(a) for a in self.Hs.get_triplet())
  def hessian(self, z, lam, sigma): return self._t("hessian", self.fns["hess"], z, lam, sigma)
  def intermediate(self, alg_mod, iter_count, *args): self.iterations = iter_count

def solve_cyipopt(d, N: int) -> dict:
  import cyipopt
  lo, hi = B.bounds(N)
  m = NX * (N + 1)
  nlp = cyipopt.Problem(n=len(lo), m=m, problem_obj=d, lb=lo, ub=hi, cl=np.zeros(m), cu=np.zeros(m))
  for k, v in {**OPTIONS, "print_level": 0, "sb": "yes"}.items(): nlp.add_option(k, v)
  t = time.perf_counter()
  z, info = nlp.solve(B.initial_guess(N))
  return dict(total=time.perf_counter() - t, iters=d.iterations, deriv=sum(d.times.values()), obj=info["obj_val"], status=info["status"], z=z)

def solve_nlpsol(N: int) -> dict:
  import casadi as ca
  _, _, _, (z, f, g) = casadi_model(N)
  lo, hi = B.bounds(N)
  m = NX * (N + 1)
  solver = ca.nlpsol("s", "ipopt", {"x": z, "f": f, "g": g}, {"ipopt": {**OPTIONS, "print_level": 0, "sb": "yes"}, "print_time": False})
  t = time.perf_counter()
  sol = solver(x0=B.initial_guess(N), lbx=lo, ubx=hi, lbg=np.zeros(m), ubg=np.zeros(m))
  total = time.perf_counter() - t
  st = solver.stats()
  deriv = sum(st.get(f"t_wall_nlp_{k}", 0.0) for k in ("grad_f", "jac_g", "hess_l"))
  return dict(total=total, iters=st["iter_count"], deriv=deriv, obj=float(sol["f"]), status=st["return_status"], z=np.asarray(sol["x"]).ravel())

def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--sizes", default="50,200,1000")
  a = ap.parse_args()
  lines = ["| N | unknowns | solver | iterations | derivatives per iteration | total solve | setup + first calls | Jacobian nnz / colors | "
           "Hessian nnz / colors | objective |", "|---|---|---|---|---|---|---|---|---|---|"]
  for N in [int(s) for s in a.sizes.split(",")]:
    t = time.perf_counter()
    tj = B.BicycleDerivatives(N)
    tj_setup = time.perf_counter() - t
    r_tj = solve_cyipopt(tj, N)
    t = time.perf_counter()
    cd = CasadiDerivatives(N)
    cd_setup = time.perf_counter() - t
    r_cd = solve_cyipopt(cd, N)
    r_ns = solve_nlpsol(N)
    assert np.abs(r_tj["z"] - r_cd["z"]).max() < 1e-6, "tinyjax and CasADi reach different solutions"
    n = problems.bicycle_size(N)
    for name, r, setup, sizes in (("tinyjax + IPOPT", r_tj, tj_setup, (f"{tj.J.nnz} / {tj.J.ncolors}", f"{tj.H.nnz} / {tj.H.ncolors}")),
                                  ("CasADi + IPOPT", r_cd, cd_setup, (f"{cd.Js.nnz()} / -", f"{cd.Hs.nnz()} (lower) / -")),
                                  ("CasADi nlpsol", r_ns, float("nan"), ("-", "-"))):
      per = r["deriv"] / max(r["iters"], 1)
      lines.append(f"| {N} | {n} | {name} | {r['iters']} | {per * 1e3:.2f} ms | {r['total']:.3f} s | "
                   f"{'-' if setup != setup else f'{setup:.2f} s'} | {sizes[0]} | {sizes[1]} | {r['obj']:.6f} |")
      print(lines[-1], flush=True)
  OUT.mkdir(exist_ok=True)
  (OUT / "ocp_casadi.md").write_text("\n".join(lines) + "\n")
  print("\n".join(lines))

if __name__ == "__main__":
  main()

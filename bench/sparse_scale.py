"""Sparse derivatives at scale: tinyjax vs asdex (JAX) on the Bratu problems, one fresh process per (tool, problem, n).

  python -m bench.sparse_scale [--quick] [--sizes 1e4,1e6] [--only "1-D Bratu,2-D Bratu"]

Columns, per tool:
  setup      tinyjax.spjacobian / sphessian (trace, sparsity detection, coloring) vs asdex.jacobian_coloring /
             hessian_coloring: the one-time work per input shape
  per call   median time of one sparse Jacobian (Hessian) after warm-up: tinyjax.jit(J)(x) (nonzeros in CSR order) vs
             jax.jit(asdex.jacobian_from_coloring(f, coloring))(x) (a BCOO matrix), device synchronized
  bound      the memory-bandwidth bound of one call: read x and write the nonzeros (4 bytes each) at the bandwidth
             numpy's copy of a 256 MB array reaches in the same process, and tinyjax's per call over it
  peak RSS   the process's peak resident memory (ru_maxrss) after setup and the timed calls; each process imports only
             its own tool (tinyjax: tinygrad and numpy/scipy; asdex: JAX)
  colors     the number of colors each found
Writes bench/out/sparse_scale.md (and .json).
"""
from __future__ import annotations
import argparse, json, os, resource, statistics, subprocess, sys, time
from pathlib import Path
import numpy as np

OUT = Path(__file__).parent / "out"
PROBLEMS = ["1-D Bratu", "2-D Bratu", "2-D Bratu energy (Hessian)", "bicycle Lagrangian (Hessian)"]

def _bandwidth() -> float:
  a = np.ones(64 * 2**20, np.float32)
  b = np.empty_like(a)
  best = float("inf")
  for _ in range(5):
    t0 = time.perf_counter()
    np.copyto(b, a)
    best = min(best, time.perf_counter() - t0)
  return 2 * a.nbytes / best

def _timed(call, sync, budget: float = 2.0, most: int = 200) -> float:
  call()
  sync()
  times: list[float] = []
  t_end = time.perf_counter() + budget
  while len(times) < most and (len(times) < 5 or time.perf_counter() < t_end):
    t0 = time.perf_counter()
    call()
    sync()
    times.append(time.perf_counter() - t0)
  return statistics.median(times)

def one(tool: str, problem: str, n: int) -> dict:
  k = int(round(n ** 0.5))
  if problem.startswith("2-D"): n = k * k
  from examples import problems
  N = max(1, (n - problems.NX) // (problems.NX + problems.NU))   # bicycle: stages for about n unknowns
  if problem.startswith("bicycle"): n = problems.bicycle_size(N)
  x0 = np.random.default_rng(0).uniform(0, 1, n).astype(np.float32)
  lam0 = np.random.default_rng(1).uniform(0.5, 1, problems.NX * (N + 1)).astype(np.float32)
  s0 = np.array([0, 0, 0, 5], np.float32)
  if tool == "tinyjax":
    from tinygrad import Tensor, Device
    import tinyjax
    x = Tensor(x0).realize()
    s0t = Tensor(s0)
    F = {"1-D Bratu": problems.bratu1d, "2-D Bratu": lambda u: problems.bratu2d(u, k),
         "2-D Bratu energy (Hessian)": lambda u: problems.bratu2d_energy(u, k),
         "bicycle Lagrangian (Hessian)": lambda z, lam: (z * z).sum() + (lam * problems.bicycle_constraints(z, N, s0t)).sum()}[problem]
    args = (Tensor(lam0).realize(),) if problem.startswith("bicycle") else ()
    t0 = time.perf_counter()
    J = tinyjax.sphessian(F, x, args=args) if "Hessian" in problem else tinyjax.spjacobian(F, x)
    setup = time.perf_counter() - t0
    jf = tinyjax.jit(J)
    t0 = time.perf_counter()
    jf(x, *args).realize()
    first = time.perf_counter() - t0
    per = _timed(lambda: jf(x, *args), lambda: Device[Device.DEFAULT].synchronize())
    colors, nnz = J.ncolors, J.nnz
  else:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax, asdex
    import jax.numpy as jnp
    F = {"1-D Bratu": problems.bratu1d_jnp, "2-D Bratu": lambda u: problems.bratu2d_jnp(u, k),
         "2-D Bratu energy (Hessian)": lambda u: problems.bratu2d_energy_jnp(u, k),
         "bicycle Lagrangian (Hessian)": lambda z: jnp.sum(z * z) + jnp.sum(lam0 * problems.bicycle_constraints_jnp(z, N, s0))}[problem]
    t0 = time.perf_counter()
    hess = "Hessian" in problem
    col = asdex.hessian_coloring(F, x0) if hess else asdex.jacobian_coloring(F, x0)
    setup = time.perf_counter() - t0
    jf = jax.jit(asdex.hessian_from_coloring(F, col) if hess else asdex.jacobian_from_coloring(F, col))
    t0 = time.perf_counter()
    out = jax.block_until_ready(jf(x0))
    first = time.perf_counter() - t0
    holder = [out]
    per = _timed(lambda: holder.__setitem__(0, jf(x0)), lambda: jax.block_until_ready(holder[0]))
    colors, nnz = int(col.num_colors), int(out.nse)
  rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  bw = _bandwidth()
  return dict(tool=tool, problem=problem, n=n, setup=setup, first=first, per=per, rss_mb=rss, colors=colors, nnz=nnz,
              bound=(4 * n + 4 * nnz) / bw, bandwidth_gbs=bw / 1e9)

def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--quick", action="store_true", help="sizes 1e4 and 1e5 only")
  ap.add_argument("--sizes", default="", help="comma-separated sizes, e.g. 1e4,1e6")
  ap.add_argument("--only", default="", help="comma-separated problems (name prefixes: 1-D, 2-D Bratu, 2-D Bratu energy)")
  ap.add_argument("--one", nargs=3, metavar=("TOOL", "PROBLEM", "N"), help=argparse.SUPPRESS)
  a = ap.parse_args()
  if a.one:
    print(json.dumps(one(a.one[0], a.one[1], int(float(a.one[2])))))
    return
  sizes = [int(float(s)) for s in a.sizes.split(",")] if a.sizes else ([10**4, 10**5] if a.quick else [10**4, 10**5, 10**6])
  rows = []
  only = [o.strip() for o in a.only.split(",") if o.strip()]
  # a prefix names the problems it starts, the shortest match wins ("2-D Bratu" is not the energy)
  chosen = [p for p in PROBLEMS if not only or any(p == o or (p.startswith(o) and not any(q == o for q in PROBLEMS)) for o in only)]
  for problem in chosen:
    for n in sizes:
      res = {}
      for tool in ("tinyjax", "asdex"):
        p = subprocess.run([sys.executable, "-m", "bench.sparse_scale", "--one", tool, problem, str(n)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}, timeout=1800)
        line = [l for l in p.stdout.splitlines() if l.startswith("{")]
        res[tool] = json.loads(line[-1]) if line else {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:120]}
        print(problem, n, tool, res[tool], flush=True)
      rows.append((problem, n, res))
  OUT.mkdir(exist_ok=True)
  (OUT / "sparse_scale.json").write_text(json.dumps(rows, indent=1))
  def f(r, key, scale=1.0, fmt="{:.2f}"): return fmt.format(r[key] * scale) if key in r else "-"
  lines = ["| problem | n | colors (tj / asdex) | setup tinyjax | setup asdex | per call tinyjax | per call asdex | bound | "
           "tinyjax / bound | peak RSS tinyjax | peak RSS asdex |", "|---|---|---|---|---|---|---|---|---|---|---|"]
  for problem, n, r in rows:
    t, x = r["tinyjax"], r["asdex"]
    ratio = f"{t['per'] / t['bound']:.1f}x" if "per" in t else "-"
    lines.append(f"| {problem} | {t.get('n', n):,} | {t.get('colors', '-')} / {x.get('colors', '-')} | {f(t, 'setup')} s | "
                 f"{f(x, 'setup')} s | {f(t, 'per', 1e3, '{:.3f}')} ms | {f(x, 'per', 1e3, '{:.3f}')} ms | "
                 f"{f(t, 'bound', 1e3, '{:.3f}')} ms | {ratio} | {f(t, 'rss_mb', 1, '{:.0f}')} MB | {f(x, 'rss_mb', 1, '{:.0f}')} MB |")
    for tool, res in r.items():
      if "error" in res: lines.append(f"<!-- {tool} {problem} {n}: {res['error']} -->")
  bw = next((r[t]["bandwidth_gbs"] for _, _, r in rows for t in r if "bandwidth_gbs" in r[t]), float("nan"))
  lines.append(f"\nMemory bandwidth (numpy copy, same processes): {bw:.1f} GB/s.")
  (OUT / "sparse_scale.md").write_text("\n".join(lines) + "\n")
  print("\n".join(lines))

if __name__ == "__main__":
  main()

"""Linear algebra timings: tinyjax eager, tinyjax.jit, and jax.numpy.linalg eager and under jax.jit, in one run.

  python -m bench.linalg [--quick] [--sizes 8,64,512] [--only NAME,...] [--no-eager]

float32 throughout. For each function and n: the first call (trace + schedule + compile + run) and the steady state
(median of repeated calls, results realized / block_until_ready) for each variant; eager is compared with JAX's eager
call (JAX's jnp.linalg functions are jitted themselves: an eager call is their dispatch, plus the eager ops around them,
such as the slice of `solve(a, a[:, 0])`), jit with jax.jit; both sides take an array already on the device (a
realized Tensor, a jax.Array). Writes bench/out/linalg.md.
--quick: n = 8 and 64 only, fewer repeats. On the CPU the factorizations are LAPACK host calls, as JAX's
(docs/linalg.md); --ops times the tinygrad-op algorithms instead (other devices' path; its eigh/svd at n = 512 take
10^4 Jacobi rounds: skipped there).
"""
from __future__ import annotations
import argparse, os, statistics, time
from pathlib import Path
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import jax
import jax.numpy as jxn
import jax.scipy.linalg as jsl
import tinyjax
import tinyjax.numpy as jnp
import tinyjax.scipy.linalg as tsl
from tinyjax.lax import linalg as tll
from tinygrad import Tensor

def _spd(n: int) -> np.ndarray:
  a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
  return (a @ a.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)

def _gen(n: int) -> np.ndarray: return (np.random.default_rng(1).standard_normal((n, n)) + 2 * np.sqrt(n) * np.eye(n)).astype(np.float32)

# name, tinyjax function, JAX function, input maker, largest n
CASES = [
  ("cholesky", lambda a: jnp.linalg.cholesky(a), lambda a: jxn.linalg.cholesky(a), _spd, 512),
  ("solve", lambda a: jnp.linalg.solve(a, a[:, 0]), lambda a: jxn.linalg.solve(a, a[:, 0]), _gen, 512),
  ("inv", lambda a: jnp.linalg.inv(a), lambda a: jxn.linalg.inv(a), _gen, 512),
  ("slogdet", lambda a: jnp.linalg.slogdet(a)[1], lambda a: jxn.linalg.slogdet(a)[1], _gen, 512),
  ("solve_triangular", lambda a: tsl.solve_triangular(a, a, lower=True), lambda a: jsl.solve_triangular(a, a, lower=True),
   lambda n: np.tril(_spd(n)), 512),
  ("qr", lambda a: jnp.linalg.qr(a)[1], lambda a: jxn.linalg.qr(a)[1], _gen, 512),
  ("lu_factor", lambda a: tsl.lu_factor(a)[0], lambda a: jsl.lu_factor(a)[0], _gen, 512),
  ("eigh", lambda a: jnp.linalg.eigh(a)[0], lambda a: jxn.linalg.eigh(a)[0], _spd, 512),
  ("eigvals", lambda a: jnp.linalg.eigvals(a), lambda a: jxn.linalg.eigvals(a), _gen, 512),
  ("eig", lambda a: jnp.linalg.eig(a)[1], lambda a: jxn.linalg.eig(a)[1], _gen, 512),
  ("svd", lambda a: jnp.linalg.svd(a, compute_uv=False), lambda a: jxn.linalg.svd(a, compute_uv=False), _gen, 512),
  ("lstsq", lambda a: jnp.linalg.lstsq(a, a[:, 0])[0], lambda a: jxn.linalg.lstsq(a, a[:, 0])[0], _gen, 512),
  ("pinv", lambda a: jnp.linalg.pinv(a), lambda a: jxn.linalg.pinv(a), _gen, 512),
  ("expm", lambda a: tsl.expm(a), lambda a: jsl.expm(a), lambda n: _gen(n) / n, 512),
  ("grad logdet", tinyjax.grad(lambda a: jnp.linalg.slogdet(a)[1]), jax.grad(lambda a: jxn.linalg.slogdet(a)[1]), _gen, 512),
]

def _time(fn, reps: int) -> tuple[float, float]:
  t = time.perf_counter()
  fn()
  first = time.perf_counter() - t
  ts = []
  for _ in range(reps):
    t = time.perf_counter()
    fn()
    ts.append(time.perf_counter() - t)
  return first, statistics.median(ts)

def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true")
  ap.add_argument("--sizes", default=None)
  ap.add_argument("--only", default=None)
  ap.add_argument("--no-eager", action="store_true", help="skip eager tinyjax (it rebuilds the graph every call: minutes at n = 512)")
  ap.add_argument("--ops", action="store_true", help="the tinygrad-op algorithms (tinyjax.lax.linalg.HOST_LAPACK = False)")
  args = ap.parse_args()
  if args.ops: tll.HOST_LAPACK = False
  sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [8, 64] if args.quick else [8, 64, 512]
  rows = []
  for name, tj, jx, make, nmax in CASES:
    if args.only and name not in args.only.split(","): continue
    for n in sizes:
      if n > nmax or (args.ops and name in ("eigh", "svd") and n > 64): continue
      x = make(n)
      xt, xj = Tensor(x).realize(), jax.device_put(x)
      reps = (3 if args.quick else 5) if n >= 512 else (10 if args.quick else 40)   # (small calls: noisy, cheap)
      err = float("nan")
      def eager(): return tj(xt).realize()
      jit_fn = tinyjax.jit(tj)
      def tjit(): return jit_fn(xt).realize()
      jx_fn = jax.jit(jx)
      def jxrun(): return jx_fn(xj).block_until_ready()
      def jxeager(): return jax.block_until_ready(jx(xj))
      e1, e = _time(eager, reps) if not args.no_eager else (float("nan"), float("nan"))
      j1, j = _time(tjit, reps)
      x1, xs = _time(jxrun, reps)
      _, xe = _time(jxeager, reps)
      err = float(np.abs(tjit().numpy() - np.asarray(jxrun())).max() / max(1e-30, float(np.abs(np.asarray(jxrun())).max())))
      rows.append((name, n, e1, e, j1, j, x1, xs, xe, err))
      print(f"{name:18s} n={n:4d} eager {e1:8.3f}s/{e * 1e3:9.3f}ms  jit {j1:8.3f}s/{j * 1e3:9.3f}ms  "
            f"JAX jit {x1:7.3f}s/{xs * 1e3:8.3f}ms  JAX eager {xe * 1e3:8.3f}ms  jit/JAX {j / xs:5.1f}x  eager/JAX eager {e / xe:5.1f}x  "
            f"rel.err {err:.1e}", flush=True)
  out = Path(__file__).parent / "out" / "linalg.md"
  out.parent.mkdir(exist_ok=True)
  head = ["| function | n | eager 1st (s) | eager (ms) | tinyjax.jit 1st (s) | tinyjax.jit (ms) | JAX jit 1st (s) | JAX jit (ms) | "
          "JAX eager (ms) | jit / JAX jit | eager / JAX eager | max rel. diff vs JAX |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
  # rows of earlier runs (other sizes or functions) are kept; a measured (function, n) replaces its old row
  lines = out.read_text().splitlines()[2:] if out.exists() else []
  old = {tuple(c.strip() for c in l.split("|")[1:3]): l for l in lines if l.count("|") == head[0].count("|")}
  for r in rows:
    old[(r[0], str(r[1]))] = (f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3] * 1e3:.3f} | {r[4]:.2f} | {r[5] * 1e3:.3f} | {r[6]:.2f} | "
                              f"{r[7] * 1e3:.3f} | {r[8] * 1e3:.3f} | {r[5] / r[7]:.1f}x | {r[3] / r[8]:.1f}x | {r[9]:.1e} |")
  order = {c[0]: i for i, c in enumerate(CASES)}
  body = [old[k] for k in sorted(old, key=lambda k: (order.get(k[0], len(order)), int(k[1])))]
  out.write_text("\n".join(head + body) + "\n")
  print(f"wrote {out}")

if __name__ == "__main__":
  main()

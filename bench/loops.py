"""lax.scan of an RK4 step, and grad through it: tinyjax.jit vs jax.jit vs hand-unrolled tinygrad, in one run.

  python -m bench.loops [--quick] [--nested]

The state is y (64,), dy/dt = tanh(y A) - 0.1 y with A (64, 64): four matrix-vector products per RK4 step. For each
length L (10, 100, 1000, 10000) and for the final state and the gradient of sum(y_L^2) with respect to (y0, A):
  first      the first call of a new jitted function: tracing, scheduling, compiling and running the L steps (tinygrad's
             on-disk compile cache off and its in-process caches cleared; a new jax.jit for JAX)
  per call   median after warm-up (device synchronized)
  per step   per call / L; `1 step` is TinyJit replaying one RK4 step, for grad one step plus one step's vjp (what a
             reverse loop written by hand replays per step: a forward sweep saving the states, a backward sweep of
             vjps), the goal being per step <= 2x that
  hand       a Python loop of L RK4 steps written in tinygrad under TinyJit (unrolled: its graph and its compile grow with
             L; run up to L = 100, '-' beyond)
Writes bench/out/loops.json and prints a markdown table (docs/benchmarks.md, section "lax.scan").
--nested instead times loops holding loops (fori_loop of fori_loop) or LAPACK solves, per call against jax.jit.
"""
from __future__ import annotations
import argparse, json, time
import numpy as np
from bench.run import sync, fmt, cold_tinygrad, ROOT
import jax, jax.numpy as jnp
from tinygrad import Tensor, TinyJit
import tinyjax
from tinyjax import lax as tl

N, H = 64, 0.01
RNG = np.random.default_rng(0)
A0 = (RNG.standard_normal((N, N)) / 8).astype(np.float32)
Y0 = RNG.standard_normal(N).astype(np.float32)

def rk4(f, y, h=H):
  k1 = f(y)
  k2 = f(y + h / 2 * k1)
  k3 = f(y + h / 2 * k2)
  k4 = f(y + h * k3)
  return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

def tj_final(L):
  def sim(y0, A): return tl.scan(lambda y, _: (rk4(lambda v: (v @ A).tanh() - 0.1 * v, y), None), y0, None, length=L)[0]
  return sim

def jax_final(L):
  def sim(y0, A): return jax.lax.scan(lambda y, _: (rk4(lambda v: jnp.tanh(v @ A) - 0.1 * v, y), None), y0, None, length=L)[0]
  return sim

def loss(sim): return lambda y0, A: (sim(y0, A) ** 2).sum()

def hand(L, grad: bool):
  def f(v, A): return (v @ A).tanh() - 0.1 * v
  def run(y0, A):
    y = y0
    for _ in range(L): y = rk4(lambda v: f(v, A), y)
    if not grad: return y.realize()
    gy, gA = (y * y).sum().gradient(y0, A)
    return gy.realize(), gA.realize()
  return run

def timeit(fn, reps: int) -> float:
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter()
    fn()
    sync()
    ts.append(time.perf_counter() - t0)
  return float(np.median(ts))

def first(fn) -> float:
  t0 = time.perf_counter()
  fn()
  sync()
  return time.perf_counter() - t0

def one_step(grad: bool) -> float:
  """TinyJit replaying one RK4 step (grad: one step and one step's vjp)."""
  A = Tensor(A0).realize()
  if grad:
    step = TinyJit(lambda y, g: tinyjax.vjp(lambda v: rk4(lambda u: (u @ A).tanh() - 0.1 * u, v), y)[1](g)[0].realize())
    args = (Tensor(Y0).realize(), Tensor(Y0).realize())
  else:
    step = TinyJit(lambda y: rk4(lambda u: (u @ A).tanh() - 0.1 * u, y).realize())
    args = (Tensor(Y0).realize(),)
  for _ in range(3): step(*args)
  return timeit(lambda: step(*args), 200) + (one_step(False) if grad else 0.0)

# ---- loops holding loops or LAPACK calls (--nested) ------------------------------------------------------------------

NS = 16
B0 = (RNG.standard_normal((NS, NS)) / 4).astype(np.float32)

def nested_fori(np_, lax, outer: int, inner: int):
  """outer steps, each a fori_loop of `inner` steps of y <- tanh(y A) + i."""
  def f(y0, a):
    return lax.fori_loop(0, outer, lambda i, y: lax.fori_loop(0, inner, lambda j, z: np_.tanh(z @ a) + 0.01 * j, y) * 0.5 + i * 1e-3, y0)
  return f

def solve_loop(np_, lax, steps: int):
  """steps of two solves with an (NS, NS) matrix and a product (the shape of the LQR backward pass in
  examples/ports/jaxexamples_control.py)."""
  def f(y0, a):
    m = a + 2 * np_.eye(NS, dtype=a.dtype)
    def step(i, y):
      k = np_.linalg.solve(m + i * 1e-3, y)
      return np_.linalg.solve(m.T, k) * 0.5 + a @ k * 0.1
    return lax.fori_loop(0, steps, step, y0)
  return f

def nested_main():
  """tinyjax.jit against jax.jit per call (median, with the spread over 5 repeats of the median) on loops holding loops
  or solves."""
  y0 = np.stack([Y0[:NS]] * 4, 1).astype(np.float32)   # (NS, 4)
  cases = [("fori(100) of fori(10)", lambda np_, lax: nested_fori(np_, lax, 100, 10), y0.T.copy()),
           ("fori(10) of fori(100)", lambda np_, lax: nested_fori(np_, lax, 10, 100), y0.T.copy()),
           ("fori(100) of 2 solves", lambda np_, lax: solve_loop(np_, lax, 100), y0)]
  print("| case | tinyjax | JAX | ratio | check |\n|---|---|---|---|---|")
  for name, make, y in cases:
    tj, jj = tinyjax.jit(make(tinyjax.numpy, tl)), jax.jit(make(jnp, jax.lax))
    yt, at = Tensor(y).realize(), Tensor(B0).realize()
    got, want = tj(yt, at).numpy(), np.asarray(jj(y, B0))
    ok = bool(np.allclose(got, want, rtol=1e-4, atol=1e-5))
    t = [timeit(lambda: tj(yt, at).realize(), 20) for _ in range(5)]
    j = [timeit(lambda: jax.block_until_ready(jj(y, B0)), 20) for _ in range(5)]
    print(f"| {name} | {fmt(float(np.median(t)))} ({fmt(min(t))}-{fmt(max(t))}) | {fmt(float(np.median(j)))} ({fmt(min(j))}-{fmt(max(j))}) "
          f"| {np.median(t) / np.median(j):.2f}x | {ok} |", flush=True)

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true")
  ap.add_argument("--nested", action="store_true", help="only the loops holding loops or solves")
  args = ap.parse_args()
  if args.nested: return nested_main()
  lengths = [10, 100, 1000] if args.quick else [10, 100, 1000, 10000]
  rows = []
  for grad in (False, True):
    step = one_step(grad)
    for L in lengths:
      reps = max(3, min(20, 2000 // L))
      y0, A = Tensor(Y0).realize(), Tensor(A0).realize()
      cold_tinygrad()
      tj = tinyjax.jit(tinyjax.grad(loss(tj_final(L)), (0, 1)) if grad else tj_final(L))
      r = {"what": "grad" if grad else "final state", "L": L, "1 step": step}
      r["tinyjax first"] = first(lambda: Tensor.realize(*tinyjax.tree_util.tree_leaves(tj(y0, A))))
      r["tinyjax"] = timeit(lambda: Tensor.realize(*tinyjax.tree_util.tree_leaves(tj(y0, A))), reps)
      jj = jax.jit(jax.grad(loss(jax_final(L)), (0, 1)) if grad else jax_final(L))
      r["JAX first"] = first(lambda: jax.block_until_ready(jj(Y0, A0)))
      r["JAX"] = timeit(lambda: jax.block_until_ready(jj(Y0, A0)), reps)
      got = [np.asarray(t.numpy()) for t in tinyjax.tree_util.tree_leaves(tj(y0, A))]
      want = [np.asarray(t) for t in jax.tree_util.tree_leaves(jj(Y0, A0))]
      r["check"] = all(np.allclose(g, w, rtol=2e-4, atol=2e-5 * np.abs(w).max()) for g, w in zip(got, want, strict=True))
      if L <= 100:
        cold_tinygrad()
        yh, Ah = Tensor(Y0).realize(), Tensor(A0).realize()
        hj = TinyJit(hand(L, grad))
        r["hand first"] = first(lambda: hj(yh, Ah)) + first(lambda: hj(yh, Ah))   # TinyJit runs, then captures
        r["hand"] = timeit(lambda: hj(yh, Ah), reps)
      rows.append(r)
      print(row(r), flush=True)
  (ROOT / "bench" / "out").mkdir(exist_ok=True)
  (ROOT / "bench" / "out" / "loops.json").write_text(json.dumps(rows, indent=1))
  print("\n" + table(rows))

COLS = ["what", "L", "tinyjax first", "JAX first", "hand first", "tinyjax", "JAX", "hand", "tinyjax / step", "1 step", "step ratio", "check"]

def cells(r) -> list[str]:
  per = r["tinyjax"] / r["L"]
  extra = {"tinyjax / step": fmt(per), "step ratio": f"{per / r['1 step']:.2f}x"}
  return [extra[c] if c in extra else fmt(r[c]) if isinstance(r.get(c), float) else str(r.get(c, "-")) for c in COLS]

def row(r) -> str: return "  ".join(cells(r))

def table(rows) -> str:
  return "\n".join(["| " + " | ".join(COLS) + " |", "|" + "---|" * len(COLS)] + ["| " + " | ".join(cells(r)) + " |" for r in rows])

if __name__ == "__main__":
  main()

"""Benchmark tinyjax.spjacobian against dense Jacobians and the JAX sparse-Jacobian libraries asdex and sparsejac.

  .venv/bin/python bench/bench_sparse.py [--quick]      (needs `.venv/bin/pip install asdex sparsejac`)

Problems (float32 throughout, zero Dirichlet boundaries via pad):
  1-D Bratu  F(u)_i = (u[i-1] - 2u[i] + u[i+1]) / h^2 + exp(u[i]),          n = 1e3, 1e4, 1e5
  2-D Bratu  the 5-point stencil on a k x k grid, u flat of size n = k*k,   k = 32, 100, 316
--quick runs only the smallest size of each.

Setup table (one-time work per input shape):
  colors      tinyjax J.ncolors (mode) / asdex ColoredPattern.num_colors / sparsejac's coloring (read from its closure)
  tj setup    tinyjax.spjacobian(f, x): trace + sparsity detection + colorings + seeds
  tj detect   of which: detect() on the traced graph
  tj color    of which: color_columns + color_rows (mode='auto' colors both and keeps the fewer)
  tj 1st      first J(x).realize(): tinygrad kernel compilation
  asdex setup asdex.jacobian_coloring(f, x): jaxpr detection + coloring (numba warmed up beforehand)
  sj setup    sparsejac.jacfwd(f, pattern): networkx coloring only, the pattern is given (tinyjax's)
  jit 1st     first call of jax.jit(asdex ...) / jax.jit(sparsejac ...): XLA compilation

Per-Jacobian table (median seconds per call after warm-up; a fresh lazy result per tinygrad call, inputs cycled
over 3 distinct realized vectors; each variant timed in its own block of back-to-back calls; tinygrad times include a device synchronize, JAX ones block_until_ready):
  tj          tinyjax J(x).realize()                  trace (vmap of jvp over the seeds) + schedule + kernels
  tj trace    J(x) without realize                    building the lazy result only (Python tracing overhead)
  tj TinyJit  TinyJit(lambda x: J(x).realize())       replay of the captured kernels (~ kernel time)
  tj jit no-gather  TinyJit(lambda x: J._compressed(x).realize())   diagnostic: the batched JVP kernels without the
              final gather of the nnz values from the (ncolors, m) compressed matrix (J(x) = compressed.flatten()[index])
  tj dense    tinyjax.jacfwd(f)(x).realize()          dense (n, n) Jacobian, n <= 2000 only
  jax dense   jax.jit(jax.jacfwd(f))(x)               dense (n, n), n <= 5000 only
  asdex       jax.jit(asdex.jacobian_from_coloring(f, coloring))(x)   (BCOO)
  sparsejac   jax.jit(sparsejac.jacfwd(f, pattern))(x)                  (BCOO)
  k           kernels run by one tj realize (GlobalCounters.kernel_count)
  check       nonzero values and pattern vs the analytic Jacobian (float64 scipy), rtol 1e-5: tinyjax plain, its
              TinyJit replay on a new input, asdex, sparsejac; at the smallest size also vs dense jax.jacfwd
"""
from __future__ import annotations
import argparse, gc, os, platform, statistics, time, traceback
from importlib.metadata import version
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import scipy, scipy.sparse as sp
import jax, jax.numpy as jnp
from jax.experimental import sparse as jsparse
import asdex, sparsejac
from tinygrad import Tensor, TinyJit, Device
from tinygrad.helpers import GlobalCounters
import tinyjax
import tinyjax.sparse.jacobian as tj_jac

# ---- timers around tinyjax's setup phases (wrapping the module globals spjacobian calls; nothing else changes) ----
PHASES: dict[str, float] = {}
def _timed(name, fn):
  def wrapped(*a, **k):
    t = time.perf_counter()
    try: return fn(*a, **k)
    finally: PHASES[name] = PHASES.get(name, 0.0) + time.perf_counter() - t
  return wrapped
tj_jac.detect = _timed("detect", tj_jac.detect)
tj_jac.color_columns = _timed("color", tj_jac.color_columns)
tj_jac.color_rows = _timed("color", tj_jac.color_rows)


# ---- problems: (tinygrad f, jax f, analytic float64 scipy Jacobian) -------------------------------------------------
def bratu1d(n):
  h2 = (1.0 / (n + 1)) ** 2
  def f_tg(u):
    up = u.pad(((1, 1),))
    return (up[:-2] - 2 * u + up[2:]) / h2 + u.exp()
  def f_jax(u):
    up = jnp.pad(u, 1)
    return (up[:-2] - 2 * u + up[2:]) / h2 + jnp.exp(u)
  def ref(u):
    u = u.astype(np.float64)
    return sp.diags([np.full(n - 1, 1 / h2), -2 / h2 + np.exp(u), np.full(n - 1, 1 / h2)], [-1, 0, 1], format="csr")
  return f_tg, f_jax, ref

def bratu2d(k):
  h2 = (1.0 / (k + 1)) ** 2
  def f_tg(u):
    U = u.reshape(k, k); P = U.pad(((1, 1), (1, 1)))
    return ((P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * U) / h2 + U.exp()).flatten()
  def f_jax(u):
    U = u.reshape(k, k); P = jnp.pad(U, 1)
    return ((P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * U) / h2 + jnp.exp(U)).ravel()
  def ref(u):
    u = u.astype(np.float64)
    T = sp.diags([np.ones(k - 1), np.ones(k - 1)], [-1, 1])
    off = (sp.kron(sp.identity(k), T) + sp.kron(T, sp.identity(k))) / h2
    return (off + sp.diags(-4 / h2 + np.exp(u))).tocsr()
  return f_tg, f_jax, ref

PROBLEMS = {"1-D Bratu": (bratu1d, lambda s: s, [1000, 10_000, 100_000]),
            "2-D Bratu": (bratu2d, lambda k: k * k, [32, 100, 316])}
TJ_DENSE_MAX, JAX_DENSE_MAX = 2000, 5000


# ---- helpers -------------------------------------------------------------------------------------------------------
def sync(): Device[Device.DEFAULT].synchronize()

def fmt(s) -> str:
  if not isinstance(s, float): return str(s)
  return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"

def timed_once(fn):
  t = time.perf_counter(); out = fn(); return out, time.perf_counter() - t

def timeit(fns: dict, warmup=2, budget=3.0, min_reps=5, max_reps=300) -> dict:
  """Median seconds per call of each fn, timed in its own block of back-to-back calls after `warmup` calls.
  Not round-robin: on this loaded 2-core machine the first JAX call after ~30 ms of busy Python (tinygrad tracing,
  or plain numpy work) takes ~2-5 ms longer (waking XLA's worker threads), which would be charged to whichever
  JAX variant happened to follow the tinygrad one."""
  out = {}
  for k, fn in fns.items():
    gc.collect()   # tinygrad's realize scans live Tensors: start every variant from the same state
    for _ in range(warmup): fn()
    times, end = [], time.perf_counter() + budget / len(fns)
    for rep in range(max_reps):
      if rep >= min_reps and time.perf_counter() > end: break
      t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    out[k] = statistics.median(times)
  return out

def cycler(items):
  state = {"i": 0}
  def nxt():
    state["i"] = (state["i"] + 1) % len(items); return items[state["i"]]
  return nxt

def agrees(got: sp.spmatrix, ref: sp.spmatrix, rtol=1e-5) -> bool:
  """Same structural pattern (stored entries) and every value within rtol of the reference (elementwise)."""
  got, ref = (sp.csr_matrix(M, dtype=np.float64) for M in (got, ref))
  for M in (got, ref): M.sum_duplicates(); M.sort_indices()
  if got.shape != ref.shape or not (np.array_equal(got.indptr, ref.indptr) and np.array_equal(got.indices, ref.indices)):
    return False
  return bool(np.all(np.abs(got.data - ref.data) <= rtol * np.abs(ref.data)))

def bcoo_to_scipy(B, shape) -> sp.csr_matrix:
  idx = np.asarray(B.indices)
  return sp.csr_matrix((np.asarray(B.data, dtype=np.float64), (idx[:, 0], idx[:, 1])), shape=shape)

def ok(b) -> str: return "OK" if b else "FAIL"


# ---- one size --------------------------------------------------------------------------------------------------------
def run_size(pname, make, size, n, first, notes, budget):
  f_tg, f_jax, ref_fn = make(size)
  rng = np.random.default_rng(size)
  X_np = [rng.uniform(0.0, 1.0, n).astype(np.float32) for _ in range(4)]   # 3 for timing, 1 held out for checks
  X_tg = [Tensor(x).realize() for x in X_np]
  X_jx = [jnp.asarray(x) for x in X_np]
  ref = ref_fn(X_np[0])
  checks, srow, trow = {}, {}, {}

  # tinyjax setup
  PHASES.clear()
  J, srow["tj setup"] = timed_once(lambda: tinyjax.spjacobian(f_tg, X_tg[0]))
  srow["tj detect"], srow["tj color"] = PHASES.get("detect", 0.0), PHASES.get("color", 0.0)
  _, srow["tj 1st"] = timed_once(lambda: (J(X_tg[0]).realize(), sync()))
  checks["tj"] = agrees(J.to_scipy(X_tg[0]), ref)

  # asdex
  coloring, srow["asdex setup"] = timed_once(lambda: asdex.jacobian_coloring(f_jax, X_jx[0]))
  asdex_fn = jax.jit(asdex.jacobian_from_coloring(f_jax, coloring))
  out, t_a = timed_once(lambda: asdex_fn(X_jx[0]).data.block_until_ready())
  checks["asdex"] = agrees(bcoo_to_scipy(asdex_fn(X_jx[0]), (n, n)), ref)

  # sparsejac, on tinyjax's detected pattern
  P = J.pattern.tocoo()
  S = jsparse.BCOO((jnp.ones(P.nnz, jnp.float32), jnp.asarray(np.stack([P.row, P.col], 1).astype(np.int32))), shape=(n, n))
  sj, srow["sj setup"] = timed_once(lambda: sparsejac.jacfwd(f_jax, S))
  cells = dict(zip(sj.__code__.co_freevars, (c.cell_contents for c in sj.__closure__)))
  sj_colors = int(np.asarray(cells["input_coloring"]).max()) + 1 if "input_coloring" in cells else "?"
  sj_fn = jax.jit(sj)
  _, t_s = timed_once(lambda: sj_fn(X_jx[0]).data.block_until_ready())
  checks["sj"] = agrees(bcoo_to_scipy(sj_fn(X_jx[0]), (n, n)), ref)
  srow["jit 1st"] = f"{fmt(t_a)} / {fmt(t_s)}"
  srow["colors"] = f"{J.ncolors} ({J.mode}) / {coloring.num_colors} ({coloring.mode}) / {sj_colors}"

  # per-Jacobian timings
  nxt_p, nxt_t, nxt_j, nxt_d = (cycler(X_tg[:3]) for _ in range(4))
  nxt_ja, nxt_js, nxt_jd = (cycler(X_jx[:3]) for _ in range(3))
  fns = {"tj": lambda: (J(nxt_p()).realize(), sync()),
         "tj trace": lambda: J(nxt_t()),
         "asdex": lambda: asdex_fn(nxt_ja()).data.block_until_ready(),
         "sparsejac": lambda: sj_fn(nxt_js()).data.block_until_ready()}

  jit_J = TinyJit(lambda x: J(x).realize())
  try:   # TinyJit runs the function on call 1, captures on call 2, replays from call 3
    for i in range(3): jit_J(X_tg[i])
    got = jit_J(X_tg[3]).numpy()   # a replay on an input it has not seen
    checks["tinyjit"] = agrees(sp.csr_matrix((got, J.pattern.indices, J.pattern.indptr), shape=J.shape), ref_fn(X_np[3]))
    fns["tj TinyJit"] = lambda: (jit_J(nxt_j()), sync())
    # diagnostic: the same TinyJit without the final gather of the nonzeros (J._compressed: the batched JVPs only)
    jit_C = TinyJit(lambda x: J._compressed(x).realize())
    for i in range(3): jit_C(X_tg[i])
    nxt_c = cycler(X_tg[:3])
    fns["tj jit no-gather"] = lambda: (jit_C(nxt_c()), sync())
  except Exception as e:
    checks["tinyjit"] = False
    notes.append(f"TinyJit failed for {pname} n={n}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}")

  if n <= TJ_DENSE_MAX:
    dense_tj = tinyjax.jacfwd(f_tg)
    _, t = timed_once(lambda: (dense_tj(X_tg[0]).realize(), sync()))
    notes.append(f"{pname} n={n}: first tinyjax.jacfwd call (compile) {fmt(t)}")
    fns["tj dense"] = lambda: (dense_tj(nxt_d()).realize(), sync())
  if n <= JAX_DENSE_MAX:
    dense_jax = jax.jit(jax.jacfwd(f_jax))
    D = np.asarray(dense_jax(X_jx[0]))
    fns["jax dense"] = lambda: dense_jax(nxt_jd()).block_until_ready()
    if first:   # dense JAX as a second reference at the smallest size, and tinyjax's dense result too
      checks["vs jax.jacfwd"] = agrees(J.to_scipy(X_tg[0]), sp.csr_matrix(D * ref.astype(bool).toarray()))
      checks["vs jax.jacfwd"] &= bool(np.count_nonzero(D) <= ref.nnz)
      if n <= TJ_DENSE_MAX: checks["tj dense"] = agrees(sp.csr_matrix(dense_tj(X_tg[0]).numpy()), ref)

  t = timeit(fns, budget=budget)
  trow.update(t)
  trow["tj TinyJit"] = t.get("tj TinyJit", "FAIL")
  GlobalCounters.reset(); lazy = J(X_tg[1]); GlobalCounters.reset(); lazy.realize(); sync()
  trow["k"] = GlobalCounters.kernel_count
  trow["check"] = " ".join(f"{k}:{ok(v)}" for k, v in checks.items())

  setup = [pname, n, J.nnz, *(srow[c] for c in SETUP_KEYS)]
  times = [pname, n, *(trow.get(c, "-") for c in TIME_HEADER[2:])]
  return setup, times, all(checks.values())

SETUP_HEADER = ["problem", "n", "nnz", "colors tj / asdex / sj", "tj setup", "tj detect", "tj color", "tj 1st",
                "asdex setup", "sj setup", "jit 1st asdex / sj"]
SETUP_KEYS = ["colors", "tj setup", "tj detect", "tj color", "tj 1st", "asdex setup", "sj setup", "jit 1st"]
TIME_HEADER = ["problem", "n", "tj", "tj trace", "tj TinyJit", "tj jit no-gather", "tj dense", "jax dense", "asdex", "sparsejac", "k", "check"]


def warm_up() -> str:
  """One-time costs that would otherwise land on the first size: numba compilation in asdex's coloring, networkx and
  jax.experimental.sparse imports, tinygrad's first kernels."""
  parts = []
  for pname, (make, to_n, sizes) in PROBLEMS.items():
    f_tg, f_jax, _ = make(8 if pname.startswith("1") else 4)
    n = 8 if pname.startswith("1") else 16
    x = np.linspace(0, 1, n, dtype=np.float32)
    _, t1 = timed_once(lambda: tinyjax.spjacobian(f_tg, Tensor(x).realize())(Tensor(x).realize()).realize())
    _, t2 = timed_once(lambda: asdex.jacobian_coloring(f_jax, jnp.asarray(x)))
    P = sp.identity(n).tocoo()
    S = jsparse.BCOO((jnp.ones(n), jnp.asarray(np.stack([P.row, P.col], 1))), shape=(n, n))
    _, t3 = timed_once(lambda: sparsejac.jacfwd(f_jax, S))
    parts.append(f"{pname}: tinyjax {fmt(t1)}, asdex {fmt(t2)}, sparsejac {fmt(t3)}")
  return "warm-up on tiny instances (not in the table): " + "; ".join(parts)


def machine_info() -> list[str]:
  cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
  mem = next((l.split(":", 1)[1].strip() for l in open("/proc/meminfo") if l.startswith("MemTotal")), "?")
  return [f"CPU: {cpu}, {os.cpu_count()} cores, {mem} RAM; {platform.platform()}; Python {platform.python_version()}",
          f"tinygrad {version('tinygrad')} (device {Device.DEFAULT}), tinyjax {tinyjax.__version__}, jax {jax.__version__} "
          f"({jax.default_backend()}), asdex {version('asdex')}, sparsejac {version('sparsejac')}, "
          f"numpy {np.__version__}, scipy {scipy.__version__}",
          f"load average at start (1/5/15 min): {' '.join(open('/proc/loadavg').read().split()[:3])}"]

def table(header, rows) -> tuple[str, str]:
  widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
  line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
  text = line(header) + "\n" + "  ".join("-" * w for w in widths) + "\n" + "\n".join(line(r) for r in rows)
  md = ("| " + " | ".join(header) + " |\n|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|\n"
        + "".join("| " + " | ".join(str(c) for c in r) + " |\n" for r in rows))
  return text, md

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true", help="only the smallest size of each problem")
  args = ap.parse_args()
  info = machine_info()
  print("\n".join(info), flush=True)
  t0 = time.perf_counter()
  notes = [warm_up()]
  print(notes[0], flush=True)
  srows, trows, all_ok = [], [], True
  for pname, (make, to_n, sizes) in PROBLEMS.items():
    for i, size in enumerate(sizes[:1] if args.quick else sizes):
      s, t, good = run_size(pname, make, size, to_n(size), i == 0, notes, budget=4.0)
      srows.append([fmt(c) for c in s]); trows.append([fmt(c) for c in t]); all_ok &= good
      print(f"  done: {pname} n={to_n(size)} ({time.perf_counter() - t0:.0f} s)", flush=True)
      gc.collect()
  (st, smd), (tt, tmd) = table(SETUP_HEADER, srows), table(TIME_HEADER, trows)
  verdict = f"verification: {'OK' if all_ok else 'FAIL'}"
  print("\nSetup (one-time)\n" + st + "\n\nPer Jacobian (median after warm-up)\n" + tt + "\n\n" + verdict)
  for n in notes[1:]: print(n)
  end = f"load average at end: {' '.join(open('/proc/loadavg').read().split()[:3])}; total {time.perf_counter() - t0:.0f} s"
  print(end)
  os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
  with open(os.path.join(os.path.dirname(__file__), "out", "sparse.md"), "w") as fh:
    fh.write("# tinyjax.spjacobian benchmark\n\n" + "".join(f"- {l}\n" for l in info + [end]) + "\n```\n"
             + __doc__.split("\n", 3)[3].strip("\n") + "\n```\n\n## Setup (one-time)\n\n" + smd
             + "\n## Per Jacobian (median after warm-up)\n\n" + tmd + f"\n{verdict}\n\n"
             + "".join(f"- {n}\n" if "\n" not in n else f"\n```\n{n}\n```\n" for n in notes))
  print("wrote bench/out/sparse.md")

if __name__ == "__main__": main()

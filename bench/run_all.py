"""tinyjax (tinyjax.jit) vs JAX (jax.jit) vs hand-written tinygrad (TinyJit), side by side in one run.

  bash scripts/bench.sh [--quick]          (or: .venv/bin/python bench/run_all.py [--quick])

A full run rewrites docs/benchmarks.md and docs/benchmarks.png; --quick (smaller sparse problems, shorter timing
budgets) writes bench/out/benchmarks_quick.md and .png instead. Both write the raw numbers to bench/out/*.json.

Columns (float32 throughout; every variant gets its own realized copies of the inputs):
  tinyjax     tinyjax.jit(transform(f))(*args): median seconds per call after warm-up (replay of the captured kernels
              into freshly allocated outputs; device synchronize included)
  TinyJit(tj) diagnostic: the same tinyjax transform under a plain TinyJit(lambda *a: f(*a).realize()), median
              replay: tinyjax's kernels without tinyjax.jit's per-call work (signature lookup, allocating new output
              buffers so that results never alias); tinyjax - TinyJit(tj) is that wrapper's cost
  JAX         jax.jit(jax-transform(f_jnp))(*args), median after warm-up, block_until_ready
  hand        the same result written by hand in tinygrad (closed-form derivatives / hand-batched code / analytic
              sparse Jacobian) under TinyJit, median replay time ('-': no hand-written version)
  JAX dense   spjacobian rows only: jax.jit(jax.jacfwd(f_jnp)), the dense (m, n) Jacobian ('-': n > {DENSE_MAX})
  1st *       the first call of a fresh jitted function: tracing + scheduling + compiling + running. tinygrad runs
              with its on-disk compile cache off (CCACHE=0) and its in-process schedule/program caches cleared before
              each first call, so kernels shared between variants are compiled again; every JAX first call is a new
              jax.jit of a new function (JAX's persistent compilation cache is off by default)
  setup       spjacobian rows only: tinyjax.spjacobian(f, x) (trace, sparsity detection, coloring) / asdex
              jacobian_coloring(f, x); one-time work per input shape, not part of the first call
  k *         kernels per call: tinyjax len(jitted.kernels(...)); hand: GlobalCounters.kernel_count around one TinyJit
              replay; JAX: operations left in the ENTRY computation of XLA's optimized HLO (fusions, dots, copies...;
              parameters, constants, tuples and bitcasts not counted), roughly the kernels XLA:CPU launches
  tj/JAX, tj/hand   ratios of the per-call medians (> 1: tinyjax is slower)
  check       the tinyjax result vs JAX's (allclose, rtol 2e-4, atol 2e-5 x max|ref|); the hand result too
"""
from __future__ import annotations
import argparse, gc, json, math, os, platform, re, statistics, subprocess, sys, time, traceback
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("CCACHE", "0")   # tinygrad's on-disk compile cache: off, so first calls really compile
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "examples")]

import numpy as np
import scipy, scipy.sparse as sp
import jax, jax.numpy as jnp
from tinygrad import Tensor, TinyJit, Device
from tinygrad.helpers import GlobalCounters
import tinygrad.codegen, tinygrad.schedule, tinygrad.engine.realize
import tinyjax
import bench_autodiff as ad      # the networks, their jnp twins and their closed-form derivatives
import problems                  # examples/problems.py: Bratu 1-D / 2-D, bicycle multiple shooting

DENSE_MAX = 5000                 # dense jax.jacfwd on spjacobian problems only up to n (n x n float32 = 100 MB)
RTOL, ATOL = 2e-4, 2e-5

# ---- helpers -------------------------------------------------------------------------------------------------------

def sync(): Device[Device.DEFAULT].synchronize()

def fmt(s) -> str:
  if not isinstance(s, float): return str(s)
  return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"

def cold_tinygrad():
  """Forget tinygrad's in-process caches (schedules, compiled programs, loaded binaries), so that a first call compiles
  its kernels even if another variant compiled the same ones earlier in this run."""
  tinygrad.schedule.schedule_cache.clear()
  tinygrad.codegen.to_program_cache.clear()
  tinygrad.engine.realize.runtime_cache.clear()

def timed(fn):
  t = time.perf_counter(); out = fn(); return out, time.perf_counter() - t

def median_time(fn, budget: float, warmup=2, min_reps=7, max_reps=1000) -> float:
  """Median seconds per call of fn() after `warmup` calls, repeated for `budget` seconds (within min/max_reps). Each
  variant runs in its own block: on a loaded 2-core machine XLA's first call after busy Python is slower (its worker
  threads wake up), which round-robin timing would charge to JAX (see bench/bench_sparse.py)."""
  gc.collect()   # tinygrad's realize scans live Tensors: start every variant from the same state
  for _ in range(warmup): fn()
  times, end = [], time.perf_counter() + budget
  while len(times) < min_reps or (len(times) < max_reps and time.perf_counter() < end):
    t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
  return statistics.median(times)

def median_times_interleaved(fns: dict, budget: float, warmup=2, min_reps=7, max_reps=1000) -> dict:
  """Median seconds per call of each fn, round-robin (one call of each per round) for len(fns) * budget seconds, so
  that the tinygrad variants of a case see the same machine load."""
  gc.collect()
  for fn in fns.values():
    for _ in range(warmup): fn()
  times, end = {k: [] for k in fns}, time.perf_counter() + budget * len(fns)
  for rep in range(max_reps):
    if rep >= min_reps and time.perf_counter() > end: break
    for k, fn in fns.items():
      t = time.perf_counter(); fn(); times[k].append(time.perf_counter() - t)
  return {k: statistics.median(v) for k, v in times.items()}

def tg_leaves(tree) -> list:
  if isinstance(tree, (tuple, list)): return [l for t in tree for l in tg_leaves(t)]
  if isinstance(tree, dict): return [l for k in sorted(tree) for l in tg_leaves(tree[k])]
  return [tree]

def realize_all(tree) -> list[Tensor]:
  ls = tg_leaves(tree); Tensor.realize(*ls); return ls

def allclose(got: list[np.ndarray], ref: list[np.ndarray]) -> tuple[bool, str]:
  if len(got) != len(ref): return False, f"{len(got)} outputs, JAX has {len(ref)}"
  worst = 0.0
  for a, b in zip(got, ref):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape: return False, f"shape {a.shape} vs JAX {b.shape}"
    tol = ATOL * max(1.0, float(np.abs(b).max(initial=0))) + RTOL * np.abs(b)
    worst = max(worst, float(np.max(np.abs(a - b) / tol, initial=0)))
  return worst <= 1, f"max |err| / tol = {worst:.2g}"

def hlo_ops(jitted, args) -> int:
  """Operations in the ENTRY computation of XLA's optimized HLO (what XLA:CPU runs, roughly one kernel each)."""
  text = jitted.lower(*args).compile().as_text()
  entry = text[text.index("\nENTRY"):]
  entry = entry[:entry.index("\n}")]
  skip = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}
  ops = [m.group(1) for line in entry.splitlines()[1:] if (m := re.search(r"=\s.*?\s([a-z][\w-]*)\(", line))]
  return sum(op not in skip for op in ops)

# ---- cases ---------------------------------------------------------------------------------------------------------

@dataclass
class Case:
  name: str
  size: str
  inputs: list[np.ndarray]
  tj: Callable                          # on Tensors: the tinyjax transform (jitted by the benchmark)
  jx: Callable                          # on jnp arrays: the JAX transform
  hand: Callable | None = None          # on Tensors: hand-written tinygrad (TinyJit)
  # spjacobian rows: one-time setup returning the function to jit (timed separately), a dense JAX variant, and
  # converters of each result to a list of arrays comparable with JAX's
  tj_setup: Callable | None = None      # inputs (Tensors) -> function to jit
  jx_setup: Callable | None = None      # inputs (jnp) -> function to jit
  jx_dense: Callable | None = None
  to_np: Callable | None = None         # (tinyjax output) -> list[np.ndarray] comparable with ref_np(JAX output)
  ref_np: Callable | None = None
  hand_np: Callable | None = None
  sparse: bool = False
  state: dict = field(default_factory=dict)

def mlp_vmap_case(B=256, d=64) -> Case:
  rng = np.random.default_rng(1)
  W1, W2 = (rng.standard_normal((d, d), dtype=np.float32) / np.sqrt(d) for _ in range(2))
  b1, b2 = (rng.standard_normal(d, dtype=np.float32) * 0.1 for _ in range(2))
  X = rng.standard_normal((B, d), dtype=np.float32)
  def mlp(x, W1, b1, W2, b2): return (x @ W1 + b1).relu() @ W2 + b2             # one example x: (d,)
  def mlp_j(x, W1, b1, W2, b2): return jax.nn.relu(x @ W1 + b1) @ W2 + b2
  ax = (0, None, None, None, None)
  return Case("batched MLP (vmap)", f"B={B}, {d}-{d}-{d}", [X, W1, b1, W2, b2],
              tj=tinyjax.vmap(mlp, in_axes=ax), jx=jax.vmap(mlp_j, in_axes=ax),
              hand=mlp)   # mlp written with x @ W works unchanged on a batch X: (B, d): the hand-batched version

def autodiff_cases(n=32, B=64) -> list[Case]:
  jac = {c.name: c for c in ad.jac_cases(n)}
  pe = ad.mlp_cases(B, per_example=True, full_grad=False)[0]
  out = [Case("per-example grads (vmap grad)", f"B={B}, MLP 32-64-8", pe.inputs, pe.tj, pe.jx, pe.hand)]
  for key, name in [("jacfwd g", "jacfwd"), ("jacrev g", "jacrev"), ("hessian f", "hessian"), ("hvp jvp(grad f)", "HVP jvp(grad f)")]:
    c = jac[key]
    out.append(Case(name, f"n={n}, hidden {ad.HIDDEN}", c.inputs, c.tj, c.jx, c.hand))
  return out

def bcoo_to_scipy(B, shape) -> sp.csr_matrix:
  idx = np.asarray(B.indices)
  return sp.csr_matrix((np.asarray(B.data, dtype=np.float64), (idx[:, 0], idx[:, 1])), shape=shape)

def sparse_case(name, size, x0: np.ndarray, f_tg, f_jnp, m: int, hand=None, hand_layout=None) -> Case:
  """spjacobian of f at inputs like x0. tinyjax: jit(spjacobian(f, x0)) -> the nonzeros in J.pattern's CSR order;
  JAX: jit(asdex.jacobian_from_coloring(f, asdex.jacobian_coloring(f, x0))) -> BCOO. Both compared as scipy matrices
  (entries of either pattern; the union must agree). hand_layout(values) -> scipy matrix for the hand version."""
  import asdex
  n = x0.shape[0]
  c = Case(f"spjacobian {name}", size, [x0], tj=None, jx=None, hand=hand, sparse=True)
  def tj_setup(x):
    J = tinyjax.spjacobian(f_tg, x)
    c.state["J"] = J
    return J
  def jx_setup(x): return asdex.jacobian_from_coloring(f_jnp, asdex.jacobian_coloring(f_jnp, x))
  def ref_np(B): c.state["ref"] = bcoo_to_scipy(B, (m, n))   # compare() reads it
  def to_np(v):
    P = c.state["J"].pattern
    return sp.csr_matrix((v.numpy().astype(np.float64), P.indices, P.indptr), shape=(m, n))
  c.tj_setup, c.jx_setup, c.to_np, c.ref_np = tj_setup, jx_setup, to_np, ref_np
  if hand_layout is not None: c.hand_np = lambda out: hand_layout(out.numpy().astype(np.float64))
  if n <= DENSE_MAX: c.jx_dense = jax.jacfwd(f_jnp)
  return c

def bratu1d_case(n: int) -> Case:
  x0 = np.random.default_rng(n).uniform(0, 1, n).astype(np.float32)
  h2 = (1.0 / (n + 1)) ** 2
  def hand(u):   # tridiagonal, CSR order: row i holds (i-1, i, i+1); drop the first row's and last row's outer entries
    off = Tensor.full((n,), 1 / h2)
    return Tensor.stack(off, -2 / h2 + u.exp(), off, dim=1).flatten()[1:-1]
  def layout(v):
    rows = np.repeat(np.arange(n), 3)[1:-1]; cols = (rows + np.tile([-1, 0, 1], n)[1:-1])
    return sp.csr_matrix((v, (rows, cols)), shape=(n, n))
  return sparse_case("1-D Bratu", f"n={n}", x0, problems.bratu1d, problems.bratu1d_jnp, n, hand, layout)

def bratu2d_case(k: int) -> Case:
  n = k * k
  x0 = np.random.default_rng(k).uniform(0, 1, n).astype(np.float32)
  h2 = (1.0 / (k + 1)) ** 2
  offsets = np.array([-k, -1, 0, 1, k])
  i, j = np.divmod(np.arange(n), k)
  valid = np.stack([i > 0, j > 0, np.ones(n, bool), j < k - 1, i < k - 1], axis=1)     # (n, 5) neighbours inside
  C = np.where(valid, 1 / h2, 0).astype(np.float32); C[:, 2] = 0
  E = np.array([0, 0, 1, 0, 0], np.float32)
  Ct, Et = Tensor(C).realize(), Tensor(E).realize()
  def hand(u):   # the five diagonals (DIA layout, (n, 5)): constant off-diagonals, -4/h^2 + exp(u) on the diagonal
    return Ct + (-4 / h2 + u.exp()).unsqueeze(1) * Et
  def layout(v):
    r = np.repeat(np.arange(n), 5).reshape(n, 5); cols = r + offsets
    return sp.csr_matrix((v[valid], (r[valid], cols[valid])), shape=(n, n))
  return sparse_case("2-D Bratu", f"k={k}, n={n}", x0, lambda u: problems.bratu2d(u, k),
                     lambda u: problems.bratu2d_jnp(u, k), n, hand, layout)

def bicycle_case(N: int) -> Case:
  n, m = problems.bicycle_size(N), problems.NX * (N + 1)
  rng = np.random.default_rng(N)
  z0 = (rng.standard_normal(n) * 0.5).astype(np.float32)
  s_init = np.array([0.0, 0.0, 0.0, 5.0], np.float32)
  s_init_t = Tensor(s_init).realize()
  return sparse_case("bicycle", f"N={N}, {m}x{n}", z0, lambda z: problems.bicycle_constraints(z, N, s_init_t, 0.1),
                     lambda z: problems.bicycle_constraints_jnp(z, N, s_init, 0.1), m)

def all_cases(quick: bool) -> list[Case]:
  if quick: sparse = [bratu1d_case(1000), bratu2d_case(32), bicycle_case(20)]
  else: sparse = [bratu1d_case(10_000), bratu2d_case(100), bicycle_case(50)]
  return [mlp_vmap_case()] + autodiff_cases() + sparse

# ---- running one case ----------------------------------------------------------------------------------------------

COLS = ["case", "size", "tinyjax", "TinyJit(tj)", "JAX", "hand", "JAX dense", "1st tinyjax", "1st JAX", "1st hand", "setup tj / asdex",
        "k tinyjax", "k JAX", "k hand", "tj/JAX", "tj/hand", "check"]

def run_case(c: Case, budget: float, notes: list[str]) -> dict:
  r: dict[str, Any] = {"case": c.name, "size": c.size}
  label = f"{c.name} ({c.size})"
  def fail(what, e):
    notes.append(f"{what} failed for {label}: {type(e).__name__}: {str(e)[:400]}\n"
                 + "".join(traceback.format_exception(e, limit=-6)).rstrip())
  fresh = lambda: [Tensor(a).realize() for a in c.inputs]
  J_in = [jnp.asarray(a) for a in c.inputs]

  # JAX first: its result is the reference
  fj = c.jx
  if c.jx_setup is not None:
    fj, r["setup asdex"] = timed(lambda: c.jx_setup(*J_in))
  jf = jax.jit(lambda *a: fj(*a))   # a new function object: nothing cached from earlier jits
  ref, r["1st JAX"] = timed(lambda: jax.block_until_ready(jf(*J_in)))
  ref_np = c.ref_np(ref) if c.ref_np else [np.asarray(l) for l in jax.tree_util.tree_leaves(ref)]
  r["t JAX"] = median_time(lambda: jax.block_until_ready(jf(*J_in)), budget)
  r["k JAX"] = hlo_ops(jf, J_in)

  def compare(got) -> tuple[bool, str]:
    if c.sparse:   # got, ref: scipy matrices; compared on the union of their patterns
      M, ref_m = got, c.state["ref"]
      U = (abs(M) + abs(ref_m)).tocoo()
      return allclose([np.asarray(M.tocsr()[U.row, U.col]).ravel()], [np.asarray(ref_m.tocsr()[U.row, U.col]).ravel()])
    return allclose(got, ref_np)

  checks, tg_fns = [], {}
  # tinyjax
  ftj = None
  try:
    T = T_jit = fresh()
    cold_tinygrad()
    ftj = c.tj
    if c.tj_setup is not None: ftj, r["setup tj"] = timed(lambda: c.tj_setup(*T))
    jt = tinyjax.jit(ftj)
    out, r["1st tinyjax"] = timed(lambda: (o := jt(*T), realize_all(o), sync())[0])
    got = c.to_np(out) if c.to_np else [l.numpy() for l in tg_leaves(out)]
    good, why = compare(got)
    checks.append(f"tinyjax {'OK' if good else 'FAIL'}")
    if not good: notes.append(f"tinyjax result differs from JAX for {label}: {why}")
    r["k tinyjax"] = len(jt.kernels(*T))   # captures (TinyJit's 2nd call) if needed
    GlobalCounters.reset(); jt(*T); sync()
    if GlobalCounters.kernel_count != r["k tinyjax"]:
      notes.append(f"{label}: jitted.kernels() lists {r['k tinyjax']} kernels, one replay ran {GlobalCounters.kernel_count}")
    tg_fns["t tinyjax"] = lambda T=T: (jt(*T), sync())
    good2, why2 = compare(c.to_np(jt(*T)) if c.to_np else [l.numpy() for l in tg_leaves(jt(*T))])   # a replay
    if not good2: checks[-1] = "tinyjax FAIL"; notes.append(f"tinyjax replay differs from JAX for {label}: {why2}")
  except Exception as e:
    fail("tinyjax.jit", e); checks.append("tinyjax ERR")

  # diagnostic: the same tinyjax transform under a plain TinyJit (no tinyjax.jit wrapper: outputs alias across calls)
  if ftj is not None:
    try:
      T = fresh()
      raw = TinyJit(lambda *a: realize_all(ftj(*a)))
      for _ in range(3): raw(*T)
      GlobalCounters.reset(); raw(*T); sync()
      r["k TinyJit(tj)"] = GlobalCounters.kernel_count
      if "k tinyjax" in r and r["k tinyjax"] != r["k TinyJit(tj)"]:
        notes.append(f"{label}: tinyjax.jit runs {r['k tinyjax']} kernels ({', '.join(jt.kernels(*T_jit))}), a plain "
                     f"TinyJit of the same transform {r['k TinyJit(tj)']}")
      tg_fns["t TinyJit(tj)"] = lambda T=T: (raw(*T), sync())
    except Exception as e:
      fail("TinyJit of the tinyjax transform", e)

  # hand-written tinygrad under TinyJit
  if c.hand is not None:
    try:
      T = fresh()
      cold_tinygrad()
      hj = TinyJit(lambda *a: realize_all(c.hand(*a)))
      out, r["1st hand"] = timed(lambda: (o := hj(*T), sync())[0])
      got = c.hand_np(out[0]) if c.hand_np else [l.numpy() for l in out]
      good, why = compare(got)
      checks.append(f"hand {'OK' if good else 'FAIL'}")
      if not good: notes.append(f"hand-written result differs from JAX for {label}: {why}")
      for _ in range(2): hj(*T)            # TinyJit captures on call 2, replays from call 3
      GlobalCounters.reset(); hj(*T); sync()
      r["k hand"] = GlobalCounters.kernel_count
      tg_fns["t hand"] = lambda T=T: (hj(*T), sync())
    except Exception as e:
      fail("hand TinyJit", e); checks.append("hand ERR")

  try: r.update(median_times_interleaved(tg_fns, budget))
  except Exception as e: fail("timing", e)

  # dense JAX Jacobian on the sparse problems
  if c.jx_dense is not None:
    jd = jax.jit(lambda *a: c.jx_dense(*a))
    D, r["1st JAX dense"] = timed(lambda: jax.block_until_ready(jd(*J_in)))
    good, why = compare(sp.csr_matrix(np.asarray(D, np.float64)))
    checks.append(f"JAX dense {'OK' if good else 'FAIL'}")
    if not good: notes.append(f"dense jax.jacfwd differs from asdex for {label}: {why}")
    del D
    r["t JAX dense"] = median_time(lambda: jax.block_until_ready(jd(*J_in)), budget)
  if c.sparse and "J" in c.state:
    J = c.state["J"]
    r["sparse"] = {"nnz": J.nnz, "colors": f"{J.ncolors} ({J.mode})", "shape": list(J.shape)}
  r["check"] = ", ".join(checks)
  c.state.clear()
  return r

def row_cells(r: dict) -> list[str]:
  g = lambda k: fmt(r[k]) if k in r else "-"
  ratio = lambda a, b: f"{r[a] / r[b]:.2f}x" if a in r and b in r else "-"
  setup = f"{fmt(r['setup tj'])} / {fmt(r['setup asdex'])}" if "setup tj" in r and "setup asdex" in r else "-"
  tj = g("t tinyjax") if "t tinyjax" in r else ("ERR" if "ERR" in r.get("check", "") else "-")
  return [r["case"], r["size"], tj, g("t TinyJit(tj)"), g("t JAX"), g("t hand"), g("t JAX dense"), g("1st tinyjax"), g("1st JAX"),
          g("1st hand"), setup, str(r.get("k tinyjax", "-")), str(r.get("k JAX", "-")), str(r.get("k hand", "-")),
          ratio("t tinyjax", "t JAX"), ratio("t tinyjax", "t hand"), r.get("check", "")]

def text_table(rows: list[list[str]]) -> str:
  widths = [max(len(x[i]) for x in rows + [COLS]) for i in range(len(COLS))]
  line = lambda x: "  ".join(s.ljust(w) if i in (0, 1, len(COLS) - 1) else s.rjust(w) for i, (s, w) in enumerate(zip(x, widths)))
  return "\n".join([line(COLS), "  ".join("-" * w for w in widths)] + [line(x) for x in rows])

def md_table(rows: list[list[str]]) -> str:
  al = ["---" if i in (0, 1, len(COLS) - 1) else "--:" for i in range(len(COLS))]
  return "\n".join(["| " + " | ".join(COLS) + " |", "|" + "|".join(al) + "|"] + ["| " + " | ".join(x) + " |" for x in rows])

# ---- observations, computed from the numbers -----------------------------------------------------------------------

def geomean(xs): return math.exp(sum(math.log(x) for x in xs) / len(xs))

def observations(res: list[dict], load: tuple) -> list[str]:
  obs = []
  def ratios(a, b, sel=lambda r: True): return [(r["case"], r[a] / r[b]) for r in res if a in r and b in r and sel(r)]
  def span(rs): lo, hi = min(rs, key=lambda t: t[1]), max(rs, key=lambda t: t[1]); return lo, hi
  rh = ratios("t tinyjax", "t hand")
  if rh:
    (lo_c, lo), (hi_c, hi) = span(rh)
    obs.append(f"Per call, tinyjax.jit vs the hand-written TinyJit: geometric mean {geomean([x for _, x in rh]):.2f}x "
               f"over {len(rh)} cases, from {lo:.2f}x ({lo_c}) to {hi:.2f}x ({hi_c}).")
  ov = [(r["case"], r["t tinyjax"] - r["t TinyJit(tj)"], r["t TinyJit(tj)"] / r["t hand"]) for r in res
        if "t tinyjax" in r and "t TinyJit(tj)" in r and "t hand" in r]
  if ov:
    obs.append(f"Of that gap, tinyjax.jit's per-call wrapper (new output buffers, signature lookup) costs "
               f"{fmt(statistics.median([d for _, d, _ in ov]))} per call (median over {len(ov)} cases, tinyjax minus "
               f"TinyJit(tj)); the same transform under a plain TinyJit runs at {geomean([x for _, _, x in ov]):.2f}x "
               f"the hand-written time (geometric mean), from {min(x for _, _, x in ov):.2f}x to {max(x for _, _, x in ov):.2f}x.")
  dense = lambda r: not r["case"].startswith("spjacobian")
  rj = ratios("t tinyjax", "t JAX", dense)
  if rj:
    (lo_c, lo), (hi_c, hi) = span(rj)
    obs.append(f"Per call, tinyjax.jit vs jax.jit on the dense transforms: geometric mean {geomean([x for _, x in rj]):.2f}x "
               f"over {len(rj)} cases, from {lo:.2f}x ({lo_c}) to {hi:.2f}x ({hi_c})"
               + ("; JAX takes under 1 ms per call in all of them, so these compare fixed per-call costs (dispatch, "
                  "kernel launches) more than arithmetic." if all(r['t JAX'] < 1e-3 for r in res if dense(r) and 't JAX' in r) else "."))
  rs = ratios("t tinyjax", "t JAX", lambda r: not dense(r))
  if rs:
    obs.append("spjacobian per call, tinyjax vs asdex under jax.jit: " + ", ".join(f"{c.removeprefix('spjacobian ')} {x:.2f}x" for c, x in rs)
               + "; vs the dense jax.jacfwd where it ran: "
               + (", ".join(f"{r['case'].removeprefix('spjacobian ')} {r['t tinyjax'] / r['t JAX dense']:.2g}x"
                           for r in res if "t JAX dense" in r and "t tinyjax" in r) or "none") + ".")
  kh = [(r["case"], r["k tinyjax"], r["k hand"]) for r in res if "k tinyjax" in r and "k hand" in r]
  if kh:
    same = [c for c, a, b in kh if a == b]
    diff = [f"{c} {a} vs {b}" for c, a, b in kh if a != b]
    extra = [r["case"] for r in res if "k TinyJit(tj)" in r and "k tinyjax" in r and r["k tinyjax"] > r["k TinyJit(tj)"]]
    obs.append(f"Kernels per call: tinyjax launches as many as the hand-written version in {len(same)} of {len(kh)} cases"
               + (f"; more in: {', '.join(diff)} (tinyjax vs hand)" if diff else "")
               + (f". tinyjax.jit runs one kernel more than a plain TinyJit of the same transform in {', '.join(extra)} "
                  f"(a copy into the output buffer; kernel names in Notes)." if extra else "."))
  kj = [(r["case"], r["k tinyjax"], r["k JAX"]) for r in res if "k tinyjax" in r and "k JAX" in r]
  if kj:
    obs.append(f"Kernels vs XLA's optimized HLO ops: tinyjax {sum(a for _, a, _ in kj)} in total vs JAX "
               f"{sum(b for _, _, b in kj)} over {len(kj)} cases (fewer in tinyjax in {sum(a < b for _, a, b in kj)}, "
               f"more in {sum(a > b for _, a, b in kj)}).")
  f1 = ratios("1st tinyjax", "1st JAX")
  if f1:
    (lo_c, lo), (hi_c, hi) = span(f1)
    slow = max((r for r in res if "1st tinyjax" in r), key=lambda r: r["1st tinyjax"])
    fh = ratios("1st tinyjax", "1st hand")
    obs.append(f"First call (trace + compile), tinyjax vs JAX: geometric mean {geomean([x for _, x in f1]):.1f}x, from "
               f"{lo:.1f}x ({lo_c}) to {hi:.1f}x ({hi_c}); the slowest tinyjax first call is {slow['case']} at "
               f"{fmt(slow['1st tinyjax'])} (tinygrad compiles every kernel with clang)"
               + (f"; vs the hand-written TinyJit's first call {geomean([x for _, x in fh]):.2f}x (tinyjax.jit also traces "
                  f"the function once on placeholders to learn its outputs)." if fh else "."))
  st = [(r["case"].removeprefix("spjacobian "), r["setup tj"], r["setup asdex"]) for r in res if "setup tj" in r and "setup asdex" in r]
  if st:
    obs.append("spjacobian one-time setup (detection + coloring), tinyjax vs asdex: "
               + ", ".join(f"{c} {fmt(a)} vs {fmt(b)}" for c, a, b in st) + ".")
  bad = [f"{r['case']}: {r['check']}" for r in res if "FAIL" in r.get("check", "") or "ERR" in r.get("check", "")]
  obs.append("All results agree with JAX." if not bad else "Failures: " + "; ".join(bad) + " (see Notes).")
  if max(load) > os.cpu_count():
    obs.append(f"The machine was loaded (load average up to {max(load):.1f} on {os.cpu_count()} cores): absolute times "
               f"are noisy, compare within a row.")
  return obs

# ---- plot ----------------------------------------------------------------------------------------------------------

SERIES = [("t tinyjax", "1st tinyjax", "tinyjax.jit", "#1f77b4"), ("t TinyJit(tj)", None, "TinyJit(tinyjax transform)", "#9ecae1"),
          ("t JAX", "1st JAX", "jax.jit", "#ff7f0e"),
          ("t hand", "1st hand", "hand-written TinyJit", "#2ca02c"), ("t JAX dense", "1st JAX dense", "jax.jit dense jacfwd", "#bbbbbb")]

def plot(res: list[dict], path: Path, title: str):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  labels = [f"{r['case']}\n{r['size']}" for r in res]
  fig, axes = plt.subplots(2, 1, figsize=(13, 9), sharex=True)
  width = 0.16
  for ax, which, ylabel in [(axes[0], 0, "time per call (median, s)"), (axes[1], 1, "first call: trace + compile (s)")]:
    for si, s in enumerate(SERIES):
      key = s[which]
      if key is None: continue
      xs = [i + (si - 2) * width for i, r in enumerate(res) if key in r]
      ys = [r[key] for r in res if key in r]
      if ys: ax.bar(xs, ys, width, label=s[2], color=s[3])
    ax.set_yscale("log"); ax.set_ylabel(ylabel); ax.grid(axis="y", which="both", alpha=0.3)
  axes[0].set_title(title, fontsize=10, pad=28)
  axes[0].legend(ncol=5, fontsize=9, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
  axes[1].set_xticks(range(len(res))); axes[1].set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)

# ---- machine info, warm-up, main -----------------------------------------------------------------------------------

def load_avg() -> tuple: return os.getloadavg()

def machine_info() -> dict:
  cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
  mem = next((f"{int(l.split()[1]) / 2**20:.0f} GiB" for l in open("/proc/meminfo") if l.startswith("MemTotal")), "?")
  def v(p):
    try: return version(p)
    except Exception: return "?"
  try:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    commit += " (with uncommitted changes)" if dirty else ""
  except Exception: commit = "?"
  return {"cpu": f"{cpu}, {os.cpu_count()} cores, {mem} RAM",
          "os": f"{platform.platform()}, Python {platform.python_version()}",
          "versions": f"tinyjax {tinyjax.__version__} (git {commit}), tinygrad {v('tinygrad')} (device {Device.DEFAULT}), "
                      f"jax {jax.__version__} / jaxlib {v('jaxlib')} ({jax.default_backend()}), asdex {v('asdex')}, "
                      f"numpy {np.__version__}, scipy {scipy.__version__}, matplotlib {v('matplotlib')}",
          "settings": f"CCACHE={os.environ.get('CCACHE')}, JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS')}"}

def warm_up():
  """One-time costs that would otherwise land on the first case: device and XLA client start-up, numba compilation in
  asdex's coloring, tinygrad's first kernels."""
  import asdex
  x = np.linspace(0, 1, 8, dtype=np.float32)
  tinyjax.jit(lambda a: (a * 2).sum())(Tensor(x).realize()); sync()
  tinyjax.spjacobian(problems.bratu1d, Tensor(x).realize())(Tensor(x).realize()).realize()
  jax.block_until_ready(jax.jit(lambda a: (a * 2).sum())(jnp.asarray(x)))
  asdex.jacobian_coloring(problems.bratu1d_jnp, jnp.asarray(x))

def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--quick", action="store_true", help="smaller sparse problems and timing budgets; writes bench/out/ "
                  "instead of docs/")
  ap.add_argument("--only", default="", help="run only the cases whose name contains this text (for debugging; "
                  "writes bench/out/ only)")
  args = ap.parse_args()
  t_start = time.perf_counter()
  load0 = load_avg()
  info = machine_info()
  print(f"CPU: {info['cpu']}\n{info['os']}\n{info['versions']}\n{info['settings']}")
  print("load average at start (1/5/15 min): " + " ".join(f"{l:.2f}" for l in load0), flush=True)
  budget = 0.3 if args.quick else 2.0
  warm_up()
  cases = [c for c in all_cases(args.quick) if args.only.lower() in c.name.lower()]
  res, notes = [], []
  for c in cases:
    t = time.perf_counter()
    res.append(run_case(c, budget, notes))
    print(f"  {c.name} ({c.size}): {res[-1]['check']}  [{time.perf_counter() - t:.0f} s]", flush=True)
    gc.collect()
  load1 = load_avg()
  wall = time.perf_counter() - t_start
  rows = [row_cells(r) for r in res]
  print("\n" + text_table(rows))
  for n in notes: print("\n" + n)
  obs = observations(res, load0 + load1)
  print("\n" + "\n".join("- " + o for o in obs))
  print("load average at end (1/5/15 min): " + " ".join(f"{l:.2f}" for l in load1) + f"; wall time {wall:.0f} s")

  to_docs = not args.quick and not args.only
  out_dir = ROOT / "bench" / "out"
  out_dir.mkdir(parents=True, exist_ok=True)
  stem = "benchmarks" if not args.quick else "benchmarks_quick"
  md_path, png_path = (ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "benchmarks.png") if to_docs else \
                      (out_dir / f"{stem}.md", out_dir / f"{stem}.png")
  mode = "--quick" if args.quick else "full"
  plot(res, png_path, f"tinyjax vs JAX vs hand-written tinygrad ({mode} run; {info['cpu']}; log scale)")
  with open(out_dir / f"{stem}.json", "w") as fh:
    json.dump({"info": info, "load_start": load0, "load_end": load1, "wall_s": wall, "mode": mode, "results": res,
               "notes": notes}, fh, indent=1, default=str)
  doc = __doc__[__doc__.index("Columns ("):].replace("{DENSE_MAX}", str(DENSE_MAX)).rstrip()
  md = [f"# Benchmarks: tinyjax vs JAX vs hand-written tinygrad",
        "",
        "Generated by `bash scripts/bench.sh` (= `.venv/bin/python bench/run_all.py`); rerun it to regenerate this page "
        "and `docs/benchmarks.png`. `bash scripts/bench.sh --quick` does a short run (smaller sparse problems) into "
        "`bench/out/` and leaves this page alone.",
        "",
        "## Machine",
        "",
        f"- CPU: {info['cpu']}",
        f"- OS: {info['os']}",
        f"- Versions: {info['versions']}",
        f"- Settings: {info['settings']}; mode: {mode}; timing budget {budget:g} s per variant",
        f"- Load average (1/5/15 min) at start: {' '.join(f'{l:.2f}' for l in load0)}; at end: "
        f"{' '.join(f'{l:.2f}' for l in load1)}; wall time {wall:.0f} s",
        "",
        "## Results",
        "",
        md_table(rows),
        "",
        f"![time per call and first-call time, log scale]({png_path.name})",
        "",
        "## Observations (computed from the table)",
        "",
        *[f"- {o}" for o in obs],
        "",
        "## Cases",
        "",
        "- batched MLP (vmap): `vmap(mlp, in_axes=(0, None, None, None, None))` with mlp(x) = relu(x W1 + b1) W2 + b2 "
        "for one example; hand: the same code applied to the whole batch.",
        "- per-example grads: `vmap(grad(loss), in_axes=(None, 0, 0))`, loss = mean((tanh(x W1) W2 - y)^2); hand: the "
        "closed-form per-example gradients (bench/bench_autodiff.py).",
        "- jacfwd / jacrev / hessian / HVP: g(x) = tanh(tanh(x W1) W2), f = sum(g); HVP = `jvp(grad(f), (x,), (v,))`; "
        "hand: closed forms (bench/bench_autodiff.py). Weights are arguments (no constant folding by XLA).",
        "- spjacobian: `jit(spjacobian(F, x0))` returns the nonzeros in CSR order; JAX: "
        "`jit(asdex.jacobian_from_coloring(F, asdex.jacobian_coloring(F, x0)))` (BCOO); problems from "
        "examples/problems.py. Hand: the analytic Jacobian (1-D Bratu: CSR values; 2-D Bratu: its five diagonals, DIA "
        "layout; bicycle: none).",
        "",
        "## Columns",
        "",
        "```text",
        doc,
        "```",
        ]
  if notes: md += ["", "## Notes", ""] + [f"```text\n{n}\n```" for n in notes]
  md_path.write_text("\n".join(md) + "\n")
  print(f"\nwrote {md_path.relative_to(ROOT)}, {png_path.relative_to(ROOT)}, bench/out/{stem}.json ({time.perf_counter() - t_start:.0f} s)")

if __name__ == "__main__": main()

"""tinyjax (tinyjax.jit) vs JAX (jax.jit) vs hand-written tinygrad (TinyJit), side by side in one run.

  bash scripts/bench.sh [--quick]          (or, from the repository root: python -m bench.run [--quick] [--only TEXT])

The cases are rows of data in bench/cases.py; this harness times, counts kernels and checks each the same way. A full
run rewrites docs/benchmarks.md and docs/benchmarks.png; --quick (smaller sparse problems, shorter timing budgets)
writes bench/out/benchmarks_quick.md and .png instead. Both write the raw numbers to bench/out/*.json.

Columns (float32 throughout; every variant gets its own realized copies of the inputs):
  tinyjax     tinyjax.jit(transform(f))(*args): median seconds per call after warm-up (replay of the captured kernels
              into fresh or reused output buffers; device synchronize included); every per-call column is timed in a
              block of calls of its own, as JAX's is
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
  2nd *       the call right after the first: a replay for tinyjax.jit and jax.jit; a hand-written TinyJit captures
              (schedules its kernels again) on its second call and replays from its third
  setup       spjacobian rows only: tinyjax.spjacobian(f, x) (trace, sparsity detection, coloring) / asdex
              jacobian_coloring(f, x); one-time work per input shape, not part of the first call
  k *         kernels per call: tinyjax and hand: GlobalCounters.kernel_count around one replay of the jitted function;
              JAX: operations left in the ENTRY computation of XLA's optimized HLO (fusions, dots, copies...;
              parameters, constants, tuples and bitcasts not counted), roughly the kernels XLA:CPU launches
  tj/JAX, tj/hand   ratios of the per-call medians (> 1: tinyjax is slower)
  check       the tinyjax result (first call and a replay) vs JAX's (allclose, rtol 2e-4, atol 2e-5 x max|ref|); the
              hand result too
"""
from __future__ import annotations
import argparse, gc, json, math, os, platform, re, statistics, subprocess, time, traceback
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("CCACHE", "0")   # tinygrad's on-disk compile cache: off, so first calls really compile
import numpy as np
import scipy, scipy.sparse as sp
import jax, jax.numpy as jnp
from jax.experimental import sparse as jsparse
from tinygrad import Tensor, TinyJit, Device
from tinygrad.helpers import GlobalCounters
import tinygrad.codegen, tinygrad.schedule, tinygrad.engine.realize
import tinyjax
from bench.cases import Case, cases, DENSE_MAX
from examples import problems

ROOT = Path(__file__).resolve().parent.parent
KEPT = "<!-- bench/run.py keeps what follows when it rewrites this page -->"
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
  t = time.perf_counter()
  out = fn()
  return out, time.perf_counter() - t

def medians(fns: dict, budget: float, warmup=2, min_reps=7, max_reps=1000) -> dict:
  """Median seconds per call of each fn, round-robin (one call of each per round) for len(fns) * budget seconds, so that
  the variants see the same machine load. The bench's rows time each variant in a block of its own (one fn per call
  here), as a user's loop calls one function: round-robin, a small call pays for the caches the variant before it
  evicted (a 12-kernel replay of ~16 us measured ~30 us between two hand-written TinyJits' ~0.4 ms of Python), and on a
  loaded 2-core machine XLA's first call after busy Python is slower (its worker threads wake up)."""
  gc.collect()   # tinygrad's realize scans live Tensors: start every variant from the same state
  for fn in fns.values():
    for _ in range(warmup): fn()
  times, end = {k: [] for k in fns}, time.perf_counter() + budget * len(fns)
  for rep in range(max_reps):
    if rep >= min_reps and time.perf_counter() > end: break
    for k, fn in fns.items():
      t = time.perf_counter()
      fn()
      times[k].append(time.perf_counter() - t)
  return {k: statistics.median(v) for k, v in times.items()}

def leaves(tree) -> list:
  if isinstance(tree, (tuple, list)): return [l for t in tree for l in leaves(t)]
  if isinstance(tree, dict): return [l for k in sorted(tree) for l in leaves(tree[k])]
  return [tree]

def realize_all(tree) -> list[Tensor]:
  Tensor.realize(*(ls := leaves(tree)))
  return ls

def jax_np(out):
  """A JAX result as a list of numpy arrays, or a BCOO as a scipy matrix."""
  if isinstance(out, jsparse.BCOO):
    idx = np.asarray(out.indices)
    return sp.csr_matrix((np.asarray(out.data, np.float64), (idx[:, 0], idx[:, 1])), shape=out.shape)
  return [np.asarray(l) for l in jax.tree_util.tree_leaves(out)]

def allclose(got, ref) -> tuple[bool, str]:
  if sp.issparse(ref):   # compared on the union of both patterns; a dense result too
    got = got if sp.issparse(got) else sp.csr_matrix(np.asarray(got[0], np.float64))
    U = (abs(got) + abs(ref)).tocoo()
    got, ref = [np.asarray(M.tocsr()[U.row, U.col]).ravel() for M in (got, ref)]
    got, ref = [got], [ref]
  if len(got) != len(ref): return False, f"{len(got)} outputs, JAX has {len(ref)}"
  worst = 0.0
  for a, b in zip(got, ref, strict=True):
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

# ---- running one case ----------------------------------------------------------------------------------------------

def run_case(c: Case, budget: float, notes: list[str]) -> dict:
  r: dict[str, Any] = {"case": c.name, "size": c.size}
  label, checks = f"{c.name} ({c.size})", []
  def fail(what, e):
    notes.append(f"{what} failed for {label}: {type(e).__name__}: {str(e)[:400]}\n"
                 + "".join(traceback.format_exception(e, limit=-6)).rstrip())
  def check(what, results):
    why = next((why for got in results for good, why in [allclose(got, ref)] if not good), None)
    if why: notes.append(f"{what} result differs from JAX for {label}: {why}")
    checks.append(f"{what} {'FAIL' if why else 'OK'}")
  def fresh(): return [Tensor(a).realize() for a in c.inputs]
  J_in = [jnp.asarray(a) for a in c.inputs]

  # JAX first: its result is the reference
  fj = c.jx
  if c.setup: fj, r["setup asdex"] = timed(lambda: c.jx(*J_in))
  jf = jax.jit(lambda *a: fj(*a))   # a new function object: nothing cached from earlier jits
  ref, r["1st JAX"] = timed(lambda: jax.block_until_ready(jf(*J_in)))
  _, r["2nd JAX"] = timed(lambda: jax.block_until_ready(jf(*J_in)))
  ref = jax_np(ref)
  r["t JAX"] = medians({0: lambda: jax.block_until_ready(jf(*J_in))}, budget)[0]
  r["k JAX"] = hlo_ops(jf, J_in)

  # tinygrad variants: (column, jitted function, converter of its outputs to JAX's form, first call timed and checked)
  variants: list[tuple] = []
  try:
    ftj = c.tj
    if c.setup:
      cold_tinygrad()
      ftj, r["setup tj"] = timed(lambda: c.tj(*fresh()))
    tj_np = (lambda ls: ftj.matrix(ls[0])) if isinstance(ftj, tinyjax.SparseJacobian) else None
    variants += [("tinyjax", tinyjax.jit(ftj), tj_np, True), ("TinyJit(tj)", TinyJit(lambda *a: realize_all(ftj(*a))), tj_np, False)]
  except Exception as e:
    fail("tinyjax setup", e)
    checks.append("tinyjax ERR")
  if c.hand is not None:
    variants.append(("hand", TinyJit(lambda *a: realize_all(c.hand(*a))), (lambda ls: c.hand_np(ls[0].numpy())) if c.hand_np else None, True))
  tg_fns, T_of = {}, {}
  for key, fn, to_np, primary in variants:
    to_np = to_np or (lambda ls: [l.numpy() for l in ls])
    try:
      T = T_of[key] = fresh()
      if primary: cold_tinygrad()
      out, t1 = timed(lambda: (realize_all(fn(*T)), sync())[0])
      _, t2 = timed(lambda: (realize_all(fn(*T)), sync())[0])
      fn(*T)   # a hand-written TinyJit captures on call 2 and replays from call 3
      GlobalCounters.reset()
      replay = (realize_all(fn(*T)), sync())[0]
      r["k " + key] = GlobalCounters.kernel_count
      if primary:
        r["1st " + key], r["2nd " + key] = t1, t2
        check(key, [to_np(out), to_np(replay)])
      tg_fns["t " + key] = lambda fn=fn, T=T: (fn(*T), sync())
    except Exception as e:
      fail(key, e)
      if primary: checks.append(f"{key} ERR")
  if "k tinyjax" in r and r["k tinyjax"] != r.get("k TinyJit(tj)", r["k tinyjax"]):
    notes.append(f"{label}: tinyjax.jit runs {r['k tinyjax']} kernels ({', '.join(variants[0][1].kernels(*T_of['tinyjax']))}), "
                 f"a plain TinyJit of the same transform {r['k TinyJit(tj)']}")
  try:
    for key, fn in tg_fns.items(): r.update(medians({key: fn}, budget))   # in blocks, as JAX's (see medians)
  except Exception as e: fail("timing", e)

  if c.dense is not None:   # the dense JAX Jacobian of the spjacobian rows
    jd = jax.jit(lambda *a: c.dense(*a))
    D, r["1st JAX dense"] = timed(lambda: jax.block_until_ready(jd(*J_in)))
    check("JAX dense", [jax_np(D)])
    del D
    r["t JAX dense"] = medians({0: lambda: jax.block_until_ready(jd(*J_in))}, budget)[0]
  if isinstance(ftj, tinyjax.SparseJacobian): r["sparse"] = {"nnz": ftj.nnz, "colors": f"{ftj.ncolors} ({ftj.mode})"}
  r["check"] = ", ".join(checks)
  return r

# ---- table ---------------------------------------------------------------------------------------------------------

def _t(k): return lambda r: fmt(r[k]) if k in r else "-"
def _k(k): return lambda r: str(r.get(k, "-"))
def _ratio(a, b): return lambda r: f"{r[a] / r[b]:.2f}x" if a in r and b in r else "-"

COLS = [("case", lambda r: r["case"]), ("size", lambda r: r["size"]),
        ("tinyjax", lambda r: _t("t tinyjax")(r) if "t tinyjax" in r or "ERR" not in r["check"] else "ERR"),
        ("TinyJit(tj)", _t("t TinyJit(tj)")), ("JAX", _t("t JAX")), ("hand", _t("t hand")), ("JAX dense", _t("t JAX dense")),
        ("1st tinyjax", _t("1st tinyjax")), ("1st JAX", _t("1st JAX")), ("1st hand", _t("1st hand")),
        ("2nd tinyjax", _t("2nd tinyjax")), ("2nd JAX", _t("2nd JAX")), ("2nd hand", _t("2nd hand")),
        ("setup tj / asdex", lambda r: f"{fmt(r['setup tj'])} / {fmt(r['setup asdex'])}" if "setup tj" in r and "setup asdex" in r else "-"),
        ("k tinyjax", _k("k tinyjax")), ("k JAX", _k("k JAX")), ("k hand", _k("k hand")),
        ("tj/JAX", _ratio("t tinyjax", "t JAX")), ("tj/hand", _ratio("t tinyjax", "t hand")), ("check", lambda r: r["check"])]
LEFT = {"case", "size", "check"}

def table(res: list[dict], md: bool) -> str:
  rows = [[h for h, _ in COLS]] + [[cell(r) for _, cell in COLS] for r in res]
  if md: return "\n".join(["| " + " | ".join(x) + " |" for x in rows[:1]] + ["|" + "|".join("---" if h in LEFT else "--:" for h, _ in COLS) + "|"]
                          + ["| " + " | ".join(x) + " |" for x in rows[1:]])
  w = [max(len(x[i]) for x in rows) for i in range(len(COLS))]
  def line(x): return "  ".join(s.ljust(n) if h in LEFT else s.rjust(n) for s, n, (h, _) in zip(x, w, COLS, strict=True))
  return "\n".join([line(rows[0]), "  ".join("-" * n for n in w)] + [line(x) for x in rows[1:]])

# ---- observations, computed from the numbers -----------------------------------------------------------------------

def geomean(xs): return math.exp(sum(math.log(x) for x in xs) / len(xs))
def short(case: str) -> str: return case.removeprefix("spjacobian ")

def observations(res: list[dict], load: tuple) -> list[str]:
  obs = []
  def ratios(a, b, sel=lambda r: True): return [(r["case"], r[a] / r[b]) for r in res if a in r and b in r and sel(r)]
  def span(rs, p=2):
    (lo_c, lo), (hi_c, hi) = min(rs, key=lambda t: t[1]), max(rs, key=lambda t: t[1])
    return f"from {lo:.{p}f}x ({lo_c}) to {hi:.{p}f}x ({hi_c})"
  if rh := ratios("t tinyjax", "t hand"):
    obs.append(f"Per call, tinyjax.jit vs the hand-written TinyJit: geometric mean {geomean([x for _, x in rh]):.2f}x over {len(rh)} "
               f"cases, {span(rh)}.")
  if ov := [(r["t tinyjax"] - r["t TinyJit(tj)"], r["t TinyJit(tj)"] / r["t hand"]) for r in res if "t tinyjax" in r and "t TinyJit(tj)" in r
            and "t hand" in r]:
    obs.append(f"Of that gap, tinyjax.jit's per-call wrapper (new output buffers, signature lookup) costs "
               f"{fmt(statistics.median([d for d, _ in ov]))} per call (median over {len(ov)} cases, tinyjax minus TinyJit(tj)); the "
               f"same transform under a plain TinyJit runs at {geomean([x for _, x in ov]):.2f}x the hand-written time (geometric mean), "
               f"from {min(x for _, x in ov):.2f}x to {max(x for _, x in ov):.2f}x.")
  def dense(r): return not r["case"].startswith("spjacobian")
  if rj := ratios("t tinyjax", "t JAX", dense):
    fast = all(r["t JAX"] < 1e-3 for r in res if dense(r) and "t JAX" in r)
    obs.append(f"Per call, tinyjax.jit vs jax.jit on the dense transforms: geometric mean {geomean([x for _, x in rj]):.2f}x over "
               f"{len(rj)} cases, {span(rj)}" + ("; JAX takes under 1 ms per call in all of them, so these compare fixed per-call "
               "costs (dispatch, kernel launches) more than arithmetic." if fast else "."))
  if rs := ratios("t tinyjax", "t JAX", lambda r: not dense(r)):
    vs_dense = [f"{short(c)} {x:.2g}x" for c, x in ratios("t tinyjax", "t JAX dense")]
    obs.append("spjacobian per call, tinyjax vs asdex under jax.jit: " + ", ".join(f"{short(c)} {x:.2f}x" for c, x in rs)
               + "; vs the dense jax.jacfwd where it ran: " + (", ".join(vs_dense) or "none") + ".")
  if kh := [(r["case"], r["k tinyjax"], r["k hand"]) for r in res if "k tinyjax" in r and "k hand" in r]:
    diff = [f"{c} {a} vs {b}" for c, a, b in kh if a != b]
    extra = [r["case"] for r in res if r.get("k tinyjax", 0) > r.get("k TinyJit(tj)", 1e9)]
    obs.append(f"Kernels per call: tinyjax launches as many as the hand-written version in {len(kh) - len(diff)} of {len(kh)} cases"
               + (f"; more in: {', '.join(diff)} (tinyjax vs hand)" if diff else "")
               + (f". tinyjax.jit runs one kernel more than a plain TinyJit of the same transform in {', '.join(extra)} "
                  f"(a copy into the output buffer; kernel names in Notes)." if extra else "."))
  if kj := [(r["k tinyjax"], r["k JAX"]) for r in res if "k tinyjax" in r and "k JAX" in r]:
    obs.append(f"Kernels vs XLA's optimized HLO ops: tinyjax {sum(a for a, _ in kj)} in total vs JAX {sum(b for _, b in kj)} over "
               f"{len(kj)} cases (fewer in tinyjax in {sum(a < b for a, b in kj)}, more in {sum(a > b for a, b in kj)}).")
  if f1 := ratios("1st tinyjax", "1st JAX"):
    slow = max((r for r in res if "1st tinyjax" in r), key=lambda r: r["1st tinyjax"])
    fh = ratios("1st tinyjax", "1st hand")
    obs.append(f"First call (trace + compile), tinyjax vs JAX: geometric mean {geomean([x for _, x in f1]):.1f}x, {span(f1, 1)}; the "
               f"slowest tinyjax first call is {slow['case']} at {fmt(slow['1st tinyjax'])} (tinygrad compiles every kernel with clang)"
               + (f"; vs the hand-written TinyJit's first call {geomean([x for _, x in fh]):.2f}x (tinyjax.jit also traces the "
                  f"function once on placeholders to learn its outputs)." if fh else "."))
  if st := [f"{short(r['case'])} {fmt(r['setup tj'])} vs {fmt(r['setup asdex'])}" for r in res if "setup tj" in r and "setup asdex" in r]:
    obs.append("spjacobian one-time setup (detection + coloring), tinyjax vs asdex: " + ", ".join(st) + ".")
  bad = [f"{r['case']}: {r['check']}" for r in res if "FAIL" in r["check"] or "ERR" in r["check"]]
  obs.append("All results agree with JAX." if not bad else "Failures: " + "; ".join(bad) + " (see Notes).")
  if max(load) > (os.cpu_count() or 1):
    obs.append(f"The machine was loaded (load average up to {max(load):.1f} on {os.cpu_count()} cores): absolute times are noisy, "
               f"compare within a row.")
  return obs

# ---- plot ----------------------------------------------------------------------------------------------------------

SERIES = [("t tinyjax", "1st tinyjax", "tinyjax.jit", "#1f77b4"), ("t TinyJit(tj)", None, "TinyJit(tinyjax transform)", "#9ecae1"),
          ("t JAX", "1st JAX", "jax.jit", "#ff7f0e"), ("t hand", "1st hand", "hand-written TinyJit", "#2ca02c"),
          ("t JAX dense", "1st JAX dense", "jax.jit dense jacfwd", "#bbbbbb")]

def plot(res: list[dict], path: Path, title: str):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, axes = plt.subplots(2, 1, figsize=(13, 9), sharex=True)
  width = 0.16
  for ax, which, ylabel in [(axes[0], 0, "time per call (median, s)"), (axes[1], 1, "first call: trace + compile (s)")]:
    for si, s in enumerate(SERIES):
      if (key := s[which]) is None: continue
      xs, ys = [i + (si - 2) * width for i, r in enumerate(res) if key in r], [r[key] for r in res if key in r]
      if ys: ax.bar(xs, ys, width, label=s[2], color=s[3])
    ax.set(yscale="log", ylabel=ylabel)
    ax.grid(axis="y", which="both", alpha=0.3)
  axes[0].set_title(title, fontsize=10, pad=28)
  axes[0].legend(ncol=5, fontsize=9, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
  axes[1].set_xticks(range(len(res)))
  axes[1].set_xticklabels([f"{r['case']}\n{r['size']}" for r in res], rotation=30, ha="right", fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)

# ---- machine info, warm-up, main -----------------------------------------------------------------------------------

def machine_info() -> dict:
  cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
  mem = next((f"{int(l.split()[1]) / 2**20:.0f} GiB" for l in open("/proc/meminfo") if l.startswith("MemTotal")), "?")
  def v(p):
    try: return version(p)
    except Exception: return "?"
  def git(*a): return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()
  commit = git("rev-parse", "--short", "HEAD") + (" (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else "")
  return {"cpu": f"{cpu}, {os.cpu_count()} cores, {mem} RAM", "os": f"{platform.platform()}, Python {platform.python_version()}",
          "versions": f"tinyjax {tinyjax.__version__} (git {commit or '?'}), tinygrad {v('tinygrad')} (device {Device.DEFAULT}), "
                      f"jax {jax.__version__} / jaxlib {v('jaxlib')} ({jax.default_backend()}), asdex {v('asdex')}, "
                      f"numpy {np.__version__}, scipy {scipy.__version__}, matplotlib {v('matplotlib')}",
          "settings": f"CCACHE={os.environ.get('CCACHE')}, JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS')}"}

def warm_up():
  """One-time costs that would otherwise land on the first case: device and XLA client start-up, numba compilation in
  asdex's coloring, tinygrad's first kernels, tinyjax's CPU graph executor (one clang run per process with CCACHE=0,
  as bench/ports.py brings it up) and BLAS's first call (OpenBLAS starting its threads)."""
  import asdex
  from tinyjax._tg.cpu_graph import executor
  executor(Device.DEFAULT)
  x = np.linspace(0, 1, 8, dtype=np.float32)
  tinyjax.jit(lambda a: (a * 2).sum())(Tensor(x).realize()).realize()
  m = Tensor(np.ones((64, 64), np.float32)).realize()
  (m @ m).realize()   # a BLAS call on the CPU (tinyjax/_tg/gemm.py)
  tinyjax.spjacobian(problems.bratu1d, Tensor(x).realize())(Tensor(x).realize()).realize()
  jax.block_until_ready(jax.jit(lambda a: (a * 2).sum())(jnp.asarray(x)))
  asdex.jacobian_coloring(problems.bratu1d_jnp, jnp.asarray(x))

def page(res, obs, docs, notes, info, mode, budget, load0, load1, wall, png) -> str:
  def loads(ls): return " ".join(f"{l:.2f}" for l in ls)
  return "\n".join([
    "# Benchmarks: tinyjax vs JAX vs hand-written tinygrad", "",
    "Generated by `bash scripts/bench.sh` (= `.venv/bin/python -m bench.run`); rerun it to regenerate this page and "
    "`docs/benchmarks.png`. `bash scripts/bench.sh --quick` does a short run (smaller sparse problems) into `bench/out/` and leaves "
    "this page alone. The cases are rows of data in `bench/cases.py`.", "",
    "## Machine", "", f"- CPU: {info['cpu']}", f"- OS: {info['os']}", f"- Versions: {info['versions']}",
    f"- Settings: {info['settings']}; mode: {mode}; timing budget {budget:g} s per variant",
    f"- Load average (1/5/15 min) at start: {loads(load0)}; at end: {loads(load1)}; wall time {wall:.0f} s", "",
    "## Results", "", table(res, md=True), "", f"![time per call and first-call time, log scale]({png.name})", "",
    "## Observations (computed from the table)", "", *[f"- {o}" for o in obs], "",
    "## Cases", "", *[f"- {d}" for d in docs], "",
    "## Columns", "", "```text", __doc__[__doc__.index("Columns ("):].replace("{DENSE_MAX}", str(DENSE_MAX)).rstrip(), "```",
    *(["", "## Notes", ""] + [f"```text\n{n}\n```" for n in notes] if notes else [])]) + "\n"

def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--quick", action="store_true", help="smaller sparse problems and timing budgets; writes bench/out/ instead of docs/")
  ap.add_argument("--only", default="", help="run only the cases whose name contains this text (for debugging; writes bench/out/ only)")
  args = ap.parse_args()
  t_start, load0, info = time.perf_counter(), os.getloadavg(), machine_info()
  print(f"CPU: {info['cpu']}\n{info['os']}\n{info['versions']}\n{info['settings']}")
  print("load average at start (1/5/15 min): " + " ".join(f"{l:.2f}" for l in load0), flush=True)
  budget = 0.3 if args.quick else 2.0
  warm_up()
  res, notes, todo = [], [], cases(args.quick)
  for c in [c for c in todo if args.only.lower() in c.name.lower()]:
    t = time.perf_counter()
    res.append(run_case(c, budget, notes))
    print(f"  {c.name} ({c.size}): {res[-1]['check']}  [{time.perf_counter() - t:.0f} s]", flush=True)
    gc.collect()
  load1, wall = os.getloadavg(), time.perf_counter() - t_start
  obs = observations(res, load0 + load1)
  print("\n" + table(res, md=False) + "".join("\n\n" + n for n in notes) + "\n\n" + "\n".join("- " + o for o in obs))
  print("load average at end (1/5/15 min): " + " ".join(f"{l:.2f}" for l in load1) + f"; wall time {wall:.0f} s")

  out_dir, stem, mode = ROOT / "bench" / "out", "benchmarks_quick" if args.quick else "benchmarks", "--quick" if args.quick else "full"
  out_dir.mkdir(parents=True, exist_ok=True)
  md_path, png_path = (ROOT / "docs" / f"{stem}.md", ROOT / "docs" / f"{stem}.png") if not (args.quick or args.only) else \
                      (out_dir / f"{stem}.md", out_dir / f"{stem}.png")
  plot(res, png_path, f"tinyjax vs JAX vs hand-written tinygrad ({mode} run; {info['cpu']}; log scale)")
  with open(out_dir / f"{stem}.json", "w") as fh:
    json.dump({"info": info, "load_start": load0, "load_end": load1, "wall_s": wall, "mode": mode, "results": res, "notes": notes}, fh,
              indent=1, default=str)
  # the sections other scripts measured (bench/loops.py, random.py, beam.py) follow KEPT in the page: kept as they are
  kept = md_path.read_text().split(KEPT, 1) if md_path.exists() else []
  md_path.write_text(page(res, obs, [c.doc for c in todo if c.doc], notes, info, mode, budget, load0, load1, wall, png_path) +
                     ("\n" + KEPT + kept[1] if len(kept) == 2 else ""))
  print(f"\nwrote {md_path.relative_to(ROOT)}, {png_path.relative_to(ROOT)}, bench/out/{stem}.json ({time.perf_counter() - t_start:.0f} s)")

if __name__ == "__main__": main()

"""Every program in examples/ports/ timed under JAX and under tinyjax (its import lines rewritten, as tests/test_ports.py
runs it): what a user porting JAX code sees, side by side on one machine.

  python -m bench.ports [--only TEXT] [--timeout S] [--quick] [--profile]

Each program runs in a fresh subprocess per library (JAX, tinyjax), one after the other, so every cache starts cold:
  first   wall time of the whole program, imports and the backend's start excluded (jax.devices(), tinygrad's default
          device, once per process; tinygrad's takes seconds): its import statements are executed first (untimed), then the
          timed exec of the module finds them in sys.modules. Stops after the arrays left in the module's globals are
          computed (jax.block_until_ready / tinyjax.block_until_ready), so that neither JAX's asynchronous dispatch nor
          tinygrad's laziness hides work
  warm    the same program exec'd a second time in the same process, timed the same way: its functions are new objects,
          so both libraries trace again, but what they compiled is found again. tinygrad finds its kernels in its
          in-process caches (keyed by the kernel's content). JAX's in-memory caches are keyed by the function object, so
          a re-defined function's jit would compile again: the JAX side runs with its persistent compilation cache on
          (a user's setting, as tests/conftest.py does; a fresh directory per program, so the first run writes it and
          the warm run reads it; minimum compile time and entry size 0)
  ratio   tinyjax / JAX (> 1: tinyjax slower)
  JAX warm, no compile cache   a third JAX run with the persistent cache off (what JAX's default settings give a
          re-exec'd program: its jitted functions compile again), and tinyjax's warm run against it
Before each timed run, on both sides, the garbage of the one before is collected (a full collection of the first run's
compile-time objects landed inside the warm run: kursiv's warm run 95 or 211 ms by where it fell).
The programs' prints are captured (discarded). A run that takes longer than --timeout seconds (default 300) is reported
as a timeout and counts in the summary at its lower bound (timeout / JAX's time); a run that raises is reported with its
exception and left out of the summary.

Settings, the same for both sides: JAX_PLATFORMS=cpu; x64 off (both libraries' default, as the ports' own test runs
them); CCACHE=0, tinygrad's on-disk compile cache off, as bench/run.py does, so a first run really compiles (JAX's
persistent cache starts empty). Everything else is a user's default: tinygrad's kernel optimizations on (not the test
suite's NOOPT) and its parallel compile workers (PARALLEL, the number of cores).

--profile adds a third, cProfile'd, run of each tinyjax program and prints where its time goes (the top tinyjax/tinygrad
functions by cumulative time, and the top functions by own time); the .prof files go to bench/out/prof/.
Writes the table to bench/out/ports.md (bench/out/ports_quick.md with --quick or --only).
"""
from __future__ import annotations
import argparse, ast, builtins, contextlib, gc, io, json, math, os, platform, signal, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORTS = ROOT / "examples" / "ports"
OUT = ROOT / "bench" / "out"
ENV = {"JAX_PLATFORMS": "cpu", "CCACHE": "0"}
SIDES = ("jax", "tinyjax")

# ---- one program in this process (the child) -----------------------------------------------------------------------

class _Timeout(Exception): pass

def _alarm(signum, frame): raise _Timeout()

def _arrays(g: dict, lib) -> list:
  """The arrays the program left in its globals (in lists/tuples/dicts or the library's pytrees)."""
  from tinygrad import Tensor
  kind = Tensor if lib.__name__ == "tinyjax" else lib.Array
  out = []
  for name, v in g.items():
    if name.startswith("__"): continue
    try: leaves = lib.tree_util.tree_leaves(v)
    except Exception: continue
    out += [x for x in leaves if isinstance(x, kind)]
    out += [p for x in leaves if type(x).__name__ == "ComplexArray" for p in (x.re, x.im)]   # tinyjax's complex arrays: their parts
  return out

def _exec(code, path: Path, lib) -> None:
  g: dict = {"__name__": "__main__", "__file__": str(path), "__builtins__": builtins}
  with contextlib.redirect_stdout(io.StringIO()):
    exec(code, g)
    lib.block_until_ready(_arrays(g, lib))

def _profile_summary(prof, n=12) -> list[str]:
  import pstats
  st = pstats.Stats(prof).stats  # type: ignore[attr-defined]
  def where(k):
    if k[0] == "~": return k[2]
    f = k[0][k[0].rindex(m):] if (m := "/tinyjax/") in k[0] or (m := "/tinygrad/") in k[0] else Path(k[0]).name
    return f"{f.lstrip('/')}:{k[1]} {k[2]}"
  mine = [(k, v) for k, v in st.items() if "/tinyjax/" in k[0] or "/tinygrad/" in k[0]]
  cum = sorted(mine, key=lambda kv: -kv[1][3])[:n]
  own = sorted(st.items(), key=lambda kv: -kv[1][2])[:n]
  total = max(v[3] for v in st.values())
  return ([f"  cumulative (of {total:.3f} s):"] + [f"    {v[3]:8.3f} s  {v[1]:7d} calls  {where(k)}" for k, v in cum] +
          ["  own time:"] + [f"    {v[2]:8.3f} s  {v[1]:7d} calls  {where(k)}" for k, v in own])

def child(side: str, path: Path, timeout: float, result: Path, profile: bool) -> None:
  import importlib
  from examples.port_imports import to_tinyjax
  src = path.read_text()
  if side == "tinyjax": src = to_tinyjax(src)
  tree = ast.parse(src, str(path))
  lib = importlib.import_module(side)
  imports = ast.Module([s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))], type_ignores=[])
  exec(compile(imports, str(path), "exec"), {"__name__": "__main__", "__builtins__": builtins})   # untimed
  # the backend brought up untimed on both sides, once per process as a user's session does: XLA's CPU client, and
  # tinygrad's device probing (it tries every backend in turn) and CPU runtime programs (compiled, with CCACHE=0), and
  # tinyjax's CPU graph executor (one C object per process, from tinygrad's disk cache after its first use ever: with
  # CCACHE=0, 0.5 s of clang in whichever run first replays a capture)
  if side == "jax": lib.devices()
  else:
    from tinygrad import Device
    from tinyjax._tg.cpu_graph import executor
    Device[Device.DEFAULT]
    executor(Device.DEFAULT)
  code = compile(tree, str(path), "exec")
  signal.signal(signal.SIGALRM, _alarm)
  if side == "jax":   # its persistent compilation cache, in a fresh directory: cold for the first run, hot for the warm one
    lib.config.update("jax_compilation_cache_dir", str(result.parent / "jaxcache"))   # the parent's temporary directory
    lib.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    lib.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
  runs = ["first", "warm"] + (["recompile"] if side == "jax" else []) + (["profile"] if profile else [])
  with result.open("a") as f:
    for run in runs:
      rec: dict = {"run": run}
      prof = None
      if run == "recompile":   # JAX without its persistent cache: a re-defined function's jit compiles again
        from jax._src import compilation_cache
        lib.config.update("jax_enable_compilation_cache", False)
        compilation_cache.reset_cache()
      gc.collect()   # the last run's garbage collected now, not by a full collection inside this run (~0.1 s after a compile)
      signal.setitimer(signal.ITIMER_REAL, timeout)
      try:
        t = time.perf_counter()
        if run == "profile":
          import cProfile
          prof = cProfile.Profile()
          prof.runcall(_exec, code, path, lib)
        else: _exec(code, path, lib)
        rec["s"] = time.perf_counter() - t
      except _Timeout: rec["timeout"] = timeout
      except Exception as e: rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
      finally: signal.setitimer(signal.ITIMER_REAL, 0)
      if prof is not None and "s" in rec:
        (OUT / "prof").mkdir(parents=True, exist_ok=True)
        prof.dump_stats(p := OUT / "prof" / f"{path.stem}.{side}.prof")
        rec["profile"] = _profile_summary(str(p))
      f.write(json.dumps(rec) + "\n")
      f.flush()
      if "s" not in rec: break

# ---- all programs (the parent) -------------------------------------------------------------------------------------

def run_one(side: str, path: Path, timeout: float, profile: bool) -> dict:
  """{run: seconds | 'timeout' | 'error: ...'} for the first and warm runs (and the profile lines)."""
  with tempfile.TemporaryDirectory() as d:
    res = Path(d) / "result.jsonl"
    cmd = [sys.executable, "-m", "bench.ports", "--one", side, str(path), "--timeout", str(timeout), "--result", str(res)]
    if profile: cmd.append("--profile")
    env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT)}
    killed, p = None, None
    try:
      p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=(3 if profile else 2) * timeout + 120)
    except subprocess.TimeoutExpired: killed = "timeout"
    recs = [json.loads(line) for line in res.read_text().splitlines()] if res.exists() else []
  out: dict = {}
  for r in recs:
    out[r["run"]] = r["s"] if "s" in r else "timeout" if "timeout" in r else r["error"]
    if "profile" in r: out["profile_lines"] = r["profile"]
  for run in ("first", "warm") + (("recompile",) if side == "jax" else ()):
    if run not in out and not any(isinstance(v, str) for v in out.values()):
      out[run] = killed or (f"error: exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1][:160]}" if p else "error")
  return out

def fmt(s) -> str:
  if not isinstance(s, float): return "timeout" if s == "timeout" else "error" if isinstance(s, str) else "-"
  return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"

def ratio(j, t, timeout: float) -> tuple[float | None, str]:
  """tinyjax / JAX; a tinyjax timeout counts as its lower bound."""
  if not isinstance(j, float): return None, "-"
  if t == "timeout": return timeout / j, f"> {timeout / j:.1f}x"
  if not isinstance(t, float): return None, "-"
  return t / j, f"{t / j:.2f}x" if t / j >= 0.1 else f"{t / j:.3f}x"

def summary(name: str, rs: list[float]) -> str:
  if not rs: return f"{name}: -"
  return (f"{name}: median {statistics.median(rs):.3g}x, geometric mean {math.exp(statistics.fmean(math.log(r) for r in rs)):.3g}x, "
          f"{sum(r > 3 for r in rs)} of {len(rs)} above 3x, range {min(rs):.3g}x to {max(rs):.3g}x")

def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--only", help="programs whose name contains this text (or one of these, comma-separated)")
  ap.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
  ap.add_argument("--quick", action="store_true", help="the first 10 programs only")
  ap.add_argument("--profile", action="store_true", help="a cProfile'd third run of each tinyjax program")
  ap.add_argument("--one", nargs=2, metavar=("SIDE", "PATH"), help=argparse.SUPPRESS)
  ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
  a = ap.parse_args()
  if a.one:
    return child(a.one[0], Path(a.one[1]), a.timeout, a.result, a.profile)

  files = [f for f in sorted(PORTS.glob("*.py")) if a.only is None or any(o in f.stem for o in a.only.split(","))]
  if a.quick: files = files[:10]
  load0, t0 = os.getloadavg(), time.time()
  rows, firsts, warms, recompiles, errors = [], [], [], [], []
  head = "| program | JAX first | tinyjax first | ratio | JAX warm | tinyjax warm | ratio | JAX warm, no compile cache | ratio |"
  print(head + "\n" + "|---" * 9 + "|", flush=True)
  for f in files:
    r = {side: run_one(side, f, a.timeout, a.profile and side == "tinyjax") for side in SIDES}
    j, t = r["jax"], r["tinyjax"]
    rf, sf = ratio(j.get("first"), t.get("first"), a.timeout)
    rw, sw = ratio(j.get("warm"), t.get("warm"), a.timeout)
    rr, sr = ratio(j.get("recompile"), t.get("warm"), a.timeout)
    if rf is not None: firsts.append(rf)
    if rw is not None: warms.append(rw)
    if rr is not None: recompiles.append(rr)
    row = (f"| {f.stem} | {fmt(j.get('first'))} | {fmt(t.get('first'))} | {sf} | {fmt(j.get('warm'))} | {fmt(t.get('warm'))} | {sw} "
           f"| {fmt(j.get('recompile'))} | {sr} |")
    rows.append((rw, row))
    print(row, flush=True)
    for side in SIDES:
      for run in ("first", "warm", "recompile"):
        v = r[side].get(run)
        if isinstance(v, str) and v != "timeout": errors.append(f"{f.stem} ({side}, {run} run): {v}")
    if "profile_lines" in t: print(f"tinyjax warm run of {f.stem}, profiled:\n" + "\n".join(t["profile_lines"]), flush=True)
  load1 = os.getloadavg()
  worst = [row.split(" | ")[0][2:] + f" ({r:.1f}x)" for r, row in sorted((x for x in rows if x[0] is not None), key=lambda x: -x[0])[:5]]
  lines = [summary("first run", firsts), summary("warm run", warms), summary("warm run against JAX without its compile cache", recompiles),
           "5 worst warm ratios: " + ", ".join(worst)] + \
          [f"failed: {e}" for e in errors]
  for line in lines: print(line)
  from importlib.metadata import version
  git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
  meta = (f"{time.strftime('%Y-%m-%d')}, git {git}, {platform.platform()}, {os.cpu_count()} cores; tinygrad {version('tinygrad')}, "
          f"jax {version('jax')}; settings {', '.join(f'{k}={v}' for k, v in ENV.items())}, timeout {a.timeout:g} s; load average "
          f"(1/5/15 min) at start {' '.join(f'{x:.2f}' for x in load0)}, at end {' '.join(f'{x:.2f}' for x in load1)}; "
          f"wall time {time.time() - t0:.0f} s")
  OUT.mkdir(parents=True, exist_ok=True)
  md = OUT / ("ports_quick.md" if a.quick or a.only else "ports.md")
  md.write_text(f"# Ports against JAX (`python -m bench.ports`)\n\n{meta}\n\n{head}\n" + "|---" * 9 + "|\n" +
                "\n".join(row for _, row in rows) + "\n\n" + "\n".join(f"- {line}" for line in lines) + "\n")
  print(f"wrote {md.relative_to(ROOT)}")

if __name__ == "__main__":
  main()

"""A realize's new CPU kernels compiled by one clang process (tinyjax/_tg/compile.py): counts, numbers, fallbacks.

Every kernel here is new to tinygrad's caches: its functions hold a constant drawn for this run, and the CPU compiler's
disk cache is off for the test (monkeypatched), so each first call really compiles."""
import os, subprocess, sys, textwrap
import numpy as np
import pytest
import jax, jax.numpy as jnp
from tinygrad import Device, Tensor
from tinygrad.runtime.support.compiler_cpu import ClangCompiler
import tinyjax, tinyjax.numpy as tnp
import tinyjax._tg.compile as tgc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C = float(np.random.default_rng().uniform(1.5, 2.5))   # new kernels in every run
RNG = np.random.default_rng(0)
X, W = RNG.standard_normal(16).astype(np.float32), (RNG.standard_normal((16, 16)) / 4).astype(np.float32)

def f(np_, c=C):   # tests in this process each use their own c: kernels compiled once are found again by tinyjax
  return lambda x, W: np_.tanh(np_.tanh(x @ W) * c @ W.T).sum()

@pytest.fixture
def clang(monkeypatch):
  """The clang processes started (one entry per process: the kernels' function names it compiled)."""
  monkeypatch.setattr(Device["CPU"].renderer.compiler, "cachekey", None)   # tinygrad's disk cache off: really compile
  runs: list[int] = []
  real = ClangCompiler.compile
  monkeypatch.setattr(ClangCompiler, "compile", lambda self, src: (runs.append(src.count("\nvoid ")), real(self, src))[1])
  return runs

def hessian(x, W, c): return np.asarray(tinyjax.jit(tinyjax.hessian(f(tnp, c)))(Tensor(x), Tensor(W)).numpy())

def test_one_clang_process_per_realize(clang):
  """A first call's kernels are compiled by one clang run (tinygrad: one per kernel); JAX's numbers."""
  before = tgc.compiles
  got = hessian(X, W, C)
  assert tgc.compiles == before + 1
  assert len(clang) == 1 and clang[0] >= 4, clang   # the hessian's kernels, all in one translation unit
  np.testing.assert_allclose(got, np.asarray(jax.jit(jax.hessian(f(jnp, C)))(X, W)), rtol=2e-5, atol=2e-5)   # float32, sums of cancelling terms

def test_a_failed_unit_falls_back_to_tinygrad(clang, monkeypatch):
  """Anything failing in the unit's compile or load leaves the kernels to tinygrad's own path: the same result."""
  def broken(compiler, srcs): raise RuntimeError("no unit")
  monkeypatch.setattr(tgc, "compile_unit", broken)
  monkeypatch.setattr(tgc, "RAISE", False)
  got = hessian(X, W, C + 0.5)
  assert len(clang) >= 2 and set(clang) == {1}, clang   # one process per kernel (those c changes), tinygrad's
  np.testing.assert_allclose(got, np.asarray(jax.jit(jax.hessian(f(jnp, C + 0.5)))(X, W)), rtol=2e-5, atol=2e-5)   # float32, sums of cancelling terms

def test_other_devices_keep_tinygrads_path():
  """tinygrad's PYTHON emulator has no clang: its kernels take tinygrad's own path (compile_kernels declines)."""
  before = tgc.compiles
  x = Tensor(X, device="PYTHON")
  got = tinyjax.jit(tinyjax.grad(f(tnp, C + 0.75)))(x, Tensor(W, device="PYTHON"))
  assert got.device == "PYTHON" and tgc.compiles == before
  np.testing.assert_allclose(got.numpy(), np.asarray(jax.grad(f(jnp, C + 0.75))(X, W)), rtol=2e-5, atol=2e-5)   # float32, sums of cancelling terms

_PROGRAM = textwrap.dedent(f"""
  import os, hashlib, numpy as np, tinyjax, tinyjax.numpy as tnp
  import tinyjax._tg.patches as tgp, tinyjax._tg.compile as tgc
  from tinygrad import Tensor
  from tinygrad.codegen import to_program_cache
  from tinygrad.runtime.support.compiler_cpu import ClangCompiler
  if os.environ["UNIT"] == "0": tgp.compile_kernels = lambda todo, direct: False
  if os.environ.get("NO_SPLIT"): tgc._MIN_SPLIT = 10 ** 9
  if os.environ.get("NO_PROGRAMS"): tgc._program_table = lambda renderer: None
  tgc.RAISE = True
  import tinygrad.codegen as cg
  runs, real, gens, real_gen = [], ClangCompiler.compile, [], cg.do_to_program
  ClangCompiler.compile = lambda self, src: (runs.append(1), real(self, src))[1]
  cg.do_to_program = lambda *a: (gens.append(1), real_gen(*a))[1]
  real_direct = tgp._direct_program   # (a unit's BLAS calls and plain C kernels, made without do_to_program)
  tgp._direct_program = lambda *a: (p := real_direct(*a)) is not None and gens.append(1) or p
  import tinygrad.schedule as sched
  scheds, real_sched = [], sched.get_kernel_graph
  sched.get_kernel_graph = lambda *a: (scheds.append(1), real_sched(*a))[1]
  x, W = np.linspace(-1, 1, 16, dtype=np.float32), np.sin(np.arange(256, dtype=np.float32)).reshape(16, 16) / 3
  f = lambda x, W: tnp.tanh(tnp.tanh(x @ W) * {C!r} @ W.T).sum()
  out = tinyjax.jit(tinyjax.hessian(f))(Tensor(x), Tensor(W)).numpy()
  out = np.concatenate([out.ravel(), tinyjax.jit(tinyjax.jacrev(tinyjax.grad(f, 1)))(Tensor(x), Tensor(W)).numpy().ravel()])   # a second unit
  binaries = hashlib.sha256(b"".join(sorted(p.src[-1].arg for p in to_program_cache.values()))).hexdigest()
  print(len(runs), hashlib.sha256(out.tobytes()).hexdigest(), tgc.forked, binaries, len(gens), len(scheds))
""")

def _run(unit: bool, **env) -> tuple[int, str]:
  return _run_all(unit, **env)[:2]   # type: ignore[return-value]

_RUNS: dict = {}

def _run_all(unit: bool, **env) -> tuple[int, str, int, str, int, int]:
  """(clang processes, the result's hash, kernels generated by forked processes, the programs' binaries' hash, kernels
  generated, graphs scheduled); a run
  without the disk cache is the same in every new process, so the tests share it"""
  key = (unit, tuple(sorted(env.items())))
  if env.get("CCACHE") == "0" and key in _RUNS: return _RUNS[key]
  out = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True, env={**os.environ, "PARALLEL": "0",
                       "UNIT": str(int(unit)), **env}, cwd=ROOT, check=True).stdout.split()
  result = _RUNS[key] = int(out[0]), out[1], int(out[2]), out[3], int(out[4]), int(out[5])
  return result

def test_same_numbers_as_tinygrads_own_compile():
  """In new processes (nothing cached): the programs compute what tinygrad's own per-kernel compile of the same
  kernels computes, bit for bit, with one clang process instead of one per kernel."""
  (n_unit, ours), (n_tg, theirs) = _run(True, CCACHE="0"), _run(False, CCACHE="0")
  assert ours == theirs
  assert n_unit < n_tg and n_tg - n_unit >= 3, (n_unit, n_tg)

def test_disk_cache(tmp_path):
  """With tinygrad's disk cache on (CCACHE), a new process finds every program of the unit: no clang at all."""
  env = {"CACHEDB": str(tmp_path / "cache.db"), "CCACHE": "1"}
  (n1, a), (n2, b) = _run(True, **env), _run(True, **env)
  assert n1 > 0 and n2 == 0 and a == b

def test_compiled_objects_on_disk_without_programs(tmp_path):
  """Kernels generated again (their programs not on disk: another stamp) whose objects are all on disk are compiled by
  no clang run, on this path (it raised once when no unit was left to compile, and tinygrad's path compiled them all
  again: only time, so unseen until a test counted)."""
  env = {"CACHEDB": str(tmp_path / "cache.db"), "CCACHE": "1", "PARALLEL": "2"}
  first, again = _run_all(True, **env), _run_all(True, **env, NO_PROGRAMS="1")
  generated = lambda run: run[4] + run[2]   # noqa: E731  (in this process and in the forked ones, as they took them)
  assert first[0] > 0 and again[0] == 0 and generated(again) == generated(first) > 0 and again[1] == first[1], (first, again)

@pytest.mark.parametrize("unit", [True, False], ids=["unit", "tinygrad's path"])
def test_generated_programs_on_disk(tmp_path, unit):
  """With the disk cache on, a new process finds the generated programs and the schedules too: no graph is scheduled
  and no kernel's code generated again, the same numbers and binaries. A setting tinygrad reads (ALIGNED: the C
  source's vector alignment) is part of the stamp: programs made with another value are not taken."""
  env = {"CACHEDB": str(tmp_path / "cache.db"), "CCACHE": "1"}
  first, again = _run_all(unit, **env), _run_all(unit, **env)
  assert first[4] >= 4 and first[5] >= 2 and again[4] == again[5] == again[0] == 0, (first, again)
  assert first[1:4] == again[1:4]
  other = _run_all(unit, **env, ALIGNED="0")
  assert other[4] == first[4] and other[1] == first[1], (first, other)

def test_parallel_code_generation():
  """With PARALLEL > 1 (tinygrad's default: the number of cores) the kernels' code is generated by forked processes too, as
  tinygrad's own path generates it in its worker pool, and the unit compiled here: the same binaries and numbers as
  generating them one by one in this process, the same one clang run. A unit of at least 6 new kernels is then
  compiled by two clang runs at once (here the hessian's; the second function's unit is smaller): the same numbers."""
  tinygrads = {"TINYJAX_PLAIN_C": "0"}   # (every kernel generated by tinygrad's passes: plain C ones are made here)
  n_par, out_par, forked, bins_par, *_ = _run_all(True, CCACHE="0", PARALLEL="2", NO_SPLIT="1", **tinygrads)
  n_ser, out_ser, none, bins_ser, *_ = _run_all(True, CCACHE="0", **tinygrads)
  assert forked > 0 and none == 0, (forked, none)
  assert (n_par, out_par, bins_par) == (n_ser, out_ser, bins_ser)
  n_split, out_split, *_ = _run_all(True, CCACHE="0", PARALLEL="2", **tinygrads)
  assert (n_split, out_split) == (n_ser + 1, out_ser)

def test_tinygrads_path_generates_in_process():
  """Kernels left to tinygrad's path (compile_kernels declining) are generated in this process, not by tinygrad's
  spawned workers, which import tinygrad alone, without tinyjax's patches of its code generation (patches.py): the
  numbers of the unit's path (with PARALLEL=2 they differed: other unrolls of the soft tanh, other roundings)."""
  assert _run(False, CCACHE="0", PARALLEL="2")[1] == _run(True, CCACHE="0")[1]

def test_schedules_on_disk_hold_content_only(tmp_path, monkeypatch):
  """A schedule is kept on disk only if it is content alone (it pickles back to the same UOps) and has no host call:
  one holding a Python object of this process, or a host call (its executor is this process's, under a name another
  process gives to another call), is not, and is not found by another process."""
  from tinygrad import helpers
  from tinygrad.uop.ops import UOp, Ops
  monkeypatch.setattr(helpers, "CACHEDB", str(tmp_path / "cache.db"))
  monkeypatch.setattr(helpers, "_db_connection", None)
  monkeypatch.setattr(helpers, "_db_tables", set())   # (the tables tinygrad created in the real cache)
  class Rule: pass
  graphs = {name: UOp(Ops.SINK, src=(UOp(Ops.NOOP, arg=(name, C)),)) for name in ("content", "object", "host call")}
  made = {"content": UOp(Ops.NOOP, arg=("content", C, "scheduled")), "object": UOp(Ops.NOOP, arg=Rule()),
          "host call": UOp(Ops.NOOP, src=(UOp(Ops.CUSTOM_FUNCTION, arg="tinyjax_host_0"),))}
  def schedule(cache, calls):
    def run(function):
      calls.append(function)
      return cache.setdefault(function.key, made[function.src[0].arg[0]])
    return run
  mine, calls = {}, []
  assert [tgc.schedule_from_disk(g, mine, schedule(mine, calls)) for g in graphs.values()] == list(made.values())
  tgc.flush()   # (written in batches)
  theirs, again = {}, []   # another process: only the disk
  assert [tgc.schedule_from_disk(g, theirs, schedule(theirs, again)) for g in graphs.values()] == list(made.values())
  assert theirs[graphs["content"].key] is made["content"] and again == list(graphs.values())   # (found, then tinygrad's cache hit)
  for name in ("object", "host call"): assert tgc.diskcache_get(tgc._table("schedule"), tgc._stable_key(graphs[name])) is None
  helpers._db_connection.close()

def test_a_clang_started_ahead_gives_the_same_object(monkeypatch):
  """tinygrad's compile writes its source into a clang started when code generation began (compile.prepare, with the
  last compile's command line): the same object bytes as a clang started for it; a compile error raises as tinygrad's
  does; a forked process closes its copies of a waiting clang's pipes, so the compile here still ends (a copy of its
  stdin would keep it waiting); a first call's code generation starts one."""
  import multiprocessing, time
  import tinygrad.runtime.support.compiler_cpu as cc
  assert cc.subprocess is tgc.StandbyClang
  compiler = Device["CPU"].renderer.compiler
  src = f"void k(float* restrict out, const float* restrict a) {{ for (int i = 0; i < 40; i++) out[i] = a[i] * {C}f + 1.0f; }}"
  first = compiler.compile(src)
  def waiting() -> int: return sum(p.poll() is None for ps in tgc._waiting.values() for p in ps)
  tgc.prepare(2)
  assert waiting() >= 2
  with monkeypatch.context() as m:   # the same source by a clang started for it
    m.setattr(cc, "subprocess", subprocess)
    plain = compiler.compile(src)
  with monkeypatch.context() as m:   # a clang waiting: none started for this compile
    m.setattr(tgc.subprocess, "check_output", lambda *a, **k: pytest.fail("a clang was started for the compile"))
    again = compiler.compile(src)
  assert again == first == plain
  child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(5,))
  child.start()
  try:
    t = time.perf_counter()
    assert compiler.compile(src.replace("1.0f", "2.0f")) != first   # (the second waiting clang, made before the fork)
    assert time.perf_counter() - t < 4   # (not waiting for the child to exit)
  finally:
    child.kill()
    child.join()
  for _ in range(2):   # a waiting clang, then one started for it
    tgc.prepare(1)
    with pytest.raises(subprocess.CalledProcessError): compiler.compile("void k( {")
  for broken in (lambda p: p.stdin.close(), lambda p: (p.kill(), p.wait())):   # a waiting clang's pipe or itself gone
    tgc.prepare(1)
    for p in (p for ps in tgc._waiting.values() for p in ps): broken(p)
    assert compiler.compile(src) == first
  tgc._stop_waiting()
  hessian(X, W, C + 1.125)   # (new kernels: code generation prepares a clang)
  assert waiting() == 0   # (used by the compile, none started after it)
  started = []
  monkeypatch.setattr(tgc, "_start", lambda cmd: (started.append(cmd), None)[1])
  hessian(X, W, C + 1.375)
  assert started

def test_transcendental_functions_are_compiled_apart_and_linked(clang, monkeypatch):
  """plain C's functions for short loops' transcendentals (a float64 sine and cosine: ~45 ms of clang in every unit
  that defined them) are compiled apart, once per machine, and linked into the units that call them: a unit declares
  them. The numbers are the functions' (within 2 ulps of numpy's sine and cosine)."""
  seen: list[str] = []
  real = ClangCompiler.compile
  monkeypatch.setattr(ClangCompiler, "compile", lambda self, src: (seen.append(src), real(self, src))[1])
  x = RNG.uniform(-1e3, 1e3, 9)
  def fn(c): return lambda v: ((v[:5] * c).sin() * 2, (v[5:] * c).cos() * 3)   # two kernels: one unit
  for c in (C + 0.125, C + 0.25):
    sin2, cos3 = tinyjax.jit(fn(c))(Tensor(x))
    np.testing.assert_allclose(sin2.numpy(), np.sin(x[:5] * c) * 2, rtol=5e-16, atol=0)
    np.testing.assert_allclose(cos3.numpy(), np.cos(x[5:] * c) * 3, rtol=5e-16, atol=0)
  units = [s for s in seen if "tinyjax_kernel_" in s]
  assert len(units) == 2 and all("tinyjax_sin_double(double x);" in s and "tinyjax_cos_double(double x);" in s for s in units), units
  assert not any("tinyjax_sin_double_big(double x) {" in s for s in units)
  # the functions' own compiles: none where they were on disk already, else once in this process
  assert sum("tinyjax_sin_double_big(double x) {" in s for s in seen) <= 1

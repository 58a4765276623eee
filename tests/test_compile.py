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
  import tinyjax._tg.patches as tgp
  from tinygrad import Tensor
  from tinygrad.runtime.support.compiler_cpu import ClangCompiler
  if os.environ["UNIT"] == "0": tgp.compile_kernels = lambda todo: False
  runs, real = [], ClangCompiler.compile
  ClangCompiler.compile = lambda self, src: (runs.append(1), real(self, src))[1]
  x, W = np.linspace(-1, 1, 16, dtype=np.float32), np.sin(np.arange(256, dtype=np.float32)).reshape(16, 16) / 3
  out = tinyjax.jit(tinyjax.hessian(lambda x, W: tnp.tanh(tnp.tanh(x @ W) * {C!r} @ W.T).sum()))(Tensor(x), Tensor(W)).numpy()
  print(len(runs), hashlib.sha256(out.tobytes()).hexdigest())
""")

def _run(unit: bool, **env) -> tuple[int, str]:
  out = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True, env={**os.environ, "PARALLEL": "0",
                       "UNIT": str(int(unit)), **env}, cwd=ROOT, check=True).stdout.split()
  return int(out[0]), out[1]

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

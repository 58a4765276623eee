"""Helpers shared by the test files (`from conftest import rnd, ...`: pytest puts tests/ on sys.path) and fixtures.

Importing this file enables JAX's float64 (x64) mode, so the JAX references compute in float64 like the tinygrad inputs.
"""
import os
import numpy as np
import pytest
import jax
import tinyjax
import jax.tree_util as jtu
from tinygrad import Tensor
from tinygrad.helpers import Context, GlobalCounters

from tinyjax import tree_util as tu

jax.config.update("jax_enable_x64", True)
# JAX's persistent compilation cache for the references, next to tinygrad's: compiling them was a fifth of the suite's
# time, and the two xdist workers compile many of the same programs. A cached executable is the one XLA compiled, so
# the references' values are unchanged (a flag such as XLA's optimization level would change them: FMA contraction).
jax.config.update("jax_compilation_cache_dir", os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tinyjax", "jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
tinyjax.config.update("jax_enable_x64", True)   # numpy float64 data enters tinyjax as float64 too, as it enters JAX

RTOL, ATOL = 1e-9, 1e-11   # float64 against JAX


@pytest.fixture(autouse=True, scope="session")
def compile_in_process():
  """Compile kernels in this process: tinygrad's compile worker pool (respawned every 16 kernels; one worker under
  `pytest -n 2` on 2 cores) costs more than it saves on the tests' many small graphs (about a quarter of their time).
  And without tinygrad's kernel optimizations (NOOPT): on the tests' tiny arrays, upcasting and unrolling buy no speed
  but make every kernel several times larger to rewrite (a fifth of the suite's time). The kernels are the same in
  number; the programs a user runs (tests/test_ports.py, test_fuzz.py, test_docs.py) keep the optimizations on."""
  with Context(PARALLEL=0, NOOPT=1): yield

@pytest.fixture
def tinygrad_optimizations():
  """tinygrad's default kernel optimizations, as a user runs them (see compile_in_process)."""
  with Context(NOOPT=0): yield


# ---- data -----------------------------------------------------------------------------------------------------------

def rnd(*shape, seed=0, scale=1.0, dtype=np.float64):
  return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)

def tg(tree):
  """numpy leaves -> tinygrad Tensors (other leaves untouched); works on tinyjax-registered custom nodes too."""
  return tu.tree_map(lambda a: Tensor(a) if isinstance(a, np.ndarray) else a, tree)

def to_np(tree):
  """Tensor leaves -> numpy, realizing all of them in one schedule."""
  ts = [t for t in tu.tree_leaves(tree) if isinstance(t, Tensor)]
  if ts: Tensor.realize(*ts)
  return tu.tree_map(lambda t: t.numpy() if isinstance(t, Tensor) else np.asarray(t), tree)


# ---- comparing with JAX ---------------------------------------------------------------------------------------------

def ref(thunk):
  """JAX's answer, computed under jax.jit (one XLA compile instead of one per primitive). Some JAX versions reject
  closed-over numpy constants under jit + vmap of custom_jvp/custom_vjp ("non-canonical constant"): then eagerly."""
  try: return jax.jit(thunk)()
  except AssertionError: return thunk()

def assert_close(got, want, rtol=RTOL, atol=ATOL, dtype=True):
  """got (Tensors) == want (numpy / JAX arrays, or a thunk computing them with JAX, run under jax.jit): same tree, shapes
  and dtypes (dtype=False: any dtypes, compared as float64)."""
  if callable(want): want = ref(want)
  got = to_np(got)
  gs, ws = jtu.tree_structure(got), jtu.tree_structure(want)
  assert gs == ws, (gs, ws)
  for g, w in zip(jtu.tree_leaves(got), jtu.tree_leaves(want), strict=True):
    w = np.asarray(w)
    assert g.shape == w.shape, (g.shape, w.shape)
    if dtype: assert g.dtype == w.dtype, (g.dtype, w.dtype)
    else: g, w = g.astype(np.float64), w.astype(np.float64)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)

def raises(fn):
  with pytest.raises(Exception) as ei: fn()
  return ei.value

def norm_msg(msg: str) -> str:
  """The parts of an error message that necessarily differ between tinyjax and JAX: the package name in advice,
  and the pytree repr (optree's PyTreeSpec vs JAX's PyTreeDef)."""
  return msg.replace("tinyjax.", "jax.").replace("PyTreeSpec(", "PyTreeDef(")

def same_error(tj_fn, jax_fn, upto: str | None = None):
  """tinyjax raises what JAX raises: same exception type, same message (up to and including `upto` if given)."""
  tj, jx = raises(tj_fn), raises(jax_fn)
  assert type(tj).__name__ == type(jx).__name__, (type(tj), type(jx), str(tj))
  want = str(jx)
  if upto is not None:
    assert upto in want, f"test bug: {upto!r} not in JAX's message {want!r}"
    want = want[:want.index(upto) + len(upto)]
  got = norm_msg(str(tj))
  assert got.startswith(want), f"\n tinyjax: {got!r}\n     JAX: {want!r}"
  return tj


# ---- kernels --------------------------------------------------------------------------------------------------------

def kernel_count(fn) -> int:
  """How many kernels fn() launches."""
  GlobalCounters.reset()
  fn()
  return GlobalCounters.kernel_count


# ---- scheduling ---------------------------------------------------------------------------------------------------------

FIRST = ("test_ports.py", "test_fuzz.py")   # the longest tests (10-25 s each): started first, so no worker ends on one

def pytest_collection_modifyitems(items):
  items.sort(key=lambda item: item.path.name not in FIRST)   # stable: the order within each group is kept

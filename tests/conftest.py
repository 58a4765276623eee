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
# a failure of the one-clang-process compile raises here (for a user it falls back to tinygrad's compile, which only
# costs time, so a bug there is otherwise unseen); tests of that fallback turn it off
tinyjax._tg.compile.RAISE = True

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

def ulps(got, want) -> np.ndarray:
  """|got - want| in ulps of their dtype; both nan: 0, one nan: inf. Values below the smallest normal count as zeros
  (JAX's CPU flushes them), and zeros of different signs are 1 apart."""
  got, want = np.asarray(got), np.asarray(want, np.asarray(got).dtype)
  tiny = np.finfo(got.dtype).tiny
  got, want = (np.where(np.abs(a) < tiny, np.copysign(0, a), a) for a in (got, want))
  it = {4: np.int32, 8: np.int64}[got.dtype.itemsize]
  def ordinal(a):   # the floats in order as integers, -0. just below +0.
    i = a.view(it).astype(object)
    return np.where(i < 0, -1 - (i - np.iinfo(it).min), i)
  d = np.abs(ordinal(got) - ordinal(want)).astype(np.float64)
  return np.where(np.isnan(got) & np.isnan(want), 0, np.where(np.isnan(got) | np.isnan(want), np.inf, d))

def eager_and_jitted(fn, *args) -> list[tuple[str, object]]:
  """fn(*args) eagerly and under tinyjax.jit, as numpy."""
  return [("eager", to_np(fn(*args))), ("jit", to_np(tinyjax.jit(fn)(*args)))]

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


# ---- test tiers -----------------------------------------------------------------------------------------------------
# Two markers (registered in pyproject.toml), assigned here from the lists below so that the test files need no edits:
#   pytest -m fast        (bash scripts/test.sh --fast) structural tests: the rule tables, the op table, kernel and trace
#                         counts, one case per jnp function, the patches, the layers, the conventions. They catch most
#                         mistakes of a change to one rule in about 70 s on 2 cores (warm caches); run them while working.
#   pytest -m slow        integration tests: whole programs (ports, docs pages, model examples, the fuzzer, IPOPT) and
#                         several devices (CPU:1 ...); `-m "not slow"` leaves them out.
#   pytest                everything: fast, slow and the rest (bash scripts/test.sh, CI).
# An entry is a file name (all its tests), "file::test" (every parameter of a test) or "file::test[id]" (one); a test
# in both lists is slow (a file is fast but some of its tests slow), and an entry that names no test makes a failing
# test (a test renamed: update the entry).

FAST = {
  "test_rule_tables.py": "the rule tables held against each other: a rule added to one table and not the others",
  "test_op_table.py": "every op of the rule tables through vmap, jvp, vjp and sparsity against JAX: a rule's numbers",
  "test_patches.py": "what importing tinyjax changes in tinygrad, against the list in docs/design.md",
  "test_layers.py": "the import layers of tinyjax/ (read with ast, no kernels)",
  "test_public_names.py": "JAX's public names: each in tinyjax or listed in docs/porting.md (no kernels but a few)",
  "test_vmap_kernels.py": "kernel counts: vmap launches as many kernels as the batch axis written by hand",
  "test_jit.py": "jit's trace and cache counts, replays, kernels, static arguments (but see FAST_EXCEPT)",
  "test_compile.py::test_one_clang_process_per_realize": "clang processes per first call",
  "test_jit_inputs.py": "one trace per signature for every kind of input (but see SLOW: the sharded ones)",
  # kernel counts of the jnp functions and of the collectives, as hand-written tinygrad
  "test_numpy_math.py::test_kernels_as_hand_written": "kernel counts",
  "test_numpy_products.py::test_kernels_as_hand_written": "kernel counts",
  "test_numpy_reductions.py::test_kernel_counts": "kernel counts",
  "test_numpy_indexing.py::test_kernels": "kernel counts",
  "test_numpy_shape.py::test_static_take_kernels": "kernel counts",
  "test_numpy_creation.py::test_constants_have_no_kernel": "kernel counts",
  "test_nn_scipy.py::test_kernels_as_hand_written": "kernel counts",
  "test_collectives.py::test_one_kernel": "kernel counts",
  # trace counts elsewhere: a loop body, an optimizer step, keys, a sparse Jacobian traced once
  "test_control_flow.py::test_scan_traces_its_body_once_whatever_the_length": "trace counts",
  "test_optim.py::test_jit_step_no_retrace": "trace counts",
  "test_random.py::test_jit_traces_keys": "trace counts",
  "test_sparse.py::test_call_with_other_shapes_is_an_error_and_repeated_calls_reuse_the_trace": "trace counts",
  "test_linalg.py::test_solve_and_inv_are_one_lapack_call": "call counts",
  # the derivative conventions (test_conventions.py): the lines of the elementwise table at kinks and domain ends (the
  # whole table takes 66 s), that the float32 rewrite keeps values and dtypes, and its kernel counts
  **{f"test_conventions.py::test_unary[{n}]": "conventions at a kink or a domain end"
     for n in ("abs", "relu", "maximum", "sqrt", "pow_0")},
  "test_conventions.py::test_rewrite_keeps_values_bit_for_bit": "the rewrite keeps values",
  "test_conventions.py::test_dtype_and_value_of_the_rewritten_float32_graph": "the rewrite keeps dtypes",
  "test_conventions.py::test_first_derivatives_cost_no_extra_kernel": "kernel counts of the conventions",
  # complex numbers: the dtypes and JAX's conventions in reverse mode; an FFT on the host launches no kernel
  "test_complex.py::test_promotion": "complex promotion against JAX, x64 on and off",
  "test_complex.py::test_grad_conjugate_convention": "JAX's conjugate convention in grad, vjp and jacrev",
  "test_complex.py::test_errors_are_jaxs": "holomorphic= errors",
  "test_fft.py::test_eager_host_fft_launches_no_kernel": "kernel counts",
}
# and, in the tables of functions (tests/jnp_table.py rows: tinyjax.numpy, numpy.linalg, scipy, nn), the value check of
# each function's first row (see _jnp_function): every function runs once against JAX
JNP_TABLES = ("test_numpy_", "test_linalg.py", "test_nn_scipy.py")

FAST_EXCEPT = {
  "test_jit.py::test_jitted_training_step_with_tinygrad_optimizers": "whole training steps (20 s), no count checked",
  "test_jit.py::test_transforms_of_a_jitted_function": "numbers of compositions (12 s), no count checked",
  "test_jit.py::test_jit_of_each_transform": "numbers of compositions, no count checked",
}

SLOW = {
  "test_ports.py": "real JAX programs run with JAX and with tinyjax (10-25 s each)",
  "test_docs.py": "every python block of the README and docs pages",
  "test_fuzz.py": "the differential fuzzer on 100 random programs",
  "test_model_examples.py": "the model examples (DP-SGD, deep ensembles, Hessian-vector products) trained",
  "test_sparse.py::test_ipopt_bicycle_example": "IPOPT (cyipopt) solves an optimal-control problem",
  # several devices (CPU:1 ...)
  "test_jit_inputs.py::test_sharded_tensors": "several devices",
  "test_jit_inputs.py::test_numpy_with_sharded_tensors_is_replicated": "several devices",
  "test_numpy_indexing.py::test_array_indices_on_a_multi_device_array": "several devices",
  "test_vmap_constructs.py::test_copy_to_other_device": "several devices",
  "test_sparse.py::test_colors_split_across_devices": "several devices",
  "test_sparse.py::test_vmap_over_a_batch_sharded_along_it": "several devices",
  "test_sparse.py::test_sharded_points_and_batches_that_are_not_supported": "several devices",
  "test_pmap.py": "pmap on four CPU devices, against jax.pmap in a subprocess",
}

# tests that need an optional package of the test extra (imported inside the test, so collecting never needs it):
# skipped, saying so, where it is not installed. Neither is fast; scripts/setup.sh installs both for the full run.
NEEDS = {
  "test_sparse.py::test_ipopt_bicycle_example": "cyipopt",
  "test_sparse.py::test_structure_lower_triangle_summary_and_spy": "matplotlib",
}

FIRST = ("test_ports.py", "test_fuzz.py")   # the longest tests (10-25 s each): started first, so no worker ends on one


def _keys(item) -> tuple[str, ...]:
  """The entries that name an item: its file, file::test, file::test[id]."""
  name = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else ""
  return (item.path.name, f"{item.path.name}::{name.split('[', 1)[0]}", f"{item.path.name}::{name}")

def _jnp_function(item) -> str | None:
  """The jnp function a jnp-table item checks, or None for any other item: its row's name up to the first "-"
  ("sum-keepdims" is sum), or up to the second for x.at[] and scipy.linalg rows ("at-add-slice", "sp-lu_solve")."""
  row = getattr(item, "callspec", None) and item.callspec.params.get("row")
  if row is None or not hasattr(row, "tj") or not hasattr(row, "jx"): return None
  parts = row.name.split("-")
  return "-".join(parts[:2]) if parts[0] in ("at", "sp") else parts[0]

class _StaleTierEntries(pytest.Item):
  """A failing test naming the entries of FAST, FAST_EXCEPT, SLOW and NEEDS that name no test (a test was renamed): a
  test rather than a collection error, whose message pytest-xdist would lose."""
  def __init__(self, *, stale, **kw):
    super().__init__(**kw)
    self.stale = stale
    self.add_marker(pytest.mark.fast)
  def runtest(self): raise AssertionError(f"tests/conftest.py: tier entries that name no test (renamed? update them): {self.stale}")
  def repr_failure(self, excinfo, style=None): return str(excinfo.value)
  def reportinfo(self): return self.path, None, self.name

def pytest_ignore_collect(collection_path, config):
  """Under exactly `-m fast`, files without a fast test are not even imported (collecting everything costs ~10 s)."""
  if config.getoption("markexpr") != "fast" or not collection_path.name.startswith("test_") or collection_path.suffix != ".py": return None
  return None if collection_path.name.startswith(JNP_TABLES) or any(e.split("::")[0] == collection_path.name for e in FAST) else True

def pytest_collection_modifyitems(config, items):
  import importlib.util
  seen, used = set(), set()
  for item in items:
    keys = _keys(item)
    fast = any(k in FAST for k in keys)
    if item.path.name.startswith(JNP_TABLES) and (fn := _jnp_function(item)) and (key := (keys[1], fn)) not in seen:
      seen.add(key)
      fast = True
    fast = fast and not any(k in FAST_EXCEPT for k in keys)
    if any(k in SLOW for k in keys): item.add_marker(pytest.mark.slow)
    elif fast: item.add_marker(pytest.mark.fast)
    if (need := NEEDS.get(keys[1])) and importlib.util.find_spec(need) is None:
      item.add_marker(pytest.mark.skip(reason=f"needs {need} (the test extra: bash scripts/test.sh installs it)"))
    used.update(keys)
  # when whole files were collected (no "file::test" argument), every entry about one of them must name a test
  if not any("::" in a for a in config.args):
    modules = {item.path.name: item.parent for item in items}
    stale = [e for e in (*FAST, *FAST_EXCEPT, *SLOW, *NEEDS) if e.split("::")[0] in modules and e not in used]
    if stale: items.append(_StaleTierEntries.from_parent(modules[stale[0].split("::")[0]], name="test_tier_entries", stale=stale))
  items.sort(key=lambda item: item.path.name not in FIRST)   # stable: the order within each group is kept

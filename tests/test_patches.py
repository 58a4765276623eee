"""What importing tinyjax changes in tinygrad: exactly the patches `tinyjax._tg.patches.install()` applies, each listed
with its reason in docs/design.md. A patch added or removed without updating the list fails here."""
import os, re, subprocess, sys, json
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# in a fresh process: every attribute of every tinygrad module (and of the classes defined there) before and after
# `import tinyjax`; a callable, property or pattern matcher that is new or replaced is a patch
_PROBE = r"""
import sys, json, inspect
import tinygrad, tinygrad.nn, tinygrad.nn.optim, tinygrad.nn.state, tinygrad.engine.realize, tinygrad.engine.jit
import tinygrad.schedule.rangeify, tinygrad.codegen, tinygrad.codegen.opt.heuristic, tinygrad.mixin.gradient, tinygrad.runtime.ops_cpu
import tinygrad.runtime.support.compiler_cpu
from tinygrad.uop.ops import PatternMatcher
def is_code(v):   # (a table of functions, such as the ALU's, is code too; so is a tuple of config variables)
  return callable(v) or isinstance(v, (property, PatternMatcher)) or (isinstance(v, dict) and bool(v) and all(callable(f) for f in v.values())) \
    or (isinstance(v, tuple) and bool(v) and all(isinstance(x, tinygrad.helpers.ContextVar) for x in v))
classes = set()
def snap():
  out = {}
  for name, mod in list(sys.modules.items()):
    if not name.startswith("tinygrad") or mod is None: continue
    for k, v in list(vars(mod).items()):
      out[f"{name}.{k}"] = v
      if isinstance(v, type) and v.__module__ == name:
        classes.add(f"{name}.{v.__qualname__}")
        for a, w in list(vars(v).items()): out[f"{name}.{v.__qualname__}.{a}"] = w
  return out
before = snap()
owners = {x.rsplit(".", 1)[0] for x in before}
import tinyjax
after = snap()
# a class's attributes all count (Tensor.__array_priority__); a module's, when they are code (not its counters and caches)
changed = [k for k, v in after.items() if (o := k.rsplit(".", 1)[0]) in owners and (o in classes or is_code(v))
           and (k not in before or before[k] is not v)]
print(json.dumps({"changed": sorted(changed), "applied": sorted(tinyjax._tg.patches.APPLIED)}))
"""

def _probe() -> dict:
  out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=ROOT, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])

def test_the_patches_applied_are_the_patches_listed():
  got = _probe()
  assert got["changed"] == got["applied"], (
    f"importing tinyjax changes tinygrad outside tinyjax/_tg/patches.py:\n  not recorded: {sorted(set(got['changed']) - set(got['applied']))}\n"
    f"  recorded but not changed: {sorted(set(got['applied']) - set(got['changed']))}")
  with open(os.path.join(ROOT, "docs", "design.md")) as f: doc = f.read()
  section = doc[doc.index("## What importing tinyjax changes in tinygrad"):]
  section = section[:section.index("\n## ", 4)]
  listed = set(re.findall(r"`(tinygrad\.[\w.]+)`", section))
  # Tensor methods are listed by name: `tinygrad.tensor.Tensor.{astype, ravel, ...}` in the docs' table
  for group in re.findall(r"`tinygrad\.tensor\.Tensor\.\{([^}]*)\}`", section):
    listed |= {f"tinygrad.tensor.Tensor.{n.strip()}" for n in group.split(",")}
  assert listed == set(got["applied"]), (f"docs/design.md lists {sorted(listed - set(got['applied']))} that are not applied and "
                                         f"misses {sorted(set(got['applied']) - listed)}")


def test_kernels_of_software_transcendentals_get_at_most_4_lanes():
  # clang has no sin: each lane of an UPCAST/UNROLL copies its polynomial, and tinygrad unrolls a reduce of 16 whole.
  # The sin kernel's unroll is narrowed to 4 lanes; a kernel of plain arithmetic keeps tinygrad's whole unroll
  import numpy as np
  from tinygrad import Tensor
  from tinygrad.uop.ops import Ops
  from tinygrad.helpers import Context
  import tinyjax, tinyjax.numpy as tnp
  x = np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32)
  def lanes(fn) -> tuple:
    f = tinyjax.jit(fn)
    with Context(NOOPT=0): out = f(Tensor(x)).numpy()   # (the suite runs with tinygrad's optimizations off)
    opts = [u.src[0].arg.applied_opts for u in next(iter(f._cache.values())).tinyjit.captured.linear.toposort() if u.op is Ops.PROGRAM]
    return out, opts
  got, opts = lanes(lambda v: tnp.sin(v).sum(1))
  np.testing.assert_allclose(got, np.sin(x).sum(1), rtol=1e-5, atol=1e-5)
  assert [[(o.op.name, o.arg) for o in k] for k in opts] == [[("UNROLL", 4)]], opts
  got, opts = lanes(lambda v: (v * v).sum(1))
  np.testing.assert_allclose(got, (x * x).sum(1), rtol=1e-5)
  assert [[(o.op.name, o.arg) for o in k] for k in opts] == [[("UNROLL", 0)]], opts   # 0: the whole axis
  # a matrix-vector product gets 4 outputs per loop on the CPU (tinygrad upcasts outputs only from 1024 of them); the
  # tanh of its result depends on the outputs' axis only: the reduce's UNROLL makes no copy of it
  a = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
  got, opts = lanes(lambda v: tnp.tanh(v[0] @ Tensor(a)))
  np.testing.assert_allclose(got, np.tanh(x[0] @ a), rtol=1e-5, atol=1e-6)
  assert [[(o.op.name, o.arg) for o in k] for k in opts] == [[("UPCAST", 4), ("UNROLL", 4)]], opts   # (within 16 lanes)
  # an elementwise kernel of one gets no lanes on the CPU: clang vectorises its plain loop (tinygrad's UPCAST 4 left it
  # scalar code, 7x slower)
  got, opts = lanes(lambda v: tnp.exp(v) * 2)
  np.testing.assert_allclose(got, np.exp(x) * 2, rtol=1e-6)
  assert opts == [()], opts


def test_a_cpu_reduce_accumulates_each_unrolled_lane_on_its_own():
  # tinygrad adds a reduce's UNROLL lanes into one accumulator each iteration (acc + p0 + p1 + ...: a chain of dependent
  # adds); on the CPU each lane is an accumulator of its own, summed after the loop, and the split of a long reduce is
  # widened to 16 lanes of accumulators (4 outputs x 4 lanes for a 64x64 matrix-vector product)
  import re
  import numpy as np
  from tinygrad import Tensor
  from tinygrad.uop.ops import Ops
  from tinygrad.helpers import Context
  import tinyjax, tinyjax.numpy as tnp
  rng = np.random.default_rng(4)
  def kernels(fn, *xs) -> tuple:
    f = tinyjax.jit(fn)
    with Context(NOOPT=0): out = f(*[Tensor(x) for x in xs]).numpy()
    progs = [u for u in next(iter(f._cache.values())).tinyjit.captured.linear.toposort() if u.op is Ops.PROGRAM]
    return out, [([(o.op.name, o.arg) for o in p.src[0].arg.applied_opts], next(s.arg for s in p.src if s.op is Ops.SOURCE)) for p in progs]
  v, a = rng.standard_normal(64), rng.standard_normal((64, 64))
  got, [(opts, src)] = kernels(lambda v, a: v @ a, v, a)
  np.testing.assert_allclose(got, v @ a, rtol=1e-13, atol=1e-13)
  assert opts == [("UPCAST", 4), ("UNROLL", 4)], opts
  assert re.search(r"double buf0\[16\];", src), src   # 4 outputs x 4 lanes: one accumulator each
  # the lanes of a max and of an integer sum, exact
  m = rng.standard_normal((4, 256))
  got, [(opts, _)] = kernels(lambda m: tnp.max(m, axis=1), m)
  np.testing.assert_array_equal(got, m.max(1))
  assert opts == [("UPCAST", 0), ("UNROLL", 4)], opts   # (UPCAST 0: all 4 rows)
  n = rng.integers(-2**40, 2**40, (4, 256))
  got, _ = kernels(lambda n: n.sum(1), n)
  np.testing.assert_array_equal(got, n.sum(1))
  # tinygrad unrolls a reduce of 32 whole: with 4x4 outputs, 512 accumulators; narrowed to 32 (an integer product: a
  # float one of this size is a BLAS call, tests/test_blas.py)
  p, q = rng.integers(-100, 100, (64, 32)), rng.integers(-100, 100, (32, 64))
  got, [(opts, _)] = kernels(lambda p, q: p @ q, p, q)
  np.testing.assert_array_equal(got, p @ q)
  assert opts == [("UPCAST", 4), ("UPCAST", 4), ("UNROLL", 2)], opts


def test_a_cpu_reduce_and_its_transcendental_epilogue_are_two_kernels():
  # tanh(v @ A) in one kernel computes the tanh at each output as the reduce ends, where clang leaves it scalar; on the
  # CPU the matvec stores its result and the tanh (with the elementwise values after it) is a plain loop of its own.
  # Softmax's exp reads its max broadcast (not a reduce's result elementwise) and a reduce of under 32 outputs keeps
  # its epilogue: unchanged
  import numpy as np
  from tinygrad import Tensor, GlobalCounters
  import jax, jax.numpy as jnp
  import tinyjax, tinyjax.numpy as tnp
  from tinyjax import nn
  from tinyjax.scipy.special import logsumexp
  rng = np.random.default_rng(5)
  v, a, x = rng.standard_normal(64), rng.standard_normal((64, 64)) / 8, rng.standard_normal((8, 64))
  cases = [(lambda v, a: tnp.tanh(v @ a) - 0.1 * v, lambda v, a: jnp.tanh(v @ a) - 0.1 * v, (v, a), 2),
           (lambda x: nn.softmax(x, axis=-1), lambda x: jax.nn.softmax(x, axis=-1), (x,), 3),
           (lambda x: logsumexp(x, axis=-1), lambda x: jax.scipy.special.logsumexp(x, axis=-1), (x,), 2)]
  for fn, ref, args, kernels in cases:
    f = tinyjax.jit(fn)
    f(*[Tensor(z) for z in args]).numpy()
    GlobalCounters.reset()
    got = f(*[Tensor(z) for z in args]).numpy()
    np.testing.assert_allclose(got, np.asarray(ref(*args)), rtol=1e-13, atol=1e-13)
    assert GlobalCounters.kernel_count == kernels, (fn, GlobalCounters.kernel_count)


def test_arange_graphs_are_built_once_per_arguments(monkeypatch):
  # tinygrad builds an arange through pads and pools (~1 ms); the same arguments share one graph, and the values are
  # numpy's: -0.0 and 0.0 starts, float steps, dtypes, empty and negative ranges stay apart
  import numpy as np
  from tinygrad import Tensor, dtypes
  import tinyjax._tg.patches as tgp
  monkeypatch.setattr(tgp, "_ARANGES", {})   # none built by earlier tests
  built = []
  real = Tensor._cumalu
  monkeypatch.setattr(Tensor, "_cumalu", lambda self, *a: (built.append(a), real(self, *a))[1])
  cases = [(7,), (2, 9, 3), (-0.0, 2.0, 0.5), (0.0, 2.0, 0.5), (5, 1, -2), (3, 3), (1.5, 4.0), (2, 9, 3)]
  for _ in range(3):
    for c in cases: np.testing.assert_array_equal(Tensor.arange(*c).numpy(), np.arange(*c))
    np.testing.assert_array_equal(Tensor.arange(4, dtype=dtypes.float64).numpy(), np.arange(4, dtype=np.float64))
    assert Tensor.arange(4, dtype=dtypes.float64).dtype == dtypes.float64 and Tensor.arange(4).dtype == dtypes.int32
  assert len(built) == 8, built   # once per distinct non-empty arguments (8 of them), over three rounds


def test_fill_graphs_are_built_once_per_arguments_into_new_buffers(monkeypatch):
  # a fill's value graph and buffer type come from tinygrad's first build for the arguments; every call then writes a
  # new buffer of that type: the graph tinygrad builds (up to the buffer's number), the values, no buffer shared
  import numpy as np
  from tinygrad import Tensor, dtypes
  import tinyjax._tg.patches as tgp
  from tinyjax._tg import canonical_key
  monkeypatch.setattr(tgp, "_FULLS", {})   # none built by earlier tests
  built = []
  real = Tensor.full.__func__.__defaults__[-1]   # tinygrad's own (the patch's `orig`)
  monkeypatch.setattr(tgp._full, "__defaults__", (*tgp._full.__defaults__[:-1], lambda *a: (built.append(a), real(*a))[1]))
  cases = [((2, 3), 0.0, None), ((4,), 1, dtypes.int32), ((3,), -0.0, dtypes.float64), ((3,), 0.0, dtypes.float64), ((2, 2), True, None),
           ((), 2.5, None), ((0, 3), 1.0, None)]
  for _ in range(3):
    for shape, v, dt in cases:
      got = Tensor.full(shape, v, dtype=dt)
      want = real(Tensor, shape, v, dt)
      assert (got.dtype, got.device, got.shape) == (want.dtype, want.device, want.shape)
      assert canonical_key(got.uop) == canonical_key(want.uop)   # the same graph, a buffer of its own
      np.testing.assert_array_equal(got.numpy(), want.numpy())
      assert np.signbit(got.numpy()).tolist() == np.signbit(want.numpy()).tolist()
    np.testing.assert_array_equal(Tensor.full((3,), 7.0, buffer=False).numpy(), np.full(3, 7.0, np.float32))
  assert len(built) == len(cases) + 1   # tinygrad's build: once per distinct arguments, over three rounds
  a, b = Tensor.zeros(3), Tensor.zeros(3)
  assert a.uop.src[0] is not b.uop.src[0]
  a[1] = 5.0
  a.realize()
  assert a.tolist() == [0.0, 5.0, 0.0] and b.tolist() == [0.0, 0.0, 0.0]


def test_substitute_gives_tinygrads_result():
  # UOp.substitute's own walk (patches._substitute) against tinygrad's graph_rewrite, node for node: placeholders of
  # traced graphs with calls (a checkpoint's FUNCTION, whose body is not entered), chained replacements, a replacement
  # holding a key, identity entries
  import tinyjax, tinyjax.numpy as tnp
  import tinyjax._tg.patches as tgp
  from tinygrad import Tensor, dtypes
  from tinygrad.uop.ops import UOp, Ops
  orig = tgp._substitute.__defaults__[-1]
  x, y = Tensor.empty(3, 4), Tensor.empty(4)
  body = tinyjax.checkpoint(lambda a, b: tnp.sin(a @ b).sum() * a.max())
  graphs = [tinyjax.grad(body)(x, y), tinyjax.jvp(lambda a: tnp.tanh(a) @ y, (x,), (x * 2,))[1], (x.cast(dtypes.weakfloat) + 1.5) * y]
  cases = [{x.uop: Tensor.ones(3, 4).contiguous().uop, y.uop: Tensor.full((4,), 2.0).uop},
           {x.uop: (y * 2).sum().expand(3, 4).uop, y.uop: Tensor.zeros(4).uop},   # the first replacement holds the second's key
           {x.uop: x.uop, y.uop: y.uop},                         # nothing to do
           {x.uop: Tensor.empty(3, 4).uop}]
  a, b = Tensor.empty(3, 4), Tensor.empty(3, 4)
  cases.append({x.uop: a.uop, a.uop: b.uop})   # a chain
  for g in graphs:
    sink = UOp.sink(*([g.uop] if isinstance(g, Tensor) else [t.uop for t in g]))
    fns = [u for u in sink.toposort() if u.op is Ops.FUNCTION]
    assert fns or g is not graphs[0]
    # a key inside a call's body: not replaced there
    inner = [{p: Tensor.empty(*p.shape).uop} for f in fns for p in f.src[0].toposort() if p.op is Ops.PARAM][:1]
    for subs in cases + inner: assert tgp._substitute(sink, subs) is orig(sink, subs)
  for loop in ({x.uop: (x + 1).uop, (x + 1).uop: x.uop}, {x.uop: (x * 2).uop}):   # cycles: of keys, through a value
    with pytest.raises(RuntimeError, match="infinite loop"): tgp._substitute(UOp.sink(graphs[2].uop), loop)


def test_simplify_of_int_shapes_is_tinygrads():
  # shape arguments of ints skip tinygrad's symbolic rewrite (patches._simplify): its result for them is themselves;
  # anything else (a variable in a shape) still goes through it
  import tinyjax._tg.patches as tgp
  from tinygrad.uop.ops import UOp, shape_to_shape_arg
  orig = tgp._simplify.__defaults__[-1]
  for args in [((3,), (0, 7)), ((1, 1, 4),), ((2**31 - 1, 0),), ((5,), (2, 3), (8,))]:
    sink = UOp.sink(*[shape_to_shape_arg(a) for a in args])
    assert tgp._simplify(sink) is sink is orig(sink)
  v = UOp.variable("n", 1, 8)
  sym = UOp.sink(shape_to_shape_arg((v * 1 + 0, 3)))
  assert tgp._simplify(sym) is orig(sym) is not sym


def _sources(f, *args) -> list[str]:
  from tinygrad.uop.ops import Ops
  entry = next(iter(f._cache.values()))
  return [s.arg for u in entry.tinyjit.captured.linear.toposort() if u.op is Ops.PROGRAM for s in u.src if s.op is Ops.SOURCE]

def test_a_software_transcendental_a_concatenation_spreads_is_stored_by_its_own_kernel(monkeypatch):
  # a concatenation is PADs and adds, or a STACK of equal pieces: in one kernel every element computed every piece's
  # sin, then selected its own. On a CPU the sins are stored by a kernel of their own (each element's sin once); an
  # exp a concatenation spreads over less than twice its elements, and a device with transcendentals, are left alone
  import numpy as np
  from tinygrad import Tensor
  import tinyjax, tinyjax.numpy as tnp
  import tinyjax._tg.patches as tp
  rng = np.random.default_rng(3)
  x, w = rng.standard_normal(50), rng.standard_normal(200)
  def kernels(fn, want):
    jf = tinyjax.jit(fn)
    np.testing.assert_allclose(jf(Tensor(x), Tensor(w)).numpy(), want, rtol=1e-13, atol=1e-13)
    return jf.kernels(Tensor(x), Tensor(w))
  stacked = lambda v, w: tnp.concatenate([tnp.sin(v) * 2, tnp.cos(v) + v, tnp.sin(v) * tnp.cos(v), v])   # noqa: E731
  want = np.concatenate([np.sin(x) * 2, np.cos(x) + x, np.sin(x) * np.cos(x), x])
  assert kernels(stacked, want) == ["E_50", "E_50", "E_4_50"]   # sin and cos (sin(pi/2 - v)) stored, then the pieces
  padded = lambda v, w: tnp.concatenate([tnp.sin(v[:20]) * 2, tnp.cos(v), tnp.exp(w)])   # noqa: E731
  want = np.concatenate([np.sin(x[:20]) * 2, np.cos(x), np.exp(w)])
  assert kernels(padded, want) == ["E_20", "E_50", "E_270"]   # pieces of 20 and 50 in 270: stored; 200 in 270: not
  monkeypatch.setattr(tp, "_soft_device", lambda device: False)   # a device with transcendentals of its own
  assert kernels(lambda v, w: stacked(v, w) * 2 / 2, np.concatenate([np.sin(x) * 2, np.cos(x) + x, np.sin(x) * np.cos(x), x])) == ["E_4_50"]

def test_short_loops_are_not_vectorised_by_clang():
  # clang's vectoriser spent ~40 ms on each short loop of a software transcendental, for ~1 us a call
  import numpy as np
  from tinygrad import Tensor
  import tinyjax, tinyjax.numpy as tnp
  for n, pragma in ((63, True), (64, False)):
    x = np.linspace(-3, 3, n)
    jf = tinyjax.jit(lambda v: tnp.sin(v) * 2)
    np.testing.assert_allclose(jf(Tensor(x)).numpy(), np.sin(x) * 2, rtol=1e-14, atol=1e-14)
    (src,) = _sources(jf)
    assert ('_Pragma("clang loop vectorize(disable)") for (int Lidx0 = 0; Lidx0 < 63;' in src) is pragma, src
    assert src.count("vectorize(disable)") == pragma

def test_a_deep_kernel_takes_tinygrads_linear_order_pair_by_pair(monkeypatch):
  # tinygrad's linearize sorts a kernel's nodes by their whole subgraphs (tuplize), compared again at every comparison;
  # a large, deep kernel's are compared pair by pair, each pair once (patches._linearizer_sorted): the same order
  import numpy as np
  from tinygrad import Tensor
  import tinygrad.codegen.late.linearizer as lin
  import tinyjax, tinyjax.numpy as tnp
  import tinyjax._tg.patches as tp
  calls, pairwise = [], []
  real, real_pairwise = tp._linearizer_sorted, tp._pairwise_sorted
  def spy(items, key=None, reverse=False):
    items = list(items)
    out = real(items, key=key, reverse=reverse)
    calls.append((items, key, reverse, out))
    return out
  monkeypatch.setattr(lin, "sorted", spy)
  monkeypatch.setattr("tinyjax._tg.compile._program_table", lambda renderer: None)   # generated here, not read from disk
  monkeypatch.setattr(tp, "_pairwise_sorted", lambda *a: (pairwise.append(len(a[0])), real_pairwise(*a))[1])
  def chain(v, np_):
    for _ in range(12): v = np_.sin(v * 1.1 + 0.3)
    return v
  x = np.linspace(-1, 1, 64)
  np.testing.assert_allclose(tinyjax.jit(lambda v: chain(v, tnp))(Tensor(x)).numpy(), chain(x, np), rtol=1e-12, atol=1e-12)
  assert pairwise and max(pairwise) > 1000
  for items, key, reverse, out in calls: assert all(a is b for a, b in zip(out, sorted(items, key=key, reverse=reverse), strict=True))

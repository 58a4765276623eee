"""Plain CPU kernels written in C from their AST (tinyjax/_tg/plain_c.py): the same numbers as tinygrad's kernels.

Each function runs in a fresh jit twice, with plain kernels off (tinygrad's code generation) and on; the program key
holds the switch, so each mode compiles its own kernels. Under the suite's NOOPT, tinygrad's kernels sum in order as
the plain ones do: the results are the same bits. With tinygrad's optimizations on (a user's setting) its kernels sum
in lanes, the plain ones still in order: both within float rounding of a float64 numpy reference."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
from tinygrad.uop.ops import Ops
import tinyjax
import tinyjax._tg.plain_c as plain_c
from tinyjax._tg.ir import gather

RNG = np.random.default_rng(7)
X = RNG.standard_normal((16, 17)).astype(np.float32)
A, B = RNG.standard_normal((8, 32)).astype(np.float32), RNG.standard_normal((32, 64)).astype(np.float32)
S = (RNG.standard_normal((16, 17)) * 3).astype(np.float32)
S[0, :6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40]   # the transcendentals' special cases
I = RNG.integers(-50, 50, (16, 17)).astype(np.int32)

G = RNG.integers(0, X.size, 40).astype(np.int32)

def _objective(z):   # its gradient is a gated store (where(gate, value, Invalid): a gate tinygrad cannot fold)
  U = z[:240].reshape(40, 6)[:, 4:]
  return 0.1 * (U[:, 0].square().sum() + 10 * U[:, 1].square().sum()) + 100 * (z[240:] - 0.5).square().sum()

def _objective_grad(z):
  g = np.zeros_like(z)
  g[4:240:6], g[5:240:6], g[240:] = 0.2 * z[4:240:6], 2 * z[5:240:6], 200 * (z[240:] - 0.5)
  return g

# name: (function of Tensors, its inputs, a numpy reference)
CASES = {
  "matmul": (lambda a, b: a @ b, (A, B), lambda a, b: a @ b),
  "matmul-odd": (lambda a, b: a[:5, :31] @ b[:31, :7], (A, B), lambda a, b: a[:5, :31] @ b[:31, :7]),
  "matvec": (lambda a, b: a[0] @ b, (A, B), lambda a, b: a[0] @ b),
  "gram-sum": (lambda x: (x[:, :16].T @ x[:, :16]).sum(1), (X,), lambda x: (x[:, :16].T @ x[:, :16]).sum(1)),
  "sum": (lambda x: x.sum(), (X,), np.sum), "sum0": (lambda x: x.sum(0), (X,), lambda x: x.sum(0)),
  "max": (lambda x: x.max(1), (X,), lambda x: x.max(1)), "prod": (lambda x: x.prod(0), (X,), lambda x: x.prod(0)),
  "mean-centred": (lambda x: x - x.mean(1, keepdim=True), (X,), lambda x: x - x.mean(1, keepdims=True)),
  "var": (lambda x: ((x - x.mean(0)) ** 2).mean(0), (X,), lambda x: x.var(0)),
  "elementwise": (lambda x: (x * 3 - 1) / (x * x + 1), (X,), lambda x: (x * 3 - 1) / (x * x + 1)),
  "where-relu": (lambda x: (x > 0).where(x, x * 2).relu() - x.maximum(0.3), (X,),
                 lambda x: np.maximum(np.where(x > 0, x, x * 2), 0) - np.maximum(x, 0.3)),
  "neg-sqrt": (lambda x: -(x * x).sqrt() + 1, (X,), lambda x: -np.sqrt(x * x) + 1),
  "int-floordiv": (lambda i: i // 7 + i % 7, (I,), lambda i: i // 7 + i % 7),
  "int-pow2": (lambda i: i // 8 + i % 8 * 3, (I,), lambda i: i // 8 + i % 8 * 3),   # a shift and a mask, either sign
  "int-negdiv": (lambda i: i // -3 + i % -3, (I,), lambda i: i // -3 + i % -3),
  "cast": (lambda x: (x * 10).cast(dtypes.int32), (X,), lambda x: (x * 10).astype(np.int32)),
  "float64": (lambda x: (x.cast(dtypes.float64) * 1.1 + 2).sum(1), (X,), lambda x: (x.astype(np.float64) * 1.1 + 2).sum(1)),
  "transposed": (lambda x: x.T.contiguous() * 2, (X,), lambda x: x.T * 2),
  "exp": (lambda x: x.exp(), (S,), np.exp), "log": (lambda x: x.abs().log(), (S,), lambda x: np.log(np.abs(x))),
  "sin": (lambda x: (x * 100).sin(), (S,), lambda x: np.sin((x.astype(np.float32) * np.float32(100)).astype(np.float64))),
  "tanh": (lambda x: x.tanh(), (S,), np.tanh),
  "cos": (lambda x: (x * 100).cos(), (S,), lambda x: np.cos((x.astype(np.float32) * np.float32(100)).astype(np.float64))),
  "cos64": (lambda x: (x.cast(dtypes.float64) * 1e3).cos(), (S,), lambda x: np.cos(x.astype(np.float64) * 1e3)),
  "sincos64-huge": (lambda x: (y := x.cast(dtypes.float64) * 1e20).sin() + y.cos() * 2, (S,),   # (tinyjax's Payne-Hanek)
                    lambda x: np.sin(y := x.astype(np.float64) * 1e20) + np.cos(y) * 2),
  # a short loop's calls branch between the two reductions (huge and small arguments in one kernel)
  "sincos64-calls": (lambda x: (y := x[:5, :7].cast(dtypes.float64) * ((x[:5, :7] > 0).cast(dtypes.float64) * (1e20 - 1) + 1)).sin() + y.cos() * 2,
                     (S,), lambda x: np.sin(y := x[:5, :7].astype(np.float64) * np.where(x[:5, :7] > 0, 1e20, 1.0)) + np.cos(y) * 2),
  "exp64": (lambda x: x.cast(dtypes.float64).exp(), (S,), lambda x: np.exp(x.astype(np.float64))),
  "sin64": (lambda x: (x.cast(dtypes.float64) * 1e3).sin(), (S,), lambda x: np.sin(x.astype(np.float64) * 1e3)),
  "softmax": (lambda x: x.softmax(1), (X,), lambda x: (e := np.exp(x - x.max(1, keepdims=True))) / e.sum(1, keepdims=True)),
  "pad": (lambda x: x.pad(((1, 2), (3, 0))) * 2, (X,), lambda x: np.pad(x, ((1, 2), (3, 0))) * 2),   # gated loads
  "concatenate": (lambda x: x[:3].cat(x[5:9].exp(), x[:2] * 2), (X,), lambda x: np.concatenate([x[:3], np.exp(x[5:9]), x[:2] * 2])),
  "gated-store": (lambda x: tinyjax.grad(_objective)(x.flatten()), (X,), lambda x: _objective_grad(x.ravel())),
  "gather": (lambda x, i: gather(x, i), (X, G), lambda x, i: x.ravel()[i]),   # a reshaped (flattened) buffer
  "sum-plus-const": (lambda x, y: (x * x * 3 + y + 1).sum(0) + (x - 2).prod(0), (X, X[0]),
                     lambda x, y: (x * x * 3 + y + 1).sum(0) + (x - 2).prod(0)),   # tinygrad's (x + acc) + c
  "one-hot": (lambda x, i: (x.reshape(-1)[Tensor(G)] * 2).sum() + x[:, i[:5]].sum(0), (X, G % 17),
              lambda x, i: (x.ravel()[G] * 2).sum() + x[:, i[:5]].sum(0)),   # compares its range: tinygrad's load collapse
  "eye-compare": (lambda x: ((x[:4, :4] - Tensor.eye(4)).abs() > 0.5).max() + (x[:4, :4] * Tensor.eye(4)).sum(0), (X,),
                  lambda x: (np.abs(x[:4, :4] - np.eye(4)) > 0.5).max() + (x[:4, :4] * np.eye(4)).sum(0)),
  "tanh-matvec": (lambda a, b: (a @ b).tanh().sum(0), (A, B), lambda a, b: np.tanh(a @ b).sum(0)),
  # short loops: the transcendentals are calls of one function each (the sine's argument is read by the exponential's
  # multiplication too: written inline), the second kernel's sine the same function in the same translation unit
  "short-calls": (lambda x: (y := x[:5, :7]).sin() + (y * 0.5).exp() + y.abs().log() + (y * 30).sin() * (y + 1).sin(), (S,),
                  lambda x: np.sin(y := x[:5, :7]) + np.exp(y * 0.5) + np.log(np.abs(y)) + np.sin(y * 30) * np.sin(y + 1)),
  "short-calls64": (lambda x: (y := x[:5, :7].cast(dtypes.float64) * 10).sin().contiguous().T * (y.T * 3 - 1).cos() + (y.T / 5).exp(), (S,),
                    lambda x: np.sin(y := x[:5, :7] * 10).T * np.cos(y.T * 3 - 1) + np.exp(y.T / 5)),
}

def _sources(jf) -> list[str]:
  return [u.src[2].arg for u in next(iter(jf._cache.values())).tinyjit.captured.linear.toposort() if u.op is Ops.PROGRAM]

def _run(fn, args, plain: int, every: bool = False):
  """fn's result in a new jit (traced and compiled again), and how many of its kernels are plain C (every: all of
  them, or 0)."""
  with Context(TINYJAX_PLAIN_C=plain):
    jf = tinyjax.jit(lambda *a: fn(*a))
    out = jf(*[Tensor(a) for a in args]).numpy()
    rendered = [plain_c.MARK in src for src in _sources(jf)]
    return out, (sum(rendered) if all(rendered) else 0) if every else sum(rendered)

def _bits(a: np.ndarray) -> np.ndarray: return np.atleast_1d(a).view(np.uint8)

@pytest.mark.parametrize("name", CASES)
def test_plain_kernels_give_tinygrads_bits(name):
  fn, args, _ = CASES[name]
  want, none = _run(fn, args, 0)
  got, rendered = _run(fn, args, 1, every=True)
  assert none == 0 and rendered >= 1, (none, rendered)   # (every kernel plain C)
  if name == "float64":   # tinygrad moves a constant factor out of a sum (sum(x*c) -> sum(x)*c): rounding apart
    np.testing.assert_allclose(got, want, rtol=1e-15)
  else: assert np.array_equal(_bits(got), _bits(want)), (got, want)

@pytest.mark.parametrize("name", CASES)
def test_plain_kernels_against_numpy_with_tinygrads_optimizations(name, tinygrad_optimizations):
  fn, args, ref = CASES[name]
  with np.errstate(all="ignore"):   # (the special values' logs and sines)
    want = np.asarray(ref(*[a.astype(np.float64) if a.dtype == np.float32 and name != "cast" else a for a in args]))
  for plain in (0, 1):
    got, rendered = _run(fn, args, plain)
    assert (rendered >= 1) == bool(plain)
    if got.dtype.kind in "iu": np.testing.assert_array_equal(got, want)
    else: np.testing.assert_allclose(got, want.astype(got.dtype), rtol=2e-6 if got.dtype == np.float32 else 1e-14, atol=2e-6, equal_nan=True)

def test_a_reduce_writes_several_outputs_at_each_step():
  # the two innermost output loops of a matrix product step by 4: 16 accumulators, each output summed in order
  jf = tinyjax.jit(lambda a, b: a @ b)
  np.testing.assert_array_equal(jf(Tensor(A), Tensor(B)).numpy(), _run(lambda a, b: a @ b, (A, B), 0)[0])
  [src] = _sources(jf)
  assert src.count(" += 4) {") == 2 and "acc15 = " in src and "acc16" not in src, src

def test_short_loops_transcendentals_are_calls():
  jf = tinyjax.jit(CASES["short-calls64"][0])
  jf(Tensor(S)).realize()
  srcs = _sources(jf)
  assert len(srcs) == 2 and all("static double tinyjax_sin_double(double x) {" in src for src in srcs), srcs
  assert "tinyjax_exp_double(" in srcs[1] and srcs[1].count("tinyjax_sin_double(") == 2, srcs[1]   # (definition, call)
  jf = tinyjax.jit(CASES["short-calls"][0])
  jf(Tensor(S)).realize()
  [src] = _sources(jf)
  # the first sine's argument, a load the exponential's product reads too, keeps its expansion inline
  assert src.count("tinyjax_sin_float(") == 3 and "tinyjax_exp_float(" in src and "tinyjax_log2_float(" in src, src

@pytest.mark.parametrize("fn, args, ref", [
  (lambda x: x.cast(dtypes.half) * 2, (X,), lambda x: x.astype(np.float16) * 2),   # half
  (lambda x: (x.reshape(-1, 1) * x.reshape(1, -1)).sum(1), (np.tile(X, (2, 1)),), lambda x: np.outer(x.ravel(), x.ravel()).sum(1)),   # large
])
def test_other_kernels_take_tinygrads_path(fn, args, ref):
  got, rendered = _run(fn, args, 1)
  assert rendered == 0
  np.testing.assert_allclose(got.astype(np.float64), ref(*args).astype(np.float64), rtol=2e-3 if got.dtype == np.float16 else 1e-5, atol=1e-5)

def test_off_takes_tinygrads_path_everywhere():
  got, rendered = _run(lambda a, b: a @ b, (A, B), 0)
  assert rendered == 0
  np.testing.assert_allclose(got, A @ B, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("draw", ["bits", "uniform"])
def test_random_streams_in_plain_c_are_jaxs(draw):
  # threefry is expanded by tinygrad's own function into uint32 arithmetic: JAX's bits, bit for bit, both ways
  import jax
  want = np.asarray(getattr(jax.random, draw)(jax.random.PRNGKey(3), (1000,)))
  for plain in (0, 1):
    with Context(TINYJAX_PLAIN_C=plain):
      jf = tinyjax.jit(lambda k: getattr(tinyjax.random, draw)(k, (1000,)))
      got = jf(tinyjax.random.PRNGKey(3)).numpy()
      assert (sum(plain_c.MARK in src for src in _sources(jf)) >= 1) == bool(plain)
    assert np.array_equal(_bits(got), _bits(want)), (plain, got[:4], want[:4])

@pytest.mark.parametrize("fn, unrolled", [(lambda x: x * 3 - 1, False), (lambda x: x.exp(), True),
                                          (lambda x: x.reshape(1, -1).expand(16, -1) + 1, True)])
def test_small_kernels_loops_are_not_unrolled(fn, unrolled):
  # a small kernel's loops carry unroll(disable) (clang's whole unrolling of them cost 3x the compile time); one with a
  # software transcendental, or above SMALL_WORK iterations, is left to clang (unrolling lets it vectorise)
  jf = tinyjax.jit(fn)
  jf(Tensor(X)).realize()
  [src] = _sources(jf)
  assert plain_c.MARK in src and ("unroll(disable)" not in src) == unrolled, src

# constants of every type, the awkward ones too: float32 literals clang rounds from their decimal (not from the
# double), denormals, signed zeros, infinities, nan; integers that wrap
FLOATS = [0.1, -4.9, 1 / 3, 1.0000000596046448, 16777217.0, 1e-40, -0.0, 3.4e38, float("inf"), float("nan"), 7.25]
_EAGER = f"""
import numpy as np, tinyjax, tinyjax._tg.plain_c as pc
from tinygrad import Tensor, dtypes
pc._TABLES.size = int(__import__("sys").argv[1])
inf, nan = float("inf"), float("nan")
FLOATS, out = {FLOATS!r}, []
for dt in (dtypes.float32, dtypes.float64):
  x = Tensor(np.linspace(-3, 3, 11, dtype=np.float32)).cast(dt).realize()
  out += [(x[i] * c + 1.5 - (c > 2)).numpy().tobytes().hex() for i, c in enumerate(FLOATS)]
x = Tensor(np.arange(-3, 3, dtype=np.int32)).realize()
out += [(x[i] * k + (1 << 33) // 3).numpy().tobytes().hex() for i, k in enumerate([3, -7, 2**31 - 1, -2**31, 12345, 0])]
u = Tensor(np.arange(4, dtype=np.uint32)).realize()
out += [(u[i] + k).numpy().tobytes().hex() for i, k in enumerate([1, 2**32 - 1, 2**31, 7])]
print(pc._TABLES.reused, *out)
"""

def test_eager_kernels_of_one_code_share_one_compile():
  # a loop-free kernel compiled alone (eager code) reads its constants from tables in its object: the kernels that
  # differ only by them (x[i] * c + 1.5 for each i and Python number c) are the first one's object with their values
  # written in, no clang, and give the same bits as each compiled on its own (a fresh process: eager code finds its
  # programs again by the graph, whichever way they were made)
  import os, subprocess, sys
  env = {**os.environ, "NOOPT": "1", "CCACHE": "0"}
  shared, alone = [subprocess.run([sys.executable, "-c", _EAGER, size], env=env, capture_output=True, text=True, check=True).stdout.split()
                   for size in ("4096", "0")]
  assert int(alone[0]) == 0 and int(shared[0]) >= 2 * (len(FLOATS) - 3) + 3 + 2, shared[0]
  assert shared[1:] == alone[1:]

def test_float32_literals_round_as_clangs():
  import struct, subprocess
  vals = FLOATS[:8] + [float(v) for v in RNG.uniform(-1e4, 1e4, 40)] + [1 + 2.0**-24, 1 + 3 * 2.0**-25]
  src = "float t[] = {" + ", ".join(plain_c._const(v, dtypes.float32) for v in vals) + "};"
  obj = subprocess.check_output(["clang", "-c", "-x", "c", "-", "-o", "-"], input=src.encode())
  [at] = plain_c._symbols(obj, {"t"}).values()
  mine = [plain_c._float32_of_literal(v) for v in vals]
  assert [v for v, m in zip(vals, mine, strict=True) if m is None] == [3.4e38]   # (the top of the range stays a literal)
  clangs = struct.unpack_from(f"<{len(vals)}f", obj, at)
  assert [c for c, m in zip(clangs, mine, strict=True) if m is not None] == [m for m in mine if m is not None]

@pytest.mark.parametrize("plain", [0, 1])
def test_float_chains_keep_their_order(plain):
  # a + (b + c) is not (a + b) + c for floats: tinygrad's renderer wrote both as (a+b+c); JAX's numbers, jitted and eager
  import jax
  a, b, c = np.float32([1e8, 2e8]), np.float32([-1e8, -2e8]), np.float32([1, 3])
  x, y, z = np.float32([3e38, 1e38]), np.float32([10, 30]), np.float32([0.1, 0.05])
  for fn, args in ((lambda a, b, c: a + (b + c), (a, b, c)), (lambda a, b, c: a * (b * c), (x, y, z)),
                   (lambda a, b, c: (a * 2 + (b + c)) * (c * (b * a)), (a, b, c)),
                   # tinygrad's symbolic moved a sum's constant to its end: (a + 1) - a was (a - a) + 1 = 1 at 1e8, not 0,
                   # a compensated sum's error term (s - a) - b folded away; (b + a) + a was b + 2a
                   (lambda a, b, c: ((a + 1.0) - a, ((a + b * 1e-8) - a) - b * 1e-8, (c + a) + a, (b + 3.0) + c), (a, b, c))):
    want = jax.jit(fn)(*args)
    with Context(TINYJAX_PLAIN_C=plain):
      got = tinyjax.jit(fn)(*args)
      eager = fn(*[tinyjax.numpy.asarray(v) for v in args])
    for g, e, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, eager, want)), strict=True):
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
      np.testing.assert_array_equal(np.asarray(e), np.asarray(w))

"""Eager values outside jit (issue 29): a transform called outside any trace computes as JAX does, at once, so that an
un-jitted training loop carries concrete state and costs the same at every iteration; tinygrad code that never calls a
transform keeps tinygrad's lazy semantics (its backward() included). See docs/jit.md, "Eager values"."""
import contextlib, functools
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import Ops
import tinyjax
import tinyjax.numpy as tnp
from tinyjax import _tg, lax as tl
import tinyjax._tg.runtime as _runtime
from jnp_table import x64_off
from conftest import assert_close, kernel_count, same_error


def _mlp_loss(np_):
  def loss(ps, x, y):
    h = x
    for W, b in ps[:-1]: h = np_.tanh(h @ W + b)
    W, b = ps[-1]
    return np_.mean((h @ W + b - y) ** 2)
  return loss


def _data():
  r = np.random.default_rng(0)
  ps = [(r.standard_normal((3, 8)).astype(np.float32) * 0.5, np.zeros(8, np.float32)),
        (r.standard_normal((8, 1)).astype(np.float32) * 0.5, np.zeros(1, np.float32))]
  x = r.standard_normal((16, 3)).astype(np.float32)
  return ps, x, np.sin(x.sum(1, keepdims=True))


def _adam(jx, np_, steps, every=None):
  """JAX's eager Adam loop, written once for both libraries: state carried in Python variables, bias correction with
  the iteration number (a new Python float every iteration)."""
  ps, x, y = _data()
  ps = jx.tree_util.tree_map(np_.asarray, ps)
  x, y = np_.asarray(x), np_.asarray(y)
  m = jx.tree_util.tree_map(np_.zeros_like, ps)
  v = jx.tree_util.tree_map(np_.zeros_like, ps)
  b1, b2, lr, eps = 0.9, 0.999, 0.05, 1e-8
  g_fn = jx.grad(_mlp_loss(np_))
  for i in range(1, steps + 1):
    g = g_fn(ps, x, y)
    m = jx.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jx.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    ps = jx.tree_util.tree_map(lambda p, m, v: p - lr * (m / (1 - b1 ** i)) / (np_.sqrt(v / (1 - b2 ** i)) + eps), ps, m, v)
    if every is not None: every(i, (ps, m, v))
  return ps


def test_eager_adam_loop_as_jax_with_concrete_state_and_no_new_programs():
  # every carried value is a buffer when the next grad starts, and from the fourth iteration on the loop compiles
  # nothing: the first three see a new structure (i = 1 shares 1 - b1 with 1 - b1 ** 1), its constants baked, then
  # the bias corrections as inputs
  counts = []
  def check(i, state):
    if i >= 2:   # the previous iteration's state went into this iteration's grad
      counts.append(_runtime.eager_compiles)
  with x64_off():
    got = _adam(tinyjax, tnp, 8, check)
    want = _adam(jax, jnp, 8)
  for (W, b), (Wj, bj) in zip(got, want, strict=True):
    np.testing.assert_allclose(W.numpy(), np.asarray(Wj), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), np.asarray(bj), rtol=2e-5, atol=1e-6)
  assert counts[3:] == [counts[3]] * len(counts[3:]), counts


def test_state_entering_a_transform_is_computed_first():
  # the moments never enter a transform, but they are computed when the next one starts: no graph grows
  seen = []
  def check(i, state):
    seen.append(list(tinyjax.tree_util.tree_leaves(state)))
  with x64_off(): _adam(tinyjax, tnp, 3, check)
  # state of iteration i is lazy after it; the grad of iteration i+1 computed it
  assert all(_tg.is_lazy(t) for t in seen[-1])
  assert not any(_tg.is_lazy(t) for t in seen[0] + seen[1])


def test_results_stay_lazy_until_read_or_the_next_transform():
  # an eager transform's results fuse with what reads them (one kernel for vmap's result times 2: test_collectives);
  # the next transform call computes every pending value first
  x = Tensor(np.array([0.5, -1.0, 2.0], np.float32))
  g = tinyjax.grad(lambda x: (tnp.sin(x) * x).sum())(x)
  h = g * 2
  assert _tg.is_lazy(g) and _tg.is_lazy(h)
  y, t = tinyjax.jvp(lambda x: x * 3.0, (x,), (x,))
  assert not _tg.is_lazy(g) and not _tg.is_lazy(h)
  xn = x.numpy()
  np.testing.assert_allclose(h.numpy(), 2 * (np.cos(xn) * xn + np.sin(xn)), rtol=1e-6)
  np.testing.assert_allclose(t.numpy(), 3 * xn, rtol=1e-6)


def test_changing_python_floats_in_eager_graphs():
  # the constant that changes between iterations becomes an input of the compiled program: the values stay right
  x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).realize()
  m = Tensor.zeros(2, 3).contiguous().realize()
  ref = np.zeros((2, 3), np.float32)
  for i in range(1, 7):
    m = 0.9 * m + (1 - 0.9) * x
    out = m / (1 - 0.9 ** i) + i * 0.25
    ref = np.float32(0.9) * ref + np.float32(1 - 0.9) * x.numpy()
    _tg.realize_lazy([m, out])
    np.testing.assert_allclose(m.numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), ref / np.float32(1 - 0.9 ** i) + np.float32(i * 0.25), rtol=1e-6)


def test_tinygrad_code_keeps_its_lazy_semantics_and_backward():
  # tinyjax is imported; tinygrad code that calls no transform is untouched: lazy values, and backward() through them
  a = Tensor([1.0, 2.0, 3.0])
  b = a * 3
  loss = (b * b).sum()
  assert _tg.is_lazy(b)
  loss.backward()
  np.testing.assert_allclose(a.grad.numpy(), 18 * np.array([1.0, 2.0, 3.0]), rtol=1e-6)


def test_traced_values_stay_traced_inside_transforms():
  # inside jit and vmap the transform's results are graphs of the enclosing computation, never computed on their own
  x = Tensor(np.array([1.0, 2.0], np.float32))
  def f(x):
    g = tinyjax.grad(lambda y: (y ** 3).sum())(x)
    assert _tg.is_lazy(g)
    return g
  np.testing.assert_allclose(tinyjax.jit(f)(x).numpy(), 3 * x.numpy() ** 2, rtol=1e-6)
  np.testing.assert_allclose(tinyjax.vmap(f)(x).numpy(), 3 * x.numpy() ** 2, rtol=1e-6)


def test_backward_through_a_value_a_transform_computed_early_raises():
  # tinygrad code that builds a loss, calls a transform, then backward(): the transform computed the pending loss
  # graph, which would silently give W no gradient; tinygrad's gradient raises instead
  W, X = Tensor(np.ones((2, 2), np.float32)).realize(), Tensor(np.ones((3, 2), np.float32)).realize()
  h = X @ W
  tinyjax.grad(lambda x: (x * x).sum())(Tensor(np.ones(2, np.float32)))
  with pytest.raises(RuntimeError, match="computed before this backward"):
    h.sum().backward()
  # a loss built after the transform differentiates as in tinygrad
  (X @ W).sum().backward()
  np.testing.assert_allclose(W.grad.numpy(), np.full((2, 2), 3.0), rtol=1e-6)


def test_a_pending_value_that_cannot_be_computed_is_left_to_its_reader():
  # a Tensor whose graph fails to compute (here: a shape error only the scheduler sees is hard to build, so a read of
  # a traced value stands for it) does not make the next transform fail
  x = Tensor(np.array([1.0, 2.0], np.float32))
  with pytest.raises(tinyjax.ConcretizationTypeError):
    tinyjax.vmap(lambda v: float(v))(x)
  np.testing.assert_allclose(tinyjax.grad(lambda v: (v * v).sum())(x).numpy(), [2.0, 4.0], rtol=1e-6)


def test_pending_values_over_placeholders_stay_lazy():
  # linearize keeps its tangent graphs over placeholders until f_jvp is called; the transform f_jvp is must not compute
  # them first (tinygrad would allocate the placeholders and compute on garbage: zeros here, once)
  x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
  f = lambda a: (a * a).sum(0, keepdims=True) * a   # noqa: E731
  _, f_jvp = tinyjax.linearize(f, Tensor(x))
  want = jax.jvp(lambda a: (a * a).sum(0, keepdims=True) * a, (x,), (v,))[1]
  np.testing.assert_allclose(f_jvp(Tensor(v)).numpy(), np.asarray(want), rtol=1e-12)
  np.testing.assert_allclose(f_jvp(Tensor(2 * v)).numpy(), 2 * np.asarray(want), rtol=1e-12)


def test_backward_raises_also_when_other_devices_hold_pending_values():
  # a pending value on another device (pmap's, a sharded one) sends the computation of all of them another way: the
  # values computed early are still known to backward()
  other = Tensor(np.ones(2, np.float32), device="CPU:1") * 2
  W, X = Tensor(np.ones((2, 2), np.float32)).realize(), Tensor(np.ones((3, 2), np.float32)).realize()
  h = X @ W
  tinyjax.grad(lambda x: (x * x).sum())(Tensor(np.ones(2, np.float32)))
  assert not _tg.is_lazy(other) and not _tg.is_lazy(h)
  with pytest.raises(RuntimeError, match="computed before this backward"):
    h.sum().backward()


def test_backward_through_host_data_computed_early_is_fine():
  # a Tensor made from numpy data and still pending when a transform starts is data: backward through it is tinygrad's
  W = Tensor(np.ones((2, 2), np.float32)).realize()
  X = Tensor(np.full((3, 2), 2.0, np.float32))
  tinyjax.grad(lambda x: (x * x).sum())(Tensor(np.ones(2, np.float32)))
  (X @ W).sum().backward()
  np.testing.assert_allclose(W.grad.numpy(), np.full((2, 2), 6.0), rtol=1e-6)


_SCALAR_UNARY = ["sin", "cos", "exp", "log", "sqrt", "tanh", "abs", "negative", "reciprocal", "floor", "log1p", "expm1",
                 "arctan", "sign", "square", "exp2", "isnan", "logical_not", "round"]
_SCALAR_BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "less", "equal", "floor_divide",
                  "mod", "arctan2", "logaddexp", "where_pos"]


def _scalar_chain(np_, seed, dtype):
  """A random chain of jnp functions on Python scalars and 0-d arrays of `dtype`: a device-less constant graph."""
  r = np.random.default_rng(seed)
  unary = {"float32": _SCALAR_UNARY, "int32": ["abs", "negative", "sign", "square", "logical_not"],
           "bool": ["logical_not"]}[dtype]
  binary = {"float32": _SCALAR_BINARY, "int32": ["add", "subtract", "multiply", "maximum", "minimum", "less", "equal",
                                                 "floor_divide", "mod", "where_pos"],
            "bool": ["logical_and", "logical_or", "logical_xor", "equal", "maximum", "where_pos"]}[dtype]
  vals = [np_.asarray(v, dtype) if i % 2 else v.item() for i, v in enumerate(r.uniform(-3, 3, 4).astype(dtype))]
  for _ in range(int(r.integers(1, 9))):
    if r.random() < 0.5:
      fn = unary[r.integers(len(unary))]
      a = vals[r.integers(len(vals))]
      out = getattr(np_, fn)(a if fn not in ("isnan", "logical_not") else np_.asarray(a, dtype))
    else:
      fn = binary[r.integers(len(binary))]
      a, b = vals[r.integers(len(vals))], vals[r.integers(len(vals))]
      out = np_.where(np_.asarray(a) > 0, a, b) if fn == "where_pos" else getattr(np_, fn)(a, b)
    vals.append(out.astype(dtype) if hasattr(out, "astype") else out)
  return [v for v in vals if hasattr(v, "dtype")]


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_reading_device_less_constants_folds_them_as_tinygrad_does(dtype):
  """A graph of constants only (`f(3.0)`) is read from its folded value on the host, with no kernel: the numbers of
  tinygrad's own path (which folds it and runs a kernel to store the result), bit for bit, and JAX's."""
  from tinygrad.helpers import GlobalCounters
  divisions = 0
  for seed in range(60):
    with np.errstate(all="ignore"):
      pairs = [(t, j) for t, j in zip(_scalar_chain(tnp, seed, dtype), _scalar_chain(jnp, seed, dtype), strict=True)
               if t.device is None]
    assert pairs
    before = GlobalCounters.kernel_count
    got = [t.numpy() for t, _ in pairs]
    assert GlobalCounters.kernel_count == before   # no kernel ran
    for g, (t, j) in zip(got, pairs, strict=True):
      # tinygrad's own path: the same graph on a device, scheduled, folded and stored by a kernel
      tg = Tensor(t.uop).to("CPU").numpy()
      assert g.dtype == tg.dtype == np.asarray(j).dtype and g.shape == tg.shape == j.shape
      if not (g.tobytes() == tg.tobytes() or (np.isnan(g) and np.isnan(tg))):
        # tinygrad folds a * (1/b) in two roundings, its kernels divide (x // x was 0): ours is JAX's there
        assert any(u.op is Ops.RECIPROCAL for u in t.uop.toposort()) and abs(g - j) < abs(tg - j), (seed, g, tg, j)
        divisions += 1
      if dtype == "float32": np.testing.assert_allclose(g, j, rtol=2e-6, atol=1e-6)
      else: np.testing.assert_array_equal(g, j)
  assert divisions < 10
  assert float(tnp.sin(tnp.float32(3.0)) * 2.0) == float(np.float32(np.sin(np.float32(3.0))) * np.float32(2.0))
  assert tnp.asarray(3.0).item() == 3.0 and tnp.asarray(True).tolist() is True


def test_reading_device_less_arrays_folds_them_without_a_kernel():
  """jnp's creation functions on Python numbers build device-less graphs (arange: tinygrad's pooled cumsum of ones):
  read from their folded value, element by element as tinygrad folds them, with no kernel; bigger ones run a kernel."""
  from tinygrad.helpers import GlobalCounters
  cases = [lambda np_: np_.arange(7), lambda np_: np_.arange(2, 20, 3, dtype=np_.int32), lambda np_: np_.linspace(0.0, 1.0, 5),
           lambda np_: np_.flip(np_.arange(6).reshape(2, 3), 1).T, lambda np_: np_.pad(np_.arange(4), (2, 1)),
           lambda np_: np_.arange(12).reshape(3, 4).sum(0), lambda np_: np_.arange(12).reshape(3, 4).max(1),
           lambda np_: (np_.arange(5) * 2.5 - 1) / 3, lambda np_: np_.arange(10)[2:8:2], lambda np_: np_.eye(3, dtype=np_.int32),
           lambda np_: np_.arange(5) < 3, lambda np_: np_.arange(6).reshape(2, 3).prod(1)]
  for make in cases:
    t = make(tnp)
    assert t.device is None
    before = GlobalCounters.kernel_count
    got = t.numpy()
    assert GlobalCounters.kernel_count == before
    tg = Tensor(t.uop).to("CPU").numpy()
    assert got.dtype == tg.dtype and got.shape == tg.shape and got.tobytes() == tg.tobytes()
    np.testing.assert_allclose(got, np.asarray(make(jnp)), rtol=1e-6)
  big = tnp.arange(10000)   # past the folding limit: a kernel
  before = GlobalCounters.kernel_count
  np.testing.assert_array_equal(big.numpy(), np.arange(10000))
  assert GlobalCounters.kernel_count > before


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
def test_folding_arrays_on_the_host_by_numpy_matches_element_by_element(dtype, monkeypatch):
  """A device-less array's ops that numpy computes as the fold does (`fold._vectorized`: +, -, *, comparisons, where,
  casts, bit ops) give the same bits as the fold element by element (tinygrad's exec_alu) and as tinygrad's kernel,
  with NaNs, infinities and int32 overflow (not folded: a kernel) among the values."""
  import tinyjax._tg.fold as fold
  for seed in range(12):
    r = np.random.default_rng(seed)
    n = 24
    base = tnp.arange(n) * float(r.uniform(-2, 2)) + float(r.uniform(-3, 3))
    if dtype == "float32": base = tnp.where(tnp.arange(n) % 7 == 3, np.inf, tnp.where(tnp.arange(n) % 11 == 5, np.nan, base))
    vals = [base.astype(dtype), (tnp.arange(n) * (2**20 + 7 * seed)).astype(dtype), (tnp.arange(n) % 3 - 1).astype(dtype)]
    for _ in range(6):
      a, b = vals[r.integers(len(vals))], vals[r.integers(len(vals))]
      op = ["add", "subtract", "multiply", "negative", "less", "not_equal", "equal", "where", "maximum", "cast"][r.integers(10)]
      if dtype == "bool" and op in ("add", "subtract", "negative"): op = "logical_xor"
      out = {"negative": lambda: -a, "where": lambda: tnp.where(a > b, a, b), "cast": lambda: a.astype("float32").astype(dtype),
             "less": lambda: (a < b).astype(dtype), "not_equal": lambda: (a != b).astype(dtype), "equal": lambda: (a == b).astype(dtype)
             }.get(op, lambda: getattr(tnp, op)(a, b))()
      vals.append(out)
    for v in vals:
      assert v.device is None
      with np.errstate(all="ignore"):
        fast = fold.folded_value(Tensor(v.uop).uop)
        with monkeypatch.context() as m:
          m.setattr(fold, "_vectorized", lambda x, srcs: None)
          m.setattr(fold, "_FOLDED", __import__("weakref").WeakKeyDictionary())
          slow = fold.folded_value(v.uop)
      assert (fast is None) == (slow is None)
      if fast is None: continue
      np.testing.assert_array_equal(np.asarray(fast.astype(v.numpy().dtype)), np.asarray(slow.astype(v.numpy().dtype)))
      got, tg = v.numpy(), Tensor(v.uop).to("CPU").numpy()
      assert got.tobytes() == tg.tobytes() or (got.dtype.kind == "f" and np.array_equal(got, tg, equal_nan=True)), (seed, got, tg)

def test_reading_a_weakly_typed_result_of_a_buffer():
  # an int array times a Python float is weakly typed in JAX (float32 with x64 off); reading it raised "cannot create
  # storage for weak dtype" (the cached-program path made a buffer of the weak dtype)
  with x64_off():
    for make in (lambda np_: np_.asarray(np.arange(5)) * 2.5, lambda np_: np_.asarray(np.arange(6).reshape(2, 3)) / 4.0 + 1):
      got, want = make(tnp), make(jnp)
      np.testing.assert_array_equal(got.numpy(), np.asarray(want))
      assert got.numpy().dtype == np.asarray(want).dtype and float(got.sum()) == float(want.sum())


@pytest.mark.parametrize("make", [
  lambda np_: np_.arange(5) * 0.1,
  lambda np_: (np_.arange(3) * 0.1)[:, None] - np_.arange(4) * 0.7,
  lambda np_: (np_.arange(4) * 0.3).sum(),
  lambda np_: np_.exp(np_.asarray(np.arange(3)) * -1.5).reshape(3, 1) * np_.arange(2),
  lambda np_: (jax if np_ is jnp else tinyjax).jit(lambda s: np_.arange(5) * s + 0.25)(0.1),
])
def test_weakly_typed_floats_are_float64_with_x64(make):
  # jnp.arange(5) * 0.1 is weakly typed float64 with x64 in JAX; tinygrad computed and stored its weakfloat at its
  # DEFAULT_FLOAT (float32: 7 digits). Each mode twice, one after the other: no cache (kernels, schedules, eager
  # programs, jit) may give one mode's width to the other.
  for x64 in (True, False, True, False):
    with contextlib.nullcontext() if x64 else x64_off():
      got, want = make(tnp), make(jnp)
      a, w = np.asarray(got), np.asarray(want)
      assert a.dtype == w.dtype == np.dtype(got.dtype), (a.dtype, w.dtype, got.dtype)
      np.testing.assert_allclose(a, w, rtol=1e-15 if x64 else 1e-6, atol=0)


def test_a_constant_fill_read_again_is_not_scheduled_again(monkeypatch):
  # jnp.zeros is a fill of a new buffer (tinygrad's AFTER/STORE), written from the host when first read; another
  # value still reading that fill is computed by a program found by its structure, not by tinygrad's scheduler (the
  # KS port's complex constants: their zero imaginary parts sent every realize of 16 constants to the scheduler)
  import tinygrad.tensor as tensor
  schedules = []
  monkeypatch.setattr(tensor, "create_linear_with_vars", lambda *a, _f=tensor.create_linear_with_vars, **k: schedules.append(1) or _f(*a, **k))
  got = []
  for i in range(3):
    z = tnp.zeros(7)   # a fill of a new buffer
    w = Tensor(np.arange(7, dtype=np.float32)).realize()
    a, b = z + w, z * w - 2.0
    np.testing.assert_array_equal(a.numpy(), np.arange(7, dtype=np.float32))
    schedules.clear()
    np.testing.assert_array_equal(b.numpy(), np.full(7, -2.0, np.float32))
    got.append(len(schedules))
  assert got[1:] == [0, 0], got


def test_host_data_read_is_its_buffer_without_a_kernel():
  # Tensor(numpy) is written into its buffer from the host: reading it runs no kernel (it copied the buffer before)
  from conftest import kernel_count
  x = np.random.default_rng(1).standard_normal(9).astype(np.float32)
  t = Tensor(x)
  assert kernel_count(lambda: t.realize()) == 0
  np.testing.assert_array_equal(t.numpy(), x)


def test_eager_writes_are_done_without_the_scheduler_with_tinygrads_semantics(monkeypatch):
  # `p -= lr * g` on realized state, `out += term` into jnp.zeros, `ml -= prior` on a lazy value and an assign of a
  # constant: computed by programs found by their structure and written into the buffer (no scheduler round trip,
  # 4-8 ms each in tinygrad's), with tinygrad's meaning: an alias of the buffer sees the write, a value built from the
  # old data before the write keeps the old data, a chain of writes applies in order
  import tinygrad.tensor as tensor
  schedules = []
  monkeypatch.setattr(tensor, "create_linear_with_vars", lambda *a, _f=tensor.create_linear_with_vars, **k: schedules.append(1) or _f(*a, **k))
  rng = np.random.default_rng(3)
  p0, g0 = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
  counts = []
  for _ in range(3):
    p, g = Tensor(p0).realize(), Tensor(g0).realize()
    alias = p.reshape(12)   # a view of p's buffer: sees the write
    before = p * 2          # built from the old data: keeps it
    schedules.clear()
    p -= 0.1 * g
    p += 1.0
    np.testing.assert_allclose(p.numpy(), p0 - np.float32(0.1) * g0 + 1, rtol=1e-6)
    np.testing.assert_allclose(alias.numpy(), (p0 - np.float32(0.1) * g0 + 1).reshape(12), rtol=1e-6)
    np.testing.assert_allclose(before.numpy(), p0 * 2, rtol=1e-6)
    out = tnp.zeros(4)
    for k in range(3): out += k * g[k]
    np.testing.assert_allclose(out.numpy(), g0[1] + 2 * g0[2], rtol=1e-6)
    ml = tnp.sum(g * g)   # lazy, no buffer: the write is its new value
    ml -= tnp.sum(g)
    np.testing.assert_allclose(ml.numpy(), (g0 * g0).sum() - g0.sum(), rtol=1e-5)
    c = Tensor.empty(2, 3, dtype=dtypes.int32).assign(Tensor.stack(Tensor.arange(3), Tensor.arange(3) * 2) + 1)
    np.testing.assert_array_equal(c.numpy(), [[1, 2, 3], [1, 3, 5]])
    counts.append(len(schedules))
  assert counts[1:] == [0, 0], counts


def _composites(np_, sp, nn):
  x, y = np.array([0.5, -1.5, 2.0, 0.0], np.float32), np.array([[1.0], [-2.0], [0.0]], np.float32)
  z = np.array([1 + 2j, -0.5j, 3.0, -1 - 1j], np.complex64)
  u = np.array([1.0, np.inf, np.nan, 2.0, -np.inf], np.float32)
  v = np.array([1.0 + 1e-4, np.inf, np.nan, 2.1, np.inf], np.float32)
  return [np_.tanh(x), np_.sinh(x), np_.cosh(x), sp.special.erf(x), nn.softplus(x), nn.gelu(x), nn.gelu(x, approximate=False),
          np_.isclose(u, v), np_.isclose(u, v, rtol=1e-3, atol=0.0, equal_nan=True),
          np_.arctan2(x, y), np_.hypot(x, y), np_.arcsinh(x), np_.logaddexp(x, y), np_.mod(x, y + 0.75), np_.sinc(x),
          np_.abs(z), np_.angle(z), np_.asarray(z) * np_.asarray(z[::-1]), np_.asarray(z) / np_.asarray(z[::-1]),
          sp.special.gammaln(x + 3), sp.special.logsumexp(np_.asarray(x) * np_.asarray(y), axis=1),
          np_.tensordot(np_.asarray(y) * np_.asarray(x), np_.asarray(x), axes=1),
          np_.tensordot(np_.asarray(z), np_.asarray(z[::-1]), axes=0),
          np_.power(np_.abs(np_.asarray(x)), 3.5), np_.float_power(np_.asarray(y), 2.0), np_.clip(np_.asarray(x), -0.5, 1.25),
          np_.round(np_.asarray(x) * 3.3, 1), np_.cumsum(np_.asarray(y) * np_.asarray(x), axis=1), np_.argmax(np_.asarray(u), axis=0),
          np_.sort(np_.asarray(u)), np_.argsort(np_.asarray(x), descending=True), np_.var(np_.asarray(y) * np_.asarray(x), axis=0, ddof=1),
          np_.median(np_.asarray(y) * np_.asarray(x), axis=1), np_.percentile(np_.asarray(x), 30.0), np_.fmod(np_.asarray(x), 0.3),
          np_.ptp(np_.asarray(y) * np_.asarray(x), axis=0),
          np_.kron(np_.asarray(x), np_.asarray(y)), np_.trace(np_.asarray(y) * np_.asarray(x)), np_.diagonal(np_.asarray(y) * np_.asarray(x)),
          np_.tril(np_.asarray(y) * np_.asarray(x)), np_.searchsorted(np_.sort(np_.asarray(x)), np_.asarray(x) + 0.25),
          np_.nanmean(np_.asarray(u), axis=0)]

def test_composite_kernels_are_built_once_and_give_the_ops_numbers(monkeypatch):
  """A kernel of many tinygrad ops (tanh, erf, gelu, isclose, atan2, hypot, a complex product, logsumexp...) is built once per signature as a
  tinygrad @function body, and every eager call is one call node: the numbers are those of the ops built one by one
  (bit for bit) and JAX's."""
  from tinyjax.core import composite
  def run(): return [np.asarray(r) for r in _composites(tnp, tinyjax.scipy, tinyjax.nn)]
  first, again = run(), _composites(tnp, tinyjax.scipy, tinyjax.nn)
  calls = [r for r in again if isinstance(r, Tensor)]
  assert len(calls) >= 38 and all(r.uop.op is Ops.GETTUPLE and r.uop.src[0].op is Ops.FUNCTION for r in calls)
  with monkeypatch.context() as m:
    m.setattr(composite, "_building", True)   # the memo off: every op built as it is
    plain = run()
  for a, b, c in zip(first, [np.asarray(r) for r in again], plain, strict=True):
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(b, c)
  assert_close(first, [np.asarray(r) for r in _composites(jnp, jax.scipy, jax.nn)], rtol=2e-6, atol=1e-6)

def test_composite_float_arguments_are_arguments_not_bodies():
  """A Python float argument of a composite (jnp.power's exponent, clip's bounds) is an argument of its one body, as jit
  takes a Python scalar (weakly typed): a new value builds no body, and from the third value on compiles nothing (the
  second makes the value an input of the program). JAX's numbers and dtypes, for float and int arrays; float16 data with
  x64 off (a float stored at float32 would round twice) is not such a body: its exponent is a float16 constant."""
  from tinyjax.numpy._math import _power
  x = np.linspace(0.1, 2.0, 12, dtype=np.float32).reshape(3, 4)
  t = Tensor(x)
  compiles, bodies = [], len(_power.bodies)
  for p in (3.5, 0.75, 1 / 3, 2.5, -1.25):
    assert_close(tnp.power(t, p), jnp.power(x, p), rtol=2e-6, atol=0)
    assert_close(tnp.clip(t, -p, p / 2), jnp.clip(x, -p, p / 2))
    compiles.append(_runtime.eager_compiles)
  assert compiles[2:] == [compiles[2]] * 3, compiles
  assert len(_power.bodies) <= bodies + 1   # one body for every exponent
  assert_close(tnp.power(Tensor(np.arange(1, 6, dtype=np.int32)), 2.5), jnp.power(np.arange(1, 6, dtype=np.int32), 2.5))
  with x64_off():
    h = x.astype(np.float16)
    got = tnp.power(Tensor(h), 0.1)
    np.testing.assert_allclose(got.numpy(), np.asarray(jnp.power(h, 0.1)), rtol=1e-3)
    got = tnp.power(Tensor(x), 0.1)
    assert got.uop.op is Ops.GETTUPLE and got.dtype == dtypes.float32
    np.testing.assert_allclose(got.numpy(), np.asarray(jnp.power(x, 0.1)), rtol=2e-7)

def test_composite_keyword_arguments_and_fallbacks():
  """Keyword arguments are part of a composite's signature; arguments it cannot take (a list, a numpy array) or a
  function that raises on them give the function's own result or error, as JAX's."""
  x = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]], np.float32)
  for f in (lambda m, a: m.sort(a, axis=0, descending=True), lambda m, a: m.var(a, axis=1, ddof=1, keepdims=True),
            lambda m, a: m.cumsum(a, axis=0, dtype=m.float64), lambda m, a: m.argmin(a, axis=1, keepdims=True),
            lambda m, a: m.clip(a, min=0.0), lambda m, a: m.round(np.asarray(a), 1)):
    assert_close(f(tnp, Tensor(x)), f(jnp, x), rtol=2e-6, atol=1e-6)
  for f in (lambda m, a: m.var(a, ddof=1, correction=1), lambda m, a: m.sort(a, kind="heap")):
    for _ in range(2): same_error(lambda: f(tnp, Tensor(x)), lambda: f(jnp, x))
  for _ in range(2):
    with pytest.raises(IndexError, match="axis 3 is out of bounds"): tnp.argmax(Tensor(x), axis=3)   # (JAX: IndexError too)

def test_transforms_of_a_function_closing_over_a_composite_result():
  # an eager composite result not yet computed is a call node inside the traced graph: inlined by every transform
  x, y = np.array([0.5, -1.5, 2.0], np.float32), np.array([1.0, 2.0, -3.0], np.float32)
  got, want = [], []
  for lib, np_, out in ((tinyjax, tnp, got), (jax, jnp, want)):
    a = np_.arctan2(np_.asarray(x), np_.asarray(y))
    out += [lib.grad(lambda t: (np_.hypot(t, a) * a).sum())(np_.asarray(x)), lib.jit(lambda t: t * a)(np_.asarray(y)),
            lib.vmap(lambda t: t * np_.hypot(a, t))(np_.ones((2, 3), np_.float32))]
  assert_close(got, want, rtol=2e-6, atol=1e-6)

def test_eager_fft_reads_its_inputs_in_place():
  # jnp.fft along a leading axis: the axis moved last is a numpy view of the input's buffer, the imaginary part of a
  # real input a constant: no copy kernel, only the host FFT (pocketfft, as JAX's CPU FFT)
  s = np.sin(np.linspace(0, 30, 256, dtype=np.float32))[None, :, None] * np.arange(1, 4, dtype=np.float32)
  t = tnp.asarray(s)
  t.realize()
  assert kernel_count(lambda: tnp.fft.fft(t, axis=-2)) == 0
  assert_close([tnp.fft.fft(t, axis=-2), tnp.fft.ifft(tnp.fft.fft(t, axis=1), axis=1)],
               [jnp.fft.fft(s, axis=-2), jnp.fft.ifft(jnp.fft.fft(s, axis=1), axis=1)], rtol=1e-5, atol=1e-5)

def test_an_eager_gradient_found_again_is_one_call_of_the_stored_graph():
  """An eager grad whose graph was differentiated before (same structure) is one @function call of the stored gradient
  on this call's inputs, not the stored graph substituted node by node; the inputs' buffers are bound too (the call
  reads them whole): a product with zeros after one without gives JAX's gradient, not the placeholders' zeros."""
  def f(np_): return lambda x: (np_.prod(x, axis=0) * np_.arctan2(x[0], 1.5)).sum()
  a = np.random.default_rng(0).standard_normal((3, 4))
  b = a.copy()
  b[1, 0] = b[0, 2] = b[2, 2] = 0.0
  got, calls = [], []
  for x in (a, b, a):
    got.append(g := tinyjax.grad(f(tnp))(Tensor(x)))   # (lazy until the next transform starts)
    calls.append([u.arg.name for u in g.uop.toposort(enter_calls=False) if u.op is Ops.FUNCTION])
  assert calls == [["_compute_gradients"]] * 3
  assert_close(got, [jax.grad(f(jnp))(x) for x in (a, b, a)])
  got, calls, t = [], [], np.linspace(-1, 1, 12).reshape(3, 4)
  for x in (a, b, a):   # forward mode alike
    got.append(j := tinyjax.jvp(f(tnp), (Tensor(x),), (Tensor(t),)))
    calls.append([u.arg.name for u in j[1].uop.toposort(enter_calls=False) if u.op is Ops.FUNCTION])
  assert calls == [["_compute_tangents"]] * 3
  assert_close(got, [jax.jvp(f(jnp), (x,), (t,)) for x in (a, b, a)])

def test_weakly_typed_jit_results_are_no_pending_computation(monkeypatch):
  # a jitted function's weak result is a weakly typed view of its stored data: the next transform has nothing to
  # compute for it (kursiv's list of times: each went through tinygrad's realize, a copy kernel, at every transform)
  import tinyjax._tg.runtime as runtime
  step = tinyjax.jit(lambda t: t + 0.25)
  ts = [step(float(i)) for i in range(3)]
  assert not any(_tg.is_lazy(t) for t in ts) and all(t.dtype in dtypes.weaks for t in ts)
  calls: list = []
  monkeypatch.setattr(runtime, "_realize_by_tinygrad", lambda tensors, early: calls.append(tensors))
  tinyjax.grad(lambda x: (x * 3.0).sum())(Tensor(np.ones(3, np.float32))).realize()
  assert not any(t is x for c in calls for x in c for t in ts) and [t.item() for t in ts] == [0.25, 1.25, 2.25]

def test_a_placeholders_bare_buffer_left_in_a_result_raises_on_read(monkeypatch):
  """A memoised gradient called on the placeholders' buffers holds them bare: were one left unbound (a caller that
  substitutes only the views), reading the result must raise, never compute on a buffer never written (zeros)."""
  import tinyjax.transforms.vjp as vjp_module
  monkeypatch.setattr(vjp_module, "with_buffers", lambda subs: subs)   # the binding forgotten
  a = np.random.default_rng(1).standard_normal((3, 4))
  with pytest.raises(tinyjax.errors.UnexpectedTracerError):
    for _ in range(2):
      _, pull = tinyjax.vjp(lambda x: x.prod(axis=0), Tensor(a))
      pull(Tensor(np.ones(4)))[0].numpy()


def test_eager_graphs_with_host_calls_are_compiled_once():
  """An eager gradient through LAPACK (its reverse pass holds host calls: a new executor and new output buffers at each
  build) is compiled once and replayed on the next inputs; a host call's constant argument, which its executor fills,
  keys the program by its value (a replay with another constant would compute with the first)."""
  def f(np_): return lambda a: np_.linalg.slogdet(a @ a.T + np_.eye(4))[1]
  r = np.random.default_rng(0)
  xs = [r.standard_normal((4, 4)) for _ in range(4)]
  got, counts = [], []
  for x in xs:
    got.append(g := tinyjax.grad(f(tnp))(Tensor(x)))
    g.numpy()
    counts.append(_runtime.eager_compiles)
  assert_close(got, [jax.grad(f(jnp))(x) for x in xs])
  assert counts[1:] == [counts[1]] * 3, counts
  # a scan whose xs is a fill (a constant: its executor fills it) of a Python float that changes
  def g(np_, lax, c): return lambda y: lax.scan(lambda s, x: (s + x * y, None), np_.zeros(3), np_.full((3, 3), c))[0]
  y = r.standard_normal(3)
  for c in (1.0, 2.0, 1.0, 3.5):
    assert_close(tinyjax.vjp(g(tnp, tinyjax.lax, c), Tensor(y))[0], g(jnp, jax.lax, c)(y))


def test_eager_gradients_through_custom_rules_leave_no_traced_values_alive():
  """A custom_jvp call's rule lives as long as graphs holding the call (in caches); it kept the function's traced
  outputs, which every later eager transform scanned (realize_pending): 2 more per call, 28 -> 10 ms an eager grad of
  slogdet at n = 8 once fixed."""
  import gc
  f = tinyjax.grad(lambda a: tnp.linalg.slogdet(a)[1])
  a = Tensor(np.random.default_rng(0).standard_normal((4, 4)) + 4 * np.eye(4))
  def traced() -> int:
    gc.collect()
    return sum(tinyjax.core.traced_by(t) is not None for t in _tg.live_tensors() if _tg.is_lazy(t))
  f(a).numpy()
  before = traced()
  for _ in range(5): f(a).numpy()
  assert traced() <= before   # (values other tests left may go meanwhile; a leak adds 2 per call)


def _newton_sqrt(np_, custom_vjp, vjp, while_loop):
  """JAX's custom_vjp fixed point (docs, "Custom derivative rules"): Newton's square root, its vjp a fixed point too."""
  @functools.partial(custom_vjp, nondiff_argnums=(0,))
  def fixed_point(f, a, x_guess):
    return while_loop(lambda c: np_.abs(c[0] - c[1]) > 1e-6, lambda c: (c[1], f(a, c[1])), (x_guess, f(a, x_guess)))[1]
  def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    return x_star_bar + vjp(lambda x: f(a, x), x_star)[1](u)[0]
  def fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)
  def rev(f, res, x_star_bar):
    a, x_star = res
    a_bar, = vjp(lambda a: f(a, x_star), a)[1](fixed_point(functools.partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
    return a_bar, np_.zeros_like(x_star)
  fixed_point.defvjp(fwd, rev)
  return lambda a: fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)

@pytest.mark.parametrize("program", ["host call", "pullback out of jit", "custom_vjp residuals"])
def test_rules_and_executors_keep_no_traced_values_alive(program):
  """What a traced function leaves in caches keeps no traced Tensor alive: a host call's executor (it kept the traced
  arguments: 13 of them in the GP port's warm run, which every later eager transform walked in realize_pending: 150 ->
  126 ms once fixed), a pullback a jitted function returns (its output tree keeps it: it kept the primal outputs), a
  custom_vjp's rule traced under an outer grad (it kept its residuals and arguments)."""
  import gc
  a = Tensor(np.random.default_rng(0).standard_normal((4, 4)) + 4 * np.eye(4))
  def traced() -> int:
    gc.collect()
    return sum(tinyjax.core.traced_by(t) is not None for t in _tg.live_tensors() if _tg.is_lazy(t))
  counts, before = [], traced()
  # a new function each time (a re-run script's jit): traced again, its calls made again (its kernels are the same:
  # found in tinygrad's caches, as a re-run's would be)
  if program == "host call": want = jax.grad(lambda a: (jnp.linalg.cholesky(a @ a.T + 1) ** 2).sum())(a.numpy())
  elif program == "pullback out of jit":
    want = jax.vjp(lambda b: jnp.tanh(b @ b + 1), a.numpy())[1](np.tanh(a.numpy() @ a.numpy() + 1))[0]
  else: want = jax.grad(jax.grad(_newton_sqrt(jnp, jax.custom_vjp, jax.vjp, jax.lax.while_loop)))(3.0)
  for _ in range(4):
    if program == "host call": got = tinyjax.jit(tinyjax.grad(lambda a: (tnp.linalg.cholesky(a @ a.T + 1) ** 2).sum()))(a)
    elif program == "pullback out of jit":
      y, pull = tinyjax.jit(lambda a: tinyjax.vjp(lambda b: tnp.tanh(b @ b + 1), a))(a)
      got = pull(y)[0]
    else:   # (the inner grad's rule traced under the outer grad)
      got = tinyjax.grad(tinyjax.grad(_newton_sqrt(tnp, tinyjax.custom_vjp, tinyjax.vjp, tl.while_loop)))(3.0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
    counts.append(traced())
  assert counts[-1] <= before, counts   # (values other tests left may go meanwhile)

def test_eager_programs_are_bounded(monkeypatch):
  # a long eager program of ever new shapes keeps at most _MAX_EAGER_PROGRAMS programs (the oldest go), and an evicted
  # structure is compiled again, with its values right
  monkeypatch.setattr(_runtime, "_MAX_EAGER_PROGRAMS", 3)
  for n in [2, 3, 4, 5, 6, 2]:
    x = Tensor(np.arange(n, dtype=np.float32)).realize()
    y = x * 2 + 1
    _tg.realize_lazy([y])
    np.testing.assert_array_equal(y.numpy(), np.arange(n, dtype=np.float32) * 2 + 1)
    assert len(_runtime._eager_programs) <= 3

def test_device_less_reads_are_compiled_once(monkeypatch):
  """A read of a device-less value that does not fold on the host (a float sum, jnp.linspace's) is computed by a
  program found again by its structure (the value stays device-less): no tinygrad schedule, one compile for two reads
  and for a clone into a buffer; JAX's numbers."""
  def f(np_, c):
    x = np_.linspace(0, 32 * np_.pi, 257)[1:]
    return np_.cos(x / c) * (1 + np_.sin(x / c)) + np_.sum(x) / 1e4
  want = np.asarray(f(jnp, 16.0))
  x0 = f(tnp, 16.0)
  np.testing.assert_allclose(x0.numpy(), want, rtol=1e-13, atol=1e-14)   # (the first read compiles)
  monkeypatch.setattr(Tensor, "linear_with_vars", lambda *a, **k: pytest.fail("a read went to tinygrad's scheduler"))
  before = _runtime.eager_compiles
  for c in (16.0, 16.0):
    x = f(tnp, c)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-13, atol=1e-14)
    assert x.device is None and x.uop.op is not Ops.BUFFER
  np.testing.assert_allclose(tnp.fft.irfft(tnp.fft.rfft(f(tnp, 16.0)), 256).numpy(), want, rtol=1e-12, atol=1e-13)
  np.testing.assert_allclose(f(tnp, 16.0).clone("CPU").numpy(), want, rtol=1e-13, atol=1e-14)
  assert _runtime.eager_compiles - before <= 1

def test_reads_of_computed_values_copy_out_by_the_allocator(monkeypatch):
  """numpy(), item() and tolist() of a lazy value compute it and copy its buffer out through the allocator, and folds
  of device-less values keep their nodes' values: no COPY program (tinygrad's reads ran one, 0.3-0.5 ms) and no kernel
  for what folds; the numbers numpy gives."""
  from tinygrad.device import Buffer
  from tinygrad.helpers import GlobalCounters
  x = Tensor(np.arange(6.0).reshape(2, 3)).realize()
  monkeypatch.setattr(Buffer, "copy_from", lambda *a: pytest.fail("a read ran a COPY program"))
  np.testing.assert_array_equal((x * 2 + 1).numpy(), np.arange(6.0).reshape(2, 3) * 2 + 1)
  assert (x.sum() * 3).item() == 45.0 and isinstance((x.sum() * 3).item(), float)
  assert (x[0] - 1).tolist() == [-1.0, 0.0, 1.0]
  assert float(tnp.asarray(2.5) * x[1, 1]) == 10.0
  ar = tnp.arange(10)
  before = GlobalCounters.kernel_count
  for i in range(5):   # device-less and exact: folded on the host, the arange's nodes once
    assert int((ar * i).sum()) == 45 * i
    assert (ar * i - 1).tolist() == list(np.arange(10) * i - 1)
  assert GlobalCounters.kernel_count == before


def test_iterating_a_concrete_array_copies_its_rows_on_the_host():
  """Rows of concrete data come from the host, each a buffer of its own, with no kernel (tinygrad's indexing built a
  view per row, ~90 us each): `key, sub = random.split(key)`, JAX's numbers. Under a jit or a transform, rows are the
  traced indexing as before."""
  import tinyjax.random as tr
  a = np.arange(24.0).reshape(4, 6)
  t = Tensor(a).realize()
  rows, cols = [], []
  assert kernel_count(lambda: (rows.extend(t), cols.extend(t.T))) == 0 and len(rows) == 4 and len(cols) == 6
  np.testing.assert_array_equal(np.stack([r.numpy() for r in rows]), a)
  np.testing.assert_array_equal(np.stack([c.numpy() for c in cols]), a.T)
  assert all(r.dtype == t.dtype and r.shape == (6,) for r in rows)
  bufs = [_tg.plain_buffer(r) for r in rows + cols]   # each row a buffer of its own, written on the host
  assert None not in bufs and len(set(bufs)) == 10 and _tg.plain_buffer(t) not in bufs
  np.testing.assert_array_equal(tinyjax.jit(lambda x: functools.reduce(lambda p, q: p + q, list(x)))(t).numpy(), a.sum(0))
  elements = list(rows[1])   # a vector's elements are 0-d arrays, as JAX's
  assert [e.shape for e in elements] == [()] * 6 and [float(e) for e in elements] == list(a[1])
  np.testing.assert_array_equal(tinyjax.vmap(lambda x: list(x)[1])(t).numpy(), a[:, 1])
  k, kj = tr.PRNGKey(7), jax.random.PRNGKey(7)
  for _ in range(3):
    k, sub = tr.split(k)
    kj, subj = jax.random.split(kj)
  np.testing.assert_array_equal(np.stack([k.numpy(), sub.numpy()]), np.stack([np.asarray(kj), np.asarray(subj)]))
  with pytest.raises(TypeError, match="iteration over a 0-d array"): list(Tensor(np.array(1.0, np.float32)).realize())


def test_reading_a_view_of_a_buffer_runs_no_kernel():
  """numpy(), item() and tolist() of a view of a realized buffer (x[1:3], x.T, x[0, 2]) read its memory through numpy
  (tinygrad computed the view by a kernel: 0.59 ms for x[1:3] of a 64x32 array); a view still sees a later write into
  its buffer once the write is made, as in tinygrad and numpy."""
  a = np.arange(12.0).reshape(3, 4)
  x = Tensor(a).realize()
  v, t = x[1:3], x.T
  got: list = []
  assert kernel_count(lambda: got.extend([v.numpy(), t.numpy(), x[0, 2].item(), x[2].tolist(), x[:, ::-1].numpy()])) == 0
  np.testing.assert_array_equal(got[0], a[1:3])
  np.testing.assert_array_equal(got[1], a.T)
  assert got[2] == 2.0 and got[3] == [8.0, 9.0, 10.0, 11.0]
  np.testing.assert_array_equal(got[4], a[:, ::-1])
  got[0][0, 0] = -1.0   # a copy: the buffer is not written
  assert x[1, 0].item() == 4.0
  x.assign(Tensor(np.full((3, 4), 7.0))).realize()
  np.testing.assert_array_equal(v.numpy(), np.full((2, 4), 7.0))
  np.testing.assert_array_equal(t.numpy(), np.full((4, 3), 7.0))

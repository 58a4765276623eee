"""The CPU graph executor (tinyjax/_tg/cpu_graph.py): a jitted function's kernels launched by one call into compiled
code, and lax loops run there without returning to Python between steps; the same values as JAX (x64) with it, without it
(the Python launches every other device uses) and on tinygrad's PYTHON emulator device."""
import functools
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor, GlobalCounters
from tinygrad.helpers import Context
import tinyjax
import tinyjax.numpy as tnp
from tinyjax import lax as tl
import tinyjax._tg.cpu_graph
from tinyjax._tg import Step
from conftest import assert_close, ref

RNG = np.random.default_rng(0)
A, Y0 = RNG.standard_normal((4, 4)) / 2, RNG.standard_normal(4)

def loops(np_, lax):
  """A scan (forward and reverse, odd and even lengths), a fori_loop and a while_loop with data-dependent trip counts."""
  def f(a, y0, n0):
    step = lambda y, x: (np_.tanh(y @ a) + x, y.sum())   # noqa: E731
    c1, ys1 = lax.scan(step, y0, np_.stack([y0, -y0, 2 * y0]))
    c2, ys2 = lax.scan(step, y0, np_.stack([y0, -y0, 2 * y0, y0]), reverse=True)
    c3 = lax.fori_loop(0, 5, lambda i, y: y * 0.5 + i, y0)
    c4 = lax.while_loop(lambda c: c[1] < 10.0, lambda c: (c[0] * 1.5, c[1] + 1.0), (y0, n0))
    return c1, ys1, c2, ys2, c3, c4
  return f

@pytest.mark.parametrize("n0", [10.0, 9.0, 8.0, 3.0])   # 0, 1, 2 and 7 trips of the while_loop
def test_loops_in_compiled_code_match_jax(n0, monkeypatch):
  f = tinyjax.jit(loops(tnp, tl))
  want = ref(lambda: jax.jit(loops(jnp, jax.lax))(A, Y0, n0))
  assert_close(f(Tensor(A), Tensor(Y0), n0), want)
  # the replay runs no loop step from Python
  steps = []
  monkeypatch.setattr(Step, "run", lambda self, *a: steps.append(a))
  assert_close(f(Tensor(A), Tensor(Y0), n0), want)
  assert steps == []

def test_loop_grad_and_vmap_in_compiled_code_match_jax():
  def g(np_, lax):
    def loss(a, y0): return (lax.scan(lambda y, _: (np_.tanh(y @ a), None), y0, None, length=7)[0] ** 2).sum()
    return lambda a, ys: (jax.grad if np_ is jnp else tinyjax.grad)(loss)(a, ys[0]) + \
      (jax.vmap if np_ is jnp else tinyjax.vmap)(lambda y: loss(a, y))(ys).sum()
  ys = np.stack([Y0, -Y0, Y0 * 0.5])
  assert_close(tinyjax.jit(g(tnp, tl))(Tensor(A), Tensor(ys)), ref(lambda: jax.jit(g(jnp, jax.lax))(A, ys)))

def test_without_the_executor_the_same_values(monkeypatch):
  monkeypatch.setattr("tinyjax._tg.cpu_graph.executor", lambda device: None)
  a, y0 = RNG.standard_normal((5, 5)) / 2, RNG.standard_normal(5)   # shapes no test compiled before: new steps
  f = tinyjax.jit(loops(tnp, tl))
  assert_close(f(Tensor(a), Tensor(y0), 7.0), ref(lambda: jax.jit(loops(jnp, jax.lax))(a, y0, 7.0)))

def test_one_launch_per_replay(monkeypatch):
  f = tinyjax.jit(lambda a, y: (tnp.tanh(y @ a) @ a).sum() * y + tnp.exp(a).sum(0))   # several kernels
  a, y = Tensor(A.astype(np.float32)).realize(), Tensor(Y0.astype(np.float32)).realize()
  f(a, y)
  calls = []
  real = tinyjax._tg.cpu_graph.run
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run", lambda device, c: (calls.append(c.kernels), real(device, c))[1])
  GlobalCounters.reset()
  out = f(a, y).numpy()
  assert len(calls) == 1 and calls[0] == GlobalCounters.kernel_count > 1
  want = (np.tanh(Y0 @ A) @ A).sum() * Y0 + np.exp(A).sum(0)
  np.testing.assert_allclose(out, want, rtol=1e-5)

def test_python_device_runs_jit_and_vmap_grad():
  """tinygrad's PYTHON emulator (no clang, no executor): the Python launches."""
  def f(np_, lax):
    def loss(w, x): return np_.tanh(lax.fori_loop(0, 3, lambda i, c: c * w + 1.0, x)).sum()
    return lambda w, xs: (jax.vmap if np_ is jnp else tinyjax.vmap)((jax.grad if np_ is jnp else tinyjax.grad)(loss), (None, 0))(w, xs)
  w, xs = np.array(0.5, np.float32), RNG.standard_normal((2, 3)).astype(np.float32)
  got = tinyjax.jit(f(tnp, tl))(Tensor(w, device="PYTHON"), Tensor(xs, device="PYTHON"))
  assert got.device == "PYTHON"
  np.testing.assert_allclose(got.numpy(), np.asarray(jax.jit(f(jnp, jax.lax))(w, xs)), rtol=1e-5)

def nested(np_, lax):
  """Loops holding loops (a fori_loop and a while_loop in a fori_loop, a fori_loop in a scan) and a loop holding LAPACK
  solves (jnp.linalg.solve: getrf and trsm)."""
  def f(a, y0, n0):
    def outer(i, y):
      y = lax.fori_loop(0, 3, lambda j, z: np_.tanh(z @ a) + j * 0.1 + i, y)
      z, _ = lax.while_loop(lambda c: c[1] < n0, lambda c: (c[0] * 0.9, c[1] + 1.0), (y, 0.0 * n0))
      return z + 0.5 * y
    c = lax.fori_loop(0, 4, outer, y0)
    d, ys = lax.scan(lambda c, x: (lax.fori_loop(0, 2, lambda j, z: z * x + 1.0, c), c.sum()), y0, np_.stack([y0, 2 * y0, -y0]))
    m = a + 2 * np_.eye(4)
    s = lax.fori_loop(0, 3, lambda i, x: np_.linalg.solve(m + i, x) + np_.linalg.solve(m.T, y0[:, None]), y0[:, None] * np_.ones((4, 2)))
    return c, d, ys, s
  return f

@pytest.mark.parametrize("n0", [0.0, 1.0, 2.0])   # the inner while_loop runs 0, 1, 2 trips
def test_nested_loops_and_solves_in_compiled_code_match_jax(n0, monkeypatch):
  f = tinyjax.jit(nested(tnp, tl))
  want = ref(lambda: jax.jit(nested(jnp, jax.lax))(A, Y0, n0))
  assert_close(f(Tensor(A), Tensor(Y0), n0), want)
  # the replay: one call into compiled code (its loops and solves rows of one table), no step from Python
  steps, loops, runs = [], [], []
  real_loop, real_run = tinyjax._tg.cpu_graph.run_loop, tinyjax._tg.cpu_graph.run
  monkeypatch.setattr(Step, "run", lambda self, *a: steps.append(a))
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run_loop", lambda *a: loops.append(a) or real_loop(*a))
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run", lambda *a: runs.append(a) or real_run(*a))   # (the kernels between loops)
  assert_close(f(Tensor(A), Tensor(Y0), n0), want)
  assert steps == [] and len(loops) == len(runs) == 1

def test_switch_in_a_loop_in_compiled_code(monkeypatch):
  """lax.cond and lax.switch in a loop's body are rows of its table: the branch the index names runs, clamped."""
  def f(np_, lax):
    def g(a, y0):
      def step(i, y):
        y = lax.cond(y.sum() > 0, lambda v: np_.tanh(v @ a), lambda v: v * 0.5 - 1.0, y)
        return lax.switch(i - 1, [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: -v], y)   # -1 and 5 clamp
      return lax.fori_loop(0, 7, step, y0)
    return g
  want = ref(lambda: jax.jit(f(jnp, jax.lax))(A, Y0))
  got = tinyjax.jit(f(tnp, tl))
  assert_close(got(Tensor(A), Tensor(Y0)), want)
  monkeypatch.setattr(Step, "run", lambda self, *a: pytest.fail("a step ran from Python"))
  assert_close(got(Tensor(A), Tensor(Y0)), want)
  assert_close(got(Tensor(A), Tensor(-Y0)), ref(lambda: jax.jit(f(jnp, jax.lax))(A, -Y0)))

def test_solve_in_a_loop_is_lapack_bit_for_bit():
  """The LAPACK row (getrf, trsm with L, trsm with U through scipy's function pointers) gives JAX's solve exactly."""
  rng = np.random.default_rng(2)
  for dt in (np.float64, np.float32):
    a, b = rng.standard_normal((3, 6, 6)).astype(dt), rng.standard_normal((3, 6, 2)).astype(dt)
    def f(np_, lax): return lambda a, b: lax.fori_loop(0, 3, lambda i, x: (np_.linalg.solve(a, x[0]), np_.linalg.inv(x[1])), (b, a))
    want = ref(lambda: jax.jit(f(jnp, jax.lax))(a, b))
    got = tinyjax.jit(f(tnp, tl))
    for _ in range(2):
      for g, w in zip(got(Tensor(a), Tensor(b)), want, strict=True): np.testing.assert_array_equal(g.numpy(), np.asarray(w))

def test_library_rows_of_a_replay_are_jax_bit_for_bit(monkeypatch):
  """A jitted function whose LAPACK and BLAS calls make rows (Cholesky: potrf; triangular solves: trsm, from either
  side, transposed, unit diagonal; LU: getrf, its pivots and permutation; solve and inv; QR: geqrf, orgqr, reduced and
  complete, tall and wide; eigh: syevd; SVD: gesdd, full, reduced, values alone) replays as one table, one call into
  compiled code, with JAX's values bit for bit: batched, float64 and float32, a Cholesky that fails (NaN)."""
  rng = np.random.default_rng(3)
  def f(np_, lax, sp):
    def g(spd, b, c):
      l = np_.linalg.cholesky(spd)
      bad = np_.linalg.cholesky(-spd)
      x = sp.linalg.solve_triangular(l, b, lower=True)
      y = sp.linalg.solve_triangular(l, b, lower=True, trans="T", unit_diagonal=True)
      z = lax.linalg.triangular_solve(l, np_.swapaxes(b, -1, -2), left_side=False, lower=True, transpose_a=True)
      lu, piv, perm = lax.linalg.lu(c)
      return (l, bad, x, y, z, lu, piv, perm, np_.linalg.slogdet(spd), np_.linalg.solve(spd, b), np_.linalg.inv(spd),
              np_.linalg.qr(c), np_.linalg.qr(c, mode="complete"), np_.linalg.qr(np_.swapaxes(c, -1, -2)), np_.linalg.eigh(spd),
              np_.linalg.svd(c), np_.linalg.svd(np_.swapaxes(c, -1, -2), full_matrices=False), np_.linalg.svd(c, compute_uv=False))
    return g
  calls = []
  real = tinyjax._tg.cpu_graph.run
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run", lambda device, c: (calls.append(c), real(device, c))[1])
  for dt in (np.float64, np.float32):
    a, b, c = (rng.standard_normal(s) for s in ((2, 6, 6), (2, 6, 3), (2, 5, 4)))
    a, b, c = (a @ np.swapaxes(a, -1, -2) + 6 * np.eye(6)).astype(dt), b.astype(dt), c.astype(dt)
    want = ref(lambda: jax.jit(f(jnp, jax.lax, jax.scipy))(a, b, c))
    got = tinyjax.jit(f(tnp, tl, tinyjax.scipy))
    for k in range(3):
      calls.clear()
      outs = zip(tinyjax.tree_util.tree_leaves(got(Tensor(a), Tensor(b), Tensor(c))), jax.tree_util.tree_leaves(want), strict=True)
      for i, (g, w) in enumerate(outs):   # (slogdet's log|det| is a sum of logs: tinygrad's order, not XLA's)
        if i == 9: np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=4 * np.finfo(dt).eps)
        else: np.testing.assert_array_equal(g.numpy(), np.asarray(w))
      if k: assert len(calls) == 1   # (replays: the first call captures)

def test_eig_rows_are_jax_bit_for_bit(monkeypatch):
  """Real eig (geev) as a row: eigenvalues alone, right and left eigenvectors, conjugate pairs unpacked into complex
  vectors as JAX's, batched, float64 and float32, a matrix with a NaN (geev fails: NaN, as JAX); one call per replay."""
  rng = np.random.default_rng(4)
  def f(np_, lax):
    return lambda a: (np_.linalg.eigvals(a), np_.linalg.eig(a), lax.linalg.eig(a, compute_right_eigenvectors=False),
                      lax.linalg.eig(a))
  calls, in_python = [], []
  real, one = tinyjax._tg.cpu_graph.run, tinyjax.lax.linalg.LapackEig.one
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run", lambda device, c: (calls.append(c), real(device, c))[1])
  monkeypatch.setattr(tinyjax.lax.linalg.LapackEig, "one", lambda *a: (in_python.append(1), one(*a))[1])
  for dt in (np.float64, np.float32):
    a = rng.standard_normal((3, 5, 5)).astype(dt)   # (random real matrices: most have complex pairs)
    a[2, 1, 3] = np.nan
    want = ref(lambda: jax.jit(f(jnp, jax.lax))(a))
    got = tinyjax.jit(f(tnp, tl))
    for k in range(3):
      calls.clear()
      outs = tinyjax.tree_util.tree_leaves(got(Tensor(a)))
      for g, w in zip(outs, jax.tree_util.tree_leaves(want), strict=True): np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
      if k: assert len(calls) == 1 and not in_python   # (replays: the first call captures)
      in_python.clear()
    assert np.iscomplex(np.asarray(outs[0])[:2]).any() and np.isnan(np.asarray(outs[0])[2]).all()

def test_expm_rows_are_the_python_paths_bit_for_bit(monkeypatch):
  """expm (JAX's scaling and squaring) as a row: every Pade degree and a number of squarings by the matrices' norms,
  upper triangular input (trsm), a NaN and a norm past max_squarings (NaN, as JAX), its derivative (the block matrix's
  expm), batched, float64 and float32: the Python path's values bit for bit (LapackExpm.one), JAX's to rounding; one
  call per replay."""
  from tinyjax.lax import linalg as tll
  rng = np.random.default_rng(5)
  calls, in_python = [], []
  real, one = tinyjax._tg.cpu_graph.run, tll.LapackExpm.one
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run", lambda device, c: (calls.append(c), real(device, c))[1])
  monkeypatch.setattr(tll.LapackExpm, "one", lambda *a: (in_python.append(1), one(*a))[1])
  def f(sp, np_, grad):   # (whole arguments: a host call on a view of one runs from Python, not as a row)
    return lambda a, b, c, t: (sp.linalg.expm(a), sp.linalg.expm(np_.triu(b), upper_triangular=True), sp.linalg.expm(c, max_squarings=1),
                               grad(lambda m: (sp.linalg.expm(m) * t).sum())(b))
  for dt in (np.float64, np.float32):
    a = rng.standard_normal((7, 5, 5)) * np.array([0.005, 0.05, 0.2, 0.6, 1.5, 4.0, 30.0])[:, None, None]   # degrees 3 ... 13, squarings
    a[6, 0, 0] = np.nan
    args = [x.astype(dt) for x in (a, rng.standard_normal((5, 5)), rng.standard_normal((5, 5)) * 4, rng.standard_normal((5, 5)))]
    want = ref(lambda: jax.jit(f(jax.scipy, jnp, jax.grad))(*args))
    got = tinyjax.jit(f(tinyjax.scipy, tnp, tinyjax.grad))
    for k in range(3):
      calls.clear()
      outs = got(*map(Tensor, args))
      for g, w in zip(outs, want, strict=True): assert_close(g, np.asarray(w), rtol=3e-5 if dt == np.float32 else 1e-11)
      if k: assert (len(calls), len(in_python)) == (1, 0)
      in_python.clear()
    py = tll.LapackExpm(False, 16)
    for i, m in enumerate(args[0]):   # (the Python path: LapackExpm's own routine on each matrix)
      np.testing.assert_array_equal(outs[0].numpy()[i], py._run([m], [(m.shape, tll.dtypes.float64 if dt == np.float64 else tll.dtypes.float32)])[0])
    assert np.isnan(outs[0].numpy()[6]).all() and np.isnan(outs[2].numpy()).all()   # (c needs more than one squaring)

def test_fft_rows_are_numpy_pocketfft_bit_for_bit(monkeypatch):
  """A jitted function's FFTs (complex, inverse, real of even and odd lengths, inverse real with the input padded and
  cut, batched along a moved axis; in a loop's step and in its gradient's) are rows calling numpy's pocketfft loop:
  one call into compiled code per replay, no step from Python, the eager call's values bit for bit (the same loops),
  JAX's (ducc) to rounding; float64 and float32."""
  def f(np_, lax):
    def g(x, z):
      a = (np_.fft.fft(z), np_.fft.ifft(z, axis=0), np_.fft.rfft(x), np_.fft.rfft(x[:, :7]), np_.fft.irfft(z, 10),
           np_.fft.irfft(z, 5), np_.fft.irfft(z[:, :3], 9))
      step = lambda i, v: np_.fft.rfft(np_.fft.irfft(v, 8) ** 2) * 0.1 + v   # noqa: E731
      return a, lax.fori_loop(0, 3, step, np_.fft.rfft(x[:, :8]))
    return g
  calls, real = [], tinyjax._tg.cpu_graph.run
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run", lambda device, c: (calls.append(c), real(device, c))[1])
  rng = np.random.default_rng(4)
  for dt, tol in ((np.float64, 1e-12), (np.float32, 2e-5)):
    x = rng.standard_normal((3, 8)).astype(dt)
    z = (rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))).astype(np.result_type(dt, np.complex64))
    want = ref(lambda: jax.jit(f(jnp, jax.lax))(x, z))
    eager = f(tnp, tl)(tnp.asarray(x), tnp.asarray(z))
    got = tinyjax.jit(f(tnp, tl))
    for k in range(3):
      args = tnp.asarray(x), tnp.asarray(z)
      calls.clear()
      with monkeypatch.context() as m:
        if k: m.setattr(Step, "run", lambda self, *a: pytest.fail("a step ran from Python"))
        out = got(*args)
      if k: assert len(calls) == 1   # (before the reads below: a complex array's read computes)
      for g_, e, w in zip(*(tinyjax.tree_util.tree_leaves(t) for t in (out, eager)), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(g_), np.asarray(e))
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w), rtol=tol, atol=tol)
  # the gradient through a loop of FFTs: its reverse step's FFTs (the transposes) are rows too
  def loss(np_, lax):
    return lambda x: np_.abs(lax.fori_loop(0, 3, lambda i, v: np_.fft.rfft(np_.fft.irfft(v, 8) ** 2) * 0.1 + v, np_.fft.rfft(x))).sum()
  x = rng.standard_normal(8)
  want = ref(lambda: jax.jit(jax.grad(loss(jnp, jax.lax)))(x))
  g = tinyjax.jit(tinyjax.grad(loss(tnp, tl)))
  assert_close(g(Tensor(x)), want)
  monkeypatch.setattr(Step, "run", lambda self, *a: pytest.fail("a step ran from Python"))
  assert_close(g(Tensor(x)), want)

def test_nested_kernel_count_is_the_python_launches(monkeypatch):
  """The executor counts every kernel it launches in nested loops (GlobalCounters), as the Python launches do."""
  def f(a, y0):
    return tl.fori_loop(0, 3, lambda i, y: tl.while_loop(lambda c: c[1] < i, lambda c: (tnp.tanh(c[0] @ a), c[1] + 1), (y, 0))[0], y0)
  counts = []
  for on in (True, False):
    if not on: monkeypatch.setattr("tinyjax._tg.cpu_graph.executor", lambda device: None)
    g = tinyjax.jit(f)
    g(Tensor(A), Tensor(Y0)).realize()
    GlobalCounters.reset()
    g(Tensor(A), Tensor(Y0)).realize()
    counts.append(GlobalCounters.kernel_count)
  assert counts[0] == counts[1] > 0

def test_nested_grad_with_and_without_the_executor(monkeypatch):
  def g(np_, lax):
    def loss(a, y0):
      def outer(c, _):
        c = lax.fori_loop(0, 2, lambda j, z: np_.tanh(z @ a), c)
        return np_.linalg.solve(a + 3 * np_.eye(4), c[:, None])[:, 0], None
      return (lax.scan(outer, y0, None, length=3)[0] ** 2).sum()
    return (jax.grad if np_ is jnp else tinyjax.grad)(loss, (0, 1))
  want = ref(lambda: jax.jit(g(jnp, jax.lax))(A, Y0))
  f = tinyjax.jit(g(tnp, tl))
  assert_close(f(Tensor(A), Tensor(Y0)), want)
  with monkeypatch.context() as m:   # the reverse scan's step holds inv and solve (their vjps): rows too
    m.setattr(Step, "run", lambda self, *a: pytest.fail("a step ran from Python"))
    assert_close(f(Tensor(A), Tensor(Y0)), want)
  monkeypatch.setattr("tinyjax._tg.cpu_graph.executor", lambda device: None)
  assert_close(tinyjax.jit(g(tnp, tl))(Tensor(A), Tensor(Y0)), want)

def test_python_device_runs_nested_loops_and_cond():
  """tinygrad's PYTHON emulator: nested loops and a cond in a loop run their steps from Python, the same values."""
  def f(np_, lax):
    def g(y):
      def outer(i, y):
        y = lax.fori_loop(0, 2, lambda j, z: z * 0.5 + j, y)
        return lax.cond(y.sum() > 1.0, lambda v: v - 1.0, lambda v: v * 3.0, y)
      return lax.fori_loop(0, 3, outer, y)
    return g
  y = np.array([0.25, -0.5], np.float32)
  got = tinyjax.jit(f(tnp, tl))(Tensor(y, device="PYTHON"))
  assert got.device == "PYTHON"
  np.testing.assert_allclose(got.numpy(), np.asarray(jax.jit(f(jnp, jax.lax))(y)), rtol=1e-6)

_SRC = tinyjax._tg.cpu_graph._SRC
BROKEN = {   # sources that compile: each must leave the executor off
  "a function left out": _SRC[:_SRC.rindex("static void lu_solve(")],   # lu_solve declared, referenced, not defined
  "no entry point": _SRC[:_SRC.index("u64 tinyjax_exec(")],              # an empty image: CPUProgram would jump into it
  "wrong steps": _SRC.replace("q[2] + q[3] * j", "q[2] + q[3] * j + 1"),  # a loop index off by one
  "wrong solve": _SRC.replace("perm[i] = (int)i;", "perm[i] = 0;"),         # the pivots' rows lost
}

@pytest.mark.parametrize("why", BROKEN)
def test_a_broken_executor_source_falls_back_to_python_launches(why, monkeypatch, capsys):
  """An executor whose object fails a check (an undefined symbol, no entry point, its self-test's loop or solve
  wrong) is not used: DEBUG says so, and the Python launches give JAX's numbers."""
  cg = tinyjax._tg.cpu_graph
  monkeypatch.setattr(cg, "_SRC", BROKEN[why])
  monkeypatch.setattr(cg, "_executor", functools.cache(cg._executor.__wrapped__))   # the real one (its programs) kept
  with Context(DEBUG=1): assert cg.executor("CPU") is None
  assert "the CPU graph executor is off" in capsys.readouterr().out
  n = 6 + list(BROKEN).index(why)   # shapes no test compiled before: new steps
  a, y0 = RNG.standard_normal((n, n)) / 2, RNG.standard_normal(n)
  def f(np_, lax):
    return lambda a, y0: (loops(np_, lax)(a, y0, 7.0), lax.fori_loop(0, 2, lambda i, x: np_.linalg.solve(a, x), y0))
  assert_close(tinyjax.jit(f(tnp, tl))(Tensor(a), Tensor(y0)), ref(lambda: jax.jit(f(jnp, jax.lax))(a, y0)))

def test_the_executor_comes_from_the_disk_cache_with_ccache_off(monkeypatch):
  """The executor's object is tinyjax's runtime, kept on disk even with CCACHE=0 (which is about the user's kernels):
  loading it again compiles nothing (its clang run is ~2.5 s, most of a cold solver setup's)."""
  from tinygrad import Device
  from tinygrad.runtime.support.compiler_cpu import ClangCompiler
  cg = tinyjax._tg.cpu_graph
  assert cg.executor("CPU") is not None   # compiled or loaded once in this process: on disk since
  monkeypatch.setattr(ClangCompiler, "compile", lambda self, src: pytest.fail("the executor was compiled again"))
  with Context(CCACHE=0): loaded = cg._load(Device["CPU"], cg._SRC)   # (its self-test runs the loaded object)
  assert loaded[2:] != cg._executor("CPU")[2:] and len(loaded) == 2 + len(cg.ROUTINES)   # a new image, its routines


def test_synchronize_asks_tinygrad_only_when_work_is_pending(monkeypatch):
  """A drained CPU returns from synchronize at once (tinyjax's launches are synchronous); a timeline signal behind its
  value (work submitted to tinygrad's HCQ queues and not done) goes to tinygrad's synchronize, which waits for it."""
  from tinygrad import Device
  import tinygrad.runtime.support.hcq2 as hcq2
  dev, waits = Device["CPU"], []
  monkeypatch.setattr(hcq2.HCQ2Compiled, "synchronize", lambda self, timeout=None: waits.append(self.device))
  f = tinyjax.jit(lambda x: x * 2 + 1)
  x = Tensor(np.arange(8, dtype=np.float32)).realize()
  np.testing.assert_array_equal(np.asarray(f(x).numpy()), np.arange(8) * 2 + 1)
  dev.synchronize()
  assert waits == []
  value = dev.signal("value", 1, device="CPU")._buf.cpu_view().view(fmt='Q')
  value[0] += 1   # one submission more than the timeline signal has seen
  try: dev.synchronize()
  finally: value[0] -= 1
  assert waits == ["CPU"]

def test_a_kernel_split_over_cores_runs_its_rows_at_once(monkeypatch):
  """tinygrad's THREAD optimization splits a big kernel over the cores (a row per core, which tinygrad's CPUProgram
  runs one after the other); the executor runs them at once on threads: the same bits as in turn."""
  from tinygrad.helpers import NUM_CPU_THREADS
  import tinyjax._tg.cpu_graph as cg
  x = np.linspace(-3, 3, 1 << 20, dtype=np.float32)
  def run(fn=None):
    fn = fn or (lambda a: tnp.sin(a) * 2 + a)   # a new function each run: its own cache entry and table
    with Context(NOOPT=0):
      f = tinyjax.jit(fn)
      outs = [f(Tensor(x)).numpy() for _ in range(3)]
    tables = [item.commands for item in list(f._cache.values())[0].replay[0].plan if hasattr(item, "commands")]
    return outs, [int(c.table[i * c.width]) for c in tables for i in range(c.n)]
  # a light kernel (a few operations per element, memory-bound) is split too but runs in turn: on data the kernel
  # before left in one core's caches, two cores were slower
  light, heads = run(lambda a: a * 2 + 1)
  assert 1 not in heads and len(heads) == (2 if NUM_CPU_THREADS.value > 1 else 1), heads
  np.testing.assert_array_equal(light[-1], x * 2 + 1)
  outs, heads = run()
  np.testing.assert_allclose(outs[-1], np.sin(x) * 2 + x, rtol=1e-6, atol=1e-6)
  assert np.array_equal(outs[1], outs[2]) and np.array_equal(outs[0], outs[2])
  assert (1 in heads) == (NUM_CPU_THREADS.value > 1), heads   # a parallel group heads the kernel's rows
  monkeypatch.setattr(cg, "parallel_group", lambda cores, work: None)
  seq, heads = run()
  assert 1 not in heads and np.array_equal(seq[-1], outs[-1])

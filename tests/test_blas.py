"""Matrix products on the CPU by BLAS (tinyjax/_tg/gemm.py): which kernels become sgemm/dgemm calls, their numbers
against numpy's float64 products, and every way they run (eager, jit replays in cpu_graph, loop bodies, the numpy
fallback without the executor, other devices)."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop.ops import Ops
import tinyjax
import tinyjax.numpy as tnp
from tinyjax import lax
import tinyjax._tg.gemm as gemm
import tinyjax._tg.cpu_graph as cpu_graph

rng = np.random.default_rng(11)

def _programs(f) -> list[str]:
  """The names of the programs a tinyjax.jit function replays (a BLAS call's: gemm_M_N_K[_batch...])."""
  linear = next(iter(f._cache.values())).tinyjit.captured.linear
  return [u.arg.name for u in linear.toposort() if u.op is Ops.PROGRAM]

def _jit_run(fn, *xs):
  f = tinyjax.jit(fn)
  for _ in range(3): out = f(*[Tensor(x) for x in xs]).numpy()   # (captured on the second call, replayed on the third)
  return f, out

# (function, operands (float64), its BLAS program's name): transposes either side, batches, broadcast batches, slices
# (offsets and leading dimensions), an operand multiplied by itself, merged axes, a contraction over two axes
A, B = rng.standard_normal((64, 96)), rng.standard_normal((96, 48))
C, D = rng.standard_normal((5, 64, 96)), rng.standard_normal((5, 96, 48))
CASES = {
  "a@b": (lambda x, y: x @ y, (A, B), "gemm_48_64_96"),
  "a.T@b.T": (lambda x, y: x.T @ y.T, (A.T.copy(), B.T.copy()), "gemm_48_64_96"),
  "(b.T@a.T).T": (lambda x, y: (y.T @ x.T).T, (A, B), "gemm_48_64_96"),
  "a@a.T": (lambda x, y: x @ x.T, (A, B), "gemm_64_64_96"),
  "batched": (lambda x, y: x @ y, (C, D), "gemm_48_64_96_5"),
  "broadcast batch": (lambda x, y: x @ y, (C, B), "gemm_48_320_96"),
  "slices": (lambda x, y: x[3:40, 1:90] @ y[5:94, 2:30], (A, B), "gemm_28_37_89"),
  "einsum": (lambda x, y: tnp.einsum("bik,kj->bij", x, y), (C, B), "gemm_48_320_96"),
  "tensordot": (lambda x, y: tnp.tensordot(x, y, axes=2), (rng.standard_normal((40, 8, 12)), rng.standard_normal((8, 12, 50))),
                "gemm_50_40_96"),
}

@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_matrix_product_is_one_blas_call(name, dtype):
  fn, xs, program = CASES[name]
  f, got = _jit_run(fn, *[x.astype(dtype) for x in xs])
  want = fn(*[Tensor(x) for x in xs]).numpy() if name in ("einsum", "tensordot") else fn(*xs)
  np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-13, atol=1e-4 if dtype == np.float32 else 1e-12)
  assert _programs(f) == [program]


def test_a_product_with_an_epilogue_and_a_prologue_is_three_kernels():
  # relu(tanh(x) @ w + b): the tanh is stored by a kernel of its own, the product is the BLAS call, the bias and relu a
  # kernel after it (tinygrad fuses all three into one kernel, the tanh computed again for every output column)
  x, w, b = rng.standard_normal((64, 96)), rng.standard_normal((96, 48)), rng.standard_normal(48)
  f, got = _jit_run(lambda x, w, b: (x.tanh() @ w + b).relu(), x, w, b)
  np.testing.assert_allclose(got, np.maximum(np.tanh(x) @ w + b, 0), rtol=1e-13, atol=1e-13)
  names = _programs(f)
  assert len(names) == 3 and names[1] == "gemm_48_64_96", names


def test_small_products_and_matrix_vector_products_stay_tinygrads_kernels():
  # below 2^15 multiply-adds, or with a side under 8, a call costs more than tinygrad's kernel fused with its neighbours
  for x, y in [(A[:16, :32], B[:32, :16]), (A, B[:, 0]), (A[:4], B)]:
    f, got = _jit_run(lambda x, y: (x @ y + 1).relu(), x, y)
    np.testing.assert_allclose(got, np.maximum(x @ y + 1, 0), rtol=1e-13, atol=1e-13)
    assert len(_programs(f)) == 1 and not _programs(f)[0].startswith("gemm"), _programs(f)


def test_blas_calls_run_eagerly_in_grads_and_in_loop_bodies():
  w1, w2, x = rng.standard_normal((96, 64)) / 8, rng.standard_normal((64, 32)) / 8, rng.standard_normal((48, 96))
  def loss(w1, w2, x): return tnp.sum(tnp.tanh(tnp.tanh(x @ w1) @ w2) ** 2)
  def loss_np(w1, w2, x): return np.sum(np.tanh(np.tanh(x @ w1) @ w2) ** 2)
  eager = tinyjax.grad(loss)(Tensor(w1), Tensor(w2), Tensor(x)).numpy()
  jitted = tinyjax.jit(tinyjax.grad(loss))
  for _ in range(3): got = jitted(Tensor(w1), Tensor(w2), Tensor(x)).numpy()
  eps, num = 1e-6, np.zeros_like(w1)
  for i, j in [(0, 0), (5, 7), (95, 63)]:   # central differences at a few entries
    d = np.zeros_like(w1)
    d[i, j] = eps
    num[i, j] = (loss_np(w1 + d, w2, x) - loss_np(w1 - d, w2, x)) / (2 * eps)
    np.testing.assert_allclose([eager[i, j], got[i, j]], num[i, j], rtol=1e-6)
  np.testing.assert_allclose(got, eager, rtol=1e-12, atol=1e-14)
  assert sum(n.startswith("gemm") for n in _programs(jitted)) == 4, _programs(jitted)   # 2 forward, 2 backward products
  # a scan whose step is a product: the BLAS call is a row of the loop's table, run in compiled code
  def step(h, _): return tnp.tanh(h @ w1[:64, :64].T), None
  h0 = rng.standard_normal((48, 64))
  f = tinyjax.jit(lambda h: lax.scan(step, h, None, length=20)[0])
  for _ in range(2): got = f(Tensor(h0)).numpy()
  want = h0
  for _ in range(20): want = np.tanh(want @ w1[:64, :64].T)
  np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_without_the_executor_numpy_runs_the_call(monkeypatch):
  # a CPU device where cpu_graph's executor is off (no clang): the same program, run by numpy's matmul on views
  prog = gemm.GemmProgram("CPU", gemm.gemm_of(_kernel_ast(lambda x, y: x @ y, C.astype(np.float32), D.astype(np.float32))))
  assert prog.addr
  monkeypatch.setattr(cpu_graph, "executor", lambda device: None)
  fallback = gemm.GemmProgram("CPU", prog.words)
  assert not fallback.addr
  x, y, out = Tensor(C.astype(np.float32)).realize(), Tensor(D.astype(np.float32)).realize(), Tensor.empty(5, 64, 48).realize()
  bufs = [t.uop.buffer.ensure_allocated()._buf for t in (out, x, y)]
  fallback(*bufs)
  np.testing.assert_allclose(out.numpy(), C @ D, rtol=1e-5, atol=1e-4)
  out2 = Tensor.empty(5, 64, 48).realize()
  prog(*[t.uop.buffer.ensure_allocated()._buf for t in (out2, x, y)])
  np.testing.assert_array_equal(out2.numpy(), out.numpy())

def _kernel_ast(fn, *xs):
  """The AST of the one kernel fn schedules."""
  [call] = fn(*[Tensor(x).realize() for x in xs]).schedule_linear().src
  return call.src[0]


def test_kernels_that_are_not_products_blas_can_run_are_left_to_tinygrad():
  # a sum over an axis only one operand varies along, an integer product: tinygrad's kernels
  x, y, w = rng.standard_normal((64, 96)), rng.standard_normal((96, 48)), rng.standard_normal(48)
  xi, yi = (x * 10).astype(np.int32), (y * 10).astype(np.int32)
  for fn, args, want in [
      (lambda x, w: (x[:, :, None] * w[None, None, :]).sum(1), (x, w), x.sum(1)[:, None] * w[None, :]),
      (lambda x, y: x @ y, (xi, yi), xi @ yi)]:
    f, got = _jit_run(fn, *args)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not any(n.startswith("gemm") for n in _programs(f)), _programs(f)


def test_other_devices_keep_tinygrads_kernels():
  # the PYTHON emulator's renderer has locals: the product's kernel is tinygrad's (the same AST on the CPU is a call)
  # (the smallest product BLAS takes: the emulator runs it element by element)
  from tinygrad import Device
  a, b = A[:32, :32].astype(np.float32), B[:32, :32].astype(np.float32)
  ast = _kernel_ast(lambda x, y: x @ y, a, b)
  assert gemm.program(ast, Device["CPU"].renderer) is not None and gemm.program(ast, Device["PYTHON"].renderer) is None
  x, y = Tensor(a, device="PYTHON"), Tensor(b, device="PYTHON")
  np.testing.assert_allclose((x @ y).numpy(), a @ b, rtol=1e-5, atol=1e-4)

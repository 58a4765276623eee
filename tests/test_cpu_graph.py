"""The CPU graph executor (tinyjax/_tg/cpu_graph.py): a jitted function's kernels launched by one call into compiled
code, and lax loops run there without returning to Python between steps; the same values as JAX (x64) with it, without it
(the Python launches every other device uses) and on tinygrad's PYTHON emulator device."""
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor, GlobalCounters
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
  monkeypatch.setattr("tinyjax._tg.cpu_graph.run", lambda device, c: (calls.append(c.kernels), real(device, c)))
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

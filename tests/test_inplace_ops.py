"""In-place operators (`x += y`, `x -= y`, ...) as JAX's: on a traced value they rebind x to `x + y` (JAX arrays are
immutable), under every transform; tinygrad's `+=` (an assign into x) stays for writes into buffers and outside
transforms. Found by vmap of a MALA sampler (examples/ports/research_flowmc_mala.py): tinygrad's assign left a STORE in
the traced graph (vmap and jvp had no rule for it) and grad read the placeholder written into (grad was wrong)."""
import numpy as np
import pytest
import jax
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from tinygrad import Tensor
from conftest import rnd, assert_close

def f(np_):
  def fn(x, m):
    x += 1.            # the argument itself (a placeholder under a transform)
    y = np_.sin(x)
    y -= x * 2
    y *= 3.
    y /= 2.
    y **= 2
    z = np_.zeros(x.shape)
    z += y             # a constant written with a traced value
    v = x @ m
    v @= m
    return np_.sum(z) + np_.sum(v)
  return fn

X, M = rnd(3, seed=1), rnd(3, 3, seed=2)

TRANSFORMS = {
  "eager": lambda fn, j: fn,
  "grad": lambda fn, j: j.grad(fn),
  "jit": lambda fn, j: j.jit(fn),
  "jvp": lambda fn, j: lambda x, m: j.jvp(fn, (x, m), (x * 0 + 1, m))[1],
  "vmap": lambda fn, j: lambda x, m: j.vmap(fn, in_axes=(0, None))(j.numpy.stack([x, x * 2]), m),
}

@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_inplace_operators_as_jax(name):
  t = TRANSFORMS[name]
  # JAX gets its arrays (numpy's += would write into X)
  assert_close(t(f(jnp), tinyjax)(Tensor(X), Tensor(M)), lambda: t(f(jxn), jax)(jxn.asarray(X), jxn.asarray(M)))

def test_inplace_in_vmapped_loop_body():
  # the MALA sampler's case: vmap over chains of a fori_loop whose body updates with += and reads a gradient
  def chain(np_, j):
    def run(x0):
      def body(i, x):
        step = j.grad(lambda v: np_.sum(v ** 4))(x)
        x -= 0.01 * step
        x += 0.001 * i
        return x
      return j.lax.fori_loop(0, 3, body, x0)
    return j.vmap(run)
  x = rnd(2, 3, seed=3)
  assert_close(chain(jnp, tinyjax)(Tensor(x)), lambda: chain(jxn, jax)(jxn.asarray(x)))

def test_inplace_keeps_tinygrads_assign_for_buffers():
  # outside transforms (a tinygrad training loop's `w -= lr * g`) and into a buffer under jit (a model's state), `-=`
  # stays tinygrad's assign: the Tensor object and its buffer are updated
  w = Tensor(np.array([1., 2.])).realize()
  alias = w
  w -= Tensor(np.array([0.5, 0.5]))
  assert alias is w and np.array_equal(alias.numpy(), [0.5, 1.5])

  class Model: pass
  m = Model()
  m.w = Tensor(np.array([1., 2.])).realize()
  w0 = m.w
  @tinyjax.jit
  def step(g):
    m.w -= g
    return m.w.sum()
  for want_sum, want_w in ((1., [0., 1.]), (-1., [-1., 0.])):
    assert step(jnp.array([1., 1.])).item() == want_sum
    assert m.w is w0 and np.array_equal(w0.numpy(), want_w)

"""The graphs eager jnp code builds stay small and computable by tinyjax's cached programs (issue 30, the qujax port:
a variational circuit run eagerly, ~10x JAX's time). Values against JAX; graph shapes asserted, never times.

- `jnp.take` / `x[idx]` with one concrete index array (a realized buffer no transform traces) read on the host and
  taken as slices, not tinygrad's one-hot compare against an arange (a REDUCE over the axis per take).
- `x += y` on a lazy value (not a realized buffer) rebinds x to x + y, as JAX's immutable arrays do, outside
  transforms too: tinygrad's assign left a STORE that sent every later read to tinygrad's scheduler, and made an
  alias of x see the new value."""
import numpy as np
import pytest
import jax
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from tinygrad.uop.ops import Ops
from conftest import rnd, assert_close

def ops_of(t) -> set:
  return {u.op for u in t.uop.toposort()}

X = rnd(5, 4, 3, seed=1).astype(np.float32)
IDX = [np.array([2]), np.array([4, 0, 0, 3]), np.array([[1, -1], [0, 2]]), np.array([], np.int32), np.array([-5, 4, 1, 2, 3])]

@pytest.mark.parametrize("axis", [0, 1, 2, None])
@pytest.mark.parametrize("k", range(len(IDX)))
def test_take_concrete_indices(axis, k):
  idx = IDX[k] if axis != 1 else IDX[k] % 4
  if axis == 2: idx = idx % 3
  got = jnp.take(jnp.asarray(X), jnp.asarray(idx), axis=axis)
  assert idx.size == 0 or Ops.REDUCE not in ops_of(got)   # an empty index array is no buffer: the general path
  assert_close(got, jxn.take(jxn.asarray(X), jxn.asarray(idx), axis=axis))

@pytest.mark.parametrize("mode", ["clip", "wrap", "fill"])
def test_take_concrete_indices_out_of_bounds(mode):
  idx = np.array([7, -9, 1, 5])
  got = jnp.take(jnp.asarray(X), jnp.asarray(idx), axis=0, mode=mode)
  assert_close(got, jxn.take(jxn.asarray(X), jxn.asarray(idx), axis=0, mode=mode))

@pytest.mark.parametrize("lead,n", [((), 5), ((slice(None),), 4), ((Ellipsis,), 3)])
def test_getitem_concrete_index_array(lead, n):
  idx = np.array([[3, -2], [0, 4]]) % n - (n == 5)
  got = jnp.asarray(X)[lead + (jnp.asarray(idx),)]
  assert Ops.REDUCE not in ops_of(got)
  assert_close(got, jxn.asarray(X)[lead + (jxn.asarray(idx),)])

def test_take_concrete_indices_under_transforms():
  # the index array closed over by a function that grad and vmap trace (the qujax circuit's `jnp.take(params, inds)`)
  inds = [np.array([1]), np.array([0, 2])]
  def f(np_, inds):
    return lambda p: sum(np_.sum(np_.sin(np_.take(p, i)) * (k + 1)) for k, i in enumerate(inds))
  p = rnd(3, seed=2)
  t_inds, j_inds = [jnp.asarray(i) for i in inds], [jxn.asarray(i) for i in inds]
  assert_close(tinyjax.value_and_grad(f(jnp, t_inds))(jnp.asarray(p)), jax.value_and_grad(f(jxn, j_inds))(jxn.asarray(p)))
  assert_close(tinyjax.jit(f(jnp, t_inds))(jnp.asarray(p)), jax.jit(f(jxn, j_inds))(jxn.asarray(p)))
  ps = rnd(2, 3, seed=3)
  assert_close(tinyjax.vmap(f(jnp, t_inds))(jnp.asarray(ps)), jax.vmap(f(jxn, j_inds))(jxn.asarray(ps)))

def test_jit_reads_a_closed_over_index_buffer():
  # under jit the index stays a buffer the capture reads: a tinygrad write into it is seen by the next call
  idx = jnp.asarray(np.array([0, 1], np.int32))
  f = tinyjax.jit(lambda x: jnp.take(x, idx))
  x = jnp.asarray(np.array([1., 2., 3.], np.float32))
  assert f(x).tolist() == [1., 2.]
  idx.assign(jnp.asarray(np.array([2, 2], np.int32))).realize()
  assert f(x).tolist() == [3., 3.]

def test_a_composite_whose_function_reads_a_value_is_called_as_it_is():
  """jnp.repeat with per-element repeats given as an array reads them (the output's shape depends on them). Eagerly it
  is a composite, built on placeholders, where that read gave a placeholder's unwritten buffer: every repeat 0, an
  empty result, silently. A read in a composite's build now makes the call run the function as it is: JAX's numbers."""
  from tinygrad import Tensor
  x = rnd(3, 4)
  for r, axis in ((np.array([1, 0, 3], np.int32), 0), (np.array([2, 2, 0, 1]), 1), (np.arange(12) % 3, None)):
    for _ in range(2): assert_close(jnp.repeat(Tensor(x), Tensor(r), axis=axis), jxn.repeat(x, r, axis=axis))

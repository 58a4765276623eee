"""tinyjax.numpy's products against jax.numpy: one table row per function and variant (value and dtype, vmap along two
axes, jvp, grad; x64), and kernels as hand-written tinygrad."""
import pytest
import jax.numpy as jxn
import tinyjax.numpy as jnp
from tinygrad import Tensor
from conftest import rnd, kernel_count
from jnp_table import Row, params, run

A, B, V, W = rnd(3, 4), rnd(4, 5, seed=1), rnd(4, seed=2), rnd(4, seed=3)
S3, T3 = rnd(2, 3, 4, seed=4), rnd(2, 4, 3, seed=5)
ROWS = [
  Row("dot-mv", jnp.dot, jxn.dot, (A, V)), Row("dot-mm", jnp.dot, jxn.dot, (A, B)), Row("dot-vv", jnp.dot, jxn.dot, (V, W)),
  Row("dot-nd", jnp.dot, jxn.dot, (S3, B)),
  Row("vdot", jnp.vdot, jxn.vdot, (A, A * 2)), Row("matmul", jnp.matmul, jxn.matmul, (A, B)),
  Row("matmul-batched", jnp.matmul, jxn.matmul, (S3, T3)), Row("matmul-vec", jnp.matmul, jxn.matmul, (V, B)),
  Row("inner", jnp.inner, jxn.inner, (A, rnd(2, 4, seed=6))), Row("outer", jnp.outer, jxn.outer, (V, rnd(3, seed=7))),
  Row("tensordot-int", lambda a, b: jnp.tensordot(a, b, 1), lambda a, b: jxn.tensordot(a, b, 1), (A, B)),
  Row("tensordot-axes", lambda a, b: jnp.tensordot(a, b, axes=([1, 2], [2, 1])), lambda a, b: jxn.tensordot(a, b, axes=([1, 2], [2, 1])), (S3, T3)),
  Row("einsum-mv", lambda a, v: jnp.einsum("ij,j->i", a, v), lambda a, v: jxn.einsum("ij,j->i", a, v), (A, V)),
  Row("einsum-batch", lambda a, b: jnp.einsum("bij,bjk->bik", a, b), lambda a, b: jxn.einsum("bij,bjk->bik", a, b), (S3, T3)),
  Row("einsum-implicit", lambda a, b: jnp.einsum("ij,jk", a, b), lambda a, b: jxn.einsum("ij,jk", a, b), (A, B)),
  Row("einsum-ellipsis", lambda a: jnp.einsum("...ij->...ji", a), lambda a: jxn.einsum("...ij->...ji", a), (S3,)),
  Row("kron", jnp.kron, jxn.kron, (rnd(2, 2), rnd(2, 3, seed=8))),
  Row("cross", jnp.cross, jxn.cross, (rnd(4, 3), rnd(4, 3, seed=9))),
  Row("trace", jnp.trace, jxn.trace, (rnd(4, 4),)), Row("trace-offset", lambda a: jnp.trace(a, 1), lambda a: jxn.trace(a, 1), (A,)),
]

@pytest.mark.parametrize("row,check", params(ROWS))
def test_table(row, check): run(row, check)

def test_kernels_as_hand_written():
  a, x = Tensor(rnd(16, 8)).realize(), Tensor(rnd(8, seed=1)).realize()
  assert kernel_count(lambda: jnp.dot(a, x).realize()) == kernel_count(lambda: (a @ x).realize())
  assert kernel_count(lambda: jnp.einsum("ij,j->i", a, x).realize()) == kernel_count(lambda: (a @ x).realize())

# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/thinking_in_jax.md, section "Auto-vectorization with jax.vmap"
# Exercises: a matrix-vector product batched by a Python loop (jnp.stack), by hand under jit (batched_x @ mat.T) and by
#   jit(vmap(...)), compared with np.testing.assert_allclose
# Adapted: mat and batched_x are fixed numpy data (np.random.seed(1701)) instead of jax.random draws (random keys
#   are issue 11), mat is (15, 10) and batched_x (4, 10) instead of (150, 100) and (10, 100); the %timeit lines print
#   the results instead

import numpy as np
import jax.numpy as jnp
from jax import jit

np.random.seed(1701)
mat = jnp.array(np.random.randn(15, 10).astype(np.float32))
batched_x = jnp.array(np.random.randn(4, 10).astype(np.float32))

def apply_matrix(x):
  return jnp.dot(mat, x)

def naively_batched_apply_matrix(v_batched):
  return jnp.stack([apply_matrix(v) for v in v_batched])

print('Naively batched')
print(naively_batched_apply_matrix(batched_x).block_until_ready())

import numpy as np

@jit
def batched_apply_matrix(batched_x):
  return jnp.dot(batched_x, mat.T)

np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                           batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
print('Manually batched')
print(batched_apply_matrix(batched_x).block_until_ready())

from jax import vmap

@jit
def vmap_batched_apply_matrix(batched_x):
  return vmap(apply_matrix)(batched_x)

np.testing.assert_allclose(naively_batched_apply_matrix(batched_x),
                           vmap_batched_apply_matrix(batched_x), atol=1E-4, rtol=1E-4)
print('Auto-vectorized with vmap')
print(vmap_batched_apply_matrix(batched_x).block_until_ready())

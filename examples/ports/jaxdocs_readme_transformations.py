# Source: https://github.com/jax-ml/jax/blob/main/README.md, section "Transformations"
# Exercises: grad of a tanh written with jnp.exp, third derivative by nested grad, jit of an elementwise function,
#   pairwise L1 distances with nested vmap and in_axes (0, None) / (None, 0), an assert on x.ndim inside vmap
# Adapted: the abs_val cell (Python control flow under grad) is in jaxdocs_readme_grad_control_flow.py; x is (50, 50)
#   instead of (5000, 5000) and the %timeit lines print both results; xs is fixed numpy data (np.random.RandomState(0))
#   of shape (10, 3) instead of a (100, 3) jax.random draw (random keys are issue 11)

import numpy as np
import jax
import jax.numpy as jnp

def tanh(x):
  y = jnp.exp(-2.0 * x)
  return (1.0 - y) / (1.0 + y)

grad_tanh = jax.grad(tanh)
print(grad_tanh(1.0))
# prints 0.4199743

print(jax.grad(jax.grad(jax.grad(tanh)))(1.0))
# prints 0.62162673

def slow_f(x):
  # Element-wise ops see a large benefit from fusion
  return x * x + x * 2.0

x = jnp.ones((50, 50))
fast_f = jax.jit(slow_f)
print(fast_f(x))
print(slow_f(x))

def l1_distance(x, y):
  assert x.ndim == y.ndim == 1  # only works on 1D inputs
  return jnp.sum(jnp.abs(x - y))

def pairwise_distances(dist1D, xs):
  return jax.vmap(jax.vmap(dist1D, (0, None)), (None, 0))(xs, xs)

xs = jnp.array(np.random.RandomState(0).randn(10, 3).astype(np.float32))
dists = pairwise_distances(l1_distance, xs)
print(dists.shape)  # (100, 100)

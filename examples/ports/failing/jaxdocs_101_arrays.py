# Source: https://github.com/jax-ml/jax/blob/main/docs/new_docs/101/arrays.md, sections "From NumPy to JAX", "JAX arrays are immutable", "Default dtypes and precision",
#   "Indexing differences" and "Under the hood: jax.numpy, jax.lax, and XLA"
# Exercises: matmul with @, sum over an axis, slicing, isinstance(x, jax.Array), item assignment raising TypeError,
#   .at[0].set, .at[3].add, .at[:3].max, float32 default dtype, int + 1.5 promotion, out-of-bounds index clamped,
#   out-of-bounds .at[11].set dropped, jnp.sum of a list raising TypeError, jnp.add(1, 1.0), lax.add(1, 1.0) raising
# Adapted: cell values printed; raises-exception cells wrapped in try/except printing the exception type;
#   print(jax.typeof(x)) and x.sharding are dropped (JAX type/sharding reprs)

import jax
import jax.numpy as jnp
import numpy as np

x = jnp.arange(9.0).reshape(3, 3)
y = jnp.ones(3)
print(x @ y)
print(x.sum(axis=0))
print(x[1, :2])

print(isinstance(x, jax.Array))

x_np = np.arange(10)
x_np[0] = 10
print(x_np)

try:
  x = jnp.arange(10)
  x[0] = 10
except TypeError as e:
  print(type(e).__name__)

y = x.at[0].set(10)
print(x)  # unchanged
print(y)

print(x.at[3].add(100))
print(x.at[:3].max(5))

print(np.array([1.0, 2.0]).dtype)
print(jnp.array([1.0, 2.0]).dtype)

print((jnp.arange(3) + 1.5).dtype)

x = jnp.arange(10)
print(x[11])  # clamped to x[9]

print(x.at[11].set(99))  # update is dropped

try:
  jnp.sum([1, 2, 3])
except TypeError as e:
  print(type(e).__name__)

print(jnp.sum(jnp.array([1, 2, 3])))

print(jnp.add(1, 1.0))

try:
  from jax import lax
  lax.add(1, 1.0)
except TypeError as e:
  print(type(e).__name__)

# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/Common_Gotchas_in_JAX.md, sections "In-place updates",
#   "Array updates: x.at[idx].set(y)",
#   "Array updates with other operations", "Out-of-bounds indexing", "Non-array inputs: NumPy vs. JAX", "Dynamic shapes"
# Exercises: item assignment on a jax array raises TypeError, += rebinds (original unchanged) vs numpy in place,
#   .at[1, :].set, .at[::2, 3:].add, out-of-bounds indexing clamps (jnp.arange(10)[11]), .at[11].get() and
#   .at[11].get(mode='fill', fill_value=jnp.nan), jnp.sum of a list raises TypeError, jnp.sum(jnp.array(list)),
#   boolean-mask indexing outside jit, jit(nansum) raising, jnp.where(mask, x, 0).sum() under jit
# Adapted: cell values printed; raises-exception cells wrapped in try/except printing the exception type; the
#   make_jaxpr cell is dropped

import numpy as np
from jax import jit
import jax
import jax.numpy as jnp

numpy_array = np.zeros((3,3), dtype=np.float32)
print("original array:")
print(numpy_array)

# In place, mutating update
numpy_array[1, :] = 1.0
print("updated array:")
print(numpy_array)

try:
  jax_array = jnp.zeros((3,3), dtype=jnp.float32)

  # In place update of JAX's array will yield an error!
  jax_array[1, :] = 1.0
except TypeError as e:
  print(type(e).__name__)

jax_array = jnp.array([10, 20])
jax_array_new = jax_array
jax_array_new += 10
print(jax_array_new)  # `jax_array_new` is rebound to a new value [20, 30], but...
print(jax_array)      # the original value is unmodified as [10, 20] !

numpy_array = np.array([10, 20])
numpy_array_new = numpy_array
numpy_array_new += 10
print(numpy_array_new)  # `numpy_array_new is numpy_array`, and it was updated
print(numpy_array)      # in-place, so both are [20, 30] !

jax_array = jnp.zeros((3,3), dtype=jnp.float32)
updated_array = jax_array.at[1, :].set(1.0)
print("updated array:\n", updated_array)

print("original array unchanged:\n", jax_array)

print("original array:")
jax_array = jnp.ones((5, 6))
print(jax_array)
new_jax_array = jax_array.at[::2, 3:].add(7.)
print("new array post-addition:")
print(new_jax_array)

try:
  np.arange(10)[11]
except IndexError as e:
  print(type(e).__name__)

print(jnp.arange(10)[11])

print(jnp.arange(10.0).at[11].get())

print(jnp.arange(10.0).at[11].get(mode='fill', fill_value=jnp.nan))

print(np.sum([1, 2, 3]))

try:
  jnp.sum([1, 2, 3])
except TypeError as e:
  print(type(e).__name__)

def permissive_sum(x):
  return jnp.sum(jnp.array(x))

x = list(range(10))
print(permissive_sum(x))

print(jnp.sum(jnp.array(x)))

def nansum(x):
  mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
  x_without_nans = x[mask]
  return x_without_nans.sum()

x = jnp.array([1, 2, jnp.nan, 3, 4])
print(nansum(x))

try:
  jax.jit(nansum)(x)
except Exception as e:
  print(type(e).__name__)

@jax.jit
def nansum_2(x):
  mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
  return jnp.where(mask, x, 0).sum()

print(nansum_2(x))

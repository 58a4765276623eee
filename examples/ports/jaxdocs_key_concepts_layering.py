# Source: https://github.com/jax-ml/jax/blob/main/docs/key-concepts.md, sections "Transformations" and "JAX API layering: NumPy, lax & XLA"
# Exercises: jit of selu (function and decorator form), jnp.add promoting int + float, lax.add refusing mixed types,
#   lax.add(jnp.float32(1), 1.0), jnp.convolve of int and float arrays, lax.conv_general_dilated with 'full' padding
# Adapted: cell values printed; the raises-exception cell is wrapped in try/except printing the exception type

import jax
import jax.numpy as jnp

def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

selu_jit = jax.jit(selu)
print(selu_jit(1.0))

@jax.jit
def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

print(selu(jnp.arange(-2.0, 3.0)))

import jax.numpy as jnp
print(jnp.add(1, 1.0))  # jax.numpy API implicitly promotes mixed types.

from jax import lax
try:
  lax.add(1, 1.0)  # jax.lax API requires explicit type promotion.
except TypeError as e:
  print(type(e).__name__)

print(lax.add(jnp.float32(1), 1.0))

x = jnp.array([1, 2, 1])
y = jnp.ones(10)
print(jnp.convolve(x, y))

from jax import lax
result = lax.conv_general_dilated(
    x.reshape(1, 1, 3).astype(float),  # note: explicit promotion
    y.reshape(1, 1, 10),
    window_strides=(1,),
    padding=[(len(y) - 1, len(y) - 1)])  # equivalent of padding='full' in NumPy
print(result[0, 0])

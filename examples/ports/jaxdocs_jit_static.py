# Source: https://github.com/jax-ml/jax/blob/main/docs/jit-compilation.md, sections "JIT compiling a function", "Why can't we just JIT everything?"
#   and "Marking arguments as static"
# Exercises: jit of selu (jnp.where, jnp.exp) matches the unjitted function, Python if/while on traced values
#   raising under jit (ConcretizationTypeError family), static_argnums and static_argnames
# Adapted: x = jnp.arange(1000) instead of 1000000 and the %timeit lines print both results; raises-exception
#   cells wrapped in try/except jax.errors.ConcretizationTypeError printing a fixed text; the inner-jitted while loop
#   and the @jax.jit(static_argnames=...) cells are in jaxdocs_jit_static_decorator.py

import jax
import jax.numpy as jnp

def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

x = jnp.arange(1000)
print(selu(x).block_until_ready())

selu_jit = jax.jit(selu)

# Pre-compile the function before timing...
selu_jit(x).block_until_ready()

print(selu_jit(x).block_until_ready())

try:
  # Condition on value of x.

  def f(x):
    if x > 0:
      return x
    else:
      return 2 * x

  jax.jit(f)(10)  # Raises an error
except jax.errors.ConcretizationTypeError:
  print("raised ConcretizationTypeError")

try:
  # While loop conditioned on x and n.

  def g(x, n):
    i = 0
    while i < n:
      i += 1
    return x + i

  jax.jit(g)(10, 20)  # Raises an error
except jax.errors.ConcretizationTypeError:
  print("raised ConcretizationTypeError")

f_jit_correct = jax.jit(f, static_argnums=0)
print(f_jit_correct(10))

g_jit_correct = jax.jit(g, static_argnames=['n'])
print(g_jit_correct(10, 20))

# Source: https://github.com/jax-ml/jax/blob/main/docs/jit-compilation.md, sections "Why can't we just JIT everything?", "Marking arguments as static"
#   and "JIT and caching"
# Exercises: a Python while loop outside jit whose body is a jit'd function (bool() of a concrete array each step),
#   @jax.jit(static_argnames=['n']) as a decorator factory, jax.jit of partials/lambdas/functions called in a loop
# Adapted: cell values printed; the %timeit lines print the loop results instead

import jax
import jax.numpy as jnp

# While loop conditioned on x and n with a jitted body.

@jax.jit
def loop_body(prev_i):
  return prev_i + 1

def g_inner_jitted(x, n):
  i = 0
  while i < n:
    i = loop_body(i)
  return x + i

print(g_inner_jitted(10, 20))

@jax.jit(static_argnames=['n'])
def g_jit_decorated(x, n):
  i = 0
  while i < n:
    i += 1
  return x + i

print(g_jit_decorated(10, 20))

from functools import partial

def unjitted_loop_body(prev_i):
  return prev_i + 1

def g_inner_jitted_partial(x, n):
  i = 0
  while i < n:
    # Don't do this! each time the partial returns
    # a function with different hash
    i = jax.jit(partial(unjitted_loop_body))(i)
  return x + i

def g_inner_jitted_lambda(x, n):
  i = 0
  while i < n:
    # Don't do this!, lambda will also return
    # a function with a different hash
    i = jax.jit(lambda x: unjitted_loop_body(x))(i)
  return x + i

def g_inner_jitted_normal(x, n):
  i = 0
  while i < n:
    # this is OK, since JAX can find the
    # cached, compiled function
    i = jax.jit(unjitted_loop_body)(i)
  return x + i

print("jit called in a loop with partials:")
print(g_inner_jitted_partial(10, 20).block_until_ready())
print("jit called in a loop with lambdas:")
print(g_inner_jitted_lambda(10, 20).block_until_ready())
print("jit called in a loop with caching:")
print(g_inner_jitted_normal(10, 20).block_until_ready())

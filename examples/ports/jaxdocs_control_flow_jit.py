# Source: https://github.com/jax-ml/jax/blob/main/docs/control-flow.md, sections "Control flow and logical operators with JIT" (the Python control flow
#   cells) and "Logical operators"
# Exercises: Python for loops unrolled under jit (range(3), range(x.shape[0])), if / and on traced values raising
#   under jit, static_argnames given as a str ('x', 'n', 'length') with retracing on a new static value, a shape from a
#   traced argument raising, jnp.logical_and under jit on scalars and arrays, Python 'and' on an array raising
# Adapted: cell values printed; raises-exception cells wrapped in try/except printing the exception type (the two
#   ConcretizationTypeError subclasses JAX raises are printed as their base class name); the cell printing tracers
#   inside jit and the lax.cond/while_loop/fori_loop cells (issue 11) are dropped

import jax
from jax import grad, jit
import jax.numpy as jnp

@jit
def f(x):
  for i in range(3):
    x = 2 * x
  return x

print(f(3))

@jit
def g(x):
  y = 0.
  for i in range(x.shape[0]):
    y = y + x[i]
  return y

print(g(jnp.array([1., 2., 3.])))

try:
  @jit
  def f(x):
    if x < 3:
      return 3. * x ** 2
    else:
      return -4 * x

  # This will fail!
  f(2)
except jax.errors.ConcretizationTypeError as e:
  print("ConcretizationTypeError")

try:
  @jit
  def g(x):
    return (x > 0) and (x < 3)

  # This will fail!
  g(2)
except jax.errors.ConcretizationTypeError as e:
  print("ConcretizationTypeError")

def f(x):
  if x < 3:
    return 3. * x ** 2
  else:
    return -4 * x

f = jit(f, static_argnames='x')

print(f(2.))

def f(x, n):
  y = 0.
  for i in range(n):
    y = y + x[i]
  return y

f = jit(f, static_argnames='n')

print(f(jnp.array([2., 3., 4.]), 2))

def example_fun(length, val):
  return jnp.ones((length,)) * val
# un-jit'd works fine
print(example_fun(5, 4))

try:
  bad_example_jit = jit(example_fun)
  # this will fail:
  bad_example_jit(10, 4)
except TypeError as e:
  print(type(e).__name__)

# static_argnames tells JAX to recompile on changes at these argument positions:
good_example_jit = jit(example_fun, static_argnames='length')
# first compile
print(good_example_jit(10, 4))
# recompiles
print(good_example_jit(5, 4))

def python_check_positive_even(x):
  is_even = x % 2 == 0
  # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
  return is_even and (x > 0)

@jit
def jax_check_positive_even(x):
  is_even = x % 2 == 0
  # `logical_and` does not short circuit, so `x > 0` is always evaluated.
  return jnp.logical_and(is_even, x > 0)

print(python_check_positive_even(24))
print(jax_check_positive_even(24))

x = jnp.array([-1, 2, 5])
print(jax_check_positive_even(x))

try:
  print(python_check_positive_even(x))
except ValueError as e:
  print(type(e).__name__)

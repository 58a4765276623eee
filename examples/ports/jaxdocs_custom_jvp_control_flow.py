# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/Custom_derivative_rules_for_Python_code.md,
#   section "Use jax.custom_jvp to define forward-mode (and, indirectly, reverse-mode) rules"
# Exercises: Python control flow (if x > 0) on the primal inside a custom_jvp function and its jvp rule, under grad
# Adapted: the last cells of the section only

from jax import custom_jvp, grad
import jax.numpy as jnp

@custom_jvp
def f(x):
  if x > 0:
    return jnp.sin(x)
  else:
    return jnp.cos(x)

@f.defjvp
def f_jvp(primals, tangents):
  x, = primals
  x_dot, = tangents
  ans = f(x)
  if x > 0:
    return ans, 2 * x_dot
  else:
    return ans, 3 * x_dot

print(grad(f)(1.))
print(grad(f)(-1.))

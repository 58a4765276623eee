# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/Custom_derivative_rules_for_Python_code.md,
#   sections "Example: Enforcing a differentiation convention" and "Example: Gradient clipping"
# Exercises: nan gradient of x / (1 + sqrt(x)) at 0 and its custom_jvp fix (defjvp and defjvps forms);
#   custom_vjp clip_gradient returning None cotangents for lo and hi, vmap(grad(...)) over jnp.linspace
# Adapted: the plt.plot calls are replaced by assignments of the plotted arrays to module globals

import jax.numpy as jnp
from jax import custom_jvp, grad

def f(x):
  return x / (1 + jnp.sqrt(x))

print(grad(f)(0.))

@custom_jvp
def f(x):
  return x / (1 + jnp.sqrt(x))

@f.defjvp
def f_jvp(primals, tangents):
  x, = primals
  x_dot, = tangents
  ans = f(x)
  ans_dot = ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * x_dot
  return ans, ans_dot

print(grad(f)(0.))

@custom_jvp
def f(x):
  return x / (1 + jnp.sqrt(x))

f.defjvps(lambda t, ans, x: ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1)**2)) * t)

print(grad(f)(0.))

from functools import partial
from jax import custom_vjp

@custom_vjp
def clip_gradient(lo, hi, x):
  return x  # identity function

def clip_gradient_fwd(lo, hi, x):
  return x, (lo, hi)  # save bounds as residuals

def clip_gradient_bwd(res, g):
  lo, hi = res
  return (None, None, jnp.clip(g, lo, hi))  # use None to indicate zero cotangents for lo and hi

clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

from jax import vmap

t = jnp.linspace(0, 10, 1000)

plot_sin = jnp.sin(t)
plot_grad_sin = vmap(grad(jnp.sin))(t)

def clip_sin(x):
  x = clip_gradient(-0.75, 0.75, x)
  return jnp.sin(x)

plot_clip_sin = clip_sin(t)
plot_grad_clip_sin = vmap(grad(clip_sin))(t)

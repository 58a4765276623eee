# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/Custom_derivative_rules_for_Python_code.md,
#   section "Example: Implicit function differentiation of iterative implementations"
# Exercises: lax.while_loop fixed-point iteration (Newton sqrt), jit(vmap(...)) of it, custom_vjp with
#   nondiff_argnums=(0,) implementing implicit differentiation (vjp inside the backward rule, fixed_point on a partial),
#   grad and grad-of-grad through it vs grad of jnp.sqrt
# Adapted: none (cells concatenated)

from functools import partial
import jax.numpy as jnp
from jax import custom_vjp, grad, jit, vmap
from jax.lax import while_loop

def fixed_point(f, a, x_guess):
  def cond_fun(carry):
    x_prev, x = carry
    return jnp.abs(x_prev - x) > 1e-6

  def body_fun(carry):
    _, x = carry
    return x, f(a, x)

  _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
  return x_star

def newton_sqrt(a):
  update = lambda a, x: 0.5 * (x + a / x)
  return fixed_point(update, a, a)

print(newton_sqrt(2.))

print(jit(vmap(newton_sqrt))(jnp.array([1., 2., 3., 4.])))

from jax import vjp

@partial(custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
  def cond_fun(carry):
    x_prev, x = carry
    return jnp.abs(x_prev - x) > 1e-6

  def body_fun(carry):
    _, x = carry
    return x, f(a, x)

  _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
  return x_star

def fixed_point_fwd(f, a, x_init):
  x_star = fixed_point(f, a, x_init)
  return x_star, (a, x_star)

def fixed_point_rev(f, res, x_star_bar):
  a, x_star = res
  _, vjp_a = vjp(lambda a: f(a, x_star), a)
  a_bar, = vjp_a(fixed_point(partial(rev_iter, f),
                             (a, x_star, x_star_bar),
                             x_star_bar))
  return a_bar, jnp.zeros_like(x_star)

def rev_iter(f, packed, u):
  a, x_star, x_star_bar = packed
  _, vjp_x = vjp(lambda x: f(a, x), x_star)
  return x_star_bar + vjp_x(u)[0]

fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

print(newton_sqrt(2.))

print(grad(newton_sqrt)(2.))
print(grad(grad(newton_sqrt))(2.))

print(grad(jnp.sqrt)(2.))
print(grad(grad(jnp.sqrt))(2.))

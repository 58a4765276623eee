# Source: https://github.com/jejjohnson/jaxsw, tutorial notebook "Tutorial: ODE Integration" (odeint_euler, odeint_rk4
#   written with lax.scan)
# Exercises: lax.scan with a tuple carry and stacked outputs (Euler and RK4), jit of the integrators, jax.grad of a
#   trajectory-fitting loss with respect to the ODE's parameter through the scan, vmap over initial states
# Adapted: the two integrators as in the notebook (the diffrax cell dropped); the driver (a damped oscillator, a loss
#   against a reference trajectory, its gradient, a few gradient steps) added and printed

import jax
import jax.numpy as jnp
from jax import lax

def odeint_euler(f, y0, t, *args):
  def step(state, t):
    y_prev, t_prev = state
    dt = t - t_prev
    y = y_prev + dt * f(y_prev, t_prev, *args)
    return (y, t), y
  _, ys = lax.scan(step, (y0, t[0]), t[1:])
  return ys

def odeint_rk4(f, y0, t, *args):
  def step(state, t):
    y_prev, t_prev = state
    h = t - t_prev
    k1 = h * f(y_prev, t_prev, *args)
    k2 = h * f(y_prev + k1/2., t_prev + h/2., *args)
    k3 = h * f(y_prev + k2/2., t_prev + h/2., *args)
    k4 = h * f(y_prev + k3, t + h, *args)
    y = y_prev + 1./6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return (y, t), y
  _, ys = lax.scan(step, (y0, t[0]), t[1:])
  return ys

def oscillator(y, t, damping):
  return jnp.array([y[1], -y[0] - damping * y[1]])

t = jnp.linspace(0., 5., 51)
y0 = jnp.array([1., 0.])
ys_euler = jax.jit(odeint_euler, static_argnums=0)(oscillator, y0, t, 0.3)
ys_rk4 = jax.jit(odeint_rk4, static_argnums=0)(oscillator, y0, t, 0.3)
print(ys_euler[-1], ys_rk4[-1])

target = odeint_rk4(oscillator, y0, t, 0.5)
def loss(damping):
  return jnp.mean((odeint_rk4(oscillator, y0, t, damping) - target) ** 2)

grad_loss = jax.jit(jax.grad(loss))
damping = 0.1
for i in range(5):
  damping = damping - 2.0 * grad_loss(damping)
  print(i, damping, loss(damping))

starts = jnp.array([[1., 0.], [0., 1.], [0.5, -0.5]])
finals = jax.vmap(lambda y: odeint_rk4(oscillator, y, t, 0.3)[-1])(starts)
print(finals)

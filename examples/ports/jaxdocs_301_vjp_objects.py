# Source: https://github.com/jax-ml/jax/blob/main/docs/new_docs/301/vjp-objects.md, section "Splitting the forward and
#   backward passes"
# Exercises: jax.vjp under jit returning the VJP function as a pytree output, passing it into another jitted function
#   and calling it there, a two-layer tanh network run forward and backward on a hand schedule vs grad with
#   argnums=(0, 1)
# Adapted: cells concatenated; the results are left in module globals; the last cell (jax.fwd_and_bwd) is in
#   jaxdocs_301_fwd_and_bwd.py

import jax
import jax.numpy as jnp
from jax import grad, jit

def fwd_and_bwd(f):
  def fwd(*args):
    return jax.vjp(f, *args)
  def bwd(f_vjp, y_bar):
    return f_vjp(y_bar)
  return jit(fwd), jit(bwd)

def layer(W, x):
  return jnp.tanh(x @ W)

fwd, bwd = fwd_and_bwd(layer)
W1, W2 = jnp.ones((3, 3)), 2. * jnp.ones((3, 3))
x0 = jnp.ones((2, 3))

# forward through two layers, then backward, on our own schedule:
x1, res1 = fwd(W1, x0)
x2, res2 = fwd(W2, x1)
dW2, dx1 = bwd(res2, jnp.ones_like(x2))
dW1, dx0 = bwd(res1, dx1)

def two_layers(W1, W2, x):
  return jnp.sum(layer(W2, layer(W1, x)))

dW1_ref, dW2_ref = grad(two_layers, argnums=(0, 1))(W1, W2, x0)
print(jnp.allclose(dW1, dW1_ref), jnp.allclose(dW2, dW2_ref))

# Source: https://github.com/jax-ml/jax/blob/main/docs/new_docs/301/vjp-objects.md, section "Splitting the forward and
#   backward passes"
# Exercises: jax.fwd_and_bwd(f, argnums=(0, 1)) returning a forward function (output and residuals) and a backward one
# Adapted: the layer definition and the last cell of the section

import jax
import jax.numpy as jnp

def layer(W, x):
  return jnp.tanh(x @ W)

W1 = jnp.ones((3, 3))
x0 = jnp.ones((2, 3))

fwd, bwd = jax.fwd_and_bwd(layer, argnums=(0, 1))
y, residuals = fwd(W1, x0)
dW1, dx0 = bwd(residuals, jnp.ones_like(y))
print(dW1.shape, dx0.shape)

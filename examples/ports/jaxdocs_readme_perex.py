# Source: https://github.com/jax-ml/jax/blob/main/README.md, opening example (above "Contents") and "Auto-vectorization with vmap"
# Exercises: a tanh MLP over a list of (W, b) tuples, jit(grad(loss)) w.r.t. the params pytree, per-example gradients
#   with jit(vmap(grad_loss, in_axes=(None, 0, 0))) (a batch axis added to every leaf); their sum is the batch gradient
# Adapted: the README defines the functions only; params (3 -> 4 -> 2), inputs (5, 3) and targets (5, 2) are fixed
#   numpy data (np.random.RandomState(0), scaled by 0.5 so the tanh units do not saturate) and both functions are
#   applied to them; per-example inputs are single rows, so they are given as (5, 1, 3) / (5, 1, 2)

import numpy as np
import jax
import jax.numpy as jnp

def predict(params, inputs):
  for W, b in params:
    outputs = jnp.dot(inputs, W) + b
    inputs = jnp.tanh(outputs)  # inputs to the next layer
  return outputs                # no activation on last layer

def loss(params, inputs, targets):
  preds = predict(params, inputs)
  return jnp.sum((preds - targets)**2)

grad_loss = jax.jit(jax.grad(loss))  # compiled gradient evaluation function
perex_grads = jax.jit(jax.vmap(grad_loss, in_axes=(None, 0, 0)))  # fast per-example grads

rng = np.random.RandomState(0)
params = [(jnp.array(0.5 * rng.randn(3, 4).astype(np.float32)), jnp.array(0.5 * rng.randn(4).astype(np.float32))),
          (jnp.array(0.5 * rng.randn(4, 2).astype(np.float32)), jnp.array(0.5 * rng.randn(2).astype(np.float32)))]
inputs = jnp.array(rng.randn(5, 3).astype(np.float32))
targets = jnp.array(rng.randn(5, 2).astype(np.float32))

batch_grads = grad_loss(params, inputs, targets)
example_grads = perex_grads(params, inputs[:, None, :], targets[:, None, :])
print(jax.tree.map(lambda g: g.shape, example_grads))
summed = jax.tree.map(lambda g: g.sum(0), example_grads)

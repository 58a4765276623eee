# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/autodiff_cookbook.md, section "Checking against numerical differences"
# Exercises: central finite differences of a logistic-regression loss vs grad (scalar and directional, jnp.vdot, jnp.sqrt)
# Adapted: setup cell of "Starting with grad" plus the finite-difference cell; W, b and the direction vec are fixed numpy
#   data instead of jax.random draws (random keys are issue 11)

import numpy as np
import jax.numpy as jnp
from jax import grad, jit, vmap

def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)

# Outputs probability of a label being true.
def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)

# Build a toy dataset.
inputs = jnp.array([[0.52, 1.12,  0.77],
                   [0.88, -1.08, 0.15],
                   [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])

# Training loss is the negative log-likelihood of the training examples.
def loss(W, b):
    preds = predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

# Initialize random model coefficients
W = jnp.array(np.array([0.3, -0.7, 1.1], np.float32))
b = jnp.array(np.float32(-0.2))

# Set a step size for finite differences calculations
eps = 1e-4

# Check b_grad with scalar finite differences
b_grad_numerical = (loss(W, b + eps / 2.) - loss(W, b - eps / 2.)) / eps
print('b_grad_numerical', b_grad_numerical)
print('b_grad_autodiff', grad(loss, 1)(W, b))

# Check W_grad with finite differences in a random direction
vec = jnp.array(np.array([0.5, 1.5, -0.8], np.float32))
unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
W_grad_numerical = (loss(W + eps / 2. * unitvec, b) - loss(W - eps / 2. * unitvec, b)) / eps
print('W_dirderiv_numerical', W_grad_numerical)
print('W_dirderiv_autodiff', jnp.vdot(grad(loss)(W, b), unitvec))

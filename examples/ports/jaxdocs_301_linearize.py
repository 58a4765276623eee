# Source: https://github.com/jax-ml/jax/blob/main/docs/new_docs/301/cookbook.md, sections "Setup: a running example" and "jax.linearize: one forward pass, many JVPs"
# Exercises: jax.linearize returning the primal and a reusable linear JVP function, jax.linear_transpose of that
#   function compared with vjp (jnp.allclose, jnp.ones_like)
# Adapted: W, b, v1, v2 are fixed numpy data instead of jax.random draws (random keys are issue 11); the setup
#   cell's loss is not needed and left out

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

# Initialize random model coefficients
W = jnp.array(np.array([0.3, -0.7, 1.1], np.float32))
b = jnp.array(np.float32(-0.2))

from jax import linearize

f = lambda W: predict(W, b, inputs)
y, f_jvp = linearize(f, W)
print(y)

v1 = jnp.array(np.array([0.4, -1.2, 0.9], np.float32))
v2 = jnp.array(np.array([-0.3, 0.8, 1.5], np.float32))
print(f_jvp(v1))
print(f_jvp(v2))

from jax import linear_transpose, vjp

f_vjp = linear_transpose(f_jvp, W)      # transpose of the linearization...
y2, f_vjp_ref = vjp(f, W)               # ...is exactly what vjp computes
u = jnp.ones_like(y)
print(jnp.allclose(f_vjp(u)[0], f_vjp_ref(u)[0]))

# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/autodiff_cookbook.md, section "Jacobians and Hessians using jacfwd and jacrev"
# Exercises: jacfwd and jacrev of a vector-valued function, jacrev w.r.t. a dict of params (iterating the result dict),
#   hessian as jacfwd(jacrev(f)) with shape (m, n, n)
# Adapted: the logistic-regression setup cell of "Starting with grad" (without the loss) plus the cells of this section;
#   W, b are fixed numpy data instead of jax.random draws (random keys are issue 11)

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

from jax import jacfwd, jacrev

# Isolate the function from the weight matrix to the predictions
f = lambda W: predict(W, b, inputs)

J = jacfwd(f)(W)
print("jacfwd result, with shape", J.shape)
print(J)

J = jacrev(f)(W)
print("jacrev result, with shape", J.shape)
print(J)

def predict_dict(params, inputs):
    return predict(params['W'], params['b'], inputs)

J_dict = jacrev(predict_dict)({'W': W, 'b': b}, inputs)
for k, v in J_dict.items():
    print("Jacobian from {} to logits is".format(k))
    print(v)

def hessian(f):
    return jacfwd(jacrev(f))

H = hessian(f)(W)
print("hessian, with shape", H.shape)
print(H)

# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/autodiff_cookbook.md, section "How it's made: two foundational autodiff functions"
# Exercises: jvp pushing a tangent forward, vjp pulling a cotangent back, vector-valued gradients with vjp (vgrad),
#   Hessian-vector products forward-over-reverse, reverse-over-forward and reverse-over-reverse vs a dense hessian
#   contracted with jnp.tensordot, jnp.allclose
# Adapted: the logistic-regression setup cell of "Starting with grad" plus the cells of this section (JVPs in JAX code,
#   VJPs in JAX code, Vector-valued gradients with VJPs, Hessian-vector products using both forward- and reverse-mode),
#   hessian from "Jacobians and Hessians"; v, u, X, V are fixed numpy data instead of jax.random draws (random keys are
#   issue 11); X and V are (3, 4) instead of (30, 40); the %timeit lines print the three hvp results instead

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

def hessian(f):
    return jacfwd(jacrev(f))

from jax import jvp

# Isolate the function from the weight matrix to the predictions
f = lambda W: predict(W, b, inputs)

v = jnp.array(np.array([0.4, -1.2, 0.9], np.float32))

# Push forward the vector `v` along `f` evaluated at `W`
y, u = jvp(f, (W,), (v,))
print(y, u)

from jax import vjp

# Isolate the function from the weight matrix to the predictions
f = lambda W: predict(W, b, inputs)

y, vjp_fun = vjp(f, W)

u = jnp.array(np.array([1.3, -0.2, 0.5, 0.7], np.float32))

# Pull back the covector `u` along `f` evaluated at `W`
v = vjp_fun(u)
print(v)

from jax import vjp

def vgrad(f, x):
  y, vjp_fn = vjp(f, x)
  return vjp_fn(jnp.ones(y.shape))[0]

print(vgrad(lambda x: 3*x**2, jnp.ones((2, 2))))

from jax import jvp, grad

# forward-over-reverse
def hvp(f, primals, tangents):
  return jvp(grad(f), primals, tangents)[1]

def f(X):
  return jnp.sum(jnp.tanh(X)**2)

rng = np.random.RandomState(0)
X = jnp.array(rng.randn(3, 4).astype(np.float32))
V = jnp.array(rng.randn(3, 4).astype(np.float32))

ans1 = hvp(f, (X,), (V,))
ans2 = jnp.tensordot(hessian(f)(X), V, 2)

print(jnp.allclose(ans1, ans2, 1e-4, 1e-4))

# reverse-over-forward
def hvp_revfwd(f, primals, tangents):
  g = lambda primals: jvp(f, primals, tangents)[1]
  return grad(g)(primals)

# reverse-over-reverse, only works for single arguments
def hvp_revrev(f, primals, tangents):
  x, = primals
  v, = tangents
  return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

print("Forward over reverse")
print(hvp(f, (X,), (V,)))
print("Reverse over forward")
print(hvp_revfwd(f, (X,), (V,)))
print("Reverse over reverse")
print(hvp_revrev(f, (X,), (V,)))
print("Naive full Hessian materialization")
print(jnp.tensordot(hessian(f)(X), V, 2))

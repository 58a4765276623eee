# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/thinking_in_jax.md, sections "Just-in-time compilation with jax.jit"
#   and "Taking derivatives with jax.grad"
# Exercises: jit of a normalization (mean/std over axis 0) vs the plain function (np.allclose), boolean-mask indexing
#   outside jit and its error under jit, grad of a sum of logistics vs central finite differences over jnp.eye rows,
#   grad(jit(grad(jit(grad(...))))), jax.jacobian of jnp.exp, jit(jacfwd(jacrev(f))) Hessian
# Adapted: X is (100, 10) instead of (10000, 10); cell values printed; the %timeit cell is dropped; the
#   raises-exception cell is wrapped in try/except printing the exception type

import numpy as np
import jax
import jax.numpy as jnp

def norm(X):
  X = X - X.mean(0)
  return X / X.std(0)

from jax import jit
norm_compiled = jit(norm)

np.random.seed(1701)
X = jnp.array(np.random.rand(100, 10))
print(np.allclose(norm(X), norm_compiled(X), atol=1E-6))

def get_negatives(x):
  return x[x < 0]

x = jnp.array(np.random.randn(10))
print(get_negatives(x))

try:
  jit(get_negatives)(x)
except Exception as e:
  print(type(e).__name__)

from jax import grad

def sum_logistic(x):
  return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

x_small = jnp.arange(3.)
derivative_fn = grad(sum_logistic)
print(derivative_fn(x_small))

def first_finite_differences(f, x, eps=1E-3):
  return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                   for v in jnp.eye(len(x))])

print(first_finite_differences(sum_logistic, x_small))

print(grad(jit(grad(jit(grad(sum_logistic)))))(1.0))

from jax import jacobian
print(jacobian(jnp.exp)(x_small))

from jax import jacfwd, jacrev
def hessian(fun):
  return jit(jacfwd(jacrev(fun)))
print(hessian(sum_logistic)(x_small))

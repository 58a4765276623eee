# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/autodiff_cookbook.md, section "Complex numbers and
#   differentiation"
# Exercises: grad of a C -> R function of a complex scalar (jnp.real, jnp.imag), grad(holomorphic=True) of jnp.sin
#   and of jnp.conjugate, grad(holomorphic=True) through jnp.linalg.cholesky of a complex Hermitian matrix
# Adapted: the cells after the random-key check cells (those need random keys, issue 11); cell values printed

import jax.numpy as jnp
from jax import grad

def f(z):
  x, y = jnp.real(z), jnp.imag(z)
  return x**2 + y**2

z = 3. + 4j
print(grad(f)(z))

def f(z):
  return jnp.sin(z)

z = 3. + 4j
print(grad(f, holomorphic=True)(z))

def f(z):
  return jnp.conjugate(z)

z = 3. + 4j
print(grad(f, holomorphic=True)(z))  # f is not actually holomorphic!

A = jnp.array([[5.,    2.+3j,    5j],
              [2.-3j,   7.,  1.+7j],
              [-5j,  1.-7j,    12.]])

def f(X):
    L = jnp.linalg.cholesky(X)
    return jnp.sum((L - jnp.sin(L))**2)

print(grad(f, holomorphic=True)(A))

# Source: https://github.com/jax-ml/jax/blob/a3156dda2ac43691daed71bc44cf1c2f3e14e308/examples/kernel_lsq.py (kernel
#   least squares by gradient descent), with jax.experimental.optimizers at its later home jax.example_libraries
# Exercises: a Gram matrix as vmap(lambda x: vmap(lambda y: kernel(x, y))(xs))(xs) under jit(partial(gram, kernel)),
#   example_libraries.optimizers.momentum driven by a jitted update(i, opt_state) with a traced step index and the
#   optimizer-state pytree, grad of a closure over the Gram matrix, jit(vmap(predict)) of a closure over the fitted
#   weights; numpy.random data mixed with jnp
# Adapted: numpy.random seeded; minimize runs 20 steps instead of its default 10000 (num_steps passed by train); the
#   make_jaxpr printouts replaced by a fit with the rbf kernel they printed; the __future__ and jax.config imports
#   dropped (unused)

from functools import partial

import numpy.random as npr

import jax.numpy as np
from jax.example_libraries import optimizers
from jax import grad, jit, vmap


def gram(kernel, xs):
  '''Compute a Gram matrix from a kernel and an array of data points.

  Args:
    kernel: callable, maps pairs of data points to scalars.
    xs: array of data points, stacked along the leading dimension.

  Returns:
    A 2d array `a` such that `a[i, j] = kernel(xs[i], xs[j])`.
  '''
  return vmap(lambda x: vmap(lambda y: kernel(x, y))(xs))(xs)


def minimize(f, x, num_steps=10000, step_size=0.000001, mass=0.9):
  opt_init, opt_update, get_params = optimizers.momentum(step_size, mass)

  @jit
  def update(i, opt_state):
    x = get_params(opt_state)
    return opt_update(i, grad(f)(x), opt_state)

  opt_state = opt_init(x)
  for i in range(num_steps):
    opt_state = update(i, opt_state)
  return get_params(opt_state)


def train(kernel, xs, ys, regularization=0.01):
  gram_ = jit(partial(gram, kernel))
  gram_mat = gram_(xs)
  n = xs.shape[0]

  def objective(v):
    risk = .5 * np.sum((np.dot(gram_mat, v) - ys) ** 2.0)
    reg = regularization * np.sum(v ** 2.0)
    return risk + reg

  v = minimize(objective, np.zeros(n), num_steps=20)

  def predict(x):
    prods = vmap(lambda x_: kernel(x, x_))(xs)
    return np.sum(v * prods)

  return jit(vmap(predict))


if __name__ == "__main__":
  npr.seed(0)
  n = 100
  d = 20

  # linear kernel

  linear_kernel = lambda x, y: np.dot(x, y)
  truth = npr.randn(d)
  xs = npr.randn(n, d)
  ys = np.dot(xs, truth)

  predict = train(linear_kernel, xs, ys)

  print('MSE:', np.sum((predict(xs) - ys) ** 2.))

  rbf_kernel = lambda x, y: np.exp(-np.sum((x - y) ** 2))

  predict = train(rbf_kernel, xs, ys)

  print('MSE (rbf):', np.sum((predict(xs) - ys) ** 2.))

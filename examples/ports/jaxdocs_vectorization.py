# Source: https://github.com/jax-ml/jax/blob/main/docs/automatic-vectorization.md, sections "Manual vectorization",
#   "Automatic vectorization" and "Combining transformations"
# Exercises: a convolution written with a Python loop over slices and jnp.dot, batched by a Python loop, by hand
#   (jnp.sum over axis, jnp.stack axis=1) and by jax.vmap (default, in_axes=1/out_axes=1, in_axes=[0, None]),
#   jit of a vmapped function, nested vmap for pairwise distances
# Adapted: each cell's displayed value is printed; pairwise is applied to a small dist function on a fixed 4x3
#   numpy matrix (the doc only describes that use)

import numpy as np
import jax
import jax.numpy as jnp

x = jnp.arange(5)
w = jnp.array([2., 3., 4.])

def convolve(x, w):
  output = []
  for i in range(1, len(x)-1):
    output.append(jnp.dot(x[i-1:i+2], w))
  return jnp.array(output)

print(convolve(x, w))

xs = jnp.stack([x, x])
ws = jnp.stack([w, w])

def manually_batched_convolve(xs, ws):
  output = []
  for i in range(xs.shape[0]):
    output.append(convolve(xs[i], ws[i]))
  return jnp.stack(output)

print(manually_batched_convolve(xs, ws))

def manually_vectorized_convolve(xs, ws):
  output = []
  for i in range(1, xs.shape[-1] -1):
    output.append(jnp.sum(xs[:, i-1:i+2] * ws, axis=1))
  return jnp.stack(output, axis=1)

print(manually_vectorized_convolve(xs, ws))

auto_batch_convolve = jax.vmap(convolve)

print(auto_batch_convolve(xs, ws))

auto_batch_convolve_v2 = jax.vmap(convolve, in_axes=1, out_axes=1)

xst = jnp.transpose(xs)
wst = jnp.transpose(ws)

print(auto_batch_convolve_v2(xst, wst))

batch_convolve_v3 = jax.vmap(convolve, in_axes=[0, None])

print(batch_convolve_v3(xs, w))

jitted_batch_convolve = jax.jit(auto_batch_convolve)

print(jitted_batch_convolve(xs, ws))

def pairwise(f, xs):
  return jax.vmap(lambda x: jax.vmap(lambda y: f(x, y))(xs))(xs)

dist = lambda x, y: jnp.sqrt(jnp.sum((x - y) ** 2))
pts = jnp.array(np.array([[0., 0., 0.], [1., 2., 2.], [3., 0., 4.], [-1., 1., 0.5]], np.float32))
print(pairwise(dist, pts))

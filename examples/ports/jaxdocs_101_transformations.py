# Source: https://github.com/jax-ml/jax/blob/main/docs/new_docs/101/transformations.md, sections "value_and_grad and auxiliary outputs"
#   and "Automatic vectorization with jax.vmap"
# Exercises: value_and_grad with argnums (0, 1) and a Python float b, grad with has_aux=True,
#   vmap of a sliced-dot convolution (in_axes 1 / out_axes 1, in_axes [0, None]), all-pairs distances by nested vmap
#   with in_axes (None, 0) / (0, None), per-example gradients vmap(grad(example_loss, (0, 1)), in_axes=(None, None, 0, 0))
# Adapted: the setup cell of "Differentiating with respect to different arguments" is included, its f'{W_grad=}' cell
#   is not (array repr: jaxdocs_autodiff_intro); section "Checking derivatives numerically" is left out
#   (finite differences: jaxdocs_cookbook_finite_diff; check_grads: jaxdocs_cookbook_grad; here it takes 2.7 s in jax);
#   cell values printed

import jax
import jax.numpy as jnp

def sigmoid(x):
  return 0.5 * (jnp.tanh(x / 2) + 1)

# Outputs probability of a label being true.
def predict(W, b, inputs):
  return sigmoid(jnp.dot(inputs, W) + b)

# A toy dataset, and some parameter values.
inputs = jnp.array([[0.52, 1.12,  0.77],
                    [0.88, -1.08, 0.15],
                    [0.52, 0.06, -1.30],
                    [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])
W = jnp.array([0.1, 0.4, -0.3])
b = 0.5

# Training loss is the negative log-likelihood of the training examples.
def loss(W, b):
  preds = predict(W, b, inputs)
  label_probs = preds * targets + (1 - preds) * (1 - targets)
  return -jnp.sum(jnp.log(label_probs))

loss_value, Wb_grad = jax.value_and_grad(loss, (0, 1))(W, b)
print(loss_value)

def loss_and_preds(W, b):
  preds = predict(W, b, inputs)
  label_probs = preds * targets + (1 - preds) * (1 - targets)
  return -jnp.sum(jnp.log(label_probs)), preds

W_grad, preds = jax.grad(loss_and_preds, has_aux=True)(W, b)
print(preds)

x = jnp.arange(5.0)
w = jnp.array([2., 3., 4.])

def convolve(x, w):
  output = []
  for i in range(1, len(x) - 1):
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

auto_batch_convolve = jax.vmap(convolve)

print(auto_batch_convolve(xs, ws))

auto_batch_convolve_v2 = jax.vmap(convolve, in_axes=1, out_axes=1)

xst = jnp.transpose(xs)
wst = jnp.transpose(ws)

print(auto_batch_convolve_v2(xst, wst))

batch_convolve_v3 = jax.vmap(convolve, in_axes=[0, None])

print(batch_convolve_v3(xs, w))

def dist(x, y):
  return jnp.sqrt(jnp.sum((x - y) ** 2))

def all_pairs(f):
  return jax.vmap(jax.vmap(f, in_axes=(None, 0)), in_axes=(0, None))

points = jnp.array([[0., 0.], [1., 0.], [0., 2.]])
print(all_pairs(dist)(points, points))

def example_loss(W, b, x, y):
  pred = predict(W, b, x)
  label_prob = pred * y + (1 - pred) * (1 - y)
  return -jnp.log(label_prob)

per_example_grads = jax.vmap(jax.grad(example_loss, (0, 1)),
                             in_axes=(None, None, 0, 0))
W_grads, b_grads = per_example_grads(W, b, inputs, targets)
print(W_grads)  # one gradient per example
print(b_grads)

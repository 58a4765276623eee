# Source: https://github.com/jax-ml/jax/blob/main/examples/differentially_private_sgd.py, section "clipped_grad / private_grad"
# Exercises: per-example gradients with vmap(grad) over a pytree, tree_flatten/tree_unflatten, global-norm clipping
#   (jnp.linalg.norm of a jnp.array of norms), noised aggregated gradient, log-softmax cross entropy, SGD steps
# Adapted: excerpt of loss/accuracy/clipped_grad/private_grad/shape_as_image and the training loop; the stax Conv model is
#   replaced by a small dense relu MLP in jax.numpy (jax.example_libraries is not ported: finding research_lnn_stax_training) and
#   optimizers.sgd by the plain update w - lr * g; synthetic numpy data (32 examples, 12 features, 3 classes) instead of
#   MNIST; the Gaussian noise is drawn with numpy.random outside and passed to the jit'd private_update in place of the
#   key (random keys are issue 11); stax.logsoftmax copied in; 3 steps; no privacy accounting

import numpy as np
import numpy.random as npr

from jax import grad
from jax import jit
from jax import vmap
import jax.numpy as jnp
from jax.tree_util import tree_flatten, tree_unflatten


def init_random_params(rng, layer_sizes):
  return [(0.3 * rng.randn(m, n).astype(np.float32), np.zeros(n, np.float32))
          for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def predict(params, inputs):
  activations = inputs
  for w, b in params[:-1]:
    activations = jnp.maximum(jnp.dot(activations, w) + b, 0.)
  final_w, final_b = params[-1]
  return jnp.dot(activations, final_w) + final_b


def logsoftmax(x, axis=-1):
  """Apply log softmax to an array of logits, log-normalizing along an axis."""
  return x - jnp.log(jnp.sum(jnp.exp(x), axis, keepdims=True))


def loss(params, batch):
  inputs, targets = batch
  logits = predict(params, inputs)
  logits = logsoftmax(logits)  # log normalize
  return -jnp.mean(jnp.sum(logits * targets, axis=1))  # cross entropy loss


def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)


def clipped_grad(params, l2_norm_clip, single_example_batch):
  """Evaluate gradient for a single-example batch and clip its grad norm."""
  grads = grad(loss)(params, single_example_batch)
  nonempty_grads, tree_def = tree_flatten(grads)
  total_grad_norm = jnp.linalg.norm(
      jnp.array([jnp.linalg.norm(neg.ravel()) for neg in nonempty_grads]))
  divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.)
  normalized_nonempty_grads = [g / divisor for g in nonempty_grads]
  return tree_unflatten(tree_def, normalized_nonempty_grads)


def private_grad(params, batch, noise, l2_norm_clip, noise_multiplier,
                 batch_size):
  """Return differentially private gradients for params, evaluated on batch."""
  clipped_grads = vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
  clipped_grads_flat, grads_treedef = tree_flatten(clipped_grads)
  aggregated_clipped_grads = [g.sum(0) for g in clipped_grads_flat]
  noised_aggregated_clipped_grads = [
      g + l2_norm_clip * noise_multiplier * n
      for n, g in zip(noise, aggregated_clipped_grads)]
  normalized_noised_aggregated_clipped_grads = [
      g / batch_size for g in noised_aggregated_clipped_grads]
  return tree_unflatten(grads_treedef, normalized_noised_aggregated_clipped_grads)


def shape_as_image(images, labels, dummy_dim=False):
  target_shape = (-1, 1, 12) if dummy_dim else (-1, 12)
  return jnp.reshape(images, target_shape), labels


learning_rate = 0.15
noise_multiplier = 1.1
l2_norm_clip = 1.0
batch_size = 16

data = npr.RandomState(0)
centers = data.randn(3, 12).astype(np.float32)
labels = data.randint(0, 3, 32)
train_images = (centers[labels] + data.randn(32, 12)).astype(np.float32)
train_labels = (labels[:, None] == np.arange(3)).astype(np.float32)

params = init_random_params(npr.RandomState(1), [12, 16, 3])
noise_rng = npr.RandomState(2)

# the per-example clipped gradients themselves
per_example = jit(vmap(clipped_grad, (None, None, 0)))(params, l2_norm_clip, shape_as_image(train_images[:4], train_labels[:4], True))
per_example_norms = jnp.sqrt(sum(jnp.sum(g.reshape(4, -1) ** 2, axis=1) for g in tree_flatten(per_example)[0]))
print("per-example clipped grad norms", per_example_norms)


@jit
def private_update(noise, i, params, batch):
  grads = private_grad(params, batch, noise, l2_norm_clip, noise_multiplier, batch_size)
  return [(w - learning_rate * dw, b - learning_rate * db) for (w, b), (dw, db) in zip(params, grads)]


for step in range(3):
  idx = np.arange(step * batch_size, (step + 1) * batch_size) % 32
  noise = [noise_rng.randn(*g.shape).astype(np.float32) for g in tree_flatten(params)[0]]
  params = private_update(noise, step, params, shape_as_image(train_images[idx], train_labels[idx], dummy_dim=True))
  test_loss = loss(params, shape_as_image(train_images, train_labels))
  test_acc = accuracy(params, shape_as_image(train_images, train_labels))
  print('Test set loss, accuracy (%): ({:.2f}, {:.2f})'.format(test_loss, 100 * test_acc))
  print("loss", test_loss)

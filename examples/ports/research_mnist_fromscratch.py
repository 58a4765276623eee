# Source: https://github.com/jax-ml/jax/blob/main/examples/mnist_classifier_fromscratch.py, section "A basic MNIST example using Numpy and JAX"
# Exercises: MLP (tanh) with logsumexp log-softmax, grad over a list-of-tuples pytree, jit'd SGD update, argmax accuracy
# Adapted: synthetic 3-class numpy dataset (a synthetic() helper added; 64 train / 32 test, 20 features) instead of MNIST;
#   layer_sizes [20, 32, 32, 3]; 2 epochs of 4 batches of 16; larger step_size (0.05); timing and the epoch-time print
#   dropped; the training loss printed each epoch

import numpy as np
import numpy.random as npr

from jax import jit, grad
from jax.scipy.special import logsumexp
import jax.numpy as jnp


def init_random_params(scale, layer_sizes, rng=npr.RandomState(0)):
  return [(scale * rng.randn(m, n), scale * rng.randn(n))
          for m, n, in zip(layer_sizes[:-1], layer_sizes[1:])]

def predict(params, inputs):
  activations = inputs
  for w, b in params[:-1]:
    outputs = jnp.dot(activations, w) + b
    activations = jnp.tanh(outputs)

  final_w, final_b = params[-1]
  logits = jnp.dot(activations, final_w) + final_b
  return logits - logsumexp(logits, axis=1, keepdims=True)

def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -jnp.mean(jnp.sum(preds * targets, axis=1))

def accuracy(params, batch):
  inputs, targets = batch
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(predict(params, inputs), axis=1)
  return jnp.mean(predicted_class == target_class)


centers = npr.RandomState(2).randn(3, 20).astype("float32")

def synthetic(n, rng):
  labels = rng.randint(0, 3, n)
  images = (centers[labels] + 0.8 * rng.randn(n, 20)).astype("float32")
  return images, (labels[:, None] == np.arange(3)).astype("float32")


if __name__ == "__main__":
  layer_sizes = [20, 32, 32, 3]
  param_scale = 0.1
  step_size = 0.05
  num_epochs = 2
  batch_size = 16

  train_images, train_labels = synthetic(64, npr.RandomState(1))
  test_images, test_labels = synthetic(32, npr.RandomState(3))
  num_train = train_images.shape[0]
  num_complete_batches, leftover = divmod(num_train, batch_size)
  num_batches = num_complete_batches + bool(leftover)

  def data_stream():
    rng = npr.RandomState(0)
    while True:
      perm = rng.permutation(num_train)
      for i in range(num_batches):
        batch_idx = perm[i * batch_size:(i + 1) * batch_size]
        yield train_images[batch_idx], train_labels[batch_idx]
  batches = data_stream()

  @jit
  def update(params, batch):
    grads = grad(loss)(params, batch)
    return [(w - step_size * dw, b - step_size * db)
            for (w, b), (dw, db) in zip(params, grads)]

  params = init_random_params(param_scale, layer_sizes)
  for epoch in range(num_epochs):
    for _ in range(num_batches):
      params = update(params, next(batches))

    train_acc = accuracy(params, (train_images, train_labels))
    test_acc = accuracy(params, (test_images, test_labels))
    print(f"Epoch {epoch}")
    print(f"Training set accuracy {train_acc}")
    print(f"Test set accuracy {test_acc}")
    print("loss", loss(params, (train_images, train_labels)))

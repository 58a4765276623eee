# Source: https://github.com/jax-ml/jax/blob/085f5173589959ab088640d5cc461ce7cfe6bf87/examples/mnist_classifier.py
#   ("A basic MNIST example using JAX with the mini-libraries stax and optimizers"), with jax.experimental.stax and
#   .optimizers at their later home jax.example_libraries
# Exercises: stax.serial(Dense, Relu, Dense, Relu, Dense, LogSoftmax) initialised from a PRNGKey and an input shape
#   with -1, optimizers.momentum(step_size, mass=...) with a jitted update(i, opt_state, batch) taking the step from
#   itertools.count(), a generator of numpy minibatches (permutations of a RandomState), jnp.argmax(axis=1) accuracy
# Adapted: datasets.mnist() -> a synthetic 10-class dataset (256 train, 128 test "images" of 28 * 28, one-hot labels)
#   from numpy's RandomState(0); num_epochs 10 -> 2; the epoch time left out of the print (it differs run to run);
#   the __future__ and jax.config imports dropped (unused)

import time
import itertools

import numpy.random as npr

import jax.numpy as np
from jax import jit, grad, random
from jax.example_libraries import optimizers
from jax.example_libraries import stax
from jax.example_libraries.stax import Dense, Relu, LogSoftmax

def loss(params, batch):
  inputs, targets = batch
  preds = predict(params, inputs)
  return -np.mean(preds * targets)

def accuracy(params, batch):
  inputs, targets = batch
  target_class = np.argmax(targets, axis=1)
  predicted_class = np.argmax(predict(params, inputs), axis=1)
  return np.mean(predicted_class == target_class)

init_random_params, predict = stax.serial(
    Dense(1024), Relu, Dense(1024), Relu, Dense(10), LogSoftmax)

def synthetic_mnist(num_train=256, num_test=128):
  r = npr.RandomState(0)
  centers = r.randn(10, 28 * 28).astype("float32")
  def draw(n):
    labels = r.randint(0, 10, n)
    images = (centers[labels] + 2.0 * r.randn(n, 28 * 28)).astype("float32")
    return images, (labels[:, None] == np.arange(10)).astype("float32")
  return (*draw(num_train), *draw(num_test))

if __name__ == "__main__":
  rng = random.PRNGKey(0)

  step_size = 0.001
  num_epochs = 2
  batch_size = 128
  momentum_mass = 0.9

  train_images, train_labels, test_images, test_labels = synthetic_mnist()
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

  opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

  @jit
  def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, grad(loss)(params, batch), opt_state)

  _, init_params = init_random_params(rng, (-1, 28 * 28))
  opt_state = opt_init(init_params)
  itercount = itertools.count()

  print("\nStarting training...")
  for epoch in range(num_epochs):
    start_time = time.time()
    for _ in range(num_batches):
      opt_state = update(next(itercount), opt_state, next(batches))
    epoch_time = time.time() - start_time

    params = get_params(opt_state)
    train_acc = accuracy(params, (train_images, train_labels))
    test_acc = accuracy(params, (test_images, test_labels))
    print("Epoch {}".format(epoch))
    print("Training set accuracy {}".format(train_acc))
    print("Test set accuracy {}".format(test_acc))

# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/Neural_Network_and_Data_Loading.md, section
#   "Training a simple neural network, with PyTorch data loading"
# Exercises: per-example MLP predict (relu, logsumexp) batched with vmap(in_axes=(None, 0)), the TypeError that jnp.dot
#   raises on a batch before vmap, one_hot via x[:, None] == jnp.arange(k), jit(grad) SGD over a list of (w, b) tuples,
#   accuracy with argmax
# Adapted: parameters and images from numpy instead of jax.random (random keys are issue 11); a synthetic 4-class numpy
#   dataset (48 train / 24 test images of 16 pixels) and a numpy batch generator instead of torchvision MNIST and the
#   PyTorch DataLoader; layer_sizes [16, 32, 32, 4]; step_size 0.5; 2 epochs of 3 batches of 16; timing dropped

import jax.numpy as jnp
from jax import grad, jit, vmap
import numpy as np

# A helper function to randomly initialize weights and biases
# for a dense neural network layer
def random_layer_params(m, n, rng, scale=1e-2):
  return scale * rng.randn(n, m).astype(np.float32), scale * rng.randn(n).astype(np.float32)

# Initialize all layers for a fully-connected neural network with sizes "sizes"
def init_network_params(sizes, rng):
  return [random_layer_params(m, n, rng, scale=0.3) for m, n in zip(sizes[:-1], sizes[1:])]

layer_sizes = [16, 32, 32, 4]
step_size = 0.5
num_epochs = 2
batch_size = 16
n_targets = 4
params = init_network_params(layer_sizes, np.random.RandomState(0))

from jax.scipy.special import logsumexp

def relu(x):
  return jnp.maximum(0, x)

def predict(params, image):
  # per-example predictions
  activations = image
  for w, b in params[:-1]:
    outputs = jnp.dot(w, activations) + b
    activations = relu(outputs)

  final_w, final_b = params[-1]
  logits = jnp.dot(final_w, activations) + final_b
  return logits - logsumexp(logits)

# This works on single examples
random_flattened_image = np.random.RandomState(1).randn(16).astype(np.float32)
preds = predict(params, random_flattened_image)
print(preds.shape)

# Doesn't work with a batch
random_flattened_images = np.random.RandomState(1).randn(10, 16).astype(np.float32)
try:
  preds = predict(params, random_flattened_images)
except TypeError:
  print('Invalid shapes!')

# Let's upgrade it to handle batches using `vmap`

# Make a batched version of the `predict` function
batched_predict = vmap(predict, in_axes=(None, 0))

# `batched_predict` has the same call signature as `predict`
batched_preds = batched_predict(params, random_flattened_images)
print(batched_preds.shape)

def one_hot(x, k, dtype=jnp.float32):
  """Create a one-hot encoding of x of size k."""
  return jnp.array(x[:, None] == jnp.arange(k), dtype)

def accuracy(params, images, targets):
  target_class = jnp.argmax(targets, axis=1)
  predicted_class = jnp.argmax(batched_predict(params, images), axis=1)
  return jnp.mean(predicted_class == target_class)

def loss(params, images, targets):
  preds = batched_predict(params, images)
  return -jnp.mean(preds * targets)

@jit
def update(params, x, y):
  grads = grad(loss)(params, x, y)
  return [(w - step_size * dw, b - step_size * db)
          for (w, b), (dw, db) in zip(params, grads)]

# synthetic stand-in for MNIST: noisy copies of 4 class prototypes
data_rng = np.random.RandomState(2)
prototypes = data_rng.randn(n_targets, 16).astype(np.float32)
def make_split(n):
  labels = data_rng.randint(0, n_targets, n)
  return (prototypes[labels] + 0.7 * data_rng.randn(n, 16)).astype(np.float32), labels
train_images_np, train_labels_np = make_split(48)
test_images_np, test_labels_np = make_split(24)

def training_generator():
  for i in range(0, len(train_images_np), batch_size):
    yield train_images_np[i:i + batch_size], train_labels_np[i:i + batch_size]

train_images = train_images_np
train_labels = one_hot(train_labels_np, n_targets)
test_images = jnp.array(test_images_np, dtype=jnp.float32)
test_labels = one_hot(test_labels_np, n_targets)

for epoch in range(num_epochs):
  for x, y in training_generator():
    y = one_hot(y, n_targets)
    params = update(params, x, y)
  train_acc = accuracy(params, train_images, train_labels)
  test_acc = accuracy(params, test_images, test_labels)
  print("Epoch {}".format(epoch))
  print("Training set accuracy {}".format(train_acc))
  print("Test set accuracy {}".format(test_acc))

# Source: https://github.com/google/flax/blob/e466742c2bb31c9748063850fbedc422eb6eb4cf/examples/mnist/train.py
#   (Flax's MNIST example: apply_model, update_model, train_epoch, train_and_evaluate)
# Exercises: minibatches drawn each epoch with jax.random.permutation(rng, n), the permutation truncated and reshaped to
#   (steps_per_epoch, batch_size), iterating over its rows, fancy indexing of the dataset with a row; random.split of
#   the epoch key; a jitted value_and_grad(has_aux=True) step returning grads, loss and accuracy; a jitted momentum
#   update of a train-state pytree (a registered class with static fields); jax.nn.one_hot; np.mean of a list of
#   scalar arrays; the jitted step retraced on the whole test set
# Adapted: flax and optax are not JAX; the linen CNN -> a two-layer MLP with the same {'params': {'Dense_i': {'kernel',
#   'bias'}}} layout (its parameters drawn with jax.random.normal), flax.training.train_state.TrainState -> a minimal
#   pytree class with the same create/apply_gradients API, optax.sgd(learning_rate, momentum) and
#   optax.softmax_cross_entropy -> their formulas inline; tfds MNIST -> a synthetic 10-class dataset (96 train, 40 test
#   "images" of 4x4x1) from numpy's RandomState(0); the config a dict (learning_rate 0.1, momentum 0.9, batch_size 48,
#   num_epochs 2); logging.info -> print and the tensorboard summary writer dropped

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import register_pytree_node_class, tree_map


# --- minimal stand-ins for flax.linen's MLP, optax.sgd / softmax_cross_entropy and flax's TrainState ---
class MLP:
  def init(self, rng, x):
    k1, k2 = jax.random.split(rng)
    d = x.reshape((x.shape[0], -1)).shape[-1]
    return {'params': {'Dense_0': {'kernel': jax.random.normal(k1, (d, 32)) / jnp.sqrt(d), 'bias': jnp.zeros(32)},
                       'Dense_1': {'kernel': jax.random.normal(k2, (32, 10)) / jnp.sqrt(32.), 'bias': jnp.zeros(10)}}}

  def apply(self, variables, x):
    p = variables['params']
    x = x.reshape((x.shape[0], -1))  # flatten
    x = x @ p['Dense_0']['kernel'] + p['Dense_0']['bias']
    x = jax.nn.relu(x)
    x = x @ p['Dense_1']['kernel'] + p['Dense_1']['bias']
    return x


class sgd:
  def __init__(self, learning_rate, momentum):
    self.learning_rate, self.momentum = learning_rate, momentum

  def init(self, params):
    return tree_map(jnp.zeros_like, params)

  def update(self, grads, trace, params=None):
    trace = tree_map(lambda g, t: g + self.momentum * t, grads, trace)
    return tree_map(lambda t: -self.learning_rate * t, trace), trace


def softmax_cross_entropy(logits, labels):
  return -jnp.sum(labels * jax.nn.log_softmax(logits, axis=-1), axis=-1)


@register_pytree_node_class
class TrainState:
  def __init__(self, step, apply_fn, params, tx, opt_state):
    self.step, self.apply_fn, self.params, self.tx, self.opt_state = step, apply_fn, params, tx, opt_state

  def tree_flatten(self):
    return (self.step, self.params, self.opt_state), (self.apply_fn, self.tx)

  @classmethod
  def tree_unflatten(cls, aux, children):
    step, params, opt_state = children
    apply_fn, tx = aux
    return cls(step, apply_fn, params, tx, opt_state)

  def apply_gradients(self, *, grads):
    updates, new_opt_state = self.tx.update(grads, self.opt_state, self.params)
    new_params = tree_map(lambda p, u: p + u, self.params, updates)
    return TrainState(self.step + 1, self.apply_fn, new_params, self.tx, new_opt_state)

  @classmethod
  def create(cls, *, apply_fn, params, tx):
    return cls(0, apply_fn, params, tx, tx.init(params))


@jax.jit
def apply_model(state, images, labels):
  """Computes gradients, loss and accuracy for a single batch."""
  def loss_fn(params):
    logits = state.apply_fn({'params': params}, images)
    one_hot = jax.nn.one_hot(labels, 10)
    loss = jnp.mean(softmax_cross_entropy(logits=logits, labels=one_hot))
    return loss, logits

  grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
  (loss, logits), grads = grad_fn(state.params)
  accuracy = jnp.mean(jnp.argmax(logits, -1) == labels)
  return grads, loss, accuracy


@jax.jit
def update_model(state, grads):
  return state.apply_gradients(grads=grads)


def train_epoch(state, train_ds, batch_size, rng):
  """Train for a single epoch."""
  train_ds_size = len(train_ds['image'])
  steps_per_epoch = train_ds_size // batch_size

  perms = jax.random.permutation(rng, len(train_ds['image']))
  perms = perms[:steps_per_epoch * batch_size]  # skip incomplete batch
  perms = perms.reshape((steps_per_epoch, batch_size))

  epoch_loss = []
  epoch_accuracy = []

  for perm in perms:
    batch_images = train_ds['image'][perm, ...]
    batch_labels = train_ds['label'][perm, ...]
    grads, loss, accuracy = apply_model(state, batch_images, batch_labels)
    state = update_model(state, grads)
    epoch_loss.append(loss)
    epoch_accuracy.append(accuracy)
  train_loss = np.mean(epoch_loss)
  train_accuracy = np.mean(epoch_accuracy)
  return state, train_loss, train_accuracy


def get_datasets():
  """A synthetic stand-in for MNIST: class means plus noise."""
  rs = np.random.RandomState(0)
  means = rs.uniform(0, 255, size=(10, 4, 4, 1))
  def split(n):
    label = rs.randint(0, 10, size=n)
    image = np.clip(means[label] + rs.normal(0, 60, size=(n, 4, 4, 1)), 0, 255)
    return {'image': image, 'label': label.astype(np.int32)}
  train_ds, test_ds = split(96), split(40)
  train_ds['image'] = jnp.float32(train_ds['image']) / 255.
  test_ds['image'] = jnp.float32(test_ds['image']) / 255.
  return train_ds, test_ds


def create_train_state(rng, config):
  """Creates initial `TrainState`."""
  cnn = MLP()
  params = cnn.init(rng, jnp.ones([1, 4, 4, 1]))['params']
  tx = sgd(config['learning_rate'], config['momentum'])
  return TrainState.create(
      apply_fn=cnn.apply, params=params, tx=tx)


def train_and_evaluate(config):
  """Execute model training and evaluation loop."""
  train_ds, test_ds = get_datasets()
  rng = jax.random.PRNGKey(0)

  rng, init_rng = jax.random.split(rng)
  state = create_train_state(init_rng, config)

  for epoch in range(1, config['num_epochs'] + 1):
    rng, input_rng = jax.random.split(rng)
    state, train_loss, train_accuracy = train_epoch(state, train_ds,
                                                    config['batch_size'],
                                                    input_rng)
    _, test_loss, test_accuracy = apply_model(state, test_ds['image'],
                                              test_ds['label'])

    print(
        'epoch:% 3d, train_loss: %.4f, train_accuracy: %.2f, test_loss: %.4f, test_accuracy: %.2f'
        % (epoch, train_loss, train_accuracy * 100, test_loss,
           test_accuracy * 100))

  return state


state = train_and_evaluate({'learning_rate': 0.1, 'momentum': 0.9, 'batch_size': 48, 'num_epochs': 2})
params = state.params
print(state.step)

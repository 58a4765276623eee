# Source: https://github.com/jax-ml/jax/blob/main/docs/pytrees.md, sections "What is a pytree?" and "Common pytree functions"
# Exercises: jax.tree.leaves of lists/tuples/dicts/arrays/arbitrary objects (f-string with repr of trees and arrays),
#   jax.tree.map with one and two trees, MLP params as a list of dicts (shapes via tree.map), jax.nn.relu,
#   jit'd SGD update with jax.grad of a pytree and jax.tree.map, jax.tree_util.tree_structure
# Adapted: object() in the first list is replaced by a small class with a fixed repr (object()'s repr holds its
#   address); np.random.seed(0) added and layer widths [1, 8, 8, 1] instead of [1, 128, 128, 1]; cell values printed;
#   update is applied twice to fixed x, y (the doc defines it without calling it)

import jax
import jax.numpy as jnp

class Obj:
  def __repr__(self): return '<object>'

example_trees = [
    [1, 'a', Obj()],
    (1, (2, 3), ()),
    [1, {'k1': 2, 'k2': (3, 4)}, 5],
    {'a': 2, 'b': (2, 3)},
    jnp.array([1, 2, 3]),
]

# Print how many leaves the pytrees have.
for pytree in example_trees:
  # This `jax.tree.leaves()` method extracts the flattened leaves from the pytrees.
  leaves = jax.tree.leaves(pytree)
  print(f"{repr(pytree):<45} has {len(leaves)} leaves: {leaves}")

list_of_lists = [
    [1, 2, 3],
    [1, 2],
    [1, 2, 3, 4]
]

print(jax.tree.map(lambda x: x*2, list_of_lists))

another_list_of_lists = list_of_lists
print(jax.tree.map(lambda x, y: x+y, list_of_lists, another_list_of_lists))

import numpy as np
np.random.seed(0)

def init_mlp_params(layer_widths):
  params = []
  for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
    params.append(
        dict(weights=np.random.normal(size=(n_in, n_out)) * np.sqrt(2/n_in),
             biases=np.ones(shape=(n_out,))
            )
    )
  return params

params = init_mlp_params([1, 8, 8, 1])

print(jax.tree.map(lambda x: x.shape, params))

# Define the forward pass.
def forward(params, x):
  *hidden, last = params
  for layer in hidden:
    x = jax.nn.relu(x @ layer['weights'] + layer['biases'])
  return x @ last['weights'] + last['biases']

# Define the loss function.
def loss_fn(params, x, y):
  return jnp.mean((forward(params, x) - y) ** 2)

# Set the learning rate.
LEARNING_RATE = 0.0001

# Using the stochastic gradient descent, define the parameter update function.
# Apply `@jax.jit` for JIT compilation (speed).
@jax.jit
def update(params, x, y):
  # Calculate the gradients with `jax.grad`.
  grads = jax.grad(loss_fn)(params, x, y)

  # Note that `grads` is a pytree with the same structure as `params`.
  # `jax.grad` is one of many JAX functions that has
  # built-in support for pytrees.

  # This is useful - you can apply the SGD update using JAX pytree utilities.
  return jax.tree.map(
      lambda p, g: p - LEARNING_RATE * g, params, grads
  )

x = np.linspace(-1, 1, 16).reshape(16, 1)
y = x ** 2
for _ in range(2):
  params = update(params, x, y)
print(loss_fn(params, x, y))

from jax.tree_util import tree_structure
print(tree_structure(object))

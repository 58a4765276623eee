# Source: https://github.com/jax-ml/jax/blob/main/docs/new_docs/101/pytrees.md, sections "Pytrees and JAX
#   transformations" and "Custom pytree nodes"
# Exercises: grad w.r.t. a dict with an array and a Python float leaf, an MLP as a list of dicts of numpy arrays
#   (tree.map of shapes), jax.nn.relu, SGD as one tree.map over params and grads, a class registered with
#   register_pytree_node (tree.map over it, grad w.r.t. it returning the class)
# Adapted: np.random.seed(0) added; layer widths [1, 8, 8, 1] instead of [1, 128, 128, 1], x has 16 rows instead of
#   128, and 10 steps instead of 100; cell values printed; the unregistered Special cells are left out (their repr
#   holds an address; covered by jaxdocs_custom_pytrees)

import jax
import jax.numpy as jnp

def loss(params, x):
  pred = jnp.dot(x, params['W']) + params['b']
  return jnp.sum(pred ** 2)

params = {'W': jnp.ones(3), 'b': 0.5}
x = jnp.array([[1., 2., 3.],
               [4., 5., 6.]])
print(jax.grad(loss)(params, x))

import numpy as np
np.random.seed(0)

def init_mlp_params(layer_widths):
  params = []
  for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
    params.append(
        dict(weights=np.random.normal(size=(n_in, n_out)) * np.sqrt(2/n_in),
             biases=np.ones(shape=(n_out,)))
    )
  return params

params = init_mlp_params([1, 8, 8, 1])

print(jax.tree.map(lambda x: x.shape, params))

def forward(params, x):
  *hidden, last = params
  for layer in hidden:
    x = jax.nn.relu(x @ layer['weights'] + layer['biases'])
  return x @ last['weights'] + last['biases']

def loss_fn(params, x, y):
  return jnp.mean((forward(params, x) - y) ** 2)

LEARNING_RATE = 0.0001

def update(params, x, y):
  # `grads` is a pytree with the same structure as `params`.
  grads = jax.grad(loss_fn)(params, x, y)
  # The SGD update is one tree.map over the two matching pytrees.
  return jax.tree.map(
      lambda p, g: p - LEARNING_RATE * g, params, grads
  )

x = np.random.normal(size=(16, 1))
y = x ** 2
for _ in range(10):
  params = update(params, x, y)
print(loss_fn(params, x, y))

class Special:
  def __init__(self, x, y):
    self.x = x
    self.y = y

from jax.tree_util import register_pytree_node

class RegisteredSpecial(Special):
  def __repr__(self):
    return f"RegisteredSpecial(x={self.x}, y={self.y})"

def special_flatten(v):
  children = (v.x, v.y)  # the dynamic contents, traversed recursively
  aux_data = None        # static metadata, stored in the treedef
  return children, aux_data

def special_unflatten(aux_data, children):
  return RegisteredSpecial(*children)

register_pytree_node(RegisteredSpecial, special_flatten, special_unflatten)

print(jax.tree.map(lambda x: x + 1, [RegisteredSpecial(0, 1), RegisteredSpecial(2, 4)]))

print(jax.grad(lambda s: s.x ** 2 + s.y)(RegisteredSpecial(3.0, 4.0)))

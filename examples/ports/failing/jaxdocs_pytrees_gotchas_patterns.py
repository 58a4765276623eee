# Source: https://github.com/jax-ml/jax/blob/main/docs/pytrees.md, sections "Explicit key paths", "Common pytree gotchas" and "Common pytree patterns"
# Exercises: jax.tree_util.tree_flatten_with_path and keystr (list index, dict key, namedtuple attribute key paths),
#   tree.map over a tree of shape tuples (tuples are nodes), None as an empty node vs is_leaf, unsortable dict keys
#   raising, tree_transpose with tree.map(lambda *xs: list(xs)), jax.tree.transpose with tree.structure
# Adapted: cell values printed; the raises-exception cell is wrapped in try/except printing the exception type

import jax
import jax.numpy as jnp

import collections

ATuple = collections.namedtuple("ATuple", ('name'))

tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
flattened, _ = jax.tree_util.tree_flatten_with_path(tree)

for key_path, value in flattened:
  print(f'Value of tree{jax.tree_util.keystr(key_path)}: {value}')

for key_path, _ in flattened:
  print(f'Key path of tree{jax.tree_util.keystr(key_path)}: {repr(key_path)}')

a_tree = [jnp.zeros((2, 3)), jnp.zeros((3, 4))]

# Try to make another pytree with ones instead of zeros.
shapes = jax.tree.map(lambda x: x.shape, a_tree)
print(jax.tree.map(jnp.ones, shapes))

print(jax.tree.leaves([None, None, None]))

print(jax.tree.leaves([None, None, None], is_leaf=lambda x: x is None))

try:
  jax.tree.map(lambda x: x + 1, {1: 7, "y": 42})
except Exception as e:
  print(type(e).__name__)

def tree_transpose(list_of_trees):
  """
  Converts a list of trees of identical structure into a single tree of lists.
  """
  return jax.tree.map(lambda *xs: list(xs), *list_of_trees)

# Convert a dataset from row-major to column-major.
episode_steps = [dict(t=1, obs=3), dict(t=2, obs=4)]
print(tree_transpose(episode_steps))

print(jax.tree.transpose(
  outer_treedef = jax.tree.structure([0 for e in episode_steps]),
  inner_treedef = jax.tree.structure(episode_steps[0]),
  pytree_to_transpose = episode_steps
))

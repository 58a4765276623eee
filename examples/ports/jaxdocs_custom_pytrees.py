# Source: https://github.com/jax-ml/jax/blob/main/docs/custom_pytrees.md, section "Custom pytree nodes"
# Exercises: an unregistered class is a leaf (tree.map over it raises), register_pytree_node with flatten/unflatten
#   functions, register_pytree_node_class with tree_flatten/tree_unflatten methods, NamedTuple containers as nodes,
#   jax.tree_util.register_dataclass with data_fields/meta_fields, jit of a function of a dataclass container
#   (meta field static)
# Adapted: cell values printed; leaves that are unregistered Special objects are printed as (x, y) pairs (their
#   default repr holds an address); the first raises-exception cell wrapped in
#   try/except printing the exception type; the last one (jit of a NamedTuple with a str) is in
#   jaxdocs_custom_pytrees_jit_str.py

import jax

class Special(object):
  def __init__(self, x, y):
    self.x = x
    self.y = y

print([(s.x, s.y) for s in jax.tree.leaves([
    Special(0, 1),
    Special(2, 4),
])])

try:
  jax.tree.map(lambda x: x + 1,
    [
      Special(0, 1),
      Special(2, 4)
    ])
except TypeError as e:
  print(type(e).__name__)

from jax.tree_util import register_pytree_node

class RegisteredSpecial(Special):
  def __repr__(self):
    return "RegisteredSpecial(x={}, y={})".format(self.x, self.y)

def special_flatten(v):
  """Specifies a flattening recipe."""
  children = (v.x, v.y)
  aux_data = None
  return (children, aux_data)

def special_unflatten(aux_data, children):
  """Specifies an unflattening recipe."""
  return RegisteredSpecial(*children)

# Global registration
register_pytree_node(
    RegisteredSpecial,
    special_flatten,    # Instruct JAX what are the children nodes.
    special_unflatten   # Instruct JAX how to pack back into a `RegisteredSpecial`.
)

print(jax.tree.map(lambda x: x + 1,
  [
   RegisteredSpecial(0, 1),
   RegisteredSpecial(2, 4),
  ]))

from jax.tree_util import register_pytree_node_class

@register_pytree_node_class
class RegisteredSpecial2(Special):
  def __repr__(self):
    return "RegisteredSpecial2(x={}, y={})".format(self.x, self.y)

  def tree_flatten(self):
    children = (self.x, self.y)
    aux_data = None
    return (children, aux_data)

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    return cls(*children)

def show_example(structured):
  flat, tree = structured.tree_flatten()
  unflattened = RegisteredSpecial2.tree_unflatten(tree, flat)
  print(f"{structured=}\n  {flat=}\n  {tree=}\n  {unflattened=}")

show_example(RegisteredSpecial2(1., 2.))

from typing import NamedTuple, Any

class MyOtherContainer(NamedTuple):
  name: str
  a: Any
  b: Any
  c: Any

# NamedTuple subclasses are handled as pytree nodes, so
# this will work out-of-the-box.
print(jax.tree.leaves([
    MyOtherContainer('Alice', 1, 2, 3),
    MyOtherContainer('Bob', 4, 5, 6)
]))

from dataclasses import dataclass
import jax.numpy as jnp
import numpy as np
import functools

@functools.partial(jax.tree_util.register_dataclass,
                   data_fields=['a', 'b', 'c'],
                   meta_fields=['name'])
@dataclass
class MyDataclassContainer(object):
  name: str
  a: Any
  b: Any
  c: Any

# MyDataclassContainer is now a pytree node.
print(jax.tree.leaves([
  MyDataclassContainer('apple', 5.3, 1.2, jnp.zeros([4])),
  MyDataclassContainer('banana', np.array([3, 4]), -1., 0.)
]))

@jax.jit
def f(x: MyDataclassContainer | MyOtherContainer):
  return x.a + x.b

# Works fine! `mdc.name` is static.
mdc = MyDataclassContainer('mdc', 1, 2, 3)
y = f(mdc)

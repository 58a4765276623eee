"""The trees tinyjax's transforms flatten: `tinyjax.tree_util`'s, except that a complex array is a node whose children
are its real and imaginary parts (`tinyjax.complex_array`), so that every transform, loop and custom rule sees real
Tensors only. User code sees JAX's trees (a complex array is one leaf) through `tinyjax.tree_util`; tinyjax's code that
flattens values for a transform imports this module as `tu`."""
from __future__ import annotations
import functools
from typing import Any, Callable
import optree
from tinyjax.complex_array import ComplexArray, is_complex_data, from_data
from tinyjax.tree_util import NAMESPACE, PyTreeDef, tree_unflatten, keystr, Partial, treedef_is_leaf, broadcast_prefix as _broadcast_prefix, \
  register_pytree_node, jax_leaf, _flatten_with_path

__all__ = ["NAMESPACE", "PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map", "tree_reduce",
           "tree_flatten_with_path", "keystr", "Partial", "broadcast_prefix", "treedef_is_leaf", "register_pytree_node", "jax_leaf", "optree",
           "imaginary_parts", "has_complex", "complex_data_as_arrays"]

def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
  """The leaves and structure, complex data (a numpy complex array, a Python complex) taken as a complex array first,
  as a transform takes any array-like leaf."""
  leaves, treedef = optree.tree_flatten(tree, is_leaf=is_leaf, namespace=NAMESPACE)
  if not any(map(is_complex_data, leaves)): return leaves, treedef
  return optree.tree_flatten(_complex_data_as_arrays(tree, is_leaf), is_leaf=is_leaf, namespace=NAMESPACE)

def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
  return tree_flatten(tree, is_leaf)[0]

def _complex_data_as_arrays(tree, is_leaf: Callable[[Any], bool] | None) -> Any:
  return optree.tree_map(lambda x: from_data(x) if is_complex_data(x) else x, tree, is_leaf=jax_leaf(is_leaf), namespace=NAMESPACE)

def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
  return tree_flatten(tree, is_leaf)[1]

def broadcast_prefix(prefix, tree, what: str) -> list:
  """One prefix value per leaf of `tree` as `tree_flatten` gives them (a complex value's two parts share its value)."""
  return _broadcast_prefix(prefix, complex_data_as_arrays(tree), what)

def complex_data_as_arrays(tree) -> Any:
  """tree with its complex data (numpy complex arrays, Python complex numbers) as complex arrays."""
  leaves, treedef = optree.tree_flatten(tree, namespace=NAMESPACE)
  if not any(map(is_complex_data, leaves)): return tree
  return optree.tree_map(lambda x: from_data(x) if is_complex_data(x) else x, tree, is_leaf=jax_leaf(None), namespace=NAMESPACE)

def tree_map(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None) -> Any:
  return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, namespace=NAMESPACE)

def tree_reduce(function: Callable, tree) -> Any: return functools.reduce(function, tree_leaves(tree))

def tree_flatten_with_path(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
  """JAX's key paths; a complex array's parts have the keys .real and .imag."""
  return _flatten_with_path(tree, is_leaf)

def imaginary_parts(tree) -> list[bool]:
  """For each leaf of `tree` as `tree_flatten` gives them, whether it is the imaginary part of a complex value: JAX's
  complex conventions conjugate those (grad, vjp)."""
  def mark(x): return ComplexArray(False, True) if isinstance(x, ComplexArray) or is_complex_data(x) else False
  return optree.tree_leaves(optree.tree_map(mark, tree, is_leaf=jax_leaf(None), namespace=NAMESPACE), namespace=NAMESPACE)

def has_complex(tree) -> bool:
  """Whether a leaf of `tree` (JAX's leaves) is complex."""
  return any(isinstance(x, ComplexArray) or is_complex_data(x) for x in optree.tree_leaves(tree, is_leaf=jax_leaf(None), namespace=NAMESPACE))

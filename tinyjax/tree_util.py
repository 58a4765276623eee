"""Pytrees with JAX's names, on optree. A tinygrad Tensor (like any unregistered object) is a leaf; None is an empty
pytree, as in JAX. Custom nodes are registered in tinyjax's own optree namespace."""
from __future__ import annotations
from typing import Any, Callable
import optree

NAMESPACE = "tinyjax"
PyTreeDef = optree.PyTreeSpec


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
  return optree.tree_flatten(tree, is_leaf=is_leaf, namespace=NAMESPACE)

def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
  return optree.tree_unflatten(treedef, leaves)

def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
  return optree.tree_leaves(tree, is_leaf=is_leaf, namespace=NAMESPACE)

def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
  return optree.tree_structure(tree, is_leaf=is_leaf, namespace=NAMESPACE)

def tree_map(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None) -> Any:
  return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, namespace=NAMESPACE)

def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
  """JAX's signature: flatten_func(x) -> (children, aux_data); unflatten_func(aux_data, children) -> x."""
  optree.register_pytree_node(nodetype, flatten_func, unflatten_func, namespace=NAMESPACE)


class Partial:
  """jax.tree_util.Partial: a function with some arguments bound, as a pytree whose leaves are the bound arguments (the
  function itself is static, part of the tree structure). vjp's and linearize's functions are Partials over their
  residuals, so that jit can return them and a transform can take them as arguments."""
  def __init__(self, func: Callable, *args, **kwargs): self.func, self.args, self.keywords = func, args, kwargs
  def __call__(self, *args, **kwargs): return self.func(*self.args, *args, **self.keywords, **kwargs)
  def __repr__(self): return f"Partial({getattr(self.func, '__name__', self.func)!s}, {len(self.args)} residuals)"

register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func), lambda func, ch: Partial(func, *ch[0], **ch[1]))


_NONE = object()   # stands for None inside an axis-spec prefix, where None is a value and not an empty subtree

def broadcast_prefix(prefix, tree, what: str) -> list:
  """One prefix value per leaf of `tree` (JAX's tree-prefix rule for in_axes/out_axes). None in `prefix` is a value."""
  marked = optree.tree_map(lambda a: _NONE if a is None else a, prefix, none_is_leaf=True, namespace=NAMESPACE)
  try:
    full = optree.broadcast_prefix(marked, tree, namespace=NAMESPACE)
  except ValueError:
    raise ValueError(f"{what} specification must be a tree prefix of the corresponding value, got specification "
                     f"{prefix} for value tree {tree_structure(tree)}.") from None
  return [None if a is _NONE else a for a in full]

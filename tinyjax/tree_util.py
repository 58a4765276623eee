"""tinyjax.tree_util: JAX's jax.tree_util on optree. A tinygrad Tensor (like any unregistered object) is a leaf, and so
is a complex array (which tinyjax's transforms see as its two real parts: `tinyjax.pytree`); None is an empty pytree, as
in JAX. Custom nodes are registered in tinyjax's own optree namespace. Key paths use JAX's key
classes (DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey). The tree definitions are optree's PyTreeSpec (JAX's
PyTreeDef has the same methods: num_leaves, unflatten, flatten_up_to, children)."""
from __future__ import annotations
import dataclasses, functools, operator, warnings
from typing import Any, Callable, Iterable, Sequence, TypeVar
import optree
from tinyjax.errors import missing_names
from tinyjax.complex_array import ComplexArray

__all__ = ["tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map", "tree_reduce", "tree_all",
           "tree_transpose", "tree_broadcast", "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "keystr",
           "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys", "register_pytree_with_keys_class",
           "register_dataclass", "register_static", "treedef_is_leaf", "treedef_children", "all_leaves", "Partial", "PyTreeDef",
           "DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey", "KeyEntry", "KeyPath", "treedef_tuple", "is_tree_node",
           "flatten_one_level", "flatten_one_level_with_keys", "tree_reduce_associative"]

NAMESPACE = "tinyjax"
PyTreeDef = optree.PyTreeSpec
_NO_INIT = object()

# A complex array is a node of tinyjax's namespace (its children the real and imaginary parts: what the transforms
# carry, `tinyjax.pytree`); the functions of this module, JAX's, take it as one leaf, as JAX does.
optree.register_pytree_node(ComplexArray, lambda z: ((z.re, z.im), None, ("real", "imag")),  # type: ignore[arg-type,attr-defined]
                            lambda _, parts: ComplexArray(*parts), path_entry_type=optree.GetAttrEntry, namespace=NAMESPACE)  # type: ignore[arg-type,return-value]

def _is_complex(x: Any) -> bool: return type(x) is ComplexArray

def jax_leaf(is_leaf: Callable[[Any], bool] | None) -> Callable[[Any], bool]:
  """is_leaf, also true for a complex array: JAX's leaves."""
  if is_leaf is None: return _is_complex
  return lambda x: type(x) is ComplexArray or bool(is_leaf(x))


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
  """The leaves of `tree` (left to right, dict keys sorted) and its structure."""
  return optree.tree_flatten(tree, is_leaf=jax_leaf(is_leaf), namespace=NAMESPACE)

def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
  """The pytree of structure `treedef` with `leaves`."""
  return optree.tree_unflatten(treedef, leaves)

def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
  return optree.tree_leaves(tree, is_leaf=jax_leaf(is_leaf), namespace=NAMESPACE)

def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
  return optree.tree_structure(tree, is_leaf=jax_leaf(is_leaf), namespace=NAMESPACE)

def tree_map(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """f applied to the leaves of `tree` and the corresponding subtrees of `rest` (which have `tree`'s structure, or have
  it as a prefix)."""
  return optree.tree_map(f, tree, *rest, is_leaf=jax_leaf(is_leaf), namespace=NAMESPACE)

def tree_reduce(function: Callable, tree, initializer: Any = _NO_INIT, is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """functools.reduce over the leaves."""
  leaves = tree_leaves(tree, is_leaf)
  return functools.reduce(function, leaves) if initializer is _NO_INIT else functools.reduce(function, leaves, initializer)

def tree_all(tree, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """all() over the leaves."""
  return all(tree_leaves(tree, is_leaf))

def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose) -> Any:
  """An outer tree of inner trees -> an inner tree of outer trees (`inner_treedef` None: that of the first subtree)."""
  if inner_treedef is None: inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  return optree.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)

def tree_broadcast(prefix_tree, full_tree, is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """`prefix_tree` with each of its leaves repeated over the matching subtree of `full_tree`."""
  return optree.tree_broadcast_prefix(prefix_tree, full_tree, is_leaf=jax_leaf(is_leaf), namespace=NAMESPACE)

def treedef_is_leaf(treedef: PyTreeDef) -> bool: return treedef.is_leaf()
def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]: return treedef.children()

def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  """The structure of a tuple of trees of the structures `treedefs`."""
  return optree.treespec_tuple(list(treedefs), namespace=NAMESPACE)

def is_tree_node(typ: type) -> bool:
  """Whether `typ` is a pytree node type (built-in, namedtuple or registered), as opposed to a leaf type."""
  return typ is not ComplexArray and optree.register_pytree_node.get(typ, namespace=NAMESPACE) is not None

def tree_reduce_associative(operation: Callable, tree, *, identity: Any = _NO_INIT, is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """The leaves reduced by an associative `operation` in a balanced tree of calls (JAX's order: halves, recursively)."""
  def reduce(xs: list) -> Any:
    if len(xs) == 1: return xs[0]
    return operation(reduce(xs[:len(xs) // 2]), reduce(xs[len(xs) // 2:]))
  leaves = tree_leaves(tree, is_leaf)
  if leaves: return reduce(leaves)
  if identity is _NO_INIT: raise TypeError("Must specify identity for parallel reduction of empty sequence.")
  return identity

def _one_level(tree) -> Any:
  if not is_tree_node(type(tree)): raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return optree.tree_flatten_one_level(tree, namespace=NAMESPACE)

def flatten_one_level(tree) -> tuple[tuple, Any]:
  """(the children of the node `tree`, its metadata: a dict's sorted keys, a namedtuple's class, a custom node's aux data)."""
  out = _one_level(tree)
  return tuple(out.children), tuple(out.metadata) if isinstance(tree, dict) else out.metadata

def flatten_one_level_with_keys(tree) -> tuple[tuple, Any]:
  """flatten_one_level with each child paired with its key (DictKey, SequenceKey, GetAttrKey, ...)."""
  out = _one_level(tree)
  reg = optree.register_pytree_node.get(type(tree), namespace=NAMESPACE)
  assert reg is not None   # _one_level checked it
  keys = (_jax_key(reg.path_entry_type(e, type(tree), out.kind)) for e in out.entries)
  return tuple(zip(keys, out.children, strict=True)), tuple(out.metadata) if isinstance(tree, dict) else out.metadata

def all_leaves(iterable, is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """Whether every element of `iterable` is a leaf."""
  return all(tree_structure(x, is_leaf).is_leaf() for x in iterable)

# ---- key paths ------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DictKey:
  """A dict's key in a key path: prints as `['a']`."""
  key: Any
  def __str__(self): return f"[{self.key!r}]"

@dataclasses.dataclass(frozen=True)
class SequenceKey:
  """A list's or tuple's index in a key path: prints as `[0]`."""
  idx: int
  def __str__(self): return f"[{self.idx!r}]"

@dataclasses.dataclass(frozen=True)
class GetAttrKey:
  """An attribute (namedtuple or dataclass field) in a key path: prints as .name."""
  name: str
  def __str__(self): return f".{self.name}"

@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
  """The index of a child of a custom node registered without keys."""
  key: int
  def __str__(self): return f"[<flat index {self.key}>]"

_KEYS = (DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey)
KeyEntry = TypeVar("KeyEntry", bound=Any)   # JAX's type names for keys and key paths (annotations)
KeyPath = tuple[KeyEntry, ...]

def _jax_key(e: optree.PyTreeEntry):
  """optree's path entry -> JAX's key."""
  if isinstance(e, optree.MappingEntry): return DictKey(e.entry)
  if isinstance(e, (optree.NamedTupleEntry, optree.DataclassEntry)): return GetAttrKey(e.field)
  if isinstance(e, optree.GetAttrEntry): return GetAttrKey(e.name)
  if isinstance(e, optree.SequenceEntry): return SequenceKey(e.entry)
  return e.entry if isinstance(e.entry, _KEYS) else FlattenedIndexKey(e.entry)

def tree_flatten_with_path(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
  """([(key path, leaf)], treedef), key paths being tuples of JAX's keys."""
  return _flatten_with_path(tree, jax_leaf(is_leaf))

def _flatten_with_path(tree, is_leaf: Callable[[Any], bool] | None) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
  accessors, leaves, treedef = optree.tree_flatten_with_accessor(tree, is_leaf=is_leaf, namespace=NAMESPACE)
  return [(tuple(_jax_key(e) for e in a), l) for a, l in zip(accessors, leaves, strict=True)], treedef

def tree_leaves_with_path(tree, is_leaf: Callable[[Any], bool] | None = None) -> list[tuple[tuple, Any]]:
  return tree_flatten_with_path(tree, is_leaf)[0]

def tree_map_with_path(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """tree_map whose f also takes the leaf's key path first: f(path, leaf, *others)."""
  with_path, treedef = tree_flatten_with_path(tree, is_leaf)
  others = [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten(f(p, l, *o) for (p, l), *o in zip(with_path, *others, strict=True))

def keystr(keys: Sequence, *, simple: bool = False, separator: str = "") -> str:
  """A key path as text: `['a'][0].b` (simple=True: the bare keys joined by `separator`, `a/0/b`)."""
  if not simple: return separator.join(str(k) for k in keys)
  return separator.join(str(next(iter(dataclasses.asdict(k).values()))) if isinstance(k, _KEYS) else str(k) for k in keys)

# ---- registering custom nodes ---------------------------------------------------------------------------------------

def _register(nodetype: type, flatten: Callable, unflatten: Callable) -> None:
  with warnings.catch_warnings():   # a namedtuple subclass registered with its own rules, as JAX allows without a word
    warnings.filterwarnings("ignore", "PyTree type .* is a subclass of `collections.namedtuple`")
    optree.register_pytree_node(nodetype, flatten, unflatten, path_entry_type=optree.FlattenedEntry, namespace=NAMESPACE)

def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable, flatten_with_keys_func: Callable | None = None) -> None:
  """JAX's signature: flatten_func(x) -> (children, aux_data); unflatten_func(aux_data, children) -> x."""
  if flatten_with_keys_func is not None: return register_pytree_with_keys(nodetype, flatten_with_keys_func, unflatten_func, flatten_func)
  _register(nodetype, flatten_func, unflatten_func)

def register_pytree_node_class(cls: type) -> type:
  """Class decorator: the class's `tree_flatten()` method and `tree_unflatten(aux_data, children)` classmethod."""
  register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)  # type: ignore[attr-defined]
  return cls

def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable, unflatten_func: Callable, flatten_func: Callable | None = None) -> None:
  """flatten_with_keys(x) -> ([(key, child)], aux_data): the keys appear in key paths."""
  def flatten(x):
    pairs, aux = flatten_with_keys(x)
    keys, children = zip(*pairs, strict=True) if pairs else ((), ())
    return children, aux, keys
  _register(nodetype, flatten, unflatten_func)

def register_pytree_with_keys_class(cls: type) -> type:
  """Class decorator: `tree_flatten_with_keys()` method and `tree_unflatten(aux_data, children)` classmethod."""
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"), cls.tree_unflatten)  # type: ignore[attr-defined]
  return cls

def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None, meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> type:
  """A dataclass as a pytree: `data_fields` are children, `meta_fields` static (part of the structure). Without them,
  the dataclass's fields are data unless declared with `field(metadata=dict(static=True))`, as in JAX."""
  if data_fields is None and meta_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError("register_dataclass: data_fields and meta_fields are required when nodetype is not a dataclass")
    fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
    data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
  elif data_fields is None or meta_fields is None:
    raise TypeError("register_dataclass: data_fields and meta_fields must both be given, or neither")
  data, meta = tuple(data_fields), tuple(meta_fields)
  def flatten(x): return tuple(getattr(x, n) for n in data), tuple(getattr(x, n) for n in meta), data
  def unflatten(aux, children): return nodetype(**dict(zip(meta, aux, strict=True)), **dict(zip(data, children, strict=True)))
  optree.register_pytree_node(nodetype, flatten, unflatten, path_entry_type=optree.GetAttrEntry, namespace=NAMESPACE)
  return nodetype

def register_static(cls: type) -> type:
  """A class whose instances are pytrees with no leaves (the instance is part of the structure)."""
  def flatten(x: Any) -> tuple[tuple, Any]: return (), x
  def unflatten(x: Any, _) -> Any: return x
  optree.register_pytree_node(cls, flatten, unflatten, namespace=NAMESPACE)
  return cls


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

__getattr__ = missing_names("tinyjax.tree_util", "jax.tree_util")

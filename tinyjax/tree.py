"""tinyjax.tree: JAX's jax.tree namespace, the short names of `tinyjax.tree_util`'s functions (`tinyjax.tree.map` is
`tinyjax.tree_util.tree_map`)."""
from tinyjax.tree_util import tree_map as map, tree_leaves as leaves, tree_structure as structure, tree_flatten as flatten  # noqa: A004
from tinyjax.tree_util import tree_unflatten as unflatten, tree_reduce as reduce, tree_all as all, tree_transpose as transpose  # noqa: A004
from tinyjax.tree_util import tree_broadcast as broadcast, tree_flatten_with_path as flatten_with_path
from tinyjax.tree_util import tree_leaves_with_path as leaves_with_path, tree_map_with_path as map_with_path
from tinyjax.errors import missing_names

__all__ = ["map", "leaves", "structure", "flatten", "unflatten", "reduce", "all", "transpose", "broadcast", "flatten_with_path",
           "leaves_with_path", "map_with_path"]

__getattr__ = missing_names("tinyjax.tree", "jax.tree")

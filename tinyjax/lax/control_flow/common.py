"""What lax's loops and branches share: JAX's checks of what the user's functions return, the carry's weak-type
promotion, the transforms of a traced body, and JAX's list helpers."""
from __future__ import annotations
from typing import Any, Callable, Sequence, TypeVar
from tinyjax._tg import Tensor, UOp, GroupOp, DType, dtypes
from tinyjax.core import as_tensor
from tinyjax.transforms.jvp import jvp
from tinyjax.transforms.vjp import vjp
from tinyjax.transforms.vmap import vmap
from tinyjax.lax.host_call import Type, Body
from tinyjax.dtypes import short_type, weak_dtype_of, weak_float
from tinyjax import pytree as tu

T = TypeVar("T")

# ---- JAX's list helpers (jax._src.util): the flat argument lists of loop bodies, cut and merged by masks ----------------

def split_list(xs: Sequence[T], ns: Sequence[int]) -> list[list[T]]:
  """xs cut into pieces of the lengths ns, then the rest."""
  out, start = [], 0
  for n in ns:
    out.append(list(xs[start:start + n]))
    start += n
  return out + [list(xs[start:])]

def partition_list(which: Sequence[bool], xs: Sequence[T]) -> tuple[list[T], list[T]]:
  """(the xs where `which` is False, those where it is True)."""
  return [x for w, x in zip(which, xs, strict=True) if not w], [x for w, x in zip(which, xs, strict=True) if w]

def merge_lists(which: Sequence[bool], falses: Sequence[T], trues: Sequence[T]) -> list[T]:
  """The inverse of partition_list: trues where `which` is True, falses elsewhere, each in order."""
  f, t = iter(falses), iter(trues)
  out = [next(t) if w else next(f) for w in which]
  assert next(f, None) is None and next(t, None) is None, "merge_lists: lengths do not match the mask"
  return out

def at_mask(which: Sequence[bool], xs: Sequence, fill=None) -> list:
  """xs where `which` is True, `fill` elsewhere (a tangent or cotangent list with symbolic zeros)."""
  return merge_lists(which, [fill] * (len(which) - sum(which)), xs)

def _tstr(t: Type) -> str: return short_type(t[1], t[0])

def _is_float(t: Tensor | UOp) -> bool: return dtypes.is_float(t.dtype)

def _flat(x) -> tuple[list[Tensor], Any]:
  leaves, tree = tu.tree_flatten(x)
  return [as_tensor(leaf) for leaf in leaves], tree

def _paths(x) -> list[tuple]: return tu.optree.tree_paths(x, namespace=tu.NAMESPACE)

def _flat_weak(x) -> tuple[list[Tensor], Any, list[DType | None]]:
  """_flat, with each leaf's `weak_float`."""
  leaves, tree = tu.tree_flatten(x)
  return [as_tensor(leaf) for leaf in leaves], tree, [weak_float(leaf) for leaf in leaves]

def weak_types(leaves: list) -> dict[str, list[DType | None]]:
  """A carry's weak types, for a loop's trace: "weak" the leaves kept weak inside the body (`weak_float`), "promotable"
  those a body's dtype may promote (`_promoted`: weak ints too)."""
  return {"weak": [weak_float(v) for v in leaves], "promotable": [weak_dtype_of(v) for v in leaves]}

def as_weak(xs: list[Tensor], weak: Sequence[DType | None]) -> list[Tensor]:
  """Values stored at their width, weakly typed again where `weak` says: a loop's carry or a branch's operand that
  was a Python number or a weak array stays weak inside the function and outside the loop, as in JAX."""
  return [x if w is None else x.cast(w) for x, w in zip(xs, weak, strict=True)]


# ---- JAX's checks of what the functions return -------------------------------------------------------------------------

def _path_name(prefix: str, path) -> str: return prefix + tu.keystr(path) if path else prefix

def _check_carry(what: str, name: str, init_tree, init: list[Type], out_tree, out: list[Type], paths) -> None:
  if out_tree != init_tree:
    raise TypeError(f"{what} function carry input and carry output must have the same pytree structure, but they differ:\n\n"
                    f"The input carry {name} is {init_tree} but the corresponding carry output is {out_tree}.\n\n"
                    "Revise the function so that the carry output has the same pytree structure as the carry input.")
  for p, a, b in zip(paths, init, out, strict=True):
    if a != b:
      why = "the dtypes do not match" if a[0] == b[0] else "the shapes do not match"
      comp = f"{name}" if not p else f"component {_path_name(name, p)}"
      raise TypeError(f"{what} function carry input and carry output must have equal types, but they differ:\n\n"
                      f"The input carry {comp} has type {_tstr(a)} but the corresponding output carry component has type "
                      f"{_tstr(b)}, so {why}.\n\nRevise the function so that all output types match the corresponding input types.")

def _promoted(init: list[Tensor], weak: Sequence[DType | None], out: list[Type]) -> list[Tensor] | None:
  """JAX's weak-type promotion of a carry: a weakly typed init (a Python number, a weak array: its weak dtype in
  `weak`) takes the dtype its function returns where JAX's promotion gives that dtype (a weak int any int or float, a
  weak float any float); None: no change."""
  def takes(w: DType | None, d: DType) -> bool:
    return w is not None and (dtypes.is_float(d) or (w == dtypes.weakint and dtypes.is_int(d)))
  new = [x.cast(o[1]) if takes(w, o[1]) and x.dtype != o[1] and x.shape == o[0] else x for x, w, o in zip(init, weak, out, strict=True)]
  return None if all(a is b for a, b in zip(new, init, strict=True)) else new


# ---- transforms of a traced body ---------------------------------------------------------------------------------------

def _jvp(body: Body, primals: list[Tensor], tangents: list[Tensor | None]) -> tuple[list[Tensor], list[Tensor]]:
  ts = [p.zeros_like() if t is None or not _is_float(p) else t for p, t in zip(primals, tangents, strict=True)]
  outs, touts = jvp(lambda *a: tuple(body(a)), tuple(primals), tuple(ts))
  return list(outs), list(touts)

def _vjp(body: Body, primals: list[Tensor], cts: list[Tensor | None]) -> list[Tensor]:
  """The cotangents of body's inputs for cotangents of its outputs (None: zero), recomputing its forward pass."""
  keep = [i for i, c in enumerate(cts) if c is not None]
  _, pull = vjp(lambda *a: tuple(body(a)[i] for i in keep), *primals)
  return list(pull(tuple(cts[i] for i in keep)))

def residuals(outs: list[UOp], varying: set[UOp], unknown: set[UOp], available: set[UOp]) -> list[UOp]:
  """JAX's partial evaluation of a linearized step, on a graph: the values a reverse step reads that the forward step
  can compute (nodes depending on the `varying` inputs, not on the `unknown` ones: the cotangents), which a forward loop
  saves instead of the reverse step computing them again. Values of the inputs alone that the reverse step has anyway
  (`available`: its xs) and values depending on no varying input (the consts') are not saved; a view of a saved value
  is taken in the reverse step (its base is saved)."""
  late: set[UOp] = set(unknown)
  known: set[UOp] = set(varying)
  order = UOp.sink(*outs).toposort(enter_calls=False)
  for u in order:
    if u in late or u in known: continue
    if any(s in late for s in u.src): late.add(u)
    elif any(s in known for s in u.src): known.add(u)
  saved: dict[UOp, None] = {}
  for u in order:
    if u not in late: continue
    for s in u.src:
      while s in known and s.op in GroupOp.Movement and s.src[0] in known: s = s.src[0]
      if s in known and s not in available: saved[s] = None
  return list(saved)

def _vmap(body: Body, flags: Sequence[int | None], size: int) -> Callable[[list[Tensor]], list[Tensor]]:
  return lambda xs: list(vmap(lambda *a: tuple(body.replay(a)), in_axes=tuple(flags), axis_size=size)(*xs))

def _broadcast(x: Tensor, flag: int | None, size: int) -> Tensor:
  return x if flag is not None else x.unsqueeze(0).expand(size, *x.shape)

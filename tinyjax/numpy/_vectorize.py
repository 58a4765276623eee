"""tinyjax.numpy.vectorize: a function of scalars (or of core dimensions, with a gufunc `signature`) mapped over the
broadcast leading axes of its arguments by tinyjax.vmap, as JAX's jnp.vectorize (whose logic and messages this follows)."""
from __future__ import annotations
import functools, re
from typing import Any, Callable, Collection, Sequence
import numpy as np
from tinyjax._tg import static_shape as _S
from tinyjax.transforms.vmap import vmap
from tinyjax.numpy._core import asarray
from tinyjax.numpy._shape import broadcast_shapes, squeeze, expand_dims

__all__ = ["vectorize"]

_DIMENSION_NAME = r"\w+"
_CORE_DIMENSION_LIST = "(?:{0:}(?:,{0:})*)?".format(_DIMENSION_NAME)
_ARGUMENT = rf"\({_CORE_DIMENSION_LIST}\)"
_ARGUMENT_LIST = "{0:}(?:,{0:})*".format(_ARGUMENT)
_SIGNATURE = "^{0:}->{0:}$".format(_ARGUMENT_LIST)

CoreDims = tuple[str, ...]

def _parse_signature(signature: str) -> tuple[list[CoreDims], list[CoreDims]]:
  if not re.match(_SIGNATURE, signature): raise ValueError(f"not a valid gufunc signature: {signature}")
  ins, outs = ([tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, part)] for part in signature.split("->"))
  return ins, outs

def _update_dim_sizes(sizes: dict[str, int], shape: tuple[int, ...], core: CoreDims, context: str, *, is_input: bool) -> None:
  if is_input and len(shape) < len(core):
    raise ValueError(f"input with shape {shape!r} does not have enough dimensions for all core dimensions {core!r} {context}")
  if not is_input and len(shape) != len(core):
    raise ValueError(f"output shape {shape!r} does not match core dimensions {core!r} {context}")
  for dim, size in zip(core, shape[len(shape) - len(core):] if core else (), strict=True):
    if sizes.setdefault(dim, size) != size:
      raise ValueError(f"inconsistent size for core dimension {dim!r}: {size!r} vs {sizes[dim]!r} {context}")

def _check_output_dims(func: Callable, sizes: dict[str, int], out_core: list[CoreDims], context: str) -> Callable:
  def wrapped(*args):
    out = func(*args)
    shapes = [tuple(np.shape(o)) if not hasattr(o, "shape") else tuple(o.shape) for o in (out if isinstance(out, tuple) else [out])]
    if len(out_core) > 1 and not isinstance(out, tuple):
      raise TypeError(f"output must be a tuple when multiple outputs are expected, got: {out!r}\n{context}")
    if len(shapes) != len(out_core):
      raise TypeError(f"wrong number of output arguments: expected {len(out_core)!r}, got {len(shapes)!r} {context}")
    s = dict(sizes)
    for shape, core in zip(shapes, out_core, strict=True): _update_dim_sizes(s, shape, core, context, is_input=False)
    return out
  return wrapped

def _apply_excluded(func: Callable, excluded: Collection[int | str], args: Sequence[Any], kwargs: dict[str, Any]) \
    -> tuple[Callable, Sequence[Any], dict[str, Any]]:
  """func of the arguments that are not excluded (those are passed through as they are)."""
  if not excluded: return func, args, kwargs
  dynamic = [a for i, a in enumerate(args) if i not in excluded]
  dynamic_kw = {k: v for k, v in kwargs.items() if k not in excluded}
  static = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int)) if i < len(args)]
  static_kw = {k: v for k, v in kwargs.items() if k in excluded}
  def new_func(*a, **kw):
    full = list(a)
    for i, v in static: full.insert(i, v)
    return func(*full, **kw, **static_kw)
  return new_func, dynamic, dynamic_kw

def vectorize(pyfunc: Callable, *, excluded: Collection[int | str] = frozenset(), signature: str | None = None) -> Callable:
  """pyfunc vectorized over its arguments' leading (non-core) axes with broadcasting (jnp.vectorize): by tinyjax.vmap,
  so pyfunc runs once, on the core shapes. `excluded` arguments are passed through as they are; a keyword argument
  must be one of them (JAX drops the others: here an error)."""
  if any(not isinstance(e, (str, int)) for e in excluded):
    raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, but excluded={excluded!r}")
  if any(isinstance(e, int) and e < 0 for e in excluded): raise ValueError(f"excluded={excluded!r} contains negative numbers")

  @functools.wraps(pyfunc)
  def wrapped(*args_: Any, **kwargs: Any) -> Any:
    args: Sequence[Any] = args_
    context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
    func, args, kwargs = _apply_excluded(pyfunc, excluded, args, kwargs)
    if kwargs:   # (JAX 0.10 calls pyfunc without them, whatever they say)
      raise NotImplementedError(f"jnp.vectorize: keyword arguments that are not excluded ({', '.join(kwargs)}): pass them "
                                "positionally, or exclude them (excluded={...})")
    in_core, out_core = _parse_signature(signature) if signature is not None else ([()] * len(args), None)
    if none_args := {i for i, a in enumerate(args) if a is None}:
      if any(in_core[i] != () for i in none_args): raise ValueError(f"Cannot pass None at locations {none_args} with signature={signature}")
      func, args, _ = _apply_excluded(func, none_args, args, {})
      in_core = [d for i, d in enumerate(in_core) if i not in none_args]
    ts = tuple(asarray(a) for a in args)
    if len(ts) != len(in_core):
      raise TypeError(f"wrong number of positional arguments: expected {len(in_core)!r}, got {len(ts)!r} {context}")
    sizes: dict[str, int] = {}
    for t, core in zip(ts, in_core, strict=True): _update_dim_sizes(sizes, _S(t), core, context, is_input=True)
    bshape = broadcast_shapes(*(_S(t)[:t.ndim - len(core)] for t, core in zip(ts, in_core, strict=True)))
    checked = func if out_core is None else _check_output_dims(func, sizes, out_core, context)
    squeezed, rev_shapes = [], []
    for t, core in zip(ts, in_core, strict=True):
      lead = _S(t)[:t.ndim - len(core)]
      rev_shapes.append(((1,) * (len(bshape) - len(lead)) + lead)[::-1])
      squeezed.append(squeeze(t, tuple(i for i, s in enumerate(lead) if s == 1)))
    # one vmap per broadcast axis, innermost last; an axis of size 1 in every argument is put back afterwards
    f, expand = checked, []
    for negdim, axis_sizes in enumerate(zip(*rev_shapes, strict=True)):
      in_axes = tuple(None if s == 1 else 0 for s in axis_sizes)
      if all(a is None for a in in_axes): expand.append(len(bshape) - 1 - negdim)
      else: f = vmap(f, in_axes)
    result = f(*squeezed)
    if not expand: return result
    if isinstance(result, tuple): return tuple(expand_dims(r, expand) for r in result)
    return expand_dims(result, expand)
  return wrapped

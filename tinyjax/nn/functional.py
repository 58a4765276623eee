"""tinyjax.nn.functional: tinygrad models (objects holding Tensors, as `tinygrad.nn.Linear`) as pure functions of their
parameters, as torch.func's `functional_call` and `stack_module_state`, so that every tinyjax transform applies:

    p = params(model)                                   # {"l1.weight": Tensor, ..., "bn.running_mean": Tensor}
    vmap(grad(lambda p, x, y: loss(functional_call(model, p, x), y)), in_axes=(None, 0, 0))(p, X, Y)

Names are tinygrad's `nn.state.get_state_dict` names. `functional_call` puts the given Tensors in the model's
attributes for one call and always puts the model's own back. A model that writes into its buffers during the call
(BatchNorm in training mode: `self.running_mean.assign(...)`) never writes into the model or into the caller's
Tensors: the written values come back with `return_buffers=True`, and without it the call raises."""
from __future__ import annotations
from collections import OrderedDict
from typing import Any, Mapping, Sequence
from tinyjax._tg import Tensor, UOp, Ops, GroupOp
from tinyjax import pytree as tu
from tinyjax.dtypes import type_str

__all__ = ["params", "functional_call", "stack_params"]

Step = tuple[str, Any]   # one step from an object to its child: ("attr", name), ("field", name) or ("item", index/key)

def _paths(obj: Any, prefix: str = "", path: tuple[Step, ...] = (), out: dict | None = None) -> dict[str, tuple[Tensor, tuple[Step, ...]]]:
  """name -> (Tensor, path to it), walking the model exactly as tinygrad's `nn.state.get_state_dict` does (same names,
  same order): namedtuples by field, OrderedDicts as dicts, objects by their `__dict__`, lists and tuples by index,
  dicts by `str(key)`."""
  out = {} if out is None else out
  if isinstance(obj, Tensor):
    out[prefix.strip(".")] = (obj, path)
    return out
  items: Any
  if hasattr(obj, "_asdict"): items = [(k, v, ("field", k)) for k, v in obj._asdict().items()]
  elif isinstance(obj, OrderedDict) or (not hasattr(obj, "__dict__") and isinstance(obj, dict)):
    items = [(k, v, ("item", k)) for k, v in dict(obj).items()]
  elif hasattr(obj, "__dict__"): items = [(k, v, ("attr", k)) for k, v in vars(obj).items()]
  elif isinstance(obj, (list, tuple)): items = [(i, v, ("item", i)) for i, v in enumerate(obj)]
  else: return out
  for k, v, step in items: _paths(v, f"{prefix}{k}.", path + (step,), out)
  return out

def _get(obj: Any, step: Step) -> Any:
  kind, k = step
  return getattr(obj, k) if kind == "field" else vars(obj)[k] if kind == "attr" else obj[k]

def _put(obj: Any, step: Step, value: Any) -> Any:
  """Set obj's child; returns obj, or a new object if obj is immutable (a tuple, a namedtuple)."""
  kind, k = step
  if kind == "field": return obj._replace(**{k: value})
  if kind == "attr": vars(obj)[k] = value
  elif isinstance(obj, tuple):
    items = obj[:k] + (value,) + obj[k + 1:]
    return items if type(obj) is tuple else type(obj)(items)
  else: obj[k] = value
  return obj

def _read(root: Any, path: tuple[Step, ...]) -> Any:
  for step in path: root = _get(root, step)
  return root

def _swap(root: Any, path: tuple[Step, ...], value: Any, undo: list) -> None:
  """Put value at path under root. An immutable container on the way (a tuple of Tensors) is rebuilt and put into its
  parent; `undo` gets (mutable owner, step, its previous child) to put the original objects back."""
  owners = [root]
  for step in path[:-1]: owners.append(_get(owners[-1], step))
  for owner, step in zip(reversed(owners), reversed(path), strict=True):
    old = _get(owner, step)
    new = _put(owner, step, value)
    if new is owner:
      undo.append((owner, step, old))
      return
    value = new
  raise TypeError(f"functional_call: the model itself is immutable ({type(root).__name__}); its Tensors cannot be swapped")

def _stand_in(t: Tensor) -> Tensor:
  """A new Tensor with t's value (the same graph node: no copy, no kernel), put into the model in t's place: a write by
  the model (`assign`, `+=`) changes the stand-in only, never t. A view of a buffer through shrink/permute/... would
  make tinygrad's assign write through to the buffer itself (and every Tensor on it): such a view is put behind a
  CONTIGUOUS_BACKWARD (the identity for values and derivatives) so that an assign stays the stand-in's."""
  u, ib = t.uop, t.uop
  while not ib.has_buffer_identity() and ib.op in GroupOp.Movement | {Ops.BITCAST, Ops.DETACH}: ib = ib.src[0]
  if ib is not u and ib.has_buffer_identity(after_ok=True): u = u.contiguous_backward()
  s = Tensor(u)
  s.is_param = t.is_param
  return s

def _writes(cur: UOp, orig: UOp) -> dict[UOp, UOp] | None:
  """The assigns the model made to a stand-in whose node was `orig` and is now `cur`: each AFTER(prev, STORE(prev, x)) of
  the chain from orig to cur -> the value x it wrote (earlier writes substituted into later ones), or None if cur is not
  such a chain."""
  chain, u = [], cur
  while u is not orig and u.op is Ops.AFTER and len(u.src) == 2 and u.src[1].op is Ops.STORE and u.src[1].src[0] is u.src[0]:
    chain.append(u)
    u = u.src[0]
  if u is not orig: return None
  subs: dict[UOp, UOp] = {}
  for a in reversed(chain):
    x = a.src[1].src[1]
    subs[a] = x.substitute(subs) if subs else x
  return subs

def params(model: Any) -> dict[str, Tensor]:
  """The model's parameters and buffers by tinygrad's `nn.state.get_state_dict` names ("l1.weight",
  "bn.running_mean"): the model's own Tensors, in a dict (a pytree every transform takes)."""
  return {name: t for name, (t, _) in _paths(model).items()}

def functional_call(model: Any, params: Mapping[str, Tensor], *args: Any, return_buffers: bool = False, **kwargs: Any) -> Any:
  """`model(*args, **kwargs)` with the Tensors of `params` (any subset of `params(model)`'s names) in place of the
  model's own, which are put back afterwards, also when the call raises. The arguments may be traced values of any
  tinyjax transform: the model is never left holding one.

  Tensors the model writes during the call (BatchNorm in training mode assigns running_mean, running_var and
  num_batches_tracked), its own or given, are never written into the model or into `params`: with
  `return_buffers=True` the call returns `(output, {name: written value})` (only the names written; `{}` if none),
  else it raises RuntimeError naming them."""
  if not isinstance(params, Mapping): raise TypeError(f"functional_call: params must be a dict of name -> Tensor, got {type(params).__name__}")
  paths = _paths(model)
  if unknown := [n for n in params if n not in paths]:
    raise KeyError(f"functional_call: unknown parameter names {unknown}: the model's are {list(paths)}")
  for n, v in params.items():
    if not isinstance(v, Tensor): raise TypeError(f"functional_call: params[{n!r}] is a {type(v).__name__}, not a Tensor")
  # every Tensor of the model gets a stand-in (given or its own), so that no write reaches the model
  stand_ins = {n: _stand_in(params[n] if n in params else t) for n, (t, _) in paths.items()}
  nodes = {n: s.uop for n, s in stand_ins.items()}
  undo: list = []
  written: dict[str, Any] = {}
  subs: dict[UOp, UOp] = {}   # each write the model made (AFTER(buffer, STORE(buffer, x))) -> the value x it wrote
  try:
    for n, (_, path) in paths.items(): _swap(model, path, stand_ins[n], undo)
    out = model(*args, **kwargs)
    for n, (_, path) in paths.items():
      try: cur = _read(model, path)
      except (KeyError, IndexError, AttributeError, TypeError): continue   # the model changed its own structure
      if cur is not stand_ins[n]: written[n] = cur                         # it rebound the attribute
      elif cur.uop is not nodes[n]:                                        # it assigned into it
        written[n] = cur
        subs.update(_writes(cur.uop, nodes[n]) or {})
  finally:
    for owner, step, old in reversed(undo): _put(owner, step, old)
  if not written: return (out, {}) if return_buffers else out
  if not return_buffers:
    raise RuntimeError(f"functional_call: the model updated its buffers {list(written)} during functional_call (as BatchNorm "
                       "does in training mode); pass return_buffers=True to get them, or call it with training off (tinygrad "
                       "0.14: outside Context(TRAINING=1); older tinygrad: Tensor.training = False)")
  # the written values and the output as pure graphs: what they read of a written buffer is the value written, and
  # no STORE into the model's or the caller's buffers is left in them
  def pure(t: Tensor) -> Tensor: return Tensor(t.uop.substitute(subs)) if subs else t
  new = {n: pure(w) if isinstance(w, Tensor) else w for n, w in written.items()}
  return tu.tree_map(lambda x: pure(x) if isinstance(x, Tensor) else x, out), new

def stack_params(models: Sequence[Any]) -> dict[str, Tensor]:
  """The params of k models of one architecture stacked on a new leading axis (torch.func.stack_module_state), for
  `vmap(lambda p, x: functional_call(model, p, x), in_axes=(0, None))(stack_params(models), x)`."""
  models = list(models)
  if not models: raise ValueError("stack_params: no models given")
  ps = [params(m) for m in models]
  first = ps[0]
  for i, p in enumerate(ps[1:], 1):
    if list(p) != list(first):
      missing, extra = [n for n in first if n not in p], [n for n in p if n not in first]
      raise ValueError(f"stack_params: models[{i}] has other parameter names than models[0]: missing {missing}, extra {extra}"
                       + ("" if missing or extra else " (in another order)"))
    for n, t in p.items():
      if (t.shape, t.dtype, t.device) != (first[n].shape, first[n].dtype, first[n].device):
        raise ValueError(f"stack_params: models[{i}]['{n}'] is {type_str(t)} on {t.device}, models[0]'s is {type_str(first[n])} "
                         f"on {first[n].device}")
  return {n: Tensor.stack(*[p[n] for p in ps]) for n in first}

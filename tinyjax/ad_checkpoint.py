"""jax.checkpoint / jax.remat, jax.checkpoint_policies and jax.ad_checkpoint.checkpoint_name.

Under a transform, a checkpointed function is one call (a tinygrad FUNCTION whose rule is `Remat`): its body is the
function traced on PARAMs. The forward pass inlines the body (tinygrad fuses it as usual). Reverse mode asks the rule
for the cotangents, and the rule answers with a second call, whose body is the function's vjp at the call's
arguments (and at the values the policy saved): a *precompiled* FUNCTION, which tinygrad schedules as a unit of its
own (a nested schedule, `precompile=True`) instead of inlining it. Two things follow, which remat needs:
- the recomputation is distinct from the forward pass: inside the call it is a graph over PARAMs, which the
  hash-consing of UOps cannot merge with the forward's nodes (an inlined copy would be the very same nodes), and
- it runs after the cotangent exists, because the cotangent is one of its arguments,
so the forward pass's intermediates die with the forward pass and tinygrad's memory planner reuses their space.
Forward mode is transparent (the jvp of a checkpoint is a checkpoint of the jvp), vmap vmaps the body.

Policies choose values inside the body to save instead of recompute (dots, named values): they become extra
outputs of the forward call, and the backward call reads them where its graph would recompute them.
"""
from __future__ import annotations
import functools, types
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence
from tinyjax._tg import Tensor, UOp, Ops, dtypes, param_like, unfilled, const_value, custom_call
from tinyjax.call_rule import CallRule, BatchedCall
from tinyjax.core import trace_scope, substitute, as_tensor, is_array
from tinyjax.custom import closure, new_slot
from tinyjax.dtypes import weak_storage_dtype, weak_dtype_of
from tinyjax.transforms.vmap import vmap
from tinyjax.transforms.jvp import jvp
from tinyjax.transforms.vjp import vjp
from tinyjax import pytree as tu

# ---- policies: JAX's names and signatures, policy(prim, *avals, **params) -> bool ---------------------------------

@dataclass(frozen=True)
class Primitive:
  """What a policy is asked about: a dot (`dot_general`, with `batch_dims`) or a named value (`name`, with `name`)."""
  name: str

dot_general_p, name_p = Primitive("dot_general"), Primitive("name")

def everything_saveable(*_, **__) -> bool:
  """Save everything: as if jax.checkpoint were not used."""
  return True

def nothing_saveable(*_, **__) -> bool:
  """Save nothing but the inputs: recompute everything (the default)."""
  return False

@dataclass(frozen=True)
class DotsSaveable:
  """Save the results of dots (matrix products, contractions); with only_if_no_batch_dims, only of dots without batch
  dimensions."""
  only_if_no_batch_dims: bool
  def __call__(self, prim, *_, **params) -> bool:
    return prim is dot_general_p and not (self.only_if_no_batch_dims and params.get("batch_dims", False))

checkpoint_dots = dots_saveable = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)

@dataclass(frozen=True)
class SaveOnlyTheseNames:
  saveable_names: frozenset[str]
  def __call__(self, prim, *_, **params) -> bool: return prim is name_p and params["name"] in self.saveable_names

@dataclass(frozen=True)
class SaveAnyNamesButThese:
  names: frozenset[str]
  def __call__(self, prim, *_, **params) -> bool: return prim is name_p and params["name"] not in self.names

def save_only_these_names(*names_which_can_be_saved: str) -> SaveOnlyTheseNames:
  """Save only values named (checkpoint_name) with one of these names."""
  return SaveOnlyTheseNames(frozenset(names_which_can_be_saved))

def save_any_names_but_these(*names_not_to_save: str) -> SaveAnyNamesButThese:
  """Save only named values, except those with these names."""
  return SaveAnyNamesButThese(frozenset(names_not_to_save))

def save_anything_except_these_names(*names_not_to_save: str) -> Callable[..., bool]:
  """JAX's (as JAX has it, this saves everything)."""
  return everything_saveable

def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable[..., bool]:
  """Logical OR of two policies."""
  def policy(prim, *args, **params):
    out1, out2 = policy_1(prim, *args, **params), policy_2(prim, *args, **params)
    if not (isinstance(out1, bool) and isinstance(out2, bool)):
      raise ValueError(f"The return value of the policies should be a boolean. Got: {out1} and {out2}. Please write a "
                       "custom policy function directly, rather than using this helper function.")
    return out1 or out2
  return policy

def _offload(name: str) -> Callable:
  def policy(*_, **__):
    raise NotImplementedError(f"tinyjax.checkpoint_policies.{name}: tinyjax has no host-memory offloading; use "
                              "save_only_these_names or dots_with_no_batch_dims_saveable (recompute instead of offload)")
  def make(*_, **__) -> Callable: return policy
  return make

checkpoint_policies = types.SimpleNamespace(
  everything_saveable=everything_saveable, nothing_saveable=nothing_saveable, dots_saveable=dots_saveable,
  checkpoint_dots=checkpoint_dots, dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
  checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
  offload_dot_with_no_batch_dims=_offload("offload_dot_with_no_batch_dims"),
  save_anything_except_these_names=save_anything_except_these_names, save_any_names_but_these=save_any_names_but_these,
  save_only_these_names=save_only_these_names, save_from_both_policies=save_from_both_policies,
  save_and_offload_only_these_names=_offload("save_and_offload_only_these_names"))


# ---- checkpoint_name ------------------------------------------------------------------------------------------------

# a precompiled body (a backward call) is being traced: calls inside it are not precompiled again (tinygrad's codegen
# fails on a precompiled call nested in another: "attempting multiple stores")
_in_precompiled: ContextVar[bool] = ContextVar("tinyjax_in_precompiled", default=False)

# the named values of the checkpointed function being traced (innermost): node -> name
_names: ContextVar[dict[UOp, str] | None] = ContextVar("tinyjax_checkpoint_names", default=None)

def checkpoint_name(x, name: str):
  """jax.ad_checkpoint.checkpoint_name: x unchanged; inside a checkpointed function, policies can save it by name."""
  if (names := _names.get()) is not None:
    for leaf in tu.tree_leaves(x):
      if isinstance(leaf, Tensor): names[leaf.uop] = name
  return x


# ---- the call -------------------------------------------------------------------------------------------------------

def _dot_batch_dims(u: UOp) -> bool | None:
  """None if u is not a dot, else whether it has batch dimensions. tinygrad's matmul is REDUCE(ADD) of a (permuted) MUL
  of two operands broadcast against each other: a dot when a kept axis is broadcast in one operand and not the other (a
  sum of an elementwise product has none); a kept axis where both operands vary is a batch dimension."""
  if u.op is not Ops.REDUCE or u.arg[0] is not Ops.ADD: return None
  m, perm = u.src[0], None
  if m.op is Ops.PERMUTE: m, perm = m.src[0], m.marg
  if m.op is not Ops.MUL: return None
  nd = m.ndim
  a, b = ((1,) * (nd - len(s.shape)) + tuple(s.shape) for s in m.src)   # ALU ops broadcast right-aligned
  kept = [perm[j] if perm else j for j in range(u.arg[1], nd)]
  if not any((a[i] == 1) != (b[i] == 1) for i in kept): return None
  return any(a[i] != 1 and b[i] != 1 for i in kept)


@dataclass(eq=False)
class Remat(CallRule):
  """A checkpointed function as a call: `body` (outputs over PARAMs, one per argument) whose first `nout` outputs are
  the function's and the rest are values the policy saves. `precompile`: the body is scheduled on its own (a backward
  call: the recomputation) instead of inlined; `recompute`: reverse mode recomputes (False: prevent_cse=False, the
  backward is inlined and tinygrad may share it with the forward pass)."""
  name: str
  body: list[UOp]
  nout: int
  precompile: bool = False
  recompute: bool = True
  def node(self, body: list[UOp], args: list[UOp]) -> UOp: return custom_call(body, args, self, self.grad_fxn, self.precompile)

  def call_node(self, xs: list[Tensor]) -> UOp: return self.node(self.body, [x.uop for x in xs])

  def fun(self, xs: Sequence[Tensor]) -> list[Tensor]:
    """The body inlined on xs (every output, saved ones included)."""
    params = _params(self.body)
    return [Tensor(u) for u in substitute(self.body, {p: xs[p.arg.slot].uop for p in params})]

  def jvp(self, xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
    # forward mode sees through the checkpoint; the tangents are a checkpointed call too (linearize, then transpose)
    n = len(xs)
    def tangents(*a):
      ps = tuple(a[:n])
      return list(jvp(lambda *p: tuple(self.fun(p)), ps, tuple(_tangent(x, t) for x, t in zip(ps, a[n:], strict=True)))[1])
    return _call(f"{self.name}_jvp", tangents, xs + ts, self.precompile, self.recompute)

  def vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]:
    n, saved = len(xs), self.body[self.nout:]
    # the forward call's saved outputs (call_node gives the same node: UOps are hash-consed)
    res = [Tensor(self.call_node(xs).gettuple(self.nout + i)) for i in range(len(saved))] if saved else []
    def backward(*a):
      ps, rs, cs = a[:n], a[n:n + len(saved)], a[n + len(saved):]
      outs, pull = vjp(lambda *p: tuple(self.fun(p)[:self.nout]), *ps)
      g = [t.uop for t in pull(tuple(_cotangent(o, c) for o, c in zip(outs, cs, strict=True)))]
      if not saved: return g
      # the backward reads the saved values where it would recompute them
      here = substitute(saved, {p: ps[p.arg.slot].uop for p in _params(self.body)})
      return substitute(g, dict(zip(here, [r.uop for r in rs], strict=True)))
    grads = _call(f"{self.name}_bwd", lambda *a: [Tensor(u) for u in backward(*a)], xs + res + cts[:self.nout],
                  self.recompute, self.recompute)
    return [g if dtypes.is_float(x.dtype) else None for x, g in zip(xs, grads, strict=True)]

  def batched(self, flags: list[int | None], size: int) -> CallRule:
    fl = tuple(flags)
    def make(xs: list[Tensor]) -> list[UOp]:
      f = vmap(lambda *a: tuple(self.fun(a)), in_axes=fl, axis_size=size)
      return _node(self.name, lambda *a: list(f(*a)), xs, self.nout, self.precompile, self.recompute)
    return BatchedCall(self.name, make)


def _params(body: list[UOp]) -> list[UOp]:
  return sorted({u for u in UOp.sink(*body).toposort(enter_calls=False) if u.op is Ops.PARAM}, key=lambda p: p.arg.slot)

def _tangent(x: Tensor, t: Tensor) -> Tensor:
  return t if dtypes.is_float(x.dtype) else x.zeros_like()

def _cotangent(o: Tensor, c: Tensor) -> Tensor:
  return c if dtypes.is_float(o.dtype) else o.zeros_like()

def _constants(xs: list[Tensor]) -> dict[int, Tensor]:
  """The arguments that are constants (a unit or zero cotangent, a zero tangent; tinygrad fills a constant cotangent
  into a buffer before calling a rule): put into the body instead of passed, so the body knows them."""
  out = {}
  for i, x in enumerate(xs):
    if const_value(u := unfilled(x.uop)) is not None and u.shape == x.uop.shape: out[i] = Tensor(u)
  return out

def _node(name: str, f: Callable, xs: list[Tensor], nout: int | None, precompile: bool, recompute: bool,
          policy: Callable | None = None) -> list[UOp]:
  """The outputs of a call of f (Tensors -> list) on xs: f traced on PARAMs of fresh slots, in a scope of its own
  (reading one is an error, as in JAX, whose checkpoint traces abstractly), the values it closes over hoisted into
  arguments: all of them differentiable (a checkpoint, unlike a custom rule, differentiates what it closes over).
  Constant arguments go into the body. nout None: every output is the function's (no policy).
  A precompiled call takes and returns flat arrays: tinygrad 0.14 takes a PARAM of shape (a, b, 4) for an image inside a
  precompiled body and gives its loads dtype float32 (`UOp.dtype` of INDEX): float64 arguments of that shape fail."""
  consts = _constants(xs)
  live = [x for i, x in enumerate(xs) if i not in consts]
  precompile = precompile and not _in_precompiled.get()
  flat = [x.reshape(-1) if precompile else x for x in live]
  tmp = [param_like(x.uop, new_slot()) for x in flat]
  it = iter(tmp)
  names: dict[UOp, str] = {}
  token, token2 = _names.set(names), _in_precompiled.set(precompile or _in_precompiled.get())
  try:
    with trace_scope("checkpoint", tmp):
      ins = [consts[i] if i in consts else Tensor(next(it)).reshape(x.shape) for i, x in enumerate(xs)]
      res = [as_tensor(o) for o in f(*ins)]
  finally:
    _names.reset(token)
    _in_precompiled.reset(token2)
  shapes = [o.shape for o in res]
  outs = [o.reshape(-1).uop if precompile else o.uop for o in res]
  saved = _saved(outs, tmp, names, policy) if policy is not None else []
  hidden = closure(outs + saved, set(tmp))
  args = [x.uop for x in flat] + hidden
  params = [param_like(a, i) for i, a in enumerate(args)]
  body = substitute(outs + saved, dict(zip(tmp + hidden, params, strict=True)))
  fn = Remat(name, body, len(outs) if nout is None else nout, precompile, recompute).node(body, args)
  return [fn.gettuple(i).reshape(s) if precompile else fn.gettuple(i) for i, s in enumerate(shapes)] + \
    [fn.gettuple(len(outs) + i) for i in range(len(saved))]

def _call(name: str, f: Callable, xs: list[Tensor], precompile: bool, recompute: bool) -> list[Tensor]:
  return [Tensor(u) for u in _node(name, f, xs, None, precompile, recompute)]

def _saved(outs: list[UOp], inputs: list[UOp], names: dict[UOp, str], policy: Callable) -> list[UOp]:
  """The values of the body the policy saves: named values and dots, among those that depend on the inputs (the others
  are constants of the body) and are not the inputs or the outputs themselves."""
  dep, out, skip = set(inputs), [], set(inputs) | set(outs)
  for u in UOp.sink(*outs).toposort(enter_calls=False):
    if u.op is Ops.SINK or u in dep: continue
    if not any(s in dep for s in u.src): continue
    dep.add(u)
    if u in skip or not dtypes.is_float(u.dtype): continue
    save = u in names and bool(policy(name_p, name=names[u]))
    if not save and (b := _dot_batch_dims(u)) is not None: save = bool(policy(dot_general_p, batch_dims=b))
    if save: out.append(u)
  return out


# ---- the API --------------------------------------------------------------------------------------------------------

def _static_argnums(static_argnums, nargs: int) -> frozenset[int]:
  """JAX's checks of static_argnums against the call's arguments."""
  if type(static_argnums) is int: static_argnums = (static_argnums,)
  elif not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
    raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must be an int, tuple of ints or, "
                    f"bool, but got value {static_argnums}")
  if not all(-nargs <= d < nargs for d in static_argnums):
    raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can only take integer values "
                     f"greater than or equal to `-len(args)` and less than `len(args)`, but got {static_argnums}, while "
                     f"`len(args)` = {nargs}")
  return frozenset(d % nargs for d in static_argnums)

def checkpoint(fun: Callable, *, prevent_cse: bool | Sequence[bool] = True, policy: Callable[..., bool] | None = None,
               static_argnums: int | tuple[int, ...] = (), static_argnames: str | Iterable[str] = ()) -> Callable:
  """jax.checkpoint (jax.remat): fun with the same values, whose reverse mode recomputes fun's intermediates from its
  inputs (and the values `policy` saves) instead of keeping them from the forward pass. prevent_cse=False lets
  tinygrad share the recomputation with the forward pass (the backward is inlined: no memory saved, no recompute)."""
  if isinstance(prevent_cse, Sequence): prevent_cse = tuple(prevent_cse)
  if not isinstance(prevent_cse, (tuple, bool)):
    raise TypeError(f"prevent_cse must be a bool or tuple of bools, got {type(prevent_cse)=}")
  recompute = any(tu.tree_leaves(prevent_cse)) if isinstance(prevent_cse, tuple) else prevent_cse
  argnames = frozenset((static_argnames,) if isinstance(static_argnames, str) else static_argnames)
  if policy is not None and not callable(policy): raise TypeError(f"checkpoint policy must be callable, got {policy!r}")
  name = getattr(fun, "__name__", "checkpoint")

  @functools.wraps(fun)
  def fun_remat(*args, **kwargs):
    static = _static_argnums(static_argnums, len(args))
    if policy is everything_saveable: return fun(*args, **kwargs)   # no checkpoint at all
    dyn = ([a for i, a in enumerate(args) if i not in static], {k: v for k, v in kwargs.items() if k not in argnames})
    leaves, tree = tu.tree_flatten(dyn)
    pos = [i for i, l in enumerate(leaves) if is_array(l)]
    xs = [as_tensor(leaves[i]) for i in pos]
    # weakly typed values (Python scalars, `t + 0.25`) pass the call stored at their width and stay weak on both
    # sides, as in JAX (a weak result of a jitted step passed back to it has the same signature)
    weak = [weak_dtype_of(leaves[i]) for i in pos]
    xs = [x if w is None else x.cast(weak_storage_dtype(w)) for x, w in zip(xs, weak, strict=True)]
    box: dict[str, Any] = {}
    def flat(*ts):
      full = list(leaves)
      for i, t, w in zip(pos, ts, weak, strict=True): full[i] = t if w is None else t.cast(w)
      a, k = tu.tree_unflatten(tree, full)
      it = iter(a)
      a = [args[i] if i in static else next(it) for i in range(len(args))]
      out_leaves, box["tree"] = tu.tree_flatten(fun(*a, **k, **{n: v for n, v in kwargs.items() if n in argnames}))
      box["n"], box["weak"] = len(out_leaves), [weak_dtype_of(o) for o in out_leaves]
      return [o if w is None else as_tensor(o).cast(weak_storage_dtype(w)) for o, w in zip(out_leaves, box["weak"], strict=True)]
    outs = _node(name, flat, xs, None, False, recompute, policy)
    return tu.tree_unflatten(box["tree"], [Tensor(u) if w is None else Tensor(u).cast(w)
                                           for u, w in zip(outs[:box["n"]], box["weak"], strict=True)])
  return fun_remat

def remat(fun: Callable, *, prevent_cse: bool = True, policy: Callable[..., bool] | None = None,
          static_argnums: int | tuple[int, ...] = ()) -> Callable:
  """Alias of checkpoint."""
  return checkpoint(fun, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)

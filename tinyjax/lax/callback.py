"""Host callbacks (JAX's jax/_src/callback.py and debugging.py): pure_callback, io_callback, debug.callback, debug.print.

A callback is a host call (`lax.host_call`) whose executor reads its arguments' buffers into numpy arrays, calls the
Python function and writes its results into the output buffers, when tinygrad runs the node: eagerly, at each replay of a
jit, at each step of a loop. Its rule gives JAX's transforms: under vmap per example ("sequential", io and debug
callbacks: one call per example, the first vmap's axis the outer loop, as JAX's nested batching rules unroll) or
vectorized (`vmap_method` "expand_dims", "broadcast_all", "legacy_vectorized": one call on the batched arrays); no
derivative (pure and io callbacks raise JAX's ValueError; a debug callback sees the primal values). Effectful callbacks
(io, debug) have a token output that `host_call.emit` keeps alive and orders (see there).

Outside any transform and jit a callback is called at once, as JAX's eager dispatch does. The callback receives numpy
arrays (JAX passes jax.Arrays on the CPU): printing them gives JAX's text, and a callback that calls numpy on them works.
"""
from __future__ import annotations
import dataclasses, itertools, string, sys, weakref
from dataclasses import dataclass
from typing import Any, Callable
import numpy as np
from tinyjax._tg import Tensor, DType, dtypes, np_dtype, np_dtype_of, read_array, write_array, host_buffer, default_device, jit_capturing
from tinyjax.core import as_tensor, is_array, trace_state, perturbed, fill_like
from tinyjax.dtypes import canonical_dtype
from tinyjax.call_rule import CallRule, BatchedCall, is_zero
from tinyjax.lax.host_call import Type, HostCallRule, emit, first_token
from tinyjax import pytree as tu

__all__ = ["Callback", "pure_callback", "io_callback", "debug_callback", "debug_print", "effects_barrier"]

_VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized", None]
_VECTORIZED = ("expand_dims", "broadcast_all", "legacy_vectorized")


@dataclass(eq=False)
class Callback(HostCallRule):
  """fn(flat numpy arguments) -> flat numpy results, called on the host. Arguments: the data, then (with `token`) the
  previous effect's token; outputs: `results`, then (with `token`) this effect's token."""
  fn: Callable[[list[np.ndarray]], list[np.ndarray]]
  ident: tuple                  # what fn computes (the step cache's key): an id per callable, a print's format
  results: tuple[Type, ...]     # the outputs' types (batched ones once batched)
  base: tuple[Type, ...]        # the types one call of fn returns
  kind: str                     # "pure", "io" or "debug"
  ordered: bool = False
  vmap_method: str | None = None
  token: bool = False
  levels: tuple = ()            # per-example batching, first vmap first: ((batched? per argument), size)

  @property
  def name(self) -> str: return f"{self.kind}_callback"   # type: ignore[override]
  @property
  def effectful(self) -> bool: return self.token
  def content_key(self) -> tuple:
    return ("callback", self.ident, self.results, self.base, self.kind, self.ordered, self.vmap_method, self.token, self.levels)
  def out_types(self, xs): return list(self.results)

  def executor(self, ins: list[Type], outs: list[Type]):
    n = len(ins) - self.token
    def run(bufs) -> None:
      o, i = bufs[:len(outs)], bufs[len(outs):]
      vals = [read_array(b, s) for b, (s, _) in zip(i[:n], ins[:n], strict=True)]
      for b, r in zip(o, self.apply(vals), strict=True): write_array(b, r)
    return run

  def apply(self, vals: list[np.ndarray], k: int = 0) -> list[np.ndarray]:
    """fn on these arguments, once per example of the batching levels from k on (level k the outer loop)."""
    if k == len(self.levels): return _checked(self.fn(vals), self.base)
    flags, size = self.levels[k]
    later = self.levels[k + 1:]
    # a level's axis in an argument: one per later level that batched it (each vmap puts its axis first)
    axes = [sum(bool(lv[0][a]) for lv in later) if f else None for a, f in enumerate(flags)]
    def at(j: int) -> list[np.ndarray]: return [v if ax is None else np.asarray(np.take(v, j, axis=ax)) for v, ax in zip(vals, axes, strict=True)]
    per = [self.apply(at(j), k + 1) for j in range(size)]
    return [np.stack(rs, axis=len(later)) for rs in zip(*per, strict=True)] if per else \
      [np.empty(s, np_dtype(d)) for s, d in self.results]

  def _no_derivative(self) -> None:
    if self.kind == "pure":
      raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking gradients.")
    if self.kind == "io": raise ValueError("IO callbacks do not support JVP.")

  def jvp(self, xs, ts):
    if any(not is_zero(t) for x, t in zip(xs, ts, strict=True) if dtypes.is_float(x.dtype)): self._no_derivative()
    return [fill_like(t, 0) for t in self.call(xs)] if self.kind != "debug" else [None] * (len(self.results) + self.token)

  def vjp(self, xs, cts):
    # tinygrad asks a call on the path to the inputs for its cotangents also when the path is cut (stop_gradient): JAX
    # raises only when a derivative flows into the callback
    seeds = {p for name, phs in trace_state().active if name in ("vjp", "jvp") for p in phs}
    floats = [x.uop for x in xs if dtypes.is_float(x.dtype)]
    if self.kind != "debug" and not perturbed(floats, seeds).isdisjoint(floats): self._no_derivative()
    return [None] * len(xs)

  def batched(self, flags: list[int | None], size: int) -> CallRule:
    n = len(flags) - self.token
    if self.kind == "io" and self.ordered: raise ValueError("Cannot `vmap` ordered IO callback.")
    method = self.vmap_method if self.kind == "pure" else "sequential"
    if method not in _VMAP_METHODS[:-1]:
      raise NotImplementedError("vmap is only supported for the pure_callback primitive when vmap_method is one of 'sequential', "
                                f"'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. Got vmap_method={method}.")
    results = tuple(((size,) + s, d) for s, d in self.results)
    if method in _VECTORIZED:   # one call on the batched arrays; unbatched ones get an axis of 1 or of the batch, or none
      rule = dataclasses.replace(self, results=results, base=results)
      def vectorized(xs: list[Tensor]):
        def arg(x: Tensor, f: int | None) -> Tensor:
          if f is not None or method == "legacy_vectorized": return x
          return x.unsqueeze(0) if method == "expand_dims" else x.unsqueeze(0).expand(size, *x.shape)
        return rule.call_node([arg(x, f) for x, f in zip(xs[:n], flags[:n], strict=True)] + xs[n:])
      return BatchedCall(self.name, vectorized)
    rule = dataclasses.replace(self, results=results, levels=self.levels + ((tuple(f is not None for f in flags[:n]), size),))
    return BatchedCall(self.name, rule.call_node)


def _checked(out: list, types: tuple[Type, ...]) -> list[np.ndarray]:
  """The callback's results as numpy arrays, with JAX's errors for a wrong shape or dtype."""
  res = [np.asarray(o) for o in out]
  if len(res) != len(types):
    raise RuntimeError(f"Callback returned {len(res)} values, expected {len(types)} (the leaves of result_shape_dtypes)")
  for i, (r, (s, d)) in enumerate(zip(res, types, strict=True)):
    if r.shape != s: raise RuntimeError(f"Incorrect output shape for return value #{i}: Expected: {s}, Actual: {r.shape}")
    if r.dtype != np_dtype(d): raise RuntimeError(f"Incorrect output dtype for return value #{i}: Expected: {np_dtype(d)}, Actual: {r.dtype}")
  return res


# ---- building the call ------------------------------------------------------------------------------------------------

_serials: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_counter = itertools.count()

def _serial(obj) -> Any:
  """A key for what obj is: its value for plain data, a number per object otherwise (kept while the object lives)."""
  if obj is None or isinstance(obj, (str, int, float, bool)): return obj
  try: return ("obj", _serials.setdefault(obj, next(_counter)))
  except TypeError: return ("obj", next(_counter))   # not weakly referenceable: never found again (compiled anew)

def _eager() -> bool:
  s = trace_state()
  return not s.active and not s.running_jit and not jit_capturing()

def _split_args(args: tuple, kwargs: dict):
  """JAX's _split_callback_args: (tree, array leaves as Tensors, {position: static leaf})."""
  leaves, tree = tu.tree_flatten((args, kwargs))
  dyn, static = [], {}
  for i, leaf in enumerate(leaves):
    if is_array(leaf): dyn.append(as_tensor(leaf))
    else: static[i] = leaf
  return tree, dyn, static

def _merge(tree, dyn: list, static: dict) -> tuple[tuple, dict]:
  it = iter(dyn)
  return tu.tree_unflatten(tree, [static[i] if i in static else next(it) for i in range(len(dyn) + len(static))])

def _host(t: Tensor) -> np.ndarray:
  return np.asarray(t.numpy())

def _tensor(a: np.ndarray) -> Tensor:
  out = host_buffer(a, default_device())
  return out if out is not None else Tensor(a)

def _call(rule: Callback, xs: list[Tensor]) -> list[Tensor]:
  """The results of the callback on xs: at once outside any trace, else a node (an effectful one emitted)."""
  if _eager(): return [_tensor(r) for r in rule.apply([_host(x) for x in xs])]
  if not rule.token: return CallRule.call(rule, xs)
  box: list[Tensor] = []
  def make(token: Tensor | None) -> Tensor:
    # the first effect of its sink comes after nothing: a constant token
    fn = rule.call_node(xs + [token if token is not None else first_token()])
    box.extend(Tensor(fn.gettuple(i)) for i in range(len(rule.results)))
    return Tensor(fn.gettuple(len(rule.results)))
  emit(make)
  return box

def _result_types(result_shape_dtypes) -> tuple[list[Type], Any]:
  leaves, tree = tu.tree_flatten(result_shape_dtypes)
  types = []
  for leaf in leaves:
    d = leaf.dtype   # as given (dtype_of narrows 64-bit types with x64 off)
    dt = d if isinstance(d, DType) else getattr(d, "tinygrad_dtype", None) or np_dtype_of(np.empty(0, np.dtype(d)))
    if canonical_dtype(dt) != dt:
      raise ValueError("result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled")
    types.append((tuple(int(s) for s in leaf.shape), dt))
  return types, tree

def _result_callback(callback: Callable, tree, static: dict) -> Callable[[list[np.ndarray]], list]:
  def fn(vals: list[np.ndarray]) -> list:
    a, k = _merge(tree, vals, static)
    return tu.tree_leaves(callback(*a, **k))
  return fn


# ---- the API ----------------------------------------------------------------------------------------------------------

def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any, sharding=None,
                  vmap_method: str | None = None, **kwargs: Any):
  """jax.pure_callback: callback(*args, **kwargs) on the host, returning arrays of `result_shape_dtypes` (a pytree of
  ShapeDtypeStruct-like leaves). Pure: it runs only if its results are used, under vmap as `vmap_method` says."""
  if vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {_VMAP_METHODS}, but got: {vmap_method}")
  if sharding is not None: raise NotImplementedError("tinyjax.pure_callback: sharding= (tinyjax runs callbacks on the host)")
  tree, dyn, static = _split_args(args, kwargs)
  types, out_tree = _result_types(result_shape_dtypes)
  rule = Callback(_result_callback(callback, tree, static), (_serial(callback), str(tree), tuple(map(_serial, static.values()))),
                  tuple(types), tuple(types), "pure", vmap_method=vmap_method)
  return tu.tree_unflatten(out_tree, _call(rule, dyn))

def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any, sharding=None, ordered: bool = False,
                **kwargs: Any):
  """jax.experimental.io_callback: an impure callback, run where the code runs (even if its results are unused), in
  program order with the other callbacks."""
  if sharding is not None: raise NotImplementedError("tinyjax.io_callback: sharding= (tinyjax runs callbacks on the host)")
  tree, dyn, static = _split_args(args, kwargs)
  types, out_tree = _result_types(result_shape_dtypes)
  rule = Callback(_result_callback(callback, tree, static), (_serial(callback), str(tree), tuple(map(_serial, static.values()))),
                  tuple(types), tuple(types), "io", ordered=ordered, token=True)
  return tu.tree_unflatten(out_tree, _call(rule, dyn))

def debug_callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
                   **kwargs: Any):
  """jax.debug.callback: callback(*args, **kwargs) on the host for its effect; the two-call form
  `debug.callback(ordered=True)(callback, *args)` too."""
  def run(cb: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
    if not callable(cb):
      raise TypeError(f"first argument to jax.debug.callback must be callable, but got an object of type {type(cb)}")
    tree, dyn, static = _split_args(c_args, c_kwargs)
    def fn(vals: list[np.ndarray]) -> list:
      a, k = _merge(tree, vals, static)
      cb(*a, **k)
      return []
    _call(Callback(fn, (_serial(cb), str(tree), tuple(map(_serial, static.values()))), (), (), "debug", ordered=ordered, token=True), dyn)
  if callback is not None:
    run(callback, *args, **kwargs)
    return None
  if args or kwargs: raise TypeError(f"debug_callback received unexpected arguments in the two-call form: {args=} {kwargs=}")
  return run


class _FormatChecker(string.Formatter):
  """JAX's check of debug.print's arguments against its format string."""
  def format_field(self, value, format_spec): return ""
  def check_unused_args(self, used_args, args, kwargs):
    if unused := [a for i, a in enumerate(args) if i not in used_args]:
      raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
    if unused_kw := [k for k in kwargs if k not in used_args]:
      raise ValueError(f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be passing an f-string (i.e, "
                       "`f\"{x}\"`) into `jax.debug.print` and instead should pass in a regular string.")

def debug_print(fmt: str | None = None, *args, ordered: bool = False, partitioned: bool = False, skip_format_check: bool = False,
                **kwargs):
  """jax.debug.print: prints `fmt.format(*args, **kwargs)` where the code runs (at each call of a jitted function, each
  step of a loop, per example under vmap, with the primal values under grad); the two-call form too."""
  def run(fmt: str, *c_args, **c_kwargs) -> None:
    if not skip_format_check: _FormatChecker().format(fmt, *c_args, **c_kwargs)
    has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
    tree, dyn, static = _split_args(c_args, c_kwargs)
    options = tuple((k, v) for k, v in np.get_printoptions().items() if isinstance(v, (int, float, str, bool, type(None))))
    def fn(vals: list[np.ndarray]) -> list:
      a, k = _merge(tree, vals, static)
      if has_placeholders:
        with np.printoptions(**dict(options)): msg = fmt.format(*a, **k)   # type: ignore[arg-type]
      else: msg = " ".join((fmt, *(str(x) for x in a)))
      sys.stdout.write(msg + "\n")
      return []
    ident = ("print", fmt, str(tree), tuple(map(_serial, static.values())), options, has_placeholders)
    _call(Callback(fn, ident, (), (), "debug", ordered=ordered, token=True), dyn)
  if fmt is not None:
    run(fmt, *args, **kwargs)
    return None
  if args or kwargs: raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
  return run

def effects_barrier() -> None:
  """jax.effects_barrier: wait until every effect issued so far has run. tinyjax runs callbacks synchronously, as part
  of the realize or jit call that issued them: nothing is pending when this is called."""
  return None

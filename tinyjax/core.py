"""What every transform shares: the trace state, tracing on placeholders, the interpreter over the traced graph with a
per-transform rule table, JAX's input conventions (`as_tensor`) and JAX's derivative conventions (`jax_conventions`).

Every transform traces the user function on placeholders (`trace_flat`), then calls `interpret`: a topological walk
over the traced graph in which only the nodes that depend on the transform's sources go through its rule, memoised in
`env`. Nodes that do not depend on them (constants, closed-over weights) stay as they are. At the end `substitute`
puts the real inputs in place of the placeholders.
"""
from __future__ import annotations
import collections, functools, operator, weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax import _tg
from tinyjax._tg import Tensor, UOp, Ops, DType, dtypes, placeholder
from tinyjax.errors import no_rule, ConcretizationTypeError, UnexpectedTracerError, TracerArrayConversionError
from tinyjax import pytree as tu, primitives
from tinyjax.dtypes import canonical_array, weak_storage_dtype, type_str   # noqa: F401  (type_str: core's name for it)

# ---- trace state ------------------------------------------------------------------------------------------------------
# While a transform traces a user function, its placeholders stand for values that do not exist yet. Reading one
# (.numpy(), .item(), .tolist(), .data(), .realize(), bool()) must fail with a clear error, not compute on the garbage in
# an unallocated buffer. Values that do not depend on a placeholder (closed-over weights) can still be read, as in JAX.

class TracedMarker:
  """Base of marker args (collectives) that stand for traced values inside a transform."""

@dataclass
class TraceState:
  """One thread's (context's) tracing: the transforms being traced and the vmap axes in scope, innermost last."""
  active: list[tuple[str, frozenset[UOp]]] = field(default_factory=list)   # (transform name, its placeholders)
  axes: list = field(default_factory=list)                                   # vmap Axis objects (collectives' names)
  running_jit: list = field(default_factory=list)                            # jitted functions executing
  values: dict = field(default_factory=dict)   # placeholder -> the value it stands for, where the inputs are concrete

_state: ContextVar[TraceState | None] = ContextVar("tinyjax_trace", default=None)

def trace_state() -> TraceState:
  if (s := _state.get()) is None: _state.set(s := TraceState())
  return s

def serialized(fn: Callable) -> Callable:
  """A transform's entry point: one thread at a time works with tinygrad (see _tg.TINYGRAD_LOCK); re-entrant, so
  transforms nest."""
  @functools.wraps(fn)
  def locked(*args, **kwargs):
    with _tg.TINYGRAD_LOCK: return fn(*args, **kwargs)
  return locked

def transform_entry(fn: Callable) -> Callable:
  """A transform's entry point (`serialized`). Called outside any trace and jit, it first computes the values pending
  in live Tensors, so that state an eager loop carries in Python variables (parameters, an optimizer's moments, keys)
  is a buffer, never a graph that grows with the iterations; its results stay lazy, to fuse with what reads them, and
  are computed when read or when the next transform starts. `_tg.realize_lazy` computes them (compiled programs found
  again by the graphs' structure). Inside a trace or a jit it is the transform alone."""
  @functools.wraps(fn)
  def entry(*args, **kwargs):
    with _tg.TINYGRAD_LOCK:
      if at_top_level(): realize_pending()
      return fn(*args, **kwargs)
  return entry

def at_top_level() -> bool:
  """Outside every trace and jit: what is computed now is an eager value."""
  s = trace_state()
  return not (s.active or s.running_jit or _tg.jit_capturing())

# Lazy values `realize_pending` tried and left lazy (their computation raised: a graph a failed call left behind; or it
# leaves them as they are: graphs over placeholders, a realized sharded value's view): not tried again at every
# transform, each try a pass through tinygrad's scheduler that counted as the transform's own. They are computed when
# read, or raise then.
_left_lazy: weakref.WeakSet[UOp] = weakref.WeakSet()

def realize_pending() -> None:
  """Compute every live Tensor that is a lazy computation (not traced values: they have no data)."""
  # (not device-less constants nor empty arrays: nothing to compute, they stay lazy, and would be sent to tinygrad's
  # scheduler again at every transform, each time with other pending values: a new schedule each time)
  pending = [t for t in _tg.live_tensors() if _tg.is_lazy(t) and t.device is not None and 0 not in t.shape
             and t.uop not in _left_lazy and traced_by(t) is None]   # (traced_by last: a walk of t's graph)
  try: _tg.realize_lazy(pending, early=True)
  except Exception:
    # one of them cannot be computed: the others are, that one stays as it is
    for t in pending:
      try: _tg.realize_lazy([t], early=True)
      except Exception: continue
  _left_lazy.update(t.uop for t in pending if _tg.is_lazy(t))

def is_tracing() -> bool:
  """True inside a function being traced by a tinyjax transform (its Tensors may be placeholders)."""
  return bool(trace_state().active)

# Every node that stands for a traced value (the placeholders of trace scopes and vmapin, collective markers) is
# remembered weakly: it leaves the set when no graph refers to it any more, so the set stays as small as the traced
# values still reachable, and a read costs nothing once they are gone. A remembered node that belongs to no active
# transform is a leak: a Tensor that escaped its transform (stored in a list or a global, assigned to a buffer)
# and whose data never existed; reading it raises UnexpectedTracerError, as in JAX.
traced_nodes: weakref.WeakSet[UOp] = weakref.WeakSet()
pending: weakref.WeakSet[UOp] = weakref.WeakSet()   # placeholders of tinyjax.vmapin calls whose vmapout has not run yet

def enclosing_inputs() -> set[UOp]:
  """The nodes that stand for the inputs of enclosing transforms (their placeholders) and of a running jit (this
  run's input buffers): a function returned out of them (vjp's pullback) must carry what it reads of them as residuals."""
  s = trace_state()
  return set().union(*(phs for _, phs in s.active), *(getattr(e, "inputs", ()) for e in s.running_jit))

def remember_traced(*uops: UOp) -> None:
  # a placeholder's buffer too (one with no data): a graph may hold it bare (a memoised gradient called on it)
  traced_nodes.update(uops)
  traced_nodes.update(u.base for u in uops if u.base is not u and _tg.is_placeholder_buffer(u.base))

def forget_traced(uops) -> None:
  """Placeholders that only a cache's graphs keep, always substituted before use (a structural custom call's build):
  no leaked value. Remembered, they kept every later eager read from the fast path of `traced_by` (a walk of each
  value's graph: an eager Adam iteration 10 -> 17 ms once many builds were cached)."""
  for u in uops:
    traced_nodes.discard(u)
    traced_nodes.discard(u.base)

class trace_scope:
  """`with trace_scope("vmap", placeholders):` marks the placeholders as traced values of that transform. `values`:
  placeholder -> the input it stands for, for a differentiating transform called outside jit and vmap (its inputs are
  concrete, as JAX's JVP tracers carry concrete primals: see `concrete_stand_in`)."""
  def __init__(self, transform: str, placeholders, values: dict[UOp, UOp] | None = None):
    self.entry, self.values = (transform, frozenset(placeholders)), values or {}
    remember_traced(*self.entry[1])
  def __enter__(self):
    s = trace_state()
    s.active.append(self.entry)
    s.values.update(self.values)
  def __exit__(self, *exc):
    s = trace_state()
    s.active.remove(self.entry)
    for ph in self.values: s.values.pop(ph, None)
    if not s.active: _perturbation.clear()   # (its keys hold placeholders: they would stay traced nodes)

def traced_by(t: Tensor) -> str | None:
  """Name of the innermost active transform whose placeholders (or markers) `t` depends on, "leaked" for a traced
  value whose transform has ended, or None."""
  if not traced_nodes and not pending: return None
  active = trace_state().active
  deps = t.uop.toposort()
  for name, phs in reversed(active):
    if any(p in deps or p.base in deps for p in phs): return name
  if pending and any(p in deps for p in pending): return "vmap"
  if any(u.op is Ops.CUSTOM and isinstance(u.arg, TracedMarker) for u in deps): return "vmap" if active else "leaked"
  if any(u in traced_nodes for u in deps): return "leaked"
  return None

def _check_read(method: str, tensors: Sequence[Tensor]) -> list[Tensor]:
  """Raise for a read of a traced value. `realize` of a value traced by jit's abstract trace is no read: it has no data
  yet and needs none (an optimizer's step realizes the parameters it updates); those are returned, to be left alone."""
  # a composite's body is built on placeholders, which have no data: a function that reads a value is called as it is
  # (its read there gave the placeholder's unwritten buffer: `jnp.repeat(x, Tensor(r))` repeated by zeros, silently)
  if composite._on_placeholders and method != "realize":
    raise ConcretizationTypeError("composite", method, tensors[0] if tensors else None)
  active = trace_state().active
  # jit's abstract trace realizes nothing: a realize there would run the function's side effects for real (an
  # optimizer's step count), which the trace then undoes in the graphs but not in the buffers (also when the function
  # takes no arguments, and so no placeholders). A read of data (numpy(), item()) of a value that depends on no
  # argument computes it (JAX would raise: it stages the value), unless computing it writes state or runs a host call:
  # that raises. (Skipped, such reads used to give unwritten buffers: zeros.)
  if active and active[-1][0] == "jit":
    if method == "realize" and not _tg.in_read(): return list(tensors)
    if method != "realize" and (effects := [t for t in tensors if _tg.has_effects(t.uop)]) and traced_by(effects[0]) is None:
      raise ConcretizationTypeError("jit", method, effects[0])
  if not traced_nodes and not pending: return []
  skip = []
  for t in tensors:
    if (name := traced_by(t)) is not None:
      name = _concrete(method, t)[1] or name   # an enclosing jit or vmap is what keeps it abstract
      if name == "jit" and method == "realize":
        skip.append(t)
        continue
      if name == "leaked": raise UnexpectedTracerError(method)
      raise TracerArrayConversionError(name, t) if method == "__array__" else ConcretizationTypeError(name, method, t)
  return skip

_tg.add_read_check(_check_read)

def perturbed(roots: list[UOp], seeds: set[UOp]) -> set[UOp]:
  """The roots with a derivative with respect to seeds, as the jvp interpreter sees them (zero-derivative ops, DETACH
  and non-float values end it). Memoised per seed set (the nodes are immutable): a trace asks this at every custom call
  about its arguments' graphs, which grow with the trace (a walk of each was quadratic in a deep circuit's trace)."""
  key = frozenset(seeds)
  if (memo := _perturbation.get(key)) is None:
    memo = _perturbation[key] = weakref.WeakKeyDictionary()
    if len(_perturbation) > 8: _perturbation.popitem(last=False)
  else: _perturbation.move_to_end(key)
  for u in UOp.sink(*roots).toposort(gate=lambda x: x not in memo, enter_calls=False):
    if u in seeds: memo[u] = True
    elif u.op is Ops.FUNCTION:
      args = u.src[1:] if (rule := _tg.custom_rule_of(u)) is None else rule.derivative_args(u)
      memo[u] = any(memo.get(s, False) for s in args)
    else: memo[u] = dtypes.is_float(u.dtype) and u.op not in ZERO_DERIVATIVE and any(memo.get(s, False) for s in operands(u))
  return {r for r in roots if memo.get(r, False)}

_perturbation: collections.OrderedDict[frozenset, weakref.WeakKeyDictionary[UOp, bool]] = collections.OrderedDict()

def _concrete(method: str, t: Tensor) -> tuple[UOp | None, str | None]:
  """(t's graph computed from concrete inputs, or None; the transform that keeps it abstract, if that is an enclosing
  jit or vmap). See `_concrete_stand_in`."""
  s = trace_state()
  if not s.values: return None, None
  deps = t.uop.toposort()
  traced = [u for _, phs in s.active for u in phs if u in deps]
  if not traced or not any(u in s.values for u in traced): return None, None
  # JAX reads .item() and int() from the primal; float(), bool(), tolist(), numpy of a differentiated value raise
  if method not in ("item", "__int__") and t.uop in perturbed([t.uop], {u for u in traced if u in s.values}): return None, None
  u = t.uop
  for _ in range(len(s.active)):   # nested transforms: an inner placeholder stands for an outer one
    if not (subs := {p: v for p, v in s.values.items() if p in u.toposort()}): break
    u = u.substitute(subs)
  return (u, None) if (name := traced_by(Tensor(u))) is None else (None, name)

def _concrete_stand_in(method: str, t: Tensor) -> Tensor | None:
  """JAX's eager derivatives: outside jit and vmap, grad/jvp/vjp (and what is built on them) trace on placeholders
  that stand for concrete inputs, so a value the derivative does not flow through (a comparison for `if x > 0:`,
  floor, stop_gradient) reads as in JAX, computed from those inputs; so do `.item()` and `int()` of any of them, which
  JAX reads from the primal too. `float()`, `bool()`, numpy conversion of a differentiated value still raise."""
  u, _ = _concrete(method, t)
  return None if u is None else Tensor(u)

_tg.add_concrete_stand_in(_concrete_stand_in)

# ---- JAX's input conventions ----------------------------------------------------------------------------------------

def is_array(x) -> bool: return isinstance(x, (Tensor, np.ndarray, np.generic, bool, int, float))

def as_tensor(x, like: Tensor | DType | None = None) -> Tensor:
  """JAX accepts numpy arrays and Python/numpy scalars wherever it accepts arrays; so does tinyjax, with JAX's dtypes
  (`canonical_array`). A tinygrad Tensor keeps its dtype; a weakly typed one (tinygrad's Tensor(2.0)) gets a concrete
  dtype: `like`'s (a Tensor's, or a dtype) if given, as JAX's weak types do."""
  like = like.dtype if isinstance(like, Tensor) else like
  if isinstance(x, Tensor):
    return x.cast(like if like is not None else weak_storage_dtype(x.dtype)) if x.dtype in dtypes.weaks else x
  if isinstance(x, (np.ndarray, np.generic, bool, int, float)):
    a = canonical_array(x)
    if like is not None and isinstance(x, (int, float)) and dtypes.is_float(like): return Tensor(a).cast(like)  # weak
    return Tensor(a)
  raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid Tensor type")

def eager_buffers() -> bool:
  """Values made now may be buffers of their own: at the top level, and not inside a composite's body (which must not
  read a buffer of its own)."""
  return at_top_level() and not composite._building

def fill(shape: tuple, value: Any, dtype: DType, device: Any = None) -> Tensor:
  """A constant array, as JAX's broadcast of a scalar. Under a trace or jit it has no buffer: it fuses into its users
  (a buffer would be a kernel of its own under jit, and a write that keeps a traced graph from being memoised). An
  eager fill is a value of its own, computed once, on `device` (not inside a composite's body: a buffer there would be
  an input of every call)."""
  if eager_buffers() and dtype not in dtypes.weaks: return Tensor.full(shape, value, dtype=dtype, device=device)
  return Tensor.full(shape, value, dtype=dtype, buffer=False)   # (a weak dtype has no storage: a constant too)

def fill_like(t: Tensor, value: Any, dtype: DType | None = None) -> Tensor:
  """`fill` of t's shape (and dtype, unless given); eagerly tinygrad's full_like (a sharded t gets a fill sharded
  as it is)."""
  dt = dtype or t.dtype
  return t.full_like(value, dtype=dt) if eager_buffers() and dt not in dtypes.weaks else fill(t.shape, value, dt)

# ---- axes -------------------------------------------------------------------------------------------------------------

def static_ints(x: Any) -> Any:
  """x with its numpy integers as Python ints, also inside tuples, lists and slices: JAX takes np.int64(3) wherever it
  takes 3 (a shape, an axis, a count, a slice bound), tinygrad's shape arithmetic only ints. Anything else is x."""
  if isinstance(x, np.integer): return int(x)
  if isinstance(x, (tuple, list)): return type(x)(static_ints(e) for e in x)
  if isinstance(x, slice): return slice(static_ints(x.start), static_ints(x.stop), static_ints(x.step))
  return x

def shape_ints(shape: Any) -> tuple[int, ...]:
  """A shape argument (an int or a sequence of them, Python or numpy) as Python ints; JAX's TypeError for anything else
  (a float)."""
  items = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
  try: return tuple(operator.index(s) for s in items)
  except TypeError: raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got {items}.") from None

def canonicalize_axis(axis: Any, ndim: int, err: type[Exception] = ValueError) -> int:
  """axis as a non-negative int, with JAX's error when it is out of range."""
  axis = operator.index(axis)
  if not -ndim <= axis < ndim: raise err(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim if ndim else axis

# ---- composite kernels ----------------------------------------------------------------------------------------------

class composite:
  """A kernel of many tinygrad ops (atan2, hypot, a complex product...) whose graph depends only on its arguments'
  shapes, dtypes and devices. Called eagerly, it is built once per such signature on placeholders, as the body of a
  tinygrad @function, and every call is one call node on that body: tinygrad's op construction (15-70 us an op, ~4 ms
  for atan2) is paid once, and its scheduler, its gradient and tinyjax's transforms inline the body, so the kernels and
  numbers are those of the ops. Under a trace or a jit the ops are built as they are (a jit traces once). The
  arguments and results are pytrees of Tensors (ComplexArrays: their parts); ints, bools, strings and dtypes are
  static (part of the signature); a Python float is an argument, as jit takes it (weakly typed: JAX's Python scalar),
  so a new value is no new body; any other leaf calls fn as it is.
  A composite that is the lowering of an elementwise `primitive` (tanh, erf, atan2, log1p...) is that primitive's call
  under a trace (`primitives.bind`), as JAX binds its primitives; any other one call of a custom function built once
  (`_traced_call`), unless `inline` (JAX's jit(inline=True)): a few ops, cheaper built than called (a contraction)."""
  _building = False
  _on_placeholders = False   # its function runs on the placeholders now (`_build`): a read of data raises
  # (fn, tree, leaves (ARG: a Tensor argument, else static), name) -> the function a trace calls: `tinyjax.custom` sets
  # it (a structural custom_jvp; that layer is built on this one)
  ARG = object()
  traced_function: Callable[..., Any] = staticmethod(lambda fn, tree, static, name: None)
  def __init__(self, fn: Callable, primitive: primitives.Primitive | None = None, inline: bool = False):
    functools.update_wrapper(self, fn)
    self.fn, self.name, self.bodies = fn, getattr(fn, "__name__", "composite"), dict[tuple, tuple[UOp, Any] | None]()
    self.primitive, self.inline, self.traced = primitive, inline, dict[tuple, Any]()

  def __call__(self, *args, **kwargs):
    # (inside a body being built, a primitive's or an eager composite's, it is its ops: no nested calls)
    if composite._building or primitives.lowering(): return self.fn(*args, **kwargs)
    if not at_top_level():
      if self.inline: return self.fn(*args, **kwargs)
      if self.primitive is not None and not kwargs and \
         all(isinstance(a, Tensor) for a in args) and (out := primitives.bind(self.primitive, *args)) is not None: return out
      return self._traced_call(args, kwargs)
    # (a list is data, whose ints would be static: a body and a program per value; numpy data goes through asarray)
    if any(isinstance(a, (list, np.ndarray)) for a in (*args, *kwargs.values())): return self.fn(*args, **kwargs)
    leaves, tree = tu.tree_flatten((args, kwargs))
    if not all(isinstance(x, Tensor) and x.dtype not in dtypes.weaks and all(isinstance(d, int) for d in x.shape) or
               type(x) in (int, bool, str, float) or isinstance(x, DType) for x in leaves): return self.fn(*args, **kwargs)
    # arguments on a device are the call's; device-less constants (a complex number's zero imaginary part) and static
    # leaves (axes, a result dtype) are part of the body and of its signature
    if not (ts := [x for x in leaves if _on_device(x)]): return self.fn(*args, **kwargs)
    # (x64 in the key: the width of weakly typed values, and the defaults of constants, in the body)
    stored = weak_storage_dtype(dtypes.weakfloat)
    if (floats := [x for x in leaves if type(x) is float]) and not _exact_weak(ts, stored): return self.fn(*args, **kwargs)
    key = (tree, stored, *[(x.shape, x.dtype, x.device) if _on_device(x) else
                   x.uop if isinstance(x, Tensor) else float if type(x) is float else (type(x), x) for x in leaves])
    if key not in self.bodies:
      # (built at the first call: built at the second, the program of the call's graph is new to realize then, a
      # schedule more in the second run of a program: the ports' warm runs went up to 25x)
      if len(self.bodies) >= 256: self.bodies.clear()   # so many signatures (constants): a bound on what is kept
      self.bodies[key] = self._build(tree, leaves, ts, len(floats))
    if (made := self.bodies[key]) is None: return self.fn(*args, **kwargs)
    body, out_tree = made
    # (a float is a constant argument: realize_lazy compiles it in, and makes it an input of the program once it changes)
    return tu.tree_unflatten(out_tree, _tg.call_body(body, ts + [Tensor(f).cast(stored) for f in floats], self.name))

  def _traced_call(self, args: tuple, kwargs: dict):
    """Under a trace or a jit: one call of a structural custom_jvp whose rule is the function's own jvp
    (`custom.structural`: built once per argument types and transforms), so that neither the function's ops nor
    their derivatives are built again at every trace (an eager grad of jnp.hypot 3.3 -> 1.4 ms). The arguments it
    takes are float Tensors on a device and static leaves; anything else calls fn as it is."""
    # under a vmap the call would be batched by vmapping its function at every trace: the ops cost less (lnn_stax's
    # warm run, a vmap of hessians, 297 -> 400 ms with the calls)
    if any(name == "vmap" for name, _ in trace_state().active): return self.fn(*args, **kwargs)
    leaves, tree = tu.tree_flatten((args, kwargs))
    if not all(isinstance(x, Tensor) and dtypes.is_float(x.dtype) and x.dtype not in dtypes.weaks and _on_device(x) or
               isinstance(x, Tensor) and x.device is None or   # (a device-less constant: static, as in a body)
               type(x) in (int, bool, str) or isinstance(x, DType) or x is None for x in leaves) or \
       not any(_on_device(x) for x in leaves): return self.fn(*args, **kwargs)
    key = (tree, weak_storage_dtype(dtypes.weakfloat),
           *[None if _on_device(x) else x.uop if isinstance(x, Tensor) else (type(x), x) for x in leaves])
    if (fn := self.traced.get(key, _NEW)) is _NEW:
      if len(self.traced) >= 256: self.traced.clear()
      fn = self.traced[key] = composite.traced_function(self.fn, tree, [composite.ARG if _on_device(x) else x for x in leaves], self.name)
    if fn is not None:
      try: return fn(*[x for x in leaves if _on_device(x)])
      except Exception: self.traced[key] = None   # (fn reads a value, or raises: called as it is, it raises its own error)
    return self.fn(*args, **kwargs)

  def _build(self, tree, leaves: list, ts: list[Tensor], n_floats: int) -> tuple[UOp, Any] | None:
    box: dict[str, Any] = {}
    def flat(*phs):
      it, fs = iter(phs[:len(ts)]), iter(phs[len(ts):])
      args = [next(it) if _on_device(x) else next(fs).cast(dtypes.weakfloat) if type(x) is float else x for x in leaves]
      a, k = tu.tree_unflatten(tree, args)
      out, box["tree"] = tu.tree_flatten(self.fn(*a, **k))
      return out if all(isinstance(o, Tensor) for o in out) else []
    like = ts + [placeholder((), weak_storage_dtype(dtypes.weakfloat), ts[0].device)] * n_floats
    composite._building = composite._on_placeholders = True
    try: body = _tg.function_body(flat, like)
    except Exception: body = None   # (fn cannot run on placeholders: called as it is, it raises its own error)
    finally: composite._building = composite._on_placeholders = False
    return None if body is None or not body.src else (body, box["tree"])


_NEW = object()

def primitive_kernel(name: str, partials: Callable) -> Callable[[Callable], composite]:
  """A composite that is the lowering of JAX's elementwise primitive `name`: under a trace one call node
  (`primitives.bind`), differentiated by JAX's rule `partials` (ops, out) -> d out / d operand_i."""
  return lambda fn: composite(fn, primitives.Primitive(name, fn, partials))

def _exact_weak(ts: list[Tensor], stored: DType) -> bool:
  """A Python float stored at the weak width `stored` and cast to these arguments' float dtypes is the float cast once
  (float64 storage, or no float narrower than it), as JAX converts a Python scalar."""
  return stored == dtypes.float64 or all(not dtypes.is_float(t.dtype) or t.dtype.itemsize >= stored.itemsize for t in ts)

def _on_device(x) -> bool: return isinstance(x, Tensor) and isinstance(x.device, str)   # (a composite's argument)


# ---- tracing on placeholders ----------------------------------------------------------------------------------------

def split_aux(out, has_aux: bool):
  if not has_aux: return out, None
  if not (isinstance(out, (tuple, list)) and len(out) == 2):
    raise TypeError(f"expected function with aux output to return a two-element tuple, but got type {type(out)} with "
                    f"value {out!r}")
  return out[0], out[1]

def trace_flat(fun: Callable, transform: str, p_leaves: list[Tensor], p_tree, has_aux: bool = False):
  """Run fun on placeholders for the float leaves. Returns (placeholders, output leaves, output tree, aux); a leaf
  that is not a float stays itself (it has no tangent or cotangent)."""
  phs = [placeholder(tuple(p.shape), p.dtype, p.device) if dtypes.is_float(p.dtype) else p for p in p_leaves]
  traced = {ph.uop: p.uop for ph, p in zip(phs, p_leaves, strict=True) if ph is not p}
  # the placeholders of a derivative stand for its inputs, which Python control flow may read (concrete_stand_in)
  with trace_scope(transform, traced, traced if transform in ("jvp", "vjp") else None):
    out = fun(*tu.tree_unflatten(p_tree, phs))
  out, aux = split_aux(out, has_aux)
  out_leaves, out_tree = tu.tree_flatten(out)
  for leaf in out_leaves:
    if not isinstance(leaf, (Tensor, int, float, bool)) and not hasattr(leaf, "__array__"):
      raise TypeError(f"{transform}: output {leaf!r} of type {type(leaf)} is not a valid Tensor type")
  return phs, [as_tensor(o) for o in out_leaves], out_tree, aux

def concrete_inputs(leaves: list[Tensor]) -> None:
  """Realize, on their own, the inputs that are still lazy computations, before they go into a transformed graph.
  tinygrad's realize rebinds every live Tensor to its new buffers before it schedules and compiles
  (Tensor.linear_with_vars): if the transformed graph then fails to schedule or compile, a lazy input is left bound
  to buffers that were never written (it reads as zeros). A realized input is never rebound. Views of buffers and
  constants cost nothing and stay; inputs that are traced values of an enclosing transform stay lazy."""
  todo = [t for t in leaves if t.uop.base.op not in (Ops.BUFFER, Ops.PARAM, Ops.AFTER, Ops.CONST) and traced_by(t) is None]
  if todo: Tensor.realize(*todo)

def placeholder_subs(phs: list[Tensor], leaves: list[Tensor]) -> dict[UOp, UOp]:
  """placeholder -> real input, for the leaves `trace_flat` replaced (realized first: `concrete_inputs`)."""
  concrete_inputs([p for ph, p in zip(phs, leaves, strict=True) if ph is not p])
  return {ph.uop: p.uop for ph, p in zip(phs, leaves, strict=True) if ph is not p}

def with_buffers(subs: dict[UOp, UOp]) -> dict[UOp, UOp]:
  """subs with each placeholder's buffer bound as well (to the value reshaped): a memoised derivative called on the
  buffers (GraphMemo's as_call) reads them whole, where traced graphs read the placeholders' views."""
  return {**{k.base: v.reshape(k.base.shape) for k, v in subs.items() if k.base is not k}, **subs}

def substitute(uops: list[UOp], subs: dict[UOp, UOp]) -> list[UOp]:
  """Replace placeholders by the real inputs, in one pass over all the graphs."""
  return list(UOp.sink(*uops).substitute(subs).src) if uops and subs else uops

def substitute_with_aux(uops: list[UOp], aux, subs: dict[UOp, UOp]) -> tuple[list[Tensor], object]:
  """`substitute` for the outputs and the Tensor leaves of a has_aux auxiliary pytree, in one pass."""
  aux_leaves, aux_tree = tu.tree_flatten(aux)
  done = substitute(uops + [a.uop for a in aux_leaves if isinstance(a, Tensor)], subs)
  it = iter(done[len(uops):])
  aux = tu.tree_unflatten(aux_tree, [Tensor(next(it)) if isinstance(a, Tensor) else a for a in aux_leaves])
  return [Tensor(u) for u in done[:len(uops)]], aux

# ---- the interpreter ------------------------------------------------------------------------------------------------

Rule = Callable[[UOp, list], Any]

# Call-like nodes, dispatched here and nowhere else. A table's rule for one of these keys gets:
#   CUSTOM_CALL: the FUNCTION node of a custom_jvp/custom_vjp call and its sources' values (src[0] is the body: None)
#   GATHER:      the AFTER node of a tinyjax gather kernel and the values of its (src, idx)
# GETTUPLE of a custom call goes through the table's Ops.GETTUPLE rule; tinygrad @functions are inlined.
CUSTOM_CALL, GATHER = "custom_call", "gather"

# op sets that several tables share
ZERO_DERIVATIVE = frozenset({Ops.TRUNC, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.XOR, Ops.OR, Ops.AND, Ops.SHL, Ops.SHR,
                             Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD, Ops.THREEFRY, Ops.BITCAST, Ops.DETACH})
PASSTHROUGH = frozenset({Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD, Ops.COPY})   # the value is the source's

def interpret(roots: list[UOp], env: dict[UOp, Any], rule: Rule, is_source: Callable[[UOp], bool] = lambda u: False,
              inline_custom: bool = False) -> list[Any]:
  """Transform every node under `roots` that depends on a key of `env` (or is a source by `is_source`).

  `env` maps a node to its transformed value and is updated in place (it is the memo). `rule(node, vals)` gets the
  values of the node's sources, None for sources that do not depend on the transform's inputs; a rule may return None
  for "nothing to carry" (a symbolic zero tangent), and then the node counts as independent. A root that does not
  depend on the inputs maps to None. With `inline_custom`, custom_jvp/custom_vjp calls are inlined like @functions.
  """
  for u in UOp.sink(*roots).toposort(enter_calls=False):
    if u in env or u.op is Ops.SINK: continue
    match _tg.call_kind(u, inline_custom):
      case "skip": continue   # the FUNCTION of an inlined call, the CALL of a gather: their users carry the value
      case "inline":
        # a tinygrad @function: transform its body inlined with the call's arguments, like any other graph
        # (walked even when no argument is in env: the body may hold a source, e.g. a collective of a constant)
        val, = interpret([_tg.inline_call(u)], env, rule, is_source, inline_custom)
      case _:
        vals = [env.get(s) for s in operands(u)]
        if not (any(v is not None for v in vals) or is_source(u)): continue
        val = rule(u, vals)
    if val is not None: env[u] = val
  return [env.get(r) for r in roots]

def operands(u: UOp) -> tuple[UOp, ...]:
  """The nodes whose values a rule for u gets, in order: (src, idx) for a gather, else u's sources."""
  return _tg.gather_args(u) or u.src

def rebuild(u: UOp, srcs: Sequence[UOp]) -> UOp:
  """u with new operands (see `operands`)."""
  return _tg.gather(Tensor(srcs[0]), Tensor(srcs[1])).uop if _tg.gather_args(u) else u.replace(src=tuple(srcs))

def table_rule(table: dict, transform: str) -> Callable:
  """Look a node's rule up in `table` (an op, or CUSTOM_CALL / GATHER for call-like nodes); an op without one is an
  error that names the op and the transform."""
  def lookup(u: UOp) -> Callable:
    key = {"custom": CUSTOM_CALL, "gather": GATHER}.get(_tg.call_kind(u, False) or "", u.op)
    if (fn := table.get(key)) is None: raise no_rule(f"{key} {_tg.custom_rule_of(u).name}" if key == CUSTOM_CALL else key, transform)
    return fn
  return lookup

# ---- JAX's derivative conventions (non-smooth points, extreme inputs) -----------------------------------------------

def _is_sign_of(s: UOp, x: UOp) -> bool:
  """s is tinygrad's sign(x): WHERE(x != 0, WHERE(x < 0, -1, 1), 0)."""
  return s.op is Ops.WHERE and s.src[0].op is Ops.CMPNE and s.src[0].src[0] is x and s.src[1].op is Ops.WHERE \
    and s.src[1].src[0].op is Ops.CMPLT and s.src[1].src[0].src[0] is x

def _is_literal(u: UOp, known: dict[UOp, bool]) -> bool:
  """A constant written in the program (CONSTs, possibly broadcast, cast or combined, as -6 is 6 * -1): no data, no
  inputs. `known` holds the answers for u's sources (jax_conventions walks sources first: one pass over the graph)."""
  return primitives.literal_op(u) and all(known.get(s, False) for s in u.src)

def _product_tree(u: UOp) -> UOp:
  """prod over the leading k axes as a tree of pairwise products: the same value, and derivatives of every order that
  are exact at zeros (tinygrad's zero-safe prod gradient is a `where` whose own derivative vanishes at two zeros)."""
  x, k = u.src[0], u.arg[1]
  rest = tuple(x.shape[k:])
  y = Tensor(x).reshape((-1,) + rest)
  while y.shape[0] > 1:
    h = y.shape[0] // 2
    z = y[:h] * y[h:2 * h]
    y = z.cat(y[2 * h:]) if y.shape[0] % 2 else z
  return y.reshape(rest).uop

def primal_graph(outs: list[UOp], rewritten: list[UOp]) -> list[UOp]:
  """The graph the primal outputs are returned from, beside derivatives computed on `rewritten` (jax_conventions of
  outs): outs, unless the graph holds a host call (a loop, LAPACK). A host call's output buffers are fixed in its body, so
  two copies of it, each graph's, would write the same buffers in one schedule (tinygrad: "cycle detected in assign
  graph"); the rewrite computes the same values."""
  return rewritten if rewritten != outs and _tg.holds_host_call(rewritten) else outs

def jax_conventions(uops: list[UOp]) -> list[UOp]:
  """`_jax_conventions`, memoised by the graphs' structure (`_tg.GraphMemo`): an eager loop traces the same function
  every iteration, and the rewrite is most of an eager transform's own time."""
  return _conventions_memo(uops)

def _jax_conventions(uops: list[UOp]) -> list[UOp]:
  """Rewrite tinygrad lowerings whose derivatives differ from JAX's, before differentiating (both modes, every order).
  - lowerings of JAX primitives (sigmoid, tanh, erf, elu, softplus's logaddexp, pow, asin...): a primitive call with
    the same value and JAX's derivative rule at every order (`tinyjax.primitives`).
  - abs(x) is x * sign(x) in tinygrad (derivative 0 at 0); JAX's abs has derivative 1 at 0: (x < 0).where(-x, x).
  - prod: a tree of pairwise products (exact higher derivatives at zeros, as JAX's).
  - a cast from an integer or bool to float stops the derivative (tinygrad's CAST gradient passes it through).
  - clip(x, lo, hi) is (x < lo).where(lo, x) then (hi < r).where(hi, r); JAX's clip is min(max(x, lo), hi), whose
    derivative is 1/2 at the bounds: rewritten to MAX. (relu, (0 < x).where(x, 0), has the constant on the other side
    and keeps JAX's relu derivative, 0 at 0.)
  The walk does not enter calls: custom rules and primitive bodies keep their own derivatives."""
  subs: dict[UOp, UOp] = {}
  lit: dict[UOp, bool] = {}
  for u in UOp.sink(*uops).toposort(enter_calls=False):
    lit[u] = _is_literal(u, lit)
    if (p := primitives.recognise(u, lit.__getitem__)) is not None:
      subs[u] = p
      continue
    if u.op is Ops.MUL:
      for x, s in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
        if _is_sign_of(s, x):
          subs[u] = (x < 0).where(-x, x)
          break
    if u.op is Ops.REDUCE and u.arg[0] is Ops.MUL and dtypes.is_float(u.dtype): subs[u] = _product_tree(u)
    # integer and bool values carry no derivative (JAX: float0): cut where one re-enters a float computation, so that
    # tinygrad's gradient (whose CAST rule passes a cotangent through) never walks into integer ops
    if u.op in (Ops.CAST, Ops.BITCAST) and dtypes.is_float(u.dtype) and not dtypes.is_float(u.src[0].dtype):
      subs[u] = u.replace(src=(u.src[0].detach(),))
    if u.op is Ops.WHERE and u.src[0].op is Ops.CMPLT and dtypes.is_float(u.dtype):
      (a, b), t, f = u.src[0].src, u.src[1], u.src[2]
      if t is b and f is a and lit[b] and not lit[a]: subs[u] = a.maximum(b)         # clip's lower bound
      elif t is a and f is b and lit[a] and not lit[b]: subs[u] = b.minimum(a)       # clip's upper bound
  return substitute(uops, subs)

_conventions_memo = _tg.GraphMemo(_jax_conventions)

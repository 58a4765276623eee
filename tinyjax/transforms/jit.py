"""tinyjax.jit: JAX's jit on tinygrad's TinyJit.

One TinyJit per signature (tree structure, shapes, dtypes, weak types, devices and sharding, static values): new
shapes trace again, as in JAX, instead of TinyJit's shape-mismatch error. Every array argument is traced: a Tensor of
any kind (constant, lazy, a view, sharded), a numpy array, a Python scalar (weakly typed, as in JAX); TinyJit only
takes realized whole buffers, so the others are first copied into new ones (`_tg.jit_input`), with no kernel for
constants and host data. Outputs never alias: every call passes freshly allocated output buffers into the TinyJit as
extra inputs and the function assigns its results into them, so the last kernel stores straight into a new buffer (no
copy kernel) and results of successive calls are independent Tensors.
"""
from __future__ import annotations
import functools, inspect, weakref
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, capturing_tinyjit, kernel_search, DType, UOp, dtypes, static_shape, placeholder, jit_capturing, jit_kernel_names, \
  jit_captured, OutputBuffers, assign_into, stored_once, sharding, placeholder_like, host_buffer, host_dtype, host_input, jit_input, default_device, \
  Replay, codegen_settings, captured_replay, captured_nbytes, replay_buffers, plain_buffer_key, preserved_tensors, holds_host_call, is_lazy, \
  canonical_key, closed_buffers, rebound_capture, host_copies_filled, stored_data
from tinyjax.core import serialized, realize_pending, trace_scope, trace_state, is_tracing, as_tensor, substitute
from tinyjax.dtypes import canonical_array, weak_storage_dtype, python_weak_dtype, weak_dtype_of
from tinyjax.config import config
from tinyjax import pytree as tu

_SCALARS = (bool, int, float)
_REPEAT = object()   # a `_plain_key` entry for a Tensor passed again: (_REPEAT, its first position)
# JAX's ahead-of-time stages (Traced, Lowered, Compiled) live in tinyjax.stages, a layer above (they show the trace
# with make_jaxpr and the outputs as ShapeDtypeStructs); it registers them here when tinyjax is imported
STAGES: dict[str, Any] = {}
_INT32 = (-2**31, 2**31 - 1)

def _host_array(x) -> tuple[np.ndarray, DType | None]:
  """A Python scalar or numpy leaf as the array JAX would trace, and the weak dtype it is traced with (Python int and
  float are weakly typed in JAX, bool and numpy values are not)."""
  a = canonical_array(x)
  if type(x) is int and a.dtype == np.int32 and not _INT32[0] <= x <= _INT32[1]:
    raise OverflowError(f"An overflow was encountered while parsing an argument to a jitted computation. Got {type(x)} with value {x}")
  return a, python_weak_dtype(x)

def _out_tensor(x) -> Tensor:
  return x.cast(weak_storage_dtype(x.dtype)) if isinstance(x, Tensor) and x.dtype in dtypes.weaks else as_tensor(x)

def _weakly(t: Tensor, weak: DType | None) -> Tensor: return t if weak is None else t.cast(weak)

def _host_data_taken(outs: list[Tensor]) -> list[Tensor]:
  """The outputs with host data the function made (Tensor(np_array)) written into buffers once, at the trace or the
  capture, as JAX takes it into the trace: the capture would copy it again at every replay."""
  return [Tensor(u) if u is not o.uop else o for o, u in zip(outs, host_copies_filled([o.uop for o in outs]), strict=True)]

def _device(leaves: list):
  """Where device-less arguments (Python scalars, numpy arrays, constants) go: the first Tensor argument's device
  (replicated over its devices if it is sharded), as tinygrad places a constant next to what it meets, else the
  default device."""
  for l in leaves:
    if isinstance(l, Tensor) and l.device is not None: return l.device
  return default_device()


def _empty_type(x: Tensor | np.ndarray, weak: DType | None, device) -> tuple:
  """(shape, dtype, device, weak) of an empty array argument: its part of the cache key."""
  t = x if isinstance(x, Tensor) else Tensor(x)
  dev = device if isinstance(x, np.ndarray) or t.device is None else t.device
  return (static_shape(t), t.dtype if weak is None else weak_storage_dtype(weak), dev, weak)


# captured TinyJits by what their functions compute (_Entry.key), the oldest dropped first: they hold their buffers
# (intermediates, closed-over data), so the cache keeps at most _CAPTURED_BYTES of them alive
_CAPTURED: dict[tuple, tuple[Any, int, list[UOp]]] = {}   # key -> (TinyJit, bytes, the closed-over buffers it reads)
_CAPTURED_BYTES = 256 << 20

def _keep_capture(key: tuple, tinyjit, closed: list[UOp]) -> None:
  if (size := captured_nbytes(tinyjit)) > _CAPTURED_BYTES: return
  while _CAPTURED and sum(n for _, n, _ in _CAPTURED.values()) + size > _CAPTURED_BYTES: del _CAPTURED[next(iter(_CAPTURED))]
  _CAPTURED[key] = (tinyjit, size, closed)

class _Entry:
  """The TinyJit for one signature. The function runs once, on placeholders, as JAX traces it once (a print in it
  prints once): the trace gives the output structure and the graphs of the outputs, and the capture substitutes the
  input buffers into them instead of running the function again. A function that writes into Tensors (tinygrad's
  stateful step: an optimizer's assigns; JAX has none) runs again in the capture: a value it returns must be computed
  from the data before the write, which tinygrad's realize orders (_tg.patches) and a trace, which realizes nothing,
  cannot."""
  def __init__(self, call: Callable[[list[Tensor]], Any], tensors: list[Tensor], weak: list[DType | None], device, name: str,
               beam: int = 0):
    self.weak, self.beam = weak, beam   # call: flat input Tensors -> the function's output pytree
    phs = [placeholder_like(t) for t in tensors]
    # the trace may assign into Tensors outside the function (an optimizer's step) or into its arguments: undone
    # afterwards, the capture does it for real
    with trace_scope("jit", [p.uop for p in phs]), preserved_tensors() as state:
      out = call(self._inputs(phs))
    leaves, self.out_tree = tu.tree_flatten(out)
    for l in leaves:
      if not isinstance(l, (Tensor, *_SCALARS, np.ndarray, np.generic)):
        raise TypeError(f"function {name} traced for jit returned a value of type {type(l)}, which is not a valid JAX type")
    outs = [_out_tensor(l) for l in leaves]
    # a weakly typed output (from Python scalars or other weak values only: `t + 0.25`) is one in the result too, as
    # in JAX: it promotes as a Python scalar does, and passed back to the function it has the same signature
    self.out_weak = [weak_dtype_of(l) for l in leaves]
    state.realize_state([o.uop for o in outs], device)
    # the Tensors from outside that it assigns into (closed-over state): the capture realizes their writes with the
    # outputs, so that every replay makes them (TinyJit alone would drop a write the function leaves lazy)
    self.state = [weakref.ref(t) for t in state.assigned]
    # an output that depends on no input and has no device (a constant) goes where the inputs are
    self.out_specs = [(static_shape(o), o.dtype, device if o.device is None else o.device, sharding(o) if o.device is not None else None)
                      for o in outs]
    self.filled = [0 not in spec[0] for spec in self.out_specs]   # an empty output is a new empty Tensor, no buffer
    self.out_buffers = OutputBuffers(self.out_specs, self.out_weak)
    # and one whose trace holds a host call (a loop, LAPACK) runs again too: substituted into, such a trace can make
    # tinygrad's scheduler find a cycle in its assign graph (research_lagrangian_dblpend: pinv's svd under a jitted
    # hessian; cause not found). (The first reason for this, a static fori_loop's counter stuck at 0, was the jit
    # trace's skipped realizes: fixed in core._check_read.)
    self.rerun = call if self.state or holds_host_call([o.uop for o in outs]) else None
    if self.rerun is None: outs = _host_data_taken(outs)
    # else the traced graphs, held as Tensors until the capture (realizing what they read rebinds them to its buffers)
    self.traced: tuple | None = None if self.rerun else ([p.uop for p in phs], [o for o, f in zip(outs, self.filled, strict=True) if f])
    self.tinyjit = capturing_tinyjit(self._flat)   # the second call replays, as in JAX
    self.replay: tuple[Replay, set[UOp]] | None = None
    # a function traced to the same graphs as one captured before (the same code defined again: a re-run cell, a jit of
    # a new closure) takes that capture's kernels, as JAX's compilation cache finds an executable by its HLO: tinygrad's
    # scheduling of a big graph takes seconds. Closed-over data counts by position and type, as JAX passes a jaxpr's
    # constants (a re-run script computes them anew): the capture is replayed reading this function's buffers. Not one
    # that writes state (its capture holds that state's buffers)
    sink = UOp.sink(*[o.uop for o, f in zip(outs, self.filled, strict=True) if f])
    self.closed = closed_buffers(sink, [p.uop for p in phs])
    self.key = None if self.state else \
      (canonical_key(sink, [*(p.uop for p in phs), *self.closed]), tuple(self.out_specs), tuple(weak), beam, codegen_settings())
    if self.key is not None and (captured := _CAPTURED.get(self.key)) is not None:
      tinyjit, _, closed = captured
      self.tinyjit = tinyjit if closed == self.closed else rebound_capture(tinyjit, dict(zip(closed, self.closed, strict=True)))
      self.traced, self.rerun = None, None

  def _inputs(self, bufs) -> list[Tensor]:
    """The function's arguments: weakly typed ones (Python scalars, Tensor(1.5)) as a weak-dtype view of their buffer."""
    return [b if w is None else b.cast(w) for b, w in zip(bufs, self.weak, strict=True)]

  def _flat(self, *bufs: Tensor):
    """What TinyJit captures: the traced graphs on this call's buffers, or the function run again on them."""
    n = len(self.weak)
    if self.rerun is None:
      assert self.traced is not None, "tinyjax.jit: the traced graphs are gone after the capture"
      phs, outs = self.traced
      done = substitute([o.uop for o in outs], {ph: b.uop for ph, b in zip(phs, bufs[:n], strict=True)})
      return tuple(stored_once([Tensor(o) for o in done], lambda i, o: assign_into(bufs[n + i], o)))
    self.inputs = frozenset(b.uop for b in bufs[:n])   # this run's inputs, for functions that close over them (vjp's pullback)
    outs = [_out_tensor(l) for l, f in zip(tu.tree_leaves(self.rerun(self._inputs(bufs[:n]))), self.filled, strict=True) if f]
    outs = _host_data_taken(outs)
    # writes it left lazy into closed-over state and into its arguments (realized buffers, passed as they are: the write
    # reaches the caller's Tensor) are realized with the outputs, so that every replay makes them
    state = [*(r() for r in self.state), *bufs[:n]]
    writes = [t for t in state if t is not None and not t.uop.has_buffer_identity() and not t.uop.is_virtual]
    return tuple(stored_once(outs, lambda i, o: assign_into(bufs[n + i], o))) + tuple(writes)

  def __call__(self, tensors: Sequence[Tensor], plain: bool = False):
    # fresh output buffers as TinyJit inputs (flat ones are cheap for it to prepare), shaped views of them as the results
    made = [self.out_buffers.take(i) if f else (None, _weakly(placeholder(*spec[:3]), w))
            for i, (spec, f, w) in enumerate(zip(self.out_specs, self.filled, self.out_weak, strict=True))]
    if (ins := [i for i, _ in made if i is not None]) or self.state:
      running = trace_state().running_jit
      running.append(self)   # jitted functions it calls are inlined
      try:
        # TinyJit captures on the first call; then its kernels are replayed straight from a plan (_tg.Replay), without
        # TinyJit's per-call preparation of its inputs, unless an input needs it (multi-device, written by the kernels)
        if self.replay is None: self.replay = captured_replay(self.tinyjit)
        if self.replay is not None and (bufs := replay_buffers(tensors, ins, self.replay[1], plain)) is not None: self.replay[0].run(bufs, {})
        else:
          if not jit_captured(self.tinyjit) and self.closed and (closed := set(self.closed)).intersection(t.uop.base for t in tensors):
            # an argument that is a buffer the function also closes over (f(c) of `lambda x: x * 2 + c`) is captured
            # as a copy: TinyJit makes every read of an input's buffer an input slot, the closure's too, so later
            # calls read their argument where the function reads c
            tensors = [jit_input(t, None, copy=True)[0] if t.uop.base in closed else t for t in tensors]
          with kernel_search(self.beam): self.tinyjit(*tensors, *[Tensor(i) for i in ins])   # the capture compiles
          if jit_captured(self.tinyjit):
            self.traced = None   # its placeholders and the state it read go
            # the replay's plan made now, with the first call's compiles (it brings up the CPU's executor once per
            # process: a solver's first iteration paid it)
            self.replay = captured_replay(self.tinyjit)
            if self.replay is not None and (bufs := replay_buffers(tensors, ins, self.replay[1], plain)) is not None: self.replay[0].prepare(bufs)
            if self.key is not None: _keep_capture(self.key, self.tinyjit, self.closed)
      finally: running.remove(self)
    return tu.tree_unflatten(self.out_tree, [v for _, v in made])


def _infer_argnums_and_argnames(fun: Callable, argnums, argnames) -> tuple[tuple[int, ...], tuple[str, ...]]:
  """As JAX: static arguments given by position are static by name too, and the other way round, through the signature
  (`jit(g, static_argnames='n')(x, 20)` and `jit(g, static_argnums=1)(x, n=20)` both make n static)."""
  nums = () if argnums is None else (argnums,) if isinstance(argnums, int) else tuple(argnums)
  names = () if argnames is None else (argnames,) if isinstance(argnames, str) else tuple(argnames)
  if argnums is not None and argnames is not None: return nums, names
  try: params = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError): return nums, names
  positional = [p.name if p.kind is p.POSITIONAL_OR_KEYWORD else None for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  if argnames is None: names = tuple(positional[i] for i in nums if -len(positional) <= i < len(positional) and positional[i])
  else: nums = tuple(i for i, n in enumerate(positional) if n in names)
  return nums, names

# function -> options -> (the entries by signature, the same entries by _plain_key); weakly keyed, so that a function
# and its traces can be collected (an entry holds no reference to the function once it is captured)
# _plain_key -> (entry, the pool its numpy data goes in, whether a weakly typed argument passes the data it views)
_PlainCache = dict[tuple, tuple[_Entry, OutputBuffers | None, bool, tuple[int, ...] | None]]
_CACHES: weakref.WeakKeyDictionary[Callable, dict[tuple, tuple[dict[Any, _Entry], _PlainCache]]] = weakref.WeakKeyDictionary()

def _caches(fun: Callable, options: tuple) -> tuple[dict[Any, _Entry], _PlainCache]:
  try: per_fun = _CACHES.setdefault(fun, {})
  except TypeError: per_fun = {}   # not weakly referenceable (a builtin): a cache of this jit's own
  return per_fun.setdefault(options, ({}, {}))

def _equal_key(cache: dict, key: tuple):
  """The entry whose key equals `key` as the static arguments are now, found by equality where the hash missed: a
  static argument mutated after its first call (its hash changed) still finds the entry it made, as in JAX (the doc's
  "broken" jit of a method with `self` static returns the stale value)."""
  for k, e in cache.items():
    try:
      if k == key: return e
    except Exception: continue   # a static argument whose __eq__ fails against another's
  return None

class jit:
  """jax.jit for tinygrad: `tinyjax.jit(f)(*args)` traces f once per signature and replays its kernels with TinyJit.
  Array leaves of the arguments (Tensors, numpy arrays, Python scalars) are traced, any other leaf must be a static
  argument; static arguments are part of the cache key, as are shapes, dtypes, weak types, devices and sharding.
  `beam=N` (tinyjax's, not JAX's) compiles the kernels with tinygrad's BEAM search of width N: a slower first call for
  faster kernels (0: tinygrad's BEAM environment setting)."""
  def __new__(cls, fun: Callable | None = None, **kwargs):
    # jax.jit(static_argnums=0) without the function is a decorator, as in JAX
    return functools.partial(cls, **kwargs) if fun is None else super().__new__(cls)

  def __init__(self, fun: Callable, static_argnums: int | Sequence[int] | None = None,
               static_argnames: str | Sequence[str] | None = None, beam: int = 0):
    functools.update_wrapper(self, fun)
    self.fun, self.beam = fun, beam
    self.static_argnums, self.static_argnames = _infer_argnums_and_argnames(fun, static_argnums, static_argnames)
    # the traces belong to the function, as in JAX: jit(f) made twice with the same options shares them
    self._cache, self._plain = _caches(fun, (self.static_argnums, self.static_argnames, beam))

  def __get__(self, obj, objtype=None): return functools.partial(self.__call__, obj) if obj is not None else self

  @serialized
  def __call__(self, *args, **kwargs):
    # inside another jit or a transform's trace, a jitted function is just its function (inlined); inside a trace, in a
    # scope that says it is staged (custom functions are then traced, and their rules applied later, as JAX does)
    if is_tracing():
      with trace_scope("jit", []): return self.fun(*args, **kwargs)
    if trace_state().running_jit or jit_capturing(): return self.fun(*args, **kwargs)
    # (static arguments not passed take their defaults: jnp.linalg.cholesky(x) of `jit(cholesky, static_argnames=...)`)
    # (static arguments passed by name, `solve_triangular(a, b, lower=True)`, are part of the fast path's key)
    if any(-len(args) <= i < len(args) for i in self.static_argnums) or (named := self._static_named(kwargs)) is None or \
       (fast := self._plain_key(args)) is None:
      entry, tensors = self._entry(args, kwargs)
      return entry(tensors)
    if (found := self._plain.get(key := (fast, config.jax_enable_x64, named))) is None:
      if isinstance(pool := self._host_pool(fast), bool):   # numpy data of a dtype tinygrad cannot hold
        entry, tensors = self._entry(args, kwargs)
        return entry(tensors)
      firsts = tuple(i for i, k in enumerate(fast) if k[0] is not _REPEAT)   # (the positions of each Tensor's first use)
      found = self._plain[key] = (self._entry(args, kwargs)[0], pool, any(len(k) == 4 for k in fast),
                                  firsts if len(firsts) < len(fast) else None)
    plain, inputs, weak, distinct = found
    if distinct is not None: args = tuple(args[i] for i in distinct)   # the TinyJit's inputs: each Tensor once, as _entry's
    if weak: args = tuple(stored_data(a) if isinstance(a, Tensor) else a for a in args)   # (the data they view)
    # Tensors only: known realized whole buffers; numpy data is copied into the pool's buffers
    return plain(args, True) if inputs is None else plain(self._plain_inputs(args, inputs), False)

  def _static_named(self, kwargs: dict) -> tuple | None:
    """The arguments passed by name as part of a key, when all are static and hashable (else None)."""
    if not kwargs: return ()
    if not all(k in self.static_argnames for k in kwargs): return None
    named = tuple(sorted(kwargs.items()))
    try: hash(named)
    except TypeError: return None   # (_entry raises JAX's error for it)
    return named

  @staticmethod
  def _plain_key(args: tuple) -> tuple | None:
    """The cache key of arguments that are all realized whole buffers on one device or numpy arrays that JAX would take
    as they are (a solver's callback), the common cases, which _entry would pass as they are (numpy data copied into a
    new buffer; a Tensor passed again, `k(x, x)`, one input): found without flattening the arguments (a fifth of a
    replay's time otherwise)."""
    key: list[tuple] = []
    seen: dict[UOp, tuple[UOp, int]] = {}
    for i, a in enumerate(args):
      if isinstance(a, (np.ndarray, np.generic)):
        # x64 off narrows 64-bit data: _entry does it (asked of a scalar of the dtype: no copy of the array per call)
        if a.size == 0 or canonical_array(a.dtype.type(0)).dtype != a.dtype: return None
        key.append((np.ndarray, a.shape, a.dtype))
      elif type(a) is not Tensor or (bk := plain_buffer_key(a)) is None: return None
      elif (first := seen.get(bk[0])) is not None:   # the same Tensor again; another view of its buffer is copied by _entry
        if first[0] is not a.uop: return None
        key.append((_REPEAT, first[1]))
      elif len(bk[1]) == 4 and bk[1][1] != weak_storage_dtype(bk[1][3]): return None   # weak data _entry would convert
      else:
        seen[bk[0]] = (a.uop, i)
        key.append(bk[1])
    return tuple(key)

  @staticmethod
  def _host_pool(key: tuple) -> OutputBuffers | None | bool:
    """For arguments with a `_plain_key`: None when all are Tensors, else the buffers their numpy data is copied into
    (on the first Tensor's device, where _entry puts them), reused once nothing refers to them (as a result's are);
    False for a dtype tinygrad cannot hold as it is."""
    if all(k[0] is not np.ndarray for k in key): return None
    device = next((k[2] for k in key if k[0] is not np.ndarray and k[0] is not _REPEAT), None) or default_device()
    specs = [(k[1], dt, device, None) for k in key if k[0] is np.ndarray and (dt := host_dtype(k[2])) is not None]
    return OutputBuffers(specs) if len(specs) == sum(k[0] is np.ndarray for k in key) else False

  @staticmethod
  def _plain_inputs(args: tuple, pool: OutputBuffers) -> list[Tensor]:
    """The TinyJit inputs for arguments with a `_plain_key`: numpy data copied into the pool's buffers."""
    it = iter(range(len(pool.specs)))
    return [host_input(pool, next(it), np.asarray(a)) if isinstance(a, (np.ndarray, np.generic)) else a for a in args]

  def _entry(self, args, kwargs) -> tuple[_Entry, list[Tensor]]:
    nums = {a % len(args) for a in self.static_argnums if -len(args) <= a < len(args)}   # the others passed by name
    static = tuple((i, args[i]) for i in sorted(nums)) + tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
    dyn = ([a for i, a in enumerate(args) if i not in nums], {k: v for k, v in kwargs.items() if k not in self.static_argnames})
    leaves, treedef = tu.tree_flatten(dyn)
    # a lazy argument is computed as itself (JAX's arrays are values): jit_input would pass a new Tensor over its graph,
    # computed again at every call (a random draw made once and passed to a jitted step 100 times: 121x JAX)
    if lazy := [x for x in leaves if isinstance(x, Tensor) and is_lazy(x)]: Tensor.realize(*lazy)
    device = _device(leaves)
    # every array leaf as a TinyJit input (a realized buffer of its own; TinyJit refuses duplicates: the same Tensor
    # passed twice is one input, another view of a buffer already passed gets a copy) and the weak dtype it is traced with
    uniq: list[Tensor] = []
    pos, where, weak, sigs, statics, seen, bufs = [], [], [], [], [], dict[UOp, int](), set[UOp]()
    for i, x in enumerate(leaves):
      if isinstance(x, Tensor): w = x.dtype if x.dtype in dtypes.weaks else None
      elif isinstance(x, (np.ndarray, np.generic)) or type(x) in _SCALARS: x, w = _host_array(x)
      else:
        raise TypeError(f"Error interpreting argument to {self.fun} as an abstract array. The problematic value is of type "
                        f"{type(x)} and was passed to the function at path {self._path(tu.tree_flatten_with_path(dyn)[0][i][0], nums)}.\nThis "
                        "typically means that a jit-wrapped function was called with a non-array argument, and this argument "
                        "was not marked as static using the static_argnums or static_argnames parameters of jax.jit.")
      if 0 in x.shape:   # no data, nothing to pass (TinyJit takes no empty buffers): a fixed empty Tensor of its type
        statics.append(typ := _empty_type(x, w, device))
        leaves[i] = placeholder(*typ[:3]) if w is None else placeholder(*typ[:3]).cast(w)
        continue
      if isinstance(x, Tensor): t, b = jit_input(x, device, None if w is None else weak_storage_dtype(w))
      else: t, b = jit_input(Tensor(x), device) if (h := host_buffer(x, device)) is None else (h, None)
      pos.append(i)
      if (k := seen.get(t.uop)) is None:
        if b is not None:
          if b in bufs: t, _ = jit_input(t, device, copy=True)
          bufs.add(b)
        seen[t.uop] = k = len(uniq)
        uniq.append(t)
        weak.append(w)
        sigs.append((t.shape, t.dtype, t.device, sharding(t), w))
      where.append(k)
    # x64 is part of the signature, as in JAX: the default dtypes are traced into the capture (jnp.zeros)
    key = (treedef, tuple(where), tuple(sigs), tuple(statics), static, config.jax_enable_x64)
    try: hash(key)
    except TypeError as e: raise ValueError(f"jit: static arguments must be hashable (they are part of the cache key): {e}") from None

    if (entry := self._cache.get(key)) is None and (entry := _equal_key(self._cache, key)) is None:
      # the values it closes over are JAX arrays, computed: pending ones are computed first (as a transform does), or
      # their graphs would be traced into the capture and computed again in every kernel that reads them
      realize_pending()
      dyn_pos = set(pos)
      template = [None if i in dyn_pos else l for i, l in enumerate(leaves)]   # not the arrays: the cache must not keep them
      nargs, static_pos, static_kw = len(args), {i: args[i] for i in nums}, dict(static[len(nums):])
      def call(flat: list[Tensor]):
        full = list(template)
        for i, k in zip(pos, where, strict=True): full[i] = flat[k]
        dargs, dkw = tu.tree_unflatten(treedef, full)
        it = iter(dargs)
        return self.fun(*[static_pos[i] if i in static_pos else next(it) for i in range(nargs)], **dkw, **static_kw)
      entry = self._cache[key] = _Entry(call, uniq, weak, device, getattr(self.fun, "__name__", repr(self.fun)), self.beam)
    return entry, uniq

  def _path(self, keys: tuple, static_nums: set[int]) -> str:
    """A leaf's path in the arguments as JAX names it: the parameter's name, then the path inside it (x[0])."""
    if keys[0].idx == 1: return keys[1].key + tu.keystr(keys[2:])   # a keyword argument
    i = [j for j in range(keys[1].idx + len(static_nums) + 1) if j not in static_nums][keys[1].idx]
    try: names = [p.name for p in inspect.signature(self.fun).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError): names = []
    return (names[i] if i < len(names) else f"args[{i}]") + tu.keystr(keys[2:])

  # ---- JAX's ahead-of-time stages: jit(f).trace(...).lower().compile() --------------------------------------------

  @serialized
  def trace(self, *args, **kwargs):
    """jax.jit(f).trace(*args): a `tinyjax.stages.Traced` of the function for these arguments' signature (traced once:
    a later call uses it)."""
    entry, tensors = self._entry(args, kwargs)
    return STAGES["Traced"](self, entry, tensors, args, kwargs)

  def lower(self, *args, **kwargs): return self.trace(*args, **kwargs).lower()

  def eval_shape(self, *args, **kwargs): return self.trace(*args, **kwargs).out_info

  @serialized
  def kernels(self, *args, **kwargs) -> list[str]:
    """Names of the kernels a call with these arguments replays (captures the signature first if needed)."""
    entry, tensors = self._entry(args, kwargs)
    while not jit_captured(entry.tinyjit): entry(tensors)
    return jit_kernel_names(entry.tinyjit)


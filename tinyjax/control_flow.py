"""lax control flow: scan, fori_loop, while_loop, cond, switch, map, select, associative_scan.

A loop or a branch is one node in the traced graph: a custom call (a tinygrad FUNCTION, as for custom_jvp) whose rule
is a `Scan`, `While` or `Switch` holding the user's functions traced once, as `Body`s (graphs over their own PARAMs).
Its lowering is one host call (`_tg.host_call`): when tinygrad runs it (eagerly or replaying a TinyJit), an executor
replays each body's kernels, compiled once (`_tg.Step`), from a Python loop, with the carry kept in device buffers.
Tracing and compiling cost one step whatever the trip count, and a while_loop stops on a value read back each
iteration. Each transform has a rule that builds another such node from transformed bodies (vmap: vmapped bodies, the
batch put next to the scanned axis; jvp: a scan of the primal and tangent; reverse mode: a scan saving the carries and
a reverse scan of the body's vjp), so transforms nest freely. See docs/control_flow.md.
"""
from __future__ import annotations
import dataclasses, functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, UOp, Ops, GroupOp, DType, jit_capturing, dtypes, param_like, param, host_call, Step, \
  scratch_like, copy_buffer, read_scalar, constant_array, canonical_key, filled_buffer, static_shape, dtype_name, default_device
from tinyjax.core import as_tensor, trace_scope, traced_by, substitute, enclosing_inputs
from tinyjax.custom import _closure, _slots
from tinyjax.call_rule import CallRule, BatchedCall, is_zero
from tinyjax import tree_util as tu

__all__ = ["scan", "fori_loop", "while_loop", "cond", "switch", "map", "select", "associative_scan"]

Type = tuple[tuple[int, ...], DType]

def _type(t: Tensor) -> Type: return static_shape(t), t.dtype

def _tstr(t: Type) -> str: return f"{dtype_name(t[1])}[{','.join(str(d) for d in t[0])}]"

def _is_float(t: Tensor | UOp) -> bool: return dtypes.is_float(t.dtype)


# ---- traced functions ------------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Body:
  """A function of flat Tensors traced once: its outputs as graphs over `params` (PARAMs of unique slots)."""
  params: list[UOp]
  outs: list[UOp]
  def __call__(self, xs: Sequence[Tensor]) -> list[Tensor]:
    return [Tensor(u) for u in substitute(self.outs, {p: x.uop for p, x in zip(self.params, xs, strict=True)})]

  @property
  def has_calls(self) -> bool: return any(u.op is Ops.FUNCTION for u in UOp.sink(*self.outs).toposort(enter_calls=False))

  @functools.cached_property
  def key(self) -> bytes:
    """What the body computes, whatever its PARAMs' slots and the names of its nested calls: equal for two traces of
    the same function and closure (`_tg.canonical_key`)."""
    canon = {p: param(i, static_shape(p), p.dtype, p.device) for i, p in enumerate(self.params)}
    return canonical_key(UOp.sink(*substitute(self.outs, canon)))

def trace(fun: Callable[[list[Tensor]], list[Tensor]], types: list[Type], device, what: str) -> tuple[Body, list[Tensor]]:
  """fun traced on placeholders of `types`; the values it closes over that are traced (or data) become extra inputs,
  as a custom function's do (custom._closure). Returns the Body over (inputs, closed-over values) and those values."""
  own = [param(next(_slots), s, d, device) for s, d in types]
  with trace_scope(what, own):
    outs = [o.uop for o in fun([Tensor(p) for p in own])]
  hidden = _inputs(outs, set(own))
  extra = [param_like(h, next(_slots)) for h in hidden]
  return Body(own + extra, substitute(outs, dict(zip(hidden, extra, strict=True)))), [Tensor(h) for h in hidden]

def _inputs(outs: list[UOp], own: set[UOp]) -> list[UOp]:
  """What a body reads besides its own inputs: custom._closure's (traced values, markers, data), and every other
  buffer or PARAM (with the movement ops over it: the whole node a transform substitutes). A placeholder of a
  transform whose trace has ended (a custom_vjp's bwd builds its loop while the vjp substitutes its residuals) is not
  traced any more, but is still substituted later: only as an argument of the
  loop node, not inside its compiled body."""
  hidden = _closure(outs, own)
  seen = own | set(hidden)
  def view_of_input(u: UOp) -> bool:   # a placeholder is a view of a BUFFER (Tensor.empty: RESHAPE(BUFFER)), keyed so
    while u.op in GroupOp.Movement: u = u.src[0]
    return u.op in (Ops.BUFFER, Ops.PARAM) and u not in own
  def gate(u: UOp) -> bool:
    if u in seen: return False
    if view_of_input(u):
      hidden.append(u)
      seen.add(u)
      return False
    return True
  UOp.sink(*outs).toposort(gate=gate, enter_calls=False)
  return hidden

def _shared(bodies: list[tuple[Body, list[Tensor]]], n_own: int, device) -> tuple[list[Body], list[Tensor]]:
  """Bodies traced apart, as bodies of the same inputs: their own `n_own` ones and all of their closed-over values."""
  consts: dict[UOp, Tensor] = {}
  for _, hidden in bodies:
    for h in hidden: consts.setdefault(h.uop, h)
  ks = list(consts.values())
  out = []
  for body, hidden in bodies:
    ps = body.params[:n_own] + [param(next(_slots), *_type(k), device) for k in ks]
    where = {h.uop: i for i, h in enumerate(hidden)}
    subs = {body.params[n_own + where[k.uop]]: ps[n_own + i] for i, k in enumerate(ks) if k.uop in where}
    out.append(Body(ps, substitute(body.outs, subs)))
  return out, ks

def _device(xs: Sequence[Tensor]):
  """The device a loop runs on: its arguments' (closed-over numpy data sits on tinygrad's NPY device: not that one)."""
  for x in xs:
    if x.device is not None and not str(x.device).startswith("NPY"): return x.device
  return default_device()

def _flat(x) -> tuple[list[Tensor], Any]:
  leaves, tree = tu.tree_flatten(x)
  return [as_tensor(leaf) for leaf in leaves], tree

def _paths(x) -> list[tuple]: return tu.optree.tree_paths(x, namespace=tu.NAMESPACE)

def _weak(x) -> bool: return isinstance(x, (int, float)) and not isinstance(x, bool)


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

def _promoted(init: list[Tensor], weak: list[bool], out: list[Type]) -> list[Tensor] | None:
  """JAX's weak-type promotion of a carry: a Python-number init takes the dtype its function returns (None: no change)."""
  new = [x.cast(o[1]) if w and x.dtype != o[1] and x.shape == o[0] else x for x, w, o in zip(init, weak, out, strict=True)]
  return None if all(a is b for a, b in zip(new, init, strict=True)) else new


# ---- the node ----------------------------------------------------------------------------------------------------------

class HostCallRule(CallRule):
  """A call run by a host executor (scan, while_loop and switch nodes, LAPACK calls): its body is one host call
  (`_tg.host_call`) that runs `executor(...)` on the arguments' buffers when tinygrad runs the node."""
  opaque = True   # never inlined (_tg.call_kind): the FUNCTION's body is a host call, not a graph of ops
  def out_types(self, xs: list[Tensor]) -> list[Type]: raise NotImplementedError
  def content_key(self) -> tuple:
    """All the executor depends on besides its arguments (their types, and the constants among them, are in the graph):
    the rule's fields, each body by what it computes. A field of another kind raises: never a key that misses one."""
    def key(v):
      if isinstance(v, Body): return v.key
      if isinstance(v, (list, tuple)): return tuple(key(x) for x in v)
      if isinstance(v, (int, float, bool, str, DType, type(None))): return v
      raise TypeError(f"tinyjax: no content key for a {type(v).__name__} in {type(self).__name__}")
    return (type(self).__name__, *((f.name, key(getattr(self, f.name))) for f in dataclasses.fields(self)))  # type: ignore[arg-type]

  def executor(self, ins: list[Type], outs: list[Type]) -> Callable[[list[UOp]], None]:
    """run(buffers): the outputs' buffers, then the inputs' (flat: their types are ins and outs)."""
    raise NotImplementedError

  def call_node(self, xs: list[Tensor]) -> UOp:
    device = _device(xs)
    # contiguous outside the FUNCTION: tinygrad moves an argument's movement ops into the FUNCTION's body, where a
    # broadcast fails its kernel-graph check (and the host call takes buffers)
    xs = [(x if x.device == device else x.to(device)).contiguous() for x in xs]
    params = [param_like(x.uop, i) for i, x in enumerate(xs)]
    out_types = self.out_types(xs)
    # constant arguments do not reach the host call (the scheduler folds a buffer of a constant back into the constant,
    # and a host call takes buffers): its executor fills buffers with them
    fixed = {i: v for i, x in enumerate(xs) if (v := constant_array(x)) is not None}
    run, filled = self.executor([_type(x) for x in xs], out_types), dict[int, UOp]()
    def with_constants(bufs: list[UOp]) -> None:
      outs, ins = bufs[:len(out_types)], iter(bufs[len(out_types):])
      for i, v in fixed.items():
        if i not in filled: filled[i] = filled_buffer(v, device)
      run(outs + [filled[i] if i in fixed else next(ins) for i in range(len(xs))])
    outs = host_call(with_constants, out_types, [p for i, p in enumerate(params) if i not in fixed], device)
    return self.node(outs, [x.uop for x in xs])

def _jvp(body: Body, primals: list[Tensor], tangents: list[Tensor | None]) -> tuple[list[Tensor], list[Tensor]]:
  from tinyjax.transforms.jvp import jvp
  ts = [p.zeros_like() if t is None or not _is_float(p) else t for p, t in zip(primals, tangents, strict=True)]
  outs, touts = jvp(lambda *a: tuple(body(a)), tuple(primals), tuple(ts))
  return list(outs), list(touts)

def _vjp(body: Body, primals: list[Tensor], cts: list[Tensor | None]) -> list[Tensor]:
  """The cotangents of body's inputs for cotangents of its outputs (None: zero), recomputing its forward pass."""
  from tinyjax.transforms.vjp import vjp
  keep = [i for i, c in enumerate(cts) if c is not None]
  _, pull = vjp(lambda *a: tuple(body(a)[i] for i in keep), *primals)
  return list(pull(tuple(cts[i] for i in keep)))

def _vmap(body: Body, flags: Sequence[int | None], size: int) -> Callable[[list[Tensor]], list[Tensor]]:
  from tinyjax.transforms.vmap import vmap
  return lambda xs: list(vmap(lambda *a: tuple(body(a)), in_axes=tuple(flags), axis_size=size)(*xs))

_STEPS: dict[tuple, Step] = {}   # compiled bodies by what they compute: a loop traced again (eager code) reuses its step
_MAX_STEPS = 256

def _compiled(body: "Body", ins: list, outs: list, steps: int = 1) -> Callable[[Any], Step]:
  """The step of `body` for buffers of these types, compiled on first use (when the loop first runs: its inputs are
  concrete then) and shared by loops whose bodies compute the same."""
  def get(device) -> Step:
    key = (body.key, tuple(ins), tuple(outs), device, steps)
    if (step := _STEPS.get(key)) is None:
      if len(_STEPS) >= _MAX_STEPS: _STEPS.pop(next(iter(_STEPS)))
      step = _STEPS[key] = Step(body, ins, outs, device, steps, body.has_calls)
    return step
  return get

def _broadcast(x: Tensor, flag: int | None, size: int) -> Tensor:
  return x if flag is not None else x.unsqueeze(0).expand(size, *x.shape)


# ---- scan --------------------------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Scan(HostCallRule):
  """body(carry, x, consts) -> (carry, y), `length` steps. Arguments: carry, xs (stacked along x_axes), consts;
  outputs: the final carry, then the ys stacked along y_axes."""
  body: Body
  n_carry: int
  x_axes: tuple[int, ...]
  y_types: list[Type]   # one step's y
  y_axes: tuple[int, ...]
  length: int
  reverse: bool = False
  name = "scan"

  def out_types(self, xs):
    ys = [(s[:a] + (self.length,) + s[a:], d) for (s, d), a in zip(self.y_types, self.y_axes, strict=True)]
    return [_type(c) for c in xs[:self.n_carry]] + ys

  def executor(self, ins: list[Type], outs: list[Type]) -> Callable[[list[UOp]], None]:
    nc, nx, L, rev, n_out = self.n_carry, len(self.x_axes), self.length, self.reverse, len(outs)
    at = [None] * nc + list(self.x_axes) + [None] * (len(ins) - nc - nx)
    step = _compiled(self.body, [(s, d, a) for (s, d), a in zip(ins, at, strict=True)],
                     [(s, d, a) for (s, d), a in zip(outs, [None] * nc + list(self.y_axes), strict=True)], L)
    def run(bufs: list[UOp]) -> None:
      carry_out, ys, ins = bufs[:nc], bufs[nc:n_out], bufs[n_out:]
      init, rest = ins[:nc], ins[nc:]
      other = [scratch_like(b) for b in carry_out]
      cur = init
      for j in range(L):   # the carry goes back and forth between two sets of buffers, the last step writes the output's
        dst = carry_out if (L - 1 - j) % 2 == 0 else other
        step(bufs[0].device).run(cur + rest + dst + ys, L - 1 - j if rev else j)
        cur = dst
    return run

  def split(self, xs: Sequence):
    nc, nx = self.n_carry, len(self.x_axes)
    return list(xs[:nc]), list(xs[nc:nc + nx]), list(xs[nc + nx:])

  def jvp(self, xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
    c, x, k = self.split(xs)
    tc, tx, tk = self.split(ts)
    fc = [i for i, v in enumerate(c) if _is_float(v)]   # every float carry has a tangent (it may become nonzero)
    fx = [i for i, (v, t) in enumerate(zip(x, tx, strict=True)) if _is_float(v) and not is_zero(t)]
    fk = [i for i, (v, t) in enumerate(zip(k, tk, strict=True)) if _is_float(v) and not is_zero(t)]
    nc, ny = len(c), len(self.y_types)
    fy = [i for i, (_, d) in enumerate(self.y_types) if dtypes.is_float(d)]
    def body(a: list[Tensor]) -> list[Tensor]:
      it = iter(a)
      cc, dc = [next(it) for _ in c], [next(it) for _ in fc]
      xx, dx = [next(it) for _ in x], [next(it) for _ in fx]
      kk, dk = [next(it) for _ in k], [next(it) for _ in fk]
      tans: list[Tensor | None] = [None] * len(a)
      for i, t in zip(fc, dc, strict=True): tans[i] = t
      for i, t in zip(fx, dx, strict=True): tans[nc + i] = t
      for i, t in zip(fk, dk, strict=True): tans[nc + len(x) + i] = t
      outs, touts = _jvp(self.body, cc + xx + kk, tans[:nc + len(x) + len(k)])
      return outs[:nc] + [touts[i] for i in fc] + outs[nc:] + [touts[nc + i] for i in fy]
    types = [_type(v) for v in c] + [_type(c[i]) for i in fc] + [self._x_type(v, a) for v, a in zip(x, self.x_axes, strict=True)] + \
      [self._x_type(x[i], self.x_axes[i]) for i in fx] + [_type(v) for v in k] + [_type(k[i]) for i in fk]
    args_x = x + [tx[i] for i in fx]
    new, hidden = trace(body, types, _device(xs), "scan")
    rule = Scan(new, nc + len(fc), self.x_axes + tuple(self.x_axes[i] for i in fx), self.y_types + [self.y_types[i] for i in fy],
                self.y_axes + tuple(self.y_axes[i] for i in fy), self.length, self.reverse)
    outs = rule.call(c + [tc[i] for i in fc] + args_x + k + [tk[i] for i in fk] + hidden)
    dcarry, dys = outs[nc:nc + len(fc)], outs[nc + len(fc) + ny:]
    out_t = [v.zeros_like() for v in outs[:nc]]
    for i, t in zip(fc, dcarry, strict=True): out_t[i] = t
    ys_t = [v.zeros_like() for v in outs[nc + len(fc):nc + len(fc) + ny]]
    for i, t in zip(fy, dys, strict=True): ys_t[i] = t
    return out_t + ys_t

  @staticmethod
  def _x_type(x: Tensor, axis: int) -> Type:
    s = static_shape(x)
    return s[:axis] + s[axis + 1:], x.dtype

  def vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]:
    c, x, k = self.split(xs)
    nc, ny = len(c), len(self.y_types)
    ct_c, ct_y = cts[:nc], cts[nc:]
    # forward again, saving the carry each step starts from (JAX saves its residuals instead: one forward pass)
    res = Scan(Body(self.body.params, self.body.outs + self.body.params[:nc]), nc, self.x_axes, self.y_types + [_type(v) for v in c],
               self.y_axes + (0,) * nc, self.length, self.reverse)
    saved = res.call(xs)[nc + ny:]
    fc = [i for i in range(nc) if _is_float(c[i])]
    fy = [i for i in range(ny) if dtypes.is_float(self.y_types[i][1])]
    fx = [i for i in range(len(x)) if _is_float(x[i])]
    fk = [i for i in range(len(k)) if _is_float(k[i])]
    def body(a: list[Tensor]) -> list[Tensor]:
      it = iter(a)
      g_c, acc = [next(it) for _ in fc], [next(it) for _ in fk]
      cc, xx, gy, kk = [next(it) for _ in c], [next(it) for _ in x], [next(it) for _ in fy], [next(it) for _ in k]
      out_ct: list[Tensor | None] = [None] * (nc + ny)
      for i, g in zip(fc, g_c, strict=True): out_ct[i] = g
      for i, g in zip(fy, gy, strict=True): out_ct[nc + i] = g
      gs = _vjp(self.body, cc + xx + kk, out_ct)
      return [gs[i] for i in fc] + [s + gs[nc + len(x) + i] for i, s in zip(fk, acc, strict=True)] + [gs[nc + i] for i in fx]
    types = [_type(c[i]) for i in fc] + [_type(k[i]) for i in fk] + [_type(v) for v in c] + \
      [self._x_type(v, a) for v, a in zip(x, self.x_axes, strict=True)] + [self.y_types[i] for i in fy] + [_type(v) for v in k]
    new, hidden = trace(body, types, _device(xs), "scan")
    back = Scan(new, len(fc) + len(fk), (0,) * nc + self.x_axes + tuple(self.y_axes[i] for i in fy),
                [self._x_type(x[i], self.x_axes[i]) for i in fx], tuple(self.x_axes[i] for i in fx), self.length, not self.reverse)
    outs = back.call([ct_c[i] for i in fc] + [k[i].zeros_like() for i in fk] + saved + x + [ct_y[i] for i in fy] + k + hidden)
    grads: list[Tensor | None] = [None] * len(xs)
    for i, g in zip(fc, outs[:len(fc)], strict=True): grads[i] = g
    for i, g in zip(fk, outs[len(fc):len(fc) + len(fk)], strict=True): grads[nc + len(x) + i] = g
    for i, g in zip(fx, outs[len(fc) + len(fk):], strict=True): grads[nc + i] = g
    return grads

  def batched(self, flags: list[int | None], size: int) -> CallRule:
    c, x, k = self.split(flags)
    nc = len(c)
    # every carry is batched (an unbatched init is broadcast): a batched x or const makes it so after one step anyway
    in_axes = [0] * nc + [None if f is None else 0 for f in x] + [None if f is None else 0 for f in k]
    x_axes = tuple(a + 1 if f is not None else a for f, a in zip(x, self.x_axes, strict=True))
    y_types = [((size,) + s, d) for s, d in self.y_types]
    y_axes = tuple(a + 1 for a in self.y_axes)
    def make(xs: list[Tensor]) -> UOp:
      xs = [_broadcast(v, f, size) if i < nc else v for i, (v, f) in enumerate(zip(xs, flags, strict=True))]
      cs, xx, ks = self.split(xs)
      types = [_type(v) for v in cs] + [self._x_type(v, a) for v, a in zip(xx, x_axes, strict=True)] + [_type(v) for v in ks]
      body, hidden = trace(_vmap(self.body, in_axes, size), types, _device(xs), "scan")
      return Scan(body, nc, x_axes, y_types, y_axes, self.length, self.reverse).call_node(xs + hidden)
    return BatchedCall(self.name, make)


# ---- while_loop --------------------------------------------------------------------------------------------------------

_WHILE_GRAD = ("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic start/stop values. "
               "Try using lax.scan, or using fori_loop with static start/stop.")

@dataclass(eq=False)
class While(HostCallRule):
  """cond(carry, consts) -> [pred], body(carry, consts) -> carry; arguments carry, consts; outputs the final carry."""
  cond: Body
  body: Body
  n_carry: int
  name = "while_loop"

  def out_types(self, xs): return [_type(c) for c in xs[:self.n_carry]]

  def executor(self, ins, outs):
    nc = self.n_carry
    cond = _compiled(self.cond, [(s, d, None) for s, d in ins], [((1,), dtypes.bool, None)])
    body = _compiled(self.body, [(s, d, None) for s, d in ins], [(s, d, None) for s, d in outs])
    def run(bufs: list[UOp]) -> None:
      out, init, ks = bufs[:nc], bufs[nc:2 * nc], bufs[2 * nc:]
      device = bufs[0].device
      pred, other = scratch_like(UOp.new_buffer(device, 1, dtypes.bool)), [scratch_like(b) for b in out]
      cur = init
      while True:   # the stop is read back each iteration: a data-dependent trip count, even in a TinyJit's replay
        cond(device).run(cur + ks + [pred])
        if not read_scalar(pred): break
        dst = out if cur is not out else other
        body(device).run(cur + ks + dst)
        cur = dst
      if cur is not out:
        for d, c in zip(out, cur, strict=True): copy_buffer(d, c)
    return run

  def jvp(self, xs, ts):
    nc = self.n_carry
    c, k, tc, tk = xs[:nc], xs[nc:], ts[:nc], ts[nc:]
    fc = [i for i, v in enumerate(c) if _is_float(v)]
    fk = [i for i, (v, t) in enumerate(zip(k, tk, strict=True)) if _is_float(v) and not is_zero(t)]
    def split(a):
      it = iter(a)
      return [next(it) for _ in c], [next(it) for _ in fc], [next(it) for _ in k], [next(it) for _ in fk]
    def cond(a):
      cc, _, kk, _ = split(a)
      return self.cond(cc + kk)
    def body(a):
      cc, dc, kk, dk = split(a)
      tans: list[Tensor | None] = [None] * (nc + len(k))
      for i, t in zip(fc, dc, strict=True): tans[i] = t
      for i, t in zip(fk, dk, strict=True): tans[nc + i] = t
      outs, touts = _jvp(self.body, cc + kk, tans)
      return outs + [touts[i] for i in fc]
    types = [_type(v) for v in c] + [_type(c[i]) for i in fc] + [_type(v) for v in k] + [_type(k[i]) for i in fk]
    args = c + [tc[i] for i in fc] + k + [tk[i] for i in fk]
    outs = _while(cond, body, nc + len(fc), args, types)
    out_t = [v.zeros_like() for v in c]
    for i, t in zip(fc, outs[nc:], strict=True): out_t[i] = t
    return out_t

  def vjp(self, xs, cts): raise ValueError(_WHILE_GRAD)

  def batched(self, flags, size):
    nc = self.n_carry
    # every carry is batched; the loop runs while any example's condition holds and freezes the finished ones
    in_axes = [0] * nc + [None if f is None else 0 for f in flags[nc:]]
    cond_b, body_b = _vmap(self.cond, in_axes, size), _vmap(self.body, in_axes, size)
    def cond(a): return [cond_b(a)[0].any()]
    def body(a):
      go, new = cond_b(a)[0].reshape(size), body_b(a)
      return [go.reshape(go.shape + (1,) * (n.ndim - 1)).where(n, c) for n, c in zip(new, a[:nc], strict=True)]
    def make(xs: list[Tensor]) -> list[UOp]:
      xs = [_broadcast(v, f, size) if i < nc else v for i, (v, f) in enumerate(zip(xs, flags, strict=True))]
      return [t.uop for t in _while(cond, body, nc, xs, [_type(v) for v in xs])]
    return BatchedCall(self.name, make)

def _while(cond: Callable, body: Callable, nc: int, args: list[Tensor], types: list[Type]) -> list[Tensor]:
  """A while node of flat functions of (carry, consts) -> [pred] / carry."""
  device = _device(args)
  (cb, bb), ks = _shared([trace(cond, types, device, "while_loop"), trace(body, types, device, "while_loop")], len(types), device)
  return While(cb, bb, nc).call(args + ks)


# ---- switch ------------------------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Switch(HostCallRule):
  """branches[index](operands, consts) -> outs; arguments index (int32 scalar), operands, consts."""
  branches: list[Body]
  types: list[Type]   # the outputs'
  name = "switch"

  def out_types(self, xs): return list(self.types)

  def executor(self, ins, outs):
    steps = [_compiled(b, [(s, d, None) for s, d in ins[1:]], [(s, d, None) for s, d in outs]) for b in self.branches]
    n = len(outs)
    def run(bufs: list[UOp]) -> None:
      i = min(max(int(read_scalar(bufs[n])), 0), len(steps) - 1)   # clamped, as JAX
      steps[i](bufs[0].device).run(bufs[n + 1:] + bufs[:n])
    return run

  def jvp(self, xs, ts):
    ops, tops = xs[1:], ts[1:]
    fo = [i for i, (v, t) in enumerate(zip(ops, tops, strict=True)) if _is_float(v) and not is_zero(t)]
    fy = [i for i, (_, d) in enumerate(self.types) if dtypes.is_float(d)]
    def branch(b: Body):
      def f(a):
        p, d = a[:len(ops)], a[len(ops):]
        tans: list[Tensor | None] = [None] * len(ops)
        for i, t in zip(fo, d, strict=True): tans[i] = t
        outs, touts = _jvp(b, p, tans)
        return outs + [touts[i] for i in fy]
      return f
    outs = _switch(xs[0], [branch(b) for b in self.branches], ops + [tops[i] for i in fo])
    out_t = [Tensor.zeros(*s, dtype=d) for s, d in self.types]
    for i, t in zip(fy, outs[len(self.types):], strict=True): out_t[i] = t
    return out_t

  def vjp(self, xs, cts):
    ops = xs[1:]
    fy = [i for i, (_, d) in enumerate(self.types) if dtypes.is_float(d)]
    fo = [i for i, v in enumerate(ops) if _is_float(v)]
    def branch(b: Body):
      def f(a):
        p, c = a[:len(ops)], a[len(ops):]
        ct: list[Tensor | None] = [None] * len(self.types)
        for i, t in zip(fy, c, strict=True): ct[i] = t
        g = _vjp(b, p, ct)
        return [g[i] for i in fo]
      return f
    outs = _switch(xs[0], [branch(b) for b in self.branches], ops + [cts[i] for i in fy])
    grads: list[Tensor | None] = [None] * len(xs)
    for i, g in zip(fo, outs, strict=True): grads[1 + i] = g
    return grads

  def batched(self, flags, size):
    in_axes = [None if f is None else 0 for f in flags[1:]]
    def make(xs: list[Tensor]) -> list[UOp]:
      if flags[0] is None: return [t.uop for t in _switch(xs[0], [_vmap(b, in_axes, size) for b in self.branches], xs[1:])]
      outs = [_vmap(b, in_axes, size)(xs[1:]) for b in self.branches]
      # a batched index: every branch runs, each example takes its own branch's outputs (JAX's select_n)
      idx = xs[0].clip(0, len(self.branches) - 1)
      res = []
      for j in range(len(self.types)):
        v = outs[0][j]
        for b in range(1, len(outs)):
          v = idx.reshape(idx.shape + (1,) * (v.ndim - 1)).eq(b).where(outs[b][j], v)
        res.append(v.uop)
      return res
    return BatchedCall(self.name, make)

def _switch(index: Tensor, branches: list[Callable], ops: list[Tensor]) -> list[Tensor]:
  device = _device([index] + ops)
  bodies, ks = _shared([trace(b, [_type(o) for o in ops], device, "switch") for b in branches], len(ops), device)
  return Switch(bodies, [(static_shape(u), u.dtype) for u in bodies[0].outs]).call([index.cast(dtypes.int32)] + ops + ks)


# ---- the API -----------------------------------------------------------------------------------------------------------

def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False):
  """jax.lax.scan: carry, ys = scan(f, init, xs) with f(carry, x) -> (carry, y), ys stacked along a new leading axis.
  Traced once and run as a loop on the device's buffers (never unrolled: `unroll` is accepted and ignored but for
  unroll=True, which builds the unrolled graph)."""
  c_leaves, c_tree = tu.tree_flatten(init)
  weak = [_weak(v) for v in c_leaves]
  carry = [as_tensor(v) for v in c_leaves]
  x_leaves, x_tree = _flat(xs)
  if any(not v.ndim for v in x_leaves):
    raise ValueError(f"scan got value with no leading axis to scan over: {', '.join(str(v.shape) for v in x_leaves if not v.ndim)}.")
  sizes = [int(v.shape[0]) for v in x_leaves]
  if length is not None:
    length = int(length)
    if any(n != length for n in sizes):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading axis sizes {sorted(set(sizes))}.")
  elif not sizes: raise ValueError("scan got no values to scan over and `length` not provided.")
  elif len(set(sizes)) > 1:
    what = ", ".join(f"{tu.keystr(p)}.shape[0]={n}" for p, n in zip(_paths(xs), sizes, strict=True))
    raise ValueError(f"scan got values with different leading axis sizes: {what}.")
  L = length if length is not None else sizes[0]
  if unroll is True and L > 0: return _unrolled(f, init, xs, L, reverse)
  nc = len(carry)
  box: dict[str, Any] = {}
  def fun(a: list[Tensor]) -> list[Tensor]:
    out = f(tu.tree_unflatten(c_tree, a[:nc]), tu.tree_unflatten(x_tree, a[nc:]))
    if not isinstance(out, (tuple, list)) or len(out) != 2:
      raise TypeError(f"scan body output must be a pair, got {tu.tree_structure(out)}.")
    new, new_tree = _flat(out[0])
    y, box["y_tree"] = _flat(out[1])
    box["carry"] = (new_tree, [_type(v) for v in new])
    box["y"] = [_type(v) for v in y]
    return new + y if new_tree == c_tree else a[:nc] + y
  types = [_type(v) for v in carry] + [(static_shape(v)[1:], v.dtype) for v in x_leaves]
  device = _device(carry + x_leaves)
  body, hidden = trace(fun, types, device, "scan")
  if (promoted := _promoted(carry, weak, box["carry"][1] if box["carry"][0] == c_tree else types[:nc])) is not None:
    carry = promoted
    body, hidden = trace(fun, [_type(v) for v in carry] + types[nc:], device, "scan")
  _check_carry("scan body", _carry_name(f), c_tree, [_type(v) for v in carry], box["carry"][0], box["carry"][1], _paths(init))
  if L == 0:
    return init, tu.tree_unflatten(box["y_tree"], [Tensor.zeros(0, *s, dtype=d, device=device) for s, d in box["y"]])
  rule = Scan(body, nc, (0,) * len(x_leaves), box["y"], (0,) * len(box["y"]), L, reverse)
  outs = rule.call(carry + x_leaves + hidden)
  return tu.tree_unflatten(c_tree, outs[:nc]), tu.tree_unflatten(box["y_tree"], outs[nc:])

def _carry_name(f: Callable) -> str:
  """The name JAX gives the carry in its messages: the body function's first parameter."""
  import inspect
  try: return next(iter(inspect.signature(f).parameters))
  except (TypeError, ValueError, StopIteration): return "carry"

def _unrolled(f: Callable, init, xs, L: int, reverse: bool):
  carry, ys = init, []
  for i in (range(L - 1, -1, -1) if reverse else range(L)):
    carry, y = f(carry, tu.tree_map(lambda v: as_tensor(v)[i], xs))
    ys.append(y)
  if reverse: ys.reverse()
  return carry, tu.tree_map(lambda *a: Tensor.stack(*[as_tensor(v) for v in a]), *ys)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
  """jax.lax.fori_loop: body_fun(i, val) for i in [lower, upper). With concrete bounds it is a scan (so reverse-mode
  differentiable, as in JAX); with traced bounds a while_loop."""
  lo, hi = _concrete_int(lower), _concrete_int(upper)
  if lo is not None and hi is not None:
    dt = as_tensor(lower).dtype if isinstance(lower, Tensor) else as_tensor(upper).dtype if isinstance(upper, Tensor) else as_tensor(0).dtype
    n = max(hi - lo, 0)
    if n == 0: return init_val
    def step(val, i): return body_fun(i, val), None
    return scan(step, init_val, Tensor.arange(lo, hi, dtype=dt), unroll=bool(unroll) if unroll is True else 1)[0]
  lo_t, hi_t = as_tensor(lower), as_tensor(upper)
  i0 = lo_t.cast(hi_t.dtype) if lo_t.dtype != hi_t.dtype else lo_t
  _, _, out = while_loop(lambda c: c[0] < c[1], lambda c: (c[0] + 1, c[1], body_fun(c[0], c[2])), (i0, hi_t, init_val))
  return out

def _concrete_int(x) -> int | None:
  """x as a Python int if it is concrete (a Python or numpy integer, a Tensor that is not traced), else None."""
  if isinstance(x, (int, np.integer)) and not isinstance(x, bool): return int(x)
  if not isinstance(x, Tensor) or x.shape != () or not dtypes.is_int(x.dtype): return None
  if x.uop.base.op is Ops.CONST: return int(x.uop.base.arg)
  # a traced value, or one computed from a jitted function's inputs (which cannot be read while it is captured)
  if traced_by(x) is not None or jit_capturing() or not enclosing_inputs().isdisjoint(x.uop.toposort()): return None
  return int(x.item())

def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
  """jax.lax.while_loop: while cond_fun(val): val = body_fun(val). The loop runs on the device's buffers; the
  condition is read back each iteration (also in a jitted function's replay). Not reverse-mode differentiable."""
  c_leaves, c_tree = tu.tree_flatten(init_val)
  weak = [_weak(v) for v in c_leaves]
  carry = [as_tensor(v) for v in c_leaves]
  nc = len(carry)
  box: dict[str, Any] = {}
  def cond(a: list[Tensor]) -> list[Tensor]:
    p = cond_fun(tu.tree_unflatten(c_tree, a[:nc]))
    pl = tu.tree_leaves(p)
    if len(pl) != 1 or not isinstance(pl[0], (Tensor, bool, np.bool_)) or as_tensor(pl[0]).shape != () or as_tensor(pl[0]).dtype != dtypes.bool:
      got = [f"{_tstr(_type(as_tensor(v)))}" for v in pl]
      raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) [{', '.join(got)}].")
    return [as_tensor(pl[0]).reshape(1)]
  def body(a: list[Tensor]) -> list[Tensor]:
    new, tree = _flat(body_fun(tu.tree_unflatten(c_tree, a[:nc])))
    box["carry"] = (tree, [_type(v) for v in new])
    return new if tree == c_tree else a[:nc]
  device = _device(carry)
  types = [_type(v) for v in carry]
  traced = [trace(cond, types, device, "while_loop"), trace(body, types, device, "while_loop")]
  if (promoted := _promoted(carry, weak, box["carry"][1] if box["carry"][0] == c_tree else types)) is not None:
    carry, types = promoted, [_type(v) for v in promoted]
    traced = [trace(cond, types, device, "while_loop"), trace(body, types, device, "while_loop")]
  _check_carry("while_loop body", _carry_name(body_fun), c_tree, types, box["carry"][0], box["carry"][1], _paths(init_val))
  (cb, bb), ks = _shared(traced, nc, device)
  return tu.tree_unflatten(c_tree, While(cb, bb, nc).call(carry + ks))

_no_operand = object()

def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_no_operand):
  """jax.lax.cond: `true_fun(*operands) if pred else false_fun(*operands)`. Only the chosen branch runs (a batched
  predicate under vmap runs both and selects, as in JAX)."""
  if operand is not _no_operand:
    if operands: raise TypeError("if `operand` is passed, `operands` should not be passed")
    operands = (operand,)
  p = as_tensor(pred)
  if p.shape != (): raise TypeError(f"Pred must be a scalar, got {pred} of shape {tuple(p.shape)}.")
  if not (p.dtype == dtypes.bool or dtypes.is_int(p.dtype) or dtypes.is_float(p.dtype)):
    raise TypeError(f"Pred type must be either boolean or number, got {p.dtype}.")
  return _branches("cond", p.ne(0).cast(dtypes.int32), [false_fun, true_fun], operands)

def switch(index, branches: Sequence[Callable], *operands, operand=_no_operand):
  """jax.lax.switch: `branches[clamp(index, 0, len(branches) - 1)](*operands)`; only that branch runs."""
  if operand is not _no_operand: operands = (operand,)
  if not isinstance(branches, (list, tuple)) or not branches: raise ValueError("Empty branch sequence")
  i = as_tensor(index)
  if i.shape != (): raise TypeError(f"Branch index must be scalar, got {index} of shape {tuple(i.shape)}.")
  if not dtypes.is_int(i.dtype): raise TypeError(f"Index type must be an integer, got {index} as {dtype_name(i.dtype)}")
  if len(branches) == 1: return branches[0](*operands)
  return _branches("switch", i, list(branches), operands)

def _branches(api: str, index: Tensor, funs: list[Callable], operands: tuple):
  leaves, tree = _flat(operands)
  trees: list[Any] = []
  def wrap(f):
    def g(a: list[Tensor]) -> list[Tensor]:
      out, t = _flat(f(*tu.tree_unflatten(tree, a)))
      trees.append((t, [_type(v) for v in out]))
      return out
    return g
  device = _device([index] + leaves)
  traced = [trace(wrap(f), [_type(v) for v in leaves], device, api) for f in funs]
  _check_branches(api, funs, trees)
  bodies, ks = _shared(traced, len(leaves), device)
  outs = Switch(bodies, trees[0][1]).call([index] + leaves + ks)
  return tu.tree_unflatten(trees[0][0], outs)

def _check_branches(api: str, funs: list[Callable], trees: list) -> None:
  names = ("true_fun", "false_fun") if api == "cond" else tuple(f"branches[{i}]" for i in range(len(funs)))
  order = [1, 0] if api == "cond" else list(range(len(funs)))   # cond's funs are (false, true); JAX names true first
  a = order[0]
  for b in order[1:]:
    (ta, ya), (tb, yb) = trees[a], trees[b]
    where = (f"{names[0]} is {_fun_desc(funs[a])}\n{names[1]} is {_fun_desc(funs[b])}\n\n" if api == "cond" else "")
    if ta != tb:
      raise TypeError(f"{api} branch outputs must have the same pytree structure, but they differ:\n\n{where}"
                      f"{names[0]} output is {ta} but {names[order.index(b)]} output is {tb}.")
    for x, y in zip(ya, yb, strict=True):
      if x != y:
        why = "the dtypes do not match" if x[0] == y[0] else "the shapes do not match"
        raise TypeError(f"{api} branches must have equal output types but they differ.\n\n{where}The output of "
                        f"{names[0]} has type {_tstr(x)} but the corresponding output of {names[order.index(b)]} has type "
                        f"{_tstr(y)}, so {why}.")

def _fun_desc(f: Callable) -> str:
  code = getattr(f, "__code__", None)
  return f"{getattr(f, '__name__', repr(f))} at {code.co_filename}:{code.co_firstlineno}" if code else repr(f)

def map(f: Callable, xs, *, batch_size: int | None = None):   # noqa: A001 (JAX's name)
  """jax.lax.map: f applied to each slice of xs along the leading axis, as a scan (batch_size: that many at once,
  under vmap)."""
  if batch_size is None: return scan(lambda c, x: (c, f(x)), (), xs)[1]
  leaves, tree = _flat(xs)
  n = int(leaves[0].shape[0])
  k, rest = divmod(n, batch_size)
  out = []
  if k:
    from tinyjax.transforms.vmap import vmap
    blocks = tu.tree_unflatten(tree, [v[:k * batch_size].reshape(k, batch_size, *v.shape[1:]) for v in leaves])
    ys = scan(lambda c, x: (c, vmap(f)(x)), (), blocks)[1]
    out.append(tu.tree_map(lambda y: y.reshape(k * batch_size, *y.shape[2:]), ys))
  if rest:
    from tinyjax.transforms.vmap import vmap
    out.append(vmap(f)(tu.tree_unflatten(tree, [v[k * batch_size:] for v in leaves])))
  return out[0] if len(out) == 1 else tu.tree_map(lambda a, b: a.cat(b), *out)

def select(pred, on_true, on_false) -> Tensor:
  """jax.lax.select: elementwise on_true where pred else on_false (same shapes; pred bool, scalar or of that shape)."""
  p, t, f = as_tensor(pred), as_tensor(on_true), as_tensor(on_false)
  if p.dtype != dtypes.bool: raise TypeError(f"select `which` must be boolean or integer type; got {dtype_name(p.dtype)}")
  if t.shape != f.shape or t.dtype != f.dtype:
    raise TypeError(f"select cases must have the same shapes and dtypes, got [{_tstr(_type(t))}, {_tstr(_type(f))}].")
  if p.shape not in ((), t.shape):
    raise TypeError(f"select `which` must be scalar or have the same shape as cases, got `which` shape {tuple(p.shape)} "
                    f"but case shape {tuple(t.shape)}.")
  return p.where(t, f)

def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
  """jax.lax.associative_scan: the inclusive prefix combination of elems along `axis` with the associative fn, by
  JAX's parallel algorithm (log-depth of strided slices: its numbers, not a sequential loop's)."""
  leaves, tree = _flat(elems)
  if not leaves: return elems
  ax = axis % leaves[0].ndim
  n = int(leaves[0].shape[ax])
  if any(int(v.shape[ax]) != n for v in leaves):
    raise ValueError(f"Array inputs to associative_scan must have the same first dimension. (saw: {[tuple(v.shape) for v in leaves]})")
  if reverse: leaves = [v.flip(ax) for v in leaves]
  def combine(a: list[Tensor], b: list[Tensor]) -> list[Tensor]:
    out = tu.tree_leaves(fn(tu.tree_unflatten(tree, a), tu.tree_unflatten(tree, b)))
    return [as_tensor(o) for o in out]
  def sl(v: Tensor, start: int, stop: int | None, step: int) -> Tensor:
    idx = [slice(None)] * v.ndim
    idx[ax] = slice(start, stop, step)
    return v[tuple(idx)]
  def interleave(a: Tensor, b: Tensor) -> Tensor:
    # a[0], b[0], a[1], b[1], ... along ax (a may be one longer)
    na, nb = int(a.shape[ax]), int(b.shape[ax])
    if nb < na: b = b.pad(tuple((0, 1) if i == ax else None for i in range(b.ndim)))
    both = a.unsqueeze(ax + 1).cat(b.unsqueeze(ax + 1), dim=ax + 1)
    flat = both.reshape(*a.shape[:ax], 2 * na, *a.shape[ax + 1:])
    return sl(flat, 0, na + nb, 1)
  def scan_(elems: list[Tensor]) -> list[Tensor]:
    m = int(elems[0].shape[ax])
    if m < 2: return elems
    reduced = combine([sl(e, 0, -1, 2) for e in elems], [sl(e, 1, None, 2) for e in elems])
    odd = scan_(reduced)
    if m % 2 == 0: even = combine([sl(e, 0, -1, 1) for e in odd], [sl(e, 2, None, 2) for e in elems])
    else: even = combine(odd, [sl(e, 2, None, 2) for e in elems])
    even = [sl(e, 0, 1, 1) if int(x.shape[ax]) == 0 else sl(e, 0, 1, 1).cat(x, dim=ax) for e, x in zip(elems, even, strict=True)]
    return [interleave(e, o) for e, o in zip(even, odd, strict=True)]
  out = scan_(leaves)
  if reverse: out = [v.flip(ax) for v in out]
  return tu.tree_unflatten(tree, out)

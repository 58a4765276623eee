"""VMAPIN / VMAPOUT and the batching rules that lower them to ordinary tinygrad graphs.

A batched value is a pair (uop, batched). When `batched`, `uop` has the batch as a real *leading* dimension: its shape
is (B, *s) where s is the node's shape inside the vmap scope. Otherwise `uop` is a rebuilt, unbatched node of shape s.
Keeping the batch leading makes the rules short; movement ops put it where the user asked at VMAPOUT.
"""
from __future__ import annotations
import weakref
import numpy as np
from dataclasses import dataclass, field, replace
from typing import Callable, Hashable, cast
from tinyjax._tg import Tensor, UOp, Ops, GroupOp, dtypes, static_shape, placeholder, marker_arg, move_axis, custom_rule_of, gather, mop, rop, \
  broadcast_to, sharding, shard_like, host_buffer
from tinyjax.core import interpret, table_rule, operands, rebuild, pending, remember_traced, TracedMarker, CUSTOM_CALL, GATHER, PASSTHROUGH, \
  canonicalize_axis

# ---- the ambient batch index ----------------------------------------------------------------------------------------

@dataclass(eq=False)
class Axis:
  """One vmap scope: the batch index. Nested vmaps have distinct axes."""
  size: int
  name: Hashable | None = None
  env: dict = field(default_factory=dict, repr=False)   # traced node -> (uop, batched): the lowering's memo
  pending: list = field(default_factory=list, repr=False)  # its placeholders, guarded against reads until vmapout
  multi: bool = False   # a mapped input is on several devices (a batch sharded along its axis, or replicated)

  def release(self):
    while self.pending: pending.discard(self.pending.pop())

  def is_source(self, u: UOp) -> bool:
    c = marker_arg(u)
    return isinstance(c, Collective) and c.axis is self

  def rule(self, u: UOp, vals: list) -> tuple[UOp, bool] | Selected:
    if any(isinstance(v, Selected) for v in vals):
      if (r := selected_rule(u, vals, self.size)) is not None: return r
      vals = [v.plain() if isinstance(v, Selected) else v for v in vals]   # otherwise: materialise, ordinary rules
    pairs = [(s, False) if v is None else v for s, v in zip(operands(u), vals, strict=True)]
    if self.multi: pairs = _replicated(pairs)
    if self.is_source(u): return COLLECTIVE_RULES[u.arg.kind](u.arg, pairs[0])
    if not any(b for _, b in pairs): return rebuild(u, [s for s, _ in pairs]), False
    return batch_rule(u)(u, pairs, self.size)


@dataclass(frozen=True)
class Collective(TracedMarker):
  """Marker argument for a collective primitive over a named vmap axis: a key of COLLECTIVE_RULES (psum, pmean, pmax, pmin,
  axis_index, all_to_all, ppermute); tinyjax.lax builds the other collectives from these and movement ops."""
  kind: str
  axis: Axis
  sources: tuple[int | None, ...] = ()   # ppermute: the example each example receives from (None: zeros)


# ---- VMAPIN / VMAPOUT -----------------------------------------------------------------------------------------------

def vmapin(x: Tensor, in_axis: int, axis: Axis) -> Tensor:
  """Enter the vmap scope `axis`: a placeholder with x's shape minus `in_axis` (the mapped axis disappears)."""
  if not -x.ndim <= in_axis < x.ndim:
    raise ValueError(f"vmap was requested to map its argument along axis {in_axis}, which implies that its rank should "
                     f"be at least {in_axis + 1 if in_axis >= 0 else -in_axis}, but is only {x.ndim} (its shape is {tuple(x.shape)})")
  in_axis %= x.ndim
  if x.shape[in_axis] != axis.size:
    raise ValueError(f"vmapin: axis {in_axis} of shape {tuple(x.shape)} has size {x.shape[in_axis]}, not the axis size {axis.size}")
  ph = placeholder(tuple(s for i, s in enumerate(x.shape) if i != in_axis), x.dtype, x.device)
  axis.multi |= isinstance(x.device, tuple)
  moved = move_axis(x.uop, in_axis, 0)
  axis.env[ph.uop] = Selected.basis(moved) if moved in BASIS else (moved, True)
  pending.add(ph.uop)   # reading it before vmapout raises
  remember_traced(ph.uop)
  axis.pending.append(ph.uop)
  return ph

def vmapout(y: Tensor, out_axis: int | None, axis: Axis) -> Tensor:
  """Leave the vmap scope `axis`: the batch reappears, with size axis.size, at `out_axis` (None: y must be unbatched)."""
  axis.release()
  val, = interpret([y.uop], axis.env, axis.rule, axis.is_source)
  u, batched = (y.uop, False) if val is None else val.plain() if isinstance(val, Selected) else val
  if out_axis is None:
    if batched: raise ValueError("at vmap out_axes, got axis spec None but output was batched on axis 0")
    return Tensor(u)
  nd = u.ndim + (0 if batched else 1)
  out_axis = canonicalize_axis(out_axis, nd)
  if not batched: u = broadcast_to(u, (axis.size,) + u.shape)
  return Tensor(move_axis(u, 0, out_axis))


# ---- batching rules: one per op -------------------------------------------------------------------------------------

def _replicated(pairs: list[tuple[UOp, bool]]) -> list[tuple[UOp, bool]]:
  """Operands on one device copied to the devices of an operand on several: the function's constants (and the
  unbatched arguments) meet a batch sharded over devices, which tinygrad's multi-device ops need on the same devices."""
  multi = next((d for s, _ in pairs if isinstance(d := s.device, tuple)), None)
  if multi is None: return pairs
  return [(Tensor(s).to(multi).uop, b) if isinstance(s.device, str) else (s, b) for s, b in pairs]


def _full_rank(v: UOp, batched: bool, nd: int) -> UOp:
  # ALU sources broadcast right-aligned: a batched source of lower rank gets 1s after the batch so they stay aligned
  if not batched or v.ndim - 1 == nd: return v
  return v.reshape((v.shape[0],) + (1,) * (nd - v.ndim + 1) + v.shape[1:])

def _elementwise(u, pairs, B):
  return u.replace(src=tuple(_full_rank(v, b, u.ndim) for v, b in pairs)), True

def _passthrough(u, pairs, B):
  (v, _), *rest = pairs
  if any(b for _, b in rest): raise NotImplementedError(f"tinyjax.vmap: batched extra sources of {u.op.name}")
  return u.replace(src=(v,) + tuple(s for s, _ in rest)), True

def _movement(fn):
  def rule(u, pairs, B):
    if any(b for _, b in pairs[1:]): raise NotImplementedError(f"tinyjax.vmap: {u.op.name} with a shape that depends on a mapped value")
    return fn(u, pairs[0][0], B), True
  return rule

def _expand(u, v, B):
  m = u.marg   # EXPAND adds leading dims: (*m, B, *s) -> move the batch back in front
  return move_axis(mop(v, Ops.EXPAND, m), len(m), 0)

def _reduce(u, pairs, B):
  (v, _), = pairs
  k = u.arg[1]   # REDUCE reduces the leading k axes: put the batch just after them
  return u.replace(src=(move_axis(v, 0, k),)), True

def _stack(u, pairs, B):
  srcs = [v if b else broadcast_to(v, (B,) + v.shape) for v, b in pairs]
  # a batch sharded across devices: the other sources are split the same way (tinygrad stacks a replica whole with shards)
  if (like := next((s for s in srcs if isinstance(s.device, tuple) and s.axis is not None), None)) is not None:
    srcs = [shard_like(s, like) for s in srcs]
  return move_axis(u.replace(src=tuple(srcs)), 1, 0), True

def _custom_call(u, pairs, B):
  # a custom_jvp/custom_vjp call stays a custom call, of the vmapped functions, so its rules survive vmap
  rule = custom_rule_of(u).batched([0 if b else None for _, b in pairs[1:]], B)
  return rule.call_node([Tensor(v) for v, _ in pairs[1:]]), True

def _gather(u, pairs, B):
  # tinyjax's gather kernel: offset each example's indices (pairs: (src, idx))
  (src, sb), (idx, ib) = pairs
  n = int(src.numel()) // (B if sb else 1)
  idx = Tensor(idx if ib else broadcast_to(idx, (B,) + idx.shape))
  if sb:
    shape = (B,) + (1,) * (idx.ndim - 1)
    match sharding(s := Tensor(src)), s.device:
      case None, _: idx = idx + (Tensor.arange(B, dtype=dtypes.int32) * n).reshape(shape)
      case 0, tuple(devs):   # a batch sharded along its axis: each device's kernel sees its own examples, offsets from 0
        idx = idx + cast(Tensor, host_buffer((np.arange(B, dtype=np.int32) % (B // len(devs)) * n).reshape(shape), devs, axis=0))
      case _: raise NotImplementedError("tinyjax.vmap: a gather from an array sharded across devices along another axis than the mapped one")
  return gather(Tensor(src), idx).uop, True

BATCH_RULES: dict[Ops | str, Callable] = {
  CUSTOM_CALL: _custom_call,
  GATHER: _gather,
  # a custom call's batched rule gives its node, or its outputs (a batched lax.cond's select has no node)
  Ops.GETTUPLE: lambda u, pairs, B: (pairs[0][0][u.arg] if isinstance(pairs[0][0], list) else pairs[0][0].gettuple(u.arg), True),
  **{op: _elementwise for op in GroupOp.ALU | {Ops.CAST, Ops.BITCAST, Ops.CUSTOM}},
  Ops.RESHAPE: _movement(lambda u, v, B: mop(v, Ops.RESHAPE, (B,) + u.marg)),
  Ops.EXPAND: _movement(_expand),
  Ops.PERMUTE: _movement(lambda u, v, B: mop(v, Ops.PERMUTE, (0,) + tuple(p + 1 for p in u.marg))),
  Ops.PAD: _movement(lambda u, v, B: mop(v, Ops.PAD, ((0, B),) + u.marg)),
  Ops.SHRINK: _movement(lambda u, v, B: mop(v, Ops.SHRINK, ((0, B),) + u.marg)),
  Ops.FLIP: _movement(lambda u, v, B: mop(v, Ops.FLIP, (False,) + u.marg)),
  Ops.REDUCE: _reduce,
  Ops.STACK: _stack,
  **{op: _passthrough for op in PASSTHROUGH | {Ops.DETACH}},
}
batch_rule = table_rule(BATCH_RULES, "vmap")


# ---- selected values: a 0/1 view of a standard basis times an unbatched factor ---------------------------------------
# jacfwd / jacrev vmap over a standard basis (jacobian._basis). The JVP / VJP graph is linear in it: multiplied by
# unbatched values, moved, added, summed. As long as that holds the value stays ev * g, ev (B, *s) a movement-op view
# of the identity, g (*s) unbatched. A sum over the axes that select the basis element is then a movement of g
# (sum_k [b == off + k] g[k, ...] = g[b - off, ...]), not a REDUCE: the emitted graph has no contraction with the
# identity, as a derivative written by hand has none. Anything else materialises ev * g and takes the ordinary rules.

# basis view (N, *shape) -> (strides, offset) of its one-hot column (Selected.amap); weak: jacobian's cache owns them
BASIS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

@dataclass(frozen=True, eq=False)
class Selected:
  """The batched value ev * g. amap = (strides, off): ev[b, *e] == (b == off + sum_d strides[d] * e[d]), or None when
  unknown (after a PAD)."""
  ev: UOp
  g: UOp
  amap: tuple[tuple[int, ...], int] | None

  @staticmethod
  def basis(ev: UOp) -> Selected: return Selected(ev, _ones(tuple(ev.shape[1:]), ev.dtype), BASIS[ev])

  def plain(self) -> tuple[UOp, bool]:
    if self.g is _ones(tuple(self.g.shape), self.g.dtype): return self.ev.cast(self.g.dtype), True
    return self.ev.cast(self.g.dtype) * self.g, True

def _ones(shape: tuple, dtype) -> UOp: return Tensor.full(shape, 1.0, dtype=dtype, buffer=False).uop   # a CONST, no buffer

def _reshape_strides(old: tuple, st: tuple, new: tuple) -> tuple | None:
  """The index map's strides after a reshape old -> new, or None if it is not affine in the new axes."""
  o = [(d, x) for d, x in zip(old, st, strict=True) if d != 1]
  n = [i for i, d in enumerate(new) if d != 1]
  out, oi, ni = [0] * len(new), 0, 0
  while oi < len(o) and ni < len(n):
    po, pn, oj, nj = o[oi][0], new[n[ni]], oi + 1, ni + 1
    while po != pn:
      if po < pn: po, oj = po * o[oj][0], oj + 1
      else: pn, nj = pn * new[n[nj]], nj + 1
    if any(o[k][1] != o[k + 1][1] * o[k + 1][0] for k in range(oi, oj - 1)): return None   # merged axes not contiguous
    x = o[oj - 1][1]
    for k in range(nj - 1, ni - 1, -1): out[n[k]], x = x, x * new[n[k]]
    oi, ni = oj, nj
  return tuple(out)

def _moved_amap(u: UOp, amap):
  if amap is None: return None
  (st, off), shape = amap, tuple(u.src[0].shape)
  match u.op:
    case Ops.RESHAPE: return None if (ns := _reshape_strides(shape, st, tuple(u.marg))) is None else (ns, off)
    case Ops.EXPAND: return (0,) * len(u.marg) + st, off
    case Ops.PERMUTE: return tuple(st[i] for i in u.marg), off
    case Ops.SHRINK: return st, off + sum(x * a for x, (a, _) in zip(st, u.marg, strict=True))
    case Ops.FLIP:
      return (tuple(-x if f else x for x, f in zip(st, u.marg, strict=True)),
              off + sum(x * (d - 1) for x, d, f in zip(st, shape, u.marg, strict=True) if f))
  return None   # PAD

def _broadcast(v: Selected, shape: tuple, B: int) -> Selected:
  """v as a source of an ALU node of `shape` (ALU sources broadcast right-aligned): ev and amap follow, g stays."""
  if tuple(v.g.shape) == shape: return v
  ev = broadcast_to(_full_rank(v.ev, True, len(shape)), (B,) + shape)
  amap = None if v.amap is None else \
    ((0,) * (len(shape) - v.g.ndim) + tuple(0 if d == 1 else x for x, d in zip(v.amap[0], v.g.shape, strict=True)), v.amap[1])
  return Selected(ev, v.g, amap)

def _is_zero(u: UOp) -> bool:
  """A literal zero (a CONST, possibly reshaped, broadcast or cast): the other branch of the JVP rule's WHERE."""
  nodes = u.toposort()
  return all(n.op in (Ops.CONST, Ops.RESHAPE, Ops.EXPAND, Ops.STACK, Ops.CAST) for n in nodes) and \
    all(n.arg == 0 for n in nodes if n.op is Ops.CONST and n.dtype != dtypes.weakint)

def _selected_reduce(u: UOp, v: Selected, B: int):
  if u.arg[0] is not Ops.ADD or v.amap is None: return None
  (st, off), shape, k = v.amap, static_shape(v.g), u.arg[1]
  red, kept = range(k), range(k, len(shape))
  if all(st[i] == 0 or shape[i] == 1 for i in red):   # the summed axes select nothing: sum g, keep the selector
    ev = mop(v.ev, Ops.SHRINK, ((0, B),) + tuple((0, 1) if i < k else (0, d) for i, d in enumerate(shape)))
    return Selected(mop(ev, Ops.RESHAPE, (B,) + shape[k:]), u.replace(src=(v.g,)), (st[k:], off))
  if any(st[i] != 0 and shape[i] != 1 for i in kept): return None   # partly selected: materialise
  # the summed axes enumerate a contiguous block of the basis: sum_k [b == off + flat(k)] g[k, rest] = g[b - off, rest]
  axes = sorted((i for i in red if shape[i] != 1), key=lambda i: -st[i])
  n, want = 1, list[int]()
  for i in reversed(axes): want, n = want + [n], n * shape[i]
  if [st[i] for i in reversed(axes)] != want or off < 0 or off + n > B: return None
  g = v.g.permute(tuple(axes) + tuple(i for i in red if shape[i] == 1) + tuple(kept))
  g = mop(g, Ops.RESHAPE, (n,) + shape[k:])
  return (g if n == B else mop(g, Ops.PAD, ((off, B),) + tuple((0, d) for d in shape[k:]))), True

def selected_rule(u: UOp, vals: list, B: int):
  """u's batched value when a source is Selected, or None: materialise and take the ordinary rule."""
  if not dtypes.is_float(u.dtype) or operands(u) is not u.src: return None
  if u.op in GroupOp.Movement:
    if not isinstance(v := vals[0], Selected) or any(w is not None for w in vals[1:]): return None
    ev, _ = BATCH_RULES[u.op](u, [(v.ev, True)] + [(s, False) for s in u.src[1:]], B)
    return Selected(ev, u.replace(src=(v.g,) + u.src[1:]), _moved_amap(u, v.amap))
  if u.op is Ops.REDUCE: return _selected_reduce(u, vals[0], B)
  if any(w is not None and not isinstance(w, Selected) and w[1] for w in vals): return None   # with a plain batched value
  sel = [i for i, w in enumerate(vals) if isinstance(w, Selected)]
  others = {i: (s if w is None else w[0]) for i, (s, w) in enumerate(zip(u.src, vals, strict=True)) if not isinstance(w, Selected)}
  linear = u.op is Ops.CAST or (u.op is Ops.MUL and len(sel) == 1) or (u.op is Ops.ADD and len(sel) == 2) or \
    (u.op is Ops.WHERE and 0 not in sel and (len(sel) == 2 or _is_zero(others[3 - sel[0]])))
  if not linear: return None
  vs = [_broadcast(vals[i], tuple(u.shape), B) for i in sel]
  if len(vs) > 1 and (vs[0].amap is None or any(w.amap != vs[0].amap for w in vs)): return None
  return Selected(vs[0].ev, u.replace(src=tuple(vals[i].g if i in sel else others[i] for i in range(len(u.src)))), vs[0].amap)


# ---- collectives over this axis: the batch dimension is reduced, enumerated or exchanged ----------------------------
# One rule per collective primitive. `lower` runs at the VMAPOUT of the collective's own axis (other axes batch the marker
# elementwise: BATCH_RULES[Ops.CUSTOM]); `jvp` gives the marker's tangent (tinyjax.jvp); `vjp` the cotangent of its source,
# through which tinygrad's compute_gradient differentiates it (tinyjax.vjp wraps markers in calls: `differentiable`).
# all_to_all is the primitive that moves data between examples: example i gets, at index k of its last axis, example k's
# value at index i of that axis (the last axis has the axis' size). tinyjax.lax builds all_gather, psum_scatter, ppermute
# and the general all_to_all from it and movement ops, so they inherit vmap, jvp and vjp from these rules.
from tinyjax._tg import marker, custom_call, param_like, inline_call   # used below only

def collective(kind: str, x: UOp, axis: Axis, sources: tuple = ()) -> UOp: return marker(x, Collective(kind, axis, sources))

@dataclass(frozen=True)
class CollectiveRule:
  lower: Callable[[Collective, tuple[UOp, bool]], tuple[UOp, bool]]   # (marker arg, (source, batched)) -> (uop, batched)
  jvp: Callable[[UOp, UOp], UOp] | None = None   # (marker, tangent of its source) -> its tangent
  vjp: Callable[[UOp, UOp], UOp] | None = None   # (marker, its cotangent) -> cotangent of its source
  def __call__(self, c: Collective, pair: tuple[UOp, bool]) -> tuple[UOp, bool]: return self.lower(c, pair)   # Axis.rule's call

def _same(u: UOp, t: UOp) -> UOp: return u.replace(src=(t,))   # linear, self-adjoint: the same collective of t

# pmax/pmin: the examples that attain the result share its derivative equally (jnp.max's convention at ties; JAX itself
# has no derivative rule for pmax/pmin)
def _chooser_jvp(u: UOp, t: UOp) -> UOp:
  mask, ax = u.src[0].eq(u).cast(t.dtype), u.arg.axis
  return collective("psum", mask * t, ax) / collective("psum", mask, ax)

def _chooser_vjp(u: UOp, ct: UOp) -> UOp:
  mask, ax = u.src[0].eq(u).cast(ct.dtype), u.arg.axis
  return mask * collective("psum", ct, ax) / collective("psum", mask, ax)

def _batch(c: Collective, p: tuple[UOp, bool]) -> UOp: return p[0] if p[1] else broadcast_to(p[0], (c.axis.size,) + p[0].shape)

def _all_to_all(c: Collective, p: tuple[UOp, bool]) -> tuple[UOp, bool]:
  v = _batch(c, p)
  return v.permute((v.ndim - 1,) + tuple(range(1, v.ndim - 1)) + (0,)), True   # exchange the batch and the last axis

def _take_rows(v: UOp, idx: tuple[int | None, ...]) -> UOp:
  """v[idx] for static indices, None giving zeros: a sum of padded slices, one per run of consecutive indices."""
  out, start, whole, none = None, 0, tuple((0, d) for d in v.shape[1:]), ((0, 0),) * (v.ndim - 1)
  for m in range(1, len(idx) + 1):
    a, b = idx[m - 1], idx[m] if m < len(idx) else None
    if a is not None and b == a + 1: continue
    if a is not None:
      piece = v.shrink(((a - (m - 1 - start), a + 1),) + whole).pad(((start, len(idx) - m),) + none)
      out = piece if out is None else out + piece
    start = m
  return v.const_like(0) if out is None else out

def _ppermute(c: Collective, p: tuple[UOp, bool]) -> tuple[UOp, bool]:
  t = Tensor(_batch(c, p))
  if not (isinstance(t.device, tuple) and sharding(t) == 0): return _take_rows(t.uop, c.sources), True
  # a batch sharded across devices: tinygrad 0.14 fails to schedule a slice of one shard of a buffer ("UOp verification
  # failed ... RANGE"), so each example sums the rows selected for it, a reduce over the sharded axis (an allreduce)
  B, devs = c.axis.size, t.device
  sel = np.zeros((B, B), dtype=np.bool_)
  for d, s in enumerate(c.sources):
    if s is not None: sel[d, s] = True
  mask = cast(Tensor, host_buffer(sel, devs, axis=1)).reshape((B, B) + (1,) * (t.ndim - 1))
  return mask.where(t.unsqueeze(0).expand((B,) + t.shape), 0).sum(1).uop, True

def _inverse(u: UOp, ct: UOp) -> UOp:   # ppermute's transpose: the inverse (partial) permutation
  inv: list[int | None] = [None] * len(u.arg.sources)
  for d, s in enumerate(u.arg.sources):
    if s is not None: inv[s] = d
  return marker(ct, replace(u.arg, sources=tuple(inv)))

def _min0(v): return Tensor(v).min(0).uop
COLLECTIVE_RULES: dict[str, CollectiveRule] = {
  "psum": CollectiveRule(lambda c, p: (rop(p[0], Ops.ADD, (0,)), False) if p[1] else ((Tensor(p[0]) * c.axis.size).uop, False), _same, _same),
  "pmean": CollectiveRule(lambda c, p: (Tensor(p[0]).mean(0).uop, False) if p[1] else (p[0], False), _same, _same),
  "pmax": CollectiveRule(lambda c, p: (rop(p[0], Ops.MAX, (0,)), False) if p[1] else (p[0], False), _chooser_jvp, _chooser_vjp),
  "pmin": CollectiveRule(lambda c, p: (_min0(p[0]), False) if p[1] else (p[0], False), _chooser_jvp, _chooser_vjp),
  "axis_index": CollectiveRule(lambda c, p: (Tensor.arange(c.axis.size, dtype=dtypes.int32).uop, True)),
  "all_to_all": CollectiveRule(_all_to_all, _same, _same),
  "ppermute": CollectiveRule(_ppermute, _same, _inverse),
}


# ---- reverse mode: tinygrad differentiates a call through its grad_fxn ----------------------------------------------

def _collective_grad(ct: UOp, call: UOp) -> tuple[UOp | None]:
  u = inline_call(call.gettuple(0))   # the marker of the call's argument
  vjp = COLLECTIVE_RULES[u.arg.kind].vjp
  assert vjp is not None, "only markers with a vjp rule are wrapped"
  return (vjp(u, ct) if dtypes.is_float(u.dtype) else None,)

def differentiable(roots: list[UOp]) -> tuple[list[UOp], dict[UOp, UOp]]:
  """The graphs with every collective marker that has a vjp rule wrapped in a call (a FUNCTION over a PARAM) whose grad_fxn
  is that rule, for tinygrad's compute_gradient, and the map wrapped call -> marker. The gradients that tinygrad builds
  refer to forward values, so to the calls: substitute the markers back (interpreters inline a call only when its
  arguments depend on their inputs, and a marker must reach the VMAPOUT of its axis even when they do not)."""
  new: dict[UOp, UOp] = {}
  unwrap: dict[UOp, UOp] = {}
  for u in UOp.sink(*roots).toposort(enter_calls=False):
    srcs = tuple(new.get(s, s) for s in u.src)
    v = u if srcs == u.src else u.replace(src=srcs)
    if isinstance(c := marker_arg(v), Collective) and COLLECTIVE_RULES[c.kind].vjp is not None:
      call = custom_call([v.replace(src=(param_like(v.src[0], 0),))], [v.src[0]], None, _collective_grad).gettuple(0)
      unwrap[call], v = v, call
    if v is not u: new[u] = v
  return [new.get(r, r) for r in roots], unwrap

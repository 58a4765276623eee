"""lax's loops: scan, fori_loop, while_loop, map, associative_scan.

A loop is one node in the traced graph: a call (a tinygrad FUNCTION) whose rule is a `Scan` or `While` holding the
user's functions traced once, as `Body`s. Its lowering is one host call (`lax.host_call`): when tinygrad runs it
(eagerly or replaying a TinyJit), an executor runs each body's kernels, compiled once (`_tg.Step`), with the carry
kept in device buffers: on the CPU all steps in one call into compiled code (`_tg.run_steps`; a loop, cond or solve in
the body is a row of the body's table: `_tg.makes_rows`), elsewhere from a Python loop. Tracing and compiling cost one
step whatever the trip count, and a while_loop stops on a value read back each iteration. Each transform has a rule
that builds another such node from transformed bodies (vmap: vmapped bodies, the batch put next to the scanned axis;
jvp: a scan of the primal and tangent; reverse mode: a scan saving the carries and a reverse scan of the body's vjp),
so transforms nest freely.
See docs/control_flow.md.
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, UOp, Ops, jit_capturing, dtypes, scratch_like, copy_buffer, read_scalar, static_shape, run_steps, \
  makes_rows
from tinyjax.core import as_tensor, traced_by, enclosing_inputs, substitute
from tinyjax.transforms.vmap import vmap
from tinyjax.call_rule import CallRule, BatchedCall, is_zero
from tinyjax.lax.host_call import Type, Body, HostCallRule, trace, shared, loop_device, compiled, type_of, first_token
from tinyjax.lax.control_flow.common import split_list, partition_list, merge_lists, at_mask, _tstr, _is_float, _flat, _paths, \
  _flat_weak, as_weak, weak_types, _check_carry, _promoted, _jvp, _vjp, _vmap, _broadcast, residuals
from tinyjax import pytree as tu

__all__ = ["scan", "fori_loop", "while_loop", "map", "associative_scan"]

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
    return [type_of(c) for c in xs[:self.n_carry]] + ys

  def executor(self, ins: list[Type], outs: list[Type]) -> Callable[[list[UOp]], None]:
    nc, nx, L, rev, n_out = self.n_carry, len(self.x_axes), self.length, self.reverse, len(outs)
    at = [None] * nc + list(self.x_axes) + [None] * (len(ins) - nc - nx)
    step = compiled(self.body, [(s, d, a) for (s, d), a in zip(ins, at, strict=True)],
                     [(s, d, a) for (s, d), a in zip(outs, [None] * nc + list(self.y_axes), strict=True)], L)
    scratch: dict[Any, list[UOp]] = {}
    def run(bufs: list[UOp]) -> None:
      carry_out, ys, ins = bufs[:nc], bufs[nc:n_out], bufs[n_out:]
      init, rest = ins[:nc], ins[nc:]
      # (the carry's second set of buffers: allocated once per device, ~50 us a call otherwise; a loop never runs
      # inside itself, so two runs never share it at once)
      other = scratch[device] if (device := bufs[0].device) in scratch else scratch.setdefault(device, [scratch_like(b) for b in carry_out])
      # in compiled code where it can (CPU): step j reads the carry step j - 1 wrote, the last step writes the output's
      even, odd = (carry_out, other) if (L - 1) % 2 == 0 else (other, carry_out)   # where steps 0, 2, ... / 1, 3, ... write
      if run_steps(step(bufs[0].device), (init + rest + even + ys, odd + rest + even + ys, even + rest + odd + ys), L,
                   (L - 1, -1) if rev else (0, 1)) is not None: return
      cur = init
      for j in range(L):   # the carry goes back and forth between two sets of buffers, the last step writes the output's
        dst = carry_out if (L - 1 - j) % 2 == 0 else other
        step(bufs[0].device).run(cur + rest + dst + ys, L - 1 - j if rev else j)
        cur = dst
    return run if self.effectful else makes_rows(run)   # (an effectful body's step writes tokens: from Python)

  def split(self, xs: Sequence):
    nc, nx = self.n_carry, len(self.x_axes)
    return list(xs[:nc]), list(xs[nc:nc + nx]), list(xs[nc + nx:])

  def jvp(self, xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
    c, x, k = self.split(xs)
    tc, tx, tk = self.split(ts)
    # which values get a tangent in the loop: every float carry (it may become nonzero), float xs and consts with a
    # nonzero tangent, float ys
    mc = [_is_float(v) for v in c]
    mx = [_is_float(v) and not is_zero(t) for v, t in zip(x, tx, strict=True)]
    mk = [_is_float(v) and not is_zero(t) for v, t in zip(k, tk, strict=True)]
    my = [dtypes.is_float(d) for _, d in self.y_types]
    nc, ny = len(c), len(self.y_types)
    def body(a: list[Tensor]) -> list[Tensor]:
      cc, dc, xx, dx, kk, dk = split_list(a, [nc, sum(mc), len(x), sum(mx), len(k)])
      outs, touts = _jvp(self.body, cc + xx + kk, at_mask(mc, dc) + at_mask(mx, dx) + at_mask(mk, dk))
      (oc, oy), (toc, toy) = split_list(outs, [nc]), split_list(touts, [nc])
      return oc + partition_list(mc, toc)[1] + oy + partition_list(my, toy)[1]
    tys_c, tys_x, tys_k = [type_of(v) for v in c], [self._x_type(v, a) for v, a in zip(x, self.x_axes, strict=True)], [type_of(v) for v in k]
    types = tys_c + partition_list(mc, tys_c)[1] + tys_x + partition_list(mx, tys_x)[1] + tys_k + partition_list(mk, tys_k)[1]
    new, hidden = trace(body, types, loop_device(xs), "scan")
    rule = Scan(new, nc + sum(mc), self.x_axes + tuple(partition_list(mx, self.x_axes)[1]), self.y_types + partition_list(my, self.y_types)[1],
                self.y_axes + tuple(partition_list(my, self.y_axes)[1]), self.length, self.reverse)
    outs = rule.call(c + partition_list(mc, tc)[1] + x + partition_list(mx, tx)[1] + k + partition_list(mk, tk)[1] + hidden)
    oc, dcarry, oy, dys = split_list(outs, [nc, sum(mc), ny])
    zeros = lambda vs, m: [v.zeros_like() for v in partition_list(m, vs)[0]]   # noqa: E731
    return merge_lists(mc, zeros(oc, mc), dcarry) + merge_lists(my, zeros(oy, my), dys)

  @staticmethod
  def _x_type(x: Tensor, axis: int) -> Type:
    s = static_shape(x)
    return s[:axis] + s[axis + 1:], x.dtype

  def vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]:
    c, x, k = self.split(xs)
    nc, nx, nk, ny = len(c), len(x), len(k), len(self.y_types)
    ct_c, ct_y = split_list(cts, [nc])
    # which values have a cotangent: the float ones
    mc, mx, mk = [_is_float(v) for v in c], [_is_float(v) for v in x], [_is_float(v) for v in k]
    my = [dtypes.is_float(d) for _, d in self.y_types]
    tys_c, tys_k = [type_of(v) for v in c], [type_of(v) for v in k]
    x_types = [self._x_type(v, a) for v, a in zip(x, self.x_axes, strict=True)]
    device = loop_device(xs)
    # the step's vjp as one graph over (carry, x, consts, carry cotangents, y cotangents), split as JAX's partial
    # evaluation splits it: the values its reverse part reads that the forward step computes are saved by the forward
    # loop (`residuals`), which is the primal's loop too (`forward_of`); the reverse loop computes the rest
    def lin(a: list[Tensor]) -> list[Tensor]:
      cc, xx, kk, g_c, gy = split_list(a, [nc, nx, nk, sum(mc)])
      g_cc, g_x, g_k = split_list(_vjp(self.body, cc + xx + kk, at_mask(mc, g_c) + at_mask(my, gy)), [nc, nx])
      return partition_list(mc, g_cc)[1] + partition_list(mx, g_x)[1] + partition_list(mk, g_k)[1]
    gy_types = partition_list(my, self.y_types)[1]
    traced, hidden = trace(lin, tys_c + x_types + tys_k + partition_list(mc, tys_c)[1] + gy_types, device, "scan")
    prim, ctp = traced.params[:nc + nx + nk], traced.params[nc + nx + nk:]
    saved_at = residuals(traced.outs, set(prim[:nc + nx]), set(ctp), set(prim[nc:nc + nx])) if not hidden and not self.effectful else None
    step: Body | None = traced
    if saved_at is None or any(r.dtype in dtypes.weaks for r in saved_at):
      saved_at, step = list(prim[:nc]), None   # (the step closes over traced values, or runs effects): the carries, the step again
    r_types = [(static_shape(r), r.dtype) for r in saved_at]
    fwd = [o.uop for o in self.body([Tensor(p) for p in prim])]
    res = Scan(Body(list(prim), fwd + saved_at), nc, self.x_axes, self.y_types + r_types, self.y_axes + (0,) * len(saved_at),
               self.length, self.reverse)
    if not self.effectful: res.forward_of = self   # vjp then runs it as the primal too
    saved = res.call(xs)[nc + ny:]
    def body(a: list[Tensor]) -> list[Tensor]:
      # the reverse step: carry (cotangents of the float carry, accumulated cotangents of the float consts), then the
      # saved values, xs, the ys' cotangents and the consts
      g_c, acc, rr, xx, gy, kk = split_list(a, [sum(mc), sum(mk), len(saved_at), nx, sum(my)])
      if step is None: gs = lin(rr + xx + kk + g_c + gy)
      else:
        subs = dict(zip(saved_at, [r.uop for r in rr], strict=True)) | dict(zip(prim[nc:], [v.uop for v in xx + kk], strict=True)) | \
          dict(zip(ctp, [v.uop for v in g_c + gy], strict=True))
        gs = [Tensor(u) for u in substitute(step.outs, subs)]
      g_cc, g_x, g_k = split_list(gs, [sum(mc), sum(mx)])
      return g_cc + [s + g for s, g in zip(acc, g_k, strict=True)] + g_x
    types = partition_list(mc, tys_c)[1] + partition_list(mk, tys_k)[1] + r_types + x_types + gy_types + tys_k
    new, hidden = trace(body, types, device, "scan")
    back = Scan(new, sum(mc) + sum(mk), (0,) * len(saved_at) + self.x_axes + tuple(partition_list(my, self.y_axes)[1]),
                partition_list(mx, x_types)[1], tuple(partition_list(mx, self.x_axes)[1]), self.length, not self.reverse)
    outs = back.call(partition_list(mc, ct_c)[1] + [v.zeros_like() for v in partition_list(mk, k)[1]] + saved + x +
                     partition_list(my, ct_y)[1] + k + hidden)
    g_c, g_k, g_x = split_list(outs, [sum(mc), sum(mk)])
    return at_mask(mc, g_c) + at_mask(mx, g_x) + at_mask(mk, g_k)

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
      types = [type_of(v) for v in cs] + [self._x_type(v, a) for v, a in zip(xx, x_axes, strict=True)] + [type_of(v) for v in ks]
      body, hidden = trace(_vmap(self.body, in_axes, size), types, loop_device(xs), "scan")
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

  def out_types(self, xs): return [type_of(c) for c in xs[:self.n_carry]]

  def executor(self, ins, outs):
    nc = self.n_carry
    cond = compiled(self.cond, [(s, d, None) for s, d in ins], [((1,), dtypes.bool, None)])
    body = compiled(self.body, [(s, d, None) for s, d in ins], [(s, d, None) for s, d in outs])
    scratch: dict[Any, list[UOp]] = {}
    def run(bufs: list[UOp]) -> None:
      out, init, ks = bufs[:nc], bufs[nc:2 * nc], bufs[2 * nc:]
      device = bufs[0].device
      if device not in scratch: scratch[device] = [scratch_like(UOp.new_buffer(device, 1, dtypes.bool))] + [scratch_like(b) for b in out]
      pred, *other = scratch[device]   # (allocated once per device, as a scan's)
      # in compiled code where it can (CPU): steps 0, 2, ... write `out`, steps 1, 3, ... `other`
      # (after the loop the carry is copied into `out` from where it is: init after no step, other after an even number)
      if run_steps(body(device), (init + ks + out, other + ks + out, out + ks + other), 1 << 62,
                   cond=(cond(device), (init + ks + [pred], other + ks + [pred], out + ks + [pred]), pred),
                   copies=list(zip(out, init, other, out, strict=True))) is not None: return
      cur = init
      while True:   # the stop is read back each iteration: a data-dependent trip count, even in a TinyJit's replay
        cond(device).run(cur + ks + [pred])
        if not read_scalar(pred): break
        dst = out if cur is not out else other
        body(device).run(cur + ks + dst)
        cur = dst
      if cur is not out:
        for d, c in zip(out, cur, strict=True): copy_buffer(d, c)
    return run if self.effectful else makes_rows(run)

  def jvp(self, xs, ts):
    nc = self.n_carry
    (c, k), (tc, tk) = split_list(xs, [nc]), split_list(ts, [nc])
    mc = [_is_float(v) for v in c]
    mk = [_is_float(v) and not is_zero(t) for v, t in zip(k, tk, strict=True)]
    def split(a): return split_list(a, [nc, sum(mc), len(k)])   # carry, its tangents, consts, theirs
    def cond(a):
      cc, _, kk, _ = split(a)
      return self.cond(cc + kk)
    def body(a):
      cc, dc, kk, dk = split(a)
      outs, touts = _jvp(self.body, cc + kk, at_mask(mc, dc) + at_mask(mk, dk))
      return outs + partition_list(mc, touts)[1]
    tys_c, tys_k = [type_of(v) for v in c], [type_of(v) for v in k]
    types = tys_c + partition_list(mc, tys_c)[1] + tys_k + partition_list(mk, tys_k)[1]
    args = c + partition_list(mc, tc)[1] + k + partition_list(mk, tk)[1]
    outs = _while(cond, body, nc + sum(mc), args, types)
    return merge_lists(mc, [v.zeros_like() for v in partition_list(mc, c)[0]], outs[nc:])

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
      # (an effectful loop's token was emitted by its call: in its place, a constant)
      return [t.uop for t in _while(cond, body, nc, xs, [type_of(v) for v in xs])] + ([first_token().uop] if self.effectful else [])
    return BatchedCall(self.name, make)

def _while(cond: Callable, body: Callable, nc: int, args: list[Tensor], types: list[Type]) -> list[Tensor]:
  """A while node of flat functions of (carry, consts) -> [pred] / carry."""
  device = loop_device(args)
  (cb, bb), ks = shared([trace(cond, types, device, "while_loop"), trace(body, types, device, "while_loop")], len(types), device)
  return While(cb, bb, nc).call(args + ks)


# ---- the API -----------------------------------------------------------------------------------------------------------

def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False):
  """jax.lax.scan: carry, ys = scan(f, init, xs) with f(carry, x) -> (carry, y), ys stacked along a new leading axis.
  Traced once and run as a loop on the device's buffers (never unrolled: `unroll` is accepted and ignored but for
  unroll=True, which builds the unrolled graph)."""
  c_leaves, c_tree = tu.tree_flatten(init)
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
  box: dict[str, Any] = weak_types(c_leaves)
  def fun(a: list[Tensor]) -> list[Tensor]:
    out = f(tu.tree_unflatten(c_tree, as_weak(a[:nc], box["weak"])), tu.tree_unflatten(x_tree, a[nc:]))
    if not isinstance(out, (tuple, list)) or len(out) != 2:
      raise TypeError(f"scan body output must be a pair, got {tu.tree_structure(out)}.")
    new, new_tree, box["carry_weak"] = _flat_weak(out[0])
    y, box["y_tree"], box["y_weak"] = _flat_weak(out[1])
    box["carry"] = (new_tree, [type_of(v) for v in new])
    box["y"] = [type_of(v) for v in y]
    return new + y if new_tree == c_tree else a[:nc] + y
  types = [type_of(v) for v in carry] + [(static_shape(v)[1:], v.dtype) for v in x_leaves]
  device = loop_device(carry + x_leaves)
  body, hidden = trace(fun, types, device, "scan")
  if (again := _weak_carry(box, carry, c_tree, types[:nc])) is not None:
    carry = again
    body, hidden = trace(fun, [type_of(v) for v in carry] + types[nc:], device, "scan")
  _check_carry("scan body", _carry_name(f), c_tree, [type_of(v) for v in carry], box["carry"][0], box["carry"][1], _paths(init))
  if L == 0:
    return init, tu.tree_unflatten(box["y_tree"], [Tensor.zeros(0, *s, dtype=d, device=device) for s, d in box["y"]])
  rule = Scan(body, nc, (0,) * len(x_leaves), box["y"], (0,) * len(box["y"]), L, reverse)
  outs = rule.call(carry + x_leaves + hidden)
  return tu.tree_unflatten(c_tree, as_weak(outs[:nc], box["carry_weak"])), tu.tree_unflatten(box["y_tree"], as_weak(outs[nc:], box["y_weak"]))

def _weak_carry(box: dict, carry: list[Tensor], c_tree, types: list[Type]) -> list[Tensor] | None:
  """JAX's weak carries after a first trace of the body (in `box`): a weakly typed init takes the dtype the body returns
  where that dtype differs (`_promoted`), and is strong from then on; the carry to trace again with, or None. A weak
  init the body returns strongly typed at the same dtype is no reason to trace again (JAX's `typematch` ignores weak
  types): the body keeps computing on a weak carry, and the result is as the body returns it."""
  promoted = _promoted(carry, box["promotable"], box["carry"][1] if box["carry"][0] == c_tree else types)
  if promoted is None: return None
  box["weak"] = [w if p is c else None for w, p, c in zip(box["weak"], promoted, carry, strict=True)]
  return promoted

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
  carry = [as_tensor(v) for v in c_leaves]
  nc = len(carry)
  box: dict[str, Any] = weak_types(c_leaves)
  def cond(a: list[Tensor]) -> list[Tensor]:
    p = cond_fun(tu.tree_unflatten(c_tree, as_weak(a[:nc], box["weak"])))
    pl = tu.tree_leaves(p)
    if len(pl) != 1 or not isinstance(pl[0], (Tensor, bool, np.bool_)) or as_tensor(pl[0]).shape != () or as_tensor(pl[0]).dtype != dtypes.bool:
      got = [f"{_tstr(type_of(as_tensor(v)))}" for v in pl]
      raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) [{', '.join(got)}].")
    return [as_tensor(pl[0]).reshape(1)]
  def body(a: list[Tensor]) -> list[Tensor]:
    new, tree, box["carry_weak"] = _flat_weak(body_fun(tu.tree_unflatten(c_tree, as_weak(a[:nc], box["weak"]))))
    box["carry"] = (tree, [type_of(v) for v in new])
    return new if tree == c_tree else a[:nc]
  device = loop_device(carry)
  types = [type_of(v) for v in carry]
  traced = [trace(cond, types, device, "while_loop"), trace(body, types, device, "while_loop")]
  if (again := _weak_carry(box, carry, c_tree, types)) is not None:
    carry, types = again, [type_of(v) for v in again]
    traced = [trace(cond, types, device, "while_loop"), trace(body, types, device, "while_loop")]
  _check_carry("while_loop body", _carry_name(body_fun), c_tree, types, box["carry"][0], box["carry"][1], _paths(init_val))
  (cb, bb), ks = shared(traced, nc, device)
  return tu.tree_unflatten(c_tree, as_weak(While(cb, bb, nc).call(carry + ks), box["carry_weak"]))

def map(f: Callable, xs, *, batch_size: int | None = None):   # noqa: A001 (JAX's name)
  """jax.lax.map: f applied to each slice of xs along the leading axis, as a scan (batch_size: that many at once,
  under vmap)."""
  if batch_size is None: return scan(lambda c, x: (c, f(x)), (), xs)[1]
  leaves, tree = _flat(xs)
  n = int(leaves[0].shape[0])
  k, rest = divmod(n, batch_size)
  out = []
  if k:
    blocks = tu.tree_unflatten(tree, [v[:k * batch_size].reshape(k, batch_size, *v.shape[1:]) for v in leaves])
    ys = scan(lambda c, x: (c, vmap(f)(x)), (), blocks)[1]
    out.append(tu.tree_map(lambda y: y.reshape(k * batch_size, *y.shape[2:]), ys))
  if rest:
    out.append(vmap(f)(tu.tree_unflatten(tree, [v[k * batch_size:] for v in leaves])))
  return out[0] if len(out) == 1 else tu.tree_map(lambda a, b: a.cat(b), *out)

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

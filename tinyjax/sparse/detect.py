"""Structural sparsity of a Jacobian, read off the traced tinygrad graph (no numerical probing of the input).

Every node that depends on the input gets a boolean scipy CSR matrix D of shape (node.numel, n_inputs): row r holds
the input elements that element r of the node depends on. One rule per op, vectorised (index maps built with numpy
movement functions, unions as sparse sums, reductions as one sparse product): no Python loop per element.

A dependency is dropped only where the derivative is zero for certain: integer/bool results, comparisons, DETACH,
WHERE's condition, and products with a factor that does not depend on the input and *evaluates* to zero. Values that
do not depend on the input (WHERE conditions such as the one-hot masks tinygrad lowers indexing to, constant factors)
are evaluated with tinygrad once, at detection time.
"""
from __future__ import annotations
import numpy as np
import scipy.sparse as sp
from tinyjax._tg import Tensor, UOp, Ops, GroupOp, dtypes, strong_dtype
from tinyjax.core import interpret, table_rule

def _numel(shape) -> int: return int(np.prod(shape, dtype=np.int64))

def _gather_rows(D: sp.csr_matrix, idx: np.ndarray) -> sp.csr_matrix:
  """Rows idx of D; idx == -1 gives an empty row (padding)."""
  idx = np.asarray(idx, dtype=np.int64).ravel()
  if (idx < 0).any():
    D = sp.vstack([D, sp.csr_matrix((1, D.shape[1]), dtype=bool)], format="csr")
    idx = np.where(idx < 0, D.shape[0] - 1, idx)
  return D[idx]

def _broadcast_index(src_shape, out_shape) -> np.ndarray:
  return np.broadcast_to(np.arange(_numel(src_shape)).reshape(src_shape), out_shape).ravel()

def _union(mats: list[sp.csr_matrix]) -> sp.csr_matrix:
  out = mats[0].astype(np.int8)
  for m in mats[1:]: out = out + m.astype(np.int8)
  return (out != 0).astype(bool).tocsr()

def _mask_rows(D: sp.csr_matrix, keep: np.ndarray) -> sp.csr_matrix:
  return (sp.diags(keep.ravel().astype(np.int8), dtype=np.int8) @ D.astype(np.int8) != 0).astype(bool).tocsr()


class Detector:
  def __init__(self):
    self.values: dict[UOp, np.ndarray] = {}

  def value(self, u: UOp) -> np.ndarray:
    """Concrete value of an input-independent node, broadcast to its shape (evaluated once)."""
    if u not in self.values:
      t = Tensor(u)
      if t.dtype in dtypes.weaks: t = t.cast(strong_dtype(t.dtype))
      self.values[u] = np.broadcast_to(t.numpy(), u.shape)
    return self.values[u]

  def operand(self, u: UOp, D, src: UOp) -> sp.csr_matrix | None:
    return None if D is None else _gather_rows(D, _broadcast_index(src.shape, u.shape))

  # ---- rules: (node, source matrices or None) -> node matrix or None ------------------------------------------------
  def elementwise(self, u, Ds):
    mats = [m for s, D in zip(u.src, Ds) if (m := self.operand(u, D, s)) is not None]
    return _union(mats) if mats else None

  def mul(self, u, Ds):
    # a factor that does not depend on the input and is zero kills the other factor's dependencies there
    mats = []
    for i, (s, D) in enumerate(zip(u.src, Ds)):
      if D is None: continue
      m = self.operand(u, D, s)
      other, Do = u.src[1 - i], Ds[1 - i]
      if Do is None: m = _mask_rows(m, np.broadcast_to(self.value(other), u.shape).ravel() != 0)
      mats.append(m)
    return _union(mats)

  def where(self, u, Ds):
    c, a, b = u.src
    if Ds[1] is None and Ds[2] is None: return None
    if Ds[0] is not None:   # a condition that depends on the input: both branches may be taken
      return _union([self.operand(u, D, s) for s, D in ((a, Ds[1]), (b, Ds[2])) if D is not None])
    cond = np.broadcast_to(self.value(c), u.shape).ravel().astype(bool)
    mats = []
    if Ds[1] is not None: mats.append(_mask_rows(self.operand(u, Ds[1], a), cond))
    if Ds[2] is not None: mats.append(_mask_rows(self.operand(u, Ds[2], b), ~cond))
    return _union(mats)

  def movement(self, u, Ds):
    D, (src, *_) = Ds[0], u.src
    if D is None: return None
    idx = np.arange(_numel(src.shape)).reshape(src.shape)
    m = u.marg
    match u.op:
      case Ops.RESHAPE: out = idx.reshape(m)
      case Ops.EXPAND: out = np.broadcast_to(idx, tuple(m) + tuple(src.shape))
      case Ops.PERMUTE: out = idx.transpose(m)
      case Ops.FLIP: out = np.flip(idx, tuple(i for i, f in enumerate(m) if f))
      case Ops.SHRINK: out = idx[tuple(slice(o, o + s) for o, s in m)]
      case Ops.PAD:
        out = np.full(tuple(s for _, s in m), -1, dtype=np.int64)
        out[tuple(slice(o, o + s) for (o, _), s in zip(m, src.shape))] = idx
    return _gather_rows(D, out)

  def reduce(self, u, Ds):
    D, src = Ds[0], u.src[0]
    n_src, n_out = _numel(src.shape), _numel(u.shape)
    i = np.arange(n_src)
    R = sp.csr_matrix((np.ones(n_src, dtype=np.int8), (i % n_out, i)), shape=(n_out, n_src))
    return (R @ D.astype(np.int8) != 0).astype(bool).tocsr()

  def stack(self, u, Ds):
    n, per = len(u.src), _numel(u.src[0].shape)
    width = next(D for D in Ds if D is not None).shape[1]
    return sp.vstack([D if D is not None else sp.csr_matrix((per, width), dtype=bool) for D in Ds], format="csr")

  def rule(self, u: UOp, Ds: list):
    if u.op is not Ops.CUSTOM and not dtypes.is_float(u.dtype): return None   # no derivative through ints and bools
    return sparsity_rule(u.op)(self, u, Ds)


_none = lambda self, u, Ds: None
_same = lambda self, u, Ds: Ds[0]
SPARSITY_RULES = {
  **{op: Detector.elementwise for op in GroupOp.ALU | {Ops.CAST}},
  Ops.MUL: Detector.mul, Ops.WHERE: Detector.where,
  **{op: Detector.movement for op in GroupOp.Movement},
  Ops.REDUCE: Detector.reduce, Ops.STACK: Detector.stack,
  **{op: _same for op in (Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD, Ops.COPY, Ops.CUSTOM)},
  **{op: _none for op in (Ops.DETACH, Ops.BITCAST, Ops.TRUNC, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.THREEFRY)},
}
sparsity_rule = table_rule(SPARSITY_RULES, "sparsity")


def detect(outs: list[UOp], inputs: list[UOp]) -> sp.csr_matrix:
  """Boolean (sum of output sizes) x (sum of input sizes) pattern of d outs / d inputs (flattened, concatenated)."""
  sizes = [_numel(u.shape) for u in inputs]
  n, offs = sum(sizes), np.cumsum([0] + sizes)
  env = {u: sp.csr_matrix((np.ones(s, dtype=bool), (np.arange(s), o + np.arange(s))), shape=(s, n))
         for u, s, o in zip(inputs, sizes, offs)}
  det = Detector()
  vals = interpret(outs, env, det.rule, inline_custom=True)
  return sp.vstack([sp.csr_matrix((_numel(o.shape), n), dtype=bool) if D is None else D for o, D in zip(outs, vals)],
                   format="csr")

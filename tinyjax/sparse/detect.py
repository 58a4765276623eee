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
from typing import Callable
import numpy as np
import scipy.sparse as sp
from tinyjax._tg import Tensor, UOp, Ops, GroupOp, dtypes, static_shape
from tinyjax.dtypes import weak_storage_dtype
from tinyjax.core import interpret, table_rule, operands, ZERO_DERIVATIVE, PASSTHROUGH, GATHER

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


_NUMPY_ALU: dict[Ops, Callable] = {Ops.NEG: np.negative, Ops.RECIPROCAL: np.reciprocal, Ops.SQRT: np.sqrt, Ops.EXP2: np.exp2,
  Ops.LOG2: np.log2, Ops.ADD: np.add, Ops.MUL: np.multiply, Ops.MAX: np.maximum, Ops.CMPLT: np.less, Ops.CMPNE: np.not_equal}

def _literal(u: UOp):
  """The value of a scalar expression of constants moved around (1 / h**2 is RECIPROCAL(CONST)), else None."""
  while u.op in GroupOp.Movement and u.op is not Ops.PAD: u = u.src[0]
  if u.op is Ops.CONST: return u.arg
  if (f := _NUMPY_ALU.get(u.op)) is None: return None
  args = [_literal(x) for x in u.src]
  if any(v is None for v in args): return None
  with np.errstate(all="ignore"): return f(*[np.float64(v) for v in args]).item()

class Dep:
  """What an input-dependent node carries: D (numel x n) its elements' input dependencies, and Z, the elements known
  to be exactly zero whatever the input (padding, products with constant zeros, ...), or None for "none known"."""
  __slots__ = ("D", "Z")
  def __init__(self, D: sp.csr_matrix, Z: np.ndarray | None = None):
    self.D, self.Z = D, (None if Z is None or not Z.any() else Z)
    if self.Z is not None: self.D = _mask_rows(self.D, ~self.Z)   # a constant zero has no dependencies


class Detector:
  def __init__(self, n: int):
    self.n = n
    self.values: dict[UOp, np.ndarray] = {}

  def value(self, u: UOp) -> np.ndarray:
    """Concrete value of an input-independent node, broadcast to its shape (evaluated once)."""
    if u not in self.values and (v := _literal(u)) is not None:   # a literal (1 / h**2): no kernel to compile and run
      self.values[u] = np.full(static_shape(u), v)
    if u not in self.values:
      t = Tensor(u)
      if t.dtype in dtypes.weaks: t = t.cast(weak_storage_dtype(t.dtype))
      self.values[u] = np.broadcast_to(t.numpy(), static_shape(u))
    return self.values[u]

  def operand(self, u: UOp, i: int, dep: Dep | None) -> tuple[sp.csr_matrix | None, np.ndarray]:
    """Source i broadcast to u's shape: (its dependencies or None, its known zeros)."""
    s = u.src[i]
    if dep is None: return None, np.broadcast_to(self.value(s), static_shape(u)).ravel() == 0
    idx = _broadcast_index(s.shape, u.shape)
    return _gather_rows(dep.D, idx), (np.zeros(len(idx), dtype=bool) if dep.Z is None else dep.Z[idx])

  def empty(self, u: UOp) -> Dep: return Dep(sp.csr_matrix((_numel(u.shape), self.n), dtype=bool))

  # ---- rules: (node, source Deps or None) -> Dep --------------------------------------------------------------------
  def elementwise(self, u, deps):
    return Dep(_union([self.operand(u, i, d)[0] for i, d in enumerate(deps) if d is not None]))

  def add(self, u, deps):   # zero where both terms are
    (Da, Za), (Db, Zb) = (self.operand(u, i, d) if d is not None else (None, None) for i, d in enumerate(deps))
    return Dep(_union([D for D in (Da, Db) if D is not None]), Za & Zb if Za is not None and Zb is not None else None)

  def mul(self, u, deps):   # zero where either factor is; a factor's dependencies count only where the other is not 0
    (Da, Za), (Db, Zb) = (self.operand(u, i, d) for i, d in enumerate(deps))
    return Dep(_union([_mask_rows(D, ~Zo) for D, Zo in ((Da, Zb), (Db, Za)) if D is not None]), Za | Zb)

  def unary_zero_preserving(self, u, deps):   # SIN, SQRT: f(0) = 0
    return Dep(deps[0].D, deps[0].Z)

  def where(self, u, deps):
    if deps[1] is None and deps[2] is None: return self.empty(u)
    (Da, Za), (Db, Zb) = self.operand(u, 1, deps[1]), self.operand(u, 2, deps[2])
    if deps[0] is not None:   # a condition that depends on the input: both branches may be taken (not the condition)
      return Dep(_union([D for D in (Da, Db) if D is not None]), Za & Zb)
    cond = np.broadcast_to(self.value(u.src[0]), u.shape).ravel().astype(bool)
    mats = [_mask_rows(D, keep) for D, keep in ((Da, cond), (Db, ~cond)) if D is not None]
    return Dep(_union(mats), np.where(cond, Za, Zb))

  def movement(self, u, deps):
    dep, src = deps[0], u.src[0]
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
        out[tuple(slice(o, o + s) for (o, _), s in zip(m, src.shape, strict=True))] = idx
    out = out.ravel()
    Z = out < 0 if dep.Z is None else np.where(out < 0, True, dep.Z[np.maximum(out, 0)])   # padding is zero
    return Dep(_gather_rows(dep.D, out), Z)

  def reduce(self, u, deps):
    dep, src = deps[0], u.src[0]
    n_src, n_out = _numel(src.shape), _numel(u.shape)
    i = np.arange(n_src)
    R = sp.csr_matrix((np.ones(n_src, dtype=np.int8), (i % n_out, i)), shape=(n_out, n_src))
    D = (R @ dep.D.astype(np.int8) != 0).astype(bool).tocsr()
    Z = None if dep.Z is None or u.arg[0] is Ops.MUL else dep.Z.reshape(-1, n_out).all(0)
    return Dep(D, Z)

  def stack(self, u, deps):
    Ds, Zs = [], []
    for s, d in zip(u.src, deps, strict=True):
      per = _numel(s.shape)
      if d is None:
        Ds.append(sp.csr_matrix((per, self.n), dtype=bool))
        Zs.append(np.broadcast_to(self.value(s), s.shape).ravel() == 0)
      else:
        Ds.append(d.D)
        Zs.append(np.zeros(per, dtype=bool) if d.Z is None else d.Z)
    return Dep(sp.vstack(Ds, format="csr"), np.concatenate(Zs))

  def gather(self, u, deps):   # out[k] = src.flatten()[idx[k]]: the rows idx of src's (the index is input-independent)
    if deps[1] is not None: raise NotImplementedError("tinyjax.sparsity: a gather whose indices depend on the input")
    src, idx = operands(u)
    if deps[0] is None: return self.empty(u)
    rows = self.value(idx).ravel().astype(np.int64)
    return Dep(_gather_rows(deps[0].D, rows), None if deps[0].Z is None else deps[0].Z[rows])

  def rule(self, u: UOp, deps: list) -> Dep:
    # ints and bools carry no derivative; still mark them as input-dependent (an empty Dep), never as constants
    if u.op not in (Ops.CUSTOM, Ops.FUNCTION) and not dtypes.is_float(u.dtype): return self.empty(u)
    return sparsity_rule(u)(self, u, deps)


def _empty(self, u, deps): return self.empty(u)
def _same(self, u, deps): return deps[0]
SPARSITY_RULES: dict[Ops | str, Callable] = {
  **{op: Detector.elementwise for op in GroupOp.ALU | {Ops.CAST}},
  Ops.ADD: Detector.add, Ops.MUL: Detector.mul, Ops.WHERE: Detector.where,
  **{op: Detector.unary_zero_preserving for op in (Ops.SIN, Ops.SQRT)},
  **{op: Detector.movement for op in GroupOp.Movement},
  Ops.REDUCE: Detector.reduce, Ops.STACK: Detector.stack, GATHER: Detector.gather,
  **{op: _same for op in PASSTHROUGH | {Ops.CUSTOM}},
  # zero derivative, but input-dependent values
  **{op: _empty for op in ZERO_DERIVATIVE},
}
sparsity_rule = table_rule(SPARSITY_RULES, "sparsity")


def detect(outs: list[UOp], inputs: list[UOp], unknowns: list[UOp] | tuple = ()) -> sp.csr_matrix:
  """Boolean (sum of output sizes) x (sum of input sizes) pattern of d outs / d inputs (flattened, concatenated).
  `unknowns`: values that are not differentiated but not known either (spjacobian's `args`): they carry no
  dependencies, and as input-dependent nodes they are never evaluated, so no zero of theirs is taken as structural."""
  sizes = [_numel(u.shape) for u in inputs]
  n, offs = sum(sizes), np.cumsum([0] + sizes)[:-1]   # each input's first column
  env = {u: Dep(sp.csr_matrix((np.ones(s, dtype=bool), (np.arange(s), o + np.arange(s))), shape=(s, n)))
         for u, s, o in zip(inputs, sizes, offs, strict=True)}
  env.update({u: Dep(sp.csr_matrix((_numel(u.shape), n), dtype=bool)) for u in unknowns})
  vals = interpret(outs, env, Detector(n).rule, inline_custom=True)
  return sp.vstack([sp.csr_matrix((_numel(o.shape), n), dtype=bool) if d is None else d.D for o, d in zip(outs, vals, strict=True)],
                   format="csr")

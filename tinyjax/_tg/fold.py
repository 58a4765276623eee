"""Constant folding on the host: the value of a device-less graph of constants (`f(3.0)`, `jnp.arange(5)`: Python
scalars and jnp's creation functions build graphs with no device and no buffer), computed as tinygrad's scheduler
folds constants (symbolic.fold_const_alu: exec_alu, then the dtype's truncation, node by node). tinygrad would
schedule, compile and run a kernel to store that value: ~5 ms a read of a scalar."""
from __future__ import annotations
import math, weakref
from typing import Any, Callable
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import UOp, Ops, GroupOp
import tinygrad.uop.ops as _ops
from tinyjax._tg.buffers import np_dtype, static_shape
from tinyjax._tg.transcendental import call_form

_LIMIT = 4096   # elements: bigger graphs are cheaper as a kernel than element by element in Python
_SHAPE = object()   # a movement op's shape operand (a STACK): not a value
_EXACT_REDUCES = {Ops.ADD, Ops.MUL, Ops.MAX}   # on integers and booleans: any order gives the same value

# a reduction's step on two values, by (op, on booleans): a bool sum is an or, a bool product an and
_PAIRS: dict[tuple[Ops, bool], Callable[[Any, Any], Any]] = {
  (Ops.ADD, False): lambda p, q: p + q, (Ops.ADD, True): lambda p, q: p or q, (Ops.MUL, False): lambda p, q: p * q,
  (Ops.MUL, True): lambda p, q: p and q, (Ops.MAX, False): max, (Ops.MAX, True): max}

def _quotient(x: UOp) -> tuple[UOp, UOp] | None:
  """(a, b) if x is a float a * (1/b): a kernel computes it as a / b (codegen's FDIV rewrite), one rounding; folding
  its two nodes apart rounds twice (1.6652045 * (1/1.6652045) is 0.99999994 in float32, so x // x was 0)."""
  if x.op is not Ops.MUL or not dtypes.is_float(x.dtype): return None
  a, r = x.src if x.src[1].op is Ops.RECIPROCAL else x.src[::-1]
  return (a, r.src[0]) if r.op is Ops.RECIPROCAL else None

def _ieee_div(a: float, b: float) -> float:
  # in float64, then rounded once to float32: as exact as float32 division (53 >= 2 * 24 + 2 bits)
  try: return a / b
  except ZeroDivisionError: return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)

# ops numpy computes on whole arrays as the fold does element by element (Python numbers, then the dtype's rounding):
# +, -, * and comparisons of floats are correctly rounded either way (a float64 result rounded to float32 or float16 is
# rounded once: 53 >= 2 * 24 + 2); integers of up to 32 bits in int64 (the range check below sees an overflow). Not
# max of floats (Python's max and a NaN depend on the order), divisions, transcendentals, 64-bit integers.
_VECTOR: dict[Ops, Callable[..., np.ndarray]] = {
  Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.NEG: np.negative, Ops.CMPLT: np.less,
  Ops.CMPNE: np.not_equal, Ops.CMPEQ: np.equal, Ops.WHERE: np.where, Ops.MAX: np.maximum, Ops.AND: np.bitwise_and,
  Ops.OR: np.bitwise_or, Ops.XOR: np.bitwise_xor}

def _typed(dt) -> Any:
  """The numpy dtype a value of tinygrad dtype dt is computed in by `_vectorized`, or None (a weakly typed value is a
  Python number: int64 or float64)."""
  if dt == dtypes.bool: return np.bool_
  if dt in dtypes.weaks: return np.float64 if dtypes.is_float(dt) else np.int64
  if dtypes.is_int(dt): return np.int64 if dt.itemsize <= 4 else None
  return np_dtype(dt) if dt in (dtypes.float16, dtypes.float32, dtypes.float64) else None

def _vectorized(x: UOp, srcs: list[np.ndarray]) -> np.ndarray | None:
  """`_elementwise` by numpy on whole arrays where that gives the same values (`_VECTOR`), else None."""
  if (out_t := _typed(x.dtype)) is None or any(_typed(s.dtype) is None for s in x.src): return None
  if x.op is Ops.CAST:
    a = srcs[0].astype(_typed(x.src[0].dtype))
    if dtypes.is_int(x.dtype) and a.dtype.kind == "f" and not np.isfinite(a).all(): raise ValueError("a non-finite float to an integer")
    return (a.astype(np_dtype(x.dtype)) if x.dtype != dtypes.bool else a.astype(np.bool_)).astype(object)
  if (fn := _VECTOR.get(x.op)) is None or (x.op is Ops.MAX and dtypes.is_float(x.dtype)): return None
  with np.errstate(all="ignore"):
    out = fn(*[a.astype(_typed(s.dtype)) for a, s in zip(srcs, x.src, strict=True)])
  return out.astype(out_t).astype(object)

def _elementwise(x: UOp, srcs: list[np.ndarray]) -> np.ndarray:
  if _quotient(x) is None and math.prod(srcs[0].shape) > 8:
    try: v = _vectorized(x, srcs)
    except OverflowError: v = None   # (a Python int beyond int64)
    if v is not None: return v
  dt = x.dtype
  fn: Callable[..., Any]
  if x.op is Ops.CAST:
    def fn(v):
      if dtypes.is_int(dt) and isinstance(v, float) and not math.isfinite(v): raise ValueError("a non-finite float to an integer")
      return dt.const(v)
  elif _quotient(x) is not None: fn = lambda a, b: dt.const(_ieee_div(a, b))   # noqa: E731
  else: fn = lambda *a: dt.const(_ops.exec_alu(x.op, dt, list(a), False))   # noqa: E731
  return np.asarray(np.frompyfunc(fn, len(srcs), 1)(*srcs), dtype=object)

def _symbolic() -> int: raise ValueError("a symbolic shape")

# every node's folded value (or _SHAPE), kept as long as the node: UOps are immutable, and a device-less value read
# again (a print in a loop) or built on one read before (`jnp.arange(n) * i`) was folded anew, node by node in Python
_FOLDED: weakref.WeakKeyDictionary[UOp, Any] = weakref.WeakKeyDictionary()
_UNFOLDABLE: weakref.WeakSet[UOp] = weakref.WeakSet()

def folded_value(u: UOp) -> np.ndarray | None:
  """u's value as an object array of Python numbers (read-only) if u is a device-less graph of constants that folds
  here (elementwise ops, movement ops, exact reductions; at most _LIMIT elements), else None."""
  if (done := _FOLDED.get(u)) is not None: return None if done is _SHAPE else done
  if u in _UNFOLDABLE: return None
  if (v := _fold(u)) is None: _UNFOLDABLE.add(u)
  return v

class _Values(dict):
  def __missing__(self, x: UOp) -> Any: return _FOLDED[x]   # (below the walk: folded before)

def _fold(u: UOp) -> np.ndarray | None:
  vals = _Values()
  try:
    for x in u.toposort(gate=lambda x: x not in _FOLDED, enter_calls=False):
      if x.op is Ops.STACK:   # a shape (a movement op's argument), or data stacked on a new first axis (Tensor.stack)
        srcs = [vals[s] for s in x.src]
        data = srcs and all(s is not _SHAPE for s in srcs) and len({s.shape for s in srcs}) == 1 and x.dtype != dtypes.void
        vals[x] = np.stack(srcs) if data and len(srcs) * srcs[0].size <= _LIMIT else _SHAPE
      elif x.op is Ops.CONST:
        if x.src: return None   # a constant on a device
        vals[x] = np.array(x.arg, dtype=object)
      elif x.op in GroupOp.Movement:
        shape = tuple(d if isinstance(d, int) else _symbolic() for d in x.shape)
        if (a := vals[x.src[0]]) is _SHAPE or math.prod(shape) > _LIMIT: return None
        m = x.marg
        if x.op is Ops.RESHAPE: v = a.reshape(shape)
        elif x.op is Ops.EXPAND: v = np.broadcast_to(a.reshape((1,) * (len(shape) - a.ndim) + a.shape), shape)
        elif x.op is Ops.PERMUTE: v = a.transpose(m)
        # SHRINK's and PAD's arguments: (offset, new size) per axis
        elif x.op is Ops.SHRINK: v = a[tuple(slice(o, o + n) for o, n in m)]
        elif x.op is Ops.PAD: v = np.pad(a, [(o, n - o - s) for (o, n), s in zip(m, a.shape, strict=True)], constant_values=x.dtype.const(0))
        elif x.op is Ops.FLIP: v = np.flip(a, tuple(i for i, f in enumerate(m) if f))   # a flag per axis
        else: return None
        vals[x] = v
      elif x.op is Ops.REDUCE and len(x.src) == 1 and x.arg[0] in _EXACT_REDUCES and (dtypes.is_int(x.dtype) or x.dtype == dtypes.bool):
        a, (op, n) = vals[x.src[0]], x.arg
        # over the first n axes
        pair = _PAIRS[(op, x.dtype == dtypes.bool)]
        flat = a.reshape(math.prod(a.shape[:n]), *a.shape[n:])
        out = flat[0]
        for row in flat[1:]: out = np.frompyfunc(pair, 2, 1)(out, row)
        vals[x] = np.asarray(np.frompyfunc(x.dtype.const, 1, 1)(out), dtype=object)
      elif x.op is Ops.BITCAST:   # the same bytes read as another dtype of their width (abs clears a float's sign bit)
        if (a := vals[x.src[0]]) is _SHAPE or (src_t := np_dtype(x.src[0].dtype)) is None or (out_t := np_dtype(x.dtype)) is None or \
           np.dtype(src_t).itemsize != np.dtype(out_t).itemsize: return None
        vals[x] = np.asarray(a.astype(src_t).view(out_t).tolist(), dtype=object).reshape(a.shape)
      elif (form := call_form(x)) is not None and (out_t := _typed(x.dtype)) is not None and out_t is not np.bool_:
        # a cosine or an exponential (transcendental.py): of x itself, not of pi/2 - x or x log2 e rounded, as its kernel
        a = np.asarray(_operand(form[1], vals), dtype=np.float64)
        with np.errstate(all="ignore"): v = (np.cos(a) if form[0] == "cos" else np.exp(a)).astype(out_t)
        vals[x] = np.asarray(v.tolist(), dtype=object).reshape(a.shape)
      elif (x.op is Ops.CAST or (x.op in GroupOp.ALU and x.op is not Ops.THREEFRY and x.op in _ops.python_alu)):
        q = _quotient(x)
        srcs = [vals[s] for s in (x.src if q is None else q)]
        if any(s is _SHAPE for s in srcs): return None
        vals[x] = _elementwise(x, srcs)
      else: return None
      # tinygrad keeps an integer's value unwrapped and C wraps it: left to tinygrad
      if dtypes.is_int(x.dtype) and (v := vals[x]) is not _SHAPE and v.size and not (x.dtype.min <= v.min() and v.max() <= x.dtype.max): return None
  except (ArithmeticError, ValueError, TypeError, OverflowError, KeyError): return None   # (KeyError: a call's body)
  for x, v in vals.items():
    if isinstance(v, np.ndarray): v.flags.writeable = False
    _FOLDED[x] = v
  return vals[u]

def _operand(u: UOp, vals: dict) -> Any:
  """A folded node's value, or a new one's that is a folded node times a constant (transcendental.call_form's k x)."""
  try: return vals[u]
  except KeyError:
    if u.op is Ops.MUL and u.src[1].op is Ops.CONST: return vals[u.src[0]] * u.src[1].arg
    raise

def folded_array(t: Tensor) -> np.ndarray | None:
  """t's value as a numpy array if it is a device-less graph of constants of a numpy dtype (`folded_value`)."""
  if t.uop.op is Ops.CONST and t.uop.src or (npdt := np_dtype(t.dtype)) is None or t.device is not None: return None
  if (v := folded_value(t.uop)) is None: return None
  return np.asarray(v.astype(npdt)).reshape(static_shape(t))

def folded_scalar(u: UOp) -> Any:
  """The Python number of a device-less scalar graph of constants (`folded_value`), else None."""
  return None if u.shape != () or (v := folded_value(u)) is None else v.item()

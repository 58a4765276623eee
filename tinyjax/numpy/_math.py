"""tinyjax.numpy: elementwise math (numpy's ufuncs on real numbers), where, clip, nan_to_num, and the predicates
isclose, allclose, array_equal. Every function takes arrays, numpy data and Python scalars and returns JAX's dtype:
integer inputs of a transcendental function become the default float (`jnp.sin(int32)` is float32), binary functions
promote as JAX does (`tinyjax.dtypes.result_type`, Python scalars weakly typed)."""
from __future__ import annotations
import functools, math, operator
from typing import Any, Callable
import numpy as np
from tinyjax import _tg
from tinyjax._tg import Tensor, dtypes, np_dtype
from tinyjax.lax.special import log1p as _log1p, expm1 as _expm1
from tinyjax.lax import special as _lax_special
from tinyjax.lax import ops as lax_ops
from tinyjax.primitives import exact_abs, LOGADDEXP, logaddexp2_partials
from tinyjax.numpy._core import asarray, check_arraylike, promote, promote_inexact, as_inexact, default_float, default_int, canonical_dtype
from tinyjax.numpy._shape import nonzero
from tinyjax.core import composite, fill, fill_like, primitive_kernel
from tinyjax.custom import custom_jvp

__all__ = ["where", "clip", "nan_to_num", "isclose", "allclose", "array_equal", "array_equiv", "heaviside", "divmod",
           "round", "around", "round_", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "real",
           "imag", "conj", "conjugate", "ldexp", "frexp", "gcd", "lcm", "nextafter", "sin", "cos", "tan", "arcsin",
           "arccos", "arctan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
           "asinh", "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
           "cbrt", "reciprocal", "square", "negative", "positive", "abs", "absolute", "fabs", "sign", "floor",
           "ceil", "trunc", "fix", "rint", "sinc", "deg2rad", "radians", "rad2deg", "degrees", "logical_not",
           "bitwise_not", "invert", "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "mod",
           "remainder", "fmod", "power", "pow", "float_power", "maximum", "minimum", "fmax", "fmin", "arctan2",
           "atan2", "hypot", "logaddexp", "logaddexp2", "copysign", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
           "bitwise_xor", "left_shift", "right_shift"]

# ---- unary ----------------------------------------------------------------------------------------------------------
# name -> (Tensor method or function of a Tensor, whether integer inputs become float first)
@composite
def _sinc(x: Tensor) -> Tensor:
  # JAX's sinc: sin(pi x)/(pi x), 1 at 0, with the derivatives of its Taylor series there (0, -pi^2/3, ...)
  px = x * math.pi
  safe = (x == 0).where(1.0, px)
  return (x == 0).where(1.0 - px * px / 6.0, safe.sin() / safe)

def _rint(x: Tensor) -> Tensor: return lax_ops.round_half_even(x)

def _square(x: Tensor) -> Tensor: return x.cast(default_int()).square() if x.dtype == dtypes.bool else x.square()

def _unary(name: str, fn: Callable[[Tensor], Tensor], inexact: bool) -> Callable:
  def f(x: Any) -> Tensor:
    check_arraylike(name, x)
    t = as_inexact(x) if inexact else asarray(x)
    if not inexact and name in ("floor", "ceil", "trunc", "fix") and not dtypes.is_float(t.dtype): return t
    if name in ("sign", "abs", "absolute") and t.dtype == dtypes.bool: return t if name != "sign" else t
    return fn(t)
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"jnp.{name}, elementwise."
  return f

sin = _unary("sin", Tensor.sin, True)
cos = _unary("cos", lambda t: t.cos(), True)   # (looked up at the call: patches.py widens it for weak floats)
tan = _unary("tan", Tensor.tan, True)
arcsin = _unary("arcsin", _lax_special.asin, True)
arccos = _unary("arccos", _lax_special.acos, True)
arctan = _unary("arctan", _lax_special.atan, True)
asin = _unary("asin", _lax_special.asin, True)
acos = _unary("acos", _lax_special.acos, True)
atan = _unary("atan", _lax_special.atan, True)
sinh = _unary("sinh", lax_ops.sinh_kernel, True)
cosh = _unary("cosh", lax_ops.cosh_kernel, True)
tanh = _unary("tanh", lax_ops.tanh_kernel, True)
arcsinh = _unary("arcsinh", _lax_special.asinh, True)
arccosh = _unary("arccosh", _lax_special.acosh, True)
arctanh = _unary("arctanh", _lax_special.atanh, True)
asinh = _unary("asinh", _lax_special.asinh, True)
acosh = _unary("acosh", _lax_special.acosh, True)
atanh = _unary("atanh", _lax_special.atanh, True)
exp = _unary("exp", lambda t: t.exp(), True)   # (looked up at the call: patches.py widens it for weak floats)
exp2 = _unary("exp2", Tensor.exp2, True)
expm1 = _unary("expm1", _expm1, True)
log = _unary("log", Tensor.log, True)
log2 = _unary("log2", Tensor.log2, True)
log10 = _unary("log10", lambda x: x.log() / math.log(10), True)
log1p = _unary("log1p", _log1p, True)
sqrt = _unary("sqrt", Tensor.sqrt, True)
rsqrt = _unary("rsqrt", Tensor.rsqrt, True)
cbrt = _unary("cbrt", _lax_special.cbrt, True)
reciprocal = _unary("reciprocal", Tensor.reciprocal, True)
square = _unary("square", _square, False)
negative = _unary("negative", Tensor.neg, False)
positive = _unary("positive", lambda x: x, False)
abs = _unary("abs", exact_abs, False)  # noqa: A001
absolute = _unary("absolute", exact_abs, False)
fabs = _unary("fabs", exact_abs, True)
sign = _unary("sign", lax_ops.sign, False)
floor = _unary("floor", Tensor.floor, False)
ceil = _unary("ceil", Tensor.ceil, False)
trunc = _unary("trunc", Tensor.trunc, False)
fix = _unary("fix", Tensor.trunc, False)
rint = _unary("rint", _rint, True)
sinc = _unary("sinc", _sinc, True)
deg2rad = _unary("deg2rad", lambda x: x * (math.pi / 180), True)
radians = _unary("radians", lambda x: x * (math.pi / 180), True)
rad2deg = _unary("rad2deg", lambda x: x * (180 / math.pi), True)
degrees = _unary("degrees", lambda x: x * (180 / math.pi), True)
logical_not = _unary("logical_not", lambda x: x.cast(dtypes.bool).logical_not(), False)
bitwise_not = _unary("bitwise_not", lambda x: x.bitwise_not(), False)
invert = _unary("invert", lambda x: x.bitwise_not(), False)

# ---- binary ---------------------------------------------------------------------------------------------------------

def _binary(name: str, fn: Callable[[Tensor, Tensor], Tensor], inexact: bool = False, out_bool: bool = False) -> Callable:
  def f(x1: Any, x2: Any) -> Tensor:
    check_arraylike(name, x1, x2)
    a, b = promote_inexact(x1, x2) if inexact else promote(x1, x2)
    return fn(a, b)
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"jnp.{name}, elementwise with broadcasting."
  return f

def _true_divide(a: Tensor, b: Tensor) -> Tensor: return a / b

def _idiv(a: Tensor, b: Tensor) -> Tensor: return _tg.tensor_method("__floordiv__")(a, b)   # tinygrad's own (b != 0)


@composite
def _float_divmod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
  """JAX's float divmod (CPython's float_divmod on fmod)."""
  m = lax_ops.fmod(a, b)
  div = (b == 0).where(a, a - m) / b
  fix = (m != 0) & ((b < 0) != (m < 0))
  return lax_ops.round_half_even(fix.where(div - 1, div)), fix.where(m + b, m)

@composite
def _floor_divide(a: Tensor, b: Tensor) -> Tensor:
  if dtypes.is_float(a.dtype): return _float_divmod(a, b)[0]
  if a.dtype == dtypes.bool: return a & b   # 1 // 1 = 1; x // 0 (XLA: all bits set) is True as well for True
  safe, zero, neg1 = lax_ops.int_divisor(b)
  q = neg1.where(-a, _idiv(a, safe))   # tinygrad's integer // rounds towards -inf, as Python and JAX
  # XLA's x / 0 is -1 (all ones unsigned), then JAX's floor correction subtracts 1 when x != 0
  at_zero = fill((), -1 if not dtypes.is_unsigned(a.dtype) else 2 ** (8 * a.dtype.itemsize) - 1, a.dtype)
  if not dtypes.is_unsigned(a.dtype): at_zero = (a != 0).where(at_zero - 1, at_zero)
  return zero.where(at_zero, q)

@composite
def _mod(a: Tensor, b: Tensor) -> Tensor:
  if dtypes.is_float(a.dtype): return _float_divmod(a, b)[1]
  if a.dtype == dtypes.bool: return a & ~b
  return lax_ops.int_mod(a, lax_ops.int_divisor(b)[0])   # JAX: x % 0 is x % 1 = 0

@composite
def _fmax(a: Tensor, b: Tensor) -> Tensor: return (a != a).where(b, (b != b).where(a, a.maximum(b)))
@composite
def _fmin(a: Tensor, b: Tensor) -> Tensor: return (a != a).where(b, (b != b).where(a, a.minimum(b)))

@composite
def _hypot(a: Tensor, b: Tensor) -> Tensor:
  # as JAX: scaled by the larger magnitude, so the squares do not overflow; 0 at (0, 0); inf wins over nan
  x, y = a.abs(), b.abs()
  big, small = x.maximum(y), x.minimum(y)
  safe = (big == 0).where(1.0, big)
  r = small / safe
  out = (big == 0).where(0.0, big * (1 + r * r).sqrt())
  out = ((a != a) | (b != b)).where(math.nan, out)
  return ((x == math.inf) | (y == math.inf)).where(math.inf, out)

@primitive_kernel("logaddexp", LOGADDEXP.partials)   # JAX's custom_jvp rule
def _logaddexp(a: Tensor, b: Tensor) -> Tensor:
  # JAX's: max + log1p(exp(-|a - b|)), a + b where a - b is nan (a nan, or infinities of one sign). tinygrad's
  # log(e^(a-m) + e^(b-m)) + m lost the smaller term below an ulp of 1 (logaddexp(-50, 0) was 0, not 2e-22: softplus)
  delta = a - b
  return (delta != delta).where(a + b, a.maximum(b) + _log1p((-delta.abs()).exp()))

@primitive_kernel("logaddexp2", logaddexp2_partials)
def _logaddexp2(a: Tensor, b: Tensor) -> Tensor: return _logaddexp(a * math.log(2), b * math.log(2)) / math.log(2)

def _copysign(a: Tensor, b: Tensor) -> Tensor: return ((b < 0) | ((b == 0) & (b.reciprocal() < 0))).where(-a.abs(), a.abs())

add = _binary("add", Tensor.add, False)
subtract = _binary("subtract", Tensor.sub, False)
multiply = _binary("multiply", Tensor.mul, False)
divide = _binary("divide", _true_divide, True)
true_divide = _binary("true_divide", _true_divide, True)
floor_divide = _binary("floor_divide", _floor_divide, False)
mod = _binary("mod", _mod, False)
remainder = _binary("remainder", _mod, False)
fmod = composite(_binary("fmod", lax_ops.fmod, False))
# (eagerly composites: pow is ~20 ops, 1.5 -> ~0.2 ms for x ** 3.5 on a 64x32 array; a float exponent is an argument)
_power = composite(_binary("power", lax_ops.power, False))
_float_base_integer_power = composite(lax_ops.power)

def power(x1: Any, x2: Any) -> Tensor:
  """jnp.power. A static integer exponent (a Python or numpy int) is JAX's integer_pow: repeated multiplication in the
  base's own dtype (int32 ** np.int64(2) stays int32), exact where pow's exp2(log2) rounds."""
  try: n = operator.index(x2) if isinstance(x2, (int, np.integer)) else None
  except TypeError: n = None
  if n is None:
    # JAX's float base with an integer array exponent: lax.pow without promotion, whose derivative is 0 where y = 0
    if isinstance(x1, (Tensor, np.ndarray)) and isinstance(x2, (Tensor, np.ndarray)):
      check_arraylike("power", x1, x2)
      a, b = asarray(x1), asarray(x2)
      if dtypes.is_float(a.dtype) and a.dtype not in dtypes.weaks and dtypes.is_int(b.dtype) and b.dtype not in dtypes.weaks:
        return _float_base_integer_power(a, b)
    return _power(x1, x2)
  t = asarray(x1)
  return lax_ops.integer_pow(t if t.dtype != dtypes.bool else t.cast(default_int()), n)

def pow(x1: Any, x2: Any) -> Tensor:  # noqa: A001
  """jnp.pow: jnp.power."""
  return power(x1, x2)
float_power = composite(_binary("float_power", lax_ops.power, True))
maximum = _binary("maximum", lax_ops.maximum, False)
minimum = _binary("minimum", lax_ops.minimum, False)
fmax = _binary("fmax", _fmax, False)
fmin = _binary("fmin", _fmin, False)
arctan2 = _binary("arctan2", _lax_special.atan2, True)
atan2 = _binary("atan2", _lax_special.atan2, True)
hypot = _binary("hypot", _hypot, True)
logaddexp = _binary("logaddexp", _logaddexp, True)
logaddexp2 = _binary("logaddexp2", _logaddexp2, True)
copysign = _binary("copysign", _copysign, True)
equal = _binary("equal", lambda a, b: a == b, False)
not_equal = _binary("not_equal", lambda a, b: a != b, False)
less = _binary("less", lambda a, b: a < b, False)
less_equal = _binary("less_equal", lax_ops.less_equal, False)
greater = _binary("greater", lambda a, b: a > b, False)
greater_equal = _binary("greater_equal", lax_ops.greater_equal, False)
logical_and = _binary("logical_and", lambda a, b: a.cast(dtypes.bool) & b.cast(dtypes.bool), False)
logical_or = _binary("logical_or", lambda a, b: a.cast(dtypes.bool) | b.cast(dtypes.bool), False)
logical_xor = _binary("logical_xor", lambda a, b: a.cast(dtypes.bool) ^ b.cast(dtypes.bool), False)
bitwise_and = _binary("bitwise_and", lambda a, b: a & b, False)
bitwise_or = _binary("bitwise_or", lambda a, b: a | b, False)
bitwise_xor = _binary("bitwise_xor", lambda a, b: a ^ b, False)
left_shift = _binary("left_shift", lambda a, b: a << b, False)
right_shift = _binary("right_shift", lambda a, b: a >> b, False)

def divmod(x1: Any, x2: Any) -> tuple[Tensor, Tensor]:  # noqa: A001
  return floor_divide(x1, x2), mod(x1, x2)

def heaviside(x1: Any, x2: Any) -> Tensor:
  a, b = promote_inexact(x1, x2)
  return (a != a).where(a, (a < 0).where(0.0, (a == 0).where(b, 1.0)).cast(a.dtype))

_FLOAT_BITS = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}

def _float_layout(dt: Any) -> tuple[Any, int, int]:
  """(the int dtype of dt's bits, mantissa bits, exponent bias)."""
  if dt == dtypes.bfloat16: return dtypes.int16, 7, 127
  info = np.finfo(np_dtype(dt))
  return _FLOAT_BITS[dt.itemsize], int(info.nmant), 1 - int(info.minexp)

def _pow2(k: Tensor, dt: Any) -> Tensor:
  """2**k exactly, from its bits (k integral, as floats, in [-(bias - 1), bias + 1]: bias + 1 gives inf)."""
  it, nmant, bias = _float_layout(dt)
  return ((k.cast(it) + bias) * (1 << nmant)).bitcast(dt)

def _exp2_exact(e: Tensor, dt: Any) -> Tensor:
  """2**e for integral e of any size: two exact powers of two whose product rounds once (0 below the subnormals,
  inf above the largest float), as XLA's 2**e."""
  _, _, bias = _float_layout(dt)
  h = (e * 0.5).floor()
  return _pow2(h.clip(1 - bias, bias + 1), dt) * _pow2((e - h).clip(1 - bias, bias + 1), dt)

def ldexp(x1: Any, x2: Any) -> Tensor:
  """x1 * 2**x2 (jnp.ldexp), exact, as JAX's: through frexp, so no overflow for a small x1 and a large x2."""
  a, n = as_inexact(x1), asarray(x2)
  if dtypes.is_float(n.dtype):
    raise ValueError(f"ldexp not supported for input types {(np_dtype(canonical_dtype(a.dtype)), np_dtype(canonical_dtype(n.dtype)))}")
  m, e = frexp(a)
  e = (e.cast(n.dtype) + n).cast(m.dtype)
  m, e = (e > 0).where(m * 2, m), (e > 0).where(e - 1, e)   # (the exponent may overflow by one, the result still finite)
  return (a.isinf() | (a == 0)).where(a, m * _exp2_exact(e, m.dtype))

def frexp(x: Any) -> tuple[Tensor, Tensor]:
  """Mantissa in [0.5, 1) and exponent, x = m * 2**e (jnp.frexp), from x's bits, subnormals too; (x, 0) for 0, inf
  and NaN. The mantissa's derivative is 2**-e, as JAX's."""
  a = as_inexact(x)
  dt = canonical_dtype(a.dtype)
  t = a.cast(dt) if dt != a.dtype else a
  it, nmant, bias = _float_layout(dt)
  sub = t.abs() < float(2.0 ** (1 - bias))   # subnormals (and zero): scaled into the normal range first
  bits = sub.where(t * float(1 << nmant), t).bitcast(it)
  e = ((bits // (1 << nmant)) & ((1 << (8 * dt.itemsize - 1 - nmant)) - 1)) - (bias - 1) - sub.where(nmant, 0)
  special = t.isinf() | t.isnan() | (t == 0)
  e = special.where(0, e).cast(dtypes.int32)
  m = special.where(t, t * _exp2_exact(-e.cast(dt), dt))   # (exact: a power of two; its derivative 2**-e)
  return (m.cast(a.dtype) if m.dtype != a.dtype else m), e

def _euclid_steps(bits: int) -> int:
  """Lame: Euclid needing n steps implies min(a, b) >= F(n+1), so n+1 Fibonacci numbers below 2**bits are enough
  (46 steps for int32, 92 for int64)."""
  f0, f1, n = 1, 2, 1
  while f1 < 2 ** bits: f0, f1, n = f1, f0 + f1, n + 1
  return n

def gcd(x1: Any, x2: Any) -> Tensor:
  a, b = promote(x1, x2)
  if dtypes.is_float(a.dtype): raise TypeError("gcd: arguments must be integers")
  # the loop's inputs in buffers of the output's shape: with a broadcast view or a fused abs inside, tinygrad's rewrite of
  # the unrolled loop took 14 s instead of 0.6 s for a 7x7 gcd
  shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
  a, b = (t.abs().expand(shape).contiguous() for t in (a, b))
  for _ in range(_euclid_steps(8 * a.dtype.itemsize)):
    nz = b != 0
    a, b = nz.where(b, a), nz.where(lax_ops.int_mod(a, nz.where(b, 1)), 0)
  return a

def lcm(x1: Any, x2: Any) -> Tensor:
  a, b = (t.abs() for t in promote(x1, x2))
  g = gcd(a, b).contiguous()   # its own kernel: fused into the division below, the rewrite took 13 s instead of 1 s
  return (g == 0).where(0, a * _idiv(b, (g == 0).where(1, g)))

def nextafter(x1: Any, x2: Any) -> Tensor:
  """The next float after x1 towards x2 (jnp.nextafter), from x1's bits: x2 where they are equal, NaN where either is.
  A Python float computes in the default float (not weakly typed, as JAX's). No derivative, as in JAX. (A subnormal x1
  is itself, where XLA's CPU flushes it to zero.)"""
  a, b = promote_inexact(x1, x2)
  if (dt := canonical_dtype(a.dtype)) != a.dtype: a, b = a.cast(dt), b.cast(dt)
  shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
  return _nextafter(a.expand(shape), b.expand(shape))

@custom_jvp
def _nextafter(a: Tensor, b: Tensor) -> Tensor:
  dt = a.dtype
  it = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[dt.itemsize]
  bits = a.bitcast(it)
  mag = bits & (2 ** (8 * dt.itemsize - 1) - 1)            # |x1|'s bits: one more is the next float away from zero
  away = (b > a) == (a > 0)
  step = away.where(mag + 1, mag - 1).bitcast(dt)
  r = (bits < 0).where(-step, step)                          # (x1's sign; -0.0 where a tiny negative steps to zero)
  tiny = float(np.finfo(np_dtype(dt)).smallest_subnormal)
  r = (a == 0).where((b < 0).where(-tiny, tiny), r)          # from zero: the smallest subnormal of x2's sign
  return (a.isnan() | b.isnan()).where(math.nan, (a == b).where(b, r))

@_nextafter.defjvp
def _nextafter_jvp(primals, tangents):
  raise NotImplementedError("Differentiation rule for 'nextafter' not implemented")

# ---- rounding, predicates -------------------------------------------------------------------------------------------

@composite   # (eagerly: ~10 ops for half to even, 1.0 -> ~0.15 ms)
def round(a: Any, decimals: int = 0) -> Tensor:  # noqa: A001
  """jnp.round: half to even, as numpy and JAX."""
  t, decimals = asarray(a), operator.index(decimals)   # a Python int: a numpy int's factor would be a typed float64
  if not dtypes.is_float(t.dtype):
    if decimals >= 0: return t
    f = 10 ** -decimals
    return (t.cast(default_float()) / f).round().mul(f).cast(t.dtype)
  if decimals == 0: return lax_ops.round_half_even(t)
  f = 10.0 ** decimals
  return lax_ops.round_half_even(t * f) / f

around = round_ = round

def isnan(x: Any) -> Tensor:
  t = asarray(x)
  return t != t if dtypes.is_float(t.dtype) else fill_like(t, False, dtypes.bool)

def isinf(x: Any) -> Tensor:
  t = asarray(x)
  return t.abs() == math.inf if dtypes.is_float(t.dtype) else fill_like(t, False, dtypes.bool)

def isfinite(x: Any) -> Tensor:
  t = asarray(x)
  return (t.abs() != math.inf) & (t == t) if dtypes.is_float(t.dtype) else fill_like(t, True, dtypes.bool)

def isposinf(x: Any) -> Tensor: return asarray(x) == math.inf
def isneginf(x: Any) -> Tensor: return asarray(x) == -math.inf

def signbit(x: Any) -> Tensor:
  t = asarray(x)
  if not dtypes.is_float(t.dtype): return t < 0 if t.dtype != dtypes.bool else fill_like(t, False, dtypes.bool)
  return _lax_special.negative_sign(t) | ((t != t) & (t.bitcast(dtypes.uint32 if t.dtype.itemsize == 4 else
                                                                              dtypes.uint64 if t.dtype.itemsize == 8 else dtypes.uint16)
                                                                     >> (8 * t.dtype.itemsize - 1) == 1))

def real(x: Any) -> Tensor: return asarray(x)
def imag(x: Any) -> Tensor:
  t = asarray(x)
  return fill_like(t, 0)
def conj(x: Any) -> Tensor: return asarray(x)
conjugate = conj

def where(condition: Any, x: Any = None, y: Any = None, *, size: int | None = None, fill_value: Any = None) -> Any:
  """jnp.where(c, x, y) selects elementwise; jnp.where(c) is jnp.nonzero(c) (its shape depends on the data: c must be
  concrete, or `size` given)."""
  if x is None and y is None:
    return nonzero(condition, size=size, fill_value=fill_value)
  if x is None or y is None: raise ValueError("Either both or neither of the x and y arguments should be provided to jax.numpy.where")
  check_arraylike("where", condition, x, y)
  c = asarray(condition)
  a, b = promote(x, y)
  return (c if c.dtype == dtypes.bool else c != 0).where(a, b)

def clip(arr: Any = None, min: Any = None, max: Any = None, *, a: Any = None, a_min: Any = None, a_max: Any = None) -> Tensor:  # noqa: A002
  """jnp.clip: min(max(x, lo), hi) (JAX's derivative at the bounds; nan stays nan)."""
  check_arraylike("clip", arr if arr is not None else a)
  return _clip(asarray(arr if arr is not None else a), min if min is not None else a_min, max if max is not None else a_max)

@composite   # (eagerly: 0.44 -> ~0.15 ms)
def _clip(x: Tensor, lo: Any, hi: Any) -> Tensor:
  if lo is not None: x = maximum(x, lo)
  if hi is not None: x = minimum(x, hi)
  return x

def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
  t = asarray(x)
  if not dtypes.is_float(t.dtype): return t
  info = np.finfo(_np_float(t))
  hi = info.max if posinf is None else posinf
  lo = info.min if neginf is None else neginf
  # the replacements in x's dtype, as JAX's (numpy scalars such as finfo's max included)
  t = (t != t).where(asarray(nan, t.dtype), t)
  t = (t == math.inf).where(asarray(hi, t.dtype), t)
  return (t == -math.inf).where(asarray(lo, t.dtype), t)

def _np_float(t: Tensor):
  return {2: np.float16, 4: np.float32, 8: np.float64}[t.dtype.itemsize] if t.dtype != dtypes.bfloat16 else np.float32

def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
  x, y = promote(a, b)
  if not dtypes.is_float(x.dtype): return x == y
  if all(type(v) in (int, float, bool) for v in (rtol, atol, equal_nan)): return _isclose_kernel(rtol, atol, equal_nan)(x, y)
  return _isclose(x, y, rtol, atol, equal_nan)

def _isclose(x: Tensor, y: Tensor, rtol: Any, atol: Any, equal_nan: Any) -> Tensor:
  close = (x - y).abs() <= atol + rtol * y.abs()
  both_inf = (x == y)   # equal infinities (and equal finite values)
  out = close & isfinite(x) & isfinite(y) | both_inf
  return out | (isnan(x) & isnan(y)) if equal_nan else out

@functools.lru_cache(maxsize=64)
def _isclose_kernel(rtol: float, atol: float, equal_nan: bool) -> composite:
  """isclose's ops for these tolerances as a composite: built once per signature when called eagerly (1.14 -> ~0.15 ms
  on a 64x32 array)."""
  return composite(functools.partial(_isclose, rtol=rtol, atol=atol, equal_nan=equal_nan))

def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
  return isclose(a, b, rtol, atol, equal_nan).all()

def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Tensor:
  x, y = asarray(a1), asarray(a2)
  if tuple(x.shape) != tuple(y.shape): return Tensor(False)
  x, y = promote(x, y)
  eq = x == y
  if equal_nan and dtypes.is_float(x.dtype): eq = eq | (isnan(x) & isnan(y))
  return eq.all()

def array_equiv(a1: Any, a2: Any) -> Tensor:
  x, y = asarray(a1), asarray(a2)
  try: np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
  except ValueError: return Tensor(False)
  x, y = promote(x, y)
  return (x == y).all()

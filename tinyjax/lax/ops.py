"""tinyjax.lax's array functions beyond collectives and control flow (re-exported by tinyjax.lax): dynamic slicing, pad,
convolution, windowed reductions, sorting, and elementwise functions with lax's strict typing (no promotion: operands
must have the same dtype; a Python scalar has JAX's default dtype of its kind).

Everything is ordinary tinygrad Tensor ops, so vmap, jvp, grad and jit apply. A start index that is a Tensor (traced by
vmap or jit, or data) selects with a one-hot comparison instead of a static shrink."""
from __future__ import annotations
import builtins, itertools, math
from typing import Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, dtypes, dtype_name, static_shape as _S, tensor_method, dtype_supported
from tinyjax.core import as_tensor, canonicalize_axis, fill, fill_like, composite, primitive_kernel
from tinyjax.dtypes import type_str
from tinyjax import primitives
from tinyjax.primitives import accurate_tanh, exact_abs
from tinyjax.lax import sorting, special
from tinyjax.pytree import tree_map
from tinyjax.complex_array import ComplexArray, is_complex_data, from_data

__all__ = ["dynamic_slice", "dynamic_update_slice", "dynamic_index_in_dim", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
           "dynamic_update_slice_in_dim", "stop_gradient", "pad", "padtype_to_pads", "conv_general_dilated", "conv",
           "reduce_window", "sort", "sort_key_val", "top_k", "integer_pow", "clamp", "rsqrt", "erf_inv",
           "add", "sub", "mul", "div", "rem", "max", "min", "pow", "neg", "sign", "abs", "square", "exp", "log", "tanh",
           "logistic", "sqrt", "sin", "cos", "log1p", "expm1", "floor", "ceil", "eq", "ne", "lt", "le", "gt", "ge",
           "erf", "erfc", "lgamma", "digamma", "tan", "sinh", "cosh", "atanh", "asin", "acos", "atan", "atan2", "asinh", "acosh",
           "exp2", "cbrt", "reciprocal", "is_finite", "round",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
           "complex", "real", "imag", "conj"]


def _operand(x, dtype=None) -> Tensor:
  """An operand of a lax function: an array, numpy data or a Python scalar (JAX's dtypes; `dtype` for a scalar)."""
  if isinstance(x, ComplexArray) or is_complex_data(x):
    raise NotImplementedError("tinyjax.lax: this function of complex operands is not supported; lax.complex, real, imag, conj and "
                              "tinyjax.numpy's functions take them (docs/porting.md, \"Complex numbers\")")
  t = as_tensor(x)
  return t.cast(dtype) if dtype is not None and t.dtype != dtype else t


# ---- complex numbers: a complex array is a pair of real Tensors (tinyjax.complex_array) ---------------------------------

def complex(x, y) -> ComplexArray:  # noqa: A001 (lax's name)
  """lax.complex: x + iy for real x and y of the same float dtype (broadcast, as JAX's lax.complex does not)."""
  re, im = _operand(x), _operand(y)
  if not dtypes.is_float(re.dtype) or (re.dtype != im.dtype and re.dtype not in dtypes.weaks and im.dtype not in dtypes.weaks):
    raise TypeError(f"lax.complex requires arguments of the same floating dtype, got {dtype_name(re.dtype)} and {dtype_name(im.dtype)}")
  if re.dtype in dtypes.weaks: re = re.cast(im.dtype if im.dtype not in dtypes.weaks else re.dtype)
  if im.dtype in dtypes.weaks and re.dtype not in dtypes.weaks: im = im.cast(re.dtype)
  if tuple(re.shape) != tuple(im.shape): re, im = re._broadcasted(im)
  return ComplexArray(re, im)

def _complex_operand(z) -> ComplexArray:
  if isinstance(z, ComplexArray): return z
  if is_complex_data(z): return from_data(z)
  t = _operand(z)
  return ComplexArray(t, fill_like(t, 0))

def real(z) -> Tensor: return _complex_operand(z).re
def imag(z) -> Tensor: return _complex_operand(z).im
def conj(z) -> ComplexArray: return _complex_operand(z).conj()


def _axis(axis: int, ndim: int) -> int: return canonicalize_axis(axis, builtins.max(ndim, 1))   # a 0-d operand has axis 0


# ---- elementwise kernels on operands of one dtype, which jax.numpy shares (it promotes, then calls them) ---------------

def int_mod(a: Tensor, b: Tensor) -> Tensor: return tensor_method("__mod__")(a, b)

def int_divisor(b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
  """(b with 0 and -1 replaced by 1, b == 0, b == -1): a compiled integer division by 0 (or of INT_MIN by -1) stops the
  process with SIGFPE, so those divisors never reach one; the callers give XLA's answers for them."""
  zero = b == 0
  neg1 = (b == -1) if not dtypes.is_unsigned(b.dtype) else zero.logical_not() & zero
  return (zero | neg1).where(1, b), zero, neg1

def fmod(a: Tensor, b: Tensor) -> Tensor:
  if dtypes.is_float(a.dtype):
    # C's fmod (XLA's rem), exact: x - trunc(x/y) y. A rounded quotient next to an integer (-1.5 / 0.3 in float32 is
    # -5.0, truly -4.99999998) is off by one, and the remainder by |y|: fmod(-1.5, 0.3) was 6e-8, not -0.29999995, and
    # so mod and floor_divide. Narrower floats are computed in float64, where the product and the difference are exact
    # while |x/y| < 2^29; the remainder, of the wrong sign or as large as |y| after a quotient off by one, is moved
    # back by |y| (exact there).
    wide = dtypes.float64 if a.dtype.itemsize < 8 and dtype_supported(dtypes.float64, a.device) else a.dtype
    x, y = a.cast(wide), b.cast(wide)
    r, neg, size = x - (x / y).trunc() * y, x < 0, y.abs()
    step = neg.where(-size, size)
    r = ((r != 0) & ((r < 0) != neg)).where(r + step, r)
    r = (r.abs() >= size).where(r - step, r).cast(a.dtype)
    # the remainder has the dividend's sign, a zero one too (x - x is +0, fmod(-3, 3) is -0: a * 0 is a's zero)
    r = (r == 0).where(a * 0, r)
    return ((b.abs() == math.inf) & (a.abs() != math.inf)).where(a, r)
  safe = int_divisor(b)[0]
  r = int_mod(a, safe)   # floor remainder: the sign of the divisor; fmod's has the sign of the dividend
  return ((r != 0) & ((r < 0) != (a < 0))).where(r - safe, r)

def maximum(a: Tensor, b: Tensor) -> Tensor:
  # nan propagates as in JAX
  if dtypes.is_float(a.dtype): return (a != a).where(a, (b != b).where(b, a.maximum(b)))
  return a.maximum(b)

def minimum(a: Tensor, b: Tensor) -> Tensor:
  if dtypes.is_float(a.dtype): return (a != a).where(a, (b != b).where(b, a.minimum(b)))
  return a.minimum(b)

def sign(x: Tensor) -> Tensor: return (x != x).where(x, x.sign()) if dtypes.is_float(x.dtype) else x.sign()

def power(a: Tensor, b: Tensor) -> Tensor:
  if not dtypes.is_float(a.dtype):
    # JAX's _pow_int_int: 6 squarings (anything more overflows for |x| > 1); 0^y is 0 for y != 0
    acc = ((a == 0) & (b != 0)).where(0, fill((), 1, a.dtype))
    for _ in range(6):
      acc = ((b & 1) != 0).where(acc * a, acc)
      a, b = a * a, tensor_method("__rshift__")(b.bitcast(_UNSIGNED[b.dtype.itemsize]), 1).bitcast(b.dtype)
    return acc
  if not dtypes.is_float(b.dtype): return _integer_exponent_power(a, b.cast(a.dtype))
  return _float_power(a, b)

def _integer_exponent_partials(ops: list[Tensor], out: Tensor) -> list[Tensor]:
  # JAX's pow rule for an integer exponent: 0 where it is 0 (x^-1 * 0 would be nan at x = 0); y has no derivative
  x, y = ops
  return [(y == 0).where(0.0, primitives.replace_zero(y) * _float_power(x, y - 1)), y.zeros_like()]

@primitive_kernel("pow", _integer_exponent_partials)   # JAX's pow_p with an integer y (given as x's dtype)
def _integer_exponent_power(a: Tensor, b: Tensor) -> Tensor: return _float_power(a, b)

def _pow_partials(ops: list[Tensor], out: Tensor) -> list[Tensor]:
  # (a literal exponent's c - 1 is a Python float: a constant of x's dtype for the lowering)
  return primitives.pow_partials(ops, out, lambda a, b: _float_power(a, b if isinstance(b, Tensor) else fill_like(a, b)))

@primitive_kernel("pow", _pow_partials)   # JAX's pow_p
def _float_power(a: Tensor, b: Tensor) -> Tensor:
  out = a.pow(b)
  # C's pow where tinygrad's gives nan for a negative base: an infinite exponent, and exponents so large that they are
  # even integers (tinygrad's parity test fails there)
  even = b.abs() >= 2.0 ** (dtypes.finfo(a.dtype)[1] + 1)
  out = ((a < 0) & even).where(a.abs().pow(b), out)
  at_inf = (a != a).where(a, (a.abs() == 1).where(1.0, ((a.abs() > 1) == (b > 0)).where(math.inf, 0.0)))
  return (b.abs() == math.inf).where(at_inf, out)

_UNSIGNED = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}

def less_equal(a: Tensor, b: Tensor) -> Tensor: return (a < b) | (a == b)   # false with nan (tinygrad's <= is not(>))
def greater_equal(a: Tensor, b: Tensor) -> Tensor: return (a > b) | (a == b)

def _axis_arg(shape: tuple[int, ...], d: int, arg) -> tuple:
  """A movement-op argument (pad/shrink) that is `arg` on axis d and None elsewhere."""
  return tuple(arg if i == d else None for i in range(len(shape)))

def _shrink(t: Tensor, d: int, lo: int, hi: int) -> Tensor: return t.shrink(_axis_arg(_S(t), d, (lo, hi)))


# ---- strict typing ----------------------------------------------------------------------------------------------------

FLOAT = ("floating, complexfloating", dtypes.is_float)
NUMBER = ("integer, floating, complexfloating", lambda d: d != dtypes.bool)
SIGNED = ("floating, complexfloating, signedinteger", lambda d: dtypes.is_float(d) or (dtypes.is_int(d) and not dtypes.is_unsigned(d)))
REAL = ("floating", dtypes.is_float)
INT_OR_BOOL = ("integer, bool", lambda d: d == dtypes.bool or dtypes.is_int(d))

def _weak(x) -> bool: return isinstance(x, (bool, int, float))

_JNP_NAME = {"atan2": "arctan2"}   # JAX's tip names numpy's spelling

def _same(name: str, *xs, tip: bool = False) -> list[Tensor]:
  """xs as Tensors of one dtype, else TypeError: lax does not promote (a Python scalar has the default dtype of its kind)."""
  ts = [_operand(x) for x in xs]
  if any(t.dtype != ts[0].dtype for t in ts):
    hint = f" (Tip: jnp.{_JNP_NAME.get(name, name)} is a similar function that does automatic type promotion on inputs)." if tip else ""
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {', '.join(dtype_name(t.dtype) for t in ts)}.{hint}")
  return ts

def _accept(name: str, t: Tensor, kinds: tuple[str, Callable], pos: int | None = None) -> Tensor:
  if not kinds[1](t.dtype):
    at = "" if pos is None else f" at position {pos}"
    raise TypeError(f"{name} does not accept dtype {dtype_name(t.dtype)}{at}. Accepted dtypes{at} are subtypes of {kinds[0]}.")
  return t

def _unary(name: str, fn: Callable[[Tensor], Tensor], kinds: tuple[str, Callable]) -> Callable:
  def f(x) -> Tensor: return fn(_accept(name, _operand(x), kinds))
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"lax.{name}, elementwise ({kinds[0].split(',')[0]} dtypes)."
  return f

def _binary(name: str, fn: Callable[[Tensor, Tensor], Tensor], kinds: tuple[str, Callable] | None, jax_name: str | None = None) -> Callable:
  """A lax binary function; `jax_name`: the primitive's name in JAX's messages where it differs (bitwise_and: "and")."""
  msg = jax_name or name
  def f(x, y) -> Tensor:
    if kinds is not None:   # JAX checks the kinds before the dtypes' equality
      for i, t in enumerate((_operand(x), _operand(y))): _accept(msg, t, kinds, i)
    a, b = _same(msg, x, y, tip=jax_name is None)
    if a.ndim and b.ndim and a.ndim != b.ndim:   # lax broadcasts size-1 axes and scalars, not ranks
      raise TypeError(f"{msg}: arrays must have the same number of dimensions, got {{{a.ndim}, {b.ndim}}}")
    return fn(a, b)
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"lax.{name}, elementwise; x and y of one dtype (no promotion) and rank (or scalars)."
  return f

def _int_div(a: Tensor, b: Tensor, rem: bool) -> Tensor:
  """C's integer division (towards zero) and remainder; x / 0 is -1 (all bits set), x % 0 is x, INT_MIN / -1 wraps to
  INT_MIN, as XLA's (the divisors 0 and -1 never reach a compiled division: `int_divisor`)."""
  safe, zero, neg1 = int_divisor(b)
  q = neg1.where(-a, a.div(safe, rounding_mode="trunc"))
  return zero.where(a, a - q * b) if rem else zero.where(-1, q).cast(a.dtype)

def _div(a: Tensor, b: Tensor) -> Tensor: return a / b if dtypes.is_float(a.dtype) else _int_div(a, b, False)
def _rem(a: Tensor, b: Tensor) -> Tensor: return fmod(a, b) if dtypes.is_float(a.dtype) else _int_div(a, b, True)

add = _binary("add", lambda a, b: a + b, NUMBER)
sub = _binary("sub", lambda a, b: a - b, NUMBER)
mul = _binary("mul", lambda a, b: a * b, NUMBER)
div = _binary("div", _div, NUMBER)
rem = _binary("rem", _rem, NUMBER)
max = _binary("max", maximum, None)  # noqa: A001
min = _binary("min", minimum, None)  # noqa: A001
eq = _binary("eq", lambda a, b: a == b, None)
ne = _binary("ne", lambda a, b: a != b, None)
lt = _binary("lt", (lambda a, b: a < b), None)
le = _binary("le", less_equal, None)
gt = _binary("gt", (lambda a, b: a > b), None)
ge = _binary("ge", greater_equal, None)
neg = _unary("neg", Tensor.neg, NUMBER)
sign = _unary("sign", sign, NUMBER)
abs = _unary("abs", exact_abs, SIGNED)  # noqa: A001
square = _unary("square", lambda x: x * x, NUMBER)
exp = _unary("exp", lambda t: t.exp(), FLOAT)   # (looked up at the call: patches.py widens it for weak floats)
log = _unary("log", Tensor.log, FLOAT)
# Kernels of many ops as composites (core.composite): called eagerly, their graph is built once per signature (a realized
# 64x32 array: jnp.tanh 1.19 -> 0.13 ms, erf 1.12 -> 0.13 ms); under a trace or a jit tanh and erf are their primitives'
# calls (`primitives.bind`), the others the ops themselves. numpy, scipy and nn use them too.
tanh_kernel = composite(accurate_tanh, primitives.ACCURATE_TANH)
erf_kernel = primitive_kernel("erf", primitives.ERF.partials)(special.erf)   # (XLA's formulas)
# (each one's derivative is the other's primitive, as JAX's rules: sinh'' is sinh, exactly 0 at 0)
def _sinh_partials(ops, out): return [cosh_kernel(ops[0])]
def _cosh_partials(ops, out): return [sinh_kernel(ops[0])]
sinh_kernel: composite = primitive_kernel("sinh", _sinh_partials)(primitives.xla_sinh)
cosh_kernel: composite = primitive_kernel("cosh", _cosh_partials)(primitives.xla_cosh)
tanh = _unary("tanh", tanh_kernel, FLOAT)
logistic = _unary("logistic", Tensor.sigmoid, FLOAT)
sqrt = _unary("sqrt", Tensor.sqrt, FLOAT)
rsqrt = _unary("rsqrt", Tensor.rsqrt, FLOAT)
sin = _unary("sin", Tensor.sin, FLOAT)
cos = _unary("cos", lambda t: t.cos(), FLOAT)   # (looked up at the call: patches.py widens it for weak floats)
log1p = _unary("log1p", special.log1p, FLOAT)
expm1 = _unary("expm1", special.expm1, FLOAT)
floor = _unary("floor", Tensor.floor, ("floating", dtypes.is_float))
ceil = _unary("ceil", Tensor.ceil, ("floating", dtypes.is_float))
erf_inv = _unary("erf_inv", special.erf_inv, REAL)
erf = _unary("erf", erf_kernel, REAL)
erfc = _unary("erfc", special.erfc, REAL)
lgamma = _unary("lgamma", special.lgamma, REAL)
digamma = _unary("digamma", special.digamma, REAL)
tan = _unary("tan", Tensor.tan, FLOAT)
sinh = _unary("sinh", sinh_kernel, FLOAT)
cosh = _unary("cosh", cosh_kernel, FLOAT)
atanh = _unary("atanh", special.atanh, FLOAT)
asin = _unary("asin", special.asin, FLOAT)
acos = _unary("acos", special.acos, FLOAT)
atan = _unary("atan", special.atan, FLOAT)
asinh = _unary("asinh", special.asinh, FLOAT)
acosh = _unary("acosh", special.acosh, FLOAT)
atan2 = _binary("atan2", special.atan2, FLOAT)
exp2 = _unary("exp2", Tensor.exp2, FLOAT)
cbrt = _unary("cbrt", special.cbrt, REAL)
is_finite = _unary("is_finite", lambda x: (x == x) & (x.abs() != math.inf), REAL)
bitwise_not = _unary("not", Tensor.bitwise_not, INT_OR_BOOL)
bitwise_not.__name__ = bitwise_not.__qualname__ = "bitwise_not"
bitwise_and = _binary("bitwise_and", Tensor.bitwise_and, INT_OR_BOOL, "and")
bitwise_or = _binary("bitwise_or", Tensor.bitwise_or, INT_OR_BOOL, "or")
bitwise_xor = _binary("bitwise_xor", Tensor.bitwise_xor, INT_OR_BOOL, "xor")

def reciprocal(x) -> Tensor:
  """lax.reciprocal: integer_pow(x, -1) (so integers raise integer_pow's TypeError, as JAX's)."""
  return integer_pow(x, -1)

def round(x, rounding_method: int = 0) -> Tensor:  # noqa: A001
  """lax.round: to the nearest integer, halves away from zero (rounding_method 0, RoundingMethod.AWAY_FROM_ZERO) or to
  even (1, TO_NEAREST_EVEN). Derivative zero."""
  if int(rounding_method) not in (0, 1): raise ValueError(f"{rounding_method} is not a valid RoundingMethod")
  t = _accept("round", _operand(x), REAL)
  return round_half_even(t) if int(rounding_method) == 1 else _round_away(t)

def _zero(ops: list[Tensor], out: Tensor) -> list[Tensor]: return [ops[0].zeros_like()]   # JAX's defjvp_zero

@primitive_kernel("round", _zero)
def _round_away(t: Tensor) -> Tensor:
  tr = t.trunc()   # exact: x - trunc(x) is representable, so the comparison with 0.5 is too (floor(x + 0.5) is not)
  return _zero_signed_as(((t - tr).abs() >= 0.5).where(tr + t.sign(), tr), t)

@primitive_kernel("round", _zero)
def round_half_even(t: Tensor) -> Tensor:
  """A float array rounded half to even, a zero with t's sign (-0.4 -> -0.0, 0.3 -> 0.0), as XLA's: tinygrad's round
  gives +0 for -0.3 and -0 for 0.3."""
  return _zero_signed_as(t.round(), t)

def _zero_signed_as(out: Tensor, t: Tensor) -> Tensor:
  negative = (t < 0) | ((t == 0) & (t.reciprocal() < 0))   # (-0 < 0 is false; 1/-0 is -inf)
  return (out == 0).where(negative.where(-0.0, 0.0), out)

def pow(x, y) -> Tensor:  # noqa: A001
  """lax.pow: x ** y for float x and y of x's dtype or any integer dtype (an integer power)."""
  a = _operand(x)
  b = _operand(y, dtype=a.dtype if isinstance(y, float) else None) if not isinstance(y, Tensor) else y
  if not dtypes.is_float(a.dtype) or b.dtype == dtypes.bool or (dtypes.is_float(b.dtype) and b.dtype != a.dtype):
    raise TypeError("the first argument to pow must have an inexact dtype (float or complex), and the second argument must have "
                    "an inexact or integer dtype, and two inexact dtypes must match, but got "
                    f"{dtype_name(a.dtype)} and {dtype_name(b.dtype)} respectively.")
  return power(a, b)

def integer_pow(x, y: int) -> Tensor:
  """lax.integer_pow: x ** y for a static int y by repeated multiplication (y < 0: 1 / x ** -y, floats only)."""
  t = _accept("integer_pow", _operand(x), NUMBER)
  if y < 0 and not dtypes.is_float(t.dtype):
    raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({type_str(t)}, {y})")
  if y == 0: return t.ones_like()
  acc: Tensor | None = None
  base, n = t, -y if y < 0 else y
  while n:   # binary exponentiation, as XLA lowers it
    if n & 1: acc = base if acc is None else acc * base
    n >>= 1
    if n: base = base * base
  assert acc is not None
  return acc.reciprocal() if y < 0 else acc

def clamp(min, x, max) -> Tensor:  # noqa: A002
  """lax.clamp: x limited to [min, max] (min and max scalars or of x's shape). The derivative is x's strictly inside,
  min's strictly below it (when min < max), max's strictly above; at a tie nobody's, as JAX's."""
  lo, t, hi = _same("clamp", min, x, max)
  for nm, b in (("min", lo), ("max", hi)):
    if b.ndim and _S(b) != _S(t):
      raise TypeError(f"clamp requires {nm}.shape == operand.shape or {nm}.shape == (), got {nm}.shape={_S(b)}, operand.shape={_S(t)}.")
  value = minimum(maximum(t, lo), hi).detach()
  return ((t > lo) & (t < hi)).where(t, ((lo > t) & (lo < hi)).where(lo, (hi < t).where(hi, value)))

# ---- cumulative reductions ---------------------------------------------------------------------------------------------

def _cummax(t: Tensor, axis: int, largest: bool) -> Tensor:
  """The running max (min) along axis with NaN propagating, as XLA's; ties share the derivative, as JAX's."""
  vals = (t.cummax(axis) if largest else t.cummin(axis))[0]   # tinygrad's return (values, indices)
  if not dtypes.is_float(t.dtype): return vals
  return ((t != t).cast(dtypes.int32).cumsum(axis) > 0).where(math.nan, vals)

def _cumlogsumexp(t: Tensor, axis: int) -> Tensor:
  """log(cumsum(exp(t))) along axis: each prefix shifted by its own running max (a constant for the derivative, 0 where
  it is infinite), so neither a large entry overflows nor an early small one underflows. O(n^2) in the axis's length."""
  x = t.transpose(axis, -1)
  n = _S(x)[-1]
  m = _cummax(x, x.ndim - 1, True).detach()
  m = (m.abs() == math.inf).where(0.0, m)
  inside = Tensor.ones(n, n, dtype=dtypes.bool, device=t.device).tril()   # [i, j]: j <= i
  out = inside.where(x.unsqueeze(-2) - m.unsqueeze(-1), -math.inf).exp().sum(-1).log() + m
  return out.transpose(-1, axis)

CUMULATIVE = ("number", lambda d: d != dtypes.bool)

def _cumulative(name: str, fn: Callable[[Tensor, int], Tensor]) -> Callable:
  def f(operand, axis: int = 0, reverse: bool = False) -> Tensor:
    t = _accept(name, _operand(operand), CUMULATIVE)
    axis = int(axis)
    if axis < 0: raise ValueError("XLA operations do not allow negative axes")
    if axis >= t.ndim: raise ValueError(f"axis {axis} is out of bounds for array of shape {_S(t)}")
    if reverse: t = t.flip(axis)
    out = fn(t, axis).cast(t.dtype)   # tinygrad's cumsum of narrow ints accumulates in int32: JAX's wraps in the dtype
    return out.flip(axis) if reverse else out
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"lax.{name}: the cumulative {name[3:]} along `axis` (from the end with reverse=True), in the operand's dtype."
  return f

cumsum = _cumulative("cumsum", Tensor.cumsum)
cumprod = _cumulative("cumprod", Tensor.cumprod)
cummax = _cumulative("cummax", lambda t, axis: _cummax(t, axis, True))
cummin = _cumulative("cummin", lambda t, axis: _cummax(t, axis, False))
cumlogsumexp = _cumulative("cumlogsumexp", _cumlogsumexp)

def stop_gradient(x):
  """lax.stop_gradient: x (a pytree) as a value without derivative: jvp and grad see a constant, vmap maps it."""
  return tree_map(lambda leaf: _operand(leaf).detach(), x)


# ---- dynamic slicing ---------------------------------------------------------------------------------------------------

def _check_indices(name: str, idx: list) -> None:
  """JAX's rule: one integer dtype for all start indices (a Python int is the default int), scalars only."""
  ts = [i if isinstance(i, Tensor) else _operand(i) for i in idx]
  if any(t.dtype != ts[0].dtype or not dtypes.is_int(t.dtype) for t in ts):
    raise TypeError(f"index arguments to {name} must be integers of the same type, got: {', '.join(dtype_name(t.dtype) for t in ts)}")
  if any(t.ndim for t in ts): raise TypeError(f"start_indices arguments to {name} must be scalars,  got indices {idx}")

def _from_end(i, n: int, allow_negative: bool) -> int | Tensor:
  """A negative start counted from the end where allowed (a Python int, or a scalar int Tensor)."""
  if not isinstance(i, Tensor):
    i = int(i)
    if i < 0 and not allow_negative: raise ValueError(f"Index {i} is out of bounds for dimension {n} if allow_negative_indices=False")
    return i + n if i < 0 else i
  return (i < 0).where(i + n, i) if allow_negative and not dtypes.is_unsigned(i.dtype) else i

def _starts(name: str, x: Tensor, start_indices, allow_negative: bool | Sequence[bool]) -> list[int | Tensor]:
  """The start indices as Python ints or scalar int Tensors (JAX's _dynamic_slice_indices)."""
  shape = _S(x)
  if len(start_indices) != len(shape):
    raise ValueError(f"Length of slice indices must match number of operand dimensions ({len(start_indices)} vs {shape})")
  if isinstance(start_indices, (Tensor, np.ndarray)):
    if start_indices.ndim != 1: raise ValueError(f"Slice indices must be a 1D sequence, got {tuple(start_indices.shape)}")
    start_indices = [start_indices[i] for i in range(len(shape))]
  _check_indices(name, list(start_indices))
  neg = [allow_negative] * len(shape) if isinstance(allow_negative, bool) else list(allow_negative)
  return [_from_end(i, n, a) for i, n, a in zip(start_indices, shape, neg, strict=True)]

def _one_axis(name: str, x: Tensor, index, axis: int, allow_negative: bool) -> list[int | Tensor]:
  """Starts for a slice along one axis: `index` there, 0 elsewhere."""
  _check_indices(name, [index])
  axis = _axis(axis, x.ndim)
  return [_from_end(index, n, allow_negative) if d == axis else 0 for d, n in enumerate(_S(x))]

def _clamp_start(i: int | Tensor, n: int, size: int) -> int | Tensor:
  """The start that keeps the slice inside the axis, as XLA's dynamic slices."""
  return builtins.min(builtins.max(i, 0), n - size) if isinstance(i, int) else i.maximum(0).minimum(n - size)

def _onehot(start: Tensor, size: int, n: int, trailing: int) -> Tensor:
  """Bool (size, n, 1, ...) with [j, k] = (k == start + j): where element j of the slice is on an axis of n."""
  j = Tensor.arange(size, dtype=start.dtype).reshape(size, 1)
  k = Tensor.arange(n, dtype=start.dtype).reshape(1, n)
  return (k == start + j).reshape((size, n) + (1,) * trailing)

def _contract(t: Tensor, hot: Tensor, axis: int) -> Tensor:
  """The sum over `axis` of t where hot (one True per sum: a selection, exact for every dtype)."""
  if t.dtype == dtypes.bool: return (hot & t).any(axis)
  return hot.where(t, 0).sum(axis, dtype=t.dtype)

def _check_sizes(x: Tensor, sizes: tuple[int, ...]) -> None:
  if len(sizes) != x.ndim: raise ValueError(f"slice_sizes must have one entry per operand dimension, got {sizes} for operand shape {_S(x)}")
  if not all(s <= n for s, n in zip(sizes, _S(x), strict=True)):
    raise TypeError(f"slice slice_sizes must be less than or equal to operand shape, got slice_sizes {sizes} for operand shape {_S(x)}.")
  if not all(s >= 0 for s in sizes): raise TypeError(f"slice slice_sizes must be greater than or equal to zero, got slice_sizes of {sizes}.")

def dynamic_slice(operand, start_indices, slice_sizes: Sequence[int], *, allow_negative_indices: bool | Sequence[bool] = True) -> Tensor:
  """lax.dynamic_slice: operand[start:start + size] on every axis; a start that would overrun the axis is moved back
  (clamped to [0, n - size]), negative starts count from the end. Start indices may be traced Tensors."""
  x = _operand(operand)
  return _slice(x, _starts("dynamic_slice", x, start_indices, allow_negative_indices), tuple(int(s) for s in slice_sizes))

def _slice(x: Tensor, starts: list[int | Tensor], sizes: tuple[int, ...]) -> Tensor:
  _check_sizes(x, sizes)
  for d, (i, n, s) in enumerate(zip(starts, _S(x), sizes, strict=True)):
    i = _clamp_start(i, n, s)
    x = _shrink(x, d, i, i + s) if isinstance(i, int) else _contract(x.unsqueeze(d), _onehot(i, s, n, x.ndim - d - 1), d + 1)
  return x

def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices: bool | Sequence[bool] = True) -> Tensor:
  """lax.dynamic_update_slice: operand with update written at start_indices (clamped so update fits, as dynamic_slice).
  Start indices may be traced Tensors."""
  x = _operand(operand)
  return _update(x, _operand(update), _starts("dynamic_update_slice", x, start_indices, allow_negative_indices))

def _update(x: Tensor, u: Tensor, starts: list[int | Tensor]) -> Tensor:
  if x.ndim != u.ndim:
    raise TypeError(f"dynamic_update_slice update must have the same rank as operand, got update shape {_S(u)} for operand shape {_S(x)}.")
  if not all(s <= n for s, n in zip(_S(u), _S(x), strict=True)):
    raise TypeError(f"dynamic_update_slice update shape must be smaller than operand shape, got update shape {_S(u)} for operand shape {_S(x)}.")
  if u.dtype != x.dtype:
    raise TypeError(f"lax.dynamic_update_slice requires arguments to have the same dtypes, got {dtype_name(x.dtype)}, {dtype_name(u.dtype)}.")
  mask: Tensor | None = None
  for d, (i, n, s) in enumerate(zip(starts, _S(x), _S(u), strict=True)):
    i = _clamp_start(i, n, s)
    trailing = x.ndim - d - 1
    # update spread over axis d (zeros elsewhere), and where it lands
    u = u.pad(_axis_arg(_S(u), d, (i, n - s - i))) if isinstance(i, int) else _contract(u.unsqueeze(d + 1), _onehot(i, s, n, trailing), d)
    k = Tensor.arange(n).reshape((n,) + (1,) * trailing)
    inside = (k >= i) & (k < i + s)
    mask = inside if mask is None else mask & inside
  return u if mask is None else mask.where(u, x)

def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *, allow_negative_indices: bool = True) -> Tensor:
  """lax.dynamic_slice_in_dim: operand[..., start:start + slice_size, ...] on `axis`."""
  x = _operand(operand)
  sizes = tuple(slice_size if d == _axis(axis, x.ndim) else n for d, n in enumerate(_S(x)))
  return _slice(x, _one_axis("dynamic_slice", x, start_index, axis, allow_negative_indices), sizes)

def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *, allow_negative_indices: bool = True) -> Tensor:
  """lax.dynamic_index_in_dim: operand[..., index, ...] on `axis` (kept as size 1 if keepdims)."""
  out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
  return out if keepdims else out.squeeze(axis)

def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *, allow_negative_indices: bool = True) -> Tensor:
  """lax.dynamic_update_slice_in_dim: update written at start_index along `axis` (from 0 on the other axes)."""
  x = _operand(operand)
  return _update(x, _operand(update), _one_axis("dynamic_update_slice", x, start_index, axis, allow_negative_indices))

def dynamic_update_index_in_dim(operand, update, index, axis: int, *, allow_negative_indices: bool = True) -> Tensor:
  """lax.dynamic_update_index_in_dim: update (with or without the size-1 `axis`) written at `index` along `axis`."""
  x, u = _operand(operand), _operand(update)
  axis = axis % x.ndim
  if u.ndim == x.ndim - 1: u = u.unsqueeze(axis)
  return dynamic_update_slice_in_dim(x, u, index, axis, allow_negative_indices=allow_negative_indices)


# ---- pad -------------------------------------------------------------------------------------------------------------

def _pad(t: Tensor, config: Sequence[tuple[int, int, int]], value) -> Tensor:
  """t with `interior` values between its elements and lo/hi values around each axis (negative: cut off)."""
  if isinstance(value, Tensor):   # a traced value: pad zeros, then place it where nothing of t landed
    inside = _pad(Tensor.ones(*_S(t), dtype=dtypes.bool, device=t.device), config, False)
    return inside.where(_pad(t, config, 0), value.cast(t.dtype))
  for d, (lo, hi, interior) in enumerate(config):
    n = _S(t)[d]
    if interior and n > 1:   # each element followed by `interior` values, the last ones cut off
      t = t.unsqueeze(d + 1).pad(_axis_arg(_S(t) + (1,), d + 1, (0, interior)), value=value)
      t = _shrink(t.flatten(d, d + 1), d, 0, n + (n - 1) * interior)
    t = t.pad(_axis_arg(_S(t), d, (builtins.max(lo, 0), builtins.max(hi, 0))), value=value)
    t = _shrink(t, d, builtins.max(-lo, 0), _S(t)[d] - builtins.max(-hi, 0))
  return t

def _scalar_like(name: str, value, t: Tensor):
  """value as a Python number (a static pad) or a Tensor, of t's dtype (lax does not promote)."""
  if np.shape(value) != (): raise ValueError(f"{name} must be a scalar; got np.shape({name})={np.shape(value)}")
  v = _operand(value)
  if v.dtype != t.dtype:
    raise TypeError(f"pad operand and padding_value must be same dtype: got {dtype_name(t.dtype)} and {dtype_name(v.dtype)}.")
  return value if _weak(value) else v

def pad(operand, padding_value, padding_config: Sequence[tuple[int, int, int]]) -> Tensor:
  """lax.pad: each axis gets (lo, hi, interior) padding with padding_value: lo before, hi after (negative: that many
  elements removed), interior between neighbouring elements. padding_value may be a traced scalar."""
  t = _operand(operand)
  config = tuple((int(lo), int(hi), int(it)) for lo, hi, it in padding_config)
  if len(config) != t.ndim:
    raise ValueError(f"length of padding_config must equal the number of axes of operand, got padding_config {config} for operand shape {_S(t)}")
  if any(it < 0 for _, _, it in config):
    raise ValueError(f"interior padding in padding_config must be nonnegative, got padding_config {config}")
  out = tuple(lo + hi + n + builtins.max(n - 1, 0) * it for n, (lo, hi, it) in zip(_S(t), config, strict=True))
  if any(n < 0 for n in out):
    raise ValueError(f"Dimension size after padding is not at least 0, got result shape {out}, for padding_config {config} and operand shape {_S(t)}")
  return _pad(t, config, _scalar_like("padding_value", padding_value, t))


# ---- convolution -----------------------------------------------------------------------------------------------------

def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
  """lax.padtype_to_pads: (lo, hi) per axis for 'VALID', 'SAME' (extra at the end) or 'SAME_LOWER' (extra at the start)."""
  kind = padding.upper() if isinstance(padding, str) else padding
  if kind == "VALID": return [(0, 0)] * len(in_shape)
  if kind not in ("SAME", "SAME_LOWER"):
    raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got {padding}.")
  out = []
  for n, k, s in zip(in_shape, window_shape, window_strides, strict=True):
    total = builtins.max((-(-n // s) - 1) * s + k - n, 0)
    out.append((total // 2, total - total // 2) if kind == "SAME" else (total - total // 2, total // 2))
  return out

def _conv_perms(dimension_numbers, lhs_ndim: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
  """Where N, C and the spatial axes (in the kernel spec's order) are in lhs, rhs (O, I, ...) and the output
  (JAX's conv_general_permutations)."""
  if dimension_numbers is None: return (tuple(range(lhs_ndim)),) * 3
  if hasattr(dimension_numbers, "lhs_spec"):   # a ConvDimensionNumbers
    return tuple(dimension_numbers.lhs_spec), tuple(dimension_numbers.rhs_spec), tuple(dimension_numbers.out_spec)
  if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3 or not all(isinstance(s, str) for s in dimension_numbers):
    raise NotImplementedError(f"tinyjax.lax.conv_general_dilated: dimension_numbers={dimension_numbers!r}: give None, "
                              "three strings such as ('NHWC', 'HWIO', 'NHWC') or a ConvDimensionNumbers")
  lhs, rhs, out = dimension_numbers
  for i, (spec, (a, b)) in enumerate(zip(dimension_numbers, (("N", "C"), ("O", "I"), ("N", "C")), strict=True)):
    if len(spec) != lhs_ndim:
      raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim of lhs and rhs, got {len(spec)}")
    if not spec.count(a) == spec.count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters '{a}' and '{b}' exactly once, got {spec}.")
    if len(set(spec)) != len(spec): raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec}.")
  if not set(lhs) - {"N", "C"} == set(rhs) - {"O", "I"} == set(out) - {"N", "C"}:
    raise TypeError(f"convolution dimension_numbers elements must each have the same set of spatial characters, got {tuple(dimension_numbers)}.")
  def perm(spec: str, pair: str) -> tuple[int, ...]:
    spatial = sorted((i for i, c in enumerate(spec) if c not in pair), key=lambda i: rhs.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)
  return perm(lhs, "NC"), perm(rhs, "OI"), perm(out, "NC")

def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]],
                         lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None) -> Tensor:
  """lax.conv_general_dilated: N-d cross-correlation of lhs with the kernel rhs, with strides, padding ('SAME', 'VALID',
  'SAME_LOWER' or (lo, hi) pairs, negative allowed), lhs_dilation (zeros between input elements: a transposed
  convolution), rhs_dilation (atrous), layouts from dimension_numbers and feature groups. `precision` is ignored."""
  if batch_group_count != 1: raise NotImplementedError("tinyjax.lax.conv_general_dilated: batch_group_count != 1 is not supported")
  x, w = _operand(lhs), _operand(rhs)
  if preferred_element_type is not None: x, w = _operand(x, preferred_element_type), _operand(w, preferred_element_type)
  if x.dtype != w.dtype:
    raise TypeError(f"lax.conv_general_dilated requires arguments to have the same dtypes, got {dtype_name(x.dtype)}, {dtype_name(w.dtype)}.")
  lp, rp, op = _conv_perms(dimension_numbers, x.ndim)
  x, w = x.permute(lp), w.permute(rp)   # (N, C, spatial...), (O, I, spatial...)
  nsp = x.ndim - 2
  strides = tuple(window_strides) if window_strides is not None else (1,) * nsp
  ldil, rdil = tuple(lhs_dilation or (1,) * nsp), tuple(rhs_dilation or (1,) * nsp)
  if isinstance(padding, str):
    if any(d != 1 for d in ldil):
      raise ValueError("String padding is not implemented for transposed convolution using this op. Please either exactly specify "
                       "the required padding or use conv_transpose.")
    pads = padtype_to_pads(_S(x)[2:], [(k - 1) * r + 1 for k, r in zip(_S(w)[2:], rdil, strict=True)], strides, padding)
  else: pads = [(int(lo), int(hi)) for lo, hi in padding]
  c, (o, i) = _S(x)[1], _S(w)[:2]
  if c % feature_group_count or c // feature_group_count != i:
    raise ValueError("conv_general_dilated lhs feature dimension size divided by feature_group_count must equal the rhs input "
                     f"feature dimension size, but {c} // {feature_group_count} != {i}.")
  if o % feature_group_count:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a multiple of feature_group_count, but "
                     f"{o} is not a multiple of {feature_group_count}.")
  dt = x.dtype
  if dt == dtypes.bool: x, w = x.cast(dtypes.int32), w.cast(dtypes.int32)   # any(lhs & rhs) as a count
  x = _pad(x, [(0, 0, 0)] * 2 + [(lo, hi, d - 1) for (lo, hi), d in zip(pads, ldil, strict=True)], 0)
  out = x.conv2d(w, groups=feature_group_count, stride=strides, dilation=rdil)
  out = (out != 0) if dt == dtypes.bool else out.cast(dt)
  return out.permute(tuple(int(a) for a in np.argsort(op)))

def conv(lhs, rhs, window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]], precision=None,
         preferred_element_type=None) -> Tensor:
  """lax.conv: conv_general_dilated with NC... inputs, OI... kernels and no dilation."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision, preferred_element_type=preferred_element_type)


# ---- reduce_window ---------------------------------------------------------------------------------------------------

def _first_max(a: Tensor, b: Tensor) -> Tensor:
  """max(a, b) keeping a on ties and NaN winning: folded left to right, the derivative goes to the first maximum of a
  window, as JAX's (select_and_gather_add)."""
  return ((b > a) | ((b != b) & (a == a))).where(b, a)

def _first_min(a: Tensor, b: Tensor) -> Tensor: return ((b < a) | ((b != b) & (a == a))).where(b, a)

def _windows(t: Tensor, dims: tuple[int, ...], strides: tuple[int, ...], dilation: tuple[int, ...]) -> list[Tensor]:
  """The strided views of t, one per position in the window: view[o] holds window o's element at that position."""
  counts = [builtins.max((n - (k - 1) * r - 1) // s + 1, 0) for n, k, s, r in zip(_S(t), dims, strides, dilation, strict=True)]
  out = []
  for pos in itertools.product(*(range(k) for k in dims)):
    sl = tuple(slice(p * r, p * r + (c - 1) * s + 1, s) if c else slice(0, 0) for p, r, c, s in zip(pos, dilation, counts, strides, strict=True))
    out.append(t[sl])
  return out

def reduce_window(operand, init_value, computation: Callable, window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID", base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Tensor:
  """lax.reduce_window: computation (a binary function, e.g. lax.max, lax.add) folded over each window, starting from
  init_value; padding and base-dilation holes are skipped. lax.max/lax.min (and jnp.maximum/minimum) give the
  derivative to a window's first maximum (minimum), as JAX. One operand only."""
  if isinstance(operand, (tuple, list, dict)):
    raise NotImplementedError("tinyjax.lax.reduce_window: a tree of operands (variadic reduce_window) is not supported")
  x = _operand(operand)
  dims = tuple(int(d) for d in window_dimensions)
  if len(dims) != x.ndim:
    raise TypeError(f"reduce_window got the wrong number of window_dimensions for operand: got operand shape {_S(x)} with window_dimensions {dims}.")
  if np.shape(init_value) != ():
    raise TypeError(f"reduce_window expected init_values to be scalars but init_values have shapes [{np.shape(init_value)}].")
  strides = tuple(window_strides) if window_strides is not None else (1,) * x.ndim
  bdil, wdil = tuple(base_dilation or (1,) * x.ndim), tuple(window_dilation or (1,) * x.ndim)
  if isinstance(padding, str): pads = padtype_to_pads(_S(x), [(k - 1) * r + 1 for k, r in zip(dims, wdil, strict=True)], strides, padding)
  else: pads = [(int(lo), int(hi)) for lo, hi in padding]
  init = init_value if _weak(init_value) else _operand(init_value).cast(x.dtype)
  config = [(lo, hi, b - 1) for (lo, hi), b in zip(pads, bdil, strict=True)]
  fold = {max: _first_max, maximum: _first_max, min: _first_min, minimum: _first_min}.get(computation, computation)
  if x.dtype == dtypes.bool and fold in (_first_max, _first_min): fold = maximum if fold is _first_max else minimum
  views = _windows(_pad(x, config, 0), dims, strides, wdil)
  # padding and base-dilation holes take no part (JAX's answer for a computation whose identity init_value is not)
  holes = _windows(_pad(x.ones_like(dtype=dtypes.bool), config, False), dims, strides, wdil) if any(c != (0, 0, 0) for c in config) else None
  acc = (init if isinstance(init, Tensor) else Tensor(init, dtype=x.dtype, device=x.device)).expand(_S(views[0]))
  for k, v in enumerate(views): acc = _operand(fold(acc, v)) if holes is None else holes[k].where(_operand(fold(acc, v)), acc)
  return acc


# ---- sorting ---------------------------------------------------------------------------------------------------------

def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
  """lax.sort: operand (or each of a sequence of operands, returned as a tuple) reordered along `dimension` by
  ascending keys: the first num_keys operands, lexicographically. Always stable; NaNs last, -0.0 equal to 0.0."""
  seq = isinstance(operand, (tuple, list))
  ops = [_operand(o) for o in (operand if seq else [operand])]
  if any(_S(o) != _S(ops[0]) for o in ops):
    raise TypeError(f"Arguments to sort must have equal shapes, got: {' '.join(str(_S(o)) for o in ops)}")
  if not 1 <= num_keys <= len(ops): raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(ops)}")
  if ops[0].ndim == 0: raise NotImplementedError("tinyjax.lax.sort of a 0-d operand is not supported")
  out = sorting.sort(ops, _axis(dimension, ops[0].ndim), num_keys)
  return out if seq else out[0]

def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True) -> tuple[Tensor, Tensor]:
  """lax.sort_key_val: (keys sorted, values in the keys' order)."""
  return sort((keys, values), dimension, is_stable, num_keys=1)

def top_k(operand, k: int, *, axis: int = -1) -> list[Tensor]:
  """lax.top_k: [the k largest values along `axis` in descending order, their int32 indices] (a list, as JAX returns);
  equal values in index order; floats in IEEE's total order as JAX's (NaN first, -NaN last, 0.0 before -0.0)."""
  if k < 0: raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  t = _operand(operand)
  ax = _axis(axis, t.ndim)
  if k > _S(t)[ax]:
    raise ValueError(f"k argument to top_k must be no larger than size along axis; got k={k} with shape={list(_S(t))} and axis={ax}")
  return list(sorting.top_k(t, k, ax))

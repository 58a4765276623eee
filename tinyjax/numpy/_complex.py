"""tinyjax.numpy on complex arrays (`tinyjax.complex_array.ComplexArray`: a real and an imaginary Tensor). `COMPLEX`
maps a jnp function's name to its complex version, which `tinyjax.numpy` calls when an argument is complex (a complex
array, numpy complex data, a Python complex, or a complex dtype); a jnp function with no entry raises
NotImplementedError naming it. Three kinds of entries:
- functions that move or add elements (reshape, concatenate, sum, indexing...) are R-linear: they run on the real and
  the imaginary parts alike (`_on_parts`);
- products (matmul, einsum, ...) are multilinear: (a + ib)(c + id) expands into real products (`_multilinear`);
- elementwise math uses the formulas XLA's complex expanders use (exp, log, sqrt, sin, division...).
Everything is Tensor arithmetic on the parts: it fuses into ordinary kernels and every transform sees real values."""
from __future__ import annotations
import itertools, math, warnings
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, dtypes
from tinyjax.complex_array import ComplexArray, is_complex_data, from_data, is_complex_argument, is_complex_dtype
from tinyjax.dtypes import ComplexDType, complex_of, is_complex, canonical_dtype, to_inexact_dtype, result_type, to_dtype, \
  default_complex
from tinyjax.numpy._core import asarray
from tinyjax.core import composite, fill_like
from tinyjax.numpy import _math, _shape, _reductions, _products, _creation, _indexing

__all__ = ["COMPLEX", "operator", "as_complex", "promote_complex", "is_complex_argument", "angle", "iscomplexobj", "isrealobj",
           "iscomplex", "isreal"]

C = ComplexArray

# ---- conversion and promotion -----------------------------------------------------------------------------------------

def _part(dt: ComplexDType) -> Any: return canonical_dtype(dt).part

def as_complex(x: Any, dtype: Any = None) -> C:
  """x as a complex array of `dtype` (a complex dtype; None: x's own, or the complex of x's float dtype)."""
  dt = to_dtype(dtype)
  if dt is not None and not is_complex(dt): raise TypeError(f"as_complex: {dt} is not a complex dtype")
  if isinstance(x, C):
    if dt is None or x.dtype == dt: return x
    return C(x.re.cast(_part(dt)), x.im.cast(_part(dt)))
  if type(x) in (complex, float, int) and dt is not None:   # a Python scalar: two constants (no host buffer)
    part = _part(dt)
    return C(Tensor(float(x.real), dtype=part), Tensor(float(x.imag), dtype=part))
  if isinstance(x, (list, tuple)) and not any(isinstance(e, (C, Tensor)) for e in _flat(x)): x = np.asarray(x)
  if is_complex_data(x): return from_data(x, dt)
  t = asarray(x)
  part = _part(dt) if dt is not None else complex_of(to_inexact_dtype(t.dtype)).part
  re = t.cast(part) if t.dtype != part else t
  # a real array promoted inside arithmetic: its imaginary part a broadcast constant (tinygrad's zeros_like writes a
  # buffer of zeros: ~0.35 ms of graph building, and a kernel)
  return C(re, re.const_like(0))

def promote_complex(*args: Any) -> list[C]:
  """The arguments as complex arrays of their common dtype (JAX's promotion; Python scalars weakly typed)."""
  dt = result_type(*args)
  if not is_complex(dt): dt = complex_of(to_inexact_dtype(dt))
  return [as_complex(a, dt) for a in args]

# ---- construction and parts -------------------------------------------------------------------------------------------

def _real(x: Any) -> Tensor: return x.re if isinstance(x, C) else as_complex(x).re
def _imag(x: Any) -> Tensor: return x.im if isinstance(x, C) else as_complex(x).im
def _conj(x: Any) -> C: return as_complex(x).conj()

def angle(z: Any, deg: bool = False) -> Tensor:
  """jnp.angle: the argument of z (atan2(imag, real)), in radians or degrees."""
  if isinstance(z, C) or is_complex_data(z):
    c = as_complex(z)
    a = _math.arctan2(c.im, c.re)
  else: a = _real_angle(z)
  return a * (180 / math.pi) if deg else a

def _real_angle(x: Any) -> Tensor:
  t = asarray(x)
  t = t.cast(to_inexact_dtype(t.dtype)) if t.dtype != to_inexact_dtype(t.dtype) else t
  return _math.arctan2(fill_like(t, 0), t)

def iscomplexobj(x: Any) -> bool:
  return isinstance(x, C) or is_complex_data(x) or is_complex_dtype(getattr(x, "dtype", None))

def isrealobj(x: Any) -> bool: return not iscomplexobj(x)

def iscomplex(x: Any) -> Tensor:
  return as_complex(x).im != 0 if iscomplexobj(x) else fill_like(asarray(x), False, dtypes.bool)

def isreal(x: Any) -> Tensor:
  return as_complex(x).im == 0 if iscomplexobj(x) else fill_like(asarray(x), True, dtypes.bool)

# ---- arithmetic (XLA's formulas) ----------------------------------------------------------------------------------------

def add(x, y) -> C:
  a, b = promote_complex(x, y)
  return C(a.re + b.re, a.im + b.im)

def subtract(x, y) -> C:
  a, b = promote_complex(x, y)
  return C(a.re - b.re, a.im - b.im)

@composite
def _mul(a: C, b: C) -> C: return C(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)

def multiply(x, y) -> C: return _mul(*promote_complex(x, y))

@composite
def _div(a: C, b: C) -> C:
  # Smith's algorithm (no overflow of |b|^2), the ratio taken along the larger of b's parts
  c, d = b.re, b.im
  big = c.abs() >= d.abs()
  r = big.where(d / c, c / d)
  den = big.where(c + d * r, c * r + d)
  re = big.where(a.re + a.im * r, a.re * r + a.im) / den
  im = big.where(a.im - a.re * r, a.im * r - a.re) / den
  return C(re, im)

def true_divide(x, y) -> C: return _div(*promote_complex(x, y))

def negative(x) -> C:
  z = as_complex(x)
  return C(-z.re, -z.im)

def positive(x) -> C: return as_complex(x)

def _abs(x) -> Tensor:
  z = as_complex(x)
  return _math.hypot(z.re, z.im)

@composite
def square(x) -> C:
  # XLA's: (re - im)(re + im) + 2 re im i, which stays finite where re^2 - im^2 would be inf - inf
  z = as_complex(x)
  return C((z.re - z.im) * (z.re + z.im), 2 * z.re * z.im)

@composite
def reciprocal(x) -> C:
  z = as_complex(x)
  return _div(as_complex(1.0, z.dtype), z)

def _int_power(z: C, n: int) -> C:
  # JAX's integer_pow: binary powering (a negative exponent: the reciprocal)
  acc: C | None = None
  base, k = z, abs(n)
  while k:
    if k & 1: acc = base if acc is None else _mul(acc, base)
    k >>= 1
    if k: base = _mul(base, base)
  out = acc if acc is not None else C(fill_like(z.re, 1), fill_like(z.im, 0))
  return _div(C(fill_like(out.re, 1), fill_like(out.im, 0)), out) if n < 0 else out

@composite
def power(x, y) -> C:
  if isinstance(y, (int, np.integer)) and not isinstance(y, bool): return _int_power(as_complex(x), int(y))
  a, b = promote_complex(x, y)
  # x**y = exp(y log x); XLA's for a zero base: 1 for y = 0, 0 for a real positive y, nan otherwise
  out = exp(_mul(b, log(a)))
  zero_base = (a.re == 0) & (a.im == 0)
  zero_exp = (b.re == 0) & (b.im == 0)
  at_zero = zero_exp.where(1.0, ((b.re > 0) & (b.im == 0)).where(0.0, math.nan))
  re = zero_base.where(at_zero, out.re)
  im = zero_base.where(zero_exp.where(0.0, ((b.re > 0) & (b.im == 0)).where(0.0, math.nan)), out.im)
  return C(re.cast(a.re.dtype), im.cast(a.re.dtype))

@composite
def exp(x) -> C:
  z = as_complex(x)
  e = z.re.exp()
  # exp(x + 0i) is exp(x) + 0i exactly (no inf * 0 = nan for a large x)
  return C((z.im == 0).where(e, e * z.im.cos()), (z.im == 0).where(z.im, e * z.im.sin()))

@composite
def log(x) -> C:
  z = as_complex(x)
  return C(_math.hypot(z.re, z.im).log(), _math.arctan2(z.im, z.re))

@composite
def sqrt(x) -> C:
  # XLA's: t = sqrt((|re| + |z|) / 2); re >= 0: (t, im / 2t), else (|im| / 2t, t with im's sign)
  z = as_complex(x)
  t = ((z.re.abs() + _math.hypot(z.re, z.im)) * 0.5).sqrt()
  zero = t == 0
  half = zero.where(0.0, z.im / zero.where(1.0, 2 * t))
  pos = z.re >= 0
  re = pos.where(t, half.abs())
  im = pos.where(half, (z.im < 0).where(-t, t))
  inf_im = z.im.abs() == math.inf   # sqrt(x + inf i) = inf + inf i for every x, nan included
  return C(inf_im.where(math.inf, re).cast(z.re.dtype), inf_im.where(z.im, im).cast(z.re.dtype))

@composite
def sin(x) -> C:
  z = as_complex(x)
  return C(z.re.sin() * z.im.cosh(), z.re.cos() * z.im.sinh())

@composite
def cos(x) -> C:
  z = as_complex(x)
  return C(z.re.cos() * z.im.cosh(), -(z.re.sin() * z.im.sinh()))

@composite
def tan(x) -> C: return _div(sin(x), cos(x))

@composite
def sinh(x) -> C:
  z = as_complex(x)
  return C(z.re.sinh() * z.im.cos(), z.re.cosh() * z.im.sin())

@composite
def cosh(x) -> C:
  z = as_complex(x)
  return C(z.re.cosh() * z.im.cos(), z.re.sinh() * z.im.sin())

@composite
def tanh(x) -> C: return _div(sinh(x), cosh(x))

def _scaled_log(base: float) -> Callable:
  def f(x) -> C:
    z = log(x)
    return C(z.re / math.log(base), z.im / math.log(base))
  return f

@composite
def exp2(x) -> C:
  z = as_complex(x)
  return exp(C(z.re * math.log(2), z.im * math.log(2)))

@composite
def expm1(x) -> C:
  z = exp(x)
  return C(z.re - 1, z.im)

@composite
def log1p(x) -> C:
  z = as_complex(x)
  return log(C(z.re + 1, z.im))

@composite
def sign(x) -> C:
  z = as_complex(x)
  r = _math.hypot(z.re, z.im)
  safe = (r == 0).where(1.0, r)
  return C((r == 0).where(0.0, z.re / safe).cast(z.re.dtype), (r == 0).where(0.0, z.im / safe).cast(z.re.dtype))

def equal(x, y) -> Tensor:
  a, b = promote_complex(x, y)
  return (a.re == b.re) & (a.im == b.im)

def not_equal(x, y) -> Tensor: return equal(x, y).logical_not()

def isnan(x) -> Tensor:
  z = as_complex(x)
  return _math.isnan(z.re) | _math.isnan(z.im)

def isinf(x) -> Tensor:
  z = as_complex(x)
  return _math.isinf(z.re) | _math.isinf(z.im)

def isfinite(x) -> Tensor:
  z = as_complex(x)
  return _math.isfinite(z.re) & _math.isfinite(z.im)

def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
  a, b = promote_complex(a, b)
  out = _abs(subtract(a, b)) <= atol + rtol * _abs(b)
  both_inf = isinf(a) & isinf(b)
  out = both_inf.where(equal(a, b), out)
  return out | (isnan(a) & isnan(b)) if equal_nan else out

def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor: return isclose(a, b, rtol, atol, equal_nan).all()

def array_equal(a1, a2, equal_nan=False) -> Tensor:
  a, b = promote_complex(a1, a2)
  if a.shape != b.shape: return Tensor(False)
  eq = equal(a, b)
  return (eq | (isnan(a) & isnan(b)) if equal_nan else eq).all()

# ---- ordering: JAX orders complex values lexicographically (the real parts, then the imaginary ones) -----------------------

def less(x, y) -> Tensor:
  a, b = promote_complex(x, y)
  return (a.re < b.re) | ((a.re == b.re) & (a.im < b.im))

def less_equal(x, y) -> Tensor:
  a, b = promote_complex(x, y)
  return (a.re < b.re) | ((a.re == b.re) & (a.im <= b.im))

def greater(x, y) -> Tensor: return less(y, x)
def greater_equal(x, y) -> Tensor: return less_equal(y, x)

def maximum(x, y) -> C:
  a, b = promote_complex(x, y)
  return _where(greater_equal(a, b), a, b)

def minimum(x, y) -> C:
  a, b = promote_complex(x, y)
  return _where(less_equal(a, b), a, b)

def _extreme(name: str, a, axis=None, out=None, keepdims=False, initial=None, where=None) -> C:
  # the extreme real part, then the extreme imaginary part among the elements that have it
  if initial is not None or where is not None: raise NotImplementedError(f"jnp.{name} of complex values with initial= or where=")
  z = as_complex(a)
  red = _reductions.max if name == "max" else _reductions.min
  re = red(z.re, axis, keepdims=True)
  fill = -math.inf if name == "max" else math.inf
  im = red((z.re == re).where(z.im, fill), axis, keepdims=True)
  if not keepdims:
    axes = tuple(range(z.ndim)) if axis is None else tuple(ax % z.ndim for ax in ((axis,) if isinstance(axis, int) else axis))
    shape = tuple(d for i, d in enumerate(z.shape) if i not in axes)
    re, im = re.reshape(shape), im.reshape(shape)
  return C(re, im)

def _argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None) -> Tensor:
  z = as_complex(a)
  if axis is None: z, axis = C(z.re.flatten(), z.im.flatten()), -1
  idx = _shape.lexsort([z.im, z.re], axis=axis)
  return idx.flip(axis) if descending else idx

def _sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False) -> C:
  z = as_complex(a)
  if axis is None: z, axis = C(z.re.flatten(), z.im.flatten()), -1
  idx = _argsort(z, axis, descending=descending)
  return C(_indexing.take_along_axis(z.re, idx, axis), _indexing.take_along_axis(z.im, idx, axis))

def _no_order(name: str, exc: type = TypeError, msg: str = "{name} does not accept dtype {dt} at position 0. Accepted dtypes at "
              "position 0 are subtypes of integer, floating, bool.") -> Callable:
  def f(*args, **kwargs):
    dt = next((canonical_dtype(as_complex(a).dtype).name for a in args if isinstance(a, C) or is_complex_data(a)), "complex64")
    raise exc(msg.format(name=name, dt=dt))
  return f

_CLIP = ("Clip received a complex value either through the input or the min/max keywords. Complex values have no ordering and "
         "cannot be clipped. Please convert to a real value or array by taking the real or imaginary components via "
         "jax.numpy.real/imag respectively.")

# ---- functions of the parts, and multilinear products ---------------------------------------------------------------------

def _on_parts(fn: Callable, arrays: Sequence[int] = (0,), many: bool = False) -> Callable:
  """fn (R-linear in the arguments at `arrays`, which `many` says are sequences of arrays) on the real parts and on the
  imaginary parts; a list or tuple of results (split) pairs up."""
  def f(*arguments, **kwargs):
    args = list(arguments)
    pos = [i for i in arrays if i < len(args)]
    flat = [e for i in pos for e in (args[i] if many else [args[i]])]
    zs = promote_complex(*flat)
    it = iter(zs)
    re_args, im_args = list(args), list(args)
    for i in pos:
      if many:
        elems = [next(it) for _ in args[i]]
        re_args[i], im_args[i] = [z.re for z in elems], [z.im for z in elems]
      else:
        z = next(it)
        re_args[i], im_args[i] = z.re, z.im
    re, im = fn(*re_args, **kwargs), fn(*im_args, **kwargs)
    if isinstance(re, (list, tuple)): return type(re)(C(r, i) for r, i in zip(re, im, strict=True))
    return C(re, im)
  return f

def _multilinear(fn: Callable, arrays: Sequence[int]) -> Callable:
  """fn, linear in each argument at `arrays`: the product of k complex factors expands into 2^k real products, the
  terms with an even number of imaginary factors going to the real part (i^2 = -1)."""
  def f(*arguments, **kwargs):
    args = list(arguments)
    zs = promote_complex(*[args[i] for i in arrays])
    re: Any = None
    im: Any = None
    for choice in itertools.product((0, 1), repeat=len(arrays)):
      call = list(args)
      for i, z, c in zip(arrays, zs, choice, strict=True): call[i] = z.im if c else z.re
      term, n_im = fn(*call, **kwargs), sum(choice)
      sign = -1 if n_im % 4 in (2, 3) else 1
      if n_im % 2 == 0: re = (term if sign > 0 else -term) if re is None else (re + term if sign > 0 else re - term)
      else: im = (term if sign > 0 else -term) if im is None else (im + term if sign > 0 else im - term)
    return C(re, im)
  return f

def _einsum(subscripts, *operands, **kwargs) -> C:
  return _multilinear(lambda *ops: _products.einsum(subscripts, *ops, **kwargs), list(range(len(operands))))(*operands)

def _vdot(a, b, **kwargs) -> C: return _multilinear(_products.vdot, (0, 1))(_conj(a), b, **kwargs)

def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None) -> C:
  z = as_complex(a, dtype)
  return C(_reductions.mean(z.re, axis, keepdims=keepdims, where=where), _reductions.mean(z.im, axis, keepdims=keepdims, where=where))

def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True) -> C:
  z = as_complex(a, dtype)
  if initial is not None:
    i = as_complex(initial, z.dtype)
    return add(_sum(z, axis, keepdims=keepdims, where=where), i)
  return C(_reductions.sum(z.re, axis, keepdims=keepdims, where=where), _reductions.sum(z.im, axis, keepdims=keepdims, where=where))

def _prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True) -> C:
  # a balanced tree of complex products along each axis in turn
  z = as_complex(a, dtype)
  if where is not None: z = _where(where, z, 1.0)
  axes = range(z.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
  axes = sorted((ax % z.ndim for ax in axes), reverse=True)
  for ax in axes:
    while z.shape[ax] > 1:
      n = z.shape[ax]
      if n % 2: z = _concatenate([z, as_complex(Tensor.ones(*[1 if i == ax else d for i, d in enumerate(z.shape)]), z.dtype)], ax)
      lo = C(*(p.shrink(tuple((0, z.shape[ax] // 2) if i == ax else None for i in range(z.ndim))) for p in (z.re, z.im)))
      hi = C(*(p.shrink(tuple((z.shape[ax] // 2, z.shape[ax]) if i == ax else None for i in range(z.ndim))) for p in (z.re, z.im)))
      z = _mul(lo, hi)
    if z.shape[ax] == 0: z = as_complex(Tensor.ones(*[1 if i == ax else d for i, d in enumerate(z.shape)]), z.dtype)
    if not keepdims: z = C(z.re.squeeze(ax), z.im.squeeze(ax))
  return multiply(z, initial) if initial is not None else z

def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None) -> Tensor:
  # the variance of a complex array is real: the mean of |x - mean|^2 (numpy's and JAX's)
  if where is not None or mean is not None: raise NotImplementedError("jnp.var/std of complex values with where= or mean=")
  z = as_complex(a)
  m = _mean(z, axis, keepdims=True, where=where)
  d = subtract(z, m)
  sq = d.re * d.re + d.im * d.im
  n = sq.numel() if axis is None else math.prod(sq.shape[ax] for ax in ((axis,) if isinstance(axis, int) else axis))
  dd = correction if correction is not None else ddof
  return _reductions.sum(sq, axis, keepdims=keepdims, where=where) / (n - dd)

def _std(*args, **kwargs) -> Tensor: return _var(*args, **kwargs).sqrt()

def _where(condition, x=None, y=None, **kwargs) -> C:
  if x is None or y is None: raise NotImplementedError("jnp.where(condition) of a complex condition")
  a, b = promote_complex(x, y)
  c = asarray(condition)
  return C(_math.where(c, a.re, b.re), _math.where(c, a.im, b.im))

def _concatenate(arrays, axis=0, dtype=None) -> C:
  zs = promote_complex(*arrays) if dtype is None else [as_complex(a, dtype) for a in arrays]
  return C(_shape.concatenate([z.re for z in zs], axis), _shape.concatenate([z.im for z in zs], axis))

def _astype(x, dtype, copy=False) -> Any:
  dt = to_dtype(dtype)
  if is_complex(dt): return as_complex(x, dt)
  warnings.warn("Casting from complex to real discards the imaginary part.", np.exceptions.ComplexWarning, stacklevel=2)
  return _real(as_complex(x)).cast(dt)

def _full(shape, fill_value, dtype=None, **kw) -> C:
  dt = to_dtype(dtype) if dtype is not None else result_type(fill_value)
  v = as_complex(fill_value, dt if is_complex(dt) else None)
  return C(_creation.full(shape, v.re, _part(v.dtype)), _creation.full(shape, v.im, _part(v.dtype)))

def _creator(fn: Callable) -> Callable:
  """zeros/ones/eye... with a complex dtype: the real array of the part dtype, and zeros."""
  def f(*arguments, dtype=None, **kwargs):
    args = list(arguments)
    for i, a in enumerate(args):
      if is_complex_dtype(a): dtype, args = a, args[:i] + args[i + 1:]
    dt = to_dtype(dtype) if dtype is not None else default_complex()
    re = fn(*args, dtype=_part(dt), **kwargs)
    return C(re, fill_like(re, 0))
  return f

def _like(fn: Callable) -> Callable:
  def f(a, *args, dtype=None, **kwargs):
    dt = to_dtype(dtype) if dtype is not None else (a.dtype if isinstance(a, C) else as_complex(a).dtype)
    if not is_complex(dt): return fn(_real(a), *args, dtype=dt, **kwargs)
    re = fn(_real(a) if isinstance(a, C) else asarray(a), *args, dtype=_part(dt), **kwargs)
    if fn is _creation.full_like:
      v = as_complex(args[0] if args else kwargs["fill_value"], dt)
      return C(_creation.full_like(re, v.re), _creation.full_like(re, v.im))
    return C(re, fill_like(re, 0))
  return f

def _asarray(a, dtype=None, copy=None) -> Any:
  dt = to_dtype(dtype)
  if dt is not None and not is_complex(dt): return _astype(a, dt)
  if isinstance(a, (list, tuple)) and any(isinstance(e, (C, Tensor)) for e in _flat(a)): return _stack_nested(a, dt)
  return as_complex(a, dt)

def _flat(a: Any) -> list:
  return [x for e in a for x in _flat(e)] if isinstance(a, (list, tuple)) else [a]

def _stack_nested(a: Any, dt: Any) -> C:
  if not isinstance(a, (list, tuple)): return as_complex(a, dt)
  zs = [_stack_nested(e, dt) for e in a]
  zs = promote_complex(*zs) if dt is None else zs
  return C(Tensor.stack(*[z.re for z in zs]), Tensor.stack(*[z.im for z in zs]))

def _array(object, dtype=None, copy=True, order=None, ndmin=0) -> Any:  # noqa: A002
  z = _asarray(object, dtype)
  if isinstance(z, C) and ndmin > z.ndim:
    shape = (1,) * (ndmin - z.ndim) + z.shape
    return C(z.re.reshape(shape), z.im.reshape(shape))
  return z

# ---- the table ------------------------------------------------------------------------------------------------------------

_FIRST = ("reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "moveaxis", "swapaxes", "expand_dims", "squeeze",
          "broadcast_to", "flip", "fliplr", "flipud", "rot90", "roll", "tile", "repeat", "triu", "tril", "diagonal", "diag",
          "diagflat", "trace", "cumsum", "cumulative_sum", "diff", "take", "take_along_axis", "split", "array_split", "hsplit",
          "vsplit", "dsplit", "resize", "delete", "compress", "atleast_1d", "atleast_2d", "atleast_3d", "unstack", "copy",
          "pad")
_SEQUENCE = ("stack", "vstack", "hstack", "dstack", "column_stack", "concat")

def _jnp_function(name: str) -> Callable:
  for mod in (_shape, _creation, _products, _reductions, _indexing, _math):
    if hasattr(mod, name): return getattr(mod, name)
  raise AttributeError(name)

def _exists(name: str) -> bool: return any(hasattr(m, name) for m in (_shape, _creation, _products, _reductions, _indexing, _math))

COMPLEX: dict[str, Callable] = {
  **{n: _on_parts(_jnp_function(n)) for n in _FIRST if _exists(n)},
  **{n: _on_parts(_jnp_function(n), many=True) for n in _SEQUENCE},
  "concatenate": _concatenate, "where": _where, "sum": _sum, "mean": _mean, "prod": _prod, "var": _var, "std": _std,
  "append": _on_parts(_shape.append, (0, 1)), "insert": _on_parts(_shape.insert, (0, 2)),
  "matmul": _multilinear(_products.matmul, (0, 1)), "dot": _multilinear(_products.dot, (0, 1)),
  "inner": _multilinear(_products.inner, (0, 1)), "outer": _multilinear(_products.outer, (0, 1)),
  "tensordot": _multilinear(_products.tensordot, (0, 1)), "kron": _multilinear(_products.kron, (0, 1)),
  "vecdot": lambda a, b, **kw: _multilinear(_products.vecdot, (0, 1))(_conj(a), b, **kw),
  "convolve": _multilinear(_products.convolve, (0, 1)),
  "correlate": lambda a, v, *args, **kw: _multilinear(_products.correlate, (0, 1))(a, _conj(v), *args, **kw),
  "einsum": _einsum, "vdot": _vdot,
  "add": add, "subtract": subtract, "multiply": multiply, "divide": true_divide, "true_divide": true_divide,
  "negative": negative, "positive": positive, "abs": _abs, "absolute": _abs, "square": square, "reciprocal": reciprocal,
  "power": power, "pow": power, "exp": exp, "exp2": exp2, "expm1": expm1, "log": log, "log2": _scaled_log(2),
  "log10": _scaled_log(10), "log1p": log1p, "sqrt": sqrt, "sin": sin, "cos": cos, "tan": tan, "sinh": sinh, "cosh": cosh,
  "tanh": tanh, "sign": sign, "equal": equal, "not_equal": not_equal, "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
  "isclose": isclose, "allclose": allclose, "array_equal": array_equal,
  "real": _real, "imag": _imag, "conj": _conj, "conjugate": _conj, "angle": angle,
  "iscomplexobj": iscomplexobj, "isrealobj": isrealobj, "iscomplex": iscomplex, "isreal": isreal,
  "asarray": _asarray, "array": _array, "astype": _astype,
  "zeros": _creator(_creation.zeros), "ones": _creator(_creation.ones), "empty": _creator(_creation.zeros),
  "eye": _creator(_creation.eye), "identity": _creator(_creation.identity), "full": _full,
  "zeros_like": _like(_creation.zeros_like), "ones_like": _like(_creation.ones_like), "empty_like": _like(_creation.zeros_like),
  "full_like": _like(_creation.full_like),
  "result_type": result_type, "shape": lambda a: as_complex(a).shape, "ndim": lambda a: as_complex(a).ndim,
  "size": lambda a, axis=None: as_complex(a).size if axis is None else as_complex(a).shape[axis],
}

# ---- the array's methods and operators ----------------------------------------------------------------------------------

class _At:
  """z.at[idx]: JAX's functional updates, on the parts (set, add) or through a gather and a set (multiply, divide, min,
  max: only for indices that cannot repeat)."""
  def __init__(self, z: C, idx: Any): self.z, self.idx = z, idx
  def get(self, **kwargs) -> C: return C(self.z.re.at[self.idx].get(**kwargs), self.z.im.at[self.idx].get(**kwargs))
  def set(self, v: Any, **kwargs) -> C:
    v = as_complex(v, self.z.dtype)
    return C(self.z.re.at[self.idx].set(v.re, **kwargs), self.z.im.at[self.idx].set(v.im, **kwargs))
  def add(self, v: Any, **kwargs) -> C:
    v = as_complex(v, self.z.dtype)
    return C(self.z.re.at[self.idx].add(v.re, **kwargs), self.z.im.at[self.idx].add(v.im, **kwargs))
  def subtract(self, v: Any, **kwargs) -> C: return self.add(negative(as_complex(v, self.z.dtype)), **kwargs)
  def _gather_set(self, fn: Callable, v: Any, what: str, kwargs: dict) -> C:
    # through a gather and a set an index that repeats would be updated once where JAX applies each update: only
    # indices that cannot repeat (ints, slices, None, ..., boolean masks)
    items = self.idx if isinstance(self.idx, tuple) else (self.idx,)
    if any(not (isinstance(i, (int, slice, type(None), type(Ellipsis))) or (isinstance(i, np.ndarray) and i.dtype == np.bool_))
           for i in items):
      raise NotImplementedError(f"z.at[...].{what} of complex values with an array index (an index that repeats would be updated once)")
    return self.set(fn(self.get(), v), **kwargs)
  def multiply(self, v: Any, **kwargs) -> C: return self._gather_set(multiply, v, "multiply", kwargs)
  def divide(self, v: Any, **kwargs) -> C: return self._gather_set(true_divide, v, "divide", kwargs)
  def power(self, v: Any, **kwargs) -> C: return self._gather_set(power, v, "power", kwargs)
  def min(self, v: Any, **kwargs) -> C: return self._gather_set(minimum, v, "min", kwargs)
  def max(self, v: Any, **kwargs) -> C: return self._gather_set(maximum, v, "max", kwargs)

class _AtIndexer:
  def __init__(self, z: C): self.z = z
  def __getitem__(self, idx: Any) -> _At: return _At(self.z, idx)

def _repr(z: C) -> str:
  a = z.numpy()
  line_width = np.get_printoptions()["linewidth"]
  dtype_str = f"dtype={canonical_dtype(z.dtype).name}" + (", weak_type=True" if z.weak_type else "")
  s = f"[], shape={a.shape}" if a.size == 0 else np.array2string(a, prefix="Array(", suffix=",", separator=", ", max_line_width=line_width)
  sep = " " * len("Array(") if len(s) - s.rfind("\n") + 1 + len(dtype_str) + 2 > line_width else " "
  return f"Array({s},{sep}{dtype_str})"

def _method(name: str) -> Callable:
  fn = COMPLEX[name]
  def m(self, *args, **kwargs): return fn(self, *args, **kwargs)
  m.__name__ = name
  return m

def _operator(fn: Callable, reflected: bool = False) -> Callable:
  def op(self, other):
    if not isinstance(other, (C, Tensor, int, float, complex, np.ndarray, np.generic)): return NotImplemented
    return fn(other, self) if reflected else fn(self, other)
  return op

def _reshape(self, *shape, order="C") -> C:
  return COMPLEX["reshape"](self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

def _transpose(self, *axes) -> C:
  return COMPLEX["transpose"](self, None if not axes else axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes)

def _iter(self):
  if self.ndim == 0: raise TypeError("iteration over a 0-d array")
  return (self[i] for i in range(self.shape[0]))

_METHODS: dict[str, Any] = {
  **{n: _method(n) for n in ("sum", "mean", "prod", "var", "std", "cumsum", "squeeze", "ravel", "swapaxes", "diagonal", "trace",
                             "repeat", "take", "astype") if n in COMPLEX},
  "flatten": lambda self, order="C": COMPLEX["ravel"](self), "reshape": _reshape, "transpose": _transpose,
  "T": property(_transpose), "mT": property(lambda self: COMPLEX["swapaxes"](self, -1, -2)), "at": property(_AtIndexer),
  "__getitem__": lambda self, idx: C(self.re[idx], self.im[idx]), "__iter__": _iter, "__repr__": _repr,
  "__str__": lambda self: str(self.numpy()),
  "__format__": lambda self, spec: format(self.numpy()[()] if self.ndim == 0 else str(self.numpy()), spec),
  "__neg__": negative, "__pos__": positive, "__abs__": _abs, "__hash__": None,
  "max": lambda self, *a, **k: _extreme("max", self, *a, **k), "min": lambda self, *a, **k: _extreme("min", self, *a, **k),
  "sort": _sort, "argsort": _argsort, "argmax": _no_order("gt"), "argmin": _no_order("lt"),
  "__lt__": less, "__le__": less_equal, "__gt__": greater, "__ge__": greater_equal,
}
_OPERATORS = {f"__{n}__": _operator(f) for n, f in (("add", add), ("sub", subtract), ("mul", multiply), ("truediv", true_divide),
                                                    ("pow", power), ("matmul", COMPLEX["matmul"]), ("eq", equal), ("ne", not_equal),
                                                    ("lt", less), ("le", less_equal), ("gt", greater), ("ge", greater_equal))}
_OPERATORS.update({f"__r{n}__": _operator(f, reflected=True) for n, f in (("add", add), ("sub", subtract), ("mul", multiply),
                                                                           ("truediv", true_divide), ("pow", power), ("matmul", COMPLEX["matmul"]))})

def operator(name: str) -> Callable:
  """The complex version of the operator `name` (__mul__, __rtruediv__...): a Tensor's operator with a complex operand."""
  if (op := _OPERATORS.get(name)) is None: raise TypeError(f"{name} of complex values is not supported")
  return op

for _name, _value in {**_METHODS, **_OPERATORS}.items(): setattr(C, _name, _value)
COMPLEX.update({"less": less, "less_equal": less_equal, "greater": greater, "greater_equal": greater_equal, "maximum": maximum,
                "minimum": minimum, "fmax": maximum, "fmin": minimum, "sort": _sort, "argsort": _argsort,
                **{n: (lambda n: lambda *a, **k: _extreme(n, *a, **k))(n[-3:]) for n in ("max", "min", "amax", "amin")},
                "argmax": _no_order("gt"), "argmin": _no_order("lt"), "clip": _no_order("clip", ValueError, _CLIP),
                **{n: _no_order(n, TypeError, "{name} does not accept dtype {dt}. Accepted dtypes are subtypes of floating.")
                   for n in ("floor", "ceil", "trunc", "rint")}})

# ---- jnp.linalg on complex matrices (called by tinyjax.numpy.linalg) -----------------------------------------------------

def _mH(z: C) -> C: return C(z.re.transpose(-1, -2), -z.im.transpose(-1, -2))

def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> C:
  """jnp.linalg.cholesky of Hermitian positive definite matrices (batched): column by column (n steps of vectorized
  Tensor ops, for the small matrices such code factors), L[:, j] = (A[:, j] - L[:, :j] conj(L[j, :j])) / L[j, j] with
  L[j, j] = sqrt(Re(A[j, j] - |L[j, :j]|^2)); NaN in both parts of the lower triangle where A is not positive definite,
  as JAX. Its derivative is that of the steps: JAX's rule (L Phi(L^-1 dA L^-H)) for the Hermitian dA that
  symmetrize_input gives. (LAPACK's zpotrf with JAX's rule was tried twice: an eager gradient through a host call is
  not memoised, 19 against 16 ms here; docs/decisions.md.)"""
  z = as_complex(a)
  if z.ndim < 2 or z.shape[-1] != z.shape[-2]:
    raise ValueError(f"cholesky: last two dimensions of the input must be square, got shape {z.shape}")
  if symmetrize_input:
    h = _mH(z)
    z = C((z.re + h.re) / 2, (z.im + h.im) / 2)
  n = z.shape[-1]
  idx = Tensor.arange(n)
  cols: list[C] = []
  for j in range(n):
    c = C(z.re[..., :, j], z.im[..., :, j])
    if cols:
      lj = C(Tensor.stack(*[k.re for k in cols], dim=-1), Tensor.stack(*[k.im for k in cols], dim=-1))   # L[..., :, :j]
      row = C(lj.re[..., j, :], -lj.im[..., j, :])                                                     # conj(L[..., j, :j])
      c = subtract(c, _multilinear(lambda m, v: (m * v.unsqueeze(-2)).sum(-1), (0, 1))(lj, row))
    d = c.re[..., j:j + 1].sqrt()
    below = idx > j
    # each column its own buffer: the columns after it read it, not a recomputation (kernels of the size of a step)
    cols.append(C(below.where(c.re / d, (idx == j).where(d, 0.0)).contiguous(), below.where(c.im / d, 0.0).contiguous()))
  re = Tensor.stack(*[k.re for k in cols], dim=-1)
  L = C(re, re.isnan().where(math.nan, Tensor.stack(*[k.im for k in cols], dim=-1)))   # (JAX's NaN: both parts)
  return _mH(L) if upper else L

def _block(arrays: Any) -> C:
  return _shape.block_of(arrays, lambda x: x if isinstance(x, C) else as_complex(x) if is_complex_data(x) else asarray(x), _concatenate)[0]

COMPLEX["block"] = _block

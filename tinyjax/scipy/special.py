"""tinyjax.scipy.special: JAX's jax.scipy.special on tinygrad Tensors: logsumexp, erf, erfc, erfinv, gammaln, digamma,
xlogy, xlog1py, expit, logit, ndtr, ndtri, log_ndtr, entr."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor, dtypes
from tinyjax.custom import custom_jvp
from tinyjax.numpy._core import asarray, promote, default_float
from tinyjax.numpy import _math

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "gammaln", "digamma", "xlogy", "xlog1py", "expit", "logit", "ndtr", "ndtri",
           "log_ndtr", "entr", "softmax", "log_softmax"]

def _inexact(x: Any) -> Tensor:
  t = asarray(x)
  return t if dtypes.is_float(t.dtype) else t.cast(default_float())

def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
  if axis is None: return tuple(range(ndim))
  return tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)) if ndim else ()

def _squeeze(t: Tensor, axes: tuple[int, ...]) -> Tensor: return t.reshape(tuple(d for i, d in enumerate(t.shape) if i not in axes))

def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False, where: Any = None) -> Any:
  """jax.scipy.special.logsumexp: log(sum(b * exp(a))) without overflow; `return_sign` gives (log|s|, sign(s))."""
  x = _inexact(a)
  if b is not None: x, bt = promote(x, b)
  axes = _axes(axis, x.ndim)
  if where is not None:
    w = asarray(where)
    x = w.where(x, -math.inf)
    if b is not None: bt = w.where(bt, 0)
  if b is not None and not return_sign:
    x = (bt == 0).where(-math.inf, x)   # terms with b = 0 contribute nothing (and no nan from log(0) + inf)
  amax = x.max(axis=axes, keepdim=True).detach() if axes else x.detach()
  amax = (amax.abs() == math.inf).where(0.0, amax)   # all -inf (or an inf): shift by 0, the result is -inf/inf
  e = (x - amax).exp()
  s = (e * bt if b is not None else e).sum(axis=axes, keepdim=True) if axes else (e * bt if b is not None else e)
  if return_sign:
    sign = s.sign()
    out = s.abs().log() + amax
    if not keepdims and axes: out, sign = _squeeze(out, axes), _squeeze(sign, axes)
    return out, sign
  out = s.log() + amax
  return _squeeze(out, axes) if not keepdims and axes else out

def erf(x: Any) -> Tensor: return _inexact(x).erf()
def erfc(x: Any) -> Tensor:
  t = _inexact(x)
  return 1 - t.erf()

# Giles' erfinv ("Approximating the erfinv function", GPU Computing Gems), as XLA's: single precision for float32
_ERFINV_W_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_W_GE_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682)

@custom_jvp
def _erfinv(x: Tensor) -> Tensor:
  w = -_math._log1p(-x * x)   # XLA's ErfInv32 (jax.random.normal's tails depend on it: (1 - x)(1 + x) differs by 86 ulps)
  lt = w < 5
  wl, wg = lt.where(w, 5.0) - 2.5, lt.where(6.25, w).sqrt() - 3
  pl, pg = wl * 0 + _ERFINV_W_LT_5[0], wg * 0 + _ERFINV_W_GE_5[0]
  for c1, c2 in zip(_ERFINV_W_LT_5[1:], _ERFINV_W_GE_5[1:], strict=True): pl, pg = pl * wl + c1, pg * wg + c2
  out = lt.where(pl, pg) * x
  if x.dtype == dtypes.float64:   # two Newton steps on erf(y) = x: float64 accuracy
    for _ in range(2): out = out - (out.erf() - x) / ((2 / math.sqrt(math.pi)) * (-out * out).exp())
  return (x.abs() == 1).where(x * math.inf, out)

@_erfinv.defjvp
def _erfinv_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  y = _erfinv(x)
  return y, t * (math.sqrt(math.pi) / 2) * (y * y).exp()

def erfinv(x: Any) -> Tensor:
  """jax.scipy.special.erfinv (Giles' approximation as XLA's; float64 refined by Newton steps), derivative
  sqrt(pi)/2 exp(erfinv(x)^2)."""
  return _erfinv(_inexact(x))

# Lanczos approximation (g = 7, n = 9), as Numerical Recipes / XLA's lgamma
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)

def gammaln(x: Any) -> Tensor:
  """log|Gamma(x)| (Lanczos, with the reflection formula for x < 0.5)."""
  t = _inexact(x)
  refl = t < 0.5
  z = refl.where(1 - t, t) - 1
  acc = z * 0 + _LANCZOS[0]
  for i, c in enumerate(_LANCZOS[1:], start=1): acc = acc + c / (z + i)
  tt = z + _LANCZOS_G + 0.5
  lg = 0.5 * math.log(2 * math.pi) + (z + 0.5) * tt.log() - tt + acc.log()
  sin_pix = (math.pi * t).sin().abs()
  out = refl.where(math.log(math.pi) - sin_pix.log() - lg, lg)
  return ((t <= 0) & (t == t.floor())).where(math.inf, out)

def digamma(x: Any) -> Tensor:
  """psi(x): recurrence up to x >= 6, then the asymptotic series; the reflection formula for x < 0.5."""
  t = _inexact(x)
  refl = t < 0.5
  z = refl.where(1 - t, t)
  acc = z * 0
  for _ in range(6):
    small = z < 6
    acc = acc - small.where(1 / z, 0.0)
    z = small.where(z + 1, z)
  inv2 = 1 / (z * z)
  series = z.log() - 0.5 / z - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
  out = acc + series
  out = refl.where(out - math.pi / (math.pi * t).tan(), out)
  return ((t <= 0) & (t == t.floor())).where(math.nan, out)

@custom_jvp
def _xlogy(x: Tensor, y: Tensor) -> Tensor: return (x == 0).where(0.0, x * y.log())

@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  return _xlogy(x, y), tx * (x == 0).where(0.0, y.log()) + ty * (x == 0).where(0.0, x / y)   # JAX's rule: 0 at x = 0

def xlogy(x: Any, y: Any) -> Tensor:
  """x * log(y), 0 where x = 0 (JAX's custom_jvp)."""
  a, b = _math._floats(x, y)
  return _xlogy(a, b)

@custom_jvp
def _xlog1py(x: Tensor, y: Tensor) -> Tensor: return (x == 0).where(0.0, x * _math.log1p(y))

@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  return _xlog1py(x, y), tx * (x == 0).where(0.0, _math.log1p(y)) + ty * (x == 0).where(0.0, x / (1 + y))

def xlog1py(x: Any, y: Any) -> Tensor:
  """x * log1p(y), 0 where x = 0 (JAX's custom_jvp)."""
  a, b = _math._floats(x, y)
  return _xlog1py(a, b)

def expit(x: Any) -> Tensor: return _inexact(x).sigmoid()
def logit(x: Any) -> Tensor:
  t = _inexact(x)
  return (t / (1 - t)).log()
def ndtr(x: Any) -> Tensor:
  t = _inexact(x)
  return 0.5 * erfc(-t / math.sqrt(2))
def ndtri(p: Any) -> Tensor: return math.sqrt(2) * erfinv(2 * _inexact(p) - 1)
def _log_erfc_large(x: Tensor) -> Tensor:
  """log(erfc(x)) for x >= 2 by erfc's continued fraction (40 terms): no underflow, full precision where
  1 - erf(x) has lost its digits."""
  k = x * 0 + x
  for n in range(40, 0, -1): k = x + (n / 2) / k
  return -x * x - k.log() - 0.5 * math.log(math.pi)

def log_ndtr(x: Any) -> Tensor:
  """log(ndtr(x)); below -3 through erfc's continued fraction in log space (ndtr underflows, 1 - erf loses digits)."""
  t = _inexact(x)
  far, high = t < -3, t > 3
  s = (far | high).where(t.abs(), 3.0) / math.sqrt(2)
  tail = _log_erfc_large(s) - math.log(2)   # log of the tail mass beyond |t|
  return far.where(tail, high.where(_math.log1p(-tail.exp()), ndtr((far | high).where(0.0, t)).log()))

def entr(x: Any) -> Tensor:
  t = _inexact(x)
  return (t < 0).where(-math.inf, (t == 0).where(0.0, -t * t.log()))

def softmax(x: Any, axis: Any = -1) -> Tensor:
  from tinyjax.nn import softmax as _softmax
  return _softmax(x, axis)
def log_softmax(x: Any, axis: Any = -1) -> Tensor:
  from tinyjax.nn import log_softmax as _log_softmax
  return _log_softmax(x, axis)

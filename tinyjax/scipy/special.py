"""tinyjax.scipy.special: JAX's jax.scipy.special on tinygrad Tensors: logsumexp, erf, erfc, erfinv, gammaln, digamma,
xlogy, xlog1py, expit, logit, ndtr, ndtri, log_ndtr, entr, softmax, log_softmax. The kernels that nn and random share
(erfinv, gammaln, digamma, logsumexp, softmax, log1p) are tinyjax.lax.special's; these functions take what JAX's take
(promoted to a float dtype) and call them."""
from __future__ import annotations
import functools, math
from typing import Any
import numpy as np
from tinyjax._tg import Tensor, dtypes
from tinyjax.dtypes import computed_dtype
from tinyjax.core import composite, fill_like
from tinyjax.custom import custom_jvp, structural
from tinyjax.lax import ops as lax_ops
from tinyjax.lax import special as _special
from tinyjax import primitives as P
from tinyjax.numpy._core import asarray, as_inexact, promote_inexact, canonicalize_axes

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "gammaln", "digamma", "xlogy", "xlog1py", "expit", "logit", "ndtr", "ndtri",
           "log_ndtr", "entr", "softmax", "log_softmax"]

def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False, where: Any = None) -> Any:
  """jax.scipy.special.logsumexp: log(sum(b * exp(a))) without overflow; `return_sign` gives (log|s|, sign(s))."""
  x, bt = promote_inexact(a, b) if b is not None else (as_inexact(a), None)
  return _special.logsumexp(x, canonicalize_axes(axis, x.ndim), bt, keepdims, return_sign, None if where is None else asarray(where))

def erf(x: Any) -> Tensor: return lax_ops.erf_kernel(as_inexact(x))
def erfc(x: Any) -> Tensor: return _special.erfc(as_inexact(x))

def erfinv(x: Any) -> Tensor:
  """jax.scipy.special.erfinv (Giles' approximation as XLA's; float64 refined by Newton steps), derivative
  sqrt(pi)/2 exp(erfinv(x)^2)."""
  return _special.erf_inv(as_inexact(x))

def gammaln(x: Any) -> Tensor:
  """log|Gamma(x)| (Lanczos, with the reflection formula for x < 0.5)."""
  return _special.lgamma(as_inexact(x))

def digamma(x: Any) -> Tensor:
  """psi(x): recurrence up to x >= 6, then the asymptotic series; the reflection formula for x < 0.5."""
  return _special.digamma(as_inexact(x))

# JAX's xlogy and xlog1py: x * log(y), 0 where x = 0 unless y is nan (scipy's nan); their rules as JAX's
@structural
@custom_jvp
def _xlogy(x: Tensor, y: Tensor) -> Tensor: return ((x != 0) | (y != y)).where(x * y.log(), 0.0)

@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  return _xlogy(x, y), tx * y.log() + ty * x / y

def xlogy(x: Any, y: Any) -> Tensor:
  """x * log(y), 0 where x = 0 (JAX's custom_jvp)."""
  a, b = promote_inexact(x, y)
  return _xlogy(a, b)

@structural
@custom_jvp
def _xlog1py(x: Tensor, y: Tensor) -> Tensor: return ((x != 0) | (y != y)).where(x * _special.log1p(y), 0.0)

@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  return _xlog1py(x, y), tx * _special.log1p(y) + ty * x / (1 + y)

def xlog1py(x: Any, y: Any) -> Tensor:
  """x * log1p(y), 0 where x = 0 (JAX's custom_jvp)."""
  a, b = promote_inexact(x, y)
  return _xlog1py(a, b)

def expit(x: Any) -> Tensor: return as_inexact(x).sigmoid()
def logit(x: Any) -> Tensor:
  t = as_inexact(x)
  return (t / (1 - t)).log()
@composite   # (eagerly: its ops built once per signature, ~1.2 -> 0.25 ms a call)
def _ndtr(x: Tensor) -> Tensor:
  """JAX's: (1 + erf(x / sqrt 2)) / 2 for |x| < 1, erfc's tails beyond (0.5 erfc(-x / sqrt 2) had erfc's error at
  |x| / sqrt 2 < 1 and 1 - erf's in the upper tail)."""
  w = x * math.sqrt(0.5)
  z = w.abs()
  return 0.5 * (z < math.sqrt(0.5)).where(1 + lax_ops.erf_kernel(w), (w > 0).where(2 - _special.erfc(z), _special.erfc(z)))

def ndtr(x: Any) -> Tensor: return _ndtr(as_inexact(x))

# ndtri: Cephes' rational approximations, as JAX's (sqrt 2 erfinv(2p - 1) lost p below an ulp of 1: -inf under 1.5e-8
# in float32), highest degree first
_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1, 1.39312609387279679503e1,
             -1.23916583867381258016e0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1, -2.25462687854119370527e2,
             2.00260212380060660359e2, -8.20372256168333339912e1, 1.59056225126211695515e1, -1.18331621121330003142e0)
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1, 4.40805073893200834700e1,
             1.46849561928858024014e1, 2.18663306850790267539e0, -1.40256079171354495875e-1, -3.50424626827848203418e-2,
             -8.57456785154685413611e-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1, 1.50425385692907503408e1,
             2.50464946208309415979e0, -1.42182922854787788574e-1, -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0, 1.33303460815807542389e0,
             2.01485389549179081538e-1, 1.23716634817820021358e-2, 3.01581553508235416007e-4, 2.65806974686737550832e-6,
             6.23974539184983293730e-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0, 2.16236993594496635890e-1,
             1.34204006088543189037e-2, 3.28014464682127739104e-4, 2.89247864745380683936e-6, 6.79019408009981274425e-9)

def ndtri(p: Any) -> Tensor:
  """JAX's: x / sqrt(2 pi) = w + w^3 P0(w^2) / Q0(w^2), w = p - 1/2, for exp(-2) < p < 1 - exp(-2); z - log(z) / z -
  P(1/z) / Q(1/z) / z, z = sqrt(-2 log p) (of 1 - p above), in the tails; -inf at 0, inf at 1, nan outside [0, 1]."""
  return _ndtri(as_inexact(p))

@composite   # (~8.7 -> 0.4 ms an eager call)
def _ndtri(t: Tensor) -> Tensor:
  mcp = (t > -math.expm1(-2.0)).where(1 - t, t)
  mcp = (mcp == 0).where(0.5, mcp)   # (unused at p = 0 and 1: no nan there)
  w = mcp - 0.5
  ww = w * w
  big = (w + w * ww * (P.horner(ww, _NDTRI_P0) / P.horner(ww, _NDTRI_Q0))) * -math.sqrt(2 * math.pi)
  z = (-2 * mcp.log()).sqrt()
  first, rz = z - z.log() / z, 1 / z
  small = (z >= 8).where(first - P.horner(rz, _NDTRI_P2) / P.horner(rz, _NDTRI_Q2) / z,
                         first - P.horner(rz, _NDTRI_P1) / P.horner(rz, _NDTRI_Q1) / z)
  x = (mcp > math.exp(-2.0)).where(big, small)
  x = (t > 1 - math.exp(-2.0)).where(x, -x)
  return (t == 0).where(-math.inf, (t == 1).where(math.inf, x))

def _log_ndtr_series(x: Tensor, series_order: int) -> Tensor:
  """log(ndtr(x)) for x << -1, JAX's asymptotic series: log(e^(-x^2/2) / (-x sqrt(2 pi)) (1 + sum_n (-1)^n
  (2n-1)!! / x^(2n)))."""
  x2 = x * x
  log_scale = -0.5 * x2 - (-x).log() - 0.5 * math.log(2 * math.pi)
  if series_order <= 0: return log_scale
  even, odd, x2n = fill_like(x2, 0.0), fill_like(x2, 0.0), x2
  for n in range(1, series_order + 1):
    y = float(np.prod(np.arange(2 * n - 1, 1, -2))) / x2n   # ((2n - 1)!! in int64 as JAX's: it wraps from 35!! on)
    if n % 2: odd = odd + y
    else: even = even + y
    x2n = x2n * x2
  return log_scale + (1 + even - odd).log()

@structural
@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _log_ndtr(x: Tensor, series_order: int) -> Tensor: return _log_ndtr_value(x, series_order)

@composite
def _log_ndtr_value(x: Tensor, series_order: int) -> Tensor:
  lower, upper = (-20.0, 8.0) if computed_dtype(x.dtype) == dtypes.float64 else (-10.0, 5.0)
  above = x > upper
  res = _ndtr(above.where(-x, lax_ops.maximum(x, fill_like(x, lower))))   # (one ndtr for both branches, as JAX's)
  series = _log_ndtr_series(lax_ops.minimum(x, fill_like(x, lower)), series_order)
  return above.where(-res, (x > lower).where(res.log(), series))   # log(1 - q) ~ -q above

@_log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
  (x,), (t,) = primals, tangents
  out = _log_ndtr(x, series_order)
  return out, t * ((-0.5 * (x * x) - math.log(math.sqrt(2 * math.pi))) - out).exp()   # JAX's: pdf / cdf

def log_ndtr(x: Any, series_order: int = 3) -> Tensor:
  """log(ndtr(x)), JAX's: -ndtr(-x) above 5 (float64: 8), the asymptotic series of `series_order` terms below -10
  (float64: -20), log(ndtr(x)) between."""
  if not isinstance(series_order, int): raise TypeError("series_order must be a Python integer.")
  if series_order < 0: raise ValueError("series_order must be non-negative.")
  if series_order > 30: raise ValueError("series_order must be <= 30.")
  return _log_ndtr(as_inexact(x), series_order)

# JAX's entr: -x log(x) by xlogy, with JAX's derivative -(log(x) + 1) (inf at 0); -inf below 0
@structural
@custom_jvp
def _xlogx(x: Tensor) -> Tensor: return _xlogy(x, x)

@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return _xlogx(x), t * (x.log() + 1)

def entr(x: Any) -> Tensor:
  t = as_inexact(x)
  return (t < 0).where(-math.inf, -_xlogx(t))

# (JAX's signatures: over every axis by default, as scipy's; jax.nn's are over the last)
def softmax(x: Any, /, *, axis: Any = None) -> Tensor:
  t = as_inexact(x)
  return _special.softmax(t, canonicalize_axes(axis, t.ndim))
def log_softmax(x: Any, /, *, axis: Any = None) -> Tensor:
  t = as_inexact(x)
  return _special.log_softmax(t, canonicalize_axes(axis, t.ndim))

"""tinyjax.scipy.special: JAX's jax.scipy.special on tinygrad Tensors: logsumexp, erf, erfc, erfinv, gammaln, digamma,
xlogy, xlog1py, expit, logit, ndtr, ndtri, log_ndtr, entr, softmax, log_softmax. The kernels that nn and random share
(erfinv, gammaln, digamma, logsumexp, softmax, log1p) are tinyjax.lax.special's; these functions take what JAX's take
(promoted to a float dtype) and call them."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.custom import custom_jvp, structural
from tinyjax.lax import ops as lax_ops
from tinyjax.lax import special as _special
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

@structural
@custom_jvp
def _xlogy(x: Tensor, y: Tensor) -> Tensor: return (x == 0).where(0.0, x * y.log())

@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  return _xlogy(x, y), tx * (x == 0).where(0.0, y.log()) + ty * (x == 0).where(0.0, x / y)   # JAX's rule: 0 at x = 0

def xlogy(x: Any, y: Any) -> Tensor:
  """x * log(y), 0 where x = 0 (JAX's custom_jvp)."""
  a, b = promote_inexact(x, y)
  return _xlogy(a, b)

@structural
@custom_jvp
def _xlog1py(x: Tensor, y: Tensor) -> Tensor: return (x == 0).where(0.0, x * _special.log1p(y))

@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
  (x, y), (tx, ty) = primals, tangents
  return _xlog1py(x, y), tx * (x == 0).where(0.0, _special.log1p(y)) + ty * (x == 0).where(0.0, x / (1 + y))

def xlog1py(x: Any, y: Any) -> Tensor:
  """x * log1p(y), 0 where x = 0 (JAX's custom_jvp)."""
  a, b = promote_inexact(x, y)
  return _xlog1py(a, b)

def expit(x: Any) -> Tensor: return as_inexact(x).sigmoid()
def logit(x: Any) -> Tensor:
  t = as_inexact(x)
  return (t / (1 - t)).log()
def ndtr(x: Any) -> Tensor:
  t = as_inexact(x)
  return 0.5 * erfc(-t / math.sqrt(2))
def ndtri(p: Any) -> Tensor: return math.sqrt(2) * erfinv(2 * as_inexact(p) - 1)
def _log_erfc_large(x: Tensor) -> Tensor:
  """log(erfc(x)) for x >= 2 by erfc's continued fraction (40 terms): no underflow, full precision where
  1 - erf(x) has lost its digits."""
  k = x
  for n in range(40, 0, -1): k = x + (n / 2) / k
  return -x * x - k.log() - 0.5 * math.log(math.pi)

def log_ndtr(x: Any) -> Tensor:
  """log(ndtr(x)); below -3 through erfc's continued fraction in log space (ndtr underflows, 1 - erf loses digits)."""
  t = as_inexact(x)
  far, high = t < -3, t > 3
  s = (far | high).where(t.abs(), 3.0) / math.sqrt(2)
  tail = _log_erfc_large(s) - math.log(2)   # log of the tail mass beyond |t|
  return far.where(tail, high.where(_special.log1p(-tail.exp()), ndtr((far | high).where(0.0, t)).log()))

def entr(x: Any) -> Tensor:
  t = as_inexact(x)
  return (t < 0).where(-math.inf, (t == 0).where(0.0, -t * t.log()))

def softmax(x: Any, axis: Any = -1) -> Tensor:
  t = as_inexact(x)
  return _special.softmax(t, canonicalize_axes(axis, t.ndim))
def log_softmax(x: Any, axis: Any = -1) -> Tensor:
  t = as_inexact(x)
  return _special.log_softmax(t, canonicalize_axes(axis, t.ndim))

"""The normal distribution (jax.scipy.stats.norm)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy import special
from tinyjax.scipy.stats._common import standardized, floats

def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  z, log_s = standardized(x, loc, scale)
  return -0.5 * z * z - log_s - 0.5 * math.log(2 * math.pi)
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, loc, scale).exp()
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return special.ndtr(standardized(x, loc, scale)[0])
def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return special.log_ndtr(standardized(x, loc, scale)[0])
def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return special.ndtr(-standardized(x, loc, scale)[0])
def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return special.log_ndtr(-standardized(x, loc, scale)[0])
def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  qt, lt, st = floats(q, loc, scale)
  return special.ndtri(qt) * st + lt

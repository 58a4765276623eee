"""The logistic distribution (jax.scipy.stats.logistic)."""
from __future__ import annotations
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import standardized

def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  z, log_s = standardized(x, loc, scale)
  a = z.abs()   # symmetric: -|z| - 2 log1p(exp(-|z|)), without overflow
  return -a - 2 * (-a).exp().add(1).log() - log_s
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, loc, scale).exp()
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return standardized(x, loc, scale)[0].sigmoid()

"""The exponential distribution (jax.scipy.stats.expon)."""
from __future__ import annotations
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import standardized, outside

def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  z, log_s = standardized(x, loc, scale)
  return outside(-z - log_s, z < 0)
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, loc, scale).exp()
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  z, _ = standardized(x, loc, scale)
  return (z < 0).where(0.0, 1 - (-z).exp())

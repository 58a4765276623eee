"""The Laplace distribution (jax.scipy.stats.laplace)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import standardized

def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  z, log_s = standardized(x, loc, scale)
  return -z.abs() - log_s - math.log(2)
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, loc, scale).exp()
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  z, _ = standardized(x, loc, scale)
  return (z < 0).where(0.5 * z.exp(), 1 - 0.5 * (-z).exp())

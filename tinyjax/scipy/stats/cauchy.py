"""The Cauchy distribution (jax.scipy.stats.cauchy)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import standardized
from tinyjax import numpy as jnp
from tinyjax.lax.special import log1p

def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  z, log_s = standardized(x, loc, scale)
  return -math.log(math.pi) - log_s - log1p(z * z)
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, loc, scale).exp()
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return 0.5 + jnp.arctan(standardized(x, loc, scale)[0]) / math.pi

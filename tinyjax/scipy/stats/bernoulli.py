"""The Bernoulli distribution (jax.scipy.stats.bernoulli)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import floats
from tinyjax.scipy.special import xlogy, xlog1py

def logpmf(k: Any, p: Any, loc: Any = 0) -> Tensor:
  kt, pt, lt = floats(k, p, loc)
  x = kt - lt
  return ((x != 0) & (x != 1)).where(-math.inf, xlogy(x, pt) + xlog1py(1 - x, -pt))
def pmf(k: Any, p: Any, loc: Any = 0) -> Tensor: return logpmf(k, p, loc).exp()
def cdf(k: Any, p: Any) -> Tensor:
  kt, pt = floats(k, p)
  return (kt < 0).where(0.0, (kt < 1).where(1 - pt, 1.0))

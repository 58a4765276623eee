"""The Poisson distribution (jax.scipy.stats.poisson)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.core import fill_like
from tinyjax.scipy.stats._common import floats
from tinyjax.scipy.special import xlogy, gammaln

def logpmf(k: Any, mu: Any, loc: Any = 0) -> Tensor:
  kt, mt, lt = floats(k, mu, loc)
  x = kt - lt
  return ((x < 0) | (x != x.floor())).where(-math.inf, xlogy(x, mt) - gammaln(x + 1) - mt)
def pmf(k: Any, mu: Any, loc: Any = 0) -> Tensor: return logpmf(k, mu, loc).exp()
def cdf(k: Any, mu: Any, loc: Any = 0, max_terms: int = 64) -> Tensor:
  """sum of the pmf over 0..floor(k) (k below `max_terms`, a static bound)."""
  kt, mt, lt = floats(k, mu, loc)
  x = (kt - lt).floor()
  total = fill_like(x, 0)
  for i in range(max_terms): total = total + (x >= i).where(pmf(float(i), mt), 0.0)
  return (x < 0).where(0.0, total)

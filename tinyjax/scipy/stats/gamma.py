"""The gamma distribution (jax.scipy.stats.gamma)."""
from __future__ import annotations
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import floats, outside
from tinyjax.scipy.special import xlogy, gammaln

def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  xt, at, lt, st = floats(x, a, loc, scale)
  y = (xt - lt) / st
  return outside(xlogy(at - 1, y) - y - gammaln(at) - st.log(), y < 0)
def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, a, loc, scale).exp()

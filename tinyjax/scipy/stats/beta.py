"""The beta distribution (jax.scipy.stats.beta)."""
from __future__ import annotations
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import floats, outside
from tinyjax.scipy.special import xlogy, xlog1py, gammaln

def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  xt, at, bt, lt, st = floats(x, a, b, loc, scale)
  y = (xt - lt) / st
  lbeta = gammaln(at) + gammaln(bt) - gammaln(at + bt)
  return outside(xlogy(at - 1, y) + xlog1py(bt - 1, -y) - lbeta - st.log(), (y < 0) | (y > 1))
def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, a, b, loc, scale).exp()

"""Student's t distribution (jax.scipy.stats.t)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import floats
from tinyjax.scipy.special import gammaln
from tinyjax.lax.special import log1p

def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  xt, nu, lt, st = floats(x, df, loc, scale)
  z = (xt - lt) / st
  return (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * (nu * math.pi).log() - st.log()
          - (nu + 1) / 2 * log1p(z * z / nu))
def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, df, loc, scale).exp()

"""The uniform distribution on [loc, loc + scale] (jax.scipy.stats.uniform)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import floats

def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  xt, lt, st = floats(x, loc, scale)
  return ((xt < lt) | (xt > lt + st)).where(-math.inf, -st.log())
def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor: return logpdf(x, loc, scale).exp()
def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Tensor:
  xt, lt, st = floats(x, loc, scale)
  return ((xt - lt) / st).clip(0, 1)

"""What the distributions share: float inputs with JAX's promotion, and -inf/0 outside the support."""
from __future__ import annotations
from typing import Any
import math
from tinyjax._tg import Tensor
from tinyjax.numpy._core import promote_inexact as floats   # noqa: F401  (the distributions' arguments: floats of one dtype)

def outside(logp: Tensor, bad: Tensor) -> Tensor: return bad.where(-math.inf, logp)

def standardized(x: Any, loc: Any, scale: Any) -> tuple[Tensor, Tensor]:
  """(x - loc) / scale and log(scale)."""
  xt, lt, st = floats(x, loc, scale)
  return (xt - lt) / st, st.log()

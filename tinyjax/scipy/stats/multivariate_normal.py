"""The multivariate normal distribution (jax.scipy.stats.multivariate_normal): through a Cholesky factor of cov."""
from __future__ import annotations
import math
from typing import Any
from tinyjax._tg import Tensor
from tinyjax.scipy.stats._common import floats
from tinyjax.numpy._creation import diagonal
from tinyjax.numpy.linalg import cholesky
from tinyjax.lax.linalg import triangular_solve

def logpdf(x: Any, mean: Any, cov: Any, allow_singular: Any = None) -> Tensor:
  xt, mt, ct = floats(x, mean, cov)
  if ct.ndim < 2:   # a scalar or a vector: a diagonal covariance, as JAX takes it
    var = ct if ct.ndim else ct.expand(xt.shape[-1:])
    d = xt - mt
    return -0.5 * ((d * d / var).sum(-1) + var.log().sum(-1) + int(xt.shape[-1]) * math.log(2 * math.pi))
  n = int(ct.shape[-1])
  L = cholesky(ct)
  z = triangular_solve(L, (xt - mt).unsqueeze(-1), left_side=True, lower=True).squeeze(-1)
  logdet = 2 * diagonal(L, 0, -2, -1).log().sum(-1)
  return -0.5 * ((z * z).sum(-1) + logdet + n * math.log(2 * math.pi))
def pdf(x: Any, mean: Any, cov: Any) -> Tensor: return logpdf(x, mean, cov).exp()

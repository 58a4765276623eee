"""tinyjax.scipy.stats: JAX's jax.scipy.stats distributions on tinygrad Tensors (logpdf/pdf/cdf... where JAX has them),
with `loc`/`scale` and JAX's values outside the support (-inf log-density, 0 density)."""
from tinyjax.scipy.stats import norm, multivariate_normal, bernoulli, poisson, gamma, beta, uniform, expon, laplace, logistic, t, cauchy  # noqa: F401
from tinyjax.errors import missing_names

__getattr__ = missing_names("tinyjax.scipy.stats", "jax.scipy.stats")

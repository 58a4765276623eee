"""tinyjax.scipy.stats: JAX's jax.scipy.stats distributions (logpdf, pdf, cdf) on tinygrad Tensors."""

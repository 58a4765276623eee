"""tinyjax.scipy: JAX's jax.scipy (special functions, distributions, linear algebra) on tinygrad Tensors."""
from tinyjax.scipy import linalg, special, stats   # noqa: F401

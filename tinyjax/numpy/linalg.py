"""tinyjax.numpy.linalg: JAX's jnp.linalg on tinygrad Tensors."""
from __future__ import annotations

__all__: list[str] = []

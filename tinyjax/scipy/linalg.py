"""tinyjax.scipy.linalg: JAX's jax.scipy.linalg on tinygrad Tensors."""
from __future__ import annotations

__all__: list[str] = []

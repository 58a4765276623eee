"""tinyjax.scipy.special: JAX's jax.scipy.special on tinygrad Tensors."""
from __future__ import annotations

__all__: list[str] = []

"""tinyjax.nn: JAX's jax.nn (activations, softmax, one_hot, initializers) on tinygrad Tensors."""
from __future__ import annotations

__all__: list[str] = []

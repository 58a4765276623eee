"""tinyjax.numpy: JAX/numpy indexing on Tensors (advanced, boolean masks, clamping), take, take_along_axis, and x.at[idx]."""
from __future__ import annotations

__all__: list[str] = []

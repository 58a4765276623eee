"""tinyjax.numpy: reductions (axis int or tuple, keepdims, where=) and cumulative ones."""
from __future__ import annotations

__all__: list[str] = []

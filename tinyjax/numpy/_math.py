"""tinyjax.numpy: elementwise math (ufuncs), where, clip, nan_to_num, predicates (isclose, allclose, array_equal)."""
from __future__ import annotations

__all__: list[str] = []

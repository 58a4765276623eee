"""tinyjax.numpy: products: dot, vdot, matmul, inner, outer, tensordot, einsum, kron, cross, trace."""
from __future__ import annotations

__all__: list[str] = []

"""tinyjax.numpy: creation functions: zeros, ones, full, empty, *_like, arange, linspace, logspace, eye, identity, meshgrid, diag, tri*."""
from __future__ import annotations

__all__: list[str] = []

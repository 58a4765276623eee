"""tinyjax.lax's array functions beyond collectives and control flow (re-exported by tinyjax.lax)."""
from __future__ import annotations

__all__: list[str] = []

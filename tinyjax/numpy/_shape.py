"""tinyjax.numpy: shape manipulation, joining and splitting, pad, flip, roll, tile, repeat, sort, argsort, triu/tril."""
from __future__ import annotations

__all__: list[str] = []

"""lax control flow: scan, fori_loop, while_loop, cond, switch, map, select, associative_scan."""
from __future__ import annotations

__all__: list[str] = []

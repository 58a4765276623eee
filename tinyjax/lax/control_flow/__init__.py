"""lax control flow: scan, fori_loop, while_loop, cond, switch, map, select, associative_scan (JAX's layout:
`common` for what loops and branches share, `loops`, `conditionals`)."""
from tinyjax.lax.control_flow.loops import scan, fori_loop, while_loop, map, associative_scan   # noqa: A004 (JAX's name: map)
from tinyjax.lax.control_flow.conditionals import cond, switch, select

__all__ = ["scan", "fori_loop", "while_loop", "cond", "switch", "map", "select", "associative_scan"]

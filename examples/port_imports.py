"""The one rewrite that makes a JAX program (examples/ports/*.py) a tinyjax program: its import lines. Shared by
tests/test_ports.py (the values must agree) and bench/ports.py (the times are compared)."""
from __future__ import annotations
import re

IMPORT_LINE = re.compile(r"^(\s*)(import|from)\s+(jax)\b(.*)$")

def _import_item(item: str) -> str:
  name, _, alias = (p.strip() for p in item.partition(" as "))
  if not (name == "jax" or name.startswith("jax.")): return item
  if name == "jax": return f"tinyjax as {alias or 'jax'}"
  if not alias: raise ValueError(f"'import {name}' without 'as' binds 'jax': not a port of only the imports")
  return f"tinyjax{name[3:]} as {alias}"

def to_tinyjax(src: str) -> str:
  """The same source with its jax imports pointed at tinyjax: `import jax` -> `import tinyjax as jax`,
  `import jax.numpy as jnp` -> `import tinyjax.numpy as jnp`, `from jax.x import y` -> `from tinyjax.x import y`."""
  out = []
  for line in src.splitlines():
    if m := IMPORT_LINE.match(line):
      indent, kw, _, rest = m.groups()
      if kw == "from": line = f"{indent}from tinyjax{rest}"
      else: line = f"{indent}import " + ", ".join(_import_item(i) for i in f"jax{rest}".split(","))
    out.append(line)
  return "\n".join(out) + "\n"

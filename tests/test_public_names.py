"""Every public name of the installed JAX's main modules is either in the matching tinyjax module or listed, with its
reason, in the "Not there" table of docs/porting.md; and no entry of that table is stale (a listed name that tinyjax has,
or that JAX does not have).

A module's public names: its `__all__` where it has one (none of these has, in jax 0.10), else `dir()` without the
`_` names, the submodules (their presence depends on what was imported: `jax.experimental` appears once someone imports
it) and the typing leftovers (`typing` and `__future__` objects); jax.scipy.stats keeps its submodules, which are its
distributions (`norm`, `t`, ...) and always imported. A table row is `| `module` | `name` `name2` `pattern_*` | reason |`:
the names in backticks, where `*` matches any characters (fnmatch)."""
from __future__ import annotations
import __future__
import fnmatch, importlib, pathlib, re, types, typing
import pytest

# (JAX module, tinyjax module, whether its submodules are names)
MODULES = [("jax", "tinyjax", False), ("jax.numpy", "tinyjax.numpy", False), ("jax.lax", "tinyjax.lax", False),
           ("jax.nn", "tinyjax.nn", False), ("jax.random", "tinyjax.random", False),
           ("jax.scipy.special", "tinyjax.scipy.special", False), ("jax.scipy.stats", "tinyjax.scipy.stats", True),
           ("jax.scipy.linalg", "tinyjax.scipy.linalg", False), ("jax.tree_util", "tinyjax.tree_util", False)]
PORTING = pathlib.Path(__file__).parent.parent / "docs" / "porting.md"

def _leftover(name: str, obj) -> bool:
  return isinstance(obj, __future__._Feature) or (obj is not None and getattr(typing, name, None) is obj)

def jax_names(module: str, submodules: bool) -> list[str]:
  m = importlib.import_module(module)
  if hasattr(m, "__all__"): return sorted(set(m.__all__))
  out = []
  for n in dir(m):
    obj = getattr(m, n)
    if n.startswith("_") or _leftover(n, obj): continue
    if isinstance(obj, types.ModuleType) and not (submodules and obj.__name__.startswith(module + ".")): continue
    out.append(n)
  return sorted(out)

def present(tinyjax_module: str, name: str) -> bool: return hasattr(importlib.import_module(tinyjax_module), name)

def not_there_table() -> list[tuple[str, list[str], str]]:
  """(JAX module, names or patterns, reason) per row of the table under '## Not there' in docs/porting.md."""
  text = PORTING.read_text()
  section = re.search(r"^## Not there\n(.*?)(?=^## |\Z)", text, re.S | re.M)
  assert section, "docs/porting.md has no '## Not there' section"
  rows = []
  for line in section.group(1).splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
    if len(cells) != 3 or not cells[0].startswith("`"): continue   # not a row (text, the header, the rule)
    module, names = cells[0].strip("`"), re.findall(r"`([^`]+)`", cells[1])
    assert names and cells[2], f"a row of the table needs names and a reason: {line!r}"
    rows.append((module, names, cells[2]))
  return rows

def _listed(rows, module: str, name: str) -> bool:
  return any(m == module and any(fnmatch.fnmatchcase(name, p) for p in names) for m, names, _ in rows)

def coverage() -> dict[str, tuple[int, int]]:
  """{JAX module: (names tinyjax has, names JAX has)}."""
  out = {}
  for jm, tm, sub in MODULES:
    names = jax_names(jm, sub)
    out[jm] = (sum(present(tm, n) for n in names), len(names))
  return out

@pytest.mark.parametrize("jax_module,tinyjax_module,submodules", MODULES, ids=[m[0] for m in MODULES])
def test_every_name_is_there_or_listed(jax_module, tinyjax_module, submodules):
  rows = not_there_table()
  missing = [n for n in jax_names(jax_module, submodules) if not present(tinyjax_module, n) and not _listed(rows, jax_module, n)]
  assert not missing, f"{jax_module}: names neither in {tinyjax_module} nor in the 'Not there' table of docs/porting.md: {missing}"

def test_no_stale_entries():
  rows = not_there_table()
  known = {jm: (tm, jax_names(jm, sub)) for jm, tm, sub in MODULES}
  stale = []
  for module, names, _ in rows:
    if module not in known:
      stale.append(f"{module}: not one of the modules checked")
      continue
    tm, jnames = known[module]
    for p in names:
      matched = [n for n in jnames if fnmatch.fnmatchcase(n, p)]
      if not matched: stale.append(f"{module}.{p}: JAX has no such name")
      stale += [f"{module}.{n}: tinyjax has it (listed as `{p}`)" for n in matched if present(tm, n)]
  assert not stale, "stale entries in the 'Not there' table of docs/porting.md:\n" + "\n".join(stale)

def test_table_parser():
  """The parser reads names in backticks and patterns, skips the header, and a pattern entry matching a name tinyjax
  has would be reported (jax.numpy.sin is there)."""
  rows = not_there_table()
  assert rows and all(m.startswith("jax") for m, _, _ in rows)
  assert _listed(rows, "jax.lax", "add_p") and not _listed(rows, "jax.numpy", "sin") and present("tinyjax.numpy", "sin")
  assert not present("tinyjax.numpy", "frobnicate")


# ---- top-level names added with the table: linear_transpose, named_call, named_scope -------------------------------------

def test_linear_transpose():
  import numpy as np
  import jax
  import tinyjax
  from conftest import assert_close, same_error, tg
  def f(np_):
    return lambda x, y: {"a": 2 * x + np_.sum(y) - x[::-1], "b": 3 * x[:2] - y}
  x, y = np.zeros(3, np.float32), np.zeros(2, np.float32)
  ct = {"a": np.arange(3, dtype=np.float32), "b": np.array([1., -2.], np.float32)}
  assert_close(tinyjax.linear_transpose(f(tinyjax.numpy), x, y)(tg(ct)), jax.linear_transpose(f(jax.numpy), x, y)(ct))
  assert_close(tinyjax.linear_transpose(lambda x: x * 2, 1.0)(3.0), jax.linear_transpose(lambda x: x * 2, 1.0)(3.0))
  same_error(lambda: tinyjax.linear_transpose(lambda x: x.astype(np.float32), np.zeros(3, np.int32)),
             lambda: jax.linear_transpose(lambda x: x.astype(np.float32), np.zeros(3, np.int32)), "integer -> integer functions")
  same_error(lambda: tinyjax.linear_transpose(lambda x: x, np.zeros(3))((np.ones(3),)),
             lambda: jax.linear_transpose(lambda x: x, np.zeros(3))((np.ones(3),)), "cotangent tree does not match function output")
  same_error(lambda: tinyjax.linear_transpose(lambda x: x, np.zeros(3))(np.ones(3, np.float32)),
             lambda: jax.linear_transpose(lambda x: x, np.zeros(3))(np.ones(3, np.float32)), "cotangent type does not match function output")
  with pytest.raises(NotImplementedError, match="integer -> integer"): tinyjax.linear_transpose(lambda x: 2 * x, np.zeros(3, np.int32))

def test_named_call_and_scope():
  import jax
  import tinyjax
  from conftest import same_error
  f = lambda x: x + 1   # noqa: E731
  assert tinyjax.named_call(f, name="g") is f and tinyjax.grad(tinyjax.named_call(lambda x: x * x))(3.0).item() == 6.0
  with tinyjax.named_scope("layer"): pass
  def bad(mod):
    with mod.named_scope(3): pass
  same_error(lambda: bad(tinyjax), lambda: bad(jax))

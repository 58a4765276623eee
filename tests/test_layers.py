"""The import structure of tinyjax/ stays layered (docs/design.md, "Layout"): read from the source with `ast`.

- No module imports one in a higher layer, and the imports have no cycle.
- No private name (`_x`) is imported from another package (a package: the directory of a module; `_tg` is the door to
  tinygrad, imported everywhere by design).
- A function-local import of a tinyjax module breaks a real cycle and says which, in a comment on its line.
"""
import ast, fnmatch, pathlib
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tinyjax"

# low to high: a module may import modules of its own layer or lower ones
LAYERS = [
  ["tinyjax._tg", "tinyjax._tg.*"],                      # the one door to tinygrad's internals
  ["tinyjax.errors", "tinyjax.config"],
  ["tinyjax.dtypes", "tinyjax.complex_array", "tinyjax.tree_util", "tinyjax.tree", "tinyjax.pytree"],   # dtypes; complex arrays; pytrees
  ["tinyjax.call_rule", "tinyjax.primitives"],           # the primitive protocol; JAX's primitives in tinygrad's lowerings
  ["tinyjax.core"],                                      # tracing, the interpreter
  ["tinyjax.transforms", "tinyjax.transforms.*"],        # vmap, jvp, vjp, jacobians, jit
  ["tinyjax.custom"],                                    # custom_jvp / custom_vjp
  ["tinyjax.ad_checkpoint"],                             # checkpoint / remat (a custom call)
  ["tinyjax.lax.*", "tinyjax.lax.control_flow.*"],       # the primitive layer: host calls, loops, linalg, special, ...
  ["tinyjax.lax", "tinyjax.lax.control_flow"],           # (the packages re-export their modules)
  ["tinyjax.numpy.*"],
  ["tinyjax.numpy"],
  ["tinyjax.scipy.*", "tinyjax.scipy.stats.*", "tinyjax.scipy"],
  ["tinyjax.random"],
  ["tinyjax.nn.*", "tinyjax.nn"],                        # (nn.initializers draws with random, as JAX's)
  ["tinyjax.sparse.*", "tinyjax.sparse", "tinyjax.optim", "tinyjax.api", "tinyjax.api_extra", "tinyjax.test_util",
   "tinyjax.debug", "tinyjax.experimental", "tinyjax.stages"],   # (debug, experimental: lax.callback's; stages: jit's AOT)
  ["tinyjax"],
  ["tinyjax.example_libraries", "tinyjax.example_libraries.*"],   # JAX's stax and optimizers, on the public API
]


def _modules() -> dict[str, pathlib.Path]:
  out = {}
  for p in ROOT.rglob("*.py"):
    parts = p.relative_to(ROOT.parent).with_suffix("").parts
    out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
  return out

MODULES = _modules()

def _layer(mod: str) -> int:
  # the most specific pattern wins (an exact name before a wildcard)
  hits = [(not any(c in pat for c in "*?"), i) for i, pats in enumerate(LAYERS) for pat in pats if fnmatch.fnmatchcase(mod, pat)]
  if not hits: raise AssertionError(f"{mod} is in no layer of tests/test_layers.py: add it")
  return max(hits)[1]

def _package(mod: str) -> str:
  return mod if MODULES[mod].name == "__init__.py" else mod.rsplit(".", 1)[0]

def _imports(mod: str):
  """(imported module, names, line, function-local?) for each import of a tinyjax module in mod."""
  tree = ast.parse(MODULES[mod].read_text())
  local = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)}
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name in MODULES: yield a.name, [], node.lineno, id(node) in local
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        pkg = _package(mod).split(".")
        base = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))
      if base not in MODULES: continue
      names = [a.name for a in node.names]
      subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
      # `from pkg import submodule` imports the submodule; any other name comes from the package's __init__
      if len(subs) == len(names):
        for s, n in zip(subs, names, strict=True): yield s, [n], node.lineno, id(node) in local
      else: yield base, [n for n in names if f"{base}.{n}" not in MODULES], node.lineno, id(node) in local

EDGES = {m: list(_imports(m)) for m in MODULES}


def test_every_module_is_in_a_layer():
  for m in MODULES: _layer(m)

def test_no_import_goes_up_a_layer():
  up = [f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)}) at line {line}"
        for m, es in EDGES.items() for t, _, line, _ in es if _layer(t) > _layer(m)]
  assert not up, "\n".join(up)

def test_no_import_cycle():
  graph = {m: {t for t, _, _, _ in es if t != m} for m, es in EDGES.items()}
  state: dict[str, int] = {}
  def visit(m: str, path: list[str]):
    if state.get(m) == 1: raise AssertionError("import cycle: " + " -> ".join(path[path.index(m):] + [m]))
    if state.get(m) == 2: return
    state[m] = 1
    for t in sorted(graph[m]): visit(t, path + [m])
    state[m] = 2
  for m in sorted(graph): visit(m, [])

def test_no_private_name_imported_across_packages():
  bad = [f"{m}:{line} imports {n} from {t}" for m, es in EDGES.items() for t, names, line, _ in es
         for n in names if n.startswith("_") and n != "_tg" and not n.startswith("__") and _package(t if n not in () else t) != _package(m)
         and not (MODULES[t].name == "__init__.py" and t == _package(m))]
  assert not bad, "\n".join(bad)

def test_function_local_imports_break_a_named_cycle():
  lines = {m: MODULES[m].read_text().splitlines() for m in MODULES}
  bad = [f"{m}:{line} imports {t} inside a function without a '# cycle: ...' comment"
         for m, es in EDGES.items() for t, _, line, local in es if local and "cycle:" not in lines[m][line - 1]]
  assert not bad, "\n".join(bad)

@pytest.mark.parametrize("mod", ["tinyjax.lax.host_call", "tinyjax.lax.control_flow.loops", "tinyjax.lax.linalg"])
def test_the_lax_layer_imports_nothing_above_it(mod):
  """The primitive layer is written on Tensors and the CallRule base: no numpy/scipy/nn/random import (also lazily)."""
  assert all(_layer(t) <= _layer("tinyjax.lax") for t, _, _, _ in EDGES[mod])

def test_tg_all_is_what_is_used():
  """`tinyjax._tg.__all__` is the door's list: every name in it is used outside `_tg` (tinyjax, tests, bench), and
  nothing else is imported from it."""
  import tinyjax._tg as tg
  repo = ROOT.parent
  used = set()
  for p in [*ROOT.rglob("*.py"), *(repo / "tests").rglob("*.py"), *(repo / "bench").rglob("*.py")]:
    if p.is_relative_to(ROOT / "_tg"): continue
    for n in ast.walk(ast.parse(p.read_text())):
      if isinstance(n, ast.ImportFrom) and n.module == "tinyjax._tg": used |= {a.name for a in n.names}
      if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "_tg": used.add(n.attr)
  assert used - {"patches"} <= set(tg.__all__), sorted(used - set(tg.__all__))
  assert set(tg.__all__) <= used, sorted(set(tg.__all__) - used)

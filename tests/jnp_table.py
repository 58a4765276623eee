"""The harness of the tinyjax.numpy tables (test_numpy_*.py): one row is a function, its jax.numpy twin and inputs;
`run` compares tinyjax with JAX (x64, conftest) on them: the value and dtype, then under vmap (the inputs mapped
along their first axis, and along a new last axis where `vmap_last` says so), jvp and grad (JAX's derivative conventions).

A row: Row("name", tj, jx, args, ...) where tj/jx take the positional arrays (bind keywords with a lambda) and args
are numpy arrays or Python scalars. Which transforms apply is per row: `vmap=False` for functions whose output shape
depends on data, `diff=False` for integer- or bool-valued functions; `diff_args` picks the differentiated arguments
(default: every float array).

vmap along a new last axis costs as much as along the first (new kernels to compile) and finds something new only where
batching is more than elementwise: `params(rows, vmap_last=...)` takes it for every row ("all"), for the first row of
each function name ("first": one per function in tables of shape ops, indexing, reductions) or for none ("none":
elementwise tables); a row's `vmap_last=True/False` overrides the table's choice.
"""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Callable
import numpy as np
import jax
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from tinygrad import Tensor
from conftest import assert_close, RTOL, ATOL

@dataclass
class Row:
  name: str
  tj: Callable
  jx: Callable
  args: tuple
  vmap: bool = True
  vmap_last: bool | None = None                # None: the table's choice (params)
  diff: bool = True
  diff_args: tuple[int, ...] | None = None
  batch_args: tuple[int, ...] | None = None   # the arguments vmap maps (default: every array)
  rtol: float = RTOL
  atol: float = ATOL
  dtype: bool = True
  id: str = field(default="")

  def __post_init__(self):
    if not self.id: self.id = self.name

def _is_array(a) -> bool: return isinstance(a, np.ndarray)
def _is_float(a) -> bool: return _is_array(a) and np.issubdtype(a.dtype, np.floating)
def _tg(a): return Tensor(a) if _is_array(a) else a

def _perturb(a: np.ndarray, k: int) -> np.ndarray:
  """The k-th example of a batch built from a: distinct values of a's dtype (floats shifted, ints and bools as they are
  for k = 0 and rolled otherwise, so an index stays in range)."""
  if _is_float(a): return (a * (1 + 0.1 * k) + 0.05 * k).astype(a.dtype)
  return np.roll(a, k) if a.ndim else a

def check_value(row: Row) -> None:
  assert_close(row.tj(*map(_tg, row.args)), lambda: row.jx(*row.args), row.rtol, row.atol, row.dtype)

def check_vmap(row: Row, where: str) -> None:
  """vmap with every batched argument mapped along its first axis ("first") or a new last axis ("last")."""
  batch = row.batch_args if row.batch_args is not None else tuple(i for i, a in enumerate(row.args) if _is_array(a))
  args, axes = [], []
  for i, a in enumerate(row.args):
    if i not in batch:
      args.append(a)
      axes.append(None)
      continue
    ax = 0 if where == "first" else a.ndim
    args.append(np.stack([_perturb(a, k) for k in range(3)], axis=ax))
    axes.append(ax)
  got = tinyjax.vmap(row.tj, in_axes=tuple(axes))(*map(_tg, args))
  assert_close(got, lambda: jax.vmap(row.jx, in_axes=tuple(axes))(*args), row.rtol, row.atol, row.dtype)

def _diff_args(row: Row) -> tuple[int, ...]:
  return row.diff_args if row.diff_args is not None else tuple(i for i, a in enumerate(row.args) if _is_float(a))

def _bind(fn: Callable, args: tuple, which: tuple[int, ...]) -> Callable:
  """fn as a function of the arguments in `which` only, the others fixed."""
  def bound(*xs):
    full = list(args)
    for i, x in zip(which, xs, strict=True): full[i] = x
    return fn(*full)
  return bound

def check_jvp(row: Row) -> None:
  which = _diff_args(row)
  prim = [row.args[i] for i in which]
  tan = [np.random.default_rng(7 + i).standard_normal(np.shape(p)).astype(p.dtype) for i, p in enumerate(prim)]
  tj_fixed = tuple(map(_tg, row.args))
  got = tinyjax.jvp(_bind(row.tj, tj_fixed, which), tuple(map(_tg, prim)), tuple(map(_tg, tan)))
  assert_close(got, lambda: jax.jvp(_bind(row.jx, row.args, which), tuple(prim), tuple(tan)), row.rtol, row.atol, row.dtype)

def check_grad(row: Row) -> None:
  """grad of <w, f(x)> for a fixed random w (every output element gets a distinct cotangent)."""
  which = _diff_args(row)
  out = np.asarray(row.jx(*row.args))
  w = np.random.default_rng(3).standard_normal(out.shape).astype(out.dtype)
  tj_fixed = tuple(map(_tg, row.args))
  tj_f = _bind(row.tj, tj_fixed, which)
  jx_f = _bind(row.jx, row.args, which)
  argnums = tuple(range(len(which)))
  got = tinyjax.grad(lambda *xs: (tj_f(*xs) * Tensor(w)).sum(), argnums=argnums)(*[_tg(row.args[i]) for i in which])
  def want(): return jax.grad(lambda *xs: (jx_f(*xs) * w).sum(), argnums=argnums)(*[row.args[i] for i in which])
  assert_close(got, want, row.rtol, row.atol, row.dtype)

def params(rows: list[Row], vmap_last: str = "all") -> list:
  """pytest parameters (row, check) for every check that applies to each row, with ids like 'sin-vmap_last'."""
  import pytest
  assert vmap_last in ("all", "first", "none"), vmap_last
  out, seen = [], set()
  for r in rows:
    checks = ["value"]
    if r.vmap:
      last = r.vmap_last if r.vmap_last is not None else vmap_last == "all" or (vmap_last == "first" and r.name not in seen)
      checks += ["vmap_first", "vmap_last"] if last else ["vmap_first"]
      seen.add(r.name)
    if r.diff and _diff_args(r): checks += ["jvp", "grad"]
    out += [pytest.param(r, c, id=f"{r.id}-{c}") for c in checks]
  return out

def run(row: Row, check: str) -> None:
  if check == "value": check_value(row)
  elif check.startswith("vmap"): check_vmap(row, check.split("_")[1])
  elif check == "jvp": check_jvp(row)
  elif check == "grad": check_grad(row)
  else: raise ValueError(check)

def x64_off():
  """A context in which JAX and tinyjax both run with x64 off (their defaults): float32/int32 defaults."""
  import contextlib
  @contextlib.contextmanager
  def ctx():
    jax.config.update("jax_enable_x64", False)
    tinyjax.config.update("jax_enable_x64", False)
    try: yield
    finally:
      jax.config.update("jax_enable_x64", True)
      tinyjax.config.update("jax_enable_x64", True)
  return ctx()

def same(name, *args, **kw):
  """A row calling jnp.name / jxn.name with the same positional arrays and keywords."""
  rid = kw.pop("id", None) or name
  opts = {k: kw.pop(k) for k in ("vmap", "diff", "diff_args", "batch_args", "rtol", "atol") if k in kw}
  jx = eager(getattr(jxn, name)) if opts.get("vmap") is False else getattr(jxn, name)
  return Row(name, lambda *a: getattr(jnp, name)(*a, **kw), lambda *a: jx(*a, **kw), args, id=rid, **opts)

def eager(f):
  """JAX's function evaluated at once even under the harness's jax.jit (its output shape depends on the data)."""
  def g(*a, **kw):
    with jax.ensure_compile_time_eval(): return f(*a, **kw)
  return g

"""JAX's ahead-of-time stages for tinyjax.jit (jax.stages): `jit(f).trace(*args)` -> Traced, `.lower()` -> Lowered,
`.compile()` -> Compiled (docs/jit.md, "Semantics")."""
from __future__ import annotations
from tinyjax._tg import Tensor, TINYGRAD_LOCK, jit_captured, jit_kernel_names
from tinyjax import pytree as tu
from tinyjax.api import ShapeDtypeStruct, make_jaxpr
from tinyjax.transforms import jit as _jit

__all__ = ["Traced", "Lowered", "Compiled"]

class Traced:
  """jax.stages.Traced: `out_info` (ShapeDtypeStructs of the outputs), `jaxpr` (the tinygrad graph, as make_jaxpr
  shows it: the function runs once more on placeholders), `lower()`."""
  def __init__(self, jitted: _jit.jit, entry: _jit._Entry, tensors: list[Tensor], args: tuple, kwargs: dict):
    self._jit, self._entry, self._tensors, self._args, self._kwargs = jitted, entry, tensors, args, kwargs
    self.fun_name = getattr(jitted.fun, "__name__", repr(jitted.fun))

  @property
  def out_info(self):
    e = self._entry
    return tu.tree_unflatten(e.out_tree, [ShapeDtypeStruct(s[0], s[1], weak_type=w is not None)
                                          for s, w in zip(e.out_specs, e.out_weak, strict=True)])

  @property
  def jaxpr(self):
    return make_jaxpr(self._jit.fun, static_argnums=self._jit.static_argnums)(*self._args, **self._kwargs)

  def lower(self) -> Lowered: return Lowered(self)

class Lowered:
  """jax.stages.Lowered: `as_text()` is the tinygrad graph the function builds (tinyjax lowers to tinygrad's UOps, not
  StableHLO); `compile()` captures the kernels."""
  def __init__(self, traced: Traced): self._traced = traced
  out_info = property(lambda self: self._traced.out_info)
  def as_text(self, dialect: str | None = None, **kwargs) -> str: return str(self._traced.jaxpr)
  def compile(self, compiler_options=None) -> Compiled:
    if compiler_options: raise NotImplementedError("tinyjax.jit(...).lower(...).compile: compiler_options are not supported")
    return Compiled(self._traced)
  def cost_analysis(self): raise NotImplementedError("tinyjax: cost_analysis is not there (tinygrad reports no cost model)")

class Compiled:
  """jax.stages.Compiled: called with the arguments that are not static, as JAX's; its kernels are captured here (a
  capture runs them once: TinyJit records what it runs). `as_text()` lists the kernels one call replays."""
  def __init__(self, traced: Traced):
    self._traced = traced
    t, entry = traced, traced._entry
    with TINYGRAD_LOCK:
      while not jit_captured(entry.tinyjit): entry(t._tensors)
    nums = {a % len(t._args) for a in t._jit.static_argnums if -len(t._args) <= a < len(t._args)}
    self._static = {i: t._args[i] for i in sorted(nums)}
    self._static_kw = {k: v for k, v in t._kwargs.items() if k in t._jit.static_argnames}
    self._tree = tu.tree_structure(([a for i, a in enumerate(t._args) if i not in nums],
                                    {k: v for k, v in t._kwargs.items() if k not in self._static_kw}))
  out_info = property(lambda self: self._traced.out_info)
  def as_text(self) -> str: return "\n".join(jit_kernel_names(self._traced._entry.tinyjit))
  def cost_analysis(self): raise NotImplementedError("tinyjax: cost_analysis is not there (tinygrad reports no cost model)")
  def memory_analysis(self): raise NotImplementedError("tinyjax: memory_analysis is not there (tinygrad's memory planner reports none)")

  def __call__(self, *args, **kwargs):
    t = self._traced
    if (tree := tu.tree_structure((list(args), kwargs))) != self._tree:
      raise TypeError("Function compiled with input pytree does not match the input pytree it was called with: "
                      f"compiled with {self._tree}, called with {tree}")
    it = iter(args)
    full = [self._static[i] if i in self._static else next(it) for i in range(len(args) + len(self._static))]
    entry, tensors = t._jit._entry(tuple(full), {**kwargs, **self._static_kw})
    if entry is not t._entry:
      raise TypeError("Argument types differ from the types for which this computation was compiled. The mismatches "
                      f"are: compiled with {[(tuple(x.shape), x.dtype.name) for x in t._tensors]} and called with "
                      f"{[(tuple(x.shape), x.dtype.name) for x in tensors]}")
    return entry(tensors)

_jit.STAGES["Traced"] = Traced

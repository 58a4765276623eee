"""tinyjax.config: JAX's config object for the options tinyjax honours (today: jax_enable_x64)."""
from __future__ import annotations
import os

def _env_flag(name: str) -> bool: return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")

class Config:
  """`tinyjax.config.update("jax_enable_x64", True)`, `tinyjax.config.jax_enable_x64`, as in JAX. The environment
  variable JAX_ENABLE_X64 sets the default."""
  _options = ("jax_enable_x64",)

  def __init__(self):
    self.jax_enable_x64 = _env_flag("JAX_ENABLE_X64")

  def update(self, name: str, value) -> None:
    if name not in self._options: raise AttributeError(f"Unrecognized config option: {name}")
    setattr(self, name, bool(value))

  def read(self, name: str):
    if name not in self._options: raise AttributeError(f"Unrecognized config option: {name}")
    return getattr(self, name)

config = Config()

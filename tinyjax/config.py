"""tinyjax.config: JAX's config object. `jax_enable_x64` is honoured; the other options JAX programs commonly set are
accepted where ignoring them changes no result, and refused (NotImplementedError) where it would."""
from __future__ import annotations
import os, re
from typing import Any
from tinyjax import _tg

def _env_flag(name: str) -> bool: return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")

def _platforms(name: str, value: Any) -> Any:
  """jax_platforms / jax_platform_name: a comma-separated list whose first entry "cpu" makes tinygrad's CPU device the
  default; any other list leaves tinygrad's default device (set with tinygrad's DEV environment variable) in place."""
  if value and str(value).split(",")[0].strip().lower() == "cpu":
    from tinygrad.helpers import DEV
    DEV.value = "CPU"
  return value

def _only(*accepted) -> Any:
  """An option tinyjax cannot honour: its default values are accepted, the others refused."""
  def check(name: str, value: Any) -> Any:
    if value not in accepted:
      raise NotImplementedError(f"tinyjax.config.update({name!r}, {value!r}): not supported by tinyjax, only {accepted} (see docs/porting.md)")
    return value
  return check

def _ignored(name: str, value: Any) -> Any: return value

def _choice(*values) -> Any:
  def check(name: str, value: Any) -> Any:
    if value not in values: raise ValueError(f"{name} must be one of {values}, got {value!r}")
    return value
  return check

def _cpu_devices(name: str, value: Any) -> int:
  if type(value) is not int or value < -1 or value == 0: raise ValueError(f"{name} must be a positive int or -1, got {value!r}")
  return value

def _forced_cpu_devices() -> int:
  """XLA's `--xla_force_host_platform_device_count=N` in XLA_FLAGS, which JAX programs set for N CPU devices (else -1)."""
  m = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
  return int(m.group(1)) if m and int(m.group(1)) > 0 else -1

class Config:
  """`tinyjax.config.update("jax_enable_x64", True)`, `tinyjax.config.jax_enable_x64`, as in JAX. The environment
  variable JAX_ENABLE_X64 sets the default.

  Options: `jax_enable_x64` (64-bit default dtypes); `jax_platforms`/`jax_platform_name` ("cpu" selects tinygrad's CPU
  device, other values are ignored: tinygrad picks its device); `jax_default_matmul_precision` is accepted and ignored
  (tinygrad multiplies in the operands' dtype, JAX's "highest" precision); `jax_debug_nans`, `jax_debug_infs`,
  `jax_disable_jit` accept only False and `jax_numpy_rank_promotion` only "allow" (the checks they turn on are not
  implemented); `jax_num_cpu_devices` (how many CPU devices `tinyjax.devices()` lists: tinygrad's CPU, CPU:1, ...;
  -1, the default, reads XLA's `--xla_force_host_platform_device_count=N` from XLA_FLAGS as JAX does, else 1; unlike
  JAX it may be changed at any time); `jax_traceback_filtering`, `jax_log_compiles`, `jax_compilation_cache_dir` are accepted and ignored.
  tinyjax's own: `tinyjax_fft` ("auto": lax.fft is a host call to pocketfft on the CPU device and tinygrad kernels
  elsewhere; "host" or "kernels" choose one everywhere)."""
  _options: dict[str, Any] = {
    "jax_enable_x64": lambda name, v: bool(v),
    "jax_platforms": _platforms, "jax_platform_name": _platforms,
    "jax_default_matmul_precision": _ignored, "jax_traceback_filtering": _ignored, "jax_log_compiles": _ignored,
    "jax_compilation_cache_dir": _ignored,
    "jax_debug_nans": _only(False, 0), "jax_debug_infs": _only(False, 0), "jax_disable_jit": _only(False, 0),
    "jax_numpy_rank_promotion": _only("allow"), "jax_num_cpu_devices": _cpu_devices,
    "tinyjax_fft": _choice("auto", "host", "kernels"),
  }

  def __init__(self):
    self.jax_enable_x64 = _env_flag("JAX_ENABLE_X64")
    self.jax_platforms = self.jax_platform_name = self.jax_default_matmul_precision = self.jax_compilation_cache_dir = None
    self.jax_debug_nans = self.jax_debug_infs = self.jax_disable_jit = self.jax_log_compiles = False
    self.jax_numpy_rank_promotion, self.jax_traceback_filtering = "allow", "auto"
    self.tinyjax_fft = "auto"
    self.jax_num_cpu_devices = _forced_cpu_devices()

  @property
  def jax_enable_x64(self) -> bool: return self._x64

  @jax_enable_x64.setter
  def jax_enable_x64(self, value: bool) -> None:
    # a Python float is float64 with x64: tinygrad computes and stores weakly typed values at that width from now on
    self._x64 = bool(value)
    _tg.set_weak_float(self._x64)

  def update(self, name: str, value) -> None:
    if name not in self._options: raise AttributeError(f"Unrecognized config option: {name}")
    setattr(self, name, self._options[name](name, value))

  def read(self, name: str):
    if name not in self._options: raise AttributeError(f"Unrecognized config option: {name}")
    return getattr(self, name)

config = Config()

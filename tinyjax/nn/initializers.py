"""tinyjax.nn.initializers: JAX's initializers (`init = glorot_normal(); init(key, shape, dtype)`), drawing from
tinyjax.random (JAX's streams): the same key gives JAX's parameters. Scales are rounded to the dtype first, as JAX's
`jnp.array(scale, dtype)`."""
from __future__ import annotations
import math
from typing import Any, Callable, Sequence
import numpy as np
from tinyjax._tg import Tensor, np_dtype
from tinyjax.numpy._core import to_dtype, default_float
from tinyjax import random

__all__ = ["zeros", "ones", "constant", "normal", "uniform", "truncated_normal", "variance_scaling", "glorot_normal",
           "glorot_uniform", "xavier_normal", "xavier_uniform", "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform",
           "lecun_normal", "lecun_uniform", "compute_fans"]

def zeros(key: Any, shape: Sequence[int], dtype: Any = None) -> Tensor:
  return Tensor.full(tuple(shape), 0, dtype=to_dtype(dtype) or default_float())

def ones(key: Any, shape: Sequence[int], dtype: Any = None) -> Tensor:
  return Tensor.full(tuple(shape), 1, dtype=to_dtype(dtype) or default_float())

def constant(value: Any, dtype: Any = None) -> Callable:
  def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Tensor:
    return Tensor.full(tuple(shape), value, dtype=to_dtype(dtype) or default_float())
  return init

def _dtype(dtype: Any):
  dt = to_dtype(dtype) or default_float()
  return dt, (np_dtype(dt) or np.dtype(np.float32)).type

def normal(stddev: float = 1e-2, dtype: Any = None) -> Callable:
  def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Tensor:
    dt, t = _dtype(dtype)
    return random.normal(key, shape, dt) * float(t(stddev))
  return init

def uniform(scale: float = 1e-2, dtype: Any = None) -> Callable:
  def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Tensor:
    dt, t = _dtype(dtype)
    return random.uniform(key, shape, dt) * float(t(scale))
  return init

def truncated_normal(stddev: float = 1e-2, dtype: Any = None, lower: float = -2.0, upper: float = 2.0) -> Callable:
  def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Tensor:
    dt, t = _dtype(dtype)
    return random.truncated_normal(key, lower, upper, shape, dt) * float(t(stddev))
  return init

def compute_fans(shape: Sequence[int], in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                 batch_axis: int | Sequence[int] = ()) -> tuple[float, float]:
  """JAX's fan-in and fan-out of a weight shape (receptive field = the other axes)."""
  if len(shape) <= 1: raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor. "
                                       "Must be at least 2D.")
  def axes(a: int | Sequence[int]) -> tuple[int, ...]: return tuple(i % len(shape) for i in ((a,) if isinstance(a, int) else a))
  ins, outs, batch = axes(in_axis), axes(out_axis), axes(batch_axis)
  field = math.prod(d for i, d in enumerate(shape) if i not in ins + outs + batch)
  return math.prod(shape[i] for i in ins) * field, math.prod(shape[i] for i in outs) * field

def variance_scaling(scale: float, mode: str, distribution: str, in_axis: int | Sequence[int] = -2,
                     out_axis: int | Sequence[int] = -1, batch_axis: Sequence[int] = (), dtype: Any = None) -> Callable:
  if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"): raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
  if distribution not in ("truncated_normal", "normal", "uniform"):
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
  def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Tensor:
    dt, t = _dtype(dtype)
    fan_in, fan_out = compute_fans(tuple(shape), in_axis, out_axis, batch_axis)
    denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                   "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
    variance = t(scale / denominator)
    if distribution == "truncated_normal":   # the constant: the stddev of a standard normal truncated to (-2, 2)
      return random.truncated_normal(key, -2, 2, shape, dt) * float(np.sqrt(variance) / t(.87962566103423978))
    if distribution == "normal": return random.normal(key, shape, dt) * float(np.sqrt(variance))
    return random.uniform(key, shape, dt, -1) * float(np.sqrt(t(3) * variance))
  return init

def glorot_normal(in_axis: int = -2, out_axis: int = -1, batch_axis: Sequence[int] = (), dtype: Any = None) -> Callable:
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)
def glorot_uniform(in_axis: int = -2, out_axis: int = -1, batch_axis: Sequence[int] = (), dtype: Any = None) -> Callable:
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)
def he_normal(in_axis: int = -2, out_axis: int = -1, batch_axis: Sequence[int] = (), dtype: Any = None) -> Callable:
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)
def he_uniform(in_axis: int = -2, out_axis: int = -1, batch_axis: Sequence[int] = (), dtype: Any = None) -> Callable:
  return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)
def lecun_normal(in_axis: int = -2, out_axis: int = -1, batch_axis: Sequence[int] = (), dtype: Any = None) -> Callable:
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)
def lecun_uniform(in_axis: int = -2, out_axis: int = -1, batch_axis: Sequence[int] = (), dtype: Any = None) -> Callable:
  return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)
xavier_normal, xavier_uniform, kaiming_normal, kaiming_uniform = glorot_normal, glorot_uniform, he_normal, he_uniform

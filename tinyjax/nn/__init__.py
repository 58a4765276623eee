"""tinyjax.nn: JAX's jax.nn (activations, softmax, one_hot, standardize) on tinygrad Tensors, with JAX's derivatives
at the kinks (relu'(0) = 0 as JAX)."""
from __future__ import annotations
import math
from typing import Any
from tinyjax.primitives import accurate_tanh
from tinyjax._tg import Tensor, dtypes
from tinyjax.lax import special as _special
from tinyjax.numpy._core import asarray, as_inexact, canonicalize_axes, default_float, to_dtype
from tinyjax.scipy.special import logsumexp
from tinyjax.nn import initializers
from tinyjax.nn.functional import params, functional_call, stack_params

__all__ = ["relu", "relu6", "gelu", "silu", "swish", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "elu", "celu", "selu",
           "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish", "tanh", "softmax", "log_softmax", "logsumexp",
           "one_hot", "standardize", "glu", "initializers", "params", "functional_call", "stack_params"]

# tinygrad's own activations where it has them: tinyjax.primitives recognises their lowerings and gives them JAX's
# derivative rules at every order (relu6 and hard_sigmoid 0 at their kinks, elu's negative branch at 0...)
def relu(x: Any) -> Tensor: return asarray(x).relu()   # integers stay integers, as JAX's
def relu6(x: Any) -> Tensor: return as_inexact(x).relu6()
def gelu(x: Any, approximate: bool = True) -> Tensor:
  """JAX's gelu: the tanh approximation by default, the exact erf form with approximate=False."""
  t = as_inexact(x)
  if approximate: return 0.5 * t * (1 + accurate_tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t * t * t)))
  return 0.5 * t * (1 + (t / math.sqrt(2)).erf())
def sigmoid(x: Any) -> Tensor: return as_inexact(x).sigmoid()
def silu(x: Any) -> Tensor:
  t = as_inexact(x)
  return t * t.sigmoid()
swish = silu
def softplus(x: Any) -> Tensor: return as_inexact(x).softplus()
def log_sigmoid(x: Any) -> Tensor: return -softplus(-as_inexact(x))
def soft_sign(x: Any) -> Tensor:
  t = as_inexact(x)
  return t / (t.abs() + 1)
def elu(x: Any, alpha: float = 1.0) -> Tensor: return as_inexact(x).elu(alpha)
def celu(x: Any, alpha: float = 1.0) -> Tensor: return as_inexact(x).celu(alpha)
def selu(x: Any) -> Tensor:   # JAX's constants (tinygrad's are rounded to 6 digits)
  return 1.0507009873554804934193349852946 * as_inexact(x).elu(1.6732632423543772848170429916717)
def leaky_relu(x: Any, negative_slope: float = 0.01) -> Tensor:
  t = as_inexact(x)
  return (t >= 0).where(t, negative_slope * t)
def hard_tanh(x: Any) -> Tensor:
  t = as_inexact(x)
  return (t > 1).where(1.0, (t < -1).where(-1.0, t))
def hard_sigmoid(x: Any) -> Tensor: return relu6(as_inexact(x) + 3.0) / 6.0
def hard_silu(x: Any) -> Tensor:
  t = as_inexact(x)
  return t * hard_sigmoid(t)
hard_swish = hard_silu
def tanh(x: Any) -> Tensor: return accurate_tanh(as_inexact(x))

def softmax(x: Any, axis: Any = -1, where: Any = None) -> Tensor:
  """exp(x - max) / sum, over `axis` (an int or a tuple); entries outside `where` are 0."""
  t = as_inexact(x)
  return _special.softmax(t, canonicalize_axes(axis, t.ndim), asarray(where) if where is not None else None)

def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Tensor:
  """x - logsumexp(x) over `axis` (an int or a tuple); entries outside `where` are -inf."""
  t = as_inexact(x)
  return _special.log_softmax(t, canonicalize_axes(axis, t.ndim), asarray(where) if where is not None else None)

def one_hot(x: Any, num_classes: int, dtype: Any = None, axis: int = -1) -> Tensor:
  """JAX's one_hot: out-of-range (and negative) class indices give an all-zero row."""
  t = asarray(x)
  classes = Tensor.arange(num_classes, dtype=t.dtype if not dtypes.is_float(t.dtype) else dtypes.int32)
  out = (t.unsqueeze(-1) == classes.cast(t.dtype)).cast(to_dtype(dtype) or default_float())
  ax = axis % out.ndim
  return out if ax == out.ndim - 1 else out.permute(*range(ax), out.ndim - 1, *range(ax, out.ndim - 1))

def standardize(x: Any, axis: Any = -1, mean: Any = None, variance: Any = None, epsilon: float = 1e-5, where: Any = None) -> Tensor:
  t = as_inexact(x)
  axes = canonicalize_axes(axis, t.ndim)
  w = asarray(where) if where is not None else None
  def _mean(v: Tensor) -> Tensor:
    if w is None: return v.mean(axis=axes, keepdim=True)
    return w.where(v, 0.0).sum(axis=axes, keepdim=True) / w.cast(v.dtype).sum(axis=axes, keepdim=True)
  m = _mean(t) if mean is None else asarray(mean)
  var = (_mean(t * t) - m * m) if variance is None else asarray(variance)   # JAX: E[x^2] - E[x]^2
  return (t - m) * (var + epsilon).rsqrt()

def glu(x: Any, axis: int = -1) -> Tensor:
  t = as_inexact(x)
  a, b = t.chunk(2, dim=axis)
  return a * b.sigmoid()

"""tinyjax.nn: JAX's jax.nn (activations, softmax, one_hot, standardize) on tinygrad Tensors, with JAX's derivatives
at the kinks (relu'(0) = 0 as JAX)."""
from __future__ import annotations
import math
from typing import Any
import numpy as np
from tinyjax.lax import ops as lax_ops
from tinyjax.core import composite, fill_like
from tinyjax.custom import custom_jvp, structural
from tinyjax._tg import Tensor, dtypes, dtype_name, static_shape
from tinyjax.lax import special as _special
from tinyjax.numpy._core import asarray, as_inexact, canonicalize_axes, default_float, to_dtype, promote_types
from tinyjax.numpy import einsum, logaddexp
from tinyjax.scipy.special import logsumexp
from tinyjax.nn import initializers
from tinyjax.nn.functional import params, functional_call, stack_params

__all__ = ["relu", "relu6", "gelu", "silu", "swish", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "elu", "celu", "selu",
           "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu", "hard_swish", "tanh", "softmax", "log_softmax", "logsumexp",
           "one_hot", "standardize", "glu", "dot_product_attention", "initializers", "params", "functional_call", "stack_params"]

# tinygrad's own activations where they are JAX's formulas (relu, sigmoid): tinyjax.primitives recognises their
# lowerings and gives them JAX's derivative rules at every order (relu'(0) = 0)
def relu(x: Any) -> Tensor: return asarray(x).relu()   # integers stay integers, as JAX's

# max(0, x) with 0 first: XLA's max(-0., 0.) is +0., tinygrad's max keeps its first operand at a tie
def _max0(t: Tensor) -> Tensor: return lax_ops.maximum(fill_like(t, 0.0), t)

# JAX's relu6, min(max(x, 0), 6) (tinygrad's relu(x) - relu(x - 6) cancelled: 8 at 1e8, 0 at 1e30, nan at inf), with
# its custom_jvp: g where 0 < x < 6, else 0, at both kinks too (a select, not g * 0: hard_silu'(inf) is 1, not nan)
@structural
@custom_jvp
def _relu6(t: Tensor) -> Tensor: return lax_ops.minimum(_max0(t), fill_like(t, 6.0))
_relu6.defjvps(lambda g, ans, t: ((t > 0) & (t < 6)).where(g, fill_like(g, 0.0)))
def relu6(x: Any) -> Tensor: return _relu6(as_inexact(x))

def gelu(x: Any, approximate: bool = True) -> Tensor:
  """JAX's gelu: the tanh approximation by default, the exact erfc form with approximate=False."""
  return (_gelu_tanh if approximate else _gelu_erf)(as_inexact(x))

@composite   # (eagerly: its ops built once per signature, 0.45 -> ~0.14 ms a call)
def _gelu_tanh(t: Tensor) -> Tensor:
  """JAX's: x * cdf, cdf = (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 (cdf is 1 where x^3 overflows)."""
  cdf = 0.5 * (1 + lax_ops.tanh_kernel(math.sqrt(2 / math.pi) * (t + 0.044715 * (t * t * t))))
  return t * cdf

@composite
def _gelu_erf(t: Tensor) -> Tensor:
  """JAX's: x / 2 * erfc(-x sqrt(1/2)), relatively precise in the negative tail (x / 2 (1 + erf(x / sqrt 2)) cancelled:
  a wrong sign at -5.4, 0 below -8.3)."""
  return (0.5 * t) * _special.erfc(-t * math.sqrt(0.5))

def sigmoid(x: Any) -> Tensor: return as_inexact(x).sigmoid()
def silu(x: Any) -> Tensor:
  t = as_inexact(x)
  return t * t.sigmoid()
swish = silu
def softplus(x: Any) -> Tensor: return logaddexp(as_inexact(x), 0)   # (JAX's: log(1 + e^x) lost e^x below an ulp of 1)
def log_sigmoid(x: Any) -> Tensor: return -softplus(-as_inexact(x))
def soft_sign(x: Any) -> Tensor:
  t = as_inexact(x)
  return t / (t.abs() + 1)
# JAX's elu, celu and selu: expm1 on the negative side (exp(x) - 1 cancelled: elu(-1e-8) was 0), nan at nan
def elu(x: Any, alpha: float = 1.0) -> Tensor:
  t = as_inexact(x)
  pos = t > 0
  # (a fill, not the comparison's literal 0: core's clip rewrite makes pos.where(0, t) a minimum, whose derivative at 0
  # is 1/2; JAX's select takes t's, 1)
  return pos.where(t, alpha * _special.expm1(pos.where(fill_like(t, 0.0), t)))
def celu(x: Any, alpha: float = 1.0) -> Tensor:
  t = as_inexact(x)
  return _max0(t) + alpha * _special.expm1(lax_ops.minimum(t, fill_like(t, 0.0)) / alpha)
def selu(x: Any) -> Tensor: return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)   # (JAX's constants)
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
def tanh(x: Any) -> Tensor: return lax_ops.tanh_kernel(as_inexact(x))

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


# ---- attention ------------------------------------------------------------------------------------------------------

def _check_shape_and_dtype(t: Tensor | None, shape: list[int], dtype, name: str) -> None:
  if t is None: return
  if t.ndim != len(shape): raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
  if dtype is not None and t.dtype != dtype: raise ValueError(f"{name} dtype should be {dtype_name(dtype)}, but got {dtype_name(t.dtype)}")
  if any(n != -1 and m != n for m, n in zip(t.shape, shape, strict=True)):
    raise ValueError(f"{name} shape should be {shape}: but got {tuple(t.shape)}")

def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None, *, scale: float | None = None,
                          is_causal: bool = False, query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None, implementation: str | None = None,
                          return_residual: bool = False) -> Any:
  """jax.nn.dot_product_attention, JAX's 'xla' implementation: softmax(scale * q k^T + bias, masked) v over query
  (B, T, N, H) or (T, N, H), key and value (B, S, K, H) with N a multiple of K (grouped-query attention); bias and the
  bool mask broadcast to (B, N, T, S); masked logits get -0.7 * the dtype's largest value; the softmax runs in
  float32, as JAX's."""
  if implementation == "cudnn": raise NotImplementedError("tinyjax.nn.dot_product_attention: implementation='cudnn' is not supported")
  if implementation not in (None, "xla"): raise ValueError(f"Unsupported implementation option: {implementation}")
  out_shape = tuple(asarray(query).shape)
  def four(t: Any) -> Tensor:
    t = asarray(t)
    return t.reshape((1,) * (4 - t.ndim) + tuple(t.shape)) if t.ndim < 4 else t
  q, k, v = four(query), four(key), four(value)
  b, m = (four(bias) if bias is not None else None), (four(mask) if mask is not None else None)
  qlen = asarray(query_seq_lengths) if query_seq_lengths is not None else None
  kvlen = asarray(key_value_seq_lengths) if key_value_seq_lengths is not None else None
  window = (local_window_size, local_window_size) if isinstance(local_window_size, int) else local_window_size
  B, S, K, H = static_shape(k)
  _check_shape_and_dtype(v, [B, S, K, H], k.dtype, "value")
  _check_shape_and_dtype(q, [B, -1, -1, H], k.dtype, "query")
  _check_shape_and_dtype(m, [-1] * 4, dtypes.bool, "mask")
  _check_shape_and_dtype(b, [-1] * 4, None, "bias")
  _check_shape_and_dtype(qlen, [B], dtypes.int32, "query_seq_lengths")
  _check_shape_and_dtype(kvlen, [B], dtypes.int32, "key_value_seq_lengths")
  T, N = static_shape(q)[1:3]
  if N % K != 0: raise ValueError(f"The number of query heads must be a multiple of key/value heads, but got {N} vs {K}")
  G = N // K
  scale = 1.0 / math.sqrt(H) if scale is None else scale
  logits_dt = promote_types(q.dtype, dtypes.float32)
  # the query heads grouped by the key/value head they share: logits (B, K, G, T, S)
  logits = einsum("BTKGH,BSKH->BKGTS", q.reshape(B, T, K, G, H).cast(logits_dt), k.cast(logits_dt)) * Tensor(scale, dtype=logits_dt)
  def grouped(t: Tensor) -> Tensor:   # (b, N or 1, t, s) -> (b, K or 1, G or 1, t, s)
    tb, tn, tt, ts = static_shape(t)
    return t.unsqueeze(2) if tn == 1 else t.reshape(tb, K, G, tt, ts)
  if b is not None: logits = (logits + grouped(b)).cast(logits_dt)
  keep: Tensor | None = grouped(m) if m is not None else None
  def both(extra: Tensor) -> Tensor: return extra if keep is None else keep & extra
  tpos, spos = Tensor.arange(T).reshape(T, 1), Tensor.arange(S).reshape(1, S)
  if is_causal: keep = both(tpos >= spos)
  if window is not None: keep = both((tpos <= spos + window[0]) & (tpos >= spos - window[1]))
  if qlen is not None or kvlen is not None:
    pad = Tensor.ones(1, T, S, dtype=dtypes.bool)
    if qlen is not None: pad = pad & (Tensor.arange(T).reshape(1, T, 1) < qlen.reshape(B, 1, 1))
    if kvlen is not None: pad = pad & (Tensor.arange(S).reshape(1, 1, S) < kvlen.reshape(B, 1, 1))
    keep = both(pad.reshape(static_shape(pad)[0], 1, 1, T, S))
  if keep is not None:
    e, mant = dtypes.finfo(logits_dt)   # the dtype's largest finite value, at most float32's
    big = -0.7 * min((2 - 2.0 ** -mant) * 2.0 ** (2 ** (e - 1) - 1), float(np.finfo(np.float32).max))
    logits = keep.where(logits, Tensor(big, dtype=logits_dt))
  logits32 = logits.cast(dtypes.float32)
  probs = _special.softmax(logits32, (4,)).cast(k.dtype)
  out = einsum("BKGTS,BSKH->BTKGH", probs, v)
  if qlen is not None: out = out * (Tensor.arange(T).reshape(1, T, 1, 1, 1) < qlen.reshape(B, 1, 1, 1, 1)).cast(out.dtype)
  out = out.reshape(out_shape)
  if not return_residual: return out
  lse = _special.logsumexp(logits32, (4,))
  assert isinstance(lse, Tensor)
  lse = lse.cast(k.dtype).permute(0, 3, 1, 2)   # (B, K, G, T) -> (B, T, K, G)
  return out, lse.reshape(out_shape[:-1]).detach()

"""tinyjax.numpy: products: dot, vdot, vecdot, matmul, inner, outer, tensordot, einsum, kron, cross, trace, and the 1-D
convolve and correlate.

`precision=` is accepted everywhere JAX takes it and ignored: tinygrad computes in the operands' dtype (float32 matmuls
are full float32, as JAX's "highest"). `preferred_element_type=` is the result dtype, as in JAX.
"""
from __future__ import annotations
import functools
import operator
from typing import Any, Sequence
from tinyjax._tg import Tensor, static_shape
from tinyjax.core import composite, fill_like
from tinyjax.lax.ops import conv_general_dilated
from tinyjax.numpy._core import asarray, check_arraylike, promote, promote_inexact, to_dtype, canonicalize_axis
from tinyjax.numpy._reductions import sum as _sum

__all__ = ["dot", "vdot", "vecdot", "matmul", "inner", "outer", "tensordot", "einsum", "kron", "cross", "trace",
           "matrix_transpose", "convolve", "correlate"]

def _operands(a: Any, b: Any, preferred_element_type: Any) -> tuple[Tensor, Tensor, Any]:
  """a, b in their common dtype (JAX's promotion), or in `preferred_element_type`, and the result dtype."""
  if (dt := to_dtype(preferred_element_type)) is not None: return asarray(a, dt), asarray(b, dt), dt
  x, y = promote(a, b)
  return x, y, x.dtype

@functools.partial(composite, inline=True)   # (a reshape, a product and a sum under a trace: JAX's dot_general)
def _contract(x: Tensor, y: Tensor, cx: Sequence[int], cy: Sequence[int], dt) -> Tensor:
  """dot_general without batch dimensions: x's free axes, then y's, summing x's axes cx against y's axes cy."""
  for i, j in zip(cx, cy, strict=True):
    if x.shape[i] != y.shape[j]:
      raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got {tuple(x.shape[i] for i in cx)} "
                      f"and {tuple(y.shape[j] for j in cy)}.")
  fx, fy = [i for i in range(x.ndim) if i not in cx], [j for j in range(y.ndim) if j not in cy]
  k = len(cx)
  # both operands as (x's free axes, y's free axes, contracted axes), broadcast against each other and summed
  xb = x.permute(*fx, *cx).reshape(*[x.shape[i] for i in fx], *[1] * len(fy), *[x.shape[i] for i in cx])
  yb = y.permute(*fy, *cy).reshape(*[1] * len(fx), *[y.shape[j] for j in fy], *[y.shape[j] for j in cy])
  if k == 0: return (xb * yb).cast(dt)
  return _acc(xb * yb, tuple(range(-k, 0)), dt)

def _acc(p: Tensor, axes, dt) -> Tensor:
  """p summed over axes in tinygrad's accumulator (float16 in float32, bools counted), cast to the result dtype dt."""
  r = p.sum(axes)
  return r if r.dtype == dt else r.cast(dt)

def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None) -> Tensor:
  """numpy's dot (jnp.dot): for N-D b, contracts a's last axis with b's second to last. `precision` is ignored."""
  check_arraylike("dot", a, b)
  x, y, dt = _operands(a, b, preferred_element_type)
  if x.ndim == 0 or y.ndim == 0: return (x * y).cast(dt)
  if x.shape[-1] != y.shape[-1 if y.ndim == 1 else -2]:
    raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got ({x.shape[-1]},) and "
                    f"({y.shape[-1 if y.ndim == 1 else -2]},).")
  if y.ndim <= 2: return _matmul(x, y, dt)   # numpy's dot is matmul here
  return _contract(x, y, (x.ndim - 1,), (y.ndim - 2,), dt)

def _matmul(x: Tensor, y: Tensor, dt) -> Tensor:
  """tinygrad's matmul (broadcast batch dimensions, 1-D operands promoted; bools: or of ands), JAX's result dtype."""
  r = x.matmul(y)
  return r if r.dtype == dt else r.cast(dt)

def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None) -> Tensor:
  """Matrix product with broadcast batch dimensions (jnp.matmul, `@`). `precision` is ignored."""
  check_arraylike("matmul", a, b)
  x, y, dt = _operands(a, b, preferred_element_type)
  for i, t in enumerate((x, y)):
    if t.ndim < 1: raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has ndim {t.ndim}")
  if x.shape[-1] != y.shape[-1 if y.ndim == 1 else -2]:
    raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got ({x.shape[-1]},) and "
                    f"({y.shape[-1 if y.ndim == 1 else -2]},).")
  bx, by = x.shape[:-2], y.shape[:-2]
  for p, q in zip(bx[::-1], by[::-1], strict=False):   # broadcast from the right
    if p != q and p != 1 and q != 1:
      raise ValueError(f"Incompatible types for matmul arguments: {x.dtype.name}{list(x.shape)} and {y.dtype.name}{list(y.shape)}")
  return _matmul(x, y, dt)

def vdot(a, b, *, precision=None, preferred_element_type=None) -> Tensor:
  """Dot product of the flattened arrays (jnp.vdot)."""
  return dot(asarray(a).flatten(), asarray(b).flatten(), preferred_element_type=preferred_element_type)

def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None) -> Tensor:
  """Dot product of vectors along `axis`, broadcasting the others (jnp.vecdot)."""
  x, y, dt = _operands(x1, x2, preferred_element_type)
  if x.shape[axis] != y.shape[axis]:
    raise ValueError(f"axes must match; got shapes {tuple(x.shape)} and {tuple(y.shape)} with axis={axis}")
  return _acc(_move_last(x, axis) * _move_last(y, axis), -1, dt)

def _move_last(x: Tensor, axis: int) -> Tensor:
  ax = canonicalize_axis(axis, x.ndim)
  return x.permute(*[i for i in range(x.ndim) if i != ax], ax)

def inner(a, b, *, precision=None, preferred_element_type=None) -> Tensor:
  """Sum product over the last axes (jnp.inner)."""
  x, y, dt = _operands(a, b, preferred_element_type)
  if x.ndim == 0 or y.ndim == 0: return x * y
  return _contract(x, y, (x.ndim - 1,), (y.ndim - 1,), dt)

def outer(a, b, out=None) -> Tensor:
  """Outer product of the flattened arrays (jnp.outer)."""
  if out is not None: raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
  x, y = promote(a, b)
  return x.flatten().unsqueeze(1) * y.flatten().unsqueeze(0)

def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None) -> Tensor:
  """Tensor contraction (jnp.tensordot): `axes` an int (a's last N with b's first N) or a pair of ints or sequences."""
  x, y, dt = _operands(a, b, preferred_element_type)
  if type(axes) is int:
    if axes > min(x.ndim, y.ndim):
      raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks ({tuple(x.shape)} and {tuple(y.shape)})")
    cx, cy = tuple(range(x.ndim - axes, x.ndim)), tuple(range(axes))
  elif isinstance(axes, (tuple, list)) and len(axes) == 2:
    ax1, ax2 = axes
    if isinstance(ax1, int) and isinstance(ax2, int): cx, cy = (canonicalize_axis(ax1, x.ndim),), (canonicalize_axis(ax2, y.ndim),)
    elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
      if len(ax1) != len(ax2): raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} and {ax2}.")
      cx, cy = tuple(canonicalize_axis(i, x.ndim) for i in ax1), tuple(canonicalize_axis(i, y.ndim) for i in ax2)
    else: raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or lists, got {ax1} and {ax2}")
  else: raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of lists/tuples of ints.")
  return _contract(x, y, cx, cy, dt)

def einsum(subscripts, *operands, out=None, optimize="auto", precision=None, preferred_element_type=None,
           _dot_general=None, out_sharding=None) -> Tensor:
  """Einstein summation (jnp.einsum) by tinygrad's Tensor.einsum: explicit or implicit output, ellipses, repeated
  indices (traces, diagonals), any number of operands (multiplied in one broadcast product: `optimize` is ignored).
  Only the string form of the subscripts."""
  if out is not None: raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
  if not isinstance(subscripts, str): raise NotImplementedError("jnp.einsum: only a subscripts string (not the sublist form)")
  dt = to_dtype(preferred_element_type)
  xs = [asarray(x, dt) for x in operands] if dt is not None else promote(*operands)
  dt = dt or xs[0].dtype
  lhs = subscripts.replace(" ", "").split("->")[0].split(",")
  if len(lhs) != len(xs): raise ValueError(f"Invalid number of operands: expected {len(lhs)}, got {len(xs)}")
  sizes: dict[str, tuple[int, int]] = {}
  for i, (s, x) in enumerate(zip(lhs, xs, strict=True)):
    if "..." in s: continue
    if len(s) != x.ndim:
      raise ValueError(f"Einstein sum subscript '{s}' does not contain the correct number of indices for operand {i}.")
    for c, n in zip(s, x.shape, strict=True):
      if c in sizes and sizes[c][1] != n:
        raise ValueError(f"Size of label '{c}' for operand {i} ({n}) does not match previous terms ({sizes[c][1]}).")
      sizes.setdefault(c, (i, int(n)))
  r = Tensor.einsum(subscripts, *xs)
  return r if r.dtype == dt else r.cast(dt)

@composite
def kron(a, b) -> Tensor:
  """Kronecker product (jnp.kron)."""
  x, y = promote(a, b)
  nd = max(x.ndim, y.ndim)
  x, y = x.reshape((1,) * (nd - x.ndim) + tuple(x.shape)), y.reshape((1,) * (nd - y.ndim) + tuple(y.shape))
  xi = x.reshape(tuple(d for s in x.shape for d in (s, 1)))
  yi = y.reshape(tuple(d for s in y.shape for d in (1, s)))
  return (xi * yi).reshape(tuple(s * t for s, t in zip(x.shape, y.shape, strict=True)))

def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> Tensor:
  """Cross product of 3-vectors (2-vectors: z = 0; two 2-vectors give the scalar z component), as jnp.cross."""
  if axis is not None: axisa = axisb = axisc = axis
  x, y = promote(a, b)
  x, y = _move_last(x, axisa), _move_last(y, axisb)
  if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3): raise ValueError("Dimension must be either 2 or 3 for cross product")
  if x.shape[-1] == 2 and y.shape[-1] == 2: return x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]
  a0, a1, b0, b1 = x[..., 0], x[..., 1], y[..., 0], y[..., 1]
  a2 = x[..., 2] if x.shape[-1] == 3 else fill_like(a0, 0)
  b2 = y[..., 2] if y.shape[-1] == 3 else fill_like(b0, 0)
  c = Tensor.stack(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
  ax = canonicalize_axis(axisc, c.ndim)
  return c.permute(*range(1, ax + 1), 0, *range(ax + 1, c.ndim))

@composite
def trace(a, offset=0, axis1: int = 0, axis2: int = 1, dtype=None, out=None) -> Tensor:
  """Sum along a diagonal (jnp.trace); narrow ints sum in the default int, as jnp.sum."""
  if out is not None: raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
  x = asarray(a)
  ax1, ax2 = canonicalize_axis(axis1, x.ndim), canonicalize_axis(axis2, x.ndim)
  if ax1 == ax2: raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
  offset = operator.index(offset)
  n, m = x.shape[ax1], x.shape[ax2]
  x = x.permute(*[i for i in range(x.ndim) if i not in (ax1, ax2)], ax1, ax2)
  # the diagonal as a mask (as JAX does): the sum reads no gathered elements
  mask = (Tensor.arange(m).to(x.device).unsqueeze(0) - Tensor.arange(n).to(x.device).unsqueeze(1)) == offset
  return _sum(mask.where(x, 0), axis=(-2, -1), dtype=dtype)

def matrix_transpose(x, /) -> Tensor:
  """The last two axes swapped (jnp.matrix_transpose)."""
  t = asarray(x)
  if t.ndim < 2: raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={t.ndim}")
  return t.transpose(-2, -1)


# ---- 1-D convolution ---------------------------------------------------------------------------------------------------

def _conv(a: Any, v: Any, mode: str, op: str, preferred_element_type: Any) -> Tensor:
  """JAX's _conv: one lax.conv_general_dilated of the longer operand with the shorter (flipped for convolve)."""
  x, y = asarray(a), asarray(v)
  if x.ndim != 1 or y.ndim != 1: raise ValueError(f"{op}() only support 1-dimensional inputs.")
  dt = to_dtype(preferred_element_type)
  x, y = promote_inexact(x, y) if dt is None else promote(x, y)   # numpy's convolutions are inexact unless asked
  (nx,), (n,) = static_shape(x), static_shape(y)
  if nx == 0 or n == 0:
    raise ValueError(f"{op}: inputs cannot be empty, got shapes {tuple(x.shape)} and {tuple(y.shape)}.")
  reverse = False
  if nx < n: x, y, n, reverse = y, x, nx, op == "correlate"
  if op == "convolve": y = y.flip(0)
  pads = {"valid": (0, 0), "same": (n // 2, n - n // 2 - 1), "full": (n - 1, n - 1)}
  if mode not in pads: raise ValueError("mode must be one of ['full', 'same', 'valid']")
  out = conv_general_dilated(x[None, None, :], y[None, None, :], (1,), [pads[mode]], preferred_element_type=dt)[0, 0]
  return out.flip(0) if reverse else out

def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
  """jnp.convolve: the 1-D convolution sum_j a[k - j] v[j]; mode 'full' (default), 'same' (a's length, centred) or
  'valid' (no padding)."""
  return _conv(a, v, mode, "convolve", preferred_element_type)

def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
  """jnp.correlate: the 1-D cross-correlation sum_j a[k + j] v[j]; mode 'valid' (default), 'same' or 'full'."""
  return _conv(a, v, mode, "correlate", preferred_element_type)

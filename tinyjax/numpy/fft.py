"""tinyjax.numpy.fft: jax.numpy.fft on lax.fft (tinyjax/lax/fft.py), with JAX's argument handling (jax/_src/numpy/fft.py):
the transformed axes are moved last, cropped or zero-padded to `s`/`n`, transformed, scaled by `norm` and moved back."""
from __future__ import annotations
import math, operator
from typing import Any, Sequence
import numpy as np
from tinygrad import Tensor
from tinyjax.complex_array import ComplexArray, is_complex_data, from_data
from tinyjax.lax.fft import fft as lax_fft, FftType
from tinyjax.numpy._core import asarray, default_float, to_dtype
from tinyjax.numpy import _complex, _shape

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

def _array(a: Any) -> Any:
  if isinstance(a, ComplexArray): return a
  if is_complex_data(a): return from_data(a)
  return asarray(a)

def _norm_scale(s: Sequence[int], func_name: str, norm: str | None) -> float:
  if norm is None or norm == "backward": return 1.0
  size = math.prod(s)
  if norm == "ortho": return math.sqrt(size) if func_name.startswith("i") else 1 / math.sqrt(size)
  if norm == "forward": return size if func_name.startswith("i") else 1 / size
  raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')

def _moveaxis(a: Any, src: Sequence[int], dst: Sequence[int]) -> Any:
  return _complex.COMPLEX["moveaxis"](a, src, dst) if isinstance(a, ComplexArray) else _shape.moveaxis(a, src, dst)

def _crop_pad(a: Any, in_s: list[int]) -> Any:
  def one(t: Tensor) -> Tensor:
    t = t[tuple(slice(0, n) for n in in_s)]
    pads = tuple((0, n - m) for n, m in zip(in_s, t.shape, strict=True))
    return t.pad(pads) if any(p for _, p in pads) else t
  return ComplexArray(one(a.re), one(a.im)) if isinstance(a, ComplexArray) else one(a)

def _fft_core(func_name: str, fft_type: FftType, a: Any, s: Sequence[int] | None, axes: Sequence[int] | None, norm: str | None) -> Any:
  full_name = f"jax.numpy.fft.{func_name}"
  arr = _array(a)
  if s is not None:
    s = tuple(map(operator.index, s))
    if any(n <= 0 for n in s): raise ValueError("Shape should be positive.")
  if s is not None and axes is not None and len(s) != len(axes): raise ValueError("Shape and axes have different lengths.")
  orig_axes = axes
  if axes is None: axes = range(arr.ndim) if s is None else range(arr.ndim - len(s), arr.ndim)
  axes = [operator.index(ax) % max(arr.ndim, 1) for ax in axes]
  if len(axes) != len(set(axes)): raise ValueError(f"{full_name} does not support repeated axes. Got axes {tuple(axes)}.")
  last = list(range(arr.ndim - len(axes), arr.ndim))
  moved = orig_axes is not None and axes != last   # (lax.fft transforms the trailing axes)
  if moved:
    arr = _moveaxis(arr, axes, last)
    axes = last
  if s is not None:
    in_s = list(arr.shape)
    for ax, n in zip(axes, s, strict=True): in_s[ax] = n
    if fft_type is FftType.IRFFT: in_s[-1] = in_s[-1] // 2 + 1
    arr = _crop_pad(arr, in_s)
  elif fft_type is FftType.IRFFT:
    s = [arr.shape[ax] for ax in axes[:-1]] + ([max(0, 2 * (arr.shape[axes[-1]] - 1))] if axes else [])
  else: s = [arr.shape[ax] for ax in axes]
  out = lax_fft(arr, fft_type, tuple(s))
  if (scale := _norm_scale(s, func_name, norm)) != 1.0:
    out = ComplexArray(out.re * scale, out.im * scale) if isinstance(out, ComplexArray) else out * scale
  if moved: out = _moveaxis(out, axes, list(orig_axes or ()))
  return out

def _axis_to_axes(func_name: str, fft_type: FftType, a: Any, n: int | None, axis: int, norm: str | None) -> Any:
  if isinstance(axis, (list, tuple)):
    raise ValueError(f"jax.numpy.fft.{func_name} does not support multiple axes. Please use jax.numpy.fft.{func_name}n. Got axis = {axis}.")
  return _fft_core(func_name, fft_type, a, None if n is None else [n], [axis], norm)

def _check_2d(func_name: str, s, axes) -> None:
  if len(axes) != 2: raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes}.")

def fftn(a, s=None, axes=None, norm=None): return _fft_core("fftn", FftType.FFT, a, s, axes, norm)
def ifftn(a, s=None, axes=None, norm=None): return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)
def rfftn(a, s=None, axes=None, norm=None): return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)
def irfftn(a, s=None, axes=None, norm=None): return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)

def fft(a, n=None, axis=-1, norm=None): return _axis_to_axes("fft", FftType.FFT, a, n, axis, norm)
def ifft(a, n=None, axis=-1, norm=None): return _axis_to_axes("ifft", FftType.IFFT, a, n, axis, norm)
def rfft(a, n=None, axis=-1, norm=None): return _axis_to_axes("rfft", FftType.RFFT, a, n, axis, norm)
def irfft(a, n=None, axis=-1, norm=None): return _axis_to_axes("irfft", FftType.IRFFT, a, n, axis, norm)

def hfft(a, n=None, axis=-1, norm=None):
  """The FFT of a signal with Hermitian symmetry (numpy's: irfft of the conjugate, scaled by n)."""
  z = _complex.as_complex(_array(a))
  nn = 2 * (z.shape[axis] - 1) if n is None else n
  scale = {None: nn, "backward": nn, "ortho": math.sqrt(nn), "forward": 1}.get(norm)
  if scale is None: raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
  return irfft(z.conj(), n=nn, axis=axis) * scale

def ihfft(a, n=None, axis=-1, norm=None):
  """The inverse of hfft: the conjugate of rfft, scaled by 1/n."""
  t = asarray(a)
  nn = t.shape[axis] if n is None else n
  scale = {None: 1 / nn, "backward": 1 / nn, "ortho": 1 / math.sqrt(nn), "forward": 1}.get(norm)
  if scale is None: raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
  z = rfft(t, n=nn, axis=axis).conj()
  return ComplexArray(z.re * scale, z.im * scale)

def fft2(a, s=None, axes=(-2, -1), norm=None):
  _check_2d("fft2", s, axes)
  return _fft_core("fft2", FftType.FFT, a, s, axes, norm)

def ifft2(a, s=None, axes=(-2, -1), norm=None):
  _check_2d("ifft2", s, axes)
  return _fft_core("ifft2", FftType.IFFT, a, s, axes, norm)

def rfft2(a, s=None, axes=(-2, -1), norm=None):
  _check_2d("rfft2", s, axes)
  return _fft_core("rfft2", FftType.RFFT, a, s, axes, norm)

def irfft2(a, s=None, axes=(-2, -1), norm=None):
  _check_2d("irfft2", s, axes)
  return _fft_core("irfft2", FftType.IRFFT, a, s, axes, norm)

def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None) -> Tensor:
  """The sample frequencies of an FFT of length n with sample spacing d: [0, 1, ..., -(n//2), ..., -1] / (d n)."""
  if not isinstance(n, (int, np.integer)): raise ValueError(f"The n argument of jax.numpy.fft.fftfreq only takes an int. Got n = {list(n)}.")
  dt = to_dtype(dtype) or default_float()
  k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]).astype(np.float64)
  return asarray(k / (d * n), dt)

def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None) -> Tensor:
  """The non-negative frequencies of an rfft of length n: [0, 1, ..., n//2] / (d n)."""
  if not isinstance(n, (int, np.integer)): raise ValueError(f"The n argument of jax.numpy.fft.rfftfreq only takes an int. Got n = {list(n)}.")
  dt = to_dtype(dtype) or default_float()
  return asarray(np.arange(0, n // 2 + 1, dtype=np.float64) / (d * n), dt)

def _shift(x: Any, axes, inverse: bool) -> Any:
  arr = _array(x)
  axes = tuple(range(arr.ndim)) if axes is None else (axes,) if isinstance(axes, int) else tuple(axes)
  shifts = [(-(arr.shape[ax] // 2) if inverse else arr.shape[ax] // 2) for ax in axes]
  return _complex.COMPLEX["roll"](arr, shifts, axes) if isinstance(arr, ComplexArray) else _shape.roll(arr, shifts, axes)

def fftshift(x, axes=None): return _shift(x, axes, False)
def ifftshift(x, axes=None): return _shift(x, axes, True)

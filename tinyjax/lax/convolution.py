"""lax's convolution helpers beyond conv_general_dilated: conv_transpose and the output-shape functions (JAX's
jax/_src/lax/convolution.py and windowed_reductions.py), which `example_libraries.stax` builds its layers with."""
from __future__ import annotations
from typing import Sequence
import numpy as np
from tinyjax._tg import Tensor
from tinyjax.lax.ops import conv_general_dilated, padtype_to_pads, _conv_perms, _operand

__all__ = ["conv_transpose", "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "conv_general_permutations", "reduce_window_shape_tuple"]

def _stride_dim(d: int, window: int, stride: int) -> int: return max((d - window) // stride + 1, 0)

def conv_general_permutations(dimension_numbers) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
  """Where N, C (O, I for the kernel) and the spatial axes are in each of the three specs."""
  return _conv_perms(dimension_numbers, len(dimension_numbers[0]))

def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1) -> tuple[int, ...]:
  """The output shape of a conv whose shapes are in canonical (N, C, spatial...) / (O, I, spatial...) order."""
  if isinstance(pads, str): pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError(f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, got {len(pads)}.")
  padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads, strict=True)]
  if any(d < 0 for d in padded):
    raise ValueError("Negative padding is larger than the size of the corresponding dimension: "
                     f"got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
  out_space = tuple(_stride_dim(d, int(k), int(s)) for d, k, s in zip(padded, rhs_shape[2:], strides, strict=True))
  n = lhs_shape[0] // batch_group_count if batch_group_count > 1 else lhs_shape[0]
  return (int(n), int(rhs_shape[0])) + out_space

def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple[int, ...]:
  """The output shape of conv_general_dilated (no dilation) in the layout of dimension_numbers."""
  lp, rp, op = conv_general_permutations(dimension_numbers)
  out = conv_shape_tuple(np.take(lhs_shape, lp), np.take(rhs_shape, rp), window_strides, padding)
  return tuple(int(d) for d in np.take(out, np.argsort(op)))

def _conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
  """(before, after) padding of one axis of a transposed convolution, from the forward conv's padding."""
  if padding == "SAME":
    pad_len = k + s - 2
    pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
  elif padding == "VALID":
    pad_len = k + s - 2 + max(k - s, 0)
    pad_a = k - 1
  elif isinstance(padding, tuple):
    pads = tuple(k - p - 1 for p in padding)
    pad_a, pad_len = pads[0], sum(pads)
  else: raise ValueError(f"Invalid padding mode: {padding}")
  return pad_a, pad_len - pad_a

def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple[int, ...]:
  """The output shape of conv_transpose in the layout of dimension_numbers."""
  lp, rp, op = conv_general_permutations(dimension_numbers)
  lhs_t, rhs_t = np.take(lhs_shape, lp), np.take(rhs_shape, rp)
  if isinstance(padding, str): padding = [_conv_transpose_padding(int(k), int(s), padding) for k, s in zip(rhs_t[2:], window_strides, strict=True)]
  pad = [int(np.sum(p)) for p in padding]
  space = [(int(i) - 1) * s - int(k) + 2 + p for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, pad, strict=True)]
  out = (int(lhs_t[0]), int(rhs_t[0])) + tuple(space)
  return tuple(int(d) for d in np.take(out, np.argsort(op)))

_DEFAULT_DN = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}

def conv_transpose(lhs, rhs, strides: Sequence[int], padding, rhs_dilation: Sequence[int] | None = None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False) -> Tensor:
  """lax.conv_transpose: a fractionally strided convolution (lhs dilated by `strides`), with JAX's padding rules and
  TensorFlow's default layouts; transpose_kernel flips the kernel's spatial axes and swaps its I and O axes."""
  x, w = _operand(lhs), _operand(rhs)
  assert x.ndim == w.ndim and x.ndim >= 2
  if dimension_numbers is None:
    if x.ndim not in _DEFAULT_DN: raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = _DEFAULT_DN[x.ndim]
  _, rp, _ = _conv_perms(dimension_numbers, x.ndim)
  k_sdims = [w.shape[a] for a in rp[2:]]
  rdil = tuple(rhs_dilation) if rhs_dilation is not None else (1,) * (w.ndim - 2)
  if use_consistent_padding or (isinstance(padding, str) and padding in {"SAME", "VALID"}):
    eff = [(int(k) - 1) * r + 1 for k, r in zip(k_sdims, rdil, strict=True)]
    rep = [padding] * len(strides) if isinstance(padding, str) else padding
    pads = [_conv_transpose_padding(k, s, p) for k, s, p in zip(eff, strides, rep, strict=True)]
  else: pads = list(padding)
  if transpose_kernel:
    w = w.flip(rp[2:]).transpose(rp[0], rp[1])
  return conv_general_dilated(x, w, (1,) * (x.ndim - 2), pads, tuple(strides), rdil, dimension_numbers,
                              precision=precision, preferred_element_type=preferred_element_type)

def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None) -> tuple[int, ...]:
  """The output shape of reduce_window."""
  def dilate(shape, d): return [0 if n == 0 else 1 + r * (n - 1) for n, r in zip(shape, d, strict=True)]
  if base_dilation is not None: operand_shape = dilate(operand_shape, base_dilation)
  if window_dilation is not None: window_dimensions = dilate(window_dimensions, window_dilation)
  padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(operand_shape, padding, strict=True)]
  return tuple(_stride_dim(d, int(w), int(s)) for d, w, s in zip(padded, window_dimensions, window_strides, strict=True))

"""lax.fft: JAX's FFT primitive (`jax.lax.fft`) on complex arrays (pairs of real Tensors, `tinyjax.complex_array`).

An FFT over the trailing `len(fft_lengths)` axes runs one of two ways:
- **a host call** (`FftCall`) to scipy's pocketfft on the CPU device (JAX's CPU backend calls ducc, pocketfft's
  successor): one node in the graph, whose jvp and vjp are FFTs again (the transposes below, written on the pair of
  real parts), and whose batching moves the batch axis first;
- **tinygrad kernels** (`_kernel_fft`) on other devices (or with `config.update("tinyjax_fft", "kernels")`): the
  Cooley-Tukey "four-step" split n = n1 n2 into DFTs by matmul of size <= 16 and elementwise twiddles, so an FFT is a
  handful of fused kernels and every transform differentiates it as ordinary ops. A prime length above 16 is one DFT
  matmul (O(n^2)).
"""
from __future__ import annotations
import enum, math
from dataclasses import dataclass
from typing import Any, Sequence
import numpy as np
import scipy.fft
from tinygrad import Tensor
from tinyjax._tg import UOp, dtypes, static_shape as _sh, run_on_host, np_dtype, host_buffer, host_value, jit_capturing, \
  row_or_run
from tinyjax.core import is_tracing, as_tensor, fill_like
from tinyjax.config import config
from tinyjax.call_rule import is_zero
from tinyjax.complex_array import ComplexArray, is_complex_data, from_data
from tinyjax.dtypes import to_inexact_dtype, canonical_dtype
from tinyjax.lax.host_call import HostCallRule, host_device

__all__ = ["FftType", "fft"]

class FftType(enum.IntEnum):
  """Which FFT lax.fft computes (JAX's jax.lax.FftType)."""
  FFT = 0     # complex to complex
  IFFT = 1    # its inverse
  RFFT = 2    # real to complex (the non-negative frequencies of the last axis)
  IRFFT = 3   # its inverse (complex to real)

def _fft_type(t: Any) -> FftType:
  if isinstance(t, FftType): return t
  if isinstance(t, str) and t.upper() in FftType.__members__: return FftType[t.upper()]
  if isinstance(t, str): raise ValueError(f"Unknown FFT type '{t}'")
  raise TypeError(f"Unknown FFT type value '{t}'")

def fft(x: Any, fft_type: FftType | str, fft_lengths: Sequence[int]) -> ComplexArray | Tensor:
  """jax.lax.fft: the FFT of the trailing len(fft_lengths) axes of x (JAX's shape checks and dtypes)."""
  typ, lengths = _fft_type(fft_type), tuple(int(n) for n in fft_lengths)
  if typ is FftType.RFFT:
    if isinstance(x, ComplexArray) or is_complex_data(x): raise ValueError("only real valued inputs supported for rfft")
    t = as_tensor(x)
    t = t.cast(to_inexact_dtype(t.dtype)) if t.dtype != to_inexact_dtype(t.dtype) else t
    parts: list[Tensor] = [t.cast(canonical_dtype(t.dtype)) if t.dtype in dtypes.weaks else t]
  else:
    z = _as_complex(x)
    parts = [z.re, z.im]
  if not lengths: return parts[0] if typ is FftType.RFFT else ComplexArray(*parts)
  shape = _sh(parts[0])
  if len(lengths) > len(shape):
    raise ValueError(f"FFT input shape {shape} must have at least as many input dimensions as fft_lengths {lengths}.")
  k = len(lengths)
  if typ is FftType.IRFFT:
    if shape[-k:-1] != lengths[:-1]:
      raise ValueError(f"IRFFT input shape {shape} minor dimensions must be equal to all except the last fft_length, got fft_lengths={lengths}")
  elif shape[-k:] != lengths:
    raise ValueError(f"{typ.name} input shape {shape} minor dimensions must be equal to fft_lengths {lengths}")
  outs = FftCall(int(typ), lengths).call(parts) if _on_host(parts[0]) else _kernel_fft(typ, parts, lengths)
  return outs[0] if typ is FftType.IRFFT else ComplexArray(outs[0], outs[1])

def _as_complex(x: Any) -> ComplexArray:
  if isinstance(x, ComplexArray): return x
  if is_complex_data(x): return from_data(x)
  t = as_tensor(x)
  dt = to_inexact_dtype(t.dtype)
  t = t.cast(canonical_dtype(dt)) if t.dtype != canonical_dtype(dt) else t
  return ComplexArray(t, fill_like(t, 0))

def _on_host(t: Tensor) -> bool:
  mode = config.tinyjax_fft
  if mode == "host": return True
  return mode == "auto" and isinstance(device := host_device(t), str) and device.split(":")[0] == "CPU"

# ---- the host call ------------------------------------------------------------------------------------------------------

try: from numpy.fft import _pocketfft_umath as _pfu   # type: ignore[attr-defined]  # numpy >= 2: numpy.fft's gufuncs
except ImportError: _pfu = None

def _numpy_fft(typ: FftType, a: np.ndarray, lengths: tuple[int, ...]) -> np.ndarray:
  if len(lengths) == 1 and _pfu is not None:
    # numpy.fft's own gufunc loops, called as its functions call them: the FFT's row in compiled code (cpu_graph.Fft)
    # calls the same loops, so a replay's numbers are an eager call's (and a call costs a third of scipy.fft's)
    # (the factor in the data's precision: a Python float would make numpy pick the float64 loop for float32 data)
    n, complex_, real = lengths[0], np.result_type(a.dtype, np.complex64), np.finfo(a.dtype).dtype
    if typ is FftType.RFFT: f, m, dt = (_pfu.rfft_n_odd if n % 2 else _pfu.rfft_n_even), n // 2 + 1, complex_
    elif typ is FftType.IRFFT: f, m, dt = _pfu.irfft, n, real
    else: f, m, dt = _pfu.fft if typ is FftType.FFT else _pfu.ifft, n, complex_
    return f(a, real.type(1 / n if typ in (FftType.IFFT, FftType.IRFFT) else 1), out=np.empty(a.shape[:-1] + (m,), dt))
  if len(lengths) == 1:   # (scipy's 1-D entry points: a third of fftn's overhead at small n)
    if typ is FftType.FFT: return scipy.fft.fft(a)
    if typ is FftType.IFFT: return scipy.fft.ifft(a)
    if typ is FftType.RFFT: return scipy.fft.rfft(a)
    return scipy.fft.irfft(a, n=lengths[0])
  axes = tuple(range(a.ndim - len(lengths), a.ndim))
  if typ is FftType.FFT: return scipy.fft.fftn(a, axes=axes)
  if typ is FftType.IFFT: return scipy.fft.ifftn(a, axes=axes)
  if typ is FftType.RFFT: return scipy.fft.rfftn(a, axes=axes)
  return scipy.fft.irfftn(a, s=lengths, axes=axes)

@dataclass(eq=False)
class FftCall(HostCallRule):
  """lax.fft on the host: the arguments are the real input (RFFT) or the real and imaginary parts, the outputs the
  parts of the result (one real output for IRFFT)."""
  fft_type: int
  fft_lengths: tuple[int, ...]
  name = "fft"

  @property
  def typ(self) -> FftType: return FftType(self.fft_type)

  def out_types(self, xs):
    shape, dt, n = _sh(xs[0]), xs[0].dtype, self.fft_lengths
    if self.typ is FftType.RFFT: return [(shape[:-1] + (n[-1] // 2 + 1,), dt)] * 2
    if self.typ is FftType.IRFFT: return [(shape[:-1] + (n[-1],), dt)]
    return [(shape, dt)] * 2

  def _run(self, vals: list[np.ndarray], outs) -> list[np.ndarray]:
    if self.typ is FftType.RFFT: a = vals[0]
    else:
      a = np.empty(vals[0].shape, np.result_type(vals[0].dtype, np.complex64))
      a.real, a.imag = vals
    r = _numpy_fft(self.typ, a, self.fft_lengths)
    res = [r] if self.typ is FftType.IRFFT else [r.real, r.imag]
    return [v.astype(np_dtype(d), copy=False) for v, (_, d) in zip(res, outs, strict=True)]

  def call(self, xs: list[Tensor]) -> list[Tensor]:
    types = self.out_types(xs)
    if any(0 in s for s, _ in types) or any(0 in _sh(x) for x in xs):
      raise ValueError(f"FFT of an empty array (shape {_sh(xs[0])}, fft_lengths {self.fft_lengths})")
    if not is_tracing() and not jit_capturing() and isinstance(device := host_device(xs[0]), str):
      # eager: computed now, as JAX dispatches an op (a host call's graph would be scheduled anew at each call)
      # the inputs' buffers read in place, a transpose (jnp.fft's axes moved last) as a numpy view: no copy kernel
      if todo := [x for x in xs if host_value(x) is None]: Tensor.realize(*todo)
      vals = [host_value(x) for x in xs]
      outs = [host_buffer(r, device) for r in self._run([x.numpy() if v is None else v for x, v in zip(xs, vals, strict=True)], types)]
      if all(o is not None for o in outs): return outs  # type: ignore[return-value]
    return super().call(xs)

  def executor(self, ins, outs):
    shapes = [s for s, _ in outs] + [s for s, _ in ins]
    def run(bufs: list[UOp]) -> None: run_on_host(bufs, len(outs), shapes, lambda vals: self._run(vals, outs))
    # one axis, in float32 or float64: in a replay or a loop's step made into command rows (on the CPU), a row calling
    # numpy's pocketfft loop from compiled code (no Python per call)
    if len(self.fft_lengths) != 1 or _pfu is None or {d for _, d in ins + outs} not in ({dtypes.float32}, {dtypes.float64}) \
       or 0 in ins[0][0]: return run
    return row_or_run(run, "Fft", (int(self.typ), ins[0][1] == dtypes.float64, math.prod(ins[0][0][:-1]), ins[0][0][-1], outs[0][0][-1]))

  # The derivatives act on the pair of real parts: the jvp of a linear map is the map, its vjp the transpose of the
  # real-linear map, which for a complex-linear A is A^H (tinyjax.vjp conjugates at the boundary: JAX's convention).
  def jvp(self, xs, ts):
    if all(is_zero(t) for t in ts): return [None] * len(self.out_types(xs))
    return self.call([x.zeros_like() if is_zero(t) else t for x, t in zip(xs, ts, strict=True)])

  def vjp(self, xs, cts):
    outs = self.out_types(xs)
    if all(c is None for c in cts): return [None] * len(xs)
    cts = [Tensor.zeros(*s, dtype=d, device=xs[0].device) if c is None else c for c, (s, d) in zip(cts, outs, strict=True)]
    n = self.fft_lengths
    size = math.prod(n)
    if self.typ is FftType.FFT: return [g * size for g in FftCall(FftType.IFFT, n).call(cts)]   # F^H = N ifft
    if self.typ is FftType.IFFT: return [g / size for g in FftCall(FftType.FFT, n).call(cts)]   # (ifft)^H = fft / N
    if self.typ is FftType.RFFT:
      # the first n//2 + 1 rows of F: the transpose pads the cotangent with zeros to the full length, applies F^H and
      # keeps the real part (the input is real)
      pad = ((0, 0),) * (cts[0].ndim - 1) + ((0, n[-1] - _sh(cts[0])[-1]),)
      full = [c.pad(pad) for c in cts]
      return [FftCall(FftType.IFFT, n).call(full)[0] * size]
    # IRFFT: x_j = (1/N) sum_k c_k Re(y_k e^{2 pi i jk/n}) with c_k = 2 but for the bins with no mirror image (0, and
    # n/2 for an even n): the transpose is c_k / N times the rfft of the cotangent
    re, im = FftCall(FftType.RFFT, n).call([cts[0]])
    m = n[-1] // 2 + 1
    weight = np.full(m, 2.0)
    weight[0] = 1.0
    if n[-1] % 2 == 0: weight[-1] = 1.0
    w = Tensor(weight / size, dtype=re.dtype, device=re.device).reshape((1,) * (re.ndim - 1) + (m,))
    return [re * w, im * w]

  def batched(self, flags, size): return self.batched_leading(flags, size)

# ---- tinygrad kernels ------------------------------------------------------------------------------------------------------

_DIRECT = 16   # lengths up to this are one DFT matmul

def _twiddles(n: int, inverse: bool, dt, device) -> tuple[Tensor, Tensor]:
  """cos and sin of 2 pi jk / n (the DFT matrix's parts; its imaginary part is -sin forward, +sin inverse)."""
  jk = np.outer(np.arange(n), np.arange(n)) % n
  ang = 2 * np.pi * jk / n
  s = np.sin(ang) * (1 if inverse else -1)
  return Tensor(np.cos(ang), dtype=dt, device=device), Tensor(s, dtype=dt, device=device)

def _split(n: int) -> int:
  """n1 for n = n1 n2, n1 near sqrt(n) (1 for a prime)."""
  best = 1
  for d in range(2, int(math.isqrt(n)) + 1):
    if n % d == 0: best = d
  return best

def _dft_last(re: Tensor, im: Tensor, inverse: bool) -> tuple[Tensor, Tensor]:
  """The unnormalised DFT (inverse: with e^{+i...}) of the last axis of re + i im."""
  n = _sh(re)[-1]
  if n == 1: return re, im
  n1 = _split(n)
  if n <= _DIRECT or n1 == 1:
    c, s = _twiddles(n, inverse, re.dtype, re.device)
    return re @ c - im @ s, re @ s + im @ c
  n2 = n // n1
  lead = _sh(re)[:-1]
  # x[j1 n2 + j2]: DFT over j1 (length n1), twiddle e^{-+2 pi i j2 k1 / n}, DFT over j2 (length n2), X[k1 + n1 k2]
  r, i = re.reshape(*lead, n1, n2).transpose(-1, -2), im.reshape(*lead, n1, n2).transpose(-1, -2)   # (..., j2, j1)
  r, i = _dft_last(r, i, inverse)                                                                       # (..., j2, k1)
  ang = 2 * np.pi * np.outer(np.arange(n2), np.arange(n1)) / n
  tc = Tensor(np.cos(ang), dtype=re.dtype, device=re.device)
  ts = Tensor(np.sin(ang) * (1 if inverse else -1), dtype=re.dtype, device=re.device)
  r, i = r * tc - i * ts, r * ts + i * tc
  r, i = _dft_last(r.transpose(-1, -2), i.transpose(-1, -2), inverse)                                   # (..., k1, k2)
  return r.transpose(-1, -2).reshape(*lead, n), i.transpose(-1, -2).reshape(*lead, n)

def _fft_axes(re: Tensor, im: Tensor, axes: range, inverse: bool) -> tuple[Tensor, Tensor]:
  """The DFT of `axes` (inverse: scaled by 1/N, as ifftn), one axis at a time moved last."""
  nd = re.ndim
  for ax in axes:
    perm = tuple(i for i in range(nd) if i != ax) + (ax,)
    back = tuple(int(np.argsort(perm)[i]) for i in range(nd))
    r, i = _dft_last(re.permute(perm), im.permute(perm), inverse)
    re, im = r.permute(back), i.permute(back)
  if inverse:
    size = math.prod(_sh(re)[ax] for ax in axes)
    re, im = re / size, im / size
  return re, im

def _kernel_fft(typ: FftType, parts: list[Tensor], n: tuple[int, ...]) -> list[Tensor]:
  k = len(n)
  trailing = range(parts[0].ndim - k, parts[0].ndim)
  if typ is FftType.FFT or typ is FftType.IFFT: return list(_fft_axes(parts[0], parts[1], trailing, typ is FftType.IFFT))
  if typ is FftType.RFFT:
    re, im = _fft_axes(parts[0], fill_like(parts[0], 0), trailing, False)
    m = n[-1] // 2 + 1
    return [re[..., :m], im[..., :m]]
  # IRFFT: the other axes' inverse FFT, then the last axis' spectrum completed by Hermitian symmetry (the imaginary
  # parts of the bins with no mirror image dropped, as numpy's irfft), its inverse FFT's real part
  re, im = parts
  if k > 1: re, im = _fft_axes(re, im, range(re.ndim - k, re.ndim - 1), True)
  m, last = _sh(re)[-1], n[-1]
  take = min(m, last // 2 + 1)
  re, im = re[..., :take], im[..., :take]
  if take < last // 2 + 1:
    pad = ((0, 0),) * (re.ndim - 1) + ((0, last // 2 + 1 - take),)
    re, im = re.pad(pad), im.pad(pad)
  keep = np.ones(last // 2 + 1)
  keep[0] = 0
  if last % 2 == 0: keep[-1] = 0
  im = im * Tensor(keep, dtype=im.dtype, device=im.device)
  mirror = (last - 1) // 2   # the bins 1 .. mirror have an image at last - k
  full_re = re.cat(re[..., 1:mirror + 1].flip(-1), dim=-1)
  full_im = im.cat(-im[..., 1:mirror + 1].flip(-1), dim=-1)
  out, _ = _fft_axes(full_re, full_im, range(full_re.ndim - 1, full_re.ndim), True)
  return [out]

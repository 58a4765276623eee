# Source: https://github.com/google-research/perch/blob/main/chirp/models/cwt.py (Apache 2.0), with the frequency-domain
#   half of test_domain_filtering from chirp/tests/filter_bank_test.py (same repository) as its driver
# Exercises: signal filtering in the frequency domain: a bank of Gabor filters (and Morlet wavelets) evaluated on
#   jnp.fft.fftfreq scaled per filter, multiplied with jnp.fft.fft of a batch of signals along axis -2 and brought back
#   with jnp.fft.ifft (complex output: the continuous wavelet transform); L1 and L2 normalizations (jnp.sqrt of the
#   scales); the filters' time-domain forms (jnp.exp(1j * t * sigma)), sampled and conjugated as convolve_filter does
# Adapted: cwt.py without melspec_params (it needs chirp.signal), morse_wavelet (jax.scipy.special.gammaln) and
#   convolve_filter (lax.conv_general_dilated of complex arrays and lax.conv_dimension_numbers, which tinyjax does not
#   have); the test's signal and filters, filtered in the frequency domain for both normalizations and by Morlet
#   wavelets, the time-domain filters sampled as convolve_filter does; values left in the globals instead of asserted

"""Continuous wavelet transforms.

This module contains filters (Gabor, sinc) and wavelets (Morlet, Morse) that can
be used in a continuous wavelet transform.

Filtering can be done through convolution in the time-domain or by
multiplication in the frequency domain. Note that some filters are
non-differentiable in the frequency domain (sinc filters) whereas others don't
have an analytic representation in the time domain (Morse wavelets). Hence we
use both approaches.
"""
import enum
from typing import Callable

import numpy as np
from jax import lax
from jax import numpy as jnp
from jax import scipy as jsp


class Domain(enum.Enum):
  TIME = "time"
  FREQUENCY = "frequency"


class Normalization(enum.Enum):
  L1 = "l1"
  L2 = "l2"


def gabor_filter(
    sigma: float, domain: Domain, normalization: Normalization
) -> Callable[[jnp.ndarray], jnp.ndarray]:
  """A one-dimensional Gabor filter.

  The Gabor filter is a complex sinusoid modulated by a Gaussian. Its frequency
  response is a Gaussian with mean sigma / 2π and standard deviation 1 / 2π.
  """
  if domain is Domain.TIME:
    if normalization is Normalization.L1:
      norm = 1 / jnp.sqrt(2 * jnp.pi)
    elif normalization is Normalization.L2:
      norm = jnp.pi ** (-1 / 4)

    def _gabor_filter(t: jnp.ndarray) -> jnp.ndarray:
      sinusoids = jnp.exp(1j * t * sigma)
      gaussian = jnp.exp(-1 / 2 * t**2)
      return norm * gaussian * sinusoids

  elif domain is Domain.FREQUENCY:
    if normalization is Normalization.L1:
      norm = 1.0
    elif normalization is Normalization.L2:
      norm = jnp.pi ** (1 / 4) * jnp.sqrt(2)

    def _gabor_filter(f: jnp.ndarray) -> jnp.ndarray:
      gaussian = jnp.exp(-1 / 2 * (sigma - f * 2 * jnp.pi) ** 2)
      return norm * gaussian

  return _gabor_filter


def sinc_filter(
    sigma: float, domain: Domain, normalization: Normalization
) -> Callable[[jnp.ndarray], jnp.ndarray]:
  """A sinc filter, parametrized by its central frequency."""
  if normalization is Normalization.L1:
    raise ValueError("sinc filter does not support L1 normalization")
  if domain is Domain.TIME:

    def _sinc_filter(t: jnp.ndarray) -> jnp.ndarray:
      shift = jnp.exp(2j * jnp.pi * t * sigma)
      # NOTE: Normalized sinc function
      return shift * jnp.sinc(t)

  elif domain is Domain.FREQUENCY:

    def _sinc_filter(f: jnp.ndarray) -> jnp.ndarray:
      return jnp.where(jnp.abs(f - sigma) < 1 / 2, 1.0, 0.0)

  return _sinc_filter


def morlet_wavelet(
    sigma: float, domain: Domain, normalization: Normalization
) -> Callable[[jnp.ndarray], jnp.ndarray]:
  """A Morlet wavelet: a sinusoid modulated by a Gaussian, shifted to zero mean."""
  if normalization is Normalization.L1:
    # TODO(bartvm): Does an expression exist for this?
    raise NotImplementedError

  # Follows notation from, e.g., https://en.wikipedia.org/wiki/Morlet_wavelet
  kappa = jnp.exp(-1 / 2 * sigma**2)
  c = (1 + jnp.exp(-(sigma**2)) - 2 * jnp.exp(-3 / 4 * sigma**2)) ** (
      -1 / 2
  )

  if domain is Domain.TIME:

    def _morlet_wavelet(t: jnp.ndarray) -> jnp.ndarray:
      return (
          c
          * jnp.pi ** (-1 / 4)
          * jnp.exp(-1 / 2 * t**2)
          * (jnp.exp(1j * sigma * t) - kappa)
      )

  elif domain is Domain.FREQUENCY:

    def _morlet_wavelet(f: jnp.ndarray) -> jnp.ndarray:
      f = jnp.pi * 2 * f
      return (
          c
          * jnp.pi ** (1 / 4)
          * jnp.sqrt(2)
          * (
              jnp.exp(-1 / 2 * (sigma - f) ** 2)
              - kappa * jnp.exp(-1 / 2 * f**2)
          )
      )

  return _morlet_wavelet


def multiply_filter(
    filter_: Callable[[jnp.ndarray], jnp.ndarray],
    signal: jnp.ndarray,
    scale_factors: jnp.ndarray,
    normalization: Normalization,
) -> jnp.ndarray:
  """Applies a filter to a signal in the frequency domain.

  This takes the DFT of the given signals and applies the given filter.
  """
  *_, num_frames, _ = signal.shape
  fs = jnp.fft.fftfreq(num_frames)
  fs = fs[:, jnp.newaxis] * scale_factors
  # TODO(bartvm): TF Lite might not support IFFT as a built-in operation, but
  # IFFT is just an FFT with the sign of the inputs changed so easy to adapt to.
  # TODO(bartvm): Note that the signal is real-valued, so using FFT might do
  # unnecessary computation. Might be faster to use RFFT and then take the
  # complex conjugates manually.
  filtered_signal = jnp.fft.ifft(
      jnp.fft.fft(signal, axis=-2) * filter_(fs), axis=-2
  )
  if normalization is Normalization.L1:
    norm = 1
  elif normalization is Normalization.L2:
    norm = jnp.sqrt(scale_factors)
  return norm * filtered_signal


# ---- chirp/tests/filter_bank_test.py, test_domain_filtering (frequency domain) ----

num_filters = 3
signal_length_frames = 4_096
window_size_frames = 801

# Construct a non-stationary signal
ts = np.linspace(0, 2 * np.pi * 73, signal_length_frames)
signal = np.sin(ts * (1 + np.sin(ts) * 0.1))
signal = signal[np.newaxis, :, np.newaxis]

# Sample random filters
sigma = np.linspace(0.1, 10, num_filters)
scale_factors = np.linspace(50, 100, num_filters)

filtered = {}
for normalization in (Normalization.L1, Normalization.L2):
  # Apply the filters in the frequency domain
  freq_filter = gabor_filter(sigma, Domain.FREQUENCY, normalization)
  filtered[normalization.value] = multiply_filter(freq_filter, signal, scale_factors, normalization)

  # The time-domain filters, sampled as convolve_filter samples them
  time_filter = gabor_filter(sigma, Domain.TIME, normalization)
  ts_window = jnp.arange(-(window_size_frames // 2), (window_size_frames + 1) // 2)
  ts_window = ts_window[:, jnp.newaxis] / scale_factors
  norm = 1 / scale_factors if normalization is Normalization.L1 else 1 / jnp.sqrt(scale_factors)
  filtered["time_" + normalization.value] = norm * jnp.conj(time_filter(ts_window))

morlet = multiply_filter(morlet_wavelet(sigma, Domain.FREQUENCY, Normalization.L2), signal, scale_factors,
                         Normalization.L2)

# Ignore boundary effects
middle = slice(window_size_frames // 2, -window_size_frames // 2)
print(jnp.abs(filtered["l1"][:, middle]).mean(axis=1), jnp.abs(filtered["l2"][:, middle]).max(axis=1))
print(jnp.angle(morlet[0, 1000, 1:]))   # (the first filter hardly passes this signal: its phase is rounding)

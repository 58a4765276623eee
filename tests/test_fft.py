"""jnp.fft against jax.numpy.fft: every function with n/s, axis/axes and norm, on the host call (pocketfft, the CPU
default) and on tinygrad kernels (`tinyjax_fft="kernels"`, what other devices run); under vmap, jvp, grad and jit; x64
off (complex64) too; JAX's errors."""
import contextlib
import numpy as np
import pytest
import jax, jax.numpy as jxn
import tinyjax, tinyjax.numpy as jnp
from tinyjax import lax
from tinygrad import Tensor
from conftest import rnd, same_error, kernel_count
from jnp_table import x64_off

X = rnd(3, 8)
Z = rnd(3, 8, seed=1) + 1j * rnd(3, 8, seed=2)
X3 = rnd(2, 6, 5, seed=3)

@contextlib.contextmanager
def fft_impl(mode):
  old = tinyjax.config.tinyjax_fft
  tinyjax.config.update("tinyjax_fft", mode)
  try: yield
  finally: tinyjax.config.update("tinyjax_fft", old)

def close(got, want, rtol=1e-10, atol=1e-10):
  want, got = np.asarray(want), np.asarray(got)
  assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
  np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

CASES = [
  ("fft", lambda m: m.fft.fft(Z)), ("fft-real", lambda m: m.fft.fft(X, axis=0)), ("fft-n", lambda m: m.fft.fft(Z, n=5)),
  ("fft-pad", lambda m: m.fft.fft(Z, n=12, norm="ortho")), ("ifft", lambda m: m.fft.ifft(Z, norm="forward")),
  ("rfft", lambda m: m.fft.rfft(X)), ("rfft-odd", lambda m: m.fft.rfft(X, n=7, axis=-1)),
  ("irfft", lambda m: m.fft.irfft(Z)), ("irfft-n", lambda m: m.fft.irfft(Z, n=9, axis=1, norm="ortho")),
  ("fft2", lambda m: m.fft.fft2(Z)), ("ifft2", lambda m: m.fft.ifft2(X3)), ("rfft2", lambda m: m.fft.rfft2(X3, norm="forward")),
  ("irfft2", lambda m: m.fft.irfft2(Z, s=(3, 6))), ("fftn", lambda m: m.fft.fftn(X3, axes=(0, 2))),
  ("ifftn", lambda m: m.fft.ifftn(Z, s=(4, 4))), ("rfftn", lambda m: m.fft.rfftn(X3)),
  ("irfftn", lambda m: m.fft.irfftn(m.fft.rfftn(X3), s=X3.shape)),
  ("hfft", lambda m: m.fft.hfft(Z)), ("ihfft", lambda m: m.fft.ihfft(X)),
  ("fftshift", lambda m: m.fft.fftshift(Z)), ("ifftshift", lambda m: m.fft.ifftshift(X3, axes=(1,))),
  ("fftfreq", lambda m: m.fft.fftfreq(7, 0.5)), ("rfftfreq", lambda m: m.fft.rfftfreq(8)),
  ("lax-fft", lambda m: (lax if m is jnp else jax.lax).fft(Z, "fft", (8,))),
]

@pytest.mark.parametrize("mode", ["host", "kernels"])
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_values(name, fn, mode):
  with fft_impl(mode): close(fn(jnp), fn(jxn))

def test_a_device_less_input_is_a_pocketfft_call_on_the_cpu():
  # a constant graph (folded on the host, no device) computed eagerly: its FFT ran as tinygrad's DFT kernels (the KS
  # port's rfft of its initial condition), as on a device without the host call; now pocketfft, as JAX on the CPU
  for make in (lambda np_: np_.fft.rfft(np_.sin(np_.arange(16) * 0.3)), lambda np_: np_.fft.fft(np_.cos(np_.arange(12) / 5.0)),
               lambda np_: np_.fft.irfft(np_.fft.rfft(np_.arange(8) * 0.5))):
    assert jnp.sin(jnp.arange(3) * 0.3).device is None
    out = []
    assert kernel_count(lambda: out.append(np.asarray(make(jnp)))) == 0
    np.testing.assert_allclose(out[0], np.asarray(make(jxn)), rtol=1e-14, atol=1e-14)


def test_kernel_lengths():
  """The kernels' split n = n1 n2, recursively, for lengths with several factors, a prime, and a power of 2."""
  with fft_impl("kernels"):
    for n in (1, 2, 17, 30, 64, 105, 256):
      z = rnd(2, n, seed=n) + 1j * rnd(2, n, seed=n + 1)
      close(jnp.fft.fft(z), jxn.fft.fft(z), rtol=1e-9, atol=1e-9)

def loss(m, x, z):
  y = m.fft.irfft(m.fft.rfft(x) * z[:, :5], n=8) + m.fft.ifft(m.fft.fft2(z)).real
  return m.sum(y ** 2) + m.sum(m.abs(m.fft.fft(z, n=6)) ** 2)

@pytest.mark.parametrize("mode", ["host", "kernels"])
def test_grad_jvp(mode):
  with fft_impl(mode):
    g = tinyjax.grad(lambda x, z: loss(jnp, x, z), argnums=(0, 1))(X, Z)
    w = jax.grad(lambda x, z: loss(jxn, x, z), argnums=(0, 1))(X, Z)
    close(g[0], w[0], rtol=1e-9)
    close(g[1], w[1], rtol=1e-9)
    tx, tz = rnd(3, 8, seed=7), Z[::-1]
    p, t = tinyjax.jvp(lambda x, z: loss(jnp, x, z), (X, Z), (tx, tz))
    wp, wt = jax.jvp(lambda x, z: loss(jxn, x, z), (X, Z), (tx, tz))
    close(p, wp)
    close(t, wt, rtol=1e-9)

def test_vmap_jit():
  close(tinyjax.vmap(jnp.fft.rfft, in_axes=1)(X3), jax.vmap(jxn.fft.rfft, in_axes=1)(X3))
  close(tinyjax.vmap(lambda z: jnp.fft.ifft(z, n=4))(Z), jax.vmap(lambda z: jxn.fft.ifft(z, n=4))(Z))
  f = tinyjax.jit(lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * 2j, n=8))
  for _ in range(2): close(f(X), jxn.fft.irfft(jxn.fft.rfft(X) * 2j, n=8))
  close(tinyjax.vmap(tinyjax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 3)))(X),
        jax.vmap(jax.grad(lambda x: jxn.sum(jxn.abs(jxn.fft.fft(x)) ** 3)))(X), rtol=1e-9)

def test_x64_off():
  with x64_off():
    x = X.astype(np.float32)
    got, want = jnp.fft.rfft(x), jxn.fft.rfft(x)
    assert np.dtype(got.dtype) == np.complex64
    close(got, want, rtol=1e-6, atol=1e-6)
    close(jnp.fft.irfft(got), jxn.fft.irfft(want), rtol=1e-6, atol=1e-6)
    close(jnp.fft.fftfreq(4), jxn.fft.fftfreq(4))

def test_eager_host_fft_launches_no_kernel():
  """On the CPU an eager FFT of a computed array is pocketfft on the host: no kernel, its result in new buffers."""
  t = Tensor(X).realize()
  out = []
  assert kernel_count(lambda: out.append(jnp.fft.rfft(t))) == 0
  close(out[0], jxn.fft.rfft(X))

def test_errors():
  same_error(lambda: jnp.fft.fft(X, axis=(0, 1)), lambda: jxn.fft.fft(X, axis=(0, 1)))
  same_error(lambda: jnp.fft.fftn(X, s=(2,), axes=(0, 1)), lambda: jxn.fft.fftn(X, s=(2,), axes=(0, 1)))
  same_error(lambda: jnp.fft.fft(X, n=0), lambda: jxn.fft.fft(X, n=0))
  same_error(lambda: jnp.fft.fftn(X, axes=(0, 0)), lambda: jxn.fft.fftn(X, axes=(0, 0)))
  same_error(lambda: jnp.fft.fft2(X3, axes=(0, 1, 2)), lambda: jxn.fft.fft2(X3, axes=(0, 1, 2)))
  same_error(lambda: jnp.fft.fft(X, norm="nope"), lambda: jxn.fft.fft(X, norm="nope"))
  same_error(lambda: lax.fft(Z, "rfft", (8,)), lambda: jax.lax.fft(Z, "rfft", (8,)))
  same_error(lambda: lax.fft(Z, "fft", (4,)), lambda: jax.lax.fft(Z, "fft", (4,)))
  with pytest.raises(ValueError, match="tinyjax_fft must be one of"): tinyjax.config.update("tinyjax_fft", "gpu")

def test_other_devices_run_the_kernels():
  """A device other than the CPU (tinygrad's PYTHON emulator here) runs the kernel FFT, grad included."""
  x = X.astype(np.float32)[:2, :6]
  t = Tensor(x, device="PYTHON")
  z = jnp.fft.rfft(t)
  assert z.device == "PYTHON"
  close(z, jxn.fft.rfft(x), rtol=1e-5, atol=1e-5)
  g = tinyjax.grad(lambda v: jnp.sum(jnp.abs(jnp.fft.fft(v * 1j)) ** 2))(t)
  close(g, jax.grad(lambda v: jxn.sum(jxn.abs(jxn.fft.fft(v * 1j)) ** 2))(x), rtol=1e-5, atol=1e-5)

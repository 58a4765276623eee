# Source: https://github.com/derivon-ai/omnibias/blob/main/packages/omnibias-pinn/src/omnibias/pinn/operator/jax/fno.py
#   (Apache 2.0: SPDX header and packages/omnibias-pinn/LICENSE, its "permissive tier"; the repository's other tier is
#   AGPL, not used here), with the gelu of packages/omnibias-jax/src/omnibias/jax/activations.py (same tier)
# Exercises: Fourier neural operators in plain JAX (frozen dataclasses, FNO1d registered with
#   jax.tree_util.register_pytree_node): rfft / rfft2 of a batch of fields, their low modes multiplied by learned complex
#   weights (weight_real + 1j * weight_imag, einsum "bim,iom->bom" and "bixy,ioxy->boxy"), written into jnp.zeros with
#   .at[].set, irfft(n=) / irfft2(s=) back; gelu through jax.scipy.special.erf; float64 weights asked for with x64 off
#   (float32, as JAX); both trained 3 steps of SGD with value_and_grad under jit on the heat equation's solution
#   operator, made with fftfreq / rfftfreq and rfft2 -> exp(-D k^2 t) -> irfft2
# Adapted: `from omnibias.jax.activations import JaxActivationSpec, get_activation` replaced by the gelu of
#   activations.py (_INV_SQRT_2, _normal_cdf, _gelu_forward, verbatim) in a two-line stand-in for its registry; a driver
#   appended (not in the source): FNO2d and SpectralConv2d registered as pytrees as fno.py does for FNO1d, heat-equation
#   data on 32 points and 16 x 16 grids, small models (modes 4, width 8, 2 layers), 3 SGD steps each

# SPDX-License-Identifier: Apache-2.0
# Copyright (C) 2026 Derivon
"""Fourier Neural Operator (JAX) -- bit-identical twin of the torch FNO.

Derivatives remain FFT-based and periodic-grid-bound; the closed-form claim
does not transfer. See the torch module docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array
from jax.scipy.special import erf

# ---- stand-in for omnibias.jax.activations (its gelu, verbatim, without the registry) ----
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


def _normal_cdf(z: Array) -> Array:
    return 0.5 * (1.0 + erf(z * _INV_SQRT_2))


def _gelu_forward(z: Array) -> Array:
    return z * _normal_cdf(z)


@dataclass(frozen=True)
class JaxActivationSpec:
    name: str
    forward: Any


def get_activation(name: str | JaxActivationSpec) -> JaxActivationSpec:
    return name if isinstance(name, JaxActivationSpec) else {"gelu": JaxActivationSpec("gelu", _gelu_forward)}[name]
# ---- end of the stand-in ----


@dataclass(frozen=True)
class SpectralConv1d:
    """Complex spectral convolution on the leading ``modes`` Fourier modes."""

    weight_real: Array  # (in, out, modes)
    weight_imag: Array
    modes: int

    def __call__(self, x: Array) -> Array:
        if x.ndim != 3:
            raise ValueError(f"SpectralConv1d expects (B, C, N); got {tuple(x.shape)}")
        n = x.shape[-1]
        x_ft = jnp.fft.rfft(x, axis=-1)
        m = min(self.modes, x_ft.shape[-1])
        w = self.weight_real[..., :m] + 1j * self.weight_imag[..., :m]
        out_ft = jnp.zeros(
            (x.shape[0], w.shape[1], x_ft.shape[-1]), dtype=x_ft.dtype
        )
        contracted = jnp.einsum("bim,iom->bom", x_ft[:, :, :m], w)
        out_ft = out_ft.at[:, :, :m].set(contracted)
        return jnp.fft.irfft(out_ft, n=n, axis=-1)


@dataclass(frozen=True)
class FNO1d:
    """1-D Fourier Neural Operator on a periodic grid (JAX)."""

    lift_w: Array
    lift_b: Array
    proj_w: Array
    proj_b: Array
    spectral: tuple[SpectralConv1d, ...]
    pointwise_w: tuple[Array, ...]
    pointwise_b: tuple[Array, ...]
    spec: JaxActivationSpec

    def __call__(self, u0: Array) -> Array:
        if u0.ndim == 2:
            u0 = u0[..., None]
        h = u0 @ self.lift_w.T + self.lift_b
        h = jnp.transpose(h, (0, 2, 1))
        for sc, pw, pb in zip(
            self.spectral, self.pointwise_w, self.pointwise_b, strict=True
        ):
            h1 = sc(h)
            h2 = jnp.transpose(
                jnp.transpose(h, (0, 2, 1)) @ pw.T + pb, (0, 2, 1)
            )
            h = self.spec.forward(h1 + h2)
        out = jnp.transpose(h, (0, 2, 1)) @ self.proj_w.T + self.proj_b
        return out


def _flatten_fno(
    net: FNO1d,
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    leaves: list[Any] = [net.lift_w, net.lift_b, net.proj_w, net.proj_b]
    for sc in net.spectral:
        leaves.extend([sc.weight_real, sc.weight_imag])
    leaves.extend(net.pointwise_w)
    leaves.extend(net.pointwise_b)
    aux = (net.spec, len(net.spectral), net.spectral[0].modes)
    return tuple(leaves), aux


def _unflatten_fno(aux: tuple[Any, ...], leaves: tuple[Any, ...]) -> FNO1d:
    spec, n_layers, modes = aux
    lift_w, lift_b, proj_w, proj_b = leaves[:4]
    idx = 4
    spectral = []
    for _ in range(n_layers):
        spectral.append(
            SpectralConv1d(
                weight_real=leaves[idx], weight_imag=leaves[idx + 1], modes=modes
            )
        )
        idx += 2
    pointwise_w = leaves[idx : idx + n_layers]
    pointwise_b = leaves[idx + n_layers : idx + 2 * n_layers]
    return FNO1d(
        lift_w=lift_w,
        lift_b=lift_b,
        proj_w=proj_w,
        proj_b=proj_b,
        spectral=tuple(spectral),
        pointwise_w=tuple(pointwise_w),
        pointwise_b=tuple(pointwise_b),
        spec=spec,
    )


jax.tree_util.register_pytree_node(FNO1d, _flatten_fno, _unflatten_fno)


def make_fno1d(
    *,
    modes: int = 8,
    width: int = 32,
    n_layers: int = 4,
    in_channels: int = 1,
    out_channels: int = 1,
    base: str | JaxActivationSpec = "gelu",
    seed: int = 0,
    dtype: Any = jnp.float64,
) -> FNO1d:
    """Build a randomly-initialised :class:`FNO1d` (JAX)."""
    if n_layers < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    spec = get_activation(base)
    key = jax.random.PRNGKey(seed)

    def _linear(k: Array, din: int, dout: int) -> tuple[Array, tuple[Array, Array]]:
        k, wk = jax.random.split(k)
        scale = 1.0 / math.sqrt(din)
        return k, (
            jax.random.normal(wk, (dout, din), dtype=dtype) * scale,
            jnp.zeros((dout,), dtype=dtype),
        )

    key, (lift_w, lift_b) = _linear(key, in_channels, width)
    key, (proj_w, proj_b) = _linear(key, width, out_channels)
    spectral = []
    pointwise_w = []
    pointwise_b = []
    scale = 1.0 / (width * width)
    for _ in range(n_layers):
        key, rk, ik, pk = jax.random.split(key, 4)
        spectral.append(
            SpectralConv1d(
                weight_real=scale
                * jax.random.normal(rk, (width, width, modes), dtype=dtype),
                weight_imag=scale
                * jax.random.normal(ik, (width, width, modes), dtype=dtype),
                modes=modes,
            )
        )
        key, (pw, pb) = _linear(key, width, width)
        pointwise_w.append(pw)
        pointwise_b.append(pb)
    return FNO1d(
        lift_w=lift_w,
        lift_b=lift_b,
        proj_w=proj_w,
        proj_b=proj_b,
        spectral=tuple(spectral),
        pointwise_w=tuple(pointwise_w),
        pointwise_b=tuple(pointwise_b),
        spec=spec,
    )


@dataclass(frozen=True)
class SpectralConv2d:
    """Complex spectral convolution on the leading ``modes_x x modes_y`` modes."""

    weight_real: Array
    weight_imag: Array
    modes_x: int
    modes_y: int

    def __call__(self, x: Array) -> Array:
        if x.ndim != 4:
            raise ValueError(f"SpectralConv2d expects (B, C, H, W); got {tuple(x.shape)}")
        h, w = int(x.shape[-2]), int(x.shape[-1])
        x_ft = jnp.fft.rfft2(x, axes=(-2, -1))
        mx = min(self.modes_x, x_ft.shape[-2])
        my = min(self.modes_y, x_ft.shape[-1])
        wgt = self.weight_real[..., :mx, :my] + 1j * self.weight_imag[..., :mx, :my]
        out_ft = jnp.zeros(
            (x.shape[0], wgt.shape[1], x_ft.shape[-2], x_ft.shape[-1]),
            dtype=x_ft.dtype,
        )
        contracted = jnp.einsum("bixy,ioxy->boxy", x_ft[:, :, :mx, :my], wgt)
        out_ft = out_ft.at[:, :, :mx, :my].set(contracted)
        return jnp.fft.irfft2(out_ft, s=(h, w), axes=(-2, -1))


@dataclass(frozen=True)
class FNO2d:
    """2-D Fourier Neural Operator on a periodic grid (JAX)."""

    lift_w: Array
    lift_b: Array
    proj_w: Array
    proj_b: Array
    spectral: tuple[SpectralConv2d, ...]
    pointwise_w: tuple[Array, ...]
    pointwise_b: tuple[Array, ...]
    spec: JaxActivationSpec

    def __call__(self, u0: Array) -> Array:
        if u0.ndim == 3:
            u0 = u0[..., None]
        if u0.ndim != 4:
            raise ValueError(
                f"u0 must be (B, H, W) or (B, H, W, C); got {tuple(u0.shape)}"
            )
        h = u0 @ self.lift_w.T + self.lift_b
        h = jnp.transpose(h, (0, 3, 1, 2))
        for sc, pw, pb in zip(
            self.spectral, self.pointwise_w, self.pointwise_b, strict=True
        ):
            h1 = sc(h)
            h2 = jnp.transpose(
                jnp.transpose(h, (0, 2, 3, 1)) @ pw.T + pb, (0, 3, 1, 2)
            )
            h = self.spec.forward(h1 + h2)
        out = jnp.transpose(h, (0, 2, 3, 1)) @ self.proj_w.T + self.proj_b
        return out


def make_fno2d(
    *,
    modes_x: int = 8,
    modes_y: int = 8,
    width: int = 32,
    n_layers: int = 4,
    in_channels: int = 1,
    out_channels: int = 1,
    base: str | JaxActivationSpec = "gelu",
    seed: int = 0,
    dtype: Any = jnp.float64,
) -> FNO2d:
    """Build a randomly-initialised :class:`FNO2d` (JAX)."""
    if n_layers < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    spec = get_activation(base)
    key = jax.random.PRNGKey(seed)

    def _linear(k: Array, din: int, dout: int) -> tuple[Array, tuple[Array, Array]]:
        k, wk = jax.random.split(k)
        scale = 1.0 / math.sqrt(din)
        return k, (
            jax.random.normal(wk, (dout, din), dtype=dtype) * scale,
            jnp.zeros((dout,), dtype=dtype),
        )

    key, (lift_w, lift_b) = _linear(key, in_channels, width)
    key, (proj_w, proj_b) = _linear(key, width, out_channels)
    spectral = []
    pointwise_w = []
    pointwise_b = []
    scale = 1.0 / (width * width)
    for _ in range(n_layers):
        key, rk, ik, pk = jax.random.split(key, 4)
        spectral.append(
            SpectralConv2d(
                weight_real=scale
                * jax.random.normal(
                    rk, (width, width, modes_x, modes_y), dtype=dtype
                ),
                weight_imag=scale
                * jax.random.normal(
                    ik, (width, width, modes_x, modes_y), dtype=dtype
                ),
                modes_x=modes_x,
                modes_y=modes_y,
            )
        )
        key, (pw, pb) = _linear(key, width, width)
        pointwise_w.append(pw)
        pointwise_b.append(pb)
    return FNO2d(
        lift_w=lift_w,
        lift_b=lift_b,
        proj_w=proj_w,
        proj_b=proj_b,
        spectral=tuple(spectral),
        pointwise_w=tuple(pointwise_w),
        pointwise_b=tuple(pointwise_b),
        spec=spec,
    )


__all__ = [
    "FNO1d",
    "FNO2d",
    "SpectralConv1d",
    "SpectralConv2d",
    "make_fno1d",
    "make_fno2d",
]


# ---- driver (not in fno.py): learn the heat equation's solution operator, a few SGD steps ----
jax.tree_util.register_pytree_node(
    SpectralConv2d, lambda s: ((s.weight_real, s.weight_imag), (s.modes_x, s.modes_y)),
    lambda m, w: SpectralConv2d(*w, *m))
jax.tree_util.register_pytree_node(
    FNO2d, lambda n: ((n.lift_w, n.lift_b, n.proj_w, n.proj_b, n.spectral, n.pointwise_w, n.pointwise_b), n.spec),
    lambda spec, c: FNO2d(*c, spec=spec))


def heat_1d(u0, t=0.01):
    k = 2 * jnp.pi * jnp.fft.rfftfreq(u0.shape[-1], d=1.0 / u0.shape[-1])
    return jnp.fft.irfft(jnp.fft.rfft(u0) * jnp.exp(-k**2 * t), n=u0.shape[-1])


def heat_2d(u0, t=0.01):
    n = u0.shape[-1]
    kx = 2 * jnp.pi * jnp.fft.fftfreq(n, d=1.0 / n)
    ky = 2 * jnp.pi * jnp.fft.rfftfreq(n, d=1.0 / n)
    decay = jnp.exp(-(kx[:, None] ** 2 + ky[None, :] ** 2) * t)
    return jnp.fft.irfft2(jnp.fft.rfft2(u0) * decay, s=u0.shape[-2:])


def mse(net, u0, target):
    return jnp.mean((net(u0)[..., 0] - target) ** 2)


@jax.jit
def sgd_step(net, u0, target):
    loss, grads = jax.value_and_grad(mse)(net, u0, target)
    return jax.tree_util.tree_map(lambda p, g: p - 0.2 * g, net, grads), loss


k1, k2 = jax.random.split(jax.random.PRNGKey(42))
u0_1d = jax.random.normal(k1, (3, 32))
u0_2d = jax.random.normal(k2, (2, 16, 16))
target_1d, target_2d = heat_1d(u0_1d), heat_2d(u0_2d)
fno1 = make_fno1d(modes=4, width=8, n_layers=2, seed=0)
fno2 = make_fno2d(modes_x=4, modes_y=3, width=8, n_layers=2, seed=1)
for step in range(3):
    fno1, loss1 = sgd_step(fno1, u0_1d, target_1d)
    fno2, loss2 = sgd_step(fno2, u0_2d, target_2d)
    print(step, loss1, loss2)
pred_1d, pred_2d = fno1(u0_1d), fno2(u0_2d)
spectral_1d = (fno1.spectral[0].weight_real, fno1.spectral[1].weight_imag)
spectral_2d = (fno2.spectral[0].weight_real, fno2.spectral[1].weight_imag)

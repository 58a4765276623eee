# Source: https://github.com/runlaiagent/GyroJAX/blob/main/gyrojax/diagnostics/__init__.py, function
#   "compute_growth_rate_from_history", driven as its DiagnosticsRecorder.finalize does
# Exercises: a least-squares line fit with jnp.linalg.lstsq (its 4-tuple unpacked, rcond=None) on a design matrix from
#   jnp.stack([t, ones_like(t)], axis=1), float() of a fitted coefficient, negative slicing of a history, the fitted
#   curve rebuilt with exp
# Adapted: the recorder's phi_rms history (one float per simulation step) replaced by exponential growth with 1%
#   multiplicative noise from a seeded numpy generator, for two growth rates; the fits printed

import jax.numpy as jnp


def compute_growth_rate_from_history(
    phi_rms_history: jnp.ndarray,
    dt: float,
    window: int = 50,
) -> dict:
    """
    Fit linear growth rate gamma from log(phi_rms) time series.
    Like GTC: fit log|phi| = gamma*t + const over last `window` steps.
    Returns {'gamma': float, 't_fit': array, 'phi_fit': array}
    """
    n = phi_rms_history.shape[0]
    t_all = jnp.arange(n, dtype=jnp.float32) * dt
    w = min(window, n)
    t_fit = t_all[-w:]
    amp_fit = jnp.maximum(phi_rms_history[-w:], 1e-30)
    log_amp = jnp.log(amp_fit)

    # Linear regression: log_amp = gamma*t + const
    A = jnp.stack([t_fit, jnp.ones_like(t_fit)], axis=1)
    coeffs, _, _, _ = jnp.linalg.lstsq(A, log_amp, rcond=None)
    gamma = float(coeffs[0])

    # Reconstructed fit for plotting
    phi_fit = jnp.exp(coeffs[0] * t_fit + coeffs[1])

    return {'gamma': gamma, 't_fit': t_fit, 'phi_fit': phi_fit}


import numpy as np

rng = np.random.default_rng(0)
dt = 0.05
for gamma_true in (0.1, 0.35):
    steps = np.arange(200) * dt
    phi_rms_history = [float(v) for v in 1e-6 * np.exp(gamma_true * steps) * (1 + 0.01 * rng.standard_normal(200))]
    phi_rms = jnp.array(phi_rms_history)
    gr = compute_growth_rate_from_history(phi_rms, dt=dt, window=min(50, len(phi_rms)))
    print("gamma (fit):", gr['gamma'])
t_fit, phi_fit = gr['t_fit'], gr['phi_fit']

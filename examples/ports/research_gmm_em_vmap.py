# Source: https://github.com/IanQS/numpy_to_jax/blob/0301de5f7595223117312a36d88d79d3bc135502/case_studies/gaussian_mixture_model/core_jax_gaussian_mixture_model.ipynb
#   (a Gaussian mixture model fitted by expectation-maximization, written to teach jit and vmap)
# Exercises: e_step as two nested vmaps (in_axes=(0, None, None, None) inside (None, 0, 0, 0)) of a jitted per-point
#   log-likelihood with jnp.linalg.inv/det; the log-sum-exp normalizer over axis 0; `.T[-1]` of a 3-d array (x.T
#   reverses all axes); m_step as vmap with in_axes=(None, 0, 1) of a function that vmaps jnp.outer over the points;
#   jnp.expand_dims; jit of functions calling jitted functions
# Adapted: the notebook's cells for e_step, calculate_normalizer, _loglikelihood_gaussian, _m_step_single, _m_step and
#   m_step as they are; sklearn's make_blobs replaced by numpy draws around the same four centers (21 points), the
#   initial means the centers scaled by 1.1; EM_GMM's loop to convergence (its log-likelihood is a Python loop over
#   the points) replaced by 3 EM iterations; plotting left out; the results kept in globals

import jax.numpy as jnp
import jax
import numpy as np


@jax.jit
def _loglikelihood_gaussian(x_i: jnp.array, cls_prior_k: jnp.array, mu_k: jnp.array, sigma_k: jnp.array) -> jnp.array:
    """
    Calculate the LL for a single point
    Args:
        x_i: vector of shape (1, num_feats)
        mu_k: vector of shape (1, num_feats)
        sigma_k: matrix of shape (num_feats, num_feats)

    """
    k = len(mu_k)
    sigma_inv = jnp.linalg.inv(sigma_k)
    sigma_det = jnp.linalg.det(sigma_k)
    log_det_sigma = jnp.log(sigma_det)

    diff = x_i - mu_k
    t1 = -0.5 * k * jnp.log(2 * jnp.pi)
    t2 = -0.5 * log_det_sigma
    t3 = -0.5 * diff @ sigma_inv @ diff

    return t1 + t2 + t3 + jnp.log(cls_prior_k)


@jax.jit
def e_step(X, mus, sigmas, cls_priors):
    """
    X: (N, M)
    mus: (K, M)
    sigmas: (K, M, M)
    cls_priors: (K, M)
    """
    _ll_gaussian_over_rows_given_parameters = jax.vmap(
        fun=_loglikelihood_gaussian,
        in_axes=(0, None, None, None)
    )
    ll_gaussian_over_parameters = jax.vmap(
        _ll_gaussian_over_rows_given_parameters,
        in_axes=(None, 0, 0, 0)
    )
    _responsibilities = ll_gaussian_over_parameters(X, cls_priors, mus, sigmas)
    normalizer = calculate_normalizer(_responsibilities)
    return jnp.exp(_responsibilities - normalizer).T[-1]


@jax.jit
def calculate_normalizer(log_prob_arr: jnp.ndarray) -> jnp.ndarray:
    _max = jnp.max(log_prob_arr, axis=0)
    return _max + jnp.log(jnp.sum(
        jnp.exp(log_prob_arr - _max),
        axis=0
    ))


@jax.jit
def _m_step_single(x_i, mu_k, resp_nk):
    """
    Calculate the individual values for mu and sigma
    """

    mu_new = x_i * resp_nk
    diff = x_i - mu_k
    sigma_new = resp_nk * jnp.outer(diff, diff)
    return mu_new, sigma_new

@jax.jit
def _m_step(X, mu_k, resp_k):
    N_k = jnp.sum(resp_k)
    to_ave_mus, to_ave_sigmas = jax.vmap(
        _m_step_single,
        in_axes=(0, None, 0)
    )(X, mu_k, resp_k)

    mus = jnp.sum(to_ave_mus, axis=0) / N_k
    sigmas = jnp.sum(to_ave_sigmas, axis=0) / N_k
    cls_prior = N_k / len(X)
    return mus, sigmas, cls_prior

@jax.jit
def m_step(X, mus, responsibilities):
    mus, sigmas, cls_prior = jax.vmap(
        _m_step,
        in_axes=(None, 0, 1)
    )(X, mus, responsibilities)

    return mus, sigmas, jnp.expand_dims(cls_prior, -1)


# ---- driver (adapted) ----

unknown_centers = np.asarray([
    [1, -1],  # bottom left
    [5, 5],  # middle
    [8, 7],  # mid-right
    [10, 0]  # bottom right
])
rng = np.random.default_rng(123)
X = np.concatenate([c + rng.normal(size=(n, 2)) for c, n in zip(unknown_centers, [6, 8, 4, 3])]).astype(np.float32)
N, M = X.shape
K = len(unknown_centers)

mus = (unknown_centers * 1.1).astype(np.float32)
# We simply say the covariance for each cluster is the covariance of the entire structure
sigmas = np.asarray([np.cov(X.T) for _ in range(K)], dtype=np.float32)
cls_probs = np.expand_dims(
    np.asarray([1 / K for _ in range(K)], dtype=np.float32).T,
    axis=-1
)
for counter in range(3):
    responsibilities = e_step(X, mus, sigmas, cls_probs)
    mus, sigmas, cls_probs = m_step(X, mus, responsibilities)
    print(f"iteration {counter}: responsibilities {responsibilities.shape}, class priors {cls_probs.T}")

responsibilities = e_step(X, mus, sigmas, cls_probs)
print("means", mus)

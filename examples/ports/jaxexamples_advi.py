# Source: https://github.com/jax-ml/jax/blob/main/examples/advi.py ("Automatic differentiation variational inference
#   in Numpy and JAX")
# Exercises: vmap over a batch of PRNG keys (random.split, then a per-key random.normal sample), vmap of
#   jax.scipy.stats.norm.logpdf, random.key of a traced integer under jit, grad of a Monte Carlo ELBO through the
#   reparameterised samples, a pytree (tuple) of parameters
# Adapted: the plotting (matplotlib, mesh_eval, the callback's contours) dropped; jax.example_libraries.optimizers'
#   momentum (tinyjax has no example_libraries) replaced by the same momentum update written inline; 100 iterations
#   -> 10, the lower bound printed every 3

from functools import partial

from jax import jit, grad, vmap
from jax import random
import jax.numpy as jnp
import jax.scipy.stats.norm as norm


def diag_gaussian_sample(rng, mean, log_std):
    # Take a single sample from a diagonal multivariate Gaussian.
    return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)

def diag_gaussian_logpdf(x, mean, log_std):
    # Evaluate a single point on a diagonal multivariate Gaussian.
    return jnp.sum(vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))

def elbo(logprob, rng, mean, log_std):
    # Single-sample Monte Carlo estimate of the variational lower bound.
    sample = diag_gaussian_sample(rng, mean, log_std)
    return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)

def batch_elbo(logprob, rng, params, num_samples):
    # Average over a batch of random samples.
    rngs = random.split(rng, num_samples)
    vectorized_elbo = vmap(partial(elbo, logprob), in_axes=(0, None, None))
    return jnp.mean(vectorized_elbo(rngs, *params))

def funnel_log_density(params):
    return norm.logpdf(params[0], 0, jnp.exp(params[1])) + \
           norm.logpdf(params[1], 0, 1.35)


num_samples = 40

@jit
def objective(params, t):
    rng = random.key(t)
    return -batch_elbo(funnel_log_density, rng, params, num_samples)

D = 2
init_mean = jnp.zeros(D)
init_std  = jnp.zeros(D)
params = (init_mean, init_std)
velocity = (jnp.zeros(D), jnp.zeros(D))

@jit
def update(i, params, velocity):
    gradient = grad(objective)(params, i)
    velocity = tuple(0.9 * v + g for v, g in zip(velocity, gradient))
    params = tuple(p - 0.1 * v for p, v in zip(params, velocity))
    return params, velocity

print("Optimizing variational parameters...")
for t in range(10):
    params, velocity = update(t, params, velocity)
    if t % 3 == 0:
        print(f"Iteration {t} lower bound {objective(params, t)}")
mean, log_std = params

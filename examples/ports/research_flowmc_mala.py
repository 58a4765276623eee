# Source: https://github.com/kazewong/flowMC/blob/0bbbf8de652ad7a84daf0c04a4c6567ae00d5e12/nfsampler/sampler/MALA.py
#   (Metropolis-adjusted Langevin kernel and sampler of flowMC, a normalizing-flow-enhanced MCMC library)
# Exercises: vmap over chains of a sampler whose lax.fori_loop body splits its random key, evaluates grad of the log
#   density, proposes with `proposal += ...` and `ratio -= ...` / `ratio += ...` (in-place operators on traced values),
#   accepts with jnp.where and writes the chain with positions.at[i].set; in_axes None for the two functions and the
#   sample count
# Adapted: the file as it is; the driver below (a correlated 2-D Gaussian target, 4 chains of 30 samples) is added, the
#   results kept in globals. mala_kernel_vec is defined but not called: one eager vmapped kernel step costs ~7 s of
#   tinygrad scheduling (threefry and the gradients) on this machine

import jax
import jax.numpy as jnp
from jax import grad
from functools import partial

def mala_kernel(rng_key, logpdf, d_logpdf, position, log_prob, kernal_size=0.1):

    key1, key2 = jax.random.split(rng_key)
    proposal = position + kernal_size * d_logpdf(position)
    proposal += kernal_size * jnp.sqrt(2/kernal_size) * jax.random.normal(key1, shape=position.shape)
    ratio = logpdf(proposal) - logpdf(position)
    ratio -= ((position - proposal - kernal_size * d_logpdf(proposal)) ** 2 / (4 * kernal_size)).sum()
    ratio += ((proposal - position - kernal_size * d_logpdf(position)) ** 2 / (4 * kernal_size)).sum()
    proposal_log_prob = logpdf(proposal)

    log_uniform = jnp.log(jax.random.uniform(key2))
    do_accept = log_uniform < ratio

    position = jnp.where(do_accept, proposal, position)
    log_prob = jnp.where(do_accept, proposal_log_prob, log_prob)
    return position, log_prob

mala_kernel_vec = jax.vmap(mala_kernel, in_axes=(0, None, None, 0, 0, None))

def mala_sampler(rng_key, n_samples, logpdf, d_logpdf, initial_position, kernal_size=0.1):

    def mh_update_sol2(i, state):
        key, positions, log_prob = state
        _, key = jax.random.split(key)
        new_position, new_log_prob = mala_kernel(key, logpdf, d_logpdf, positions[i-1], log_prob, kernal_size)
        positions=positions.at[i].set(new_position)
        return (key, positions, new_log_prob)


    logp = logpdf(initial_position)
    all_positions = jnp.zeros((n_samples,)+initial_position.shape) + initial_position
    initial_state = (rng_key,all_positions, logp)
    rng_key, all_positions, log_prob = jax.lax.fori_loop(1, n_samples, 
                                                 mh_update_sol2, 
                                                 initial_state)
    
    
    return rng_key, all_positions, log_prob

# ---- driver (added) ----

precision = jnp.array([[1.0, -0.8], [-0.8, 1.0]]) / 0.36

def logpdf(x):
    return -0.5 * x @ precision @ x

d_logpdf = grad(logpdf)

n_chains, n_samples = 4, 30
rng_key = jax.random.PRNGKey(42)
rng_key, init_key = jax.random.split(rng_key)
initial_position = jax.random.normal(init_key, shape=(n_chains, 2))
chain_keys = jax.random.split(rng_key, n_chains)

run_chains = jax.vmap(mala_sampler, in_axes=(0, None, None, None, 0, None))
final_keys, chains, final_log_prob = run_chains(chain_keys, n_samples, logpdf, d_logpdf, initial_position, 0.1)
print("chains", chains.shape, "final log prob", final_log_prob)
print("sample mean", chains[:, n_samples // 2:].reshape(-1, 2).mean(axis=0))


# Source: https://github.com/jax-ml/jax/blob/83d540ef4ff4203a49ea823e26269166b8545b7a/examples/hmm_em.py (expectation
#   maximization for a hidden Markov model: the E step as the gradient of the log normalizer)
# Exercises: lax.scan of a forward recursion with logsumexp over a broadcast (log_alpha[:, None] + log_A) and an
#   integer observation index (log_B[:, obs]); grad of it w.r.t. a list of three arrays inside lax.fori_loop whose trip
#   count is a traced argument of jit; x / x.sum(-1, keepdims=True); jit with static_argnums for the sequence length;
#   random.categorical and random.split inside lax.scan over a batch of keys; map(random.PRNGKey, count())
# Adapted: the training text is a fixed paragraph instead of the source of jax.core (a different file under each
#   library), and EM runs 5 steps instead of 50 (its num_steps argument: on this short text the probabilities fall
#   below float32's normal range by step 10, where XLA flushes them to 0 and tinygrad keeps them, and reach NaN in
#   JAX as in tinyjax by step ~15); the log normalizer before and after EM printed;
#   decodings[int(i)] where the original indexes a dict with an array element (JAX arrays are no longer hashable)

from functools import partial

import jax
import jax.numpy as np
from jax.scipy.special import logsumexp
from jax import lax, random
from jax import jit, grad


def log_normalizer(params, seq):
  log_pi, log_A, log_B = params
  def marginalize(log_alpha, obs):
    log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, obs]
    return log_alpha, None
  log_alpha, _ = lax.scan(marginalize, log_pi, seq)
  return logsumexp(log_alpha)

@jit
def EM(params, seq, num_steps):
  def update(i, params):
    moments = grad(log_normalizer)(params, seq)                     # E step
    return [np.log(x / x.sum(-1, keepdims=True)) for x in moments]  # M step
  return lax.fori_loop(0, num_steps, update, params)

@partial(jit, static_argnums=(2,))
def sample(key, params, length):
  log_pi, log_A, log_B = params
  def sample_one(state, key):
    k1, k2 = random.split(key)
    obs = random.categorical(k1, log_B[state])
    state = random.categorical(k2, log_A[state])
    return state, obs
  k1, k2 = random.split(key)
  init_state = random.categorical(k1, log_pi)
  _, seq = lax.scan(sample_one, init_state, random.split(k2, length))
  return seq


### demo

from collections import defaultdict
from itertools import count

def build_dataset(string):
  encodings = defaultdict(partial(next, count()))
  data = np.array([encodings[c] for c in string])
  decodings = {i:c for c, i in encodings.items()}
  return data, decodings

TEXT = ("def log_normalizer(params, seq):\n"
        "  log_pi, log_A, log_B = params\n"
        "  def marginalize(log_alpha, obs):\n"
        "    log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, obs]\n"
        "    return log_alpha, None\n")

if __name__ == '__main__':
  seq, decodings = build_dataset(TEXT)

  num_states = 25
  num_obs = len(decodings)

  keys = map(random.PRNGKey, count())
  log_pi = random.normal(next(keys), (num_states,))
  log_A = random.normal(next(keys), (num_states, num_states))
  log_B = random.normal(next(keys), (num_states, num_obs))
  params = [log_pi, log_A, log_B]

  new_params = EM(params, seq, 5)
  print(log_normalizer(params, seq), log_normalizer(new_params, seq))

  sampled_seq = sample(next(keys), new_params, 80)
  print(''.join(decodings[int(i)] for i in sampled_seq))

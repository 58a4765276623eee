# Source: https://github.com/lucidrains/flash-attention-jax/blob/main/flash_attention_jax/attention.py, section "causal_attention",
#   and https://github.com/lucidrains/flash-attention-jax/blob/main/flash_attention_jax/utils.py, section "value_and_grad_wrapper"
# Exercises: scaled dot-product attention with an ellipsis einsum over (batch, heads, seq, dim), jnp.triu causal mask with a
#   k_len - q_len + 1 offset, jnp.where masking, jax.nn.softmax, jit; value_and_grad with argnums=(0, 1, 2) through
#   functools.partial(value_and_grad, **kwargs) as a decorator
# Adapted: excerpt of the two files (the functions that use einops.rearrange and jax.random are left out); q, k, v from
#   numpy instead of jax.random (random keys are issue 11); batch 2, heads 2, q_len 3, k_len 5, dim 4 instead of
#   4096/8192/512; outputs printed

import numpy as np

import jax
from functools import partial
from jax import nn
from jax import jit, numpy as jnp
from jax.numpy import einsum
from jax import value_and_grad

EPSILON = 1e-10
MASK_VALUE = -1e10

@jit
def causal_attention(q, k, v):
    q_len, dim, k_len = *q.shape[-2:], k.shape[-2]
    scale = 1 / jnp.sqrt(dim)

    q = q * scale
    sim = einsum('... i d, ... j d -> ... i j', q, k)

    causal_mask = jnp.triu(jnp.ones((q_len, k_len)), k_len - q_len + 1)
    sim = jnp.where(causal_mask, MASK_VALUE, sim)

    attn = nn.softmax(sim, axis = -1)
    return einsum('... i j, ... j d -> ... i d', attn, v)

def value_and_grad_wrapper(fn, **kwargs):
    @partial(value_and_grad, **kwargs)
    def inner(*args, **kwargs):
        return jnp.sum(fn(*args, **kwargs))
    return inner

def diff(t1, t2):
    return jnp.max(jnp.abs(t1 - t2))


rng = np.random.RandomState(42)
batch, heads, q_seq_len, k_seq_len, dim = 2, 2, 3, 5, 4
q = rng.randn(batch, heads, q_seq_len, dim).astype(np.float32)
k = rng.randn(batch, heads, k_seq_len, dim).astype(np.float32)
v = rng.randn(batch, heads, k_seq_len, dim).astype(np.float32)

out = causal_attention(q, k, v)
print("out", out)
o, grads = value_and_grad_wrapper(causal_attention, argnums = (0, 1, 2))(q, k, v)
print("sum", o)
dq, dk, dv = grads
# the last query sees every key: its output is the plain softmax attention
last = causal_attention(q[..., -1:, :], k, v)
print("diff", diff(last, out[..., -1:, :]))

# Source: https://github.com/jax-ml/jax/blob/e659c54977^/docs/notebooks/maml.md ("MAML Tutorial with JAX", Eric Jang;
#   blog post https://blog.evjang.com/2019/02/maml-jax.html); in JAX's docs until commit e659c54977 ("docs: remove
#   application tutorials"). Sections "Gradients of Gradients", "MAML: Optimizing for Generalization", "Sinusoid Task +
#   MAML" (its definitions) and "Batching Meta-Gradient Across Tasks"
# Exercises: grad of grad of grad; MAML's inner SGD step (grad inside the loss, tree_map over a list of (W, b) tuples)
#   differentiated by the outer grad (second order); vmap of the MAML loss over a batch of tasks; Adam under jit with
#   the step index traced; k-shot adaptation and vmap(partial(net_apply, params)) over inputs
# Adapted: jax.experimental.stax and jax.experimental.optimizers (jax.example_libraries today, which tinyjax does not
#   have) replaced by minimal inline versions with the same API (serial, Dense, Relu; adam's update leaf by leaf with
#   tree_map), Dense's W_init glorot_normal (a truncated normal, which tinyjax.random lacks) by a normal of the same
#   variance; tree_multimap (removed from JAX) -> tree_map; np.random.seed(0) added so both runs draw the same tasks;
#   the network Dense(40), Relu, Dense(40), Relu, Dense(1) -> Dense(40), Relu, Dense(1) for the test's time; the
#   single-sinusoid Adam fit and the single-task MAML loop dropped (their cells' plots, and the maml_loss cell); the
#   batched MAML loop 20000 -> 6 steps (the loss printed every 2 steps instead of i every 1000); the final k-shot plot
#   printed instead, 1 shot instead of 2; the final np.convolve plot of the loss curves dropped

### import jax.numpy (almost-drop-in for numpy) and gradient operators.
import jax.numpy as jnp
from jax import grad

f = lambda x : jnp.exp(x)
g = lambda x : jnp.square(x)
print(grad(f)(1.)) # = e^{1}
print(grad(grad(f))(1.))
print(grad(grad(grad(f)))(1.))
print(grad(g)(2.)) # 2x = 4
print(grad(grad(g))(2.)) # x = 2
print(grad(grad(grad(g)))(2.)) # x = 0

from jax import vmap # for auto-vectorizing functions
from functools import partial # for use with vmap
from jax import jit # for compiling functions for speedup
from jax import random # stax initialization uses jax.random
from jax.nn import relu
from jax.tree_util import tree_map

# --- a minimal stand-in for jax.example_libraries.stax (serial, Dense, Relu) ---
def Dense(out_dim):
  def init_fun(rng, input_shape):
    output_shape = input_shape[:-1] + (out_dim,)
    k1, k2 = random.split(rng)
    std = jnp.sqrt(2. / (input_shape[-1] + out_dim))
    W, b = std * random.normal(k1, (input_shape[-1], out_dim)), 1e-2 * random.normal(k2, (out_dim,))
    return output_shape, (W, b)
  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return jnp.dot(inputs, W) + b
  return init_fun, apply_fun

Relu = (lambda rng, input_shape: (input_shape, ()), lambda params, inputs, **kwargs: relu(inputs))

def serial(*layers):
  init_funs, apply_funs = zip(*layers)
  def init_fun(rng, input_shape):
    params = []
    for init_fun in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, param = init_fun(layer_rng, input_shape)
      params.append(param)
    return input_shape, params
  def apply_fun(params, inputs, **kwargs):
    for fun, param in zip(apply_funs, params):
      inputs = fun(param, inputs, **kwargs)
    return inputs
  return init_fun, apply_fun

# --- a minimal stand-in for jax.example_libraries.optimizers.adam (its update, leaf by leaf with tree_map) ---
class optimizers:
  @staticmethod
  def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    def init(x0):
      return x0, tree_map(jnp.zeros_like, x0), tree_map(jnp.zeros_like, x0)
    def update(i, g, state):
      x, m, v = state
      m = tree_map(lambda g, m: (1 - b1) * g + b1 * m, g, m)  # First  moment estimate.
      v = tree_map(lambda g, v: (1 - b2) * jnp.square(g) + b2 * v, g, v)  # Second moment estimate.
      mhat = tree_map(lambda m: m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1)), m)  # Bias correction.
      vhat = tree_map(lambda v: v / (1 - jnp.asarray(b2, v.dtype) ** (i + 1)), v)
      x = tree_map(lambda x, mhat, vhat: x - step_size * mhat / (jnp.sqrt(vhat) + eps), x, mhat, vhat)
      return x, m, v
    def get_params(state):
      x, _, _ = state
      return x
    return init, update, get_params

# Use stax to set up network initialization and evaluation functions
net_init, net_apply = serial(
    Dense(40), Relu,
    Dense(1)
)

rng = random.PRNGKey(0)
in_shape = (-1, 1,)
out_shape, net_params = net_init(rng, in_shape)

def loss(params, inputs, targets):
    # Computes average loss for the batch
    predictions = net_apply(params, inputs)
    return jnp.mean((targets - predictions)**2)

xrange_inputs = jnp.linspace(-5,5,100).reshape((100, 1)) # (k, 1)

import numpy as np
np.random.seed(0)

# gradients of gradients test for MAML
# check numerics
g = lambda x, y : jnp.square(x) + y
x0 = 2.
y0 = 1.
print('grad(g)(x0) = {}'.format(grad(g)(x0, y0))) # 2x = 4
print('x0 - grad(g)(x0) = {}'.format(x0 - grad(g)(x0, y0))) # x - 2x = -2
def maml_objective(x, y):
    return g(x - grad(g)(x, y), y)
print('maml_objective(x,y)={}'.format(maml_objective(x0, y0))) # x**2 + 1 = 5
print('x0 - maml_objective(x,y) = {}'.format(x0 - grad(maml_objective)(x0, y0))) # x - (2x)

alpha = .1
def inner_update(p, x1, y1):
    grads = grad(loss)(p, x1, y1)
    inner_sgd_fn = lambda g, state: (state - alpha*g)
    return tree_map(inner_sgd_fn, grads, p)

def maml_loss(p, x1, y1, x2, y2):
    p2 = inner_update(p, x1, y1)
    return loss(p2, x2, y2)

def sample_tasks(outer_batch_size, inner_batch_size):
    # Select amplitude and phase for the task
    As = []
    phases = []
    for _ in range(outer_batch_size):
        As.append(np.random.uniform(low=0.1, high=.5))
        phases.append(np.random.uniform(low=0., high=jnp.pi))
    def get_batch():
        xs, ys = [], []
        for A, phase in zip(As, phases):
            x = np.random.uniform(low=-5., high=5., size=(inner_batch_size, 1))
            y = A * np.sin(x + phase)
            xs.append(x)
            ys.append(y)
        return jnp.stack(xs), jnp.stack(ys)
    x1, y1 = get_batch()
    x2, y2 = get_batch()
    return x1, y1, x2, y2

outer_batch_size = 2
x1, y1, x2, y2 = sample_tasks(outer_batch_size, 50)
print(x2.shape)

opt_init, opt_update, get_params = optimizers.adam(step_size=1e-3)
out_shape, net_params = net_init(rng, in_shape)
opt_state = opt_init(net_params)

# vmapped version of maml loss.
# returns scalar for all tasks.
def batch_maml_loss(p, x1_b, y1_b, x2_b, y2_b):
    task_losses = vmap(partial(maml_loss, p))(x1_b, y1_b, x2_b, y2_b)
    return jnp.mean(task_losses)

@jit
def step(i, opt_state, x1, y1, x2, y2):
    p = get_params(opt_state)
    g = grad(batch_maml_loss)(p, x1, y1, x2, y2)
    l = batch_maml_loss(p, x1, y1, x2, y2)
    return opt_update(i, g, opt_state), l

np_batched_maml_loss = []
K=20
for i in range(6):
    x1_b, y1_b, x2_b, y2_b = sample_tasks(4, K)
    opt_state, l = step(i, opt_state, x1_b, y1_b, x2_b, y2_b)
    np_batched_maml_loss.append(l)
    if i % 2 == 0:
        print(i, l)
net_params = get_params(opt_state)

# batch the inference across K=100
targets = jnp.sin(xrange_inputs)
predictions = vmap(partial(net_apply, net_params))(xrange_inputs)
print('pre-update predictions', predictions)
x1 = np.random.uniform(low=-5., high=5., size=(10,1))
y1 = 1. * np.sin(x1 + 0.)
for i in range(1,2):
    net_params = inner_update(net_params, x1, y1)
    predictions = vmap(partial(net_apply, net_params))(xrange_inputs)
    print('{}-shot predictions'.format(i), predictions)

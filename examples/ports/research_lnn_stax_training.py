# Source: https://github.com/MilesCranmer/lagrangian_nns/blob/master/experiment_dblpend/train.py, sections "learned_dynamics /
#   gln_loss / train", with lnn.py ("lagrangian_eom"), models.py ("mlp"), utils.py ("wrap_coords"),
#   experiment_dblpend/physics.py ("analytical_fn") and experiment_dblpend/data.py ("get_dataset") (same repository)
# Exercises: Lagrangian neural network training: a stax.serial MLP Lagrangian, the Euler-Lagrange equation of motion with
#   jnp.linalg.pinv(jax.hessian(L, 1)) and nested jax.jacobian, vmap of functools.partial over states, jit'd loss, grad
#   through all of it, optimizers.adam with a jnp.select learning-rate schedule, jit'd update on the optimizer state
# Adapted: the files merged into one script; `jax.experimental.stax/optimizers` spelled `jax.example_libraries.stax/
#   optimizers` (moved there in JAX 0.2.25); the odeint trajectory of data.py replaced by 32 numpy-sampled states with their
#   analytical derivatives (odeint needs lax control flow, issue 11); MLP parameters drawn with numpy in stax's
#   (W, b) / () layout instead of init_random_params(jax.random key) (issue 11); hidden_dim 32, output_dim 1 (the gln
#   model), batch_size 2 x num_batches 2 (5 updates), test_every 1; time.sleep and the __main__ driver replaced by the
#   closing lines

import jax
import jax.numpy as jnp
from jax import jit
import numpy as np # get rid of this eventually
from functools import partial # reduces arguments to function by making some subset implicit

from jax.example_libraries import stax
from jax.example_libraries import optimizers


# Double pendulum dynamics via analytical forces taken from Diego's blog
@jit
def analytical_fn(state, t=0, m1=1, m2=1, l1=1, l2=1, g=9.8):
  t1, t2, w1, w2 = state
  a1 = (l2 / l1) * (m2 / (m1 + m2)) * jnp.cos(t1 - t2)
  a2 = (l1 / l2) * jnp.cos(t1 - t2)
  f1 = -(l2 / l1) * (m2 / (m1 + m2)) * (w2**2) * jnp.sin(t1 - t2) - (g / l1) * jnp.sin(t1)
  f2 = (l1 / l2) * (w1**2) * jnp.sin(t1 - t2) - (g / l2) * jnp.sin(t2)
  g1 = (f1 - a1 * f2) / (1 - a1 * a2)
  g2 = (f2 - a2 * f1) / (1 - a1 * a2)
  return jnp.stack([w1, w2, g1, g2])
    
def wrap_coords(state):
  # wrap generalized coordinates to [-pi, pi]
  return jnp.concatenate([(state[:2] + jnp.pi) % (2 * jnp.pi) - jnp.pi, state[2:]])


# unconstrained equation of motion
def unconstrained_eom(model, state, t=None):
  q, q_t = jnp.split(state, 2)
  return model(q, q_t)

# lagrangian equation of motion
def lagrangian_eom(lagrangian, state, t=None):
  q, q_t = jnp.split(state, 2)
  #Note: the following line assumes q is an angle. Delete it for problems other than double pendulum.
  q = q % (2*jnp.pi)
  q_tt = (jnp.linalg.pinv(jax.hessian(lagrangian, 1)(q, q_t))
          @ (jax.grad(lagrangian, 0)(q, q_t)
             - jax.jacobian(jax.jacobian(lagrangian, 1), 0)(q, q_t) @ q_t))
  dt = 1e-1
  return dt*jnp.concatenate([q_t, q_tt])


def mlp(args):
    return stax.serial(
        stax.Dense(args.hidden_dim),
        stax.Softplus,
        stax.Dense(args.hidden_dim),
        stax.Softplus,
        stax.Dense(args.output_dim),
    )

def get_args():
    return {'input_dim': 4,
           'hidden_dim': 128,
           'output_dim': 4,
           'dataset_size': 3000,
           'learn_rate': 1e-3,
           'batch_size': 100,
           'test_every': 10,
           'num_batches': 500,
           'name': 'dblpend',
           'model': 'baseline_nn',
           'verbose': True,
           'seed': 1,
           'save_dir': '.'}

class ObjectView(object):
    def __init__(self, d): self.__dict__ = d


# replace the lagrangian with a parameteric model
def learned_dynamics(params):
  def dynamics(q, q_t):
    assert q.shape == (2,)
    state = wrap_coords(jnp.concatenate([q, q_t]))
    return jnp.squeeze(nn_forward_fn(params, state), axis=-1)
  return dynamics

@jax.jit
def gln_loss(params, batch, time_step=None):
  state, targets = batch
  preds = jax.vmap(partial(lagrangian_eom, learned_dynamics(params)))(state)
  return jnp.mean((preds - targets) ** 2)

@jax.jit
def baseline_loss(params, batch, time_step=None):
  state, targets = batch
  preds = jax.vmap(partial(unconstrained_eom, learned_dynamics(params)))(state)
  return jnp.mean((preds - targets) ** 2)


def train(args, model, data):
  global opt_update, get_params, nn_forward_fn
  (nn_forward_fn, init_params) = model
  data = {k: jax.device_put(v) if type(v) is np.ndarray else v for k,v in data.items()}


  # choose our loss function
  if args.model == 'gln':
    loss = gln_loss
  elif args.model == 'baseline_nn':
    loss = baseline_loss
  else:
    raise(ValueError)

  @jax.jit
  def update_derivative(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, jax.grad(loss)(params, batch, None), opt_state)

  # make an optimizer
  opt_init, opt_update, get_params = optimizers.adam(
    lambda t: jnp.select([t < args.batch_size*(args.num_batches//3),
                          t < args.batch_size*(2*args.num_batches//3),
                          t > args.batch_size*(2*args.num_batches//3)],
                         [args.learn_rate, args.learn_rate/10, args.learn_rate/100]))
  opt_state = opt_init(init_params)

  train_losses, test_losses = [], []
  for iteration in range(args.batch_size*args.num_batches + 1):
    if iteration % args.batch_size == 0:
      params = get_params(opt_state)
      train_loss = loss(params, (data['x'], data['dx']))
      train_losses.append(train_loss)
      test_loss = loss(params, (data['test_x'], data['test_dx']))
      test_losses.append(test_loss)
      if iteration % (args.batch_size*args.test_every) == 0:
        print(f"iteration={iteration}, train_loss={train_loss:.6f}, test_loss={test_loss:.6f}")
    opt_state = update_derivative(iteration, opt_state, (data['x'], data['dx']))

  params = get_params(opt_state)
  return params, train_losses, test_losses


args = ObjectView(get_args())
args.hidden_dim, args.output_dim, args.batch_size, args.num_batches, args.test_every, args.model = 32, 1, 2, 2, 1, 'gln'

# dataset: states sampled with numpy, their analytical time derivatives (get_dataset's vfnc), wrapped coordinates
rng = np.random.RandomState(args.seed)
x = np.concatenate([rng.uniform(-np.pi, np.pi, (32, 2)), rng.randn(32, 2)], axis=1).astype(np.float32)
vfnc = jax.jit(jax.vmap(analytical_fn))
dx = vfnc(x)
x = jax.vmap(wrap_coords)(jnp.asarray(x))
data = {'x': x[:16], 'dx': dx[:16], 'test_x': x[16:], 'test_dx': dx[16:]}

init_random_params, nn_forward_fn = mlp(args)
sizes = [4, args.hidden_dim, args.hidden_dim, args.output_dim]
dense = [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
init_params = [dense[0], (), dense[1], (), dense[2]]
model = (nn_forward_fn, init_params)

params, train_losses, test_losses = train(args, model, data)

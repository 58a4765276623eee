# Source: https://github.com/mosi2002/Jax_Neural_network/blob/main/JAX_NN.ipynb, section "PDE_loss / init_params / fwd / loss_fun / update"
# Exercises: physics-informed residual of Burgers' equation u_t + u u_x - (0.01/pi) u_xx: nested jax.grad (argnums 0 and 1)
#   of a summed tanh MLP u(t, x), list-of-dicts params, colloc[:, [0]] list indexing, jnp.concatenate, jit(grad) inside jit,
#   tree-mapped gradient step
# Adapted: excerpt of cells 2-11 as one script; seeded numpy points (N_0 = N_b = 8, N_r = 32 instead of 100/100/10000);
#   init_params draws from numpy instead of jax.random (random keys are issue 11); 3 hidden layers of 8 instead of 6;
#   optax.adam replaced by the plain step in the notebook's own commented-out line (jax.tree_multimap, removed from JAX,
#   spelled jax.tree_util.tree_map); 6 epochs, loss printed every 5; plotting dropped

import jax
import jax.numpy as jnp
import numpy as np

np.random.seed(0)

N_0 = 8
N_b = 8
N_r = 32

tmin,tmax=0. ,1.
xmin,xmax = -1.,1.

'''boundary conditions'''


# U[0,x] = -sin(pi*x)
t_0 = jnp.ones([N_0,1],dtype='float32')*0.
x_0 = np.random.uniform(low=xmin,high=xmax,size=(N_0,1))
ic_0 = -jnp.sin(jnp.pi*x_0)
IC_0 = jnp.concatenate([t_0,x_0,ic_0],axis=1)

# U[t,-1] = 0
t_b1 = np.random.uniform(low=tmin,high=tmax,size=(N_b,1))
x_b1 = jnp.ones_like(t_b1) *-1
bc_1 = jnp.zeros_like(t_b1)
BC_1 = jnp.concatenate([t_b1,x_b1,bc_1],axis=1)

# U[t,1] = 0
t_b2 = np.random.uniform(low=tmin,high=tmax,size=(N_b,1))
x_b2 = jnp.ones_like(t_b2)
bc_2 = jnp.zeros_like(t_b2)
BC_2 = jnp.concatenate([t_b2,x_b2,bc_2],axis=1)

conds = [IC_0,BC_1,BC_2]

#collocation points
t_c = np.random.uniform(low=tmin,high=tmax,size=(N_r,1))
x_c = np.random.uniform(low=xmin,high=xmax,size=(N_r,1))
colloc = jnp.concatenate([t_c,x_c],axis=1)


def PDE_loss(t,x,u):
  u_x=lambda t,x:jax.grad(lambda t,x:jnp.sum(u(t,x)),1)(t,x)
  u_xx=lambda t,x:jax.grad(lambda t,x : jnp.sum(u_x(t,x)),1)(t,x)
  u_t=lambda t,x:jax.grad(lambda t,x:jnp.sum(u(t,x)),0)(t,x)
  return u_t(t,x) + u(t,x)*u_x(t,x) - (0.01/jnp.pi)*u_xx(t,x)

def init_params(layers):
  rng = np.random.RandomState(0)
  params = list()
  for n_in,n_out in zip(layers[:-1],layers[1:]):
    lb, ub = -(1 / jnp.sqrt(n_in)), (1 / jnp.sqrt(n_in)) # xavier initialization lower and upper bound
    W = lb + (ub-lb) * rng.uniform(size=(n_in,n_out)).astype(np.float32)
    B = rng.uniform(size=(n_out,)).astype(np.float32)
    params.append({'W':W,'B':B})
  return params

def fwd(params,t,x):
  X = jnp.concatenate([t,x],axis=1)
  *hidden,last = params
  for layer in hidden :
    X = jax.nn.tanh(X@layer['W']+layer['B'])
  return X@last['W'] + last['B']

@jax.jit
def MSE(true,pred):
  return jnp.mean((true-pred)**2)

def loss_fun(params,colloc,conds):
  t_c,x_c =colloc[:,[0]],colloc[:,[1]]
  ufunc = lambda t,x : fwd(params,t,x)
  loss =jnp.mean(PDE_loss(t_c,x_c,ufunc) **2)

  for cond in conds :
    t_b,x_b,u_b = cond[:,[0]],cond[:,[1]],cond[:,[2]]
    loss += MSE(u_b,ufunc(t_b,x_b))
  return  loss

LR = 1e-2

@jax.jit
def update(params,colloc,conds):
  # Get the gradient w.r.t to MLP params
  grads=jax.jit(jax.grad(loss_fun,0))(params,colloc,conds)

  #Update params
  return jax.tree_util.tree_map(lambda params,grads : params-LR*grads, params,grads)


# construct the MLP of  3 hidden layers of 8 neurons for each layer
params = init_params([2] + [8]*3+[1])

residual = PDE_loss(colloc[:,[0]], colloc[:,[1]], lambda t,x : fwd(params,t,x))
print("initial residual", residual[:4, 0])

epochs = 6
for _ in range(epochs):
  params = update(params,colloc,conds)

  # print loss and epoch info
  if _ %(5) ==0:
    print(f'Epoch={_}\tloss={loss_fun(params,colloc,conds):.3e}')

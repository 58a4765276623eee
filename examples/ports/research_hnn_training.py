# Source: https://github.com/milutter/deep_lagrangian_networks/blob/main/deep_lagrangian_networks/jax_HNN_model.py, sections
#   "dynamics_model / forward_loss_fn", trained as in jax_example_HNN.py (same repository), section "update_fn"
# Exercises: Hamiltonian neural network: vmap(value_and_grad(hamiltonian, argnums=[2, 3]), (None, None, 0, 0)) with a None
#   key, Hamilton's equations, vmap(jnp.dot, [0, 0]), jnp.var, a loss returning (loss, logs dict) through
#   value_and_grad(has_aux=True) under jit, functools.partial with function-valued keywords, jax.tree.map over the logs
# Adapted: the haiku black-box Hamiltonian (hk.nets.MLP on [cos q, sin q, p]) is written as the same MLP in jax.numpy
#   (haiku is not a JAX API), with its parameters from numpy instead of jax.random; optax.adamw replaced by a plain SGD
#   step (learning rate 1e-2); the replay-memory dataset replaced by 4 fixed numpy minibatches of 16 samples of a 2-dof
#   system; 2 epochs, logs printed every epoch; timing, model saving and evaluation dropped

import functools

import numpy as np
import jax
import jax.numpy as jnp


def blackbox_hamiltonian_fn(params, key, q, p):
    # hk.nets.MLP(output_sizes=shape + (1,), activation=tanh) on z = [cos q, sin q, p]
    z = jnp.concatenate([jnp.cos(q), jnp.sin(q)], axis=-1)
    state = jnp.concatenate([z, p], axis=-1)
    *hidden, (w_out, b_out) = params
    for w, b in hidden:
        state = jnp.tanh(state @ w + b)
    return (state @ w_out + b_out).squeeze()


def dynamics_model(params, key, q, p, pd, tau, hamiltonian, n_dof):
    argnums = [2, 3]
    vmap_dim = (None, None, 0, 0)
    batch_matmul = jax.vmap(jnp.matmul, (0, 0))

    # Compute Lagrangian and Jacobians:
    hamiltonian_value_and_grad = jax.value_and_grad(hamiltonian, argnums=argnums)
    H, (dHdq, dHdp) = jax.vmap(hamiltonian_value_and_grad, vmap_dim)(params, key, q, p)

    # Compute the forward model:
    pd_pred = tau - dHdq
    qd_pred = dHdp

    # Compute the inverse model:
    tau_pred = pd + dHdq

    # Compute \dot{\mathcal{H}}
    dHdt = jax.vmap(jnp.dot, [0, 0])(dHdp, tau_pred)

    return qd_pred, pd_pred, tau_pred, H, dHdt


def forward_loss_fn(params, q, qd, p, pd, tau, hamiltonian, n_dof, norm_tau, norm_qd, norm_pd):
    qd_pred, pd_pred, tau_pred, H_pred, dHdt_pred = dynamics_model(params, None, q, p, pd, tau, hamiltonian, n_dof)

    # Forward Error:
    qd_error = jnp.sum((qd - qd_pred)**2 / norm_qd, axis=-1)
    pd_error = jnp.sum((pd - pd_pred) ** 2 / norm_pd, axis=-1)

    mean_forward_error = 1. / 2. * (jnp.mean(qd_error) + jnp.mean(pd_error))
    var_forward_error = 1./2. *  (jnp.var(qd_error) + jnp.var(pd_error))

    # Inverse Error:
    tau_error = jnp.sum((tau - tau_pred)**2 / norm_tau, axis=-1)
    mean_inverse_error = jnp.mean(tau_error)
    var_inverse_error = jnp.var(tau_error)

    # Temporal Power Conservation:
    dHdt = jax.vmap(jnp.dot, [0, 0])(qd, tau)
    dHdt_error = (dHdt_pred - dHdt) ** 2
    mean_energy_error = jnp.mean(dHdt_error)
    var_energy_error = jnp.var(dHdt_error)

    # Compute Loss
    loss = mean_forward_error

    logs = {
        'loss': loss,
        'forward_mean': mean_forward_error,
        'forward_var': var_forward_error,
        'inverse_mean': mean_inverse_error,
        'inverse_var': var_inverse_error,
        'energy_mean': mean_energy_error,
        'energy_var': var_energy_error,
    }

    return loss, logs


n_dof = 2
rng = np.random.RandomState(0)
shape = (16, 16)
sizes = (2 * n_dof + n_dof,) + shape + (1,)
params = [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]

# a 2-dof pendulum-like system with unit mass matrix: qd = p, pd = tau - 9.81 sin(q)
def make_batch(n):
    q = rng.uniform(-np.pi, np.pi, (n, n_dof)).astype(np.float32)
    p = rng.randn(n, n_dof).astype(np.float32)
    tau = rng.randn(n, n_dof).astype(np.float32)
    return q, p.copy(), p, (tau - 9.81 * np.sin(q)).astype(np.float32), tau
batches = [make_batch(16) for _ in range(4)]
train_qv = np.concatenate([b[1] for b in batches]); train_pd = np.concatenate([b[3] for b in batches])
train_tau = np.concatenate([b[4] for b in batches])

hamiltonian = blackbox_hamiltonian_fn
q, qd, p, pd, tau = [jnp.array(x) for x in batches[0]]
hnn_model = jax.jit(functools.partial(dynamics_model, hamiltonian=hamiltonian, n_dof=n_dof))
qd_pred, pd_pred, tau_pred, H, dHdt = hnn_model(params, None, q[:5], p[:5], pd[:5], tau[:5])
print("H", H)
print("qd_pred", qd_pred)

learning_rate = 1e-2
loss_fn = functools.partial(
    forward_loss_fn,
    hamiltonian=hamiltonian,
    n_dof=n_dof,
    norm_tau=jnp.var(train_tau, axis=0),
    norm_qd=jnp.var(train_qv, axis=0),
    norm_pd=jnp.var(train_pd, axis=0),
)

def update_fn(params, q, qd, p, pd, tau):
    (_, logs), grads = jax.value_and_grad(loss_fn, 0, has_aux=True)(params, q, qd, p, pd, tau)

    params = jax.tree.map(lambda x, g: x - learning_rate * g, params, grads)
    return params, logs

update_fn = jax.jit(update_fn)
_, logs = update_fn(params, q[:1], qd[:1], p[:1], pd[:1], tau[:1])

for epoch_i in range(1, 3):
    n_batches = 0
    logs = jax.tree.map(lambda x: x * 0.0, logs)
    for data_batch in batches:
        q, qd, p, pd, tau = [jnp.array(x) for x in data_batch]
        params, batch_logs = update_fn(params, q, qd, p, pd, tau)
        n_batches += 1
        logs = jax.tree.map(lambda x, y: x + y, logs, batch_logs)
    logs = jax.tree.map(lambda x: x/n_batches, logs)
    print(f"Loss = {logs['loss']:.4e}", end=", ")
    print(f"Inv = {logs['inverse_mean']:.4e} \u00B1 {1.96 * np.sqrt(logs['inverse_var']):.4e}", end=", ")
    print(f"For = {logs['forward_mean']:.4e} \u00B1 {1.96 * np.sqrt(logs['forward_var']):.4e}", end=", ")
    print(f"Power = {logs['energy_mean']:.4e} \u00B1 {1.96 * np.sqrt(logs['energy_var']):.4e}")

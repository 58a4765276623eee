"""The tinygrad-model examples at small sizes: examples/dp_sgd_cnn.py (per-example clipped gradients, DP-SGD under jit),
examples/deep_ensemble.py (8 MLPs trained at once with vmap over stacked params) and examples/model_hvp.py
(Hessian-vector products of a model's loss), each against an independent reference: plain SGD on the mean gradient, a
Python loop over examples or over members, JAX on the same model written in jax.numpy."""
import numpy as np
import jax
import jax.flatten_util
import jax.numpy as jnp
from tinygrad import Tensor
import tinyjax
from tinyjax import optim
from tinyjax.nn import params, stack_params
from examples import dp_sgd_cnn as dp, deep_ensemble as ens, model_hvp as mh


def numbers(p: dict) -> dict: return {k: v.numpy() for k, v in p.items()}

def assert_tree_close(got: dict, want: dict, rtol: float, atol: float):
  assert sorted(got) == sorted(want)
  for k in want: np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=k)


# ---- DP-SGD -----------------------------------------------------------------------------------------------------------

B, LR = 8, 0.1

def dp_setup(seed: int = 0):
  model = dp.init_model(seed)
  x, y = dp.make_data(B, seed + 1)
  return model, params(model), x, y

def test_dp_sgd_step_without_clipping_or_noise_is_sgd():
  # C huge, sigma = 0: one jitted DP-SGD step is an SGD step on the mean loss's gradient
  model, p, x, y = dp_setup()
  tx, step = dp.make_step(model, C=1e9, lr=LR)
  zeros = {k: Tensor(np.zeros(v.shape, np.float32)) for k, v in p.items()}
  new, state = step(p, tx.init(p), Tensor(x), Tensor(y), zeros)
  g = numbers(tinyjax.grad(lambda p: dp.batch_loss(model, p, Tensor(x), Tensor(y)))(p))
  assert_tree_close(numbers(new), {k: v - LR * g[k] for k, v in numbers(p).items()}, rtol=1e-5, atol=1e-6)
  assert state.count.item() == 1

def test_dp_sgd_clipped_gradient_against_a_loop():
  # per example, one at a time: tinyjax.grad of one example's loss, clipped to norm C with numpy; summed, noise added,
  # averaged. C is the median per-example norm, so that about half the examples are clipped
  model, p, x, y = dp_setup()
  loss1 = dp.loss_fn(model)
  per = [numbers(tinyjax.grad(loss1)(p, Tensor(x[i]), Tensor(y[i]))) for i in range(B)]
  norms = np.array([np.sqrt(sum((g[k].astype(np.float64) ** 2).sum() for k in g)) for g in per])
  C = float(np.median(norms))
  assert 0 < (norms > C).sum() < B
  noise = {k: np.random.default_rng(5).standard_normal(v.shape).astype(np.float32) * 0.1 for k, v in p.items()}
  want = {k: (sum(g[k] / max(n / C, 1.0) for g, n in zip(per, norms, strict=True)) + noise[k]) / B for k in p}
  noise_t = {k: Tensor(v) for k, v in noise.items()}
  got = numbers(dp.private_grad(model, C)(p, Tensor(x), Tensor(y), noise_t))
  assert_tree_close(got, want, rtol=1e-5, atol=1e-6)
  # the jitted step applies exactly that gradient
  tx, step = dp.make_step(model, C, LR)
  new, _ = step(p, tx.init(p), Tensor(x), Tensor(y), noise_t)
  assert_tree_close(numbers(new), {k: v - LR * want[k] for k, v in numbers(p).items()}, rtol=1e-5, atol=1e-6)

def test_dp_sgd_jitted_equals_eager():
  model, p, x, y = dp_setup()
  rng = np.random.default_rng(3)
  noises = [dp.draw_noise(rng, p, 0.5) for _ in range(3)]
  results = []
  for jit in (True, False):
    tx, step = dp.make_step(model, C=0.5, lr=LR, jit=jit)
    q, state = p, tx.init(p)
    for n in noises: q, state = step(q, state, Tensor(x), Tensor(y), n)   # the jitted step: trace, capture, replay
    results.append(numbers(q))
  assert_tree_close(results[0], results[1], rtol=1e-5, atol=1e-6)

def test_dp_sgd_lowers_the_loss():
  seed, n_train = 0, 256
  p, losses = dp.dp_sgd(steps=25, batch=32, seed=seed, C=1.0, sigma=0.5, n_train=n_train)
  assert len(losses) == 25
  model = dp.init_model(seed)
  x, y = (Tensor(a) for a in dp.make_data(n_train, seed + 1))   # the training set dp_sgd drew its batches from
  before, after = dp.batch_loss(model, params(model), x, y).item(), dp.batch_loss(model, p, x, y).item()
  assert after < 0.8 * before, (before, after)


# ---- deep ensemble ----------------------------------------------------------------------------------------------------

def test_ensemble_members_equal_separate_training():
  k, steps, seed, lr = 3, 4, 0, 0.01
  stacked, losses = ens.train_ensemble(k, steps, seed, lr=lr)
  assert losses.shape == (steps, k)
  x, y = (Tensor(a) for a in ens.make_data(128, seed))
  got = numbers(stacked)
  tx = optim.adam(lr)
  for i, m in enumerate(ens.init_members(k, seed)):   # each member alone, with its own Adam, step by step
    one, _ = ens.make_steps(m, tx)
    loss = ens.loss_fn(m)
    p = q = params(m)
    sp, sq, member_losses = tx.init(p), tx.init(q), []
    for _ in range(steps):
      p, sp, _ = one(p, sp, x, y)                      # the jitted one-member step
      value, g = tinyjax.value_and_grad(loss)(q, x, y)   # eagerly
      member_losses.append(value.item())
      updates, sq = tx.update(g, sq)
      q = optim.apply_updates(q, updates)
    mine = {n: v[i] for n, v in got.items()}
    assert_tree_close(mine, numbers(p), rtol=1e-5, atol=0)
    # eager float32 differs in the last bits, and Adam divides by |g|: a gradient entry that is a sum with cancellation
    # (small, so relatively less exact) still moves its parameter by about lr. Measured: 2.5e-7 = 2.5e-5 lr at most
    assert_tree_close(mine, numbers(q), rtol=0, atol=1e-5 * lr * steps)
    np.testing.assert_allclose(losses[:, i], member_losses, rtol=1e-5)

def hand_batched_step(tx):
  """The ensemble step written by hand with a member axis (tinygrad's own gradient), for the kernel comparison."""
  def step(p, state, x, y):
    h = (x.unsqueeze(0) @ p["l1.weight"].transpose(1, 2) + p["l1.bias"].unsqueeze(1)).tanh()   # (k, n, hidden)
    out = h @ p["l2.weight"].transpose(1, 2) + p["l2.bias"].unsqueeze(1)                      # (k, n, out)
    losses = ((out - y.unsqueeze(0)) ** 2).mean((1, 2))
    names = list(p)
    updates, state = tx.update(dict(zip(names, losses.sum().gradient(*[p[n] for n in names]), strict=True)), state)
    return optim.apply_updates(p, updates), state, losses
  return tinyjax.jit(step)

def test_ensemble_kernels():
  # the jitted vmapped step launches exactly the kernels of the same step batched by hand (vmap adds none). Against
  # ONE member's jitted step: the same count for a 2-output MLP; the example's 1-output MLP launches one more, because
  # tinygrad's scheduler recomputes a reduction to a single number (one member's l2.bias gradient) inside each of
  # its 3 consumers (bias, Adam's mu and nu), where the ensemble's (k,) reduction gets a kernel of its own
  k, seed = 8, 0
  tx = optim.adam(0.01)
  x, y = (Tensor(a) for a in ens.make_data(128, seed))
  for out, extra in ((2, 0), (1, 1)):
    members = ens.init_members(k, seed, out=out)
    one, step = ens.make_steps(members[0], tx)
    stacked = stack_params(members)
    n_one = len(one.kernels(params(members[0]), tx.init(params(members[0])), x, y))
    names = step.kernels(stacked, tx.init(stacked), x, y)
    assert names == hand_batched_step(tx).kernels(stacked, tx.init(stacked), x, y)
    assert len(names) == n_one + extra, (out, len(names), n_one)


# ---- Hessian-vector products --------------------------------------------------------------------------------------------

def jax_loss(p: dict, x, y):
  h = jnp.tanh(x @ p["l1.weight"].T + p["l1.bias"])
  return jnp.mean((h @ p["l2.weight"].T + p["l2.bias"] - y) ** 2)

def test_hvp_against_jax():
  # float64 (conftest enables JAX's x64 for the whole session)
  model = mh.init_model(0)
  p = params(model)
  x, y = mh.make_data(32, 1)
  r = np.random.default_rng(2)
  v = {k: r.standard_normal(t.shape) for k, t in p.items()}
  got = numbers(mh.hvp(model, p, {k: Tensor(a) for k, a in v.items()}, Tensor(x), Tensor(y)))
  assert all(g.dtype == np.float64 for g in got.values())
  pn = numbers(p)
  want = jax.jvp(jax.grad(lambda q: jax_loss(q, x, y)), (pn,), (v,))[1]
  assert_tree_close(got, {k: np.asarray(a) for k, a in want.items()}, rtol=1e-8, atol=1e-12)
  # the dense Hessian (vmap of hvp over the basis vectors) and the power iteration's top eigenvalue
  names = list(pn)   # raveled in the model's order (a dict would be raveled in sorted key order)
  flat, unravel_list = jax.flatten_util.ravel_pytree([pn[k] for k in names])
  def unravel(f): return dict(zip(names, unravel_list(f), strict=True))
  H_jax = np.asarray(jax.hessian(lambda f: jax_loss(unravel(f), x, y))(flat))
  H = mh.dense_hessian(model, p, Tensor(x), Tensor(y))
  np.testing.assert_allclose(H, H_jax, rtol=1e-8, atol=1e-12)
  eig = np.linalg.eigvalsh(H_jax)
  hvp_flat, xt, yt = mh.flat_hvp(model), Tensor(x), Tensor(y)
  def Hv(u): return hvp_flat(p, Tensor(u), xt, yt).numpy()
  np.testing.assert_allclose(Hv(flat_v := np.concatenate([v[k].ravel() for k in names])), H_jax @ flat_v, rtol=1e-8, atol=1e-12)
  top, _ = mh.power_iteration(Hv, len(flat), 100)
  np.testing.assert_allclose(top, eig[np.abs(eig).argmax()], rtol=1e-8)   # measured 8.8e-11 after 100 iterations
  # CG on (H + I) d = -g with HVPs reaches numpy's dense solve
  g = np.asarray(jax.grad(lambda f: jax_loss(unravel(f), x, y))(flat))
  d, _ = mh.conjugate_gradient(lambda u: Hv(u) + u, -g, len(flat))
  np.testing.assert_allclose(d, np.linalg.solve(H_jax + np.eye(len(flat)), -g), rtol=1e-7, atol=1e-10)

def test_newton_cg_lowers_the_loss():
  model = mh.init_model(0)
  x, y = (Tensor(a) for a in mh.make_data(64, 1))
  p, losses, evals = mh.newton_cg(model, params(model), x, y, steps=3, cg_iters=10, verbose=False)
  assert losses[-1] < 0.5 * losses[0] and all(b < a for a, b in zip(losses, losses[1:], strict=False))
  assert evals > 3
  np.testing.assert_allclose(mh.loss(model, p, x, y).item(), losses[-1], rtol=1e-12)

"""A deep ensemble: 8 small tinygrad MLPs trained at once, as one batched model, with tinyjax.vmap.

Each member is `nn.Linear(2, 32)`, tanh, `nn.Linear(32, 1)`, initialized differently. `tinyjax.nn.stack_params`
stacks the 8 members' parameters on a new leading axis; one training step is

    grads = tinyjax.vmap(tinyjax.grad(loss), in_axes=(0, None, None))(stacked, x, y)   # every member, same batch
    updates, state = adam.update(grads, state); stacked = apply_updates(stacked, updates)

with `tinyjax.optim.adam` on the stacked pytree (its moments are stacked too; Adam is elementwise, so this is each
member's own Adam), all under `tinyjax.jit`. vmap widens the kernels, it does not repeat them: the jitted ensemble step
launches the kernels of the same step written by hand with a member axis, and as many as ONE member's jitted step
but one (18 and 19 kernels: a single member's bias gradient is a reduction to one number, which tinygrad's scheduler
recomputes inside each kernel that uses it instead of giving it a kernel of its own; see main()).

The toy problem: y = sin(2 x0) cos(x1) + noise, for inputs in [-2, 2]^2. After training, the ensemble's mean
prediction fits the data, and its spread (std over members) is small where there was data and grows away from it,
the usual use of deep ensembles as an uncertainty estimate.
Run: .venv/bin/python examples/deep_ensemble.py
"""
from __future__ import annotations
import sys, time
from pathlib import Path
import numpy as np
from tinygrad import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinyjax
from tinyjax import optim
from tinyjax.nn import params as model_params, functional_call, stack_params


class MLP:
  def __init__(self, hidden: int = 32, out: int = 1):
    self.l1, self.l2 = nn.Linear(2, hidden), nn.Linear(hidden, out)
  def __call__(self, x: Tensor) -> Tensor: return self.l2(self.l1(x).tanh())


def init_members(k: int, seed: int, out: int = 1) -> list[MLP]:
  """k MLPs, each initialized from its own numpy seed (tinygrad's default scale: uniform(-1/sqrt(fan_in), ...))."""
  models = []
  for i in range(k):
    r, m = np.random.default_rng([seed, i]), MLP(out=out)
    for layer in (m.l1, m.l2):
      bound = 1 / np.sqrt(layer.weight.shape[1])
      layer.weight = Tensor(r.uniform(-bound, bound, layer.weight.shape).astype(np.float32))
      layer.bias = Tensor(r.uniform(-bound, bound, layer.bias.shape).astype(np.float32))
    models.append(m)
  return models


def target(x: np.ndarray) -> np.ndarray: return (np.sin(2 * x[:, 0]) * np.cos(x[:, 1]))[:, None]

def make_data(n: int, seed: int, noise: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
  r = np.random.default_rng(seed)
  x = r.uniform(-2, 2, (n, 2)).astype(np.float32)
  return x, (target(x) + noise * r.standard_normal((n, 1))).astype(np.float32)


def loss_fn(model: MLP):
  def loss(p, x: Tensor, y: Tensor) -> Tensor: return ((functional_call(model, p, x) - y) ** 2).mean()
  return loss


def make_steps(model: MLP, tx: optim.GradientTransformation):
  """(one member's jitted step, the ensemble's jitted step), each (p, opt_state, x, y) -> (p, opt_state, loss); the
  ensemble's takes stacked params and state and returns the k losses."""
  loss = loss_fn(model)
  def one_step(p, state, x, y):
    value, g = tinyjax.value_and_grad(loss)(p, x, y)
    updates, state = tx.update(g, state)
    return optim.apply_updates(p, updates), state, value
  def ensemble_step(p, state, x, y):
    values, g = tinyjax.vmap(tinyjax.value_and_grad(loss), in_axes=(0, None, None))(p, x, y)
    updates, state = tx.update(g, state)
    return optim.apply_updates(p, updates), state, values
  return tinyjax.jit(one_step), tinyjax.jit(ensemble_step)


def predict(model: MLP, stacked, x: np.ndarray) -> np.ndarray:
  """Every member's prediction at x: (k, n)."""
  return tinyjax.vmap(lambda p, x: functional_call(model, p, x), in_axes=(0, None))(stacked, Tensor(x)).numpy()[..., 0]


def train_ensemble(k: int, steps: int, seed: int, lr: float = 0.01, n: int = 128, verbose: bool = False):
  """Train k members at once for `steps` full-batch Adam steps on n points. Returns (stacked final params,
  losses (steps, k): each member's loss before each step)."""
  models = init_members(k, seed)
  stacked = stack_params(models)
  x, y = (Tensor(a) for a in make_data(n, seed))
  tx = optim.adam(lr)
  _, step = make_steps(models[0], tx)
  state = tx.init(stacked)
  losses = []
  t0 = time.perf_counter()
  for i in range(steps):
    stacked, state, values = step(stacked, state, x, y)
    losses.append(values.numpy())
    if i == 0: t_first = time.perf_counter() - t0
  if verbose:
    print(f"  {steps} steps: first (trace + compile) {t_first:.2f} s, then "
          f"{(time.perf_counter() - t0 - t_first) / max(1, steps - 1) * 1e3:.2f} ms per step for all {k} members")
  return stacked, np.array(losses)


def main(k: int = 8, steps: int = 2000, seed: int = 0):
  print(f"deep ensemble: {k} MLPs (Linear(2, 32), tanh, Linear(32, 1)) trained at once on y = sin(2 x0) cos(x1) + noise")
  stacked, losses = train_ensemble(k, steps, seed, verbose=True)
  print("  loss of each member, first step -> last:")
  for i in range(k): print(f"    member {i}: {losses[0, i]:.4f} -> {losses[-1, i]:.5f}")

  # the same step for one member alone: kernels and time
  model = init_members(1, seed)[0]
  tx = optim.adam(0.01)
  one, ens = make_steps(model, tx)
  p1 = stack_params(init_members(k, seed))
  x, y = (Tensor(a) for a in make_data(128, seed))
  n_one = len(one.kernels(model_params(model), tx.init(model_params(model)), x, y))
  n_ens = len(ens.kernels(p1, tx.init(p1), x, y))
  print(f"  kernels per jitted step: one member {n_one}, all {k} members {n_ens}")
  if n_ens == n_one + 1:
    print("    (the one more: one member's l2.bias gradient is a reduction to ONE number, which tinygrad's scheduler\n"
          "     recomputes inside each of the 3 kernels using it (bias, Adam's mu, nu); the ensemble's is k numbers, which it\n"
          "     computes once in a kernel of its own. The same ensemble written by hand with a member axis launches the same\n"
          "     kernels as the vmapped one; with 2 outputs instead of 1, one member and the ensemble launch equally many)")
  t = time.perf_counter()
  p, st = model_params(model), tx.init(model_params(model))
  for _ in range(200): p, st, v = one(p, st, x, y)
  v.numpy()
  t_one = (time.perf_counter() - t) / 200
  print(f"  one member alone: {t_one * 1e3:.2f} ms per step (x {k} = {t_one * k * 1e3:.2f} ms for {k} members one after the other)")

  # the ensemble's mean and spread: on the training domain [-2, 2]^2 and away from it
  print("  ensemble prediction (mean +- std over members) vs the true function:")
  pts = np.array([[0.0, 0.0], [0.5, -1.0], [-1.5, 1.5], [1.0, 1.0], [3.0, 0.0], [4.0, 4.0], [-6.0, 2.0]], np.float32)
  pred = predict(model, stacked, pts)
  for q, mu, sd, t in zip(pts, pred.mean(0), pred.std(0), target(pts)[:, 0], strict=True):
    where = "in the data" if np.abs(q).max() <= 2 else "outside"
    print(f"    x = ({q[0]:5.1f}, {q[1]:5.1f}) [{where:11s}]: {mu:7.3f} +- {sd:.3f}   (true {t:6.3f})")
  xt, yt = make_data(1000, seed + 1, noise=0.0)
  pred = predict(model, stacked, xt)
  print(f"  test RMSE on [-2, 2]^2: ensemble mean {np.sqrt(((pred.mean(0) - yt[:, 0]) ** 2).mean()):.4f}, members "
        f"{', '.join(f'{np.sqrt(((m - yt[:, 0]) ** 2).mean()):.4f}' for m in pred)}")
  return stacked, losses


if __name__ == "__main__":
  main()

"""Differentially private SGD (DP-SGD, Abadi et al. 2016) on a small tinygrad CNN, with per-example gradients.

The model is plain tinygrad (`nn.Conv2d(1, 4, 3)`, relu, flatten, `nn.Linear(144, 10)`), used as a pure function of
its parameters through `tinyjax.nn.functional_call`. One DP-SGD step:

  1. per-example gradients: `tinyjax.vmap(tinyjax.grad(loss_of_params), in_axes=(None, 0, 0))` (params shared,
     one image and label per lane), a dict of (batch, *param.shape) gradients;
  2. each example's gradient clipped to L2 norm C over ALL parameters (g / max(|g| / C, 1));
  3. summed over the batch, Gaussian noise of standard deviation sigma * C added, divided by the batch size;
  4. an SGD update with `tinyjax.optim.sgd` and `apply_updates`.

The whole step runs under `tinyjax.jit`: traced once, then every step replays the same kernels. The noise is drawn
with numpy outside and passed in as an argument, so the jitted function stays deterministic (no RNG state in it).

Data: synthetic 8x8 images, one of 10 classes each: a 3x3 bright "plus" at one of 10 fixed positions, on Gaussian
noise, so a CNN can learn it and the accuracy rises. No privacy accounting (epsilon) is done here.
Run: .venv/bin/python examples/dp_sgd_cnn.py
"""
from __future__ import annotations
import sys, time
from pathlib import Path
import numpy as np
from tinygrad import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinyjax
from tinyjax import optim
from tinyjax.nn import params as model_params, functional_call

# the 10 class positions (top-left corner of the 3x3 plus in the 8x8 image)
POSITIONS = [(0, 0), (0, 5), (5, 0), (5, 5), (2, 2), (0, 2), (2, 0), (5, 2), (2, 5), (3, 3)]


class CNN:
  def __init__(self):
    self.conv = nn.Conv2d(1, 4, 3)
    self.fc = nn.Linear(4 * 6 * 6, 10)
  def __call__(self, x: Tensor) -> Tensor:   # x: (N, 1, 8, 8) -> logits (N, 10)
    return self.fc(self.conv(x).relu().flatten(1))


def init_model(seed: int) -> CNN:
  """A CNN with tinygrad's default initialization (Kaiming uniform), made reproducible by the seed."""
  Tensor.manual_seed(seed)
  m = CNN()
  Tensor.realize(*model_params(m).values())
  return m


def make_data(n: int, seed: int, noise: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
  """n images (n, 1, 8, 8) float32 and one-hot labels (n, 10) float32."""
  rng = np.random.default_rng(seed)
  labels = rng.integers(0, 10, n)
  x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32) * noise
  for i, c in enumerate(labels):
    r, s = POSITIONS[c]
    x[i, 0, r + 1, s:s + 3] += 1.0
    x[i, 0, r:r + 3, s + 1] += 1.0
  return x, np.eye(10, dtype=np.float32)[labels]


def loss_fn(model: CNN):
  """loss_of_params(p, x, y) for ONE example: x (1, 8, 8), y one-hot (10,); cross entropy."""
  def loss_of_params(p, x: Tensor, y: Tensor) -> Tensor:
    logits = functional_call(model, p, x.unsqueeze(0))[0]
    return -(logits.log_softmax() * y).sum()
  return loss_of_params


def batch_loss(model: CNN, p, x: Tensor, y: Tensor) -> Tensor:
  """The mean cross entropy over a batch (x (N, 1, 8, 8), y (N, 10))."""
  return -(functional_call(model, p, x).log_softmax() * y).sum(1).mean()


def private_grad(model: CNN, C: float):
  """(p, x, y, noise) -> the DP-SGD gradient: per-example gradients, each clipped to L2 norm C, summed, noise added
  (noise: a dict like p, already scaled to std sigma * C), divided by the batch size."""
  per_example = tinyjax.vmap(tinyjax.grad(loss_fn(model)), in_axes=(None, 0, 0))
  def grad(p, x: Tensor, y: Tensor, noise):
    g = per_example(p, x, y)                                           # {name: (B, *shape)}
    B = x.shape[0]
    sq = sum((v.reshape(B, -1) ** 2).sum(1) for v in g.values())      # (B,): squared norm over all parameters
    divisor = (sq.sqrt() / C).maximum(1.0)                             # as JAX's DP-SGD example: g / max(|g| / C, 1)
    return {k: ((v / divisor.reshape(B, *([1] * (v.ndim - 1)))).sum(0) + noise[k]) / B for k, v in g.items()}
  return grad


def make_step(model: CNN, C: float, lr: float, jit: bool = True):
  """One DP-SGD step (p, opt_state, x, y, noise) -> (p, opt_state), under tinyjax.jit unless jit=False."""
  tx = optim.sgd(lr)
  g_fn = private_grad(model, C)
  def step(p, state, x, y, noise):
    updates, state = tx.update(g_fn(p, x, y, noise), state)
    return optim.apply_updates(p, updates), state
  return tx, (tinyjax.jit(step) if jit else step)


def draw_noise(rng: np.random.Generator, p, std: float) -> dict[str, Tensor]:
  return {k: Tensor((rng.standard_normal(v.shape) * std).astype(np.float32)) for k, v in p.items()}


def accuracy(model: CNN, p, x: np.ndarray, y: np.ndarray) -> float:
  pred = functional_call(model, p, Tensor(x)).argmax(1).numpy()
  return float((pred == y.argmax(1)).mean())


def dp_sgd(steps: int, batch: int, seed: int, C: float, sigma: float, lr: float = 0.5, n_train: int = 2048,
           verbose: bool = False):
  """Train the CNN with DP-SGD: `steps` steps of `batch` examples sampled from n_train synthetic images.
  Returns (final params, losses): the mean training loss of each step's batch, before that step's update."""
  model = init_model(seed)
  p = model_params(model)
  x_train, y_train = make_data(n_train, seed + 1)
  rng = np.random.default_rng(seed + 2)
  tx, step = make_step(model, C, lr)
  loss_of = tinyjax.jit(lambda p, x, y: batch_loss(model, p, x, y))
  state = tx.init(p)
  losses = []
  t0 = time.perf_counter()
  for i in range(steps):
    idx = rng.choice(n_train, batch, replace=False)
    x, y = Tensor(x_train[idx]), Tensor(y_train[idx])
    losses.append(loss_of(p, x, y).item())
    p, state = step(p, state, x, y, draw_noise(rng, p, sigma * C))
    if i == 0: t_first = time.perf_counter() - t0
    if verbose and (i + 1) % max(1, steps // 10) == 0: print(f"  step {i + 1:4d}: batch loss {losses[-1]:.4f}")
  if verbose:
    t_rest = time.perf_counter() - t0 - t_first
    print(f"  first step (trace + compile) {t_first:.2f} s, then {t_rest / max(1, steps - 1) * 1e3:.1f} ms per step "
          f"(the batch's loss, the noise draw and the jitted step)")
  return p, losses


def main(steps: int = 300, batch: int = 64, C: float = 1.0, sigma: float = 1.0, seed: int = 0):
  print(f"DP-SGD on a tinygrad CNN (Conv2d(1, 4, 3), relu, Linear(144, 10)), synthetic 8x8 images, 10 classes")
  print(f"steps {steps}, batch {batch}, clip norm C = {C}, noise multiplier sigma = {sigma}")
  x_test, y_test = make_data(1000, seed + 100)
  m0 = init_model(seed)
  print(f"test accuracy at initialization: {accuracy(m0, model_params(m0), x_test, y_test):.3f}")
  results = {}
  for name, c, s in ((f"DP-SGD (C = {C}, sigma = {sigma})", C, sigma), (f"clipped SGD, no noise (C = {C}, sigma = 0)", C, 0.0),
                      ("plain SGD (no clipping, no noise)", 1e9, 0.0)):
    print(f"{name}:")
    t = time.perf_counter()
    p, losses = dp_sgd(steps, batch, seed, c, s, verbose=True)
    dt = time.perf_counter() - t
    acc = accuracy(CNN(), p, x_test, y_test)
    results[name] = acc
    print(f"  loss {np.mean(losses[:10]):.3f} (first 10 steps) -> {np.mean(losses[-10:]):.3f} (last 10); "
          f"test accuracy {acc:.3f}; {dt:.1f} s in all")
  return results


if __name__ == "__main__":
  main()

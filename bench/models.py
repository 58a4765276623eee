"""tinygrad models under transforms (issue 14), side by side in one run:

  ensemble      k = 8 MLPs (64-128-10, batch 256) evaluated at once: tinyjax.jit(vmap(functional_call)) over
                stack_params, vs k separate TinyJit calls of the models (hand), vs jax.jit(vmap) of the same MLP
  per-example   per-example gradients of a small CNN (Conv2d(1, 8, 3), relu, Linear to 10; 12x12 images, batch 64):
                tinyjax.jit(vmap(grad(functional_call))), vs a hand-written loop of 64 backward passes under one
                TinyJit, vs jax.jit(vmap(grad))

  python -m bench.models
Median per call after warm-up (device synchronized), kernels per call, and a check of the values against the hand
version. Writes bench/out/models.md.
"""
from __future__ import annotations
import statistics, time
from pathlib import Path
import numpy as np
import bench.run   # noqa: F401  (JAX on the CPU, tinygrad's compile cache off)
import jax
from tinygrad import Tensor, TinyJit, Device, nn
from tinygrad.helpers import GlobalCounters
import tinyjax
from tinyjax.nn import functional_call, stack_params, params

OUT = Path(__file__).parent / "out"

def timed(fn, sync, n: int = 50) -> float:
  fn()
  fn()
  sync()
  ts = []
  for _ in range(n):
    t0 = time.perf_counter()
    fn()
    sync()
    ts.append(time.perf_counter() - t0)
  return statistics.median(ts)

def kernels(fn) -> int:
  Device[Device.DEFAULT].synchronize()
  GlobalCounters.kernel_count = 0
  fn()
  Device[Device.DEFAULT].synchronize()
  return GlobalCounters.kernel_count

def tg_sync(): Device[Device.DEFAULT].synchronize()

class MLP:
  def __init__(self, d=64, h=128, o=10): self.l1, self.l2 = nn.Linear(d, h), nn.Linear(h, o)
  def __call__(self, x): return self.l2(self.l1(x).relu())

class CNN:
  def __init__(self): self.c, self.l = nn.Conv2d(1, 8, 3), nn.Linear(8 * 10 * 10, 10)
  def __call__(self, x): return self.l(self.c(x).relu().flatten(1))

def ensemble(k: int = 8, B: int = 256) -> dict:
  Tensor.manual_seed(0)
  models = [MLP() for _ in range(k)]
  for m in models: Tensor.realize(*nn.state.get_parameters(m))
  X = Tensor(np.random.default_rng(0).standard_normal((B, 64)).astype(np.float32)).realize()
  stacked = {n: t.realize() for n, t in stack_params(models).items()}
  tj = tinyjax.jit(tinyjax.vmap(lambda p, x: functional_call(models[0], p, x), in_axes=(0, None)))
  hands = [TinyJit(lambda x, m=m: m(x).realize()) for m in models]
  def hand(): return [h(X) for h in hands]
  P = {n: t.numpy() for n, t in stacked.items()}
  def mlp_j(p, x): return jax.nn.relu(x @ p["l1.weight"].T + p["l1.bias"]) @ p["l2.weight"].T + p["l2.bias"]
  jj = jax.jit(jax.vmap(mlp_j, in_axes=(0, None)))
  Xj = X.numpy()
  got, want = tj(stacked, X).numpy(), np.stack([o.numpy() for o in hand()])
  ok = np.allclose(got, want, rtol=1e-4, atol=1e-5) and np.allclose(np.asarray(jj(P, Xj)), want, rtol=1e-4, atol=1e-4)
  return dict(case=f"ensemble k={k} MLP 64-128-10", size=f"batch {B}",
              tinyjax=timed(lambda: tj(stacked, X), tg_sync), hand=timed(hand, tg_sync),
              jax=timed(lambda: jax.block_until_ready(jj(P, Xj)), lambda: None), k_tinyjax=kernels(lambda: tj(stacked, X)),
              k_hand=kernels(hand),
              hand_desc=f"{k} TinyJit calls", ok=ok)

def per_example(B: int = 64) -> dict:
  Tensor.manual_seed(1)
  m = CNN()
  Tensor.realize(*nn.state.get_parameters(m))
  rng = np.random.default_rng(1)
  X = Tensor(rng.standard_normal((B, 1, 12, 12)).astype(np.float32)).realize()
  Y = Tensor(rng.integers(0, 10, B).astype(np.int32)).realize()
  p = params(m)
  def loss(p, x, y): return functional_call(m, p, x[None]).sparse_categorical_crossentropy(y[None])
  tj = tinyjax.jit(tinyjax.vmap(tinyjax.grad(loss), in_axes=(None, 0, 0)))
  names = list(p)
  def loop(x, y):
    out = []
    for i in range(B):
      for t in p.values(): t.grad = None
      m(x[i:i + 1]).sparse_categorical_crossentropy(y[i:i + 1]).backward()
      out.append([p[n].grad for n in names])
    return [Tensor.stack(*[o[j] for o in out]).realize() for j in range(len(names))]
  hand = TinyJit(loop)
  import jax.lax as lax
  def cnn_j(q, x):
    h = lax.conv_general_dilated(x[None], q["c.weight"], (1, 1), "VALID") + q["c.bias"][None, :, None, None]
    return jax.nn.relu(h).reshape(1, -1) @ q["l.weight"].T + q["l.bias"]
  def loss_j(q, x, y): return -jax.nn.log_softmax(cnn_j(q, x))[0, y]
  jj = jax.jit(jax.vmap(jax.grad(loss_j), in_axes=(None, 0, 0)))
  P, Xj, Yj = {n: t.numpy() for n, t in p.items()}, X.numpy(), Y.numpy()
  got = tj(p, X, Y)
  want = dict(zip(names, [t.numpy() for t in hand(X, Y)], strict=True))
  hand(X, Y)
  ok = all(np.allclose(got[n].numpy(), want[n], rtol=1e-3, atol=1e-5) for n in names)
  ok = ok and all(np.allclose(np.asarray(v), want[n], rtol=1e-3, atol=1e-4) for n, v in jj(P, Xj, Yj).items())
  return dict(case="per-example grads CNN", size=f"batch {B}, 12x12", tinyjax=timed(lambda: tj(p, X, Y), tg_sync),
              hand=timed(lambda: hand(X, Y), tg_sync), jax=timed(lambda: jax.block_until_ready(jj(P, Xj, Yj)), lambda: None),
              k_tinyjax=kernels(lambda: tj(p, X, Y)), k_hand=kernels(lambda: hand(X, Y)),
              hand_desc=f"loop of {B} backward passes, one TinyJit", ok=ok)

def main():
  rows = [ensemble(), per_example()]
  lines = ["| case | size | tinyjax.jit | hand-written tinygrad | JAX (jax.jit) | tinyjax / hand | kernels tinyjax / hand | hand | check |",
           "|---|---|---|---|---|---|---|---|---|"]
  for r in rows:
    lines.append(f"| {r['case']} | {r['size']} | {r['tinyjax'] * 1e6:.0f} us | {r['hand'] * 1e6:.0f} us | {r['jax'] * 1e6:.0f} us | "
                 f"{r['tinyjax'] / r['hand']:.2f}x | {r['k_tinyjax']} / {r['k_hand']} | {r['hand_desc']} | {'OK' if r['ok'] else 'FAIL'} |")
  OUT.mkdir(exist_ok=True)
  (OUT / "models.md").write_text("\n".join(lines) + "\n")
  print("\n".join(lines))

if __name__ == "__main__":
  main()

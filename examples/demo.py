"""tinyjax demo: JAX's transforms on tinygrad, on small built-in problems. Run with `bash scripts/demo.sh`."""
import time
import numpy as np
from tinygrad import Tensor
from tinygrad.helpers import GlobalCounters
import tinyjax

rng = np.random.default_rng(0)


def section(title: str): print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def kernels(t: Tensor) -> int:
  GlobalCounters.reset()
  t.realize()
  return GlobalCounters.kernel_count


def demo_vmap():
  section("vmap: a per-example MLP layer, batched without a Python loop")
  W, b = (Tensor(rng.standard_normal(s, dtype=np.float32)).realize() for s in ((8, 4), 4))
  layer = lambda x: (x @ W + b).relu().softmax()
  X = rng.standard_normal((256, 8), dtype=np.float32)
  out = tinyjax.vmap(layer)(Tensor(X).realize())
  n = kernels(out)
  ref = np.stack([layer(Tensor(x)).numpy() for x in X[:4]])
  print(f"vmap(layer)(X): X {X.shape} -> {tuple(out.shape)} in {n} kernels; first rows match a per-example loop: "
        f"{np.allclose(out.numpy()[:4], ref, atol=1e-6)}")
  hand = (Tensor(X).realize() @ W + b).relu().softmax(-1)
  print(f"hand-batched tinygrad: {kernels(hand)} kernels, max |diff| = {np.abs(hand.numpy() - out.numpy()).max():.1e}")

  section("vmap: in_axes / out_axes / pytrees, as in JAX")
  A = rng.standard_normal((3, 5), dtype=np.float32)
  f = lambda p, y: {"scaled": p["a"] * y, "norm": (p["a"] * p["a"]).sum().sqrt()}
  res = tinyjax.vmap(f, in_axes=({"a": 1}, None), out_axes={"scaled": 1, "norm": 0})({"a": Tensor(A)}, 2.0)
  print(f"in_axes=({{'a': 1}}, None): scaled {tuple(res['scaled'].shape)}, norm {np.round(res['norm'].numpy(), 3)}")
  print(f"numpy check: {np.allclose(res['norm'].numpy(), np.linalg.norm(A, axis=0), atol=1e-5)}")

  section("vmap: named axes and collectives")
  Z = rng.standard_normal((4, 3), dtype=np.float32)
  center = tinyjax.vmap(lambda z: z - tinyjax.lax.pmean(z, "batch"), axis_name="batch")
  print(f"x - pmean(x, 'batch'): column means after centering = {np.round(center(Tensor(Z)).numpy().mean(0), 6)}")

  section("vmap: nested six deep")
  Y = rng.standard_normal((2, 2, 2, 2, 2, 2, 3), dtype=np.float32)
  g = lambda v: v.pad(((1, 1),)).sum() * v
  for _ in range(6): g = tinyjax.vmap(g)
  t0 = time.perf_counter(); out6 = g(Tensor(Y)); t1 = time.perf_counter()
  print(f"vmap^6(f)(Y): {tuple(out6.shape)}, traced+rewritten in {1e3 * (t1 - t0):.1f} ms, "
        f"{kernels(out6)} kernel(s), matches numpy: {np.allclose(out6.numpy(), Y.sum(-1, keepdims=True) * Y, atol=1e-5)}")


if __name__ == "__main__":
  demo_vmap()

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


def demo_autodiff():
  section("jvp under vmap: a batch of directional derivatives (the research pattern)")
  x = Tensor(rng.standard_normal(5))
  f = lambda x: (x.sin() * x).sum() + (x[1:] - x[:-1]).square().sum()
  V = Tensor(np.eye(5))
  _, dirs = tinyjax.vmap(tinyjax.jvp(f), in_axes=(None, 0))((x,), (V,))
  g = tinyjax.grad(f)(x)
  print(f"vmap(jvp(f)) over the identity = grad f: {np.allclose(dirs.numpy(), g.numpy())}")
  H = tinyjax.hessian(f)(x).numpy()
  hvp = tinyjax.jvp(tinyjax.grad(f), (x,), (V[0],))[1].numpy()
  print(f"hessian(f) is {H.shape}, symmetric: {np.allclose(H, H.T)}; jvp(grad(f)) = H @ e0: {np.allclose(hvp, H[:, 0])}")

  section("per-example gradients: vmap(grad(loss), in_axes=(None, 0, 0))")
  W = Tensor(rng.standard_normal((3, 2)))
  X, Y = Tensor(rng.standard_normal((8, 3))), Tensor(rng.standard_normal((8, 2)))
  loss = lambda W, x, y: ((x @ W).tanh() - y).square().sum()
  per_ex = tinyjax.vmap(tinyjax.grad(loss), in_axes=(None, 0, 0))(W, X, Y)
  total = tinyjax.grad(lambda W: sum(loss(W, X[i], Y[i]) for i in range(8)))(W)
  print(f"{tuple(per_ex.shape)} per-example gradients; their sum equals the batch gradient: "
        f"{np.allclose(per_ex.numpy().sum(0), total.numpy())}")


def demo_sparse(n: int = 1000, lam: float = 1.0):
  section(f"Newton's method with a sparse Jacobian: 1-D Bratu problem, n = {n}")
  import scipy.sparse.linalg as spla
  h = 1.0 / (n + 1)
  def F(u):
    up = u.pad(((1, 1),))
    return (up[:-2] - 2 * u + up[2:]) / (h * h) + lam * u.exp()
  u = Tensor(np.zeros(n))
  t0 = time.perf_counter(); J = tinyjax.spjacobian(F, u); t_build = time.perf_counter() - t0
  jac = tinyjax.jit(J)
  print(f"{J!r}".splitlines()[0] + f"  (detection + coloring {1e3 * t_build:.0f} ms)")
  for it in range(10):
    r = F(u).numpy()
    print(f"  iteration {it}: |F(u)| = {np.linalg.norm(r):.3e}")
    if np.linalg.norm(r) < 1e-9: break
    A = J.matrix(jac(u))        # the nonzeros, replayed by TinyJit, in J's fixed CSR pattern
    u = Tensor(u.numpy() + spla.spsolve(A.tocsc(), -r))
  def timed(fn, reps=5):
    fn(); fn(); ts = []
    for _ in range(reps):
      t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))
  t_sparse = timed(lambda: jac(u).numpy())
  dense = tinyjax.jit(tinyjax.jacfwd(F))
  t_dense = timed(lambda: dense(u).numpy())
  print(f"time per Jacobian: sparse {t_sparse:.2f} ms ({J.ncolors} JVPs) vs dense jacfwd {t_dense:.2f} ms ({n} JVPs); "
        f"same values: {np.allclose(J.todense(u), dense(u).numpy())}")


if __name__ == "__main__":
  demo_vmap()
  demo_autodiff()
  demo_sparse()

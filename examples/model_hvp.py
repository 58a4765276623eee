"""Hessian-vector products of a tinygrad model's loss with respect to its parameters, and what they are used for.

The model is plain tinygrad (`nn.Linear(3, 16)`, tanh, `nn.Linear(16, 1)`, float64), its loss a function of the
parameters through `tinyjax.nn.functional_call`. The Hessian-vector product is forward-over-reverse:

    hvp(p, v) = tinyjax.jvp(tinyjax.grad(loss), (p,), (v,))[1]        # H v, never forming H

one gradient's cost times a small constant, for a dict of parameters p and a direction v of the same shape.
This example
  1. checks H v against a central finite difference of gradients, (grad(p + eps v) - grad(p - eps v)) / (2 eps);
  2. builds the whole (81 x 81) Hessian as `tinyjax.vmap(hvp)` over the basis vectors, to check what follows;
  3. finds the Hessian's largest eigenvalue (in magnitude) by power iteration on jitted HVPs;
  4. trains the model by truncated Newton (Newton-CG): each step solves (H + lam I) d = -g approximately by a few
     conjugate-gradient iterations, each one HVP, and compares with plain gradient descent.
Run: .venv/bin/python examples/model_hvp.py
"""
from __future__ import annotations
import sys, time
from pathlib import Path
import numpy as np
from tinygrad import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinyjax
from tinyjax.nn import params as model_params, functional_call


class MLP:
  def __init__(self, n_in: int = 3, hidden: int = 16):
    self.l1, self.l2 = nn.Linear(n_in, hidden), nn.Linear(hidden, 1)
  def __call__(self, x: Tensor) -> Tensor: return self.l2(self.l1(x).tanh())


def init_model(seed: int, n_in: int = 3, hidden: int = 16) -> MLP:
  """An MLP with float64 weights drawn with numpy (scale 1/sqrt(fan_in))."""
  r, m = np.random.default_rng(seed), MLP(n_in, hidden)
  for layer in (m.l1, m.l2):
    layer.weight = Tensor(r.standard_normal(layer.weight.shape) / np.sqrt(layer.weight.shape[1]))
    layer.bias = Tensor(r.standard_normal(layer.bias.shape) * 0.1)
  return m


def make_data(n: int, seed: int, n_in: int = 3) -> tuple[np.ndarray, np.ndarray]:
  r = np.random.default_rng(seed)
  x = r.uniform(-1, 1, (n, n_in))
  return x, (np.sin(2 * x[:, :1]) + x[:, 1:2] * x[:, 2:3] + 0.05 * r.standard_normal((n, 1)))


def loss(model: MLP, p, x: Tensor, y: Tensor) -> Tensor: return ((functional_call(model, p, x) - y) ** 2).mean()


def hvp(model: MLP, params, v, x: Tensor, y: Tensor):
  """H v: the Hessian of the model's loss at `params`, times `v` (both dicts name -> Tensor), as a dict."""
  return tinyjax.jvp(tinyjax.grad(lambda p: loss(model, p, x, y)), (params,), (v,))[1]


# ---- flat numpy vectors <-> parameter dicts (for the linear algebra) ------------------------------------------------

def flatten(p) -> np.ndarray: return np.concatenate([np.asarray(t.numpy() if isinstance(t, Tensor) else t).ravel() for t in p.values()])

def unflatten(vec: np.ndarray, like) -> dict[str, Tensor]:
  out, i = {}, 0
  for k, t in like.items():
    n = int(np.prod(t.shape))
    out[k] = Tensor(np.ascontiguousarray(vec[i:i + n].reshape(t.shape)))
    i += n
  return out


def flat_hvp(model: MLP):
  """The jitted HVP on flat vectors, (p, u, x, y) -> H u with u and H u 1-D Tensors (split and joined inside the jit):
  what numpy's linear algebra calls, one Tensor in and one out per product (4x cheaper than a dict of 4 Tensors from
  numpy, each its own copy)."""
  def f(p, u: Tensor, x: Tensor, y: Tensor) -> Tensor:
    v, i = {}, 0
    for k, t in p.items():
      n = int(np.prod(t.shape))
      v[k] = u[i:i + n].reshape(t.shape)
      i += n
    return Tensor.cat(*[h.flatten() for h in hvp(model, p, v, x, y).values()])
  return tinyjax.jit(f)


def dense_hessian(model: MLP, p, x: Tensor, y: Tensor) -> np.ndarray:
  """The whole Hessian (n x n, n = number of parameters): vmap of hvp over the n basis vectors, in one batched pass."""
  eye = np.eye(sum(int(np.prod(t.shape)) for t in p.values()))
  basis, i = {}, 0
  for k, t in p.items():   # row j of basis[k] is basis vector j's part in parameter k
    m = int(np.prod(t.shape))
    basis[k] = Tensor(np.ascontiguousarray(eye[:, i:i + m].reshape(len(eye), *t.shape)))
    i += m
  H = tinyjax.vmap(lambda e: hvp(model, p, e, x, y))(basis)
  return np.concatenate([h.numpy().reshape(len(eye), -1) for h in H.values()], axis=1)


def power_iteration(Hv, n: int, iters: int, seed: int = 0) -> tuple[float, np.ndarray]:
  """The eigenvalue of largest magnitude of the symmetric operator Hv (numpy vector -> numpy vector)."""
  u = np.random.default_rng(seed).standard_normal(n)
  u /= np.linalg.norm(u)
  lam = 0.0
  for _ in range(iters):
    w = Hv(u)
    lam = float(u @ w)   # Rayleigh quotient
    u = w / np.linalg.norm(w)
  return lam, u


def conjugate_gradient(Av, b: np.ndarray, iters: int, tol: float = 1e-10) -> tuple[np.ndarray | None, int]:
  """Approximately solve A x = b (A symmetric, given as Av) with at most `iters` CG iterations: (x, iterations), or
  (None, iterations) if A showed a direction of negative curvature (A is not positive definite)."""
  x, r = np.zeros_like(b), b.copy()
  d, rr = r.copy(), r @ r
  for i in range(iters):
    Ad = Av(d)
    curv = d @ Ad
    if curv <= 0: return None, i + 1
    alpha = rr / curv
    x, r = x + alpha * d, r - alpha * Ad
    rr_new = r @ r
    if np.sqrt(rr_new) <= tol * np.linalg.norm(b): return x, i + 1
    d, rr = r + (rr_new / rr) * d, rr_new
  return x, iters


def newton_cg(model: MLP, p, x: Tensor, y: Tensor, steps: int, cg_iters: int, damping: float = 1.0, verbose: bool = True):
  """Damped truncated Newton (Levenberg-Marquardt damping on the true Hessian): each step solves (H + lam I) d = -g by
  at most cg_iters CG iterations on jitted HVPs; a step that does not lower the loss (or meets negative curvature) is
  retried with lam * 10, an accepted one divides lam by 3. Returns (params, losses, HVPs + gradients evaluated)."""
  grad_fn = tinyjax.jit(tinyjax.grad(lambda p, x, y: loss(model, p, x, y)))
  hvp_fn = flat_hvp(model)
  loss_fn = tinyjax.jit(lambda p, x, y: loss(model, p, x, y))
  w, evals = flatten(p), 0
  losses = [loss_fn(p, x, y).item()]
  for it in range(steps):
    pw = unflatten(w, p)
    g = flatten(grad_fn(pw, x, y))
    evals += 1
    while True:
      d, used = conjugate_gradient(lambda u: hvp_fn(pw, Tensor(u), x, y).numpy() + damping * u, -g, cg_iters)
      evals += used
      new = loss_fn(unflatten(w + d, p), x, y).item() if d is not None else np.inf
      if new < losses[-1]: break
      damping *= 10
      if damping > 1e12: return unflatten(w, p), losses, evals   # no step lowers the loss any more (g ~ 0)
    w = w + d
    losses.append(new)
    if verbose: print(f"   Newton step {it + 1}: loss {new:.6e}   |g| {np.linalg.norm(g):.2e}   lam {damping:.1e}   {used} CG iterations")
    damping = max(damping / 3, 1e-8)
  return unflatten(w, p), losses, evals


def main(n: int = 256, newton_steps: int = 20, cg_iters: int = 30, seed: int = 0):
  model = init_model(seed)
  p = model_params(model)
  xn, yn = make_data(n, seed + 1)
  x, y = Tensor(xn), Tensor(yn)
  nparams = sum(int(np.prod(t.shape)) for t in p.values())
  print(f"MLP Linear(3, 16), tanh, Linear(16, 1) in float64: {nparams} parameters, mean squared error on {n} points")

  # 1. H v against a finite difference of gradients
  v = unflatten(np.random.default_rng(seed + 2).standard_normal(nparams), p)
  grad_fn = tinyjax.jit(tinyjax.grad(lambda p, x, y: loss(model, p, x, y)))
  hvp_fn = tinyjax.jit(lambda p, v, x, y: hvp(model, p, v, x, y))
  hv = flatten(hvp_fn(p, v, x, y))
  eps = 1e-5
  shifted = lambda s: {k: t + s * eps * v[k] for k, t in p.items()}
  fd = (flatten(grad_fn(shifted(1), x, y)) - flatten(grad_fn(shifted(-1), x, y))) / (2 * eps)
  print(f"1. H v vs central difference of gradients (eps {eps}): max |diff| / max |Hv| = "
        f"{np.abs(hv - fd).max() / np.abs(hv).max():.1e}")
  t = time.perf_counter()
  for _ in range(20): hvp_fn(p, v, x, y)["l2.bias"].numpy()
  t_hvp = (time.perf_counter() - t) / 20
  t = time.perf_counter()
  for _ in range(20): grad_fn(p, x, y)["l2.bias"].numpy()
  t_grad = (time.perf_counter() - t) / 20
  print(f"   jitted: {t_hvp * 1e3:.2f} ms per HVP, {t_grad * 1e3:.2f} ms per gradient")

  # 2. the dense Hessian, one HVP per basis vector, all at once with vmap
  H = dense_hessian(model, p, x, y)
  eig = np.linalg.eigvalsh((H + H.T) / 2)
  print(f"2. dense Hessian from vmap(hvp) over the {nparams} basis vectors: |H - H^T| max {np.abs(H - H.T).max():.1e}; "
        f"eigenvalues from {eig[0]:.4g} to {eig[-1]:.4g}")

  # 3. the largest eigenvalue by power iteration
  hvp_flat = flat_hvp(model)
  Hv = lambda u: hvp_flat(p, Tensor(u), x, y).numpy()
  t = time.perf_counter()
  top, _ = power_iteration(Hv, nparams, 100, seed)
  print(f"3. power iteration, 100 HVPs ({time.perf_counter() - t:.2f} s): top eigenvalue {top:.10g} "
        f"(numpy eigvalsh of the dense Hessian: {eig[np.abs(eig).argmax()]:.10g})")

  # 4. Newton-CG vs gradient descent with step 1 / top eigenvalue (about the largest stable step)
  print(f"4. truncated Newton: (H + lam I) d = -g by at most {cg_iters} CG iterations (one HVP each), adaptive lam")
  lam0 = 1.0
  g0 = flatten(grad_fn(p, x, y))
  d, used = conjugate_gradient(lambda u: Hv(u) + lam0 * u, -g0, nparams)
  exact = np.linalg.solve(H + lam0 * np.eye(nparams), -g0)
  print(f"   CG on (H + {lam0} I) d = -g at the start vs numpy's dense solve: relative error "
        f"{np.linalg.norm(d - exact) / np.linalg.norm(exact):.1e} after {used} CG iterations")
  t = time.perf_counter()
  _, losses, evals = newton_cg(model, p, x, y, newton_steps, cg_iters, damping=lam0)
  t_newton = time.perf_counter() - t
  gd_step = tinyjax.jit(lambda p, x, y: {k: w - (1 / top) * g for (k, w), g in
                                         zip(p.items(), tinyjax.grad(lambda p: loss(model, p, x, y))(p).values(), strict=True)})
  pg = p
  t = time.perf_counter()
  for _ in range(evals): pg = gd_step(pg, x, y)
  loss_gd = loss(model, pg, x, y).item()
  print(f"   Newton-CG: loss {losses[0]:.4e} -> {losses[-1]:.4e} with {evals} HVPs + gradients ({t_newton:.2f} s)")
  print(f"   gradient descent, {evals} steps of 1/lambda_max: loss {losses[0]:.4e} -> {loss_gd:.4e} "
        f"({time.perf_counter() - t:.2f} s)")


if __name__ == "__main__":
  main()

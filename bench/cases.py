"""The benchmark cases, one row each: a tinyjax transform, its JAX twin and the same result written by hand in tinygrad.
bench/run.py times, counts kernels and checks every row the same way; adding a case is adding a row to cases()."""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
import numpy as np, scipy.sparse as sp
import jax, jax.numpy as jnp
from tinygrad import Tensor
import tinyjax
from examples import problems

DENSE_MAX = 5000   # the dense jax.jacfwd on spjacobian rows only up to n (n x n float32 = 100 MB)

@dataclass
class Case:
  name: str
  size: str
  inputs: list[np.ndarray]
  tj: Callable                          # on Tensors: the tinyjax transform (run under tinyjax.jit)
  jx: Callable                          # on jnp arrays: the JAX twin (run under jax.jit); its result is the reference
  hand: Callable | None = None          # on Tensors: hand-written tinygrad (run under TinyJit)
  hand_np: Callable | None = None       # hand's first output as numpy -> something comparable with JAX's (a layout)
  setup: bool = False                   # tj and jx are one-time setups (timed apart) returning the functions to jit
  dense: Callable | None = None         # on jnp arrays: a dense JAX variant (the 'JAX dense' column)
  doc: str = ""                         # what the case is, for the Cases section of the page (once per group)

def twin(transform, f_tg, f_jnp) -> dict:
  """tinyjax is JAX's API: one transform written once, applied with each library to the function written for it."""
  return {"tj": transform(tinyjax, f_tg), "jx": transform(jax, f_jnp)}

def rand(seed, *shape, scale=1.0) -> np.ndarray: return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
def unif(seed, n) -> np.ndarray: return np.random.default_rng(seed).uniform(0, 1, n).astype(np.float32)

# ---- dense transforms: an MLP, and g(x) = tanh(tanh(x W1) W2), f = sum(g), with closed-form derivatives -----------------

def mlp(x, W1, b1, W2, b2): return (x @ W1 + b1).relu() @ W2 + b2   # one example x: (d,); unchanged on a batch (B, d)
def mlp_jnp(x, W1, b1, W2, b2): return jax.nn.relu(x @ W1 + b1) @ W2 + b2

def g(x, W1, W2): return (x @ W1).tanh().matmul(W2).tanh()
def f(x, W1, W2): return g(x, W1, W2).sum()
def g_jnp(x, W1, W2): return jnp.tanh(jnp.tanh(x @ W1) @ W2)
def f_jnp(x, W1, W2): return g_jnp(x, W1, W2).sum()
def loss(params, x, y): return ((x @ params[0]).tanh().matmul(params[1]) - y).square().mean()
def loss_jnp(params, x, y): return jnp.mean(jnp.square(jnp.tanh(x @ params[0]) @ params[1] - y))

# closed forms: z = tanh(x W1), y = tanh(z W2), s1 = 1 - z^2, s2 = 1 - y^2
def jac_hand(x, W1, W2):
  z = (x @ W1).tanh()
  y = (z @ W2).tanh()
  return ((1 - y * y).unsqueeze(1) * W2.T * (1 - z * z)) @ W1.T                       # (n_out, n_in)

def _hess_parts(x, W1, W2):
  z = (x @ W1).tanh()
  y = (z @ W2).tanh()
  s1, s2 = 1 - z * z, 1 - y * y
  w2s2 = W2 @ s2
  return s1, w2s2, w2s2 * (-2 * z * s1), -2 * y * s2                                  # s1, W2 s2, d, c

def hess_hand(x, W1, W2):   # H = W1 (diag(d) + S1 W2 diag(c) W2^T S1) W1^T
  s1, _, d, c = _hess_parts(x, W1, W2)
  A = W1 @ (s1.unsqueeze(1) * W2)
  return (W1 * d) @ W1.T + (A * c) @ A.T

def hvp_hand(x, v, W1, W2):
  s1, w2s2, d, c = _hess_parts(x, W1, W2)
  a = W1.T @ v
  return W1 @ (s1 * w2s2), W1 @ (d * a + s1 * (W2 @ (c * (W2.T @ (s1 * a)))))

def per_example_hand(W1, W2, X, Y):
  z = (X @ W1).tanh()
  r = (z @ W2 - Y) * (2 / Y.shape[1])                                                  # dloss/dout: (B, d_out)
  gz = (r @ W2.T) * (1 - z * z)
  return X.unsqueeze(2) * gz.unsqueeze(1), z.unsqueeze(2) * r.unsqueeze(1)

def per_example_step_hand(W1, W2, X, Y, lr=0.1):
  g1, g2 = per_example_hand(W1, W2, X, Y)
  return W1 - lr * g1.mean(0), W2 - lr * g2.mean(0)

def per_example_step(lib, loss, lr=0.1):
  """One SGD step on the mean of the per-example gradients (a DP-SGD step without clipping and noise)."""
  def step(W1, W2, X, Y):
    g1, g2 = lib.vmap(lib.grad(loss), in_axes=(None, 0, 0))((W1, W2), X, Y)
    return W1 - lr * g1.mean(0), W2 - lr * g2.mean(0)
  return step

def newton_step(lib, F):
  """x - J(x)^-1 F(x) with the dense Jacobian from jacfwd and numpy.linalg.solve."""
  return lambda x: x - lib.numpy.linalg.solve(lib.jacfwd(F)(x), F(x))

# ---- spjacobian rows ------------------------------------------------------------------------------------------------

def spjac(name, size, x0, F, F_jnp, hand=None, hand_np=None, doc="") -> Case:
  """jit(spjacobian(F, x0)): the nonzeros in CSR order, vs jit(asdex.jacobian_from_coloring(F, coloring)) (BCOO)."""
  import asdex
  return Case(f"spjacobian {name}", size, [x0], tj=lambda x: tinyjax.spjacobian(F, x), hand=hand, hand_np=hand_np, setup=True,
              jx=lambda x: asdex.jacobian_from_coloring(F_jnp, asdex.jacobian_coloring(F_jnp, x)), doc=doc,
              dense=jax.jacfwd(F_jnp) if x0.shape[0] <= DENSE_MAX else None)

def bratu1d_hand(n):
  """The tridiagonal Jacobian in CSR order: row i holds (i-1, i, i+1), less the first and last rows' outer entries."""
  h2 = (1 / (n + 1)) ** 2
  rows = np.repeat(np.arange(n), 3)[1:-1]
  cols = rows + np.tile([-1, 0, 1], n)[1:-1]
  def hand(u):
    off = Tensor.full((n,), 1 / h2)
    return Tensor.stack(off, -2 / h2 + u.exp(), off, dim=1).flatten()[1:-1]
  return hand, lambda v: sp.csr_matrix((v, (rows, cols)), shape=(n, n))

def bratu2d_hand(k):
  """The five diagonals (DIA layout, (n, 5)): constant off-diagonals where the neighbour is inside, -4/h^2 + exp(u)."""
  n, h2 = k * k, (1 / (k + 1)) ** 2
  i, j = np.divmod(np.arange(n), k)
  inside = np.stack([i > 0, j > 0, np.ones(n, bool), j < k - 1, i < k - 1], axis=1)
  C = Tensor(np.where(inside, 1 / h2, 0).astype(np.float32) * [1, 1, 0, 1, 1]).realize()
  E = Tensor(np.array([0, 0, 1, 0, 0], np.float32)).realize()
  r = np.repeat(np.arange(n), 5).reshape(n, 5)
  return (lambda u: C + (-4 / h2 + u.exp()).unsqueeze(1) * E,
          lambda v: sp.csr_matrix((v[inside], (r[inside], (r + [-k, -1, 0, 1, k])[inside])), shape=(n, n)))

# ---- the rows --------------------------------------------------------------------------------------------------------

def cases(quick: bool) -> list[Case]:
  n1, k2, N = (1000, 32, 20) if quick else (10_000, 100, 50)   # --quick: smaller sparse problems
  B, d = 256, 64
  mlp_in = [rand(1, B, d), rand(2, d, d, scale=d**-0.5), rand(3, d, scale=0.1), rand(4, d, d, scale=d**-0.5), rand(5, d, scale=0.1)]
  pe_in = [rand(6, 32, 64, scale=32**-0.5), rand(7, 64, 8, scale=64**-0.5), rand(8, 64, 32), rand(9, 64, 8)]
  n, h = 32, 64
  jac_in = [rand(10, n), rand(11, n, h, scale=n**-0.5), rand(12, h, n, scale=h**-0.5)]
  s_init = np.array([0, 0, 0, 5], np.float32)
  s_init_t = Tensor(s_init).realize()   # a float32 Tensor: problems.bicycle_constraints makes numpy float64
  nb, mb = problems.bicycle_size(N), problems.NX * (N + 1)
  return [
    Case("batched MLP (vmap)", f"B={B}, {d}-{d}-{d}", mlp_in, **twin(lambda lib, f: lib.vmap(f, in_axes=(0, None, None, None, None)),
         mlp, mlp_jnp), hand=mlp, doc="batched MLP (vmap): `vmap(mlp, in_axes=(0, None, None, None, None))` with mlp(x) = "
         "relu(x W1 + b1) W2 + b2 for one example; hand: the same code applied to the whole batch."),
    Case("per-example grads (vmap grad)", "B=64, MLP 32-64-8", pe_in,
         **twin(lambda lib, loss: lambda W1, W2, X, Y: lib.vmap(lib.grad(loss), in_axes=(None, 0, 0))((W1, W2), X, Y), loss, loss_jnp),
         hand=per_example_hand, doc="per-example grads: `vmap(grad(loss), in_axes=(None, 0, 0))`, loss = mean((tanh(x W1) W2 - y)^2); "
         "hand: the closed-form per-example gradients (bench/cases.py)."),
    Case("jacfwd", f"n={n}, hidden {h}", jac_in, **twin(lambda lib, g: lib.jacfwd(g), g, g_jnp), hand=jac_hand,
         doc="jacfwd / jacrev / hessian / HVP: g(x) = tanh(tanh(x W1) W2), f = sum(g); HVP = `jvp(grad(f), (x,), (v,))`; hand: "
         "closed forms (bench/cases.py). Weights are arguments (no constant folding by XLA)."),
    Case("jacrev", f"n={n}, hidden {h}", jac_in, **twin(lambda lib, g: lib.jacrev(g), g, g_jnp), hand=jac_hand),
    Case("hessian", f"n={n}, hidden {h}", jac_in, **twin(lambda lib, f: lib.hessian(f), f, f_jnp), hand=hess_hand),
    Case("HVP jvp(grad f)", f"n={n}, hidden {h}", [jac_in[0], rand(13, n), *jac_in[1:]],
         **twin(lambda lib, f: lambda x, v, W1, W2: lib.jvp(lambda x: lib.grad(f)(x, W1, W2), (x,), (v,)), f, f_jnp), hand=hvp_hand),
    Case("per-example grad step", "B=8, MLP 32-64-8", [pe_in[0], pe_in[1], pe_in[2][:8], pe_in[3][:8]],
         **twin(per_example_step, loss, loss_jnp), hand=per_example_step_hand,
         doc="small problems (dispatch-bound): one SGD step on the mean of `vmap(grad(loss))` over a batch of 8 (hand: the "
         "closed-form per-example gradients); a Newton step x - solve(jacfwd(F)(x), F(x)) on 1-D Bratu, n = 100 (no "
         "hand-written version: tinygrad has no linear solve)."),
    Case("Newton step 1-D Bratu", "n=100", [unif(100, 100)], **twin(newton_step, problems.bratu1d, problems.bratu1d_jnp)),
    spjac("1-D Bratu", f"n={n1}", unif(n1, n1), problems.bratu1d, problems.bratu1d_jnp, *bratu1d_hand(n1),
          doc="spjacobian: `jit(spjacobian(F, x0))` returns the nonzeros in CSR order; JAX: "
          "`jit(asdex.jacobian_from_coloring(F, asdex.jacobian_coloring(F, x0)))` (BCOO); problems from examples/problems.py. "
          "Hand: the analytic Jacobian (1-D Bratu: CSR values; 2-D Bratu: its five diagonals, DIA layout; bicycle: none)."),
    spjac("2-D Bratu", f"k={k2}, n={k2 * k2}", unif(k2, k2 * k2), lambda u: problems.bratu2d(u, k2),
          lambda u: problems.bratu2d_jnp(u, k2), *bratu2d_hand(k2)),
    spjac("bicycle", f"N={N}, {mb}x{nb}", rand(N, nb, scale=0.5), lambda z: problems.bicycle_constraints(z, N, s_init_t, 0.1),
          lambda z: problems.bicycle_constraints_jnp(z, N, s_init, 0.1)),
  ]

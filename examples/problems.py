"""Built-in problems for tinyjax's sparse derivatives: plain functions on tinygrad Tensors, each with a jax.numpy twin
(the tests' oracle; same formula, written independently with jnp).

- bratu1d:   1-D Bratu residual, 3-point stencil, zero Dirichlet boundaries        -> tridiagonal Jacobian
- bratu2d:   2-D Bratu residual on a k x k grid, 5-point stencil                    -> 5-diagonal (block) Jacobian
- bicycle_constraints: multiple-shooting constraints of an optimal-control problem (kinematic bicycle, one RK4 step
  per stage)                                                                        -> block-banded Jacobian
- picked_pieces: several JVP pieces (tinyjax.jvp inside the function) stacked, flattened, and entries picked out
  one by one with Tensor.stack(*[flat[i] for i in idx])

Import from the examples directory (`import problems`) or with examples/ on sys.path.
"""
from __future__ import annotations
import numpy as np
from tinygrad import Tensor
import tinyjax

# ---- (a) 1-D Bratu ---------------------------------------------------------------------------------------------------

def bratu1d(u: Tensor, lam: float = 1.0) -> Tensor:
  """F_i(u) = (u_{i-1} - 2 u_i + u_{i+1}) / h^2 + lam exp(u_i), u_0 = u_{n+1} = 0, h = 1/(n+1)."""
  n = u.shape[0]
  h = 1.0 / (n + 1)
  up = u.pad((1, 1))
  return (up[:-2] - 2 * u + up[2:]) / h**2 + lam * u.exp()

def bratu1d_jnp(u, lam: float = 1.0):
  import jax.numpy as jnp
  n = u.shape[0]
  h = 1.0 / (n + 1)
  up = jnp.pad(u, (1, 1))
  return (up[:-2] - 2 * u + up[2:]) / h**2 + lam * jnp.exp(u)

# ---- (b) 2-D Bratu ---------------------------------------------------------------------------------------------------

def bratu2d(u: Tensor, k: int, lam: float = 1.0) -> Tensor:
  """5-point Laplacian + lam exp(u) on the interior of the unit square (k x k unknowns, zero boundary), u flat (k*k,)."""
  h = 1.0 / (k + 1)
  U = u.reshape(k, k)
  P = U.pad(((1, 1), (1, 1)))
  lap = P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * U
  return (lap / h**2 + lam * U.exp()).flatten()

def bratu2d_jnp(u, k: int, lam: float = 1.0):
  import jax.numpy as jnp
  h = 1.0 / (k + 1)
  U = u.reshape(k, k)
  P = jnp.pad(U, ((1, 1), (1, 1)))
  lap = P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * U
  return (lap / h**2 + lam * jnp.exp(U)).ravel()

def bratu2d_energy(u: Tensor, k: int, lam: float = 1.0) -> Tensor:
  """The energy whose gradient is minus 2-D Bratu's residual (times h^2): 1/2 |grad u|^2 - lam h^2 sum exp(u), with
  the differences taken across the zero boundary. Its Hessian has the 5-point pattern (sphessian's test problem)."""
  h = 1.0 / (k + 1)
  P = u.reshape(k, k).pad(((1, 1), (1, 1)))
  dx, dy = P[1:, 1:-1] - P[:-1, 1:-1], P[1:-1, 1:] - P[1:-1, :-1]
  return 0.5 * ((dx * dx).sum() + (dy * dy).sum()) - lam * h**2 * u.exp().sum()

def bratu2d_energy_jnp(u, k: int, lam: float = 1.0):
  import jax.numpy as jnp
  h = 1.0 / (k + 1)
  P = jnp.pad(u.reshape(k, k), ((1, 1), (1, 1)))
  dx, dy = P[1:, 1:-1] - P[:-1, 1:-1], P[1:-1, 1:] - P[1:-1, :-1]
  return 0.5 * ((dx * dx).sum() + (dy * dy).sum()) - lam * h**2 * jnp.exp(u).sum()

# ---- (c) multiple shooting for a kinematic bicycle -------------------------------------------------------------------

NX, NU = 4, 2            # state (x, y, psi, v), control (a, delta)
WHEELBASE = 2.7          # L [m]

def bicycle_size(N: int) -> int:
  """Length of the decision vector z = [s_0, u_0, s_1, u_1, ..., s_{N-1}, u_{N-1}, s_N]."""
  return N * (NX + NU) + NX

def _split(z, N: int):
  """z -> (S (N, 4) states s_0..s_{N-1}, U (N, 2) controls, S_next (N, 4) states s_1..s_N)."""
  SU = z[:N * (NX + NU)].reshape(N, NX + NU)
  S, U = SU[:, :NX], SU[:, NX:]
  return S, U, SU, z[N * (NX + NU):]

def _bicycle_f(S: Tensor, U: Tensor, L: float) -> Tensor:
  """Kinematic bicycle, per stage (rows): x' = v cos psi, y' = v sin psi, psi' = v tan(delta) / L, v' = a."""
  psi, v, a, d = S[:, 2], S[:, 3], U[:, 0], U[:, 1]
  return Tensor.stack(v * psi.cos(), v * psi.sin(), v * d.sin() / d.cos() / L, a, dim=1)   # no tan in tinygrad

def _rk4(f, S, U, dt):
  k1 = f(S, U)
  k2 = f(S + dt / 2 * k1, U)
  k3 = f(S + dt / 2 * k2, U)
  k4 = f(S + dt * k3, U)
  return S + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

def bicycle_constraints(z: Tensor, N: int, s_init, dt: float = 0.1, L: float = WHEELBASE) -> Tensor:
  """c = [s_0 - s_init, s_1 - RK4(s_0, u_0), ..., s_N - RK4(s_{N-1}, u_{N-1})], length 4 (N + 1)."""
  S, U, SU, s_last = _split(z, N)
  S_next = Tensor.cat(SU[1:, :NX], s_last.reshape(1, NX)) if N > 1 else s_last.reshape(1, NX)
  defects = S_next - _rk4(lambda s, u: _bicycle_f(s, u, L), S, U, dt)
  s_init = s_init if isinstance(s_init, Tensor) else Tensor(np.asarray(s_init, dtype=np.float64))
  return Tensor.cat(z[:NX] - s_init, defects.flatten())

def bicycle_constraints_jnp(z, N: int, s_init, dt: float = 0.1, L: float = WHEELBASE):
  import jax.numpy as jnp
  SU = z[:N * (NX + NU)].reshape(N, NX + NU)
  S, U = SU[:, :NX], SU[:, NX:]
  S_next = jnp.concatenate([SU[1:, :NX], z[N * (NX + NU):].reshape(1, NX)], axis=0)
  def f(S, U):
    psi, v, a, d = S[:, 2], S[:, 3], U[:, 0], U[:, 1]
    return jnp.stack([v * jnp.cos(psi), v * jnp.sin(psi), v * jnp.tan(d) / L, a], axis=1)
  defects = S_next - _rk4(f, S, U, dt)
  return jnp.concatenate([z[:NX] - jnp.asarray(s_init), defects.ravel()])

# ---- (d) picked JVP pieces -------------------------------------------------------------------------------------------

def _pieces_g(u: Tensor) -> Tensor:
  """g_i = sin(u_i) u_{i+1} + u_i^2 (u_{n+1} = 0)."""
  return u.sin() * u.pad((0, 1))[1:] + u * u

def _pieces_g_jnp(u):
  import jax.numpy as jnp
  return jnp.sin(u) * jnp.pad(u, (0, 1))[1:] + u * u

def pieces_directions(n: int) -> np.ndarray:
  """Two fixed, mostly-zero directions: e_0 + e_{n//2}, and every third entry (2.0)."""
  d1 = np.zeros(n); d1[[0, n // 2]] = 1.0
  d2 = np.zeros(n); d2[::3] = 2.0
  return np.stack([d1, d2])

def pieces_index(n: int) -> list[int]:
  """Entries picked from the flattened (3, n) stack: a few from every piece, out of order, one repeated."""
  return [0, n // 2, n + 1, 2 * n - 1, n + 3, 2 * n, 2 * n + 2, 3 * n - 1, n // 2, n + n // 2]

def picked_pieces(u: Tensor) -> Tensor:
  """[J_g(u) d1, u cos u, J_g(u) d2] stacked (3, n), flattened, entries picked one by one."""
  n = u.shape[0]
  d1, d2 = (Tensor(d) for d in pieces_directions(n))
  p1 = tinyjax.jvp(_pieces_g, (u,), (d1,))[1]
  p3 = tinyjax.jvp(_pieces_g, (u,), (d2,))[1]
  flat = Tensor.stack(p1, u * u.cos(), p3).flatten()
  return Tensor.stack(*[flat[i] for i in pieces_index(n)])

def picked_pieces_jnp(u):
  import jax, jax.numpy as jnp
  n = u.shape[0]
  d1, d2 = (jnp.asarray(d) for d in pieces_directions(n))
  p1 = jax.jvp(_pieces_g_jnp, (u,), (d1,))[1]
  p3 = jax.jvp(_pieces_g_jnp, (u,), (d2,))[1]
  flat = jnp.stack([p1, u * jnp.cos(u), p3]).ravel()
  return flat[np.asarray(pieces_index(n))]

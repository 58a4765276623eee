"""tinyjax's sparse derivatives (sparsity / spjacobian / sphessian) against JAX's dense Jacobians and Hessians.

Patterns are checked against the nonzeros of jax.jacfwd at random points: the detected pattern must contain them
(always), and equal their union over a few random points when the function has no structural cancellation there.
Values are float64 and compared tightly. The built-in problems live in examples/problems.py (tinygrad functions with
jnp twins).
"""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import jax
import jax.numpy as jnp
from tinygrad import Tensor

import tinyjax
import tinyjax.sparse.jacobian as spjac_mod
from tinyjax._tg import sharding
from examples import problems as P
from conftest import rnd

RTOL, ATOL = 1e-10, 1e-10

_jitted = {}
def dense_jac(fj, x) -> np.ndarray:
  """JAX's dense Jacobian of the flattened output w.r.t. the flattened input, as a 2-D float64 array (jitted once per
  function and shape: one XLA compile instead of one per primitive)."""
  x = np.asarray(x)
  if (fj, x.shape) not in _jitted:
    _jitted[fj, x.shape] = jax.jit(jax.jacfwd(lambda v: jnp.ravel(fj(v.reshape(x.shape)))))
  return np.asarray(_jitted[fj, x.shape](x.ravel())).reshape(-1, x.size)

def check_pattern(pattern, fj, shape, seeds=(1, 2, 3), exact=True, scale=1.0):
  """pattern ⊇ nonzeros of the dense Jacobian at every random point, and (exact) == their union."""
  assert sp.issparse(pattern) and pattern.dtype == bool
  S = pattern.toarray()
  union = np.zeros_like(S)
  for s in seeds:
    nz = dense_jac(fj, rnd(*shape, seed=s, scale=scale)) != 0
    assert S.shape == nz.shape, (S.shape, nz.shape)
    missing = np.argwhere(nz & ~S)
    assert len(missing) == 0, f"pattern misses dense nonzeros at (row, col) {missing.tolist()[:10]}"
    union |= nz
  if exact:
    extra = np.argwhere(S & ~union)
    assert len(extra) == 0, f"pattern has structurally zero entries at (row, col) {extra.tolist()[:10]}"

def assert_csr_order(J):
  rows, cols = np.asarray(J.rows), np.asarray(J.cols)
  assert len(rows) == len(cols) == J.nnz
  key = rows * J.shape[1] + cols
  assert (np.diff(key) > 0).all(), "rows/cols not in strictly increasing CSR order"
  P_ = J.pattern.tocsr()
  np.testing.assert_array_equal(np.repeat(np.arange(J.shape[0]), np.diff(P_.indptr)), rows)
  np.testing.assert_array_equal(P_.indices, cols)

def assert_valid_coloring(J):
  """Same-colored columns (fwd) never share a row; same-colored rows (rev) never share a column."""
  M = J.pattern.tocsc() if J.mode == "fwd" else J.pattern.tocsr().T.tocsc()
  colors = np.asarray(J.colors)
  for c in range(J.ncolors):
    cnt = np.asarray(M[:, colors == c].sum(axis=1)).ravel()
    assert cnt.max(initial=0) <= 1, f"color {c} has two columns sharing a row"


# ---- the built-in problems -------------------------------------------------------------------------------------------

N_STAGES = 4
S_INIT = np.array([0.0, 0.0, 0.1, 1.0])
PROBLEMS = {
  "bratu1d": (P.bratu1d, P.bratu1d_jnp, 12, 0.3),
  "bratu2d": (lambda u: P.bratu2d(u, 5), lambda u: P.bratu2d_jnp(u, 5), 25, 0.3),
  "bicycle": (lambda z: P.bicycle_constraints(z, N_STAGES, S_INIT), lambda z: P.bicycle_constraints_jnp(z, N_STAGES, S_INIT),
              P.bicycle_size(N_STAGES), 0.5),
  "picked_pieces": (P.picked_pieces, P.picked_pieces_jnp, 12, 1.0),
}

_built = {}
def built(name, mode):
  """One SparseJacobian per (problem, mode) for the whole module (building and compiling is the expensive part)."""
  if (name, mode) not in _built:
    f, _, n, scale = PROBLEMS[name]
    _built[name, mode] = tinyjax.spjacobian(f, Tensor(rnd(n, seed=0, scale=scale)), mode=mode)
  return _built[name, mode]


@pytest.mark.parametrize("name", PROBLEMS)
def test_problem_pattern_contains_dense_nonzeros(name):
  f, fj, n, scale = PROBLEMS[name]
  check_pattern(tinyjax.sparsity(f, Tensor(rnd(n, scale=scale))), fj, (n,), exact=False, scale=scale)

@pytest.mark.parametrize("name", PROBLEMS)
def test_problem_pattern_exact(name):
  f, fj, n, scale = PROBLEMS[name]
  pattern = tinyjax.sparsity(f, Tensor(rnd(n, scale=scale)))
  check_pattern(pattern, fj, (n,), exact=True, scale=scale)
  # spjacobian uses the same pattern
  np.testing.assert_array_equal(built(name, "fwd").pattern.toarray(), pattern.toarray())

def test_problem_patterns_known_structure():
  """The patterns written out by hand: tridiagonal, 5-point stencil, bicycle's per-stage blocks."""
  n = 12
  want = (np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1)
  np.testing.assert_array_equal(tinyjax.sparsity(P.bratu1d, Tensor(rnd(n))).toarray(), want)
  k = 5
  i, j = np.divmod(np.arange(k * k), k)
  di, dj = np.abs(np.subtract.outer(i, i)), np.abs(np.subtract.outer(j, j))
  want = (di + dj) <= 1
  np.testing.assert_array_equal(tinyjax.sparsity(lambda u: P.bratu2d(u, k), Tensor(rnd(k * k))).toarray(), want)
  # bicycle: rows of the defect s_{k+1} - RK4(s_k, u_k) over columns (x, y, psi, v, a, delta) of stage k, and -I for s_{k+1}
  N = N_STAGES
  block = np.array([[1, 0, 1, 1, 1, 1],     # x+ : x, psi, v, a, delta
                    [0, 1, 1, 1, 1, 1],     # y+ : y, psi, v, a, delta
                    [0, 0, 1, 1, 1, 1],     # psi+: psi, v, a, delta
                    [0, 0, 0, 1, 1, 0]],    # v+ : v, a
                   dtype=bool)
  want = np.zeros((4 * (N + 1), P.bicycle_size(N)), dtype=bool)
  want[:4, :4] = np.eye(4, dtype=bool)
  for s in range(N):
    want[4 + 4 * s:8 + 4 * s, 6 * s:6 * s + 6] = block
    want[4 + 4 * s:8 + 4 * s, 6 * (s + 1):6 * (s + 1) + 4] |= np.eye(4, dtype=bool)
  got = tinyjax.sparsity(PROBLEMS["bicycle"][0], Tensor(rnd(P.bicycle_size(N))))
  np.testing.assert_array_equal(got.toarray(), want)


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
@pytest.mark.parametrize("name", PROBLEMS)
def test_problem_values(name, mode):
  f, fj, n, scale = PROBLEMS[name]
  J = built(name, mode)
  assert J.mode == mode if mode != "auto" else J.mode in ("fwd", "rev")
  assert J.shape == dense_jac(fj, rnd(n, scale=scale)).shape
  assert_csr_order(J)
  assert_valid_coloring(J)
  for seed in (5, 6):
    x = rnd(n, seed=seed, scale=scale)
    D = dense_jac(fj, x)
    vals = J(Tensor(x)).numpy()
    assert vals.shape == (J.nnz,) and vals.dtype == np.float64
    np.testing.assert_allclose(vals, D[J.rows, J.cols], rtol=RTOL, atol=ATOL)
    A = J.to_scipy(Tensor(x))
    assert sp.issparse(A) and A.shape == J.shape and A.nnz == J.nnz
    np.testing.assert_allclose(A.toarray(), D, rtol=RTOL, atol=ATOL)   # zeros outside the pattern too
    np.testing.assert_array_equal(J.todense(Tensor(x)), A.toarray())
    np.testing.assert_array_equal(A.tocoo().row, J.rows)                # the scipy matrix keeps the CSR order
    np.testing.assert_array_equal(A.indices, J.cols)

def test_auto_is_fewer_colors_on_problems():
  for name in PROBLEMS:
    fwd, rev, auto = (built(name, m) for m in ("fwd", "rev", "auto"))
    assert auto.ncolors == min(fwd.ncolors, rev.ncolors), name
    assert auto.mode == ("fwd" if fwd.ncolors <= rev.ncolors else "rev"), name


# ---- colors ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [12, 50])
def test_tridiagonal_three_colors(n):
  for mode in ("fwd", "rev", "auto"):
    J = tinyjax.spjacobian(P.bratu1d, Tensor(rnd(n)), mode=mode)
    assert J.ncolors == 3 and J.nnz == 3 * n - 2, (mode, J.ncolors, J.nnz)
    assert_valid_coloring(J)
  assert J.mode == "fwd"   # tie -> forward

@pytest.mark.parametrize("k", [5, 12])
def test_five_point_stencil_five_colors(k):
  J = tinyjax.spjacobian(lambda u: P.bratu2d(u, k), Tensor(rnd(k * k)))
  assert J.ncolors == 5 and J.nnz == 5 * k * k - 4 * k
  assert_valid_coloring(J)

def _stencil_pattern(k: int, offsets) -> sp.csr_matrix:
  i, j = np.divmod(np.arange(k * k), k)
  rows, cols = [], []
  for di, dj in offsets:
    ok = (0 <= i + di) & (i + di < k) & (0 <= j + dj) & (j + dj < k)
    rows.append(np.arange(k * k)[ok])
    cols.append(((i + di) * k + j + dj)[ok])
  return sp.csr_matrix((np.ones(sum(map(len, rows)), bool), (np.concatenate(rows), np.concatenate(cols))), shape=(k * k, k * k))

def test_grid_stencils_are_colored_without_the_vertex_loops(monkeypatch):
  # banded and 5-point patterns get the optimal coloring from the vectorised lattice candidates (2-D Bratu at 10^6
  # unknowns: DSATUR's Python loop took 17 s); any other pattern falls back to the greedy orders and DSATUR
  from tinyjax.sparse import coloring
  def refuse(*a): raise AssertionError("vertex loop")
  monkeypatch.setattr(coloring, "dsatur", refuse)
  monkeypatch.setattr(coloring, "greedy_distance1", refuse)
  for k, offsets, want in [(37, [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)], 5), (30, [(0, 0), (0, 1), (0, -1)], 3)]:
    pat = _stencil_pattern(k, offsets)
    c = coloring.color_columns(pat)
    assert c.max() + 1 == want and coloring.proper_columns(pat, c)
  monkeypatch.undo()
  rng = np.random.default_rng(0)
  pat = sp.random(200, 200, density=0.03, random_state=rng, format="csr") != 0   # no lattice: greedy/DSATUR
  c = coloring.color_columns(pat)
  assert coloring.proper_columns(sp.csr_matrix(pat), c) and c.max() + 1 >= coloring.column_lower_bound(pat)
  dense = sp.csr_matrix(pat.toarray().astype(np.int8))
  assert all(len(set(c[dense[r].indices])) == dense[r].nnz for r in range(200))   # the check itself, by a loop

def _tri_tg(u):
  return (u.pad((1, 1))[:-2] - 2 * u + u.pad((1, 1))[2:]) + u.sin()

def _tri_jx(u):
  return (jnp.pad(u, (1, 1))[:-2] - 2 * u + jnp.pad(u, (1, 1))[2:]) + jnp.sin(u)

def dense_row_tg(u):   # tridiagonal + a dense row 3: reverse needs 4 colors, forward n
  return _tri_tg(u) + Tensor((np.arange(u.shape[0]) == 3).astype(np.float64)) * (u * u).sum()
def dense_row_jx(u):
  return _tri_jx(u) + jnp.asarray((np.arange(u.shape[0]) == 3).astype(np.float64)) * (u * u).sum()

def dense_col_tg(u):   # tridiagonal + a dense column 2: forward needs 4 colors, reverse n
  return _tri_tg(u) + u[2].exp() * u.cos()
def dense_col_jx(u):
  return _tri_jx(u) + jnp.exp(u[2]) * jnp.cos(u)

@pytest.mark.parametrize("fun,fj,winner", [(dense_row_tg, dense_row_jx, "rev"), (dense_col_tg, dense_col_jx, "fwd")],
                         ids=["dense_row", "dense_col"])
def test_auto_picks_fewer_colors(fun, fj, winner):
  n = 10
  x = Tensor(rnd(n))
  check_pattern(tinyjax.sparsity(fun, x), fj, (n,))
  fwd, rev = (tinyjax.spjacobian(fun, x, mode=m) for m in ("fwd", "rev"))
  assert {fwd.ncolors, rev.ncolors} == {n, 4}, (fwd.ncolors, rev.ncolors)
  auto = tinyjax.spjacobian(fun, x)
  assert auto.mode == winner and auto.ncolors == 4
  for seed in (7, 8):
    xs = rnd(n, seed=seed)
    np.testing.assert_allclose(auto.todense(Tensor(xs)), dense_jac(fj, xs), rtol=RTOL, atol=ATOL)


# ---- user-given sparsity ---------------------------------------------------------------------------------------------

def test_user_sparsity_skips_detection(monkeypatch):
  n = 12
  x0 = Tensor(rnd(n))
  Jd = tinyjax.spjacobian(P.bratu1d, x0)
  pattern = tinyjax.sparsity(P.bratu1d, x0)
  def no_detect(*a, **k): raise AssertionError("detection ran although a sparsity pattern was given")
  monkeypatch.setattr(spjac_mod, "detect", no_detect)
  rows, cols = pattern.nonzero()
  Js = tinyjax.spjacobian(P.bratu1d, x0, sparsity=pattern.tocsc().astype(np.float64))   # any scipy format and dtype
  Jt = tinyjax.spjacobian(P.bratu1d, x0, sparsity=(rows[::-1], cols[::-1]))              # any order
  Jr = tinyjax.spjacobian(P.bratu1d, x0, sparsity=(rows, cols), mode="rev")
  x = rnd(n, seed=9)
  want = dense_jac(P.bratu1d_jnp, x)
  ref = Jd(Tensor(x)).numpy()
  for J in (Js, Jt, Jr):
    assert J.nnz == Jd.nnz and J.ncolors == 3
    np.testing.assert_array_equal(J.rows, Jd.rows)
    np.testing.assert_array_equal(J.cols, Jd.cols)
    np.testing.assert_allclose(J(Tensor(x)).numpy(), ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(J.todense(Tensor(x)), want, rtol=RTOL, atol=ATOL)

def test_user_sparsity_superset_gives_zeros():
  """A looser (pentadiagonal) user pattern: the extra entries come out as exact zeros."""
  n = 12
  penta = sp.diags([np.ones(n - abs(d)) for d in range(-2, 3)], list(range(-2, 3)), format="csr")
  J = tinyjax.spjacobian(P.bratu1d, Tensor(rnd(n)), sparsity=penta)
  assert J.nnz == 5 * n - 6 and J.ncolors == 5
  x = rnd(n, seed=10)
  vals = J(Tensor(x)).numpy()
  far = np.abs(J.rows - J.cols) == 2
  np.testing.assert_array_equal(vals[far], 0.0)
  np.testing.assert_allclose(J.todense(Tensor(x)), dense_jac(P.bratu1d_jnp, x), rtol=RTOL, atol=ATOL)


# ---- vmap over points ------------------------------------------------------------------------------------------------

def test_vmap_over_points():
  J = built("bratu2d", "fwd")
  X = rnd(3, 25, seed=11, scale=0.3)
  batched = tinyjax.vmap(J)(Tensor(X)).numpy()
  assert batched.shape == (3, J.nnz)
  for b in range(3):
    np.testing.assert_allclose(batched[b], J(Tensor(X[b])).numpy(), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(batched[b], dense_jac(PROBLEMS["bratu2d"][1], X[b])[J.rows, J.cols], rtol=RTOL, atol=ATOL)

def test_vmap_over_points_rev():
  J = built("bratu1d", "rev")
  X = rnd(2, 12, seed=12, scale=0.3)
  batched = tinyjax.vmap(J)(Tensor(X)).numpy()
  for b in range(2):
    np.testing.assert_allclose(batched[b], dense_jac(P.bratu1d_jnp, X[b])[J.rows, J.cols], rtol=RTOL, atol=ATOL)


# ---- sphessian -------------------------------------------------------------------------------------------------------

def energy1d_tg(u): return (u * u.exp()).sum() + ((u[1:] - u[:-1]) ** 2).sum()
def energy1d_jx(u): return jnp.sum(u * jnp.exp(u)) + jnp.sum((u[1:] - u[:-1]) ** 2)

K_GRID = 4
def energy2d_tg(u):
  U = u.reshape(K_GRID, K_GRID)
  return 0.5 * (((U[1:] - U[:-1]) ** 2).sum() + ((U[:, 1:] - U[:, :-1]) ** 2).sum()) + (U.cos() * U).sum()
def energy2d_jx(u):
  U = u.reshape(K_GRID, K_GRID)
  return 0.5 * (jnp.sum((U[1:] - U[:-1]) ** 2) + jnp.sum((U[:, 1:] - U[:, :-1]) ** 2)) + jnp.sum(jnp.cos(U) * U)

def arrow_tg(u): return (u.sin() * u[0]).sum() + (u ** 4).sum()       # dense first row/column + diagonal
def arrow_jx(u): return jnp.sum(jnp.sin(u) * u[0]) + jnp.sum(u ** 4)

@pytest.mark.parametrize("fun,fj,n,ncolors", [(energy1d_tg, energy1d_jx, 10, 3), (energy2d_tg, energy2d_jx, K_GRID ** 2, 5),
                                             (arrow_tg, arrow_jx, 8, 2)], ids=["energy1d", "energy2d", "arrow"])
def test_sphessian(fun, fj, n, ncolors):
  H = tinyjax.sphessian(fun, Tensor(rnd(n)))
  assert H.shape == (n, n) and H.mode == "star"
  Pd = H.pattern.toarray()
  np.testing.assert_array_equal(Pd, Pd.T)
  assert_csr_order(H)
  if ncolors is not None: assert H.ncolors == ncolors, H.ncolors
  union = np.zeros((n, n), dtype=bool)
  for seed in (13, 14):
    x = rnd(n, seed=seed)
    D = np.asarray(jax.jit(jax.hessian(fj))(x))
    union |= D != 0
    np.testing.assert_allclose(H(Tensor(x)).numpy(), D[H.rows, H.cols], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(H.todense(Tensor(x)), D, rtol=RTOL, atol=ATOL)
  np.testing.assert_array_equal(Pd, union)
  assert "SparseHessian" in repr(H) and "mode='star'" in repr(H)

def test_sphessian_grid_pattern_is_five_point():
  H = tinyjax.sphessian(energy2d_tg, Tensor(rnd(K_GRID ** 2)))
  i, j = np.divmod(np.arange(K_GRID ** 2), K_GRID)
  want = (np.abs(np.subtract.outer(i, i)) + np.abs(np.subtract.outer(j, j))) <= 1
  np.testing.assert_array_equal(H.pattern.toarray(), want)


# ---- exactness of the detection, op by op ----------------------------------------------------------------------------

W_DENSE = rnd(4, 5, seed=20)
W_ZEROS = rnd(4, 5, seed=21)
W_ZEROS[np.abs(W_ZEROS) < 0.6] = 0.0
W_ZEROS[:, 3] = 0.0
W_ZEROS[2, :] = 0.0
M_VEC = rnd(6, 12, seed=22)
M_VEC[np.abs(M_VEC) < 0.8] = 0.0
IDX = [3, 1, 1, 7, 0]
MASK = np.arange(12) % 3 == 0

EXACT = {   # name: (tinygrad function, jnp twin, input shape)
  "elementwise": (lambda x: x.sin() * x + x.exp() / (1 + x * x) - x.abs().sqrt(),
                  lambda x: jnp.sin(x) * x + jnp.exp(x) / (1 + x * x) - jnp.sqrt(jnp.abs(x)), (3, 4)),
  "reshape": (lambda x: x.reshape(4, 3).exp() * x.reshape(3, 4)[::-1].reshape(4, 3),
              lambda x: jnp.exp(x.reshape(4, 3)) * x.reshape(3, 4)[::-1].reshape(4, 3), (12,)),
  "permute": (lambda x: x * x.permute(1, 0).reshape(3, 4).sin(),
              lambda x: x * jnp.sin(x.T.reshape(3, 4)), (3, 4)),
  "permute3d": (lambda x: x.permute(2, 0, 1) * x.permute(2, 0, 1).flip(1).cos(),
                lambda x: jnp.transpose(x, (2, 0, 1)) * jnp.cos(jnp.flip(jnp.transpose(x, (2, 0, 1)), 1)), (2, 3, 4)),
  "expand": (lambda x: x * x[:, :1].expand(3, 4) + x[1].reshape(1, 4).expand(3, 4).exp(),
             lambda x: x * jnp.broadcast_to(x[:, :1], (3, 4)) + jnp.exp(jnp.broadcast_to(x[1].reshape(1, 4), (3, 4))), (3, 4)),
  "broadcast": (lambda x: x[:, None, :] * x[None, :, :],
                lambda x: x[:, None, :] * x[None, :, :], (3, 4)),
  "pad": (lambda x: x.pad(((1, 0), (0, 2))).exp() + x.pad(((0, 1), (2, 0))),
          lambda x: jnp.exp(jnp.pad(x, ((1, 0), (0, 2)))) + jnp.pad(x, ((0, 1), (2, 0))), (3, 4)),
  "pad_value": (lambda x: x.pad(((1, 1), (1, 1)), value=2.0) ** 2,
                lambda x: jnp.pad(x, ((1, 1), (1, 1)), constant_values=2.0) ** 2, (3, 4)),
  "shrink": (lambda x: x[1:3, 1:].sin() * x[:2, :3],
             lambda x: jnp.sin(x[1:3, 1:]) * x[:2, :3], (3, 4)),
  "strided_slice": (lambda x: x[::2] * x[1::3].sum() + x[::-3].exp().sum(),
                    lambda x: x[::2] * x[1::3].sum() + jnp.exp(x[::-3]).sum(), (12,)),
  "flip": (lambda x: x.flip(0) * x + x.flip((0, 1)).sin(),
           lambda x: jnp.flip(x, 0) * x + jnp.sin(jnp.flip(x, (0, 1))), (3, 4)),
  "sum_axis": (lambda x: (x * x).sum(axis=1) + x.exp().sum(axis=0)[:3],
               lambda x: (x * x).sum(axis=1) + jnp.exp(x).sum(axis=0)[:3], (3, 4)),
  "sum_keepdim_3d": (lambda x: x / x.sum(axis=(0, 2), keepdim=True),
                     lambda x: x / x.sum(axis=(0, 2), keepdims=True), (2, 3, 2)),
  "mean": (lambda x: x.mean(axis=0) * x[0],
           lambda x: x.mean(axis=0) * x[0], (3, 4)),
  "matmul_dense": (lambda x: x @ Tensor(W_DENSE),
                   lambda x: x @ W_DENSE, (3, 4)),
  "matmul_zeros": (lambda x: (x @ Tensor(W_ZEROS)).sin(),
                   lambda x: jnp.sin(x @ W_ZEROS), (3, 4)),
  "matvec_zeros": (lambda x: Tensor(M_VEC) @ x.exp(),
                   lambda x: M_VEC @ jnp.exp(x), (12,)),
  "stack": (lambda x: Tensor.stack(x[:3], x[3:6].exp(), x[9:] * x[:3]),
            lambda x: jnp.stack([x[:3], jnp.exp(x[3:6]), x[9:] * x[:3]]), (12,)),
  "stack_axis1": (lambda x: Tensor.stack(x[0], x[2].cos(), dim=1),
                  lambda x: jnp.stack([x[0], jnp.cos(x[2])], axis=1), (3, 4)),
  "cat": (lambda x: Tensor.cat(x[::2], x[1::2].sin(), x[:1] * x[-1:]),
          lambda x: jnp.concatenate([x[::2], jnp.sin(x[1::2]), x[:1] * x[-1:]]), (12,)),
  "cat_axis1": (lambda x: Tensor.cat(x[:, :1], x.exp(), dim=1),
                lambda x: jnp.concatenate([x[:, :1], jnp.exp(x)], axis=1), (3, 4)),
  "scalar_index": (lambda x: x[3] * x[5] + x[0].sin(),
                   lambda x: x[3] * x[5] + jnp.sin(x[0]), (12,)),
  "scalar_index_stack": (lambda x: Tensor.stack(x[1, 2], x[0, 0] * x[2, 3], x[-1, -1].exp()),
                         lambda x: jnp.stack([x[1, 2], x[0, 0] * x[2, 3], jnp.exp(x[-1, -1])]), (3, 4)),
  "list_index": (lambda x: x[IDX] * 2.0 + x[IDX[::-1]].sin(),
                 lambda x: x[np.array(IDX)] * 2.0 + jnp.sin(x[np.array(IDX[::-1])]), (12,)),
  "tensor_index": (lambda x: x[Tensor(IDX)].exp() * x[Tensor([5, 5, 6, 11, 2])],
                   lambda x: jnp.exp(x[np.array(IDX)]) * x[np.array([5, 5, 6, 11, 2])], (12,)),
  "tensor_index_rows": (lambda x: x[Tensor([2, 0, 2])] * x[:, 1:2],
                        lambda x: x[np.array([2, 0, 2])] * x[:, 1:2], (3, 4)),
  "where_const_cond": (lambda x: Tensor(MASK).where(x.sin(), x.flip(0) * x),
                       lambda x: jnp.where(MASK, jnp.sin(x), jnp.flip(x, 0) * x), (12,)),
  "where_const_cond_scalar_branch": (lambda x: Tensor(MASK).where(x.exp(), 0.0),
                                     lambda x: jnp.where(MASK, jnp.exp(x), 0.0), (12,)),
  "mul_const_zeros": (lambda x: x.exp() * Tensor(MASK.astype(np.float64)) + x[::-1] * 0.0,
                      lambda x: jnp.exp(x) * MASK.astype(np.float64) + x[::-1] * 0.0, (12,)),
  "pieces_mixed": (lambda x: Tensor.stack(x[:4] @ Tensor(W_ZEROS), (x[4:8] * x[8:]).pad((0, 1))).flatten()[Tensor([0, 3, 7, 9])],
                   lambda x: jnp.stack([x[:4] @ W_ZEROS, jnp.pad(x[4:8] * x[8:], (0, 1))]).ravel()[np.array([0, 3, 7, 9])],
                   (12,)),
}

@pytest.mark.parametrize("name", EXACT)
def test_detection_exact(name):
  f, fj, shape = EXACT[name]
  check_pattern(tinyjax.sparsity(f, Tensor(rnd(*shape))), fj, shape, seeds=(1, 2))

def test_matmul_zero_entries_not_in_pattern():
  """x (3, 4) @ W: y[i, j] depends on x[i, l] exactly where W[l, j] != 0."""
  S = tinyjax.sparsity(lambda x: x @ Tensor(W_ZEROS), Tensor(rnd(3, 4))).toarray().reshape(3, 5, 3, 4)
  for i in range(3):
    for i2 in range(3):
      want = W_ZEROS.T != 0 if i == i2 else np.zeros((5, 4), dtype=bool)
      np.testing.assert_array_equal(S[i, :, i2, :], want)
  assert not S[:, 3].any()   # the all-zero column of W: no dependencies at all
  assert not S[..., 2].any()   # the all-zero row of W: x[:, 2] influences nothing

def test_index_patterns_by_hand():
  n = 12
  for f in (lambda x: x[IDX], lambda x: x[Tensor(IDX)], lambda x: Tensor.stack(*[x[i] for i in IDX])):
    S = tinyjax.sparsity(f, Tensor(rnd(n))).toarray()
    want = np.zeros((len(IDX), n), dtype=bool)
    want[np.arange(len(IDX)), IDX] = True
    np.testing.assert_array_equal(S, want)

def test_where_input_dependent_condition():
  """cond depends on x[n-1-i], the branches on x[i] and x[i-1]: both branches, never the condition."""
  n = 12
  def f(x): return (x.flip(0) > 0).where(x.sin(), x.pad((1, 0))[:-1].exp())
  def fj(x): return jnp.where(jnp.flip(x, 0) > 0, jnp.sin(x), jnp.exp(jnp.pad(x, (1, 0))[:-1]))
  S = tinyjax.sparsity(f, Tensor(rnd(n)))
  want = np.eye(n, dtype=bool) | np.eye(n, k=-1, dtype=bool)
  np.testing.assert_array_equal(S.toarray(), want)
  check_pattern(S, fj, (n,), exact=False)
  # the taken branch alone at one point is strictly smaller: the pattern is structural, not numerical
  x = rnd(n, seed=1)
  assert (dense_jac(fj, x) != 0).sum() < S.nnz
  # the values through spjacobian are still JAX's
  J = tinyjax.spjacobian(f, Tensor(x))
  np.testing.assert_allclose(J.todense(Tensor(x)), dense_jac(fj, x), rtol=RTOL, atol=ATOL)

N_BR = 6
X_BR = np.array([1.5, -2.0, 0.7, -0.3, 2.5, -1.1])    # mixed signs: both branches are taken somewhere
SHIFT = np.eye(N_BR, k=-1, dtype=bool)                  # row i <- column i - 1
BRANCHY = {   # functions whose branch depends on the input: name -> (tinygrad, jnp, structural pattern by hand)
  "relu": (lambda x: x.relu(), lambda x: jax.nn.relu(x), np.eye(N_BR, dtype=bool)),
  "abs": (lambda x: x.abs() * 1.5, lambda x: jnp.abs(x) * 1.5, np.eye(N_BR, dtype=bool)),
  "mul_by_comparison": (lambda x: x * (x > 0), lambda x: x * (x > 0), np.eye(N_BR, dtype=bool)),
  "where_self_cond": (lambda x: (x > 0).where(x, x.pad((1, 0))[:-1]),
                      lambda x: jnp.where(x > 0, x, jnp.pad(x, (1, 0))[:-1]), np.eye(N_BR, dtype=bool) | SHIFT),
  "maximum": (lambda x: x.maximum(x.pad((1, 0))[:-1]), lambda x: jnp.maximum(x, jnp.pad(x, (1, 0))[:-1]),
              np.eye(N_BR, dtype=bool) | SHIFT),
  # row 0 is clip(x0) * (the pad's zero): identically zero, so it has no entries
  "clip": (lambda x: x.clip(-1.0, 1.0) * x.pad((1, 0))[:-1], lambda x: jnp.clip(x, -1.0, 1.0) * jnp.pad(x, (1, 0))[:-1],
           (np.eye(N_BR, dtype=bool) | SHIFT) & (np.arange(N_BR) > 0)[:, None]),
}

@pytest.mark.parametrize("name", BRANCHY)
def test_input_dependent_branch(name):
  """A branch chosen by the input (relu, abs, maximum, a comparison mask): the pattern keeps the dependencies of every
  branch that can be taken, whatever values the detection's placeholders hold, and the values are JAX's."""
  f, fj, want = BRANCHY[name]
  S = tinyjax.sparsity(f, Tensor(X_BR))
  np.testing.assert_array_equal(S.toarray(), want)
  for x in (X_BR, -X_BR):
    J = tinyjax.spjacobian(f, Tensor(x))
    np.testing.assert_allclose(J.todense(Tensor(x)), dense_jac(fj, x), rtol=RTOL, atol=ATOL)

def test_product_with_structurally_zero_entries():
  """x * (x shifted, zero-padded): the last entry is x[n-1] * 0, whose derivative is zero for every x."""
  n = 6
  f, fj = (lambda x: x * x[1:].pad((0, 1))), (lambda x: x * jnp.pad(x[1:], (0, 1)))
  S = tinyjax.sparsity(f, Tensor(rnd(n)))
  check_pattern(S, fj, (n,), exact=False)
  want = (np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool))
  want[n - 1, n - 1] = False
  np.testing.assert_array_equal(S.toarray(), want)

def test_where_const_cond_pattern_by_hand():
  n = 12
  S = tinyjax.sparsity(EXACT["where_const_cond"][0], Tensor(rnd(n))).toarray()
  want = np.zeros((n, n), dtype=bool)
  for i in range(n):
    want[i, i] = True
    if not MASK[i]: want[i, n - 1 - i] = True
  np.testing.assert_array_equal(S, want)

def test_max_reduction_is_structural_superset():
  """max: JAX's derivative picks the argmax, the structural pattern keeps every element of the reduced axis."""
  f, fj = (lambda x: x.max(axis=1)), (lambda x: x.max(axis=1))
  S = tinyjax.sparsity(f, Tensor(rnd(3, 4)))
  check_pattern(S, fj, (3, 4), exact=False)
  np.testing.assert_array_equal(S.toarray(), np.kron(np.eye(3, dtype=bool), np.ones((1, 4), dtype=bool)))


# ---- pytrees ---------------------------------------------------------------------------------------------------------

def tree_flat_jx(v):    # the same on the flattened, concatenated leaves (a: 3, b: (2, 2)), outputs concatenated
  a, b = v[:3], v[3:].reshape(2, 2)
  return jnp.concatenate([a[:2] * b.sum(axis=0), b.ravel() * a[0], jnp.exp(a[2])[None]])

def _tree_in(seed):
  return {"b": rnd(2, 2, seed=seed), "a": rnd(3, seed=seed + 100)}

def tree_tg(d):
  a, b = d["a"], d["b"]
  return {"s": a[:2] * b.sum(axis=0), "t": (b.flatten() * a[0], a[2].exp().reshape(1))}

@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_pytree_input_and_output(mode):
  d0 = _tree_in(30)
  def tg_in(d): return {k: Tensor(v) for k, v in d.items()}
  J = tinyjax.spjacobian(tree_tg, tg_in(d0), mode=mode)
  assert J.shape == (2 + 4 + 1, 3 + 4)
  d = _tree_in(31)
  flat = np.concatenate([d["a"], d["b"].ravel()])          # dict leaves in sorted-key order: a, b
  D = dense_jac(tree_flat_jx, flat)
  check_pattern(J.pattern, tree_flat_jx, (7,), seeds=(1, 2))
  np.testing.assert_allclose(J.todense(tg_in(d)), D, rtol=RTOL, atol=ATOL)
  np.testing.assert_allclose(J(tg_in(d)).numpy(), D[J.rows, J.cols], rtol=RTOL, atol=ATOL)
  np.testing.assert_array_equal(tinyjax.sparsity(tree_tg, tg_in(d0)).toarray(), J.pattern.toarray())


# ---- Newton on Bratu ---------------------------------------------------------------------------------------------------

def test_newton_bratu1d():
  n = 30
  u = np.zeros(n)
  J = tinyjax.spjacobian(P.bratu1d, Tensor(u))
  assert J.ncolors == 3
  norms = [np.linalg.norm(P.bratu1d(Tensor(u)).numpy())]
  for it in range(10):
    A = J.to_scipy(Tensor(u))
    u = u + spla.spsolve(A.tocsc(), -P.bratu1d(Tensor(u)).numpy())
    norms.append(np.linalg.norm(P.bratu1d(Tensor(u)).numpy()))
    if norms[-1] < 1e-8: break
  assert norms[-1] < 1e-8 and len(norms) - 1 < 10, norms
  # the lower branch of Bratu with lam = 1: max u ~ 0.1405 (u(1/2) of the continuous problem is 0.140539...)
  assert 0.13 < u.max() < 0.15
  np.testing.assert_allclose(np.asarray(P.bratu1d_jnp(u)), P.bratu1d(Tensor(u)).numpy(), rtol=1e-10, atol=1e-8)


# ---- errors and repr -------------------------------------------------------------------------------------------------

def test_bad_mode():
  with pytest.raises(ValueError, match="mode"):
    tinyjax.spjacobian(P.bratu1d, Tensor(rnd(5)), mode="forward")

def test_sphessian_non_scalar():
  with pytest.raises(TypeError):
    tinyjax.sphessian(lambda u: u * u, Tensor(rnd(5)))

def test_wrong_shape_sparsity():
  with pytest.raises(ValueError):
    tinyjax.spjacobian(P.bratu1d, Tensor(rnd(5)), sparsity=sp.eye(6, format="csr"))
  with pytest.raises(ValueError):
    tinyjax.spjacobian(P.bratu1d, Tensor(rnd(5)), sparsity=sp.csr_matrix(np.ones((5, 4))))

def test_structure_lower_triangle_summary_and_spy(tmp_path):
  # what IPOPT's callbacks take: (rows, cols) in the order of the values, and for the Hessian the lower triangle
  J = tinyjax.spjacobian(P.bratu1d, Tensor(rnd(9)))
  r, c = J.structure()
  np.testing.assert_array_equal(sp.coo_matrix((J(Tensor(rnd(9))).numpy(), (r, c)), shape=J.shape).toarray(), J.todense(Tensor(rnd(9))))
  k = 4
  x = rnd(k * k)
  H = tinyjax.sphessian(lambda u: P.bratu2d_energy(u, k), Tensor(x))
  want = np.asarray(jax.hessian(lambda u: P.bratu2d_energy_jnp(u, k))(x))
  lr, lc = H.structure(lower=True)
  assert (lr >= lc).all() and len(lr) == (H.nnz + k * k) // 2
  for low in (H.lower(H(Tensor(x))).numpy(), H.lower(H(Tensor(x)).numpy())):
    np.testing.assert_allclose(low, want[lr, lc], rtol=1e-10, atol=1e-12)
  np.testing.assert_allclose(tinyjax.jit(lambda u: H.lower(H(u)))(Tensor(x)).numpy(), want[lr, lc], rtol=1e-10, atol=1e-12)
  text = H.summary()
  assert f"{k * k} x {k * k}: {H.nnz:,} nonzeros" in text and "per row: 3..5" in text and f"bandwidth {k}" in text, text
  ax = J.spy(tmp_path / "J.png")
  assert (tmp_path / "J.png").stat().st_size > 1000
  xs, ys = ax.get_images()[0].get_array().nonzero() if ax.get_images() else ax.lines[0].get_data()[::-1]
  assert sorted(zip(np.asarray(xs).tolist(), np.asarray(ys).tolist(), strict=True)) == sorted(zip(r.tolist(), c.tolist(), strict=True))

def test_repr():
  J = built("bratu1d", "fwd")
  r = repr(J)
  assert f"shape={J.shape}" in r and "shape=(12, 12)" in r
  assert f"nnz={J.nnz}" in r and "nnz=34" in r
  assert "mode='fwd'" in r and "colors=3" in r
  picture = r.splitlines()[1:]
  assert len(picture) == 12 and all(len(line) == 12 for line in picture)
  np.testing.assert_array_equal(np.array([[c == "#" for c in line] for line in picture]), J.pattern.toarray())
  assert "mode='rev'" in repr(built("bratu1d", "rev"))


def test_call_with_other_shapes_is_an_error_and_repeated_calls_reuse_the_trace():
  def F(u): return u.pad(((1, 1),))[:-2] - 2 * u + u.pad(((1, 1),))[2:] + u.exp()
  def Fj(u): return jnp.pad(u, (1, 1))[:-2] - 2 * u + jnp.pad(u, (1, 1))[2:] + jnp.exp(u)
  J = tinyjax.spjacobian(F, Tensor(np.zeros(6)))
  with pytest.raises(ValueError, match="was built for inputs"):
    J(Tensor(np.zeros(7)))
  for seed in range(3):   # the second and third calls substitute into the graph traced by the first
    u = np.random.default_rng(seed).standard_normal(6)
    np.testing.assert_allclose(J.todense(Tensor(u)), np.asarray(jax.jacfwd(Fj)(u)), rtol=1e-12)


def test_scipy_solvers_example():
  # examples/scipy_solvers.py at a small size: least_squares with the sparse Jacobian, Newton with spsolve and with
  # GMRES(ILU) reach the
  # solution scipy's root finder gets from the float64 residual and its dense JAX Jacobian
  import scipy.optimize as so
  from examples import scipy_solvers
  k = 12
  def fj(u): return np.asarray(P.bratu2d_jnp(u, k))
  want = so.root(fj, np.zeros(k * k), jac=lambda u: np.asarray(jax.jacfwd(lambda v: P.bratu2d_jnp(v, k))(u)), tol=1e-12).x
  for got in (scipy_solvers.solve_least_squares(k, verbose=False), scipy_solvers.solve_newton(k, "direct", verbose=False),
              scipy_solvers.solve_newton(k, "gmres", verbose=False)):
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_lagrangian_hessian_with_multipliers_as_args():
  # IPOPT's Hessian of sigma f(z) + lam . c(z): the multipliers are arguments whose values change every iteration.
  # Built with lam = 0 (where IPOPT starts), the pattern must still hold the constraints' second derivatives: a
  # closed-over zero would have been taken as a structural zero (a silently wrong Hessian later)
  N, s0 = 3, np.array([0.0, 0.0, 0.0, 5.0])
  nz, m = P.bicycle_size(N), 4 * (N + 1)
  def L(z, lam, sigma): return sigma * (z * z).sum() + (lam * P.bicycle_constraints(z, N, s0)).sum()
  def Lj(z, lam, sigma): return sigma * jnp.sum(z * z) + jnp.sum(lam * P.bicycle_constraints_jnp(z, N, s0))
  z = rnd(nz, seed=4)
  H = tinyjax.sphessian(L, Tensor(z), args=(Tensor(np.zeros(m)), Tensor(1.0)))
  hj = jax.jit(jax.hessian(Lj))
  for seed in (1, 2):
    lam, sigma = rnd(m, seed=seed), 0.5 * seed
    want = np.asarray(hj(z, lam, sigma))
    np.testing.assert_allclose(H.todense(Tensor(z), Tensor(lam), Tensor(sigma)), want, rtol=1e-9, atol=1e-9)
  assert (want[H.pattern.toarray() == 0] == 0).all() and H.nnz < nz * nz
  jac = tinyjax.jit(lambda z, lam, sigma: H.lower(H(z, lam, sigma)))
  lr, lc = H.structure(lower=True)
  np.testing.assert_allclose(jac(Tensor(z), Tensor(lam), Tensor(sigma)).numpy(), want[lr, lc], rtol=1e-9, atol=1e-9)
  with pytest.raises(ValueError, match="built with args"):
    H(Tensor(z), Tensor(np.zeros(m + 1)), Tensor(1.0))


def test_ipopt_bicycle_example():
  # examples/bicycle_ipopt.py at N = 8: IPOPT (cyipopt) converges with tinyjax's gradient, sparse Jacobian and
  # Lagrangian Hessian; the callbacks' values equal JAX's dense derivatives at the solution, and the solution satisfies
  # the KKT conditions computed with JAX (stationarity of the Lagrangian with IPOPT's multipliers, feasibility)
  from examples import bicycle_ipopt as B
  N = 8
  r = B.solve(N)
  assert r["status"] == 0 and r["iters"] > 0
  z, lam, d = r["z"], r["mult_g"], r["derivatives"]
  def f(z):
    U = z[:N * (P.NX + P.NU)].reshape(N, P.NX + P.NU)[:, P.NX:]
    e = z[N * (P.NX + P.NU):] - B.goal(N)
    return B.DT * (jnp.sum(U[:, 0] ** 2) + 10 * jnp.sum(U[:, 1] ** 2)) + 100 * jnp.sum(e * e)
  def c(z): return P.bicycle_constraints_jnp(z, N, B.S_INIT, B.DT)
  Jd = np.asarray(jax.jacfwd(c)(z))
  rows, cols = d.jacobianstructure()
  np.testing.assert_allclose(d.jacobian(z), Jd[rows, cols], rtol=1e-9, atol=1e-9)
  assert (Jd[sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=Jd.shape).toarray() == 0] == 0).all()
  Hd = np.asarray(jax.hessian(lambda z: 0.7 * f(z) + jnp.dot(lam, c(z)))(z))
  hr, hc = d.hessianstructure()
  np.testing.assert_allclose(d.hessian(z, lam, 0.7), Hd[hr, hc], rtol=1e-9, atol=1e-9)
  np.testing.assert_allclose(d.gradient(z), np.asarray(jax.grad(f)(z)), rtol=1e-9, atol=1e-12)
  stationarity = np.asarray(jax.grad(f)(z)) + Jd.T @ lam - r["mult_x_L"] + r["mult_x_U"]
  assert np.abs(stationarity).max() < 1e-5 and np.abs(np.asarray(c(z))).max() < 1e-8   # IPOPT tol 1e-8, scaled


DEVS = ("CPU:0", "CPU:1", "CPU:2", "CPU:3")

def test_colors_split_across_devices():
  # devices=: each of CPU:0..CPU:3 computes the JVPs (Hessian-vector products) of its share of the colors on a replica
  # of the input, the values are gathered on the first: the same numbers as on one device, also jitted
  k = 6
  x = rnd(k * k, seed=3)
  for build in (lambda **kw: tinyjax.spjacobian(lambda u: P.bratu2d(u, k), Tensor(x), **kw),
                lambda **kw: tinyjax.spjacobian(P.bratu1d, Tensor(x), **kw),
                lambda **kw: tinyjax.sphessian(lambda u: P.bratu2d_energy(u, k), Tensor(x), **kw)):
    one, split = build(), build(devices=DEVS)
    assert split.ncolors == one.ncolors and split.nnz == one.nnz
    # the seeds are split by color (a cyclic coloring's seed formula, which has no device, was not: every device
    # computed every color)
    assert sharding(split._constants(DEVS)[0]) == 0
    want = one(Tensor(x)).numpy()
    np.testing.assert_array_equal(split(Tensor(x)).numpy(), want)
    np.testing.assert_array_equal(tinyjax.jit(split)(Tensor(x)).numpy(), want)
  # a batch sharded along its axis: each example goes to the first device, then its colors are split as above
  X = rnd(4, k * k, seed=4)
  got = tinyjax.vmap(split)(Tensor(X).shard(DEVS, axis=0))
  assert got.device == "CPU"
  np.testing.assert_allclose(got.numpy(), np.stack([one(Tensor(p)).numpy() for p in X]), rtol=1e-13, atol=1e-13)


# ---- a batch of points sharded along the batch axis: data parallel ----------------------------------------------------

def _bicycle1(z): return P.bicycle_constraints(z, 1, S_INIT)
def _bicycle1_jnp(z): return P.bicycle_constraints_jnp(z, 1, S_INIT)
def _weighted_energy(u, sigma): return sigma * energy2d_tg(u)
_energy_hessian = jax.jit(jax.hessian(energy2d_jx))

BATCHED = {   # (the object, JAX's dense derivative at one point, the point's size)
  "bratu1d (fwd, cyclic seeds)": (lambda: built("bratu1d", "fwd"), lambda x: dense_jac(P.bratu1d_jnp, x), 12),
  "bratu2d (fwd, seed buffer)": (lambda: built("bratu2d", "fwd"), lambda x: dense_jac(PROBLEMS["bratu2d"][1], x), 25),
  "bicycle (fwd, one stage)": (lambda: tinyjax.spjacobian(_bicycle1, Tensor(rnd(P.bicycle_size(1))), mode="fwd"),
                               lambda x: dense_jac(_bicycle1_jnp, x), P.bicycle_size(1)),
  "hessian with args": (lambda: tinyjax.sphessian(_weighted_energy, Tensor(rnd(K_GRID ** 2)), args=(Tensor(1.0),)),
                        lambda x: np.asarray(_energy_hessian(x)), K_GRID ** 2),
}

@pytest.mark.parametrize("name", BATCHED)
def test_vmap_over_a_batch_sharded_along_it(name):
  # vmap(J) on a batch X (B, n) sharded over CPU:0..CPU:3 along axis 0: each device computes the values of its own
  # examples (two each: their offsets into the device's compressed Jacobians count from its first), and the result
  # (B, nnz) stays sharded the same way. The numbers of a loop over the points on one device (and JAX's dense
  # derivatives), from vmap on one device, on the sharded batch, and jitted (the second call replays on other points)
  build, dense, n = BATCHED[name]
  J = build()
  args, in_axes = ((Tensor(0.5),), (0, None)) if J.arg_specs else ((), 0)   # an argument on one device, not mapped
  X = rnd(8, n, seed=21, scale=0.3)
  loop = np.stack([J(Tensor(p), *args).numpy() for p in X])
  np.testing.assert_allclose(loop, np.stack([dense(p)[J.rows, J.cols] for p in X]) * (0.5 if args else 1), rtol=RTOL, atol=ATOL)
  if "bratu" in name: np.testing.assert_allclose(tinyjax.vmap(J, in_axes)(Tensor(X), *args).numpy(), loop, rtol=1e-13, atol=1e-13)
  Xs = Tensor(X).shard(DEVS, axis=0)
  got = tinyjax.vmap(J, in_axes)(Xs, *args)
  assert got.device == Xs.device and sharding(got) == 0 and got.shape == (8, J.nnz)
  np.testing.assert_allclose(got.numpy(), loop, rtol=1e-13, atol=1e-13)
  jitted = tinyjax.jit(tinyjax.vmap(J, in_axes))
  for order in (slice(None), slice(None, None, -1)):
    got = jitted(Tensor(X[order]).shard(DEVS, axis=0), *args)
    assert got.device == Xs.device and sharding(got) == 0
    np.testing.assert_allclose(got.numpy(), loop[order], rtol=1e-13, atol=1e-13)

def test_sharded_points_and_batches_that_are_not_supported():
  J, X = built("bratu1d", "fwd"), rnd(8, 12, seed=22)
  # one point split across devices (a domain decomposition) without devices=
  with pytest.raises(ValueError, match="a point split across devices is not supported"):
    J(Tensor(X[0]).shard(DEVS[:2], axis=0))
  # a batch sharded along the points' axis instead of the mapped one
  with pytest.raises(NotImplementedError, match="sharded across devices along another axis than the mapped one"):
    tinyjax.vmap(J)(Tensor(X).shard(DEVS, axis=1)).realize()
  # a batch that does not divide among the devices: tinygrad's shard refuses it, before tinyjax sees it
  with pytest.raises(RuntimeError, match="multi axis uneven"):
    Tensor(X[:6]).shard(DEVS, axis=0)

"""tinyjax.numpy.linalg and tinyjax.scipy.linalg against JAX (x64): values (batched), vmap, jvp and grad per row, one
hessian per function family, and JAX's errors. Eigenvectors and singular vectors have arbitrary signs (LAPACK's in JAX,
normalised in tinyjax): those rows compare sign-invariant functions of them (v * v, u * u)."""
import numpy as np
import pytest
import jax
import jax.numpy as jxn
import jax.scipy.linalg as jsl
import tinyjax
import tinyjax.numpy as jnp
import tinyjax.scipy.linalg as tsl
from tinyjax.lax import linalg as tll
from tinygrad import Tensor
from conftest import rnd, assert_close, tg
from jnp_table import Row, params, run

pytestmark = pytest.mark.usefixtures("compile_in_process")

def spd(n, seed=0, batch=()):
  a = rnd(*batch, n, n, seed=seed)
  return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)

def tri(n, seed=0, lower=True):
  t = rnd(n, n, seed=seed) * 0.3 + 2 * np.eye(n)
  return np.tril(t) if lower else np.triu(t)

A3, A4, B3, S3, S4b = rnd(3, 3, seed=1), rnd(4, 4, seed=2), rnd(3, 2, seed=3), spd(3, 4), spd(4, 5, (2,))
L = jxn.linalg

def flat(m, f):
  """f's outputs (a tuple) as one vector of module m: the table's grad weights one output array."""
  return lambda *a: m.concatenate([m.ravel(o) for o in f(*a)])
TOL = dict(rtol=1e-8, atol=1e-10)

ROWS = [
  Row("norm-vec", lambda x: jnp.linalg.norm(x), lambda x: L.norm(x), (rnd(5),)),
  Row("norm-vec-ords", lambda x: jnp.stack([jnp.linalg.norm(x, o) for o in (1, 2, 3, np.inf, -np.inf, 0.5)]),
      lambda x: jxn.stack([L.norm(x, o) for o in (1, 2, 3, np.inf, -np.inf, 0.5)]), (rnd(5),)),
  Row("norm-vec-axis-keepdims", lambda x: jnp.linalg.norm(x, axis=1, keepdims=True), lambda x: L.norm(x, axis=1, keepdims=True), (rnd(3, 4),)),
  Row("norm-mat-ords", lambda x: jnp.stack([jnp.linalg.norm(x, o) for o in ("fro", 1, -1, np.inf, -np.inf)]),
      lambda x: jxn.stack([L.norm(x, o) for o in ("fro", 1, -1, np.inf, -np.inf)]), (A3,)),
  Row("norm-mat-svd-ords", lambda x: jnp.stack([jnp.linalg.norm(x, o) for o in ("nuc", 2, -2)]),
      lambda x: jxn.stack([L.norm(x, o) for o in ("nuc", 2, -2)]), (A3,), vmap=False, diff=False, **TOL),
  Row("norm-mat-nuc", lambda x: jnp.linalg.norm(x, "nuc"), lambda x: L.norm(x, "nuc"), (A3,), vmap=False, **TOL),   # svdvals' rule
  Row("inv", lambda a: jnp.linalg.inv(a), lambda a: L.inv(a), (A4,), vmap_last=True, **TOL),
  Row("solve-vec", lambda a, b: jnp.linalg.solve(a, b), lambda a, b: L.solve(a, b), (A3, rnd(3, seed=5)), **TOL),
  Row("solve-mat", lambda a, b: jnp.linalg.solve(a, b), lambda a, b: L.solve(a, b), (A3, B3), vmap_last=True, **TOL),
  Row("det", lambda a: jnp.linalg.det(a), lambda a: L.det(a), (A4,), **TOL),
  Row("slogdet", flat(jnp, jnp.linalg.slogdet), flat(jxn, L.slogdet), (A4,), **TOL),
  Row("cholesky", lambda a: jnp.linalg.cholesky(a), lambda a: L.cholesky(a), (S3,), vmap_last=True, **TOL),
  Row("qr", flat(jnp, jnp.linalg.qr), flat(jxn, L.qr), (rnd(4, 3, seed=6),), **TOL),
  Row("eigh", flat(jnp, lambda a: (lambda w, v: (w, v * v))(*jnp.linalg.eigh(a))), flat(jxn, lambda a: (lambda w, v: (w, v * v))(*L.eigh(a))),
      (S3,), **TOL),
  Row("svd", flat(jnp, lambda a: (lambda u, s, vt: (u * u, s, vt * vt))(*jnp.linalg.svd(a, full_matrices=False))),
      flat(jxn, lambda a: (lambda u, s, vt: (u * u, s, vt * vt))(*L.svd(a, full_matrices=False))), (rnd(4, 3, seed=7),), vmap_last=True, **TOL),
  Row("svdvals", lambda a: jnp.linalg.svd(a, compute_uv=False), lambda a: L.svd(a, compute_uv=False), (rnd(3, 4, seed=8),), vmap=False, **TOL),
  Row("pinv", lambda a: jnp.linalg.pinv(a), lambda a: L.pinv(a), (rnd(4, 3, seed=9),), vmap=False, **TOL),
  Row("matrix_power-3", lambda a: jnp.linalg.matrix_power(a, 3), lambda a: L.matrix_power(a, 3), (A3,), **TOL),
  Row("matrix_power-neg", lambda a: jnp.linalg.matrix_power(a, -2), lambda a: L.matrix_power(a, -2), (A3,), vmap=False, **TOL),
  Row("multi_dot", lambda a, b, c: jnp.linalg.multi_dot([a, b, c]), lambda a, b, c: L.multi_dot([a, b, c]),
      (rnd(3, seed=1), rnd(3, 4, seed=2), rnd(4, 2, seed=3))),
  Row("cond", lambda a: jnp.linalg.cond(a), lambda a: L.cond(a), (A3,), vmap=False, **TOL),
  # scipy.linalg
  Row("sp-cholesky-upper", lambda a: tsl.cholesky(a), lambda a: jsl.cholesky(a), (S3,), **TOL),
  Row("sp-cho_solve", lambda a, b: tsl.cho_solve(tsl.cho_factor(a, lower=True), b),
      lambda a, b: jsl.cho_solve(jsl.cho_factor(a, lower=True), b), (S3, B3), vmap_last=True, **TOL),
  Row("sp-solve_triangular", lambda a, b: tsl.solve_triangular(a, b, lower=True), lambda a, b: jsl.solve_triangular(a, b, lower=True),
      (tri(3), B3), **TOL),
  Row("sp-solve_triangular-T-unit", lambda a, b: tsl.solve_triangular(a, b, trans=1, unit_diagonal=True),
      lambda a, b: jsl.solve_triangular(a, b, trans=1, unit_diagonal=True), (tri(3, lower=False), rnd(3, seed=2)), vmap=False, **TOL),
  Row("lax-triangular_solve-right-T", lambda a, b: tll.triangular_solve(a, b, left_side=False, transpose_a=True),
      lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=False, transpose_a=True), (tri(3, seed=3, lower=False), B3.T), **TOL),
  Row("lax-triangular_solve-left-unit", lambda a, b: tll.triangular_solve(a, b, left_side=True, lower=True, unit_diagonal=True),
      lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True, unit_diagonal=True), (tri(3, seed=4), B3),
      vmap=False, **TOL),
  Row("sp-lu", flat(jnp, tsl.lu), flat(jxn, jsl.lu), (A4,), **TOL),
  Row("sp-lu_factor", lambda a: tsl.lu_factor(a)[0], lambda a: jsl.lu_factor(a)[0], (A4,), **TOL),
  Row("sp-lu_solve", lambda a, b: tsl.lu_solve(tsl.lu_factor(a), b), lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b), (A3, B3),
      diff_args=(1,), **TOL),
  Row("sp-solve-pos", lambda a, b: tsl.solve(a, b, assume_a="pos"), lambda a, b: jsl.solve(a, b, assume_a="pos"), (S3, B3), **TOL),
  Row("sp-expm", lambda a: tsl.expm(a), lambda a: jsl.expm(a), (A3 * 0.5,), **TOL),
  Row("sp-expm-big", lambda a: tsl.expm(a), lambda a: jsl.expm(a), (A3 * 4,), vmap=False, diff=False, **TOL),
  Row("sp-block_diag", lambda a, b: tsl.block_diag(a, b), lambda a, b: jsl.block_diag(a, b), (A3, B3)),
]

# vmap along a new last axis for a few rows: the batching of every factorization is the same custom-call rule
@pytest.mark.parametrize("row,check", params(ROWS, vmap_last="none"))
def test_table(row, check): run(row, check)

BATCHED = [
  ("inv", lambda a: jnp.linalg.inv(a), lambda a: L.inv(a), rnd(2, 5, 5)),
  ("det", lambda a: jnp.linalg.det(a), lambda a: L.det(a), rnd(2, 5, 5)),
  ("cholesky", lambda a: jnp.linalg.cholesky(a), lambda a: L.cholesky(a), S4b),
  ("eigvalsh", lambda a: jnp.linalg.eigvalsh(a), lambda a: L.eigvalsh(a), S4b),
  ("qr-complete-m>n", lambda a: tuple(jnp.linalg.qr(a, mode="complete")), lambda a: tuple(L.qr(a, mode="complete")), rnd(2, 5, 3)),
  ("svd-full", lambda a: (lambda u, s, vt: (u @ u.mT, s, vt.mT @ vt))(*jnp.linalg.svd(a)),
   lambda a: (lambda u, s, vt: (u @ u.mT, s, vt.mT @ vt))(*L.svd(a)), rnd(2, 3, 5)),
]

@pytest.mark.parametrize("i", range(len(BATCHED)), ids=[b[0] for b in BATCHED])
def test_batched(i):
  _, f, g, x = BATCHED[i]
  assert_close(f(tg(x)), lambda: g(x), 1e-8, 1e-10)

# ---- the two paths: LAPACK on the host (CPU data, the rows above) and the tinygrad-op algorithms (other devices) ------

ROW = {r.name: r for r in ROWS}
# LAPACK on the CPU (tll.on_host)
FACTORIZATIONS = ["cholesky", "eigh", "svd", "svdvals", "qr", "slogdet", "sp-lu", "sp-solve_triangular", "sp-solve-pos", "sp-expm"]
OPS_PATH = ["cholesky", "eigh", "svd", "qr", "slogdet", "sp-lu", "sp-solve_triangular", "sp-expm"]   # one row per function

@pytest.mark.parametrize("name", FACTORIZATIONS)
def test_jit_replays_and_grad_on_the_lapack_path(name):
  """Under tinyjax.jit: one host call (a few kernels, no unrolled factorization), replayed on new values; and the
  jitted gradient."""
  row = ROW[name]
  f, g = tinyjax.jit(row.tj), tinyjax.jit(tinyjax.grad(lambda *a: (row.tj(*a) ** 2).sum()))
  for k in range(2):
    args = tuple(a * (1 + 0.1 * k) for a in row.args)
    assert_close(f(*tg(args)), lambda: row.jx(*args), row.rtol, row.atol)
    assert_close(g(*tg(args)), lambda: jax.grad(lambda *a: (row.jx(*a) ** 2).sum())(*args), row.rtol, row.atol)
  assert len(f.kernels(*tg(row.args))) <= 4

@pytest.fixture
def tinygrad_ops():
  """The tinygrad-op algorithms, as on a device without a host LAPACK."""
  tll.HOST_LAPACK = False
  try: yield
  finally: tll.HOST_LAPACK = True

def test_empty_inputs():
  """An empty batch (no host call: it takes no empty buffer) and 0 x 0 matrices, as JAX."""
  e, z = np.ones((0, 3, 3)), np.ones((0, 0))
  for tj, jx, x in [(jnp.linalg.cholesky, L.cholesky, e), (jnp.linalg.cholesky, L.cholesky, z),
                    (lambda a: tuple(jnp.linalg.eigh(a)), lambda a: tuple(L.eigh(a)), e),
                    (lambda a: tuple(jnp.linalg.svd(a)), lambda a: tuple(L.svd(a)), e),
                    (lambda a: tuple(jnp.linalg.slogdet(a)), lambda a: tuple(L.slogdet(a)), e)]:
    assert_close(tj(tg(x)), lambda: jx(x))

def test_a_device_without_host_memory_runs_the_tinygrad_ops():
  """The path is chosen by the device string (tll.on_host): tinygrad's PYTHON emulator factorizes with its own kernels,
  its data never goes through LAPACK."""
  a = np.array([[4., 2.], [2., 3.]], np.float32)
  t = Tensor(a, device="PYTHON")
  assert not tll.on_host(t) and tll.on_host(Tensor(a))
  l = jnp.linalg.cholesky(t)
  assert l.device == "PYTHON"
  assert_close(l, lambda: L.cholesky(a), 1e-6, 1e-6)

@pytest.mark.parametrize("row,check", [p for p in params([ROW[n] for n in OPS_PATH], vmap_last="none")
                                       if p.values[1] in ("value", "grad")])
def test_tinygrad_ops_path(tinygrad_ops, row, check):
  assert not tll.on_host(tg(row.args[0]))
  run(row, check)

def test_lstsq_and_rank():
  a, b = rnd(5, 3, seed=1), rnd(5, 2, seed=2)
  x, res, rank, s = jnp.linalg.lstsq(tg(a), tg(b))
  xj, resj, rankj, sj = L.lstsq(a, b)
  assert_close((x, res, s), (xj, resj, sj), 1e-8, 1e-10)
  assert int(rank.item()) == int(rankj)
  r = rnd(5, 2) @ rnd(2, 4, seed=3)
  assert int(jnp.linalg.matrix_rank(tg(r)).item()) == int(L.matrix_rank(r)) == 2

def test_eigh_and_svd_vectors_are_jaxs():
  """On the CPU the eigenvectors and singular vectors are LAPACK's: JAX's, signs included (both call the same
  routines: jaxlib calls scipy's LAPACK)."""
  assert_close(tuple(jnp.linalg.eigh(tg(S4b))), lambda: tuple(L.eigh(S4b)), 1e-12, 1e-14)
  x = rnd(2, 4, 3, seed=12)
  assert_close(tuple(jnp.linalg.svd(tg(x))), lambda: tuple(L.svd(x)), 1e-12, 1e-14)
  assert_close(tuple(jnp.linalg.svd(tg(x), full_matrices=False)), lambda: tuple(L.svd(x, full_matrices=False)), 1e-12, 1e-14)

def test_eigh_vectors_up_to_sign_on_the_tinygrad_op_path(tinygrad_ops):
  """The Jacobi eigenvectors, once aligned to JAX's signs; and their normalisation (largest entry positive)."""
  w, v = jnp.linalg.eigh(tg(S4b))
  v = v.numpy()
  wj, vj = L.eigh(S4b)
  vj = np.asarray(vj)
  assert_close(w, wj, 1e-9, 1e-11)
  sign = np.sign(np.sum(v * vj, axis=-2, keepdims=True))
  np.testing.assert_allclose(v, vj * sign, rtol=1e-8, atol=1e-10)
  big = np.take_along_axis(v, np.abs(v).argmax(-2)[..., None, :], -2)
  assert (big > 0).all()

_B, _C = rnd(3, seed=4), rnd(3, seed=5)
HESSIANS = {   # one per family: logdet (LU), solve, cholesky, eigh, svd; custom rules differentiated again
  "slogdet": (lambda a: jnp.linalg.slogdet(a)[1], lambda a: L.slogdet(a)[1], A3 + 3 * np.eye(3)),
  "solve": (lambda a: jnp.linalg.solve(a, tg(_B)) @ tg(_C), lambda a: L.solve(a, _B) @ _C, A3 + 3 * np.eye(3)),
  "cholesky": (lambda a: jnp.linalg.cholesky(a).sum(), lambda a: L.cholesky(a).sum(), S3),
  "expm": (lambda a: (tsl.expm(a) * tg(A3)).sum(), lambda a: (jsl.expm(a) * A3).sum(), A3 * 0.5),   # Frechet blocks, twice
  "eigh": (lambda a: (jnp.linalg.eigh(a)[0] * tg(_C)).sum(), lambda a: (L.eigh(a)[0] * _C).sum(), S3),
  "svd": (lambda a: jnp.linalg.svd(a, compute_uv=False)[0], lambda a: L.svd(a, compute_uv=False)[0], A3),
  "solve_triangular": (lambda a: tsl.solve_triangular(a, tg(_B), lower=True) @ tg(_C), lambda a: jsl.solve_triangular(a, _B, lower=True) @ _C,
                       tri(3, seed=5)),
}

@pytest.mark.parametrize("name", list(HESSIANS))
def test_hessians(name):
  f, g, x = HESSIANS[name]
  assert_close(tinyjax.hessian(f)(tg(x)), lambda: jax.hessian(g)(x), 1e-7, 1e-9)

def test_derivatives_at_computed_matrices():
  # slogdet's jvp rule calls LAPACK (inv) on its primal, a placeholder when the rule is traced: substituted by a
  # computation (`a @ a.T + I`, `2 * a`) the host call must still get a buffer (it raised tinygrad's "UOp verification
  # failed", eager and jitted)
  for f, g in [(lambda a: jnp.linalg.slogdet(a @ a.T + jnp.eye(3))[1], lambda a: L.slogdet(a @ a.T + np.eye(3))[1]),
               (lambda a: jnp.linalg.slogdet(2 * a)[1], lambda a: L.slogdet(2 * a)[1]),
               (lambda a: jnp.linalg.slogdet(a.T)[1], lambda a: L.slogdet(a.T)[1])]:
    want = jax.grad(g)(A3)
    assert_close(tinyjax.grad(f)(tg(A3)), want, 1e-9, 1e-11)
    assert_close(tinyjax.jit(tinyjax.grad(f))(tg(A3)), want, 1e-9, 1e-11)
    assert_close(tinyjax.jvp(f, (tg(A3),), (tg(S3),)), jax.jvp(g, (A3,), (S3,)), 1e-9, 1e-11)

def test_jit_and_nan():
  f = tinyjax.jit(lambda a: jnp.linalg.solve(a, a.sum(-1)))
  assert_close(f(tg(A3)), lambda: L.solve(A3, A3.sum(-1)), 1e-9, 1e-11)
  # not positive definite: NaN in the lower triangle, zeros above, as JAX
  np.testing.assert_array_equal(jnp.linalg.cholesky(tg(-np.eye(3))).numpy(), np.asarray(L.cholesky(-np.eye(3))))

def test_solve_and_inv_are_one_lapack_call():
  # JAX's CPU solve is LAPACK's LU: tinyjax calls it on the host, one call (no LU unrolled into n steps of kernels), as
  # accurate as JAX's on a 64 x 64 float32 system; a singular matrix gives JAX's infinities instead of an exception
  rng = np.random.default_rng(4)
  a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal(64).astype(np.float32)
  f = tinyjax.jit(lambda a, b: (jnp.linalg.solve(a, b), jnp.linalg.inv(a)))
  x, ainv = f(tg(a), tg(b))
  exact = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
  assert np.abs(x.numpy() - exact).max() <= np.abs(np.asarray(L.solve(a, b)) - exact).max()
  np.testing.assert_allclose(ainv.numpy(), np.linalg.inv(a.astype(np.float64)), rtol=1e-5, atol=1e-5)
  assert len(f.kernels(tg(a), tg(b))) <= 3   # the inputs' copies and the host call: no LU kernels
  s = np.array([[1., 2.], [2., 4.]], np.float32)
  np.testing.assert_array_equal(jnp.linalg.solve(tg(s), tg(np.ones(2, np.float32))).numpy(), np.asarray(L.solve(s, np.ones(2, np.float32))))
  np.testing.assert_array_equal(jnp.linalg.inv(tg(s)).numpy(), np.asarray(L.inv(s)))

def test_eager_calls_run_lapack_at_once():
  """Outside transforms a factorization runs at the call, as JAX dispatches it: its results are computed buffers (a host
  call node would be scheduled and compiled anew at every eager call), JAX's numbers, float32 kept float32."""
  from tinyjax._tg import is_lazy
  a = spd(4, 3).astype(np.float32)
  w, v = jnp.linalg.eigh(tg(a))
  lu_, piv = tsl.lu_factor(tg(a) * 2)   # a lazy argument
  for x in (w, v, lu_, piv): assert not is_lazy(x)
  assert w.dtype == jnp.float32 and piv.dtype == jnp.int32
  np.testing.assert_array_equal(w.numpy(), np.asarray(L.eigh(a)[0]))
  np.testing.assert_array_equal(np.abs(v.numpy()), np.abs(np.asarray(L.eigh(a)[1])))
  np.testing.assert_array_equal(lu_.numpy(), np.asarray(jsl.lu_factor(a * 2)[0]))

def test_host_call_under_a_rewritten_derivative_graph():
  # jvp rewrites abs for JAX's derivative at 0; the primal and tangent graphs then held two copies of the LAPACK call,
  # which write the same buffers: realizing both together failed ("cycle detected in assign graph")
  def f(m): return lambda a: (lambda r: r @ r)(m.linalg.solve(a / m.abs(a).sum(), a))
  v = np.random.default_rng(1).standard_normal((3, 3))
  assert_close(tinyjax.jvp(f(jnp), (tg(A3),), (tg(v),)), lambda: jax.jvp(f(jxn), (A3,), (v,)), 1e-9, 1e-11)


def test_x32_dtypes():
  from jnp_table import x64_off
  with x64_off():
    x = jnp.linalg.inv(np.eye(3, dtype=np.int32) * 2)
    assert x.dtype == jnp.float32 and np.allclose(x.numpy(), np.eye(3) / 2)

ERRORS = [
  ("inv-nonsquare", lambda m: m.linalg.inv(np.ones((2, 3)))),
  ("inv-1d", lambda m: m.linalg.inv(np.ones(3))),
  ("cholesky-nonsquare", lambda m: m.linalg.cholesky(np.ones((2, 3)))),
  ("det-nonsquare", lambda m: m.linalg.det(np.ones((2, 3)))),
  ("solve-shapes", lambda m: m.linalg.solve(np.eye(3), np.ones(4))),
  ("norm-bad-ord", lambda m: m.linalg.norm(np.ones(3), "fro")),
  ("norm-bad-axis", lambda m: m.linalg.norm(np.ones((2, 2)), axis=(0, 1, 1))),
  ("qr-mode", lambda m: m.linalg.qr(np.eye(2), mode="bad")),
  ("matrix_power-float", lambda m: m.linalg.matrix_power(np.eye(2), 1.5)),
  ("expm-nonsquare", lambda m: (tsl if m is jnp else jsl).expm(np.ones((2, 3)))),
]

@pytest.mark.parametrize("i", range(len(ERRORS)), ids=[e[0] for e in ERRORS])
def test_errors(i):
  """tinyjax raises JAX's exception type for bad input."""
  fn = ERRORS[i][1]
  with pytest.raises(Exception) as tj: fn(jnp)
  with pytest.raises(Exception) as jx: fn(jxn)
  assert type(tj.value) is type(jx.value), (tj.value, jx.value)

def test_unsupported_args():
  with pytest.raises(NotImplementedError, match="hermitian"): jnp.linalg.svd(tg(A3), hermitian=True)
  with pytest.raises(NotImplementedError, match="pivoting"): tsl.qr(tg(A3), pivoting=True)
  with pytest.raises(NotImplementedError, match="generalized"): tsl.eigh(tg(S3), tg(S3))


# ---- lax.linalg: JAX's lax.linalg functions where tinyjax gives one of their names ------------------------------------

@pytest.mark.parametrize("host", [True, False], ids=["lapack", "tinygrad_ops"])
def test_lax_linalg_lu_matches_jax(host):
  tll.HOST_LAPACK = host
  try:
    a = rnd(2, 4, 4, seed=31)
    got, want = tll.lu(tg(a)), jax.lax.linalg.lu(a)
    assert_close(got[0], want[0])   # the packed LU
    for g, w in zip(got[1:], want[1:], strict=True): np.testing.assert_array_equal(g.numpy(), np.asarray(w))   # pivots, permutation
    piv = np.array([[2, 2, 3], [1, 1, 2]], np.int32)
    np.testing.assert_array_equal(tll.lu_pivots_to_permutation(tg(piv), 5).numpy(), np.asarray(jax.lax.linalg.lu_pivots_to_permutation(piv, 5)))
  finally: tll.HOST_LAPACK = True

@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a,unit_diagonal", [(False, False), (True, False), (False, True)])
def test_lax_linalg_triangular_solve_matches_jax(left_side, lower, transpose_a, unit_diagonal):
  a = rnd(3, 3, seed=32) + 3 * np.eye(3)
  b = rnd(3, 2, seed=33) if left_side else rnd(2, 3, seed=33)
  kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
  assert_close(tll.triangular_solve(tg(a), tg(b), **kw), jax.lax.linalg.triangular_solve(a, b, **kw))


def test_result_tuples_are_pytrees_as_in_jax():
  """QRResult & co. are named tuples, as JAX's: pytrees of their arrays (tree_map, vmap and jit outputs see the leaves)."""
  a = rnd(3, 3, seed=34) + 3 * np.eye(3)
  for name, fn in [("qr", lambda m, x: m.linalg.qr(x)), ("eigh", lambda m, x: m.linalg.eigh(x @ x.T)),
                   ("svd", lambda m, x: m.linalg.svd(x)), ("slogdet", lambda m, x: m.linalg.slogdet(x))]:
    got, want = fn(jnp, tg(a)), fn(jxn, a)
    assert type(got).__name__ == type(want).__name__ and got._fields == want._fields, name
    assert tinyjax.tree_util.tree_structure(got).num_leaves == jax.tree_util.tree_structure(want).num_leaves, name
  q, r = tinyjax.vmap(jnp.linalg.qr)(tg(np.stack([a, 2 * a])))
  jq, jr = jax.vmap(jxn.linalg.qr)(np.stack([a, 2 * a]))
  assert_close(tinyjax.tree_util.tree_map(lambda t: t.abs(), (q, r)), (np.abs(jq), np.abs(jr)))

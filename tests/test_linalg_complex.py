"""Linear algebra with complex results or complex matrices against JAX: eig/eigvals of real and complex matrices (LAPACK
geev, JAX's CPU routine, so the same eigenvectors), complex solve/inv/det/slogdet/eigh, svd/qr (gesdd, geqrf + ungqr: the
same singular vectors and Q), pinv, lstsq, matrix_rank, cond and norms, under vmap, jit, jvp and grad (JAX's conjugate
convention), float32 (x64 off) and float64; and the errors for bad input and for the jnp.linalg functions that have no
complex version yet."""
import numpy as np
import pytest
import jax, jax.numpy as jxn
import tinyjax, tinyjax.numpy as jnp
from tinyjax.lax import linalg as tlax
from conftest import rnd, same_error, ref
from jnp_table import x64_off

def crnd(*shape, seed=0):
  return rnd(*shape, seed=seed) + 1j * rnd(*shape, seed=seed + 100)

A = rnd(4, 4)                          # real, non-symmetric: two complex conjugate eigenvalues
C = crnd(4, 4, seed=1)                 # complex
H = C @ C.conj().T + np.eye(4)         # Hermitian positive definite
B = crnd(4, 2, seed=2)
AB = rnd(3, 4, 4, seed=3)              # a batch

def close(got, want, rtol=1e-9, atol=1e-11):
  """got (a tinyjax value or tuple) equals JAX's want in value and dtype (want: JAX's values, or a thunk computing
  them, run under jax.jit: its compilation is cached across runs)."""
  if callable(want): want = ref(want)
  if isinstance(want, (tuple, list)):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True): close(g, w, rtol, atol)
    return
  want, g = np.asarray(want), np.asarray(got)
  assert g.dtype == want.dtype, (g.dtype, want.dtype)
  np.testing.assert_allclose(g, want, rtol=rtol, atol=atol)

# ---- eig --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("a", [A, C, AB], ids=["real", "complex", "batch"])
def test_eig_values(a):
  w, v = jnp.linalg.eig(a)
  close((w, v), tuple(jxn.linalg.eig(a)))   # geev's normalisation: the same vectors as JAX's
  wn, vn = np.asarray(w), np.asarray(v)
  np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], atol=1e-12)
  close(jnp.linalg.eigvals(a), jxn.linalg.eigvals(a))

def test_eig_vmap_jit_and_lax():
  close(tinyjax.vmap(jnp.linalg.eigvals)(AB), jax.vmap(jxn.linalg.eigvals)(AB))
  g = tinyjax.vmap(tinyjax.grad(lambda a: jnp.abs(jnp.linalg.eigvals(a)).sum()))(AB)
  close(g, lambda: jax.vmap(jax.grad(lambda a: jxn.abs(jxn.linalg.eigvals(a)).sum()))(AB))
  ab = np.moveaxis(AB, 0, 2)
  close(tuple(tinyjax.vmap(jnp.linalg.eig, in_axes=2)(ab)), tuple(jax.vmap(jxn.linalg.eig, in_axes=2)(ab)))
  f = tinyjax.jit(lambda a: jnp.linalg.eig(a * 2)[1] * 1j)
  for _ in range(2): close(f(C), jax.jit(lambda a: jxn.linalg.eig(a * 2)[1] * 1j)(C))
  close(tuple(tinyjax.lax.linalg.eig(A)), tuple(jax.lax.linalg.eig(A)))   # left eigenvectors too
  close(tuple(tinyjax.lax.linalg.eig(C)), tuple(jax.lax.linalg.eig(C)))

def test_eig_grad_and_jvp():
  def loss(m):
    def f(a):
      w = m.linalg.eigvals(a)
      return m.sum(m.abs(w) ** 2 + m.real(w ** 3) * m.imag(w))
    return f
  close(tinyjax.grad(loss(jnp))(A), lambda: jax.grad(loss(jxn))(A))
  close(tinyjax.grad(loss(jnp))(C), lambda: jax.grad(loss(jxn))(C))
  t = rnd(4, 4, seed=7)
  close(tinyjax.jvp(jnp.linalg.eigvals, (A,), (t,)), jax.jvp(jxn.linalg.eigvals, (A,), (t,)))
  # the eigenvectors' derivative under geev's normalisation (JAX's _eig_vec_jvp), with lax.linalg.eig's opt-in
  def eig_t(a): return tuple(tinyjax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True))
  def eig_j(a): return tuple(jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True))
  close(tinyjax.jvp(eig_t, (A,), (t,)), lambda: jax.jvp(eig_j, (A,), (t,)))
  def vloss(m, e): return lambda a: m.sum(m.abs(e(a)[1][:, 1:] + 0.5) ** 2)
  close(tinyjax.grad(vloss(jnp, eig_t))(C), lambda: jax.grad(vloss(jxn, eig_j))(C))

def test_eig_errors():
  same_error(lambda: jnp.linalg.eig(np.ones((2, 3))), lambda: jxn.linalg.eig(np.ones((2, 3))))
  same_error(lambda: jnp.linalg.eigvals(np.ones(3)), lambda: jxn.linalg.eigvals(np.ones(3)))
  same_error(lambda: tinyjax.grad(lambda a: jnp.real(jnp.linalg.eig(a)[1]).sum())(A),
             lambda: jax.grad(lambda a: jxn.real(jxn.linalg.eig(a)[1]).sum())(A))

# ---- complex solve, inv, det, slogdet, eigh ------------------------------------------------------------------------------------

CASES = [
  ("solve", lambda m: m.linalg.solve(C, B)), ("solve-vec", lambda m: m.linalg.solve(C, B[:, 0])),
  ("solve-mixed", lambda m: m.linalg.solve(A, B)), ("inv", lambda m: m.linalg.inv(C)), ("det", lambda m: m.linalg.det(C)),
  ("slogdet", lambda m: tuple(m.linalg.slogdet(C))), ("eigh", lambda m: tuple(m.linalg.eigh(H))),
  ("eigvalsh", lambda m: m.linalg.eigvalsh(H)), ("eigh-upper", lambda m: tuple(m.linalg.eigh(np.triu(H), UPLO="U", symmetrize_input=False))),
  ("norm", lambda m: m.linalg.norm(C)), ("norm-1", lambda m: m.linalg.norm(C, 1)), ("norm-inf-ax", lambda m: m.linalg.norm(C, np.inf, axis=1)),
  ("vector_norm", lambda m: m.linalg.vector_norm(C, ord=3)), ("matrix_power", lambda m: m.linalg.matrix_power(C, -2)),
  ("multi_dot", lambda m: m.linalg.multi_dot([C, C, B])), ("matmul", lambda m: m.linalg.matmul(C, B)),
  ("trace", lambda m: m.linalg.trace(C)), ("vecdot", lambda m: m.linalg.vecdot(C, C)),
  ("scipy-solve", lambda m: (tinyjax if m is jnp else jax).scipy.linalg.solve(C, B)),
  ("scipy-eigh", lambda m: (tinyjax if m is jnp else jax).scipy.linalg.eigh(H, lower=False)),
]

@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_complex_values(name, fn):
  close(fn(jnp), fn(jxn))

def _real_loss(m, f):
  """A real function of complex matrices: JAX's grad is the conjugate of the pair's gradient."""
  def loss(a, b):
    out = f(m, a, b)
    return sum(m.sum(m.abs(o + 0.3j) ** 2) for o in (out if isinstance(out, tuple) else (out,)))
  return loss

GRADS = {
  "solve": lambda m, a, b: m.linalg.solve(a, b), "inv": lambda m, a, b: m.linalg.inv(a) @ b,
  "det": lambda m, a, b: m.linalg.det(a), "slogdet": lambda m, a, b: tuple(m.linalg.slogdet(a)),
  "eigh": lambda m, a, b: (lambda e: (e[0], m.abs(e[1])))(m.linalg.eigh(a @ m.conj(a.T))),
}

@pytest.mark.parametrize("name", list(GRADS))
def test_complex_grad(name):
  lt, lj = _real_loss(jnp, GRADS[name]), _real_loss(jxn, GRADS[name])
  close(tinyjax.grad(lt, argnums=(0, 1))(C, B), lambda: jax.grad(lj, argnums=(0, 1))(C, B))

def test_complex_jvp_vmap_jit():
  tc, tb = crnd(4, 4, seed=5), crnd(4, 2, seed=6)
  close(tinyjax.jvp(jnp.linalg.solve, (C, B), (tc, tb)), jax.jvp(jxn.linalg.solve, (C, B), (tc, tb)))
  close(tinyjax.jvp(lambda h: tuple(jnp.linalg.eigh(h)), (H,), (tc + tc.conj().T,)),
        lambda: jax.jvp(lambda h: tuple(jxn.linalg.eigh(h)), (H,), (tc + tc.conj().T,)))
  cb = np.stack([C, C.T, C * 2j])
  for name in ("inv", "det", "eigvalsh"):
    close(tinyjax.vmap(getattr(jnp.linalg, name))(cb), jax.vmap(getattr(jxn.linalg, name))(cb))
    close(getattr(jnp.linalg, name)(cb), getattr(jxn.linalg, name)(cb))   # leading batch axes
  close(tinyjax.vmap(jnp.linalg.solve, in_axes=(None, 1))(C, B), jax.vmap(jxn.linalg.solve, in_axes=(None, 1))(C, B))
  f = tinyjax.jit(lambda a, b: jnp.linalg.solve(a, b) * jnp.linalg.det(a))
  for _ in range(2): close(f(C, B), jax.jit(lambda a, b: jxn.linalg.solve(a, b) * jxn.linalg.det(a))(C, B))

def test_x64_off():
  with x64_off():
    a, c = A.astype(np.float32), C.astype(np.complex64)
    close(tuple(jnp.linalg.eig(a)), tuple(jxn.linalg.eig(a)), rtol=1e-5, atol=1e-6)
    close(jnp.linalg.solve(c, B.astype(np.complex64)), jxn.linalg.solve(c, B.astype(np.complex64)), rtol=1e-5, atol=1e-6)
    close(tinyjax.grad(lambda x: jnp.abs(jnp.linalg.eigvals(x)).sum())(a), jax.grad(lambda x: jxn.abs(jxn.linalg.eigvals(x)).sum())(a),
          rtol=1e-4, atol=1e-5)

def test_complex_errors():
  same_error(lambda: jnp.linalg.eig(np.ones((2, 3)) * 1j), lambda: jxn.linalg.eig(np.ones((2, 3)) * 1j))
  with pytest.raises(NotImplementedError, match="jnp.linalg.cross of complex values"): jnp.linalg.cross(C[0, :3], C[1, :3])
  with pytest.raises(NotImplementedError, match="jax.scipy.linalg.lu_factor of complex values"): tinyjax.scipy.linalg.lu_factor(C)
  with pytest.raises(NotImplementedError, match="jax.scipy.linalg.solve of complex values with assume_a='pos'"):
    tinyjax.scipy.linalg.solve(H, B, assume_a="pos")
  with pytest.raises(ValueError, match="solve: last two dimensions of the input must be square"): jnp.linalg.solve(C[:3], B)
  with pytest.raises(ValueError, match="solve: incompatible shapes"): jnp.linalg.solve(C, B[:3])
  old = tlax.HOST_LAPACK
  tlax.HOST_LAPACK = False
  try:
    with pytest.raises(NotImplementedError, match="eig of complex matrices .* CPU device only"): jnp.linalg.eigvals(A)
  finally: tlax.HOST_LAPACK = old

# ---- complex svd, qr, pinv, lstsq, matrix_rank, cond ------------------------------------------------------------------
# gesdd and geqrf/ungqr are the routines JAX's CPU backend calls, so U, Vh and Q are JAX's numbers, phases included:
# compared as they are (and U S Vh against the matrix)

T, W = crnd(5, 3, seed=8), crnd(3, 5, seed=9)   # tall, wide
LOW = crnd(4, 2, seed=10) @ crnd(2, 4, seed=11)   # rank 2

def test_svd_values_and_reconstruction():
  for a in (C, T, W):
    for full in (True, False):
      u, s, vh = jnp.linalg.svd(a, full_matrices=full)
      close((u, s, vh), tuple(jxn.linalg.svd(a, full_matrices=full)))
      k = min(a.shape)
      np.testing.assert_allclose((np.asarray(u)[:, :k] * np.asarray(s)) @ np.asarray(vh)[:k], a, atol=1e-13)

SVD_CASES = [
  ("svdvals", lambda m: m.linalg.svdvals(W)), ("svd-uv-off", lambda m: m.linalg.svd(T, compute_uv=False)),
  ("svd-batch", lambda m: tuple(m.linalg.svd(np.stack([T, T * 1j]), full_matrices=False))),
  ("qr", lambda m: tuple(m.linalg.qr(T))), ("qr-complete", lambda m: tuple(m.linalg.qr(T, mode="complete"))),
  ("qr-wide", lambda m: tuple(m.linalg.qr(W))), ("qr-r", lambda m: m.linalg.qr(W, mode="r")),
  ("pinv", lambda m: m.linalg.pinv(T)), ("pinv-low-rank", lambda m: m.linalg.pinv(LOW)),
  ("pinv-rtol", lambda m: m.linalg.pinv(np.stack([LOW, C]), rtol=np.array([0.5, 1e-3]))),
  ("lstsq", lambda m: tuple(m.linalg.lstsq(T, B[:, :2].repeat(2, 0)[:5]))),
  ("lstsq-vec-mixed", lambda m: tuple(m.linalg.lstsq(T, A[:, 0].repeat(2)[:5]))),
  ("lstsq-low-rank", lambda m: tuple(m.linalg.lstsq(LOW, B))),
  ("matrix_rank", lambda m: m.linalg.matrix_rank(np.stack([LOW, C]))),
  ("cond", lambda m: m.linalg.cond(T)), ("cond--2", lambda m: m.linalg.cond(C, -2)), ("cond-1", lambda m: m.linalg.cond(C, 1)),
  ("norm-2", lambda m: m.linalg.norm(W, 2)), ("norm-nuc", lambda m: m.linalg.norm(T, "nuc")),
  ("norm--2-axes", lambda m: m.linalg.norm(np.stack([T, T * 2]), -2, axis=(2, 1), keepdims=True)),
  ("matrix_norm-2", lambda m: m.linalg.matrix_norm(C, ord=2)),
  ("empty-svd", lambda m: tuple(m.linalg.svd(np.zeros((0, 3), complex)))),
  ("empty-qr", lambda m: tuple(m.linalg.qr(np.zeros((3, 0), complex), mode="complete"))),
  ("scipy-svd", lambda m: (tinyjax if m is jnp else jax).scipy.linalg.svd(W)),
  ("scipy-qr", lambda m: (tinyjax if m is jnp else jax).scipy.linalg.qr(T, mode="economic")),
]

@pytest.mark.parametrize("name,fn", SVD_CASES, ids=[c[0] for c in SVD_CASES])
def test_svd_family_values(name, fn):
  close(fn(jnp), fn(jxn), atol=1e-12)

def _svd_qr_loss(m):
  """A real loss of complex svd and qr outputs, tall and wide: the phases are LAPACK's on both sides, so even the
  phase-dependent terms must agree."""
  def f(t, w):
    out = 0
    for a in (t, w):
      u, s, vh = m.linalg.svd(a, full_matrices=False)
      q, r = m.linalg.qr(a)
      out = out + m.sum(s ** 2) + m.sum(m.abs(u + 0.3j) ** 2 * m.real(vh[:1, :1])) + m.sum(m.abs(q - 0.2) ** 3) + m.sum(m.imag(r) * m.real(r))
    return out
  return f

def test_svd_qr_grad():
  close(tinyjax.grad(_svd_qr_loss(jnp), argnums=(0, 1))(T, W), lambda: jax.grad(_svd_qr_loss(jxn), argnums=(0, 1))(T, W), 1e-8, 1e-10)

def test_svd_qr_jvp():
  tt, tw = crnd(5, 3, seed=12), crnd(3, 5, seed=13)
  def f(m): return lambda t, w: (tuple(m.linalg.svd(t, full_matrices=False)), tuple(m.linalg.svd(w, full_matrices=False)),
                                 tuple(m.linalg.qr(t, mode="complete")), tuple(m.linalg.qr(w)), m.linalg.svdvals(t))
  # (the complete QR of a tall matrix: its reverse mode is this rule transposed)
  close(tinyjax.jvp(f(jnp), (T, W), (tt, tw)), lambda: jax.jvp(f(jxn), (T, W), (tt, tw)), 1e-8, 1e-10)

def _built_on_svd_loss(m):
  def f(a, b):
    x, res, _, _ = m.linalg.lstsq(a, b)
    return (m.sum(m.abs(m.linalg.pinv(a) - 0.1j) ** 2) + m.sum(m.abs(x) ** 2) + m.sum(res) + m.linalg.norm(a, 2)
            + m.linalg.norm(a, "nuc") + m.linalg.cond(a))
  return f

def test_pinv_lstsq_norm_cond_grad():
  b = crnd(5, 2, seed=14)
  close(tinyjax.grad(_built_on_svd_loss(jnp), argnums=(0, 1))(T, b), lambda: jax.grad(_built_on_svd_loss(jxn), argnums=(0, 1))(T, b),
        1e-8, 1e-10)

def test_svd_qr_vmap_jit():
  tb = np.stack([T, T.conj() * 2, T[::-1]])
  close(tuple(tinyjax.vmap(jnp.linalg.svd, in_axes=2)(np.moveaxis(tb, 0, 2))), tuple(jax.vmap(jxn.linalg.svd, in_axes=2)(np.moveaxis(tb, 0, 2))))
  close(tuple(tinyjax.vmap(jnp.linalg.qr)(tb)), tuple(jax.vmap(jxn.linalg.qr)(tb)))
  close(tinyjax.vmap(jnp.linalg.pinv)(tb), jax.vmap(jxn.linalg.pinv)(tb), atol=1e-12)
  g = tinyjax.vmap(tinyjax.grad(lambda a: jnp.sum(jnp.linalg.svdvals(a) ** 3)))(tb)
  close(g, lambda: jax.vmap(jax.grad(lambda a: jxn.sum(jxn.linalg.svdvals(a) ** 3)))(tb))
  def f(m): return lambda a: (m.linalg.svd(a * 2)[0] * 1j, m.linalg.qr(a)[1], m.linalg.norm(a, 2))
  tf = tinyjax.jit(f(jnp))
  for _ in range(2): close(tf(T), jax.jit(f(jxn))(T))

def test_svd_qr_x64_off():
  with x64_off():
    t, w = T.astype(np.complex64), W.astype(np.complex64)
    close(tuple(jnp.linalg.svd(w)), tuple(jxn.linalg.svd(w)), rtol=1e-5, atol=1e-6)
    close(tuple(jnp.linalg.qr(t)), tuple(jxn.linalg.qr(t)), rtol=1e-5, atol=1e-6)
    close(jnp.linalg.pinv(t), jxn.linalg.pinv(t), rtol=1e-5, atol=1e-6)
    close(tinyjax.grad(lambda a: jnp.sum(jnp.linalg.svdvals(a) ** 2))(t), jax.grad(lambda a: jxn.sum(jxn.linalg.svdvals(a) ** 2))(t),
          rtol=1e-5, atol=1e-5)

def test_svd_family_errors():
  for bad in (lambda m: m.linalg.svd(C[0]), lambda m: m.linalg.qr(C[0]), lambda m: m.linalg.qr(C, mode="x"),
              lambda m: m.linalg.lstsq(T, B[:, 0]), lambda m: m.linalg.lstsq(np.stack([T, T]), B[:, 0]),
              lambda m: m.linalg.cond(C[0]), lambda m: m.linalg.cond(T, 1), lambda m: m.linalg.cond(np.zeros((0, 3), complex)),
              lambda m: m.linalg.norm(C, 3)):
    same_error(lambda: bad(jnp), lambda: bad(jxn))
  with pytest.raises(NotImplementedError, match="svd: hermitian=True"): jnp.linalg.svd(H, hermitian=True)
  with pytest.raises(NotImplementedError, match="svd: derivative with full_matrices=True of a non-square matrix"):
    tinyjax.jvp(lambda a: jnp.linalg.svd(a)[0], (T,), (T,))
  old = tlax.HOST_LAPACK
  tlax.HOST_LAPACK = False
  try:
    with pytest.raises(NotImplementedError, match="svd of complex matrices .* CPU device only"): jnp.linalg.svdvals(C)
  finally: tlax.HOST_LAPACK = old

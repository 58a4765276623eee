"""Linear algebra with complex results or complex matrices against JAX: eig/eigvals of real and complex matrices (LAPACK
geev, JAX's CPU routine, so the same eigenvectors), complex solve/inv/det/slogdet/eigh and norms, under vmap, jit, jvp
and grad (JAX's conjugate convention), float32 (x64 off) and float64; and the errors for bad input and for the
jnp.linalg functions that have no complex version yet."""
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
  with pytest.raises(NotImplementedError, match="jnp.linalg.svd of complex values"): jnp.linalg.svd(C)
  with pytest.raises(NotImplementedError, match="jnp.linalg.qr of complex values"): jnp.linalg.qr(C)
  with pytest.raises(NotImplementedError, match="ord=2"): jnp.linalg.norm(C, 2)
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

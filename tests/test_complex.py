"""Complex numbers against JAX: creation and dtypes (promotion with x64 on and off, weak Python complex scalars),
elementwise math with special values, reductions, products, indexing and shape functions, and the transforms with JAX's
conventions (grad's conjugate, holomorphic=, vjp, jvp, vmap, jit, scan). The oracle is jax.numpy (complex128 with x64)."""
import numpy as np
import pytest
import jax, jax.numpy as jxn
import tinyjax, tinyjax.numpy as jnp
from tinyjax import lax
from tinyjax.complex_array import ComplexArray
from tinygrad import Tensor
from conftest import rnd, same_error
from jnp_table import x64_off

def crnd(*shape, seed=0):
  return rnd(*shape, seed=seed) + 1j * rnd(*shape, seed=seed + 100)

Z, W = crnd(3, 4), crnd(3, 4, seed=1)
X = rnd(3, 4, seed=2)

def close(got, want, rtol=1e-10, atol=1e-12):
  """got (a tinyjax value) equals JAX's want in value and dtype."""
  want = np.asarray(want)
  g = np.asarray(got)
  assert g.dtype == want.dtype, (g.dtype, want.dtype)
  np.testing.assert_allclose(g, want, rtol=rtol, atol=atol)

# ---- creation and dtypes -----------------------------------------------------------------------------------------------

def test_creation():
  x = jnp.asarray(X)
  close(1j * x, 1j * jxn.asarray(X))
  close(x * (2 - 1j), jxn.asarray(X) * (2 - 1j))
  close(jnp.array([1 + 2j, 3]), jxn.array([1 + 2j, 3]))
  close(lax.complex(x, x * 2), jax.lax.complex(jxn.asarray(X), jxn.asarray(X) * 2))
  close(x.astype(jnp.complex64), jxn.asarray(X).astype(jxn.complex64))
  close(jnp.exp(1j * x), jxn.exp(1j * jxn.asarray(X)))
  close(jnp.zeros((2, 3), jnp.complex64), jxn.zeros((2, 3), jxn.complex64))
  close(jnp.ones(3, dtype=complex), jxn.ones(3, dtype=complex))
  close(jnp.full((2,), 1 + 2j), jxn.full((2,), 1 + 2j))
  close(jnp.eye(2, dtype=jnp.complex128), jxn.eye(2, dtype=jxn.complex128))
  close(jnp.zeros_like(jnp.asarray(Z)), jxn.zeros_like(Z))
  close(jnp.asarray(Z).real, Z.real)
  close(jnp.asarray(Z).imag, Z.imag)
  close(jnp.asarray(Z).conj(), Z.conj())
  close(jnp.real(X), jxn.real(X))
  close(jnp.imag(X), jxn.imag(X))
  close(jnp.angle(Z), jxn.angle(Z))
  close(jnp.angle(X, deg=True), jxn.angle(X, deg=True))
  z = jnp.asarray(Z)
  assert z.dtype == jnp.complex128 and z.dtype != jnp.float64 and np.dtype(z.dtype) == np.complex128
  assert (z.shape, z.ndim, z.size, len(z)) == ((3, 4), 2, 12, 3)
  assert jnp.issubdtype(z.dtype, jnp.complexfloating) and not jnp.issubdtype(z.dtype, jnp.floating)
  assert jnp.iscomplexobj(z) and not jnp.iscomplexobj(X) and jnp.isrealobj(X)
  assert repr(jnp.array([1 + 2j, 3 - 1j], jnp.complex64)) == repr(jxn.array([1 + 2j, 3 - 1j], jxn.complex64))
  assert complex(jnp.asarray(1 + 2j)) == 1 + 2j and jnp.asarray(Z)[1, 2].item() == Z[1, 2]

@pytest.mark.parametrize("x64", [True, False])
def test_promotion(x64):
  reals = [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.bool_]
  def run():
    for d in reals:
      a = np.ones(2, d)
      for c in (1j, np.ones(2, np.complex64), np.ones(2, np.complex128)):
        got, want = jnp.asarray(a) * c, jxn.asarray(a) * c
        assert np.dtype(got.dtype) == want.dtype, (d, c, got.dtype, want.dtype)
        assert jnp.result_type(a, c) == jxn.result_type(a, c), (d, c)
    assert np.dtype(jnp.asarray(1j).dtype) == jxn.asarray(1j).dtype
  if x64: run()
  else:
    with x64_off(): run()

# ---- elementwise math ----------------------------------------------------------------------------------------------------

UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "abs", "square", "reciprocal", "sign", "log10",
         "log2", "exp2", "expm1", "log1p", "negative", "conj", "real", "imag", "angle", "isnan", "isinf", "isfinite"]

@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
  close(getattr(jnp, name)(Z), getattr(jxn, name)(Z))

SPECIAL = np.array([0, -0.0, 1, -1, 4j, -4j, -4 + 0j, complex(-4, -0.0), complex(0, -0.0), np.inf, -np.inf, complex(np.inf, 1),
                    complex(1, np.inf), np.nan, complex(1e300, 1e300), complex(1e-300, 1e-300)], np.complex128)

@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "abs", "sign", "square"])
def test_unary_special_values(name):
  # (exp's values at 1e300 + 1e300i read cos(1e300), where tinyjax's and XLA's real argument reductions differ)
  z = SPECIAL[:-2] if name == "exp" else SPECIAL
  with np.errstate(all="ignore"):
    close(getattr(jnp, name)(z), getattr(jxn, name)(z), rtol=1e-12)

BINARY = ["add", "subtract", "multiply", "divide", "power", "equal", "not_equal"]

@pytest.mark.parametrize("name", BINARY)
def test_binary(name):
  for a, b in ((Z, W), (Z, X), (X, W), (Z, 2.5), (1 - 2j, W), (Z, 3), (Z[0], W)):
    close(getattr(jnp, name)(a, b), getattr(jxn, name)(a, b))

def test_operators_and_division_edge_cases():
  z, w = jnp.asarray(Z), jnp.asarray(W)
  for got, want in ((z + w, Z + W), (z - 1j, Z - 1j), (2 * z, 2 * Z), (z / w, Z / W), (X / w, X / W), (z ** 2, Z ** 2),
                    (z ** -3, jxn.asarray(Z) ** -3), (z ** 0.5, jxn.asarray(Z) ** 0.5), (z @ w.T, Z @ W.T), (-z, -Z), (abs(z), np.abs(Z)),
                    (z == w, Z == W), (z != z, Z != Z), (jnp.asarray(X) * 1j, X * 1j)):
    close(got, np.asarray(want) if not hasattr(want, "block_until_ready") else want)
  big = np.array([1e300 + 1e300j, 1e-300 + 0j, 3 + 4j])
  close(jnp.divide(big, big[::-1]), jxn.divide(big, big[::-1]), rtol=1e-12)
  close(jnp.power(np.array([0j, 0j, 2 + 1j]), np.array([0j, 1 + 1j, 0j])), jxn.power(np.array([0j, 0j, 2 + 1j]), np.array([0j, 1 + 1j, 0j])))
  close(jnp.isclose(Z, Z + 1e-9), jxn.isclose(Z, Z + 1e-9))
  assert bool(jnp.allclose(Z, Z * (1 + 1e-12)))

# ---- reductions, products, shapes, indexing ------------------------------------------------------------------------------------

CASES = [
  ("sum", lambda m, z, w: m.sum(z, axis=1)), ("mean", lambda m, z, w: m.mean(z, axis=0, keepdims=True)),
  ("prod", lambda m, z, w: m.prod(z, axis=1)), ("prod-all", lambda m, z, w: m.prod(z[:, :3])),
  ("var", lambda m, z, w: m.var(z, axis=1)), ("std", lambda m, z, w: m.std(z, ddof=1)),
  ("cumsum", lambda m, z, w: m.cumsum(z, axis=1)), ("matmul", lambda m, z, w: m.matmul(z, w.T)),
  ("dot", lambda m, z, w: m.dot(z[0], w[1])), ("vdot", lambda m, z, w: m.vdot(z, w)),
  ("einsum2", lambda m, z, w: m.einsum("ij,kj->ik", z, w)), ("einsum3", lambda m, z, w: m.einsum("ij,kj,k->i", z, w, z[:, 0])),
  ("inner", lambda m, z, w: m.inner(z, w)), ("outer", lambda m, z, w: m.outer(z[0], w[1])),
  ("tensordot", lambda m, z, w: m.tensordot(z, w, axes=([1], [1]))), ("kron", lambda m, z, w: m.kron(z[:2, :2], w[:2, :2])),
  ("matmul-real", lambda m, z, w: m.matmul(z, np.asarray(X).T)), ("reshape", lambda m, z, w: m.reshape(z, (4, 3))),
  ("transpose", lambda m, z, w: m.transpose(z)), ("concatenate", lambda m, z, w: m.concatenate([z, w, np.asarray(X)], axis=1)),
  ("stack", lambda m, z, w: m.stack([z, w])), ("split", lambda m, z, w: m.split(z, 2, axis=1)),
  ("where", lambda m, z, w: m.where(np.asarray(X) > 0, z, w)), ("where-scalar", lambda m, z, w: m.where(np.asarray(X) > 0, z, 0)),
  ("flip", lambda m, z, w: m.flip(z, 0)), ("roll", lambda m, z, w: m.roll(z, 1, axis=1)), ("tril", lambda m, z, w: m.tril(z)),
  ("diagonal", lambda m, z, w: m.diagonal(z)), ("trace", lambda m, z, w: m.trace(z)), ("take", lambda m, z, w: m.take(z, np.array([0, 2]), axis=1)),
  ("broadcast_to", lambda m, z, w: m.broadcast_to(z[0], (2, 4))), ("expand_dims", lambda m, z, w: m.expand_dims(z, 0)),
  ("moveaxis", lambda m, z, w: m.moveaxis(z[None], 0, 2)), ("tile", lambda m, z, w: m.tile(z, (1, 2))),
  ("getitem", lambda m, z, w: m.asarray(z)[1:, ::2]), ("getitem-int", lambda m, z, w: m.asarray(z)[np.array([2, 0])]),
  ("at-set", lambda m, z, w: m.asarray(z).at[0, 1].set(5j)), ("at-add", lambda m, z, w: m.asarray(z).at[:, 0].add(w[:, 1])),
  ("at-multiply", lambda m, z, w: m.asarray(z).at[1].multiply(1j)),
  ("method-sum", lambda m, z, w: m.asarray(z).sum(axis=0)), ("method-T", lambda m, z, w: m.asarray(z).T),
  ("method-reshape", lambda m, z, w: m.asarray(z).reshape(2, 6)),
]

@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_functions(name, fn):
  got, want = fn(jnp, Z, W), fn(jxn, Z, W)
  if isinstance(want, list):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True): close(g, w)
  else: close(got, want)

def test_unsupported_functions_raise():
  with pytest.raises(NotImplementedError, match="jnp.unique of complex values"): jnp.unique(Z)
  with pytest.raises(NotImplementedError, match=r"z.at\[...\].multiply of complex values with an array index"):
    jnp.asarray(Z).at[np.array([0, 0])].multiply(2j)
  same_error(lambda: jnp.argmax(Z), lambda: jxn.argmax(Z))
  same_error(lambda: jnp.clip(Z, 0, 1), lambda: jxn.clip(Z, 0, 1))
  same_error(lambda: jnp.floor(Z), lambda: jxn.floor(Z))

def test_lexicographic_order():
  v = np.array([1 + 2j, 1 - 1j, 0 + 5j, 1 - 1j, -2 + 0j])
  for got, want in ((jnp.max(v), jxn.max(v)), (jnp.min(Z, axis=1), jxn.min(Z, axis=1)),
                    (jnp.max(Z, axis=0, keepdims=True), jxn.max(Z, axis=0, keepdims=True)),
                    (jnp.sort(v), jxn.sort(v)), (jnp.argsort(v), jxn.argsort(v)), (jnp.sort(Z, axis=0), jxn.sort(Z, axis=0)),
                    (jnp.maximum(v, 1 + 0j), jxn.maximum(v, 1 + 0j)), (jnp.minimum(v, v[::-1]), jxn.minimum(v, v[::-1])),
                    (jnp.asarray(v) < 1 - 1j, jxn.asarray(v) < 1 - 1j), (jnp.asarray(v) >= v[::-1], jxn.asarray(v) >= v[::-1]),
                    (jnp.greater(v, 0), jxn.greater(v, 0)), (jnp.asarray(v).at[1].max(2j), jxn.asarray(v).at[1].max(2j))):
    close(got, want)

def test_trees_see_one_leaf():
  z = jnp.asarray(Z)
  assert len(tinyjax.tree_util.tree_leaves({"a": z, "b": X})) == 2
  close(tinyjax.tree_util.tree_map(jnp.abs, {"z": z})["z"], np.abs(Z))
  assert len(tinyjax.tree.leaves([z, z])) == 2

# ---- transforms -------------------------------------------------------------------------------------------------------------

def f_real(z, x):   # a real function of a complex and a real argument
  return jnp.sum(jnp.abs(jnp.sin(z) * x) ** 2 + jnp.real(z * jnp.conj(z) * x))

def f_real_jax(z, x): return jxn.sum(jxn.abs(jxn.sin(z) * x) ** 2 + jxn.real(z * jxn.conj(z) * x))

def test_grad_conjugate_convention():
  close(tinyjax.grad(f_real)(Z, X), jax.grad(f_real_jax)(Z, X))
  g = tinyjax.grad(f_real, argnums=(0, 1))(Z, X)
  w = jax.grad(f_real_jax, argnums=(0, 1))(Z, X)
  close(g[0], w[0])
  close(g[1], w[1])
  close(tinyjax.jacrev(lambda z: jnp.abs(z))(Z[0]), jax.jacrev(lambda z: jxn.abs(z))(Z[0]))

def test_holomorphic():
  def h(z): return jnp.sum(jnp.exp(z) * z ** 2 + 1j * jnp.sin(z))
  def hj(z): return jxn.sum(jxn.exp(z) * z ** 2 + 1j * jxn.sin(z))
  close(tinyjax.grad(h, holomorphic=True)(Z), jax.grad(hj, holomorphic=True)(Z))
  close(tinyjax.jacfwd(lambda z: jnp.sin(z) * z, holomorphic=True)(Z[0]), jax.jacfwd(lambda z: jxn.sin(z) * z, holomorphic=True)(Z[0]))
  close(tinyjax.jacrev(lambda z: jnp.sin(z) * z, holomorphic=True)(Z[0]), jax.jacrev(lambda z: jxn.sin(z) * z, holomorphic=True)(Z[0]))
  close(tinyjax.hessian(lambda z: jnp.sum(z ** 3), holomorphic=True)(Z[0]), jax.hessian(lambda z: jxn.sum(z ** 3), holomorphic=True)(Z[0]))

def test_errors_are_jaxs():
  same_error(lambda: tinyjax.grad(lambda z: z)(1j), lambda: jax.grad(lambda z: z)(1j))
  same_error(lambda: tinyjax.grad(lambda z: z * 2, holomorphic=True)(1.0), lambda: jax.grad(lambda z: z * 2, holomorphic=True)(1.0))
  same_error(lambda: tinyjax.grad(lambda z: jnp.abs(z), holomorphic=True)(1.0 + 1j),
             lambda: jax.grad(lambda z: jxn.abs(z), holomorphic=True)(1.0 + 1j))
  same_error(lambda: tinyjax.jacfwd(lambda z: z * 2)(Z[0]), lambda: jax.jacfwd(lambda z: z * 2)(Z[0]), upto="complex")
  same_error(lambda: tinyjax.jacrev(lambda z: z * 2)(Z[0]), lambda: jax.jacrev(lambda z: z * 2)(Z[0]), upto="complex")

def test_vjp_and_jvp():
  def f(z, x): return jnp.sin(z) * x + jnp.conj(z) ** 2
  def fj(z, x): return jxn.sin(z) * x + jxn.conj(z) ** 2
  out, pull = tinyjax.vjp(f, Z, X)
  wout, wpull = jax.vjp(fj, Z, X)
  close(out, wout)
  for g, w in zip(pull(W), wpull(W), strict=True): close(g, w)
  tz = crnd(3, 4, seed=5)
  p, t = tinyjax.jvp(f, (Z, X), (tz, X))
  wp, wt = jax.jvp(fj, (Z, X), (tz, X))
  close(p, wp)
  close(t, wt)
  p, t = tinyjax.jvp(lambda x: jnp.exp(1j * x), (X,), (X,))
  wp, wt = jax.jvp(lambda x: jxn.exp(1j * x), (X,), (X,))
  close(p, wp)
  close(t, wt)

def test_vmap_jit_scan():
  close(tinyjax.vmap(lambda z, w: jnp.vdot(z, w))(Z, W), jax.vmap(lambda z, w: jxn.vdot(z, w))(Z, W))
  close(tinyjax.vmap(lambda z: z * 1j, in_axes=1)(Z), jax.vmap(lambda z: z * 1j, in_axes=1)(Z))
  f = tinyjax.jit(lambda z, x: jnp.exp(z) * x)
  for _ in range(2): close(f(Z, X), jax.jit(lambda z, x: jxn.exp(z) * x)(Z, X))
  def step(c, x): return c * jnp.exp(1j * x), c.real
  def stepj(c, x): return c * jxn.exp(1j * x), c.real
  got, want = lax.scan(step, jnp.asarray(1 + 0j), X[0]), jax.lax.scan(stepj, 1 + 0j, X[0])
  close(got[0], want[0])
  close(got[1], want[1])
  gs = tinyjax.grad(lambda z: jnp.abs(lax.scan(step, z, X[0])[0]) ** 2)(1 + 1j)
  close(gs, jax.grad(lambda z: jxn.abs(jax.lax.scan(stepj, z, X[0])[0]) ** 2)(1 + 1j))
  close(tinyjax.grad(lambda x: jnp.sum(jnp.abs(tinyjax.vmap(lambda v: v * 1j + v ** 2)(x) ** 2)))(X),
        jax.grad(lambda x: jxn.sum(jxn.abs(jax.vmap(lambda v: v * 1j + v ** 2)(x) ** 2)))(X))

def test_x64_off_complex64():
  with x64_off():
    z = jnp.asarray(Z)
    assert np.dtype(z.dtype) == np.complex64 and np.dtype((jnp.ones(2) * 1j).dtype) == np.complex64
    close(tinyjax.grad(f_real)(Z.astype(np.complex64), X.astype(np.float32)),
          jax.grad(f_real_jax)(Z.astype(np.complex64), X.astype(np.float32)), rtol=2e-5, atol=1e-5)
    assert isinstance(tinyjax.jit(lambda z: z * 2)(z), ComplexArray)
    assert isinstance(Tensor.ones(2) * 1j, ComplexArray)

# ---- jnp.linalg.cholesky of a Hermitian matrix (numpy._complex.cholesky) ----------------------------------------------------

def test_cholesky_hermitian():
  b = crnd(2, 3, 3, seed=7)
  a = b @ np.conj(np.swapaxes(b, -1, -2)) + 3 * np.eye(3)   # a batch of Hermitian positive definite matrices
  close(jnp.linalg.cholesky(a), jxn.linalg.cholesky(a))
  close(jnp.linalg.cholesky(a[0], upper=True), jxn.linalg.cholesky(a[0], upper=True))
  def f(m): return jnp.sum(jnp.linalg.cholesky(m) ** 2)
  def fj(m): return jxn.sum(jxn.linalg.cholesky(m) ** 2)
  close(tinyjax.grad(f, holomorphic=True)(a[0]), jax.grad(fj, holomorphic=True)(a[0]))

def test_cholesky_hermitian_not_positive_definite_and_derivatives():
  """NaN in both parts of the lower triangle of a matrix that is not positive definite, zeros above, as JAX; forward
  mode, and reverse mode of a function that is not holomorphic, against JAX."""
  b = crnd(2, 3, 3, seed=11)
  a = b @ np.conj(np.swapaxes(b, -1, -2)) + 3 * np.eye(3)
  t = crnd(2, 3, 3, seed=12)
  got = np.asarray(jnp.linalg.cholesky(np.array([[-1.0, 2j], [-2j, 1.0]])))
  assert np.isnan(got[np.tril_indices(2)].real).all() and np.isnan(got[np.tril_indices(2)].imag).all()
  np.testing.assert_array_equal(got[0, 1], 0)
  close(tinyjax.jvp(jnp.linalg.cholesky, (a,), (t,)), jax.jvp(jxn.linalg.cholesky, (a,), (t,)))
  def g(np_): return lambda m: np_.sum(np_.abs(np_.linalg.cholesky(m) - np_.sin(np_.linalg.cholesky(m))))
  close(tinyjax.grad(g(jnp))(a), jax.grad(g(jxn))(a))

def test_more_functions_and_transforms():
  close(jnp.convolve(Z[0], W[0]), jxn.convolve(Z[0], W[0]))
  close(jnp.correlate(Z[0], W[0], mode="full"), jxn.correlate(Z[0], W[0], mode="full"))
  close(jnp.pad(Z, ((1, 0), (0, 2))), jxn.pad(Z, ((1, 0), (0, 2))))
  def body(z): return lax.cond(jnp.real(z[0]) > 0, lambda v: v * 1j, lambda v: v.conj(), z)
  close(tinyjax.vmap(body)(Z), jax.vmap(lambda z: jax.lax.cond(z[0].real > 0, lambda v: v * 1j, lambda v: v.conj(), z))(Z))
  close(lax.fori_loop(0, 3, lambda i, c: c * c + 1j, jnp.asarray(Z[0])), jax.lax.fori_loop(0, 3, lambda i, c: c * c + 1j, Z[0]))
  @tinyjax.custom_jvp
  def cube(z): return z * z * z
  cube.defjvp(lambda p, t: (cube(p[0]), 3 * p[0] * p[0] * t[0]))
  close(tinyjax.grad(lambda z: jnp.abs(jnp.sum(cube(z))) ** 2)(Z[0]), jax.grad(lambda z: jxn.abs(jxn.sum(z ** 3)) ** 2)(Z[0]))
  close(tinyjax.grad(lambda z: jnp.sum(jnp.abs(tinyjax.checkpoint(jnp.sin)(z))))(Z[0]), jax.grad(lambda z: jxn.sum(jxn.abs(jxn.sin(z))))(Z[0]))
  y, f_jvp = tinyjax.linearize(jnp.exp, Z[0])
  wy, wf = jax.linearize(jxn.exp, Z[0])
  close(y, wy)
  close(f_jvp(W[0]), wf(W[0]))

def test_block():
  eye, zero, y = np.eye(2), np.zeros((2, 2)), np.array([[0, -1j], [1j, 0]])
  for arg in ([[eye, zero], [zero, y]], [[eye, zero], [zero, 2 * eye]], [np.ones(2), Z[0]], [[1.0, 2j]], [[X[:2, :2], X[:2, :1]]], X):
    close(jnp.block(arg), jxn.block(arg))
  same_error(lambda: jnp.block((eye, zero)), lambda: jxn.block((eye, zero)), upto="does not allow tuples")
  same_error(lambda: jnp.block([[eye], zero]), lambda: jxn.block([[eye], zero]))

def test_random_normal_complex():
  """A complex normal draw: the parts from split(key), each scaled by 1/sqrt(2), as JAX's (as close as the real normal
  is to JAX's: a few float32 ulps; float64's erfinv differs more, tests/test_random.py)."""
  for dt, jdt, tol in ((jnp.complex64, jxn.complex64, 1e-6), (jnp.complex128, jxn.complex128, 2e-5)):
    got = np.asarray(tinyjax.random.normal(tinyjax.random.PRNGKey(3), (200,), dt))
    want = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (200,), jdt))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
  with x64_off():
    assert np.dtype(tinyjax.random.normal(tinyjax.random.PRNGKey(0), (2,), jnp.complex64).dtype) == np.complex64

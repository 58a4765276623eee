"""Collectives over named vmap axes (tinyjax.lax) under every transform, against JAX (x64, float64 Tensors).

Each case is a collective applied to one example's value `v` over the axis name(s) `n` of size `B`. The JAX oracle is
JAX's own collective wherever JAX computes it; where JAX's vmap cannot (pmax/pmin have no derivative rule in JAX,
all_to_all's transpose fails for split_axis != concat_axis, ppermute with a partial permutation, all_gather and
psum_scatter over a tuple of names) it is a differentiable JAX twin built from all_gather, psum and indexing by
axis_index, and `test_twin_is_the_jax_collective` checks the twin against JAX's collective where JAX has both.
"""
from typing import Callable, NamedTuple
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor
from tinygrad.helpers import Context

import tinyjax
from tinyjax import lax as tl
from conftest import rnd, assert_close, raises, same_error, kernel_count

jl = jax.lax

@pytest.fixture(autouse=True)
def _in_process():
  with Context(PARALLEL=0): yield


# ---- JAX twins: the same semantics from ops JAX differentiates and batches over tuples of names -------------------------

def _names(n): return n if isinstance(n, tuple) else (n,)

def j_gather(v, n):
  """all_gather over one name or a tuple of names (examples in row-major order), from single-name all_gathers."""
  for m in reversed(_names(n)): v = jl.all_gather(v, m)
  return v.reshape((-1,) + v.shape[len(_names(n)):])

def j_all_gather(v, n, axis=0, tiled=False):
  g = jnp.moveaxis(j_gather(v, n), 0, axis)
  return g.reshape(g.shape[:axis] + (-1,) + g.shape[axis + 2:]) if tiled else g

def j_psum_scatter(v, n, d=0, tiled=False):
  s, i = jl.psum(v, n), jl.axis_index(n)
  if not tiled: return jnp.take(s, i, axis=d)
  m = v.shape[d] // jl.psum(1, n)
  return jl.dynamic_slice_in_dim(s, i * m, m, axis=d)

def j_all_to_all(v, n, s, c, tiled=False):
  g, i = j_gather(v, n), jl.axis_index(n)
  if not tiled: return jnp.moveaxis(jnp.take(g, i, axis=1 + s), 0, c)
  m = v.shape[s] // jl.psum(1, n)
  g = jnp.moveaxis(jl.dynamic_slice_in_dim(g, i * m, m, axis=1 + s), 0, c)
  return g.reshape(g.shape[:c] + (-1,) + g.shape[c + 2:])

def j_ppermute(v, n, perm, B):   # a partial permutation: completed, then zeros where no example sends
  dsts = [d for _, d in perm]
  full = list(perm) + list(zip([k for k in range(B) if k not in {s for s, _ in perm}], [k for k in range(B) if k not in dsts], strict=True))
  return jnp.where(jnp.isin(jl.axis_index(n), jnp.array(dsts)), jl.ppermute(v, n, full), 0.0)


# ---- the cases ----------------------------------------------------------------------------------------------------------

class Case(NamedTuple):
  tj: Callable          # (v, n, B) -> tinyjax.lax collective
  jx: Callable          # (v, n, B) -> the JAX oracle
  shape: Callable       # B -> one example's shape
  native: Callable | None = None   # JAX's own collective when the oracle is a twin
  tuples: bool = True   # supported over a tuple of names

def shift(B): return [(k, (k + 1) % B) for k in range(B)]
def rev(B): return [(k, B - 1 - k) for k in range(B)]
def partial_perm(B): return [(1, 0), (0, B - 1)] if B > 2 else [(0, 1)]

CASES = {
  "psum": Case(lambda v, n, B: tl.psum(v, n), lambda v, n, B: jl.psum(v, n), lambda B: (2,)),
  "pmean": Case(lambda v, n, B: tl.pmean(v, n), lambda v, n, B: jl.pmean(v, n), lambda B: (2, 2)),
  "pmax": Case(lambda v, n, B: tl.pmax(v, n), lambda v, n, B: j_gather(v, n).max(0), lambda B: (2,), lambda v, n, B: jl.pmax(v, n)),
  "pmin": Case(lambda v, n, B: tl.pmin(v, n), lambda v, n, B: j_gather(v, n).min(0), lambda B: (2,), lambda v, n, B: jl.pmin(v, n)),
  "all_gather": Case(lambda v, n, B: tl.all_gather(v, n), lambda v, n, B: j_all_gather(v, n), lambda B: (2,),
                     lambda v, n, B: jl.all_gather(v, n)),
  "all_gather_axis1": Case(lambda v, n, B: tl.all_gather(v, n, axis=1), lambda v, n, B: j_all_gather(v, n, 1), lambda B: (2, 3),
                           lambda v, n, B: jl.all_gather(v, n, axis=1)),
  "all_gather_axis_neg1": Case(lambda v, n, B: tl.all_gather(v, n, axis=-1), lambda v, n, B: j_all_gather(v, n, 2), lambda B: (2, 3),
                               lambda v, n, B: jl.all_gather(v, n, axis=-1)),
  "all_gather_tiled": Case(lambda v, n, B: tl.all_gather(v, n, tiled=True), lambda v, n, B: j_all_gather(v, n, 0, True), lambda B: (2,),
                           lambda v, n, B: jl.all_gather(v, n, tiled=True)),
  "all_gather_tiled_axis1": Case(lambda v, n, B: tl.all_gather(v, n, axis=1, tiled=True), lambda v, n, B: j_all_gather(v, n, 1, True),
                                 lambda B: (2, 3), lambda v, n, B: jl.all_gather(v, n, axis=1, tiled=True)),
  "psum_scatter": Case(lambda v, n, B: tl.psum_scatter(v, n), lambda v, n, B: j_psum_scatter(v, n), lambda B: (B, 2),
                       lambda v, n, B: jl.psum_scatter(v, n)),
  "psum_scatter_dim1": Case(lambda v, n, B: tl.psum_scatter(v, n, scatter_dimension=1), lambda v, n, B: j_psum_scatter(v, n, 1),
                            lambda B: (2, B), lambda v, n, B: jl.psum_scatter(v, n, scatter_dimension=1)),
  "psum_scatter_tiled": Case(lambda v, n, B: tl.psum_scatter(v, n, tiled=True), lambda v, n, B: j_psum_scatter(v, n, 0, True),
                             lambda B: (2 * B,), lambda v, n, B: jl.psum_scatter(v, n, tiled=True)),
  "psum_scatter_tiled_dim1": Case(lambda v, n, B: tl.psum_scatter(v, n, scatter_dimension=1, tiled=True),
                                  lambda v, n, B: j_psum_scatter(v, n, 1, True), lambda B: (3, 2 * B),
                                  lambda v, n, B: jl.psum_scatter(v, n, scatter_dimension=1, tiled=True)),
  "ppermute_shift": Case(lambda v, n, B: tl.ppermute(v, n, shift(B)), lambda v, n, B: jl.ppermute(v, n, shift(B)), lambda B: (2,),
                         tuples=False),
  "ppermute_reverse": Case(lambda v, n, B: tl.ppermute(v, n, rev(B)), lambda v, n, B: jl.ppermute(v, n, rev(B)), lambda B: (2, 2),
                           tuples=False),
  "ppermute_partial": Case(lambda v, n, B: tl.ppermute(v, n, partial_perm(B)), lambda v, n, B: j_ppermute(v, n, partial_perm(B), B),
                           lambda B: (2,), tuples=False),
  "all_to_all_0_0": Case(lambda v, n, B: tl.all_to_all(v, n, 0, 0), lambda v, n, B: j_all_to_all(v, n, 0, 0), lambda B: (B, 2),
                         lambda v, n, B: jl.all_to_all(v, n, 0, 0)),
  "all_to_all_0_1": Case(lambda v, n, B: tl.all_to_all(v, n, 0, 1), lambda v, n, B: j_all_to_all(v, n, 0, 1), lambda B: (B, 2),
                         lambda v, n, B: jl.all_to_all(v, n, 0, 1)),
  "all_to_all_1_0": Case(lambda v, n, B: tl.all_to_all(v, n, 1, 0), lambda v, n, B: j_all_to_all(v, n, 1, 0), lambda B: (2, B),
                         lambda v, n, B: jl.all_to_all(v, n, 1, 0)),
  "all_to_all_0_2": Case(lambda v, n, B: tl.all_to_all(v, n, 0, 2), lambda v, n, B: j_all_to_all(v, n, 0, 2), lambda B: (B, 2, 3)),
  "all_to_all_tiled_0_1": Case(lambda v, n, B: tl.all_to_all(v, n, 0, 1, tiled=True), lambda v, n, B: j_all_to_all(v, n, 0, 1, True),
                               lambda B: (2 * B, 2), lambda v, n, B: jl.all_to_all(v, n, 0, 1, tiled=True)),
  "all_to_all_tiled_1_1": Case(lambda v, n, B: tl.all_to_all(v, n, 1, 1, tiled=True), lambda v, n, B: j_all_to_all(v, n, 1, 1, True),
                               lambda B: (2, 2 * B), lambda v, n, B: jl.all_to_all(v, n, 1, 1, tiled=True)),
  "axis_index": Case(lambda v, n, B: v * tl.axis_index(n), lambda v, n, B: v * jl.axis_index(n), lambda B: (2,)),
}

B = 3

def data(case: Case, seed=0, B=B):
  return rnd(B, *case.shape(B), seed=seed)

def out_shape(case: Case, X) -> tuple:
  return tuple(jax.eval_shape(jax.vmap(lambda v: case.jx(v, "i", B), axis_name="i"), X).shape)

def loss(y, v): return (y * y * y).sum() + y.sum() * v.sum()          # a scalar that is not linear in the collective
def nonlinear(y, v): return y * y + y * v.sum()

def per_example(case, lax_loss, n="i", size=B):
  """(tinyjax, JAX) per-example functions: `lax_loss`(collective(v), v)."""
  return (lambda v: lax_loss(case.tj(v, n, size), v)), (lambda v: lax_loss(case.jx(v, n, size), v))

def close(got, want): assert_close(got, want, dtype=False)


# ---- one axis: value and every derivative ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CASES))
def test_vmap_value(name):
  c = CASES[name]
  X = data(c)
  close(tinyjax.vmap(lambda v: c.tj(v, "i", B), axis_name="i")(Tensor(X)),
        lambda: jax.vmap(lambda v: c.jx(v, "i", B), axis_name="i")(X))

@pytest.mark.parametrize("name", [k for k, c in CASES.items() if c.native is not None])
def test_twin_is_the_jax_collective(name):
  c = CASES[name]
  X = data(c)
  close(jax.vmap(lambda v: c.jx(v, "i", B), axis_name="i")(X), jax.vmap(lambda v: c.native(v, "i", B), axis_name="i")(X))

@pytest.mark.parametrize("name", list(CASES))
def test_jvp_inside_vmap(name):
  c = CASES[name]
  X, T = data(c), data(c, seed=1)
  ft, fj = per_example(c, nonlinear)
  close(tinyjax.vmap(lambda x, t: tinyjax.jvp(ft, (x,), (t,)), axis_name="i")(Tensor(X), Tensor(T)),
        lambda: jax.vmap(lambda x, t: jax.jvp(fj, (x,), (t,)), axis_name="i")(X, T))

@pytest.mark.parametrize("name", list(CASES))
def test_jvp_of_vmap(name):
  c = CASES[name]
  X, T = data(c), data(c, seed=1)
  ft, fj = per_example(c, nonlinear)
  close(tinyjax.jvp(tinyjax.vmap(ft, axis_name="i"), (Tensor(X),), (Tensor(T),)),
        lambda: jax.jvp(jax.vmap(fj, axis_name="i"), (X,), (T,)))

@pytest.mark.parametrize("name", list(CASES))
def test_grad_inside_vmap(name):
  c = CASES[name]
  X = data(c)
  ft, fj = per_example(c, loss)
  close(tinyjax.vmap(tinyjax.value_and_grad(ft), axis_name="i")(Tensor(X)), lambda: jax.vmap(jax.value_and_grad(fj), axis_name="i")(X))

@pytest.mark.parametrize("name", list(CASES))
def test_grad_of_vmap(name):
  c = CASES[name]
  X = data(c)
  ft, fj = per_example(c, loss)
  close(tinyjax.grad(lambda x: tinyjax.vmap(ft, axis_name="i")(x).sum())(Tensor(X)),
        lambda: jax.grad(lambda x: jax.vmap(fj, axis_name="i")(x).sum())(X))

@pytest.mark.parametrize("name", list(CASES))
def test_vjp_inside_vmap(name):
  c = CASES[name]
  X = data(c)
  ft, fj = per_example(c, nonlinear)
  C = rnd(*out_shape(c, X), seed=2)
  close(tinyjax.vmap(lambda x, ct: tinyjax.vjp(ft, x)[1](ct), axis_name="i")(Tensor(X), Tensor(C)),
        lambda: jax.vmap(lambda x, ct: jax.vjp(fj, x)[1](ct), axis_name="i")(X, C))

# jacfwd and jacrev in turn over the cases (each case's jvp and vjp inside vmap are tested above)
@pytest.mark.parametrize("name,jac", [(name, ("jacfwd", "jacrev")[i % 2]) for i, name in enumerate(CASES)])
def test_jacobian_inside_vmap(name, jac):
  c = CASES[name]
  X = data(c)
  ft, fj = per_example(c, nonlinear)
  close(tinyjax.vmap(getattr(tinyjax, jac)(ft), axis_name="i")(Tensor(X)), lambda: jax.vmap(getattr(jax, jac)(fj), axis_name="i")(X))

@pytest.mark.parametrize("name", list(CASES))
def test_jit_of_vmap_of_grad(name):
  c = CASES[name]
  ft, fj = per_example(c, loss)
  f = tinyjax.jit(tinyjax.vmap(tinyjax.grad(ft), axis_name="i"))
  for seed in (0, 1):   # the second call replays the captured kernels
    X = data(c, seed=seed)
    close(f(Tensor(X)), lambda: jax.vmap(jax.grad(fj), axis_name="i")(X))

@pytest.mark.parametrize("name", ["psum", "pmax", "all_gather", "psum_scatter", "ppermute_partial", "all_to_all_0_1"])
def test_grad_for_an_unmapped_argument_inside_vmap(name):
  # the collective's source depends only on the unmapped (in_axes=None) argument: the gradient still has markers to lower
  c = CASES[name]
  W, X = rnd(*c.shape(B), seed=1), rnd(B, seed=2)
  def f(coll, grad): return lambda x, w: grad(lambda w: (coll(w, "i", B) * coll(w, "i", B)).sum() * x + (w * w).sum())(w)
  close(tinyjax.vmap(f(c.tj, tinyjax.grad), in_axes=(0, None), axis_name="i")(Tensor(X), Tensor(W)),
        lambda: jax.vmap(f(c.jx, jax.grad), in_axes=(0, None), axis_name="i")(X, W))

@pytest.mark.parametrize("name", ["psum", "pmax", "all_gather_tiled", "psum_scatter", "ppermute_shift", "all_to_all_0_1"])
def test_hessian_inside_vmap(name):
  c = CASES[name]
  X = data(c)
  ft, fj = per_example(c, loss)
  close(tinyjax.vmap(tinyjax.hessian(ft), axis_name="i")(Tensor(X)), lambda: jax.vmap(jax.hessian(fj), axis_name="i")(X))


# ---- two named axes ----------------------------------------------------------------------------------------------------

BI, BJ = 2, 3
NAMES = {"outer": ("i", BI), "inner": ("j", BJ), "both": (("i", "j"), BI * BJ), "both_reversed": (("j", "i"), BI * BJ)}

def _nested(vmap, f, X):
  return vmap(vmap(f, axis_name="j"), axis_name="i")(X)

# every case over the inner axis and over both names (or the outer one: ppermute-like cases are not defined over a
# tuple of names, their errors are tested below); all four for one case of each collective
EVERY_NAMING = {"psum", "pmax", "all_gather_axis1", "psum_scatter_tiled_dim1", "ppermute_partial", "all_to_all_0_2", "axis_index"}

def _namings(name):
  if name in EVERY_NAMING: return [n for n in NAMES if CASES[name].tuples or not isinstance(NAMES[n][0], tuple)]
  return ["inner", "both"] if CASES[name].tuples else ["outer", "inner"]

@pytest.mark.parametrize("name,names", [(name, names) for name in CASES for names in _namings(name)])
def test_nested_vmaps_value_and_grad(name, names):
  c, (n, size) = CASES[name], NAMES[names]
  X = rnd(BI, BJ, *c.shape(size), seed=3)
  ft, fj = per_example(c, loss, n, size)
  close(_nested(tinyjax.vmap, tinyjax.value_and_grad(ft), Tensor(X)), lambda: _nested(jax.vmap, jax.value_and_grad(fj), X))

@pytest.mark.parametrize("name", ["pmax", "all_gather", "psum_scatter", "ppermute_shift", "all_to_all_0_1", "all_to_all_tiled_0_1"])
def test_nested_vmaps_two_collectives_jvp_and_jit(name):
  c = CASES[name]
  def f(lax_c, psum, v):   # the case over the inner axis, then a psum over the outer one
    y = lax_c(v, "j", BJ)
    return psum(y * y, "i") * v.sum()
  ft, fj = (lambda v: f(c.tj, tl.psum, v)), (lambda v: f(c.jx, jl.psum, v))
  X, T = rnd(BI, BJ, *c.shape(BJ), seed=4), rnd(BI, BJ, *c.shape(BJ), seed=5)
  close(tinyjax.jvp(lambda x: _nested(tinyjax.vmap, ft, x), (Tensor(X),), (Tensor(T),)),
        lambda: jax.jvp(lambda x: _nested(jax.vmap, fj, x), (X,), (T,)))
  g = tinyjax.jit(lambda x: _nested(tinyjax.vmap, tinyjax.grad(lambda v: ft(v).sum()), x))
  close(g(Tensor(X)), lambda: _nested(jax.vmap, jax.grad(lambda v: fj(v).sum()), X))


# ---- semantics worth a test of their own -------------------------------------------------------------------------------

def test_grad_of_psum_is_per_example_psum_of_cotangents():
  # JAX: vmap(grad(lambda x: psum(x, 'i') * x)) = 2 * sum(x) for every example (psum transposes to psum)
  x = np.array([1.0, 2.0, 3.0])
  got = tinyjax.vmap(tinyjax.grad(lambda v: tl.psum(v, "i") * v), axis_name="i")(Tensor(x))
  want = jax.vmap(jax.grad(lambda v: jl.psum(v, "i") * v), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(want), [12.0, 12.0, 12.0])
  close(got, want)

@pytest.mark.parametrize("kind", ["pmax", "pmin"])
def test_pmax_pmin_derivatives_share_ties_equally(kind):
  # JAX has no derivative rule for pmax/pmin; tinyjax uses jnp.max's convention (ties share equally)
  x, t = np.array([3.0, 1.0, 3.0, 1.0]), np.array([1.0, 10.0, 100.0, 1000.0])
  with pytest.raises(NotImplementedError, match=f"Differentiation rule for '{kind}' not implemented"):
    jax.vmap(jax.grad(lambda v: getattr(jl, kind)(v, "i")), axis_name="i")(x)
  red = jnp.max if kind == "pmax" else jnp.min
  x = x if kind == "pmax" else -x
  def ft(v): return getattr(tl, kind)(v, "i") * v
  def fj(v): return red(jl.all_gather(v, "i")) * v
  close(tinyjax.vmap(tinyjax.grad(ft), axis_name="i")(Tensor(x)), jax.vmap(jax.grad(fj), axis_name="i")(x))
  close(tinyjax.vmap(lambda a, b: tinyjax.jvp(ft, (a,), (b,))[1], axis_name="i")(Tensor(x), Tensor(t)),
        jax.vmap(lambda a, b: jax.jvp(fj, (a,), (b,))[1], axis_name="i")(x, t))
  close(tinyjax.grad(lambda a: tinyjax.vmap(ft, axis_name="i")(a).sum())(Tensor(x)), jax.grad(lambda a: jax.vmap(fj, axis_name="i")(a).sum())(x))

@pytest.mark.parametrize("name", ["all_gather", "ppermute_shift", "ppermute_partial", "all_to_all_0_1", "psum_scatter"])
def test_integer_values(name):
  c = CASES[name]
  X = np.arange(B * int(np.prod(c.shape(B))), dtype=np.int32).reshape(B, *c.shape(B))
  got = tinyjax.vmap(lambda v: c.tj(v, "i", B), axis_name="i")(Tensor(X))
  want = jax.vmap(lambda v: c.jx(v, "i", B), axis_name="i")(X)
  assert got.numpy().dtype == np.int32
  np.testing.assert_array_equal(got.numpy(), np.asarray(want))

def test_psum_of_booleans_counts_them_as_int32():
  X = np.array([[True, False], [True, True], [False, False]])
  got = tinyjax.vmap(lambda v: tl.psum(v, "i"), axis_name="i")(Tensor(X))
  want = jax.vmap(lambda v: jl.psum(v, "i"), axis_name="i")(X)
  assert got.numpy().dtype == np.asarray(want).dtype == np.int32
  np.testing.assert_array_equal(got.numpy(), np.asarray(want))

@pytest.mark.parametrize("name", ["all_gather", "all_gather_tiled", "psum_scatter", "ppermute_shift", "ppermute_partial", "all_to_all_0_1"])
def test_collective_of_a_closed_over_constant(name):
  c = CASES[name]
  W = rnd(*c.shape(B), seed=6)
  X = rnd(B, 2, seed=7)
  close(tinyjax.vmap(lambda x: (c.tj(Tensor(W), "i", B), x.sum()), axis_name="i")(Tensor(X)),
        lambda: jax.vmap(lambda x: (c.jx(jnp.asarray(W), "i", B), x.sum()), axis_name="i")(X))

def test_all_gather_of_a_constant_is_unbatched():
  W = rnd(2, seed=6)
  out = tinyjax.vmap(lambda x: tl.all_gather(Tensor(W), "i"), axis_name="i", out_axes=None)(Tensor(rnd(B, 2)))
  close(out, jax.vmap(lambda x: jl.all_gather(jnp.asarray(W), "i"), axis_name="i", out_axes=None)(rnd(B, 2)))

def test_collectives_on_pytrees_and_with_in_axes_out_axes():
  X, Y = rnd(B, 2), rnd(2, B, seed=1)
  def f(lax, x, y): return lax.all_gather({"a": x, "b": [y]}, "i", axis=1), lax.ppermute((x, y), "i", shift(B))
  close(tinyjax.vmap(lambda x, y: f(tl, x, y), in_axes=(0, 1), out_axes=1, axis_name="i")(Tensor(X), Tensor(Y)),
        lambda: jax.vmap(lambda x, y: f(jl, x, y), in_axes=(0, 1), out_axes=1, axis_name="i")(X, Y))

def test_all_to_all_tuple_of_names_matches_jax():
  X = rnd(BI, BJ, BI * BJ, 2, seed=8)
  for f in (lambda lax, v: lax.all_to_all(v, ("i", "j"), 0, 0), lambda lax, v: lax.all_to_all(v, ("j", "i"), 0, 1, tiled=True) * v.sum()):
    close(_nested(tinyjax.vmap, lambda v: f(tl, v), Tensor(X)), lambda: _nested(jax.vmap, lambda v: f(jl, v), X))

@pytest.mark.parametrize("name", ["ppermute_shift", "ppermute_partial", "all_gather", "psum_scatter", "all_to_all_0_1"])
def test_one_kernel(name):
  # the exchanges of blocks between examples are movement ops: with an elementwise op after them, one kernel
  c, X = CASES[name], Tensor(data(CASES[name], B=8)).realize()
  assert kernel_count(lambda: (tinyjax.vmap(lambda v: c.tj(v, "i", 8), axis_name="i")(X) * 2).realize()) == 1


# ---- errors ------------------------------------------------------------------------------------------------------------

UNBOUND = {
  "all_gather": lambda lax, v: lax.all_gather(v, "k"),
  "psum_scatter": lambda lax, v: lax.psum_scatter(v, "k"),
  "all_to_all": lambda lax, v: lax.all_to_all(v, "k", 0, 0),
  "ppermute": lambda lax, v: lax.ppermute(v, "k", [(0, 1)]),
  "pmax_in_a_tuple": lambda lax, v: lax.pmax(v, ("i", "k")),
}

@pytest.mark.parametrize("name", list(UNBOUND))
def test_unbound_axis_name_is_a_name_error(name):
  X = rnd(3, 3)
  if name != "ppermute":   # JAX: "NotImplementedError: Evaluation rule for 'ppermute' not implemented"
    assert "unbound axis name: k" in str(raises(lambda: jax.vmap(lambda v: UNBOUND[name](jl, v), axis_name="i")(X)))
  with pytest.raises(NameError, match="unbound axis name: k"):
    tinyjax.vmap(lambda v: UNBOUND[name](tl, v), axis_name="i")(Tensor(X))
  with pytest.raises(NameError, match="unbound axis name: [ik]"):
    UNBOUND[name](tl, Tensor(X))   # outside any vmap
  with pytest.raises(NameError, match="unbound axis name: k"):
    tinyjax.vmap(tinyjax.grad(lambda v: UNBOUND[name](tl, v).sum()), axis_name="i")(Tensor(X))

@pytest.mark.parametrize("perm, msg", [
  ([(0, 1), (1, 1), (2, 0)], "ppermute sources and destinations must be unique, got ((0, 1), (1, 1), (2, 0))."),
  ([(0, 1), (0, 2)], "ppermute sources and destinations must be unique, got ((0, 1), (0, 2))."),
  ([(0, 1), (1, 3)], "ppermute perm must be (source, destination) pairs of indices into an axis of size 3, got ((0, 1), (1, 3))."),
  ([(0, 1, 2)], "ppermute perm must be (source, destination) pairs of indices into an axis of size 3, got ((0, 1, 2),)."),
])
def test_bad_ppermute_perm(perm, msg):
  with pytest.raises(ValueError) as e:
    tinyjax.vmap(lambda v: tl.ppermute(v, "i", perm), axis_name="i")(Tensor(rnd(3, 2)))
  assert str(e.value) == msg

def test_ppermute_negative_indices_count_from_the_end():
  X = rnd(3, 2)
  close(tinyjax.vmap(lambda v: tl.ppermute(v, "i", [(0, 1), (1, -1), (-1, 0)]), axis_name="i")(Tensor(X)),
        jax.vmap(lambda v: jl.ppermute(v, "i", [(0, 1), (1, -1), (-1, 0)]), axis_name="i")(X))

def test_ppermute_over_a_tuple_of_names_is_not_supported():
  # jax.vmap cannot either (AssertionError: Permutation doesn't match the axis size!)
  with pytest.raises(NotImplementedError, match="ppermute over a tuple of axis names"):
    _nested(tinyjax.vmap, lambda v: tl.ppermute(v, ("i", "j"), shift(BI * BJ)), Tensor(rnd(BI, BJ, 2)))

SAME_ERRORS = {   # tinyjax raises what jax.vmap raises, with JAX's message
  "all_gather_axis": (lambda lax, v: lax.all_gather(v, "i", axis=2), (3, 2)),
  "all_gather_tiled_scalar": (lambda lax, v: lax.all_gather(v[0], "i", tiled=True), (3, 2)),
  "all_gather_tiled_axis": (lambda lax, v: lax.all_gather(v, "i", axis=1, tiled=True), (3, 2)),
  "all_to_all_size": (lambda lax, v: lax.all_to_all(v, "i", 0, 1), (3, 2, 3)),
  "all_to_all_tiled_size": (lambda lax, v: lax.all_to_all(v, "i", 0, 1, tiled=True), (3, 2, 2)),
}

@pytest.mark.parametrize("name", list(SAME_ERRORS))
def test_bad_axes_raise_jax_errors(name):
  f, shape = SAME_ERRORS[name]
  X = rnd(*shape)
  e = same_error(lambda: tinyjax.vmap(lambda v: f(tl, v), axis_name="i")(Tensor(X)), lambda: jax.vmap(lambda v: f(jl, v), axis_name="i")(X))
  assert isinstance(e, ValueError)

@pytest.mark.parametrize("f, msg", [
  # JAX's shape checks (jax.vmap skips them: untiled it silently sums the wrong blocks, tiled it fails an assertion)
  (lambda v: tl.psum_scatter(v, "i"), "reduce_scatter operand scatter dimension size 2 must match shard count 3"),
  (lambda v: tl.psum_scatter(v, "i", tiled=True), "tiled reduce_scatter operand scatter dimension size 2 must be divisible by shard_count 3"),
  (lambda v: tl.psum_scatter(v, "i", scatter_dimension=1), "axis 1 is out of bounds for array of dimension 1"),
  (lambda v: tl.all_to_all(v, "i", 1, 0), "axis 1 is out of bounds for array of dimension 1"),   # JAX: IndexError
  (lambda v: tl.all_to_all(v, "i", 0, 5), "axis 5 is out of bounds for array of dimension 1"),   # JAX: "axis 6 ..."
])
def test_bad_scatter_and_split_axes(f, msg):
  with pytest.raises(ValueError) as e:
    tinyjax.vmap(f, axis_name="i")(Tensor(rnd(3, 2)))
  assert str(e.value) == msg

def test_axis_index_groups_are_not_supported():
  with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
    tinyjax.vmap(lambda v: tl.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]), axis_name="i")(Tensor(rnd(4)))
  with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
    tinyjax.vmap(lambda v: tl.all_gather(v, "i", axis_index_groups=[[0, 1], [2, 3]]), axis_name="i")(Tensor(rnd(4)))

"""Typed PRNG keys (jax.random.key) against JAX's: a key array of dtype key<fry> and shape () per key over the data
PRNGKey gives; split/fold_in keep the kind of key they are given; every sampler takes typed keys and draws JAX's
numbers; key_data/wrap_key_data, indexing, vmap over keys and jit with keys in and out; JAX's errors."""
import numpy as np
import pytest
import jax
import jax.numpy as jjnp
import jax.random as jr
import tinyjax
import tinyjax.numpy as tjnp
import tinyjax.random as tr
from conftest import to_np, same_error
from jnp_table import x64_off

@pytest.fixture(autouse=True)
def _x64_off():
  with x64_off(): yield

def same_keys(got, want):
  """Typed keys with JAX's shape, dtype name and data, bit for bit."""
  assert isinstance(got, tr.PRNGKeyArray), type(got)
  assert got.shape == want.shape and str(got.dtype) == str(want.dtype) and got.ndim == want.ndim and got.size == want.size
  np.testing.assert_array_equal(to_np(tr.key_data(got)), np.asarray(jr.key_data(want)))

def test_typed_keys_are_jax_keys():
  for s in (0, 42, -1, np.int32(7)): same_keys(tr.key(s), jr.key(s))
  k, j = tr.key(42), jr.key(42)
  for num in (3, (2, 3)): same_keys(tr.split(k, num), jr.split(j, num))
  same_keys(tr.split(k), jr.split(j))
  same_keys(tr.fold_in(k, 7), jr.fold_in(j, 7))
  same_keys(tr.split(tr.fold_in(tr.split(k)[1], 3), 4), jr.split(jr.fold_in(jr.split(j)[1], 3), 4))
  raw = tr.PRNGKey(42)   # PRNGKey stays raw, and so do its descendants
  assert not isinstance(raw, tr.PRNGKeyArray) and raw.shape == (2,) and not isinstance(tr.split(raw), tr.PRNGKeyArray)
  np.testing.assert_array_equal(to_np(tr.key_data(raw)), np.asarray(jr.key_data(jr.PRNGKey(42))))   # raw data is its own

def test_key_dtype():
  k, j = tr.key(0), jr.key(0)
  for cat in ("prng_key", "extended"):
    assert tjnp.issubdtype(k.dtype, getattr(tinyjax.dtypes, cat)) == jjnp.issubdtype(j.dtype, getattr(jax.dtypes, cat)) is True
    assert tjnp.issubdtype(tjnp.float32, getattr(tinyjax.dtypes, cat)) == jjnp.issubdtype(jjnp.float32, getattr(jax.dtypes, cat)) is False
  assert tjnp.issubdtype(k.dtype, tjnp.floating) == jjnp.issubdtype(j.dtype, jjnp.floating) is False
  assert tjnp.issubdtype(k.dtype, tr.key_dtype()) and k.dtype == tr.key_dtype() and str(tr.key_dtype()) == str(jr.key_dtype())
  assert tjnp.issubdtype(tinyjax.dtypes.prng_key, tinyjax.dtypes.extended)
  assert str(tr.key_impl(k)) == str(jr.key_impl(j)) and tr.clone(k) is k

SAMPLERS = [("uniform", lambda r, k: r.uniform(k, (5,))), ("normal", lambda r, k: r.normal(k, (5,))),
            ("bits", lambda r, k: r.bits(k, (4,))), ("randint", lambda r, k: r.randint(k, (6,), 0, 10)),
            ("bernoulli", lambda r, k: r.bernoulli(k, 0.3, (6,))), ("permutation", lambda r, k: r.permutation(k, 7)),
            ("choice", lambda r, k: r.choice(k, 9, (3,), replace=False)), ("gumbel", lambda r, k: r.gumbel(k, (4,)))]

@pytest.mark.parametrize("draw", [s[1] for s in SAMPLERS], ids=[s[0] for s in SAMPLERS])
def test_samplers_take_typed_keys(draw):
  got, want = to_np(draw(tr, tr.key(3))), np.asarray(draw(jr, jr.key(3)))
  assert got.dtype == want.dtype
  np.testing.assert_allclose(got, want, rtol=3e-7)   # the uniform-based draws: within the ulps documented in porting.md
  np.testing.assert_array_equal(got, to_np(draw(tr, tr.PRNGKey(3))))   # the same stream as the raw key's

def test_key_array_methods():
  ks, js = tr.split(tr.key(1), 6), jr.split(jr.key(1), 6)
  same_keys(ks[2], js[2])
  same_keys(ks[1:4], js[1:4])
  same_keys(ks[..., 0], js[..., 0])
  same_keys(ks.reshape(2, 3)[1, ::2], js.reshape(2, 3)[1, ::2])
  same_keys(ks.reshape((3, 2)), js.reshape((3, 2)))
  assert len(ks) == len(js) == 6 and [k.shape for k in ks] == [k.shape for k in js]
  np.testing.assert_array_equal(to_np(ks == ks[0]), np.asarray(js == js[0]))
  np.testing.assert_array_equal(to_np(ks != ks[0]), np.asarray(js != js[0]))
  same_keys(tr.wrap_key_data(tr.key_data(ks)), jr.wrap_key_data(jr.key_data(js)))
  same_keys(tr.wrap_key_data(np.array([[0, 1], [2, 3]], np.uint32)), jr.wrap_key_data(np.array([[0, 1], [2, 3]], np.uint32)))

def test_typed_keys_under_vmap_and_jit():
  ks, js = tr.split(tr.key(5), 3), jr.split(jr.key(5), 3)
  np.testing.assert_array_equal(to_np(tinyjax.vmap(lambda k: tr.uniform(k, (2,)))(ks)), np.asarray(jax.vmap(lambda k: jr.uniform(k, (2,)))(js)))
  same_keys(tinyjax.vmap(tr.split)(ks), jax.vmap(jr.split)(js))
  same_keys(tinyjax.vmap(lambda k, d: tr.fold_in(k, d))(ks, tjnp.arange(3)), jax.vmap(lambda k, d: jr.fold_in(k, d))(js, jjnp.arange(3)))
  f = tinyjax.jit(lambda k: (tr.split(k, 2), tr.bits(k, (3,))))
  g = jax.jit(lambda k: (jr.split(k, 2), jr.bits(k, (3,))))
  for s in (0, 1):   # a second key replays the same trace
    (tk, tb), (jk, jb) = f(tr.key(s)), g(jr.key(s))
    same_keys(tk, jk)
    np.testing.assert_array_equal(to_np(tb), np.asarray(jb))
  # a training-loop state holding a key next to parameters: jit carries it as its data
  step = tinyjax.jit(lambda st: {"w": st["w"] + tr.normal(tr.split(st["k"])[1], (2,)), "k": tr.split(st["k"])[0]})
  jstep = jax.jit(lambda st: {"w": st["w"] + jr.normal(jr.split(st["k"])[1], (2,)), "k": jr.split(st["k"])[0]})
  st, jst = {"w": tjnp.zeros(2), "k": tr.key(0)}, {"w": jjnp.zeros(2), "k": jr.key(0)}
  for _ in range(2): st, jst = step(st), jstep(jst)
  same_keys(st["k"], jst["k"])
  np.testing.assert_allclose(to_np(st["w"]), np.asarray(jst["w"]), rtol=1e-6)

def test_typed_key_errors():
  ks, js = tr.split(tr.key(0), 3), jr.split(jr.key(0), 3)
  same_error(lambda: tr.split(ks), lambda: jr.split(js))
  same_error(lambda: tr.normal(ks), lambda: jr.normal(js))
  same_error(lambda: tr.wrap_key_data(np.zeros(3, np.uint32)), lambda: jr.wrap_key_data(np.zeros(3, np.uint32)), upto="got shape=(3,)")
  same_error(lambda: tr.wrap_key_data(np.zeros(2, np.int32)), lambda: jr.wrap_key_data(np.zeros(2, np.int32)))
  with pytest.raises(TypeError): tr.key(0) + 1   # noqa: B018 (keys are no numbers, as in JAX)
  with pytest.raises(TypeError): len(tr.key(0))

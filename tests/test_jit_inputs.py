"""tinyjax.jit takes every kind of array argument (issue 9): 0-d, constant, lazy and realized, views, the same buffer
twice, several dtypes, sharded and replicated Tensors, numpy arrays, and Python scalars (traced and weakly typed, as in
JAX). Each case: the numbers of the function run eagerly, over several calls with new values; one trace for one
signature (counted: tinyjax's abstract trace, TinyJit's plain run and its capture); results of earlier calls keep
their values after later calls. Functions returned by vjp and linearize can be returned by a jitted function."""
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor, dtypes
import tinyjax
from tinyjax import tree_util as tu
from conftest import to_np, assert_close

DEVS = ("CPU:0", "CPU:1")
TRACES = 1   # the function's Python runs for one signature: one trace, as in JAX (the capture substitutes into it)


class Counted:
  """f, counting its Python runs."""
  def __init__(self, f): self.f, self.n = f, 0
  def __call__(self, *args):
    self.n += 1
    return self.f(*args)

def jaxlike(t):
  """An eager result with JAX's dtype: a weakly typed value (tinygrad's Tensor(1.5) * 2) is stored as JAX stores a
  Python scalar, in 64 bits with x64 (on in the tests); tinygrad would give it its default float32/int32."""
  if not isinstance(t, Tensor) or t.dtype not in dtypes.weaks: return t
  return t.cast(dtypes.float64 if dtypes.is_float(t.dtype) else dtypes.int64)

def same(got, want):
  """Tensor results == eager ones: same tree, shapes, dtypes, values."""
  g, w = to_np(got), to_np(tu.tree_map(jaxlike, want))
  assert tu.tree_structure(g) == tu.tree_structure(w)
  for a, b in zip(tu.tree_leaves(g), tu.tree_leaves(w), strict=True):
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)

def check(f, make_args, calls=5, eager=None):
  """jit(f)(*make_args(i)) == f(*make_args(i)) (or eager(i)) for calls with new values, traced once, never aliased."""
  counted = Counted(f)
  jf = tinyjax.jit(counted)
  kept = []
  for i in range(calls):
    got = jf(*make_args(i))
    want = f(*make_args(i)) if eager is None else eager(i)
    same(got, want)
    kept.append((got, to_np(tu.tree_map(jaxlike, want))))
  assert counted.n == TRACES and len(jf._cache) == 1, (counted.n, len(jf._cache))
  for got, want in kept: same(got, want)   # later calls did not overwrite earlier results
  return jf

def arr(i, shape=(3,), dtype=np.float32): return (np.arange(int(np.prod(shape))).reshape(shape) + i).astype(dtype)
def real(i, shape=(3,), dtype=np.float32): return Tensor(arr(i, shape, dtype)).realize()


# ---- Tensors of every kind ------------------------------------------------------------------------------------------

CASES = {
  # the issue's examples
  "0-d const Tensor(1.5)": (lambda a: a.sum(), lambda i: (Tensor(1.5 + i),)),
  "arange realized": (lambda a: a * 2, lambda i: (Tensor.arange(i, i + 3).realize(),)),
  # 0-d and constants
  "0-d from numpy": (lambda a, x: x * a + 1, lambda i: (Tensor(np.array(0.5 + i, np.float32)), real(i))),
  "0-d realized buffer": (lambda a, x: x * a, lambda i: (real(i, (1,)).reshape(()), real(i))),
  "weak int Tensor(3)": (lambda k, x: x * k, lambda i: (Tensor(3 + i), real(i))),
  "bool Tensor(True)": (lambda c, x: c.where(x, -x), lambda i: (Tensor(i % 2 == 0), real(i))),
  "expanded constant": (lambda a: a.cumsum(), lambda i: (Tensor(1.5 + i).reshape(1).expand(4),)),
  "Tensor.ones (no buffer)": (lambda a, x: a * x, lambda i: (Tensor.ones(3) * (i + 1), real(i))),
  "Tensor.full": (lambda a: a.sum(), lambda i: (Tensor.full((2, 3), float(i)),)),
  # lazy
  "arange lazy": (lambda a: a * 2, lambda i: (Tensor.arange(i, i + 3),)),
  "lazy graph": (lambda a: a.exp(), lambda i: (real(i) * 0.5 + 1,)),
  "pending assign": (lambda a: a + 1, lambda i: (real(0).assign(real(i) * 3),)),
  "unallocated Tensor.empty": (lambda a: (a != a) | (a == a), lambda i: (Tensor.empty(3),)),   # any data: all True
  # views
  "row of a matrix": (lambda r: r * 2, lambda i: (real(0, (2, 3))[i % 2],)),
  "transpose": (lambda m: m @ Tensor.eye(2), lambda i: (real(i, (2, 3)).T,)),
  "slice": (lambda r: r.sum(), lambda i: (real(i, (4, 4))[1:3, ::2],)),
  "contiguous slice": (lambda r: r + 1, lambda i: (real(0, (3, 3))[i % 3].contiguous(),)),
  "expand of a buffer": (lambda m: m.sum(0), lambda i: (real(i).reshape(1, 3).expand(4, 3),)),
  "reshape of a buffer": (lambda m: m.max(1), lambda i: (real(i, (6,)).reshape(2, 3),)),
  # the same buffer more than once
  "same Tensor twice": (lambda a, b: a * b + a, lambda i: (x := real(i), x)),
  "buffer and its reshape": (lambda a, b: a.sum() + b.sum(0), lambda i: (x := real(i, (6,)), x.reshape(2, 3))),
  "buffer and its slice": (lambda a, b: a[:2] * b, lambda i: (x := real(i, (4,)), x[2:])),
  "pytree with repeats": (lambda d: d["a"] * d["b"][0] - d["b"][1], lambda i: ({"a": (x := real(i)), "b": (x, real(i + 1))},)),
  # dtypes
  "float64": (lambda a: a.sin() * a, lambda i: (real(i, (3,), np.float64),)),
  "float16": (lambda a: a * 2, lambda i: (real(i, (3,), np.float16),)),
  "int32": (lambda a: a * 3 - 1, lambda i: (real(i, (3,), np.int32),)),
  "int64 and uint8": (lambda a, b: a + b.cast(dtypes.int64), lambda i: (real(i, (3,), np.int64), real(i, (3,), np.uint8))),
  "bool": (lambda a, x: a.where(x, 0.0), lambda i: (Tensor(arr(i) % 2 == 0).realize(), real(i))),
}

@pytest.mark.parametrize("name", list(CASES))
def test_every_kind_of_tensor(name):
  f, make_args = CASES[name]
  check(f, make_args)


class x64_mode:
  """with x64_mode(flag): tinyjax's and JAX's x64 switch (the tests run with x64 on)."""
  def __init__(self, on: bool): self.on = on
  def __enter__(self):
    tinyjax.config.update("jax_enable_x64", self.on)
    jax.config.update("jax_enable_x64", self.on)
  def __exit__(self, *exc):
    tinyjax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)

def grad_of_python_floats(x64: bool):
  def f(x): return x * x.sin()
  jg = tinyjax.jit(tinyjax.grad(f))
  with x64_mode(x64):
    for v in [1.0, 2.5, -0.3, 4.0]:
      assert_close(jg(v), np.asarray(jax.grad(lambda x: x * jnp.sin(x))(v)), rtol=1e-6)
  assert len(jg._cache) == 1

def test_padded_constant():
  # [0, 1.5 + i, 0]: not a constant fill. (tinygrad 0.14 itself folds Tensor(1.5).reshape(1).pad(((1, 1),)) * 2 to
  # [3, 3, 3] eagerly, so the reference is numpy's.)
  check(lambda a: a * 2, lambda i: (Tensor(1.5 + i).reshape(1).pad(((1, 1),)),), eager=lambda i: Tensor(np.array([0, 1.5 + i, 0]) * 2))

def test_issue_examples():
  check(lambda a: a.sum(), lambda i: (Tensor(1.5 + i),))
  check(lambda a: a * 2, lambda i: (Tensor.arange(3).realize() + i,))
  grad_of_python_floats(x64=False)   # JAX's default: float32

def test_grad_of_python_floats_with_x64():
  grad_of_python_floats(x64=True)   # float64, as tinyjax.grad(f)(1.0) without jit


# ---- sharded Tensors ------------------------------------------------------------------------------------------------

def sharded(i, axis=0, shape=(4, 4), dtype=np.float32): return Tensor(arr(i, shape, dtype)).shard(DEVS, axis=axis)

SHARDED = {
  "axis 0, realized": (lambda a: (a * 2).sum(1), lambda i: (sharded(i).realize(),)),
  "axis 1, lazy": (lambda a: a.exp() + 1, lambda i: (sharded(i, axis=1),)),
  "replicated": (lambda a: a @ a, lambda i: (sharded(i, axis=None).realize(),)),
  "ones sharded (no buffer)": (lambda a: a * 3, lambda i: (Tensor.ones(4, 4).shard(DEVS, axis=0) + i,)),
  "a view of a shard": (lambda a: a + 1, lambda i: (sharded(i).realize().T,)),
  "two sharded, one replicated": (lambda a, b, c: a * b + c, lambda i: (sharded(i), sharded(i + 1), sharded(i + 2, axis=None))),
  "with a Python scalar": (lambda a, s: a * s, lambda i: (sharded(i).realize(), 1.5 + i)),
  "with a constant": (lambda a, c: a + c, lambda i: (sharded(i), Tensor(2.0 + i))),
  "float64": (lambda a: a.sum(0), lambda i: (sharded(i, dtype=np.float64),)),
}

@pytest.mark.parametrize("name", list(SHARDED))
def test_sharded_tensors(name):
  f, make_args = SHARDED[name]
  jf = check(f, make_args, calls=4)
  out, want = jf(*make_args(9)), f(*make_args(9))   # the result is sharded like the eager one
  assert out.device == want.device and out.uop.axis == want.uop.axis, (out.device, out.uop.axis, want.device, want.uop.axis)


# ---- Python scalars and numpy: traced, weakly typed ------------------------------------------------------------------

def test_python_scalars_are_traced_not_static():
  check(lambda x, s, k, b: (x * s + k, b), lambda i: (real(i), 0.5 * i, i, i % 2 == 0),
        eager=lambda i: (real(i) * (0.5 * i) + i, Tensor(i % 2 == 0)))

def test_python_scalars_are_weakly_typed():
  # a weak value takes the other operand's dtype, as in JAX and in tinygrad itself: float16 stays float16
  h = lambda i: real(i, (3,), np.float16)   # noqa: E731
  check(lambda s, x: x * s, lambda i: (1.5 + i, h(i)))
  check(lambda k, x: x + k, lambda i: (i, real(i, (3,), np.int8)))
  check(lambda s, x: x * s, lambda i: (Tensor(1.5 + i), h(i)))   # tinygrad's weak Tensor(1.5) too
  assert tinyjax.jit(lambda s, x: x * s)(2.0, h(0)).dtype == dtypes.float16
  assert jax.jit(lambda s, x: x * s)(2.0, jnp.ones(3, jnp.float16)).dtype == jnp.float16

@pytest.mark.parametrize("x64", [False, True])
def test_python_scalar_dtypes_follow_x64(x64):
  # alone, a weak value is stored as JAX stores a Python scalar: float32/int32, float64/int64 with x64
  jf = tinyjax.jit(lambda s, k, b: (s * 2, k + 1, b))
  with x64_mode(x64):
    for v in [0.1, 2.7]:
      out = jf(v, 7, True)
      want = jax.jit(lambda s, k, b: (s * 2, k + 1, b))(v, 7, True)
      for o, w in zip(out, want, strict=True):
        assert o.numpy().dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(o.numpy(), np.asarray(w))
  assert len(jf._cache) == 1

def test_python_int_too_large_for_int32_is_an_overflow_error():
  with x64_mode(False), pytest.raises(OverflowError):
    tinyjax.jit(lambda k: k + 1)(2**40)

def test_numpy_arrays_and_scalars_are_traced():
  # numpy values are strongly typed: a float32 scalar stays float32, float64 data is float64 (x64 on)
  check(lambda a, s: a * s, lambda i: (arr(i, (2, 3)), np.float32(0.5 + i)), eager=lambda i: real(i, (2, 3)) * (0.5 + i))
  check(lambda a, s: a * s, lambda i: (arr(i, (2,), np.float64), np.float64(0.1 * i)), eager=lambda i: real(i, (2,), np.float64) * (0.1 * i))
  check(lambda a, b: a + b, lambda i: (arr(i, (2,), np.float64), real(i, (2,), np.float64)), eager=lambda i: real(i, (2,), np.float64) * 2)

def test_numpy_with_sharded_tensors_is_replicated():
  check(lambda a, n: a + n, lambda i: (sharded(i), arr(i, (4,))), calls=4,
        eager=lambda i: sharded(i) + Tensor(arr(i, (4,))).shard(DEVS))

def test_static_python_numbers_through_static_argnums():
  # a Python number that must stay static (a shape, a Python branch) is passed with static_argnums, as in JAX
  f = Counted(lambda x, n: x.reshape(n, -1).sum(1))
  jf = tinyjax.jit(f, static_argnums=1)
  for n in [2, 3, 2, 3, 2, 3]:
    same(jf(real(0, (6,)), n), real(0, (6,)).reshape(n, -1).sum(1))
  assert len(jf._cache) == 2 and f.n == 2 * TRACES

def test_reading_a_traced_python_scalar_raises():
  jf = tinyjax.jit(lambda x, k: x * 2 if k > 0 else x)
  with pytest.raises(tinyjax.ConcretizationTypeError):
    jf(real(0), 1)


# ---- outputs --------------------------------------------------------------------------------------------------------

def test_constant_python_and_empty_outputs():
  check(lambda x: (x * 2, 3.0, Tensor(2.0), x[:0]), lambda i: (real(i),),
        eager=lambda i: (real(i) * 2, Tensor(np.array(3.0)), Tensor(np.array(2.0)), real(i)[:0]))

def test_empty_arguments():
  check(lambda x, y, z: (x * 2, y.sum(0), z + 1), lambda i: (Tensor.zeros(0), Tensor.empty(0, 3), real(i)))
  jf = tinyjax.jit(lambda x: x * 2)
  for _ in range(3): assert jf(Tensor.zeros(0)).numpy().shape == (0,)

def test_function_outputs_are_an_error_as_in_jax():
  # a plain Python function is not a valid output (JAX: the same TypeError); vjp's and linearize's are pytrees, below
  with pytest.raises(TypeError, match="traced for jit returned a value of type <class 'function'>, which is not a valid JAX type"):
    tinyjax.jit(lambda x: lambda: x)(real(0))


# ---- jit of a function returning vjp's or linearize's function ------------------------------------------------------

def f(x): return (x * x.sin()).sum() * x
def fj(x): return jnp.sum(x * jnp.sin(x)) * x

def test_jit_returning_vjp_function():
  jitted = Counted(lambda x: tinyjax.vjp(f, x))
  jf = tinyjax.jit(jitted)
  kept = []
  for i in range(5):
    x, ct = arr(i).astype(np.float64), arr(i + 1).astype(np.float64)
    y, pullback = jf(Tensor(x))
    assert isinstance(pullback, tu.Partial) and all(isinstance(r, Tensor) for r in tu.tree_leaves(pullback))
    yj, pbj = jax.vjp(fj, x)
    assert_close(y, np.asarray(yj))
    assert_close(pullback(Tensor(ct)), pbj(ct))
    kept.append((pullback, ct, pbj(ct)))
  assert jitted.n == TRACES and len(jf._cache) == 1
  for pullback, ct, want in kept: assert_close(pullback(Tensor(ct)), want)   # residuals of earlier calls are kept

def test_jit_returning_linearize_function():
  jf = tinyjax.jit(lambda x: tinyjax.linearize(f, x))
  for i in range(4):
    x, t = arr(i).astype(np.float64), arr(i + 2).astype(np.float64)
    y, f_jvp = jf(Tensor(x))
    yj, fj_jvp = jax.linearize(fj, x)
    assert_close(y, np.asarray(yj))
    assert_close(f_jvp(Tensor(t)), np.asarray(fj_jvp(t)))
  assert len(jf._cache) == 1

def test_jit_returning_vjp_function_closing_over_an_input():
  # the pullback reads y, an argument of the jitted function: it is one of its residuals, as in JAX
  jf = tinyjax.jit(lambda x, y: tinyjax.vjp(lambda x: (x * y).sin(), x)[1])
  for i in range(4):
    x, y, ct = arr(i).astype(np.float64) * 0.3, arr(i + 3).astype(np.float64) * 0.2, np.ones(3)
    pullback = jf(Tensor(x), Tensor(y))
    assert_close(pullback(Tensor(ct)), jax.vjp(lambda x: jnp.sin(x * y), x)[1](ct))
  assert len(jf._cache) == 1

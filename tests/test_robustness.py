"""Leaked tracers, JAX's dtype rules for inputs, thread-safe tracing, and JAX's errors for bad calls (issue 9)."""
import gc, os, subprocess, sys, threading
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor, dtypes

import tinyjax
from tinyjax import core


pytestmark = pytest.mark.usefixtures("compile_in_process")


@pytest.fixture
def x32():
  """x64 off (JAX's default), restored afterwards; JAX likewise."""
  old, old_jax = tinyjax.config.jax_enable_x64, jax.config.jax_enable_x64
  tinyjax.config.update("jax_enable_x64", False)
  jax.config.update("jax_enable_x64", False)
  yield
  tinyjax.config.update("jax_enable_x64", old)
  jax.config.update("jax_enable_x64", old_jax)


X = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)

# ---- leaked tracers: reading a value that escaped a finished transform raises, as in JAX --------------------------

LEAKY = {
  "vmap": lambda f: tinyjax.vmap(f),
  "grad": lambda f: tinyjax.grad(lambda x: f(x).sum()),
  "jvp": lambda f: (lambda x: tinyjax.jvp(f, (x,), (x,))),
  "jacfwd": lambda f: tinyjax.jacfwd(f),
  "jacrev": lambda f: tinyjax.jacrev(f),
  "jit": lambda f: tinyjax.jit(f),
}

@pytest.mark.parametrize("transform", LEAKY)
@pytest.mark.parametrize("read", ["numpy", "item", "tolist", "realize", "later"])
def test_leaked_tracer_raises_after_a_normal_exit(transform, read):
  box = []
  x = Tensor(X[0] if transform in ("jacfwd", "jacrev", "jvp", "grad") else X)
  LEAKY[transform](lambda x: (box.append(x * 1), x * 2)[1])(x)
  leaked = box[0]
  with pytest.raises(tinyjax.UnexpectedTracerError, match="unexpected tracer"):
    if read == "later": (leaked + 1).numpy()
    elif read == "item": leaked.sum().item()
    else: getattr(leaked, read)()

def test_leaked_tracer_used_in_a_later_transform_raises():
  box = []
  tinyjax.vmap(lambda x: (box.append(x * 1), x * 2)[1])(Tensor(X))
  with pytest.raises(tinyjax.UnexpectedTracerError):
    tinyjax.vmap(lambda a: a + 1)(box[0]).numpy()

def test_leaked_collective_raises():
  box = []
  tinyjax.vmap(lambda x: (box.append(tinyjax.lax.axis_index("i")), x)[1], axis_name="i")(Tensor(X))
  with pytest.raises(tinyjax.UnexpectedTracerError): box[0].numpy()

def test_inputs_and_results_stay_readable_and_dead_tracers_are_forgotten():
  gc.collect()
  before = {id(u) for u in core.traced_nodes}   # other tests' graphs (jit caches, sparse templates) may hold some
  x = Tensor(X).realize()
  r = tinyjax.vmap(lambda a: a * 2)(x)
  np.testing.assert_allclose(r.numpy(), X * 2)
  np.testing.assert_allclose(x.numpy(), X)
  gc.collect()
  assert {id(u) for u in core.traced_nodes} <= before and len(core.pending) == 0   # forgotten once no graph refers to it

def test_failed_transform_leaves_no_pending_state():
  with pytest.raises(ZeroDivisionError): tinyjax.vmap(lambda a: 1 / 0)(Tensor(X))
  assert not core.trace_state().active and not core.trace_state().axes
  gc.collect()
  assert len(core.pending) == 0

# ---- JAX's dtype rules for what enters a transform ------------------------------------------------------------------

def test_python_float_is_float32_as_in_jax(x32):
  def f_tj(x):
    return (1. + x.exp()).log()
  got = tinyjax.grad(f_tj)(100.)
  want = jax.grad(lambda x: jnp.log(1. + jnp.exp(x)))(100.)
  assert got.dtype == dtypes.float32 and np.isnan(got.numpy()) and np.isnan(want)

@pytest.mark.parametrize("arr", [np.arange(3.), np.arange(3), np.arange(3, dtype=np.uint64), np.float64(2.5), 2.5, 3, True,
                                 np.arange(3, dtype=np.float32), np.arange(3, dtype=np.int16)], ids=repr)
def test_inputs_take_jax_dtypes(x32, arr):
  got = tinyjax.vmap(lambda a: a, in_axes=None, axis_size=1)(arr)
  want = jax.vmap(lambda a: a, in_axes=None, axis_size=1)(arr)
  assert np.dtype(got.dtype.fmt) == want.dtype, (got.dtype, want.dtype)
  np.testing.assert_array_equal(got.numpy(), np.asarray(want))

def test_tinygrad_tensors_keep_their_dtype(x32):
  x = Tensor(np.arange(3.), dtype=dtypes.float64)
  assert tinyjax.vmap(lambda a: a * 2)(x).dtype == dtypes.float64
  assert tinyjax.grad(lambda a: (a * a).sum())(x).dtype == dtypes.float64

def test_x64_switch(x32):
  tinyjax.config.update("jax_enable_x64", True)
  jax.config.update("jax_enable_x64", True)
  got = tinyjax.grad(lambda x: (1. + x.exp()).log())(100.)
  assert got.dtype == dtypes.float64 and got.numpy() == jax.grad(lambda x: jnp.log(1. + jnp.exp(x)))(100.)
  assert tinyjax.vmap(lambda a: a)(np.arange(3)).dtype == dtypes.int64

def test_x64_from_the_environment():
  code = "import tinyjax; from tinygrad import dtypes; assert tinyjax.config.jax_enable_x64; " \
         "assert tinyjax.vmap(lambda a: a)([1.0, 2.0]).dtype == dtypes.float64"
  env = {**os.environ, "JAX_ENABLE_X64": "1"}
  subprocess.run([sys.executable, "-c", code.replace("([1.0, 2.0])", "(__import__('numpy').ones(2))")], env=env, check=True)

def test_unknown_config_option():
  with pytest.raises(AttributeError, match="Unrecognized config option: jax_foo"): tinyjax.config.update("jax_foo", True)

# ---- threads ------------------------------------------------------------------------------------------------------

def test_transforms_from_four_threads():
  errors, wrong = [], []
  def work(i):
    f = tinyjax.jit(lambda a: a * 3 + 1)
    for k in range(6):
      x = np.random.default_rng(10 * i + k).standard_normal((4, 3)).astype(np.float32)
      try:
        r = tinyjax.vmap(lambda a: a - tinyjax.lax.pmean(a, "b"), axis_name="b")(Tensor(x)).numpy()
        g = tinyjax.grad(lambda a: (a * a).sum())(Tensor(x)).numpy()
        j = f(Tensor(x)).numpy()
        if not (np.allclose(r, x - x.mean(0), atol=1e-5) and np.allclose(g, 2 * x, atol=1e-5) and np.allclose(j, x * 3 + 1, atol=1e-5)):
          wrong.append(i)
      except Exception as e:   # every error counts as a failure
        errors.append(f"{type(e).__name__}: {e}")
  threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
  for t in threads: t.start()
  for t in threads: t.join()
  assert not errors and not wrong, (errors[:3], wrong)

# ---- JAX's errors for bad calls -------------------------------------------------------------------------------------

def _errors(tj, jx):
  with pytest.raises(Exception) as ej: jx()
  with pytest.raises(Exception) as et: tj()
  return et.value, ej.value

def test_jvp_tuple_primals_list_tangents():
  x = np.ones(3, np.float32)
  et, ej = _errors(lambda: tinyjax.jvp(lambda a, b: a * b, (x, x), [x, x]), lambda: jax.jvp(lambda a, b: a * b, (x, x), [x, x]))
  assert type(et) is type(ej) is TypeError and "must have the same tree structure" in str(et)

def test_bad_out_axes_leaf_is_a_type_error():
  et, ej = _errors(lambda: tinyjax.vmap(lambda a: a, out_axes="a")(np.ones(3)), lambda: jax.vmap(lambda a: a, out_axes="a")(np.ones(3)))
  assert type(et) is type(ej) is TypeError and str(et) == str(ej)

def test_vjp_fn_called_with_several_arguments_names_the_function():
  def double(a): return a * 2
  _, tj_fn = tinyjax.vjp(double, Tensor.ones(3))
  _, jx_fn = jax.vjp(double, jnp.ones(3))
  et, ej = _errors(lambda: tj_fn(Tensor.ones(3), Tensor.ones(3)), lambda: jx_fn(jnp.ones(3), jnp.ones(3)))
  assert type(et) is type(ej) is TypeError and str(et) == str(ej).replace("jax.vjp", "tinyjax.vjp")

@pytest.mark.parametrize("out", ["vector", "tuple"])
def test_grad_of_non_scalar(out):
  f = (lambda a: a * 2) if out == "vector" else (lambda a: (a, a))
  et, ej = _errors(lambda: tinyjax.grad(f)(Tensor.ones(3)), lambda: jax.grad(f)(jnp.ones(3)))
  assert type(et) is type(ej) is TypeError and str(et).split(" Output")[0] == str(ej).split(" Output")[0]
  assert ("had shape: (3,)" in str(et)) == ("had shape: (3,)" in str(ej))

def test_negative_axis_size():
  with pytest.raises(ValueError, match="vmap axis_size must be a non-negative int, got -1"): tinyjax.vmap(lambda a: a, axis_size=-1)

@pytest.mark.parametrize("fn", [lambda a: np.sin(a), lambda a: np.asarray(a).sum()])
def test_numpy_on_traced_values(fn):
  with pytest.raises(tinyjax.TracerArrayConversionError, match=r"__array__\(\) was called on a traced Tensor of shape \(3,\)"):
    tinyjax.vmap(fn)(Tensor.ones(2, 3))
  np.testing.assert_allclose(np.sin(Tensor([1., 2.])), np.sin([1., 2.]), rtol=1e-6)   # concrete Tensors convert

def test_linearize_has_aux():
  def f_tj(a):
    return ((a * a).sin(), {"aux": a + 1})
  def f_jx(a):
    return (jnp.sin(a * a), {"aux": a + 1})
  x, t = np.linspace(0.1, 1, 3).astype(np.float32), np.ones(3, np.float32)
  y, fl, aux = tinyjax.linearize(f_tj, Tensor(x), has_aux=True)
  yj, flj, auxj = jax.linearize(f_jx, x, has_aux=True)
  np.testing.assert_allclose(y.numpy(), yj, rtol=1e-6)
  np.testing.assert_allclose(fl(Tensor(t)).numpy(), flj(t), rtol=1e-6)
  np.testing.assert_allclose(aux["aux"].numpy(), auxj["aux"], rtol=1e-6)

def test_python_int_overflow_as_jax(x32):
  with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert to int32"): jnp.asarray(2**40)
  with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert to int32"):
    tinyjax.vmap(lambda a: a, in_axes=None, axis_size=1)(2**40)

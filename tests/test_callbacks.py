"""Host callbacks (jax.debug.print, debug.callback, pure_callback, io_callback) against JAX: the same program run by
both, the printed text (capsys) and the calls' arguments and counts compared."""
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from jax.experimental import io_callback as jio_callback
import tinyjax as tj
import tinyjax.numpy as tnp
from tinyjax.experimental import io_callback as tio_callback
from conftest import same_error

# each program takes the library (jax, its numpy, its lax, its io_callback) and runs; its printed lines are compared
LIBS = {"jax": (jax, jnp, jax.lax, jio_callback), "tj": (tj, tnp, tj.lax, tio_callback)}

def printed(capsys, program, ordered_lines=True) -> None:
  out = {}
  for name, lib in LIBS.items():
    capsys.readouterr()
    program(*lib)
    tj.effects_barrier()
    jax.effects_barrier()
    out[name] = capsys.readouterr().out.splitlines()
  if not ordered_lines: out = {k: sorted(v) for k, v in out.items()}   # JAX's unordered effects may run in any order
  assert out["tj"] == out["jax"] and out["jax"], out


def _eager_formats(jx, np_, lax, io):
  jx.debug.print("x={} y={y}", np_.arange(3.), y=2)
  jx.debug.print("{:.2f} {x[1]} {}", np_.float32(1.5), 7, x=np_.array([1, 2]))
  jx.debug.print("{} {} {} {}", 1, 1.5, True, "s")
  jx.debug.print("no placeholders", skip_format_check=True)
  jx.debug.print(ordered=True)("two-call {}", 3)

def _jit_each_call(jx, np_, lax, io):
  @jx.jit
  def f(x):
    jx.debug.print("in f {}", x)
    jx.debug.print("unused {}", x * 3)   # its value is not an output: the print still runs (JAX does not DCE effects)
    return x * 2
  for v in (1., 2., 3.): f(v)
  jx.jit(lambda x: jx.debug.print("no output {}", x))(4.)

def _ordered(jx, np_, lax, io):
  @jx.jit
  def g(x):
    jx.debug.print("a {}", x, ordered=True)
    c = lax.scan(lambda c, y: (jx.debug.print("step {} {}", c, y, ordered=True), (c + y, None))[1], x, np_.arange(2.))[0]
    jx.debug.print("b {}", c, ordered=True)
    return c
  g(1.)
  g(5.)

def _vmap(jx, np_, lax, io):
  jx.vmap(lambda x, y: jx.debug.print("v {} {}", x, y), in_axes=(0, None))(np_.arange(3.), 5.)
  # nested: the inner vmap's axis is the outer loop, as JAX's batching rules unroll
  jx.vmap(jx.vmap(lambda x, y: jx.debug.print("vv {} {}", x, y), in_axes=(0, None)), in_axes=(None, 0))(np_.arange(2.), np_.arange(3.) * 10)
  jx.jit(jx.vmap(lambda x: jx.debug.callback(lambda v: print("cb", v), x)))(np_.arange(2.))

def _derivatives(jx, np_, lax, io):
  print(float(jx.grad(lambda x: (jx.debug.print("g {}", x), x ** 2)[1])(3.)))   # the primal, once
  jx.jvp(lambda x: (jx.debug.print("j {}", x), x ** 2)[1], (3.,), (1.,))
  jx.hessian(lambda x: (jx.debug.print("h {}", x), (x ** 3).sum())[1])(np_.array([1., 2.]))
  jx.jit(jx.grad(lambda x: (jx.debug.print("jg {}", x), x ** 2)[1]))(2.)

def _loops(jx, np_, lax, io):
  def body(c, x):
    jx.debug.print("step c={} x={}", c, x)
    return c + x, c
  lax.scan(body, 0., np_.arange(3.))
  f = jx.jit(lambda c: lax.scan(body, c, np_.arange(2.))[0])
  f(1.)
  f(2.)
  lax.fori_loop(0, 3, lambda i, c: (jx.debug.print("i={} c={}", i, c), c * 2)[1], 1.)
  lax.while_loop(lambda c: (jx.debug.print("cond {}", c), c < 2)[1], lambda c: (jx.debug.print("body {}", c), c + 1)[1], 0)
  lax.cond(True, lambda x: jx.debug.print("T {}", x), lambda x: jx.debug.print("F {}", x), 1.)
  print(float(jx.grad(lambda c: lax.scan(body, c, np_.arange(2.))[0])(1.)))   # the forward pass prints, once
  lax.scan(lambda c, x: (lax.scan(body, c, np_.arange(2.) + x)[0], None), 0., np_.arange(2.) * 10)   # nested loops

def _loops_vmapped(jx, np_, lax, io):
  jx.vmap(lambda p, x: lax.cond(p, lambda x: jx.debug.print("T {}", x), lambda x: jx.debug.print("F {}", x), x))(
    np_.array([True, False]), np_.arange(2.))
  jx.vmap(lambda c: lax.while_loop(lambda c: c < 3, lambda c: (jx.debug.print("wb {}", c), c + 1)[1], c))(np_.array([0, 1]))

def _vmapped_scan(jx, np_, lax, io):
  jx.vmap(lambda c: lax.scan(lambda c, x: (jx.debug.print("s {} {}", c, x), (c + x, None))[1], c, np_.arange(2.)))(np_.array([10., 20.]))

@pytest.mark.parametrize("program", [_eager_formats, _jit_each_call, _ordered, _vmap, _derivatives, _loops, _loops_vmapped])
def test_debug_print(capsys, program):
  printed(capsys, program)

def test_debug_print_vmapped_loop(capsys):
  # JAX runs the per-example prints of a vmapped loop body in an order of its own (unordered effects): the same lines
  printed(capsys, _vmapped_scan, ordered_lines=False)


def _pure(jx, np_, lax, io):
  def cb(x, y):
    print("cb", np.shape(x), np.shape(y))
    return np.asarray(x) + np.asarray(y)
  def fun(x, y, m):
    return jx.pure_callback(cb, jx.ShapeDtypeStruct(np.broadcast_shapes(np.shape(x), np.shape(y)), np.float64), x, y, vmap_method=m)
  x = np_.arange(3.)
  print(fun(x, np_.float64(1.), None))
  for m in ("sequential", "expand_dims", "broadcast_all", "legacy_vectorized"):
    r = np.asarray(jx.vmap(lambda a, b: fun(a, b, m), in_axes=(0, None))(x, np_.float64(1.)))
    print(m, r)
  f = jx.jit(lambda a: fun(a, 1., None) * 2)
  r = [np.asarray(f(v)) for v in (x, x + 1)]        # at each call
  print(r)
  jx.jit(lambda a: (fun(a, 1., None), a)[1])(x)       # unused: not called (JAX drops it)
  tree = jx.pure_callback(lambda a: {"p": a * 2, "q": (a.sum(),)},
                          {"p": jx.ShapeDtypeStruct((3,), np.float64), "q": (jx.ShapeDtypeStruct((), np.float64),)}, x)
  print(tree["p"], tree["q"][0])
  print(lax.scan(lambda c, y: (c + jx.pure_callback(lambda v: v * 2, jx.ShapeDtypeStruct((), np.float64), y), None), 0., x)[0])

def _io(jx, np_, lax, io):
  x = np_.arange(3.)
  s = jx.ShapeDtypeStruct((), np.float64)
  print(io(lambda a: (print("io", a), a * 2)[1], jx.ShapeDtypeStruct((3,), np.float64), x))
  jx.jit(lambda a: (io(lambda a: (print("io unused", a), a)[1], jx.ShapeDtypeStruct((3,), np.float64), a), a)[1])(x)
  print(io(lambda a: print("io none", a), None, x))
  print(jx.vmap(lambda a: io(lambda a: (print("iov", a), a * 2)[1], s, a))(x))
  print(lax.scan(lambda c, y: (c + io(lambda a: (print("ios", a), a * 2)[1], s, y, ordered=True), None), 0., x)[0])

@pytest.mark.parametrize("program", [_pure, _io])
def test_pure_and_io_callbacks(capsys, program):
  printed(capsys, program)


def test_errors():
  x = np.arange(3.)
  s3 = (jax.ShapeDtypeStruct((3,), np.float64), tj.ShapeDtypeStruct((3,), np.float64))
  def both(f): return lambda: f(jax, jnp, s3[0], jio_callback), lambda: f(tj, tnp, s3[1], tio_callback)
  cases = [
    lambda jx, np_, s, io: jx.pure_callback(lambda a: a, s, x, vmap_method="foo"),
    lambda jx, np_, s, io: jx.vmap(lambda a: jx.pure_callback(lambda v: v, jx.ShapeDtypeStruct((), np.float64), a))(x),
    lambda jx, np_, s, io: jx.grad(lambda a: jx.pure_callback(lambda v: v, s, a).sum())(x),
    lambda jx, np_, s, io: jx.jvp(lambda a: jx.pure_callback(lambda v: v, s, a), (x,), (x,)),
    lambda jx, np_, s, io: jx.grad(lambda a: io(lambda v: v, jx.ShapeDtypeStruct((), np.float64), a))(1.),
    lambda jx, np_, s, io: jx.vmap(lambda a: io(lambda v: v, jx.ShapeDtypeStruct((), np.float64), a, ordered=True))(x),
    lambda jx, np_, s, io: jx.debug.callback(3, x),
    lambda jx, np_, s, io: jx.debug.print("{}", 1, z=2),
    lambda jx, np_, s, io: jx.debug.print("{}", 1, 2),
    lambda jx, np_, s, io: jx.debug.print(ordered=True, x=1),
  ]
  for case in cases: same_error(*both(case))
  # a result of the wrong shape or dtype: JAX's message (JAX wraps it in its runtime error)
  for bad in (lambda a: a[:2], lambda a: a.astype(np.float32)):
    with pytest.raises(RuntimeError) as e: tj.pure_callback(bad, s3[1], x)
    with pytest.raises(Exception) as j: jax.pure_callback(bad, s3[0], x)
    assert str(e.value) in str(j.value)
  # a 64-bit result type with x64 off (given as a numpy dtype: tinyjax's ShapeDtypeStruct narrows it when made)
  spec = np.empty(3, np.float64)
  try:
    jax.config.update("jax_enable_x64", False)
    tj.config.update("jax_enable_x64", False)
    same_error(lambda: tj.pure_callback(lambda a: a, spec, x), lambda: jax.pure_callback(lambda a: a, spec, x))
  finally:
    jax.config.update("jax_enable_x64", True)
    tj.config.update("jax_enable_x64", True)


def test_pure_callback_under_grad():
  # no derivative flows into it (stop_gradient): allowed, as in JAX (tinyjax may call it more than once: a pure callback
  # may be, says JAX's contract)
  def f(jx, lax):
    return jx.grad(lambda a: (a * jx.pure_callback(lambda v: v * v, jx.ShapeDtypeStruct((3,), np.float64), lax.stop_gradient(a))).sum())
  x = np.arange(3.)
  np.testing.assert_allclose(np.asarray(f(tj, tj.lax)(x)), np.asarray(f(jax, jax.lax)(x)))


def test_callback_arguments():
  # the callback gets numpy arrays (JAX: jax.Arrays on the CPU) with JAX's dtypes, and static leaves as they are
  got = []
  tj.debug.callback(lambda a, b, c=None: got.append((a, b, c)), np.arange(2, dtype=np.int32), 1.5, c="s")
  a, b, c = got[0]
  assert isinstance(a, np.ndarray) and a.dtype == np.int32 and a.tolist() == [0, 1]
  assert b.dtype == np.float64 and float(b) == 1.5 and c == "s"

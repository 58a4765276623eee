"""tinyjax.jit: signatures, non-aliasing outputs, nesting and composition with the transforms, checked with numbers."""
import gc, weakref
from functools import partial
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor
from tinygrad.uop.ops import Ops
import tinyjax
from conftest import kernel_count
from jnp_table import x64_off

rng = np.random.default_rng(0)
W = rng.standard_normal((4, 3))
Wt = Tensor(W).realize()

def f(x): return (x @ Wt).tanh().softmax()
def fj(x): return jax.nn.softmax(jnp.tanh(x @ W))
def fresh(a): return Tensor(np.asarray(a)).realize()


def test_repeated_calls_match_unjitted_and_replay():
  jf = tinyjax.jit(f)
  for i in range(5):
    x = rng.standard_normal((2, 4))
    np.testing.assert_allclose(jf(fresh(x)).numpy(), fj(x), rtol=1e-12)
  entry = next(iter(jf._cache.values()))
  assert entry.tinyjit.captured is not None   # the third call on replayed the captured kernels


def test_outputs_never_alias_accumulating_results():
  # the classic TinyJit surprise: a result kept from an earlier call must not change when the jit runs again
  jf = tinyjax.jit(lambda x: x * 2 + 1)
  ctx, want = None, []
  for i in range(6):
    x = np.full(3, float(i))
    out = jf(fresh(x))
    ctx = out if ctx is None else ctx.cat(out)
    want.append(x * 2 + 1)
  np.testing.assert_array_equal(ctx.numpy(), np.concatenate(want))


def test_kept_outputs_of_every_call_stay_distinct():
  jf = tinyjax.jit(lambda x: {"a": x.sum(), "b": x * 3})
  outs = [jf(fresh(np.full(2, float(i)))) for i in range(5)]
  for i, o in enumerate(outs):
    np.testing.assert_array_equal(o["a"].numpy(), 2.0 * i)
    np.testing.assert_array_equal(o["b"].numpy(), np.full(2, 3.0 * i))


def test_output_buffers_are_reused_only_when_nothing_refers_to_them():
  """Output buffers go back to the jitted function when nothing can read them (_tg.OutputBuffers): a result, a view
  of it, a lazy graph over it or a Tensor holding the view keeps its data from every later call."""
  jf = tinyjax.jit(lambda x: (x * 2 + 1).reshape(2, 2))
  addr = lambda t: t.uop.base.buffer._buf.va_addr   # noqa: E731
  jf(fresh(np.zeros(4))), jf(fresh(np.zeros(4)))   # capture, then the first replay
  first = addr(jf(fresh(np.zeros(4))))
  assert addr(jf(fresh(np.zeros(4)))) == first   # dropped: its buffer is used again
  r = jf(fresh(np.zeros(4)))
  for _ in range(3): r = jf(fresh(np.zeros(4)))   # the last result alive during the call: two buffers in turn
  seen = set()
  for _ in range(6):
    r = jf(fresh(np.zeros(4)))
    seen.add(addr(r))
  assert len(seen) == 2
  kept = jf(fresh(np.full(4, 1.0)))
  view = jf(fresh(np.full(4, 2.0))).reshape(4)
  lazy = jf(fresh(np.full(4, 3.0))) * 10
  sliced = jf(fresh(np.full(4, 4.0)))[1]
  for i in range(5): jf(fresh(np.full(4, 100.0 + i)))
  np.testing.assert_array_equal(kept.numpy(), np.full((2, 2), 3.0))
  np.testing.assert_array_equal(view.numpy(), np.full(4, 5.0))
  np.testing.assert_array_equal(lazy.numpy(), np.full((2, 2), 70.0))
  np.testing.assert_array_equal(sliced.numpy(), np.full(2, 9.0))
  # a dropped result's Tensor is given again, as if new: no gradient; one assigned into keeps its data while alive
  g = jf(fresh(np.zeros(4)))
  g.grad = g * 0
  del g
  assert all(jf(fresh(np.zeros(4))).grad is None for _ in range(4))
  w = jf(fresh(np.zeros(4)))
  w.assign(Tensor.full((2, 2), 7.0, dtype=w.dtype)).realize()
  for i in range(5): jf(fresh(np.full(4, 100.0 + i)))
  np.testing.assert_array_equal(w.numpy(), np.full((2, 2), 7.0))


def test_the_second_call_pays_no_one_time_work(monkeypatch):
  """The capture (the first call) keeps no reference to its result, so that a dropped first result's buffer is the
  second call's output, and it makes the replay's command tables: the second call allocates no buffer and builds no
  table (a solver's first iteration paid both, ~0.1-0.3 ms per function)."""
  import tinyjax._tg.buffers as tgb
  cg = tinyjax._tg.cpu_graph
  jf = tinyjax.jit(lambda x, y: (x * 2 + 1, (x * y).sum()))
  x, y = fresh(np.arange(4.0, dtype=np.float32)), fresh(np.ones(4, np.float32))
  first = jf(x, y)
  addrs = [t.uop.base.buffer._buf.va_addr for t in first]
  np.testing.assert_array_equal(first[0].numpy(), [1, 3, 5, 7])
  del first
  y2 = fresh(np.full(4, 2.0, np.float32))
  made: list = []
  monkeypatch.setattr(tgb, "_new_buffer", lambda *a, real=tgb._new_buffer, **k: (made.append("buffer"), real(*a, **k))[1])
  monkeypatch.setattr(cg.Commands, "__init__", lambda self, *a, real=cg.Commands.__init__, **k: (made.append("table"), real(self, *a, **k))[1])
  monkeypatch.setattr(cg.Loop, "__init__", lambda self, *a, real=cg.Loop.__init__, **k: (made.append("loop"), real(self, *a, **k))[1])
  second = jf(x, y2)
  assert made == [] and [t.uop.base.buffer._buf.va_addr for t in second] == addrs, made
  np.testing.assert_array_equal(second[0].numpy(), [1, 3, 5, 7])
  assert second[1].item() == 12.0


def test_numpy_arguments_are_copied_into_buffers_used_again(monkeypatch):
  """A numpy argument (a solver's callback: IPOPT hands numpy arrays) is copied at each call into an input buffer the
  function had before (no new buffer per call): the data of this call, read-only and 0-d arrays too, and no result
  ever shares the input's buffer (f(x) = x returned three times keeps three values)."""
  import tinyjax._tg.buffers as tgb
  jf = tinyjax.jit(lambda x, s, y: (x * s + y, x))
  a, y = np.arange(6.0, dtype=np.float32), fresh(np.ones(6, np.float32))
  for _ in range(2): jf(a, np.float32(2), y), jf(a, np.array(1, np.float32), y)   # capture, then the first replay
  kept = []
  for i in range(4):
    a[:] = i
    ro = np.full(6, 10.0 * i, np.float32)
    ro.flags.writeable = False
    kept.append((*jf(a, np.float32(i), y), jf(ro, np.array(1, np.float32), y)[0]))
  np.testing.assert_array_equal(np.stack([k[0].numpy() for k in kept]), [[i * i + 1] * 6 for i in range(4)])
  np.testing.assert_array_equal(np.stack([k[1].numpy() for k in kept]), [[i] * 6 for i in range(4)])
  np.testing.assert_array_equal(np.stack([k[2].numpy() for k in kept]), [[10 * i + 1] * 6 for i in range(4)])
  del kept
  jf(a, np.float32(3), y)
  made = []
  real = tgb._new_buffer
  monkeypatch.setattr(tgb, "_new_buffer", lambda *args, **kw: (made.append(args[0]), real(*args, **kw))[1])
  for i in range(4):
    a[:] = i
    np.testing.assert_array_equal(jf(a, np.float32(3), y)[0].numpy(), np.full(6, 3 * i + 1))
  assert made == []   # results dropped: inputs and outputs from the pools, nothing allocated


def test_host_data_made_while_tracing_is_taken_as_traced(monkeypatch):
  """`Tensor(np_array)` inside a jitted function (tinygrad code: problems.py's goal) is data of the trace, as
  `jnp.asarray` of it is in JAX: written into a buffer once, not copied again by every replay, so a later write into
  the numpy array is not seen (tinygrad's COPY read it at every call)."""
  import tinygrad.engine.realize as tg_realize
  import tinyjax.numpy as tnp
  m = np.eye(4) * 2 + 0.5
  c, cj = np.arange(4.0), np.arange(4.0)
  # the second runs again at the capture (a host call: LAPACK's solve): its data is taken there
  jf = [tinyjax.jit(lambda x: x * Tensor(c) + 1), tinyjax.jit(lambda x: tnp.linalg.solve(m, x) * Tensor(c))]
  jj = [jax.jit(lambda x: x * jnp.asarray(cj) + 1), jax.jit(lambda x: jnp.linalg.solve(m, x) * jnp.asarray(cj))]
  x = fresh(np.full(4, 2.0))
  for _ in range(2):
    for f, g in zip(jf, jj, strict=True): np.testing.assert_allclose(f(x).numpy(), np.asarray(g(np.full(4, 2.0))), rtol=1e-14)
  c[:], cj[:] = 10, 10
  copies = []
  real = tg_realize.run_linear
  monkeypatch.setattr(tg_realize, "run_linear", lambda *a, **k: (copies.append(1), real(*a, **k))[1])
  for f, g in zip(jf, jj, strict=True): np.testing.assert_allclose(f(x).numpy(), np.asarray(g(np.full(4, 2.0))), rtol=1e-14)
  assert copies == []


def test_flat_results_passed_on_or_realized_are_freed():
  """`x = f(x)` in a loop with 1-D results, and `f(x).realize()` dropped: each result's buffer goes when it is dropped
  (the argument-signature memo held a whole buffer's UOp, its own key: 200 steps of 4 MB kept 0.9 GB)."""
  import weakref
  import tinyjax._tg.buffers as tgb
  f = tinyjax.jit(lambda x: x * 0.5 + 1)
  x = fresh(np.ones(300_000, np.float32))   # over OutputBuffers' pooled size: a new buffer per result
  seen = []
  for _ in range(20):
    x = f(x)
    seen.append(weakref.ref(x.uop.base))
  for _ in range(20): seen.append(weakref.ref(f(x).realize().uop.base))
  alive = {id(r()) for r in seen if r() is not None}
  memo = [e for e in tgb._PLAIN.values() if e[2][0] == (300_000,)]   # (other tests' live arrays have entries too)
  assert len(alive) <= 2 and len(memo) <= 2, (len(alive), len(memo))   # x and the last result
  np.testing.assert_allclose(x.numpy()[:3], np.full(3, 2 - 2.0 ** -20), rtol=1e-6)


def test_new_shapes_trace_again_instead_of_failing():
  jf = tinyjax.jit(lambda x: x.sum(0) * 2)
  for shape in [(3, 2), (3, 2), (3, 2), (5, 4), (5, 4), (5, 4), (3, 2)]:
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(jf(fresh(x)).numpy(), x.sum(0) * 2, rtol=1e-12)
  assert len(jf._cache) == 2


def test_pytree_arguments_and_outputs():
  jf = tinyjax.jit(lambda d, t: {"s": d["x"] * t[0] + t[1], "n": (d["x"] * d["x"]).sum()})
  for i in range(4):
    x, a, b = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)
    out = jf({"x": fresh(x)}, (fresh(a), fresh(b)))
    np.testing.assert_allclose(out["s"].numpy(), x * a + b, rtol=1e-12)
    np.testing.assert_allclose(out["n"].numpy(), (x * x).sum(), rtol=1e-12)


def test_static_argnums_are_part_of_the_key_python_numbers_are_traced():
  jf = tinyjax.jit(lambda x, k, mode: x * k if mode == "mul" else x + k, static_argnums=2)
  x = rng.standard_normal(3)
  for k, mode in [(2, "mul"), (3, "mul"), (2, "add"), (2, "mul"), (3, "mul"), (2, "add"), (2, "add")]:
    want = x * k if mode == "mul" else x + k
    np.testing.assert_allclose(jf(fresh(x), k, mode).numpy(), want, rtol=1e-12)
  assert len(jf._cache) == 2   # one per static mode: Python numbers are traced (0-d values), as in JAX


def test_static_argnames():
  jf = tinyjax.jit(lambda x, *, power: x ** power, static_argnames="power")
  x = np.abs(rng.standard_normal(3)) + 0.5
  for p in (2, 3, 2, 2):
    np.testing.assert_allclose(jf(fresh(x), power=p).numpy(), x ** p, rtol=1e-12)


def test_static_arguments_by_position_or_by_name():
  """As JAX: a static argument named in static_argnames may be passed by position, one in static_argnums by name (the
  signature maps one to the other), and jit(static_argnums=...) without the function is a decorator."""
  def count_to(x, n):
    i = 0
    while i < n: i += 1   # a Python loop on n: n must be static
    return x + i
  x = rng.standard_normal(2)
  for jf in (tinyjax.jit(count_to, static_argnames="n"), tinyjax.jit(count_to, static_argnums=1),
             tinyjax.jit(static_argnames=["n"])(count_to)):
    for call in (lambda: jf(fresh(x), 3), lambda: jf(fresh(x), n=3), lambda: jf(x=fresh(x), n=3)):
      np.testing.assert_allclose(call().numpy(), x + 3, rtol=1e-12)
  with pytest.raises(tinyjax.ConcretizationTypeError, match="tinyjax.jit"): tinyjax.jit(count_to)(fresh(x), 3)


def test_same_tensor_twice_is_one_input():
  jf = tinyjax.jit(lambda a, b: a * b + a)
  for i in range(4):
    x = fresh(rng.standard_normal(3))
    np.testing.assert_allclose(jf(x, x).numpy(), x.numpy() * x.numpy() + x.numpy(), rtol=1e-12)


def test_realized_buffers_and_other_arguments_alternate():
  # realized whole buffers take a shorter way to their TinyJit (no flattening); it must pick the same signature as the
  # general way, and a call of another kind (the same Tensor twice, a view, another dtype, a float) between them must not
  # disturb it
  jf = tinyjax.jit(lambda a, b: a * b + a)
  for i in range(3):
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(jf(fresh(x), fresh(y)).numpy(), x * y + x, rtol=1e-12)
    xt = fresh(x)
    np.testing.assert_allclose(jf(xt, xt).numpy(), x * x + x, rtol=1e-12)
    np.testing.assert_allclose(jf(fresh(x)[0], fresh(y)[1]).numpy(), x[0] * y[1] + x[0], rtol=1e-12)
    np.testing.assert_allclose(jf(fresh(x.astype(np.float32)), fresh(y)).numpy(), x.astype(np.float32) * y + x.astype(np.float32),
                               rtol=1e-6)
    np.testing.assert_allclose(jf(fresh(x), 2.0).numpy(), x * 2 + x, rtol=1e-12)
  assert len(jf._cache) == 5 and len(jf._plain) == 3   # (x, y), (xt, xt) and the float32 one take the short way


def test_short_path_takes_a_tensor_again_and_static_arguments_by_name():
  # `k(x, x)` and `solve_triangular(a, b, lower=True)` take the short call path too (no flattening), with the signature
  # the general path gives: one trace per signature, each call its own numbers
  traces = []
  def g(a, b, c, *, scale, shift=0.0):
    traces.append(1)
    return a * b * scale + c + shift
  jf = tinyjax.jit(g, static_argnames=("scale", "shift"))
  for i in range(3):
    x, z = rng.standard_normal(3), rng.standard_normal(3)
    xt = fresh(x)
    np.testing.assert_allclose(jf(xt, xt, z, scale=2.0).numpy(), x * x * 2 + z, rtol=1e-12)   # numpy after a repeat
    np.testing.assert_allclose(jf(xt, fresh(z), xt, scale=2.0).numpy(), x * z * 2 + x, rtol=1e-12)
    np.testing.assert_allclose(jf(xt, xt, xt, shift=1.0, scale=3.0).numpy(), x * x * 3 + x + 1, rtol=1e-12)
    np.testing.assert_allclose(jf(xt, xt.reshape(3, 1)[:, 0], xt, scale=2.0).numpy(), x * x * 2 + x, rtol=1e-12)   # a view: copied
  assert len(jf._plain) == 3 and len(traces) == 3   # (the view copied has the second call's signature)
  with pytest.raises(ValueError, match="static arguments must be hashable"): jf(xt, xt, xt, scale=[1.0])


def test_numpy_and_unrealized_inputs():
  jf = tinyjax.jit(lambda x: x * 2)
  for i in range(4):
    x = rng.standard_normal(3)
    np.testing.assert_allclose(jf(x).numpy(), x * 2, rtol=1e-12)                    # numpy array
    np.testing.assert_allclose(jf(Tensor(x) + 1).numpy(), (x + 1) * 2, rtol=1e-12)  # lazy Tensor


def test_nested_jit_is_inlined():
  inner = tinyjax.jit(lambda x: f(x))   # a function of its own: jit(f)'s traces are f's, shared with the other tests
  outer = tinyjax.jit(lambda x: inner(x) * 2)
  for i in range(4):
    x = rng.standard_normal((2, 4))
    np.testing.assert_allclose(outer(fresh(x)).numpy(), 2 * fj(x), rtol=1e-12)
  assert len(inner._cache) == 0          # never ran its own TinyJit: inlined


@pytest.mark.parametrize("name", ["vmap", "jvp", "grad", "jacfwd", "jacrev", "hessian"])
def test_transforms_of_a_jitted_function(name):
  jf = tinyjax.jit(f)
  def g(x): return f(x).sum() * 3.0
  def gj(x): return fj(x).sum() * 3.0
  jg = tinyjax.jit(g)
  x = rng.standard_normal((2, 4))
  v = rng.standard_normal((2, 4))
  if name == "vmap":
    X = rng.standard_normal((5, 2, 4))
    got, want = tinyjax.vmap(jf)(Tensor(X)).numpy(), jax.vmap(fj)(X)
  elif name == "jvp":
    got, want = tinyjax.jvp(jf, (Tensor(x),), (Tensor(v),))[1].numpy(), jax.jvp(fj, (x,), (v,))[1]
  elif name == "grad":
    got, want = tinyjax.grad(jg)(Tensor(x)).numpy(), jax.grad(gj)(x)
  else:
    tj, jj = getattr(tinyjax, name), getattr(jax, name)
    fn, fnj = (jg, gj) if name == "hessian" else (jf, fj)
    got, want = tj(fn)(Tensor(x)).numpy(), jj(fnj)(x)
  np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["vmap", "jvp", "grad", "jacfwd", "jacrev", "hessian"])
def test_jit_of_each_transform(name):
  g, gj = (lambda x: f(x).sum() * 3.0), (lambda x: fj(x).sum() * 3.0)
  if name == "vmap": t, tj_, arg = tinyjax.vmap(f), jax.vmap(fj), rng.standard_normal((5, 2, 4))
  elif name == "jvp":
    v = rng.standard_normal((2, 4))
    t, tj_, arg = (lambda x: tinyjax.jvp(f, (x,), (Tensor(v),))[1]), (lambda x: jax.jvp(fj, (x,), (v,))[1]), None
  elif name in ("grad", "hessian"): t, tj_, arg = getattr(tinyjax, name)(g), getattr(jax, name)(gj), None
  else: t, tj_, arg = getattr(tinyjax, name)(f), getattr(jax, name)(fj), None
  jitted = tinyjax.jit(t)
  for i in range(4):
    x = rng.standard_normal((2, 4)) if arg is None else rng.standard_normal(arg.shape)
    np.testing.assert_allclose(jitted(fresh(x)).numpy(), tj_(x), rtol=1e-9, atol=1e-12)


def test_jit_of_spjacobian_and_spjacobian_of_jit():
  n = 8
  def F(u): return u.pad(((1, 1),))[:-2] - 2 * u + u.pad(((1, 1),))[2:] + u.exp()
  def Fj(u): return jnp.pad(u, (1, 1))[:-2] - 2 * u + jnp.pad(u, (1, 1))[2:] + jnp.exp(u)
  J = tinyjax.spjacobian(tinyjax.jit(F), Tensor(np.zeros(n)))
  jac = tinyjax.jit(J)
  for i in range(4):
    u = rng.standard_normal(n)
    dense = np.asarray(jax.jacfwd(Fj)(u))
    np.testing.assert_allclose(J.matrix(jac(fresh(u))).toarray(), dense, rtol=1e-12)
  assert J.ncolors == 3


def test_kernels_lists_what_a_replay_runs():
  jf = tinyjax.jit(f)
  x = fresh(rng.standard_normal((2, 4)))
  names = jf.kernels(x)
  assert all(isinstance(k, str) and k for k in names)
  assert kernel_count(lambda: jf(x)) == len(names)
  # the same graph, realized without jit, runs the same number of kernels: jit adds none (no copy of the output)
  y = Tensor(x.numpy()).realize()
  out = f(y)
  assert kernel_count(out.realize) == len(names)


def test_reading_a_traced_value_inside_jit_raises():
  jf = tinyjax.jit(lambda x: x * 2 if x.sum().item() > 0 else x)
  with pytest.raises(tinyjax.ConcretizationTypeError, match="tinyjax.jit"):
    jf(fresh(np.ones(3)))


def test_non_array_leaf_and_unhashable_static_argument_are_errors():
  """As JAX: a leaf that is not an array (a str, a set, an object) must be a static argument, named by its path."""
  import jax
  def f(x, opts): return x * opts["k"]
  for bad in ({"k": {1, 2}}, {"k": "two"}):
    with pytest.raises(TypeError) as got: tinyjax.jit(f)(fresh(np.ones(3)), bad)
    with pytest.raises(TypeError) as want: jax.jit(f)(np.ones(3), bad)
    assert str(got.value).split(" as an abstract array")[1] == str(want.value).split(" as an abstract array")[1]
  np.testing.assert_allclose(tinyjax.jit(lambda x, s: x * len(s), static_argnums=1)(fresh(np.ones(3)), "two").numpy(), 3.0)
  with pytest.raises(ValueError, match="must be hashable"):
    tinyjax.jit(f, static_argnums=1)(fresh(np.ones(3)), {"k": 2})


def test_views_of_one_buffer_as_inputs():
  # x[0] and x[1] are views of the same buffer: the replay must read the view passed now, not the captured offset
  X = fresh(np.arange(6.0).reshape(2, 3))
  jf = tinyjax.jit(lambda r: r * 2)
  for i in range(5):
    np.testing.assert_array_equal(jf(X[i % 2]).numpy(), np.arange(6.0).reshape(2, 3)[i % 2] * 2)
  for i in range(3):
    np.testing.assert_array_equal(jf(X.T[i]).numpy(), np.arange(6.0).reshape(2, 3).T[i] * 2)


_VIEWS = {"row": (lambda x: x[1], None), "column": (lambda x: x[:, 2], None), "transpose": (lambda x: x.T, None),
          "flip-shrink": (lambda x: x[::-1, 1:3], None), "reshape": (lambda x: x[1:].reshape(8), None),
          "expand": (lambda x: x[None, 0].expand(3, 4), lambda x: np.broadcast_to(x[None, 0], (3, 4))),
          "flip-strided": (lambda x: x.flip(1)[:, ::2], lambda x: np.flip(x, 1)[:, ::2])}

@pytest.mark.parametrize("name", list(_VIEWS))
def test_views_as_arguments_are_copied_on_the_host(name):
  """A view of a realized buffer passed to a jitted function is copied into its input on the host (numpy), with no
  program of its own: the call launches only the function's kernel, and reads the view's numbers."""
  view, np_view = _VIEWS[name]
  base = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 - 4
  X = fresh(base)
  jf = tinyjax.jit(lambda r: r * 2 + 1)
  want = (np_view or view)(base) * 2 + 1
  for _ in range(3):
    np.testing.assert_array_equal(jf(view(X)).numpy(), want)
  v = view(X)
  assert kernel_count(lambda: jf(v).realize()) == 1


def test_beam_searches_the_captured_kernels(monkeypatch):
  """jit(f, beam=N) compiles under tinygrad's BEAM search (each kernel goes through beam_search), same numbers; the
  replay runs the searched kernels."""
  import tinygrad.codegen.opt.search as search
  calls: list[int] = []
  orig = search.beam_search
  monkeypatch.setattr(search, "beam_search", lambda k, *a, **kw: calls.append(1) or orig(k, *a, **kw))
  f = tinyjax.jit(lambda x: (x * 3 + 1).sum(0), beam=1)
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_array_equal(f(Tensor(x)).numpy(), (x * 3 + 1).sum(0))
  assert calls
  np.testing.assert_array_equal(f(Tensor(x + 1)).numpy(), (x * 3 + 4).sum(0))


@pytest.mark.parametrize("make_opt", [lambda p: __import__("tinygrad").nn.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
                                      lambda p: __import__("tinygrad").nn.optim.Adam(p, lr=0.01),
                                      lambda p: __import__("tinygrad").nn.optim.AdamW(p, lr=0.01, weight_decay=0.1),
                                      lambda p: __import__("tinygrad").nn.optim.LAMB(p, lr=0.01)], ids=["SGD", "Adam", "AdamW", "LAMB"])
def test_jitted_training_step_with_tinygrad_optimizers(make_opt):
  # the canonical tinygrad step (zero_grad, backward, step: the optimizer realizes and assigns in place) under
  # tinyjax.jit gives eager's and TinyJit's numbers step for step. The abstract trace realizes nothing and its
  # assigns are undone; closed-over state with no data yet (lazily initialized weights, the optimizer's moments and
  # step counts) is realized before the capture, which would otherwise replay its initialization every call
  from tinygrad import nn, TinyJit
  from tinygrad.helpers import Context
  X, Y = fresh(rng.standard_normal((16, 4)).astype(np.float32)), fresh(rng.standard_normal((16, 2)).astype(np.float32))
  runs = {}
  for kind in ("eager", "TinyJit", "tinyjax"):
    Tensor.manual_seed(3)
    l1, l2 = nn.Linear(4, 8), nn.Linear(8, 2)
    # realized first here; tests/test_stateful.py has lazily initialized models, numpy's numbers and more calls
    Tensor.realize(l1.weight, l1.bias, l2.weight, l2.bias)
    opt = make_opt([l1.weight, l1.bias, l2.weight, l2.bias])   # its moments and counters stay lazy until the capture
    def step(x, y):
      with Context(TRAINING=1):
        opt.zero_grad()
        loss = ((l2(l1(x).relu()) - y) ** 2).mean()
        loss.backward()
        opt.step()
      return loss
    f = {"eager": step, "TinyJit": TinyJit(lambda x, y: step(x, y).realize()), "tinyjax": tinyjax.jit(step)}[kind]
    runs[kind] = [f(X, Y).numpy().item() for _ in range(4)] + l1.weight.numpy().ravel().tolist()
  np.testing.assert_allclose(runs["tinyjax"], runs["eager"], rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(runs["TinyJit"], runs["eager"], rtol=1e-6, atol=1e-7)
  assert len(set(runs["eager"][:4])) == 4   # it trains


def test_tensor_from_numpy_arguments_are_copied_in_each_call():
  # Tensor(array) is a COPY from tinygrad's NPY device: jit copies the array in from the host instead of running the
  # COPY (~1 ms); each call must see its own array (1-D: the COPY itself; 2-D: the general way)
  jf = tinyjax.jit(lambda a, b: a * 2 + b.sum())
  for i in range(4):
    a, b = rng.standard_normal(5), rng.standard_normal((2, 3))
    np.testing.assert_allclose(jf(Tensor(a), Tensor(b)).numpy(), a * 2 + b.sum(), rtol=1e-12)
  assert len(jf._cache) == 1

def test_numpy_arguments_on_the_short_path():
  # a solver's callback passes numpy arrays (IPOPT: float64 z, multipliers, a numpy scalar): they take the short call
  # path (no flattening) with the signature and dtypes the general path gives, and every call sees its own arrays
  jf = tinyjax.jit(lambda z, lam, s: (z * lam).sum() * s + z)
  z0, lam0 = rng.standard_normal(6), rng.standard_normal(6)
  for _ in range(3):
    z, lam, s = rng.standard_normal(6), rng.standard_normal(6), np.float64(rng.standard_normal())
    out = jf(z, lam, s)
    assert out.dtype == tinyjax.numpy.float64   # x64 is on in the tests
    np.testing.assert_allclose(out.numpy(), (z * lam).sum() * s + z, rtol=1e-12)
  assert len(jf._plain) == 1 and len(jf._cache) == 1
  # mixed with a realized Tensor: the numpy data goes to the Tensor's device, the same signature (the same buffers)
  out = jf(Tensor(z0).realize(), lam0, np.float64(2.0))
  np.testing.assert_allclose(out.numpy(), (z0 * lam0).sum() * 2 + z0, rtol=1e-12)
  assert len(jf._plain) == 2 and len(jf._cache) == 1
  # with x64 off, float64 data is narrowed to float32 as JAX does: the general path, its own float32 signature
  with x64_off():
    out = jf(z0, lam0, np.float64(2.0))
    assert out.dtype == tinyjax.numpy.float32
    np.testing.assert_allclose(out.numpy(), (z0 * lam0).sum() * 2 + z0, rtol=1e-6, atol=1e-6)   # float32: a sum of terms of size ~1, cancelling
  assert len(jf._cache) == 2

def test_warm_up_first_call_compiles_each_kernel_once_then_replays(monkeypatch):
  # issue 12's warm-up: the first call traces, schedules once and compiles each kernel once (nothing twice); the second
  # call is already a replay of the captured kernels (no scheduling, no compiling), as jax.jit's second call is
  import tinygrad.codegen as codegen
  import tinygrad.tensor as tensor
  counts = {"compile": 0, "schedule": 0}
  def counting(name, fn):
    def wrapped(*a, **k):
      counts[name] += 1
      return fn(*a, **k)
    return wrapped
  monkeypatch.setattr(codegen, "do_to_program", counting("compile", codegen.do_to_program))   # conftest compiles in-process
  import tinyjax._tg.patches as tgp   # (and a unit's BLAS calls and plain C kernels, made without do_to_program)
  def direct(*a, _f=tgp._direct_program):
    if (p := _f(*a)) is not None: counts["compile"] += 1
    return p
  monkeypatch.setattr(tgp, "_direct_program", direct)
  monkeypatch.setattr(tensor, "create_linear_with_vars", counting("schedule", tensor.create_linear_with_vars))
  import tinyjax._tg.compile as tgc
  monkeypatch.setattr(tgc, "_program_table", lambda renderer: None)   # (an earlier run's programs on disk: not generated here)
  r = np.random.default_rng(12)   # its own data: the float32 tolerance below holds for it whichever tests ran before
  W, X = fresh(r.standard_normal((13, 11)).astype(np.float32)), fresh(r.standard_normal((5, 13)).astype(np.float32))
  # a constant and shapes no other test uses: its kernels are new to this process (the product's kernel holds no
  # constant since the tanh's epilogue is a kernel of its own: with common shapes, another test could compile it first)
  f = tinyjax.jit(tinyjax.vmap(tinyjax.grad(lambda w, x: ((x @ w).tanh() * 1.2345678).sum()), in_axes=(None, 0)))
  seen = []
  for _ in range(3):
    counts.update(compile=0, schedule=0)
    out = f(W, X).numpy()
    seen.append(dict(counts))
  entry, = f._cache.values()
  assert seen == [{"compile": len(f.kernels(W, X)), "schedule": 1}, {"compile": 0, "schedule": 0}, {"compile": 0, "schedule": 0}]
  assert entry.replay is not None
  want = jax.vmap(jax.grad(lambda w, x: (jnp.tanh(x @ w) * 1.2345678).sum()), in_axes=(None, 0))(W.numpy(), X.numpy())
  np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_the_function_runs_once_per_signature_as_in_jax():
  # JAX traces once: a side effect in the function happens at the first call of each signature, never at a replay
  runs = []
  def f(x, y):
    runs.append(x.shape)
    return (x * y + 1).sum()
  jf = tinyjax.jit(f)
  x = Tensor(np.arange(3.0))
  got = [jf(x, 2.0).item(), jf(x, 3.0).item(), jf(Tensor(np.arange(4.0)), 2.0).item(), jf(x, 2.0).item()]
  np.testing.assert_allclose(got, [9.0, 12.0, 16.0, 9.0])
  assert runs == [(3,), (4,)]

def test_weakly_typed_results_stay_weak_and_keep_the_signature_as_in_jax():
  """A result computed from Python scalars only is weakly typed, as JAX's: it promotes as a Python scalar (to float32
  next to a float32 array), and passed back (a time `t = t + h` carried through a jitted step) it has the signature
  the Python float had, so the function is traced once. Through checkpoint too (research_kursiv_etdrk4: jit(remat))."""
  def step(t, v): return t + 0.25, v * 2
  seen = {}
  for lib, np_ in ((tinyjax, tinyjax.numpy), (jax, jnp)):
    runs = []
    def counted(t, v, runs=runs): return runs.append(1) or step(t, v)
    for k, f in enumerate((lib.jit(counted), lib.jit(lib.checkpoint(counted)))):
      runs.clear()
      t, v = 0.0, np_.ones(2, np_.float32)
      for _ in range(4): t, v = f(t, v)
      n = lib.jit(lambda n: n + 1)(2)
      seen[lib.__name__, k] = (len(runs), float(t), np.asarray(v).tolist(), np.asarray(t).dtype, np.asarray(n).dtype,
                               (np_.ones(3, np_.float32) + t).dtype, (np_.ones(3, np_.int8) + n).dtype)
  for k in (0, 1): assert seen["tinyjax", k] == seen["jax", k] == (1, 1.0, [16.0, 16.0], *seen["jax", k][3:5], np.float32, np.int8)
  both = [lib.jit(lambda x, y: (x * 2, y + 1.5, (x, 3.0))).trace(1.0, np.ones(2, np.float32)).out_info for lib in (tinyjax, jax)]
  assert [o.weak_type for o in tinyjax.tree_util.tree_leaves(both[0])] == [o.weak_type for o in jax.tree_util.tree_leaves(both[1])]


def test_weakly_typed_results_are_never_overwritten_by_later_calls():
  # a weak result is a weakly typed view of a pooled output buffer: the buffer goes back to the pool only when neither
  # the result nor anything made from it (a cast to its own dtype, a lazy graph) is alive
  jf = tinyjax.jit(lambda t: t * 2.0)
  kept = jf(1.0)
  as_strong = jf(2.0).astype(tinyjax.numpy.float32)
  lazy = jf(3.0) + 1
  for i in range(6): jf(100.0 + i)
  assert (kept.item(), as_strong.item(), lazy.item()) == (2.0, 4.0, 7.0)
  seen = {np.asarray(jf(float(i))).item() for i in range(6)}
  assert seen == {0.0, 2.0, 4.0, 6.0, 8.0, 10.0}


def test_reading_constants_and_closed_over_arrays_under_jit():
  # a value that depends on no argument reads as its numbers under jit (JAX stages it and raises instead: tinyjax is
  # more permissive here, never wrong). jit's trace realizes no side effect (an assign, a host call); a value without
  # one is computed: it used to read as zeros
  w = Tensor(np.arange(3.0, dtype=np.float32)).realize()
  seen = []
  def f(x):
    seen.append((np.asarray(tinyjax.numpy.arange(4.0) * 2), np.asarray(w * 3), (tinyjax.numpy.arange(5).sum()).item()))
    return x * 2
  tinyjax.jit(f)(Tensor(np.ones(2, np.float32)))
  (a, b, c), = seen
  np.testing.assert_array_equal(a, np.arange(4.0) * 2)
  np.testing.assert_array_equal(b, np.arange(3.0) * 3)
  assert c == 10

def test_reading_a_value_that_writes_state_under_jit_raises():
  # computing it in jit's trace would write into the Tensor for real, where the trace puts its graph back
  t = Tensor([0.0]).realize()
  def f(x):
    t.assign(t + 1)
    return x * t.item()
  with pytest.raises(tinyjax.errors.ConcretizationTypeError, match=r"\.item\(\) was called on a Tensor of shape \(1,\)"):
    tinyjax.jit(f)(Tensor([1.0]))
  assert t.item() == 0.0

def test_functions_with_loops_and_lapack_under_jit():
  # a static fori_loop (a scan over a constant arange), a while_loop and LAPACK's solve. A constant argument of a host
  # call is computed when the node is built: in jit's trace, whose realizes did nothing, that read an unwritten buffer,
  # and the fori_loop's counter was all zeros (0.9**5 for the first value below). A function holding host calls still
  # runs twice on its first call (the trace, then the capture: see _Entry)
  def mk(np_, lax, runs):
    def f(x, a, n):
      runs.append(n)
      y = lax.fori_loop(0, n, lambda i, c: c * x + np_.sin(i * c), x)
      z = lax.while_loop(lambda c: c < 10 * x, lambda c: c * 2 + 1, x)
      return y + z + np_.linalg.solve(a, np_.ones(3)).sum()
    return f
  runs: list = []
  jf = tinyjax.jit(mk(tinyjax.numpy, tinyjax.lax, runs), static_argnums=2)
  a = np.array([[3.0, 1, 0], [1, 4, 1], [0, 1, 5]], np.float32)
  got = [jf(Tensor(np.array(x, np.float32)), Tensor(a), n).item() for x, n in ((0.9, 4), (0.5, 4), (0.9, 5), (0.7, 4))]
  jx = mk(jnp, jax.lax, [])
  np.testing.assert_allclose(got, [jx(np.float32(x), a, n) for x, n in ((0.9, 4), (0.5, 4), (0.9, 5), (0.7, 4))], rtol=1e-6)
  assert runs == [4, 4, 5, 5]


def test_the_traces_belong_to_the_function():
  # jit(f) made twice of the same f shares its traces (JAX's cache is keyed on the function, weakly); other static
  # arguments are other traces; the function and its traces can be collected
  runs = []
  def f(x):
    runs.append(1)
    return x * 2
  x = Tensor(np.ones(3))
  tinyjax.jit(f)(x).numpy()
  np.testing.assert_array_equal(tinyjax.jit(f)(x).numpy(), 2 * np.ones(3))
  assert len(runs) == 1
  g = lambda x, n: x * n   # noqa: E731
  np.testing.assert_array_equal(tinyjax.jit(g, static_argnums=1)(x, 3).numpy(), 3 * np.ones(3))
  np.testing.assert_array_equal(tinyjax.jit(g)(x, 3).numpy(), 3 * np.ones(3))   # n traced: another cache
  ref = weakref.ref(f)
  del f
  gc.collect()
  assert ref() is None


def test_a_changed_global_is_not_seen_by_a_second_jit_of_the_function():
  # JAX's "pure functions" gotcha: the second jit(f) of the same f replays the first trace
  g = {"k": 10.0}
  def f(x): return x + g["k"]
  x = Tensor(np.zeros(2))
  first = tinyjax.jit(f)(x).numpy()
  g["k"] = 20.0
  np.testing.assert_array_equal(tinyjax.jit(f)(x).numpy(), first)
  np.testing.assert_array_equal(tinyjax.jit(f)(Tensor(np.zeros(3))).numpy(), 20.0 * np.ones(3))   # a new signature traces


def test_aot_stages_as_jax():
  # jit(f).trace(...).lower().compile(): out_info, the compiled call without its static arguments, JAX's TypeErrors
  def f(x, n, scale=1.0): return {"y": x * n * scale, "s": (x * n).sum()}
  x = np.arange(3, dtype=np.float32)
  tj, jj = tinyjax.jit(f, static_argnums=1), jax.jit(f, static_argnums=1)
  info_t, info_j = tj.trace(Tensor(x), 2).out_info, jj.trace(jnp.asarray(x), 2).out_info
  assert {k: (v.shape, str(np.dtype(tinyjax.numpy.dtype(v.dtype)))) for k, v in info_t.items()} == \
         {k: (v.shape, str(v.dtype)) for k, v in info_j.items()}
  assert tj.eval_shape(Tensor(x), 2)["s"].shape == ()
  ct, cj = tj.lower(Tensor(x), 2).compile(), jj.lower(jnp.asarray(x), 2).compile()
  for k in ("y", "s"): np.testing.assert_allclose(ct(Tensor(x))[k].numpy(), np.asarray(cj(jnp.asarray(x))[k]))
  assert ct.as_text() == "\n".join(tj.kernels(Tensor(x), 2))   # the kernels a call replays
  assert "mul a 2.0" in tj.lower(Tensor(x), 2).as_text()        # the traced graph, as make_jaxpr shows it
  for call_t, call_j in ((lambda c: c(Tensor(np.ones(4, np.float32))), lambda c: c(jnp.ones(4))),
                         (lambda c: c(Tensor(x), 2), lambda c: c(jnp.asarray(x), 2))):
    with pytest.raises(TypeError) as ej: call_j(cj)
    with pytest.raises(TypeError) as et: call_t(ct)
    assert str(et.value).split(":")[0] in str(ej.value) or str(et.value)[:40] == str(ej.value)[:40]


def test_a_mutated_static_argument_finds_its_entry_as_in_jax():
  # JAX compares static arguments by equality as they are now: after `c.mul = False` (its hash changed) c, and an
  # equal new object, still find the entry c made (the stale value of JAX's "broken" example)
  def run(lib):
    class C:
      def __init__(self, x, mul): self.x, self.mul = x, mul
      @partial(lib.jit, static_argnums=0)
      def calc(self, y): return self.x * y if self.mul else y
      def __hash__(self): return hash((self.x, self.mul))
      def __eq__(self, o): return isinstance(o, C) and (self.x, self.mul) == (o.x, o.mul)
    c = C(2, True)
    out = [c.calc(3)]
    c.mul = False
    out += [c.calc(3), C(2, False).calc(3), C(2, True).calc(3), C(5, False).calc(3)]
    return [float(np.asarray(o)) for o in out]
  assert run(tinyjax) == run(jax) == [6.0, 6.0, 6.0, 6.0, 3.0]


def test_a_lazy_argument_is_computed_once_not_at_every_call():
  # JAX's arrays are values: a lazy Tensor passed to a jitted function is computed as itself, once. It used to be
  # passed as a new Tensor over its graph and computed again at every call (121x JAX in a port's training loop)
  xs = tinyjax.random.normal(tinyjax.random.PRNGKey(0), (64,))
  ys = xs * 3 + 1
  f = tinyjax.jit(lambda w, x, y: ((w * x - y) ** 2).mean())
  w = Tensor(np.array(1.0, np.float32))
  first = f(w, xs, ys).item()
  assert kernel_count(lambda: f(w, xs, ys).realize()) == kernel_count(lambda: f(w, xs + 0, ys).realize()) - 1
  np.testing.assert_allclose(first, np.mean((xs.numpy() - ys.numpy()) ** 2), rtol=1e-6)


def test_a_function_defined_again_finds_the_kernels_captured_before(monkeypatch):
  # JAX's compilation cache finds an executable by its HLO; tinyjax finds a captured TinyJit by the traced graphs'
  # canonical key: the same code defined again (a re-run cell, a jit of a new closure) is not scheduled again. The key
  # holds the inputs by position, closed-over data by position and type (the capture found again reads this
  # function's buffers, as JAX passes a jaxpr's constants) and constants by value: other computations differ.
  import tinygrad.tensor as tensor
  tnp = tinyjax.numpy
  schedules = []
  monkeypatch.setattr(tensor, "create_linear_with_vars",
                      lambda *a, _f=tensor.create_linear_with_vars, **k: schedules.append(1) or _f(*a, **k))
  r = np.random.default_rng(3)
  a, b = r.standard_normal(5).astype(np.float32), r.standard_normal(5).astype(np.float32)
  c1, c2 = fresh(r.standard_normal(5).astype(np.float32)), fresh(r.standard_normal(5).astype(np.float32))
  def make(order, const, k):
    if order: return tinyjax.jit(lambda x, y: tnp.tanh(x - 2.75 * y) * k + const)
    return tinyjax.jit(lambda y, x: tnp.tanh(x - 2.75 * y) * k + const)
  cases = [(True, c1, 1.5), (True, c1, 1.5), (False, c1, 1.5), (True, c2, 1.5), (True, c1, 0.5), (True, c2, 1.5)]
  scheduled = []
  for order, const, k in cases:
    fn, x, y = make(order, const, k), Tensor(a), Tensor(b)
    tinyjax.core.realize_pending()   # what other tests left pending: a first call computes it (as a transform does)
    schedules.clear()
    out = fn(x, y).numpy()
    x, y = (a, b) if order else (b, a)
    np.testing.assert_allclose(out, np.tanh(x - np.float32(2.75) * y) * np.float32(k) + const.numpy(), rtol=1e-6, atol=1e-6)
    scheduled.append(len(schedules))
  # the second, the fourth (other closed-over data) and the last are the first defined again: replayed, not scheduled
  assert scheduled[1] == scheduled[3] == scheduled[5] == 0 and all(n > 0 for i, n in enumerate(scheduled) if i not in (1, 3, 5)), scheduled


def test_a_pending_value_left_lazy_is_not_tried_again_at_every_first_call(monkeypatch):
  # a first call computes the values pending in the process (as a transform does); one it leaves lazy (an assign into
  # a buffer with no data yet, a graph a failed call left behind) is not sent to tinygrad's scheduler again at every
  # first call: in the full suite such leftovers of other tests were scheduled again in each (counted as its own)
  from tinygrad import dtypes
  left = Tensor.empty(4, 3, dtype=dtypes.float32).assign(Tensor(np.ones((4, 3), np.float32)) * 2)
  tried = []
  monkeypatch.setattr(tinyjax.core._tg, "realize_lazy", lambda ts, *a, _f=tinyjax.core._tg.realize_lazy, **k: tried.append(
    sum(t is left for t in ts)) or _f(ts, *a, **k))
  x = fresh(np.arange(3, dtype=np.float32))
  for k in range(3): np.testing.assert_array_equal(tinyjax.jit(lambda a, k=k: a + k)(x).numpy(), np.arange(3) + k)
  assert sum(tried) == 1 and tinyjax._tg.is_lazy(left), tried
  np.testing.assert_array_equal(left.numpy(), np.full((4, 3), 2, np.float32))   # computed when read


def test_functions_with_host_calls_defined_again_share_a_capture_only_if_they_compute_the_same(monkeypatch):
  # a loop or a callback is a host call, keyed by what its rule computes: the same loop defined again is replayed, a
  # callback of another Python function is not
  from tinygrad.engine.jit import TinyJit
  tnp = tinyjax.numpy
  schedules = []   # TinyJit captures
  cls = type(TinyJit(lambda: None))
  monkeypatch.setattr(cls, "__call__", lambda self, *a, _f=cls.__call__, **k: (self.captured is None and schedules.append(1)) or _f(self, *a, **k))
  x = np.linspace(-1, 1, 4).astype(np.float32)
  def loop(n): return tinyjax.jit(lambda v: tinyjax.lax.fori_loop(0, n, lambda i, c: tnp.sin(c) + 0.5, v))
  def callback(fn): return tinyjax.jit(lambda v: tinyjax.pure_callback(fn, jax.ShapeDtypeStruct((4,), np.float32), v) * 2)
  def want_loop(n):
    c = x
    for _ in range(n): c = np.sin(c) + np.float32(0.5)
    return c
  cases = [(loop(3), want_loop(3)), (loop(3), want_loop(3)), (loop(4), want_loop(4)),
           (callback(lambda v: v + 1), (x + 1) * 2), (callback(lambda v: v - 1), (x - 1) * 2)]
  scheduled = []
  for f, want in cases:
    schedules.clear()
    np.testing.assert_allclose(f(Tensor(x)).numpy(), want, rtol=1e-6)
    scheduled.append(len(schedules))
  assert scheduled[1] == 0 and all(n > 0 for i, n in enumerate(scheduled) if i != 1), scheduled


def test_the_shared_captures_keep_a_bounded_number_of_bytes_alive(monkeypatch):
  # a kept capture holds its intermediate and closed-over buffers: the cache keeps at most _CAPTURED_BYTES of them, so
  # with no room a function defined again is captured again (and gives the same numbers)
  import tinyjax.transforms.jit as jit_module
  from tinygrad.engine.jit import TinyJit
  captures = []
  cls = type(TinyJit(lambda: None))
  monkeypatch.setattr(cls, "__call__", lambda self, *a, _f=cls.__call__, **k: (self.captured is None and captures.append(1)) or _f(self, *a, **k))
  monkeypatch.setattr(jit_module, "_CAPTURED", {})
  x = np.linspace(0, 1, 6).astype(np.float32)
  c = fresh(np.full(6, 3.25, np.float32))   # closed-over data the capture holds
  for budget, want in ((0, [1, 1]), (1 << 20, [1, 0])):
    monkeypatch.setattr(jit_module, "_CAPTURED_BYTES", budget)
    got = []
    for _ in range(2):
      captures.clear()
      np.testing.assert_allclose(tinyjax.jit(lambda v: tinyjax.numpy.cos(v) * c - v)(Tensor(x)).numpy(), np.cos(x) * 3.25 - x, rtol=1e-6)
      got.append(len(captures))
    assert got == want
  assert sum(n for _, n, _ in jit_module._CAPTURED.values()) <= 1 << 20


def test_a_capture_found_again_reads_the_closed_over_data_of_its_own_function(monkeypatch):
  # a script run again computes its constants anew (the KS port's ETDRK4 coefficients): a function defined again over
  # other buffers of the same types finds the capture (closed-over data by position and type, as JAX passes a
  # jaxpr's constants) and replays its kernels reading the new function's buffers, also around a host call (an FFT)
  from tinygrad.engine.jit import TinyJit
  tnp = tinyjax.numpy
  captures = []
  cls = type(TinyJit(lambda: None))
  monkeypatch.setattr(cls, "__call__", lambda self, *a, _f=cls.__call__, **k: (self.captured is None and captures.append(1)) or _f(self, *a, **k))
  r = np.random.default_rng(11)
  x = r.standard_normal(8).astype(np.float32)
  def make(a, b):
    ta, tb = fresh(a), fresh(b)
    return tinyjax.jit(lambda v: tnp.fft.irfft(tnp.fft.rfft(v * ta) * 2.0, 8) - tb * v)
  got, fns = [], []
  for _ in range(3):
    a, b = r.standard_normal(8).astype(np.float32), r.standard_normal(8).astype(np.float32)
    captures.clear()
    fns.append(f := make(a, b))
    np.testing.assert_allclose(f(Tensor(x)).numpy(), np.fft.irfft(np.fft.rfft(x * a) * 2, 8) - b * x, rtol=1e-5, atol=1e-5)
    got.append(len(captures))
    np.testing.assert_allclose(f(Tensor(x + 1)).numpy(), np.fft.irfft(np.fft.rfft((x + 1) * a) * 2, 8) - b * (x + 1), rtol=1e-5, atol=1e-5)
  assert got == [1, 0, 0], got


def test_jit_computes_the_pending_values_it_closes_over_first():
  # JAX's arrays are values: a jitted function closing over one computed eagerly reads it; a lazy graph traced into
  # the capture would be computed again in every kernel that reads it, at every call. (Under checkpoint the value is
  # read inside the remat call's body, where the capture's own realize of the state it reads did not look: the KS port)
  from tinyjax._tg import is_lazy
  x = np.linspace(0, 1, 5).astype(np.float32)
  c = tinyjax.numpy.exp(fresh(x) * 3)
  assert is_lazy(c)
  f = tinyjax.jit(tinyjax.checkpoint(lambda v: v * c))
  np.testing.assert_allclose(f(Tensor(x)).numpy(), x * np.exp(3 * x), rtol=1e-6)
  assert not is_lazy(c) and c.uop.base.op is Ops.BUFFER


def test_outputs_that_share_work_compute_it_once():
  # tinygrad computes each assign's value whole: a jitted function returning y and y * 2 computed y's sin twice. The
  # second output's kernel reads the first's buffer (its source holds no sin polynomial); a repeated output is a copy
  tnp = tinyjax.numpy
  f = tinyjax.jit(lambda v: (y := tnp.sin(tnp.exp(v) * 3.0), y * 2.0, y))
  x = np.linspace(0, 1, 6).astype(np.float32)
  outs = f(Tensor(x))
  want = np.sin(np.exp(x) * 3)
  for o, w in zip(outs, (want, want * 2, want), strict=True): np.testing.assert_allclose(o.numpy(), w, rtol=1e-5, atol=1e-6)
  sources = [len(u.src[2].arg) for u in next(iter(f._cache.values())).tinyjit.captured.linear.toposort() if u.op is Ops.PROGRAM]
  assert len(sources) == 3 and max(sources[1:]) * 3 < sources[0], sources


def test_an_argument_that_is_the_buffer_the_function_closes_over():
  # TinyJit makes every read of an input's buffer an input slot: captured on f(c) of `lambda x: x * 2 + c`, the
  # closure's read of c became the argument's slot, and f(d) gave d * 3 (silently). JAX: d * 2 + c
  c, d = fresh(np.array([1.0, 2.0, 3.0], np.float32)), fresh(np.array([10.0, 20.0, 30.0], np.float32))
  cn, dn = c.numpy(), d.numpy()
  f = tinyjax.jit(lambda x: x * 2 + c)
  g = tinyjax.jit(lambda x: tinyjax.lax.fori_loop(0, 2, lambda i, v: v * 0.5 + c, x))   # a host call: the function runs again
  for x, xn in ((c, cn), (d, dn), (c, cn)):
    np.testing.assert_allclose(f(x).numpy(), xn * 2 + cn)
    np.testing.assert_allclose(g(x).numpy(), (xn * 0.5 + cn) * 0.5 + cn)


def test_the_buffers_a_capture_writes_are_tinygrads_written_uops():
  # _tg.runtime._written reads the memory plan's arena slices off directly (TinyJit's _written_uops asks each for its
  # contiguous view, ~0.3 ms a kernel): the same set, for outputs, intermediates in the arena and written state
  import tinyjax._tg.runtime as rt
  tnp = tinyjax.numpy
  state = fresh(np.zeros(3, np.float32))
  def stateful(x):
    state.assign(state + x)
    return tnp.tanh(tnp.tanh(x) * 2).sum() + state.sum()
  fns = [lambda x: x * 2, lambda x: tnp.tanh(tnp.tanh(x[:, None] * x[None]) @ x).sum() + (x * 2).sum(), stateful]
  for fn in fns:
    f = tinyjax.jit(fn)
    for _ in range(3): f(fresh(np.arange(3, dtype=np.float32)))
    captured = next(iter(f._cache.values())).tinyjit.captured
    assert rt._written(captured.linear) == captured._written_uops


def test_realize_of_a_result_is_not_scheduled(monkeypatch):
  # a jitted function's results are buffers: realize() returns at once, without the read checks and tinygrad's empty
  # realize (~15 us, as long as the replay); a lazy value and a traced one still go through them
  import tinyjax._tg.patches as patches
  checks = []
  monkeypatch.setattr(patches, "check_read", lambda *a, _f=patches.check_read: checks.append(1) or _f(*a))
  f = tinyjax.jit(lambda x: (x * 2 + 1, x.sum()))
  x = fresh(np.arange(6, dtype=np.float32).reshape(2, 3))
  for _ in range(3): a, s = f(x)
  checks.clear()
  assert a.realize() is a and s.realize(a) is s
  assert checks == []
  np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3) * 2 + 1)
  assert s.item() == 15.0
  lazy = a + 1   # a lazy value: computed
  assert lazy.realize() is lazy and not tinyjax._tg.is_lazy(lazy)
  with pytest.raises(tinyjax.errors.ConcretizationTypeError):
    tinyjax.grad(lambda x: x.sum().realize())(x)

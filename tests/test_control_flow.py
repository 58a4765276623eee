"""lax control flow (scan, fori_loop, while_loop, cond, switch, map, select, associative_scan) against JAX (x64), alone
and under vmap, jvp, grad, hessian and jit; JAX's errors; and what the loop design promises: the body is traced once
whatever the trip count, and a while_loop stops on data in a jitted function's replay."""
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor
import tinyjax
import tinyjax.numpy as tnp
from tinyjax import lax as tl
from conftest import tg, to_np, assert_close, ref

RNG = np.random.default_rng(0)
W, C0, XS = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal((6, 3))

def rnn(np_, lax, **kw):
  """A scan with a pytree carry (array, counter) and pytree ys, closing over w."""
  def loss(w, c0, xs):
    def f(carry, x):
      c, n = carry
      c = np_.tanh(c * w + x)
      return (c, n + 1), {"s": (c * c).sum(), "c": c}
    (c, n), ys = lax.scan(f, (c0, 0), xs, **kw)
    return (c * c).sum() + ys["s"].sum() + (ys["c"] * xs).sum() + n
  return loss

T, J = rnn(tnp, tl), rnn(jnp, jax.lax)
TR, JR = rnn(tnp, tl, reverse=True), rnn(jnp, jax.lax, reverse=True)


def test_scan_values_and_pytrees():
  def f(np_, lax):
    def g(c0, xs):
      (c, n), ys = lax.scan(lambda cr, x: ((cr[0] * 0.5 + x, cr[1] + 1), {"y": cr[0].sum(), "z": (x, None)}), (c0, 0), xs)
      c2, _ = lax.scan(lambda c, _: (c * 2, None), c0, None, length=3)
      c3, ys3 = lax.scan(lambda c, x: (c + x, c), c0, xs, reverse=True)
      return c, n, ys, c2, c3, ys3
    return g
  got, want = f(tnp, tl)(Tensor(C0), Tensor(XS)), ref(lambda: f(jnp, jax.lax)(C0, XS))
  assert_close(to_np(got), want)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_under_transforms(reverse):
  t, j = (TR, JR) if reverse else (T, J)
  Ws, X3 = RNG.standard_normal((4, 3)), RNG.standard_normal((6, 5, 3))
  got = (t(*tg((W, C0, XS))), tinyjax.grad(t, (0, 1, 2))(*tg((W, C0, XS))),
         tinyjax.jvp(t, tg((W, C0, XS)), tg((C0, W, XS)))[1],
         tinyjax.vmap(t, (0, None, None))(*tg((Ws, C0, XS))), tinyjax.vmap(t, (None, None, 1))(*tg((W, C0, X3))),
         tinyjax.vmap(tinyjax.grad(t), (0, None, None))(*tg((Ws, C0, XS))),
         tinyjax.grad(lambda w: tinyjax.vmap(t, (0, None, None))(w, *tg((C0, XS))).sum())(Tensor(Ws)))
  want = ref(lambda: (j(W, C0, XS), jax.grad(j, (0, 1, 2))(W, C0, XS), jax.jvp(j, (W, C0, XS), (C0, W, XS))[1],
                      jax.vmap(j, (0, None, None))(Ws, C0, XS), jax.vmap(j, (None, None, 1))(W, C0, X3),
                      jax.vmap(jax.grad(j), (0, None, None))(Ws, C0, XS),
                      jax.grad(lambda w: jax.vmap(j, (0, None, None))(w, C0, XS).sum())(Ws)))
  assert_close(to_np(got), want)


def test_scan_hessian_nested_scans_and_jit():
  def nested(np_, lax):
    def f(w, xs):   # a scan inside a scan, both closing over w
      def outer(c, x):
        inner, _ = lax.scan(lambda d, y: (np_.sin(d * w[0] + y), None), c, x * w[1])
        return inner, inner.sum()
      c, ys = lax.scan(outer, xs[0], xs)
      return (c * c).sum() + ys.sum()
    return f
  tn, jn = nested(tnp, tl), nested(jnp, jax.lax)
  jt = tinyjax.jit(tinyjax.grad(T))
  got = (tinyjax.hessian(T)(*tg((W, C0, XS))), tn(*tg((W[:2], XS))), tinyjax.grad(tn)(*tg((W[:2], XS))),
         [jt(Tensor(W + i), *tg((C0, XS))) for i in range(3)])
  want = ref(lambda: (jax.hessian(J)(W, C0, XS), jn(W[:2], XS), jax.grad(jn)(W[:2], XS), [jax.grad(J)(W + i, C0, XS) for i in range(3)]))
  assert_close(to_np(got), want)


def test_scan_traces_its_body_once_whatever_the_length():
  calls = []
  def f(c, x):
    calls.append(1)
    return c * 0.5 + x, c
  for n in (3, 300):
    calls.clear()
    c, ys = tl.scan(f, Tensor(np.ones(2)), Tensor(np.ones((n, 2))))
    assert len(calls) == 1
    assert_close(to_np((c, ys)), jax.lax.scan(lambda c, x: (c * 0.5 + x, c), np.ones(2), np.ones((n, 2))))


def test_fori_loop():
  def f(np_, lax):
    def g(x, n): return lax.fori_loop(0, n, lambda i, c: c * x + np_.sin(i * c), x)
    return g
  tf, jf = f(tnp, tl), f(jnp, jax.lax)
  jit_static = tinyjax.jit(tf, static_argnums=1)
  jit_traced = tinyjax.jit(tf)   # a traced trip count: a while_loop, as in JAX
  got = (tf(Tensor(0.9), 5), tinyjax.grad(tf)(Tensor(0.9), 5), jit_static(Tensor(0.9), 4), [jit_traced(Tensor(0.9), n) for n in (0, 3, 6)],
         tl.fori_loop(3, 1, lambda i, c: c + i, Tensor(1.0)))
  want = ref(lambda: (jf(0.9, 5), jax.grad(jf)(0.9, 5), jf(0.9, 4), [jf(0.9, n) for n in (0, 3, 6)],
                      jax.lax.fori_loop(3, 1, lambda i, c: c + i, 1.0)))
  assert_close(to_np(got), want)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic"):
    tinyjax.jit(tinyjax.grad(tf))(Tensor(0.9), 3)


def newton_sqrt(np_, lax):
  def f(a):
    def cond(c): return np_.abs(c[0] * c[0] - a) > 1e-12 * a
    def body(c): return 0.5 * (c[0] + a / c[0]), c[1] + 1
    return lax.while_loop(cond, body, (a, 0))
  return f

def test_while_loop_vmap_jvp_jit():
  tf, jf = newton_sqrt(tnp, tl), newton_sqrt(jnp, jax.lax)
  A = np.array([2., 9., 100., 1e6])
  jitted = tinyjax.jit(tf)
  got = (tf(Tensor(7.0)), tinyjax.vmap(tf)(Tensor(A)),   # examples stop after different numbers of iterations
         tinyjax.jvp(lambda a: tf(a)[0], (Tensor(7.0),), (Tensor(1.0),)),
         [jitted(Tensor(v)) for v in (7.0, 1e6, 4.0)])   # one trace, three trip counts: the stop is read in the replay
  want = ref(lambda: (jf(7.0), jax.vmap(jf)(A), jax.jvp(lambda a: jf(a)[0], (7.0,), (1.0,)), [jf(v) for v in (7.0, 1e6, 4.0)]))
  assert_close(to_np(got), want)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"):
    tinyjax.grad(lambda a: tf(a)[0])(Tensor(7.0))


def branches(np_, lax):
  # y is closed over by the true branch: its gradient flows through the node's hidden argument
  def c(x, y): return lax.cond(x > 0, lambda a: np_.sqrt(a) * y, lambda a: a * 0. + 1.5, x)
  def s(i, x): return lax.switch(i, [lambda x: x * 2, lambda x: np_.sin(x), lambda x: x ** 3], x)
  return c, s

def test_cond_and_switch():
  (tc, ts), (jc, js) = branches(tnp, tl), branches(jnp, jax.lax)
  X, I = np.array([2., -1., 0.5, -3.]), np.array([0, 1, 2, 7])
  jc_jit = tinyjax.jit(tc)
  # at x = 0 only the false branch runs: the true branch's sqrt'(0) = inf never meets the gradient (JAX's numbers)
  got = ([tc(Tensor(x), Tensor(3.)) for x in (2., -1., 0.)], [tinyjax.grad(tc, (0, 1))(Tensor(x), Tensor(3.)) for x in (2., 0.)],
         tinyjax.jvp(tc, tg((2., 3.)), tg((1., 2.)))[1], tinyjax.vmap(tc, (0, None))(Tensor(X), Tensor(3.)),
         tinyjax.vmap(tc, (None, 0))(Tensor(2.), Tensor(X)), [jc_jit(Tensor(x), Tensor(3.)) for x in (2., -1.)],
         [ts(Tensor(i), Tensor(0.7)) for i in (-1, 0, 1, 2, 5)], tinyjax.vmap(ts)(Tensor(I), Tensor(X)),
         tinyjax.grad(lambda x: tinyjax.vmap(ts)(Tensor(I), x).sum())(Tensor(X)))
  want = ref(lambda: ([jc(x, 3.) for x in (2., -1., 0.)], [jax.grad(jc, (0, 1))(x, 3.) for x in (2., 0.)],
                      jax.jvp(jc, (2., 3.), (1., 2.))[1], jax.vmap(jc, (0, None))(X, 3.), jax.vmap(jc, (None, 0))(2., X),
                      [jc(x, 3.) for x in (2., -1.)], [js(i, 0.7) for i in (-1, 0, 1, 2, 5)], jax.vmap(js)(I, X),
                      jax.grad(lambda x: jax.vmap(js)(I, x).sum())(X)))
  assert_close(to_np(got), want)


def test_map_select_associative_scan():
  X = RNG.standard_normal((7, 3))
  def f(np_, lax):
    return (lax.map(lambda x: np_.sin(x).sum(), X), lax.map(lambda x: x * 2, X, batch_size=3),
            lax.select(X > 0, X, -X), lax.associative_scan(lambda a, b: a + b, X),
            lax.associative_scan(lambda a, b: a * b, X, reverse=True, axis=1),
            lax.associative_scan(lambda a, b: (a[0] + b[0], np_.maximum(a[1], b[1])), (X, -X)))
  got = f(tnp, tl)
  want = ref(lambda: f(jnp, jax.lax))
  assert_close(to_np(got), want)


def test_weak_carries_and_operands_stay_weak():
  """A Python-float carry or branch operand is weakly typed inside the function and in the result, as in JAX: it takes
  a float16 array's dtype afterwards (it was float32). A weak init takes the dtype the body returns where JAX's
  promotion gives it (a weak int a float; a weak float not an int: JAX's error)."""
  x16 = np.ones(3, np.float16)
  cases = [
    lambda np_, lax: np_.asarray(x16) + lax.fori_loop(0, 3, lambda i, c: c * 2, 1.5),
    lambda np_, lax: np_.asarray(x16) + lax.scan(lambda c, x: (c + 1.0, c * 2), 0.5, None, length=3)[1],
    lambda np_, lax: np_.asarray(x16) + lax.while_loop(lambda c: c < 3, lambda c: c + 1.0, 0.5),
    lambda np_, lax: np_.asarray(x16) + lax.cond(True, lambda c: c + 1.0, lambda c: c, 0.5),
    lambda np_, lax: np_.asarray(x16) + lax.fori_loop(0, 3, lambda i, c: (c + np_.ones((), np_.float32)), 1.5),
    lambda np_, lax: lax.scan(lambda c, x: (c.astype(np_.float16), x), 1, np_.ones(3))[0],
  ]
  # a weak carry made strong by its body, which also meets a float16 value: traced again with a strong carry (the sum
  # is float64 there, not float16), as JAX
  x3 = np.full(3, 0.1, np.float16)
  cases.append(lambda np_, lax: lax.fori_loop(0, 2, lambda i, c: (c + np_.asarray(x3).sum()).astype(np_.float64), 0.1))
  for case in cases:
    got, want = case(tnp, tl), case(jnp, jax.lax)
    assert np.asarray(got).dtype == np.asarray(want).dtype, (np.asarray(got).dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-12)
  with pytest.raises(TypeError, match="must have equal types"):
    tl.scan(lambda c, x: (c.astype(tnp.int32), x), 1.0, tnp.ones(3))
  with pytest.raises(TypeError, match="must have equal types"):
    jax.lax.scan(lambda c, x: (c.astype(jnp.int32), x), 1.0, jnp.ones(3))
  for np_, lax in ((tnp, tl), (jnp, jax.lax)):   # a weak output and a strong one of another width: JAX's error
    with pytest.raises(TypeError, match="output of true_fun has type float64.. but the corresponding output of false_fun has type float32"):
      lax.cond(True, lambda c: c + 1.0, lambda c: np_.float32(c), 0.5)

def test_errors():
  one = Tensor(np.ones(3))
  with pytest.raises(TypeError, match="The input carry c has type float64\\[\\] but the corresponding output carry component has type int32\\[\\]"):
    tl.scan(lambda c, x: (c.cast("int32"), x), Tensor(1.0), one)
  with pytest.raises(TypeError, match="scan body function carry input and carry output must have the same pytree structure"):
    tl.scan(lambda c, x: ((c, c), x), Tensor(1.0), one)
  with pytest.raises(ValueError, match=r"scan got `length` argument of 4 which disagrees with leading axis sizes \[3\]"):
    tl.scan(lambda c, x: (c, x), Tensor(1.0), one, length=4)
  with pytest.raises(ValueError, match="scan got no values to scan over and `length` not provided"):
    tl.scan(lambda c, x: (c, x), Tensor(1.0), None)
  with pytest.raises(TypeError, match="cond branch outputs must have the same pytree structure"):
    tl.cond(True, lambda x: x, lambda x: (x, x), Tensor(1.0))
  with pytest.raises(TypeError, match="The output of true_fun has type float64\\[\\] but the corresponding output of false_fun has type int32\\[\\]"):
    tl.cond(True, lambda x: x, lambda x: x.cast("int32"), Tensor(1.0))
  with pytest.raises(TypeError, match="Pred must be a scalar"):
    tl.cond(one > 0, lambda x: x, lambda x: x, Tensor(1.0))
  with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
    tl.while_loop(lambda c: c, lambda c: c, Tensor(1.0))
  with pytest.raises(TypeError, match="Index type must be an integer, got 1.0 as float"):
    tl.switch(1., [lambda x: x], Tensor(1.0))
  with pytest.raises(NotImplementedError, match="tinyjax.sparsity: no sparsity rule for custom_call scan"):
    tinyjax.spjacobian(lambda x: tl.scan(lambda c, y: (c * y, c), x, one)[1].reshape(-1), Tensor(np.ones(3)))
  with pytest.raises(tinyjax.ConcretizationTypeError):   # a Python `if` on a traced carry, as in JAX
    tl.scan(lambda c, x: (c if c > 0 else -c, x), Tensor(1.0), one)


def test_loops_inside_custom_vjp_rules():
  """The fixed-point pattern of JAX's custom-derivatives notebook: a custom_vjp whose fwd and bwd run while_loops that
  close over the function's arguments (values of a vjp whose trace has ended when tinygrad calls the rule)."""
  def make(np_, lax, custom_vjp, vjp):
    def fixed_point(f, a, x0):
      return lax.while_loop(lambda c: np_.abs(c[0] - c[1]) > 1e-10, lambda c: (c[1], f(a, c[1])), (x0, f(a, x0)))[1]
    fp = custom_vjp(fixed_point, nondiff_argnums=(0,))
    def fwd(f, a, x0):
      x = fp(f, a, x0)
      return x, (a, x)
    def bwd(f, res, g):
      a, x = res
      _, vjp_a = vjp(lambda a: f(a, x), a)
      u = fp(lambda packed, u: packed[2] + vjp(lambda x: f(packed[0], x), packed[1])[1](u)[0], (a, x, g), g)
      return vjp_a(u)[0], x * 0
    fp.defvjp(fwd, bwd)
    return lambda a: fp(lambda a, x: 0.5 * (x + a / x), a, a)
  t = make(tnp, tl, tinyjax.custom_vjp, tinyjax.vjp)
  j = make(jnp, jax.lax, jax.custom_vjp, jax.vjp)
  got = [t(Tensor(2.0)), tinyjax.grad(t)(Tensor(2.0)), tinyjax.grad(tinyjax.grad(t))(Tensor(2.0)), tinyjax.grad(t)(Tensor(3.0))]
  assert_close(to_np(got), [j(2.0), jax.grad(j)(2.0), jax.grad(jax.grad(j))(2.0), jax.grad(j)(3.0)])


def test_loop_constant_arguments():
  """Arguments of a loop that are constant expressions when it is built (a carry made by Tensor.full, a closed-over
  arange) are no buffers to tinygrad (it folds a buffer of a constant back into the constant): lax.host_call leaves
  them out of the host call and its executor fills buffers with them, on the first and on later runs."""
  def f(np_, lax, full, arange):
    return lambda y: lax.scan(lambda c, x: (c * 0.5 + x * arange, c.sum()), full, y)
  ys = RNG.standard_normal((4, 3))
  want = jax.jit(f(jnp, jax.lax, jnp.full((3,), 2.0), jnp.arange(3.0)))(ys)
  for _ in range(2):
    got = f(tnp, tl, Tensor.full((3,), 2.0, dtype="float64"), Tensor.arange(3, dtype="float64"))(tg(ys))
    assert_close(to_np(got), to_np(want))
  jitted = tinyjax.jit(lambda y: f(tnp, tl, Tensor.full((3,), 2.0, dtype="float64"), Tensor.arange(3, dtype="float64"))(y))
  for _ in range(3): assert_close(to_np(jitted(tg(ys))), to_np(want))


def test_loop_arguments_that_become_constants():
  """A loop's argument that is a placeholder when the loop is built and a constant after (a custom rule inlined with a
  constant, under vmap) is folded by tinygrad's scheduler into a constant, which is not a buffer: _tg fills it."""
  @tinyjax.custom_jvp
  def h(a, x): return tl.while_loop(lambda s: (s[1] < 3).any(), lambda s: (s[0] + 1, s[1] + a + x), (a * 0, a * 0))[0]
  h.defjvp(lambda p, t: (h(*p), t[0]))
  X = np.array([[1., 2.], [0.5, 0.25]], np.float32)
  # (the carry's first part is weakly typed, as tinygrad's Tensor.full of a Python float: float64 with x64, as JAX's)
  assert_close(to_np(tinyjax.vmap(lambda x: h(Tensor.full((2,), 0.5), x))(Tensor(X))), np.array([[2., 2.], [4., 4.]], np.float64))
  assert_close(to_np(tinyjax.vmap(lambda x: h(Tensor.full((2,), 0.5), x * 0 + 1.0))(Tensor(X))), np.array([[2., 2.], [2., 2.]], np.float64))


def test_loop_under_a_rewritten_derivative_graph():
  # jvp rewrites abs (JAX's derivative at 0), so the primal and the tangent graphs each held a copy of the loop's host
  # call, both writing its fixed output buffers: realizing them together failed ("cycle detected in assign graph")
  def f(np_, lax):
    return lambda a: (lambda r: r @ r)(lax.scan(lambda x, _: (x * x + 0.1, None), a / np_.abs(a).sum(), None, length=3)[0])
  a, v = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))
  assert_close(tinyjax.jvp(f(tnp, tl), (tg(a),), (tg(v),)), lambda: jax.jvp(f(jnp, jax.lax), (a,), (v,)), 1e-9, 1e-11)


def test_a_view_of_a_closed_over_value_stays_in_the_body():
  # v @ A transposes A: as an input of its own, that view would be copied contiguous at every call (one more kernel) and
  # the body would read the copy's layout; the body takes A and views it itself. Kernels per call: the carry's initial
  # copy and 3 steps of one kernel, no copy of A
  from tinygrad import GlobalCounters
  A, y = RNG.standard_normal((8, 8)), RNG.standard_normal(8)
  f = tinyjax.jit(lambda y, A: tl.scan(lambda c, _: (tnp.tanh(c @ A), None), y, None, length=3)[0])
  g = jax.jit(lambda y, A: jax.lax.scan(lambda c, _: (jnp.tanh(c @ A), None), y, None, length=3)[0])
  f(tg(y), tg(A)).numpy()
  GlobalCounters.reset()
  assert_close(to_np(f(tg(y), tg(A))), np.asarray(g(y, A)))
  assert GlobalCounters.kernel_count == 4


@pytest.mark.parametrize("transform", ["value_and_grad", "grad"])
def test_reverse_mode_of_a_scan_runs_one_forward_pass(transform):
  # the vjp's forward pass saving the carries is the primal's too (call_rule.shared_forwards): two loops per call, a
  # forward and a reverse one, not the primal's forward, the vjp's forward and the reverse one
  from tinygrad.uop.ops import Ops
  A, y = RNG.standard_normal((8, 8)) / 3, RNG.standard_normal(8)
  def loss(np_, lax):
    return lambda y, A: (lax.scan(lambda c, _: (np_.tanh(c @ A), None), y, None, length=3)[0] ** 2).sum()
  f = tinyjax.jit(getattr(tinyjax, transform)(loss(tnp, tl), argnums=(0, 1)))
  want = getattr(jax, transform)(loss(jnp, jax.lax), argnums=(0, 1))(y, A)
  for _ in range(3): got = f(tg(y), tg(A))
  jax.tree_util.tree_map(lambda g, w: assert_close(to_np(g), np.asarray(w)), got, want, is_leaf=lambda t: isinstance(t, Tensor))
  entry = next(iter([*f._cache.values(), *f._plain.values()]))
  assert sum(u.op is Ops.CUSTOM_FUNCTION for u in entry.tinyjit.captured.linear.toposort()) == 2


def test_the_reverse_loop_reads_saved_residuals_instead_of_recomputing_the_step():
  # JAX's partial evaluation: what the reverse step reads of the forward step (here tanh's output) is saved by the
  # forward loop; the reverse loop's body computes no exp (tanh's) and the gradients are JAX's
  from tinygrad.uop.ops import Ops, UOp
  from tinyjax._tg import custom_rule_of
  from tinyjax.lax.control_flow.loops import Scan
  A, y = RNG.standard_normal((8, 8)) / 3, RNG.standard_normal(8)
  def loss(np_, lax):
    return lambda y, A: (lax.scan(lambda c, _: (np_.tanh(c @ A), None), y, None, length=3)[0] ** 2).sum()
  got = tinyjax.grad(loss(tnp, tl), argnums=(0, 1))(tg(y), tg(A))
  want = jax.grad(loss(jnp, jax.lax), argnums=(0, 1))(y, A)
  scans = {r.reverse: r for r in (custom_rule_of(u) for u in UOp.sink(*[g.uop for g in got]).toposort(enter_calls=False)) if isinstance(r, Scan)}
  for g, w in zip(got, want, strict=True): assert_close(to_np(g), np.asarray(w))
  def exps(r: Scan) -> int: return sum(u.op is Ops.EXP2 for u in UOp.sink(*r.body.outs).toposort())
  assert exps(scans[False]) > 0 and exps(scans[True]) == 0

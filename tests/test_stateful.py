"""Stateful functions: every value a call returns is the value it had where it was computed, and every state buffer is
what the call wrote, on the first, second and every later call; eagerly, under TinyJit and under tinyjax.jit.

tinygrad reads a buffer when a lazy value is realized, not when the value was built: a loss returned after the
optimizer's step was the loss of the updated parameters (tinygrad issue 17074), and tinyjax.jit's first call made it
so even where eager tinygrad did not (see docs/jit.md, "State"). The oracle is numpy in float64 (the step written out)
or a numpy loop; eager tinygrad and TinyJit are compared as well, since importing tinyjax fixes them too.
"""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, nn
from tinygrad.helpers import Context
import tinyjax

CALLS = (1, 2, 3, 10)   # the calls whose values are compared
rng = np.random.default_rng(0)
X = rng.standard_normal((6, 4)).astype(np.float32)
Y = rng.standard_normal((6, 2)).astype(np.float32)

def state_arrays(*objs) -> dict:
  """Every Tensor of the model and the optimizer (parameters, moments, step products, running statistics)."""
  return {f"{i}.{k}": v.numpy().copy() for i, o in enumerate(objs) for k, v in nn.state.get_state_dict(o).items()}

def wrapped(kind, step):
  """The step as each way of running it: eager, TinyJit (realizing what it returns), tinyjax.jit."""
  if kind == "eager": return step
  if kind == "TinyJit": return TinyJit(lambda *a: tuple(t.realize() for t in step(*a)))
  return tinyjax.jit(step)

# ---- the training step of the issue: an MLP with tinygrad's optimizers ----------------------------------------------

OPTIMIZERS = {"SGD": lambda p: nn.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
              "Adam": lambda p: nn.optim.Adam(p, lr=0.05),
              "AdamW": lambda p: nn.optim.AdamW(p, lr=0.05, weight_decay=0.1),
              "LAMB": lambda p: nn.optim.LAMB(p, lr=0.05)}

class MLP:
  def __init__(self):
    Tensor.manual_seed(3)   # lazily initialized: the first step reads the initialization graph
    self.l1, self.l2 = nn.Linear(4, 8), nn.Linear(8, 2)
  def __call__(self, x): return self.l2(self.l1(x).relu())

def numpy_training(kind: str, params: dict, calls: int) -> list[tuple]:
  """(loss, grad of l1.weight, params after) of each step, in float64: the MLP, its gradient and tinygrad's optimizer
  formulas (nn/optim.py: SGD is LARS without trust ratio, Adam/AdamW/LAMB are LAMB) written out."""
  p = {k: v.astype(np.float64) for k, v in params.items()}
  m, v, b = ({k: np.zeros_like(a) for k, a in p.items()} for _ in range(3))
  b1_t = b2_t = 1.0
  out = []
  for _ in range(calls):
    x, y = X.astype(np.float64), Y.astype(np.float64)
    z = x @ p["l1.weight"].T + p["l1.bias"]
    h = np.maximum(z, 0)
    r = h @ p["l2.weight"].T + p["l2.bias"] - y
    d = 2 * r / r.size
    dz = (d @ p["l2.weight"]) * (z > 0)
    g = {"l2.weight": d.T @ h, "l2.bias": d.sum(0), "l1.weight": dz.T @ x, "l1.bias": dz.sum(0)}
    b1_t, b2_t = b1_t * 0.9, b2_t * 0.999
    for k in p:
      if kind == "SGD":
        gk = g[k] + 0.01 * p[k]
        b[k] = 0.9 * b[k] + gk
        p[k] = p[k] - 0.1 * b[k]
        continue
      eps, wd = {"Adam": (1e-8, 0.0), "AdamW": (1e-8, 0.1), "LAMB": (1e-6, 0.0)}[kind]
      m[k] = 0.9 * m[k] + 0.1 * g[k]
      v[k] = 0.999 * v[k] + 0.001 * g[k] * g[k]
      up = (m[k] / (1 - b1_t)) / (np.sqrt(v[k] / (1 - b2_t)) + eps) + wd * p[k]
      trust = 1.0
      if kind == "LAMB" and (r1 := np.sqrt((p[k] ** 2).sum())) > 0 and (r2 := np.sqrt((up ** 2).sum())) > 0: trust = r1 / r2
      p[k] = p[k] - 0.05 * trust * up
    out.append(((r ** 2).mean(), g["l1.weight"], dict(p)))
  return out

@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_training_step_returns_the_loss_before_its_update(opt_name):
  # the canonical tinygrad step (zero_grad, backward, step; the optimizer realizes and assigns in place), returning the
  # loss and a gradient computed before the step: eager, TinyJit and tinyjax.jit give numpy's loss, gradient, weights
  # and optimizer state on calls 1, 2, 3 and 10. (This got past tests/test_jit.py's training-step tests, which compared
  # with eager tinygrad: it returned the loss of the updated weights from the second call on, and so did tinyjax.jit
  # from the first; one of them even asserted that order. Eager's first loss was right only because the lazy
  # initialization graph was still in it.)
  runs = {}
  for kind in ("eager", "TinyJit", "tinyjax"):
    model = MLP()
    opt = OPTIMIZERS[opt_name](nn.state.get_parameters(model))
    def step(x, y):
      with Context(TRAINING=1):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
      return loss, model.l1.weight.grad
    f, x, y = wrapped(kind, step), Tensor(X).realize(), Tensor(Y).realize()
    if kind == "eager": init = {k: t.numpy().copy() for k, t in nn.state.get_state_dict(model).items()}
    runs[kind] = []
    for i in range(1, CALLS[-1] + 1):
      loss, grad = f(x, y)
      # the state first: realizing it realizes the step, while the returned values may still be lazy (eager)
      state = state_arrays(model, opt)
      if i in CALLS: runs[kind].append((loss.numpy().item(), grad.numpy(), state))
  want = numpy_training(opt_name, init, CALLS[-1])
  for kind, got in runs.items():
    for (loss, grad, state), i in zip(got, CALLS, strict=True):
      wloss, wgrad, wparams = want[i - 1]
      np.testing.assert_allclose(loss, wloss, rtol=2e-5, err_msg=f"{kind}: loss of call {i}")
      np.testing.assert_allclose(grad, wgrad, rtol=2e-4, atol=1e-6, err_msg=f"{kind}: grad of call {i}")
      for k, w in wparams.items(): np.testing.assert_allclose(state[f"0.{k}"], w, rtol=2e-4, atol=1e-5, err_msg=f"{kind}: {k} after call {i}")
  for kind in ("TinyJit", "tinyjax"):   # the optimizer's own state (moments, step products) as eager's
    for (_, _, state), (_, _, ref), i in zip(runs[kind], runs["eager"], CALLS, strict=True):
      assert state.keys() == ref.keys()
      for k in ref: np.testing.assert_allclose(state[k], ref[k], rtol=1e-5, atol=1e-7, err_msg=f"{kind}: {k} after call {i}")


def test_batchnorm_model_in_training_mode():
  # BatchNorm's running statistics are assigned in the forward pass and realized by the optimizer's step; the output
  # returned is the one computed before the step, and the running statistics after each call are eager's and numpy's
  def run(kind):
    Tensor.manual_seed(1)
    l1, bn, l2 = nn.Linear(4, 8), nn.BatchNorm(8), nn.Linear(8, 2)
    opt = nn.optim.SGD(nn.state.get_parameters([l1, bn, l2]), lr=0.1)
    init = [t.numpy().astype(np.float64) for t in (l1.weight, l1.bias, l2.weight, l2.bias)]
    def step(x, y):
      with Context(TRAINING=1):
        opt.zero_grad()
        out = l2(bn(l1(x)).relu())
        loss = ((out - y) ** 2).mean()
        loss.backward()
        opt.step()
      return loss, out
    f, x, y = wrapped(kind, step), Tensor(X).realize(), Tensor(Y).realize()
    res = []
    for i in range(1, CALLS[-1] + 1):
      loss, out = f(x, y)
      state = state_arrays([l1, bn, l2])
      if i in CALLS: res.append((loss.numpy().item(), out.numpy(), state))
    return res, init
  runs = {kind: run(kind) for kind in ("eager", "TinyJit", "tinyjax")}
  for kind, (res, (w1, b1, w2, b2)) in runs.items():
    # the first call in numpy: batch statistics, BatchNorm's weight 1 and bias 0, the running mean 0.9 * 0 + 0.1 * mean
    z = X.astype(np.float64) @ w1.T + b1
    out = np.maximum((z - z.mean(0)) / np.sqrt(z.var(0) + 1e-5), 0) @ w2.T + b2
    np.testing.assert_allclose(res[0][1], out, rtol=1e-4, atol=1e-5, err_msg=kind)
    np.testing.assert_allclose(res[0][2]["0.1.running_mean"], 0.1 * z.mean(0), rtol=1e-5, atol=1e-7, err_msg=kind)
    for (loss, out, _), i in zip(res, CALLS, strict=True):
      np.testing.assert_allclose(loss, ((out - Y) ** 2).mean(), rtol=1e-5, err_msg=f"{kind}: call {i}")   # one forward pass
  for kind in ("TinyJit", "tinyjax"):
    for (loss, out, state), (rloss, rout, ref), i in zip(runs[kind][0], runs["eager"][0], CALLS, strict=True):
      np.testing.assert_allclose(loss, rloss, rtol=1e-5, err_msg=f"{kind}: loss of call {i}")
      np.testing.assert_allclose(out, rout, rtol=1e-5, atol=1e-6, err_msg=f"{kind}: output of call {i}")
      for k in ref: np.testing.assert_allclose(state[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=f"{kind}: {k} after call {i}")
  losses = [r[0] for r in runs["eager"][0]]
  assert losses[0] > losses[-1]   # it trains


# ---- a function that returns a value and then assigns to its input or to closed-over state -------------------------

WRITES = {
  "assign": lambda s, new: s.assign(new),
  "realize": lambda s, new: s.assign(new).realize(),   # realized inside the function, before its return
  "view": lambda s, new: s[:2].assign(new[:2]),         # a view assign: tinygrad makes every reader of s see it
}

# TinyJit replays only the writes realized inside the function (its contract): with "realize"
@pytest.mark.parametrize("kind,write", [(k, w) for k in ("eager", "tinyjax") for w in WRITES] + [("TinyJit", "realize")])
def test_value_returned_then_input_assigned(kind, write):
  # f(x, s) reads s, then writes into s: what it returns is computed from s before the write, on every call
  def f(x, s):
    y = (x * s).sum(0) + s.flip(0)   # reads the old s (a reduction and a reversed view of it)
    WRITES[write](s, s * 0.5 + x)
    return (y,)
  g = wrapped(kind, f)
  s = Tensor(np.arange(4.0)).contiguous().realize()
  ref = np.arange(4.0)
  for i in range(1, CALLS[-1] + 1):
    xv = np.full(4, float(i))
    (y,) = g(Tensor(xv).realize(), s)
    now = s.numpy().copy()   # the state first: eager's y is still lazy here
    want_y = (xv * ref).sum(0) + ref[::-1]
    ref = ref * 0.5 + xv if write != "view" else np.concatenate([(ref * 0.5 + xv)[:2], ref[2:]])
    if i in CALLS:
      np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-12, err_msg=f"call {i}")
      np.testing.assert_allclose(now, ref, rtol=1e-12, err_msg=f"state after call {i}")

@pytest.mark.parametrize("shape", [(), (3,)])
def test_closed_over_state_written_every_call(shape):
  # a jitted function with no array argument whose only effect is on closed-over state, and a 0-d state (which
  # tinygrad keeps as a constant without a buffer): the write happens on every call, not only on the first (tinygrad's
  # TinyJit drops a write the function leaves lazy; the fuzzer found both)
  S = Tensor(np.full(shape, 0.5)).contiguous().realize()
  def f():
    y = S.cos()
    S.assign(y * 2)
    return y
  g, ref = tinyjax.jit(f), np.full(shape, 0.5)
  for i in range(1, CALLS[-1] + 1):
    y = g()
    np.testing.assert_allclose(S.numpy(), 2 * np.cos(ref), rtol=1e-12, err_msg=f"state after call {i}")
    np.testing.assert_allclose(y.numpy(), np.cos(ref), rtol=1e-12, err_msg=f"call {i}")
    ref = 2 * np.cos(ref)
  counter = Tensor.zeros(2).contiguous().realize()
  h = tinyjax.jit(lambda x: (counter.assign(counter + x), None)[1])   # returns nothing
  for i in range(3): assert h(Tensor.ones(2).contiguous().realize()) is None
  np.testing.assert_array_equal(counter.numpy(), [3.0, 3.0])


def test_eager_readers_keep_their_value_and_views_see_the_write():
  # the rule (docs/jit.md, "State"): a value computed from a buffer keeps the data the buffer held when the value was
  # built; a view of the buffer (a reshape, a transpose) is the buffer, and sees the write
  x = Tensor(np.arange(4.0)).contiguous().realize()
  total, doubled, view = x.sum(), x * 2, x.reshape(2, 2)
  x.assign(x + 10).realize()
  assert total.numpy() == 6.0
  np.testing.assert_array_equal(doubled.numpy(), [0, 2, 4, 6])
  np.testing.assert_array_equal(view.numpy(), [[10, 11], [12, 13]])
  # a view assign: tinygrad rewrites every reader of x to read after it; those computed before keep their value
  x = Tensor(np.arange(4.0)).contiguous().realize()
  total, view = x.sum(), x.reshape(2, 2)
  x[:1].assign(Tensor(np.array([9.0])))
  np.testing.assert_array_equal(view.numpy(), [[9, 1], [2, 3]])
  assert total.numpy() == 6.0 and x.numpy().tolist() == [9, 1, 2, 3]

def test_tinygrad_backward_and_grads_read_after_the_step():
  # tinygrad's own backward keeps working, and p.grad read after opt.step() is the gradient the step used
  Tensor.manual_seed(0)
  w = Tensor(np.array([1.0, -2.0], dtype=np.float32)).realize()
  opt = nn.optim.SGD([w], lr=0.5)
  with Context(TRAINING=1):
    loss = (w * w).sum()
    loss.backward()
    opt.step()
  np.testing.assert_allclose(w.grad.numpy(), [2.0, -4.0])   # 2w at the old w
  np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
  assert loss.numpy() == 5.0


# ---- functional state: tinyjax.optim and functional_call(return_buffers=True) ----------------------------------------

def test_tinyjax_optim_steps_jitted_and_eager():
  # optax-shaped steps return new params and state (nothing is assigned): jitted and eager agree on calls 1, 2, 3, 10
  W0 = rng.standard_normal((4, 2)).astype(np.float32)
  def loss(p, x, y): return ((x @ p["w"] - y) ** 2).mean()
  tx = tinyjax.optim.adam(0.05)
  def step(p, st, x, y):
    l, g = tinyjax.value_and_grad(loss)(p, x, y)
    up, st = tx.update(g, st, p)
    return tinyjax.optim.apply_updates(p, up), st, l
  runs = {}
  for kind, f in (("eager", step), ("tinyjax", tinyjax.jit(step))):
    p = {"w": Tensor(W0).realize()}
    st, out = tx.init(p), []
    for i in range(1, CALLS[-1] + 1):
      p, st, l = f(p, st, Tensor(X).realize(), Tensor(Y).realize())
      if i in CALLS: out.append((l.numpy().item(), p["w"].numpy(), st.mu["w"].numpy()))
    runs[kind] = out
  for (l, pw, mu), (rl, rpw, rmu) in zip(runs["tinyjax"], runs["eager"], strict=True):
    # float32 kernels fused differently round differently; Adam's normalization carries it to ~2e-5 in 10 steps
    np.testing.assert_allclose(l, rl, rtol=1e-5)
    np.testing.assert_allclose(pw, rpw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mu, rmu, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(runs["eager"][0][0], ((X.astype(np.float64) @ W0 - Y) ** 2).mean(), rtol=1e-6)   # before any step

def test_functional_call_buffers_written_back_by_the_caller():
  # a BatchNorm model through functional_call(return_buffers=True) under jit; the caller writes the returned running
  # statistics back into the model after each call: the same outputs and statistics as eager, call after call
  def run(kind):
    Tensor.manual_seed(2)
    model = [nn.Linear(4, 3), nn.BatchNorm(3)]
    net = lambda x: model[1](model[0](x))   # noqa: E731
    class Net:
      def __init__(self): self.l, self.bn = model
      def __call__(self, x): return net(x)
    m = Net()
    params = tinyjax.nn.params(m)
    def fwd(p, x):
      with Context(TRAINING=1): return tinyjax.nn.functional_call(m, p, x, return_buffers=True)
    f = tinyjax.jit(fwd) if kind == "tinyjax" else fwd
    res = []
    for i in range(1, CALLS[-1] + 1):
      out, bufs = f(params, Tensor(X * i).realize())
      for k, v in bufs.items(): params[k].assign(v.cast(params[k].dtype))
      if i in CALLS: res.append((out.numpy(), params["bn.running_mean"].numpy().copy(), params["bn.running_var"].numpy().copy()))
    return res
  eager, jitted = run("eager"), run("tinyjax")
  for (o, rm, rv), (eo, erm, erv), i in zip(jitted, eager, CALLS, strict=True):
    np.testing.assert_allclose(o, eo, rtol=1e-5, atol=1e-6, err_msg=f"call {i}")
    np.testing.assert_allclose(rm, erm, rtol=1e-5, atol=1e-7, err_msg=f"running_mean after call {i}")
    np.testing.assert_allclose(rv, erv, rtol=1e-5, atol=1e-7, err_msg=f"running_var after call {i}")
  assert not np.allclose(eager[0][1], eager[1][1])   # the statistics move

def test_transform_of_a_function_that_assigns_raises_on_the_leaked_value():
  # under grad, a write of a traced value into outside state is a leaked tracer, as in JAX: the derivative is right and
  # reading the state raises, never garbage
  C = Tensor(np.zeros(2)).contiguous().realize()
  def f(x):
    y = (x * C).sum() + (x * x).sum()
    C.assign(C + x)
    return y
  np.testing.assert_allclose(tinyjax.grad(f)(Tensor([1.0, 2.0])).numpy(), [2.0, 4.0])
  with pytest.raises(tinyjax.errors.UnexpectedTracerError, match="escaped the transformed function"): C.numpy()

"""tinyjax.nn.params / functional_call / stack_params: tinygrad models (nn.Linear, nn.BatchNorm) under tinyjax's
transforms. Per-example gradients against per-example grads, jacrev and Hessian-vector products against JAX on the
same model written in jax.numpy, ensembles against separate calls, BatchNorm's running statistics against tinygrad's
own training step; the model keeps its own Tensors, untouched, after every call (also one that raises)."""
import numpy as np
import pytest
import jax
from tinygrad import Tensor, nn
from tinygrad.helpers import Context
from tinygrad.nn.state import get_state_dict
import tinyjax
from tinyjax.core import traced_by
from tinyjax.nn import params, functional_call, stack_params
from conftest import assert_close, rnd

class MLP:
  """nn.Linear(4, 8), relu, nn.Linear(8, 2) with fixed numpy weights."""
  def __init__(self, seed: int = 0, dtype=np.float32, hidden: int = 8):
    r = np.random.default_rng(seed)
    self.l1, self.l2 = nn.Linear(4, hidden), nn.Linear(hidden, 2)
    for layer in (self.l1, self.l2):
      layer.weight = Tensor(r.standard_normal(layer.weight.shape).astype(dtype))
      layer.bias = Tensor((r.standard_normal(layer.bias.shape) * 0.5).astype(dtype))
  def __call__(self, x: Tensor) -> Tensor: return self.l2(self.l1(x).relu())

def mse(out: Tensor, y: Tensor) -> Tensor: return ((out - y) ** 2).sum()

def jax_mlp(p: dict, x):
  h = jax.nn.relu(x @ p["l1.weight"].T + p["l1.bias"])
  return h @ p["l2.weight"].T + p["l2.bias"]

def numbers(p: dict) -> dict: return {k: v.numpy() for k, v in p.items()}

X32, Y32 = rnd(5, 4, seed=1).astype(np.float32), rnd(5, 2, seed=2).astype(np.float32)
X64, Y64 = rnd(5, 4, seed=1), rnd(5, 2, seed=2)

def test_params_names():
  m = MLP()
  p = params(m)
  assert list(p) == list(get_state_dict(m)) == ["l1.weight", "l1.bias", "l2.weight", "l2.bias"]
  assert all(p[k] is v for k, v in get_state_dict(m).items())   # the model's own Tensors
  assert_close(functional_call(m, p, Tensor(X32)), m(Tensor(X32)).numpy(), rtol=0, atol=0)

def test_per_example_grads():
  m = MLP()
  p = params(m)
  Tensor.realize(*p.values())
  before = {k: (v, v.uop) for k, v in p.items()}
  want = m(Tensor(X32)).numpy()
  def loss(p, x, y): return mse(functional_call(m, p, x), y)
  per_example = tinyjax.vmap(tinyjax.grad(loss), in_axes=(None, 0, 0))
  got = numbers(per_example(p, Tensor(X32), Tensor(Y32)))
  jitted = tinyjax.jit(per_example)
  for _ in range(2):   # trace, replay
    for k, g in numbers(jitted(p, Tensor(X32), Tensor(Y32))).items(): np.testing.assert_allclose(g, got[k], rtol=1e-6, atol=1e-7)
  for i in range(len(X32)):   # one example at a time, by tinygrad's own backward on the model itself (it fills .grad)
    mse(m(Tensor(X32[i])), Tensor(Y32[i])).backward()
    for k, v in p.items():
      assert v.grad is not None
      np.testing.assert_allclose(got[k][i], v.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{k}[{i}]")
      v.grad = None
  # the model is unchanged: the same Tensor objects with the same graphs, the same numbers
  assert all(get_state_dict(m)[k] is t and t.uop is u for k, (t, u) in before.items())
  np.testing.assert_array_equal(m(Tensor(X32)).numpy(), want)

class Boom:
  """A model whose call raises after it has used its (swapped) weights."""
  def __init__(self): self.mlp = MLP()
  def __call__(self, x: Tensor) -> Tensor:
    self.mlp(x)
    raise ValueError("boom")

def test_restored_after_exception():
  b = Boom()
  own = dict(get_state_dict(b))
  want = b.mlp(Tensor(X32)).numpy()
  new = {k: Tensor(np.zeros(v.shape, np.float32)) for k, v in own.items()}
  with pytest.raises(ValueError, match="boom"): functional_call(b, new, Tensor(X32))
  with pytest.raises(ValueError, match="boom"):   # raised inside a transform: the model holds no traced value after
    tinyjax.grad(lambda p: functional_call(b, p, Tensor(X32)).sum())(params(b))
  after = get_state_dict(b)
  assert all(after[k] is v for k, v in own.items()) and all(traced_by(v) is None for v in after.values())
  np.testing.assert_array_equal(b.mlp(Tensor(X32)).numpy(), want)

class Containers:
  """Tensors in a list of layers and directly in a tuple: get_state_dict's "layers.0.weight" and "scale.1" names."""
  def __init__(self):
    self.layers = [nn.Linear(3, 3), nn.Linear(3, 2)]
    for i, layer in enumerate(self.layers):
      layer.weight, layer.bias = Tensor(rnd(*layer.weight.shape, seed=i)), Tensor(rnd(*layer.bias.shape, seed=10 + i))
    self.scale = (Tensor(rnd(3, seed=20)), Tensor(rnd(2, seed=21)))
  def __call__(self, x: Tensor) -> Tensor: return self.layers[1](self.layers[0](x) * self.scale[0]) * self.scale[1]

def test_list_and_tuple_names():
  m = Containers()
  scale, x = m.scale, rnd(4, 3, seed=3)
  assert list(params(m)) == list(get_state_dict(m)) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                                                        "scale.0", "scale.1"]
  p = {"layers.1.weight": rnd(2, 3, seed=4), "scale.1": rnd(2, seed=5)}
  got = functional_call(m, {k: Tensor(v) for k, v in p.items()}, Tensor(x))
  h = (x @ m.layers[0].weight.numpy().T + m.layers[0].bias.numpy()) * scale[0].numpy()
  assert_close(got, (h @ p["layers.1.weight"].T + m.layers[1].bias.numpy()) * p["scale.1"])
  assert m.scale is scale   # the original tuple object is back
  # every name at once, under grad: d/dscale.1 of sum(out) is the output of the layer before it
  g = tinyjax.grad(lambda p: functional_call(m, p, Tensor(x)).sum())(params(m))
  assert_close(g["scale.1"], (h @ m.layers[1].weight.numpy().T + m.layers[1].bias.numpy()).sum(0))

def test_jacrev_against_jax():
  m = MLP(dtype=np.float64)
  p = params(m)
  got = tinyjax.jacrev(lambda p: functional_call(m, p, Tensor(X64)))(p)
  pn = numbers(p)
  assert_close(got, lambda: jax.jacrev(jax_mlp)(pn, X64))

def test_hvp_against_jax():
  m = MLP(dtype=np.float64)
  p = params(m)
  v = {k: rnd(*t.shape, seed=30 + i) for i, (k, t) in enumerate(p.items())}
  def loss(p): return mse(functional_call(m, p, Tensor(X64)), Tensor(Y64))
  g, hv = tinyjax.jvp(tinyjax.grad(loss), (p,), ({k: Tensor(a) for k, a in v.items()},))
  pn = numbers(p)
  def jloss(p): return ((jax_mlp(p, X64) - Y64) ** 2).sum()
  assert_close((g, hv), lambda: jax.jvp(jax.grad(jloss), (pn,), (v,)))

def test_ensemble():
  models = [MLP(seed=s) for s in range(4)]
  stacked = stack_params(models)
  assert {k: tuple(v.shape) for k, v in stacked.items()} == {"l1.weight": (4, 8, 4), "l1.bias": (4, 8), "l2.weight": (4, 2, 8),
                                                             "l2.bias": (4, 2)}
  base, x = models[0], Tensor(X32)
  def ensemble(p, x): return tinyjax.vmap(lambda p, x: functional_call(base, p, x), in_axes=(0, None))(p, x)
  want = np.stack([m(x).numpy() for m in models])
  np.testing.assert_allclose(ensemble(stacked, x).numpy(), want, rtol=1e-5, atol=1e-6)
  jitted = tinyjax.jit(ensemble)
  for _ in range(2): np.testing.assert_allclose(jitted(stacked, x).numpy(), want, rtol=1e-5, atol=1e-6)   # trace, replay
  one = tinyjax.jit(lambda p, x: functional_call(base, p, x))
  np.testing.assert_allclose(one(params(models[1]), x).numpy(), want[1], rtol=1e-5, atol=1e-6)
  assert len(jitted.kernels(stacked, x)) == len(one.kernels(params(models[1]), x))
  assert all(get_state_dict(base)[k] is v for k, v in params(models[0]).items())

class BNNet:
  """nn.Linear(4, 3) then nn.BatchNorm(3), with fixed weights."""
  def __init__(self):
    self.l1, self.bn = nn.Linear(4, 3), nn.BatchNorm(3)
    self.l1.weight, self.l1.bias = Tensor(rnd(3, 4, seed=40).astype(np.float32)), Tensor(rnd(3, seed=41).astype(np.float32))
    self.bn.weight, self.bn.bias = Tensor(rnd(3, seed=42).astype(np.float32)), Tensor(rnd(3, seed=43).astype(np.float32))
  def __call__(self, x: Tensor) -> Tensor: return self.bn(self.l1(x))

BUFFERS = ["bn.num_batches_tracked", "bn.running_mean", "bn.running_var"]

def test_batchnorm_buffers():
  m, ref = BNNet(), BNNet()
  own = dict(get_state_dict(m))
  x = Tensor(X32)
  with Context(TRAINING=1):   # tinygrad's training mode: BatchNorm assigns its running statistics
    ref_out = ref(x)
    ref_out.sum().backward()
    want = {"out": ref_out.numpy(), **{k: get_state_dict(ref)[k].numpy() for k in BUFFERS},
            **{k: t.grad.numpy() for k, t in params(ref).items() if t.grad is not None}}
    out, new = functional_call(m, params(m), x, return_buffers=True)
    assert list(new) == BUFFERS
    got = {"out": out.numpy(), **{k: v.numpy() for k, v in new.items()}}
    # a training step under grad: the weights' gradients and the new buffers as aux
    weights = {k: v for k, v in params(m).items() if k not in BUFFERS}
    def step(w): return (lambda o, b: (o.sum(), b))(*functional_call(m, {**weights, **w}, x, return_buffers=True))
    grads, aux = tinyjax.grad(step, has_aux=True)(weights)
    with pytest.raises(RuntimeError, match=r"updated its buffers \['bn.num_batches_tracked', 'bn.running_mean', "
                                           r"'bn.running_var'\] during functional_call .*pass return_buffers=True"):
      functional_call(m, params(m), x)
  assert want["bn.num_batches_tracked"] == 1 and np.abs(want["bn.running_mean"]).max() > 0.01
  for k in want:
    np.testing.assert_allclose(got[k] if k in got else grads[k].numpy(), want[k], rtol=1e-5, atol=1e-6, err_msg=k)
  for k in BUFFERS: np.testing.assert_allclose(aux[k].numpy(), want[k], rtol=1e-5, atol=1e-6, err_msg=k)
  # the model's own buffers: the same objects, never written
  assert all(get_state_dict(m)[k] is v for k, v in own.items())
  np.testing.assert_array_equal(m.bn.running_mean.numpy(), np.zeros(3, np.float32))
  np.testing.assert_array_equal(m.bn.running_var.numpy(), np.ones(3, np.float32))
  assert m.bn.num_batches_tracked.item() == 0
  # out of training mode nothing is written: the plain output, the model's own call's numbers
  np.testing.assert_array_equal(functional_call(m, params(m), x).numpy(), m(x).numpy())
  assert functional_call(m, {}, x, return_buffers=True)[1] == {}

class Counter:
  """Writes its buffer twice (+=, *=) and then reads it."""
  def __init__(self): self.count, self.w = Tensor([1.0]), Tensor([2.0, 3.0])
  def __call__(self, x: Tensor) -> Tensor:
    self.count += 1
    self.count *= 3
    return x * self.w * self.count

def test_written_buffer_read_back():
  """The output reads the value written ((1 + 1) * 3 = 6), under grad too; neither the model's nor the given buffer is written."""
  c = Counter()
  given = Tensor([2.0])
  out, new = functional_call(c, {"count": given}, Tensor([1.0, 1.0]), return_buffers=True)
  assert (out.numpy().tolist(), new["count"].numpy().tolist()) == ([18.0, 27.0], [9.0])
  def loss(w, x): return (lambda o, b: (o.sum(), b))(*functional_call(c, {"w": w}, x, return_buffers=True))
  g, aux = tinyjax.grad(loss, has_aux=True)(Tensor([2.0, 3.0]), Tensor([1.0, 2.0]))
  assert (g.numpy().tolist(), aux["count"].numpy().tolist()) == ([6.0, 12.0], [6.0])
  assert c.count.numpy().tolist() == [1.0] and given.numpy().tolist() == [2.0]

def test_bad_input():
  m = MLP()
  with pytest.raises(KeyError, match="l3.weight"): functional_call(m, {"l3.weight": Tensor.ones(2, 8)}, Tensor(X32))
  assert params(m)["l1.weight"] is m.l1.weight
  with pytest.raises(ValueError, match=r"models\[1\]\['l1.weight'\] is float32\[8,4\] on CPU, models\[0\]'s is float32\[6,4\]"):
    stack_params([MLP(hidden=6), MLP()])
  with pytest.raises(ValueError, match=r"models\[1\] has other parameter names than models\[0\]: missing \['l1.weight', 'l1.bias', "
                                       r"'l2.weight', 'l2.bias'\], extra \['layers.0.weight'"):
    stack_params([MLP(), Containers()])
  with pytest.raises(ValueError, match="no models"): stack_params([])

def test_batchnorm_ensemble():
  """BatchNorms in training mode: an ensemble under vmap, two jitted steps that carry the buffers, and eager views of
  a stacked dict (slices), against tinygrad's own training calls; the stacked Tensors are never written."""
  def scaled(i: int) -> BNNet:
    b = BNNet()
    b.l1.weight = b.l1.weight * (i + 1)
    return b
  x, models, refs = Tensor(X32), [scaled(i) for i in range(3)], [scaled(i) for i in range(3)]
  stacked = stack_params(models)
  Tensor.realize(*stacked.values())
  before = {k: v.numpy() for k, v in stacked.items()}
  with Context(TRAINING=1):
    want_out = np.stack([r(x).numpy() for r in refs])
    want = {k: np.stack([params(r)[k].numpy() for r in refs]) for k in BUFFERS}
    out, new = tinyjax.vmap(lambda p, x: functional_call(models[0], p, x, return_buffers=True), in_axes=(0, None))(stacked, x)
    got = {"out": out.numpy(), **{k: v.numpy() for k, v in new.items()}}
    sliced = [functional_call(models[0], {k: v[i] for k, v in stacked.items()}, x, return_buffers=True)[1] for i in range(3)]
    step = tinyjax.jit(lambda p, x: functional_call(models[0], p, x, return_buffers=True))
    p = params(models[1])
    for _ in range(2): p = {**p, **step(p, x)[1]}
    refs[1](x).realize()   # tinygrad's second step
  np.testing.assert_allclose(got["out"], want_out, rtol=1e-5, atol=1e-6)
  for k in BUFFERS:
    np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(np.stack([s[k].numpy() for s in sliced]), want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(p[k].numpy(), params(refs[1])[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
  assert p["bn.num_batches_tracked"].item() == 2
  for k, v in stacked.items(): np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)
  assert models[0].bn.running_mean.numpy().tolist() == [0, 0, 0] and models[1].bn.num_batches_tracked.item() == 0


class Heat:
  """A 'physics model' as a tinygrad module: a learned diffusion coefficient per cell and a reaction term; its residual
  R(u) = k * Laplacian(u) + c * u^3 is what a Newton solver needs the sparse Jacobian of."""
  def __init__(self, n: int):
    r = np.random.default_rng(7)
    self.k = Tensor(r.uniform(0.5, 1.5, n))
    self.c = Tensor(r.uniform(-1, 1, 1))
  def __call__(self, u: Tensor) -> Tensor:
    up = u.pad(((1, 1),))
    return self.k * (up[:-2] - 2 * u + up[2:]) + self.c * u ** 3


def test_spjacobian_of_a_model_residual():
  # spjacobian through functional_call, with respect to the state (the model's parameters given as args) and with
  # respect to the parameters: both against JAX's dense Jacobians of the same residual
  n = 12
  m = Heat(n)
  p, u = params(m), rnd(n, seed=3)
  P = {k: v.numpy() for k, v in p.items()}
  def res_j(u, q):
    up = jax.numpy.pad(u, (1, 1))
    return q["k"] * (up[:-2] - 2 * u + up[2:]) + q["c"] * u ** 3
  J = tinyjax.spjacobian(lambda u, q: functional_call(m, q, u), Tensor(u), args=(p,))
  assert J.ncolors == 3
  np.testing.assert_allclose(J.todense(Tensor(u), p), np.asarray(jax.jacfwd(res_j)(u, P)), rtol=1e-12)
  Jp = tinyjax.spjacobian(lambda q: functional_call(m, q, Tensor(u)), p)
  want = jax.jacfwd(res_j, argnums=1)(u, P)
  # columns: the leaves in pytree order (a dict's keys sorted, as JAX and optree flatten it)
  np.testing.assert_allclose(Jp.todense(p), np.concatenate([np.asarray(want[k]).reshape(n, -1) for k in sorted(p)], axis=1), rtol=1e-12)
  assert m.k is p["k"] and m.c is p["c"]   # the model keeps its own Tensors


def test_jitted_training_step_retraces_on_new_shapes():
  # a functional training step (tinyjax.optim) under jit: a new batch size traces again, results never alias, and
  # the numbers equal the eager steps
  m = MLP()
  opt = tinyjax.optim.adam(0.01)
  def step(p, s, x, y):
    g = tinyjax.grad(lambda p: mse(functional_call(m, p, x), y))(p)
    u, s = opt.update(g, s, p)
    return tinyjax.optim.apply_updates(p, u), s
  jstep = tinyjax.jit(step)
  pj = pe = params(m)
  sj = se = opt.init(pe)
  kept = []
  for b in (5, 5, 3, 5):
    x, y = Tensor(X32[:b]), Tensor(Y32[:b])
    pj, sj = jstep(pj, sj, x, y)
    pe, se = step(pe, se, x, y)
    kept.append(pj["l1.weight"])
    for k in pe: np.testing.assert_allclose(pj[k].numpy(), pe[k].numpy(), rtol=1e-5, atol=1e-6)
  assert len(jstep._cache) == 2
  assert len({id(t) for t in kept}) == 4 and not np.allclose(kept[0].numpy(), kept[-1].numpy())


# ---- jax.nn.dot_product_attention --------------------------------------------------------------------------------------

def _attention_args():
  r = np.random.default_rng(0)
  q, k, v = r.standard_normal((2, 3, 4, 5)), r.standard_normal((2, 6, 2, 5)), r.standard_normal((2, 6, 2, 5))   # 4 query heads on 2
  return q, k, v, dict(bias=r.standard_normal((1, 4, 3, 6)), bias1=r.standard_normal((2, 1, 3, 6)), mask=r.random((2, 4, 3, 6)) > 0.3)

ATTENTION_CASES = {   # keyword arguments; the softmax runs in float32 (as JAX's), so float64 inputs agree to float32
  "plain": {}, "bias-mask-scale": dict(bias="bias", mask="mask", scale=0.3), "bias1-causal": dict(bias="bias1", is_causal=True),
  "window-lengths": dict(local_window_size=(1, 2), query_seq_lengths=np.array([2, 3], np.int32),
                         key_value_seq_lengths=np.array([4, 6], np.int32)),
  "window-int": dict(local_window_size=1), "residual": dict(is_causal=True, return_residual=True)}

@pytest.mark.parametrize("case", list(ATTENTION_CASES))
def test_dot_product_attention(case):
  q, k, v, extra = _attention_args()
  kw = {n: extra[a] if isinstance(a, str) and a in extra else a for n, a in ATTENTION_CASES[case].items()}
  tkw = {n: Tensor(a) if isinstance(a, np.ndarray) else a for n, a in kw.items()}
  assert_close(tinyjax.nn.dot_product_attention(Tensor(q), Tensor(k), Tensor(v), **tkw),
               lambda: jax.nn.dot_product_attention(q, k, v, **kw), rtol=1e-5, atol=1e-6)

def test_dot_product_attention_transforms():
  q, k, v, extra = _attention_args()
  def loss(nn_, b): return lambda q, k, v: (nn_.dot_product_attention(q, k, v, b, is_causal=True) ** 2).sum()
  got = tinyjax.grad(loss(tinyjax.nn, Tensor(extra["bias"])), (0, 1, 2))(Tensor(q), Tensor(k), Tensor(v))
  assert_close(got, lambda: jax.grad(loss(jax.nn, extra["bias"]), (0, 1, 2))(q, k, v), rtol=1e-5, atol=1e-5)
  # 3-d inputs (T, N, H), vmapped over a batch, in float32
  q3, k3, v3 = (a.astype(np.float32) for a in (q, k, v))
  assert_close(tinyjax.vmap(tinyjax.nn.dot_product_attention)(Tensor(q3), Tensor(k3), Tensor(v3)),
               lambda: jax.vmap(jax.nn.dot_product_attention)(q3, k3, v3), rtol=1e-5, atol=1e-6)

def test_dot_product_attention_errors():
  from conftest import same_error
  q, k, v, extra = _attention_args()
  for args, kw in (((q, k, v[:, :5]), {}), ((q, k, v.astype(np.float32)), {}), ((q[:, :, :3], k, v), {}),
                   ((q, k, v), dict(mask=extra["bias"])), ((q, k, v), dict(implementation="foo")),
                   ((q, k, v), dict(query_seq_lengths=np.array([1, 2])))):
    tkw = {n: Tensor(a) if isinstance(a, np.ndarray) else a for n, a in kw.items()}
    same_error(lambda: tinyjax.nn.dot_product_attention(*(Tensor(a) for a in args), **tkw), lambda: jax.nn.dot_product_attention(*args, **kw))
  with pytest.raises(NotImplementedError, match="cudnn"): tinyjax.nn.dot_product_attention(Tensor(q), Tensor(k), Tensor(v), implementation="cudnn")

"""tinyjax.optim against tinygrad's own optimizers: the same two-layer model, weights and batch, trained with
tinygrad's SGD/Adam/AdamW (loss.backward(); opt.step()) and with tinyjax.optim on a dict of params (tinyjax.grad of
the functional loss) gives the same parameters after every step."""
import numpy as np
import pytest
from tinygrad import Tensor, nn
from tinygrad.helpers import Context
from tinygrad.nn.optim import SGD, Adam, AdamW
import tinyjax
from tinyjax import optim, tree_util as tu

STEPS, RTOL, ATOL = 4, 1e-5, 1e-6
_rng = np.random.default_rng(0)
W = {"l1.weight": _rng.standard_normal((8, 4)), "l1.bias": _rng.standard_normal(8) * 0.1,
     "l2.weight": _rng.standard_normal((2, 8)) * 0.5, "l2.bias": _rng.standard_normal(2) * 0.1}
W = {k: v.astype(np.float32) for k, v in W.items()}
X, Y = _rng.standard_normal((16, 4)).astype(np.float32), _rng.standard_normal((16, 2)).astype(np.float32)

def loss(p: dict, x: Tensor, y: Tensor) -> Tensor:
  """The functional model: nn.Linear(4, 8), relu, nn.Linear(8, 2), mean squared error."""
  h = (x @ p["l1.weight"].T + p["l1.bias"]).relu()
  return ((h @ p["l2.weight"].T + p["l2.bias"] - y) ** 2).mean()

def realized(tree):
  """Realize every Tensor of `tree` (so that the lazy graph does not grow step after step) and return it."""
  Tensor.realize(*tu.tree_leaves(tree))
  return tree

def tinygrad_steps(make_opt, steps: int = STEPS) -> list[dict]:
  l1, l2 = nn.Linear(4, 8), nn.Linear(8, 2)
  l1.weight, l1.bias, l2.weight, l2.bias = (Tensor(W[k]) for k in ("l1.weight", "l1.bias", "l2.weight", "l2.bias"))
  params = {"l1.weight": l1.weight, "l1.bias": l1.bias, "l2.weight": l2.weight, "l2.bias": l2.bias}
  opt, x, y, out = make_opt(list(params.values())), Tensor(X), Tensor(Y), []
  with Context(TRAINING=1):   # tinygrad's optimizers refuse to step outside training mode
    for _ in range(steps):
      opt.zero_grad()
      ((l2(l1(x).relu()) - y) ** 2).mean().backward()
      opt.step()
      out.append({k: v.numpy() for k, v in params.items()})
  return out

def tinyjax_steps(tx: optim.GradientTransformation, steps: int = STEPS) -> list[dict]:
  params, x, y, out = {k: Tensor(v) for k, v in W.items()}, Tensor(X), Tensor(Y), []
  state = tx.init(params)
  for _ in range(steps):
    updates, state = tx.update(tinyjax.grad(loss)(params, x, y), state, params)
    params, state = realized((optim.apply_updates(params, updates), state))
    out.append({k: v.numpy() for k, v in params.items()})
  return out

CASES = {   # tinygrad's optimizer, tinyjax's: the same hyperparameters (not the defaults, to catch a swapped argument)
  "sgd": (lambda ps: SGD(ps, lr=0.1), optim.sgd(0.1)),
  "momentum": (lambda ps: SGD(ps, lr=0.1, momentum=0.8), optim.momentum(0.1, beta=0.8)),
  "sgd_nesterov_wd": (lambda ps: SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.05, nesterov=True),
                      optim.sgd(0.1, momentum=0.9, nesterov=True, weight_decay=0.05)),
  "adam": (lambda ps: Adam(ps, lr=0.01, b1=0.8, b2=0.99, eps=1e-6), optim.adam(0.01, b1=0.8, b2=0.99, eps=1e-6)),
  "adamw": (lambda ps: AdamW(ps, lr=0.01, b1=0.85, b2=0.995, eps=1e-7, weight_decay=0.1),
            optim.adamw(0.01, b1=0.85, b2=0.995, eps=1e-7, weight_decay=0.1)),
}

@pytest.mark.parametrize("name", CASES)
def test_matches_tinygrad(name):
  make_opt, tx = CASES[name]
  want, got = tinygrad_steps(make_opt), tinyjax_steps(tx)
  for step, (w, g) in enumerate(zip(want, got, strict=True)):
    for k in W:
      assert not np.array_equal(w[k], W[k]), (name, step, k)   # the params did move
      np.testing.assert_allclose(g[k], w[k], rtol=RTOL, atol=ATOL, err_msg=f"{name} step {step + 1} {k}")

def test_jit_step_no_retrace():
  tx = optim.adamw(0.01, weight_decay=0.1)
  def step(params, state, x, y):
    updates, state = tx.update(tinyjax.grad(loss)(params, x, y), state, params)
    return optim.apply_updates(params, updates), state
  jstep, x, y = tinyjax.jit(step), Tensor(X), Tensor(Y)
  eager = tinyjax_steps(tx, steps=3)
  params = {k: Tensor(v) for k, v in W.items()}
  state = tx.init(params)
  for i in range(3):
    params, state = jstep(params, state, x, y)
    for k in W: np.testing.assert_allclose(params[k].numpy(), eager[i][k], rtol=RTOL, atol=ATOL, err_msg=f"step {i + 1} {k}")
  assert int(state.count.numpy()) == 3 and state.count.shape == ()
  assert len(jstep._cache) == 1   # the step count is a Tensor: one trace for all steps

def test_bad_inputs():
  params = {"w": Tensor.ones(2)}
  tx = optim.adam(0.1)
  with pytest.raises(ValueError, match="grads must have the structure of the Adam state"):
    tx.update({"v": Tensor.ones(2)}, tx.init(params))
  tx = optim.sgd(0.1, momentum=0.9)
  with pytest.raises(ValueError, match="grads must have the structure of the momentum state"):
    tx.update([Tensor.ones(2)], tx.init(params))
  tx = optim.adamw(0.1)
  with pytest.raises(ValueError, match="weight_decay needs the params"):
    tx.update({"w": Tensor.ones(2)}, tx.init(params))
  with pytest.raises(ValueError, match="Invalid learning rate"): optim.sgd(-1.0)

def test_vmap_over_param_sets():
  """States are pytrees of Tensors: vmap(init) and vmap(update) train independent param sets, each as alone."""
  tx = optim.adamw(0.1, weight_decay=0.1)
  P = {"w": Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))}
  G = {"w": Tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))}
  updates, state = tinyjax.vmap(tx.update)(G, tinyjax.vmap(tx.init)(P), P)
  assert state.count.shape == (2,) and state.count.tolist() == [1, 1]
  for i in range(2):
    want, _ = tx.update({"w": G["w"][i]}, tx.init({"w": P["w"][i]}), {"w": P["w"][i]})
    np.testing.assert_allclose(updates["w"][i].numpy(), want["w"].numpy(), rtol=RTOL, atol=ATOL)

"""tinyjax.optim: functional optimizers in optax's shape, with tinygrad's numbers.

`sgd`, `momentum`, `adam` and `adamw` each return a `GradientTransformation` (`init(params) -> state`,
`update(grads, state, params=None) -> (updates, state)`); `apply_updates(params, updates)` adds the updates, which are
already scaled by `-learning_rate`, as in optax. Params, grads, updates and states are pytrees of Tensors (states are
NamedTuples, the step count a 0-d int32 Tensor), so a whole training step can go through `tinyjax.jit` (traced once,
not once per step) and `tinyjax.vmap`.

The formulas are those of `tinygrad.nn.optim.SGD`, `Adam` and `AdamW`, in tinygrad's order of operations, so that both
give the same parameters step for step. Where optax differs:
- `sgd(weight_decay=)` is tinygrad's coupled L2 (`g + wd * p` before momentum): optax's `sgd` has no weight decay
  (it is `optax.chain(optax.add_decayed_weights(wd), optax.sgd(...))`);
- Adam's bias corrections divide by `1 - b1_t` with `b1_t` tinygrad's running float32 product (`b1_t *= b1` each
  step), not optax's `1 - b1**count`: the last bits differ. eps is added after the square root of the bias-corrected
  second moment, as in optax (`eps_root` is not there);
- `adamw`'s default `weight_decay` is tinygrad's (and PyTorch's) 0.01, optax's is 1e-4; there is no `mask`;
- `learning_rate` is a number: no schedules.
"""
from __future__ import annotations
from typing import Any, Callable, NamedTuple
from tinyjax._tg import Tensor, dtypes
from tinyjax import tree_util as tu

__all__ = ["GradientTransformation", "SgdState", "AdamState", "sgd", "momentum", "adam", "adamw", "apply_updates"]

Params = Any   # a pytree of Tensors (params, grads, updates)


class GradientTransformation(NamedTuple):
  """optax's pair: `init(params) -> state` and `update(grads, state, params=None) -> (updates, new_state)`."""
  init: Callable[[Params], Any]
  update: Callable[..., tuple[Params, Any]]

class SgdState(NamedTuple):
  # steps taken: a 0-d int32 Tensor, so that a jitted step sees the same signature every step. optax's name, which
  # shadows tuple.count (hence the ignore)
  count: Tensor   # type: ignore[assignment]
  trace: Params   # the momentum buffers (tinygrad's `b`); None without momentum

class AdamState(NamedTuple):
  count: Tensor   # type: ignore[assignment]
  mu: Params      # first moments (tinygrad's `m`)
  nu: Params      # second moments (tinygrad's `v`)
  b1_t: Tensor    # b1**count as tinygrad computes it: a float32 product updated every step (see the module docstring)
  b2_t: Tensor


def _scalar(params: Params, value: float, dtype) -> Tensor:
  """A 0-d state Tensor on the params' device."""
  leaves = tu.tree_leaves(params)
  return Tensor.full((), value, dtype=dtype, device=leaves[0].device if leaves else None)

def _check(grads: Params, ref: Params, what: str) -> None:
  """A clear error for grads that do not match the state (tree_map's error would name neither)."""
  if (got := tu.tree_structure(grads)) != (want := tu.tree_structure(ref)):
    raise ValueError(f"tinyjax.optim: grads must have the structure of the {what}: got {got}, expected {want}")

def _need_params(params: Params | None, name: str) -> Params:
  if params is None: raise ValueError(f"tinyjax.optim.{name}: weight_decay needs the params: call update(grads, state, params)")
  return params


def sgd(learning_rate: float, momentum: float = 0.0, nesterov: bool = False, weight_decay: float = 0.0) -> GradientTransformation:
  """tinygrad's `SGD(params, lr, momentum, weight_decay, nesterov)`: g += wd * p; b = momentum * b + g;
  g = g + momentum * b (nesterov) or b; update = -lr * g."""
  if learning_rate < 0: raise ValueError(f"Invalid learning rate: {learning_rate}")
  if momentum < 0: raise ValueError(f"Invalid momentum value: {momentum}")

  def init(params: Params) -> SgdState:
    trace = tu.tree_map(Tensor.zeros_like, params) if momentum else None
    return SgdState(_scalar(params, 0, dtypes.int32), trace)

  def update(grads: Params, state: SgdState, params: Params | None = None) -> tuple[Params, SgdState]:
    if momentum: _check(grads, state.trace, "momentum state")
    elif params is not None: _check(grads, params, "params")
    # the same expressions, in the same order, as tinygrad's LARS._step with trust ratio off (r = 1.0)
    if weight_decay: grads = tu.tree_map(lambda g, p: g + weight_decay * p, grads, _need_params(params, "sgd"))
    trace = state.trace
    if momentum:
      trace = tu.tree_map(lambda g, b: momentum * b + g, grads, trace)
      grads = tu.tree_map(lambda g, b: g + momentum * b, grads, trace) if nesterov else trace
    # -(g * lr) exactly, so that p + update == tinygrad's p - g * lr
    return tu.tree_map(lambda g: g * -learning_rate, grads), SgdState(state.count + 1, trace)

  return GradientTransformation(init, update)

def momentum(learning_rate: float, beta: float = 0.9, nesterov: bool = False) -> GradientTransformation:
  """SGD with momentum `beta` (jax.example_libraries.optimizers.momentum's name)."""
  return sgd(learning_rate, momentum=beta, nesterov=nesterov)


def adamw(learning_rate: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.01) -> GradientTransformation:
  """tinygrad's `AdamW(params, lr, b1, b2, eps, weight_decay)` (its LAMB with the trust ratio off):
  m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²; update = -lr * ((m / (1-b1_t)) / (sqrt(v / (1-b2_t)) + eps) + wd * p)."""
  if learning_rate < 0: raise ValueError(f"Invalid learning rate: {learning_rate}")
  if weight_decay < 0: raise ValueError(f"Invalid weight_decay value: {weight_decay}")

  def init(params: Params) -> AdamState:
    mu, nu = tu.tree_map(Tensor.zeros_like, params), tu.tree_map(Tensor.zeros_like, params)
    return AdamState(_scalar(params, 0, dtypes.int32), mu, nu, _scalar(params, 1.0, dtypes.float32), _scalar(params, 1.0, dtypes.float32))

  def update(grads: Params, state: AdamState, params: Params | None = None) -> tuple[Params, AdamState]:
    _check(grads, state.mu, "Adam state")
    b1_t, b2_t = state.b1_t * b1, state.b2_t * b2
    mu = tu.tree_map(lambda g, m: b1 * m + (1.0 - b1) * g, grads, state.mu)
    nu = tu.tree_map(lambda g, v: b2 * v + (1.0 - b2) * (g * g), grads, state.nu)
    def adam_update(m: Tensor, v: Tensor) -> Tensor: return (m / (1.0 - b1_t)) / ((v / (1.0 - b2_t)).sqrt() + eps)
    if weight_decay:   # decoupled (AdamW): added after the moments, scaled by the learning rate with them
      updates = tu.tree_map(lambda m, v, p: (adam_update(m, v) + weight_decay * p) * -learning_rate, mu, nu,
                            _need_params(params, "adamw"))
    else: updates = tu.tree_map(lambda m, v: adam_update(m, v) * -learning_rate, mu, nu)
    return updates, AdamState(state.count + 1, mu, nu, b1_t, b2_t)

  return GradientTransformation(init, update)

def adam(learning_rate: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> GradientTransformation:
  """tinygrad's `Adam(params, lr, b1, b2, eps)`: AdamW without weight decay."""
  return adamw(learning_rate, b1, b2, eps, weight_decay=0.0)


def apply_updates(params: Params, updates: Params) -> Params:
  """params + updates, in the params' dtypes (optax.apply_updates)."""
  return tu.tree_map(lambda p, u: (p + u).cast(p.dtype), params, updates)

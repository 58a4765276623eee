"""tinyjax.vmap costs no more kernels than writing the batch axis by hand.

For each case, `tinyjax.vmap(per_example)(X)` and the same computation written with an explicit batch axis are
realized separately and must launch exactly the same number of kernels (GlobalCounters.kernel_count) and give the
same values.

tinygrad hash-conses identical graphs (and realizing a graph rewrites every tensor that shares a node of it), so the
two computations get their own, separately realized input and weight tensors (same values, different buffers).
"""
from dataclasses import dataclass
from typing import Callable
import numpy as np
import pytest
from tinygrad import Tensor

import tinyjax
from conftest import kernel_count

RNG = np.random.default_rng(0)
def f32(*shape): return RNG.standard_normal(shape).astype(np.float32)


@dataclass
class Case:
  name: str
  arrays: dict                       # name -> numpy array; "X" (or "X", "Y") are the vmapped inputs
  per_example: Callable              # p -> function of one example (closes over p's weights)
  by_hand: Callable                  # p -> the batched computation, from p's tensors
  in_axes: object = 0
  out_axes: object = 0
  args: tuple = ("X",)


def fresh(arrays: dict) -> dict:
  """New, realized tensors for every array (own buffers: nothing shared with another computation)."""
  p = {k: Tensor(np.array(v, copy=True)) for k, v in arrays.items()}
  Tensor.realize(*p.values())
  return p

def kernels(t: Tensor) -> tuple[int, np.ndarray]:
  return kernel_count(t.realize), t.numpy()


W, Bias = f32(8, 6), f32(6)
CASES = [
  Case("mlp_layer", {"X": f32(5, 8), "W": W, "b": Bias},
       lambda p: lambda x: (x @ p["W"] + p["b"]).relu(),
       lambda p: (p["X"] @ p["W"] + p["b"]).relu()),
  Case("mlp_two_layers", {"X": f32(5, 8), "W": W, "b": Bias, "W2": f32(6, 3)},
       lambda p: lambda x: ((x @ p["W"] + p["b"]).relu() @ p["W2"]).softmax(),
       lambda p: ((p["X"] @ p["W"] + p["b"]).relu() @ p["W2"]).softmax(-1)),
  Case("softmax", {"X": f32(5, 7)},
       lambda p: lambda x: x.softmax(),
       lambda p: p["X"].softmax(-1)),
  Case("log_softmax_2d", {"X": f32(5, 3, 7)},
       lambda p: lambda x: x.log_softmax(0),
       lambda p: p["X"].log_softmax(1)),
  Case("elementwise_chain", {"X": f32(5, 7)},
       lambda p: lambda x: (x * 2 + 1).sigmoid() * x.tanh() - x.abs().sqrt() + x.exp() / (x * x + 1),
       lambda p: (p["X"] * 2 + 1).sigmoid() * p["X"].tanh() - p["X"].abs().sqrt() + p["X"].exp() / (p["X"] * p["X"] + 1)),
  Case("reductions", {"X": f32(5, 4, 6)},
       lambda p: lambda x: x.sum() + x.max() * x.min(),
       lambda p: p["X"].sum((1, 2)) + p["X"].max((1, 2)) * p["X"].min((1, 2))),
  Case("reduce_axis_keepdim", {"X": f32(5, 4, 6)},
       lambda p: lambda x: x - x.mean(0, keepdim=True) + x.max(1, keepdim=True),
       lambda p: p["X"] - p["X"].mean(1, keepdim=True) + p["X"].max(2, keepdim=True)),
  Case("stack_index", {"X": f32(5, 4)},
       lambda p: lambda x: Tensor.stack(x[:2].sum(), x[2:].sum())[[0, 1]],
       lambda p: Tensor.stack(p["X"][:, :2].sum(1), p["X"][:, 2:].sum(1), dim=1)[:, [0, 1]]),
  Case("stack_flat_scalars", {"X": f32(5, 3, 3)},
       lambda p: lambda x: (lambda f: Tensor.stack(f[0], f[4], f[8]))(x.flatten()),
       lambda p: (lambda f: Tensor.stack(f[:, 0], f[:, 4], f[:, 8], dim=1))(p["X"].flatten(1))),
  Case("stacked_computed_index", {"X": f32(5, 2)},
       lambda p: lambda x: (lambda t: Tensor.stack(t[0], t[1], t[5]))(Tensor.stack(x * 2, x * 3, x - 1).flatten()),
       lambda p: (lambda t: Tensor.stack(t[:, 0], t[:, 1], t[:, 5], dim=1))(
         Tensor.stack(p["X"] * 2, p["X"] * 3, p["X"] - 1, dim=1).flatten(1))),
  Case("layernorm", {"X": f32(5, 16)},
       lambda p: lambda x: x.layernorm(),
       lambda p: p["X"].layernorm(-1)),
  Case("layernorm_affine", {"X": f32(5, 3, 16), "g": f32(16), "b": f32(16)},
       lambda p: lambda x: x.layernorm() * p["g"] + p["b"],
       lambda p: p["X"].layernorm(-1) * p["g"] + p["b"]),
  Case("batched_matmul", {"X": f32(5, 3, 4), "Y": f32(5, 4, 2)},
       lambda p: lambda x, y: (x @ y).relu(),
       lambda p: (p["X"] @ p["Y"]).relu(), in_axes=(0, 0), args=("X", "Y")),
  Case("in_axes_1_out_axes_1", {"X": f32(7, 5)},
       lambda p: lambda x: x.softmax(),
       lambda p: p["X"].softmax(0), in_axes=1, out_axes=1),
  Case("conv2d", {"X": f32(4, 2 * 25), "w": f32(3, 2, 3, 3)},
       lambda p: lambda x: x.reshape(1, 2, 5, 5).conv2d(p["w"], padding=1).relu(),
       lambda p: p["X"].reshape(4, 2, 5, 5).conv2d(p["w"], padding=1).relu().reshape(4, 1, 3, 5, 5)),
  Case("cumsum", {"X": f32(5, 7)}, lambda p: lambda x: x.cumsum(), lambda p: p["X"].cumsum(1)),
  Case("argmax", {"X": f32(5, 7)}, lambda p: lambda x: x.argmax(), lambda p: p["X"].argmax(1)),
  Case("gather", {"X": f32(5, 4, 6), "i": RNG.integers(0, 6, (4, 2)).astype(np.int32)},
       lambda p: lambda x: x.gather(1, p["i"]),
       lambda p: p["X"].gather(2, p["i"].unsqueeze(0).expand(5, 4, 2))),
  Case("index_tensor", {"X": f32(5, 7)},
       lambda p: lambda x: x[Tensor([2, 0, 5])],
       lambda p: p["X"][:, Tensor([2, 0, 5])]),
  Case("cat_closed_over", {"X": f32(5, 7), "c": f32(3)},
       lambda p: lambda x: Tensor.cat(x, p["c"]) * 2,
       lambda p: Tensor.cat(p["X"], p["c"].reshape(1, 3).expand(5, 3), dim=1) * 2),
  Case("mixed_in_axes", {"X": f32(5, 7), "W": f32(7, 3), "Y": f32(3, 5)},
       lambda p: lambda x, w, y: x @ w + y,
       lambda p: p["X"] @ p["W"] + p["Y"].T, in_axes=(0, None, 1), args=("X", "W", "Y")),
  Case("nested_2_levels", {"X": f32(4, 3, 8), "W": W},
       lambda p: tinyjax.vmap(lambda x: (x @ p["W"]).relu().softmax()),
       lambda p: (p["X"] @ p["W"]).relu().softmax(-1)),
  Case("nested_2_levels_reduce", {"X": f32(4, 3, 6)},
       lambda p: tinyjax.vmap(lambda x: x.pad((1, 1)).sum() + x.max()),
       lambda p: p["X"].pad(((0, 0), (0, 0), (1, 1))).sum(-1) + p["X"].max(-1)),
  Case("nested_3_levels_pad_sum", {"X": f32(2, 3, 4, 5)},
       lambda p: tinyjax.vmap(tinyjax.vmap(lambda x: x.pad((2, 1)).sum() * x.max())),
       lambda p: p["X"].pad(((0, 0), (0, 0), (0, 0), (2, 1))).sum(-1) * p["X"].max(-1)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_same_kernel_count_as_by_hand(case):
  p1 = fresh(case.arrays)
  out_vmap = tinyjax.vmap(case.per_example(p1), in_axes=case.in_axes, out_axes=case.out_axes)(*[p1[a] for a in case.args])
  n_vmap, v_vmap = kernels(out_vmap)

  p2 = fresh(case.arrays)
  n_hand, v_hand = kernels(case.by_hand(p2))

  assert v_vmap.shape == v_hand.shape
  np.testing.assert_allclose(v_vmap, v_hand, rtol=1e-5, atol=1e-6)
  assert n_hand > 0
  assert n_vmap == n_hand, f"vmap launched {n_vmap} kernels, the hand-batched version {n_hand}"


def test_same_graph_on_shared_inputs():
  """On the *same* inputs, vmap's softmax graph is node-for-node the by-hand one. tinygrad's realize would rebind the
  by-hand tensor too (it then launches nothing); tinyjax's (runtime.realize_lazy) computes the Tensors it is asked
  for, so each launches the same kernels: the counts above do not depend on fresh inputs."""
  case = next(c for c in CASES if c.name == "softmax")
  p = fresh(case.arrays)
  out_vmap, out_hand = tinyjax.vmap(case.per_example(p))(p["X"]), case.by_hand(p)
  assert out_vmap.uop is out_hand.uop
  n_vmap, v_vmap = kernels(out_vmap)
  n_hand, v_hand = kernels(out_hand)
  assert n_vmap == n_hand > 0
  np.testing.assert_array_equal(v_vmap, v_hand)


def test_loop_launches_more_kernels():
  """Sanity check of the counter: a Python loop over examples launches one set of kernels per example."""
  x = fresh({"X": f32(4, 7)})["X"]
  n_vmap, v = kernels(tinyjax.vmap(Tensor.softmax)(x))
  n_loop, v_loop = kernels(Tensor.stack(*[x[i].softmax() for i in range(4)]))
  np.testing.assert_allclose(v, v_loop, rtol=1e-6)
  assert n_loop > n_vmap


def test_eager_transform_is_scheduled_once():
  # an un-jitted transform builds a new graph each call; tinygrad's schedule cache finds the kernels again only if the
  # graph's key is the same: a primitive's call (tanh) must not carry a new grad_fxn object per call (its id is in
  # the key). Fails with a cache entry per call if it does; the values are checked against numpy's.
  import tinygrad.schedule as schedule
  W, X, V = (Tensor(a).realize() for a in (f32(8, 8), f32(4, 8), f32(4, 8)))
  f = tinyjax.vmap(lambda x, v: tinyjax.jvp(lambda x: (x @ W).tanh(), (x,), (v,)))
  sizes = []
  for _ in range(3):
    y, t = f(X, V)
    Tensor.realize(y, t)
    sizes.append(len(schedule.schedule_cache))
  want = np.tanh(X.numpy() @ W.numpy())
  np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(t.numpy(), (1 - want ** 2) * (V.numpy() @ W.numpy()), rtol=1e-4, atol=1e-5)
  assert sizes[1] == sizes[2]

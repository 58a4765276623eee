"""tinyjax.pmap on four CPU devices (tinygrad's CPU, CPU:1..3) against jax.pmap on four XLA CPU devices and against vmap.

JAX gets several CPU devices only from XLA_FLAGS set before it is imported, and conftest has imported it already: JAX's
numbers come from one subprocess (`_jax_results`) that imports this file with the flag set and runs every case of CASES
with jax.pmap. Each case is written once over a namespace (`ns.lax`, `ns.jnp`, `ns.grad`, `ns.vmap`, `ns.jit`) that is
JAX's or tinyjax's.
"""
import os, subprocess, sys, types
from typing import Any, Callable, NamedTuple
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from tinygrad import Tensor

import tinyjax
import tinyjax.numpy as tnp
from conftest import rnd, assert_close, same_error, raises, to_np

DEVICES = ("CPU", "CPU:1", "CPU:2", "CPU:3")
JAX_NS = types.SimpleNamespace(lax=jax.lax, jnp=jnp, grad=jax.grad, vmap=jax.vmap, jit=jax.jit, pmap=jax.pmap)
TJ_NS = types.SimpleNamespace(lax=tinyjax.lax, jnp=tnp, grad=tinyjax.grad, vmap=tinyjax.vmap, jit=tinyjax.jit, pmap=tinyjax.pmap)

@pytest.fixture(autouse=True, scope="module")
def four_cpus():
  """tinyjax.devices() lists four CPU devices, as JAX's with --xla_force_host_platform_device_count=4."""
  saved = tinyjax.config.jax_num_cpu_devices
  tinyjax.config.update("jax_num_cpu_devices", 4)
  yield
  tinyjax.config.jax_num_cpu_devices = saved


# ---- the cases: fun(ns, *args) pmapped with `kw` (axis_name "i") ----------------------------------------------------------

class Case(NamedTuple):
  fun: Callable
  args: tuple
  kw: dict[str, Any] = {}

X, Y, Z, P = rnd(4, 3), rnd(4, 4, seed=1), rnd(4, 2, 3, seed=2), rnd(3, seed=3)

def _loss(ns, p, xb): return ns.jnp.sum(ns.jnp.tanh(xb @ p) ** 2)

def _train_step(ns, p, xb):
  """A data-parallel SGD step: each device's gradient, averaged over devices (pmean), the same update everywhere."""
  g = ns.lax.pmean(ns.grad(lambda q: _loss(ns, q, xb))(p), "i")
  return p - 0.1 * g, ns.lax.psum(_loss(ns, p, xb), "i")

RING = [(k, (k + 1) % 4) for k in range(4)]

CASES = {
  "elementwise": Case(lambda ns, v: ns.jnp.sin(v) * 2.0, (X,)),
  "psum": Case(lambda ns, v: v / ns.lax.psum(v, "i"), (X,)),
  "pmean": Case(lambda ns, v: ns.lax.pmean(ns.jnp.exp(v), "i"), (X,)),
  "pmax": Case(lambda ns, v: ns.lax.pmax(v, "i"), (X,)),
  "pmin": Case(lambda ns, v: ns.lax.pmin(v, "i"), (X,)),
  "all_gather": Case(lambda ns, v: ns.lax.all_gather(v, "i"), (X,)),
  "all_gather_tiled": Case(lambda ns, v: ns.lax.all_gather(v, "i", axis=0, tiled=True), (X,)),
  "ppermute": Case(lambda ns, v: ns.lax.ppermute(v, "i", RING), (X,)),
  "ppermute_partial": Case(lambda ns, v: ns.lax.ppermute(v, "i", [(0, 2), (3, 1)]), (X,)),
  "axis_index": Case(lambda ns, v: ns.lax.axis_index("i"), (X,)),
  "psum_scatter": Case(lambda ns, v: ns.lax.psum_scatter(v, "i"), (Y,)),
  "all_to_all": Case(lambda ns, v: ns.lax.all_to_all(v, "i", 0, 0), (Y,)),
  "nested_vmap": Case(lambda ns, v: ns.vmap(lambda w: w * ns.lax.psum(w, ("i", "j")), axis_name="j")(v), (Z,)),
  "vmap_psum_inner": Case(lambda ns, v: ns.vmap(lambda w: ns.lax.psum(w, "i"))(v), (Z,)),
  "train_step": Case(_train_step, (P, X), {"in_axes": (None, 0)}),
  "pmap_of_jit": Case(lambda ns, v: ns.jit(lambda w: ns.lax.psum(w * w, "i"))(v), (X,)),
  "in_out_axes": Case(lambda ns, v, c: (v * c, ns.lax.psum(v, "i")), (X.T, np.float64(3.0)),
                      {"in_axes": (1, None), "out_axes": (1, None)}),
  "static_argnums": Case(lambda ns, v, n: v ** n, (X, 3), {"static_broadcasted_argnums": 1}),
  "three_of_four": Case(lambda ns, v: ns.lax.psum(v, "i") * ns.lax.axis_index("i"), (X[:3],)),
}

def _run(ns, case: Case):
  kw = {"axis_name": "i", **case.kw}
  return ns.pmap(lambda *a: case.fun(ns, *a), **kw)(*case.args)

def _dump_jax(path: str):
  """Run in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4: every case with jax.pmap."""
  out = {f"{name}/{i}": np.asarray(o) for name, case in CASES.items() for i, o in enumerate(jax.tree.leaves(_run(JAX_NS, case)))}
  out["_counts"] = np.array([jax.device_count(), tinyjax.device_count()])
  np.savez(path, **out)

@pytest.fixture(scope="module")
def jax_results(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("pmap") / "jax.npz")
  env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
  code = f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); import test_pmap; test_pmap._dump_jax({path!r})"
  subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
  return dict(np.load(path))


@pytest.mark.parametrize("name", list(CASES))
def test_against_jax_pmap(name, jax_results):
  got = jax.tree.leaves(_run(TJ_NS, CASES[name]))
  want = [jax_results[f"{name}/{i}"] for i in range(len(got))]
  assert f"{name}/{len(got)}" not in jax_results, "tinyjax has fewer outputs than JAX"
  assert_close(got, want)
  for g in got: assert g.device == DEVICES[:3 if name == "three_of_four" else 4], (name, g.device)   # one example per device


def test_devices_follow_xla_flags(jax_results):
  """The subprocess's XLA_FLAGS gave JAX four devices, and tinyjax as many; here the config does."""
  assert list(jax_results["_counts"]) == [4, 4]
  assert [d.tinygrad for d in tinyjax.devices()] == list(DEVICES) and tinyjax.device_count() == 4
  assert [(d.id, repr(d), str(d)) for d in tinyjax.devices()] == [(k, f"CpuDevice(id={k})", f"cpu:{k}") for k in range(4)]


def test_runs_on_each_device_and_matches_vmap():
  """The result is sharded along the mapped axis, one example per device, each computed where it lies; same numbers as
  vmap (the same function with the same axis name, on one device)."""
  def f(v): return tnp.sin(v) / tinyjax.lax.psum(v, "i") + tinyjax.lax.ppermute(v, "i", RING)
  got = tinyjax.pmap(f, axis_name="i")(X)
  assert got.device == DEVICES and got.uop.axis == 0
  assert [b.device for b in got.realize().uop.buffer.bufs] == list(DEVICES)
  want = tinyjax.vmap(f, axis_name="i")(Tensor(X))
  assert want.device == "CPU"
  assert_close(got, to_np(want))


def test_sharded_input_is_used_where_it_lies():
  x = Tensor(X).shard(DEVICES, axis=0).realize()
  out = tinyjax.pmap(lambda v: v * 2.0)(x)
  assert out.device == DEVICES and out.uop.axis == 0
  assert_close(out, X * 2.0)
  # a pmap's output is the next pmap's input as it is, also with the devices given explicitly
  assert_close(tinyjax.pmap(lambda v: v + 1.0, devices=tinyjax.devices())(out), X * 2.0 + 1.0)


def test_jit_of_pmap():
  f = tinyjax.jit(tinyjax.pmap(lambda v: tinyjax.lax.psum(v, "i") * v, axis_name="i"))
  for x in (X, X + 1.0):   # the second call replays the capture
    assert_close(f(x), jax.vmap(lambda v: jax.lax.psum(v, "i") * v, axis_name="i")(x))


def test_training_loop_keeps_parameters_replicated():
  """Three data-parallel steps: the per-device parameters stay equal and equal to a single-device full-batch step's."""
  step = tinyjax.pmap(lambda p, xb: _train_step(TJ_NS, p, xb)[0], axis_name="i", in_axes=(None, 0), out_axes=None)
  jstep = jax.jit(jax.vmap(lambda p, xb: _train_step(JAX_NS, p, xb)[0], axis_name="i", in_axes=(None, 0), out_axes=None))
  p, q = Tensor(P), P
  for _ in range(3): p, q = step(p, X), jstep(q, X)
  assert_close(p, q)


# ---- errors, as JAX's --------------------------------------------------------------------------------------------------

def test_errors_as_jax():
  same_error(lambda: tinyjax.pmap(lambda v: v, in_axes="a"), lambda: jax.pmap(lambda v: v, in_axes="a"))
  same_error(lambda: tinyjax.pmap(lambda v: v, out_axes=1.0), lambda: jax.pmap(lambda v: v, out_axes=1.0))
  same_error(lambda: tinyjax.pmap(lambda v, c: v, static_broadcasted_argnums=2)(X, 1),
             lambda: jax.pmap(lambda v, c: v, static_broadcasted_argnums=2)(X[:1], 1))
  same_error(lambda: tinyjax.pmap(lambda v: v, devices=[]), lambda: jax.pmap(lambda v: v, devices=[]))
  same_error(lambda: tinyjax.pmap(lambda v: v, in_axes=None)(X), lambda: jax.pmap(lambda v: v, in_axes=None)(X[:1]))
  same_error(lambda: tinyjax.pmap(lambda v: v, axis_size=2)(X), lambda: jax.pmap(lambda v: v, axis_size=2)(X[:1]),
             upto="doesn't match received axis_size")
  same_error(lambda: tinyjax.pmap(3), lambda: jax.pmap(3))
  same_error(lambda: tinyjax.pmap(lambda v: tinyjax.lax.psum(v, "j"), axis_name="i")(X),
             lambda: jax.pmap(lambda v: jax.lax.psum(v, "j"), axis_name="i")(X[:1]), upto="Found an unbound axis name: j.")


def test_more_examples_than_devices():
  """JAX 0.10 raises a ValueError from its shard_map (IndivisibleError, or a squeeze's message when the size is a
  multiple of the device count); tinyjax a ValueError naming the sizes, before any work."""
  assert isinstance(raises(lambda: jax.pmap(lambda v: v)(X[:3])), ValueError)   # JAX here has one device
  with pytest.raises(ValueError, match=r"requires 5 logical devices, but only 4 devices are available"):
    tinyjax.pmap(lambda v: v)(rnd(5, 2))
  with pytest.raises(ValueError, match=r"requires 4 logical devices, but only 2"):
    tinyjax.pmap(lambda v: v, devices=tinyjax.devices()[:2])(X)
  with pytest.raises(ValueError, match=r"pmap got inconsistent sizes for array axes to be mapped:\n  \* one axis had size 4: "
                                       r"axis 0 of argument v of type float64\[4,3\];\n  \* one axis had size 3"):
    tinyjax.pmap(lambda v, w: v)(X, X[:3])

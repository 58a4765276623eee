"""jax.checkpoint / jax.remat against JAX (x64): values under grad, jit, jvp, vmap, hessian, nested checkpoints, every
policy of checkpoint_policies with checkpoint_name; JAX's errors; and the point of it, measured: the jitted gradient
of checkpointed blocks keeps less memory than without."""
import gc
import numpy as np
import pytest
import jax
import jax.numpy as jnp
import jax.ad_checkpoint as jac
from tinygrad import Tensor
from tinygrad.helpers import GlobalCounters
import tinyjax
import tinyjax.numpy as tnp
from tinyjax.ad_checkpoint import checkpoint_name
from conftest import rnd, assert_close, same_error

pytestmark = pytest.mark.usefixtures("compile_in_process")

X, W = rnd(3, 4), rnd(4, 4, seed=1) / 2
LIBS = {"tinyjax": (tinyjax, tnp, checkpoint_name), "jax": (jax, jnp, jac.checkpoint_name)}

def model(lib: str, **kw):
  """Two calls of a checkpointed block that closes over nothing, named value inside; loss(x, w)."""
  top, np_, name = LIBS[lib]
  def block(x, w):
    y = name(np_.sin(x @ w), "y")
    return np_.tanh(y @ w.T) * x
  b = top.checkpoint(block, **kw)
  return lambda x, w: (b(b(x, w), w) ** 2).sum()

def both(fn_of_lib, *args):
  """fn_of_lib(lib) on tinyjax Tensors against the same on JAX (under jax.jit)."""
  assert_close(fn_of_lib("tinyjax")(*[Tensor(a) for a in args]), lambda: fn_of_lib("jax")(*args))

def T(lib): return LIBS[lib][0]


def test_value_and_grad():
  both(lambda lib: T(lib).value_and_grad(model(lib), argnums=(0, 1)), X, W)

def test_closed_over_value_is_differentiated():
  # unlike a custom_vjp, a checkpoint differentiates what it closes over (here w, an argument of grad)
  def f(lib):
    np_ = LIBS[lib][1]
    def loss(x, w): return T(lib).checkpoint(lambda x: np_.sin(x @ w).sum())(x)
    return T(lib).grad(loss, argnums=(0, 1))
  both(f, X, W)

@pytest.mark.parametrize("policy", [None, "nothing_saveable", "everything_saveable", "dots_saveable",
                                    "dots_with_no_batch_dims_saveable", "names", "names_but", "both"])
def test_policies(policy):
  def pol(lib):
    p = T(lib).checkpoint_policies
    return {None: None, "names": p.save_only_these_names("y"), "names_but": p.save_any_names_but_these("z"),
            "both": p.save_from_both_policies(p.dots_saveable, p.save_only_these_names("y"))}.get(policy, getattr(p, policy or "", None))
  both(lambda lib: T(lib).grad(model(lib, policy=pol(lib)), argnums=(0, 1)), X, W)

def test_jit_grad():
  both(lambda lib: T(lib).jit(T(lib).grad(model(lib), argnums=(0, 1))), X, W)

def test_jvp_is_transparent():
  both(lambda lib: lambda x, w: T(lib).jvp(model(lib), (x, w), (w[:3], x.T @ x)), X, W)

def test_hessian():
  both(lambda lib: T(lib).hessian(model(lib, policy=T(lib).checkpoint_policies.dots_saveable)), X[:2], W)

def test_grad_of_grad():
  both(lambda lib: lambda x, w: T(lib).grad(lambda w: T(lib).grad(model(lib))(x, w).sum())(w), X, W)

def test_vmap():
  # per-example gradients (grad under vmap) and a vmapped checkpoint under grad
  both(lambda lib: T(lib).vmap(T(lib).grad(model(lib), argnums=1), (0, None)), X, W)
  both(lambda lib: T(lib).grad(lambda x, w: T(lib).vmap(model(lib), (0, None))(x, w).sum(), argnums=1), X, W)

def test_nested():
  def f(lib):
    top, np_, _ = LIBS[lib]
    inner = top.checkpoint(lambda x: np_.sin(x) * x)
    return top.grad(top.checkpoint(lambda x, w: inner(x @ w).sum()), argnums=(0, 1))
  both(f, X, W)

def test_static_argnums_and_pytrees():
  def f(lib):
    top, np_, _ = LIBS[lib]
    def g(p, n, scale=1.0):
      for _ in range(n): p = {"a": np_.sin(p["a"]) * p["b"], "b": p["b"]}
      return p["a"].sum() * scale
    c = top.checkpoint(g, static_argnums=(1,))
    return top.grad(lambda a, b: c({"a": a, "b": b}, 2, scale=3.0), argnums=(0, 1))
  both(f, X, X[::-1])

def test_checkpoint_name_is_identity():
  x = Tensor(X)
  assert checkpoint_name(x, "y") is x
  tree = {"a": x, "b": (x,)}
  assert checkpoint_name(tree, "t") is tree


# ---- errors ---------------------------------------------------------------------------------------------------------

def test_branch_on_argument_raises_as_jax():
  # JAX traces the function abstractly, outside jit and under grad alike: static_argnums is the way out
  def f(lib):
    return T(lib).checkpoint(lambda x: x if x > 0 else -x)
  tj, jx = f("tinyjax"), f("jax")
  for wrap in (lambda g: g, T("tinyjax").grad):
    with pytest.raises(tinyjax.ConcretizationTypeError): wrap(tj)(Tensor(np.float64(2.0)))
  with pytest.raises(jax.errors.ConcretizationTypeError): jx(2.0)

def test_bad_static_argnums():
  same_error(lambda: tinyjax.checkpoint(lambda x: x, static_argnums=(2,))(Tensor(X)),
             lambda: jax.checkpoint(lambda x: x, static_argnums=(2,))(X))

def test_bad_prevent_cse():
  same_error(lambda: tinyjax.checkpoint(lambda x: x, prevent_cse=3), lambda: jax.checkpoint(lambda x: x, prevent_cse=3))

def test_offload_policies_not_implemented():
  p = tinyjax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")
  with pytest.raises(NotImplementedError, match="offload_dot_with_no_batch_dims"):
    tinyjax.grad(tinyjax.checkpoint(lambda x: (x @ x.T).sum(), policy=p))(Tensor(X))


# ---- the memory saving ----------------------------------------------------------------------------------------------

def test_jitted_grad_keeps_less_memory():
  """What a jitted grad keeps allocated beyond its outputs (tinygrad's memory planner's arena for the intermediates):
  8 blocks whose (256, 64) hidden activations are kept for the backward pass without checkpointing, recomputed with it.
  Without checkpoint each block's hidden layer stays (8 x 128 KiB); with it, each block's (256, 16) input (8 x 32 KiB),
  and one block's recomputation at a time."""
  rng = np.random.default_rng(0)
  ws = [(Tensor(rng.standard_normal((16, 64)) / 4), Tensor(rng.standard_normal((64, 16)) / 8)) for _ in range(8)]
  x = Tensor(rng.standard_normal((256, 16)))
  def temp(remat: bool) -> int:
    def block(w, h): return h + tnp.tanh(h @ w[0]) @ w[1]
    b = tinyjax.checkpoint(block) if remat else block
    def loss(ws, h):
      for w in ws: h = b(w, h)
      return (h * h).sum()
    gc.collect()   # the other case's captured function and arena go now, not during this measure
    before = GlobalCounters.mem_used
    out = [g for pair in tinyjax.jit(tinyjax.grad(loss))(ws, x) for g in pair]
    Tensor.realize(*out)
    return GlobalCounters.mem_used - before - sum(g.nbytes() for g in out)
  plain, remat = temp(False), temp(True)
  assert 0 < remat < plain / 2, (plain, remat)


def test_eager_grad_of_checkpoint_at_python_scalars():
  """Eager grad of a checkpointed function at Python scalars: the placeholders become device-less constants, which
  the remat call's arguments cannot be (tinygrad's scheduler raised "input to kernel must resolve to a buffer
  state"): they go into its body. JAX's numbers, one scalar and one array argument alike."""
  def f(np_, ckpt):
    return lambda t, s: ckpt(lambda u, v: np_.sin(u) * v + u * u)(t, s).sum()
  for args in ((1.0, 2.0), (np.array([1.0, 3.0]), 2.0), (0.5, np.array([2.0, -1.0]))):
    for argnums in (0, 1, (0, 1)):
      got = tinyjax.grad(f(tnp, tinyjax.checkpoint), argnums=argnums)(*args)
      want = jax.grad(f(jnp, jax.checkpoint), argnums=argnums)(*args)
      for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)

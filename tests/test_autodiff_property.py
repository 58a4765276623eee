"""Property tests for tinyjax's autodiff on random differentiable programs.

A program is a short list of ops over a growing list of values (the input first): elementwise maps (sin, exp of a
scaled value, tanh, x*x, log(x*x+1), sqrt(x*x+1), 1/(x*x+1)), add/mul with a constant or with an earlier value,
sum/max over an axis, reshape/permute/flip/pad/slice, and stack. One small interpreter runs it on tinygrad Tensors and
on jnp arrays, so every program has a JAX twin. Values are kept below MAX_BOUND in magnitude (an op that could exceed
it becomes tanh), since tinygrad's float64 sin loses digits on large arguments. Checked on float64 inputs:
  (a) tinyjax.jvp == jax.jvp of the twin,
  (b) tinyjax.jvp == central finite differences of the tinygrad program,
  (c) <u, J v> == <J^T u, v> with J v from tinyjax.jvp and J^T u from tinyjax.vjp.
"""
import math
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor

import tinyjax

pytestmark = pytest.mark.usefixtures("compile_in_process")

SETTINGS = dict(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


# ---- the interpreter ------------------------------------------------------------------------------------------------

class TG:
  """The op vocabulary on tinygrad Tensors."""
  sin = staticmethod(lambda a: a.sin())
  exp = staticmethod(lambda a: a.exp())
  tanh = staticmethod(lambda a: a.tanh())
  log = staticmethod(lambda a: a.log())
  sqrt = staticmethod(lambda a: a.sqrt())
  sum = staticmethod(lambda a, ax: a.sum(axis=ax))
  max = staticmethod(lambda a, ax: a.max(axis=ax))
  reshape = staticmethod(lambda a, s: a.reshape(s))
  permute = staticmethod(lambda a, p: a.permute(p))
  flip = staticmethod(lambda a, ax: a.flip(ax))
  pad = staticmethod(lambda a, pads: a.pad(pads))
  stack = staticmethod(lambda a, b: Tensor.stack(a, b))

class JX:
  """The same vocabulary on jnp arrays."""
  sin, exp, tanh, log, sqrt = jnp.sin, jnp.exp, jnp.tanh, jnp.log, jnp.sqrt
  sum = staticmethod(lambda a, ax: jnp.sum(a, axis=ax))
  max = staticmethod(lambda a, ax: jnp.max(a, axis=ax))
  reshape = staticmethod(lambda a, s: jnp.reshape(a, s))
  permute = staticmethod(lambda a, p: jnp.transpose(a, p))
  flip = staticmethod(lambda a, ax: jnp.flip(a, ax))
  pad = staticmethod(lambda a, pads: jnp.pad(a, pads))
  stack = staticmethod(lambda a, b: jnp.stack([a, b]))


def apply(L, op, a, p, b):
  if op == "sin": return L.sin(a)
  if op == "exp_scaled": return L.exp(a * p)
  if op == "tanh": return L.tanh(a)
  if op == "square": return a * a
  if op == "log1sq": return L.log(a * a + 1)
  if op == "sqrt1sq": return L.sqrt(a * a + 1)
  if op == "recip1sq": return 1 / (a * a + 1)
  if op == "add_const": return a + p
  if op == "mul_const": return a * p
  if op == "add": return a + b
  if op == "mul": return a * b
  if op == "sum": return L.sum(a, p)
  if op == "max": return L.max(a, p)
  if op == "reshape": return L.reshape(a, p)
  if op == "permute": return L.permute(a, p)
  if op == "flip": return L.flip(a, p)
  if op == "pad": return L.pad(a, p)
  if op == "slice": return a[p]
  if op == "stack": return L.stack(a, b)
  raise ValueError(op)


def run(prog, x, L):
  """prog: [(op, src, param, other)]; each op reads value `src` (and `other`) and appends its result."""
  vals = [x]
  for op, src, p, other in prog:
    vals.append(apply(L, op, vals[src], p, None if other is None else vals[other]))
  return vals[-1]


# ---- random programs ------------------------------------------------------------------------------------------------

ELEMENTWISE = ["sin", "exp_scaled", "tanh", "square", "log1sq", "sqrt1sq", "recip1sq", "add_const", "mul_const"]
INPUT_SHAPES = [(4,), (6,), (2, 3), (3, 2), (2, 2, 2), (1, 3)]

def _factorizations(n: int, max_dims: int = 3):
  out = [(n,)]
  for a in range(2, n):
    if n % a == 0:
      out += [(a,) + rest for rest in _factorizations(n // a, max_dims - 1)] if max_dims > 1 else []
  return [s for s in out if len(s) <= max_dims]

MAX_BOUND = 20.0   # tinygrad's float64 sin loses digits on large arguments (argument reduction): keep values moderate

def _bound(op, p, b, b_other, shape):
  """An upper bound of |result| given bounds of |inputs| (inputs are drawn in [-2, 2])."""
  if op in ("sin", "tanh", "recip1sq"): return 1.0
  if op == "square": return b * b
  if op == "exp_scaled": return math.exp(abs(p) * min(b, 50.0))
  if op == "log1sq": return math.log(b * b + 1)
  if op == "sqrt1sq": return math.sqrt(b * b + 1)
  if op == "add_const": return b + abs(p)
  if op == "mul_const": return b * abs(p)
  if op == "add": return b + b_other
  if op == "mul": return b * b_other
  if op == "sum": return b * shape[p]
  if op == "stack": return max(b, b_other)
  return b   # max and movement ops (pad adds zeros)

@st.composite
def programs(draw):
  shape = draw(st.sampled_from(INPUT_SHAPES))
  shapes, bounds = [shape], [2.0]
  prog = []
  for _ in range(draw(st.integers(2, 8))):
    src = len(shapes) - 1   # every op is on the path to the output; earlier values join through binary ops and stack
    s = shapes[src]
    kinds = ["elementwise"] * 4 + ["binary"] * 2 + (["sum", "max", "reshape", "flip", "pad", "slice", "stack"] if s else [])
    if len(s) > 1: kinds.append("permute")
    if math.prod(s) > 24: kinds = [k for k in kinds if k not in ("pad", "stack")]   # keep programs small
    kind = draw(st.sampled_from(kinds))
    p, other, out = None, None, s
    if kind == "elementwise":
      op = draw(st.sampled_from(ELEMENTWISE))
      if op == "exp_scaled": p = draw(st.sampled_from([0.5, -0.5, 0.3]))
      if op in ("add_const", "mul_const"): p = draw(st.sampled_from([-1.5, 0.5, 2.0, 3.0]))
    elif kind == "binary":
      op = draw(st.sampled_from(["add", "mul"]))
      same = [i for i, t in enumerate(shapes) if t == s or t == ()]
      other = draw(st.sampled_from(same))
    elif kind in ("sum", "max"):
      op, p = kind, draw(st.integers(0, len(s) - 1))
      out = s[:p] + s[p + 1:]
    elif kind == "reshape":
      op, p = kind, draw(st.sampled_from(_factorizations(math.prod(s))))
      out = p
    elif kind == "permute":
      op, p = kind, tuple(draw(st.permutations(range(len(s)))))
      out = tuple(s[i] for i in p)
    elif kind == "flip":
      op, p = kind, draw(st.integers(0, len(s) - 1))
    elif kind == "pad":
      ax = draw(st.integers(0, len(s) - 1))
      lo, hi = draw(st.sampled_from([(0, 1), (1, 0), (1, 1), (2, 1)]))
      op, p = kind, tuple((lo, hi) if i == ax else (0, 0) for i in range(len(s)))
      out = tuple(d + lo + hi if i == ax else d for i, d in enumerate(s))
    elif kind == "slice":
      ax = draw(st.integers(0, len(s) - 1))
      start = draw(st.integers(0, s[ax] - 1))
      stop = draw(st.integers(start + 1, s[ax]))
      op, p = kind, tuple(slice(start, stop) if i == ax else slice(None) for i in range(len(s)))
      out = tuple(stop - start if i == ax else d for i, d in enumerate(s))
    else:   # stack with an earlier value of the same shape
      op, other = kind, draw(st.sampled_from([i for i, t in enumerate(shapes) if t == s]))
      out = (2,) + s
    bound = _bound(op, p, bounds[src], None if other is None else bounds[other], s)
    if bound > MAX_BOUND: op, p, other, out, bound = "tanh", None, None, s, 1.0
    prog.append((op, src, p, other))
    shapes.append(out)
    bounds.append(bound)
  seed = draw(st.integers(0, 2**16))
  return shape, prog, shapes[-1], seed


def data(shape, out_shape, seed):
  rng = np.random.default_rng(seed)
  x = rng.uniform(-2, 2, shape)
  v = rng.standard_normal(shape)
  u = rng.standard_normal(out_shape)
  return x, v, u

def f_tg(prog): return lambda x: run(prog, x, TG)
def f_jx(prog): return lambda x: run(prog, x, JX)


# ---- the properties -------------------------------------------------------------------------------------------------

@settings(**SETTINGS)
@given(programs())
def test_jvp_matches_jax(case):
  shape, prog, out_shape, seed = case
  x, v, _ = data(shape, out_shape, seed)
  out, t = tinyjax.jvp(f_tg(prog), (Tensor(x),), (Tensor(v),))
  Tensor.realize(out, t)
  want_out, want_t = jax.jit(lambda x, v: jax.jvp(f_jx(prog), (x,), (v,)))(x, v)
  assert out.shape == want_out.shape and t.shape == want_t.shape
  # tinygrad's float64 sin/exp differ from XLA's by ~1e-9 relative on arguments of tens (argument reduction)
  scale = max(1.0, float(np.abs(want_t).max(initial=0.0)))
  np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-7, atol=1e-8)
  np.testing.assert_allclose(t.numpy(), want_t, rtol=1e-7, atol=1e-8 * scale)


EPS = 1e-6

def _near_a_kink(prog, x, v) -> bool:
  """A max whose winner changes within the finite-difference step: finite differences are not a derivative there."""
  if not any(op == "max" for op, *_ in prog): return False
  vals_lo, vals_hi = [Tensor(x - 4 * EPS * v)], [Tensor(x + 4 * EPS * v)]
  for vals in (vals_lo, vals_hi):
    for op, src, p, other in prog:
      vals.append(apply(TG, op, vals[src], p, None if other is None else vals[other]))
  for op, src, p, _ in prog:
    if op == "max":
      lo, hi = vals_lo[src].numpy(), vals_hi[src].numpy()
      if not np.array_equal(lo.argmax(axis=p), hi.argmax(axis=p)): return True
  return False

@settings(**SETTINGS)
@given(programs())
def test_jvp_matches_finite_differences(case):
  shape, prog, out_shape, seed = case
  x, v, _ = data(shape, out_shape, seed)
  f = f_tg(prog)
  _, t = tinyjax.jvp(f, (Tensor(x),), (Tensor(v),))
  hi, lo = f(Tensor(x + EPS * v)), f(Tensor(x - EPS * v))
  Tensor.realize(t, hi, lo)
  fd = (hi.numpy() - lo.numpy()) / (2 * EPS)
  t = t.numpy()
  if _near_a_kink(prog, x, v): return
  scale = max(1.0, float(np.abs(t).max(initial=0.0)), float(np.abs(hi.numpy()).max(initial=0.0)))
  np.testing.assert_allclose(t, fd, rtol=1e-5, atol=1e-5 * scale)


@settings(**SETTINGS)
@given(programs())
def test_vjp_is_the_transpose_of_jvp(case):
  shape, prog, out_shape, seed = case
  x, v, u = data(shape, out_shape, seed)
  f = f_tg(prog)
  out1, jv = tinyjax.jvp(f, (Tensor(x),), (Tensor(v),))
  out2, pullback = tinyjax.vjp(f, Tensor(x))
  jtu, = pullback(Tensor(u))
  Tensor.realize(out1, out2, jv, jtu)
  assert jv.shape == out_shape and jtu.shape == shape
  np.testing.assert_allclose(out1.numpy(), out2.numpy(), rtol=1e-12, atol=0)
  lhs, rhs = float((u * jv.numpy()).sum()), float((jtu.numpy() * v).sum())
  scale = float(np.abs(u * jv.numpy()).sum() + np.abs(jtu.numpy() * v).sum())
  assert abs(lhs - rhs) <= 1e-10 * max(1.0, scale), (lhs, rhs)

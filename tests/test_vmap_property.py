"""Property-based tests: tinyjax.vmap of random tinygrad programs equals a per-example Python loop.

A program is a list of steps drawn by hypothesis for the current (per-example) shape; `run` interprets it on a Tensor.
Shapes are small (rank 0-4, dims <= 8, at most 96 elements) so each example compiles a few tiny kernels.

Every example compiles kernels (~0.1 s each), so shrinking a failure can take many minutes: it is off unless
TINYJAX_SHRINK=1 is set. A failing example prints its program (hypothesis `note`), which is a repro on its own.
"""
import os
import math
from functools import partial
import numpy as np
from hypothesis import given, settings, note, strategies as st, HealthCheck, Phase
from tinygrad import Tensor, dtypes

import tinyjax
from tinyjax import lax as tl
import conftest

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                phases=list(Phase) if os.environ.get("TINYJAX_SHRINK") else [Phase.explicit, Phase.generate])
MAX_RANK, MAX_NUMEL = 4, 96

# ---- the op vocabulary -------------------------------------------------------------------------------------------------

UNARY = {
  "neg": lambda t: -t,
  "abs": lambda t: t.abs(),
  "relu": lambda t: t.relu(),
  "sin": lambda t: t.sin(),
  "tanh": lambda t: t.tanh(),
  "sigmoid": lambda t: t.sigmoid(),
  "exp": lambda t: t.clip(-4, 4).exp(),
  "log": lambda t: (t * t + 1).log(),
  "sqrt": lambda t: (t * t + 1).sqrt(),
  "recip": lambda t: (t * t + 1).reciprocal(),
}
INT_UNARY = ("neg", "abs", "relu")

BINARY_CONST = {
  "add": lambda t, c: t + c,
  "rsub": lambda t, c: c - t,
  "mul": lambda t, c: t * c,
  "div": lambda t, c: t / (abs(c) + 0.5),
  "maximum": lambda t, c: t.maximum(c),
  "minimum": lambda t, c: t.minimum(c),
  "where": lambda t, c: (t > c).where(t, t * c),
  "cmp": lambda t, c: (t < c).where(1, -1).cast(t.dtype) * t,
}
INT_BINARY = ("add", "rsub", "mul", "maximum", "minimum", "where", "cmp")
FLOAT_CONSTS, INT_CONSTS = (-1.5, -0.5, 0.0, 0.25, 1.0, 2.0), (-2, -1, 0, 1, 3)

REDUCE = {"sum": Tensor.sum, "max": Tensor.max, "min": Tensor.min, "mean": Tensor.mean}
INT_REDUCE = ("sum", "max", "min")


def apply(step, t: Tensor) -> Tensor:
  op, *p = step
  if op == "unary": return UNARY[p[0]](t)
  if op == "bconst": return BINARY_CONST[p[0]](t, p[1])
  if op == "closure":   # a closed-over (unbatched) weight, right-aligned broadcast, on either side
    w, kind, left = p
    w = Tensor(w)
    a, b = (w, t) if left else (t, w)
    return a + b if kind == "add" else a * b if kind == "mul" else a.maximum(b)
  if op == "reduce": return REDUCE[p[0]](t, axis=p[1], keepdim=p[2])
  if op == "sub_reduce": return t - REDUCE[p[0]](t, axis=p[1], keepdim=True)
  if op == "cumsum": return t.cumsum(p[0])
  if op == "reshape": return t.reshape(p[0])
  if op == "permute": return t.permute(p[0])
  if op == "flip": return t.flip(p[0])
  if op == "pad": return t.pad(p[0])
  if op == "shrink": return t.shrink(p[0])
  if op == "slice": return t[(slice(None),) * p[0] + (slice(*p[1]),)]
  if op == "index": return t[(slice(None),) * p[0] + (p[1],)]
  if op == "expand":
    axis, k = p
    u = t.unsqueeze(axis)
    return u.expand(tuple(k if i == axis else s for i, s in enumerate(u.shape)))
  if op == "matmul": return t @ Tensor(p[0])
  if op == "rmatmul": return Tensor(p[0]) @ t
  if op == "stack": return Tensor.stack(run(p[0], t), run(p[1], t), dim=p[2])
  if op == "cat": return run(p[0], t).cat(run(p[1], t), dim=p[2])
  raise AssertionError(op)

def run(prog, t: Tensor) -> Tensor:
  for step in prog: t = apply(step, t)
  return t


# ---- drawing programs valid for a shape --------------------------------------------------------------------------------

def _reshapes(shape):
  n, r = math.prod(shape), len(shape)
  out = {(n,), tuple(reversed(shape))}
  if n == 1: out.add(())
  if r < MAX_RANK:
    out |= {shape[:i] + (1,) + shape[i:] for i in range(r + 1)}
  out |= {shape[:i] + shape[i + 1:] for i in range(r) if shape[i] == 1}
  out |= {shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:] for i in range(r - 1)}
  if r < MAX_RANK:
    out |= {shape[:i] + (a, shape[i] // a) + shape[i + 1:] for i in range(r) for a in range(2, shape[i]) if shape[i] % a == 0}
  return sorted(out)

def _slice_len(d, sl): return len(range(*slice(*sl).indices(d)))

def draw_elementwise(draw, is_float, max_len=2):
  steps = []
  for _ in range(draw(st.integers(0, max_len))):
    if draw(st.booleans()):
      steps.append(("unary", draw(st.sampled_from(sorted(UNARY) if is_float else INT_UNARY))))
    else:
      steps.append(("bconst", draw(st.sampled_from(sorted(BINARY_CONST) if is_float else INT_BINARY)),
                    draw(st.sampled_from(FLOAT_CONSTS if is_float else INT_CONSTS))))
  return steps

def weight(draw, shape, is_float):
  rng = np.random.default_rng(draw(st.integers(0, 2**16)))
  if is_float: return rng.standard_normal(shape).astype(np.float32)
  return rng.integers(-3, 4, size=shape).astype(np.int32)

def draw_step(draw, shape, is_float, nested=True):
  r, n = len(shape), math.prod(shape)
  grow = n * 2 <= MAX_NUMEL
  ops = ["unary", "bconst", "closure", "reshape"]
  if r >= 1: ops += ["reduce", "sub_reduce", "cumsum", "permute", "flip", "shrink", "slice", "index"]
  if r >= 1 and grow: ops += ["pad"]
  if r < MAX_RANK and grow: ops += ["expand", "closure_big"]
  if r >= 1 and is_float: ops += ["matmul", "rmatmul"]
  if nested and r < MAX_RANK and grow: ops += ["stack"]
  if nested and r >= 1 and grow: ops += ["cat"]
  op = draw(st.sampled_from(ops))
  def axis(): return draw(st.integers(-r, r - 1))
  if op == "unary": return ("unary", draw(st.sampled_from(sorted(UNARY) if is_float else INT_UNARY)))
  if op == "bconst":
    return ("bconst", draw(st.sampled_from(sorted(BINARY_CONST) if is_float else INT_BINARY)),
            draw(st.sampled_from(FLOAT_CONSTS if is_float else INT_CONSTS)))
  if op == "closure":
    k = draw(st.integers(0, r))
    return ("closure", weight(draw, shape[k:], is_float), draw(st.sampled_from(["add", "mul", "max"])), draw(st.booleans()))
  if op == "closure_big":
    d = draw(st.integers(1, 3))
    return ("closure", weight(draw, (d,) + shape, is_float), draw(st.sampled_from(["add", "mul", "max"])), draw(st.booleans()))
  if op == "reshape": return ("reshape", draw(st.sampled_from(_reshapes(shape))))
  if op == "reduce":
    kinds = sorted(REDUCE) if is_float else INT_REDUCE
    return ("reduce", draw(st.sampled_from(kinds)), draw(st.one_of(st.none(), st.integers(-r, r - 1))), draw(st.booleans()))
  if op == "sub_reduce":
    return ("sub_reduce", draw(st.sampled_from(sorted(REDUCE) if is_float else INT_REDUCE)), axis())
  if op == "cumsum": return ("cumsum", axis())
  if op == "permute": return ("permute", tuple(draw(st.permutations(range(r)))))
  if op == "flip": return ("flip", tuple(draw(st.lists(st.integers(0, r - 1), min_size=1, max_size=r, unique=True))))
  if op == "pad": return ("pad", tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(r)))
  if op == "shrink":
    arg = []
    for d in shape:
      s = draw(st.integers(0, d - 1))
      arg.append((s, draw(st.integers(s + 1, d))))
    return ("shrink", tuple(arg))
  if op == "slice":
    ax = draw(st.integers(0, r - 1))
    d = shape[ax]
    cands = [(a, b, c) for a in (None, 0, 1, -1) for b in (None, d, -1, 1) for c in (1, 2, 3, -1, -2)
             if _slice_len(d, (a, b, c)) >= 1]
    return ("slice", ax, draw(st.sampled_from(cands)))
  if op == "index":
    ax = draw(st.integers(0, r - 1))
    return ("index", ax, draw(st.integers(-shape[ax], shape[ax] - 1)))
  if op == "expand": return ("expand", draw(st.integers(0, r)), draw(st.integers(1, 3)))
  if op == "matmul": return ("matmul", weight(draw, (shape[-1], draw(st.integers(1, 3))), is_float))
  if op == "rmatmul": return ("rmatmul", weight(draw, (draw(st.integers(1, 3)), shape[-2] if r >= 2 else shape[0]), is_float))
  if op == "stack":
    return ("stack", draw_elementwise(draw, is_float), draw_elementwise(draw, is_float), draw(st.integers(-(r + 1), r)))
  if op == "cat":
    return ("cat", draw_elementwise(draw, is_float), draw_elementwise(draw, is_float), axis())
  raise AssertionError(op)

def draw_program(draw, shape, is_float=True, min_ops=2, max_ops=5):
  """A list of steps valid for `shape`, and the final shape (shapes are inferred lazily by tinygrad, nothing runs)."""
  prog = []
  probe = Tensor.empty(*shape, dtype=dtypes.float32 if is_float else dtypes.int32)
  for _ in range(draw(st.integers(min_ops, max_ops))):
    step = draw_step(draw, tuple(probe.shape), is_float)
    nxt = apply(step, probe)
    if math.prod(nxt.shape) > MAX_NUMEL * 2 or nxt.ndim > MAX_RANK + 1: continue   # keep things small
    prog.append(step)
    probe = nxt
  note(f"shape={shape} program={prog!r} -> {tuple(probe.shape)}")
  return prog, tuple(probe.shape)

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)

def data_for(draw, shape, is_float=True):
  rng = np.random.default_rng(draw(st.integers(0, 2**16)))
  if is_float: return rng.standard_normal(shape).astype(np.float32)
  return rng.integers(-5, 6, size=shape).astype(np.int32)

def loop(f, xs):
  """The reference: f on each example, stacked along a new leading axis."""
  return np.stack([f(*(Tensor(np.ascontiguousarray(x)) for x in ex)).numpy() for ex in zip(*xs, strict=True)])

assert_close = partial(conftest.assert_close, rtol=2e-4, atol=2e-4, dtype=False)   # any dtypes; NaN == NaN


# ---- properties ----------------------------------------------------------------------------------------------------------

@settings(max_examples=30, **SETTINGS)
@given(st.data())
def test_vmap_of_a_random_program_equals_a_loop(data):
  draw = data.draw
  shape, B = draw(shapes, label="shape"), draw(st.integers(1, 4), label="B")
  prog, _ = draw_program(draw, shape)
  X = data_for(draw, (B,) + shape)
  got = tinyjax.vmap(lambda x: run(prog, x))(Tensor(X)).numpy()
  assert_close(got, loop(lambda x: run(prog, x), [X]))

@settings(max_examples=20, **SETTINGS)
@given(st.data())
def test_vmap_in_axes_1_and_random_out_axes_equals_a_loop(data):
  draw = data.draw
  shape, B = draw(shapes, label="shape"), draw(st.integers(1, 4), label="B")
  prog, out_shape = draw_program(draw, shape)
  in_axes = draw(st.sampled_from([1, -len(shape)]), label="in_axes")   # the same axis, two spellings
  out_axes = draw(st.integers(-(len(out_shape) + 1), len(out_shape)), label="out_axes")
  X0 = data_for(draw, (B,) + shape)
  X = np.ascontiguousarray(np.moveaxis(X0, 0, 1))
  got = tinyjax.vmap(lambda x: run(prog, x), in_axes=in_axes, out_axes=out_axes)(Tensor(X)).numpy()
  assert_close(got, np.moveaxis(loop(lambda x: run(prog, x), [X0]), 0, out_axes))

COMBINE = {
  "add": lambda x, y: x + y,
  "mul": lambda x, y: x * y,
  "max": lambda x, y: x.maximum(y),
  "where": lambda x, y: (x > y).where(x, y * 2),
}

@settings(max_examples=15, **SETTINGS)
@given(st.data())
def test_two_arguments_mapped_or_not_and_tuple_output_equal_a_loop(data):
  draw = data.draw
  shape, B = draw(shapes, label="shape"), draw(st.integers(1, 4), label="B")
  comb = draw(st.sampled_from(sorted(COMBINE)), label="combine")
  prog, out_shape = draw_program(draw, shape, max_ops=4)
  y_axis = draw(st.sampled_from([0, None, -1] + ([1] if len(shape) >= 1 else [])), label="y_in_axis")
  out_axes = (draw(st.integers(-(len(out_shape) + 1), len(out_shape))), draw(st.sampled_from([0, -1])))
  X = data_for(draw, (B,) + shape)
  Y0 = data_for(draw, (B,) + shape)
  Yu = data_for(draw, shape)
  def f(x, y): return run(prog, COMBINE[comb](x, y)), (y * 2).sum() + x.max()
  if y_axis is None:
    Y, Ys = Yu, np.broadcast_to(Yu, (B,) + shape)
  else:
    Y, Ys = np.ascontiguousarray(np.moveaxis(Y0, 0, y_axis)), Y0
  got = tinyjax.vmap(f, in_axes=(0, y_axis), out_axes=out_axes)(Tensor(X), Tensor(Y))
  want0 = loop(lambda x, y: f(x, y)[0], [X, Ys])
  want1 = loop(lambda x, y: f(x, y)[1], [X, Ys])
  assert_close(got[0].numpy(), np.moveaxis(want0, 0, out_axes[0]))
  assert_close(got[1].numpy(), np.moveaxis(want1, 0, out_axes[1]))

@settings(max_examples=8, **SETTINGS)
@given(st.data())
def test_nested_vmap_equals_a_double_loop(data):
  draw = data.draw
  shape = draw(shapes, label="shape")
  B1, B2 = draw(st.integers(1, 3), label="B1"), draw(st.integers(1, 3), label="B2")
  prog, _ = draw_program(draw, shape, max_ops=4)
  outer_axis = draw(st.sampled_from([0, 1]), label="outer_in_axes")
  X = data_for(draw, (B1, B2) + shape)
  def g(x): return run(prog, x)
  got = tinyjax.vmap(tinyjax.vmap(g), in_axes=outer_axis)(Tensor(X)).numpy()
  Xo = X if outer_axis == 0 else np.swapaxes(X, 0, 1)     # outer examples first
  want = np.stack([loop(g, [Xo[i]]) for i in range(Xo.shape[0])])
  assert_close(got, want)

@settings(max_examples=12, **SETTINGS)
@given(st.data())
def test_collective_of_a_random_program_equals_a_reduction_of_the_loop(data):
  draw = data.draw
  shape, B = draw(shapes, label="shape"), draw(st.integers(1, 4), label="B")
  prog, _ = draw_program(draw, shape, max_ops=4)
  kind = draw(st.sampled_from(["psum", "pmean", "pmax", "pmin"]), label="collective")
  X = data_for(draw, (B,) + shape)
  def f(x):
    y = run(prog, x)
    return getattr(tl, kind)(y, "i") - y, getattr(tl, kind)(y, "i")
  got = tinyjax.vmap(f, axis_name="i", out_axes=(0, None))(Tensor(X))
  per = loop(lambda x: run(prog, x), [X])
  red = {"psum": per.sum(0), "pmean": per.mean(0), "pmax": per.max(0), "pmin": per.min(0)}[kind]
  assert_close(got[1].numpy(), red)
  assert_close(got[0].numpy(), red[None] - per)

@settings(max_examples=12, **SETTINGS)
@given(st.data())
def test_vmap_of_a_random_integer_program_equals_a_loop(data):
  draw = data.draw
  shape, B = draw(shapes, label="shape"), draw(st.integers(1, 4), label="B")
  prog, _ = draw_program(draw, shape, is_float=False)
  X = data_for(draw, (B,) + shape, is_float=False)
  got = tinyjax.vmap(lambda x: run(prog, x))(Tensor(X)).numpy()
  want = loop(lambda x: run(prog, x), [X])
  assert got.dtype == want.dtype
  np.testing.assert_array_equal(got, want)

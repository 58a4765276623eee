"""tinyjax.vmap on each tinygrad construct, checked numerically against a per-example Python loop.

The reference (`loopmap`) slices the inputs with numpy, runs the *same* tinygrad function on each slice
(`Tensor(X[b])`), and stacks the results: so the tests check vmap's batching, not tinygrad's numerics. A few cases
additionally compare against a pure numpy reference.
"""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes, function

import tinyjax

B = 3   # batch size of most cases
RNG = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
  return RNG.uniform(lo, hi, shape).astype(np.float32)

def pos(*shape): return f32(*shape, lo=0.5, hi=2.0)

def i32(*shape, lo=-20, hi=20):
  return RNG.integers(lo, hi, shape).astype(np.int32)


# ---- reference: a Python loop over the mapped axis ------------------------------------------------------------------

def _np(x): return x.numpy() if isinstance(x, Tensor) else np.asarray(x)

def loopmap(fn, in_axes=0, out_axes=0):
  """A slow vmap: per-example calls of `fn` on Tensor(slice), results np.stack-ed at out_axes. Returns a Tensor."""
  def mapped(*args):
    arrs = [_np(a) for a in args]
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(arrs)
    size = next(a.shape[ax] for a, ax in zip(arrs, axes, strict=True) if ax is not None)
    outs = []
    for b in range(size):
      sl = [Tensor(a) if ax is None else Tensor(np.array(np.take(a, b, axis=ax))) for a, ax in zip(arrs, axes, strict=True)]
      outs.append(_np(fn(*sl)))
    return Tensor(np.stack(outs, axis=out_axes))
  return mapped

def assert_same(got: np.ndarray, want: np.ndarray, rtol=1e-5, atol=1e-5):
  assert got.shape == want.shape, (got.shape, want.shape)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  if np.issubdtype(got.dtype, np.floating): np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
  else: np.testing.assert_array_equal(got, want)

def check_vmap(fn, *arrays, in_axes=0, out_axes=0, np_fn=None, rtol=1e-5, atol=1e-5):
  """vmap(fn)(*arrays) == loop reference (and == the numpy reference np_fn, applied per example, if given)."""
  got = tinyjax.vmap(fn, in_axes=in_axes, out_axes=out_axes)(*[Tensor(a) for a in arrays]).numpy()
  want = loopmap(fn, in_axes, out_axes)(*arrays).numpy()
  assert_same(got, want, rtol, atol)
  if np_fn is not None:
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(arrays)
    size = next(a.shape[ax] for a, ax in zip(arrays, axes, strict=True) if ax is not None)
    ref = np.stack([np_fn(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(arrays, axes, strict=True)])
                    for b in range(size)], axis=out_axes)
    np.testing.assert_allclose(got, ref.astype(got.dtype), rtol=max(rtol, 1e-5), atol=max(atol, 1e-5))
  return got


def sigmoid_np(x): return 1 / (1 + np.exp(-x))

# ---- elementwise ----------------------------------------------------------------------------------------------------

C5 = f32(5)   # closed over (unbatched) constants
W45, W54 = f32(4, 5), f32(5, 4)

ELEMENTWISE = [
  ("add", lambda x, y: x + y, [f32(B, 5), f32(B, 5)], np.add),
  ("mul", lambda x, y: x * y, [f32(B, 5), f32(B, 5)], np.multiply),
  ("div", lambda x, y: x / y, [f32(B, 5), pos(B, 5)], np.divide),
  ("scalar_ops", lambda x: (2.0 - x) * 3 + 1 / (x * x + 1), [f32(B, 5)], lambda x: (2 - x) * 3 + 1 / (x * x + 1)),
  ("closed_over_broadcast", lambda x: x * Tensor(C5) + Tensor(C5[:1]), [f32(B, 4, 5)], lambda x: x * C5 + C5[:1]),
  ("scalar_per_example", lambda s: s * 2 + s.exp(), [f32(B)], lambda s: s * 2 + np.exp(s)),
  ("sin", Tensor.sin, [f32(B, 5)], np.sin),
  ("exp", Tensor.exp, [f32(B, 5)], np.exp),
  ("log", Tensor.log, [pos(B, 5)], np.log),
  ("sqrt", Tensor.sqrt, [pos(B, 5)], np.sqrt),
  ("reciprocal", Tensor.reciprocal, [pos(B, 5)], np.reciprocal),
  ("neg", lambda x: -x, [f32(B, 5)], np.negative),
  ("abs", Tensor.abs, [f32(B, 5)], np.abs),
  ("relu", Tensor.relu, [f32(B, 5)], lambda x: np.maximum(x, 0)),
  ("sigmoid", Tensor.sigmoid, [f32(B, 5)], sigmoid_np),
  ("tanh", Tensor.tanh, [f32(B, 5)], np.tanh),
  ("where", lambda c, x, y: Tensor.where(c > 0, x, y), [f32(B, 5), f32(B, 5), f32(B, 5)], lambda c, x, y: np.where(c > 0, x, y)),
  ("where_scalar_branch", lambda x: (x > 0).where(x, 0.5), [f32(B, 2, 3)], lambda x: np.where(x > 0, x, 0.5)),
  ("cmp_lt", lambda x, y: x < y, [f32(B, 5), f32(B, 5)], np.less),
  ("cmp_eq_ne", lambda x, y: x.eq(y) | (x != (y + 1)), [i32(B, 6, lo=0, hi=3), i32(B, 6, lo=0, hi=3)],
   lambda x, y: (x == y) | (x != y + 1)),
  ("int_floordiv", lambda x, y: x // y, [i32(B, 6), i32(B, 6, lo=1, hi=7)], None),
  ("int_mod", lambda x, y: x % y, [i32(B, 6), i32(B, 6, lo=1, hi=7)], None),
  ("int_and", lambda x, y: x & y, [i32(B, 6), i32(B, 6)], np.bitwise_and),
  ("int_or", lambda x, y: x | y, [i32(B, 6), i32(B, 6)], np.bitwise_or),
  ("int_xor", lambda x, y: x ^ y, [i32(B, 6), i32(B, 6)], np.bitwise_xor),
  ("int_shifts", lambda x: (x << 3) + (x >> 1), [i32(B, 6, lo=0, hi=100)], lambda x: (x << 3) + (x >> 1)),
  ("int_shift_by_tensor", lambda x, s: x << s, [i32(B, 6, lo=0, hi=100), i32(B, 6, lo=0, hi=5)], np.left_shift),
  ("pow_tensor", lambda x, y: x ** y, [pos(B, 5), f32(B, 5)], np.power),
  ("rpow", lambda x: 2 ** x, [f32(B, 5)], lambda x: 2.0 ** x),
  ("maximum_minimum", lambda x, y: x.maximum(y) + x.minimum(0.5), [f32(B, 5), f32(B, 5)],
   lambda x, y: np.maximum(x, y) + np.minimum(x, 0.5)),
  ("cast_float_int", lambda x: (x * 5).cast(dtypes.int32), [f32(B, 5)], lambda x: (x * 5).astype(np.int32)),
  ("cast_int_float", lambda x: x.cast(dtypes.float32) / 2, [i32(B, 5)], lambda x: x.astype(np.float32) / 2),
  ("cast_bool", lambda x: x.cast(dtypes.bool), [i32(B, 5, lo=-2, hi=2)], lambda x: x.astype(bool)),
  ("bitcast_f32_i32", lambda x: x.bitcast(dtypes.int32), [f32(B, 5)], lambda x: x.view(np.int32)),
  ("bitcast_f32_f16_rescales_last_axis", lambda x: x.bitcast(dtypes.float16), [f32(B, 2, 3)],
   lambda x: x.view(np.float16)),
]

@pytest.mark.parametrize("name,fn,arrays,np_fn", ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_elementwise(name, fn, arrays, np_fn):
  check_vmap(fn, *arrays, np_fn=np_fn, rtol=1e-5, atol=1e-6)


# ---- reductions and matmul ------------------------------------------------------------------------------------------

X345 = f32(B, 4, 5)
REDUCTIONS = [
  ("sum_all", lambda x: x.sum(), lambda x: x.sum()),
  ("sum_axis0", lambda x: x.sum(0), lambda x: x.sum(0)),
  ("sum_axis1_keepdim", lambda x: x.sum(1, keepdim=True), lambda x: x.sum(1, keepdims=True)),
  ("mean_axis_neg1_keepdim", lambda x: x.mean(-1, keepdim=True), lambda x: x.mean(-1, keepdims=True)),
  ("max_all", lambda x: x.max(), lambda x: x.max()),
  ("max_axis1", lambda x: x.max(1), lambda x: x.max(1)),
  ("min_axis0_keepdim", lambda x: x.min(0, keepdim=True), lambda x: x.min(0, keepdims=True)),
  ("prod_all", lambda x: x.prod(), lambda x: x.prod()),
  ("prod_axis1", lambda x: x.prod(1), lambda x: x.prod(1)),
  ("reduce_then_broadcast", lambda x: x - x.max(1, keepdim=True) + x.sum(0), lambda x: x - x.max(1, keepdims=True) + x.sum(0)),
]

@pytest.mark.parametrize("name,fn,np_fn", REDUCTIONS, ids=[c[0] for c in REDUCTIONS])
def test_reductions(name, fn, np_fn):
  check_vmap(fn, X345, np_fn=np_fn, rtol=1e-5, atol=1e-5)

def test_reduction_3d_middle_axis():
  check_vmap(lambda x: x.sum(1) * x.max(axis=(0, 1), keepdim=True).squeeze(1), f32(B, 2, 3, 4))

MATMUL = [
  ("vec_at_weight", lambda x: x @ Tensor(W45), [f32(B, 4)], (0,), lambda x: x @ W45),
  ("mat_at_weight", lambda x: x @ Tensor(W45), [f32(B, 3, 4)], (0,), lambda x: x @ W45),
  ("weight_at_vec", lambda x: Tensor(W54) @ x, [f32(B, 4)], (0,), lambda x: W54 @ x),
  ("weight_at_mat", lambda x: Tensor(W54) @ x, [f32(B, 4, 3)], (0,), lambda x: W54 @ x),
  ("batched_at_batched", lambda x, y: x @ y, [f32(B, 3, 4), f32(B, 4, 2)], (0, 0), np.matmul),
  ("batched_at_batched_axis1", lambda x, y: x @ y, [f32(3, B, 4), f32(4, B, 2)], (1, 1), np.matmul),
  ("vec_dot_vec", lambda x, y: x.dot(y), [f32(B, 4), f32(B, 4)], (0, 0), np.dot),
]

@pytest.mark.parametrize("name,fn,arrays,in_axes,np_fn", MATMUL, ids=[c[0] for c in MATMUL])
def test_matmul(name, fn, arrays, in_axes, np_fn):
  check_vmap(fn, *arrays, in_axes=in_axes, np_fn=np_fn, rtol=1e-5, atol=1e-5)


# ---- movement ops ---------------------------------------------------------------------------------------------------

X46 = f32(B, 4, 6)
MOVEMENT = [
  ("reshape", lambda x: x.reshape(2, 12), X46),
  ("flatten", lambda x: x.flatten(), X46),
  ("permute", lambda x: x.permute(2, 0, 1), f32(B, 2, 3, 4)),
  ("transpose", lambda x: x.transpose(0, 1), X46),
  ("T_then_elementwise", lambda x: x.T * Tensor(W54.T), f32(B, 5, 4)),
  ("expand_new_dim", lambda x: x.reshape(1, 6).expand(3, 6), f32(B, 6)),
  ("expand_size1", lambda x: x.expand(4, 6), f32(B, 1, 6)),
  ("shrink_slice", lambda x: x[1:3, 2:], X46),
  ("step_slice", lambda x: x[::2, 1::3], X46),
  ("negative_step", lambda x: x[::-1], X46),
  ("negative_step_offset", lambda x: x[3:0:-2, ::-1], X46),
  ("pad", lambda x: x.pad(((1, 2), (0, 1))), X46),
  ("pad_value", lambda x: x.pad((1, 1), value=-3.0), X46),
  ("flip_both", lambda x: x.flip((0, 1)), X46),
  ("unsqueeze", lambda x: x.unsqueeze(0).unsqueeze(-1), X46),
  ("squeeze", lambda x: x.squeeze(1), f32(B, 4, 1, 5)),
  ("scalar_reshape_expand_pad", lambda s: s.reshape(1, 1).expand(2, 3).pad(((1, 0), (0, 0))), f32(B)),
  ("chain", lambda x: x.reshape(2, 2, 6).permute(2, 1, 0)[1:5:2].pad(((0, 0), (1, 0), (0, 0))).flip(1).sum(0), X46),
]

@pytest.mark.parametrize("name,fn,x", MOVEMENT, ids=[c[0] for c in MOVEMENT])
def test_movement(name, fn, x):
  check_vmap(fn, x)


# ---- stack / cat / indexing -----------------------------------------------------------------------------------------

C4 = f32(4)
STACK_INDEX = [
  ("stack_with_outside", lambda x: Tensor.stack(x, OUT4, x * 2), f32(B, 4)),
  ("stack_dim1", lambda x: Tensor.stack(OUT4, x, dim=1), f32(B, 4)),
  ("stack_of_reductions", lambda x: Tensor.stack(x.sum(), x.max(), x.min(), x.mean()), f32(B, 4)),
  ("cat_with_outside", lambda x: Tensor.cat(x, OUT4, x), f32(B, 4)),
  ("cat_dim1", lambda x: Tensor.cat(OUT23, x, dim=1), f32(B, 2, 2)),
  ("index_scalar", lambda x: x[2], f32(B, 4)),
  ("index_scalar_neg", lambda x: x[-1], f32(B, 3, 4)),
  ("index_slice", lambda x: x[1:3], f32(B, 4)),
  ("index_list", lambda x: x[[0, 2, 2]], f32(B, 4)),
  ("index_list_second_dim", lambda x: x[:, [3, 0]], f32(B, 3, 4)),
  ("index_tensor", lambda x: x[Tensor([2, 0])], f32(B, 4)),
  ("index_two_tensors", lambda x: x[Tensor([1, 0, 2]), Tensor([3, 3, 0])], f32(B, 3, 4)),
  ("stack_flat_scalars", lambda x: (lambda flat: Tensor.stack(flat[0], flat[4], flat[8]))(x.flatten()), f32(B, 3, 3)),
  ("reduce_stack_index", lambda x: Tensor.stack(x[:2].sum(), x[2:].sum())[[0, 1]], f32(B, 4)),
  ("stacked_computed_scalar_index",
   lambda x: (lambda t: Tensor.stack(t[0], t[1], t[5]))(Tensor.stack(x * 2, x * 3, x - 1).flatten()), f32(B, 2)),
  ("stacked_computed_scalar_index_4",
   lambda x: (lambda t: Tensor.stack(t[0], t[3], t[7], t[-1], t[4]))(Tensor.stack(x * 2, x.exp(), x - 1, x.sum().expand(3)).flatten()),
   f32(B, 3)),
]
OUT4 = Tensor(C4)
OUT23 = Tensor(f32(2, 3))

@pytest.mark.parametrize("name,fn,x", STACK_INDEX, ids=[c[0] for c in STACK_INDEX])
def test_stack_cat_index(name, fn, x):
  check_vmap(fn, x)

def test_stack_cat_numpy():
  x = f32(B, 4)
  got = tinyjax.vmap(lambda x: Tensor.cat(Tensor.stack(x[:2].sum(), x[2:].sum()), OUT4[:1]))(Tensor(x)).numpy()
  want = np.stack([x[:, :2].sum(1), x[:, 2:].sum(1), np.broadcast_to(C4[0], (B,))], axis=1)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- common tinygrad functions --------------------------------------------------------------------------------------

CONV_W = f32(3, 2, 3, 3)
GATHER_IDX = i32(4, 2, lo=0, hi=5)
FUNCTIONS = [
  ("softmax", lambda x: x.softmax(), f32(B, 6)),
  ("softmax_axis0", lambda x: x.softmax(0), f32(B, 4, 5)),
  ("log_softmax", lambda x: x.log_softmax(-1), f32(B, 4, 5)),
  ("layernorm", lambda x: x.layernorm(), f32(B, 4, 6)),
  ("conv2d", lambda x: x.reshape(1, 2, 5, 5).conv2d(Tensor(CONV_W), padding=1).relu(), f32(B, 50)),
  ("conv2d_stride", lambda x: x.reshape(1, 2, 6, 6).conv2d(Tensor(CONV_W), Tensor(C5[:3]), stride=2), f32(B, 72)),
  ("cumsum_axis1", lambda x: x.cumsum(1), f32(B, 3, 4)),
  ("argmax_axis", lambda x: x.argmax(1), f32(B, 3, 4)),
  ("gather", lambda x: x.gather(1, Tensor(GATHER_IDX)), f32(B, 4, 5)),
]

@pytest.mark.parametrize("name,fn,x", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_functions(name, fn, x):
  check_vmap(fn, x, rtol=1e-5, atol=1e-5)

def test_softmax_numpy():
  x = f32(B, 6)
  e = np.exp(x - x.max(1, keepdims=True))
  np.testing.assert_allclose(tinyjax.vmap(Tensor.softmax)(Tensor(x)).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)

def test_gather_batched_index():
  idx = RNG.integers(0, 5, (B, 4, 2)).astype(np.int32)
  check_vmap(lambda x, i: x.gather(1, i), f32(B, 4, 5), idx, in_axes=(0, 0))

def test_index_by_batched_tensor():
  idx = RNG.integers(0, 4, (B, 2)).astype(np.int32)
  x = f32(B, 4)
  got = check_vmap(lambda x, i: x[i], x, idx, in_axes=(0, 0))
  np.testing.assert_array_equal(got, np.take_along_axis(x, idx, 1))


# ---- operations on vmap's results -----------------------------------------------------------------------------------

def test_ops_on_results():
  x = f32(4, 5)
  out = tinyjax.vmap(lambda v: (v * v).sum())(Tensor(x))
  np.testing.assert_allclose((out.sum(0) * 2).numpy(), (x * x).sum() * 2, rtol=1e-5)
  out2 = tinyjax.vmap(lambda v: v.softmax())(Tensor(x))
  np.testing.assert_allclose((out2 @ Tensor(W54)).numpy(), loopmap(Tensor.softmax)(x).numpy() @ W54, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose((out2[1:, ::-1] + Tensor(x)[1:]).max(1).numpy(),
                             (loopmap(Tensor.softmax)(x).numpy()[1:, ::-1] + x[1:]).max(1), rtol=1e-5)

def test_tuple_outputs_with_out_axes():
  x = f32(B, 2, 4)
  s, t = tinyjax.vmap(lambda v: (v.sum(), v.T * 2), out_axes=(0, -1))(Tensor(x))
  np.testing.assert_allclose(s.numpy(), x.sum((1, 2)), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(t.numpy(), np.moveaxis(np.swapaxes(x, 1, 2) * 2, 0, -1), rtol=1e-6)

def test_results_feed_second_vmap():
  x = f32(4, 5)
  y = tinyjax.vmap(lambda v: v.exp())(Tensor(x))
  z = tinyjax.vmap(lambda v: v.sum(), in_axes=1)(y)
  np.testing.assert_allclose(z.numpy(), np.exp(x).sum(0), rtol=1e-5)


# ---- in_axes / out_axes ---------------------------------------------------------------------------------------------

AXES = [
  ("in1", lambda x: x.sum(0) * x[0], [f32(4, B, 5)], 1, 0),
  ("in_neg1", lambda x: x.cumsum(1), [f32(4, 5, B)], -1, 0),
  ("out1", lambda x: x.reshape(2, 3) * 2, [f32(B, 6)], 0, 1),
  ("out_neg1", lambda x: x.T, [f32(B, 2, 3)], 0, -1),
  ("in1_out_neg1", lambda x: x.max(0), [f32(2, B, 3, 4)], 1, -1),
  ("mixed_mapped_broadcast", lambda x, w, y: (x @ w) + y.sum(0), [f32(B, 4), W45, f32(2, B, 5)], (0, None, 1), 0),
  ("mixed_out1", lambda x, w, y: x[:, None] * w + y, [f32(4, B), W45, f32(B, 5)], (1, None, 0), 1),
  ("unbatched_output_broadcast", lambda x, w: w.sum(0), [f32(B, 4), W45], (0, None), 0),
]

@pytest.mark.parametrize("name,fn,arrays,in_axes,out_axes", AXES, ids=[c[0] for c in AXES])
def test_axes(name, fn, arrays, in_axes, out_axes):
  check_vmap(fn, *arrays, in_axes=in_axes, out_axes=out_axes)


# ---- nested vmap ----------------------------------------------------------------------------------------------------

def nest(mapper, fn, in_axes_per_level, out_axes_per_level=None):
  out_axes_per_level = out_axes_per_level or [0] * len(in_axes_per_level)
  for ia, oa in zip(reversed(in_axes_per_level), reversed(out_axes_per_level), strict=True): fn = mapper(fn, ia, oa)
  return fn

def np_loopmap(fn, in_axes=0, out_axes=0):
  """loopmap for a pure numpy fn (cheap enough to nest 6 deep: 64 calls)."""
  def mapped(*arrs):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(arrs)
    size = next(a.shape[ax] for a, ax in zip(arrs, axes, strict=True) if ax is not None)
    return np.stack([np.asarray(fn(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(arrs, axes, strict=True)]))
                     for b in range(size)], axis=out_axes)
  return mapped

NESTED = [
  ("pad_sum", lambda x: x.pad((1, 2)).sum() + x.pad((2, 0), value=1.0).max(),
   lambda x: np.pad(x, (1, 2)).sum() + np.pad(x, (2, 0), constant_values=1.0).max(), [0] * 6, None),
  ("pad_cumsum_stack", lambda x: Tensor.stack(x.pad((1, 1)).sum(), x[0], x.cumsum()[-1]),
   lambda x: np.stack([np.pad(x, (1, 1)).sum(), x[0], np.cumsum(x)[-1]]), [0] * 6, None),
  ("mixed_in_axes", lambda x: (x.pad((0, 1)) * Tensor([1.0, 2.0, 3.0, 4.0])).sum(),
   lambda x: (np.pad(x, (0, 1)) * np.array([1.0, 2.0, 3.0, 4.0], np.float32)).sum(), [0, 1, -2, 2, 1, -2], None),
  ("mixed_in_out_axes", lambda x: x.pad((1, 0)).flip(0) * 2, lambda x: np.pad(x, (1, 0))[::-1] * 2,
   [0, 1, -2, 2, 1, -2], [0, 1, 0, -1, 1, 0]),
]

@pytest.mark.parametrize("name,fn,np_fn,in_axes,out_axes", NESTED, ids=[c[0] for c in NESTED])
def test_nested_6_levels(name, fn, np_fn, in_axes, out_axes):
  x = f32(2, 2, 2, 2, 2, 2, 3)
  got = nest(tinyjax.vmap, fn, in_axes, out_axes)(Tensor(x)).numpy()
  want = nest(np_loopmap, np_fn, in_axes, out_axes)(x)
  assert got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

def test_nested_6_levels_loop_reference():
  # the same tinygrad function as reference (per-example loop at the innermost level only, 2 levels of 6)
  x = f32(2, 3, 2, 2, 2, 2, 3)
  def fn(v): return (v.pad((1, 1)) * 2).cumsum().max() - v.sum()
  got = nest(tinyjax.vmap, fn, [0] * 6)(Tensor(x)).numpy()
  want = loopmap(loopmap(nest(tinyjax.vmap, fn, [0] * 4)))(x).numpy()
  assert_same(got, want)

def test_nested_7_levels_mapped_and_broadcast_args():
  x, y = f32(2, 2, 2, 2, 2, 2, 2, 3), f32(2, 3)
  def f(a, b): return (a * b + Tensor(C5[:3])).softmax()
  for _ in range(6): f = tinyjax.vmap(f, in_axes=(0, None))
  f = tinyjax.vmap(f, in_axes=(0, 0))
  z = x * y.reshape(2, 1, 1, 1, 1, 1, 1, 3) + C5[:3]
  e = np.exp(z - z.max(-1, keepdims=True))
  np.testing.assert_allclose(f(Tensor(x), Tensor(y)).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)

def test_nested_closure_over_outer_mapped_value():
  x, y = f32(B, 4), f32(5, 4)
  def f(xi): return tinyjax.vmap(lambda yj: (xi * yj).sum() + xi.max())(Tensor(y))
  got = check_vmap(f, x)
  np.testing.assert_allclose(got, x @ y.T + x.max(1, keepdims=True), rtol=1e-5, atol=1e-5)

def test_nested_numpy():
  x = f32(2, 3, 2, 2, 2, 2, 4)
  got = nest(tinyjax.vmap, lambda v: v.pad((1, 1)).sum(), [0] * 6)(Tensor(x)).numpy()
  np.testing.assert_allclose(got, x.sum(-1), rtol=1e-5, atol=1e-6)


# ---- tinygrad @function, random, constants, contiguous/detach/to ----------------------------------------------------

@function
def _tg_fn(x):
  return (x * 2 + 1).relu().sum(0)

@function
def _tg_fn2(x, w):
  return x @ w, (x * x).sum()

def test_tinygrad_function():
  check_vmap(lambda x: _tg_fn(x) * 3, f32(B, 4, 5), np_fn=lambda x: np.maximum(x * 2 + 1, 0).sum(0) * 3)

def test_tinygrad_function_two_args_tuple_out():
  w = Tensor(W45)
  def f(x):
    a, b = _tg_fn2(x, w)
    return a + b
  check_vmap(f, f32(B, 2, 4), np_fn=lambda x: x @ W45 + (x * x).sum())

def test_rand_is_shared_across_batch():
  Tensor.manual_seed(0)
  x = f32(5, 4)
  out = tinyjax.vmap(lambda v: v + Tensor.rand(4))(Tensor(x)).numpy()
  d = out - x
  for row in d[1:]: np.testing.assert_allclose(row, d[0], rtol=0, atol=1e-6)
  assert (d[0] >= 0).all() and (d[0] < 1).all() and len(np.unique(d[0])) > 1

def test_rand_2d_in_nested():
  Tensor.manual_seed(1)
  x = f32(2, 3, 2, 4)
  out = tinyjax.vmap(tinyjax.vmap(lambda v: v * 0 + Tensor.rand(2, 4)))(Tensor(x)).numpy()
  assert out.shape == (2, 3, 2, 4)
  flat = out.reshape(6, 2, 4)
  for r in flat[1:]: np.testing.assert_array_equal(r, flat[0])

CONSTANTS = [
  ("tensor_literal", lambda x: x * Tensor([1.0, 2.0, 3.0]) + Tensor([[0.5], [1.5]]), f32(B, 2, 3)),
  ("arange_ones_full", lambda x: x + Tensor.arange(3) + Tensor.ones(3) * Tensor.full((2, 3), 2.0), f32(B, 2, 3)),
  ("contiguous_middle", lambda x: (x.exp().contiguous() * x).contiguous().T, f32(B, 3, 4)),
  ("detach", lambda x: x.detach() * 2 + x, f32(B, 4)),
  ("to_same_device", lambda x: x.to("CPU") * 3, f32(B, 4)),
]

@pytest.mark.parametrize("name,fn,x", CONSTANTS, ids=[c[0] for c in CONSTANTS])
def test_constants_and_passthrough(name, fn, x):
  check_vmap(fn, x)

def test_copy_to_other_device():
  x = f32(B, 4)
  out = tinyjax.vmap(lambda v: (v * 2).to("CPU:1") + 1)(Tensor(x))
  assert out.device == "CPU:1"
  np.testing.assert_allclose(out.numpy(), x * 2 + 1, rtol=1e-6)

"""tinyjax.vmap's API against jax.vmap: in_axes / out_axes / axis_size / kwargs / pytrees, errors, collectives,
the VMAPIN / VMAPOUT primitives, concretization errors, missing batching rules and tree_util.

Every test runs the same numpy data through tinyjax and (where JAX has the feature) through JAX, and compares numbers;
error tests check the exception type and message (JAX's wording where tinyjax copies it).
"""
import re
from functools import partial
import numpy as np
import pytest
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
from tinygrad import Tensor, dtypes

import tinyjax
from tinyjax import tree_util as tu
from tinyjax import lax as tl
from tinyjax import Axis, vmapin, vmapout
import conftest
from conftest import tg, raises


# ---- helpers --------------------------------------------------------------------------------------------------------

rnd = partial(conftest.rnd, dtype=np.float32)
assert_tree_close = partial(conftest.assert_close, rtol=1e-5, atol=1e-5, dtype=False)   # any dtypes, float32 tolerances

def rint(*shape, seed=0, lo=-9, hi=10, dtype=np.int32):
  return np.random.default_rng(seed).integers(lo, hi, size=shape).astype(dtype)

def check(f_tg, f_jax, args, kwargs=None, **vmap_kw):
  """tinyjax.vmap(f_tg, **vmap_kw) on Tensors == jax.vmap(f_jax, **vmap_kw) on the same numpy data."""
  kwargs = kwargs or {}
  got = tinyjax.vmap(f_tg, **vmap_kw)(*tg(args), **tg(kwargs))
  want = jax.vmap(f_jax if f_jax is not None else f_tg, **vmap_kw)(*args, **kwargs)
  assert_tree_close(got, want)
  return got


# ---- in_axes ----------------------------------------------------------------------------------------------------------

def test_default_in_axes_maps_every_argument_over_axis_0():
  check(lambda a, b: a * 2 + b, None, (rnd(3, 4), rnd(3, 4, seed=1)))

@pytest.mark.parametrize("in_axes", [0, 1, 2, -1, -2, -3])
def test_int_and_negative_in_axes(in_axes):
  # the per-example value is rank 2; reduce one axis and keep one so that a wrong placement changes the numbers
  check(lambda a: (a * 3).sum(0) - a.max(1).sum(), None, (rnd(2, 3, 4),), in_axes=in_axes)

def test_in_axes_none_broadcasts_an_argument():
  check(lambda a, w: a * w + w.sum(), None, (rnd(5, 4), rnd(4, seed=1)), in_axes=(0, None))

def test_in_axes_tuple_mixing_axes():
  check(lambda a, b, c: a.T * b + c, None, (rnd(2, 3, 5), rnd(5, 2, seed=1), rnd(2, seed=2)), in_axes=(2, 0, None))

def test_in_axes_top_level_list_is_treated_like_a_tuple():
  check(lambda a, b: a - b, None, (rnd(3, 4), rnd(4, 3, seed=1)), in_axes=[0, 1])

def test_in_axes_nested_dict_and_tuple_prefix():
  args = ({"w": (rnd(4, 6), rnd(4, seed=1)), "b": rnd(6, 4, seed=2)}, rnd(4, seed=3))
  def f(p, s): return (p["w"][0] * p["w"][1]).sum() + p["b"] * s
  check(f, None, args, in_axes=({"w": (1, None), "b": 0}, None))

def test_in_axes_leaf_per_dict_key():
  args = ({"a": rnd(3, 4), "b": rnd(4, seed=1), "c": rnd(4, 3, seed=2)},)
  check(lambda d: d["a"] + d["b"] * d["c"], None, args, in_axes=({"a": 0, "b": None, "c": 1},))

def test_in_axes_int_leaf_applies_to_a_whole_subtree():
  args = ({"a": rnd(4, 3), "b": [rnd(2, 3, seed=1), rnd(3, seed=2)]}, rnd(3, 2, seed=3))
  def f(d, y): return (d["a"].sum(0) + d["b"][0].sum(0) * d["b"][1], y * 2)
  check(f, None, args, in_axes=({"a": 1, "b": -1}, 0))

def test_in_axes_nested_list_prefix_for_a_list_argument():
  args = ([rnd(3, 4), rnd(4, seed=1)],)
  check(lambda l: l[0] * l[1], None, args, in_axes=([0, None],))

def test_in_axes_none_for_a_whole_pytree_argument():
  args = (rnd(3, 2), {"k": rnd(2, seed=1), "m": (rnd(2, seed=2),)})
  check(lambda a, p: a * p["k"] + p["m"][0], None, args, in_axes=(0, None))

def test_none_argument_is_an_empty_subtree():
  check(lambda a, n, b: a + b, None, (rnd(3, 4), None, rnd(3, 4, seed=1)))

def test_kwargs_are_mapped_over_axis_0():
  # positional arguments follow in_axes; keyword arguments are always mapped over their leading axis, as in JAX
  check(lambda a, b: a * b, None, (rnd(4, 3),), kwargs={"b": rnd(3, 4, seed=1)}, in_axes=(1,))

def test_kwargs_are_mapped_even_when_in_axes_is_none():
  check(lambda a, k: a.sum() + k, None, (rnd(3, 4),), kwargs={"k": rnd(5, 2, seed=1)}, in_axes=None)

def test_kwargs_pytree():
  kwargs = {"p": {"x": rnd(3, 2, seed=1), "y": [rnd(3, seed=2)]}}
  check(lambda a, p: a * p["x"] + p["y"][0], None, (rnd(3, 2),), kwargs=kwargs)

def test_numpy_array_inputs():
  a, b = rnd(3, 4), rnd(3, 4, seed=1).astype(np.float64)
  got = tinyjax.vmap(lambda x, y: x * 2 + y)(a, b)
  assert_tree_close(got, jax.vmap(lambda x, y: x * 2 + y)(a, b))

def test_numpy_array_mixed_with_tensor_and_python_scalar():
  a, w = rnd(3, 4), rnd(4, seed=1)
  # an unmapped numpy argument reaches the function unchanged (as in JAX), so the tinygrad version wraps it
  got = tinyjax.vmap(lambda x, w, s: x * Tensor(w) + s, in_axes=(0, None, None))(Tensor(a), w, 2.5)
  assert_tree_close(got, jax.vmap(lambda x, w, s: x * w + s, in_axes=(0, None, None))(a, w, 2.5))

def test_integer_and_bool_inputs():
  check(lambda a, m: a * 3 - (a * m).sum(), None, (rint(4, 5), rint(4, 5, seed=1, lo=0, hi=2).astype(bool)))

def test_same_tensor_passed_twice_with_different_axes():
  x = rnd(3, 3)
  check(lambda a, b: a * 10 + b, None, (x, x), in_axes=(0, 1))

def test_vmapped_function_can_be_called_again_with_another_batch_size():
  f = tinyjax.vmap(lambda a: a.sum() * 2)
  for n in (2, 5):
    x = rnd(n, 3, seed=n)
    np.testing.assert_allclose(f(Tensor(x)).numpy(), jax.vmap(lambda a: a.sum() * 2)(x), rtol=1e-6)


# ---- axis_size ----------------------------------------------------------------------------------------------------------

def test_axis_size_without_mapped_arguments_broadcasts():
  check(lambda a: a * 2, None, (rnd(3, 2),), in_axes=None, axis_size=4)

def test_axis_size_with_no_arguments():
  assert_tree_close(tinyjax.vmap(lambda: 1.5, axis_size=3)(), jax.vmap(lambda: 1.5, axis_size=3)())

def test_axis_size_consistent_with_mapped_arguments():
  check(lambda a, b: a + b, None, (rnd(4, 2), rnd(2, seed=1)), in_axes=(0, None), axis_size=4)


# ---- out_axes and outputs ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("out_axes", [0, 1, 2, -1, -2, -3])
def test_int_and_negative_out_axes(out_axes):
  check(lambda a: a.T * 2, None, (rnd(2, 3, 4),), out_axes=out_axes)

def test_negative_out_axes_for_scalar_per_example_output():
  check(lambda a: a.sum(), None, (rnd(5, 3),), out_axes=-1)

def test_out_axes_none_for_an_unbatched_output():
  def f(a, w): return (a * w, w * 2)
  check(f, None, (rnd(3, 4), rnd(4, seed=1)), in_axes=(0, None), out_axes=(0, None))

def test_out_axes_tuple_prefix_for_multiple_outputs():
  def f(a): return (a + 1, (a * 2, a.sum()))
  check(f, None, (rnd(3, 4, 2),), out_axes=(1, (-1, 0)))

def test_out_axes_int_applies_to_every_output():
  check(lambda a: (a + 1, [a * 2, {"z": a - 1}]), None, (rnd(3, 4),), out_axes=1)

def test_out_axes_dict_for_dict_outputs():
  def f(a): return {"s": a.sum(), "t": (a, a * 2), "u": {"v": a.T}}
  check(f, None, (rnd(3, 4, 2),), out_axes={"s": 0, "t": (1, -1), "u": {"v": 2}})

def test_out_axes_dict_leaf_applies_to_subtree():
  def f(a): return {"s": a.sum(), "l": (a, a * 2)}
  check(f, None, (rnd(3, 4),), out_axes={"s": 0, "l": 1})

def test_out_axes_list_prefix_for_list_outputs():
  # JAX matches a list out_axes against a list output like any other pytree prefix
  check(lambda a: [a, a * 2], None, (rnd(3, 4),), out_axes=[0, 1])

def test_output_independent_of_the_input_is_broadcast():
  w = rnd(4, 2, seed=1)
  got = tinyjax.vmap(lambda a: Tensor(w) * 2)(Tensor(rnd(3, 5)))
  assert_tree_close(got, jax.vmap(lambda a: jnp.asarray(w) * 2)(rnd(3, 5)))

def test_unmapped_argument_returned_is_broadcast_at_out_axes():
  check(lambda a, w: (a, w), None, (rnd(3, 2), rnd(4, 5, seed=1)), in_axes=(0, None), out_axes=(0, 1))

def test_python_scalar_outputs_are_broadcast():
  check(lambda a: (a, 3.0, 2, True), None, (rnd(3, 4),))

def test_python_scalar_output_with_out_axes_none():
  assert_tree_close(tinyjax.vmap(lambda a: 2.0, out_axes=None)(Tensor(rnd(3, 4))),
                    jax.vmap(lambda a: 2.0, out_axes=None)(rnd(3, 4)))

def test_numpy_array_output_is_broadcast():
  c = np.arange(3.0)
  check(lambda a: c, None, (rnd(4, 2),), out_axes=1)

def test_none_leaves_in_the_output_are_kept():
  check(lambda a: {"x": a * 2, "n": None, "l": [None, a.sum()]}, None, (rnd(3, 4),))

def test_identity_with_in_and_out_axes():
  check(lambda a: a, None, (rnd(2, 3, 4),), in_axes=2, out_axes=1)


# ---- custom pytree nodes -------------------------------------------------------------------------------------------------

class Point:
  def __init__(self, x, y, tag="p"): self.x, self.y, self.tag = x, y, tag

def _flatten(p): return (p.x, p.y), p.tag
def _unflatten(tag, children): return Point(*children, tag=tag)

tu.register_pytree_node(Point, _flatten, _unflatten)
jtu.register_pytree_node(Point, _flatten, _unflatten)

def test_custom_pytree_node_as_input_and_output():
  x, y = rnd(3, 4), rnd(3, 4, seed=1)
  def f(p): return Point(p.x * p.y, p.y.sum() + p.x, tag=p.tag + "!")
  got = tinyjax.vmap(f)(Point(Tensor(x), Tensor(y), "q"))
  want = jax.vmap(f)(Point(x, y, "q"))
  assert isinstance(got, Point) and got.tag == "q!" == want.tag
  np.testing.assert_allclose(got.x.numpy(), want.x, rtol=1e-6)
  np.testing.assert_allclose(got.y.numpy(), want.y, rtol=1e-6)

def test_custom_pytree_node_as_in_axes_and_out_axes_prefix():
  x, y = rnd(3, 4), rnd(4, seed=1)
  def f(p): return Point(p.x * p.y, p.y + 1, tag=p.tag)
  vm = dict(in_axes=(Point(0, None, "q"),), out_axes=Point(1, None, "q"))
  got = tinyjax.vmap(f, **vm)(Point(Tensor(x), Tensor(y), "q"))
  want = jax.vmap(f, **vm)(Point(x, y, "q"))
  assert isinstance(got, Point) and got.tag == "q"
  assert_tree_close((got.x, got.y), (want.x, want.y))


# ---- nested vmap -----------------------------------------------------------------------------------------------------------

def test_nested_vmap_closing_over_the_outer_value():
  A, B = rnd(3, 4), rnd(2, 4, seed=1)
  got = tinyjax.vmap(lambda a: tinyjax.vmap(lambda b: a * b + b.sum())(Tensor(B)))(Tensor(A))
  want = jax.vmap(lambda a: jax.vmap(lambda b: a * b + b.sum())(B))(A)
  assert_tree_close(got, want)

def test_nested_vmap_with_in_and_out_axes():
  X = rnd(2, 3, 4)
  def inner(vm): return vm(lambda r: r * 2 + r.max(), in_axes=0, out_axes=1)
  got = tinyjax.vmap(lambda a: inner(tinyjax.vmap)(a), in_axes=1, out_axes=2)(Tensor(X))
  want = jax.vmap(lambda a: inner(jax.vmap)(a), in_axes=1, out_axes=2)(X)
  assert_tree_close(got, want)

def test_nested_vmap_inner_axis_size_over_an_outer_traced_value():
  X = rnd(3, 4)
  got = tinyjax.vmap(lambda a: tinyjax.vmap(lambda r: r.sum(), in_axes=None, axis_size=5)(a))(Tensor(X))
  want = jax.vmap(lambda a: jax.vmap(lambda r: r.sum(), in_axes=None, axis_size=5)(a))(X)
  assert_tree_close(got, want)


# ---- errors --------------------------------------------------------------------------------------------------------------

def test_error_inconsistent_sizes_of_two_arguments():
  with pytest.raises(ValueError, match=r"(?s)vmap got inconsistent sizes for array axes to be mapped:\n"
                                       r"  \* one axis had size 3: axis 0 of argument a of type .*\n"
                                       r"  \* one axis had size 5: axis 0 of argument b of type "):
    tinyjax.vmap(lambda a, b: a + b.sum())(Tensor(rnd(3, 4)), Tensor(rnd(5, 2)))

def test_error_inconsistent_axis_size_and_argument():
  with pytest.raises(ValueError, match=r"(?s)vmap got inconsistent sizes for array axes to be mapped:\n"
                                       r"  \* the `axis_size` argument was 5;\n"
                                       r"  \* one axis had size 3: axis 0 of argument a of type "):
    tinyjax.vmap(lambda a: a, axis_size=5)(Tensor(rnd(3, 4)))

def test_error_inconsistent_sizes_with_in_axes_1():
  with pytest.raises(ValueError, match=r"vmap got inconsistent sizes.*\n.*one axis had size 4: axis 1 of argument a"):
    tinyjax.vmap(lambda a, b: a.sum() + b.sum(), in_axes=(1, 0))(Tensor(rnd(3, 4)), Tensor(rnd(3, 2)))

_SIZE_CASES = {
  "two_positional": (lambda a, b: a + b.sum(), (rnd(3, 4), rnd(5, 2)), {}),
  "keyword": (lambda a, b: a + b.sum(), (rnd(3, 4),), {"b": rnd(5, 2)}),
  "majority_in_a_pytree": (lambda d: d["a"], ({"a": rnd(3, 4), "b": (rnd(5), rnd(5, 2))},), {}),
}

@pytest.mark.parametrize("case", list(_SIZE_CASES))
def test_error_inconsistent_sizes_message_is_jaxs(case):
  f, args, kwargs = _SIZE_CASES[case]
  want = str(raises(lambda: jax.vmap(f)(*args, **kwargs)))
  with pytest.raises(ValueError) as ei:
    tinyjax.vmap(f)(*tg(args), **tg(kwargs))
  assert str(ei.value) == want

def test_error_in_axes_tuple_length_mismatch():
  want = str(raises(lambda: jax.vmap(lambda a, b: a, in_axes=(0,))(rnd(3), rnd(3))))
  with pytest.raises(ValueError, match=re.escape("but got len(in_axes)=1, len(args)=2")) as ei:
    tinyjax.vmap(lambda a, b: a, in_axes=(0,))(Tensor(rnd(3)), Tensor(rnd(3)))
  assert str(ei.value) == want

def test_error_in_axes_dict_keys_mismatch():
  with pytest.raises(ValueError, match="vmap in_axes specification must be a tree prefix of the corresponding value"):
    tinyjax.vmap(lambda d: d["a"], in_axes=({"a": 0, "c": 0},))({"a": Tensor(rnd(3)), "b": Tensor(rnd(3))})

def test_error_in_axes_nested_tuple_length_mismatch():
  with pytest.raises(ValueError, match="vmap in_axes specification must be a tree prefix of the corresponding value"):
    tinyjax.vmap(lambda t: t[0], in_axes=((0, 0, 0),))((Tensor(rnd(3)), Tensor(rnd(3))))

def test_error_in_axes_tuple_where_a_list_is_passed():
  with pytest.raises(ValueError, match="vmap in_axes specification must be a tree prefix of the corresponding value"):
    tinyjax.vmap(lambda l: l[0], in_axes=((0, None),))([Tensor(rnd(3)), Tensor(rnd(3))])

@pytest.mark.parametrize("axis", [2, 5, -3])
def test_error_in_axes_out_of_range(axis):
  msg = (f"vmap was requested to map its argument along axis {axis}, which implies that its rank should be at least "
         f"{axis + 1 if axis >= 0 else -axis}, but is only 2 (its shape is (3, 4))")
  assert str(raises(lambda: jax.vmap(lambda a: a, in_axes=axis)(rnd(3, 4)))) == msg
  with pytest.raises(ValueError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a, in_axes=axis)(Tensor(rnd(3, 4)))

@pytest.mark.parametrize("scalar", [lambda: Tensor(2.0), lambda: 2.0, lambda: np.float32(2.0), lambda: np.array(2.0)],
                         ids=["tensor", "python", "numpy_scalar", "numpy_0d"])
def test_error_scalar_argument_with_in_axes_0(scalar):
  msg = ("vmap was requested to map its argument along axis 0, which implies that its rank should be at least 1, "
         "but is only 0 (its shape is ())")
  assert str(raises(lambda: jax.vmap(lambda a: a)(2.0))) == msg
  with pytest.raises(ValueError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a)(scalar())

def test_error_keyword_scalar_is_mapped_over_axis_0():
  with pytest.raises(ValueError, match=re.escape("its rank should be at least 1, but is only 0 (its shape is ())")):
    tinyjax.vmap(lambda a, s: a * s)(Tensor(rnd(3, 4)), s=2.0)

def test_error_no_mapped_argument_and_no_axis_size():
  msg = "vmap must have at least one non-None value in in_axes or axis_size must be specified"
  assert str(raises(lambda: jax.vmap(lambda a: a, in_axes=None)(rnd(3)))) == msg
  with pytest.raises(ValueError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a, in_axes=None)(Tensor(rnd(3)))
  with pytest.raises(ValueError, match=re.escape(msg)):
    tinyjax.vmap(lambda a, b: a, in_axes=(None, None))(Tensor(rnd(3)), Tensor(rnd(3)))

def test_error_no_arguments_and_no_axis_size():
  want = str(raises(lambda: jax.vmap(lambda: 1.0)()))
  assert want.startswith("vmap wrapped function must be passed at least one argument containing an array")
  with pytest.raises(ValueError) as ei:
    tinyjax.vmap(lambda: 1.0)()
  assert str(ei.value) == want

def test_error_out_axes_none_for_a_batched_output():
  msg = "at vmap out_axes, got axis spec None but output was batched on axis 0"
  assert str(raises(lambda: jax.vmap(lambda a: a, out_axes=None)(rnd(3, 4)))) == msg
  with pytest.raises(ValueError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a, out_axes=None)(Tensor(rnd(3, 4)))

def test_error_out_axes_none_for_one_batched_output_of_several():
  with pytest.raises(ValueError, match="at vmap out_axes, got axis spec None but output was batched"):
    tinyjax.vmap(lambda a, w: (w, a * w), in_axes=(0, None), out_axes=(None, None))(Tensor(rnd(3, 4)), Tensor(rnd(4)))

@pytest.mark.parametrize("out_axes", [2, 3, -3])
def test_error_out_axes_out_of_range(out_axes):
  msg = f"axis {out_axes} is out of bounds for array of dimension 2"
  assert str(raises(lambda: jax.vmap(lambda a: a, out_axes=out_axes)(rnd(3, 4)))) == msg
  with pytest.raises(ValueError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a, out_axes=out_axes)(Tensor(rnd(3, 4)))

def test_error_out_axes_out_of_range_for_an_unbatched_output():
  with pytest.raises(ValueError, match=re.escape("axis 2 is out of bounds for array of dimension 2")):
    tinyjax.vmap(lambda a, w: w, in_axes=(0, None), out_axes=2)(Tensor(rnd(3, 4)), Tensor(rnd(5)))

def test_error_out_axes_tree_mismatch():
  with pytest.raises(ValueError, match="vmap out_axes specification must be a tree prefix of the corresponding value"):
    tinyjax.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(Tensor(rnd(3, 4)))

def test_error_out_axes_list_against_a_tuple_output():
  # JAX: a ValueError (a list prefix does not match a tuple output)
  assert isinstance(raises(lambda: jax.vmap(lambda a: (a, a), out_axes=[0, 1])(rnd(3, 4))), ValueError)
  with pytest.raises(ValueError, match="vmap out_axes specification must be a tree prefix of the corresponding value"):
    tinyjax.vmap(lambda a: (a, a), out_axes=[0, 1])(Tensor(rnd(3, 4)))

@pytest.mark.parametrize("out", ["hi", ("ok", "hi")], ids=["leaf", "in_tuple"])
def test_error_non_tensor_output_leaf(out):
  f = (lambda a: "hi") if out == "hi" else (lambda a: (a, "hi"))
  jmsg = str(raises(lambda: jax.vmap(f)(rnd(3))))
  assert jmsg == "Output from batched function 'hi' with type <class 'str'> is not a valid JAX type"
  with pytest.raises(TypeError, match=re.escape("Output from batched function 'hi' with type <class 'str'> is not a valid")):
    tinyjax.vmap(f)(Tensor(rnd(3)))

@pytest.mark.parametrize("bad", [0.5, "0", True], ids=["float", "str", "bool"])
def test_error_bad_in_axes_type(bad):
  msg = ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed "
         f"to the function, but got {bad}.")
  assert str(raises(lambda: jax.vmap(lambda a: a, in_axes=bad)(rnd(3)))) == msg
  with pytest.raises(TypeError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a, in_axes=bad)(Tensor(rnd(3)))

def test_error_top_level_dict_in_axes_is_a_type_error():
  msg = ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed "
         "to the function, but got {'a': 0}.")
  assert str(raises(lambda: jax.vmap(lambda a: a, in_axes={"a": 0})(rnd(3)))) == msg
  with pytest.raises(TypeError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a, in_axes={"a": 0})(Tensor(rnd(3)))

def test_error_float_leaf_in_in_axes():
  msg = "vmap in_axes must be an int, None, or (nested) container with those types as leaves, but got (0.5,)."
  assert str(raises(lambda: jax.vmap(lambda a: a, in_axes=(0.5,)))) == msg   # JAX raises when vmap is called
  with pytest.raises(TypeError, match=re.escape(msg)):
    tinyjax.vmap(lambda a: a, in_axes=(0.5,))(Tensor(rnd(3)))

def test_error_unbound_axis_name_in_psum():
  assert "unbound axis name: j" in str(raises(lambda: jax.vmap(lambda a: jax.lax.psum(a, "j"), axis_name="i")(rnd(3))))
  with pytest.raises(NameError, match="Found an unbound axis name: j"):
    tinyjax.vmap(lambda a: tl.psum(a, "j"), axis_name="i")(Tensor(rnd(3)))

@pytest.mark.parametrize("coll", ["psum", "pmean", "pmax", "pmin"])
def test_error_unbound_axis_name_outside_vmap(coll):
  with pytest.raises(NameError, match="unbound axis name: i"):
    getattr(tl, coll)(Tensor(rnd(3)), "i")

def test_error_unbound_axis_name_in_axis_index_and_in_a_tuple_of_names():
  with pytest.raises(NameError, match="Found an unbound axis name: k"):
    tinyjax.vmap(lambda a: tl.axis_index("k") + a, axis_name="i")(Tensor(rnd(3)))
  with pytest.raises(NameError, match="Found an unbound axis name: k"):
    tinyjax.vmap(lambda a: tl.psum(a, ("i", "k")), axis_name="i")(Tensor(rnd(3)))

def test_error_axis_name_none_is_not_bound_by_an_unnamed_vmap():
  # an unnamed vmap binds no name: JAX raises NameError for psum(x, None) / axis_index(None)
  assert "unbound axis name: None" in str(raises(lambda: jax.vmap(lambda a: jax.lax.psum(a, None))(rnd(3))))
  with pytest.raises(NameError, match="unbound axis name: None"):
    tinyjax.vmap(lambda a: tl.psum(a, None))(Tensor(rnd(3)))
  with pytest.raises(NameError, match="unbound axis name: None"):
    tinyjax.vmap(lambda a: tl.axis_index(None))(Tensor(rnd(3)))

def test_error_in_the_user_function_leaves_no_state_behind():
  with pytest.raises(ZeroDivisionError):
    tinyjax.vmap(lambda a: 1 / 0, axis_name="i")(Tensor(rnd(3)))
  with pytest.raises(NameError, match="unbound axis name: i"):   # the axis "i" was unbound on the way out
    tl.psum(Tensor(rnd(3)), "i")
  np.testing.assert_allclose(Tensor(np.arange(3.0)).numpy(), np.arange(3.0))   # reading works again


# ---- collectives --------------------------------------------------------------------------------------------------------

_COLL = {"psum": (tl.psum, jax.lax.psum), "pmean": (tl.pmean, jax.lax.pmean),
         "pmax": (tl.pmax, jax.lax.pmax), "pmin": (tl.pmin, jax.lax.pmin)}

@pytest.mark.parametrize("name", list(_COLL))
def test_collective_matches_jax(name):
  t, j = _COLL[name]
  check(lambda a: a * 2 - t(a, "i"), lambda a: a * 2 - j(a, "i"), (rnd(5, 3, 2),), axis_name="i")

@pytest.mark.parametrize("name", list(_COLL))
def test_collective_with_in_axes_1_and_out_axes_1(name):
  t, j = _COLL[name]
  check(lambda a: a - t(a, "b"), lambda a: a - j(a, "b"), (rnd(3, 4),), axis_name="b", in_axes=1, out_axes=1)

@pytest.mark.parametrize("name", ["psum", "pmax", "pmin"])
def test_collective_on_integers(name):
  t, j = _COLL[name]
  check(lambda a: t(a, "i") * 2 + a, lambda a: j(a, "i") * 2 + a, (rint(4, 3),), axis_name="i")

@pytest.mark.parametrize("name", list(_COLL))
def test_collective_on_a_pytree(name):
  t, j = _COLL[name]
  arg = ({"a": rnd(3, 2), "b": [rnd(3, seed=1)]},)
  check(lambda d: t({"x": d["a"] * 2, "y": (d["b"][0],)}, "i"), lambda d: j({"x": d["a"] * 2, "y": (d["b"][0],)}, "i"),
        arg, axis_name="i")

def test_collective_result_used_downstream():
  # softmax over the mapped axis
  def ft(a): return (a - tl.pmax(a, "i")).exp() / tl.psum((a - tl.pmax(a, "i")).exp(), "i")
  def fj(a): return jnp.exp(a - jax.lax.pmax(a, "i")) / jax.lax.psum(jnp.exp(a - jax.lax.pmax(a, "i")), "i")
  check(ft, fj, (rnd(5, 3),), axis_name="i")

def test_psum_result_with_out_axes_none():
  check(lambda a: tl.psum(a, "i"), lambda a: jax.lax.psum(a, "i"), (rnd(4, 3),), axis_name="i", out_axes=None)

def test_axis_index_matches_jax():
  check(lambda a: a * tl.axis_index("i") + tl.axis_index("i"), lambda a: a * jax.lax.axis_index("i") + jax.lax.axis_index("i"),
        (rnd(4, 3),), axis_name="i")

def test_axis_index_alone_and_its_dtype():
  got = tinyjax.vmap(lambda a: tl.axis_index("i"), axis_name="i")(Tensor(rnd(4, 3)))
  want = jax.vmap(lambda a: jax.lax.axis_index("i"), axis_name="i")(rnd(4, 3))
  assert_tree_close(got, want)
  assert got.numpy().dtype == np.int32 == want.dtype

def test_axis_index_with_axis_size_and_nothing_mapped():
  check(lambda a: tl.axis_index("i") * a.sum(), lambda a: jax.lax.axis_index("i") * a.sum(), (rnd(3),),
        axis_name="i", in_axes=None, axis_size=5)

def test_axis_index_with_in_axes_1_and_out_axes_1():
  check(lambda a: a * 0 + tl.axis_index("i"), lambda a: a * 0 + jax.lax.axis_index("i"), (rnd(2, 4),),
        axis_name="i", in_axes=1, out_axes=1)

@pytest.mark.parametrize("name", list(_COLL))
def test_collective_of_a_value_not_depending_on_the_mapped_input(name):
  t, j = _COLL[name]
  w = rnd(4, seed=1)
  check(lambda a: t(Tensor(w), "i") + a, lambda a: j(w, "i") + a, (rnd(3, 4),), axis_name="i")

def test_psum_of_a_python_scalar_is_the_axis_size():
  check(lambda a: tl.psum(1, "i") + a * 0, lambda a: jax.lax.psum(1, "i") + a * 0, (rnd(6, 2),), axis_name="i")
  check(lambda a: tl.psum(2.5, "i") + a, lambda a: jax.lax.psum(2.5, "i") + a, (rnd(3, 2),), axis_name="i")

def _nested(lax, vm, inner, A, B):
  return vm(lambda a: vm(lambda b: inner(lax, a, b), axis_name="j")(B), axis_name="i")(A)

_NESTED = {
  "outer_name_from_inner": lambda lax, a, b: lax.psum(a * b, "i"),
  "inner_name": lambda lax, a, b: lax.psum(a * b, "j"),
  "tuple_of_names": lambda lax, a, b: lax.psum(a * b, ("i", "j")),
  "tuple_of_names_reversed": lambda lax, a, b: lax.pmean(a * b, ("j", "i")),
  "pmax_both": lambda lax, a, b: lax.pmax(a * b, ("i", "j")) - lax.pmin(a + b, "i"),
  "outer_name_of_inner_only_value": lambda lax, a, b: lax.psum(b, "i") + a.sum(),
  "inner_name_of_outer_only_value": lambda lax, a, b: lax.psum(a, "j") + b,
  "axis_index_both": lambda lax, a, b: b * 0 + lax.axis_index("i") * 10 + lax.axis_index("j"),
  "axis_index_tuple": lambda lax, a, b: lax.axis_index(("i", "j")) + b * 0,
  "axis_index_tuple_reversed": lambda lax, a, b: lax.axis_index(("j", "i")) + b * 0,
  "mixed": lambda lax, a, b: lax.psum(a, "i") * 10 + lax.psum(b * a, ("i", "j")) + lax.pmax(b, "j"),
}

@pytest.mark.parametrize("case", list(_NESTED))
def test_nested_vmaps_with_names(case):
  A, B = rnd(3, 4), rnd(2, 4, seed=1)
  got = _nested(tl, tinyjax.vmap, _NESTED[case], Tensor(A), Tensor(B))
  want = _nested(jax.lax, jax.vmap, _NESTED[case], A, B)
  assert_tree_close(got, want)

def test_nested_vmaps_over_one_argument_with_names():
  X = rnd(2, 3, 4)
  def f(lax, vm): return vm(vm(lambda v: v - lax.pmean(v, "i") + lax.psum(v, "j"), axis_name="j"), axis_name="i")
  assert_tree_close(f(tl, tinyjax.vmap)(Tensor(X)), f(jax.lax, jax.vmap)(X))

def test_inner_name_shadows_the_outer_one():
  A, B = rnd(3, 4), rnd(2, 4, seed=1)
  def f(lax, vm, A, B): return vm(lambda a: vm(lambda b: lax.psum(a * b, "i"), axis_name="i")(B), axis_name="i")(A)
  assert_tree_close(f(tl, tinyjax.vmap, Tensor(A), Tensor(B)), f(jax.lax, jax.vmap, A, B))


# ---- VMAPIN / VMAPOUT --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("in_axis", [0, 1, 2, -1, -2, -3])
def test_vmapin_drops_the_mapped_axis(in_axis):
  x = rnd(2, 3, 4)
  ax = Axis(x.shape[in_axis])
  p = vmapin(Tensor(x), in_axis, ax)
  assert p.shape == tuple(s for i, s in enumerate(x.shape) if i != in_axis % 3)
  # VMAPOUT at the same position gives x back
  np.testing.assert_array_equal(vmapout(p, in_axis, ax).numpy(), x)

@pytest.mark.parametrize("in_axis", [0, 1, -1])
@pytest.mark.parametrize("out_axis", [0, 1, 2, -1])
def test_vmapout_reinserts_the_axis_at_out_axis(in_axis, out_axis):
  x = rnd(2, 3, 4)
  ax = Axis(x.shape[in_axis])
  p = vmapin(Tensor(x), in_axis, ax)
  y = vmapout(p * 2 + 1, out_axis, ax)
  want = np.moveaxis(x * 2 + 1, in_axis, out_axis)
  assert y.shape == want.shape
  np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)

def test_hand_built_vmap_from_the_primitives_equals_tinyjax_vmap():
  X, W = rnd(3, 5, 4), rnd(5, 2, seed=1)
  def f(a, w): return (a @ w).max(0) + a.sum()
  ax = Axis(4)
  a = vmapin(Tensor(X), 2, ax)                    # (3, 5) per example
  assert a.shape == (3, 5)
  out = vmapout(f(a, Tensor(W)), 1, ax)
  want = tinyjax.vmap(f, in_axes=(2, None), out_axes=1)(Tensor(X), Tensor(W))
  assert out.shape == want.shape == (2, 4)
  np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5)
  np.testing.assert_allclose(out.numpy(), jax.vmap(f, in_axes=(2, None), out_axes=1)(X, W), rtol=1e-5)

def test_hand_built_vmap_of_two_inputs_sharing_an_axis():
  X, Y = rnd(3, 4), rnd(4, 3, seed=1)
  ax = Axis(3)
  a, b = vmapin(Tensor(X), 0, ax), vmapin(Tensor(Y), 1, ax)
  out = vmapout(a * b - b.sum(), 0, ax)
  want = tinyjax.vmap(lambda a, b: a * b - b.sum(), in_axes=(0, 1))(Tensor(X), Tensor(Y))
  np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
  np.testing.assert_allclose(out.numpy(), X * Y.T - Y.sum(0)[:, None], rtol=1e-5)

@pytest.mark.parametrize("out_axis", [0, 1, -1])
def test_vmapout_of_an_unbatched_value_broadcasts(out_axis):
  w = rnd(4, 2)
  y = vmapout(Tensor(w) * 3, out_axis, Axis(5))
  want = np.moveaxis(np.broadcast_to(w * 3, (5, 4, 2)), 0, out_axis)
  assert y.shape == want.shape
  np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)

def test_vmapout_none_of_an_unbatched_value_returns_it():
  w = rnd(4)
  np.testing.assert_allclose(vmapout(Tensor(w) + 1, None, Axis(3)).numpy(), w + 1, rtol=1e-6)

def test_vmapout_none_of_a_batched_value_is_an_error():
  ax = Axis(3)
  p = vmapin(Tensor(rnd(3, 4)), 0, ax)
  with pytest.raises(ValueError, match="at vmap out_axes, got axis spec None but output was batched on axis 0"):
    vmapout(p, None, ax)

def test_vmapin_errors():
  with pytest.raises(ValueError, match=re.escape("along axis 3, which implies that its rank should be at least 4, but is only 3")):
    vmapin(Tensor(rnd(2, 3, 4)), 3, Axis(2))
  with pytest.raises(ValueError, match=r"vmapin: axis 0 of shape \(2, 3, 4\) has size 2, not the axis size 5"):
    vmapin(Tensor(rnd(2, 3, 4)), 0, Axis(5))

def test_vmapout_out_axis_out_of_range():
  ax = Axis(2)
  p = vmapin(Tensor(rnd(2, 3, 4)), 0, ax)
  with pytest.raises(ValueError, match="axis 3 is out of bounds for array of dimension 3"):
    vmapout(p, 3, ax)


# ---- concretization -----------------------------------------------------------------------------------------------------

_READS = {
  "numpy": lambda t: t.numpy(),
  "item": lambda t: t.sum().item(),
  "tolist": lambda t: t.tolist(),
  "realize": lambda t: t.realize(),
  "bool": lambda t: bool(t.sum() > 0),
  "if": lambda t: t if t.sum() > 0 else -t,
  "data": lambda t: t.data(),
}

@pytest.mark.parametrize("read", list(_READS))
def test_reading_a_traced_value_raises_concretization_error(read):
  with pytest.raises(tinyjax.ConcretizationTypeError, match=r"tinyjax\.vmap") as ei:
    tinyjax.vmap(lambda a: _READS[read](a * 2))(Tensor(rnd(3, 4)))
  assert isinstance(ei.value, TypeError)
  assert "Abstract tracer value encountered where a concrete value is expected" in str(ei.value)

def test_concretization_error_message_names_method_and_shape():
  with pytest.raises(tinyjax.ConcretizationTypeError, match=r"\.numpy\(\) was called on a Tensor of shape \(4,\)"):
    tinyjax.vmap(lambda a: a.numpy())(Tensor(rnd(3, 4)))

def test_concretization_error_is_catchable_as_type_error():
  with pytest.raises(TypeError, match=r"depends on the arguments of a function transformed by tinyjax\.vmap"):
    tinyjax.vmap(lambda a: a.tolist())(Tensor(rnd(3, 4)))

def test_reading_a_closed_over_weight_inside_vmap_works():
  w = Tensor(rnd(4, seed=1))
  lazy = Tensor(rnd(4, seed=2)) * 2           # an unrealized closed-over value
  def f(a): return a * float(w.sum().item()) + Tensor(w.numpy()) + lazy.realize() + Tensor(lazy.tolist())
  X = rnd(3, 4)
  wn, ln = rnd(4, seed=1), rnd(4, seed=2) * 2
  np.testing.assert_allclose(tinyjax.vmap(f)(Tensor(X)).numpy(), X * wn.sum() + wn + 2 * ln, rtol=1e-5)

def test_reading_an_outer_traced_value_inside_an_inner_vmap_raises():
  with pytest.raises(tinyjax.ConcretizationTypeError, match=r"tinyjax\.vmap"):
    tinyjax.vmap(lambda a: tinyjax.vmap(lambda b: b * a.sum().item())(Tensor(rnd(2, 4))))(Tensor(rnd(3, 4)))

def test_reading_an_inner_result_that_does_not_depend_on_the_outer_input_works():
  B = rnd(2, 4)
  got = tinyjax.vmap(lambda a: a.sum() + Tensor(tinyjax.vmap(lambda b: b * 2)(Tensor(B)).numpy()))(Tensor(rnd(3, 4)))
  np.testing.assert_allclose(got.numpy(), rnd(3, 4).sum(1)[:, None, None] + 2 * B, rtol=1e-5)

def test_reading_a_value_derived_from_axis_index_raises_concretization_error():
  # JAX: int(jax.lax.axis_index("i")) inside vmap is a ConcretizationTypeError (the value is batched)
  assert type(raises(lambda: jax.vmap(lambda a: a * int(jax.lax.axis_index("i")), axis_name="i")(rnd(3, 4)))).__name__ \
    == "ConcretizationTypeError"
  with pytest.raises(tinyjax.ConcretizationTypeError, match=r"tinyjax\.vmap"):
    tinyjax.vmap(lambda a: a * (tl.axis_index("i") + 1).numpy(), axis_name="i")(Tensor(rnd(3, 4)))

def test_reading_psum_of_a_closed_over_value_gives_its_value():
  # JAX: psum of an unmapped value is concrete inside vmap (value * axis size)
  w = rnd(4, seed=1)
  want = jax.vmap(lambda a: a * np.asarray(jax.lax.psum(w, "i")), axis_name="i")(rnd(3, 4))
  got = tinyjax.vmap(lambda a: a * Tensor(tl.psum(Tensor(w), "i").numpy()), axis_name="i")(Tensor(rnd(3, 4)))
  assert_tree_close(got, want)


# ---- ops without a batching rule ----------------------------------------------------------------------------------------

def test_assign_of_a_mapped_value_has_no_rule():
  buf = Tensor.zeros(4, dtype=dtypes.float32).contiguous().realize()   # (Tensor.zeros(4) is weak: float64 with x64)
  with pytest.raises(NotImplementedError, match=r"^tinyjax\.vmap: no vmap rule for tinygrad op STORE$"):
    tinyjax.vmap(lambda v: buf.assign(v))(Tensor(rnd(3, 4)))

def test_assign_of_a_value_computed_from_a_mapped_input_has_no_rule():
  buf = Tensor.zeros(4).contiguous().realize()
  with pytest.raises(NotImplementedError, match=r"tinyjax\.vmap: no vmap rule for tinygrad op STORE"):
    tinyjax.vmap(lambda v: buf.assign(buf + v * 2).sum())(Tensor(rnd(3, 4)))

def test_failed_assign_does_not_leak_the_traced_value_into_the_buffer():
  # tinygrad's assign mutates buf in place, so after the NotImplementedError buf's lazy graph still holds a STORE of the
  # vmap placeholder; reading it must raise (JAX's UnexpectedTracerError), never realize the unallocated placeholder
  buf = Tensor.zeros(4, dtype=dtypes.float32).contiguous().realize()
  with pytest.raises(NotImplementedError, match="no vmap rule for tinygrad op STORE"):
    tinyjax.vmap(lambda v: buf.assign(v * 0 + 7))(Tensor(rnd(3, 4)))
  with pytest.raises(tinyjax.errors.UnexpectedTracerError, match="unexpected tracer"):
    buf.numpy()
  with pytest.raises(tinyjax.errors.UnexpectedTracerError):
    (buf + 1).tolist()


# ---- tree_util ------------------------------------------------------------------------------------------------------------

TREES = [
  {"b": [1, (2, None), {"z": 3, "a": 4}], "a": None, "c": (5,), "d": []},
  [None, (), {}, [[1]], (2, [3, {"k": (4, 5)}])],
  (1,),
  7,
  None,
  {"x": {"y": {"z": None}}, "w": [0.5, None, 2]},
]

@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_tree_flatten_matches_jax(tree):
  leaves, tdef = tu.tree_flatten(tree)
  jleaves, jdef = jtu.tree_flatten(tree)
  assert leaves == jleaves
  assert tdef.num_leaves == jdef.num_leaves and tdef.num_nodes == jdef.num_nodes
  assert tu.tree_leaves(tree) == jtu.tree_leaves(tree)
  assert str(tu.tree_structure(tree)).replace("PyTreeSpec", "PyTreeDef") == str(jtu.tree_structure(tree))

@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_tree_unflatten_round_trip_matches_jax(tree):
  leaves, tdef = tu.tree_flatten(tree)
  jleaves, jdef = jtu.tree_flatten(tree)
  new = [x * 10 + 1 for x in leaves]
  assert tu.tree_unflatten(tdef, new) == jtu.tree_unflatten(jdef, new)
  assert tu.tree_unflatten(tdef, leaves) == tree

@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_tree_map_matches_jax(tree):
  assert tu.tree_map(lambda x: x * 3, tree) == jtu.tree_map(lambda x: x * 3, tree)
  assert tu.tree_map(lambda x, y: x - y, tree, tree) == jtu.tree_map(lambda x, y: x - y, tree, tree)

def test_tree_map_is_leaf_matches_jax():
  tree = TREES[0]
  def is_leaf(x): return isinstance(x, tuple)
  assert tu.tree_leaves(tree, is_leaf=is_leaf) == jtu.tree_leaves(tree, is_leaf=is_leaf)
  def f(x): return len(x) if isinstance(x, tuple) else -x
  assert tu.tree_map(f, tree, is_leaf=is_leaf) == jtu.tree_map(f, tree, is_leaf=is_leaf)

def test_tree_map_structure_mismatch_is_a_value_error():
  assert isinstance(raises(lambda: jtu.tree_map(lambda a, b: a + b, [1, 2], [1])), ValueError)
  with pytest.raises(ValueError, match="arity mismatch"):
    tu.tree_map(lambda a, b: a + b, [1, 2], [1])

def test_tensor_is_a_leaf_and_none_is_empty():
  a, b = Tensor(rnd(2)), Tensor(rnd(3))
  leaves = tu.tree_leaves({"x": [a, None], "y": (b,)})
  assert len(leaves) == 2 and leaves[0] is a and leaves[1] is b
  out = tu.tree_map(lambda t: t * 2, {"x": [a, None], "y": (b,)})
  assert out["x"][1] is None
  np.testing.assert_allclose(out["y"][0].numpy(), rnd(3) * 2, rtol=1e-6)

def test_custom_node_flattens_like_jax():
  tree = {"p": Point(1, [2, None], "t"), "q": (Point(3, 4),)}
  assert tu.tree_leaves(tree) == jtu.tree_leaves(tree)
  got, want = tu.tree_map(lambda x: x + 1, tree), jtu.tree_map(lambda x: x + 1, tree)
  assert (got["p"].x, got["p"].y, got["p"].tag, got["q"][0].x, got["q"][0].y) == \
         (want["p"].x, want["p"].y, want["p"].tag, want["q"][0].x, want["q"][0].y)
  leaves, tdef = tu.tree_flatten(tree)
  back = tu.tree_unflatten(tdef, leaves)
  assert isinstance(back["p"], Point) and back["p"].tag == "t" and back["p"].y == [2, None]

"""Dense Jacobians: jacfwd (vmap of jvp over the input basis), jacrev (vmap of the vjp over the output basis),
hessian = jacfwd(jacrev). One batched pass each; the layout is JAX's: out_leaf.shape + in_leaf.shape, nested as the
output tree of input trees."""
from __future__ import annotations
import functools
from typing import Callable, Sequence
import numpy as np
from tinyjax._tg import dtype_name, Tensor, dtypes
from tinyjax import pytree as tu
from tinyjax.core import transform_entry, as_tensor
from tinyjax.transforms import batching
from tinyjax.transforms.vmap import vmap
from tinyjax.transforms.jvp import jvp
from tinyjax.transforms.vjp import vjp, _argnums, real_only, check_holomorphic_inputs
from tinyjax.complex_array import ComplexArray


def _basis(leaves: list[Tensor]) -> list[Tensor]:
  """The standard basis of the flattened leaves: for leaf j, the slice of eye(N) reshaped to (N, *leaf.shape).
  A realized buffer, as JAX's basis is a concrete array, and never a lazy Tensor.eye: that is an arange == arange
  compare which fuses into its consumers, and a consumer that gathers or contracts it along an axis with another
  one-hot loops tinygrad's codegen (pm_reduce_load_collapse). vmap keeps it symbolic while the graph is linear in it
  (batching.Selected), so most uses never load it."""
  return [Tensor(u) for u in _basis_uops(tuple((tuple(l.shape), l.dtype) for l in leaves), leaves[0].device if leaves else None)]

@functools.lru_cache(maxsize=16)
def _basis_uops(specs: tuple, device) -> tuple:
  # cached: graphs are immutable and the buffer is never written (no kernel or copy after the first call)
  sizes = [int(np.prod(s, dtype=np.int64)) for s, _ in specs]
  n, out, off = sum(sizes), [], 0
  # Tensor.eye(n).contiguous().realize() would stay a lazy compare: tinygrad does not store const-only graphs
  eye = Tensor.full((n, n), 1.0, buffer=False) if n <= 1 else Tensor(np.eye(n, dtype=np.float32), device=device).realize()
  eyes = {dt: eye if dt == eye.dtype else eye.cast(dt) if n <= 1 else eye.cast(dt).contiguous().realize() for _, dt in specs}
  for (shape, dt), s in zip(specs, sizes, strict=True):
    out.append(u := eyes[dt][:, off:off + s].reshape(n, *shape).uop)
    batching.BASIS[u] = (tuple(int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))), off)
    off += s
  return tuple(out)


def _split(stacked: Tensor, leaves: list[Tensor], trailing: tuple) -> list[Tensor]:
  """Split the leading basis axis of `stacked` (N, *trailing) into per-leaf blocks (*leaf.shape, *trailing)."""
  res, off = [], 0
  for l in leaves:
    s = int(l.numel())
    res.append(stacked[off:off + s].reshape(tuple(l.shape) + tuple(trailing)))
    off += s
  return res


def _dyn(args, argnums, transform: str, float_only_msg: str):
  nums = _argnums(argnums, len(args), positional_check=True)
  dyn = tuple(args[i] for i in nums)
  leaves, tree = tu.tree_flatten(dyn)
  leaves = [as_tensor(l) for l in leaves]
  for l in leaves:
    if not dtypes.is_float(l.dtype): raise TypeError(float_only_msg.format(transform=transform, dtype=dtype_name(l.dtype)))
  def f_flat(fun, kwargs):
    def f(*flat):
      full = list(args)
      for i, a in zip(nums, tu.tree_unflatten(tree, flat), strict=True): full[i] = a
      return fun(*full, **kwargs)
    return f
  in_struct = tu.tree_structure(dyn[0] if isinstance(argnums, int) else dyn)
  return leaves, f_flat, in_struct


def _real_parts_function(fun: Callable, args: tuple, argnums, transform: str) -> tuple[Callable, tuple]:
  """holomorphic=True: the derivative of a holomorphic f is its derivative along the real axis, so the Jacobian is that of
  f as a function of the real parts of its (complex) differentiated inputs, the imaginary parts held: (that function,
  its arguments)."""
  nums = _argnums(argnums, len(args), positional_check=True)
  args = tuple(tu.complex_data_as_arrays(a) if i in nums else a for i, a in enumerate(args))
  check_holomorphic_inputs(transform, tuple(args[i] for i in nums))
  ims = {i: tu.tree_map(lambda z: z.im, args[i], is_leaf=tu.jax_leaf(None)) for i in nums}
  def f(*a, **kwargs):
    full = list(a)
    for i in nums: full[i] = tu.tree_map(ComplexArray, a[i], ims[i], is_leaf=tu.jax_leaf(None))
    return fun(*full, **kwargs)
  return f, tuple(tu.tree_map(lambda z: z.re, a, is_leaf=tu.jax_leaf(None)) if i in nums else a for i, a in enumerate(args))


def _complex_check(what: str, tree, transform: str, kind: str) -> None:
  if tu.has_complex(tree):
    raise TypeError(f"{transform} requires real-valued {what}s ({what} dtype that is a sub-dtype of np.floating), but got complex64. "
                    f"For holomorphic differentiation, pass holomorphic=True. For differentiation of non-holomorphic functions "
                    f"involving complex {what}s{' or integer inputs' if what == 'input' else ''}, use jax.{kind} directly.")


def _assemble(out_tree, in_struct, jac: list[list[Tensor]]):
  return tu.tree_unflatten(out_tree, [tu.tree_unflatten(in_struct, row) for row in jac])


_FWD_MSG = ("{transform} requires real-valued inputs (input dtype that is a sub-dtype of np.floating), but got {dtype}. "
            "For differentiation of functions with integer inputs, use tinyjax.jvp directly.")
_REV_MSG = ("{transform} requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), but "
            "got {dtype}. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
  """jax.jacfwd: forward-mode Jacobian, one vmap of jvp over the standard basis of the inputs."""
  @transform_entry
  def jac_fn(*args, **kwargs):
    if holomorphic:
      f, real_args = _real_parts_function(fun, args, argnums, "jacfwd")
      return jacfwd(f, argnums, has_aux)(*real_args, **kwargs)
    _complex_check("input", tuple(args[i] for i in _argnums(argnums, len(args), positional_check=True)), "jacfwd", "jvp")
    leaves, f_flat, in_struct = _dyn(args, argnums, "jacfwd", _FWD_MSG)
    f = f_flat(fun, kwargs)
    def push(*ts):
      res = jvp(lambda *a: f(*a), tuple(leaves), ts, has_aux=has_aux)
      return (res[1], res[2]) if has_aux else (res[1], None)
    tans, aux = vmap(push, out_axes=(0, None))(*_basis(leaves))
    t_leaves, out_tree = tu.tree_flatten(tans)
    # each tangent leaf is (N, *out_shape): split N per input leaf and put the input axes last
    jac = [[move_axis_block(blk, len(l.shape)) for blk, l in zip(_split(t, leaves, tuple(t.shape[1:])), leaves, strict=True)]
           for t in t_leaves]
    out = _assemble(out_tree, in_struct, jac)
    return (out, aux) if has_aux else out
  return jac_fn


def move_axis_block(t: Tensor, k: int) -> Tensor:
  """(*in_shape[k dims], *out_shape) -> (*out_shape, *in_shape)."""
  return t.permute(tuple(range(k, t.ndim)) + tuple(range(k))) if t.ndim else t


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False) -> Callable:
  """jax.jacrev: reverse-mode Jacobian, one vmap of the vjp over the standard basis of the outputs."""
  real_only("jacrev", allow_int)
  return _jacrev(fun, argnums, has_aux, holomorphic, complex_outputs=False)


def _jacrev(fun: Callable, argnums, has_aux: bool, holomorphic: bool, complex_outputs: bool) -> Callable:
  @transform_entry
  def jac_fn(*args, **kwargs):
    if holomorphic:
      f, real_args = _real_parts_function(fun, args, argnums, "jacrev")
      return _jacrev(f, argnums, has_aux, False, complex_outputs=True)(*real_args, **kwargs)
    imag = tu.imaginary_parts(tuple(args[i] for i in _argnums(argnums, len(args), positional_check=True)))
    leaves, f_flat, in_struct = _dyn(args, argnums, "jacrev", _REV_MSG)
    res = vjp(f_flat(fun, kwargs), *leaves, has_aux=has_aux)
    out, pullback = res[0], res[1]
    if not complex_outputs: _complex_check("output", out, "jacrev", "vjp")
    o_leaves, out_tree = tu.tree_flatten(out)
    basis = _basis(o_leaves)
    grads = vmap(lambda *cts: pullback(tu.tree_unflatten(out_tree, list(cts))))(*basis)   # per input: (M, *in_shape)
    grads = [-g if m else g for g, m in zip(grads, imag, strict=True)]   # JAX's conjugate for complex inputs (as grad's)
    blocks = [_split(g, o_leaves, tuple(g.shape[1:])) for g in grads]                     # [j][k]: (*out_k, *in_j)
    jac = [[blocks[j][k] for j in range(len(leaves))] for k in range(len(o_leaves))]
    if complex_outputs:   # holomorphic: a complex output's basis is 1 + 0i only; its imaginary part's row is the vjp of i, conjugated
      jac = [[-b for b in row] if m else row for row, m in zip(jac, tu.imaginary_parts(out), strict=True)]
    out = _assemble(out_tree, in_struct, jac)
    return (out, res[2]) if has_aux else out
  return jac_fn


jacobian = jacrev


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
  """jax.hessian: jacfwd(jacrev(fun))."""
  return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)

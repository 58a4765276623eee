"""tinyjax.test_util: JAX's jax.test_util.check_grads (and check_jvp, check_vjp): tinyjax's derivatives against
central finite differences, in one random direction, with JAX's default tolerances. The arithmetic on the
finite-difference side is numpy's; f sees Tensors."""
from __future__ import annotations
import functools
from typing import Any, Callable
import numpy as np
from tinyjax._tg import Tensor, np_dtype
from tinyjax import pytree as tu
from tinyjax.numpy import asarray
from tinyjax.transforms.jvp import jvp, linearize
from tinyjax.transforms.vjp import vjp

__all__ = ["check_grads", "check_jvp", "check_vjp"]

EPS = 1e-4
# JAX's default_gradient_tolerance (jax/_src/public_test_util.py)
_GRAD_TOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}

def _np(tree) -> Any:
  """Tensor leaves -> numpy (realized together)."""
  ts = [t for t in tu.tree_leaves(tree) if isinstance(t, Tensor)]
  if ts: Tensor.realize(*ts)
  return tu.tree_map(lambda t: t.numpy() if isinstance(t, Tensor) else np.asarray(t), tree)

def _tensors(tree) -> Any:
  return tu.tree_map(asarray, tree)

def _dtype(x) -> np.dtype:
  if isinstance(x, Tensor):
    if (dt := np_dtype(x.dtype)) is None: raise NotImplementedError(f"check_grads: dtype {x.dtype} has no numpy dtype")
    return dt
  return np.asarray(x).dtype

def _tol(dtype: np.dtype, tol) -> float:
  if tol is None: return _GRAD_TOL.get(np.dtype(dtype), 0.0)
  if isinstance(tol, dict): return {np.dtype(k): v for k, v in tol.items()}.get(np.dtype(dtype), _GRAD_TOL.get(np.dtype(dtype), 0.0))
  return tol

def _check_close(xs, ys, atol, rtol, err_msg: str) -> None:
  def close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (err_msg, a.shape, b.shape)
    at, rt = max(_tol(a.dtype, atol), _tol(b.dtype, atol)), max(_tol(a.dtype, rtol), _tol(b.dtype, rtol))
    with np.errstate(invalid="ignore"):
      np.testing.assert_allclose(a, b, atol=at * a.size, rtol=rt * b.size, err_msg=err_msg)
  tu.tree_map(close, xs, ys)

def _rand_like(rng: np.random.RandomState, x):
  return np.asarray(rng.randn(*np.shape(x)), dtype=_dtype(x))

def _scaled(xs, a): return tu.tree_map(lambda x: np.multiply(x, np.array(a, dtype=x.dtype), dtype=x.dtype), xs)

def _numerical_jvp(f: Callable, primals, tangents, eps: float):
  """Central differences: (f(x + eps t) - f(x - eps t)) / (2 eps), on numpy leaves."""
  delta = _scaled(tangents, eps)
  pos = _np(f(*_tensors(tu.tree_map(lambda x, d: (x + d).astype(x.dtype), primals, delta))))
  neg = _np(f(*_tensors(tu.tree_map(lambda x, d: (x - d).astype(x.dtype), primals, delta))))
  # inf - inf counts as 0, as in JAX
  diff = tu.tree_map(lambda p, n: np.where(np.equal(p, n), np.zeros((), p.dtype), np.subtract(p, n, dtype=p.dtype)), pos, neg)
  return _scaled(diff, 0.5 / eps)

def _inner(xs, ys) -> np.ndarray:
  return tu.tree_reduce(np.add, tu.tree_map(lambda x, y: np.dot(np.reshape(x, -1), np.reshape(y, -1)), xs, ys))

def check_jvp(f: Callable, f_jvp: Callable, args, atol=None, rtol=None, eps: float = EPS, err_msg: str = "") -> None:
  """f_jvp(primals, tangents) (e.g. partial(tinyjax.jvp, f)) against finite differences of f in a random direction."""
  args = _np(_tensors(args))   # in JAX's dtypes
  tangent = tu.tree_map(functools.partial(_rand_like, np.random.RandomState(0)), args)
  v_out, t_out = _np(f_jvp(_tensors(args), _tensors(tangent)))
  _check_close(v_out, _np(f(*_tensors(args))), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  _check_close(t_out, _numerical_jvp(f, args, tangent, eps), atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")

def check_vjp(f: Callable, f_vjp: Callable, args, atol=None, rtol=None, eps: float = EPS, err_msg: str = "") -> None:
  """f_vjp(*primals) (e.g. partial(tinyjax.vjp, f)) against finite differences: <vjp(ct), t> == <ct, jvp(t)>."""
  args = _np(_tensors(args))
  rand = functools.partial(_rand_like, np.random.RandomState(0))
  v_out, vjpfun = f_vjp(*_tensors(args))
  v_out = _np(v_out)
  _check_close(v_out, _np(f(*_tensors(args))), atol, rtol, f"{err_msg} primal" if err_msg else "primal")
  tangent = tu.tree_map(rand, args)
  tangent_out = _numerical_jvp(f, args, tangent, eps)
  cotangent = tu.tree_map(rand, v_out)
  cotangent_out = _np(vjpfun(_tensors(cotangent)))
  _check_close(_inner(tangent, cotangent_out), _inner(tangent_out, cotangent), atol, rtol,
               f"{err_msg} cotangent projection" if err_msg else "cotangent projection")

def check_grads(f: Callable, args, order: int, modes=("fwd", "rev"), atol=None, rtol=None, eps: float | None = None) -> None:
  """JAX's check_grads: tinyjax.jvp ("fwd") and tinyjax.vjp ("rev") of f at args, up to `order`, against finite
  differences; raises AssertionError on a mismatch. `args` may hold numpy arrays or Tensors."""
  if unknown := set(modes) - {"fwd", "rev", "lin"}: raise ValueError(f"check_grads: unknown modes {sorted(unknown)}")
  args, eps = tuple(args), eps or EPS

  def jvp_from_lin(f, primals, tangents):
    out, f_lin = linearize(f, *primals)
    return out, f_lin(*tangents)

  def check(f, args, order, err_msg=""):
    if "fwd" in modes:
      msg = f"JVP of {err_msg}" if err_msg else "JVP"
      check_jvp(f, functools.partial(jvp, f), args, atol, rtol, eps, msg)
      if order > 1: check(functools.partial(jvp, f), (args, args), order - 1, msg)
    if "rev" in modes:
      msg = f"VJP of {err_msg}" if err_msg else "VJP"
      check_vjp(f, functools.partial(vjp, f), args, atol, rtol, eps, msg)
      if order > 1:
        def f_vjp(*args):
          out, pullback = vjp(f, *args)
          return pullback(out)
        check(f_vjp, args, order - 1, msg)
    if "lin" in modes:
      msg = f"LIN of {err_msg}" if err_msg else "LIN"
      check_jvp(f, functools.partial(jvp_from_lin, f), args, atol, rtol, eps, msg)
      if order > 1: check(functools.partial(jvp_from_lin, f), (args, args), order - 1, msg)
  check(f, args, order)

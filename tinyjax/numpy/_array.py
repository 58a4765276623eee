"""JAX's array methods on the Tensors tinyjax returns: `x.astype`, `x.ravel()`, `x.block_until_ready()`, `x.size` as an
int, `keepdims=`/`ddof=` on reductions, and `x.at[idx]` (from `_indexing`). tinygrad's own methods keep their meaning
for tinygrad code; only names and keywords tinygrad lacks are added (see docs/porting.md for the methods whose JAX and
tinygrad meanings differ)."""
from __future__ import annotations
import functools
from typing import Any, Callable
from tinyjax import _tg
from tinyjax._tg import Tensor
from tinyjax.numpy._core import dtype_of

__all__: list[str] = []

def astype(self: Tensor, dtype: Any, copy: bool = False) -> Tensor:
  dt = dtype_of(dtype)
  return self if dt == self.dtype else self.cast(dt)

def ravel(self: Tensor, order: str = "C") -> Tensor:
  if order != "C": raise NotImplementedError(f"ravel(order={order!r}): only order='C'")
  return self.flatten()

def block_until_ready(self: Tensor) -> Tensor:
  """Compute x now (JAX dispatches asynchronously; tinygrad is lazy). Inside a transform a traced value is returned
  as it is, as JAX returns a tracer."""
  from tinyjax.core import traced_by
  if traced_by(self) is None: self.realize()
  return self

class _Size(int):
  """x.size: the number of elements, as JAX's int; still callable as tinygrad's x.size(dim)."""
  _tensor: Tensor
  def __call__(self, dim: int | None = None): return _tg.tensor_method("size")(self._tensor, dim)

def _size(self: Tensor):
  n = self.numel()
  if not isinstance(n, int): return functools.partial(_tg.tensor_method("size"), self)   # symbolic: tinygrad's method
  s = _Size(n)
  s._tensor = self
  return s

def _jax_keywords(name: str) -> Callable:
  """tinygrad's reduction `name`, also taking JAX's `keepdims=` (and `ddof=` for std/var)."""
  orig = _tg.tensor_method(name)
  @functools.wraps(orig)
  def method(self, *args, keepdims: bool | None = None, ddof: int | None = None, **kwargs):
    if keepdims is not None: kwargs["keepdim"] = keepdims
    if ddof is not None: kwargs["correction"] = ddof
    return orig(self, *args, **kwargs)
  return method

_REDUCTIONS = ("sum", "prod", "mean", "max", "min", "any", "all", "argmax", "argmin", "std", "var", "logsumexp")

_tg.install_tensor_methods({"astype": astype, "ravel": ravel, "block_until_ready": block_until_ready,
                            "size": property(_size), **{n: _jax_keywords(n) for n in _REDUCTIONS}})

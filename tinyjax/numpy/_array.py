"""JAX's array methods on the Tensors tinyjax returns: `x.astype`, `x.ravel()`, `x.block_until_ready()`, `x.size` as an
int, `keepdims=`/`ddof=` on reductions, and `x.at[idx]` (from `_indexing`). tinygrad's own methods keep their meaning
for tinygrad code; only names and keywords tinygrad lacks are added (see docs/porting.md for the methods whose JAX and
tinygrad meanings differ)."""
from __future__ import annotations
import functools
from typing import Any, Callable
from tinyjax import _tg
from tinyjax._tg import Tensor, dtypes
from tinyjax.core import traced_by, static_ints, eager_buffers
from tinyjax.numpy._core import dtype_of, asarray
from tinyjax.dtypes import weak_storage_dtype, is_complex
from tinyjax.numpy import _math, _complex
import numpy as np

__all__: list[str] = []

def astype(self: Tensor, dtype: Any, copy: bool = False) -> Any:
  dt = dtype_of(dtype)
  if is_complex(dt): return _complex.as_complex(self, dt)
  return self if dt == self.dtype else self.cast(dt)

def ravel(self: Tensor, order: str = "C") -> Tensor:
  if order != "C": raise NotImplementedError(f"ravel(order={order!r}): only order='C'")
  return self.flatten()

def block_until_ready(self: Tensor) -> Tensor:
  """Compute x now (JAX dispatches asynchronously; tinygrad is lazy). Inside a transform a traced value is returned
  as it is, as JAX returns a tracer."""
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
    return orig(self, *static_ints(args), **{k: static_ints(v) for k, v in kwargs.items()})
  return method

def _static_arguments(name: str) -> Callable:
  """tinygrad's method `name` (shapes, axes, counts), also taking numpy integers where it takes ints, as JAX does."""
  orig = _tg.tensor_method(name)
  @functools.wraps(orig)
  def method(self, *args, **kwargs): return orig(self, *static_ints(args), **{k: static_ints(v) for k, v in kwargs.items()})
  return method

# tinygrad's methods that take shapes, axes or counts (the reductions: _jax_keywords)
_SHAPE_METHODS = ("reshape", "expand", "permute", "transpose", "flatten", "unflatten", "squeeze", "unsqueeze", "repeat",
                  "repeat_interleave", "pad", "shrink", "flip", "roll", "split", "chunk", "cumsum", "cumprod", "cummax", "cummin",
                  "sort", "argsort", "topk", "gather", "softmax", "log_softmax")

def _numpy_operand(name: str, jnp_fn: Callable | None = None, reflected: bool = False) -> Callable:
  """tinygrad's operator `name`, also taking numpy arrays and scalars (as jnp.asarray takes them: strongly typed), which
  JAX code mixes with arrays everywhere (a numpy weight matrix @ a traced vector). Where tinygrad's operator and jnp's
  function differ for two typed operands (`/` of integers gives the float of their common type; `**` of a numpy integer
  exponent keeps the base's dtype), a numpy operand goes to `jnp_fn`."""
  orig = _tg.tensor_method(name)
  @functools.wraps(orig)
  def op(self, x):
    if _complex.is_complex_argument(x): return _complex.operator(name)(self, x)   # the complex array's operator
    if not isinstance(x, (np.ndarray, np.generic)): return orig(self, x)
    if jnp_fn is not None: return jnp_fn(x, self) if reflected else jnp_fn(self, x)
    return orig(self, asarray(x))
  return op

_OPERATORS = ("add", "sub", "mul", "truediv", "pow", "matmul", "and", "or", "xor", "lshift", "rshift")
_COMPARISONS = ("__lt__", "__gt__", "__eq__", "__ne__")
_NUMPY_AS_JNP = {"__truediv__": _math.true_divide, "__rtruediv__": _math.true_divide, "__pow__": _math.power, "__rpow__": _math.power}
# operators whose tinygrad versions differ from JAX's where tinygrad's answer is a bug: x // 0 and x % 0 on integers
# stop the process (SIGFPE in the compiled kernel), and x <= nan is True; these become jnp's
_AS_JNP = {"__floordiv__": _math.floor_divide, "__mod__": _math.mod, "__le__": _math.less_equal, "__ge__": _math.greater_equal}

# In-place operators. JAX arrays are immutable: `x += y` rebinds x to `x + y` (jax.Array has no __iadd__). tinygrad's
# `+=` assigns into x (AFTER(x, STORE(x, x + y))), which a transform cannot take from a traced value: vmap and jvp
# had no rule for the STORE, and grad read the placeholder written into (grad of `x += 1; sum(x**2)` was 2x, not
# 2(x+1)). A traced x, or a traced y into an x that holds no data yet (a value computed in the function, jnp.zeros),
# gets JAX's; a write into a realized buffer (a model's state, under jit too) and code outside transforms keep tinygrad's.
_INPLACE = ("add", "sub", "mul", "truediv", "floordiv", "pow", "matmul", "and", "or", "xor", "lshift", "rshift")

def _inplace(o: str) -> Callable:
  orig, name = _tg.tensor_method(f"__i{o}__"), f"__{o}__"
  @functools.wraps(orig)
  def op(self, x):
    if traced_by(self) is not None or (isinstance(x, Tensor) and not self.uop.is_realized and traced_by(x) is not None):
      return getattr(self, name)(x)
    return orig(self, x)
  return op

def _jnp_operator(fn: Callable, reflected: bool) -> Callable:
  def op(self, x): return fn(x, self) if reflected else fn(self, x)
  return op

def _str(self: Tensor) -> str:
  # print(x) shows the values, as JAX's (numpy's str); a traced value shows what it is, as JAX prints a tracer.
  if (name := traced_by(self)) is not None: return f"Traced<{self.dtype.name}{list(self.shape)}> ({name})"
  return str(self.numpy())

def _repr(self: Tensor) -> str:
  # JAX's Array.__repr__ (jax/_src/array.py): numpy's array2string with ", " between the values, then the dtype; a
  # weakly typed value (tinygrad's weakfloat/weakint) shows the dtype it is stored in and weak_type=True
  if traced_by(self) is not None: return _str(self)
  weak = self.dtype in dtypes.weaks
  dt = weak_storage_dtype(self.dtype) if weak else self.dtype
  dtype_str = f"dtype={_tg.dtype_name(dt)}" + (", weak_type=True" if weak else "")
  a = self.numpy()
  if weak and (npdt := _tg.np_dtype(dt)) is not None: a = a.astype(npdt)
  line_width = np.get_printoptions()["linewidth"]
  s = f"[], shape={a.shape}" if a.size == 0 else np.array2string(a, prefix="Array(", suffix=",", separator=", ", max_line_width=line_width)
  sep = " " * len("Array(") if len(s) - s.rfind("\n") + 1 + len(dtype_str) + 2 > line_width else " "
  return f"Array({s},{sep}{dtype_str})"

def _format(self: Tensor, spec: str) -> str:
  # as a JAX array: f"{x}" of an array is str(x); a 0-d value formats as its numpy scalar, so "{}".format(loss) of a
  # float32 shows the float's digits (316.8586730957031) where str(loss) shows 316.85867
  if not spec and (self.ndim or traced_by(self) is not None): return str(self)
  if self.ndim: raise TypeError(f"unsupported format string passed to Tensor.__format__: {spec!r} (for a {self.ndim}-d array)")
  return format(self.numpy()[()], spec)

def _iter(self: Tensor):
  if self.ndim == 0: raise TypeError("iteration over a 0-d array")
  # concrete data: its rows copied on the host (`k, sub = split(k)`: a view per row was ~90 us of tinygrad's indexing)
  if eager_buffers() and (rows := _tg.host_rows(self)) is not None: return iter(rows)
  return (self[i] for i in range(self.shape[0]))

def _scalar_read(self: Tensor, method: str) -> Tensor:
  """The Tensor whose data bool()/float()/int() read: a traced value whose inputs are concrete and that no derivative
  flows through reads from them, as in JAX (`if x > 0:` under grad); another traced one raises."""
  if (stand_in := _tg.concrete_stand_in(method, self)) is not None: return stand_in
  _tg.check_read(method, (self,))
  return self

def _bool(self: Tensor) -> bool:
  # as a JAX array outside a transform: `if err < tol:` reads a size-1 value; a traced one raises in the read guard
  self = _scalar_read(self, "__bool__")
  if self.size != 1:
    raise ValueError(f"The truth value of an array with more than one element is ambiguous (shape {tuple(self.shape)}). "
                     "Use a.any() or a.all()")
  return bool(self.item())

def _index(self: Tensor) -> int:
  if self.ndim or dtypes.is_float(self.dtype) or self.dtype == dtypes.bool:
    raise TypeError("only integer scalar arrays can be converted to a scalar index")
  return int(self.item())

_REDUCTIONS = ("sum", "prod", "mean", "max", "min", "any", "all", "argmax", "argmin", "std", "var", "logsumexp")

_tg.add_tensor_methods({"astype": astype, "ravel": ravel, "block_until_ready": block_until_ready,
                            "size": property(_size), "mT": property(lambda self: self.transpose(-2, -1)),
                            # JAX's x.T reverses all axes (numpy's): a vector or scalar is itself, and a 3-d array's
                            # axes go (2, 1, 0) (tinygrad's .T swaps axes 1 and 0: an EM program's r.T[-1] had another shape)
                            "T": property(lambda self: self if self.ndim < 2 else self.permute(tuple(reversed(range(self.ndim))))),
                            **{n: _jax_keywords(n) for n in _REDUCTIONS},
                            **{n: _numpy_operand(n) for o in _OPERATORS for n in (f"__{o}__", f"__r{o}__")},
                            **{f"__i{o}__": _inplace(o) for o in _INPLACE},
                            **{n: _numpy_operand(n, fn, n.startswith("__r")) for n, fn in _NUMPY_AS_JNP.items()},
                            **{n: _static_arguments(n) for n in _SHAPE_METHODS},
                            **{n: _numpy_operand(n) for n in _COMPARISONS},
                            **{n: _jnp_operator(f, False) for n, f in _AS_JNP.items()},
                            "__rfloordiv__": _jnp_operator(_math.floor_divide, True), "__rmod__": _jnp_operator(_math.mod, True),
                            # numpy defers its operators to Tensor's reflected ones (np_array * t is a Tensor, as with JAX)
                            "__array_priority__": 100,
                            "__float__": lambda self: float(_scalar_read(self, "__float__").item()),
                            "__int__": lambda self: int(_scalar_read(self, "__int__").item()),
                            "__index__": _index, "__bool__": _bool, "__str__": _str, "__repr__": _repr, "__format__": _format, "__iter__": _iter,
                            "__abs__": lambda self: self.abs()},
                           "JAX's array methods, keywords and operators (numpy operands, dtype promotion) on Tensors")

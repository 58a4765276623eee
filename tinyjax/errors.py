"""Errors tinyjax raises, with JAX's names where JAX has one."""
from tinyjax._tg import dtype_name


class ConcretizationTypeError(TypeError):
  """A traced value was read (like JAX's ConcretizationTypeError)."""
  def __init__(self, transform: str, method: str, tensor=None):
    what = {"__bool__": "bool()", "__float__": "float()", "__int__": "int()"}.get(method, f".{method}()")
    shape = f" of shape {tuple(tensor.shape)} and dtype {dtype_name(tensor.dtype)}" if tensor is not None else ""
    super().__init__(
      f"Abstract tracer value encountered where a concrete value is expected: {what} was called on a Tensor{shape} "
      f"that depends on the arguments of a function transformed by tinyjax.{transform}. Inside a transform such a "
      f"Tensor has no data yet; use Tensor operations instead (for example Tensor.where instead of a Python `if`), "
      f"or read the value outside the transformed function.")
    self.transform, self.method = transform, method


class TracerArrayConversionError(TypeError):
  """A numpy function was applied to a traced value (like JAX's TracerArrayConversionError)."""
  def __init__(self, transform: str, tensor):
    super().__init__(
      f"The numpy.ndarray conversion method __array__() was called on a traced Tensor of shape {tuple(tensor.shape)} and "
      f"dtype {dtype_name(tensor.dtype)} inside tinyjax.{transform}: a numpy function (np.asarray, np.sin, ...) was applied to a "
      f"value that has no data yet. Use the Tensor's own methods (x.sin(), tinyjax.numpy) inside transformed functions.")
    self.transform = transform


class UnexpectedTracerError(Exception):
  """A Tensor refers to a value traced inside a transform that has ended (JAX's UnexpectedTracerError)."""
  def __init__(self, method: str = "", message: str | None = None):
    if message is not None: return super().__init__(message)
    super().__init__(f"Encountered an unexpected tracer: .{method}() was called on a Tensor that refers to a value "
                     "traced inside a tinyjax transform that has ended: it escaped the transformed function (stored in "
                     "a list or a global, or assigned to a buffer with buf.assign(x)). Its data never existed; return "
                     "the value from the function instead.")


def no_rule(op, transform: str) -> NotImplementedError:
  """`op`: a tinygrad Ops, or the name of a call-like node ("custom_call", "gather")."""
  what = f"tinygrad op {op.name}" if hasattr(op, "name") else op
  return NotImplementedError(f"tinyjax.{transform}: no {transform} rule for {what}")


PORTING = "see docs/porting.md"

def missing_names(module: str, jax_module: str):
  """A module `__getattr__` for a tinyjax module standing in for a JAX one: a name JAX has and tinyjax does not fails
  at once, naming it, rather than later inside tinygrad."""
  def __getattr__(name: str):
    if name.startswith("__"): raise AttributeError(name)   # Python's own probes (__path__, __wrapped__...)
    raise AttributeError(f"module {module!r} has no attribute {name!r}: {jax_module}.{name} is not implemented in tinyjax "
                         f"({PORTING})")
  return __getattr__

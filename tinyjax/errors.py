"""Errors tinyjax raises, with JAX's names where JAX has one."""


class ConcretizationTypeError(TypeError):
  """A traced value was read (like JAX's ConcretizationTypeError)."""
  def __init__(self, transform: str, method: str, tensor=None):
    what = "bool()" if method == "__bool__" else f".{method}()"
    shape = f" of shape {tuple(tensor.shape)} and dtype {tensor.dtype}" if tensor is not None else ""
    super().__init__(
      f"Abstract tracer value encountered where a concrete value is expected: {what} was called on a Tensor{shape} "
      f"that depends on the arguments of a function transformed by tinyjax.{transform}. Inside a transform such a "
      f"Tensor has no data yet; use Tensor operations instead (for example Tensor.where instead of a Python `if`), "
      f"or read the value outside the transformed function.")
    self.transform, self.method = transform, method


class UnexpectedTracerError(Exception):
  """A Tensor refers to a value traced inside a transform that has ended (JAX's UnexpectedTracerError)."""
  def __init__(self, method: str):
    super().__init__(f"Encountered an unexpected tracer: .{method}() was called on a Tensor that refers to a value "
                     "traced inside a tinyjax transform that has since ended with an error (for example a buffer "
                     "assigned a traced value, buf.assign(x), inside the transformed function). Its data never existed.")


def no_rule(op, transform: str) -> NotImplementedError:
  """`op`: a tinygrad Ops, or the name of a call-like node ("custom_call", "gather")."""
  what = f"tinygrad op {op.name}" if hasattr(op, "name") else op
  return NotImplementedError(f"tinyjax.{transform}: no {transform} rule for {what}")

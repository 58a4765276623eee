"""Errors tinyjax raises, with JAX's names where JAX has one."""


class ConcretizationTypeError(TypeError):
  """A traced value was read (like JAX's ConcretizationTypeError)."""
  def __init__(self, transform: str, method: str, tensor=None):
    what = f"bool() of a Tensor" if method == "__bool__" else f".{method}()"
    shape = f" of shape {tuple(tensor.shape)} and dtype {tensor.dtype}" if tensor is not None else ""
    super().__init__(
      f"Abstract tracer value encountered where a concrete value is expected: {what} was called on a Tensor{shape} "
      f"that depends on the arguments of a function transformed by tinyjax.{transform}. Inside a transform such a "
      f"Tensor has no data yet; use Tensor operations instead (for example Tensor.where instead of a Python `if`), "
      f"or read the value outside the transformed function.")
    self.transform, self.method = transform, method


def no_rule(op, transform: str) -> NotImplementedError:
  return NotImplementedError(f"tinyjax.{transform}: no {transform} rule for tinygrad op {op.name}")

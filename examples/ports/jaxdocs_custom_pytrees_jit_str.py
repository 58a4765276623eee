# Source: https://github.com/jax-ml/jax/blob/main/docs/custom_pytrees.md, section "Custom pytree nodes"
# Exercises: jit of a function of a NamedTuple pytree whose leaves include a str raises TypeError
# Adapted: the MyOtherContainer cells only; the raises-exception cell wrapped in try/except printing the exception type

import jax
from typing import NamedTuple, Any

class MyOtherContainer(NamedTuple):
  name: str
  a: Any
  b: Any
  c: Any

@jax.jit
def f(x):
  return x.a + x.b

try:
  moc = MyOtherContainer('moc', 1, 2, 3)
  y = f(moc)
except TypeError as e:
  print(type(e).__name__)

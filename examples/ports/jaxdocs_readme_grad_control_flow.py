# Source: https://github.com/jax-ml/jax/blob/main/README.md, section "Automatic differentiation with grad"
# Exercises: grad of a function with Python control flow on its (concrete) argument
# Adapted: that cell only

import jax
import jax.numpy as jnp

def abs_val(x):
  if x > 0:
    return x
  else:
    return -x

abs_val_grad = jax.grad(abs_val)
print(abs_val_grad(1.0))   # prints 1.0
print(abs_val_grad(-1.0))  # prints -1.0 (abs_val is re-evaluated)

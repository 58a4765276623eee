"""tinyjax.lax: JAX's lax on tinygrad Tensors, the layer tinyjax.numpy, scipy, nn and random are written on.

`parallel` (collectives over named vmap axes), `ops` (lax's array functions), `control_flow` (loops and branches, each
one node run by a host call); `linalg`, `special` and `sorting` hold the kernels the array library shares.
"""
from tinyjax.errors import missing_names
from tinyjax.lax.parallel import *   # noqa: F401,F403  (psum, all_gather, ppermute, ...)
from tinyjax.lax.ops import *   # noqa: F401,F403  (dynamic_slice, conv_general_dilated, ...)
from tinyjax.lax.convolution import *   # noqa: F401,F403  (conv_transpose, conv_general_shape_tuple, ...)
from tinyjax.lax.control_flow import *   # noqa: F401,F403  (scan, while_loop, cond, ...)
from tinyjax.lax.fft import fft, FftType   # noqa: F401  (jax.lax.fft is the function)

__getattr__ = missing_names("tinyjax.lax", "jax.lax")

"""tinyjax: JAX-compatible function transforms for tinygrad."""
__version__ = "0.1.0"   # the one place: pyproject.toml reads it from here

from tinyjax import core   # noqa: F401  (installs the guards against reading traced values)
from tinyjax import tree_util, lax
from tinyjax.core import is_tracing
from tinyjax.config import config
from tinyjax.errors import ConcretizationTypeError, UnexpectedTracerError, TracerArrayConversionError
from tinyjax.transforms.vmap import vmap
from tinyjax.transforms.batching import Axis, vmapin, vmapout
from tinyjax.transforms.jvp import jvp, linearize
from tinyjax.transforms.vjp import vjp, grad, value_and_grad
from tinyjax.transforms.jacobian import jacfwd, jacrev, jacobian, hessian
from tinyjax.custom import custom_jvp, custom_vjp
from tinyjax.sparse.jacobian import sparsity, spjacobian, sphessian, SparseJacobian, SparseHessian
from tinyjax.transforms.jit import jit
from tinyjax import numpy, scipy, nn   # noqa: E402  (numpy installs JAX's array methods on Tensor)
from tinygrad import Tensor as Array   # jax.Array: tinyjax's arrays are tinygrad Tensors

__all__ = ["vmap", "vmapin", "vmapout", "Axis", "jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev",
           "jacobian", "hessian", "custom_jvp", "custom_vjp", "sparsity", "spjacobian", "sphessian", "SparseJacobian",
           "SparseHessian", "jit", "tree_util", "lax", "config", "is_tracing", "ConcretizationTypeError", "UnexpectedTracerError",
           "TracerArrayConversionError", "numpy", "scipy", "nn", "Array"]

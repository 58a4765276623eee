"""tinyjax: JAX-compatible function transforms for tinygrad."""
from tinyjax import _tg  # noqa: F401  (installs the guards against reading traced values)
from tinyjax import tree_util, lax
from tinyjax.errors import ConcretizationTypeError
from tinyjax.transforms.vmap import vmap
from tinyjax.transforms.batching import Axis, vmapin, vmapout

__all__ = ["vmap", "vmapin", "vmapout", "Axis", "tree_util", "lax", "ConcretizationTypeError"]
__version__ = "0.1.0"
from tinyjax.transforms.jvp import jvp, linearize
from tinyjax.transforms.vjp import vjp, grad, value_and_grad
from tinyjax.transforms.jacobian import jacfwd, jacrev, jacobian, hessian
from tinyjax.custom import custom_jvp, custom_vjp
from tinyjax.sparse.jacobian import sparsity, spjacobian, sphessian, SparseJacobian, SparseHessian
from tinyjax.transforms.jit import jit

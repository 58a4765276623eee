"""tinyjax: JAX-compatible function transforms for tinygrad."""
__version__ = "0.1.0"   # the one place: pyproject.toml reads it from here

import gc as _gc
from tinyjax import core   # noqa: F401  (installs the guards against reading traced values)
from tinyjax import tree_util, tree, lax
from tinyjax.core import is_tracing
from tinyjax.config import config
from tinyjax.dtypes import float0
from tinyjax.errors import ConcretizationTypeError, UnexpectedTracerError, TracerArrayConversionError, missing_names as _missing_names
from tinyjax.transforms.vmap import vmap
from tinyjax.transforms.batching import Axis, vmapin, vmapout
from tinyjax.transforms.jvp import jvp, linearize
from tinyjax.transforms.vjp import vjp, grad, value_and_grad
from tinyjax.transforms.jacobian import jacfwd, jacrev, jacobian, hessian
from tinyjax.custom import custom_jvp, custom_vjp
from tinyjax.ad_checkpoint import checkpoint, remat, checkpoint_policies
from tinyjax import ad_checkpoint
from tinyjax.sparse.jacobian import sparsity, spjacobian, sphessian, SparseJacobian, SparseHessian
from tinyjax.transforms.jit import jit
from tinyjax.transforms.pmap import pmap
from tinyjax import numpy, scipy, nn   # noqa: E402  (numpy installs JAX's array methods on Tensor)
from tinyjax import stages
from tinyjax.api import Device, devices, local_devices, device_count, local_device_count, default_backend, device_put, device_get, \
  block_until_ready, ShapeDtypeStruct, eval_shape, make_jaxpr, linear_transpose, named_call, named_scope
from tinyjax.api_extra import fwd_and_bwd, closure_convert, custom_gradient
from tinyjax import test_util
from tinyjax import random
from tinyjax import optim
from tinyjax import debug, experimental
from tinyjax.lax.callback import pure_callback, effects_barrier
from tinygrad import Tensor as Array   # jax.Array: tinyjax's arrays are tinygrad Tensors
from tinyjax import _tg
_tg.install()   # every change tinyjax makes to tinygrad (tinyjax/_tg/patches.py), once everything above registered its part
# What importing tinygrad, numpy, scipy and tinyjax made (~260k objects: modules, functions, pattern tables) lives as
# long as the process: out of the cyclic collector's scans. Each full collection scanned them again, ~80 ms, which fell
# in some call or other (a custom_vjp port's warm run: 14 ms, or 95 ms with one). Refcounting still frees them.
_gc.freeze()

__all__ = ["vmap", "vmapin", "vmapout", "Axis", "jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev",
           "jacobian", "hessian", "custom_jvp", "custom_vjp", "checkpoint", "remat", "checkpoint_policies", "ad_checkpoint",
           "sparsity", "spjacobian", "sphessian", "SparseJacobian", "SparseHessian", "jit", "tree_util", "tree", "lax", "random",
           "config", "is_tracing", "ConcretizationTypeError", "UnexpectedTracerError", "TracerArrayConversionError", "numpy",
           "scipy", "nn", "test_util", "Array", "Device", "devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "device_put", "device_get", "block_until_ready", "ShapeDtypeStruct", "eval_shape", "make_jaxpr",
           "linear_transpose", "named_call", "named_scope", "optim", "pmap", "debug", "experimental", "pure_callback",
           "effects_barrier", "float0", "fwd_and_bwd", "closure_convert", "custom_gradient", "stages"]

_missing = _missing_names("tinyjax", "jax")

def __getattr__(name: str):
  """A submodule not imported yet (tinyjax.random once it exists) is imported on first use; a name JAX has and tinyjax
  does not raises AttributeError naming it."""
  import importlib, importlib.util
  if not name.startswith("_") and importlib.util.find_spec(f"tinyjax.{name}") is not None: return importlib.import_module(f"tinyjax.{name}")
  return _missing(name)

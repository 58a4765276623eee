# Source: https://github.com/jax-ml/jax/blob/main/docs/notebooks/autodiff_cookbook.md, section "Composing VJPs, JVPs, and vmap"
# Exercises: matrix-Jacobian and Jacobian-matrix products by a Python loop (jnp.vstack) vs vmap of a vjp function / of jvp,
#   jacrev/jacfwd written with vmap over jnp.eye (in_axes=0 and 1), asserts with jnp.allclose, jit of a vjp function
#   whose primal used Python control flow and try/except
# Adapted: the logistic-regression setup cell of "Starting with grad" plus the cells of this section; W, b, U, S are fixed
#   numpy data instead of jax.random draws (random keys are issue 11); 8 covectors/vectors instead of 128; the %timeit
#   lines are dropped

import numpy as np
import jax.numpy as jnp
from jax import grad, jit, vmap

def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)

# Outputs probability of a label being true.
def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)

# Build a toy dataset.
inputs = jnp.array([[0.52, 1.12,  0.77],
                   [0.88, -1.08, 0.15],
                   [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])

# Initialize random model coefficients
W = jnp.array(np.array([0.3, -0.7, 1.1], np.float32))
b = jnp.array(np.float32(-0.2))

from jax import jvp, vjp

# Isolate the function from the weight matrix to the predictions
f = lambda W: predict(W, b, inputs)
y = f(W)

# Pull back the covectors `m_i` along `f`, evaluated at `W`, for all `i`.
# First, use a list comprehension to loop over rows in the matrix M.
def loop_mjp(f, x, M):
    y, vjp_fun = vjp(f, x)
    return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

# Now, use vmap to build a computation that does a single fast matrix-matrix
# multiply, rather than an outer loop over vector-matrix multiplies.
def vmap_mjp(f, x, M):
    y, vjp_fun = vjp(f, x)
    outs, = vmap(vjp_fun)(M)
    return outs

rng = np.random.RandomState(0)
num_covecs = 8
U = jnp.array(rng.randn(*((num_covecs,) + y.shape)).astype(np.float32))

loop_vs = loop_mjp(f, W, M=U)
print('Non-vmapped Matrix-Jacobian product')

print('\nVmapped Matrix-Jacobian product')
vmap_vs = vmap_mjp(f, W, M=U)

assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Matrix-Jacobian Products should be identical'
print(loop_vs, vmap_vs)

def loop_jmp(f, W, M):
    # jvp immediately returns the primal and tangent values as a tuple,
    # so we'll compute and select the tangents in a list comprehension
    return jnp.vstack([jvp(f, (W,), (mi,))[1] for mi in M])

def vmap_jmp(f, W, M):
    _jvp = lambda s: jvp(f, (W,), (s,))[1]
    return vmap(_jvp)(M)

num_vecs = 8
S = jnp.array(rng.randn(*((num_vecs,) + W.shape)).astype(np.float32))

loop_vs = loop_jmp(f, W, M=S)
print('Non-vmapped Jacobian-Matrix product')
vmap_vs = vmap_jmp(f, W, M=S)
print('\nVmapped Jacobian-Matrix product')

assert jnp.allclose(loop_vs, vmap_vs), 'Vmap and non-vmapped Jacobian-Matrix products should be identical'
print(loop_vs, vmap_vs)

from jax import jacrev as builtin_jacrev

def our_jacrev(f):
    def jacfun(x):
        y, vjp_fun = vjp(f, x)
        # Use vmap to do a matrix-Jacobian product.
        # Here, the matrix is the Euclidean basis, so we get all
        # entries in the Jacobian at once.
        J, = vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
        return J
    return jacfun

assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), 'Incorrect reverse-mode Jacobian results!'
print(our_jacrev(f)(W))

from jax import jacfwd as builtin_jacfwd

def our_jacfwd(f):
    def jacfun(x):
        _jvp = lambda s: jvp(f, (x,), (s,))[1]
        Jt = vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
        return jnp.transpose(Jt)
    return jacfun

assert jnp.allclose(builtin_jacfwd(f)(W), our_jacfwd(f)(W)), 'Incorrect forward-mode Jacobian results!'
print(our_jacfwd(f)(W))

def f(x):
    try:
        if x < 3:
            return 2 * x ** 3
        else:
            raise ValueError
    except ValueError:
        return jnp.pi * x

y, f_vjp = vjp(f, 4.)
print(jit(f_vjp)(1.))

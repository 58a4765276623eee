# Source: https://github.com/schaffer9/MagPI/blob/main/magpi/calc.py (differential operators for PINNs), with test cases
#   from https://github.com/schaffer9/MagPI/blob/main/test/test_calc.py, sections "TestDerivative", "TestDiv", "TestCurl",
#   "TestLaplace", "TestValueAndJacfwd", "TestValueAndJacrev"
# Exercises: forward-mode differential operators for physics-informed networks: jax.jvp with list primals/tangents,
#   directional and named partial derivatives, .at[].set on zeros_like, jacfwd/jacrev(has_aux=True, argnums tuple),
#   Hessian diagonal by vmap over jvp(jacfwd) (forward-over-forward hvp), laplacian of pytree-valued functions,
#   divergence and 2D/3D curl (jit, vmap), jax.linearize(has_aux=True) hvp; a Poisson residual -lap(u) - f of a tanh MLP
# Adapted: calc.py from "Scalar = Array" on, with magpi.prelude's star import replaced by the names calc.py uses, chex's
#   ArrayTree by Any, and the apply_to_module decorator (it only dispatches flax modules) dropped; the tests' bodies
#   follow with their assertIsclose checks turned into prints (a selection: 3D curls, scalar-input laplacians, jacrev
#   and the int-leaf tests left out, for time), temporaries deleted; the closing Poisson-residual lines (numpy MLP
#   weights, jit'd) added

from functools import partial, reduce, wraps
from inspect import signature
from typing import Any, Callable, Sequence, Optional, Literal, overload

import numpy as np
import jax
import jax.numpy as jnp
from jax import Array, grad, jit, jacfwd, jacrev, vmap, jvp
from jax.numpy import array, asarray, zeros_like, ones_like, diag, stack, sin, cos, pi
from jax.tree_util import tree_map, tree_leaves

Scalar = Array
PyTree = Any  # chex.ArrayTree


Partials = int | str


def value_and_derivative(
    f: Callable[..., Array], wrt: Partials, argnum: Optional[int] = None
) -> Callable[..., tuple[Array, Array]]:
    sig = signature(f)

    if argnum is not None:
        assert isinstance(argnum, int), "`argnum` must be a integer."
        assert isinstance(wrt, int), "`wrt` must be a integer if argnum is given."

    if isinstance(wrt, str):
        arg_names = list(sig.parameters.keys())
        assert (
            wrt in arg_names
        ), f"Argument `{wrt}` is not a valid attribute name for the function."
        wrt = arg_names.index(wrt)

    def df(*args, **kwargs):
        if isinstance(wrt, int) and argnum is None:
            ei = [
                ones_like(x) if i == wrt else zeros_like(x) for i, x in enumerate(args)
            ]
        elif isinstance(wrt, int) and argnum is not None:
            ei = [zeros_like(x) for x in args]
            ei[argnum] = ei[argnum].at[wrt].set(1.0)
        else:
            ei = wrt
        _f = lambda *args: f(*args, **kwargs)
        primals, tangents = jax.jvp(_f, list(args), ei)
        return primals, tangents

    return df


def derivative(
    wrt: Callable[..., Array] | Partials | Sequence[Partials],
    argnums: Optional[int | Sequence[int | None]] = None,
) -> Callable[..., Callable | PyTree]:
    """This derivative operator computes the respective derivatives
    using forward mode differentiation.

    >>> f = lambda x, y: x ** 2 + y
    >>> df = derivative(f, 0)(3., 1.)
    >>> bool(jnp.isclose(df, 6.))
    True
    >>> f = lambda x, y: x ** 2 * y + x * y ** 2
    >>> df = derivative(['x', 'y'])(f)(3., 5.)
    >>> bool(jnp.isclose(df, 16.))
    True
    >>> g = lambda x, y: sin(x * y**2)
    >>> dg = jit(derivative(g, 1))(1., 0.5)
    >>> bool(jnp.isclose(dg, cos(0.5 ** 2)))
    True
    >>> g = lambda x, y: sin(y[0]) * cos(y[1]) * x
    >>> dg = derivative([1], argnums=[1])(g)(1., array([0.5, 1.0]))
    >>> bool(jnp.isclose(dg, -sin(0.5) * sin(1.)))
    True
    >>> g = lambda x, y: sin(x) @ cos(y)
    >>> dg = derivative([0, 0], argnums=[0, 1])(g)(array([0.5, 1.0]), array([0.6, 1.0]))
    >>> bool(jnp.isclose(dg, -cos(0.5) * sin(0.6)))
    True

    Parameters
    ----------
    wrt : Union[Callable[..., Array], int, str, Sequence[Union[int, str]]]
        function, argnums, string or list of partial derivatives to compute
    argnums : Optional[int], optional
        if provided, the respective argument is considered a vector `wrt` should indicate the index
        of the partial derivative to compute

    Returns
    -------
    Callable[..., Array]
    """
    if callable(wrt):
        msg = "If a function is passed directly, `argnum` must be None or an integer"
        assert not isinstance(argnums, Sequence), msg
        if argnums is None:
            argnum = 0
        elif isinstance(argnums, Sequence):
            assert len(argnums) == 1
            argnum = argnums[0]
        else:
            argnum = argnums
        f = wrt
        sig = signature(f)
        df = value_and_derivative(f, argnum)
        _df = lambda *args, **kwargs: df(*args, **kwargs)[1]
        setattr(_df, "__signature__", sig)
        return _df

    if isinstance(wrt, int):
        wrt = [wrt]

    if not isinstance(argnums, Sequence):
        argnums = [argnums for _ in wrt]

    assert len(argnums) == len(wrt)

    def inner(f) -> Callable[..., Array]:
        def _df(f, ei, argnum):
            sig = signature(f)
            df = value_and_derivative(f, ei, argnum=argnum)
            derivative_f = lambda *args, **kwargs: df(*args, **kwargs)[1]
            setattr(derivative_f, "__signature__", sig)
            return derivative_f

        df = f
        assert isinstance(wrt, Sequence)
        assert isinstance(argnums, Sequence)
        for ei, argnum in zip(wrt, argnums):
            df = _df(df, ei, argnum)
        return df

    return inner


def value_and_jacfwd(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    def _f(*args, **kwargs):
        y = f(*args, **kwargs)
        if has_aux:
            y, aux = y
            return y, (y, aux)
        else:
            return y, y

    def df(*args, **kwargs):
        J, y = jacfwd(_f, argnums, has_aux=True, holomorphic=holomorphic)(
            *args, **kwargs
        )
        return y, J

    return df


def value_and_jacrev(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable:
    def _f(*args, **kwargs):
        y = f(*args, **kwargs)
        if has_aux:
            y, aux = y
            return y, (y, aux)
        else:
            return y, y

    def df(*args, **kwargs):
        J, y = jacrev(
            _f, argnums, has_aux=True, holomorphic=holomorphic, allow_int=allow_int
        )(*args, **kwargs)
        return y, J

    return df


def hvp(
    f: Callable[..., PyTree], primals: Sequence[PyTree], tangents: Sequence[PyTree]
) -> PyTree:
    return jvp(jacfwd(f), primals, tangents)[1]


def hvp_forward_over_reverse(
    f: Callable,
    primals: Sequence[PyTree],
    tangents: Sequence[PyTree],
    *args: Any,
    alpha: Optional[float | Array] = None,
    value_and_grad: bool = False,
    has_aux: bool = False,
    **kwargs: Any,
) -> PyTree:
    """Computes the hessian vector product of a Scalar valued
    function in forward-over-reverse mode.

    Args:
        f (Callable):
        primals Sequence[PyTree]:
        tangents Sequence[PyTree]:
        value_and_grad (bool, optional): Defaults to False.
        has_aux (bool, optional): Defaults to False.
    """

    def grad_f(*p):
        if value_and_grad:
            _, _grad_f = f(*p, *args, **kwargs)
        else:
            _, _grad_f = jax.value_and_grad(f, has_aux=has_aux)(*p, *args, **kwargs)
        return _grad_f

    _hvp = jvp(grad_f, primals, tangents)[1]
    if alpha is None:
        return _hvp
    else:
        return tree_add(_hvp, tree_scalar_mul(alpha, tangents[0]))


HVP = Callable


@overload
def value_grad_hvp(
    f: Callable,
    primals: PyTree,
    *args: Any,
    value_and_grad: bool = False,
    has_aux: Literal[False] = False,
    **kwargs: Any,
) -> tuple[Array, PyTree, HVP]: ...


@overload
def value_grad_hvp(
    f: Callable,
    primals: PyTree,
    *args: Any,
    value_and_grad: bool = False,
    has_aux: Literal[True] = True,
    **kwargs: Any,
) -> tuple[Array, PyTree, HVP, Any]: ...


def value_grad_hvp(
    f: Callable,
    primals: PyTree,
    *args: Any,
    value_and_grad: bool = False,
    has_aux: bool = False,
    **kwargs: Any,
) -> tuple[Array, PyTree, HVP] | tuple[Array, PyTree, HVP, Any]:
    """Computes the value, gradient and hvp of a function.

    Args:
        f (Callable):
        primals PyTree:
        value_and_grad (bool, optional): Defaults to False.
        has_aux (bool, optional): Defaults to False.

    Returns:
        If `has_aux` is `False`, it returns a tuple
        `(f(*primals), grad(f)(*primals), hvp)`. If `has_aux` is
        `True` it returns `(f(*primals), grad(f)(*primals), hvp, aux)`.

    """

    def grad_f(p: PyTree) -> PyTree:
        if value_and_grad:
            value, _grad_f = f(p, *args, **kwargs)
        else:
            value, _grad_f = jax.value_and_grad(f, has_aux=has_aux)(p, *args, **kwargs)
        return _grad_f, value

    _grad_f, hvp, value = jax.linearize(grad_f, primals, has_aux=True)
    if has_aux:
        value, aux = value
        return value, _grad_f, hvp, aux
    else:
        return value, _grad_f, hvp


def hvp_reverse_over_reverse(
    f: Callable,
    primals: Sequence[PyTree],
    tangents: Sequence[PyTree],
    *args: Any,
    value_and_grad: bool = False,
    has_aux: bool = False,
    **kwargs: Any,
) -> PyTree:
    def grad_f(p):
        if value_and_grad:
            _, _grad_f = f(p, *args, **kwargs)
        else:
            _, _grad_f = jax.value_and_grad(f, has_aux=has_aux)(p, *args, **kwargs)
        return _grad_f

    (x,) = primals
    (v,) = tangents
    return grad(lambda x: tree_vdot(grad_f(x), v))(x)


def hessian_diag(f: Callable[..., PyTree], primals: Array) -> PyTree:
    primals = asarray(primals)
    is_1d = primals.shape == ()
    
    if is_1d:
        v = asarray(1.0)
        diag_entrie = hvp(f, [primals], [v])
        return tree_map(lambda t: asarray([t]), diag_entrie)
    else:
        primals = primals.ravel()
        vs = jnp.eye(primals.shape[0])

        def comp(v):
            return tree_map(lambda a: a @ v, hvp(f, [primals], [v]))

        diag_entries = jax.vmap(comp)(vs)
        return diag_entries


def laplace(f: Callable[..., PyTree]) -> Callable:
    """Computes the laplacian :math:`\\Delta f` wrt. the first argument.
    If `f` is a vector valued function, the laplacian of each output is
    computed.

    Parameters
    ----------
    f : Callable
    """

    def lap(x, *args, **kwargs):
        H_diag = hessian_diag(lambda x: f(x, *args, **kwargs), x)
        return tree_map(lambda d: jnp.sum(d, axis=0), H_diag)

    return lap


def divergence(f: Callable[..., PyTree], argnums=0) -> Callable[..., PyTree]:
    """Computes the divergence :math:`\\nabla \\cdot f` wrt. the first argument.

    Parameters
    ----------
    f : Callable[..., Array]
    """

    def div_f(*args, **kwargs):
        _, d = value_and_divergence(f, argnums)(*args, **kwargs)
        return d

    return div_f


def value_and_divergence(
    f: Callable[..., PyTree], argnums=0
) -> Callable[..., tuple[PyTree, PyTree]]:
    """Computes the divergence :math:`\\nabla \\cdot f` wrt. the first argument.

    Parameters
    ----------
    f : Callable[..., Array]
    """

    def div_f(*args, **kwargs):
        y, Jf = value_and_jacfwd(f, argnums)(*args, **kwargs)

        def _compute_div(Jf):
            if len(Jf.shape) > 2:
                return jnp.sum(vmap(diag, 0)(Jf), -1)
            else:
                return jnp.sum(diag(Jf))

        return y, tree_map(_compute_div, Jf)

    return div_f


def curl(f: Callable[..., PyTree]) -> Callable[..., PyTree]:
    """Computes the curl :math:`\\nabla \\times f` wrt. the first argument.

    Parameters
    ----------
    f : Callable[..., Array]
    """

    def _curl(x, *args):
        if x.shape[0] == 2:
            return curl2d(f)(x, *args)
        elif x.shape[0] == 3:
            return curl3d(f)(x, *args)
        else:
            raise ValueError("Dimension must be 2 or 3.")

    return _curl


def curl3d(f):
    def _f(x, *args):
        def h(x, *args):
            v = f(x, *args)
            return v, v

        J, v = jacfwd(h, 0, has_aux=True)(x, *args)
        assert is_3d(v), "Function must have 3d output"

        def _curl(J):
            x = J[..., 2, 1] - J[..., 1, 2]
            y = J[..., 0, 2] - J[..., 2, 0]
            z = J[..., 1, 0] - J[..., 0, 1]
            c = jnp.stack((x, y, z), axis=-1)
            return c

        return tree_map(_curl, J)

    return _f


def curl2d(f):
    def _f(x, *args):
        def h(x, *args):
            v = f(x, *args)
            return v, v

        J, v = jacfwd(h, 0, has_aux=True)(x, *args)
        assert is_2d(v), "Function must have 2d output"

        def _curl(J):
            c = J[..., 1, 0] - J[..., 0, 1]
            return c

        return tree_map(_curl, J)

    return jit(_f)


def is_2d(*args) -> bool:
    return all(tree_leaves(tree_map(lambda x: x.shape[-1] == 2, args)))


def is_3d(*args) -> bool:
    return all(tree_leaves(tree_map(lambda x: x.shape[-1] == 3, args)))


# ---- test/test_calc.py ----
g = lambda x: sin(x)
print("derivative 01", jit(derivative(g))(0.5))
g = lambda x, y: sin(x) * cos(y)
print("derivative 02", derivative(1)(g)(0.5, 1.0))
print("derivative 03", derivative([1, 0])(g)(0.5, 1.0))
print("derivative 04", jit(derivative(["x", "y", "y"])(g))(0.5, 1.0))
print("derivative 05", jit(derivative([[0.0, 1.0]])(g))(0.5, 1.0))
g = lambda x: sin(x[0]) * cos(x[1])
print("derivative 06", jit(derivative([1], argnums=0)(g))(array([0.5, 1.0])))
g = lambda x, y: sin(x * y**2)
print("derivative 07", jit(derivative(g, 1))(1.0, 0.5))

def f(x):
    return x**2
print("div 01", divergence(f)(array([2.0, 2.0])))
def f(x):
    return asarray([x**2, x])
print("div 02", divergence(f)(array([2.0, 2.0])))
y, div = value_and_divergence(f)(array([2.0, 2.0]))
print("div 03", y, div)
def f(x):
    return asarray([x**2, x]), asarray([x**2, x])
y, div = value_and_divergence(f)(array([2.0, 2.0]))
print("div 04", y, div)

def f(x):
    o = stack([x[1] ** 2, x[0] ** 2])
    return o
print("curl 01", vmap(curl(f))(array([[2.0, 1.0], [2.0, 1.0]])))
def f(x):
    o = stack([x[1] ** 2, x[0] ** 2])
    return stack([o, o, o]), stack([o, o, o])
print("curl 05", curl(f)(array([2.0, 1.0])))
def f(x):
    o = x[0] ** 2 + x[1] ** 2 + x[2] ** 3
    return o
print("laplace 1", vmap(laplace(f))(array([[1.0, 1.0, 2.0], [1.0, 1.0, 2.0]])))
def f(x):
    o = x[0] ** 2 + x[1] ** 2 + x[2] ** 3
    return array([[o, 2 * o], [o, 3 * o]])
print("laplace matrix", laplace(f)(array([1.0, 1.0, 2.0])))
def f(x):
    o = x[0] ** 2 + x[1] ** 2 + x[2] ** 3
    return o, 2 * o
print("laplace pytree", laplace(f)(array([1.0, 1.0, 2.0])))
y, dy = value_and_jacfwd(sin)(pi / 2)
print("value_and_jacfwd 00", y, dy)
def f(x1, x2):
    return x1**2 + x2, x2
(y, aux), dy = value_and_jacfwd(f, argnums=(0, 1), has_aux=True)(array([1.0, 1.0]), 2.0)
print("value_and_jacfwd 01", y, aux, dy)
del y, aux, dy, div

# ---- a Poisson residual -lap(u) - f of a small tanh MLP u(x), x in R^2 ----
rng = np.random.RandomState(0)
params = [(rng.randn(2, 16).astype(np.float32), np.zeros(16, np.float32)),
          (rng.randn(16, 1).astype(np.float32) / 4, np.zeros(1, np.float32))]
def u(x, params):
    (w1, b1), (w2, b2) = params
    return (jnp.tanh(x @ w1 + b1) @ w2 + b2)[0]
xs = rng.uniform(-1, 1, (6, 2)).astype(np.float32)
source = lambda x: 2 * pi**2 * sin(pi * x[0]) * sin(pi * x[1])
residual = jit(vmap(lambda x: -laplace(u)(x, params) - source(x)))(xs)
residual_from_hessian = jit(vmap(lambda x: -jnp.trace(jax.hessian(u)(x, params)) - source(x)))(xs)
print("residual", residual)
def loss_value_grad_and_hvp_along_grad(p):
    value, gradient, hvp_fn = value_grad_hvp(lambda p: jnp.mean(vmap(lambda x: -laplace(u)(x, p) - source(x))(xs) ** 2), p)
    return value, gradient, hvp_fn(gradient)
value, gradient, hvp_along_gradient = jit(loss_value_grad_and_hvp_along_grad)(params)
print("loss", value)
hvp_fwd_rev = hvp_forward_over_reverse(lambda x: u(x, params), [xs[0]], [jnp.array([1.0, 0.0])])
print("hvp", hvp_fwd_rev)

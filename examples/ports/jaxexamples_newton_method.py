# Source: https://github.com/jax-ml/jax/blob/1b4bb05bc410229f84ddc51b23fcdfed58afbdc3/examples/newton_method.py
#   (Newton's method with a Wolfe line search on the extended Freudenstein-Roth function)
# Exercises: an un-jitted Python `while` loop of jax.grad and jax.hessian of a function indexing x[0]..x[3], the
#   Wolfe conditions compared in Python `if`s (res.dot(dk.T) of a (4,) and a (1, 4) array), jnp.linalg.inv,
#   jnp.linalg.norm against a tolerance, x_0 += alpha * dk[0] on an array built from a list of floats, str.format of
#   arrays
# Adapted: newton's tolerance on |dk| 1e-6 -> 1e-4 (its epsilon argument): at 1e-6 the last step is decided by float32
#   rounding (|dk| ~ 1e-6 there): JAX stops after 5 steps, tinyjax (whose float32 rounding differs) takes a sixth

import jax
from typing import Callable, Iterable

is_float = lambda x: isinstance(x, (float, int))

ini = [1., -1., 1., -1.]

g = lambda x: (-13 + x[0] + ((5 - x[1])*x[1] - 2)*x[1])**2 + (-29 + x[0] + ((x[1] + 1)*x[1] - 14)*x[1])**2 + (-13 + x[2] + ((5 - x[3])*x[3] - 2)*x[3])**2 + (-29 + x[2] + ((x[3] + 1)*x[3] - 14)*x[3])**2

def wolfe(fun: Callable,
          res0, 
          x_0: Iterable, 
          dk, 
          c1: float=0.3, 
          c2: float=0.5, 
          alphas: float=0., 
          alphae: float=2.,
          eps: float=1e-3) -> float:
    '''
    Step size finder.
    '''
    assert c1 > 0
    assert c1 < 1
    assert c2 > 0
    assert c2 < 1
    assert c1 < c2
    assert alphas >= 0
    assert alphas < alphae
    assert eps > 0
    alpha = 1
    f0 = fun(x_0)
    while alphas < alphae:
        x = x_0 + (alpha*dk)[0]
        f1 = fun(x)
        if f1 <= f0 + c1*alpha*res0.dot(dk.T):
            res1 = jax.grad(fun)(x)
            if res1.dot(dk.T) >= c2*res0.dot(dk.T):
                break
            else:
                alphas = alpha
                alpha = 0.5 * (alphas + alphae)
        else:
            alphae = alpha
            alpha = 0.5 * (alphas + alphae)
        if jax.numpy.abs(alphas - alphae) < eps:
            break
    return alpha


def newton(fun: Callable, 
           x_0: Iterable,
           verbose: bool=False, 
           epsilon: float=1e-6, 
           k: int=0):
    assert all(list(map(is_float, x_0)))
    x_0 = jax.numpy.array(x_0)
    while 1:
        gradient = jax.grad(fun)(x_0)
        hessian = jax.hessian(fun)(x_0)
        dk = -jax.numpy.linalg.inv(hessian).dot(gradient.T).reshape(1, -1)
        if verbose:
            print('{}\t{}\t{}'.format(x_0, fun(x_0), k))
        if jax.numpy.linalg.norm(dk) >= epsilon:
            alpha = wolfe(fun, gradient, x_0, dk)
            x_0 += alpha * dk[0]
            k += 1
        else:
            break

newton(g, ini, True, epsilon=1e-4)

# Source: https://github.com/jax-ml/jax/blob/2c38ef6c93184d21fa962dc5959620c413269706/examples/bfgs_method.py
#   (Hessian-updated BFGS with the Wolfe line search of examples/newton_method.py), with newton_method.py (its import
#   `from newton_method import wolfe, g, ini, is_float`, which runs Newton's demo) inlined first as
#   examples/ports/jaxexamples_newton_method.py has it
# Exercises: un-jitted quasi-Newton loop: grad and hessian once, then the Hessian updated in place
#   (hessian += outer products of (4,) and (1, 4) arrays divided by dot products of shape (1,)), x_0 += delta[0],
#   jnp.linalg.inv of the updated Hessian, the Wolfe search's Python comparisons, str.format of arrays
# Adapted: both tolerances 1e-6 -> 1e-4 (newton's and bfgs's epsilon arguments): at 1e-6 float32 rounding decides
#   whether one more step is taken

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


# ---- examples/bfgs_method.py ----

def bfgs(fun: Callable, 
         x_0: Iterable,
         verbose: bool=False,
         epsilon: float=1e-6, 
         k: int=0):
    '''
    Hessian-based BFGS Method.
    '''
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
            delta = alpha * dk # sk
            x_0 += delta[0]
            yk = jax.grad(fun)(x_0) - gradient
            hess_delta = hessian.dot(delta.T)
            if yk.all != 0:
                hessian += (yk.T).dot(yk) / delta.dot(yk.T) - (hess_delta).dot(hess_delta.T) / delta.dot(hess_delta)
            k += 1
        else:
            break
    return x_0

if __name__ =='__main__':
    print(bfgs(g, ini, True, epsilon=1e-4))

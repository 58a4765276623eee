# Source: https://github.com/GavinEngelstad/heterogenous-modeling-playtime/blob/main/numerical_methods/netwtons_method.ipynb,
#   section "Newton's Method"
# Exercises: Newton iterations with jax.grad (1D) and jax.jacfwd (nD) Jacobians, jnp.linalg.inv and jnp.linalg.lstsq steps,
#   a jax.jit'd update closure, Python control flow on concrete array values (jnp.abs(...).max() < tol), outer/prod/hstack
# Adapted: cells 2-12 as one script; jax_enable_x64 left off (the harness runs with x64 off), so the calls pass maxiter=20
#   (1D) and tol=1e-5, maxiter=20 (nD) instead of the float64 defaults; %timeit lines become plain calls whose results
#   are printed (nD: the roots only, their residuals are float32 noise); cells 13-14 (28 and 200 unknowns) and plotting dropped

import jax.numpy as jnp
import warnings
import jax


def newtons_method_1d(f, x0=0., tol=1e-16, maxiter=1000):
    '''
    Uses Newton's method to find zeros of a 1D function
    '''
    # get derivative function
    df = jax.grad(f)

    # initial conditions
    x = x_l = x0
    for _ in range(maxiter):
        # update rule
        x, x_l = x - f(x) / df(x), x

        # exit condition
        if jnp.abs(x - x_l) < tol:
            break
    else:
        warnings.warn('Max iteration count exceeded')

    return x

## test cases
# sin
f = jnp.sin
x = newtons_method_1d(f, maxiter=20)
print(x, f(x))

# cos
f = jnp.cos
x = newtons_method_1d(f, 1., maxiter=20)  # needs to be 1 since df(0) = 0
print(x, f(x))

# exp
f = lambda x: jnp.exp(x) - 10
x = newtons_method_1d(f, maxiter=20)
print(x, f(x))

# polynomial
f = lambda x: x**2 + 2*x + 1
x = newtons_method_1d(f, maxiter=20)
print(x, f(x))


def newtons_method_inv(F, x0, tol=1e-10, maxiter=1000):
    '''
    Uses Newton's method to find zeros of a higher dimensional function
    '''
    # get derivative function
    jac = jax.jacfwd(F)

    # initial conditions
    X = X_l = x0  # x0 has to be defined so we know the sixe of input
    for _ in range(maxiter):
        # update rule
        X, X_l = X - jnp.linalg.inv(jac(X)) @ F(X), X

        # exit condition
        if jnp.abs(X - X_l).max() < tol:
            break
    else:
        warnings.warn('Max iteration count exceeded')

    return X


def newtons_method_solve(F, X0, tol=1e-10, maxiter=1000):
    '''
    Uses Newton's method to find zeros of a higher dimensional function
    '''
    # get derivative function
    jac = jax.jacfwd(F)

    # initial conditions
    X = X_l = X0  # x0 has to be defined so we know the sixe of inputt
    for _ in range(maxiter):
        # update rule
        X, X_l = X - jnp.linalg.lstsq(jac(X), F(X))[0], X

        # exit condition
        if jnp.abs(X - X_l).max() < tol:
            break
    else:
        warnings.warn('Max iteration count exceeded')

    return X


def newtons_method_inv_jit(F, x0, tol=1e-10, maxiter=1000):
    '''
    Uses Newton's method to find zeros of a higher dimensional function
    '''
    # get derivative function
    jac = jax.jacfwd(F)

    # update rule
    @jax.jit
    def q(X):
        return X - jnp.linalg.inv(jac(X)) @ F(X)

    # initial conditions
    X = X_l = x0  # x0 has to be defined so we know the sixe of inputt
    for _ in range(maxiter):
        # update rule
        X, X_l = q(X), X

        # exit condition
        if jnp.abs(X - X_l).max() < tol:
            break
    else:
        warnings.warn('Max iteration count exceeded')

    return X


def newtons_method_solve_jit(F, x0, tol=1e-10, maxiter=1000):
    '''
    Uses Newton's method to find zeros of a higher dimensional function
    '''
    # get derivative function
    jac = jax.jacfwd(F)

    # update rule
    @jax.jit
    def q(X):
        return X - jnp.linalg.lstsq(jac(X), F(X))[0]

    # initial conditions
    X = X_l = x0  # x0 has to be defined so we know the sixe of inputt
    for _ in range(maxiter):
        # update rule
        X, X_l = q(X), X

        # exit condition
        if jnp.abs(X - X_l).max() < tol:
            break
    else:
        warnings.warn('Max iteration count exceeded')

    return X


def F(X):
    return jnp.array([
            5*X[0]**2 + X[0]*X[1]**2 * jnp.sin(2*X[1])**2 - 2,
            jnp.exp(X[0] - X[1]) + 4 * X[1] - 3
        ])
X2 = [newtons_method_inv(F, jnp.ones(2), tol=1e-5, maxiter=20),
      newtons_method_solve(F, jnp.ones(2), tol=1e-5, maxiter=20),
      newtons_method_inv_jit(F, jnp.ones(2), tol=1e-5, maxiter=20),
      newtons_method_solve_jit(F, jnp.ones(2), tol=1e-5, maxiter=20)]
print(X2[0])

def F(X):
    return (jnp.outer(X, jnp.cos(X[::-1])+jnp.linspace(1, 2, 12))**(-1)).sum(axis=0) - jnp.prod(X)
X12 = [newtons_method_inv(F, jnp.ones(12), tol=1e-5, maxiter=20),
       newtons_method_solve(F, jnp.ones(12), tol=1e-5, maxiter=20),
       newtons_method_inv_jit(F, jnp.ones(12), tol=1e-5, maxiter=20),
       newtons_method_solve_jit(F, jnp.ones(12), tol=1e-5, maxiter=20)]
print(X12[0])

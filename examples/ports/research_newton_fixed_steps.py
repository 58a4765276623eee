# Source: https://github.com/VishnuGonuguntla/numerical_methods_jax/blob/main/include/Newtons_jax.py, section "class Newtons_jax",
#   driven as in https://github.com/VishnuGonuguntla/numerical_methods_jax/blob/main/newtons_jax.py
# Exercises: fixed-count Newton iterations with jax.grad of a Python lambda at scalar array elements, iterates recorded with
#   .at[i + 1].set(...) into a jnp.zeros buffer, method state on a Python object
# Adapted: the two files merged (class, then the driver script); matplotlib import and plot() call, and the timing dropped;
#   the iterates printed

import jax.numpy as jnp
from jax import grad

class Newtons_jax:
    def solve(self, initial, n, f):
        self.n = n
        grad_eq = grad(f)
        self.a = jnp.zeros(n)
        self.a = self.a.at[0].set(initial)
        for i in range(n-1):
            self.a = self.a.at[i+1].set(self.a[i] - f(self.a[i])/grad_eq(self.a[i]))


n = 10; initial = 10
f = lambda x: x**2 - 2*x + 1
func = Newtons_jax()
func.solve(initial, n ,f)
print(func.a)

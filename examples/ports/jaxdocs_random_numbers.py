# Source: https://github.com/jax-ml/jax/blob/225a2a5f8bfe710e6a4aecb182d5bdd87683193b/docs/random-numbers.md, sections
#   "Random numbers in NumPy", "Explicit random state" and "Lack of sequential equivalence"
# Exercises: random.key and its printed repr, random.normal of a key (twice: the same draw), a loop of random.split
#   with `del`, an f-string of a draw, split into a starred list of 42 subkeys (num=43), split into 3 keys and a draw per key stacked with
#   np.stack, random.normal(key, shape=(3,)), vmap(random.normal) over an array of keys; numpy's global generator
#   mixed in
# Adapted: none: the code cells of these sections in order (the second `import numpy as np` left out)

import numpy as np

np.random.seed(0)
print(np.random.uniform(size=3))

np.random.seed(0)
print("individually:", np.stack([np.random.uniform() for _ in range(3)]))

np.random.seed(0)
print("all at once: ", np.random.uniform(size=3))

np.random.seed(0)

def bar(): return np.random.uniform()
def baz(): return np.random.uniform()

def foo(): return bar() + 2 * baz()

print(foo())

from jax import random

key = random.key(42)
print(key)

print(random.normal(key))
print(random.normal(key))

for i in range(3):
  new_key, subkey = random.split(key)
  del key  # The old key is consumed by split() -- we must never use it again.

  val = random.normal(subkey)
  del subkey  # The subkey is consumed by normal().

  print(f"draw {i}: {val}")
  key = new_key  # new_key is safe to use in the next iteration.

key, subkey = random.split(key)

key, *forty_two_subkeys = random.split(key, num=43)

key = random.key(42)
subkeys = random.split(key, 3)
sequence = np.stack([random.normal(subkey) for subkey in subkeys])
print("individually:", sequence)

key = random.key(42)
print("all at once: ", random.normal(key, shape=(3,)))

import jax
print("vectorized:", jax.vmap(random.normal)(subkeys))

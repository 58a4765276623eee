"""The dispatch floor: a jitted one-kernel function (x * 2 + 1 on 16 floats) per call, tinyjax.jit vs a bare TinyJit vs
jax.jit, in one run (issue 12's first goal: tinyjax.jit <= bare TinyJit, then <= 30 us).

  python -m bench.dispatch

Mean of 5 rounds of 2000 calls each (the minimum round is reported), device synchronized after each round.
"""
from __future__ import annotations
import time
import numpy as np
import bench.run   # noqa: F401  (JAX on the CPU, tinygrad's compile cache off)
import jax
from tinygrad import Tensor, TinyJit, Device
import tinyjax

def per_call(fn, n: int = 2000, rounds: int = 5) -> float:
  best = float("inf")
  for _ in range(rounds):
    t0 = time.perf_counter()
    for _ in range(n): fn()
    Device[Device.DEFAULT].synchronize()
    best = min(best, (time.perf_counter() - t0) / n)
  return best

def main():
  x = Tensor(np.arange(16, dtype=np.float32)).realize()
  xj = np.arange(16, dtype=np.float32)
  tj = tinyjax.jit(lambda x: x * 2 + 1)
  bare = TinyJit(lambda x: (x * 2 + 1).realize())
  jj = jax.jit(lambda x: x * 2 + 1)
  for _ in range(5): tj(x).realize(), bare(x), jj(xj).block_until_ready()
  rows = {"tinyjax.jit": per_call(lambda: tj(x)), "TinyJit": per_call(lambda: bare(x)),
          "jax.jit": per_call(lambda: jj(xj).block_until_ready())}
  print("| x * 2 + 1, 16 floats | per call |\n|---|---|")
  for k, v in rows.items(): print(f"| {k} | {v * 1e6:.1f} us |")

if __name__ == "__main__":
  main()

"""Throughput of tinyjax.random.uniform and normal against jax.random, 10^6 and 10^7 float32 numbers, in one run.

  python -m bench.random

Each sampler jitted with its key traced (tinyjax.jit / jax.jit), median of 5 calls after warm-up, device synchronized.
"""
from __future__ import annotations
import time
import numpy as np
import bench.run   # noqa: F401  (JAX on the CPU, tinygrad's compile cache off)
import jax, jax.random as jr
from tinygrad import Device
import tinyjax, tinyjax.random as tr

def median(fn, reps: int = 5) -> float:
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter()
    fn()
    ts.append(time.perf_counter() - t0)
  return float(np.median(ts))

def main():
  print("| sampler | n | tinyjax | JAX | tinyjax / JAX | tinyjax numbers/s |\n|---|--:|--:|--:|--:|--:|")
  for name in ("uniform", "normal"):
    for n in (10 ** 6, 10 ** 7):
      tj = tinyjax.jit(lambda k, n=n, name=name: getattr(tr, name)(k, (n,)))
      jj = jax.jit(lambda k, n=n, name=name: getattr(jr, name)(k, (n,)))
      kt, kj = tr.PRNGKey(0), jr.PRNGKey(0)
      for _ in range(2): tj(kt).realize(), jj(kj).block_until_ready()
      t = median(lambda: (tj(kt).realize(), Device[Device.DEFAULT].synchronize()))
      j = median(lambda: jj(kj).block_until_ready())
      print(f"| {name} | 10^{int(np.log10(n))} | {t * 1e3:.1f} ms | {j * 1e3:.1f} ms | {t / j:.2f}x | {n / t / 1e6:.0f} M |")

if __name__ == "__main__":
  main()

"""Throughput of tinyjax.random against jax.random, in one run: jitted uniform and normal of 10^6 and 10^7 float32
numbers, and eager (un-jitted) calls: split and normal of 10^3 and 10^6 numbers.

  python -m bench.random

Jitted: each sampler with its key traced (tinyjax.jit / jax.jit), median of 5 calls after warm-up, device synchronized.
Eager: the call as a program writes it (`key, sub = split(key)`; `normal(sub, (n,))`) on a computed key, median of 20
calls (5 at 10^6) after warm-up, its result computed (realize + synchronize / block_until_ready).
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

def sync(t):
  t.realize()
  Device[Device.DEFAULT].synchronize()

def fmt(s: float) -> str: return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} us"

def jitted():
  print("| sampler | n | tinyjax | JAX | tinyjax / JAX | tinyjax numbers/s |\n|---|--:|--:|--:|--:|--:|")
  for name in ("uniform", "normal"):
    for n in (10 ** 6, 10 ** 7):
      tj = tinyjax.jit(lambda k, n=n, name=name: getattr(tr, name)(k, (n,)))
      jj = jax.jit(lambda k, n=n, name=name: getattr(jr, name)(k, (n,)))
      kt, kj = tr.PRNGKey(0), jr.PRNGKey(0)
      for _ in range(2): tj(kt).realize(), jj(kj).block_until_ready()
      t = median(lambda: sync(tj(kt)))
      j = median(lambda: jj(kj).block_until_ready())
      print(f"| {name} | 10^{int(np.log10(n))} | {fmt(t)} | {fmt(j)} | {t / j:.2f}x | {n / t / 1e6:.0f} M |")

def eager():
  print("\n| eager call | tinyjax | JAX | tinyjax / JAX |\n|---|--:|--:|--:|")
  cases = [("split(k), k = PRNGKey(1)", tr.PRNGKey, jr.PRNGKey, "split", False, 20),
           ("k, sub = split(k), k raw", tr.PRNGKey, jr.PRNGKey, "split", True, 20),
           ("k, sub = split(k), k = key(1) typed", tr.key, jr.key, "split", True, 20),
           ("normal(k, (10^3,))", tr.key, jr.key, "normal3", False, 20),
           ("normal(k, (10^6,))", tr.key, jr.key, "normal6", False, 5)]
  for name, mk_t, mk_j, what, chain, reps in cases:
    def make(r, mk, done):
      st = {"k": r.split(mk(1))[0] if chain or what != "split" else mk(1)}   # a computed key, as in a program's loop
      def call():
        out = r.split(st["k"]) if what == "split" else r.normal(st["k"], (10 ** 3 if what == "normal3" else 10 ** 6,))
        if chain: st["k"], _ = out
        done(out)
      return call
    tj_call = make(tr, mk_t, lambda out: sync(out) if what != "split" else None)
    jj_call = make(jr, mk_j, lambda out: out.block_until_ready())
    for _ in range(3): tj_call(), jj_call()
    t, j = median(tj_call, reps), median(jj_call, reps)
    print(f"| {name} | {fmt(t)} | {fmt(j)} | {t / j:.2f}x |")

if __name__ == "__main__":
  jitted()
  eager()

"""What tinygrad's BEAM search buys: tinyjax.jit(f) vs tinyjax.jit(f, beam=N) vs jax.jit on the batched MLP and the
spjacobian cases of bench/cases.py, in one run (issue 12's kernel-search goal).

  python -m bench.beam [--beam N] [--quick]

Per call: the median after warm-up (bench.run.medians, round-robin). First call: a fresh jit on a cold tinygrad
(in-process caches cleared, on-disk cache off), so the BEAM column includes the search.
"""
from __future__ import annotations
import argparse, time
import numpy as np
from tinygrad import Tensor
import jax
import tinyjax
from bench.run import medians, cold_tinygrad, fmt, sync
from bench.cases import cases

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--beam", type=int, default=2)
  ap.add_argument("--quick", action="store_true")
  a = ap.parse_args()
  rows = [c for c in cases(a.quick) if c.name.startswith(("batched MLP", "spjacobian"))]
  print(f"| case | size | tinyjax | tinyjax beam={a.beam} | JAX | 1st tinyjax | 1st beam={a.beam} | beam / default |")
  print("|---|---|---|---|---|---|---|---|")
  for c in rows:
    args = [Tensor(x).realize() for x in c.inputs]
    jargs = [np.asarray(x) for x in c.inputs]
    tj_fn, jx_fn = (c.tj(*args), c.jx(*jargs)) if c.setup else (c.tj, c.jx)
    firsts, fns = {}, {}
    for name, beam in (("default", 0), ("beam", a.beam)):
      cold_tinygrad()
      f = tinyjax.jit(tj_fn, beam=beam)
      t = time.perf_counter()
      jax.tree_util.tree_map(lambda o: o.realize(), f(*args), is_leaf=lambda o: isinstance(o, Tensor))
      sync()
      firsts[name] = time.perf_counter() - t
      fns[name] = (lambda f=f: f(*args))
    jj = jax.jit(jx_fn)
    fns["jax"] = lambda: jax.block_until_ready(jj(*jargs))
    m = medians(fns, budget=2.0)
    print(f"| {c.name} | {c.size} | {fmt(m['default'])} | {fmt(m['beam'])} | {fmt(m['jax'])} | {fmt(firsts['default'])} | "
          f"{fmt(firsts['beam'])} | {m['beam'] / m['default']:.2f}x |")

if __name__ == "__main__":
  main()

"""FFT timings: tinyjax.jit of jnp.fft on the host call (pocketfft, the CPU default) and on tinygrad kernels (what
other devices run), against jax.numpy.fft under jax.jit, in one run.

  python -m bench.fft [--quick] [--only fft,rfft,fft2,rfft2]

complex64 / float32 throughout. 1-D transforms of n = 2^8 ... 2^20 points, 2-D ones of n x n for n = 2^4 ... 2^10. For
each: the first call (trace + compile + run) and the steady state (median of repeated calls, realized /
block_until_ready); writes bench/out/fft.md.
"""
from __future__ import annotations
import argparse, os
from pathlib import Path
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import jax
import jax.numpy as jxn
import tinyjax
import tinyjax.numpy as jnp
from tinyjax.complex_array import ComplexArray
from tinygrad import Tensor
from bench.linalg import _time   # (the same first-call / median timing)

def _c(shape) -> np.ndarray:
  rng = np.random.default_rng(0)
  return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

def _r(shape) -> np.ndarray: return np.random.default_rng(0).standard_normal(shape).astype(np.float32)

# name, tinyjax function, JAX function, input maker, sizes (the length of each transformed axis)
CASES = [
  ("fft", jnp.fft.fft, jxn.fft.fft, lambda n: _c((n,)), [2 ** k for k in range(8, 21, 2)]),
  ("rfft", jnp.fft.rfft, jxn.fft.rfft, lambda n: _r((n,)), [2 ** k for k in range(8, 21, 2)]),
  ("fft2", jnp.fft.fft2, jxn.fft.fft2, lambda n: _c((n, n)), [2 ** k for k in range(4, 11, 2)]),
  ("rfft2", jnp.fft.rfft2, jxn.fft.rfft2, lambda n: _r((n, n)), [2 ** k for k in range(4, 11, 2)]),
]

def _tensor(x: np.ndarray):
  if np.iscomplexobj(x): return ComplexArray(Tensor(np.ascontiguousarray(x.real)).realize(), Tensor(np.ascontiguousarray(x.imag)).realize())
  return Tensor(x).realize()

def _realize(z):
  return z.realize() if isinstance(z, ComplexArray) else z.realize()

def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true")
  ap.add_argument("--only", default=None)
  args = ap.parse_args()
  reps = 3 if args.quick else 7
  rows = []
  for name, tj, jx, make, sizes in CASES:
    if args.only and name not in args.only.split(","): continue
    for n in (sizes[:3] if args.quick else sizes):
      x = make(n)
      xt = _tensor(x)
      jx_fn = jax.jit(jx)
      def jxrun(): return jx_fn(x).block_until_ready()
      res = []
      for mode in ("host", "kernels"):
        tinyjax.config.update("tinyjax_fft", mode)
        fn = tinyjax.jit(lambda v, tj=tj: tj(v))   # a new function per mode: jit keeps traces per function
        def run(): return _realize(fn(xt))
        if mode == "kernels" and n > (2 ** 16 if x.ndim == 1 else 2 ** 8):   # the kernel path at the largest sizes: minutes
          res.append((float("nan"), float("nan"), float("nan")))
          continue
        first, steady = _time(run, reps)
        err = float(np.abs(np.asarray(run()) - np.asarray(jxrun())).max() / np.abs(np.asarray(jxrun())).max())
        res.append((first, steady, err))
      tinyjax.config.update("tinyjax_fft", "auto")
      x1, xs = _time(jxrun, reps)
      rows.append((name, n, *res[0], *res[1], x1, xs))
      print(f"{name:6s} n={n:8d} host {res[0][0]:6.2f}s/{res[0][1] * 1e3:9.3f}ms  kernels {res[1][0]:6.2f}s/{res[1][1] * 1e3:9.3f}ms  "
            f"JAX {x1:6.2f}s/{xs * 1e3:9.3f}ms  host/JAX {res[0][1] / xs:5.2f}x  kernels/JAX {res[1][1] / xs:6.2f}x  "
            f"rel.err {res[0][2]:.1e}/{res[1][2]:.1e}", flush=True)
  out = Path(__file__).parent / "out" / "fft.md"
  out.parent.mkdir(exist_ok=True)
  lines = ["| transform | n | host call 1st (s) | host call (ms) | kernels 1st (s) | kernels (ms) | JAX jit 1st (s) | JAX (ms) | "
           "host / JAX | kernels / JAX |", "|---|---|---|---|---|---|---|---|---|---|"]
  for (name, n, h1, h, _, k1, k, _, x1, xs) in rows:
    lines.append(f"| {name} | {n} | {h1:.2f} | {h * 1e3:.3f} | {k1:.2f} | {k * 1e3:.3f} | {x1:.2f} | {xs * 1e3:.3f} | "
                 f"{h / xs:.2f}x | {k / xs:.2f}x |")
  out.write_text("\n".join(lines) + "\n")
  print(f"wrote {out}")

if __name__ == "__main__":
  main()

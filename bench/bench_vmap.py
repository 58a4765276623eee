"""Benchmark tinyjax.vmap against hand-batched tinygrad, a Python loop, TinyJit and jax.jit(jax.vmap).

  .venv/bin/python bench/bench_vmap.py [--quick]

Columns (time per call: median of repeats, after warm-up; tinygrad times include a device synchronize):
  vmap      tinyjax.vmap(f)(X).realize()            tracing + rewriting + scheduling + kernels, every call
  hand      f_batched(X).realize()                  the same computation written with an explicit batch axis
  loop      Tensor.stack(*[f(X[i]) ...]).realize()  a Python loop over examples ('-': skipped for B > 16, where compiling
                                                   its big graph takes long: ~7 s at B=64, ~80 s at B=128 here)
  jax       jax.jit(jax.vmap(f_jnp))(X)             after compile, with block_until_ready
  trace     tinyjax.vmap(f)(X)                      building the lazy result only: tracing f + tinyjax's rewrite
  build     f_batched(X)                            building the hand-batched lazy result (trace - build ~ rewrite)
  jit-hand  TinyJit(lambda X: f_batched(X).realize())
  jit-vmap  TinyJit(lambda X: tinyjax.vmap(f)(X).realize())
  k-vmap / k-hand  kernels run by one realize of vmap / hand (GlobalCounters.kernel_count)
"""
from __future__ import annotations
import argparse, gc, os, platform, statistics, time, traceback
from importlib.metadata import version
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import jax, jax.numpy as jnp
from tinygrad import Tensor, TinyJit, Device
from tinygrad.helpers import GlobalCounters
import tinyjax

RNG = np.random.default_rng(0)
W_np, b_np = RNG.standard_normal((64, 64), dtype=np.float32) / 8, RNG.standard_normal(64, dtype=np.float32)
W, b = Tensor(W_np).realize(), Tensor(b_np).realize()
Wj, bj = jnp.asarray(W_np), jnp.asarray(b_np)

# name: (f on one example x of shape (64,), the same with an explicit leading batch axis, f in jax.numpy)
CASES = {
  "mlp (x@W+b).relu": (lambda x: (x @ W + b).relu(),
                       lambda X: (X @ W + b).relu(),
                       lambda x: jax.nn.relu(x @ Wj + bj)),
  "softmax(64)": (lambda x: x.softmax(-1),
                  lambda X: X.softmax(-1),
                  lambda x: jax.nn.softmax(x, -1)),
  "elementwise chain": (lambda x: (x.sin() * 2 + x.exp()).tanh() * x.sigmoid(),
                        lambda X: (X.sin() * 2 + X.exp()).tanh() * X.sigmoid(),
                        lambda x: jnp.tanh(jnp.sin(x) * 2 + jnp.exp(x)) * jax.nn.sigmoid(x)),
  "reduction (std)": (lambda x: (x - x.mean()).square().mean().sqrt(),
                      lambda X: (X - X.mean(-1, keepdim=True)).square().mean(-1).sqrt(),
                      lambda x: jnp.sqrt(jnp.mean(jnp.square(x - x.mean())))),
  "stack/index": (lambda x: Tensor.stack(x[:16], x[16:32] * 2, x[32:48] + x[48:], x[::4]),
                  lambda X: Tensor.stack(X[:, :16], X[:, 16:32] * 2, X[:, 32:48] + X[:, 48:], X[:, ::4], dim=1),
                  lambda x: jnp.stack([x[:16], x[16:32] * 2, x[32:48] + x[48:], x[::4]])),
}

def sync(): Device[Device.DEFAULT].synchronize()

def timeit(fns: dict, warmup=3, budget=1.5, min_reps=5, max_reps=200) -> dict:
  """Median seconds per call of each fn() after `warmup` calls. The variants run round-robin (one call each per round,
  until `budget` seconds) so that they all see the same machine load."""
  gc.collect()   # tinygrad's realize scans all live Tensors: start from the same state
  for fn in fns.values():
    for _ in range(warmup): fn()
  times, end = {k: [] for k in fns}, time.perf_counter() + budget
  for rep in range(max_reps):
    if rep >= min_reps and time.perf_counter() > end: break
    for k, fn in fns.items():
      t = time.perf_counter(); fn(); times[k].append(time.perf_counter() - t)
  return {k: statistics.median(v) for k, v in times.items()}

def kernels(make) -> int:
  lazy = make(); GlobalCounters.reset(); lazy.realize(); sync()
  return GlobalCounters.kernel_count

def fmt(s) -> str:
  if not isinstance(s, float): return str(s)
  return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"

def run_case(name, f, fb, fj, B, loop_max, notes) -> list:
  X_np = RNG.standard_normal((B, 64), dtype=np.float32)
  # separately realized inputs: identical lazy graphs on one buffer would be hash-consed and realized together
  Xv, Xh, Xl, Xjv, Xjh = (Tensor(X_np).realize() for _ in range(5))
  Xj = jnp.asarray(X_np)
  vf, jf = tinyjax.vmap(f), jax.jit(jax.vmap(fj))
  ref = np.asarray(jf(Xj))
  for got in (vf(Xv).numpy(), fb(Xh).numpy()): np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)

  def realized(make): return lambda: (make().realize(), sync())   # a fresh lazy result every call
  jit_hand, jit_vmap = TinyJit(lambda X: fb(X).realize()), TinyJit(lambda X: vf(X).realize())
  fns = {"vmap": realized(lambda: vf(Xv)), "hand": realized(lambda: fb(Xh)),
         "loop": realized(lambda: Tensor.stack(*[f(Xl[i]) for i in range(B)])),
         "jax": lambda: jf(Xj).block_until_ready(), "trace": lambda: vf(Xv), "build": lambda: fb(Xh),
         "jit-hand": lambda: (jit_hand(Xjh), sync()), "jit-vmap": lambda: (jit_vmap(Xjv), sync())}
  if B > loop_max: del fns["loop"]
  try:   # TinyJit runs the function on call 1, captures on call 2, replays from call 3
    for _ in range(4): out = jit_vmap(Xjv)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
  except Exception as e:
    del fns["jit-vmap"]
    notes.append(f"jit-vmap failed for {name}, B={B}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
  t = timeit(fns)
  return [name, B, *(t.get(k, "FAIL" if k == "jit-vmap" else "-") for k in HEADER[2:-2]),
          kernels(lambda: vf(Xv)), kernels(lambda: fb(Xh))]

HEADER = ["function", "B", "vmap", "hand", "loop", "jax", "trace", "build", "jit-hand", "jit-vmap", "k-vmap", "k-hand"]

def machine_info() -> list[str]:
  cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
  return [f"CPU: {cpu}, {os.cpu_count()} cores; {platform.platform()}; Python {platform.python_version()}",
          f"tinygrad {version('tinygrad')} (device {Device.DEFAULT}), jax {jax.__version__} ({jax.default_backend()}), "
          f"numpy {np.__version__}, tinyjax {tinyjax.__version__}",
          f"load average at start (1/5/15 min): {' '.join(open('/proc/loadavg').read().split()[:3])}"]

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true", help="batch sizes 1 and 64 only; writes bench/out/vmap_quick.md")
  args = ap.parse_args()
  sizes, loop_max = ([1, 64] if args.quick else [1, 16, 256, 4096]), 16
  info = machine_info()
  print("\n".join(info), flush=True)
  rows, notes, t0 = [], [], time.perf_counter()
  for name, (f, fb, fj) in CASES.items():
    for B in sizes:
      rows.append([fmt(c) for c in run_case(name, f, fb, fj, B, loop_max, notes)])
      print("  done:", name, B, f"({time.perf_counter() - t0:.0f} s)", flush=True)
  widths = [max(len(r[i]) for r in rows + [HEADER]) for i in range(len(HEADER))]
  line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
  print("\n" + line(HEADER) + "\n" + "  ".join("-" * w for w in widths) + "\n" + "\n".join(line(r) for r in rows))
  for n in notes: print("\n" + n)
  end_load = f"load average at end: {' '.join(open('/proc/loadavg').read().split()[:3])}"
  os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
  out = os.path.join(os.path.dirname(__file__), "out", "vmap_quick.md" if args.quick else "vmap.md")
  with open(out, "w") as fh:
    fh.write("# tinyjax.vmap benchmark\n\n" + "".join(f"- {l}\n" for l in info + [end_load]) +
             "\n```text\n" + __doc__.split("\n", 4)[4] + "```\n\n")
    fh.write("| " + " | ".join(HEADER) + " |\n|" + "|".join("---" if i == 0 else "--:" for i in range(len(HEADER))) + "|\n")
    fh.write("".join("| " + " | ".join(r) + " |\n" for r in rows))
    fh.write("".join(f"\n```\n{n}\n```\n" for n in notes))
  print(end_load)
  print(f"\nwrote {os.path.relpath(out)} ({time.perf_counter() - t0:.0f} s)")

if __name__ == "__main__": main()

"""Benchmark tinyjax.vmap against hand-batched tinygrad, a Python loop, TinyJit and jax.jit(jax.vmap).

  .venv/bin/python bench/bench_vmap.py [--quick]

Columns (time per call: median of repeats, after warm-up; tinygrad times include a device synchronize):
  vmap      tinyjax.vmap(f)(X).realize()            tracing + rewriting + scheduling + kernels, every call
  hand      f_batched(X).realize()                  the same computation written with an explicit batch axis
  loop      Tensor.stack(*[f(X[i]) ...]).realize()  a Python loop over examples ('-': skipped, too slow)
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

def timeit(fn, warmup=2, budget=0.3, min_reps=3, max_reps=50) -> float:
  """Median seconds per call of fn(), after `warmup` calls; repeats until `budget` seconds (within min/max_reps)."""
  gc.collect()   # tinygrad's realize scans all live Tensors: start each variant from the same state
  for _ in range(warmup): fn()
  times, end = [], time.perf_counter() + budget
  while len(times) < min_reps or (len(times) < max_reps and time.perf_counter() < end):
    t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
  return statistics.median(times)

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
  t_vmap = timeit(realized(lambda: vf(Xv)))
  t_hand = timeit(realized(lambda: fb(Xh)))
  t_loop = timeit(realized(lambda: Tensor.stack(*[f(Xl[i]) for i in range(B)])), warmup=1, min_reps=2) if B <= loop_max else "-"
  t_jax = timeit(lambda: jf(Xj).block_until_ready())
  t_trace = timeit(lambda: vf(Xv))
  t_build = timeit(lambda: fb(Xh))
  jit_hand = TinyJit(lambda X: fb(X).realize())
  t_jit_hand = timeit(lambda: (jit_hand(Xjh), sync()), warmup=3)
  jit_vmap = TinyJit(lambda X: vf(X).realize())
  try:
    t_jit_vmap = timeit(lambda: (jit_vmap(Xjv), sync()), warmup=3)
    np.testing.assert_allclose(jit_vmap(Xjv).numpy(), ref, rtol=1e-4, atol=1e-5)
  except Exception as e:
    t_jit_vmap = "FAIL"
    notes.append(f"jit-vmap failed for {name}, B={B}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
  return [name, B, t_vmap, t_hand, t_loop, t_jax, t_trace, t_build, t_jit_hand, t_jit_vmap,
          kernels(lambda: vf(Xv)), kernels(lambda: fb(Xh))]

HEADER = ["function", "B", "vmap", "hand", "loop", "jax", "trace", "build", "jit-hand", "jit-vmap", "k-vmap", "k-hand"]

def machine_info() -> list[str]:
  cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
  return [f"CPU: {cpu}, {os.cpu_count()} cores; {platform.platform()}; Python {platform.python_version()}",
          f"tinygrad {version('tinygrad')} (device {Device.DEFAULT}), jax {jax.__version__} ({jax.default_backend()}), "
          f"numpy {np.__version__}, tinyjax {tinyjax.__version__}"]

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true", help="batch sizes 1 and 64 only")
  args = ap.parse_args()
  sizes, loop_max = ([1, 64], 64) if args.quick else ([1, 16, 256, 4096], 256)
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
  os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
  with open(os.path.join(os.path.dirname(__file__), "out", "vmap.md"), "w") as fh:
    fh.write("# tinyjax.vmap benchmark\n\n" + "".join(f"- {l}\n" for l in info) + "\n" + __doc__.split("\n", 3)[3] + "\n")
    fh.write("| " + " | ".join(HEADER) + " |\n|" + "|".join("---" if i == 0 else "--:" for i in range(len(HEADER))) + "|\n")
    fh.write("".join("| " + " | ".join(r) + " |\n" for r in rows))
    fh.write("".join(f"\n```\n{n}\n```\n" for n in notes))
  print(f"\nwrote bench/out/vmap.md ({time.perf_counter() - t0:.0f} s)")

if __name__ == "__main__": main()

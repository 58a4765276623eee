"""Un-jitted transforms (issue 12): `vmap(jvp(f))` of a 16x16 tanh layer called eagerly, where its time goes, against
the same JVP written by hand in eager tinygrad and JAX's eager `vmap(jvp)`, in one run. Then (issue 29) un-jitted
training loops, Adam and RMSprop written as JAX code carries them (state in Python variables, a bias correction that
changes every iteration): the time per iteration over iterations 1, 2-10, 11-100 and 101-1000, against JAX's eager loop.

  python -m bench.eager [--loops N | --grads]   (N: the last iteration, 1000 by default; --grads: only the table of
                                               eager gradients of single jnp functions, against JAX's)

Totals: the best of 5 rounds of 20 calls. Phases: wall time inside each of tinyjax's functions, means over 50 calls. This script does not import
bench.run: with its imports loaded, the JVP's substitution measured 2.5-3.5 ms instead of 0.3 ms on inputs made from
numpy arrays (not on Tensor.randn ones), in wall time only (cProfile: 0.5 ms); not understood.
"""
from __future__ import annotations
import collections, os, time
import numpy as np
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax, jax.numpy as jnp   # noqa: E402
from tinygrad import Tensor   # noqa: E402
import tinyjax   # noqa: E402
from tinyjax._tg import placeholder   # noqa: E402
from tinyjax.transforms import jvp as jvp_mod, vmap as vmap_mod   # noqa: E402

N = 50

def timed(fn, n: int = 20, rounds: int = 5) -> float:
  """The best of `rounds` means over n calls, after warm-up: eager calls vary by a third from round to round."""
  for _ in range(5): fn()
  best = float("inf")
  for _ in range(rounds):
    t = time.perf_counter()
    for _ in range(n): fn()
    best = min(best, (time.perf_counter() - t) / n)
  return best

def main():
  r = np.random.default_rng(0)
  Wn, bn, xn, Vn = (r.standard_normal(s).astype(np.float32) for s in [(16, 16), (16,), (16,), (16, 16)])
  W, b, x, V = (Tensor(a).realize() for a in (Wn, bn, xn, Vn))
  def f(x):
    return (x @ W + b).tanh()
  g = tinyjax.vmap(lambda v: tinyjax.jvp(f, (x,), (v,))[1])
  def hand(V):   # the same tangents: (V W) * (1 - tanh(x W + b)^2)
    t = (x @ W + b).tanh()
    return (V @ W) * (1 - t * t)
  np.testing.assert_allclose(g(V).numpy(), hand(V).numpy(), rtol=1e-5, atol=1e-6)

  # where tinyjax's eager call goes: the transforms (by phase), then tinygrad's realize of the result
  phases: dict[str, float] = collections.defaultdict(float)
  def wrap(mod, name, label):
    fn = getattr(mod, name)
    def w(*a, **k):
      t = time.perf_counter()
      try: return fn(*a, **k)
      finally: phases[label] += time.perf_counter() - t
    setattr(mod, name, w)
    return lambda: setattr(mod, name, fn)
  undo = [wrap(vmap_mod, "vmapin", "vmapin"), wrap(jvp_mod, "trace_flat", "jvp: trace f on placeholders"),
          wrap(jvp_mod, "jax_conventions", "jvp: jax_conventions (primitives, abs, clip...)"),
          wrap(jvp_mod, "_tangents", "jvp: JVP rules (memoised by structure)"), wrap(jvp_mod, "substitute_with_aux", "jvp: substitute inputs"),
          wrap(vmap_mod, "vmapout", "vmapout (batching rules)")]
  for _ in range(5): g(V).realize()
  phases.clear()
  t_transform = t_realize = 0.0
  for _ in range(N):
    t0 = time.perf_counter(); out = g(V); t1 = time.perf_counter(); out.realize(); t2 = time.perf_counter()  # noqa: E702
    t_transform += t1 - t0; t_realize += t2 - t1  # noqa: E702
  for u in undo: u()

  t_tj = timed(lambda: g(V).realize())
  t_hand = timed(lambda: hand(V).realize())
  t_hand_build = timed(lambda: hand(V))
  t_trace_f = timed(lambda: f(placeholder((16,), W.dtype, W.device)))
  def fj(x):
    return jnp.tanh(x @ jnp.asarray(Wn) + jnp.asarray(bn))
  gj = jax.vmap(lambda v: jax.jvp(fj, (jnp.asarray(xn),), (v,))[1])
  Vj = jnp.asarray(Vn)
  t_jax = timed(lambda: gj(Vj).block_until_ready())

  def ms(s):
    return f"{s * 1e3:.2f} ms"
  print("| un-jitted vmap(jvp(f)), f = tanh(x W + b), 16x16 | per call |\n|---|---|")
  print(f"| tinyjax | {ms(t_tj)} |")
  print(f"| - the transforms | {ms(t_transform / N)} |")
  for k, v in phases.items(): print(f"|   - {k} | {ms(v / N)} |")
  print(f"| - tinygrad's realize of the result (schedule, lower, run) | {ms(t_realize / N)} |")
  print(f"| hand-written eager tinygrad (build + realize) | {ms(t_hand)} |")
  print(f"| - building its graph only | {ms(t_hand_build)} |")
  print(f"| tracing f alone on a placeholder (tinygrad ops) | {ms(t_trace_f)} |")
  print(f"| JAX eager vmap(jvp) | {ms(t_jax)} |")

# ---- eager training loops ---------------------------------------------------------------------------------------------

def _loop(jx, np_, optimizer: str, steps: int) -> list[float]:
  """Seconds of each iteration of an un-jitted training loop of a 3-32-32-1 tanh MLP (the loss is read every 100)."""
  r = np.random.default_rng(0)
  sizes = [3, 32, 32, 1]
  ps = [(np_.asarray(r.standard_normal((m, n)).astype(np.float32) / np.sqrt(m)), np_.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:], strict=False)]
  xn = r.standard_normal((64, 3)).astype(np.float32)
  x, y = np_.asarray(xn), np_.asarray(np.sin(xn.sum(1, keepdims=True)))
  def loss(ps, x, y):
    h = x
    for W, b in ps[:-1]: h = np_.tanh(h @ W + b)
    return np_.mean((h @ ps[-1][0] + ps[-1][1] - y) ** 2)
  g_fn, tm = jx.grad(loss), jx.tree_util.tree_map
  m, v = tm(np_.zeros_like, ps), tm(np_.zeros_like, ps)
  b1, b2, lr, eps, decay = 0.9, 0.999, 1e-2, 1e-8, 0.9
  times = []
  for i in range(1, steps + 1):
    t = time.perf_counter()
    g = g_fn(ps, x, y)
    if optimizer == "adam":
      m = tm(lambda m, g: b1 * m + (1 - b1) * g, m, g)
      v = tm(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
      ps = tm(lambda p, m, v: p - lr * (m / (1 - b1 ** i)) / (np_.sqrt(v / (1 - b2 ** i)) + eps), ps, m, v)
    else:   # rmsprop
      v = tm(lambda v, g: decay * v + (1 - decay) * g * g, v, g)
      ps = tm(lambda p, g, v: p - lr * g / (np_.sqrt(v) + eps), ps, g, v)
    if i % 100 == 0: float(loss(ps, x, y))
    jx.block_until_ready((ps, m, v))   # the iteration's work done (JAX dispatches asynchronously)
    times.append(time.perf_counter() - t)
  return times

def mlp_grad():
  """Un-jitted grad of a small MLP's loss (3-32-32-1, batch 64), tinyjax against JAX's eager grad."""
  import tinyjax.numpy as tnp
  r = np.random.default_rng(0)
  sizes = [3, 32, 32, 1]
  raw = [(r.standard_normal((m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:], strict=False)]
  xn = r.standard_normal((64, 3)).astype(np.float32)
  yn = np.sin(xn.sum(1, keepdims=True))
  def run(jx, np_):
    ps = [(np_.asarray(W), np_.asarray(b)) for W, b in raw]
    x, y = np_.asarray(xn), np_.asarray(yn)
    def loss(ps, x, y):
      h = x
      for W, b in ps[:-1]: h = np_.tanh(h @ W + b)
      return np_.mean((h @ ps[-1][0] + ps[-1][1] - y) ** 2)
    g = jx.grad(loss)
    return timed(lambda: jx.block_until_ready(g(ps, x, y)))
  print("\n| un-jitted grad of an MLP loss (3-32-32-1, batch 64) | per call |\n|---|---|")
  print(f"| tinyjax | {run(tinyjax, tnp) * 1e3:.2f} ms |")
  print(f"| JAX eager | {run(jax, jnp) * 1e3:.2f} ms |")

# one jnp function each, as JAX code calls them (the same lambda for both libraries: m is jnp or tinyjax.numpy)
GRAD_CASES = {
  "tanh": lambda m, x: m.tanh(x), "arctan2": lambda m, x: m.arctan2(x, x + 2), "log1p": lambda m, x: m.log1p(m.abs(x)),
  "power": lambda m, x: m.power(m.abs(x) + 1, 2.5), "logaddexp": lambda m, x: m.logaddexp(x, 2 * x),
  "hypot": lambda m, x: m.hypot(x, 1.0), "round": lambda m, x: m.round(x * 3) + x, "sort": lambda m, x: m.sort(x, axis=1),
  "cumsum": lambda m, x: m.cumsum(x, axis=1), "clip": lambda m, x: m.clip(x, -0.5, 0.5), "var": lambda m, x: m.var(x, axis=0),
  "matmul": lambda m, x: x @ x.T, "take": lambda m, x: m.take(x, m.array([0, 3, 5]), axis=1),
}

def grads():
  """Un-jitted grad of one jnp function (or nn's) on a realized 64x32 float32 array, against JAX's eager grad: an eager
  transform traces the function at every call, as JAX does."""
  import tinyjax.numpy as tnp, tinyjax.nn as tnn, jax.nn as jnn
  xn = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
  cases = {**{k: (lambda f: (lambda x: f(tnp, x), lambda x: f(jnp, x)))(f) for k, f in GRAD_CASES.items()},
           "nn.gelu": (tnn.gelu, jnn.gelu), "nn.log_softmax": (tnn.log_softmax, jnn.log_softmax)}
  print("\n| un-jitted grad(f(x).sum()), x 64x32 | tinyjax | JAX eager | ratio |\n|---|---|---|---|")
  for name, (ft, fj) in cases.items():
    gt, gj = tinyjax.grad(lambda x, ft=ft: ft(x).sum()), jax.grad(lambda x, fj=fj: fj(x).sum())
    xt, xj = tnp.asarray(xn), jnp.asarray(xn)
    a, b = timed(lambda: np.asarray(gt(xt))), timed(lambda: np.asarray(gj(xj)))
    print(f"| {name} | {a * 1e3:.2f} ms | {b * 1e3:.2f} ms | {a / b:.2f}x |", flush=True)

def loops(steps: int = 1000):
  import tinyjax.numpy as tnp
  windows = [(1, 1), (2, 10), (11, 100), (101, 1000)]
  windows = [(a, min(b, steps)) for a, b in windows if a <= steps]
  heads = [f"iter {a}" if a == b else f"iters {a}-{b}" for a, b in windows]
  print("\n| un-jitted training loop, 3-32-32-1 MLP, per iteration | " + " | ".join(heads) + " |")
  print("|---|" + "---|" * len(windows))
  for opt in ("adam", "rmsprop"):
    for name, jx, np_ in (("tinyjax", tinyjax, tnp), ("JAX eager", jax, jnp)):
      ts = _loop(jx, np_, opt, steps)
      print(f"| {opt}, {name} | " + " | ".join(f"{np.mean(ts[a - 1:b]) * 1e3:.2f} ms" for a, b in windows) + " |", flush=True)

if __name__ == "__main__":
  import sys
  if "--loops" in sys.argv: loops(int(sys.argv[sys.argv.index("--loops") + 1]))
  elif "--grads" in sys.argv: grads()
  else:
    main()
    mlp_grad()
    grads()
    loops()

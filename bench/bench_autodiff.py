"""Benchmark tinyjax's autodiff (jacfwd, jacrev, hessian, jvp-of-grad, per-example grads, grad) against tinygrad's own
Tensor.gradient, closed-form derivatives written in tinygrad, TinyJit and jax.jit.

  .venv/bin/python bench/bench_autodiff.py [--quick]

Columns (time per call: median of repeats, after warm-up; tinygrad times include a device synchronize; every timed
call builds a fresh lazy result, and every variant gets its own separately realized copies of the inputs, because
tinygrad hash-conses identical graphs and realizing one would realize the others):
  tinyjax   tinyjax.<transform>(f)(*args), all outputs realized   tracing + rewriting + scheduling + kernels, every call
  trace     tinyjax.<transform>(f)(*args)                         building the lazy result only (tracing f + rewriting)
  tg-grad   the same with tinygrad's own reverse mode, Tensor.gradient: one backward per output row / example,
            stacked into one graph (jacobians, hessian, per-example: '-' above size 16 and with --quick, as each
            backward adds ~3 kernels to compile), gradient of a gradient (hvp), loss.gradient (grad)
  hand      the derivative written out in closed form with tinygrad ops (batched, no autodiff)
  jax       jax.jit(jax.<transform>(f_jnp))(*args)                after compile, with block_until_ready
  jit-tj    TinyJit(lambda *a: tinyjax.<transform>(f)(*a) realized)   (captures on the 2nd call, replays the kernels
            from the 3rd: no tracing, no scheduling)
  jit-hand  TinyJit(lambda *a: hand(*a) realized)
  k-*       kernels run by one realize of tinyjax / tg-grad / hand (GlobalCounters.kernel_count)
All functions take their weights as arguments (also under jax.jit, so XLA cannot constant-fold them).
Networks: g(x) = tanh(tanh(x @ W1) @ W2) with W1: n x 64, W2: 64 x n (jacobians), f(x) = g(x).sum() (hessian, hvp);
MLP loss(params, x, y) = mean((tanh(x @ W1) @ W2 - y)^2) with W1: 32 x 64, W2: 64 x 8 (per-example grads, grad).
"""
from __future__ import annotations
import argparse, gc, os, platform, statistics, time, traceback
from dataclasses import dataclass
from importlib.metadata import version
from typing import Callable
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import jax, jax.numpy as jnp
from tinygrad import Tensor, TinyJit, Device
from tinygrad.helpers import GlobalCounters
import tinyjax

RNG = np.random.default_rng(0)
HIDDEN, D_IN, D_OUT = 64, 32, 8

# ---- timing helpers (same approach as bench/bench_vmap.py) -----------------------------------------------------------

def sync(): Device[Device.DEFAULT].synchronize()

def timeit(fn, warmup=2, budget=0.25, min_reps=5, max_reps=50) -> float:
  """Median seconds per call of fn(), after `warmup` calls; repeats until `budget` seconds (within min/max_reps)."""
  gc.collect()   # tinygrad's realize scans all live Tensors: start each variant from the same state
  for _ in range(warmup): fn()
  times, end = [], time.perf_counter() + budget
  while len(times) < min_reps or (len(times) < max_reps and time.perf_counter() < end):
    t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
  return statistics.median(times)

def leaves(tree) -> list:
  if isinstance(tree, (tuple, list)): return [l for t in tree for l in leaves(t)]
  return [tree]

def realize_all(tree) -> list[Tensor]:
  ls = leaves(tree)
  Tensor.realize(*ls)
  return ls

def kernels(make) -> int:
  lazy = make(); GlobalCounters.reset(); realize_all(lazy); sync()
  return GlobalCounters.kernel_count

def fmt(s) -> str:
  if not isinstance(s, float): return str(s)
  return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"

# ---- the functions, in tinygrad and in jax.numpy --------------------------------------------------------------------

def g(x, W1, W2): return (x @ W1).tanh().matmul(W2).tanh()
def f(x, W1, W2): return g(x, W1, W2).sum()
def gj(x, W1, W2): return jnp.tanh(jnp.tanh(x @ W1) @ W2)
def fj(x, W1, W2): return gj(x, W1, W2).sum()

def loss(params, x, y):
  W1, W2 = params
  return ((x @ W1).tanh().matmul(W2) - y).square().mean()
def loss_j(params, x, y):
  W1, W2 = params
  return jnp.mean(jnp.square(jnp.tanh(x @ W1) @ W2 - y))

# closed forms. z = tanh(x W1), y = tanh(z W2), s1 = 1 - z^2, s2 = 1 - y^2
def jac_hand(x, W1, W2):
  z = (x @ W1).tanh(); y = (z @ W2).tanh()
  return ((1 - y * y).unsqueeze(1) * W2.T * (1 - z * z)) @ W1.T                     # (n_out, n_in)

def _hess_parts(x, W1, W2):
  z = (x @ W1).tanh(); y = (z @ W2).tanh()
  s1, s2 = 1 - z * z, 1 - y * y
  w2s2 = W2 @ s2
  return s1, w2s2, w2s2 * (-2 * z * s1), -2 * y * s2                                # s1, W2 s2, d, c

def hess_hand(x, W1, W2):   # H = W1 (diag(d) + S1 W2 diag(c) W2^T S1) W1^T
  s1, _, d, c = _hess_parts(x, W1, W2)
  A = s1.unsqueeze(1) * W2                                                           # S1 W2: (h, n)
  return (W1 * d) @ W1.T + ((W1 @ A) * c) @ (W1 @ A).T

def hvp_hand(x, v, W1, W2):
  s1, w2s2, d, c = _hess_parts(x, W1, W2)
  a = W1.T @ v                                                                       # W1^T v: (h,)
  hv = W1 @ (d * a + s1 * (W2 @ (c * (W2.T @ (s1 * a)))))
  return W1 @ (s1 * w2s2), hv

def mlp_grads_hand(W1, W2, X, Y, per_example: bool):
  z = (X @ W1).tanh()
  r = (z @ W2 - Y) * (2 / (D_OUT if per_example else D_OUT * X.shape[0]))            # dloss/dout: (B, D_OUT)
  gz = (r @ W2.T) * (1 - z * z)                                                      # (B, HIDDEN)
  if per_example: return X.unsqueeze(2) * gz.unsqueeze(1), z.unsqueeze(2) * r.unsqueeze(1)
  return X.T @ gz, z.T @ r

# ---- cases ----------------------------------------------------------------------------------------------------------

@dataclass
class Case:
  name: str
  size: str
  inputs: list[np.ndarray]
  tj: Callable                  # tinyjax, on Tensors
  tg: Callable | None           # tinygrad Tensor.gradient
  hand: Callable | None         # closed form in tinygrad
  jx: Callable                  # jax, on jnp arrays (jitted here)
  tg_loop: bool = False         # tg has one backward pass per output row / example (slow to compile: ~3 kernels each)

def mlp_weights(n_in, n_out):
  return (RNG.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)

def jac_cases(n) -> list[Case]:
  x, v = (RNG.standard_normal(n, dtype=np.float32) for _ in range(2))
  W1, W2 = mlp_weights(n, HIDDEN), mlp_weights(HIDDEN, n)
  def tg_jac(x, W1, W2):
    y = g(x, W1, W2)
    return Tensor.stack(*[y[i].gradient(x)[0] for i in range(n)])
  def tg_hess(x, W1, W2):
    gr = f(x, W1, W2).gradient(x)[0]
    return Tensor.stack(*[gr[i].gradient(x)[0] for i in range(n)])
  def tg_hvp(x, v, W1, W2):
    gr = f(x, W1, W2).gradient(x)[0]
    return gr, (gr * v).sum().gradient(x)[0]
  size = f"n={n}"
  return [
    Case("jacfwd g", size, [x, W1, W2], lambda *a: tinyjax.jacfwd(g)(*a), tg_jac, jac_hand, lambda *a: jax.jacfwd(gj)(*a),
         tg_loop=True),
    Case("jacrev g", size, [x, W1, W2], lambda *a: tinyjax.jacrev(g)(*a), tg_jac, jac_hand, lambda *a: jax.jacrev(gj)(*a),
         tg_loop=True),
    Case("hessian f", size, [x, W1, W2], lambda *a: tinyjax.hessian(f)(*a), tg_hess, hess_hand,
         lambda *a: jax.hessian(fj)(*a), tg_loop=True),
    Case("hvp jvp(grad f)", size, [x, v, W1, W2],
         lambda x, v, W1, W2: tinyjax.jvp(lambda x: tinyjax.grad(f)(x, W1, W2), (x,), (v,)), tg_hvp, hvp_hand,
         lambda x, v, W1, W2: jax.jvp(lambda x: jax.grad(fj)(x, W1, W2), (x,), (v,))),
  ]

def mlp_cases(B, per_example=True, full_grad=True) -> list[Case]:
  W1, W2 = mlp_weights(D_IN, HIDDEN), mlp_weights(HIDDEN, D_OUT)
  X, Y = RNG.standard_normal((B, D_IN), dtype=np.float32), RNG.standard_normal((B, D_OUT), dtype=np.float32)
  def tg_per_example(W1, W2, X, Y):
    gs = [loss((W1, W2), X[i], Y[i]).gradient(W1, W2) for i in range(B)]
    return Tensor.stack(*[g1 for g1, _ in gs]), Tensor.stack(*[g2 for _, g2 in gs])
  size = f"B={B}"
  return [c for c in [
    Case("per-example grad", size, [W1, W2, X, Y],
         lambda W1, W2, X, Y: tinyjax.vmap(tinyjax.grad(loss), in_axes=(None, 0, 0))((W1, W2), X, Y), tg_per_example,
         lambda *a: mlp_grads_hand(*a, per_example=True),
         lambda W1, W2, X, Y: jax.vmap(jax.grad(loss_j), in_axes=(None, 0, 0))((W1, W2), X, Y), tg_loop=True),
    Case("grad mlp loss", size, [W1, W2, X, Y], lambda W1, W2, X, Y: tinyjax.grad(loss)((W1, W2), X, Y),
         lambda W1, W2, X, Y: loss((W1, W2), X, Y).gradient(W1, W2),
         lambda *a: mlp_grads_hand(*a, per_example=False),
         lambda W1, W2, X, Y: jax.grad(loss_j)((W1, W2), X, Y)),
  ] if (per_example, full_grad)[c.name.startswith("grad")]]

# ---- running one case -----------------------------------------------------------------------------------------------

def check(got_tree, ref_tree, what):
  got, ref = [l.numpy() for l in leaves(got_tree)], [np.asarray(r) for r in jax.tree_util.tree_leaves(ref_tree)]
  assert len(got) == len(ref), f"{what}: {len(got)} outputs, jax has {len(ref)}"
  for a, b in zip(got, ref): np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=what)

def run_case(c: Case, notes: list, tg_max: int) -> list:
  label = f"{c.name} ({c.size})"
  assert all(a.dtype == np.float32 for a in c.inputs)
  def fresh(): return [Tensor(a).realize() for a in c.inputs]   # separately realized inputs for each variant
  J = [jnp.asarray(a) for a in c.inputs]
  jf = jax.jit(c.jx)
  ref = jf(*J)

  def attempt(what, fn):
    try: return fn()
    except Exception as e:
      notes.append(f"{what} failed for {label}: {type(e).__name__}: {str(e)[:500]}\n{traceback.format_exc(limit=-4)}")
      return "ERR"

  def variant(what, make, warmup=1, min_reps=5):
    """(time per call, kernels) of realizing make(*inputs) with its own inputs. The first call (checked against jax)
    compiles the kernels, the second (counting kernels) hits tinygrad's schedule cache, then `warmup` more calls."""
    T = fresh()
    def first(): check(make(*T), ref, what); return True
    if attempt(what, first) == "ERR": return "ERR", "ERR"
    k = attempt(what, lambda: kernels(lambda: make(*T)))
    return attempt(what, lambda: timeit(lambda: (realize_all(make(*T)), sync()), warmup=warmup, min_reps=min_reps)), k

  def jitted(what, make):
    T = fresh()
    jit = TinyJit(lambda *a: realize_all(make(*a)))
    def go():
      t = timeit(lambda: (jit(*T), sync()), warmup=3)
      check(jit(*T), ref, what)
      return t
    return attempt(what, go)

  t_tj, k_tj = variant("tinyjax", c.tj)
  T = fresh()
  t_trace = attempt("trace", lambda: timeit(lambda: c.tj(*T))) if t_tj != "ERR" else "ERR"
  skip_tg = c.tg is None or (c.tg_loop and int(c.size.split("=")[1]) > tg_max)
  t_tg, k_tg = ("-", "-") if skip_tg else variant("tg-grad", c.tg, warmup=0, min_reps=2)
  t_hand, k_hand = ("-", "-") if c.hand is None else variant("hand", c.hand)
  t_jax = timeit(lambda: jax.block_until_ready(jf(*J)))
  t_jit_tj = jitted("jit-tj", c.tj) if t_tj != "ERR" else "ERR"
  t_jit_hand = jitted("jit-hand", c.hand) if c.hand is not None else "-"
  return [c.name, c.size, t_tj, t_trace, t_tg, t_hand, t_jax, t_jit_tj, t_jit_hand, k_tj, k_tg, k_hand]

HEADER = ["case", "size", "tinyjax", "trace", "tg-grad", "hand", "jax", "jit-tj", "jit-hand", "k-tj", "k-tg", "k-hand"]

def machine_info() -> list[str]:
  cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
  return [f"CPU: {cpu}, {os.cpu_count()} cores; {platform.platform()}; Python {platform.python_version()}",
          f"tinygrad {version('tinygrad')} (device {Device.DEFAULT}), jax {jax.__version__} ({jax.default_backend()}), "
          f"numpy {np.__version__}, tinyjax {tinyjax.__version__}",
          "load average at start: " + ", ".join(f"{l:.2f}" for l in os.getloadavg()) + f" (on {os.cpu_count()} cores)"]

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true", help="n=16 only, and no tg-grad loops (the slowest to compile)")
  args = ap.parse_args()
  # tg-grad loops build one backward pass per output row / example, ~3 kernels each that tinygrad compiles on first
  # use (~0.5 s each here): they run only up to size tg_max ('-' above)
  ns, tg_max = ([16], 0) if args.quick else ([16, 64], 16)
  cases = [c for n in ns for c in jac_cases(n)] + ([] if args.quick else mlp_cases(16, full_grad=False)) + mlp_cases(64)
  info = machine_info()
  print("\n".join(info), flush=True)
  rows, notes, t0 = [], [], time.perf_counter()
  for c in cases:
    rows.append([fmt(x) for x in run_case(c, notes, tg_max)])
    print(f"  done: {c.name} {c.size} ({time.perf_counter() - t0:.0f} s)", flush=True)
  widths = [max(len(r[i]) for r in rows + [HEADER]) for i in range(len(HEADER))]
  line = lambda r: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
  print("\n" + line(HEADER) + "\n" + "  ".join("-" * w for w in widths) + "\n" + "\n".join(line(r) for r in rows))
  for n in notes: print("\n" + n)
  info.append(f"load average at end: " + ", ".join(f"{l:.2f}" for l in os.getloadavg()) + f"; wall time {time.perf_counter() - t0:.0f} s")
  print(info[-1])
  os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
  with open(os.path.join(os.path.dirname(__file__), "out", "autodiff.md"), "w") as fh:
    fh.write("# tinyjax autodiff benchmark\n\n" + "".join(f"- {l}\n" for l in info) +
             f"- mode: {'--quick' if args.quick else 'full'}\n\n```\n" + __doc__.split("\n", 3)[3] + "```\n\n")
    fh.write("| " + " | ".join(HEADER) + " |\n|" + "|".join("---" if i < 2 else "--:" for i in range(len(HEADER))) + "|\n")
    fh.write("".join("| " + " | ".join(r) + " |\n" for r in rows))
    fh.write("".join(f"\n```\n{n}\n```\n" for n in notes))
  print(f"\nwrote bench/out/autodiff.md ({time.perf_counter() - t0:.0f} s)")

if __name__ == "__main__": main()

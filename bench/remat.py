"""jax.checkpoint's memory saving: jitted grad of a deep residual MLP, each block checkpointed or not, tinyjax vs JAX.

  python -m bench.remat [--quick]

The model: L blocks h <- h + tanh(h @ W1) @ W2 (W1: D x 4D, W2: 4D x D, a transformer's MLP block), batch B, loss
sum(h_L^2); the gradient with respect to all the weights. Without checkpointing, the backward pass keeps each block's
(B, 4D) hidden activation from the forward pass; with `checkpoint` on each block it keeps only each block's input
(B, D) and recomputes the block in the backward pass.

What is measured:
  temp       tinyjax: what the jitted grad keeps allocated beyond its inputs and outputs: the growth of tinygrad's
             GlobalCounters.mem_used (every buffer allocation) across the first call, which captures the one schedule of
             forward + backward, minus the bytes of the gradients it returns. What remains is the arena of
             tinygrad's memory planner (tinygrad.schedule.memory, run by TinyJit on the captured schedule): every
             intermediate buffer gets an offset in one arena, by lifetimes, so its size is the peak of the
             intermediates alive at once. The arena stays allocated with the captured function.
             JAX: `jax.jit(grad).lower(...).compile().memory_analysis().temp_size_in_bytes` (XLA's buffer assignment).
  per call   median time of the jitted grad after warm-up.
Writes bench/out/remat.json and prints the markdown table of docs/benchmarks.md, section "Rematerialization".
"""
from __future__ import annotations
import argparse, gc, json, time
import numpy as np
from bench.run import sync, fmt, ROOT
import jax, jax.numpy as jnp
from tinygrad import Tensor
from tinygrad.helpers import GlobalCounters
import tinyjax
import tinyjax.numpy as tnp


def params(L: int, D: int, B: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  ws = [((rng.standard_normal((D, 4 * D)) / np.sqrt(D)).astype(np.float32),
         (rng.standard_normal((4 * D, D)) / np.sqrt(4 * D) / L).astype(np.float32)) for _ in range(L)]
  return ws, rng.standard_normal((B, D)).astype(np.float32)

def loss_of(np_, checkpoint, remat: bool):
  def block(w, h):
    w1, w2 = w
    return h + np_.tanh(h @ w1) @ w2
  blk = checkpoint(block) if remat else block
  def loss(ws, x):
    h = x
    for w in ws: h = blk(w, h)
    return (h * h).sum()
  return loss

def median_time(fn, reps: int) -> float:
  ts = []
  for _ in range(reps):
    t = time.perf_counter()
    fn()
    sync()
    ts.append(time.perf_counter() - t)
  return float(np.median(ts))

def tinyjax_case(L, D, B, remat, reps):
  ws, x = params(L, D, B)
  tw = [(tnp.asarray(a).realize(), tnp.asarray(b).realize()) for a, b in ws]
  tx = tnp.asarray(x).realize()
  jg = tinyjax.jit(tinyjax.grad(loss_of(tnp, tinyjax.checkpoint, remat)))
  gc.collect()   # the previous case's captured function (and its arena) goes now, not during this one
  before = GlobalCounters.mem_used
  out = [t for pair in jg(tw, tx) for t in pair]
  Tensor.realize(*out)
  temp = GlobalCounters.mem_used - before - sum(t.nbytes() for t in out)
  check = float(out[0].sum().item())
  del out
  def run(): Tensor.realize(*[t for pair in jg(tw, tx) for t in pair])
  run()
  return dict(temp=temp, per_call=median_time(run, reps), check=check)

def jax_case(L, D, B, remat, reps):
  ws, x = params(L, D, B)
  jw = [(jnp.asarray(a), jnp.asarray(b)) for a, b in ws]
  jx = jnp.asarray(x)
  g = jax.jit(jax.grad(loss_of(jnp, jax.checkpoint, remat)))
  mem = g.lower(jw, jx).compile().memory_analysis()
  out = g(jw, jx)
  jax.block_until_ready(out)
  def run(): jax.block_until_ready(g(jw, jx))
  return dict(temp=int(mem.temp_size_in_bytes), per_call=median_time(run, reps), check=float(out[0][0].sum()))

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--quick", action="store_true")
  a = ap.parse_args()
  L, D, B, reps = (8, 64, 256, 3) if a.quick else (16, 128, 512, 3)
  rows = []
  for remat in (False, True):
    t, j = tinyjax_case(L, D, B, remat, reps), jax_case(L, D, B, remat, reps)
    assert abs(t["check"] - j["check"]) <= 1e-3 * max(1.0, abs(j["check"])), (t["check"], j["check"])
    rows.append(dict(remat=remat, tinyjax=t, jax=j))
  (ROOT / "bench" / "out").mkdir(exist_ok=True)
  (ROOT / "bench" / "out" / "remat.json").write_text(json.dumps(dict(L=L, D=D, B=B, rows=rows), indent=1))
  def mb(n): return f"{n / 1e6:.1f} MB"
  print(f"{L} blocks h + tanh(h @ W1) @ W2, D={D}, 4D hidden, batch {B}; jitted grad w.r.t. all weights\n")
  print("| checkpoint each block | tinyjax temp | JAX temp | tinyjax per call | JAX per call |")
  print("|---|---|---|---|---|")
  for r in rows:
    t, j = r["tinyjax"], r["jax"]
    print(f"| {'yes' if r['remat'] else 'no'} | {mb(t['temp'])} | {mb(j['temp'])} | "
          f"{fmt(t['per_call'])} | {fmt(j['per_call'])} |")

if __name__ == "__main__":
  main()

"""A graph executor for tinygrad's CPU device: the kernels of a compiled linear launched by one call into compiled code.

tinygrad launches each CPU kernel from Python (a ctypes call per kernel and per core, ~5-20 us with its argument
marshalling). Here the launches of a run of kernels are written once into a command table, one row per launch (the
kernel's address, then its arguments: buffer addresses and variable values), and one small C function compiled once
per process runs the table. A replay writes only the addresses of its new buffers (and the step index) into the rows
that take them. The same function runs a loop body `steps` times, writing per step the index and the carry buffers
(swapped by pointer), and a while_loop's condition, read after each condition's launches, so a lax loop does not return
to Python between steps. The kernels stay tinygrad's, compiled by tinygrad; only the launching moves into C.

Needs the CPU device's clang (what tinygrad compiles CPU kernels with); without it `executor()` is None and the Python
launches run as before.
"""
from __future__ import annotations
import ctypes, functools, shutil
from typing import Any
import numpy as np
from tinygrad import Device
from tinygrad.device import TinyELF
from tinygrad.helpers import getenv
from tinygrad.runtime.ops_cpu import CPUProgram
from tinygrad.runtime.support.compiler_cpu import ClangCompiler

# One entry point. c: the command rows (w words each: the kernel's address, then up to w-1 arguments); n: rows run per
# step (the body); cond/nc: rows run before each step, after which *pred == 0 stops the loop (a while_loop); p/np: the
# patches, 5 words each (row word, kind, x, y, z), written before each step j: kind 0 writes x + y*j (an index, y may be
# -1 in two's complement), kind 1 writes z at j == 0 and then x for even j, y for odd j (a carry buffer swapped by
# pointer). Returns the number of steps run.
_SRC = r"""
typedef unsigned long long u64;
typedef void (*k15)(u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64);
typedef void (*k63)(u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,
  u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,u64,
  u64,u64,u64,u64,u64,u64,u64);
static inline __attribute__((always_inline)) void rows(u64 *c, u64 n, u64 w) {
  for (u64 i = 0; i < n; i++, c += w) {
    if (w <= 16) ((k15)c[0])(c[1],c[2],c[3],c[4],c[5],c[6],c[7],c[8],c[9],c[10],c[11],c[12],c[13],c[14],c[15]);
    else ((k63)c[0])(c[1],c[2],c[3],c[4],c[5],c[6],c[7],c[8],c[9],c[10],c[11],c[12],c[13],c[14],c[15],c[16],c[17],c[18],c[19],c[20],
      c[21],c[22],c[23],c[24],c[25],c[26],c[27],c[28],c[29],c[30],c[31],c[32],c[33],c[34],c[35],c[36],c[37],c[38],c[39],c[40],c[41],
      c[42],c[43],c[44],c[45],c[46],c[47],c[48],c[49],c[50],c[51],c[52],c[53],c[54],c[55],c[56],c[57],c[58],c[59],c[60],c[61],c[62],
      c[63]);
  }
}
u64 tinyjax_exec(u64 *c, u64 n, u64 w, u64 steps, u64 *p, u64 np, u64 *cond, u64 nc, unsigned char *pred) {
  for (u64 j = 0; j < steps; j++) {
    for (u64 k = 0; k < np; k++) {
      u64 *q = p + 5 * k;
      c[q[0]] = q[1] == 0 ? q[2] + q[3] * j : (j == 0 ? q[4] : ((j & 1) ? q[3] : q[2]));
    }
    if (nc) { rows(cond, nc, w); if (!*pred) return j; }
    rows(c, n, w);
  }
  return steps;
}
"""

WIDTH_SMALL, WIDTH_LARGE = 16, 64

@functools.cache
def _executor(device: str) -> Any:
  dev = Device[device]
  if not isinstance(prg_t := getattr(dev, "runtime_t", None), type) or not issubclass(prg_t, CPUProgram): return None
  if shutil.which(getenv("CC", "clang")) is None: return None
  # through tinygrad's disk cache, as its kernels
  lib = ClangCompiler(dev.renderer.target.arch.split(","), cachekey="tinyjax_cpu_graph").compile_cached(_SRC)
  prg = CPUProgram(dev, TinyELF(lib, "tinyjax_exec", dev.renderer.target, ()))   # type: ignore[arg-type]
  fn = ctypes.CFUNCTYPE(ctypes.c_uint64, *[ctypes.c_uint64] * 9)(prg.addr)
  return prg, fn

def executor(device: str) -> Any:
  """The compiled entry point for this CPU device (shared by its `CPU:n` views), or None: not a tinygrad CPU device,
  or no clang."""
  if not isinstance(device, str) or not device.startswith("CPU"): return None
  try: return _executor(device.split(":")[0])
  except Exception: return None   # no compiler or loader here: the Python launches run

Arg = "int | tuple[str, Any]"   # a fixed word, ("slot", input slot): a buffer's address, or ("var", name): a value

class Commands:
  """The launches of a run of CPU kernels as one table of command rows. The words a run fills in are `slot_words`
  ((word, input slot): a buffer's address) and `var_words` ((word, variable name)); every other word (kernel addresses,
  fixed buffers' addresses, constant values, core ids) is written once."""
  def __init__(self, launches: list[tuple[int, list]], kernels: int, width: int = 0):
    """launches: (kernel address, its arguments), one per row; `kernels`: how many kernels they launch (a kernel
    running on several cores has a row per core). `width`: at least this many words per row."""
    width = max(width, 1 + max(len(a) for _, a in launches))
    assert width <= WIDTH_LARGE, f"CPU programs take at most {WIDTH_LARGE - 1} arguments"
    self.launches, self.kernels = launches, kernels
    self.width, self.n = (WIDTH_SMALL if width <= WIDTH_SMALL else WIDTH_LARGE), len(launches)
    self.table = np.zeros(self.n * self.width, np.uint64)
    self.slot_words: list[tuple[int, int]] = []
    self.var_words: list[tuple[int, str]] = []
    for i, (addr, args) in enumerate(launches):
      self.table[i * self.width] = addr
      for j, a in enumerate(args, start=i * self.width + 1):
        if isinstance(a, tuple): (self.slot_words if a[0] == "slot" else self.var_words).append((j, a[1]))
        else: self.table[j] = a & _MASK
    self.once = (self.table.ctypes.data, self.n, self.width, 1, 0, 0, 0, 0, 0)   # run's arguments (ctypes.data: ~4 us)

  def fill(self, addrs: list[int], var_vals: dict[str, int]) -> None:
    """Write this run's buffer addresses (by input slot) and variable values into the table."""
    t = self.table
    for w, s in self.slot_words: t[w] = addrs[s]
    for w, v in self.var_words: t[w] = var_vals[v]

def run(device: str, commands: Commands) -> None:
  """Launch the table's rows once, in order (on a device `executor` gave an entry point for)."""
  _executor(device.split(":")[0])[1](*commands.once)

def run_loop(device: str, body: Commands, steps: int, patches: list[tuple[int, int, int, int, int]],
             cond: Commands | None = None, pred: int = 0) -> int:
  """Run `body`'s rows `steps` times (a while_loop: until `cond`'s rows, run before each step, leave 0 at address
  `pred`), writing `patches` (word of the body's table, or of cond's table counted after it, kind, x, y, z: see _SRC)
  before each step. The steps run. Both tables have the same width (`Commands(width=)`)."""
  table = body.table if cond is None else np.concatenate([body.table, cond.table])
  p = np.array([[w, k, x & _MASK, y & _MASK, z & _MASK] for w, k, x, y, z in patches], np.uint64).reshape(-1)
  base = table.ctypes.data
  done = _executor(device.split(":")[0])[1](base, body.n, body.width, steps, p.ctypes.data, len(patches),
                                            0 if cond is None else base + body.table.nbytes, 0 if cond is None else cond.n, pred)
  return int(done)

_MASK = 0xFFFFFFFFFFFFFFFF

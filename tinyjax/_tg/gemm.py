"""Matrix products on the CPU by BLAS: a kernel that is a matrix product runs sgemm/dgemm instead of tinygrad's code.

tinygrad's CPU kernels reach ~9 GFLOP/s on a matrix product (128x784 @ 784x1024: 22 ms; XLA, which calls a tuned
library for a dot on the CPU, 1.8 ms). Here, as XLA does, a kernel that is a matrix product is a call to a BLAS
routine: scipy's (the sgemm/dgemm behind scipy.linalg.blas, through its cython_blas function pointers, as the LAPACK
solve of lax.linalg; 3.9 ms there). Two points of tinygrad's pipeline change, both for the CPU device only (its
renderers have no locals; GPU renderers and the PYTHON emulator keep tinygrad's code):

- the scheduler (`realize_gemms`, a rule of its realize map): a sum of products over broadcast operands that is a
  matrix product of at least `GEMM_MIN` multiply-adds is a kernel of its own, its operands stored (an elementwise
  prologue is a kernel before it, an epilogue such as a bias and relu one after it, as XLA's fusions leave a dot);
- code generation (`program`): a kernel whose AST is exactly out[...] = sum_k a[...] * b[...] with indices affine in
  its loop ranges, float32 or float64, a matrix product with a unit stride in each operand, is a PROGRAM whose binary
  describes the call (sizes, transposes, leading dimensions, batch loops) rather than code; `runtime` makes it a
  program object tinygrad launches as its own (eagerly, from TinyJit, from tinyjax's replays and loops, where its row
  is a call into cpu_graph's `gemm`). Any other kernel, or one that does not pass every check, is tinygrad's.

Numbers: BLAS sums in its own order, as a vectorised sum does; the results are a matrix product's to rounding.
"""
from __future__ import annotations
import ctypes, functools, time
from dataclasses import replace
from typing import Any, Callable
import numpy as np
from tinygrad import Device, dtypes
from tinygrad.uop.ops import UOp, Ops, GroupOp, ProgramInfo
from tinygrad.dtype import AddrSpace
from tinygrad.schedule.indexing import ALWAYS_CONTIGUOUS
from tinyjax._tg import cpu_graph

GEMM_MIN = 1 << 15    # multiply-adds per matrix below which tinygrad's kernel (fused with its neighbours) is kept
SIDE_MIN = 8          # and the smallest M and N: a matrix-vector product stays tinygrad's
MAGIC = b"tinyjax BLAS gemm\0"
_FLOATS = (dtypes.float32, dtypes.float64)

# ---- the kernel: out = sum_k a * b, affine indices ------------------------------------------------------------------
# A kernel's loop ranges are split into digits where an index divides one by a constant (a flat output of M*N
# elements is one range r, the operands read at r // N and r % N): range = sum(place * digit), digit < size.

Digit = tuple[UOp, int, int]   # (range, place, size)

def _digits(ast: UOp) -> dict[UOp, list[Digit]] | None:
  """Each range's digits (the places an index divides it by), or None (a range of no constant size, divisions whose
  places do not nest)."""
  places: dict[UOp, set[int]] = {}
  for u in ast.toposort():
    if u.op is Ops.RANGE:
      if _size(u) is None: return None
      places.setdefault(u, {1})
    if u.op in (Ops.FLOORDIV, Ops.FLOORMOD) and u.src[0].op is Ops.RANGE and u.src[1].op is Ops.CONST and type(c := u.src[1].arg) is int and c > 0:
      places.setdefault(u.src[0], {1}).add(c)
  digits = {}
  for r, ps in places.items():
    ends: list[int] = sorted(ps) + [r.src[0].arg]
    if any(q % p for p, q in zip(ends, ends[1:], strict=False)): return None
    digits[r] = [(r, p, q // p) for p, q in zip(ends, ends[1:], strict=False) if q // p > 1]
  return digits

def _affine(u: UOp, digits: dict[UOp, list[Digit]]) -> tuple[dict[Digit, int], int] | None:
  """u as sum(coefficient * digit) + constant, or None."""
  if u.op is Ops.RANGE: return {d: d[1] for d in digits[u]}, 0
  if u.op is Ops.CONST and type(u.arg) is int: return {}, u.arg
  if u.op in (Ops.FLOORDIV, Ops.FLOORMOD) and u.src[0].op is Ops.RANGE and u.src[1].op is Ops.CONST:
    c = u.src[1].arg
    if u.op is Ops.FLOORDIV: return {d: d[1] // c for d in digits[u.src[0]] if d[1] >= c}, 0
    return {d: d[1] for d in digits[u.src[0]] if d[1] < c}, 0
  if u.op is Ops.ADD and (x := _affine(u.src[0], digits)) is not None and (y := _affine(u.src[1], digits)) is not None:
    return {r: x[0].get(r, 0) + y[0].get(r, 0) for r in x[0].keys() | y[0].keys()}, x[1] + y[1]
  if u.op is Ops.MUL:
    for v, c in (u.src, u.src[::-1]):
      if c.op is Ops.CONST and type(c.arg) is int and (x := _affine(v, digits)) is not None:
        return {r: k * c.arg for r, k in x[0].items()}, x[1] * c.arg
  return None

def _access(idx: UOp, digits: dict[UOp, list[Digit]]) -> tuple[int, dict[Digit, int], int] | None:
  """(the buffer's PARAM slot, coefficients, offset) of a load or store of a global buffer at an affine index."""
  if idx.op is not Ops.INDEX or len(idx.src) != 2 or (p := idx.src[0]).op is not Ops.PARAM or p.addrspace != AddrSpace.GLOBAL: return None
  if (aff := _affine(idx.src[1], digits)) is None or aff[1] < 0 or any(c < 0 for c in aff[0].values()): return None
  return p.arg.slot, aff[0], aff[1]

def _size(r: UOp) -> int | None: return r.src[0].arg if r.op is Ops.RANGE and r.src[0].op is Ops.CONST and type(r.src[0].arg) is int else None

def _merged(digits: list[Digit], arrays: list[dict[Digit, int]], whole: bool) -> tuple[int, list[int], list[Digit]] | None:
  """The innermost run of `digits` (by the first array's strides) that is one axis in every array: its size, its
  strides, and the digits left out (all merged, or None, with `whole`)."""
  if not digits: return None
  order = sorted(digits, key=lambda d: arrays[0][d])
  size, run = order[0][2], 1
  for d in order[1:]:
    if not all(a[d] == a[order[run - 1]] * order[run - 1][2] for a in arrays): break
    size, run = size * d[2], run + 1
  if whole and run < len(order): return None
  return size, [a[order[0]] for a in arrays], order[run:]

def _operand(si: int, sk: int, rows: int, depth: int) -> tuple[str, int] | None:
  """BLAS's (trans, ld) for an operand op(X)[i, k] at X + si*i + sk*k of `rows` x `depth`, or None."""
  if si == 1 and sk >= max(1, rows): return "N", sk
  if sk == 1 and si >= max(1, depth): return "T", si
  return None

def gemm_of(ast: UOp) -> list[int] | None:
  """The BLAS call (the words of cpu_graph's `gemm` spec after the routine: see there) computing this kernel, or None
  where the kernel is not exactly a float matrix product BLAS can run in place, or is smaller than worth a call."""
  if ast.op is not Ops.SINK or len(ast.src) != 1 or (digits := _digits(ast)) is None: return None
  end = ast.src[0]
  store = end.src[0] if end.op is Ops.END else end
  if store.op is not Ops.STORE or len(store.src) != 2 or (red := store.src[1]).op is not Ops.REDUCE or red.arg[0] is not Ops.ADD: return None
  if (mul := red.src[0]).op is not Ops.MUL or red.dtype not in _FLOATS or mul.dtype != red.dtype or store.src[0].dtype != red.dtype: return None
  if (acc := [_access(store.src[0], digits), _access(mul.src[0], digits), _access(mul.src[1], digits)])[0] is None or None in acc: return None
  (c, oc, offc), (a, ca, offa), (b, cb, offb) = acc   # type: ignore[misc]
  if end.op is Ops.END and any(r.op is not Ops.RANGE for r in end.src[1:]) or any(r.op is not Ops.RANGE for r in red.src[1:]): return None
  outs = [d for r in (end.src[1:] if end.op is Ops.END else ()) for d in digits[r]]
  sums = [d for r in red.src[1:] for d in digits[r]]
  if c in (a, b) or not (set(oc) | set(ca) | set(cb)) <= set(outs) | set(sums): return None
  if any(oc.get(r, 0) == 0 for r in outs) or any(oc.get(r, 0) for r in sums) or any(not ca.get(r) or not cb.get(r) for r in sums): return None
  oc, ca, cb = ({r: d.get(r, 0) for r in outs + sums} for d in (oc, ca, cb))
  ms = [r for r in outs if ca[r] and not cb[r]]
  ns = [r for r in outs if cb[r] and not ca[r]]
  if (k := _merged(sums, [ca, cb], whole=True)) is None or (m := _merged(ms, [oc, ca], False)) is None or (n := _merged(ns, [oc, cb], False)) is None:
    return None
  (K, (a_k, b_k), _), (M, (c_m, a_m), m_rest), (N, (c_n, b_n), n_rest) = k, m, n
  if M * N * K < GEMM_MIN or min(M, N) < SIDE_MIN: return None
  loops = [r for r in outs if r not in ms and r not in ns] + m_rest + n_rest
  # BLAS is column-major: C (M' x N') at c + i + j*ldc = op(A) (M' x K) op(B) (K x N'); a row-major C is C^T = B^T A^T
  A, B = (a, ca, offa), (b, cb, offb)
  if c_m == 1: rows, cols, ldc, (sa_i, sa_k), (sb_k, sb_j) = M, N, c_n, (a_m, a_k), (b_k, b_n)
  elif c_n == 1: rows, cols, ldc, (sa_i, sa_k), (sb_k, sb_j), A, B = N, M, c_m, (b_n, b_k), (a_k, a_m), B, A
  else: return None
  if ldc < max(1, rows) or (opa := _operand(sa_i, sa_k, rows, K)) is None or (opb := _operand(sb_j, sb_k, cols, K)) is None: return None
  opb = ("T" if opb[0] == "N" else "N", opb[1])   # op(B)[k, j] read as an operand [j, k]: the other transpose
  if max(rows, cols, K, ldc, opa[1], opb[1]) >= 1 << 31: return None
  slots = sorted({c, a, b})
  return [int(red.dtype == dtypes.float64), ord(opa[0]), ord(opb[0]), rows, cols, K, opa[1], opb[1], ldc,
          slots.index(c), slots.index(A[0]), slots.index(B[0]), offc, A[2], B[2], len(loops),
          *[v for r in loops for v in (r[2], oc[r], A[1][r], B[1][r])]]

def program(ast: UOp, renderer: Any) -> UOp | None:
  """The PROGRAM of a kernel that is a BLAS call (`gemm_of`) on the CPU: tinygrad's PROGRAM structure (its AST, the
  LINEAR of its parameters, a source, a binary), the binary being the call's description, which `runtime` runs."""
  if renderer.has_local or renderer.target.device != "CPU" or (words := gemm_of(ast)) is None: return None
  params = sorted({u for u in ast.toposort() if u.op is Ops.PARAM}, key=lambda u: u.arg.slot)
  rows, cols, k = words[3:6]
  name = f"gemm_{rows}_{cols}_{k}" + "".join(f"_{s}" for s in words[16::4])
  info = ProgramInfo.from_sink(ast, renderer.target)
  info = ProgramInfo(name, (1, 1, 1), None, (), info.globals, info.outs, info.ins, info.target)
  desc = f"BLAS {'d' if words[0] else 's'}gemm {chr(words[1])}{chr(words[2])} {rows}x{cols}x{k} lda {words[6]} ldb {words[7]} ldc {words[8]}"
  # (the AST renamed: a PROGRAM holding the AST itself would be substituted into itself where tinygrad swaps it in)
  return UOp(Ops.PROGRAM, src=(ast.replace(arg=replace(ast.arg, name=name)), UOp(Ops.LINEAR, src=tuple(params)), UOp(Ops.SOURCE, arg=desc),
                               UOp(Ops.BINARY, arg=MAGIC + np.array(words, np.int64).tobytes())), arg=info)

def words_of(prg: UOp) -> list[int] | None:
  """The call a PROGRAM from `program` describes, or None for any other program."""
  if prg.op is not Ops.PROGRAM or len(prg.src) < 4 or prg.src[3].op is not Ops.BINARY or not (b := prg.src[3].arg).startswith(MAGIC):
    return None
  return np.frombuffer(b[len(MAGIC):], np.int64).tolist()

# ---- the program: a call into cpu_graph's gemm -------------------------------------------------------------------------

class GemmProgram:
  """A BLAS call launched as tinygrad launches a CPU program (bufs: the kernel's buffers in slot order). Its command
  row (tinyjax's replays and loops) is cpu_graph's gemm entry, `leading` (its spec), then the buffers. Without the
  executor (no clang), numpy's matmul runs it on views of the buffers."""
  runtimevars: dict[str, int] = {}
  lvp = False
  def __init__(self, device: str, words: list[int]):
    self.words, self.device = words, device
    self.spec = np.array([cpu_graph.blas_routine("dgemm" if words[0] else "sgemm"), *words], np.int64).view(np.uint64)
    ex = cpu_graph.executor(device)
    self.addr = 0 if ex is None else cpu_graph.routine(device, "gemm")
    self.leading = (self.spec.ctypes.data,)
    self._fn = None if ex is None else ctypes.CFUNCTYPE(None, *[ctypes.c_uint64] * 4)(self.addr)

  def __call__(self, *bufs, global_size=(1, 1, 1), local_size=None, vals=(), wait=False, timeout=None) -> float | None:
    st = time.perf_counter()
    addrs = [int(b.va_addr) for b in bufs] + [0] * (3 - len(bufs))
    if self._fn is not None: self._fn(self.spec.ctypes.data, *addrs)
    else: _numpy_gemm(self.words, addrs)
    return time.perf_counter() - st if wait else None

def _numpy_gemm(w: list[int], addrs: list[int]) -> None:
  """The spec's call by numpy on strided views of the buffers (BLAS's column-major C = op(A) op(B), batched)."""
  dt = np.dtype(np.float64 if w[0] else np.float32)
  rows, cols, k, lda, ldb, ldc = w[3:9]
  loops = [w[16 + 4 * i:20 + 4 * i] for i in range(w[15])]
  def view(slot: int, off: int, shape: tuple, strides: tuple, lstrides: list[int]) -> np.ndarray:
    extent = off + sum((n - 1) * s for n, s in zip((*[l[0] for l in loops], *shape), (*lstrides, *strides), strict=True)) + 1
    base = np.ctypeslib.as_array((ctypes.c_byte * (extent * dt.itemsize)).from_address(addrs[slot])).view(dt)
    return np.lib.stride_tricks.as_strided(base[off:], (*[l[0] for l in loops], *shape),
                                           tuple(s * dt.itemsize for s in (*lstrides, *strides)))
  def op(slot, off, trans, ld, r, c, lst):
    return view(slot, off, (r, c), (1, ld), lst) if trans == ord("N") else view(slot, off, (r, c), (ld, 1), lst)
  a = op(w[10], w[13], w[1], lda, rows, k, [l[2] for l in loops])
  b = op(w[11], w[14], w[2], ldb, k, cols, [l[3] for l in loops])
  out = view(w[9], w[12], (rows, cols), (1, ldc), [l[1] for l in loops])
  out[...] = np.matmul(a, b)

@functools.cache
def runtime(device: str, words: tuple[int, ...]) -> GemmProgram: return GemmProgram(device, list(words))

# ---- the scheduler: a matrix product a kernel of its own -------------------------------------------------------------

_gemm_devices: dict[str, bool] = {}

def _gemm_device(device: Any) -> bool:
  if not isinstance(device, str): return False
  if (ok := _gemm_devices.get(device)) is None:
    ren = Device[device].renderer
    ok = _gemm_devices[device] = not ren.has_local and ren.target.device == "CPU"
  return ok

def _product(red: UOp) -> tuple[UOp, UOp, int, int, int] | None:
  """A sum over broadcast operands as (a, b, M, N, K): the sizes of the axes only a varies along, only b, the summed
  ones (which both vary along), or None (other sums, a summed axis one operand is broadcast along)."""
  if red.arg[0] is not Ops.ADD or red.dtype not in _FLOATS: return None
  x, perm = red.src[0], None
  if x.op is Ops.PERMUTE: x, perm = x.src[0], x.arg
  if x.op is not Ops.MUL or any(not isinstance(s, int) for s in x.shape): return None
  summed = set((perm or range(len(x.shape)))[:red.arg[1]])
  va, vb = (_varying(s, len(x.shape)) for s in x.src)
  M = N = K = 1
  for i, n in enumerate(x.shape):
    assert isinstance(n, int)
    if i in summed:
      if not va[i] or not vb[i]: return None
      K *= n
    elif va[i] and not vb[i]: M *= n
    elif vb[i] and not va[i]: N *= n
  return x.src[0], x.src[1], M, N, K

def _unit(d) -> bool: return isinstance(d, int) and d == 1

def _varying(x: UOp, rank: int) -> list[bool]:
  """Per axis of x (right-aligned to `rank` axes, as a broadcast operand), whether x varies along it: not where it has
  size 1 or an EXPAND broadcasts it (through PERMUTEs and RESHAPEs that only add or drop axes of 1; any other view:
  where its size is not 1, which can only make a product look like a batch of products)."""
  shape = tuple(x.shape)
  out = [not _unit(d) for d in shape]
  if x.op is Ops.EXPAND: out = [o and v for o, v in zip(out, _varying(x.src[0], len(shape)), strict=True)]
  elif x.op is Ops.PERMUTE:
    inner = _varying(x.src[0], len(shape))
    out = [inner[p] for p in x.arg]
  elif x.op is Ops.RESHAPE and [d for d in shape if not _unit(d)] == [d for d in x.src[0].shape if not _unit(d)]:
    kept = iter([v for v, d in zip(_varying(x.src[0], len(x.src[0].shape)), x.src[0].shape, strict=True) if not _unit(d)])
    out = [not _unit(d) and next(kept) for d in shape]
  return [False] * (rank - len(out)) + out

STORING = (Ops.STORE, Ops.AFTER, Ops.SINK, Ops.CONTIGUOUS)   # uses that store a value as it is

def consumers_of(order: list[UOp]) -> dict[UOp, list[UOp]]:
  """Each node's uses among `order`."""
  consumers: dict[UOp, list[UOp]] = {}
  for u in order:
    for x in u.src: consumers.setdefault(x, []).append(u)
  return consumers

def realize_gemms(ctx, order: list[UOp], users: Callable[[], dict[UOp, list[UOp]]]) -> None:
  """Marks for tinygrad's scheduler (its realize map) each matrix product big enough for BLAS, and its operands' values
  computed elementwise, to be stored: the product is then a kernel of its own that `program` can make a BLAS call
  (`order`: the scheduled graph's nodes, sources first; `users()`: their consumers_of, made once when needed)."""
  products = [(u, p) for u in order if u.op is Ops.REDUCE and _gemm_device(u.device) and (p := _product(u)) is not None
              and p[2] * p[3] * p[4] >= GEMM_MIN and min(p[2], p[3]) >= SIDE_MIN]
  if not products: return None
  consumers = users()
  def stored(u: UOp) -> bool:   # every use stores u as it is (the kernel's own output): nothing to add
    return all(c.op in STORING or c.op in (Ops.RESHAPE, Ops.PERMUTE) and stored(c)
               for c in consumers.get(u, []))
  for u, (a, b, *_) in products:
    if not stored(u): ctx.realize_map[u] = ctx.non_removable[u] = None
    for x in (a, b):
      while x.op in GroupOp.Movement: x = x.src[0]
      if x.op not in ALWAYS_CONTIGUOUS: ctx.realize_map[x] = ctx.non_removable[x] = None
__all__ = ["GEMM_MIN", "SIDE_MIN", "STORING", "consumers_of", "gemm_of", "program", "words_of", "runtime", "realize_gemms", "GemmProgram"]

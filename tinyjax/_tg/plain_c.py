"""Plain CPU kernels written as C straight from their AST, without tinygrad's code generation (issue 30: first calls).

tinygrad turns a kernel's AST into C through ~30 rewrite passes (its optimisations, the expander, the devectorizer,
symbolic simplification, decompositions, linearize, render): 12-100 ms of Python for a matrix product of 30 nodes,
75-85% of a first call. A kernel made of loops over constant ranges, loads and stores (gated ones too), reduces and the
operations in `_OPS` (exp2, log2, sin and threefry expanded by tinygrad's own functions) is written here in 0.2-1 ms, as tinygrad
writes it with NOOPT: the same C for each operation (its decompositions of MAX, RECIPROCAL, floor division and
negation, as its late rewrites apply them), arithmetic used once inlined into its user as its renderer inlines it
(clang contracts a*b+c into an FMA only within one expression: the same FMAs), each sum in order. So under NOOPT the
numbers are tinygrad's bit for bit (tests/test_plain_c.py). For speed without reordering a sum, a store whose value
has a reduce writes several outputs per step of its loops (`_upcast`: tinygrad's upcast of outputs), their
accumulators independent chains the compiler vectorises. A kernel with a sum comparing its own range (a one-hot
gather) first goes through tinygrad's own early passes (`_tinygrads_early_passes`: its load collapse and symbolic
rewrites), and what they leave is written here. Any other kernel (above `MAX_WORK` iterations, a long sum
with few outputs, half, a variable, a buffer read and written, BEAM, ...) returns None: tinygrad's path.
"""
from __future__ import annotations
import functools, itertools, math, struct
from fractions import Fraction
from typing import Callable
from dataclasses import replace
from tinygrad.dtype import AddrSpace, DType, Invalid, dtypes, least_upper_dtype
from tinygrad.helpers import DEBUG, ContextVar
from tinygrad.uop.ops import Ops, ProgramInfo, UOp, axis_letters, graph_rewrite, range_str
from tinygrad.codegen.decomp.transcendental import xlog2
from tinygrad.codegen.decomp.op import threefry2x32
from tinygrad.codegen.simplify import pm_flatten_range, pm_split_ranges
import tinygrad.codegen as _codegen
from tinyjax._tg.transcendental import EXPANSIONS, PATHS, TRIG_RANGE, call_form, xexp2, xsin
from tinyjax._tg import compile as _compile

# on by default; TINYJAX_PLAIN_C=0 (or Context(TINYJAX_PLAIN_C=0)) leaves every kernel to tinygrad. Part of tinygrad's
# program key (patches.py), so a program made one way is not found the other way
PLAIN_C = ContextVar("TINYJAX_PLAIN_C", 1)
CHAINS = 16               # accumulators a reduce's loop updates at each step (independent chains, as tinygrad's 4x4)
LONG_SUM = 512            # a reduce's length from which it needs 8 accumulators (outputs) at each step to be written here
MAX_WORK = 1 << 16        # loop iterations of a kernel (all its loops' trip counts multiplied), at most
MARK = "/* tinyjax plain C */"   # the first line of their sources
# a reduce's loop is unrolled 4 times, not whole: clang unrolled a 64-step dot product whole, and took 115 ms for the
# kernel instead of 55 ms, for the same run time (2.2 us); a float sum it does not vectorise (that would reorder it).
# Not at all where the body expands a transcendental or threefry: hmm_em's sampling argmax (threefry and two logs in
# each of three 25-step loops) took clang 3.4 s unrolled 4 times, 1.0 s not unrolled
_UNROLL_4 = '_Pragma("clang loop unroll_count(4)") '
# a small kernel's other loops are not unrolled: clang unrolled the bicycle Hessian's elementwise loops whole (4 x 50 x
# 4) and vectorised what that left, 363 ms of -O2 for 16 such kernels instead of 122, to save well under a microsecond
# a call. A larger kernel's, or one with a software transcendental, are left to clang: unrolling a short inner loop lets
# it vectorise the outer one (spjacobian 1-D Bratu's 1000 x 3 with an exponential each: 14 us a call, 21 without)
SMALL_WORK = 1 << 12
_NO_UNROLL = '_Pragma("clang loop unroll(disable)") '
_NO_VECTORIZE = '_Pragma("clang loop vectorize(disable)") '   # (a soft kernel's short loop: SHORT_LOOP below)

_C_TYPES = {dtypes.bool: "_Bool", dtypes.int8: "signed char", dtypes.uint8: "unsigned char", dtypes.int16: "short",
            dtypes.uint16: "unsigned short", dtypes.int32: "int", dtypes.uint32: "unsigned int", dtypes.int64: "long",
            dtypes.uint64: "unsigned long", dtypes.float32: "float", dtypes.float64: "double"}
_ARITH = {Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.CMPLT: "<", Ops.CMPNE: "!=", Ops.CMPEQ: "==", Ops.AND: "&",
          Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>", Ops.CDIV: "/", Ops.CMOD: "%"}
# the software transcendentals, expanded by tinygrad's own functions (the renderer has no exp2, log2 or sin of its own)
_SOFT = {Ops.EXP2: xexp2, Ops.LOG2: xlog2, Ops.SIN: xsin}
_EXPANDED: dict[Ops, Callable[..., UOp]] = {**_SOFT, Ops.THREEFRY: threefry2x32}   # (and JAX's random bits: tinygrad's threefry in uint32 arithmetic)
_NARROW = {dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16}
_OPS = set(_ARITH) | set(_EXPANDED) | {Ops.NEG, Ops.MAX, Ops.WHERE, Ops.RECIPROCAL, Ops.SQRT, Ops.TRUNC, Ops.FLOORDIV, Ops.FLOORMOD,
                      Ops.CAST, Ops.BITCAST}
SHORT_LOOP = 64   # clang does not vectorise a shorter loop of a transcendental (patches._short_loop: ~40 ms of clang each)
_STRUCTURE = {Ops.SINK, Ops.END, Ops.STORE, Ops.INDEX, Ops.PARAM, Ops.CONST, Ops.RANGE, Ops.REDUCE}

class _Unsupported(Exception): pass

def _ctype(dt: DType) -> str:
  if (t := _C_TYPES.get(dt)) is None: raise _Unsupported(dt)
  return t

def _const(value, dt: DType) -> str:
  """A constant as tinygrad's ClangRenderer writes it."""
  if dt in (dtypes.float32, dtypes.float64):
    v = float(value)   # (an int constant committed to a float: 3 is written 3.0)
    if math.isfinite(v): return (f"{v}f" if dt == dtypes.float32 else str(v)) if v >= 0 else f"({v}{'f' if dt == dtypes.float32 else ''})"
    text = '__builtin_nanf("")' if math.isnan(v) else "__builtin_inff()" if v > 0 else "-__builtin_inff()"
    return f"(({_ctype(dt)})({text}))"
  if dt == dtypes.bool: return "1" if value else "0"
  value = int(value)   # (a float constant committed to an int: C's conversion, toward zero)
  if dt == dtypes.int64: return f"{value}l" if value >= 0 else f"({value}l)"
  if dt == dtypes.uint64: return f"{value}ul"
  if dt == dtypes.uint32: return f"{value}u"
  if dt in (dtypes.uint8, dtypes.uint16): return f"(({_ctype(dt)})({value}u))"
  if dt in (dtypes.int8, dtypes.int16): return f"(({_ctype(dt)})({value}))"
  if dt == dtypes.int32: return str(value) if value >= 0 else f"({value})"
  raise _Unsupported(dt)

def _is_const(u: UOp, value) -> bool:
  return u.op is Ops.CONST and not isinstance(u.arg, UOp) and u.arg == value and type(u.arg) is not bool

class _Kernel:
  """One kernel's C: statements at the loop level of their deepest range, expressions used once inlined."""
  def __init__(self, ast: UOp, small: bool = False, table: bool = False):
    self.small = small                  # few iterations in all: compile time outweighs what unrolling saves
    # a loop-free kernel's constants in tables (`_Tables`): its binary serves every kernel of the same code
    self.tables: dict[DType, list] | None = {} if table else None
    self.uses: dict[UOp, int] = {}
    self.users: dict[UOp, list[UOp]] = {}
    for u in ast.toposort():
      for s in u.src:
        self.uses[s] = self.uses.get(s, 0) + 1
        self.users.setdefault(s, []).append(u)
    # tinygrad's index type (weakint) is int where every index value fits in one, else long (as its lowering decides)
    fits = all(-2**31 <= u.vmin and u.vmax < 2**31 for u in self.uses if u.dtype is dtypes.weakint)
    self.index = dtypes.int32 if fits else dtypes.int64
    self.soft = any(u.op in _SOFT for u in self.uses)
    # its transcendentals as calls of one function each (`_helper`) where no loop of it is vectorised: all short, no sum
    self.calls = self.soft and all(u.op is not Ops.REDUCE and (u.op is not Ops.RANGE or u.src[0].arg < SHORT_LOOP) for u in self.uses)
    self.helpers: dict[str, str] = {}   # the functions it calls: name -> C
    self.expanded = any(u.op in _EXPANDED for u in self.uses)   # (long bodies: a transcendental's or threefry's arithmetic)
    self.names: dict[UOp, str] = {}     # nodes with a variable (loads, shared or unlined arithmetic, reduces, ranges)
    self.inline: dict[UOp, str] = {}    # nodes written into their user
    self.count = {"val": 0, "alu": 0, "acc": 0}
    self.levels: list[tuple[UOp | None, list[str]]] = [(None, [])]   # open loops: (range, its lines)
    self.depth: dict[UOp, int] = {}     # an open range's level
    self.upcast: dict[UOp, int] = {}    # the store's ranges whose loops write several outputs at each step, and how many
    self.copy: tuple[int, ...] = ()     # the output of each upcast step being written
    self.accs: dict[tuple[UOp, tuple[int, ...]], str] = {}   # a reduce's accumulator for each copy
    self.base: dict[UOp, str] = {}      # a range's loop variable

  def dt(self, dt: DType) -> DType: return self.index if dt is dtypes.weakint else dt

  def const(self, value, dt: DType) -> str:
    """A constant of the AST: its C literal, or its entry in the kernel's table of constants of its type."""
    if self.tables is None or (held := _table_value(value, dt)) is None: return _const(value, dt)
    entries = self.tables.setdefault(dt, [])
    entries.append(held)
    return f"{_table_name(dt)}[{len(entries) - 1}]"

  def name(self, prefix: str) -> str:
    self.count[prefix] += 1
    return f"{prefix}{self.count[prefix] - 1}"

  def level_of(self, u: UOp) -> int:
    """The level of the deepest open loop u depends on (its statement goes there)."""
    return max((self.depth[r] for r in u.ranges if r in self.depth), default=0)

  def emit(self, level: int, line: str) -> None: self.levels[level][1].append(line)

  def open_loop(self, r: UOp, reduce: bool = False, step: int = 1) -> None:
    if r.src[0].op is not Ops.CONST or self.dt(r.dtype) not in (dtypes.int32, dtypes.int64) or len(r.src) != 1: raise _Unsupported(r)
    n = r.src[0].arg
    self.names[r] = self.base[r] = name = f"{axis_letters[r.arg[-1]]}idx{range_str(r)}"
    if reduce: pragma = _NO_UNROLL if self.expanded else _UNROLL_4
    else: pragma = (_NO_UNROLL if self.small and not self.soft else "") + (_NO_VECTORIZE if self.soft and n < SHORT_LOOP else "")
    self.depth[r] = len(self.levels)
    advance = f"{name}++" if step == 1 else f"{name} += {step}"
    self.levels.append((r, [f"{pragma}for ({_ctype(self.dt(r.dtype))} {name} = 0; {name} < {_const(n, self.dt(r.dtype))}; {advance}) {{"]))

  def close_loop(self) -> None:
    r, lines = self.levels.pop()
    del self.depth[r]   # type: ignore[arg-type]
    self.forget(lambda u: u is r or r in u.ranges)   # what was computed in the loop is not seen after it
    for key in [key for key in self.accs if r in key[0].ranges]: del self.accs[key]
    self.levels[-1][1].extend(lines[:1] + ["  " + ln for ln in lines[1:]] + ["}"])

  def forget(self, gone) -> None:
    for memo in (self.names, self.inline):
      for u in [u for u in memo if gone(u)]: del memo[u]

  def select(self, copy: tuple[int, ...]) -> None:
    """Write the expressions of this copy of an upcast step: each upcast range is its loop's variable plus the copy's
    offset; what was written for another copy and depends on an upcast range is written again."""
    self.copy = copy
    self.forget(lambda u: u.op is not Ops.RANGE and any(r in u.ranges for r in self.upcast))
    for r, i in zip(self.upcast, copy, strict=True): self.names[r] = f"({self.base[r]}+{i})"

  def copies(self) -> list[tuple[int, ...]]: return list(itertools.product(*[range(n) for n in self.upcast.values()]))

  def param(self, p: UOp) -> str:
    if p.op is not Ops.PARAM or p.addrspace != AddrSpace.GLOBAL or len(p.src) != 1 or p._shape is None:
      raise _Unsupported(p)
    _ctype(self.dt(p.dtype))
    return _param_name(p)

  def address(self, idx: UOp, at: UOp | None = None) -> str:
    """The element INDEX idx points at (at: its offset, without a load's gate)."""
    at = idx.src[1] if at is None else at
    if idx.op is not Ops.INDEX or len(idx.src) != 2 or self.dt(at.dtype) not in (dtypes.int32, dtypes.int64): raise _Unsupported(idx)
    offset = self.operand(at, self.dt(at.dtype))
    return f"*({self.param(idx.src[0])}+{_strip(offset) if at.op is Ops.ADD else offset})"

  def store(self, s: UOp) -> None:
    """A store; one of where(gate, value, Invalid) writes only where the gate holds (tinygrad's gated store)."""
    idx, value = s.src
    if value.op is Ops.WHERE and _is_invalid(value.src[2]):
      gate, address, text = self.expr(value.src[0]), self.address(idx), self.operand(value.src[1], idx.dtype)
      self.emit(len(self.levels) - 1, f"if ({_strip(gate)}) {{ {address} = {_strip(text)}; }}")
    else: self.emit(len(self.levels) - 1, f"{self.address(idx)} = {_strip(self.operand(value, idx.dtype))};")

  def load(self, idx: UOp) -> str:
    """A load; a gated one (its index where(valid, offset, Invalid): a pad's or a concatenation's) reads 0 where the gate
    is false, and reads no memory there (tinygrad's gated load)."""
    at = idx.src[1]
    if at.op is Ops.WHERE and _is_invalid(at.src[2]):
      return f"({self.expr(at.src[0])}?{self.address(idx, at.src[1])}:{_const(0, self.dt(idx.dtype))})"
    return f"({self.address(idx)})"

  def expr(self, u: UOp) -> str:
    if (text := self.names.get(u)) is not None or (text := self.inline.get(u)) is not None: return text
    if u.op is Ops.CONST:
      if not isinstance(u.arg, (int, float)) or u.src: raise _Unsupported(u)   # (Invalid: a gated index)
      return self.const(u.arg, self.dt(u.dtype))
    if u.op is Ops.RANGE: raise _Unsupported("a range not looped over")
    if u.op is Ops.INDEX:   # a load
      self.names[u] = name = self.name("val")
      self.emit(self.level_of(u), f"{_ctype(self.dt(u.dtype))} {name} = {self.load(u)};")
      return name
    if u.op is Ops.REDUCE: return self.reduce(u)
    if u.op in _EXPANDED:   # tinygrad's expansion of it into arithmetic, written as that arithmetic
      if u.op is Ops.THREEFRY and not (u.dtype is dtypes.uint64 and all(x.dtype is dtypes.uint64 for x in u.src)): raise _Unsupported(u)
      if u.op in _SOFT and (u.dtype not in (dtypes.float32, dtypes.float64) or u.src[0].dtype is not u.dtype): raise _Unsupported(u)
      # (a SIN of pi/2 - x is the cosine of x, an EXP2 of x log2 e the exponential of x: transcendental.py)
      kind, arg, depth = form if (form := call_form(u)) is not None else (None, u.src[0], 0)
      if u.op in _SOFT and self.calls and self.read_by_soft(arg, depth):
        name, self.helpers[name] = _helper(u.op, u.dtype, kind)
        return self.bind(u, f"{name}({_strip(self.expr(arg))})")
      expanded = _EXPANDED[u.op](*u.src)
      for x in expanded.toposort():   # (the new nodes' uses of their sources; the expansion takes the uses of u)
        if x not in self.uses:
          for y in x.src: self.uses[y] = self.uses.get(y, 0) + 1
      self.uses[expanded] = self.uses.get(expanded, 0) + self.uses.get(u, 0)
      self.inline[u] = text = self.expr(expanded)
      return text
    return self.bind(u, self.alu(u))

  def bind(self, u: UOp, text: str) -> str:
    """u's C: written into its user where it has one (not a select), else a variable's statement."""
    if u.op is not Ops.WHERE and self.uses.get(u, 0) == 1:
      self.inline[u] = text
      return text
    self.names[u] = name = self.name("alu")
    self.emit(self.level_of(u), f"{_ctype(self.dt(u.dtype))} {name} = {_strip(text) if u.op is Ops.WHERE else text};")
    return name

  def read_by_soft(self, u: UOp, depth: int) -> bool:
    """Nothing but transcendentals reads u (or, `depth` levels down, reads what reads it: a cosine's pi/2 - x)."""
    return all(v.op in _SOFT or (depth > 0 and self.read_by_soft(v, depth - 1)) for v in self.users.get(u, ()))

  def operand(self, s: UOp, commit: DType) -> str:
    """A source of an operation at `commit`, the dtype tinygrad commits its weak constants to (pm_commit_weak)."""
    return self.const(s.arg, commit) if s.op is Ops.CONST and s.dtype in dtypes.weaks and isinstance(s.arg, (int, float)) else self.expr(s)

  def alu(self, u: UOp) -> str:
    if u.op not in _OPS or u.dtype is dtypes.weakfloat: raise _Unsupported(u.op)
    dt, src = u.dtype, u.src
    _ctype(self.dt(dt))
    values = src[1:] if u.op is Ops.WHERE else src
    strong = [s.dtype for s in values if s.dtype not in dtypes.weaks]
    commit = least_upper_dtype(*strong) if strong else dt if u.op in (Ops.CAST, Ops.BITCAST) else self.dt(values[0].dtype)
    if commit in dtypes.weaks: raise _Unsupported(u)
    def e(s: UOp) -> str: return self.operand(s, commit)
    if u.op is Ops.CAST:
      if src[0].dtype is dtypes.weakfloat and src[0].op is not Ops.CONST: raise _Unsupported(u)
      return f"(({_ctype(self.dt(dt))})({self.operand(src[0], self.dt(dt)) if src[0].op is Ops.CONST else self.expr(src[0])}))"
    if u.op is Ops.BITCAST:
      if src[0].dtype in dtypes.weaks: raise _Unsupported(u)
      return f"__builtin_bit_cast({_ctype(self.dt(dt))}, ({_ctype(src[0].dtype)})({self.expr(src[0])}))"
    if u.op is Ops.SQRT or u.op is Ops.TRUNC:
      if dt not in (dtypes.float32, dtypes.float64): raise _Unsupported(u)
      return f"__builtin_{'sqrt' if u.op is Ops.SQRT else 'trunc'}{'f' if dt == dtypes.float32 else ''}({e(src[0])})"
    if dt in _NARROW or commit in _NARROW: raise _Unsupported(u)   # (C computes them in int: where they wrap must match)
    if u.op is Ops.NEG: return f"(-{e(src[0])})"
    if u.op is Ops.RECIPROCAL: return f"({_const(1.0, commit)}/{e(src[0])})"
    if u.op is Ops.WHERE: return f"({self.expr(src[0])}?{e(src[1])}:{e(src[2])})"
    if u.op is Ops.MAX: return f"(({e(src[0])}<{e(src[1])})?{e(src[1])}:{e(src[0])})"   # tinygrad's decomposition
    a, b = src
    if u.op is Ops.MUL:   # tinygrad's late rewrites: x*-1 -> -x, a*(1/b) -> a/b
      for x, y in ((a, b), (b, a)):
        if _is_const(y, -1): return f"(-{e(x)})"
      for x, y in ((a, b), (b, a)):
        if y.op is Ops.RECIPROCAL and dtypes.is_float(commit): return f"({e(x)}/{self.operand(y.src[0], commit)})"
    if u.op is Ops.ADD:   # x + -y -> x - y
      for x, y in ((a, b), (b, a)):
        if (neg := _negated(y)) is not None: return f"({e(x)}-{self.operand(neg, commit)})"
    if u.op in (Ops.FLOORDIV, Ops.FLOORMOD):
      if not dtypes.is_int(commit): raise _Unsupported(u)
      ta, tb = e(a), e(b)
      if b.op is Ops.CONST and isinstance(b.arg, int) and b.arg > 0 and b.arg & (b.arg - 1) == 0:   # a power of two:
        # an arithmetic shift and a mask are floor division and modulo for either sign (tinygrad's rewrite, as fast)
        return f"({ta}>>{b.arg.bit_length() - 1})" if u.op is Ops.FLOORDIV else f"({ta}&{b.arg - 1})"
      same_sign = (a.vmin >= 0 and b.vmin > 0) or (a.vmax <= 0 and b.vmax < 0)
      if u.op is Ops.FLOORDIV:
        return f"({ta}/{tb})" if same_sign else f"(({ta}/{tb})-((({ta}%{tb})!=0)&(({ta}<0)!=({tb}<0))))"
      return f"({ta}%{tb})" if same_sign else f"(({ta}%{tb})+((((({ta}%{tb})!=0)&(({ta}<0)!=({tb}<0))))?{tb}:0))"
    return f"({_flat(e(a), u.op, a)}{_ARITH[u.op]}{_flat(e(b), u.op, b, right=True)})"

  def reduce(self, r: UOp) -> str:
    """A reduce's accumulator for the current copy. Its loop is written once for every copy of the upcast step: the
    copies' accumulators are independent chains (the compiler vectorises them across outputs), each summed in order."""
    upcast = any(x in r.ranges for x in self.upcast)   # (one that does not depend on the upcast ranges is written once)
    if (acc := self.accs.get((r, self.copy if upcast else ()))) is not None: return acc
    op = r.arg[0]
    if op not in (Ops.ADD, Ops.MUL, Ops.MAX) or r.arg[1]: raise _Unsupported(r)
    ranges = sorted(r.src[1:], key=lambda x: x.arg[:-1])
    if any(x.op is not Ops.RANGE or x in self.depth for x in ranges): raise _Unsupported(r)
    dt = r.dtype
    level = self.level_of(r)   # (its value: the ranges outside it it depends on)
    copies = self.copies() if upcast else [()]
    identity = {Ops.ADD: 0, Ops.MUL: 1, Ops.MAX: dt.min}[op]
    for c in copies:
      self.accs[(r, c)] = acc = self.name("acc")
      self.emit(level, f"{_ctype(self.dt(dt))} {acc} = {_const(dt.const(identity) if dtypes.is_float(dt) else identity, self.dt(dt))};")
    # the loops open at the reduce's level; a deeper loop already open does not enclose it
    inner = self.levels[level + 1:]
    del self.levels[level + 1:]
    for loop, _ in inner:
      if loop is not None: del self.depth[loop]
    for x in ranges: self.open_loop(x, reduce=True)
    was = self.copy
    src, sign = r.src[0], _ARITH.get(op, "")
    # tinygrad's symbolic moves a constant to the end of a chain ((x + c) + y -> (x + y) + c, * too): an accumulator's
    # update acc + (x + c) is (x + acc) + c there, x whole (not a float sum's: patches.py keeps it as written)
    moves = op is Ops.MUL or (op is Ops.ADD and not dtypes.is_float(dt))
    consts = [i for i, y in enumerate(src.src) if y.op is Ops.CONST] if moves and src.op is op else []
    for c in copies:
      if upcast and c != self.copy: self.select(c)
      acc = self.accs[(r, c)]
      if len(consts) == 1:
        x, k = src.src[1 - consts[0]], src.src[consts[0]]
        update = f"({_flat(self.operand(x, dt), op, x)}{sign}{acc}{sign}{self.operand(k, dt)})"
      elif op is Ops.MAX: update = f"(({acc}<{(value := self.operand(src, dt))})?{value}:{acc})"
      else: update = f"({acc}{sign}{_flat(self.operand(src, dt), op, src, right=True)})"
      self.emit(len(self.levels) - 1, f"{acc} = {_strip(update) if op is Ops.MAX else update};")
    if self.copy != was: self.select(was)
    for _ in ranges: self.close_loop()
    for loop, lines in inner:
      if loop is not None: self.depth[loop] = len(self.levels)
      self.levels.append((loop, lines))
    return self.accs[(r, self.copy if upcast else ())]

# ---- a transcendental as a function --------------------------------------------------------------------------------
# tinygrad's float64 sine is ~60 lines of C (its Payne-Hanek reduction): written into each kernel that takes one, it was
# ~17 ms of clang per kernel (the bicycle's constraints: 8 kernels of a sine or cosine each, 130 of their 180 ms) and
# ~4 ms of Python expanding it again. Where no loop of a kernel is vectorised (all shorter than SHORT_LOOP, no sum) a
# transcendental is a call of a static function with that arithmetic, written once per process, and in a translation
# unit once (its kernels' sources guard it; compile.py compiles the guarded functions apart, once, and links them into
# the units and eager kernels that call them). The same numbers: its argument and its result are rounded values in the
# kernel either way (the expansion reads its input more than once, so it was a variable already, and its last
# operation is a select), the function's statements are the expansion's as a kernel writes them; only where nothing
# but transcendentals reads the argument (nothing else of the kernel can share the expansion's nodes).
@functools.cache
def _helper(op: Ops, dt: DType, kind: str | None = None) -> tuple[str, str]:
  """(name, C definition) of the function computing tinygrad's expansion of op at dt (kind: transcendental.py's cos or
  exp). A float64 sine or cosine is two functions, one per reduction, and one that branches between them."""
  name = f"tinyjax_{kind or op.name.lower()}_{_ctype(dt)}"
  if dt is dtypes.float64 and (path := kind or op.name.lower()) in PATHS:
    parts = [_function(f"{name}_{p}", dt, functools.partial(PATHS[path], path=p)) for p in ("small", "big")]
    # (the expansion's test: |x| of x with inf and nan as 0 below TRIG_RANGE takes the small one)
    a = "(x < 0.0 ? -x : x)"
    big = f"{a} >= {TRIG_RANGE!r} && {a} <= 1.7976931348623157e308"   # (finite: inf and nan take the small one)
    branch = f"static double {name}(double x) {{\n  return ({big}) ? {name}_big(x) : {name}_small(x);\n}}\n"
    return name, _guarded(name, "".join(parts) + branch)
  return name, _guarded(name, _function(name, dt, EXPANSIONS[kind] if kind is not None else _SOFT[op]))

def _function(name: str, dt: DType, expansion: Callable[[UOp], UOp]) -> str:
  x = UOp(Ops.NOOP, dt, (UOp.const(0.0, dt),), "tinyjax helper argument")   # (a CONST as tinygrad makes it: UOps are shared)
  expanded = expansion(x)
  k = _Kernel(expanded)
  k.names[x] = "x"
  result = k.expr(expanded)
  body = "".join(f"  {line}\n" for line in k.levels[0][1])
  return f"static {_ctype(dt)} {name}({_ctype(dt)} x) {{\n{body}  return {result};\n}}\n"

def _guarded(name: str, text: str) -> str: return f"#ifndef {name.upper()}\n#define {name.upper()}\n{text}#endif\n"

# ---- a loop-free kernel's constants in tables ---------------------------------------------------------------------------
# Eager code compiles a kernel per operation, and kernels that differ only by their constants (an index, a Python float:
# `x[i]` in a loop, a solver step's scalars) are each a clang run of ~35 ms (physical_optimization's 183 eager kernels:
# 19 codes). A loop-free kernel compiled alone reads the constants of its AST from tables of the object's .data (hidden
# globals: clang cannot fold them, and reaches them by PC-relative relocations tinygrad's loader applies). The first
# kernel of a code is compiled, the object's table bytes checked against the values packed here; the next kernels of
# that code are the same object with their values written into its tables, no clang. A float32 constant that is not
# rounded as clang rounds its literal (`_float32_of_literal`).
_TABLE_FORMATS = {dtypes.bool: "?", dtypes.int32: "i", dtypes.int64: "q", dtypes.uint32: "I", dtypes.uint64: "Q", dtypes.float32: "f",
                  dtypes.float64: "d"}

def _table_name(dt: DType) -> str: return f"tinyjax_k_{dt.name.replace(' ', '_')}"

def _table_value(value, dt: DType):
  """The value a table holds for this constant (as its C literal converts it), or None: a literal it stays."""
  if dt not in _TABLE_FORMATS or isinstance(value, bool) and dt is not dtypes.bool: return None
  if dt is dtypes.bool: return bool(value)
  if dtypes.is_float(dt):
    v = float(value)
    return _float32_of_literal(v) if dt is dtypes.float32 and math.isfinite(v) else v
  bits = dt.itemsize * 8
  v = int(value) % (1 << bits)   # (C converts an integer literal to the table's type modulo 2^bits)
  return v - (1 << bits) if not dtypes.is_unsigned(dt) and v >= 1 << (bits - 1) else v

def _f32(bits: int) -> float: return struct.unpack("<f", struct.pack("<I", bits))[0]

def _float32_of_literal(v: float) -> float | None:
  """The float32 clang makes of the literal `_const` writes for v (its decimal, correctly rounded to nearest, ties to
  even): v's float32 rounding can differ from it (v rounds once to a double, the decimal once to a float). None where
  the literal is out of float32's range."""
  if abs(v) >= 3.4e38: return None   # (at the top of the range clang's rounding may reach inf: left to it)
  exact = Fraction(repr(abs(v)))
  bits = struct.unpack("<I", struct.pack("<f", abs(v)))[0]
  near = [b for b in (bits - 1, bits, bits + 1) if 0 <= b < 0x7F800000]
  best = min(near, key=lambda b: (abs(Fraction(_f32(b)) - exact), b & 1))
  return math.copysign(_f32(best), v)

def _declarations(tables: dict[DType, list], values: bool) -> str:
  return "".join(f'__attribute__((visibility("hidden"), section(".data"))) {_ctype(dt)} {_table_name(dt)}[{len(vs)}]'
                 + (f" = {{{', '.join(_const(v, dt) for v in vs)}}};\n" if values else ";\n") for dt, vs in tables.items())

def _packed(dt: DType, values: list) -> bytes: return struct.pack(f"<{len(values)}{_TABLE_FORMATS[dt]}", *values)

def _symbols(lib: bytes, names: set[str]) -> dict[str, int]:
  """The file offsets of these symbols' bytes in an ELF64 object (symbols in a section with contents only)."""
  shoff, = struct.unpack_from("<Q", lib, 0x28)
  shentsize, shnum = struct.unpack_from("<HH", lib, 0x3A)
  sections = [struct.unpack_from("<IIQQQQIIQQ", lib, shoff + i * shentsize) for i in range(shnum)]
  out: dict[str, int] = {}
  for _, kind, _, _, offset, size, link, _, _, entsize in sections:
    if kind != 2: continue   # SHT_SYMTAB
    strtab = sections[link][4]
    for at in range(offset, offset + size, entsize):
      name_at, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", lib, at)
      name = lib[strtab + name_at:lib.index(b"\0", strtab + name_at)].decode()
      if name in names and 0 < shndx < len(sections) and sections[shndx][1] == 1: out[name] = sections[shndx][4] + value   # PROGBITS
  return out

class _Tables:
  """Objects by their code without the tables' values (and the compiler): the object, each table's offset in it."""
  def __init__(self, size: int = 4096):
    self.size, self.reused = size, 0   # (reused: objects written from another's, read by tests)
    self.made: dict[tuple, tuple[bytes, dict[DType, int]]] = {}
  def compile(self, compiler, src: str, code: str, tables: dict[DType, list], entry: str) -> bytes:
    key = (type(compiler).__name__, getattr(compiler, "cachekey", None), tuple(getattr(compiler, "args", ())), code)
    if (got := self.made.get(key)) is not None:
      lib, offsets = got
      self.reused += 1
      out = bytearray(lib)
      for dt, vs in tables.items():
        packed = _packed(dt, vs)
        out[offsets[dt]:offsets[dt] + len(packed)] = packed
      return bytes(out)
    if (linked := _linked(compiler, src, entry)) is not None: lib, where = linked
    else:
      lib = compiler.compile_cached(src)
      try: where = _symbols(lib, {_table_name(dt) for dt in tables})
      except (struct.error, ValueError, IndexError): return lib
    offsets = {dt: where.get(_table_name(dt), -1) for dt in tables}
    # kept only where the object holds each table at its offset, its bytes the values packed here
    if self.size and all(o >= 0 and lib[o:o + len(b := _packed(dt, tables[dt]))] == b for dt, o in offsets.items()):
      if len(self.made) >= self.size: self.made.pop(next(iter(self.made)))
      self.made[key] = (lib, offsets)
    return lib

_TABLES = _Tables()

def _linked(compiler, src: str, entry: str) -> tuple[bytes, dict[str, int]] | None:
  """A kernel compiled alone that calls functions of ours: its program with them compiled apart and linked in
  (compile.linked_program, as a unit's), or None (none called, another compiler, or the link failed: then it is compiled
  with the functions in its source, as before)."""
  if type(compiler) is not _compile.ClangCompiler or compiler.arch != "x86_64" or not _compile.has_functions(src): return None
  try: return _compile.linked_program(compiler, src, entry)
  except Exception:
    if _compile.RAISE: raise
    return None

def _is_invalid(u: UOp) -> bool: return u.op is Ops.CONST and u.arg is Invalid

def _flat_param(u: UOp) -> UOp | None:
  """The PARAM a chain of reshapes ends in, if it comes back to the PARAM's own (flat) shape: a flattened buffer is
  the buffer (the gather kernel's `src.flatten()`)."""
  b = u
  while b.op is Ops.RESHAPE: b = b.src[0]
  return b if b.op is Ops.PARAM and b._shape is not None and u._shape == b._shape else None

def _compares_own_range(r: UOp) -> bool:
  return any(u.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) and any(x in u.ranges for x in r.src[1:]) for u in r.src[0].toposort())

def _tinygrads_early_passes(ast: UOp) -> UOp:
  """tinygrad's code generation up to its optimisations, as its NOOPT runs them (`full_rewrite_to_sink`): its load
  collapse turns a sum comparing its own range (a one-hot gather: sum_j (j == i) x[j]) into a gated load, its symbolic
  rewrites (sym: a constant factor out of a sum, ...) make the rest the arithmetic tinygrad's kernel computes. Its
  matchers read from its module when called: tinyjax's patches replace some of them (IEEE folding)."""
  sink = graph_rewrite(ast, _codegen.pm_mops, name="early movement ops", bottom_up=True)
  sink = graph_rewrite(sink, _codegen.pm_load_collapse, name="load collapse")
  sink = graph_rewrite(sink, _codegen.pm_split_ranges + _codegen.pm_flatten_range, ctx={}, name="split ranges")
  sink = graph_rewrite(sink, _codegen.sym + _codegen.pm_flatten_range, name="initial symbolic")
  sink = graph_rewrite(sink, _codegen.pm_flatten_range + _codegen.pm_simplify_ranges, ctx={}, name="simplify ranges")
  return graph_rewrite(sink, _codegen.sym + _codegen.pm_move_where_on_load + _codegen.pm_flatten_range + _codegen.pm_reduce_unparented,
                       name="postopt symbolic")

def _param_name(p: UOp) -> str: return f"data{p.arg.slot}_" + "_".join(str(x) for x in p.shape)   # (tinygrad's)

def _negated(u: UOp) -> UOp | None:
  if u.op is Ops.NEG: return u.src[0]
  if u.op is Ops.MUL:
    for x, y in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
      if _is_const(y, -1): return x
  return None

def _strip(text: str) -> str:
  """tinygrad's strip_parens: the outer parentheses of an expression that is wholly inside them."""
  if not (text.startswith("(") and text.endswith(")")): return text
  depth = 0
  for i, c in enumerate(text):
    depth += (c == "(") - (c == ")")
    if depth == 0 and i < len(text) - 1: return text
  return text[1:-1]

def _flat(text: str, op: Ops, u: UOp, right: bool = False) -> str:
  # tinygrad writes a chain of one associative op without inner parentheses ((a+b)+c as (a+b+c)); the same C meaning.
  # A float's right operand keeps them: a + (b + c) is another sum (patches.py, "float chains keep their order")
  if right and dtypes.is_float(u.dtype): return text
  return _strip(text) if u.op is op and op in (Ops.ADD, Ops.MUL, Ops.XOR, Ops.OR, Ops.AND) else text

def _stores(ast: UOp) -> list[tuple[UOp, tuple[UOp, ...]]]:
  out = []
  for s in ast.src:
    ranges: tuple[UOp, ...] = ()
    while s.op is Ops.END: s, ranges = s.src[0], s.src[1:] + ranges
    if s.op is not Ops.STORE or len(s.src) != 2 or any(r.op is not Ops.RANGE for r in ranges): raise _Unsupported(s)
    out.append((s, ranges))
  return out

def _upcast(value: dict[UOp, None], ordered: list[UOp]) -> dict[UOp, int]:
  """The ranges of a store (`value`: its value's nodes, `ordered`: its ranges) whose loops write several outputs at
  each step, and how many: where its value has a reduce,
  its two innermost ranges 4 divides, 4 outputs each, or the one such range CHAINS, 8 or 4 divides (the reduce's loop
  then updates up to CHAINS accumulators, as tinygrad's upcast of outputs; each output is still summed in order); 4
  outputs at most where the value has a software transcendental."""
  if not any(u.op is Ops.REDUCE for u in value): return {}
  ranges = [r for r in ordered[::-1] if r.src[0].arg % 4 == 0][:2]
  # each copy is another copy of a software transcendental's polynomial (patches.py's 4 lanes, for the same reason)
  if any(u.op in _SOFT for u in value): return {r: 4 for r in ranges[:1]}
  if len(ranges) == 2: return {r: 4 for r in ranges}
  return {r: next(n for n in (CHAINS, 8, 4) if r.src[0].arg % n == 0) for r in ranges}

def render(ast: UOp, table: bool = False) -> tuple[str, str, dict[DType, list], str] | None:
  """(name, C source, its tables of constants, the functions it calls) of a kernel AST written here, or None when it
  is not one of these kernels. table: a loop-free kernel reads its constants from tables (`_Tables`)."""
  if ast.op is not Ops.SINK or ast.arg is None or ast.arg.applied_opts or ast.arg.opts_to_apply or getattr(ast.arg, "beam", 0): return None
  try:
    nodes = ast.toposort()
    if any(_compares_own_range(u) for u in nodes if u.op is Ops.REDUCE): nodes = (ast := _tinygrads_early_passes(ast)).toposort()
    if any(u.op is Ops.FLOORMOD and u.src[0].op is Ops.RANGE and u.src[1].op is Ops.CONST for u in nodes):
      # a loop whose index is taken modulo a constant is split in two, as tinygrad splits it (inner loops the compiler
      # vectorises, instead of a division and a remainder per element)
      nodes = (ast := graph_rewrite(ast, pm_split_ranges + pm_flatten_range, ctx={}, name="split ranges")).toposort()
    if flat := {u: p for u in nodes if u.op is Ops.RESHAPE and (p := _flat_param(u)) is not None}: nodes = (ast := ast.substitute(flat)).toposort()
    if any(u.op not in _STRUCTURE and u.op not in _OPS for u in nodes): return None
    stores = _stores(ast)
    written = {s.src[0].src[0] for s, _ in stores}
    if any(u.op is Ops.INDEX and u.src[0] in written and all(u is not s.src[0] for s, _ in stores) for u in nodes): return None
    values = [s.src[1].toposort() for s, _ in stores]
    sums = [[math.prod(r.src[0].arg for r in u.src[1:] if r.src[0].op is Ops.CONST) for u in value if u.op is Ops.REDUCE] for value in values]
    work = sum(math.prod(r.src[0].arg for r in ranges if r.src[0].op is Ops.CONST) * math.prod(n)
               for (_, ranges), n in zip(stores, sums, strict=True))
    if work > MAX_WORK: return None
    k = _Kernel(ast, small=work <= SMALL_WORK, table=table and not any(u.op is Ops.RANGE for u in nodes))
    shape: list[int] = []
    for (s, ranges), value, lengths in zip(stores, values, sums, strict=True):
      if any(r in k.depth for r in ranges) or set(s.ranges) - set(ranges): return None   # (a range its loops do not give)
      ordered = sorted(ranges, key=lambda x: x.arg[:-1])
      k.upcast = _upcast(value, ordered)
      # a long sum with few independent accumulators is a chain of dependent adds (~4 cycles each): tinygrad's kernel
      # sums it in vectorised lanes (another order), several times faster
      if math.prod(k.upcast.values()) < 8 and any(n > LONG_SUM for n in lengths): return None
      for r in ordered: k.open_loop(r, step=k.upcast.get(r, 1))
      for copy in k.copies():
        k.select(copy)
        k.store(s)
      for _ in ranges: k.close_loop()
      k.upcast, k.copy = {}, ()
      shape = shape or [r.src[0].arg for r in sorted(ranges, key=lambda x: x.arg[:-1])]
  except _Unsupported: return None
  reduces = [u for u in nodes if u.op is Ops.REDUCE]
  name = ("r" if reduces else "E") + "".join(f"_{n}" for n in shape + [n for u in reduces[:1] for r in u.src[1:] for n in [r.src[0].arg]])
  return name, "\n".join(k.levels[0][1]), k.tables or {}, "".join(k.helpers.values())

def program(ast: UOp, renderer) -> UOp | None:
  """The PROGRAM of a plain kernel (`render`) for tinygrad's CPU renderer (clang): tinygrad's PROGRAM structure (the AST
  renamed, the LINEAR of its parameters, the source, the binary its compiler makes), or None."""
  if not PLAIN_C.value or type(renderer).__name__ != "ClangRenderer" or renderer.has_local or not renderer.target.arch.startswith("x86_64"):
    return None
  # constants in tables where the kernel is compiled alone (eager code's kernels; not one of a unit's sources)
  if (made := render(ast, table=type(renderer.compiler).__name__ == "ClangCompiler")) is None: return None
  name, body, tables, helpers = made
  info = replace(ProgramInfo.from_sink(ast, renderer.target), name=name)
  params = {u.arg.slot: u for u in ast.toposort() if u.op is Ops.PARAM}
  args = ", ".join(f"{_ctype(params[g].dtype)}* restrict {_param_name(params[g])}" for g in info.globals)
  code = f"void {info.function_name}({args}) {{\n" + "\n".join("  " + ln for ln in body.split("\n")) + "\n}\n"
  src = f"\n{MARK}\n{_declarations(tables, True)}{helpers}{code}"
  if DEBUG >= 4: print(src)
  if tables: lib = _TABLES.compile(renderer.compiler, src, f"\n{MARK}\n{_declarations(tables, False)}{helpers}{code}", tables, info.function_name)
  else: lib = linked[0] if (linked := _linked(renderer.compiler, src, info.function_name)) is not None else renderer.compiler.compile_cached(src)
  # (the AST renamed: a PROGRAM holding the AST itself would be substituted into itself where tinygrad swaps it in)
  return UOp(Ops.PROGRAM, src=(ast.replace(arg=replace(ast.arg, name=name)), UOp(Ops.LINEAR, src=tuple(params[g] for g in info.globals)),
                               UOp(Ops.SOURCE, arg=src), UOp(Ops.BINARY, arg=lib)), arg=info)

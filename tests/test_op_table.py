"""The op table, in the style of JAX's lax_autodiff_test / lax_vmap_test op records: one line per tinygrad op that a
transform's rule table handles, each with a tinygrad Tensor program that emits the op, its jax.numpy twin, and the
input shapes and domain. Every line runs through vmap (mapped along axis 0, and along axis 1 with the other inputs
unmapped), jvp, vjp and sparsity, against JAX on the same float64 inputs with x64 enabled.

The table cannot drift: each program is traced and must emit the op its line is named after, and the lines together
must cover every key of the three rule tables (JVP, batching, sparsity) except the commented EXCEPTIONS. Ops whose
result is an integer or a bool (comparisons, bitwise and integer division ops, THREEFRY, casts to int) are tested
inside `x * (g(x) + 100.5)`: every transform meets the op's zero derivative and the Jacobian stays structurally
nonzero.
"""
import functools, importlib, zlib
from typing import Callable, NamedTuple
import numpy as np
import pytest
import jax
import jax.numpy as jnp
from jax import lax
from jax.extend.random import threefry_2x32
from tinygrad import Tensor, Device, dtypes
from tinygrad.helpers import Context
from tinygrad.mixin.gradient import pm_gradient
from tinygrad.uop.ops import Ops

import tinyjax

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True)
def _compile_in_process():
  with Context(PARALLEL=0): yield


def _find(name: str, *modules: str):
  """`name` from the first of `modules` that has it (the library is being reorganised: a move is one more path here)."""
  for m in modules:
    try: mod = importlib.import_module(m)
    except ImportError: continue
    if hasattr(mod, name): return getattr(mod, name)
  raise ImportError(f"{name} not found in any of {modules}")

JVP_RULES = _find("JVP_RULES", "tinyjax.transforms.jvp", "tinyjax.jvp")
BATCH_RULES = _find("BATCH_RULES", "tinyjax.transforms.batching", "tinyjax.batching")
SPARSITY_RULES = _find("SPARSITY_RULES", "tinyjax.sparse.detect", "tinyjax.detect")
CUSTOM_CALL = _find("CUSTOM_CALL", "tinyjax.core", "tinyjax._tg")
GATHER = _find("GATHER", "tinyjax.core")
call_kind = _find("call_kind", "tinyjax._tg", "tinyjax.core")
# reverse mode is tinygrad's compute_gradient: its rules are pm_gradient's patterns
GRADIENT_OPS = {op for pat, _ in pm_gradient.patterns if pat.op is not None for op in pat.op}

RTOL, ATOL = 1e-10, 1e-12
B = 4   # batch size: no input dimension has this size
F64, I32 = dtypes.float64, dtypes.int32


# ---- input domains: rng, shape -> float64 array -----------------------------------------------------------------------

def normal(rng, s): return rng.standard_normal(s)
def pos(rng, s): return rng.uniform(0.5, 2.0, s)
def away(rng, s): return rng.choice([-1.0, 1.0], s) * rng.uniform(0.5, 2.0, s)        # |x| >= 0.5
def wide(rng, s): return rng.choice([-1.0, 1.0], s) * rng.uniform(1.2, 8.8, s)        # int(x) != 0
def ints(rng, s): return rng.integers(-1, 2, s).astype(np.float64)                     # exact ties and equalities


# ---- the table --------------------------------------------------------------------------------------------------------

class Line(NamedTuple):
  name: str                   # the test id
  key: Ops | str              # the rule-table key the program must emit (an Ops, or CUSTOM_CALL / GATHER)
  tg: Callable                # tinygrad program
  jx: Callable                # its jax.numpy twin
  shapes: tuple               # input shapes
  dom: tuple                  # one domain per input
  sub: Ops | None             # REDUCE: its reduction op
  struct: Callable | None     # jnp function with the structural Jacobian pattern, where jx's depends on the values
  jac: Callable               # JAX's dense Jacobian for the sparsity check
  raw: bool                   # a hand-built op (see RULES): run only the transforms whose table has a rule for it
  no: dict                    # transform -> why the line does not run it

def L(key, tg, jx, shapes, dom=normal, name=None, sub=None, struct=None, jac=jax.jacfwd, raw=False, no=None) -> Line:
  dom = dom if isinstance(dom, tuple) else (dom,) * len(shapes)
  return Line(name or (key.name if isinstance(key, Ops) else key), key, tg, jx, tuple(shapes), dom, sub, struct, jac, raw, no or {})

def zd(g_tg, g_jx=None, to_int=True):
  """(tinygrad, jnp) programs x * (g(inputs) + 100.5) for an op g with an integer or bool result (to_int: g gets the
  inputs cast to int32). 100.5 never cancels an integer, so the Jacobian is nonzero wherever the program's structure
  says so; the transforms meet g's zero derivative on the way."""
  g_jx = g_jx or g_tg
  def tg(x, *ys): return x * (g_tg(*(a.cast(I32) if to_int else a for a in (x, *ys))).cast(F64) + 100.5)
  def jx(x, *ys): return x * (g_jx(*(a.astype(jnp.int32) if to_int else a for a in (x, *ys))).astype(jnp.float64) + 100.5)
  return tg, jx

def alu(op, *xs): return Tensor(xs[0].uop.alu(op, *(x.uop for x in xs[1:])))

# raw lines: ALU ops that tinygrad's Tensor methods never emit (-x, a - b, a / b, a == b are written with MUL, ADD,
# RECIPROCAL, CMPNE; these ops appear only inside its codegen), so only hand-built UOps contain them. A table need not
# have a rule for them, but a rule it has (vmap's takes all of GroupOp.ALU) must be right: such a line runs exactly
# the transforms whose table (tinygrad's pm_gradient for vjp) has the op.
RULES = {"vmap": BATCH_RULES, "jvp": JVP_RULES, "vjp": GRADIENT_OPS, "sparsity": SPARSITY_RULES}

# THREEFRY(x, key) is threefry2x32 of the uint32 words (lo, hi) of x under the key words (lo, hi): JAX's threefry_2x32
KEY, M32 = 0x1234567890ABCDEF, 0xFFFFFFFF
def threefry_tg(x): return x.bitcast(dtypes.uint64).threefry(Tensor.full(x.shape, KEY, dtype=dtypes.uint64)) & 0xFF
def threefry_jx(x):
  b = lax.bitcast_convert_type(x, jnp.uint64).ravel()
  y = threefry_2x32(jnp.array([KEY & M32, KEY >> 32], jnp.uint32), jnp.concatenate([(b & M32).astype(jnp.uint32), (b >> 32).astype(jnp.uint32)]))
  return (y[:b.size] & 0xFF).reshape(x.shape)

@tinyjax.custom_jvp
def cjvp_tg(x): return x.sin() * 2
cjvp_tg.defjvp(lambda p, t: (cjvp_tg(p[0]), p[0].cos() * 3 * t[0]))   # not the true derivative: the rule must be used
@jax.custom_jvp
def cjvp_jx(x): return jnp.sin(x) * 2
cjvp_jx.defjvp(lambda p, t: (cjvp_jx(p[0]), jnp.cos(p[0]) * 3 * t[0]))

@tinyjax.custom_vjp
def cvjp_tg(x): return x.sin() * 2
cvjp_tg.defvjp(lambda x: (cvjp_tg(x), x.cos()), lambda r, g: (r * 3 * g,))
@jax.custom_vjp
def cvjp_jx(x): return jnp.sin(x) * 2
cvjp_jx.defvjp(lambda x: (cvjp_jx(x), jnp.cos(x)), lambda r, g: (r * 3 * g,))

# GATHER: the values of a SparseJacobian, tinyjax's gather of the compressed Jacobian (its CSR order is fixed here)
def spj_tg(x): return (x[1:] * x[:-1]).sin()
def spj_jx(x): return jnp.sin(x[1:] * x[:-1])
SPJ_ROWS, SPJ_COLS = np.repeat(np.arange(4), 2), np.repeat(np.arange(4), 2) + np.tile([0, 1], 4)
@functools.cache
def spjac(): return tinyjax.spjacobian(spj_tg, Tensor(np.ones(5)))

MASK = np.array([[True, False, True], [False, False, True]])
OTHER = f"{Device.DEFAULT}:1"

LINES = [
  # elementwise
  L(Ops.ADD, lambda x, y: x + y, jnp.add, [(2, 3), (3,)]),
  L(Ops.MUL, lambda x, y: x * y, jnp.multiply, [(2, 3), (3,)], away),
  L(Ops.SIN, lambda x: x.sin(), jnp.sin, [(2, 3)]),
  L(Ops.EXP2, lambda x: x.exp2(), jnp.exp2, [(2, 3)]),
  L(Ops.LOG2, lambda x: x.log2(), jnp.log2, [(2, 3)], pos),
  L(Ops.SQRT, lambda x: x.sqrt(), jnp.sqrt, [(2, 3)], pos),
  L(Ops.RECIPROCAL, lambda x: x.reciprocal(), jnp.reciprocal, [(2, 3)], away),
  L(Ops.MAX, lambda x, y: x.maximum(y), jnp.maximum, [(2, 3), (3,)], struct=jnp.add),
  L(Ops.MAX, lambda x, y: x.maximum(y), jnp.maximum, [(2, 3), (2, 3)], ints, name="MAX-ties", struct=jnp.add),
  L(Ops.POW, lambda x, y: x ** y, jnp.power, [(2, 3), (2, 3)], (pos, normal)),
  L(Ops.POW, lambda x: x ** 3.0, lambda x: x ** 3.0, [(2, 3)], away, name="POW-const"),
  L(Ops.WHERE, lambda x, y: (x < y).where(x, y), lambda x, y: jnp.where(x < y, x, y), [(2, 3), (2, 3)], struct=jnp.add),
  L(Ops.WHERE, lambda x, y: Tensor(MASK).where(x, y), lambda x, y: jnp.where(MASK, x, y), [(2, 3), (3,)], name="WHERE-const"),
  L(Ops.TRUNC, lambda x: x * x.trunc(), lambda x: x * jnp.trunc(x), [(2, 3)], wide),
  L(Ops.CAST, lambda x: x.cast(dtypes.float32).cast(F64) * 3, lambda x: x.astype(jnp.float32).astype(jnp.float64) * 3, [(2, 3)]),
  L(Ops.CAST, *zd(lambda a: a), [(2, 3)], wide, name="CAST-int"),
  L(Ops.BITCAST, lambda x: x * x.bitcast(dtypes.int64).cast(F64) * 2.0 ** -62,
    lambda x: x * lax.bitcast_convert_type(x, jnp.int64).astype(jnp.float64) * 2.0 ** -62, [(2, 3)], pos),
  L(Ops.THREEFRY, *zd(threefry_tg, threefry_jx, to_int=False), [(2, 3)]),
  # comparisons, integer ops: zero derivative
  L(Ops.CMPLT, *zd(lambda a, b: a < b, to_int=False), [(2, 3), (3,)]),
  L(Ops.CMPNE, *zd(lambda a, b: a != b, to_int=False), [(2, 3), (2, 3)], ints),
  L(Ops.FLOORDIV, *zd(lambda a, b: a // b), [(2, 3), (3,)], wide),
  L(Ops.FLOORMOD, *zd(lambda a, b: a % b), [(2, 3), (3,)], wide),
  L(Ops.CDIV, *zd(lambda a, b: a.div(b, rounding_mode="trunc"), lax.div), [(2, 3), (2, 3)], wide),
  L(Ops.CMOD, *zd(lambda a, b: a.fmod(b), lax.rem), [(2, 3), (2, 3)], wide),
  L(Ops.XOR, *zd(lambda a, b: a ^ b), [(2, 3), (3,)], wide),
  L(Ops.OR, *zd(lambda a, b: a | b), [(2, 3), (3,)], wide),
  L(Ops.AND, *zd(lambda a, b: a & b), [(2, 3), (3,)], wide),
  L(Ops.SHL, *zd(lambda a: a << 2), [(2, 3)], wide),
  L(Ops.SHR, *zd(lambda a: a >> 1), [(2, 3)], wide),
  # raw ALU ops (hand-built UOps)
  L(Ops.SUB, lambda x, y: alu(Ops.SUB, x, y), jnp.subtract, [(2, 3), (2, 3)], raw=True),
  L(Ops.NEG, lambda x: alu(Ops.NEG, x), jnp.negative, [(2, 3)], raw=True),
  L(Ops.FDIV, lambda x, y: alu(Ops.FDIV, x, y), jnp.divide, [(2, 3), (2, 3)], away, raw=True),
  L(Ops.CMPEQ, *zd(lambda a, b: alu(Ops.CMPEQ, a, b), jnp.equal, to_int=False), [(2, 3), (2, 3)], ints, raw=True),
  # reductions
  L(Ops.REDUCE, lambda x: x.sum((0, 2)), lambda x: jnp.sum(x, (0, 2)), [(2, 3, 2)], name="REDUCE-ADD", sub=Ops.ADD),
  L(Ops.REDUCE, lambda x: x.max(1), lambda x: jnp.max(x, 1), [(2, 3)], name="REDUCE-MAX", sub=Ops.MAX, struct=lambda x: jnp.sum(x, 1)),
  L(Ops.REDUCE, lambda x: x.prod(1), lambda x: jnp.prod(x, 1), [(2, 3)], away, name="REDUCE-MUL", sub=Ops.MUL),
  # movement
  L(Ops.RESHAPE, lambda x: x.reshape(3, 2), lambda x: x.reshape(3, 2), [(2, 3)]),
  L(Ops.EXPAND, lambda x: x.reshape(2, 1, 3).expand(2, 4, 3), lambda x: jnp.broadcast_to(x.reshape(2, 1, 3), (2, 4, 3)), [(2, 3)]),
  L(Ops.PERMUTE, lambda x: x.permute(2, 0, 1), lambda x: jnp.transpose(x, (2, 0, 1)), [(2, 3, 2)]),
  L(Ops.PAD, lambda x: x.pad(((1, 0), (0, 2))), lambda x: jnp.pad(x, ((1, 0), (0, 2))), [(2, 3)]),
  L(Ops.SHRINK, lambda x: x[1:, 1:3], lambda x: x[1:, 1:3], [(3, 4)]),
  L(Ops.FLIP, lambda x: x.flip(1), lambda x: jnp.flip(x, 1), [(2, 3)]),
  L(Ops.STACK, lambda x, y: Tensor.stack(x, y), lambda x, y: jnp.stack([x, y]), [(2, 3), (2, 3)]),
  L(Ops.STACK, lambda x: Tensor.stack(x, Tensor.full((2, 3), 2.0, dtype=F64)), lambda x: jnp.stack([x, jnp.full((2, 3), 2.0)]), [(2, 3)],
    name="STACK-const"),
  # the value is the source's
  L(Ops.CONTIGUOUS, lambda x, y: (x + y).contiguous(), jnp.add, [(2, 3), (2, 3)]),
  L(Ops.CONTIGUOUS_BACKWARD, lambda x: x.contiguous_backward(), lambda x: x, [(2, 3)]),
  L(Ops.COPY, lambda x: x.to(OTHER).to(x.device), lambda x: x, [(2, 3)]),
  L(Ops.DETACH, lambda x: x * x.detach(), lambda x: x * lax.stop_gradient(x), [(2, 3)], away),
  # call-like nodes
  L(CUSTOM_CALL, cjvp_tg, cjvp_jx, [(2, 3)], name="custom_jvp"),
  L(CUSTOM_CALL, cvjp_tg, cvjp_jx, [(2, 3)], name="custom_vjp", jac=jax.jacrev,
    no={"jvp": "JAX raises too: can't jvp a custom_vjp function"}),
  L(GATHER, lambda x: spjac()(x), lambda x: jax.jacfwd(spj_jx)(x)[SPJ_ROWS, SPJ_COLS], [(5,)]),
]

# keys of the rule tables that no line covers
EXCEPTIONS = {
  # MULACC is codegen-only: Tensor methods never emit it, and tinygrad cannot realize a hand-built one (its C renderer
  # has no code for MULACC: KeyError), so no program computes it. vmap's table has it as part of GroupOp.ALU
  Ops.MULACC: "no program can compute it",
  # collective markers (tinyjax.lax.psum, pmax, ...) exist only inside vmap(..., axis_name=...), where that vmap lowers
  # them; no standalone program has one. tests/test_vmap_api.py tests them
  Ops.CUSTOM: "collective marker",
}


# ---- helpers ----------------------------------------------------------------------------------------------------------

def inputs(line: Line, shapes=None, seed=0) -> list[np.ndarray]:
  rng = np.random.default_rng(zlib.crc32(line.name.encode()) + seed)
  return [d(rng, s) for d, s in zip(line.dom, shapes or line.shapes, strict=True)]

def rand_like(a, seed) -> np.ndarray: return np.random.default_rng(seed).standard_normal(np.shape(a))

def ref(f, *args):
  """JAX's answer f(*args), under jax.jit: one XLA compile instead of one per primitive."""
  return jax.jit(f)(*args)

def close(got, want):
  """Tensors == JAX arrays (pytrees of them), in shape, dtype and value."""
  got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
  assert len(got) == len(want), (len(got), len(want))
  Tensor.realize(*got)
  for g, w in zip(got, want, strict=True):
    g, w = g.numpy(), np.asarray(w)
    assert (g.shape, g.dtype) == (w.shape, w.dtype), ((g.shape, g.dtype), (w.shape, w.dtype))
    np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)

def traced_keys(line: Line) -> set:
  """The rule-table keys of the nodes that depend on the inputs when a transform traces the program (tinyjax.vjp only
  traces: nothing is computed), i.e. the nodes the transforms' interpreters visit; and (REDUCE, op) for reductions."""
  graph = {}
  def f(*xs):
    out = line.tg(*xs)
    graph["out"], graph["ins"] = out.uop, {x.uop for x in xs}
    return out
  tinyjax.vjp(f, *map(Tensor, inputs(line)))
  dep, keys = set(graph["ins"]), set()
  for u in graph["out"].toposort(enter_calls=False):
    if u in dep or not any(s in dep for s in u.src): continue
    dep.add(u)
    keys.add({"custom": CUSTOM_CALL, "gather": GATHER}.get(call_kind(u, False) or "", u.op))
    if u.op is Ops.REDUCE: keys.add((Ops.REDUCE, u.arg[0]))
  return keys


# ---- the transforms against JAX -----------------------------------------------------------------------------------------

def check_vmap(line: Line, axis: int):
  """axis 0: every input mapped along axis 0. axis 1: the first input mapped along axis 1, the others unmapped (a
  batched and an unbatched operand), the batch put last in the output."""
  if axis == 0: in_axes, out_axes, shapes = (0,) * len(line.shapes), 0, [(B,) + s for s in line.shapes]
  else:
    s0 = line.shapes[0]
    in_axes, out_axes, shapes = (1,) + (None,) * (len(line.shapes) - 1), -1, [s0[:1] + (B,) + s0[1:], *line.shapes[1:]]
  xs = inputs(line, shapes)
  close(tinyjax.vmap(line.tg, in_axes, out_axes)(*map(Tensor, xs)), ref(jax.vmap(line.jx, in_axes, out_axes), *xs))

def check_jvp(line: Line):
  xs = inputs(line)
  ts = [rand_like(x, i + 1) for i, x in enumerate(xs)]
  close(tinyjax.jvp(line.tg, tuple(map(Tensor, xs)), tuple(map(Tensor, ts))), ref(lambda p, t: jax.jvp(line.jx, p, t), tuple(xs), tuple(ts)))

def check_vjp(line: Line):
  xs = inputs(line)
  out, pullback = tinyjax.vjp(line.tg, *map(Tensor, xs))
  ct = rand_like(out, 7)
  def want(xs, ct):
    o, jpullback = jax.vjp(line.jx, *xs)
    return o, jpullback(ct)
  close((out, pullback(Tensor(ct))), ref(want, xs, ct))

def dense_jacobian(jac, f, xs) -> np.ndarray:
  """d flatten(f) / d (flattened, concatenated xs): JAX's dense Jacobian."""
  js = ref(jac(f, argnums=tuple(range(len(xs)))), *xs)
  return np.hstack([np.asarray(j).reshape(-1, x.size) for j, x in zip(js, xs, strict=True)])

def check_sparsity(line: Line):
  """The detected pattern contains every nonzero of JAX's dense Jacobian, and equals the structural pattern: those
  nonzeros themselves, or where the line has `struct` (value-dependent selection: max, where), the nonzeros of
  struct's Jacobian (the same dependencies, nothing selected away)."""
  xs = inputs(line)
  P = tinyjax.sparsity(lambda a: line.tg(*a), tuple(map(Tensor, xs))).toarray()
  J = dense_jacobian(line.jac, line.jx, xs) != 0
  assert P.shape == J.shape, (P.shape, J.shape)
  assert not (J & ~P).any(), f"pattern misses nonzeros at {np.argwhere(J & ~P).tolist()}"
  S = J if line.struct is None else dense_jacobian(line.jac, line.struct, xs) != 0
  assert (P == S).all(), f"pattern {np.argwhere(P).tolist()} != structural {np.argwhere(S).tolist()}"

CHECKS = {"vmap0": lambda l: check_vmap(l, 0), "vmap1": lambda l: check_vmap(l, 1), "jvp": check_jvp, "vjp": check_vjp,
          "sparsity": check_sparsity}

def runs(line: Line, transform: str) -> bool:
  t = transform.rstrip("01")
  return t not in line.no and (not line.raw or line.key in RULES[t])


# ---- tests ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,transform", [pytest.param(l, t, id=f"{l.name}-{t}") for l in LINES for t in CHECKS if runs(l, t)])
def test_op(line, transform):
  CHECKS[transform](line)

@pytest.mark.parametrize("line", [pytest.param(l, id=l.name) for l in LINES])
def test_line_emits_its_op(line):
  keys = traced_keys(line)
  assert line.key in keys, f"{line.name}: the program emits {sorted(map(str, keys))}, not {line.key}"
  if line.sub is not None: assert (Ops.REDUCE, line.sub) in keys

def test_table_covers_every_rule():
  """Every key of the three rule tables has a line (raw lines count for the ops the tables have), or is an exception."""
  emitted = set().union(*(traced_keys(l) for l in LINES))
  keys = set(JVP_RULES) | set(BATCH_RULES) | set(SPARSITY_RULES)
  missing = keys - emitted - set(EXCEPTIONS)
  assert not missing, f"ops with a rule but no line in the op table: {sorted(map(str, missing))}"
  assert {(Ops.REDUCE, r) for r in (Ops.ADD, Ops.MAX, Ops.MUL)} <= emitted
  assert not set(EXCEPTIONS) & emitted, "an exception has a line now: remove it from EXCEPTIONS"
  assert set(EXCEPTIONS) <= keys, f"stale exceptions (no table has them): {sorted(map(str, set(EXCEPTIONS) - keys))}"

"""The rule tables held against each other: every op with a JVP rule has a batching rule and a sparsity rule, every op
that vmap can meet with a float operand has a JVP rule, and every op with a JVP rule that tinygrad's gradient (reverse
mode: tinygrad's compute_gradient, no table of ours) can meet has a gradient rule there. Each gap is either a failure
or an entry, with its reason, in an explicit exception list. tests/test_op_table.py checks the rules' numbers.
"""
import importlib
import numpy as np
import jax
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
from tinygrad.mixin.gradient import pm_gradient
from tinygrad.uop.ops import Ops
import pytest

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
gather = _find("gather", "tinyjax._tg")

def names(keys) -> list[str]: return sorted(k.name if isinstance(k, Ops) else k for k in keys)

# ops whose operands are never float (bitwise and integer division ops, THREEFRY on uint64): jvp never visits them,
# since every integer or bool node has a zero tangent (jvp_rule returns None for non-float results) and so do its users
INT_OPERANDS = {Ops.XOR, Ops.OR, Ops.AND, Ops.SHL, Ops.SHR, Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD, Ops.THREEFRY}

# ops that tinygrad's Tensor methods never emit: -x, a - b, a / b and a == b are written with MUL, ADD, RECIPROCAL and
# CMPNE; NEG, SUB, FDIV, CMPEQ and MULACC appear only inside tinygrad's codegen, so only hand-built UOps contain them
NEVER_EMITTED = {Ops.NEG, Ops.SUB, Ops.FDIV, Ops.CMPEQ, Ops.MULACC}


# ---- JVP -> batching, JVP -> sparsity --------------------------------------------------------------------------------

NO_BATCH_RULE: dict = {}   # ops with a JVP rule and no batching rule: none

NO_SPARSITY_RULE = {
  # detect() interprets with inline_custom=True: a custom_jvp/custom_vjp call (a FUNCTION and its GETTUPLEs) is inlined
  # like a tinygrad @function, its body's ops get their own rules, and neither key is ever looked up
  Ops.GETTUPLE: "calls are inlined",
  CUSTOM_CALL: "calls are inlined",
}

def test_every_jvp_rule_has_a_batching_rule():
  missing = set(JVP_RULES) - set(BATCH_RULES) - set(NO_BATCH_RULE)
  assert not missing, f"ops with a JVP rule and no batching rule: {names(missing)}"

def test_every_jvp_rule_has_a_sparsity_rule():
  missing = set(JVP_RULES) - set(SPARSITY_RULES) - set(NO_SPARSITY_RULE)
  assert not missing, f"ops with a JVP rule and no sparsity rule: {names(missing)}"

def test_sparsity_inlines_calls():
  """What NO_SPARSITY_RULE relies on: a custom call's pattern is its body's."""
  f = tinyjax.custom_jvp(lambda x: x[1:] * x[:-1])
  f.defjvp(lambda p, t: (f(p[0]), t[0][1:] * p[0][:-1] + p[0][1:] * t[0][:-1]))
  def g(x): return f(x.sin()) * 2   # inside a transform, so f is a custom call node
  P = tinyjax.sparsity(g, Tensor(np.linspace(1, 2, 4))).toarray()
  np.testing.assert_array_equal(P, np.eye(3, 4, dtype=bool) | np.eye(3, 4, 1, dtype=bool))


# ---- batching -> JVP, sparsity -> JVP and batching -------------------------------------------------------------------

NO_JVP_RULE = {
  # BATCH_RULES takes all of GroupOp.ALU; jvp needs rules only for what programs contain
  **{op: "never emitted by Tensor methods" for op in (Ops.NEG, Ops.SUB, Ops.FDIV, Ops.MULACC)},
}

def test_every_batching_rule_with_float_operands_has_a_jvp_rule():
  missing = set(BATCH_RULES) - set(JVP_RULES) - INT_OPERANDS - set(NO_JVP_RULE)
  assert not missing, f"ops with a batching rule, float operands and no JVP rule: {names(missing)}"

def test_every_sparsity_rule_has_jvp_and_batching_rules():
  assert not set(SPARSITY_RULES) - set(JVP_RULES) - set(NO_JVP_RULE), names(set(SPARSITY_RULES) - set(JVP_RULES))
  assert not set(SPARSITY_RULES) - set(BATCH_RULES), names(set(SPARSITY_RULES) - set(BATCH_RULES))


# ---- JVP -> tinygrad's gradient ---------------------------------------------------------------------------------------

# compute_gradient's own cases: DETACH is never walked, GETTUPLE gathers the cotangents of a call's outputs, and
# FUNCTION/CALL nodes go to call_gradient (which needs a grad_fxn or a TUPLE body: checked on _call_nodes)
GRADIENT_OPS = {op for pat, _ in pm_gradient.patterns if pat.op is not None for op in pat.op} | {Ops.DETACH, Ops.GETTUPLE}

NO_GRADIENT_RULE = {
  **{op: "never emitted by Tensor methods" for op in NEVER_EMITTED},
  # a collective marker is wrapped in a call whose grad_fxn is its transpose before tinygrad's gradient sees it
  # (batching.differentiable); the bare CUSTOM never reaches pm_gradient
  Ops.CUSTOM: "reverse mode sees collectives as calls with a grad_fxn",
  # integer results: core.jax_conventions detaches where an integer re-enters a float computation, so tinygrad's
  # gradient never walks into them (the op table's *-vjp lines check the numbers against JAX)
  **{op: "integer results are cut off by jax_conventions" for op in (Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.CDIV,
                                                                      Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD, Ops.THREEFRY)},
}

def _call_nodes() -> dict:
  """The call nodes that reverse mode meets for the call-like keys: a custom_jvp call (traced: outside a transform the
  function just runs) and a tinyjax gather kernel."""
  f = tinyjax.custom_jvp(lambda x: x.sin())
  f.defjvp(lambda p, t: (f(p[0]), p[0].cos() * t[0]))
  seen = {}
  def g(x):
    seen["y"] = f(x)
    return seen["y"]
  tinyjax.vjp(g, Tensor(np.ones(3)))
  g_out = gather(Tensor(np.arange(4.0)), Tensor(np.array([2, 0], dtype=np.int32)))
  return {CUSTOM_CALL: [u for u in seen["y"].uop.toposort() if u.op is Ops.FUNCTION],
          GATHER: [u for u in g_out.uop.toposort() if u.op is Ops.CALL]}

def test_every_jvp_rule_has_a_gradient_rule():
  """Reverse mode meets every float op that depends on the input; integer ops only through a cast, which
  jax_conventions cuts (`x * (x.cast(int32) // 2).cast(float64)` must not reach FLOORDIV)."""
  ops = {k for k in JVP_RULES if isinstance(k, Ops)}
  missing = ops - GRADIENT_OPS - set(NO_GRADIENT_RULE)
  calls = _call_nodes()
  assert set(JVP_RULES) - ops == set(calls), "a new call-like key: add how reverse mode meets it to _call_nodes"
  missing |= {k for k, nodes in calls.items() if not nodes or any(u.arg.grad_fxn is None for u in nodes)}
  assert not missing, f"ops with a JVP rule and no gradient rule in tinygrad's reverse mode: {names(missing)}"


# ---- the exception lists are not stale --------------------------------------------------------------------------------

def test_exceptions_are_current():
  assert all(k in JVP_RULES and k not in BATCH_RULES for k in NO_BATCH_RULE), names(NO_BATCH_RULE)
  assert all(k in JVP_RULES and k not in SPARSITY_RULES for k in NO_SPARSITY_RULE), names(NO_SPARSITY_RULE)
  assert all(k not in JVP_RULES for k in NO_JVP_RULE), names(set(NO_JVP_RULE) & set(JVP_RULES))
  assert not set(NO_GRADIENT_RULE) & GRADIENT_OPS, names(set(NO_GRADIENT_RULE) & GRADIENT_OPS)

def test_never_emitted():
  """What NEVER_EMITTED claims, for the Tensor methods that would be the natural source of those ops."""
  x, y = Tensor.empty(2, 3, dtype=dtypes.float64), Tensor.empty(2, 3, dtype=dtypes.float64)
  i, j = Tensor.empty(2, 3, dtype=dtypes.int32), Tensor.empty(2, 3, dtype=dtypes.int32)
  outs = [-x, x - y, 1 - x, x / y, 2 / x, x == y, x != y, x.eq(y), x % y, x // y, x.fmod(y), x.div(y, rounding_mode="trunc"), x * y + x,
          x.minimum(y), x.abs(), x.sign(), x.clip(-1, 1), x.exp(), x.log(), x.cos(), x.tan(), x.sigmoid(), x.tanh(), x.erf(), x.rsqrt(),
          x.softmax(), x.logsumexp(), x @ y.T, x.cumsum(1), x.prod(), x.square(), x.lerp(y, 0.3), x.floor(), x.ceil(), x.round(),
          -i, i - j, i // j, i % j, i == j, i.div(j, rounding_mode="trunc"), i.fmod(j), ~i, i.abs()]
  ops = {u.op for o in outs for u in o.uop.toposort()}
  assert not ops & NEVER_EMITTED, names(ops & NEVER_EMITTED)

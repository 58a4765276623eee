"""JAX's primitives inside tinygrad's lowerings, so that derivatives match JAX's at every order.

tinygrad lowers most Tensor methods to a few UOps: sigmoid is 1 / (1 + exp2(-x log2 e)), tanh is 2 sigmoid(2x) - 1, erf
a polynomial times sign(x), elu two relus. Differentiating that graph is right in exact arithmetic but not in floating
point (tanh'' is 0 * inf = nan at x = -1000) nor at special points (erf'(0) = 0, elu'(0) = 0), and it is not JAX's
rule. `core.jax_conventions` finds each lowering in the traced graph (`recognise`: a cheap look at the node, then the
same Tensor method rebuilt on the same operands must give the very same node, UOps being hash-consed) and puts a
primitive call in its place: a custom-call FUNCTION whose body is the same lowering, so the value does not change by a
bit (tinygrad's scheduler inlines the call: no extra kernel), and whose derivative is JAX's rule, written with
primitives again, so that every order follows JAX. One row per primitive below, one recogniser per root op
(RECOGNISERS).
"""
from __future__ import annotations
import functools, math, operator
import numpy as np
from dataclasses import dataclass, field
from typing import Callable, Iterator
from tinyjax._tg import Tensor, UOp, Ops, GroupOp, DType, dtypes, broadcast_to, param_like, unfilled, const_value
from tinyjax.call_rule import CallRule, BatchedCall, is_zero
from tinyjax.dtypes import computed_dtype, weak_storage_dtype


@dataclass(frozen=True, eq=False)
class Primitive:
  name: str
  lower: Callable[..., Tensor]           # (*operands, *params) -> tinygrad's own lowering: the value
  partials: Callable[..., list[Tensor]]  # (operands, out, *params) -> d out / d operand_i: JAX's rule

def _replace_inf(v: Tensor) -> Tensor: return v.eq(math.inf).where(0.0, v)   # as JAX's logaddexp jvp
def replace_zero(v: Tensor) -> Tensor: return v.eq(0).where(1.0, v)         # as JAX's pow jvp
def _balanced(a: Tensor, b) -> Tensor:
  """d max(a, b) / da as JAX: 1/2 at ties (written with eq and a where on constants: its own derivative is zero)."""
  return (a > b).where(1.0, a.eq(b).where(0.5, 0.0))
def _elu_slope(x: Tensor, alpha) -> Tensor:
  # JAX's elu: where(x > 0, x, alpha * expm1(where(x > 0, 0, x))): the negative branch at 0, and the inner where keeps
  # exp finite where that branch is not taken (0 * inf = nan in the next derivative). `x <= 0` is not a CMPLT, so the
  # clip rewrite leaves this where alone.
  return (x > 0).where(1.0, alpha * (x <= 0).where(x, 0.0).exp())

def pow_partials(ops: list[Tensor], out: Tensor, pow: Callable = Tensor.pow) -> list[Tensor]:  # noqa: A002
  """JAX's pow rule, its x^(y - 1) computed by `pow` (the primitive's own lowering)."""
  x, y = ops
  if (c := _const_value(y)) is None: dx = y * pow(x, y - 1)   # JAX's pow: nan at x = y = 0
  elif float(c).is_integer():   # a literal integer exponent: JAX's integer_pow (x ** 0 has derivative 0)
    dx = x.zeros_like(buffer=False) if c == 0 else x.ones_like(buffer=False) if c == 1 else 2 * x if c == 2 else c * pow(x, c - 1)
  else: dx = c * pow(x, c - 1)   # c - 1 computed here: a literal again
  if (b := _const_value(x)) is None: dy = replace_zero(x).log() * out
  elif (lb := math.log(b) if b > 0 else math.nan if b < 0 else 0.0) != 0: dy = lb * out
  else: dy = (out.isinf() | out.isnan()).where(math.nan, 0.0)   # JAX's 0 * out, which tinygrad would fold to 0
  return [dx, dy]

def _const_value(t: Tensor): return const_value(t.uop)

def accurate_tanh(x: Tensor) -> Tensor:
  """tanh to about 1 ulp (Cephes, as accurate as JAX's): an odd polynomial (float32) or rational function (float64) of x for |x| < 0.625, where
  tinygrad's 2 sigmoid(2x) - 1 cancels (1.7e-4 relative error at x = 1e-4), 1 - 2 / (exp(2|x|) + 1) with x's sign beyond."""
  z = x * x
  if computed_dtype(x.dtype) == dtypes.float64:   # (a Python float: at its width, float64 with x64)
    p, q = horner(z, (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)), \
           horner(z, (1.0, 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3))
    small = x + x * (z * p / q)
  else: small = x + x * (z * horner(z, (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)))
  a = x.abs()
  return (x == 0).where(x, (a < 0.625).where(small, x.sign() * (1 - 2 / ((2 * a).exp() + 1))))   # tanh(-0.0) = -0.0

def kahan_expm1(x: Tensor) -> Tensor:
  """exp(x) - 1, accurate for small x (Kahan's (u - 1) * x / log(u), u = exp(x))."""
  u = x.exp()
  return (u == 1).where(x, (u - 1 == -1).where(-1.0, (u == math.inf).where(u, (u - 1) * x / u.log())))

# sinh and cosh as XLA computes them (its math library's Sinh and Cosh): tinygrad's (e^x - e^-x) / 2 cancels for small x
# (sinh(1e-8) 1.8e10 ulps off, sinh(0.1) 900) and overflows where e^x does
def xla_sinh(x: Tensor) -> Tensor:
  """(expm1(x) + expm1(x) / (expm1(x) + 1)) / 2 for |x| < 1, e^(x + log 1/2) - e^(log 1/2 - x) beyond."""
  e = kahan_expm1(x)
  log_half = math.log(0.5)
  return (x.abs() < 1).where((e + e / (e + 1)) / 2, (x + log_half).exp() - (log_half - x).exp())

def xla_cosh(x: Tensor) -> Tensor:
  """e^(x + log 1/2) + e^(log 1/2 - x)."""
  log_half = math.log(0.5)
  return (x + log_half).exp() + (log_half - x).exp()

def horner(z: Tensor, coefficients: tuple[float, ...]) -> Tensor:
  """The polynomial of z with these coefficients, highest degree first (XLA's EvaluatePolynomial, in its order)."""
  out = z * coefficients[0] + coefficients[1]
  for c in coefficients[2:]: out = out * z + c
  return out

def exact_abs(x: Tensor) -> Tensor:
  """|x| as XLA's abs: a float's sign bit cleared, so |-0.| is +0. (tinygrad's x * sign(x) keeps -0, and its symbolic
  rewrites fold away every arithmetic way of clearing it: 1 / abs(-0.) was -inf, JAX's +inf.)"""
  if not dtypes.is_float(x.dtype): return x.abs()
  if x.dtype in dtypes.weaks: return exact_abs(x.cast(weak_storage_dtype(x.dtype))).cast(x.dtype)   # (a Python float)
  bits = {2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[x.dtype.itemsize]
  return (x.bitcast(bits) & ((1 << (8 * x.dtype.itemsize - 1)) - 1)).bitcast(x.dtype)

SIGMOID = Primitive("sigmoid", Tensor.sigmoid, lambda ops, out: [out * (1 - out)])
ABS = Primitive("abs", exact_abs, lambda ops, out: [(ops[0] >= 0).where(1.0, -1.0)])   # JAX's: select(x >= 0, g, -g)
TANH = Primitive("tanh", Tensor.tanh, lambda ops, out: [(1 + out) * (1 - out)])
ACCURATE_TANH = Primitive("tanh", accurate_tanh, TANH.partials)   # jnp.tanh
ERF = Primitive("erf", Tensor.erf, lambda ops, out: [2 / math.sqrt(math.pi) * (-(ops[0] * ops[0])).exp()])
ASIN = Primitive("asin", Tensor.asin, lambda ops, out: [(1 - ops[0] * ops[0]).rsqrt()])
ATAN = Primitive("atan", Tensor.atan, lambda ops, out: [(1 + ops[0] * ops[0]).reciprocal()])
ASINH = Primitive("asinh", Tensor.asinh, lambda ops, out: [(ops[0] * ops[0] + 1).rsqrt()])
ACOSH = Primitive("acosh", Tensor.acosh, lambda ops, out: [(ops[0] * ops[0] - 1).rsqrt()])
ATANH = Primitive("atanh", Tensor.atanh, lambda ops, out: [(1 + ops[0]).reciprocal() * (1 - ops[0]).reciprocal()])
ELU = Primitive("elu", Tensor.elu, lambda ops, out, alpha: [_elu_slope(ops[0], alpha)])
SELU = Primitive("selu", Tensor.selu, lambda ops, out, alpha, gamma: [gamma * _elu_slope(ops[0], alpha)])
# JAX's celu: maximum(x, 0) + alpha * expm1(minimum(x, 0) / alpha), so 1/2 + 1/2 at 0 and the chain rule through minimum
CELU = Primitive("celu", Tensor.celu, lambda ops, out, alpha:
                 [_balanced(ops[0], 0) + (ops[0].minimum(0) / alpha).exp() * _balanced(-ops[0], 0)])
# relu(y) - relu(y - c): relu6 (c = 6) and hardsigmoid (y = x/6 + 1/2, c = 1); JAX's relu6 has derivative 0 at both kinks
BAND = Primitive("relu_band", lambda y, c: y.relu() - (y - c).relu(),
                 lambda ops, out, c: [((ops[0] > 0) & (ops[0] < c)).where(1.0, 0.0).cast(ops[0].dtype)])   # where: no AND derivative
LOGADDEXP = Primitive("logaddexp", Tensor.logaddexp,
                      lambda ops, out: [(_replace_inf(o) - _replace_inf(out)).exp() for o in ops])
POW = Primitive("pow", Tensor.pow, pow_partials)

# JAX's rules of primitives that tinyjax lowers itself (lax.special, lax.ops, numpy: `core.primitive_kernel(name, rule)`)
def atan2_partials(ops: list[Tensor], out: Tensor) -> list[Tensor]:
  d = ops[0] * ops[0] + ops[1] * ops[1]   # JAX's atan2(x, y): y / (x^2 + y^2) and -x / (x^2 + y^2)
  return [ops[1] / d, -ops[0] / d]
def logaddexp2_partials(ops, out): return [(_replace_inf(o) - _replace_inf(out)).exp2() for o in ops]
def acos_partials(ops, out): return [-(1 - ops[0] * ops[0]).rsqrt()]
def log1p_partials(ops, out): return [(ops[0] + 1).reciprocal()]
def expm1_partials(ops, out): return [out + 1]


# ---- recognisers: root op -> candidates (primitive, operands, params), each checked by rebuilding -----------------------

def _at(u: UOp, *path: tuple[int, Ops | None]) -> UOp | None:
  """The node reached from u by (source index, expected op) steps, or None."""
  for i, op in path:
    if i >= len(u.src) or (op is not None and u.src[i].op is not op): return None
    u = u.src[i]
  return u

def _arg(u: UOp | None):
  return u.arg if u is not None and u.op is Ops.CONST else None

Candidate = tuple[Primitive, list[UOp], tuple]

def _on_reciprocal(u: UOp) -> Iterator[Candidate]:
  if (x := _at(u, (0, Ops.ADD), (1, Ops.EXP2), (0, Ops.MUL), (0, None))) is not None: yield SIGMOID, [x], ()

def _on_add(u: UOp) -> Iterator[Candidate]:
  if (x := _at(u, (0, Ops.MUL), (1, Ops.RECIPROCAL), (0, Ops.ADD), (1, Ops.EXP2), (0, Ops.MUL), (0, Ops.MUL), (1, None))) is not None:
    yield TANH, [x], ()
  if (x := _at(u, (0, Ops.WHERE), (1, None))) is not None:   # relu(x) - ...
    if (alpha := _arg(_at(u, (1, Ops.MUL), (0, Ops.MUL), (0, Ops.CONST)))) is not None: yield ELU, [x], (alpha,)
    if (c := _arg(_at(u, (1, Ops.MUL), (0, Ops.WHERE), (1, Ops.ADD), (1, Ops.MUL), (0, Ops.CONST)))) is not None and c > 0:
      yield BAND, [x], (c,)
  if (x := _at(u, (0, Ops.MAX), (0, None))) is not None and \
     (alpha := _arg(_at(u, (1, Ops.MUL), (0, Ops.MAX), (0, Ops.MUL), (0, Ops.MUL), (0, Ops.CONST)))) is not None:
    yield CELU, [x], (alpha,)
  if (m := _at(u, (1, Ops.MAX))) is not None: yield LOGADDEXP, list(m.src), ()

def _on_mul(u: UOp) -> Iterator[Candidate]:
  if (x := _at(u, (0, Ops.WHERE), (0, Ops.CMPNE), (0, None))) is not None:   # sign(x) * ...
    yield from ((ERF, [x], ()), (ASIN, [x], ()))
    if x.op is Ops.MUL: yield ATAN, [x.src[0]], ()                           # asin(x / sqrt(1 + x * x))
  if (w := _at(u, (1, Ops.WHERE))) is not None and (gamma := _arg(_at(u, (0, Ops.CONST)))) is not None and \
     (alpha := _arg(_at(w, (2, Ops.MUL), (0, Ops.CONST)))) is not None:
    yield SELU, [w.src[1]], (alpha, gamma)
  if (x := _at(u, (0, Ops.LOG2), (0, Ops.ADD), (0, None))) is not None: yield from ((ASINH, [x], ()), (ACOSH, [x], ()))
  if (x := _at(u, (0, Ops.MUL), (0, Ops.LOG2), (0, Ops.MUL), (0, Ops.ADD), (1, None))) is not None: yield ATANH, [x], ()

def _on_where(u: UOp) -> Iterator[Candidate]:
  if _at(u, (2, Ops.WHERE)) is not None: yield ACCURATE_TANH, [u.src[1]], ()

def _on_bitcast(u: UOp) -> Iterator[Candidate]:
  if (x := _at(u, (0, Ops.AND), (0, Ops.BITCAST), (0, None))) is not None: yield ABS, [x], ()

RECOGNISERS: dict[Ops, Callable[[UOp], Iterator[Candidate]]] = {
  Ops.WHERE: _on_where, Ops.BITCAST: _on_bitcast,
  Ops.RECIPROCAL: _on_reciprocal, Ops.ADD: _on_add, Ops.MUL: _on_mul, Ops.POW: lambda u: iter([(POW, list(u.src), ())])}


def _stored(weak) -> DType:
  """The dtype tinygrad realizes a weakly typed value in (its default float or int)."""
  return dtypes.default_float if dtypes.is_float(weak) else dtypes.default_int

_lowering = False   # a primitive's body is being built: composites inside it are their ops (no nested calls)

def lowering() -> bool: return _lowering

def bind(prim: Primitive, *xs: Tensor) -> Tensor | None:
  """The call of an elementwise primitive on xs, as `recognise` puts it in place of prim's lowering: how jnp.tanh,
  arctan2, log1p... are traced (JAX binds tanh_p), so that a trace builds one node where the lowering is tens of
  tinygrad ops (~1 ms for accurate_tanh, twice: built, then rebuilt by the recogniser), and differentiates it by JAX's
  rule. None where the caller builds the lowering instead: constant operands only (the lowering folds), operands that
  are no float Tensors of one concrete dtype, or inside another primitive's body."""
  if _lowering or not all(isinstance(x, Tensor) and dtypes.is_float(x.dtype) and x.dtype not in dtypes.weaks for x in xs) \
     or len({x.dtype for x in xs}) != 1: return None
  known: dict[UOp, bool] = {}
  fixed = tuple(x.uop if _is_constant(x.uop, known) else None for x in xs)
  if all(f is not None for f in fixed): return None
  shape = tuple(np.broadcast_shapes(*[x.shape for x in xs]))
  args = [x if x.shape == shape else Tensor(broadcast_to(x.uop, shape)) for x, f in zip(xs, fixed, strict=True) if f is None]
  return Tensor(_rule(prim, (), fixed).call_node(args).gettuple(0))

def literal_op(u: UOp) -> bool:
  """u's op keeps a constant written in the program one (CONSTs, possibly broadcast, cast or combined, as -6 is 6 * -1)
  when its sources are."""
  return u.op in (Ops.CONST, Ops.RESHAPE, Ops.EXPAND, Ops.STACK, Ops.CAST) or u.op in GroupOp.ALU

def _is_constant(u: UOp, known: dict[UOp, bool]) -> bool:
  """u is a constant written in the program (as core._is_literal, which walks a whole graph; this one only as far as
  it needs)."""
  if (v := known.get(u)) is None: v = known[u] = literal_op(u) and all(_is_constant(s, known) for s in u.src)
  return v

def recognise(u: UOp, literal: Callable[[UOp], bool]) -> UOp | None:
  """A primitive call with u's value if u is the lowering of a primitive, else None. Operands for which `literal` holds
  (constants written in the program) are baked into the call; the others become its arguments."""
  if (rec := RECOGNISERS.get(u.op)) is None or not dtypes.is_float(u.dtype): return None
  for prim, operands, params in rec(u):
    fixed = tuple(o if literal(o) else None for o in operands)
    if all(f is not None for f in fixed): continue
    try: same = prim.lower(*[Tensor(o) for o in operands], *params).uop is u
    except Exception: same = False   # not this lowering (e.g. operands of a shape or dtype the method rejects)
    if not same: continue
    # a weakly typed operand (int array * 2.0 is tinygrad's weakfloat) has no width for the call's PARAM: it goes in
    # stored (the width it would be realized in) and the value comes out with u's weak dtype, as the graph expects
    args = [Tensor(broadcast_to(o, u.shape) if o.shape != u.shape else o) for o, f in zip(operands, fixed, strict=True) if f is None]
    out = _rule(prim, params, fixed).call_node([a.cast(_stored(a.dtype)) if a.dtype in dtypes.weaks else a for a in args]).gettuple(0)
    return out.cast(u.dtype) if out.dtype != u.dtype else out
  return None


# ---- the call rule of a primitive ------------------------------------------------------------------------------------
# A primitive needs no more of the CallRule protocol than jvp, vjp and batched, and no more than its operands: no
# closure conversion.

@dataclass(eq=False)
class PrimitiveRule(CallRule):
  """`prim` with `params`, and its literal operands `fixed` baked in (None: an argument of the call)."""
  prim: Primitive
  params: tuple
  fixed: tuple[UOp | None, ...]
  _bodies: dict = field(default_factory=dict, repr=False)   # PARAMs -> the lowering over them

  structural = True   # JAX's rules, written on graphs

  def __post_init__(self): self.name = self.prim.name

  def _operands(self, xs: list[Tensor]) -> list[Tensor]:
    it = iter(xs)
    return [next(it) if f is None else Tensor(f) for f in self.fixed]

  def call_node(self, xs: list[Tensor]) -> UOp:
    return self.node([self._body(tuple(x.uop for x in xs))], [x.uop for x in xs])

  def _body(self, args: tuple[UOp, ...]) -> UOp:
    """The lowering over PARAMs like the arguments: the same for every call whose PARAMs are the same (hash-consed)
    nodes, so it is built once per kind of argument (rebuilding it was a third of jax_conventions' time in an eager
    transform)."""
    params = tuple(param_like(a, i) for i, a in enumerate(args))
    if (body := self._bodies.get(params)) is None:
      global _lowering
      outer, _lowering = _lowering, True
      try: body = self._bodies[params] = self.prim.lower(*self._operands([Tensor(p) for p in params]), *self.params).uop
      finally: _lowering = outer
    return body

  def partials(self, xs: list[Tensor]) -> list[Tensor]:
    """d out / d argument, for each argument of the call (JAX's rule, on this very call's output)."""
    ps = self.prim.partials(self._operands(xs), Tensor(self.call_node(xs).gettuple(0)), *self.params)
    return [p for p, f in zip(ps, self.fixed, strict=True) if f is None]

  def jvp(self, xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]:
    terms = [t * p for t, p in zip(ts, self.partials(xs), strict=True) if not is_zero(t)]   # JAX: mul(g, jac)
    return [functools.reduce(operator.add, terms) if terms else ts[0]]

  def vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]:
    ct = Tensor(unfilled(cts[0].uop))   # one output; a constant cotangent stays a constant
    return [ct * p for p in self.partials(xs)]

  def batched(self, flags: list[int | None], size: int) -> CallRule:
    # elementwise over arguments of the output's shape: the batch is one more leading axis of all of them, so
    # unbatched arguments are broadcast along it
    if all(f is not None for f in flags): return self
    return BatchedCall(self.name, lambda xs: self.call_node([x if f is not None else x.unsqueeze(0).expand(size, *x.shape)
                                                             for x, f in zip(xs, flags, strict=True)]))

@functools.lru_cache(maxsize=4096)
def _rule(prim: Primitive, params: tuple, fixed: tuple[UOp | None, ...]) -> PrimitiveRule:
  """One rule per primitive, params and literal operands, so that calls with the same arguments are the same node."""
  return PrimitiveRule(prim, params, fixed)

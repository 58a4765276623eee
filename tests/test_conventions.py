"""Derivatives of every elementwise Tensor method with a JAX twin, at every order, against JAX (x64): the table.

Each line: the tinygrad function, its JAX twin, the points (a grid over +-1e3 restricted to the domain, plus the special
points: 0, the kinks, the domain's ends) and, where needed, a looser tolerance with the reason. Orders 1 to 3 by
reverse mode (grad of grad of grad of the summed function), forward mode (jvp of jvp of jvp along ones) and mixed
compositions (jacfwd, hessian = jacfwd(jacrev), forward over reverse, reverse over forward; two of the four per line, in
turn), each compared with the same composition in JAX. Comparison: NaN where JAX has NaN, the same infinities, else
|got - want| <= rtol |want| + atol.
Tolerances for derivatives are JAX's (rtol 1e-9) unless JAX itself is ill-conditioned there, or the derivative is made
of values tinygrad computes differently (its erf and asin are polynomial approximations, its sin loses digits on large
arguments): `value` tolerances say how far tinygrad's values are from JAX's (they are tinygrad's, and not changed).
"""
import functools
from dataclasses import dataclass
from typing import Callable
import numpy as np
import pytest
import jax, jax.numpy as jnp
from jax import lax
from tinygrad import Tensor, dtypes

import tinyjax
from tinyjax import primitives
from tinyjax._tg import custom_rule_of
from tinyjax.core import jax_conventions
from conftest import to_np, kernel_count

pytestmark = pytest.mark.usefixtures("compile_in_process")

GRID = [-1000.0, -100.0, -88.8, -44.5, -20.0, -1.0, -1e-3, 0.0, 1e-3, 1.0, 20.0, 44.5, 88.8, 100.0, 1000.0]
def grid(*extra: float, where: Callable[[float], bool] = lambda x: True) -> list[float]:
  return sorted({x for x in GRID if where(x)} | set(extra))
UNIT = [-1.0, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0]   # asin, acos, atanh: the domain and its ends

@dataclass
class Line:
  tg: Callable                 # on a Tensor
  jx: Callable                 # on a jnp array
  xs: list[float]
  rtol: float = 1e-9           # derivatives
  atol: float = 0.0
  value: tuple[float, float] = (1e-9, 0.0)   # (rtol, atol) for the values: tinygrad's own, never changed
  eager: bool = False          # JAX without jit (see gelu)

ILL = 1e-15   # JAX's own absolute error where it cancels: (1 + t)(1 - t) at t = -1, expm1(x) + 1 for x << 0 (2^-53 each)

UNARY = {
  "exp": Line(Tensor.exp, jnp.exp, GRID),
  "exp2": Line(Tensor.exp2, jnp.exp2, GRID),
  "log": Line(Tensor.log, jnp.log, grid(0.0, where=lambda x: x > 0)),
  "log2": Line(Tensor.log2, jnp.log2, grid(0.0, where=lambda x: x > 0)),
  "log10": Line(Tensor.log10, jnp.log10, grid(0.0, where=lambda x: x > 0)),
  "sqrt": Line(Tensor.sqrt, jnp.sqrt, grid(0.0, where=lambda x: x > 0)),
  "rsqrt": Line(Tensor.rsqrt, lax.rsqrt, grid(0.0, where=lambda x: x > 0)),
  "reciprocal": Line(Tensor.reciprocal, jnp.reciprocal, GRID),
  "square": Line(Tensor.square, jnp.square, GRID),
  "abs": Line(Tensor.abs, jnp.abs, GRID),
  "sign": Line(Tensor.sign, jnp.sign, GRID),
  "sin": Line(Tensor.sin, jnp.sin, grid(where=lambda x: abs(x) <= 20)),
  "cos": Line(Tensor.cos, jnp.cos, grid(where=lambda x: abs(x) <= 20)),
  "tan": Line(Tensor.tan, jnp.tan, grid(1.5, where=lambda x: abs(x) <= 20)),
  # tinygrad's float64 SIN reduces large arguments in lower precision: sin/cos values off by up to 2.4e-7 relative at
  # |x| = 1000 (tan's by 7e-7), and every derivative is again a sin/cos value (the rules are JAX's: see |x| <= 20)
  "sin_large": Line(Tensor.sin, jnp.sin, grid(where=lambda x: abs(x) > 20), rtol=1e-6, value=(1e-6, 0.0)),
  "cos_large": Line(Tensor.cos, jnp.cos, grid(where=lambda x: abs(x) > 20), rtol=1e-6, value=(1e-6, 0.0)),
  "tan_large": Line(Tensor.tan, jnp.tan, grid(where=lambda x: abs(x) > 20), rtol=2e-6, value=(1e-6, 0.0)),
  # JAX's tanh' = (1 + t)(1 - t) is 0 where t rounds to -1 (x <= -20); tinygrad's simplifier folds 1 + (2 sigmoid(2x) - 1)
  # into 2 sigmoid(2x), which keeps the true 1.7e-17 at x = -20: equal to within JAX's own absolute error
  "tanh": Line(Tensor.tanh, jnp.tanh, GRID, atol=ILL),
  "sigmoid": Line(Tensor.sigmoid, jax.nn.sigmoid, GRID),
  "relu": Line(Tensor.relu, jax.nn.relu, GRID),
  "relu6": Line(Tensor.relu6, jax.nn.relu6, grid(6.0)),
  "leaky_relu": Line(Tensor.leaky_relu, jax.nn.leaky_relu, GRID),
  "leaky_relu_0.2": Line(lambda x: x.leaky_relu(0.2), lambda x: jax.nn.leaky_relu(x, 0.2), GRID),
  # elu, celu, selu: JAX's negative branch is alpha * expm1(x), whose derivative expm1(x) + 1 cancels for x << 0
  "elu": Line(Tensor.elu, jax.nn.elu, GRID, atol=ILL),
  "elu_0.5": Line(lambda x: x.elu(0.5), lambda x: jax.nn.elu(x, 0.5), GRID, atol=ILL),
  "celu": Line(Tensor.celu, jax.nn.celu, GRID, atol=ILL),
  "celu_2": Line(lambda x: x.celu(2.0), lambda x: jax.nn.celu(x, 2.0), GRID, atol=ILL),
  # tinygrad's selu has its own constants (1.67326, 1.0507; jax.nn.selu's have more digits): JAX's definition with them
  "selu": Line(Tensor.selu, lambda x: 1.0507 * jax.nn.elu(x, 1.67326), GRID, atol=ILL),
  # 1 + tanh(z) cancels in JAX where tanh rounds to -1 (x = -20: JAX 0, tinygrad 3e-261, folded as for tanh). JAX runs
  # eagerly here: XLA's fused code under jit is not exactly 1 - tanh^2 = 0 at saturation, which gelu's derivatives
  # multiply by up to 1e14 (JAX's own jitted jacfwd at x = -1000 is -1.6e-9, its eager one and its jvp 0)
  "gelu": Line(Tensor.gelu, lambda x: jax.nn.gelu(x, approximate=True), GRID, atol=ILL, value=(1e-9, ILL), eager=True),
  # tinygrad's erf is A&S 7.1.26 (|error| < 1.5e-7): the values differ, and so does the first derivative, which
  # contains erf(x / sqrt 2); the higher ones are JAX's to 1e-9
  "gelu_erf": Line(lambda x: x.gelu("none"), lambda x: jax.nn.gelu(x, approximate=False), GRID, atol=1e-7, value=(1e-9, 1e-7)),
  "quick_gelu": Line(Tensor.quick_gelu, lambda x: x * jax.nn.sigmoid(1.702 * x), GRID),
  "silu": Line(Tensor.silu, jax.nn.silu, GRID),
  "swish": Line(Tensor.swish, jax.nn.swish, GRID),
  # softplus is log(1 + e^x) in tinygrad (JAX: log1p): its values lose what is below 1e-16 (0 at x = -100, JAX 4e-44).
  # JAX's derivative is exp(x - softplus(x)); the next one, exp(x - out) (1 - exp(x - out)), cancels at |x| = 20
  # (condition number 5e8: one ulp of out moves it by 5e-8); its third at 0, s'(1 - 2s) with s = 1/2, is 0 in JAX and
  # -6e-18 here (s an ulp off 1/2: tinygrad's log(1 + e^x) is not simplified as before floats stopped being reassociated)
  "softplus": Line(Tensor.softplus, jax.nn.softplus, GRID, rtol=1e-7, atol=1e-16, value=(1e-9, ILL)),
  "softplus_2": Line(lambda x: x.softplus(2.0), lambda x: jax.nn.softplus(2.0 * x) / 2.0, GRID, rtol=1e-7, value=(1e-9, ILL)),
  "logsigmoid": Line(Tensor.logsigmoid, jax.nn.log_sigmoid, GRID, rtol=1e-7, atol=1e-16, value=(1e-9, ILL)),
  # mish' contains tanh(softplus(x)): tinygrad's softplus values (above) show in it for x < -37
  "mish": Line(Tensor.mish, jax.nn.mish, GRID, rtol=1e-7, atol=ILL, value=(1e-9, 1e-13)),   # value: x times softplus's
  "softsign": Line(Tensor.softsign, jax.nn.soft_sign, GRID),
  "erf": Line(Tensor.erf, lax.erf, GRID, value=(1e-9, 2e-7)),   # values: A&S 7.1.26 (above); derivatives: JAX's
  "clip": Line(lambda x: x.clip(-1.0, 1.0), lambda x: jnp.clip(x, -1.0, 1.0), GRID),
  # Tensor.hardtanh is Tensor.clip: the same graph, which gets jnp.clip's 1/2 at +-1 (jax.nn.hard_tanh: 1); see "clip"
  "hardtanh": Line(Tensor.hardtanh, jax.nn.hard_tanh, grid(where=lambda x: abs(x) != 1)),
  # at x = -3 tinygrad computes the kink's y = x/6 + 1/2 as 2.8e-17 when clang fuses it into an fma (its value, not
  # a rule): whether -3 counts as the kink depends on the kernel. hardswish has kinks at -3 and 3 exactly.
  "hardsigmoid": Line(Tensor.hardsigmoid, jax.nn.hard_sigmoid, grid(3.0, -2.999)),
  "hardswish": Line(Tensor.hardswish, jax.nn.hard_swish, grid(-3.0, 3.0)),
  "maximum": Line(lambda x: x.maximum(1.0), lambda x: jnp.maximum(x, 1.0), grid(1.0)),
  "minimum": Line(lambda x: x.minimum(1.0), lambda x: jnp.minimum(x, 1.0), grid(1.0)),
  # tinygrad's asin is A&S 4.4.46 (|error| < 2e-8; acos = pi/2 - asin, atan = asin(x / sqrt(1 + x^2))): values differ,
  # derivatives are JAX's rules (they do not contain the value)
  "asin": Line(Tensor.asin, jnp.arcsin, UNIT, value=(1e-9, 5e-8)),
  "acos": Line(Tensor.acos, jnp.arccos, UNIT, value=(1e-9, 5e-8)),
  "atan": Line(Tensor.atan, jnp.arctan, GRID, value=(1e-9, 5e-8)),
  # tinygrad's (e^x -+ e^-x) / 2: their derivatives at 0, (e^x +- e^-x) / 2 through exp2's rule (ln 2 log2 e), are an
  # ulp of 1/2 off 0 (jnp.sinh and jnp.cosh are XLA's, each the other's derivative as in JAX: 0 exactly)
  "sinh": Line(Tensor.sinh, jnp.sinh, GRID, atol=1e-16),
  "cosh": Line(Tensor.cosh, jnp.cosh, GRID, atol=1e-16),
  "asinh": Line(Tensor.asinh, jnp.arcsinh, GRID),
  "acosh": Line(Tensor.acosh, jnp.arccosh, grid(1.0, where=lambda x: x >= 1)),
  "atanh": Line(Tensor.atanh, jnp.arctanh, UNIT),
  "pow_3": Line(lambda x: x ** 3, lambda x: x ** 3, GRID),
  "pow_2": Line(lambda x: x ** 2, lambda x: x ** 2, GRID),
  "pow_0": Line(lambda x: x ** 0, lambda x: x ** 0, GRID),   # a literal integer exponent: JAX's integer_pow (0 at x = 0)
  "pow_-2": Line(lambda x: x ** -2, lambda x: x ** -2, GRID),
  "pow_0.5": Line(lambda x: x ** 0.5, lambda x: x ** 0.5, grid(where=lambda x: x >= 0)),
  "pow_2.5": Line(lambda x: x ** 2.5, lambda x: x ** 2.5, GRID),
  "pow_-1.5": Line(lambda x: x ** -1.5, lambda x: x ** -1.5, grid(where=lambda x: x >= 0)),
  "rpow_2": Line(lambda x: 2.0 ** x, lambda x: 2.0 ** x, GRID),
  "rpow_0.5": Line(lambda x: 0.5 ** x, lambda x: 0.5 ** x, GRID),
  # for x < 0 (where 0 ** x = inf) JAX's derivatives are log(1) * inf = nan: tinyjax gives that at order 1, but 0 at
  # orders 2 and 3, because tinygrad folds 0 * v to 0 in the derivative of 0 * out (a difference, reported)
  "rpow_0": Line(lambda x: 0.0 ** x, lambda x: 0.0 ** x, grid(where=lambda x: 0 <= x <= 20)),
}

# the derivative compositions, written once for both libraries: L is tinyjax or jax, ones(x) a ones array like x
def _sum(f): return lambda x: f(x).sum()
def _rev(L, f, k):
  for _ in range(k): f = L.grad(_sum(f))
  return f
def _fwd(L, f, k, ones):
  for _ in range(k): f = (lambda g: lambda x: L.jvp(g, (x,), (ones(x),))[1])(f)
  return f
def compositions(L, f, ones) -> dict[str, Callable]:
  """jacfwd and hessian give matrices (their diagonals are compared)."""
  return {"value": f, **{f"grad^{k}": _rev(L, f, k) for k in (1, 2, 3)}, **{f"jvp^{k}": _fwd(L, f, k, ones) for k in (1, 2, 3)},
          "jacfwd": L.jacfwd(f), "hessian": L.hessian(_sum(f)), "jvp.grad^2": _fwd(L, _rev(L, f, 2), 1, ones),
          "grad.jvp^2": _rev(L, _fwd(L, f, 2, ones), 1)}

def run_tinyjax(comps: dict[str, Callable], *xs: np.ndarray) -> dict[str, np.ndarray]:
  got = to_np({k: c(*[Tensor(x) for x in xs]) for k, c in comps.items()})   # one schedule
  return {k: np.diagonal(v) if v.ndim == 2 else v for k, v in got.items()}

def run_jax(comps: dict[str, Callable], *xs: np.ndarray, eager: bool = False) -> dict[str, np.ndarray]:
  want = {k: np.asarray(c(*map(jnp.asarray, xs)) if eager else jax.jit(c)(*xs)) for k, c in comps.items()}
  return {k: np.diagonal(v) if v.ndim == 2 else v for k, v in want.items()}

def check(name: str, got, want, rtol: float, atol: float, xs) -> list[str]:
  g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
  with np.errstate(invalid="ignore"):
    ok = (np.isnan(g) & np.isnan(w)) | (g == w) | (np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= rtol * np.abs(w) + atol))
  return [f"{name} at {x!r}: tinyjax {a!r}, JAX {b!r}" for x, a, b, o in zip(xs, g.ravel(), w.ravel(), ok.ravel(), strict=True) if not o]

N = 20   # every line's points padded to N (repeating the first): JAX's and tinygrad's caches then serve all lines

def padded(xs: list) -> list:
  assert len(xs) <= N
  return list(xs) + [xs[0]] * (N - len(xs))

# every line at orders 1 to 3 in both modes; the mixed compositions (each ~1 s of kernels to compile) two per line, in
# turn: each of them on half of the lines (all four for the functions with two lines: elu and elu_0.5, celu, softplus, ...)
MIXED = (("jacfwd", "hessian"), ("jvp.grad^2", "grad.jvp^2"))

@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
  line = UNARY[name]
  x = np.array(padded(line.xs))
  skip = MIXED[(list(UNARY).index(name) + 1) % 2]
  def comps(L, f, ones): return {k: c for k, c in compositions(L, f, ones).items() if k not in skip}
  got = run_tinyjax(comps(tinyjax, line.tg, lambda t: t.ones_like()), x)
  want = run_jax(comps(jax, line.jx, jnp.ones_like), x, eager=line.eager)
  bad = [m for k in got for m in check(k, got[k], want[k], *(line.value if k == "value" else (line.rtol, line.atol)), x)]
  assert not bad, "\n".join(bad)


# ---- two traced operands --------------------------------------------------------------------------------------------

POW_XY = [(0.0, 0.0), (0.0, 1.0), (0.0, 2.0), (0.0, -1.0), (0.0, 0.5), (1e-3, 0.0), (0.5, 2.5), (1.0, 0.0), (2.0, 3.0),
          (20.0, -2.5), (-2.0, 2.0), (-2.0, 3.0), (-2.0, 0.0), (-1.5, 2.0), (-2.0, 0.5), (1000.0, 1000.0), (0.5, -1000.0),
          (2.0, 0.5), (100.0, -100.0)]
PAIRS = [(0.0, 0.0), (1.0, 1.0), (-1.0, 2.0), (2.0, -1.0), (1000.0, -1000.0), (-1000.0, 1000.0), (-1000.0, -1000.0),
         (20.0, 0.0), (0.0, -20.0), (1e-3, -1e-3), (88.8, 88.8), (-44.5, 44.5)]
@dataclass
class Line2:
  tg: Callable
  jx: Callable
  pts: list[tuple[float, float]]
  rtol: float = 1e-9
  atol: float = 0.0
  value: tuple[float, float] = (1e-9, 0.0)

BINARY = {
  "pow": Line2(lambda a, b: a ** b, lambda a, b: a ** b, POW_XY),
  # as softplus (a line of the table above): tinygrad's log(1 + e^x) values, JAX's ill-conditioned second derivative
  "logaddexp": Line2(Tensor.logaddexp, jnp.logaddexp, PAIRS, rtol=1e-7, atol=ILL, value=(1e-9, ILL)),
  "maximum": Line2(Tensor.maximum, jnp.maximum, PAIRS),
  "minimum": Line2(Tensor.minimum, jnp.minimum, PAIRS),
}

def binary_compositions(L, f, ones) -> dict[str, Callable]:
  """Every partial derivative of orders 1 to 3 by reverse mode, and the forward-mode ones along (1, 1)."""
  out: dict[str, Callable] = {"value": f}
  def partials(g, tag, k):
    if k == 0: return
    d = L.grad(lambda a, b: g(a, b).sum(), argnums=(0, 1))
    for i in (0, 1):
      gi = (lambda d, i: lambda a, b: d(a, b)[i])(d, i)
      out[tag + "xy"[i]] = gi
      partials(gi, tag + "xy"[i], k - 1)
  partials(f, "d/d", 3)
  g = f
  for k in (1, 2, 3):
    g = (lambda h: lambda a, b: L.jvp(h, (a, b), (ones(a), ones(b)))[1])(g)
    out[f"jvp^{k}"] = g
  return out

@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name):
  line = BINARY[name]
  pts = padded(line.pts)
  a, b = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
  got = run_tinyjax(binary_compositions(tinyjax, line.tg, lambda t: t.ones_like()), a, b)
  want = run_jax(binary_compositions(jax, line.jx, jnp.ones_like), a, b)
  bad = [m for k in got for m in check(k, got[k], want[k], *(line.value if k == "value" else (line.rtol, line.atol)), pts)]
  assert not bad, "\n".join(bad)

def test_pow_with_an_operand_that_has_no_tangent():
  # the exponent is a closed-over array, not a literal: the call's jvp gets a zero tangent for it, which must count as
  # JAX's symbolic zero (0 * log(1) * inf would make the x derivative nan at x = 0, y = -1)
  x, w = np.array([0.0, 0.0, 2.0, 0.0]), np.array([-1.0, 2.0, 0.5, 0.0])
  tw = Tensor(w)
  got = to_np((tinyjax.jvp(lambda x: x ** tw, (Tensor(x),), (Tensor(np.ones(4)),))[1],
               tinyjax.grad(lambda x: (x ** tw).sum())(Tensor(x)),
               tinyjax.jvp(tinyjax.grad(lambda x: (x ** tw).sum()), (Tensor(x),), (Tensor(np.ones(4)),))[1]))
  want = (jax.jvp(lambda x: x ** w, (x,), (np.ones(4),))[1], jax.grad(lambda x: (x ** w).sum())(x),
          jax.jvp(jax.grad(lambda x: (x ** w).sum()), (x,), (np.ones(4),))[1])
  bad = [m for i in range(3) for m in check(f"output {i}", got[i], want[i], 1e-9, 0.0, list(zip(x, w, strict=True)))]
  assert not bad, "\n".join(bad)

@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
def test_vmap_of_derivatives_of_a_binary_primitive(in_axes):
  # vmap puts the primitive call in the batched graph; an unbatched operand is broadcast along the batch first
  X, Y = np.array([[0.5, 2.0, 3.0], [1.5, 0.2, 4.0]]), np.array([[2.0, 0.5, -1.0], [1.0, 3.0, 0.5]])
  x, y = (X if in_axes[0] == 0 else X[0]), (Y if in_axes[1] == 0 else Y[0])
  def run(L, f, a, b): return L.vmap(L.grad(lambda a, b: L.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(a, b)[1].sum(), argnums=(0, 1)),
                                     in_axes=in_axes)(a, b)
  got = to_np(run(tinyjax, lambda a, b: a ** b, Tensor(x), Tensor(y)))
  want = run(jax, lambda a, b: a ** b, x, y)
  for g, w in zip(got, want, strict=True): np.testing.assert_allclose(g, w, rtol=1e-9)


# ---- jax.numpy functions that tinyjax lowers itself, traced as JAX's primitives ----------------------------------------
# jnp.tanh, arctan2, log1p... are tinyjax's own lowerings (Cephes, Kahan, Lanczos); under a trace each is one primitive
# call differentiated by JAX's rule (`primitives.bind`). Their derivatives were the lowerings' derivatives before: nan
# at 0 for log1p, expm1 and arcsinh, at the domain's ends for arccos and arccosh, at inf for arctan, and for digamma at
# every integer and half-integer (so gammaln's second derivative).
import tinyjax.numpy as tnp, tinyjax.scipy.special as tsp, jax.scipy.special as jsp   # noqa: E402

JNP_UNARY = {
  "tanh": (tnp.tanh, jnp.tanh, [0.0, -0.3, 0.7, 20.0, -1000.0]),
  "arctan": (tnp.arctan, jnp.arctan, [0.0, 0.5, -3.0, 1e10, np.inf]),
  "arcsin": (tnp.arcsin, jnp.arcsin, [0.0, 0.5, -0.9, 1.0]),
  "arccos": (tnp.arccos, jnp.arccos, [0.0, 0.3, -0.9, 1.0]),
  "arcsinh": (tnp.arcsinh, jnp.arcsinh, [0.0, 0.5, -3.0, 1e200]),
  "arccosh": (tnp.arccosh, jnp.arccosh, [1.0, 2.0, 30.0, 1e200]),
  "log1p": (tnp.log1p, jnp.log1p, [-1.0, 0.0, 1e-20, -0.5, 3.0, 1e300]),
  "expm1": (tnp.expm1, jnp.expm1, [0.0, 1e-20, -50.0, 2.0, 700.0]),
  "sinh": (tnp.sinh, jnp.sinh, [0.0, -3.0, 20.0]),
  "cosh": (tnp.cosh, jnp.cosh, [0.0, -3.0, 20.0]),
  "gammaln": (tsp.gammaln, jsp.gammaln, [0.5, 1.0, 2.0, 3.7, 1e-30, -0.5]),
  "digamma": (tsp.digamma, jsp.digamma, [0.5, 1.0, 2.0, 6.0, 3.7, -0.5, 30.0]),
  "power_2.5": (lambda x: tnp.power(x, 2.5), lambda x: jnp.power(x, 2.5), [0.0, 0.5, 2.0, -1.0, np.inf]),
  "power_-1.5": (lambda x: tnp.power(x, -1.5), lambda x: jnp.power(x, -1.5), [0.0, 0.5, 2.0, -1.0]),
  # a float base with an integer array exponent (JAX's lax.pow with an integer y: derivative 0 where y is 0)
  "power_int_array": (lambda x: tnp.power(x, np.array([0, 1, 2, 3, 0])), lambda x: jnp.power(x, np.array([0, 1, 2, 3, 0])),
                      [0.0, 0.0, 0.0, -1.0, 3.0]),
  "round": (lambda x: tnp.round(3 * x) * x, lambda x: jnp.round(3 * x) * x, [0.5, -0.5, 1 / 6, 0.0, 2.2]),
  "lax.round": (lambda x: tinyjax.lax.round(3 * x) * x, lambda x: lax.round(3 * x) * x, [0.5, -0.5, 1 / 6, 0.0, 2.2]),
}

@pytest.mark.parametrize("name", list(JNP_UNARY))
def test_jnp_functions_have_jax_derivatives(name):
  # rtol 1e-12: the values are tinyjax's lowerings (within a few ulps of XLA's; digamma's within 1e-14), and the
  # derivatives are made of them
  f_tj, f_jx, xs = JNP_UNARY[name]
  x = np.array(xs)
  def comps(L, f, ones): return {"grad": _rev(L, f, 1), "grad^2": _rev(L, f, 2), "jvp": _fwd(L, f, 1, ones)}
  got = run_tinyjax(comps(tinyjax, f_tj, tnp.ones_like), x)
  want = run_jax(comps(jax, f_jx, jnp.ones_like), x)
  bad = [m for k in got for m in check(k, got[k], want[k], 1e-12, 0.0, xs)]
  assert not bad, "\n".join(bad)

LAE = [(0.0, 0.0), (1.0, -2.0), (1000.0, -1000.0), (-np.inf, 1.0), (np.inf, 1.0), (-np.inf, -np.inf), (30.0, 30.0)]
JNP_BINARY = {   # name: (tinyjax, JAX, points, (rtol, atol))
  "arctan2": (tnp.arctan2, jnp.arctan2, [(0.0, 0.0), (0.0, 1.0), (1e-200, 1e-200), (-0.0, -1.0), (2.0, -1.0), (-3.0, 0.5),
                                         (np.inf, 1.0)], (1e-12, 0.0)),
  # the values are tinygrad's log(1 + e^x) (see "logaddexp" in BINARY): the second derivative exp(x - out)(1 - exp(x -
  # out)) is 5e-14 where JAX's out is exact and it is 0
  "power": (tnp.power, jnp.power, [(0.0, 2.5), (0.0, 0.0), (2.0, 0.5), (-2.0, 3.0), (0.5, np.inf), (2.0, -np.inf),
                                   (1.0, np.inf), (-1.0, np.inf), (3.0, 1e300)], (1e-12, 0.0)),
  "logaddexp": (tnp.logaddexp, jnp.logaddexp, LAE, (1e-7, 1e-13)),
  "logaddexp2": (tnp.logaddexp2, jnp.logaddexp2, LAE, (1e-7, 1e-13)),
}

@pytest.mark.parametrize("name", list(JNP_BINARY))
def test_jnp_binary_functions_have_jax_derivatives(name):
  f_tj, f_jx, pts, tol = JNP_BINARY[name]
  a, b = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
  def comps(L, f, ones):
    return {k: c for k, c in binary_compositions(L, f, ones).items() if k.count("x") + k.count("y") <= 2 and k != "value"}
  got = run_tinyjax(comps(tinyjax, f_tj, tnp.ones_like), a, b)
  want = run_jax(comps(jax, f_jx, jnp.ones_like), a, b)
  bad = [m for k in got for m in check(k, got[k], want[k], *tol, pts)]
  assert not bad, "\n".join(bad)

def test_a_trace_holds_the_primitive_call_not_the_lowering():
  # one call node per jnp.tanh in the traced graph (what makes an eager grad through it cheap), with the lowering's
  # values bit for bit
  x = np.linspace(-3, 3, 7)
  graphs = []
  def f(t):
    y = tnp.tanh(t)
    graphs.append(y.uop)
    return y.sum()
  g = tinyjax.grad(f)(Tensor(x))
  assert custom_rule_of(graphs[0].src[0]) is not None
  assert sum(custom_rule_of(u) is not None for u in graphs[0].toposort(enter_calls=False)) == 1
  np.testing.assert_allclose(to_np(g), 1 - np.tanh(x) ** 2, rtol=1e-13)
  np.testing.assert_array_equal(to_np(tinyjax.jit(tnp.tanh)(Tensor(x))), to_np(tnp.tanh(Tensor(x))))


def test_a_jit_defined_again_over_a_primitive_with_composites_inside():
  # arctan2's body (a primitive's) holds atan and negative_sign, composites: inside a body they are its ops. As calls of
  # their own there, a jit defined again (a port's warm run) read another graph's schedule: IndexError in tinygrad
  def f(m, rp, x):
    th = 2 * m.arctan2(-x[0] + m.sqrt(x[1] ** 2), 2 * x[1])
    return m.arctan2(x[1] - rp["l1"] * m.sin(th), x[0] - rp["l2"] * m.cos(th))
  x = np.array([0.35, 1.15])
  want = np.asarray(jax.jit(functools.partial(f, jnp))({"l1": 1.0, "l2": 0.8}, x))
  for _ in range(3):
    got = tinyjax.jit(functools.partial(f, tnp))({"l1": tnp.array(1.0), "l2": tnp.array(0.8)}, Tensor(x))
    np.testing.assert_allclose(to_np(got), want, rtol=1e-12)


# ---- float32, where the issue was seen (exp overflows at 88.7, so tanh's Hessian was nan below -44.4) ------------------

F32 = {"tanh": (Tensor.tanh, jnp.tanh), "sigmoid": (Tensor.sigmoid, jax.nn.sigmoid), "silu": (Tensor.silu, jax.nn.silu),
       "gelu": (Tensor.gelu, jax.nn.gelu), "elu": (Tensor.elu, jax.nn.elu), "softplus": (Tensor.softplus, jax.nn.softplus),
       "mish": (Tensor.mish, jax.nn.mish), "logsigmoid": (Tensor.logsigmoid, jax.nn.log_sigmoid)}

@pytest.mark.parametrize("name", list(F32))
def test_float32_no_nan_at_extreme_inputs(name):
  # float32 tolerance; atol 1e-6 covers JAX's flushed denormals and the cancellations of the float64 table (softplus's
  # log(1 + e^x) is 2e-9 off at x = -20)
  f_tg, f_jx = F32[name]
  x = np.array(GRID, dtype=np.float32)
  got = run_tinyjax({k: c for k, c in compositions(tinyjax, f_tg, lambda t: t.ones_like()).items() if "^" in k}, x)
  want = run_jax({k: c for k, c in compositions(jax, f_jx, jnp.ones_like).items() if "^" in k}, x)
  for k in got: assert got[k].dtype == np.float32
  bad = [m for k in got for m in check(k, got[k], want[k], 1e-4, 1e-6, x)]
  assert not bad, "\n".join(bad)


# ---- the rewrite changes no value and costs no kernel ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["sigmoid", "tanh", "erf", "elu_0.5", "celu_2", "selu", "softplus_2", "relu6", "hardsigmoid",
                                  "asin", "atan", "asinh", "acosh", "atanh", "pow_2.5", "rpow_2", "gelu", "mish"])
def test_rewrite_keeps_values_bit_for_bit(name):
  line = UNARY[name]
  x = Tensor(np.array(line.xs)).realize()
  y = line.tg(x)
  rewritten, = jax_conventions([y.uop])
  assert any(custom_rule_of(u) is not None for u in rewritten.toposort()), "no primitive recognised"
  np.testing.assert_array_equal(Tensor(rewritten).numpy(), y.numpy())

def test_dtype_and_value_of_the_rewritten_float32_graph():
  x = Tensor(np.array(GRID, dtype=np.float32)).realize()
  y = x.tanh().sigmoid()
  rewritten, = jax_conventions([y.uop])
  assert rewritten.dtype == dtypes.float32
  np.testing.assert_array_equal(Tensor(rewritten).numpy(), y.numpy())

ACTS = {"tanh": Tensor.tanh, "sigmoid": Tensor.sigmoid, "elu": Tensor.elu, "cube": lambda h: h ** 3}

@pytest.mark.parametrize("act", list(ACTS))
def test_first_derivatives_cost_no_extra_kernel(act, monkeypatch):
  # a two-layer network with the activation last (its cotangent is grad's CONST: tinygrad would clone it into a buffer
  # for a custom call; the rule takes the constant itself)
  a, rng = ACTS[act], np.random.default_rng(0)
  W1, W2, X = rng.standard_normal((8, 16)), rng.standard_normal((16, 4)), rng.standard_normal((5, 8))
  def counts() -> list[int]:
    w1, w2 = Tensor(W1).realize(), Tensor(W2).realize()
    def loss(x): return a(a(x @ w1) @ w2).sum()
    fns = [tinyjax.grad(loss), lambda x: tinyjax.value_and_grad(loss)(x)[1], lambda x: tinyjax.jvp(loss, (x,), (x * 0 + 1,))[1],
           tinyjax.vmap(tinyjax.grad(loss))]
    xs = [Tensor(X).realize() for _ in fns]   # own inputs: realizing one graph realizes every identical one
    return [kernel_count(lambda: fn(x).realize()) for fn, x in zip(fns, xs, strict=True)]
  with_primitives = counts()
  monkeypatch.setattr(primitives, "recognise", lambda u, literal: None)
  assert with_primitives == counts()

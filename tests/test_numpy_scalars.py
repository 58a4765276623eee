"""numpy scalars (np.float32(2), np.int64(6), np.bool_(True) ...) wherever JAX takes a Python scalar or an array:
operands of the operators on either side, arguments and keywords of jnp and lax functions, fill values, bounds, shapes,
sizes and axes, `.at[].set`, transformed functions' arguments. A numpy scalar is strongly typed in JAX (np.float32(2) *
a float16 array is float32), and with x64 off its 64-bit types are narrowed (np.float64 -> float32). Each row runs the
same function on tinyjax's and JAX's modules and compares value and dtype, with x64 off and on."""
import numpy as np
import pytest
import jax
import jax.numpy as jxn
from jax import lax as jlax
import tinyjax
import tinyjax.numpy as jnp
from tinyjax import lax as tlax
from conftest import assert_close, same_error
from jnp_table import x64_off

class M:
  """The modules a row uses: tinyjax's or JAX's, so one lambda serves both."""
  def __init__(self, np_, lax, api): self.np, self.lax, self.api = np_, lax, api
TJ, JX = M(jnp, tlax, tinyjax), M(jxn, jlax, jax)

SCALARS = {"f16": np.float16(1.5), "f32": np.float32(2.5), "f64": np.float64(0.5), "i8": np.int8(-2), "i32": np.int32(3),
           "i64": np.int64(2), "u8": np.uint8(2), "b": np.bool_(True)}
DATA = {"f16": np.array([0.5, 1.5, -2.0], np.float16), "f32": np.array([0.25, -1.0, 3.0], np.float32),
        "i32": np.array([1, -2, 3], np.int32), "u8": np.array([1, 2, 3], np.uint8), "b": np.array([True, False, True])}
F, I = DATA["f32"], DATA["i32"]

def _ops():
  import operator as op
  ops = {"add": op.add, "sub": op.sub, "mul": op.mul, "truediv": op.truediv, "pow": op.pow, "lt": op.lt, "ge": op.ge,
         "eq": op.eq, "floordiv": op.floordiv, "mod": op.mod}
  rows = []
  # every scalar type against every array dtype, on both sides of *
  for sn, s in SCALARS.items():
    for an, a in DATA.items():
      rows.append((f"mul-{an}*{sn}", lambda m, a=a, s=s: m.np.asarray(a) * s))
      rows.append((f"mul-{sn}*{an}", lambda m, a=a, s=s: s * m.np.asarray(a)))
  # every operator, both sides, with a float and an int scalar against a float and an int array
  for on, f in ops.items():
    for sn in ("f32", "i64", "f64"):
      for an in ("f16", "i32"):
        s, a = SCALARS[sn], np.abs(DATA[an]) if on == "pow" else DATA[an]
        if on == "pow" and an == "i32" and sn == "i64": s = np.int64(2)
        rows.append((f"{on}-{an}.{sn}", lambda m, a=a, s=s, f=f: f(m.np.asarray(a), s)))
        rows.append((f"{on}-{sn}.{an}", lambda m, a=a, s=s, f=f: f(s, m.np.asarray(a))))
  rows.append(("and-b.b", lambda m: m.np.asarray(DATA["b"]) & np.bool_(False)))
  rows.append(("or-b.b", lambda m: np.bool_(True) | m.np.asarray(DATA["b"])))
  rows.append(("xor-i32.i64", lambda m: m.np.asarray(I) ^ np.int64(5)))
  return rows

f32, f64, i32, i64, f16, u8, b_ = np.float32, np.float64, np.int32, np.int64, np.float16, np.uint8, np.bool_

FUNCS = [
  # the crashes of issue 29
  ("nan_to_num-nan=-inf", lambda m: m.np.nan_to_num(m.np.array([np.nan, 1.0]), nan=-m.np.inf)),
  ("nan_to_num-all", lambda m: m.np.nan_to_num(m.np.array([np.nan, np.inf, -np.inf, 1.0], m.np.float16), nan=f32(3), posinf=f64(7),
                                               neginf=i64(-9))),
  ("nan_to_num-scan", lambda m: m.lax.scan(lambda c, x: (c + m.np.nan_to_num(x, nan=-m.np.inf), x), m.np.zeros(()),
                                           m.np.array([np.nan, 1.0]))),
  ("arange-i64", lambda m: m.np.arange(i64(6))),
  ("arange-i32.i64.u8", lambda m: m.np.arange(i32(1), i64(9), u8(2))),
  ("arange-f32", lambda m: m.np.arange(f32(3))),
  ("arange-u8", lambda m: m.np.arange(u8(4))),
  ("arange-f16.i64", lambda m: m.np.arange(f16(0.5), i64(3))),
  ("arange-dtype", lambda m: m.np.arange(i64(4), dtype=m.np.float32)),
  # shapes and sizes
  ("zeros-i64", lambda m: m.np.zeros(i64(3))),
  ("ones-tuple", lambda m: m.np.ones((i32(2), i64(3)), m.np.int32)),
  ("empty-u8", lambda m: m.np.empty((u8(2),))),
  ("full-shape", lambda m: m.np.full(i64(3), 1.5)),
  ("full-f16", lambda m: m.np.full((2,), f16(1.5))),
  ("full-f64", lambda m: m.np.full((2, i64(2)), f64(0.25))),
  ("full-u8", lambda m: m.np.full((2,), u8(7))),
  ("full-b", lambda m: m.np.full((2,), b_(True))),
  ("full-i64", lambda m: m.np.full((2,), i64(-7))),
  ("full-dtype", lambda m: m.np.full((2,), f64(2.5), m.np.float16)),
  ("full_like-f32", lambda m: m.np.full_like(m.np.asarray(DATA["f16"]), f32(2.5))),
  ("full_like-u8", lambda m: m.np.full_like(m.np.asarray(I), u8(3))),
  ("zeros_like-shape", lambda m: m.np.zeros_like(m.np.asarray(F), shape=(i64(2),))),
  ("linspace", lambda m: m.np.linspace(f32(0), i64(1), i64(5))),
  ("linspace-f16", lambda m: m.np.linspace(f16(0), f16(1), i32(3))),
  ("linspace-f64", lambda m: m.np.linspace(f64(-1), 1.0, 4)),
  ("logspace", lambda m: m.np.logspace(f32(0), i64(2), i64(3))),
  ("eye", lambda m: m.np.eye(i64(3), i32(4), i64(1))),
  ("identity", lambda m: m.np.identity(u8(2))),
  ("tri", lambda m: m.np.tri(i64(3), k=i32(-1))),
  ("reshape", lambda m: m.np.reshape(m.np.arange(6.0), (i64(2), -1))),
  ("reshape-int", lambda m: m.np.reshape(m.np.arange(6.0), i64(6))),
  ("method-reshape", lambda m: m.np.arange(6.0).reshape(i64(3), i32(2))),
  ("method-reshape-tuple", lambda m: m.np.arange(6.0).reshape((i64(3), i32(2)))),
  ("broadcast_to", lambda m: m.np.broadcast_to(m.np.asarray(F), (i64(2), i64(3)))),
  ("repeat", lambda m: m.np.repeat(m.np.asarray(F), i64(2))),
  ("repeat-axis", lambda m: m.np.repeat(m.np.ones((2, 2)), i32(3), axis=i64(1))),
  ("tile", lambda m: m.np.tile(m.np.asarray(F), i64(2))),
  ("tile-tuple", lambda m: m.np.tile(m.np.asarray(F), (i64(2), u8(1)))),
  ("expand_dims", lambda m: m.np.expand_dims(m.np.asarray(F), i64(0))),
  ("roll", lambda m: m.np.roll(m.np.asarray(F), i64(1))),
  ("pad", lambda m: m.np.pad(m.np.asarray(F), i64(1))),
  ("pad-value", lambda m: m.np.pad(m.np.asarray(DATA["f16"]), (i64(1), i32(2)), constant_values=f32(9))),
  ("triu", lambda m: m.np.triu(m.np.ones((3, 3)), k=i64(1))),
  ("split", lambda m: m.np.split(m.np.arange(6.0), i64(3))),
  ("squeeze", lambda m: m.np.squeeze(m.np.ones((1, 3)), axis=i64(0))),
  ("moveaxis", lambda m: m.np.moveaxis(m.np.ones((1, 3)), i64(0), i32(1))),
  ("concatenate", lambda m: m.np.concatenate([m.np.ones((2, 1)), m.np.zeros((2, 2))], axis=i64(1))),
  ("stack", lambda m: m.np.stack([m.np.asarray(F), m.np.asarray(F)], axis=i64(1))),
  ("take", lambda m: m.np.take(m.np.asarray(F), i64(1))),
  ("index", lambda m: m.np.asarray(F)[i64(2)]),
  ("index-u8", lambda m: m.np.asarray(F)[u8(1)]),
  ("index-slice", lambda m: m.np.asarray(F)[i64(1):i32(3)]),
  # axes
  ("sum-axis", lambda m: m.np.sum(m.np.ones((2, 3)), axis=i64(0))),
  ("mean-axis", lambda m: m.np.mean(m.np.ones((2, 3)), axis=i32(-1))),
  ("argmax-axis", lambda m: m.np.argmax(m.np.asarray(F), axis=i64(0))),
  ("cumsum-axis", lambda m: m.np.cumsum(m.np.ones((2, 3)), axis=i64(1))),
  ("method-sum-axis", lambda m: m.np.ones((2, 3)).sum(axis=i64(1))),
  # values: jnp functions of numpy scalars and arrays
  ("asarray-f16", lambda m: m.np.asarray(f16(1.5))),
  ("asarray-u8", lambda m: m.np.asarray(u8(3))),
  ("asarray-f64", lambda m: m.np.asarray(f64(0.1))),
  ("asarray-i64", lambda m: m.np.array(i64(7))),
  ("asarray-b", lambda m: m.np.array(b_(True))),
  ("asarray-dtype", lambda m: m.np.asarray(f64(1.25), m.np.float16)),
  ("sin-f16", lambda m: m.np.sin(f16(1.0))),
  ("sin-f64", lambda m: m.np.sin(f64(1.0))),
  ("sqrt-i8", lambda m: m.np.sqrt(np.int8(4))),
  ("exp-u8", lambda m: m.np.exp(u8(1))),
  ("abs-i64", lambda m: m.np.abs(i64(-3))),
  ("add-f16.f32", lambda m: m.np.add(m.np.asarray(DATA["f16"]), f32(1))),
  ("add-f32.f16arr", lambda m: m.np.add(f32(1), m.np.asarray(DATA["f16"]))),
  ("add-scalars", lambda m: m.np.add(f16(1), u8(2))),
  ("multiply-i64.f16", lambda m: m.np.multiply(i64(3), m.np.asarray(DATA["f16"]))),
  ("subtract-u8.i32", lambda m: m.np.subtract(m.np.asarray(DATA["u8"]), i32(1))),
  ("true_divide", lambda m: m.np.true_divide(m.np.asarray(I), i64(2))),
  ("power-f16.i64", lambda m: m.np.power(m.np.asarray(DATA["f16"]), i64(2))),
  ("power-f32.f16", lambda m: m.np.power(f32(2), m.np.asarray(DATA["f16"]))),
  ("power-i32.i64", lambda m: m.np.power(m.np.asarray(np.abs(I)), i64(3))),
  ("power-scalars", lambda m: m.np.power(f32(2), i64(3))),
  ("maximum-f32", lambda m: m.np.maximum(m.np.asarray(DATA["f16"]), f32(0))),
  ("minimum-i64", lambda m: m.np.minimum(m.np.asarray(I), i64(0))),
  ("where-f32.f16", lambda m: m.np.where(m.np.asarray(DATA["b"]), f32(1), m.np.asarray(DATA["f16"]))),
  ("where-f16.i64", lambda m: m.np.where(m.np.asarray(DATA["b"]), m.np.asarray(DATA["f16"]), i64(-1))),
  ("where-cond", lambda m: m.np.where(b_(True), m.np.asarray(F), 0.0)),
  ("where-scalars", lambda m: m.np.where(m.np.asarray(DATA["b"]), u8(1), i32(2))),
  ("clip-f32", lambda m: m.np.clip(m.np.asarray(DATA["f16"]), f32(-1), f32(1))),
  ("clip-i64", lambda m: m.np.clip(m.np.asarray(I), i64(0), 2)),
  ("clip-f64.i32", lambda m: m.np.clip(m.np.asarray(I), f64(-0.5), f64(1.5))),
  ("isclose", lambda m: m.np.isclose(m.np.asarray(F), f32(0.25))),
  ("round-decimals", lambda m: m.np.round(m.np.asarray(F) * 1.234, i64(1))),
  ("heaviside", lambda m: m.np.heaviside(m.np.asarray(F), f32(0.5))),
  ("arctan2", lambda m: m.np.arctan2(f16(1), m.np.asarray(DATA["f16"]))),
  ("dot-scalar", lambda m: m.np.dot(m.np.asarray(F), f32(2))),
  ("at-set-f32", lambda m: m.np.asarray(DATA["f16"]).at[0].set(f32(5))),
  ("at-set-i64", lambda m: m.np.asarray(I).at[1].set(i64(9))),
  ("at-add-f64", lambda m: m.np.asarray(F).at[i64(2)].add(f64(0.5))),
  ("at-mul-u8", lambda m: m.np.asarray(DATA["u8"]).at[0].multiply(u8(3))),
  ("at-max", lambda m: m.np.asarray(F).at[:2].max(f32(0))),
  ("astype-scalar", lambda m: m.np.asarray(F).astype(m.np.float16) + f16(1)),
  ("float32-call", lambda m: m.np.float32(f64(0.1))),
  ("int32-call", lambda m: m.np.int32(i64(7))),
  # lax
  ("lax-add", lambda m: m.lax.add(m.np.asarray(F), f32(1))),
  ("lax-mul-f16", lambda m: m.lax.mul(f16(2), m.np.asarray(DATA["f16"]))),
  ("lax-max-i32", lambda m: m.lax.max(m.np.asarray(I), i32(0))),
  ("lax-sin", lambda m: m.lax.sin(f32(1))),
  ("lax-fori", lambda m: m.lax.fori_loop(i64(0), i64(3), lambda i, c: c + f32(1), m.np.zeros((), m.np.float32))),
  ("lax-scan-carry", lambda m: m.lax.scan(lambda c, x: (c * f32(2), c + x), f32(1), m.np.asarray(F))),
  ("lax-cond", lambda m: m.lax.cond(b_(True), lambda x: x * i32(2), lambda x: x, m.np.asarray(I))),
  # transforms of functions of and with numpy scalars
  ("jit-arg", lambda m: m.api.jit(lambda x, y: x * y)(f32(2), m.np.asarray(DATA["f16"]))),
  ("jit-closure", lambda m: m.api.jit(lambda x: x * f32(2) + i64(1))(m.np.asarray(DATA["f16"]))),
  ("grad-closure", lambda m: m.api.grad(lambda x: (x * f32(2)) ** i64(2))(f32(1.5))),
  ("grad-arg", lambda m: m.api.grad(lambda x: m.np.sin(x) * 2)(f64(0.5))),
  ("vmap-closure", lambda m: m.api.vmap(lambda x: m.np.where(x > f32(0), x, f16(0)))(m.np.asarray(DATA["f16"]))),
  # an int array * a Python float is weakly typed (tinygrad's weakfloat); arguments outside argnums pass as they are
  ("jacfwd-issue29", lambda m: m.api.jacfwd(lambda p, L: m.np.sin(m.np.outer(p, m.np.pi * (2.0 ** m.np.arange(L)))).reshape(-1))(
    m.np.ones(3), 10)),
  ("jacrev-weak", lambda m: m.api.jacrev(lambda p, L: p * (2.0 ** m.np.arange(L)), argnums=0)(m.np.ones(3), 3)),
  ("grad-weak", lambda m: m.api.grad(lambda s, p, L: (s * p ** (m.np.arange(L) * 0.5)).sum(), argnums=1)(i64(2), m.np.ones(3) * 2, 3)),
  ("jvp-weak", lambda m: m.api.jvp(lambda p: p ** (1.5 * m.np.arange(3)), (m.np.ones(3) * 2,), (m.np.ones(3),))),
  ("hessian-weak", lambda m: m.api.hessian(lambda p, L: (p ** (m.np.arange(L) + 1.0)).sum())(m.np.ones(3) * 2, 3)),
  ("jacfwd-nan_to_num", lambda m: m.api.jacfwd(lambda x: m.np.nan_to_num(x * 2, nan=-m.np.inf) * f32(3))(m.np.asarray(F))),
]

ROWS = _ops() + FUNCS

@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_numpy_scalar(row, x64):
  _, fn = row
  def check():
    want = fn(JX)
    # to the last bit for float64; within an ulp or two of the narrower floats (their kernels round as JAX's may not)
    dt = np.result_type(*(np.asarray(w).dtype for w in jax.tree_util.tree_leaves(want)))
    rtol, atol = {np.dtype(np.float16): (2e-3, 1e-3), np.dtype(np.float32): (3e-7, 1e-7)}.get(dt, (1e-9, 1e-11))
    assert_close(fn(TJ), want, rtol, atol)
  if x64: check()
  else:
    with x64_off(): check()

# bad input: JAX's error type and message
ERRORS = [
  ("power-negative-int", lambda m: m.np.power(m.np.asarray(I), np.int64(-1))),
  ("reshape-float", lambda m: m.np.reshape(m.np.arange(6.0), (np.float32(2), 3))),
  ("zeros-float", lambda m: m.np.zeros((np.float64(2),))),
  ("round-float-decimals", lambda m: m.np.round(m.np.asarray(F), np.float32(1))),
  ("index-float", lambda m: m.np.asarray(F)[np.float32(1)]),
]

@pytest.mark.parametrize("row", ERRORS, ids=[r[0] for r in ERRORS])
def test_numpy_scalar_errors(row):
  _, fn = row
  same_error(lambda: fn(TJ), lambda: fn(JX))

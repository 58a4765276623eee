"""Sine, cosine and the exponential as software expansions (for renderers without them: the CPU's C), as accurate as JAX's.

tinygrad expands SIN and EXP2 into arithmetic (`transcendental.xsin`, `xexp2`): a Cody-Waite reduction of the sine
below |x| = 30, a Payne-Hanek one above; the cosine is sin(pi/2 - x), the exponential exp2(x log2 e). Where that was
wrong for JAX's numbers:
- its Payne-Hanek reduction multiplies only 32 bits of the argument's mantissa: right for float32, for float64 it was
  off by ~|x| 2^-32 (sin(1e5 + 0.3) 1.2e-5 away, sin(1e15) any value). float64 here: tinygrad's Cody-Waite reduction
  (SLEEF's, to |x| < 1e9 here: within 2 ulp of numpy there) and above it a Payne-Hanek reduction
  modulo pi of the whole mantissa, in 32-bit limbs (`_payne_hanek_pi`);
- pi/2 - x rounds away up to half an ulp of x: cos(x) of float32 at 1e4 was off by up to 5e-4, at 1e8 any value. A
  SIN of pi/2 - x (how tinygrad's Tensor.cos writes it, the only way to write a cosine in its graphs) is expanded here
  as the cosine of x (`xcos`, SLEEF's reduction about the odd multiples of pi/2);
- x log2 e rounds too: an error of ~|x log2 e| ulps in the exponent (float32 exp(80) 32 ulps off, float64 exp(700)
  219). An EXP2 of x * k log2 e (k a power of two) is expanded as exp(k x) with the product kept exact (`xexp`);
- (its Cody-Waite reduction summed its small terms first: the C renderers' parentheses, fixed in patches.py.)
sin(pi/2 - x) or exp2(x * log2 e) written by a user are computed as cos(x) and exp(x) too: more exactly than JAX's
sine of the rounded difference and power of the rounded product (the same numbers but for arguments past ~1e3 in
float32, ~1e10 in float64, and a few ulps of exp2 of large products).
Patched in for tinygrad's code generation (patches.py) and used by plain C's kernels (plain_c.py).
"""
from __future__ import annotations
import decimal, math
from fractions import Fraction
import numpy as np
from tinygrad.dtype import DType, dtypes
from tinygrad.uop.ops import Ops, UOp
from tinygrad.codegen.decomp import transcendental as _t

# ---- 1/pi in 64-bit words ---------------------------------------------------------------------------------------------
_PAD = 64       # zero bits before 1/pi's first: a window starting before it (an argument below 2^53) reads zeros
_WORDS = 20     # 1216 bits of 1/pi after the padding: the window of the largest float64 (2^1023) ends at its 1162nd

def _inverse_pi_bits(n: int) -> int:
  """floor(2^n / pi): 1/pi's first n bits after the binary point (Machin's formula in integers, 64 guard bits)."""
  prec = n + 64
  def atan_inv(k: int) -> int:   # atan(1/k) * 2^prec
    total, term, i = 0, (1 << prec) // k, 0
    while term:
      total += term // (2 * i + 1) if i % 2 == 0 else -(term // (2 * i + 1))
      term //= k * k
      i += 1
    return total
  return (1 << (n + prec)) // (16 * atan_inv(5) - 4 * atan_inv(239))

_BITS = _inverse_pi_bits(_WORDS * 64 - _PAD)
INV_PI_WORDS = [(_BITS >> (64 * (_WORDS - 1 - j))) & (2**64 - 1) for j in range(_WORDS)]
# fdlibm's table of 2/pi (ipio2: 24 bits a word) begins A2F983 6E4E44 1529FC 2757D1: 1/pi is it shifted by one bit
assert INV_PI_WORDS[0] == 0 and INV_PI_WORDS[1] >> 32 == 0xA2F9836E4E441529FC2757D1 >> 65, "1/pi's bits"

def _word(i: UOp, offset: int) -> UOp:
  """INV_PI_WORDS[i + offset] for i in [0, _WORDS - 4] (a chain of selects: a kernel holds no table)."""
  out = UOp.const(INV_PI_WORDS[offset], dtypes.uint64)
  for j in range(1, _WORDS - 3): out = i.eq(j).where(UOp.const(INV_PI_WORDS[j + offset], dtypes.uint64), out)
  return out

def _payne_hanek_pi(x: UOp, half: bool = False) -> tuple[UOp, UOp]:
  """x (float64, x >= TRIG_RANGE, finite) = q pi + r with |r| <= pi/2 (half: x + pi/2, exactly): (r, q's parity as int32).
  x = m 2^e (m the 53-bit mantissa); x/pi mod 2 is m times the 192 bits of 1/pi from bit e on (the bits before e add
  even integers): the product's top bit is q's parity, the next 127 its fraction f (half: plus 1/2), rounded to the
  nearest integer (f >= 1/2: f - 1, exactly, in the limbs), then r = f pi in float64."""
  bits = x.bitcast(dtypes.uint64)
  m = (bits & (2**52 - 1)) | 2**52
  s = (((bits >> 52) & 2047).cast(dtypes.int64) - 1075 + _PAD - 1)   # the window's first bit in the padded table
  s = (s < 0).where(0, (s > 64 * (_WORDS - 3) - 1).where(64 * (_WORDS - 3) - 1, s)).cast(dtypes.uint64)   # (a small x: unused)
  i, b = s >> 6, s & 63
  w = [_word(i, k) for k in range(4)]
  # the window, 3 words: each word shifted left by b with the next word's top bits (>> 1 >> (63 - b): no shift by 64)
  a = [(w[k] << b) | ((w[k + 1] >> 1) >> (63 - b)) for k in range(3)]
  lo32 = 2**32 - 1
  limbs = [a[0] >> 32, a[0] & lo32, a[1] >> 32, a[1] & lo32, a[2] >> 32, a[2] & lo32]   # w0 (most significant) .. w5
  mh, ml = m >> 32, m & lo32
  # the product's 32-bit limbs P0 (least significant) .. P5, carried; mh * w0 is a multiple of 2^192: dropped
  terms: list[list[UOp]] = [[] for _ in range(6)]
  for k, wk in enumerate(limbs):
    for part, at in ((ml, 5 - k), (mh, 6 - k)):
      if at > 5: continue
      p = part * wk
      terms[at].append(p & lo32)
      if at + 1 <= 5: terms[at + 1].append(p >> 32)
  P, carry = [], UOp.const(0, dtypes.uint64)
  for t in range(6):
    total = carry
    for u in terms[t]: total = total + u
    P.append(total & lo32)
    carry = total >> 32
  odd, top = P[5] >> 31, P[5] & (2**31 - 1)
  if half: odd, top = odd ^ ((top + 2**30) >> 31), (top + 2**30) & (2**31 - 1)
  odd = odd.cast(dtypes.int32)
  frac = [top, P[4], P[3], P[2]]   # f = these 127 bits / 2^127
  upper = (frac[0] >> 30).ne(0)   # f >= 1/2: r = (f - 1) pi, 1 - f the limbs' two's complement
  neg, c = [], UOp.const(1, dtypes.uint64)
  for limb, mask in zip(frac[::-1], (lo32, lo32, lo32, 2**31 - 1), strict=True):
    v = (limb ^ mask) + c
    neg.append(v & mask)
    c = v >> 32
  mag = [upper.where(n, f) for n, f in zip(neg[::-1], frac, strict=True)]
  f = mag[3].cast(dtypes.float64) * 2.0**-127 + mag[2].cast(dtypes.float64) * 2.0**-95
  f = f + mag[1].cast(dtypes.float64) * 2.0**-63
  f = f + mag[0].cast(dtypes.float64) * 2.0**-31
  r = f * math.pi
  return upper.where(-r, r), upper.where(odd ^ 1, odd)

_NP: dict[DType, type[np.floating]] = {dtypes.float64: np.float64, dtypes.float32: np.float32, dtypes.float16: np.float16}
# the float64 Cody-Waite reduction's range here: SLEEF's is 1e14 (TRIGRANGEMAX), but near a multiple of pi/2 its error
# (~1e-28 absolute at 1e12) is thousands of ulps of the result past ~1e10 (sin(1.9e13) 2865 ulps, cos 4045): the
# Payne-Hanek reduction takes over at 1e9, within 1 ulp at the closest doubles to k pi/2 of every binade
TRIG_RANGE = 1e9
TRIG_RANGE32 = 30.0 # tinygrad's switch from its float32 Cody-Waite reduction to its Payne-Hanek one
_M_1_PI = 0.318309886183790671537767526745028724
# SLEEF's parts of pi for its Cody-Waite reductions without a fused multiply-add: each times a quotient is exact.
# float32: tinygrad's were three of the parts for a fused multiply-add (PI_A2f.., which sum to pi) and this set's last
# (PI_Df): pi + 1.2e-10, so every reduction was 1.2e-10 q off (float32 sin(x) near k pi: 1e7 ulps, a wrong sign)
_PI_PARTS = {dtypes.float64: (3.1415926218032836914, 3.1786509424591713469e-08, 1.2246467864107188502e-16, 1.2736634327021899816e-24),
             dtypes.float32: (3.140625, 0.0009670257568359375, 6.2771141529083251953e-07, 1.2154201256553420762e-10)}

def _cody_waite32(x: UOp, odd: bool = False) -> tuple[UOp, UOp]:
  """x (float32, 0 <= x < TRIG_RANGE32) = q pi + r, |r| <= pi/2 (odd: q pi/2 + r, q odd): (r, q as int32)."""
  q = _t.rintk(x * _M_1_PI - 0.5) * 2 + 1 if odd else _t.rintk(x * _M_1_PI)
  qf = q.cast(x.dtype)
  r = x
  for part in _PI_PARTS[dtypes.float32]: r = qf * -(part / 2 if odd else part) + r
  return r, q

def _payne_hanek_pi32(x: UOp, half: bool = False) -> tuple[UOp, UOp]:
  """x (float32, TRIG_RANGE32 <= x, finite) = q pi + r, |r| <= pi/2 (half: x + pi/2): (r, q's parity as int32).
  x = m 2^(E - 150) (m the 24-bit mantissa); P = m times 96 bits of 1/pi (from bit E - 87 of the padded table), shifted
  down 32, is x 2/pi mod 4 with 62 bits of fraction: its top bit is q's parity, the next 63 the fraction f of x/pi,
  rounded to the nearest integer in the integers (f >= 1/2: f - 1) before r = f pi is a float. (tinygrad's reduction
  subtracted pi/2 from a rounded r, losing r near its zeros: float32 sin(x) near k pi up to 1e7 ulps off.)"""
  bits = x.bitcast(dtypes.uint32).cast(dtypes.uint64)
  m = (bits & (2**23 - 1)) | 2**23
  e = ((bits >> 23) & 255).cast(dtypes.int64) - 87   # the window's first bit in the padded table (E >= 131: 44..167)
  s = (e < 0).where(0, e).cast(dtypes.uint64)          # (a smaller x: unused)
  i, b = s >> 6, s & 63
  w = [i.eq(1).where(UOp.const(INV_PI_WORDS[1 + k], dtypes.uint64), i.eq(2).where(UOp.const(INV_PI_WORDS[2 + k], dtypes.uint64),
       UOp.const(INV_PI_WORDS[k], dtypes.uint64))) for k in range(3)]
  a0 = (w[0] << b) | ((w[1] >> 1) >> (63 - b))
  a1 = (w[1] << b) | ((w[2] >> 1) >> (63 - b))
  lo32 = 2**32 - 1
  p = ((m * (a1 >> 32)) >> 32) + m * (a0 & lo32) + ((m * (a0 >> 32)) << 32)   # (mod 2^64)
  if half: p = p + 2**62
  upper = ((p >> 62) & 1).ne(0)
  signed = upper.where((p | 2**63).bitcast(dtypes.int64), (p & (2**63 - 1)).bitcast(dtypes.int64))   # f - 1 or f, times 2^63
  q = ((p >> 63) ^ upper.cast(dtypes.uint64)).cast(dtypes.int32)
  return signed.cast(x.dtype) * float(np.float32(math.pi * 2.0**-63)), q

def _xsin32(d: UOp) -> UOp:
  """The sine of a float32: tinygrad's polynomial after the reductions above."""
  x_abs, sign = _masked(d)
  r, q = _cody_waite32(x_abs)
  r_big, q_big = _payne_hanek_pi32(x_abs)
  small = x_abs < TRIG_RANGE32
  return _nan_where_not_finite(d, _t.sin_poly_small(small.where(r, r_big), small.where(q, q_big)) * sign)

def _cody_waite_odd(x: UOp) -> tuple[UOp, UOp]:
  """x (>= 0) = q pi/2 + r, q odd, |r| <= pi/2: (r, q as an int). SLEEF's xcos reduction (tinygrad's Cody-Waite for
  the sine, about an odd multiple of pi/2: where cos x is 0, r is 0, and keeps its relative precision)."""
  if x.dtype is not dtypes.float64: return _cody_waite32(x, odd=True)
  a, b, c, d = (p / 2 for p in _PI_PARTS[x.dtype])
  dqh = (x * (_M_1_PI / 2**23) - 0.5 * (_M_1_PI / 2**23)).cast(dtypes.int64).cast(x.dtype)
  q = _t.rintk(x * _M_1_PI - 0.5 - dqh * 2.0**23) * 2 + 1
  qf, dqh = q.cast(x.dtype), dqh * 2.0**24
  r = dqh * -a + x
  r = qf * -a + r
  r = dqh * -b + r
  r = qf * -b + r
  r = dqh * -c + r
  r = qf * -c + r
  return (dqh + qf) * -d + r, q

def _masked(d: UOp) -> tuple[UOp, UOp]:
  """(|x| with inf and nan as 0, its sign: -1, 0 or 1), as tinygrad's xsin begins."""
  x = _t._lazy_map_numbers(d, d.const_like(0.0), d.const_like(0.0), d.const_like(0.0), d)
  sign = x.ne(0).where((x < 0).where(x.const_like(-1), x.const_like(1)), x.const_like(0))
  return x * sign, sign

def _nan_where_not_finite(d: UOp, result: UOp) -> UOp:
  return _t._lazy_map_numbers(d, d.const_like(math.nan), d.const_like(math.nan), d.const_like(math.nan), result)

def _xsin64(d: UOp, path: str | None = None) -> UOp:
  """tinygrad's sine of a double (its Cody-Waite reduction, its polynomial) with a Payne-Hanek reduction of the whole
  mantissa past TRIG_RANGE (path "small" or "big": that reduction's value alone, for a function that branches)."""
  x_abs, sign = _masked(d)
  r, q = _t.cody_waite_reduction(x_abs)
  r_big, q_big = _payne_hanek_pi(x_abs)
  small = x_abs < TRIG_RANGE
  if path is not None: r, q = (r, q) if path == "small" else (r_big, q_big)
  else: r, q = small.where(r, r_big), small.where(q, q_big)
  return _nan_where_not_finite(d, _t.sin_poly_small(r, q) * sign)

def xcos(x: UOp, path: str | None = None) -> UOp:
  """cos x = sin(x + pi/2): x reduced about the odd multiples of pi/2 (`_cody_waite_odd`), past its range with tinygrad's
  (float32) or tinyjax's (float64) Payne-Hanek reduction a quadrant on (path: as _xsin64's, float64)."""
  if x.dtype is dtypes.float16: return xcos(x.cast(dtypes.float32)).cast(dtypes.float16)   # (as XLA: at float32)
  x_abs, _ = _masked(x)
  r, q = _cody_waite_odd(x_abs)
  small = _t.sin_poly(r) * (q & 2).ne(0).where(r.const_like(1), r.const_like(-1))
  if x.dtype is dtypes.float64:
    if path == "small": return _nan_where_not_finite(x, small)
    r_big, odd = _payne_hanek_pi(x_abs, half=True)
    if path == "big": return _nan_where_not_finite(x, _t.sin_poly_small(r_big, odd))
    result = (x_abs < TRIG_RANGE).where(small, _t.sin_poly_small(r_big, odd))
  else:
    r_big, odd = _payne_hanek_pi32(x_abs, half=True)
    result = (x_abs < TRIG_RANGE32).where(small, _t.sin_poly_small(r_big, odd))
  return _nan_where_not_finite(x, result)

def _negated(u: UOp) -> UOp | None:
  """x where u is -x: a negation, or a product with a negative constant (tinygrad's symbolic folds -(a*k) into a*-k;
  a*k is then -(a*-k) exactly)."""
  if u.op is Ops.NEG: return u.src[0]
  if u.op is Ops.MUL:
    for a, k in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
      if k.op is Ops.CONST and isinstance(k.arg, (int, float)) and k.arg < 0: return a if k.arg == -1 else a * k.const_like(-k.arg)
  return None

def cosine_of(d: UOp) -> UOp | None:
  """x where d is pi/2 - x (pi/2 at d's width; a weakly typed one's, a Python float's, folded on the host), else None."""
  if d.dtype not in _PI_PARTS and d.dtype not in (dtypes.float16, dtypes.weakfloat): return None
  half_pi = (math.pi / 2, float(_NP[d.dtype](math.pi / 2)) if d.dtype in _NP else math.pi / 2)
  def is_half_pi(c: UOp) -> bool: return c.op is Ops.CONST and isinstance(c.arg, float) and c.arg in half_pi
  if d.op is Ops.SUB and is_half_pi(d.src[0]): return d.src[1]
  if d.op is Ops.ADD:
    for c, y in ((d.src[0], d.src[1]), (d.src[1], d.src[0])):
      if is_half_pi(c) and (x := _negated(y)) is not None: return x
  return None

# ---- the exponential ----------------------------------------------------------------------------------------------------
# tinygrad's exp(x) is exp2(x * log2 e): the product's rounding is an error of ~|x log2 e| ulps in the exponent (float32
# exp(80) 32 ulps off, float64 exp(700) 219). An EXP2 of x * k log2 e (k = 1 or another power of two: exp(-x), exp(x/2),
# as tinygrad's symbolic folds their factor in) is expanded here as exp(k x): k x (exact) times log2 e in three parts
# with x in two halves, each partial product exact, q the nearest integer to the leading one and the rest added to
# its fraction; then tinygrad's polynomial and scaling (xexp2's).
_LOG2E = Fraction("1.44269504088896340735992468100189213742664595415298593413544940693110921918118507988552662289350634449699")

def _log2e_parts(bits: int, dt: DType) -> tuple[float, float, float]:
  def leading(v: Fraction) -> Fraction:   # v's first `bits` significant bits
    e = math.floor(math.log2(abs(v)))
    return Fraction(math.floor(v / Fraction(2) ** (e - bits + 1)), 1) * Fraction(2) ** (e - bits + 1)
  l1 = leading(_LOG2E)
  l2 = leading(_LOG2E - l1)
  return float(l1), float(l2), float(np.array(float(_LOG2E - l1 - l2), dtype=_NP[dt]))

# (mantissa bits the split clears from x, log2 e's parts): x's halves times the parts' bits fit in the mantissa
_EXP_SPLIT = {dtypes.float64: (27, _log2e_parts(26, dtypes.float64)), dtypes.float32: (12, _log2e_parts(12, dtypes.float32))}
_EXP2_POLY = {dtypes.float64: [0.4434359082926529454e-9, 0.7073164598085707425e-8, 0.1017819260921760451e-6, 0.1321543872511327615e-5,
                               0.1525273353517584730e-4, 0.1540353045101147808e-3, 0.1333355814670499073e-2, 0.9618129107597600536e-2,
                               0.5550410866482046596e-1, 0.2402265069591012214e+0, 0.6931471805599452862e+0, 0.1000000000000000000e+1],
              dtypes.float32: [0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1, 0.2402264476e+0, 0.6931471825e+0, 1.0]}

def exponent_of(d: UOp) -> UOp | None:
  """x where d is x * k log2 e (k a power of two, at d's width: then d's exp2 is exp(k x)), else None."""
  if (d.dtype not in _EXP_SPLIT and d.dtype is not dtypes.weakfloat) or d.op is not Ops.MUL: return None
  for y, c in ((d.src[0], d.src[1]), (d.src[1], d.src[0])):
    if c.op is not Ops.CONST or not isinstance(c.arg, float) or c.arg == 0 or not math.isfinite(c.arg): continue
    k = 2.0 ** round(math.log2(abs(c.arg) / float(_LOG2E))) * (1 if c.arg > 0 else -1)
    if c.arg in (k * float(_LOG2E), float(_NP.get(d.dtype, np.float64)(k * float(_LOG2E)))): return y if k == 1 else y * y.const_like(k)
  return None

def xexp(x: UOp, d: UOp) -> UOp:
  """e^x (d: x log2 e as tinygrad computed it, for inf, nan and the range's ends)."""
  dt = x.dtype
  xm = _t._lazy_map_numbers(x, x.const_like(0.0), x.const_like(0.0), x.const_like(0.0), x)
  cleared, (l1, l2, l3) = _EXP_SPLIT[dt]
  ui = dtypes.uint64 if dt is dtypes.float64 else dtypes.uint32
  hi = (xm.bitcast(ui) & ((1 << (dt.itemsize * 8)) - (1 << cleared))).bitcast(dt)
  lo = xm - hi
  t_hi = hi * l1
  t_lo = ((xm * l3 + lo * l2) + lo * l1) + hi * l2
  q = _t.rintk(t_hi)
  s = (t_hi - q.cast(dt)) + t_lo
  u = _t.ldexp2k(_t.polyN(s, _EXP2_POLY[dt]), q)
  upper, lower = (1025, -2000) if dt is dtypes.float64 else (129, -150)
  u = (d >= upper).where(d.const_like(math.inf), u)
  u = (d < lower).where(d.const_like(0.0), u)
  return d.ne(d).where(d.const_like(math.nan), u)

_TINYGRADS_XEXP2 = _t.xexp2   # (patches.py puts xexp2 below in its place)

def xexp2(d: UOp) -> UOp:
  """tinygrad's xexp2, an exponential (x * log2 e) to 1 ulp (see above)."""
  return xexp(x, d) if (x := exponent_of(d)) is not None else _TINYGRADS_XEXP2(d)

def call_form(u: UOp) -> tuple[str, UOp, int] | None:
  """A SIN that is a cosine or an EXP2 that is an exponential: (its name, its argument x, the levels between x and u)."""
  if u.op is Ops.SIN and (x := cosine_of(u.src[0])) is not None: return "cos", x, 2
  if u.op is Ops.EXP2 and (x := exponent_of(u.src[0])) is not None: return "exp", x, 1
  return None

EXPANSIONS = {"cos": lambda x: xcos(x), "exp": lambda x: xexp(x, x * float(_LOG2E))}
# a float64 sine's or cosine's two reductions apart ((kind or "sin") -> path -> expansion): a C function branches on
# |x| < TRIG_RANGE where a kernel's select computes both (the Payne-Hanek one is ~2/3 of the arithmetic)
PATHS = {"sin": lambda x, path: _xsin64(x, path), "cos": lambda x, path: xcos(x, path)}

_TINYGRADS_XSIN = _t.xsin   # (patches.py puts xsin below in its place)

def xsin(d: UOp, fast: bool = False, switch_over: float = 30.0) -> UOp:
  """tinygrad's xsin, right over the whole range (see the module's docstring)."""
  if (x := cosine_of(d)) is not None: return xcos(x)
  if d.dtype is dtypes.float64 and not fast: return _xsin64(d)
  if d.dtype is dtypes.float32 and not fast: return _xsin32(d)
  if d.dtype is dtypes.float16 and not fast: return _xsin32(d.cast(dtypes.float32)).cast(dtypes.float16)
  return _TINYGRADS_XSIN(d, fast, switch_over)

# ---- the power function ---------------------------------------------------------------------------------------------------
# tinygrad's pow(x, y) is exp2(y log2 x): log2 x and the product round, an error of ~|y log2 x| ulps (float64 up to 1210
# ulps from JAX's, float32 141), and its special cases are not C's (pow(max, 1) was inf, pow(1, nan) nan, pow(-0, -1)
# +inf). Here SLEEF's xpow (and xpowf): log |x| as a double-double (a float-float for float32), times y in it, and its
# exponential from that (SLEEF's logk/expk, without fused multiply-adds: products split by masking the mantissa, so no
# rounding of the compiler's can undo them), then C99's special cases as SLEEF writes them.
_UPPER = {dtypes.float64: (dtypes.uint64, 0xFFFFFFFFF8000000), dtypes.float32: (dtypes.uint32, 0xFFFFF000)}
DD = tuple[UOp, UOp]
_NP_UINT = {dtypes.float64: np.uint64, dtypes.float32: np.uint32}

def _upper(x: UOp) -> UOp:
  ui, mask = _UPPER[x.dtype]
  if x.op is Ops.CONST:   # (on the host: tinygrad's folding of a constant's bitcast can take it at another width)
    v = np.array(x.arg, _NP[x.dtype])
    return x.const_like(float((v.view(_NP_UINT[x.dtype]) & mask).view(_NP[x.dtype])))
  return (x.bitcast(ui) & mask).bitcast(x.dtype)

def _add2_ss(x: UOp, y: UOp) -> DD:
  s = x + y
  v = s - x
  return s, (x - (s - v)) + (y - v)

def _add2_ds(x: DD, y: UOp) -> DD:
  s = x[0] + y
  v = s - x[0]
  return s, ((x[0] - (s - v)) + (y - v)) + x[1]

def _add_dd(x: DD, y: DD) -> DD:   # |x| >= |y|
  s = x[0] + y[0]
  return s, (((x[0] - s) + y[0]) + x[1]) + y[1]

def _add2_dd(x: DD, y: DD) -> DD:
  s = x[0] + y[0]
  v = s - x[0]
  return s, ((x[0] - (s - v)) + (y[0] - v)) + (x[1] + y[1])

def _add_sd(x: UOp, y: DD) -> DD:   # |x| >= |y|
  s = x + y[0]
  return s, ((x - s) + y[0]) + y[1]

def _mul_ds(x: DD, y: UOp) -> DD:
  xh, yh = _upper(x[0]), _upper(y)
  xl, yl = x[0] - xh, y - yh
  s = x[0] * y
  return s, ((((xh * yh - s) + xl * yh) + xh * yl) + xl * yl) + x[1] * y

def _mul_dd(x: DD, y: DD) -> DD:
  xh, yh = _upper(x[0]), _upper(y[0])
  xl, yl = x[0] - xh, y[0] - yh
  s = x[0] * y[0]
  return s, (((((xh * yh - s) + xl * yh) + xh * yl) + xl * yl) + x[0] * y[1]) + x[1] * y[0]

def _squ(x: DD) -> DD:
  xh = _upper(x[0])
  xl = x[0] - xh
  s = x[0] * x[0]
  return s, (((xh * xh - s) + (xh + xh) * xl) + xl * xl) + x[0] * (x[1] + x[1])

def _div_dd(n: DD, d: DD) -> DD:
  t = d[0].reciprocal()
  dh, th, nh = _upper(d[0]), _upper(t), _upper(n[0])
  dl, tl, nl = d[0] - dh, t - th, n[0] - nh
  s = n[0] * t
  u = ((((nh * th - s) + nh * tl) + nl * th) + nl * tl) + s * ((((1 - dh * th) - dh * tl) - dl * th) - dl * tl)
  return s, t * (n[1] - s * d[1]) + u

def _const2(hi: float, lo: float, like: UOp) -> DD: return like.const_like(hi), like.const_like(lo)

_LOG_POLY = {dtypes.float64: [0.116255524079935043668677, 0.103239680901072952701192, 0.117754809412463995466069, 0.13332981086846273921509,
                              0.153846227114512262845736, 0.181818180850050775676507, 0.222222222230083560345903, 0.285714285714249172087875,
                              0.400000000000000077715612],
             dtypes.float32: [0.240320354700088500976562, 0.285112679004669189453125, 0.400007992982864379882812]}
_LN2 = {dtypes.float64: (0.693147180559945286226764, 2.319046813846299558417771e-17),
        dtypes.float32: (0.69314718246459960938, -1.904654323148236017e-09)}
_TWO_THIRDS = {dtypes.float64: (0.666666666666666629659233, 3.80554962542412056336616e-17),
               dtypes.float32: (0.66666662693023681640625, 3.69183861259614332084311e-09)}

def _logk(d: UOp) -> DD:
  """log d (d > 0, finite) as a double-double: SLEEF's logk/logkf (a constant's on the host, to 40 digits)."""
  if d.op is Ops.CONST:
    v = float(d.arg)
    if not (v > 0 and math.isfinite(v)): return d.const_like(math.nan), d.const_like(0.0)   # (the special cases decide)
    with decimal.localcontext() as ctx:
      ctx.prec = 40
      exact = decimal.Decimal(v).ln()
      hi = float(_NP[d.dtype](float(exact)))
      return d.const_like(hi), d.const_like(float(_NP[d.dtype](float(exact - decimal.Decimal(hi)))))
  tiny = d < float(np.finfo(_NP[d.dtype]).tiny)
  d = tiny.where(d * 2.0**64, d)
  e = _t.ilogb2k(d * (1.0 / 0.75))
  m = _t.ldexp3k(d, (-e).cast(d.dtype))
  e = tiny.where(e - 64, e).cast(d.dtype)
  x = _div_dd(_add2_ss(d.const_like(-1.0), m), _add2_ss(d.const_like(1.0), m))
  x2 = _squ(x)
  t = _t.polyN(x2[0], _LOG_POLY[d.dtype])
  s = _mul_ds(_const2(*_LN2[d.dtype], d), e)
  s = _add_dd(s, (x[0] * 2, x[1] * 2))
  c = _const2(*_TWO_THIRDS[d.dtype], d)
  if d.dtype is dtypes.float32: return _add_dd(s, _mul_dd(_mul_dd(x2, x), _add2_dd(_mul_ds(x2, t), c)))
  x = _mul_dd(x2, x)
  s = _add_dd(s, _mul_dd(x, c))
  return _add_dd(s, _mul_ds(_mul_dd(x2, x), t))

_EXPK = {dtypes.float64: (.69314718055966295651160180568695068359375, .28235290563031577122588448175013436025525412068e-12,
                          [2.51069683420950419527139e-08, 2.76286166770270649116855e-07, 2.75572496725023574143864e-06,
                           2.48014973989819794114153e-05, 0.000198412698809069797676111, 0.0013888888939977128960529,
                           0.00833333333332371417601081, 0.0416666666665409524128449, 0.166666666666666740681535, 0.500000000000000999200722]),
         dtypes.float32: (0.693145751953125, 1.428606765330187045e-06,
                          [0.00136324646882712841033936, 0.00836596917361021041870117, 0.0416710823774337768554688,
                           0.166665524244308471679688, 0.499999850988388061523438])}

def _expk(d: DD) -> UOp:
  """e^d of a double-double d (|d| below the overflow bound): SLEEF's expk/expkf."""
  l2u, l2l, poly = _EXPK[d[0].dtype]
  q = _t.rintk((d[0] + d[1]) * float(_LOG2E))
  qf = q.cast(d[0].dtype)
  s = _add2_ds(d, qf * -l2u)
  s = _add2_ds(s, qf * -l2l)
  hi = s[0] + s[1]
  s = (hi, (s[0] - hi) + s[1])   # normalised
  u = _t.polyN(s[0], poly)
  if d[0].dtype is dtypes.float64:
    t = _add_sd(s[0].const_like(1.0), s)
    t = _add_dd(t, _mul_ds(_squ(s), u))
  else:
    t = _add_dd(s, _mul_ds(_squ(s), u))
    t = _add_sd(s[0].const_like(1.0), t)
  return _t.ldexp2k(t[0] + t[1], q)

def xpow(base: UOp, exponent: UOp) -> UOp:
  """base ** exponent to ~1 ulp with C99's special cases (SLEEF's xpow; see above). float16 at float32."""
  # (a weakly typed operand at the other's width; float16 and two weak ones at float32, as tinygrad's expansions)
  dt = next((u.dtype for u in (base, exponent) if u.dtype in _UPPER), dtypes.float32)
  if base.dtype is not dt or exponent.dtype is not dt: return xpow(base.cast(dt), exponent.cast(dt)).cast(base.dtype)
  x, y = base, exponent
  exact = 2.0 ** (dtypes.finfo(dt)[1] + 1)   # |y| from here on is an even integer
  ints = dtypes.int64 if dt is dtypes.float64 else dtypes.int32
  yi = (y.abs() < exact).where(y, y.const_like(0.0)).cast(ints)
  yisint = (y.abs() >= exact) | yi.cast(dt).eq(y)
  yisodd = yisint & (y.abs() < exact) & (yi & 1).ne(0)
  ax = (x < 0).where(-x, x).simplify()   # (a constant base's logarithm is taken on the host)
  d = _mul_ds(_logk(ax), y)
  top, bottom = (709.79, -1000.0) if dt is dtypes.float64 else (88.73, -104.0)
  result = _expk(d)
  result = ((d[0] > top) | result.ne(result)).where(result.const_like(math.inf), result)
  result = (d[0] < bottom).where(result.const_like(0.0), result)
  result = (x > 0).where(result, yisint.where(yisodd.where(-result, result), result.const_like(math.nan)))
  efx = ax - 1
  efx = (y < 0).where(-efx, efx)
  at_inf = (efx < 0).where(y.const_like(0.0), efx.eq(0).where(y.const_like(1.0), y.const_like(math.inf)))
  result = y.abs().eq(math.inf).where(at_inf, result)
  # x = +-0 or +-inf: 0 or inf (by the signs of y and of x == 0), the sign of x where y is an odd integer
  magnitude = ((y < 0) ^ x.eq(0)).where(y.const_like(0.0), y.const_like(math.inf))
  negative = (x < 0) | (x.eq(0) & (x.reciprocal() < 0))   # (-0.0 too)
  signed = (yisodd & negative).where(-magnitude, magnitude)
  result = (ax.eq(math.inf) | x.eq(0)).where(signed, result)
  result = (x.ne(x) | y.ne(y)).where(result.const_like(math.nan), result)
  return (y.eq(0) | x.eq(1)).where(result.const_like(1.0), result)

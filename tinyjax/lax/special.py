"""The special-function kernels the array library shares, on float Tensors (jax/_src/lax/special.py, lax.log1p and
lax.expm1, and the logsumexp and softmax that jax.nn and jax.scipy.special share): `scipy.special`, `nn`, `random`,
`tinyjax.numpy` and `lax` call them with Tensors of a float dtype and axes already checked (non-negative ints), and do
the promotion and argument checks of their own APIs themselves.

Every kernel is Tensor ops (and custom_jvp where JAX's derivative is not the one of the formula), so every transform
applies. The approximations are XLA's where a JAX program's numbers depend on them (erf_inv: jax.random.normal); Boost's
where XLA's cancel to the zeros of lgamma (1, 2) and digamma (1.4616), which JAX's values miss by up to 1e9 ulps."""
from __future__ import annotations
import math
from typing import Callable
from tinyjax._tg import Tensor, dtypes
from tinyjax.core import composite, fill_like, primitive_kernel
from tinyjax import primitives as P
from tinyjax.dtypes import computed_dtype
from tinyjax.custom import custom_jvp, structural

__all__ = ["log1p", "expm1", "erfc", "cbrt", "atan", "atan2", "asin", "acos", "asinh", "acosh", "negative_sign",
           "erf_inv", "lgamma", "digamma", "logsumexp", "softmax", "log_softmax"]

# ---- log1p, expm1 -----------------------------------------------------------------------------------------------------

@primitive_kernel("log1p", P.log1p_partials)
def log1p(x: Tensor) -> Tensor:
  """log(1 + x), exact to rounding for small x, where log(1 + x) loses the digits: log(u) * x / (u - 1), u = 1 + x;
  log(u) itself where u is 1 + x exactly (one rounding, as XLA's log(1 + x) for large x) and at inf."""
  u = x + 1
  return (u == 1).where(x, ((u - 1 == x) | (u == math.inf)).where(u.log(), u.log() * x / (u - 1)))

@primitive_kernel("expm1", P.expm1_partials)
def expm1(x: Tensor) -> Tensor:
  """exp(x) - 1 as XLA's CPU emitter computes it: tanh(x/2) (e^x + 1) for |x| <= 1/2, e^x - 1 beyond, x where x/2 is 0
  (Kahan's (u - 1) x / log u, u = e^x, overflowed in the product: inf from x = 84.3 (float32) / 703.2 (float64) on)."""
  u, half = x.exp(), x * 0.5
  return (half == 0).where(x, (x.abs() > 0.5).where(u - 1, P.accurate_tanh(half) * (u + 1)))

@primitive_kernel("erfc", lambda ops, out: [-2 / math.sqrt(math.pi) * (-(ops[0] * ops[0])).exp()])   # (JAX's rule)
def erfc(x: Tensor) -> Tensor:
  """1 - erf(x) as XLA computes it: Cephes' rational approximations for float64, Eigen's for float32 (relative
  precision in the tails); tinygrad's 1 - erf otherwise (half)."""
  if _wide(x): return (x.abs() > 1).where(_erfc64(x), 1 - _erf64(x))
  if x.dtype in (dtypes.float32, dtypes.weakfloat): return (x.abs() > 1).where(_erfc32_large(x), _erfc32_small(x))
  return 1 - x.erf()

def erf(x: Tensor) -> Tensor:
  """erf as XLA computes it: Cephes' x T(x^2) / U(x^2) for |x| < 1 and 1 - erfc beyond for float64, Eigen's rational
  interpolant for float32 (JAX's bit for bit where the kernel's polynomials contract to FMAs); tinygrad's otherwise (2e-7
  absolute: it was float32's and float64's too, 1e-5 off relatively in float64 near 0.5)."""
  if _wide(x): return (x.abs() < 1).where(_erf64(x), 1 - _erfc64(x))
  return _erf32(x) if x.dtype in (dtypes.float32, dtypes.weakfloat) else x.erf()

# Cephes' coefficients as XLA's ErfImpl64 and ErfcImpl64 (xla/hlo/builder/lib/math.cc), highest degree first
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3, 7.00332514112805075473e3, 5.55923013010394962768e4)
_ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3, 2.26290000613890934246e4, 4.92673942608635921086e4)
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0, 4.86371970985681366614e1, 1.96520832956077098242e2,
           5.26445194995477358631e2, 9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2, 9.75708501743205489753e2,
           1.82390916687909736289e3, 2.24633760818710981792e3, 1.65666309194161350182e3, 5.57535340817727675546e2)
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0, 6.16021097993053585195e0, 7.40974269950448939160e0,
           2.97886665372100240670e0)
_ERFC_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1, 1.70814450747565897222e1,
           9.60896809063285878198e0, 3.36907645100081516050e0)

# float32: Eigen's erf interpolant (XLA's CPU erf), XLA's ErfcLargeImpl32 / ErfcSmallImpl32
_ERF32_ALPHA = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861, 0.18520832239976145, 1.128379143519084)
_ERF32_BETA = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885, 0.014070470171167667, 0.11098505178285362,
               0.49746925110067538, 1.0)
_ERFC32_GAMMA = (1.0208116471767425537109375e-01, 4.2920666933059692382812500e-01, 3.2379078865051269531250000e-01,
                 5.3971976041793823242187500e-02)
_ERFC32_DELTA = (1.7251677811145782470703125e-02, 3.9137163758277893066406250e-01, 1.0, 6.2173241376876831054687500e-01,
                 9.5662862062454223632812500e-02)
_ERFC32_SMALL = (5.61802298761904239654541015625e-04, -4.91381669417023658752441406250e-03, 2.67075151205062866210937500000e-02,
                 -1.12800106406211853027343750000e-01, 3.76122951507568359375000000000e-01, -1.12837910652160644531250000000e+00)

def _erf32(x: Tensor) -> Tensor:
  x2 = x * x
  return (x.abs() >= 3.832506856900711).where(x.sign(), x * P.horner(x2, _ERF32_ALPHA) / P.horner(x2, _ERF32_BETA))

def _erfc32_large(x: Tensor) -> Tensor:
  x2 = x * x
  q2 = 1 / x2
  r = P.horner(q2, _ERFC32_GAMMA) / (x.abs().minimum(10.06) * P.horner(q2, _ERFC32_DELTA))
  e = (-x2).exp() * r
  return (x < 0).where(2 - e, e)

def _erfc32_small(x: Tensor) -> Tensor: return x * P.horner(x * x, _ERFC32_SMALL) + 1

def _erf64(x: Tensor) -> Tensor:
  z = x * x
  return x * P.horner(z, _ERF_T) / P.horner(z, _ERF_U)

def _erfc64(x: Tensor) -> Tensor:
  z, a = -x * x, x.abs()
  y = (a < 8).where(z.exp() * P.horner(a, _ERFC_P) / P.horner(a, _ERFC_Q), z.exp() * P.horner(a, _ERFC_R) / P.horner(a, _ERFC_S))
  y = (z < -7.09782712893383996843e2).where(0.0, y)
  return (x < 0).where(2 - y, y)

def _max_finite(x: Tensor) -> float:
  """The largest finite value of x's dtype (of its width for a Python float)."""
  e, m = dtypes.finfo(computed_dtype(x.dtype))
  return (2 - 2.0 ** -m) * 2.0 ** (2 ** (e - 1) - 1)

@primitive_kernel("cbrt", lambda ops, out: [(out * out).reciprocal() * (1 / 3)])   # JAX's: g / 3 * ans^-2
def cbrt(x: Tensor) -> Tensor:
  """The real cube root within an ulp: pow's |x|^(1/3), then a Newton step y - (y - a / y^2) / 3 (pow alone, x.sign()
  * |x|^(1/3), was up to 51 / 438 ulps off and cbrt(-0.) +0.); |x| scaled by 2^(-+3k) out of the denormals and away from
  overflow and the root by 2^(+-k); x itself at 0, inf and nan. float16 at float32."""
  return _at_float32(_cbrt, x)

def _at_float32(fn: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
  """fn(x), computed at float32 for a 16-bit float (XLA's DoWithUpcastToF32)."""
  return fn(x) if computed_dtype(x.dtype) in (dtypes.float32, dtypes.float64) else fn(x.cast(dtypes.float32)).cast(x.dtype)

def _cbrt(x: Tensor) -> Tensor:
  a, k = x.abs(), 200 if _wide(x) else 20
  small, large = a < 2.0 ** (-1.5 * k), a > 2.0 ** (1.5 * k)
  a = small.where(a * 2.0 ** (3 * k), large.where(a * 2.0 ** (-3 * k), a))
  y = a.pow(1 / 3)
  y = y - (y - a / (y * y)) / 3
  y = small.where(y * 2.0 ** -k, large.where(y * 2.0 ** k, y))
  return ((a == 0) | (a == math.inf) | (x != x)).where(x, negative_sign(x).where(-y, y))

# ---- the inverse trigonometric and hyperbolic functions -----------------------------------------------------------------
# Cephes' atan: reduced to |t| <= 0.66, then a rational approximation, accurate to float64 rounding (tinygrad's atan
# is a float32 polynomial: 1e-8 relative error in float64, and 1.2e-7 absolute error at tiny x). asin, acos and atan2
# are built on it.
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1, -1.228866684490136173410e2,
           -6.485021904942025371773e1)
_ATAN_Q = (1.0, 2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2, 4.853903996359136964868e2,
           1.945506571482613964425e2)
_MOREBITS = 6.123233995736765886130e-17

@primitive_kernel("atan", P.ATAN.partials)
def atan(x: Tensor) -> Tensor:
  a = x.abs()
  big, mid = a > 2.414213562373095, (a > 0.66) & (a <= 2.414213562373095)
  t = big.where(-big.where(a, 1.0).reciprocal(), mid.where((a - 1) / (a + 1), a))
  z = t * t
  r = t * (z * P.horner(z, _ATAN_P) / P.horner(z, _ATAN_Q)) + t
  base = big.where(math.pi / 2 + _MOREBITS, mid.where(math.pi / 4 + 0.5 * _MOREBITS, 0.0))
  return (x == 0).where(x, (x < 0).where(-(base + r), base + r))   # atan(-0.) = -0. (so asin's and atan2's)

@composite
def negative_sign(x: Tensor) -> Tensor:
  """x < 0, -0.0 included."""
  return (x < 0) | ((x == 0) & (x.reciprocal() < 0))

@primitive_kernel("atan2", P.atan2_partials)
def atan2(y: Tensor, x: Tensor) -> Tensor:
  """numpy's atan2, signed zeros and infinities included."""
  both_inf = (y.abs() == math.inf) & (x.abs() == math.inf)
  a = atan(both_inf.where(y.sign() * x.sign(), y / x))
  y_neg, x_neg = negative_sign(y), negative_sign(x)
  a = x_neg.where(a + y_neg.where(-math.pi, math.pi), a)
  sign_y = (y != y).where(y, y.sign())   # a nan y stays nan (tinygrad's sign of nan is 0)
  a = ((x == 0) & (y != 0)).where(sign_y * (math.pi / 2), a)
  return ((x == 0) & (y == 0)).where(x_neg.where(y_neg.where(-math.pi, math.pi), y), a)

@primitive_kernel("asin", P.ASIN.partials)
def asin(x: Tensor) -> Tensor: return atan2(x, ((1 - x) * (1 + x)).sqrt())
@primitive_kernel("acos", P.acos_partials)
def acos(x: Tensor) -> Tensor: return 2 * atan(((1 - x) / (1 + x)).sqrt())

@primitive_kernel("atanh", P.ATANH.partials)
def atanh(x: Tensor) -> Tensor:
  """XLA's: (log1p(x) - log1p(-x)) / 2, nan where |x| > 1 (tinygrad's log((1 + x) / (1 - x)) / 2 cancels for small x:
  atanh(1e-8) was 1e-5 off relatively)."""
  return (x.abs() > 1).where(math.nan, (log1p(x) - log1p(-x)) * 0.5)

def _wide(x: Tensor) -> bool: return computed_dtype(x.dtype) == dtypes.float64   # (a Python float's: float64 with x64)

@primitive_kernel("asinh", P.ASINH.partials)
def asinh(x: Tensor) -> Tensor:
  # odd, on |x|: log1p(a + a^2 / (1 + sqrt(1 + a^2))) (exact for tiny a), log(a) + log(2) where a^2 would overflow
  a = x.abs()
  huge = a > 1e150 if _wide(x) else a > 1e18
  s = huge.where(1.0, a)
  small = log1p(s + s * s / (1 + (1 + s * s).sqrt()))
  out = huge.where(a.log() + math.log(2), small)
  return negative_sign(x).where(-out, out)   # (asinh(-0.) = -0.)

@primitive_kernel("acosh", P.ACOSH.partials)
def acosh(x: Tensor) -> Tensor:
  """CHLO's: log1p(sqrt(x - 1) (sqrt(x + 1) + sqrt(x - 1))), log(2) + log(x) from max/2 on; nan below 1 (log(x + sqrt(x^2
  - 1)) cancelled near 1, 2.5e7 ulps off at 1 + 2^-52, and was -+inf for x <= -1e10)."""
  s = (x - 1).sqrt()
  return (x >= _max_finite(x) / 2).where(math.log(2) + x.log(), log1p(s * ((x + 1).sqrt() + s)))

# ---- erf_inv ----------------------------------------------------------------------------------------------------------

# Giles' erfinv ("Approximating the erfinv function", GPU Computing Gems), as XLA's: single precision for float32
_ERFINV_W_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_W_GE_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682)

# and double precision for float64 (XLA's ErfInv64: three ranges of w, 23, 19 and 17 coefficients)
_ERFINV64_W_LT_6_25 = (
  -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
  -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
  -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
  1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
  -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
  -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_W_LT_16 = (
  2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
  1.5027403968909827627e-06, -4.013867526981545969e-06, 2.9234449089955446044e-06, 1.2475304481671778723e-05,
  -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
  0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
  0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635)
_ERFINV64_W_GE_16 = (
  -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09, -3.7894654401267369937e-09,
  7.6157012080783393804e-09, -1.4960026627149240478e-08, 2.9147953450901080826e-08, -6.7711997758452339498e-08,
  2.2900482228026654717e-07, -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
  7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
  4.8499064014085844221)

def _erf_inv64(x: Tensor, w: Tensor) -> Tensor:
  """XLA's ErfInv64 (Giles' double precision approximation), its operations in its order: one Horner sum whose
  coefficients are selected per range, the last 2 and 4 steps taken in the ranges that have them."""
  lt_6_25, lt_16 = w < 6.25, w < 16
  sqrt_w = w.sqrt()
  w = lt_6_25.where(w - 3.125, sqrt_w - lt_16.where(3.25, 5.0))
  def coefficient(i: int) -> Tensor:
    c = fill_like(x, _ERFINV64_W_LT_6_25[i])
    if i < 19: c = lt_6_25.where(c, _ERFINV64_W_LT_16[i])
    if i < 17: c = lt_16.where(c, _ERFINV64_W_GE_16[i])
    return c
  p = coefficient(0)
  for i in range(1, 17): p = coefficient(i) + p * w
  for i in range(17, 19): p = lt_16.where(coefficient(i) + p * w, p)
  for i in range(19, 23): p = lt_6_25.where(coefficient(i) + p * w, p)
  return p * x

@structural
@custom_jvp
def erf_inv(x: Tensor) -> Tensor:
  """The inverse of erf (Giles' approximations as XLA's: single precision for float32, double for float64), with the
  derivative sqrt(pi)/2 exp(erf_inv(x)^2)."""
  w = -log1p(-x * x)   # XLA's (jax.random.normal's tails depend on it: (1 - x)(1 + x) differs by 86 ulps)
  if _wide(x): out = _erf_inv64(x, w)
  else:
    lt = w < 5
    wl, wg = lt.where(w, 5.0) - 2.5, lt.where(6.25, w).sqrt() - 3
    pl, pg = fill_like(wl, _ERFINV_W_LT_5[0]), fill_like(wg, _ERFINV_W_GE_5[0])
    for c1, c2 in zip(_ERFINV_W_LT_5[1:], _ERFINV_W_GE_5[1:], strict=True): pl, pg = pl * wl + c1, pg * wg + c2
    out = lt.where(pl, pg) * x
  return (x.abs() == 1).where(x * math.inf, out)

@erf_inv.defjvp
def _erf_inv_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  y = erf_inv(x)
  return y, t * (math.sqrt(math.pi) / 2) * (y * y).exp()

# ---- lgamma, digamma --------------------------------------------------------------------------------------------------

# XLA's Lanczos approximation (g = 7, n = 9) for lgamma and digamma (xla/hlo/builder/lib/math.cc: Lgamma, Digamma; JAX
# lowers CHLO's copies, stablehlo/transforms/ChloLegalizeToStablehlo.cpp), operation for operation as XLA runs them:
# log(t) as log(7.5) + log1p(z * (1 / 7.5)) (its simplifier's product for the division), z + k, the reflections on the
# reduced fraction. tinyjax's own series and Lanczos sum were 3757 / 6e5 ulps from scipy's at |x| ~ 1000 where JAX's
# are 14 / 411
_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283, 771.3234287776530788486528258894,
            -176.61502916214059906584551354, 12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)

def _lanczos_t(z: Tensor) -> tuple[Tensor, Tensor]:
  """(t, log t), t = z + g + 1/2, log t as log(g + 1/2) + log1p(z / (g + 1/2))."""
  return z + (_LANCZOS_G + 0.5), math.log(_LANCZOS_G + 0.5) + log1p(z * (1 / (_LANCZOS_G + 0.5)))

# Where XLA's Lanczos sum cancels towards a zero of the function (lgamma's 1 and 2, digamma's 1.4616) its absolute
# error is 4-16 eps, so JAX's values there are up to 1e9 ulps off, with wrong signs (its lgamma(2) = 0 is a rounding's
# luck, its float32 lgamma(1) 4.8e-7): there Boost's rational approximations, r (Y + P/Q) with r vanishing at the
# zeros (boost/math/special_functions/detail/lgamma_small.hpp, digamma.hpp: digamma_imp_1_2). P, Q lowest degree first.
# lgamma on [1, 1.5] of z - 1, on (1.5, 2) of 2 - z, r = (z - 1)(z - 2); on [2, 3) of z - 2, r = (z - 2)(z + 1)
# (Boost's 64-bit coefficients, also its float's and double's)
_LGAMMA_1 = (0.52815341949462890625,
             (0.490622454069039543534e-1, -0.969117530159521214579e-1, -0.414983358359495381969e0, -0.406567124211938417342e0,
              -0.158413586390692192217e0, -0.240149820648571559892e-1, -0.100346687696279557415e-2),
             (0.1e1, 0.302349829846463038743e1, 0.348739585360723852576e1, 0.191415588274426679201e1, 0.507137738614363510846e0,
              0.577039722690451849648e-1, 0.195768102601107189171e-2))
_LGAMMA_2 = (0.452017307281494140625,
             (-0.292329721830270012337e-1, 0.144216267757192309184e0, -0.142440390738631274135e0, 0.542809694055053558157e-1,
              -0.850535976868336437746e-2, 0.431171342679297331241e-3),
             (0.1e1, -0.150169356054485044494e1, 0.846973248876495016101e0, -0.220095151814995745555e0, 0.25582797155975869989e-1,
              -0.100666795539143372762e-2, -0.827193521891290553639e-6))
_LGAMMA_3 = (0.158963680267333984375,
             (-0.180355685678449379109e-1, 0.25126649619989678683e-1, 0.494103151567532234274e-1, 0.172491608709613993966e-1,
              -0.259453563205438108893e-3, -0.541009869215204396339e-3, -0.324588649825948492091e-4),
             (0.1e1, 0.196202987197795200688e1, 0.148019669424231326694e1, 0.541391432071720958364e0, 0.988504251128010129477e-1,
              0.82130967464889339326e-2, 0.224936291922115757597e-3, -0.223352763208617092964e-6))
# digamma on [1, 2] of x - 1, r = x - root (the root less 1 in parts, so r is exact; Boost's 53- and 24-bit
# coefficients, its float root_minor split in two float32s)
_DIGAMMA_Y = 0.99558162689208984375
_DIGAMMA_64 = ((1569415565 / 2 ** 30 - 1, 381566830 / 2 ** 60, 0.9016312093258695918615325266959189453125e-19),
               (0.25479851061131551, -0.32555031186804491, -0.65031853770896507, -0.28919126444774784, -0.045251321448739056,
                -0.0020713321167745952),
               (1.0, 2.0767117023730469, 1.4606242909763515, 0.43593529692665969, 0.054151797245674225, 0.0021284987017821144,
                -0.55789841321675513e-6))
_DIGAMMA_32 = ((1532632 / 2 ** 20 - 1, 3.700660045069526e-07, 1.4084309686948106e-14),
               (0.25479851023250261, -0.44981331915268368, -0.43916936919946835, -0.61041765350579073e-1),
               (0.1e1, 0.15890202430554952e1, 0.65341249856146947e0, 0.63851690523355715e-1))

def _boost(r: Tensor, v: Tensor, y: float, p: tuple[float, ...], q: tuple[float, ...]) -> Tensor:
  """r Y + r P(v) / Q(v), in Boost's order."""
  return r * y + r * (P.horner(v, p[::-1]) / P.horner(v, q[::-1]))

def _lgamma_1_3(t: Tensor) -> Tensor:
  """lgamma on [1/2, 3), Boost's: of z = t, or t + 1 less log t below 1, z - 1 and z - 2 taken from t exactly; 0 at 1
  and 2."""
  below = t < 1
  zm1, zm2 = below.where(t, t - 1), below.where(t - 1, t - 2)
  out = (zm1 <= 0.5).where(_boost(zm1 * zm2, zm1, *_LGAMMA_1),
                           (zm1 < 1).where(_boost(zm2 * zm1, -zm2, *_LGAMMA_2), _boost(zm2 * (t + 1), zm2, *_LGAMMA_3)))
  return ((zm1 == 0) | (zm2 == 0)).where(0.0, below.where(out - t.log(), out))

def _digamma_1_2(z: Tensor) -> Tensor:
  """digamma(1 + z), z in [0, 1], Boost's."""
  roots, p, q = _DIGAMMA_64 if _wide(z) else _DIGAMMA_32
  r = z
  for root in roots: r = r - root
  return _boost(r, z, _DIGAMMA_Y, p, q)

@composite
def digamma(t: Tensor) -> Tensor:
  """psi(t), XLA's: digamma(z + 1) = log t(z) + A'(z) / A(z) - g / t(z) (Lanczos), psi(1 - x) - pi cot(pi x) below 1/2
  (cot of x shifted into [-1/2, 1/2]); nan at the poles 0 and the negative integers (CHLO's, JAX's: XLA's own -inf at 0
  was tinyjax's). Boost's on [1, 2], for psi(1 - t) too (the Lanczos sum was a median 17 ulps off on [1.1, 1.7], 1e5
  near the root, JAX's too). 16-bit floats at float32, as XLA."""
  return _at_float32(_digamma, t)

def _digamma(t: Tensor) -> Tensor:
  refl = t < 0.5
  z = refl.where(-t, t - 1)
  num, denom = fill_like(z, 0), fill_like(z, _LANCZOS_BASE)
  for i, c in enumerate(_LANCZOS):
    num = num - c / ((z + (i + 1)) * (z + (i + 1)))
    denom = denom + c / (z + (i + 1))
  tt, log_t = _lanczos_t(z)
  y = ((z >= 0) & (z <= 1)).where(_digamma_1_2(z), (log_t + num / denom) - _LANCZOS_G / tt)   # (psi(1 - t) too)
  reduced = t + (t + 0.5).floor().abs()
  out = refl.where(y - math.pi * (math.pi * reduced).cos() / (math.pi * reduced).sin(), y)
  return ((t <= 0) & (t == t.floor())).where(math.nan, out)

@primitive_kernel("lgamma", lambda ops, out: [digamma(ops[0])])   # JAX: g * digamma(x)
def lgamma(t: Tensor) -> Tensor:
  """log|Gamma(t)|, XLA's: Lanczos, the reflection below 1/2 with sin(pi frac) on the reduced fraction; inf at the poles
  and at +-inf. Boost's on [1/2, 3) (gammaln(2) was 2.4e-7 in float32, gammaln(1) -4.4e-16 in float64, signs wrong near
  both) and its -log|t| below eps (sin(pi t) of a denormal t has lost its digits). 16-bit floats at float32, as XLA."""
  return _at_float32(_lgamma, t)

def _lgamma(t: Tensor) -> Tensor:
  refl = t < 0.5
  z = refl.where(-t, t - 1)
  acc = fill_like(z, _LANCZOS_BASE)
  for i, c in enumerate(_LANCZOS): acc = acc + c / (z + (i + 1))
  tt, log_t = _lanczos_t(z)
  log_y = ((math.log(2) + math.log(math.pi)) / 2 + ((z + 0.5) - tt / log_t) * log_t) + acc.log()
  a = t.abs()
  frac = a - a.floor()
  denom = (math.pi * (frac > 0.5).where(1 - frac, frac)).sin().log()
  reflection = (denom.abs() != math.inf).where((math.log(math.pi) - denom) - log_y, -denom)
  out = refl.where(reflection, ((t >= 0.5) & (t < 3)).where(_lgamma_1_3(t), log_y))
  out = (a < 2.0 ** -dtypes.finfo(computed_dtype(t.dtype))[1]).where(-a.log(), out)
  return (t.abs() == math.inf).where(math.inf, out)

# ---- logsumexp, softmax -----------------------------------------------------------------------------------------------

def _squeeze(t: Tensor, axes: tuple[int, ...]) -> Tensor: return t.reshape(tuple(d for i, d in enumerate(t.shape) if i not in axes))

@composite
def logsumexp(x: Tensor, axes: tuple[int, ...], b: Tensor | None = None, keepdims: bool = False, return_sign: bool = False,
              where: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
  """log(sum(b * exp(x))) over `axes` without overflow (b: x's dtype or None; where: bool or None); with `return_sign`,
  (log|s|, sign(s)). The shift by the maximum carries no derivative, as JAX's."""
  if where is not None:
    x = where.where(x, -math.inf)
    if b is not None: b = where.where(b, 0)
  if b is not None and not return_sign:
    x = (b == 0).where(-math.inf, x)   # terms with b = 0 contribute nothing (and no nan from log(0) + inf)
  amax = x.max(axis=axes, keepdim=True).detach() if axes else x.detach()
  amax = (amax.abs() == math.inf).where(0.0, amax)   # all -inf (or an inf): shift by 0, the result is -inf/inf
  e = (x - amax).exp()
  s = (e * b if b is not None else e).sum(axis=axes, keepdim=True) if axes else (e * b if b is not None else e)
  if return_sign:
    sign = s.sign()
    out = s.abs().log() + amax
    if not keepdims and axes: out, sign = _squeeze(out, axes), _squeeze(sign, axes)
    return out, sign
  out = s.log() + amax
  return _squeeze(out, axes) if not keepdims and axes else out

def _where_max(t: Tensor, axes: tuple[int, ...], where: Tensor | None) -> Tensor:
  """The maximum over axes (of the entries in `where`, -inf for none) as a constant shift, JAX's stop_gradient(x_max):
  not replaced by 0 where it is infinite, as logsumexp's, so a row with an inf is all nan, as JAX's (it was [nan, 0, 0]
  for [inf, 0, 0]; log_softmax [nan, -inf, -inf])."""
  return (t if where is None else where.where(t, -math.inf)).max(axis=axes, keepdim=True).detach()

@composite
def softmax(x: Tensor, axes: tuple[int, ...], where: Tensor | None = None) -> Tensor:
  """exp(x - max) / sum over `axes`; entries outside `where` are 0 (rows with none too, as JAX's)."""
  e = (x - _where_max(x, axes, where)).exp()
  if where is None: return e / e.sum(axis=axes, keepdim=True)
  e = where.where(e, 0.0)
  return where.where(e / e.sum(axis=axes, keepdim=True), 0.0)

@composite
def log_softmax(x: Tensor, axes: tuple[int, ...], where: Tensor | None = None) -> Tensor:
  """x - max - log(sum(exp(x - max))) over `axes`; entries outside `where` are -inf."""
  shifted = x - _where_max(x, axes, where)
  e = shifted.exp()
  if where is not None: e = where.where(e, 0.0)
  out = shifted - e.sum(axis=axes, keepdim=True).log()
  return out if where is None else where.where(out, -math.inf)

"""tinyjax.random: JAX's explicit-key PRNG on tinygrad Tensors, giving jax.random's numbers.

The generator is JAX's default: threefry2x32 with `jax_threefry_partitionable` on (jax 0.10's default). Keys, counters
and the hash are uint32 Tensor ops, so every transform (vmap over keys, jit with traced keys) applies as to any other
Tensor code. A key is its raw data, a uint32 array of shape (..., 2), for `key` as for `PRNGKey` (JAX's typed keys
have shape (); `key_data`/`wrap_key_data` convert between the two in JAX and are the identity here).
Sources: jax/_src/random/threefry2x32.py (the hash, split, fold_in, bits) and jax/_src/random/core.py (the samplers).
"""
from __future__ import annotations
import math
from typing import Any, Sequence
import numpy as np
from tinyjax._tg import Tensor, DType, dtypes, np_dtype
from tinyjax.config import config
from tinyjax.core import as_tensor
from tinyjax.errors import missing_names
from tinyjax.numpy._core import default_float, to_dtype

__all__ = ["key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform", "normal", "bernoulli",
           "rademacher", "exponential", "laplace", "logistic", "gumbel", "randint", "permutation"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))

def _rotl(x: Tensor, r: int) -> Tensor: return (x << r) | (x >> (32 - r))

def threefry2x32(k1: Tensor, k2: Tensor, x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor]:
  """The Threefry-2x32 hash of the counters (x1, x2) under the key (k1, k2), 20 rounds: XLA's unrolled lowering."""
  ks = (k1, k2, k1 ^ k2 ^ 0x1BD11BDA)
  a, b = x1 + ks[0], x2 + ks[1]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      a = a + b
      b = _rotl(b, r) ^ a
    a, b = a + ks[(i + 1) % 3], b + ks[(i + 2) % 3] + (i + 1)
  return a, b

# ---- keys -------------------------------------------------------------------------------------------------------------

def _seed_words(seed: Any) -> Tensor:
  """JAX's threefry_seed: the seed's 64 bits as (high, low) uint32 words; a 32-bit seed has a zero high word."""
  if isinstance(seed, Tensor):
    if seed.shape != (): raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
    if not dtypes.is_int(seed.dtype): raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    hi = (seed >> 32).cast(dtypes.uint32) if seed.dtype.itemsize == 8 and config.jax_enable_x64 else seed.cast(dtypes.uint32) * 0
    return Tensor.stack(hi, seed.cast(dtypes.uint32))
  s = np.asarray(seed)
  if s.shape: raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
  if not np.issubdtype(s.dtype, np.integer): raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
  # a Python int is int64 with x64 on; with x64 off JAX makes it int32, and refuses one that does not fit
  if not config.jax_enable_x64 and isinstance(seed, int) and not -2**31 <= seed < 2**31:
    raise OverflowError(f"Python int {seed} too large to convert to int32")
  v = int(s)
  wide = config.jax_enable_x64 and (isinstance(seed, int) or s.dtype.itemsize == 8)   # x64 off: every seed is 32-bit
  words = ((v >> 32) & 0xFFFFFFFF if wide else 0, v & 0xFFFFFFFF)
  return Tensor(np.array(words, np.uint32))

def key(seed: Any, *, impl: Any = None) -> Tensor:
  """A PRNG key from an integer seed (jax.random.key); here its raw data, uint32 of shape (2,)."""
  _check_impl(impl)
  return _seed_words(seed)

def PRNGKey(seed: Any, *, impl: Any = None) -> Tensor:  # noqa: N802 (JAX's name)
  """A legacy PRNG key from an integer seed: uint32 of shape (2,), as jax.random.PRNGKey (the same as `key` here)."""
  return key(seed, impl=impl)

def key_data(keys: Any) -> Tensor:
  """The uint32 data of keys (shape (..., 2)): the keys themselves here."""
  return _key_array(keys, "key_data", batched=True)

def wrap_key_data(key_bits_array: Any, *, impl: Any = None) -> Tensor:
  """Keys from their uint32 data (shape (..., 2)): the data itself here."""
  _check_impl(impl)
  return _key_array(key_bits_array, "wrap_key_data", batched=True)

def _check_impl(impl: Any) -> None:
  if impl not in (None, "threefry2x32"):
    raise NotImplementedError(f"PRNG implementation {impl!r}: tinyjax has threefry2x32, JAX's default (see docs/porting.md)")

def _key_array(k: Any, name: str, batched: bool = False) -> Tensor:
  t = as_tensor(k)
  if t.dtype != dtypes.uint32 or not t.shape or t.shape[-1] != 2:
    raise TypeError(f"{name}: a PRNG key is a uint32 array of shape (2,) (from tinyjax.random.key or PRNGKey), "
                    f"got {t.dtype} of shape {t.shape}")
  if not batched and t.ndim != 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape {t.shape[:-1]} != (). "
                     "Use jax.vmap for batching.")
  return t

def _iota_2x32(shape: tuple[int, ...]) -> tuple[Tensor, Tensor]:
  """The flat index of each element of `shape` as (high, low) uint32 words (JAX's iota_2x32_shape)."""
  n = math.prod(shape)
  if n >= 2 ** 32: raise NotImplementedError(f"random arrays of 2**32 elements or more (shape {shape})")
  lo = Tensor.arange(n, dtype=dtypes.uint32).reshape(shape) if shape else Tensor(0, dtype=dtypes.uint32)
  return lo * 0, lo

def _hash_shape(k: Tensor, shape: tuple[int, ...]) -> tuple[Tensor, Tensor]:
  hi, lo = _iota_2x32(shape)
  return threefry2x32(k[0], k[1], hi, lo)

def _shape(shape: Any) -> tuple[int, ...]:
  return tuple(int(d) for d in shape) if isinstance(shape, Sequence) else (int(shape),)

def split(key: Any, num: int | Sequence[int] = 2) -> Tensor:
  """`num` new keys (a leading axis, or the shape `num`), as jax.random.split."""
  k = _key_array(key, "split")
  b1, b2 = _hash_shape(k, _shape(num))
  return Tensor.stack(b1, b2, dim=-1)

def fold_in(key: Any, data: Any) -> Tensor:
  """A new key from a key and a 32-bit integer, as jax.random.fold_in."""
  k = _key_array(key, "fold_in")
  if np.ndim(data) if not isinstance(data, Tensor) else data.ndim:
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {np.shape(data)} != (). Use jax.vmap for batching.")
  d = data.cast(dtypes.uint32) if isinstance(data, Tensor) else Tensor(np.asarray(data, np.uint32))   # -3: OverflowError
  b1, b2 = threefry2x32(k[0], k[1], d * 0, d)   # the hash of the counter pair (0, data): JAX's threefry_seed(data)
  return Tensor.stack(b1, b2)

# ---- samplers ---------------------------------------------------------------------------------------------------------

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}

def _random_bits(k: Tensor, bit_width: int, shape: tuple[int, ...]) -> Tensor:
  b1, b2 = _hash_shape(k, shape)
  if bit_width == 64: return (b1.cast(dtypes.uint64) << 32) | b2.cast(dtypes.uint64)
  return (b1 ^ b2).cast(_UINT[bit_width])

def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Uniform random bits as unsigned integers (uint32 by default; uint64 with x64), as jax.random.bits."""
  k = _key_array(key, "bits")
  dt = to_dtype(dtype) if dtype is not None else (dtypes.uint64 if config.jax_enable_x64 else dtypes.uint32)
  if dt is None or not dtypes.is_unsigned(dt): raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  return _random_bits(k, 8 * dt.itemsize, _shape(shape))

_MANT = {dtypes.float16: 10, dtypes.bfloat16: 7, dtypes.float32: 23, dtypes.float64: 52}

def _float_dtype(dtype: Any, name: str) -> DType:
  dt = default_float() if dtype is None else to_dtype(dtype)
  if dt not in _MANT: raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
  return dt

def _uniform(k: Tensor, shape: tuple[int, ...], dt: DType, minval: Any, maxval: Any) -> Tensor:
  """JAX's construction: random mantissa bits under the exponent of 1.0, minus 1, scaled to [minval, maxval)."""
  nbits, nmant = 8 * dt.itemsize, _MANT[dt]
  rng_bits = 8 if nmant < 8 else nbits
  u = _UINT[nbits]
  b = _random_bits(k, rng_bits, shape).cast(u)
  one = 0x3F80 if dt == dtypes.bfloat16 else int(np.array(1.0, np_dtype(dt)).view(f"uint{nbits}"))   # 1.0's bits
  floats = ((b >> (rng_bits - nmant)) | one).bitcast(dt) - 1.0
  lo, hi = (as_tensor(v).cast(dt) for v in (minval, maxval))
  return lo.maximum(floats * (hi - lo) + lo)

def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Tensor:
  """Uniform values in [minval, maxval), as jax.random.uniform (the same bits, so the same numbers)."""
  k = _key_array(key, "uniform")
  return _uniform(k, _shape(shape), _float_dtype(dtype, "uniform"), minval, maxval)

def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Standard normal values, as jax.random.normal: sqrt(2) erfinv(u), u uniform in (-1, 1)."""
  from tinyjax.scipy.special import erfinv
  k = _key_array(key, "normal")
  dt = _float_dtype(dtype, "normal")
  np_dt = np_dtype(dt) or np.dtype(np.float32)   # bfloat16 (no numpy dtype) fails later in tinygrad's backend anyway
  lo = float(np.nextafter(np_dt.type(-1.0), np_dt.type(0.0)))   # the largest value above -1: erfinv(-1) = -inf is never drawn
  return erfinv(_uniform(k, _shape(shape), dt, lo, 1.0)) * float(np_dt.type(np.sqrt(2)))

# ---- samplers that transform one uniform draw (JAX's formulas in jax/_src/random/core.py, so JAX's numbers) ----------

def _tiny(dt: DType) -> float: return float(np.finfo(np_dtype(dt) or np.float32).tiny)

def bernoulli(key: Any, p: Any = np.float32(0.5), shape: Sequence[int] | None = None, mode: str = "low") -> Tensor:
  """True with probability p, as jax.random.bernoulli: uniform(key, shape, p's dtype) < p (mode 'low')."""
  if mode not in ("high", "low"): raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  if mode == "high": raise NotImplementedError("tinyjax.random.bernoulli(mode='high')")
  k, pt = _key_array(key, "bernoulli"), as_tensor(p)
  if not dtypes.is_float(pt.dtype): raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {pt.dtype}.")
  return _uniform(k, _shape(pt.shape) if shape is None else _shape(shape), pt.dtype, 0.0, 1.0) < pt

def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """-1 or 1 with equal probability, as jax.random.rademacher (2 bernoulli(0.5) - 1)."""
  dt = (to_dtype(dtype) if dtype is not None else None) or (dtypes.int64 if config.jax_enable_x64 else dtypes.int32)
  b = bernoulli(key, np.float32(0.5), shape).cast(dt)
  return (2 * b - 1).cast(dt)

def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Exponential(1) values, as jax.random.exponential: -log1p(-u)."""
  dt = _float_dtype(dtype, "exponential")
  return -_log1p(-_uniform(_key_array(key, "exponential"), _shape(shape), dt, 0.0, 1.0))

def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Laplace(0, 1) values, as jax.random.laplace: sign(u) log1p(-|u|), u uniform in (-1, 1)."""
  dt = _float_dtype(dtype, "laplace")
  lo = -1.0 + float(np.finfo(np_dtype(dt) or np.float32).epsneg)
  u = _uniform(_key_array(key, "laplace"), _shape(shape), dt, lo, 1.0)
  return u.sign() * _log1p(-u.abs())

def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Logistic values, as jax.random.logistic: log(u) - log1p(-u), u uniform in [tiny, 1)."""
  dt = _float_dtype(dtype, "logistic")
  u = _uniform(_key_array(key, "logistic"), _shape(shape), dt, _tiny(dt), 1.0)
  return u.log() - _log1p(-u)

def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None, mode: str | None = None) -> Tensor:
  """Gumbel values, as jax.random.gumbel (mode 'low'): -log(-log(u)), u uniform in [tiny, 1)."""
  if mode not in (None, "low"): raise NotImplementedError(f"tinyjax.random.gumbel(mode={mode!r})")
  dt = _float_dtype(dtype, "gumbel")
  return -(-_uniform(_key_array(key, "gumbel"), _shape(shape), dt, _tiny(dt), 1.0).log()).log()

# ---- integers and permutations (bit for bit: the same bits, JAX's integer arithmetic) ---------------------------------

def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Tensor:
  """Integers in [minval, maxval), as jax.random.randint: two words of random bits per value reduced modulo the span
  (JAX's construction, with its slight bias when the span is not a power of 2)."""
  k = _key_array(key, "randint")
  dt = (to_dtype(dtype) if dtype is not None else None) or (dtypes.int64 if config.jax_enable_x64 else dtypes.int32)
  if not dtypes.is_int(dt) or dt == dtypes.bool: raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  nbits = 8 * dt.itemsize
  info = np.iinfo(np_dtype(dt))
  lo_in, hi_in = as_tensor(minval), as_tensor(maxval)
  hi_out_of_range = hi_in > int(info.max)   # randint(0, 256, uint8): the span is one larger than the dtype holds
  lo, hi = (v.maximum(int(info.min)).minimum(int(info.max)).cast(dt) for v in (lo_in, hi_in))
  ks = split(k)
  k1, k2 = ks[0], ks[1]
  shp = _shape(shape)
  higher, lower = _random_bits(k1, nbits, shp), _random_bits(k2, nbits, shp)
  u = _UINT[nbits]
  span = (hi - lo).cast(u)
  span = (hi <= lo).where(Tensor(1, dtype=u), span)
  span = (hi_out_of_range & (hi > lo)).where(span + 1, span)
  def rem(a: Tensor, m: Tensor) -> Tensor:   # a % m, and a where m is 0 (XLA's unsigned remainder; the wrapped span)
    return m.eq(0).where(a, a % m.eq(0).where(Tensor(1, dtype=u), m))
  # `& mask`: tinygrad folds arithmetic on unsigned constants in Python ints without wrapping ((c * c) % m on uint32
  # constants is not XLA's); the mask wraps the folded value and is a no-op on the device
  mask = 2 ** nbits - 1
  mult = rem(Tensor(2 ** (nbits // 2), dtype=u), span)
  mult = rem((mult * mult) & mask, span)
  offset = rem(((rem(higher, span) * mult) & mask) + rem(lower, span) & mask, span)
  return lo + offset.cast(dt)

def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Tensor:
  """A random permutation of arange(x) (x an int) or of x along `axis`, as jax.random.permutation: JAX's shuffle, a
  stable sort by random 32-bit keys repeated ceil(3 log n / log(2^32 - 1)) times."""
  from tinyjax.lax_ops import sort_key_val
  k = _key_array(key, "permutation")
  if isinstance(x, (int, np.integer)) or (isinstance(x, Tensor) and x.ndim == 0):
    if isinstance(x, Tensor) and not dtypes.is_int(x.dtype): raise TypeError("x must be an integer or at least 1-dimensional")
    n = int(x) if not isinstance(x, Tensor) else int(x.item())
    return _shuffle(k, Tensor.arange(n, dtype=dtypes.int64 if config.jax_enable_x64 else dtypes.int32), 0, sort_key_val)
  t = as_tensor(x)
  if t.ndim == 0: raise TypeError("x must be an integer or at least 1-dimensional")
  ax = axis % t.ndim
  if independent or t.ndim == 1: return _shuffle(k, t, ax, sort_key_val)
  idx = _shuffle(k, Tensor.arange(t.shape[ax], dtype=dtypes.int64 if config.jax_enable_x64 else dtypes.int32), 0, sort_key_val)
  return t.gather(ax, idx.reshape([-1 if i == ax else 1 for i in range(t.ndim)]).expand(*[t.shape[i] if i != ax else -1 for i in range(t.ndim)]))

def _shuffle(k: Tensor, x: Tensor, axis: int, sort_key_val) -> Tensor:
  rounds = int(np.ceil(3 * np.log(max(1, int(x.numel()))) / np.log(2 ** 32 - 1)))
  for _ in range(rounds):
    ks = split(k)
    k, sub = ks[0], ks[1]
    _, x = sort_key_val(_random_bits(sub, 32, _shape(x.shape)), x, axis)
  return x

def _log1p(x: Tensor) -> Tensor:
  from tinyjax.numpy import log1p
  return log1p(x)

__getattr__ = missing_names("tinyjax.random", "jax.random")

"""tinyjax.random: JAX's explicit-key PRNG on tinygrad Tensors, giving jax.random's numbers.

The generator is JAX's default: threefry2x32 with `jax_threefry_partitionable` on (jax 0.10's default). Keys, counters
and the hash are uint32 Tensor ops, so every transform (vmap over keys, jit with traced keys) applies as to any other
Tensor code. `PRNGKey` gives a raw key, a uint32 array of shape (..., 2); `key` a typed key (`PRNGKeyArray`, dtype
`key<fry>`, shape () for one key) over the same data, as JAX's. A typed key array is a pytree node whose one leaf is
its data, so transforms carry it as that uint32 array (its batch axes lead, the key's 2 words are last).
Sources: jax/_src/random/threefry2x32.py (the hash, split, fold_in, bits) and jax/_src/random/core.py (the samplers).
"""
from __future__ import annotations
import math
from typing import Any, Sequence
import numpy as np
from tinyjax._tg import Tensor, DType, Ops, UOp, Step, param_like, dtypes, np_dtype, jit_capturing, host_buffer, allocated_buffer, \
  placeholder, static_shape, is_data, read_array, default_device, plain_buffer
from tinyjax.config import config
from tinyjax.core import as_tensor, is_tracing, trace_state, serialized
from tinyjax.call_rule import CallRule
from tinyjax.custom import custom_jvp
from tinyjax.dtypes import default_float, default_int, to_dtype, KeyTy, is_complex
from tinyjax.complex_array import ComplexArray
from tinyjax import tree_util
from tinyjax.errors import missing_names
from tinyjax.lax import sorting, special
from tinyjax.lax.control_flow import while_loop
from tinyjax import numpy as jnp
from tinyjax.numpy._core import as_inexact
from tinyjax.numpy.linalg import cholesky

__all__ = ["key", "PRNGKey", "key_data", "wrap_key_data", "key_impl", "key_dtype", "clone", "PRNGKeyArray",
           "split", "fold_in", "bits", "uniform", "normal", "bernoulli",
           "rademacher", "exponential", "laplace", "logistic", "gumbel", "randint", "permutation", "choice", "categorical",
           "truncated_normal", "cauchy", "multivariate_normal", "gamma", "loggamma", "beta", "dirichlet", "t",
           "generalized_normal", "ball", "poisson"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))

def _same(x: Any) -> Any: return x

def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any, wrap: Any = _same) -> tuple[Any, Any]:
  """The Threefry-2x32 hash of the counters (x1, x2) under the key (k1, k2), 20 rounds: XLA's unrolled lowering. On
  uint32 Tensors; or on the host, on Python ints (or uint64 arrays) with `wrap` keeping the low 32 bits."""
  ks = (k1, k2, k1 ^ k2 ^ 0x1BD11BDA)
  a, b = wrap(x1 + ks[0]), wrap(x2 + ks[1])
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      a = wrap(a + b)
      b = (wrap(b << r) | (b >> (32 - r))) ^ a   # rotate left by r
    a, b = wrap(a + ks[(i + 1) % 3]), wrap(b + ks[(i + 2) % 3] + (i + 1))
  return a, b

# ---- keys -------------------------------------------------------------------------------------------------------------

def _seed_words(seed: Any) -> Tensor | np.ndarray:
  """JAX's threefry_seed: the seed's 64 bits as (high, low) uint32 words; a 32-bit seed has a zero high word. A Python
  or numpy seed gives the words on the host (numpy)."""
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
  return np.array(((v >> 32) & 0xFFFFFFFF if wide else 0, v & 0xFFFFFFFF), np.uint32)

class PRNGKeyArray:
  """Typed PRNG keys (JAX's key arrays): `shape` is the keys' shape, `dtype` is `key<fry>`, the data a uint32 Tensor of
  shape (*shape, 2). Indexing, reshape, len, iteration and == act on the keys; arithmetic is refused, as in JAX.
  Keys made eagerly (outside transforms) keep their words on the host and get a device Tensor only when one is asked
  for (`data`): a key chain (`key, sub = split(key)` in a Python loop) then never touches the device."""
  __slots__ = ("_data", "_host")
  def __init__(self, data: Tensor | None = None, host: np.ndarray | None = None): self._data, self._host = data, host
  @property
  def data(self) -> Tensor:
    if self._data is None: self._data = _device_words(self._host)
    return self._data
  @property
  def shape(self) -> tuple[int, ...]:
    return self._host.shape[:-1] if self._host is not None else tuple(int(d) for d in self.data.shape[:-1])
  @property
  def dtype(self) -> KeyTy: return KeyTy()
  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def size(self) -> int: return math.prod(self.shape)
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of unsized object")
    return self.shape[0]
  def __iter__(self):
    if not self.shape: raise TypeError("iteration over a 0-d key array")
    return (self[i] for i in range(self.shape[0]))
  def __getitem__(self, idx) -> PRNGKeyArray:
    idx = idx if isinstance(idx, tuple) else (idx,)
    if any(i is Ellipsis for i in idx): idx = idx + (slice(None),)   # the key's words stay whole
    if self._host is not None and all(isinstance(i, (int, np.integer, slice)) or i is None or i is Ellipsis for i in idx):
      return PRNGKeyArray(host=self._host[idx])
    return PRNGKeyArray(self.data[idx])
  def reshape(self, *shape) -> PRNGKeyArray:
    s = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], Sequence) else shape
    if self._host is not None: return PRNGKeyArray(host=self._host.reshape(*s, 2))
    return PRNGKeyArray(self.data.reshape(*s, 2))
  def __eq__(self, other) -> Tensor:   # type: ignore[override]
    if not isinstance(other, PRNGKeyArray): return NotImplemented
    return (self.data == other.data).all(-1)
  def __ne__(self, other) -> Tensor:   # type: ignore[override]
    if not isinstance(other, PRNGKeyArray): return NotImplemented
    return (self.data != other.data).any(-1)
  __hash__ = None   # type: ignore[assignment]
  def __repr__(self) -> str:
    words = self._host if self._host is not None else self.data.numpy()
    return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{words}"

tree_util.register_pytree_node(PRNGKeyArray, lambda k: ((k.data,), None), lambda _, data: PRNGKeyArray(data[0]))

@serialized
def _device_words(words: Any, device: Any = None) -> Tensor:
  """Host words as a Tensor: a new device buffer when eager; under a transform, a constant of the traced graph."""
  if not _concrete(): return Tensor(words)
  t = host_buffer(words, device or default_device())
  assert t is not None
  return t

def key(seed: Any, *, impl: Any = None) -> PRNGKeyArray:
  """A typed PRNG key from an integer seed (jax.random.key): shape (), dtype key<fry>, over the data PRNGKey gives."""
  _check_impl(impl)
  words = _seed_words(seed)
  if isinstance(words, Tensor): return PRNGKeyArray(words)
  return PRNGKeyArray(host=words) if _concrete() else PRNGKeyArray(Tensor(words))

def PRNGKey(seed: Any, *, impl: Any = None) -> Tensor:  # noqa: N802 (JAX's name)
  """A legacy PRNG key from an integer seed: its raw data, uint32 of shape (2,), as jax.random.PRNGKey."""
  _check_impl(impl)
  words = _seed_words(seed)
  return words if isinstance(words, Tensor) else _device_words(words)

def key_data(keys: Any) -> Tensor:
  """The uint32 data of keys (shape (*keys.shape, 2)); a raw key array is its own data."""
  return keys.data if isinstance(keys, PRNGKeyArray) else _key_array(keys, "key_data", batched=True)

def wrap_key_data(key_bits_array: Any, *, impl: Any = None) -> PRNGKeyArray:
  """Typed keys over uint32 data of shape (..., 2)."""
  _check_impl(impl)
  t = as_tensor(key_bits_array)
  if not t.shape or t.shape[-1] != 2:
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.shape to end with (2,); got shape={t.shape} "
                    "for impl=threefry2x32")
  if t.dtype != dtypes.uint32:
    raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; got dtype={np_dtype(t.dtype)}")
  return PRNGKeyArray(t)

def key_impl(keys: Any) -> str:
  """The name of the keys' implementation: threefry2x32, the one tinyjax has."""
  if not isinstance(keys, PRNGKeyArray): _key_array(keys, "key_impl", batched=True)
  return "threefry2x32"

def key_dtype(impl: Any = None) -> KeyTy:
  """The dtype of typed keys of an implementation (key<fry>)."""
  _check_impl(impl)
  return KeyTy()

def clone(key: Any) -> Any:
  """A copy of a key (JAX's clone, for its key-reuse checker); keys are values here, so the key itself."""
  return key

def _check_impl(impl: Any) -> None:
  if impl not in (None, "threefry2x32"):
    raise NotImplementedError(f"PRNG implementation {impl!r}: tinyjax has threefry2x32, JAX's default (see docs/porting.md)")

def _key_array(k: Any, name: str, batched: bool = False) -> Tensor:
  t = k.data if isinstance(k, PRNGKeyArray) else as_tensor(k)
  if t.dtype != dtypes.uint32 or not t.shape or t.shape[-1] != 2:
    raise TypeError(f"{name}: a PRNG key is a uint32 array of shape (2,) (from tinyjax.random.key or PRNGKey), "
                    f"got {t.dtype} of shape {t.shape}")
  if not batched: _check_single(tuple(t.shape), name)
  return t

def _check_single(shape: tuple, name: str) -> None:
  if len(shape) != 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape {shape[:-1]} != (). "
                     "Use jax.vmap for batching.")

def _check_key(key: Any, name: str) -> None:
  """The checks of _key_array, without making a device Tensor of host keys."""
  if isinstance(key, PRNGKeyArray) and key._host is not None: _check_single(key._host.shape, name)
  else: _key_array(key, name)

# ---- eager calls: JAX's dispatch of one compiled computation per call ---------------------------------------------------
# Outside transforms, building the threefry graph (~200 Tensor ops) and having tinygrad schedule it again on every call
# cost 10-20 ms per split or draw. Keys are small: an eager split or fold_in hashes the key's words on the host (Python
# ints, the same threefry2x32), and a sampler runs a program compiled once per (sampler, static arguments) on them.

def _concrete() -> bool:
  """Values are computed now: no transform traces, no TinyJit captures (whose replays must compute the keys again)."""
  return not (is_tracing() or jit_capturing() or trace_state().running_jit)

_MOVES = frozenset({Ops.RESHAPE, Ops.SHRINK, Ops.PERMUTE, Ops.EXPAND, Ops.FLIP})
_HOST_MAX = 1 << 16   # words read on the host at most (a key array)

@serialized
def _host_value(t: Tensor) -> np.ndarray | None:
  """t's value read on the host if it is a small realized buffer or movement ops over one (a row of split's keys: the
  tuple unpacking `key, sub = split(key)`), else None."""
  moves, u = [], t.uop
  while u.op in _MOVES:
    moves.append(u)
    u = u.src[0]
  if not is_data(u) or not isinstance(u.device, str) or u.shape[0] > _HOST_MAX: return None
  a = read_array(u, static_shape(u))
  for v in reversed(moves):   # tinygrad's movement ops, on numpy (EXPAND adds leading axes; SHRINK: (offset, size))
    m = v.marg
    match v.op:
      case Ops.RESHAPE: a = a.reshape(m)
      case Ops.SHRINK: a = a[tuple(slice(o, o + n) for o, n in m)]
      case Ops.PERMUTE: a = a.transpose(m)
      case Ops.EXPAND: a = np.broadcast_to(a, tuple(m) + a.shape)
      case Ops.FLIP: a = np.flip(a, tuple(i for i, f in enumerate(m) if f))
  return a

def _host_words(key: Any, name: str, batched: bool = False) -> np.ndarray | None:
  """The key's words on the host (uint32, shape (..., 2)) for an eager call on a concrete key, else None (the call
  builds its Tensor graph). Bad keys raise as `_key_array`."""
  if not _concrete(): return None
  if isinstance(key, PRNGKeyArray) and key._host is not None:
    if not batched: _check_single(key._host.shape, name)
    return key._host
  if isinstance(key, (PRNGKeyArray, Tensor)): return _host_value(_key_array(key, name, batched))
  return None

def _mask32(x: Any) -> Any: return x & 0xFFFFFFFF

def _hash_host(words: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
  """_hash_shape's keys (split) on the host: the words of threefry2x32(key, (0, i)) for each flat index i of shape."""
  k1, k2, n = int(words[0]), int(words[1]), math.prod(shape)
  if n <= 16: out = np.array([threefry2x32(k1, k2, 0, i, _mask32) for i in range(n)], np.uint32).reshape(*shape, 2)
  else: out = np.stack(threefry2x32(k1, k2, 0, np.arange(n, dtype=np.uint64), _mask32), -1).astype(np.uint32).reshape(*shape, 2)
  return out

def _like_host(key: Any, words: np.ndarray) -> Any:
  """New keys of the kind of `key` from host words: typed keys keep them on the host, raw ones are a device buffer."""
  if isinstance(key, PRNGKeyArray): return PRNGKeyArray(host=words)
  return _device_words(words, key.device if isinstance(key, Tensor) and isinstance(key.device, str) else None)

_STATIC = (int, float, bool, str, tuple, type(None), DType, np.generic)

class _Sampler(CallRule):
  """A sampler on a key as one call: its body (threefry and the transform of the bits) is built once per sampler,
  static arguments and kind of key, so a trace (jit, vmap, grad) adds one node instead of ~200 and tinygrad's
  scheduler inlines it into one kernel as before. vmap over keys is the same call on the batch (the body takes keys of
  any leading shape, as JAX's batching rule of random_bits), and no derivative flows through a key."""
  structural = True
  def __init__(self, impl: Any, args: tuple):
    self.impl, self.args, self.name = impl, args, f"random.{impl.__name__.lstrip('_')}"
    self.bodies: dict[UOp, UOp] = {}
  def call_node(self, xs: list[Tensor]) -> UOp:
    u = xs[0].uop
    if (body := self.bodies.get(p := param_like(u, 0))) is None:
      k = Tensor(p)
      body = self.bodies[p] = self.impl((k[..., 0], k[..., 1]), *self.args).uop
    return self.node([body], [u])
  def jvp(self, xs: list[Tensor], ts: list[Tensor]) -> list[Tensor]: return [self.call(xs)[0].zeros_like()]
  def vjp(self, xs: list[Tensor], cts: list[Tensor]) -> list[Tensor | None]: return [None]
  def batched(self, flags: list[int | None], size: int) -> CallRule: return self   # the batch of keys leads the output

_samplers: dict[tuple, tuple[_Sampler, dict]] = {}   # (impl, static args) -> the rule, its eager programs

@serialized   # tinygrad's buffers and programs, one thread at a time
def _draw(impl: Any, key: Any, name: str, *args: Any) -> Tensor:
  """impl(k, *args) as JAX dispatches it: for a concrete key outside transforms, a program compiled once per (impl,
  args) run on the key's words; else one call node (static args) or impl's graph (array args: minval, maxval...)."""
  if not all(isinstance(a, _STATIC) for a in args): return impl(_key_array(key, name), *args)
  ck = (impl, tuple((type(a), a) for a in args))   # 0.5 and np.float32(0.5) draw in different dtypes
  if (found := _samplers.get(ck)) is None:
    if len(_samplers) >= 256: _samplers.clear()
    found = _samplers[ck] = (_Sampler(impl, args), {})
  rule, programs = found
  if (kb := _key_buffer(key, name)) is None: return rule.call([_key_array(key, name)])[0]
  if (prog := programs.get(device := kb.device)) is None:
    probe = rule.call([placeholder((2,), dtypes.uint32, device)])[0]
    shape, dt = static_shape(probe), probe.dtype
    prog = programs[device] = (Step(rule.call, [((2,), dtypes.uint32, None)], [(shape, dt, None)], device), shape, dt)
  step, shape, dt = prog
  buf, out = allocated_buffer(shape, dt, device)
  step.run([kb, buf])
  return out

def _key_buffer(key: Any, name: str) -> UOp | None:
  """A concrete key's words in a device buffer, for an eager draw: the key's own buffer, or its host words copied in
  (a typed key keeps that buffer as its data); None outside eager calls or for a lazy key."""
  if not _concrete(): return None
  if isinstance(key, PRNGKeyArray) and key._host is not None:
    _check_single(key._host.shape, name)
    if (b := plain_buffer(key.data)) is None:   # data made under a transform: a constant of its graph
      key._data = _device_words(key._host)
      b = plain_buffer(key._data)
    return b
  t = _key_array(key, name)
  if (b := plain_buffer(t)) is not None: return b
  if (words := _host_value(t)) is None: return None
  return _device_words(words, t.device if isinstance(t.device, str) else None).uop.base

def _iota_2x32(shape: tuple[int, ...]) -> tuple[Tensor, Tensor]:
  """The flat index of each element of `shape` as (high, low) uint32 words (JAX's iota_2x32_shape)."""
  n = math.prod(shape)
  if n >= 2 ** 32: raise NotImplementedError(f"random arrays of 2**32 elements or more (shape {shape})")
  lo = Tensor.arange(n, dtype=dtypes.uint32).reshape(shape) if shape else Tensor(0, dtype=dtypes.uint32)
  return lo * 0, lo

Words = tuple[Tensor, Tensor]   # a batch of keys as its two uint32 words (the rejection samplers' key chains)

def _hash_shape(k: Tensor | Words, shape: tuple[int, ...]) -> tuple[Tensor, Tensor]:
  """The hash of each index of `shape` under key k; a batch of keys as Words gives shape (*batch, *shape)."""
  hi, lo = _iota_2x32(shape)
  if isinstance(k, tuple):
    kb = k[0].shape + (1,) * len(shape)
    return threefry2x32(k[0].reshape(kb), k[1].reshape(kb), hi, lo)
  return threefry2x32(k[0], k[1], hi, lo)

def _shape(shape: Any) -> tuple[int, ...]:
  return tuple(int(d) for d in shape) if isinstance(shape, Sequence) else (int(shape),)

def _split2(k: Tensor) -> tuple[Tensor, Tensor]:
  ks = split(k)
  return ks[0], ks[1]

def split(key: Any, num: int | Sequence[int] = 2) -> Any:
  """`num` new keys (a leading axis, or the shape `num`), as jax.random.split."""
  if (words := _host_words(key, "split")) is not None: return _like_host(key, _hash_host(words, _shape(num)))
  k = _key_array(key, "split")
  b1, b2 = _hash_shape(k, _shape(num))
  return _like(key, _eager(Tensor.stack(b1, b2, dim=-1)))

def fold_in(key: Any, data: Any) -> Any:
  """A new key from a key and a 32-bit integer, as jax.random.fold_in."""
  words = _host_words(key, "fold_in")
  if words is None: _key_array(key, "fold_in")   # the key is checked before the data, as in JAX
  if np.ndim(data) if not isinstance(data, Tensor) else data.ndim:
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {np.shape(data)} != (). Use jax.vmap for batching.")
  if words is not None and not isinstance(data, Tensor):
    w = threefry2x32(int(words[0]), int(words[1]), 0, int(np.asarray(data, np.uint32)), _mask32)   # -3: OverflowError
    return _like_host(key, np.array(w, np.uint32))
  k = _key_array(key, "fold_in")
  d = data.cast(dtypes.uint32) if isinstance(data, Tensor) else Tensor(np.asarray(data, np.uint32))   # -3: OverflowError
  b1, b2 = threefry2x32(k[0], k[1], d * 0, d)   # the hash of the counter pair (0, data): JAX's threefry_seed(data)
  return _like(key, _eager(Tensor.stack(b1, b2)))

def _like(key: Any, data: Tensor) -> Any:
  """New keys of the kind of `key`: typed from typed keys, raw from raw ones."""
  return PRNGKeyArray(data) if isinstance(key, PRNGKeyArray) else data

def _eager(t: Tensor) -> Tensor:
  """t computed now unless traced, as JAX dispatches: a key chain (`rng, k = split(rng)` in a Python loop) or a
  permutation indexed many times would otherwise stay a lazy graph growing with the loop, scheduled again at each use
  (seconds per minibatch in Flax's MNIST epoch loop)."""
  return t.realize() if _concrete() else t

# ---- samplers ---------------------------------------------------------------------------------------------------------

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}

def _random_bits(k: Tensor | Words, bit_width: int, shape: tuple[int, ...]) -> Tensor:
  b1, b2 = _hash_shape(k, shape)
  if bit_width == 64: return (b1.cast(dtypes.uint64) << 32) | b2.cast(dtypes.uint64)
  return (b1 ^ b2).cast(_UINT[bit_width])

def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Uniform random bits as unsigned integers (uint32 by default; uint64 with x64), as jax.random.bits."""
  _check_key(key, "bits")
  dt = to_dtype(dtype) if dtype is not None else (dtypes.uint64 if config.jax_enable_x64 else dtypes.uint32)
  if dt is None or not dtypes.is_unsigned(dt): raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  return _draw(_random_bits, key, "bits", 8 * dt.itemsize, _shape(shape))

_MANT = {dtypes.float16: 10, dtypes.bfloat16: 7, dtypes.float32: 23, dtypes.float64: 52}

def _float_dtype(dtype: Any, name: str) -> DType:
  dt = default_float() if dtype is None else to_dtype(dtype)
  if dt not in _MANT: raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
  return dt

def _uniform(k: Tensor | Words, shape: tuple[int, ...], dt: DType, minval: Any, maxval: Any) -> Tensor:
  """JAX's construction: random mantissa bits under the exponent of 1.0, minus 1, scaled to [minval, maxval)."""
  nbits, nmant = 8 * dt.itemsize, _MANT[dt]
  return _from_bits(_random_bits(k, 8 if nmant < 8 else nbits, shape), dt, minval, maxval)

def _from_bits(bits: Tensor, dt: DType, minval: Any, maxval: Any) -> Tensor:
  nbits, nmant = 8 * dt.itemsize, _MANT[dt]
  rng_bits = 8 if nmant < 8 else nbits
  u = _UINT[nbits]
  b = bits.cast(u)
  one = 0x3F80 if dt == dtypes.bfloat16 else int(np.array(1.0, np_dtype(dt)).view(f"uint{nbits}"))   # 1.0's bits
  floats = ((b >> (rng_bits - nmant)) | one).bitcast(dt) - 1.0
  lo, hi = (as_tensor(v).cast(dt) for v in (minval, maxval))
  return lo.maximum(floats * (hi - lo) + lo)

def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Tensor:
  """Uniform values in [minval, maxval), as jax.random.uniform (the same bits, so the same numbers)."""
  _check_key(key, "uniform")
  return _draw(_uniform, key, "uniform", _shape(shape), _float_dtype(dtype, "uniform"), minval, maxval)

def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
  """Standard normal values, as jax.random.normal: sqrt(2) erfinv(u), u uniform in (-1, 1). A complex dtype draws the
  real and imaginary parts from the two halves of split(key), each scaled by 1/sqrt(2) (JAX's)."""
  _check_key(key, "normal")
  if dtype is not None and is_complex(dt := to_dtype(dtype)):
    k_re, k_im = _split2(key)
    # JAX divides the complex value by sqrt(2) + 0i, which XLA computes as a product with 1/sqrt(2) in the part dtype
    scale = float(np_dtype(dt.part).type(1 / np.sqrt(2)))
    re, im = (_draw(_normal, k, "normal", _shape(shape), dt.part) for k in (k_re, k_im))
    return ComplexArray(re * scale, im * scale)
  return _draw(_normal, key, "normal", _shape(shape), _float_dtype(dtype, "normal"))

def _normal(k: Tensor | Words, shape: tuple[int, ...], dt: DType) -> Tensor:
  return _normal_of(_uniform(k, shape, dt, _open_below(dt), 1.0), dt)

def _open_below(dt: DType) -> float:
  """The largest value above -1, normal's minval: erfinv(-1) = -inf is never drawn."""
  np_dt = np_dtype(dt) or np.dtype(np.float32)   # bfloat16 (no numpy dtype) fails later in tinygrad's backend anyway
  return float(np.nextafter(np_dt.type(-1.0), np_dt.type(0.0)))

def _normal_of(u: Tensor, dt: DType) -> Tensor:
  """sqrt(2) erfinv(u) for u uniform in (-1, 1)."""
  if dt == dtypes.float32: return _normal_of_f32(u)
  np_dt = np_dtype(dt) or np.dtype(np.float32)
  return special.erf_inv(u) * float(np_dt.type(np.sqrt(2)))

_ERFINV_W_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_W_GE_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682)

def _select(c: Tensor, a: Tensor, b: Tensor) -> Tensor:
  """c.where(a, b) on the bits: tinygrad renders a where as C's `?:`, and clang compiles one whose operands are long
  expressions as branches, which keeps the kernel from being vectorized."""
  m = c.cast(dtypes.int32) * -1
  return ((a.bitcast(dtypes.int32) & m) | (b.bitcast(dtypes.int32) & (m ^ -1))).bitcast(dtypes.float32)

def _normal_of_f32(x: Tensor) -> Tensor:
  """special.erf_inv(x) * sqrt(2) for float32 x in (-1, 1), the same operations in the same order (so the same numbers:
  XLA's ErfInv32, w = -log1p(-x^2) by tinygrad's log2 decomposition and special.log1p's correction of log(u) where
  u = 1 - x^2 is rounded), without the branches: log2's cases for inf, 0, nan and negative inputs never arise (0 < 1 - x^2 <= 1), the
  two polynomials are one with selected coefficients (XLA's form), the other wheres select bits."""
  x2 = x * x
  u = 1 - x2
  small = u < 1e-4   # log2's scaling of small inputs by 2^64
  a = small.where(u * 2.0 ** 64, u)
  e = ((((a * (1 / 0.75)).bitcast(dtypes.int32) >> 23) & 255) - 127).cast(dtypes.float32)
  m = (a.bitcast(dtypes.int32) + ((-e).cast(dtypes.int32) << 23)).bitcast(dtypes.float32)
  t = (m - 1.0) / (m + 1.0)
  t2 = t * t
  log2_u = ((0.4374550283 * t2 + 0.5764790177) * t2 + 0.9618012905120) * (t * t2) + small.where(e - 64, e) + \
    t * 2.8853900432586669922 + t * 3.2734474483568488616e-08
  log_u = log2_u * math.log(2)
  w = -_select(u != 1, _select(u - 1 == -x2, log_u, log_u * -x2 / (u - 1)), -x2)   # (log1p's: u is 1 - x^2 rounded)
  lt = w < 5
  ww = _select(lt, lt.where(w, 5.0) - 2.5, lt.where(6.25, w).sqrt() - 3)
  p = lt.where(_ERFINV_W_LT_5[0], _ERFINV_W_GE_5[0])
  for cl, cg in zip(_ERFINV_W_LT_5[1:], _ERFINV_W_GE_5[1:], strict=True): p = p * ww + lt.where(cl, cg)
  return p * x * float(np.float32(np.sqrt(2)))

# ---- samplers that transform one uniform draw (JAX's formulas in jax/_src/random/core.py, so JAX's numbers) ----------

def _tiny(dt: DType) -> float: return float(np.finfo(np_dtype(dt) or np.float32).tiny)

def bernoulli(key: Any, p: Any = np.float32(0.5), shape: Sequence[int] | None = None, mode: str = "low") -> Tensor:
  """True with probability p, as jax.random.bernoulli: uniform(key, shape, p's dtype) < p (mode 'low')."""
  if mode not in ("high", "low"): raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  if mode == "high": raise NotImplementedError("tinyjax.random.bernoulli(mode='high')")
  _check_key(key, "bernoulli")
  pt = as_tensor(p)
  if not dtypes.is_float(pt.dtype): raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {pt.dtype}.")
  return _draw(_bernoulli, key, "bernoulli", p, _shape(pt.shape) if shape is None else _shape(shape))

def _bernoulli(k: Tensor | Words, p: Any, shape: tuple[int, ...]) -> Tensor:
  pt = as_tensor(p)
  return _uniform(k, shape, pt.dtype, 0.0, 1.0) < pt

def _int_dtype(dtype: Any) -> DType:
  """dtype, or JAX's default integer (int64 with x64 on, else int32)."""
  return to_dtype(dtype) or default_int()

def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """-1 or 1 with equal probability, as jax.random.rademacher (2 bernoulli(0.5) - 1)."""
  _check_key(key, "rademacher")
  return _draw(_rademacher, key, "rademacher", _shape(shape), _int_dtype(dtype))

def _rademacher(k: Tensor | Words, shape: tuple[int, ...], dt: DType) -> Tensor:
  b = _bernoulli(k, np.float32(0.5), shape).cast(dt)
  return (2 * b - 1).cast(dt)

def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Exponential(1) values, as jax.random.exponential: -log1p(-u)."""
  _check_key(key, "exponential")
  return _draw(_exponential, key, "exponential", _shape(shape), _float_dtype(dtype, "exponential"))

def _exponential(k: Tensor | Words, shape: tuple[int, ...], dt: DType) -> Tensor:
  return -special.log1p(-_uniform(k, shape, dt, 0.0, 1.0))

def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Laplace(0, 1) values, as jax.random.laplace: sign(u) log1p(-|u|), u uniform in (-1, 1)."""
  _check_key(key, "laplace")
  return _draw(_laplace, key, "laplace", _shape(shape), _float_dtype(dtype, "laplace"))

def _laplace(k: Tensor | Words, shape: tuple[int, ...], dt: DType) -> Tensor:
  u = _uniform(k, shape, dt, -1.0 + float(np.finfo(np_dtype(dt) or np.float32).epsneg), 1.0)
  return u.sign() * special.log1p(-u.abs())

def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Logistic values, as jax.random.logistic: log(u) - log1p(-u), u uniform in [tiny, 1)."""
  _check_key(key, "logistic")
  return _draw(_logistic, key, "logistic", _shape(shape), _float_dtype(dtype, "logistic"))

def _logistic(k: Tensor | Words, shape: tuple[int, ...], dt: DType) -> Tensor:
  u = _uniform(k, shape, dt, _tiny(dt), 1.0)
  return u.log() - special.log1p(-u)

def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None, mode: str | None = None) -> Tensor:
  """Gumbel values, as jax.random.gumbel (mode 'low'): -log(-log(u)), u uniform in [tiny, 1)."""
  if mode not in (None, "low"): raise NotImplementedError(f"tinyjax.random.gumbel(mode={mode!r})")
  _check_key(key, "gumbel")
  return _draw(_gumbel, key, "gumbel", _shape(shape), _float_dtype(dtype, "gumbel"))

# ---- integers and permutations (bit for bit: the same bits, JAX's integer arithmetic) ---------------------------------

def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Tensor:
  """Integers in [minval, maxval), as jax.random.randint: two words of random bits per value reduced modulo the span
  (JAX's construction, with its slight bias when the span is not a power of 2)."""
  _check_key(key, "randint")
  dt = _int_dtype(dtype)
  if not dtypes.is_int(dt) or dt == dtypes.bool: raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  return _draw(_randint, key, "randint", _shape(shape), minval, maxval, dt)

def _randint(k: Tensor | Words, shp: tuple[int, ...], minval: Any, maxval: Any, dt: DType) -> Tensor:
  nbits = 8 * dt.itemsize
  info = np.iinfo(np_dtype(dt))
  lo_in, hi_in = as_tensor(minval), as_tensor(maxval)
  hi_out_of_range = hi_in > int(info.max)   # randint(0, 256, uint8): the span is one larger than the dtype holds
  lo, hi = (v.maximum(int(info.min)).minimum(int(info.max)).cast(dt) for v in (lo_in, hi_in))
  b1, b2 = _hash_shape(k, (2,))   # split(k), as a graph (an eager split is computed on the host)
  k1, k2 = (b1[..., 0], b2[..., 0]), (b1[..., 1], b2[..., 1])
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
  k = _key_array(key, "permutation")
  if isinstance(x, (int, np.integer)) or (isinstance(x, Tensor) and x.ndim == 0):
    if isinstance(x, Tensor) and not dtypes.is_int(x.dtype): raise TypeError("x must be an integer or at least 1-dimensional")
    n = int(x) if not isinstance(x, Tensor) else int(x.item())
    return _eager(_shuffle(k, Tensor.arange(n, dtype=_int_dtype(None)), 0))
  t = as_tensor(x)
  if t.ndim == 0: raise TypeError("x must be an integer or at least 1-dimensional")
  ax = axis % t.ndim
  if independent or t.ndim == 1: return _eager(_shuffle(k, t, ax))
  idx = _eager(_shuffle(k, Tensor.arange(t.shape[ax], dtype=_int_dtype(None)), 0))
  return t.gather(ax, idx.reshape([-1 if i == ax else 1 for i in range(t.ndim)]).expand(*[t.shape[i] if i != ax else -1 for i in range(t.ndim)]))

def _shuffle(k: Tensor, x: Tensor, axis: int) -> Tensor:
  rounds = int(np.ceil(3 * np.log(max(1, int(x.numel()))) / np.log(2 ** 32 - 1)))
  for _ in range(rounds):
    ks = split(k)
    k, sub = ks[0], ks[1]
    _, x = sorting.sort((_random_bits(sub, 32, _shape(x.shape)), x), axis)
  return x

# ---- samplers built on the others (JAX's compositions, so JAX's numbers up to the ulps of log, erf, tan, ...) ----------

def _out_shape(shape: Any, *params: Tensor) -> tuple[int, ...]:
  return _shape(shape) if shape is not None else tuple(np.broadcast_shapes(*(p.shape for p in params)))

def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
  """Standard normal values in (lower, upper), as jax.random.truncated_normal: sqrt(2) erfinv(u), u uniform between
  erf(lower / sqrt 2) and erf(upper / sqrt 2), clipped to the open interval."""
  k, dt = _key_array(key, "truncated_normal"), _float_dtype(dtype, "truncated_normal")
  lo, hi = as_tensor(lower).cast(dt), as_tensor(upper).cast(dt)
  sqrt2 = float((np_dtype(dt) or np.dtype(np.float32)).type(np.sqrt(2)))
  u = _uniform(k, _out_shape(shape, lo, hi), dt, special.erf(lo / sqrt2), special.erf(hi / sqrt2))   # (XLA's erf)
  out = special.erf_inv(u) * sqrt2
  return out.maximum(_nextafter(lo.detach(), True)).minimum(_nextafter(hi.detach(), False))

def _nextafter(x: Tensor, up: bool) -> Tensor:
  """The next float after x towards +inf (up) or -inf, by stepping its bits (lax.nextafter)."""
  i = {4: dtypes.int32, 8: dtypes.int64, 2: dtypes.int16}[x.dtype.itemsize]
  b = x.bitcast(i)
  step = ((x > 0) == up).where(b + 1, b - 1).bitcast(x.dtype)   # away from 0 if x's sign is the direction
  smallest = float(np.nextafter(np.zeros((), np_dtype(x.dtype) or np.float32), 1))
  fixed = (x == (math.inf if up else -math.inf)) | (x != x)   # inf in its own direction and nan stay
  return (x == 0).where(smallest if up else -smallest, fixed.where(x, step))

def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Cauchy values, as jax.random.cauchy: tan(pi (u - 1/2)), u uniform in [eps, 1)."""
  dt = _float_dtype(dtype, "cauchy")
  eps = float(np.finfo(np_dtype(dt) or np.float32).eps)
  x = (_uniform(_key_array(key, "cauchy"), _shape(shape), dt, eps, 1.0) - 0.5) * math.pi
  # tan in float64: tinygrad's float32 tan loses ~900 ulps near +-pi/2, where XLA's does not (1 ulp from JAX then)
  return x.tan() if dt == dtypes.float64 else x.cast(dtypes.float64).tan().cast(dt)

def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Sequence[int] | None = None, dtype: Any = None,
                        method: str = "cholesky") -> Tensor:
  """mean + L z with L = cholesky(cov) and z = normal(key, shape + (n,)), as jax.random.multivariate_normal."""
  k = _key_array(key, "multivariate_normal")
  if method not in {"svd", "eigh", "cholesky"}: raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  if method != "cholesky":   # JAX's factors come from its own svd/eigh: signs of vectors would differ, so its numbers too
    raise NotImplementedError(f"tinyjax.random.multivariate_normal(method={method!r}): only 'cholesky'")
  m, c = as_inexact(mean), as_tensor(cov)
  dt = m.dtype if dtype is None else _float_dtype(dtype, "multivariate_normal")
  if m.ndim < 1: raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {m.ndim}")
  if c.ndim < 2: raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {c.ndim}")
  n = m.shape[-1]
  if c.shape[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == {c.shape}.")
  batch = _shape(shape) if shape is not None else tuple(np.broadcast_shapes(m.shape[:-1], c.shape[:-2]))
  z = _normal(k, batch + (n,), dt)
  return m.cast(dt) + (cholesky(c.cast(dt)) * z.unsqueeze(-2)).sum(-1)

def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None, replace: bool = True,
                mode: str | None = None) -> Tensor:
  """Indices drawn with probabilities softmax(logits) along `axis`, as jax.random.categorical: the Gumbel-max trick
  (argmax of logits + gumbel; without replacement, the top k)."""
  k, lg = _key_array(key, "categorical"), as_tensor(logits)
  if mode not in (None, "low"): raise NotImplementedError(f"tinyjax.random.categorical(mode={mode!r})")
  ax, lshape = axis % lg.ndim, _shape(lg.shape)
  batch = tuple(d for i, d in enumerate(lshape) if i != ax)
  shp = batch if shape is None else _shape(shape)
  if shape is not None and (len(shp) < len(batch) or shp[len(shp) - len(batch):] != batch):
    raise ValueError(f"categorical parameter shapes ({batch},) must be broadcast-compatible with shape argument, and the "
                     f"result of broadcasting the shapes must equal the shape argument, but got result {shp} for shape argument {shp}.")
  prefix = shp[:len(shp) - len(batch)]
  if replace:
    g = _gumbel(k, prefix + lshape, lg.dtype)
    return jnp.argmax(g + lg.reshape((1,) * len(prefix) + lg.shape), axis=len(prefix) + ax)
  n = math.prod(prefix)
  if n > lshape[ax]:
    raise ValueError(f"Number of samples without replacement ({n}) cannot exceed number of categories ({lshape[ax]}).")
  g = lg + _gumbel(k, lshape, lg.dtype)
  idx = sorting.top_k(g.permute(*[i for i in range(g.ndim) if i != ax], ax), n)[1]   # moveaxis(ax, -1)
  return idx.permute(idx.ndim - 1, *range(idx.ndim - 1)).reshape(shp)

def _gumbel(k: Tensor | Words, shape: tuple[int, ...], dt: DType) -> Tensor:
  return -(-_uniform(k, shape, dt, _tiny(dt), 1.0).log()).log()

def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None, axis: int = 0,
           mode: str | None = None) -> Tensor:
  """Samples of a (or of arange(a)) along `axis`, as jax.random.choice: randint (replace), the first draws of a
  permutation (no replace), a search in cumsum(p) (replace, p) or the Gumbel top k (no replace, p)."""
  k = _key_array(key, "choice")
  if not isinstance(shape, Sequence): raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
  if mode not in (None, "low"): raise NotImplementedError(f"tinyjax.random.choice(mode={mode!r})")
  arr = as_tensor(a)
  if arr.ndim == 0: n_inputs = int(a) if not isinstance(a, Tensor) else int(a.item())
  else:
    axis = axis % arr.ndim
    n_inputs = _shape(arr.shape)[axis]
  shp = _shape(shape)
  n_draws = math.prod(shp)
  if n_draws == 0: return Tensor.zeros(*shp, dtype=arr.dtype)
  if n_inputs <= 0: raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace: ind = randint(k, shp, 0, n_inputs)
    else:
      perm = permutation(k, n_inputs if arr.ndim == 0 else arr, axis)
      ind = perm.shrink(tuple((0, n_draws) if i == axis else None for i in range(perm.ndim)))
      return ind.reshape(shp if arr.ndim == 0 else arr.shape[:axis] + shp + arr.shape[axis + 1:])
  else:
    pt = as_inexact(p)
    if pt.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {pt.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = jnp.cumsum(pt)
      r = p_cuml[-1] * (1 - _uniform(k, shp, pt.dtype, 0.0, 1.0))
      ind = jnp.searchsorted(p_cuml, r).cast(_int_dtype(None))
    else:
      ind = sorting.top_k(_gumbel(k, (n_inputs,), pt.dtype) + pt.log(), n_draws)[1].cast(_int_dtype(None))
  if arr.ndim == 0: return ind.reshape(shp)
  return jnp.take(arr, ind.flatten(), axis).reshape(arr.shape[:axis] + shp + arr.shape[axis + 1:])

# ---- rejection samplers: JAX's while loops --------------------------------------------------------------------------
# JAX draws gamma and poisson in while loops, each round from keys split off the last round's; tinyjax.lax.while_loop
# runs the same loops (vectorized over elements as JAX's vmap of them: finished elements keep their values).

def _split_words(k: Words, num: int) -> list[Words]:
  """split of a batch of keys given as words: each new key hashed on its own."""
  return [threefry2x32(k[0], k[1], 0, i) for i in range(num)]

def _gamma_one(k: Words, alpha: Tensor, log_space: bool) -> Tensor:
  """JAX's _gamma_one for each (key, alpha) pair (keys and alpha of shape (n,)): Marsaglia and Tsang's method."""
  dt = alpha.dtype
  boost_mask = alpha >= 1
  a = boost_mask.where(alpha, alpha + 1)
  d = a - 1 / 3
  c = (1 / 3) / d.sqrt()
  # d and c ride in the carries (unchanged), not closed over: the loop bodies then depend only on n and the dtype, so
  # every gamma-family draw of n values shares one compiled pair of loops, however alpha was computed
  def again(X: Tensor, V: Tensor, U: Tensor, d: Tensor) -> Tensor:   # JAX's _cond_fn, per element
    return (U >= 1 - 0.0331 * (X * X)) & (U.log() >= X * 0.5 + d * ((1 - V) + V.log()))
  def body(st: tuple) -> tuple:
    k0, k1, X, V, U, d, c = st
    go = again(X, V, U, d)
    key, x_key, u_key = _split_words((k0, k1), 3)
    def inner(st2: tuple) -> tuple:   # draw x until v = 1 + x c > 0
      xk0, xk1, x, v, c = st2
      (n0, n1), sub = _split_words((xk0, xk1), 2)
      xn, more = _normal(sub, (), dt), v <= 0
      return n0, n1, more.where(xn, x), more.where(xn * c + 1, v), c
    _, _, x, v, _ = while_loop(lambda st2: (st2[3] <= 0).any(), inner, (*x_key, c * 0, c * 0 - 1, c))
    new = (*key, x * x, v * v * v, _uniform(u_key, (), dt, 0.0, 1.0))
    return (*(go.where(n, o) for n, o in zip(new, st[:5], strict=True)), d, c)
  key, subkey = _split_words(k, 2)
  one = alpha * 0 + 1
  _, _, _, V, *_ = while_loop(lambda st: again(*st[2:6]).any(), body, (*key, one * 0, one, one * 2, d, c))
  if log_space:
    log_samples = special.log1p(-_uniform(subkey, (), dt, 0.0, 1.0))   # -exponential(subkey)
    log_boost = (boost_mask | (log_samples == 0)).where(0.0, log_samples * (1 / alpha))
    return d.log() + V.log() + log_boost
  boost = boost_mask.where(1.0, (1 - _uniform(subkey, (), dt, 0.0, 1.0)).pow(1 / alpha))
  return d * V * boost

def _gamma_impl(k: Tensor, a: Tensor, log_space: bool) -> Tensor:
  n = math.prod(_shape(a.shape))
  if n == 0: return a
  return _gamma_one(_hash_shape(k, (n,)), a.flatten(), log_space).reshape(a.shape)   # split(k, n) as words

def _as_data(x: Any, dt: DType) -> Tensor:
  """A parameter of a rejection sampler as an array, not a constant: a constant would be compiled into the loop
  bodies, so each value would compile them again."""
  if isinstance(x, Tensor): return x.cast(dt)
  return Tensor(np.asarray(x, np_dtype(dt)))

def _gamma(k: Tensor, a: Any, shape: Sequence[int] | None, dtype: Any, name: str, log_space: bool) -> Tensor:
  dt = _float_dtype(dtype, name)
  at = _as_data(a, dt)
  shp = _out_shape(shape, at)
  @custom_jvp
  def sample(at: Tensor) -> Tensor: return _gamma_impl(k, at.expand(shp) if at.shape != shp else at, log_space)
  @sample.defjvp
  def _sample_jvp(primals, tangents):   # JAX's rule is random_gamma_grad (igamma's series and continued fraction)
    raise NotImplementedError(f"tinyjax.random.{name}: the derivative with respect to the shape parameter (JAX's "
                              "implicit reparameterization, lax.random_gamma_grad)")
  return sample(at)

def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
  """Gamma(a, 1) values, as jax.random.gamma: Marsaglia and Tsang's rejection method per element (JAX's while loops,
  see above); a < 1 is boosted to a + 1 and scaled by u^(1/a). Not differentiable in `a` yet (NotImplementedError)."""
  return _gamma(_key_array(key, "gamma"), a, shape, dtype, "gamma", False)

def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
  """log of Gamma(a, 1) values computed in log space (accurate for small a), as jax.random.loggamma."""
  return _gamma(_key_array(key, "loggamma"), a, shape, dtype, "loggamma", True)

def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
  """Beta(a, b) values, as jax.random.beta: G_a / (G_a + G_b) from two loggamma draws, scaled by their max."""
  k, dt = _key_array(key, "beta"), _float_dtype(dtype, "beta")
  at, bt = as_tensor(a).cast(dt), as_tensor(b).cast(dt)
  shp = _out_shape(shape, at, bt)
  ka, kb = _split2(k)
  lga, lgb = loggamma(ka, at.expand(shp), shp, dt), loggamma(kb, bt.expand(shp), shp, dt)
  log_max = lga.maximum(lgb)
  ga, gb = (lga - log_max).exp(), (lgb - log_max).exp()
  return ga / (ga + gb)

def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
  """Dirichlet(alpha) vectors along the last axis, as jax.random.dirichlet: the softmax of loggamma draws."""
  k, dt = _key_array(key, "dirichlet"), _float_dtype(dtype, "dirichlet")
  al = as_tensor(alpha).cast(dt)
  if al.ndim < 1: raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {al.ndim}")
  shp = _shape(shape if shape is not None else al.shape[:-1]) + _shape(al.shape[-1:])
  lg = loggamma(k, al.expand(shp), shp, dt)
  return special.softmax(lg, (lg.ndim - 1,))

def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
  """Student's t values, as jax.random.t: normal * sqrt((df / 2) / gamma(df / 2))."""
  k, dt = _key_array(key, "t"), _float_dtype(dtype, "t")
  d = as_tensor(df).cast(dt)
  shp = _out_shape(shape, d)
  kn, kg = _split2(k)
  half_df = d / 2
  return _normal(kn, shp, dt) * (half_df / gamma(kg, half_df, shp, dt)).sqrt()

def generalized_normal(key: Any, p: float, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Generalized normal values of power p, as jax.random.generalized_normal: rademacher * gamma(1/p)^(1/p)."""
  k, dt = _key_array(key, "generalized_normal"), _float_dtype(dtype, "generalized_normal")
  k1, k2 = _split2(k)
  shp = _shape(shape)
  return rademacher(k2, shp, dt) * gamma(k1, 1 / p, shp, dt).pow(1 / p)

def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None) -> Tensor:
  """Uniform points of the unit Lp ball in d dimensions, as jax.random.ball."""
  k, dt = _key_array(key, "ball"), _float_dtype(dtype, "ball")
  k1, k2 = _split2(k)
  shp = _shape(shape)
  g = generalized_normal(k1, p, shp + (int(d),), dt)
  e = exponential(k2, shp, dt)
  return g / ((g.abs().pow(p).sum(-1) + e).pow(1 / p)).unsqueeze(-1)

def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Tensor:
  """Poisson(lam) integers, as jax.random.poisson: Knuth's product of uniforms for lam < 10, Hormann's transformed
  rejection otherwise (both over the whole array, JAX's while loops, see above)."""
  k, dt = _key_array(key, "poisson"), _int_dtype(dtype)
  if not dtypes.is_int(dt) or dt == dtypes.bool: raise ValueError(f"dtype argument to `poisson` must be an int dtype, got {dtype}")
  lt = _as_data(lam, dtypes.float32)
  shp = _out_shape(shape, lt)
  lt = lt.cast(dtypes.float32).expand(shp) if lt.shape != shp else lt.cast(dtypes.float32)
  use_knuth = (lt != lt) | (lt < 10)
  knuth = _poisson_knuth(k, use_knuth.where(lt, 0.0), shp, dt)
  rejection = _poisson_rejection(k, use_knuth.where(1e5, lt), shp, dt)
  return (lt == 0).where(0, use_knuth.where(knuth, rejection)).cast(dt)

def _poisson_knuth(k: Tensor, lam: Tensor, shape: tuple[int, ...], dt: DType) -> Tensor:
  def body(st: tuple) -> tuple:
    n, k0, k1, log_prod = st
    (r0, r1), sub = _split_words((k0, k1), 2)
    n = (log_prod > -lam).where(n + 1, n)
    return n, r0, r1, log_prod + _uniform(sub, shape, dtypes.float32, 0.0, 1.0).log()
  st = (lam.zeros_like(dtype=dt), k[0], k[1], lam * 0)
  return while_loop(lambda st: (st[3] > -lam).any(), body, st)[0] - 1

def _poisson_rejection(k: Tensor, lam: Tensor, shape: tuple[int, ...], dt: DType) -> Tensor:
  log_lam = lam.log()
  b = lam.sqrt() * 2.53 + 0.931
  a = b * 0.02483 - 0.059
  inv_alpha = 1.1328 / (b - 3.4) + 1.1239
  v_r = 0.9277 - 3.6224 / (b - 2)
  def body(st: tuple) -> tuple:
    k_out, accepted, k0, k1 = st
    (r0, r1), sub0, sub1 = _split_words((k0, k1), 3)
    u = _uniform(sub0, shape, lam.dtype, 0.0, 1.0) - 0.5
    v = _uniform(sub1, shape, lam.dtype, 0.0, 1.0)
    us = 0.5 - u.abs()
    kk = ((2 * a / us + b) * u + lam + 0.43).floor()
    s = (v * inv_alpha / (a / (us * us) + b)).log()
    tt = -lam + kk * log_lam - special.lgamma(kk + 1)
    accept1 = (us >= 0.07) & (v <= v_r)
    reject = (kk < 0) | ((us < 0.013) & (v > us))
    accept = accept1 | (reject.logical_not() & (s <= tt))
    return accept.where(kk, k_out), accepted | accept, r0, r1   # as JAX: a later acceptance replaces an earlier one
  st = (lam * 0 - 1, lam != lam, k[0], k[1])   # lam != lam: False, as a bool Tensor of lam's shape
  return while_loop(lambda st: st[1].logical_not().any(), body, st)[0].cast(dt)

__getattr__ = missing_names("tinyjax.random", "jax.random")

"""JAX's top-level utilities: devices, device_put/device_get, block_until_ready, ShapeDtypeStruct, eval_shape,
make_jaxpr (a readable view of the traced tinygrad graph), linear_transpose, and named_call/named_scope (no-ops: tinyjax
has no name stack)."""
from __future__ import annotations
import contextlib, functools, re
from typing import Any, Callable, Sequence
import numpy as np
from tinygrad import Device as TinygradDevice
from tinyjax import _tg
from tinyjax._tg import Tensor, UOp, Ops, DType, dtypes
from tinyjax.core import serialized, trace_scope, traced_by
from tinyjax.dtypes import is_complex, canonical_array, canonical_dtype, weak_storage_dtype, python_weak_dtype, python_scalar_dtype, to_dtype, \
  dtype_of, is_weak_scalar
from tinyjax.numpy import asarray
from tinyjax import pytree as tu
from tinyjax.complex_array import ComplexArray
from tinyjax.transforms.vjp import vjp
from tinyjax.transforms.pmap import device_names, platform_of

__all__ = ["Device", "devices", "local_devices", "device_count", "local_device_count", "default_backend", "device_put",
           "device_get", "block_until_ready", "ShapeDtypeStruct", "eval_shape", "make_jaxpr", "Jaxpr", "linear_transpose", "named_call",
           "named_scope"]

# ---- devices --------------------------------------------------------------------------------------------------------

class Device:
  """A tinygrad device as JAX shows one: `platform` ("cpu" or "gpu"), `id`, `device_kind` (tinygrad's backend name in
  lower case) and `tinygrad`, the device string tinygrad takes (`Tensor.to(d.tinygrad)`)."""
  def __init__(self, tinygrad: str):
    backend, _, idx = tinygrad.partition(":")
    self.tinygrad, self.id, self.device_kind = tinygrad, int(idx or 0), backend.lower()
    self.platform = platform_of(backend)
  def __repr__(self) -> str: return f"{self.platform.capitalize()}Device(id={self.id})"
  def __str__(self) -> str: return f"{self.platform}:{self.id}"
  def __eq__(self, other) -> bool: return isinstance(other, Device) and other.tinygrad == self.tinygrad
  def __hash__(self) -> int: return hash(self.tinygrad)

def _default() -> Device: return Device(_tg.default_device())

def devices(backend: str | None = None) -> list[Device]:
  """The devices of `backend` (default: tinygrad's default device's). On the CPU, `config.jax_num_cpu_devices` of them
  (CPU, CPU:1, ...; set by XLA's `--xla_force_host_platform_device_count=N` in XLA_FLAGS, as JAX's); another backend
  lists its default device only (a tinygrad multi-device computation names its devices itself, `Tensor.shard`)."""
  return [Device(d) for d in device_names(backend)]

def local_devices(process_index: int | None = None, backend: str | None = None) -> list[Device]: return devices(backend)
def device_count(backend: str | None = None) -> int: return len(devices(backend))
def local_device_count(backend: str | None = None) -> int: return len(devices(backend))
def default_backend() -> str:
  """"cpu" or "gpu": the platform of tinygrad's default device."""
  return _default().platform

def _tinygrad_device(device) -> str | None:
  if device is None or isinstance(device, str): return device
  if isinstance(device, Device): return device.tinygrad
  raise NotImplementedError(f"tinyjax.device_put: device={device!r}: only a tinyjax.Device or a tinygrad device string (shardings "
                            "are not supported; see docs/porting.md)")

def device_put(x, device=None, *, src=None, donate: bool = False, may_alias: bool | None = None):
  """The arrays of pytree `x` as Tensors on `device` (default: where they are; numpy data goes to tinygrad's default
  device with JAX's dtypes, as jnp.asarray)."""
  target = _tinygrad_device(device)
  def put(a):
    t = a if isinstance(a, Tensor) else asarray(a)
    return t if target is None or t.device == target else t.to(target)
  return tu.tree_map(put, x)

def device_get(x):
  """The Tensors of pytree `x` as numpy arrays (realized together); other leaves as they are."""
  ts = [t for t in tu.tree_leaves(x) if isinstance(t, Tensor)]
  if ts: Tensor.realize(*ts)
  return tu.tree_map(lambda a: a.numpy() if isinstance(a, Tensor) else a, x)

def block_until_ready(x):
  """Computes the Tensors of pytree `x` (together) and waits for their devices; returns `x`. Traced values inside a
  transform are left as they are."""
  ts = [t for t in tu.tree_leaves(x) if isinstance(t, Tensor) and traced_by(t) is None]
  if ts:
    Tensor.realize(*ts)
    for d in {t.device for t in ts}:
      for name in (d if isinstance(d, tuple) else (d,)):
        if name is not None: TinygradDevice[name].synchronize()
  return x

# ---- abstract values ------------------------------------------------------------------------------------------------

class ShapeDtypeStruct:
  """An array's shape and dtype, without data: what eval_shape returns, and an input eval_shape/make_jaxpr take. The
  dtype is a tinygrad DType, canonical for x64 as JAX's arrays' are (JAX keeps the one given here)."""
  def __init__(self, shape: Sequence[int], dtype: Any, *, weak_type: bool = False, sharding=None):
    if sharding is not None: raise NotImplementedError("tinyjax.ShapeDtypeStruct: sharding is not supported (see docs/porting.md)")
    self.shape, self.weak_type, self.sharding = tuple(int(d) for d in shape), bool(weak_type), None
    dt = to_dtype(dtype)
    if dt is None: raise TypeError("ShapeDtypeStruct: a dtype is required, got None")
    self.dtype: Any = dt   # a DType, or a ComplexDType
  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def size(self) -> int: return int(np.prod(self.shape, dtype=np.int64))
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of unsized object")
    return self.shape[0]
  def __eq__(self, other) -> bool:
    return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type) == (other.shape, other.dtype, other.weak_type)
  def __hash__(self) -> int: return hash((self.shape, self.dtype, self.weak_type))
  def __repr__(self) -> str:
    name = self.dtype.name if is_complex(self.dtype) else _tg.dtype_name(self.dtype)
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={name}{', weak_type=True' if self.weak_type else ''})"

def _abstract(x, what: str) -> Tensor | ComplexArray:
  """A placeholder standing for the array argument x (Tensor, numpy, Python scalar, ShapeDtypeStruct)."""
  dev = _tg.default_device()
  if isinstance(x, ShapeDtypeStruct) and is_complex(x.dtype):
    part = ShapeDtypeStruct(x.shape, x.dtype.part, weak_type=x.weak_type)
    return ComplexArray(_abstract(part, what), _abstract(part, what))
  if isinstance(x, ShapeDtypeStruct):
    ph = _tg.placeholder(x.shape, x.dtype, dev)
    return ph.cast(dtypes.weakfloat if dtypes.is_float(x.dtype) else dtypes.weakint) if x.weak_type else ph
  if isinstance(x, Tensor):
    if x.dtype in dtypes.weaks: return _tg.placeholder(_tg.static_shape(x), weak_storage_dtype(x.dtype), x.device or dev).cast(x.dtype)
    return _tg.placeholder_like(x) if x.device is not None else _tg.placeholder(_tg.static_shape(x), x.dtype, dev)
  if isinstance(x, (np.ndarray, np.generic, bool, int, float)):
    a = canonical_array(x)
    ph = _tg.placeholder(a.shape, dtype_of(a.dtype), dev)   # JAX's dtype; NotImplementedError for complex
    return ph if (weak := python_weak_dtype(x)) is None else ph.cast(weak)   # Python ints and floats are weakly typed
  raise TypeError(f"{what}: argument {x!r} of type {type(x)} is not a valid JAX type")

def _struct(x, what: str) -> ShapeDtypeStruct:
  if isinstance(x, ComplexArray): return ShapeDtypeStruct(x.shape, canonical_dtype(x.dtype), weak_type=x.weak_type)
  if isinstance(x, Tensor):
    weak = x.dtype in dtypes.weaks
    return ShapeDtypeStruct(_tg.static_shape(x), canonical_dtype(x.dtype), weak_type=weak)
  if is_weak_scalar(x): return ShapeDtypeStruct((), python_scalar_dtype(x), weak_type=not isinstance(x, bool))
  if isinstance(x, (np.ndarray, np.generic)): return ShapeDtypeStruct(np.shape(x), to_dtype(np.asarray(x).dtype))
  if isinstance(x, ShapeDtypeStruct): return x
  raise TypeError(f"{what}: output {x!r} of type {type(x)} is not a valid JAX type")

def _trace(fun: Callable, args: tuple, kwargs: dict, what: str, static: Sequence[int] = ()) -> tuple[list[Tensor], Any]:
  """fun on placeholders for its array arguments (not those at positions `static`): (the placeholders, the output)."""
  dyn = tuple(a for i, a in enumerate(args) if i not in static)
  leaves, tree = tu.tree_flatten((dyn, kwargs))
  abstract = [_abstract(x, what) for x in leaves]
  pargs, pkwargs = tu.tree_unflatten(tree, abstract)
  phs = tu.tree_leaves(abstract)   # a complex ShapeDtypeStruct's two parts
  it = iter(pargs)
  full = [a if i in static else next(it) for i, a in enumerate(args)]
  with trace_scope(what, [p.uop for p in phs]):
    return phs, fun(*full, **pkwargs)

@serialized
def eval_shape(fun: Callable, *args, **kwargs):
  """The shapes and dtypes of fun's outputs (a pytree of ShapeDtypeStruct), traced on placeholders: no data is read,
  nothing is computed."""
  _, out = _trace(fun, args, kwargs, "eval_shape")
  return tu.tree_map(lambda o: _struct(o, "eval_shape"), out, is_leaf=tu.jax_leaf(None))

# ---- linear_transpose, names ------------------------------------------------------------------------------------------

def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
  """jax.linear_transpose: the transpose of the linear function `fun` at arguments shaped as `primals` (arrays or
  ShapeDtypeStructs): a function of a cotangent of fun's output returning the tuple of cotangents of its arguments, in
  the primals' dtypes. It is fun's vjp at zero (for a linear fun the same at every point): an affine fun's constant
  term is dropped, where JAX raises. Float functions only."""
  def struct(x): return x if isinstance(x, ShapeDtypeStruct) else _struct(x, "linear_transpose")
  ins = [struct(x) for x in tu.tree_leaves(primals)]
  out_structs = eval_shape(fun, *primals)
  outs, out_tree = tu.tree_flatten(out_structs)
  in_dt, out_dt = [_tg.dtype_name(a.dtype) for a in ins], [_tg.dtype_name(a.dtype) for a in outs]
  if all(not dtypes.is_float(a.dtype) and a.dtype != dtypes.bool for a in ins + outs):
    raise NotImplementedError("tinyjax.linear_transpose: integer -> integer functions are not supported")
  if not all(dtypes.is_float(a.dtype) for a in ins + outs):
    raise TypeError("linear_transpose only supports [float or complex] -> [float or complex], and integer -> integer "
                    f"functions, but got {in_dt} -> {out_dt}.")
  zeros = tu.tree_map(lambda a: Tensor.zeros(*a.shape, dtype=a.dtype), tu.tree_map(struct, primals),
                      is_leaf=lambda x: isinstance(x, ShapeDtypeStruct))
  _, pullback = vjp(fun, *zeros)
  def transposed(out_cotangent):
    cts, tree = tu.tree_flatten(out_cotangent)
    if tree != out_tree: raise TypeError(f"cotangent tree does not match function output, expected {out_tree} but got {tree}")
    got = [struct(c) for c in cts]
    if any(g.shape != o.shape or (g.dtype != o.dtype and not g.weak_type) for g, o in zip(got, outs, strict=True)):
      raise TypeError(f"cotangent type does not match function output, expected {outs} but got {got}")
    return pullback(out_cotangent)
  return transposed

def named_call(fun: Callable, *, name: str | None = None) -> Callable:
  """jax.named_call: fun itself (JAX names the call in its profiles; tinyjax has no name stack)."""
  return fun

@contextlib.contextmanager
def named_scope(name: str):
  """jax.named_scope: a context that does nothing (JAX's names the operations traced inside it)."""
  if not isinstance(name, str): raise TypeError("named_scope name argument must be a string.")
  yield


# ---- make_jaxpr -----------------------------------------------------------------------------------------------------

_MOVEMENT_ARGS = (Ops.RESHAPE, Ops.EXPAND, Ops.PAD, Ops.SHRINK)   # their src[1:] are shape arguments, shown as params
_REDUCE_NAMES = {Ops.ADD: "sum", Ops.MAX: "max", Ops.MUL: "prod"}

def _short(dt: DType) -> str:
  """JAX's short dtype names: f32, i64, u8, bf16, bool."""
  name = _tg.dtype_name(canonical_dtype(dt) if dt in dtypes.weaks else dt)
  return re.sub(r"^bfloat", "bf", re.sub(r"^float", "f", re.sub(r"^uint", "u", re.sub(r"^int", "i", name))))

def _type(u: UOp) -> str:
  if u.op is Ops.FUNCTION: return _type(u.src[0])
  if u.op is Ops.TUPLE: return f"({', '.join(_type(s) for s in u.src)})"
  try: shape = u.shape if u.op is not Ops.STACK or u.dtype != dtypes.void else ()
  except RuntimeError: return _short(u.dtype)   # a node without a shape
  return f"{_short(u.dtype)}[{','.join(str(d) for d in shape)}]"

def _base(u: UOp) -> UOp:
  """The BUFFER (or PARAM) under an input's reshapes and casts."""
  while u.op in (Ops.RESHAPE, Ops.CAST) and u.src: u = u.src[0]
  return u

def _var_name(i: int) -> str:
  """JAX's variable names: a..z, ba, bb, ..."""
  s = ""
  while True:
    s, i = "abcdefghijklmnopqrstuvwxyz"[i % 26] + s, i // 26
    if i == 0: return s

def _literal(u: UOp) -> str:
  v = u.arg if isinstance(u.arg, (bool, int)) else float(u.arg)
  return repr(v) if u.dtype in dtypes.weaks else f"{v!r}:{_short(u.dtype)}[]"

def _params(u: UOp) -> str:
  if u.op in (Ops.RESHAPE, Ops.EXPAND): return f"[shape={tuple(u.shape)}]"
  if u.op in (Ops.PAD, Ops.SHRINK):
    ins, outs = u.src[0].shape, u.shape
    begin = tuple(int(s.arg) for s in u.src[1].src) if u.src[1].op is Ops.STACK else (int(u.src[1].arg),)
    if u.op is Ops.PAD: return f"[low={begin} high={tuple(o - i - b for o, i, b in zip(outs, ins, begin, strict=True))}]"
    return f"[start={begin} limit={tuple(b + o for b, o in zip(begin, outs, strict=True))}]"
  if u.op is Ops.REDUCE:
    axes = tuple(range(u.arg[1])) if isinstance(u.arg[1], int) else u.arg[1]
    return f"[axes={axes}]"
  if u.op is Ops.FUNCTION:   # a call (custom_jvp/custom_vjp, a tinygrad @function): its body as a nested jaxpr
    params = sorted({p for p in u.src[0].toposort(enter_calls=False) if p.op is Ops.PARAM}, key=lambda p: p.arg.slot)
    body = Jaxpr(params, list(u.src[0].src), [_struct(Tensor(p), "make_jaxpr") for p in params], None)
    return f"[name={getattr(u.arg, 'name', None)} body=" + str(body).replace("\n", "\n    ") + "]"
  if u.op is Ops.CAST or u.arg is None: return ""
  arg = repr(u.arg)
  return f"[{arg if len(arg) <= 60 else arg[:57] + '...'}]"

class Jaxpr:
  """What make_jaxpr returns: the traced tinygrad graph, printed in the layout of JAX's jaxprs with tinygrad's ops, one
  line per UOp (`b:f32[3] = sin a`). Inputs are the function's array arguments, `constvars` the buffers it closes
  over; literals are printed inline, shape arguments as params, and a call (custom_jvp, custom_vjp) with its body as a
  nested jaxpr. `uops` are the output UOps (tinygrad's own `print(jaxpr.uops[0])` shows the tree)."""
  def __init__(self, invars: list[UOp], outs: list, in_avals: list[ShapeDtypeStruct], out_avals):
    self.in_avals, self.out_avals, self.uops = in_avals, out_avals, [o for o in outs if isinstance(o, UOp)]
    self._names: dict[UOp, str] = {}   # variables and literals
    self._count = 0
    self.invars = [self._name(u) for u in invars]
    self._bases = {_base(u): self._names[u] for u in invars}   # an input's buffer, which views of it read
    self.constvars: list[str] = []
    self.eqns: list[str] = []
    self.outvars = [self._walk(o) if isinstance(o, UOp) else repr(o) for o in outs]

  @property
  def jaxpr(self) -> Jaxpr: return self   # JAX's ClosedJaxpr.jaxpr

  def _name(self, u: UOp) -> str:
    self._names[u] = n = _var_name(self._count)
    self._count += 1
    return n

  def _walk(self, root: UOp) -> str:
    """Names root, adding the equations of what it depends on (iteratively: graphs can be deep)."""
    stack: list[tuple[UOp, bool]] = [(root, False)]
    while stack:
      u, ready = stack.pop()
      if u in self._names: continue
      if u.op is Ops.CONST and not u.src:
        self._names[u] = _literal(u)
      elif u in self._bases:   # an input's flat buffer
        self.eqns.append(f"{self._name(u)}:{_type(u)} = buffer_of {self._bases[u]}")
      elif u.op is Ops.BUFFER or (u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER and u.src[0] not in self._bases):
        self.constvars.append(f"{self._name(u)}:{_type(u)}")   # a closed-over buffer
      elif not ready:
        stack.append((u, True))
        stack.extend((s, False) for s in reversed(self._operands(u)) if s not in self._names)
      else:
        ins = " ".join(self._names[s] for s in self._operands(u))
        op = f"reduce_{_REDUCE_NAMES.get(u.arg[0], u.arg[0].name.lower())}" if u.op is Ops.REDUCE else u.op.name.lower()
        self.eqns.append(f"{self._name(u)}:{_type(u)} = {op}{_params(u)} {ins}".rstrip())
    return self._names[root]

  @staticmethod
  def _operands(u: UOp) -> tuple[UOp, ...]:
    return u.src[:1] if u.op in _MOVEMENT_ARGS else u.src[1:] if u.op is Ops.FUNCTION else u.src

  def __str__(self) -> str:
    ins = " ".join(f"{n}:{a_type}" for n, a_type in zip(self.invars, (_aval_type(a) for a in self.in_avals), strict=True))
    body = "".join(f"\n    {e}" for e in self.eqns)
    outs = ", ".join(self.outvars) + ("," if len(self.outvars) == 1 else "")
    return f"{{ lambda {' '.join(self.constvars)}; {ins}. let{body}\n  in ({outs}) }}"

  __repr__ = __str__
  def pretty_print(self) -> str: return str(self)

def _aval_type(a: ShapeDtypeStruct) -> str: return f"{_short(a.dtype)}[{','.join(str(d) for d in a.shape)}]"

def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), axis_env=None, return_shape: bool = False,
               abstracted_axes=None) -> Callable:
  """make_jaxpr(fun)(*args): a `Jaxpr` showing the tinygrad graph fun builds (traced on placeholders, nothing is
  computed); with return_shape=True also eval_shape's result. The ops are tinygrad's, not JAX's primitives."""
  if axis_env is not None or abstracted_axes is not None:
    raise NotImplementedError("tinyjax.make_jaxpr: axis_env and abstracted_axes are not supported (see docs/porting.md)")
  static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
  @serialized
  def make(*args, **kwargs):
    phs, out = _trace(fun, args, kwargs, "make_jaxpr", static)
    shapes = tu.tree_map(lambda o: _struct(o, "make_jaxpr"), out)
    outs = [o.uop if isinstance(o, Tensor) else o for o in tu.tree_leaves(out)]
    jaxpr = Jaxpr([p.uop for p in phs], outs, [_struct(p, "make_jaxpr") for p in phs], shapes)
    return (jaxpr, shapes) if return_shape else jaxpr
  return make

"""A differential fuzzer: random tinygrad programs under random stacks of tinyjax transforms, compared with JAX.

A case is data: the shapes of a few float64 inputs, a short list of op records (elementwise maps, comparisons and
where, reductions with axes and keepdim, reshape/permute/pad/flip/expand, slices with int, list and Tensor indices,
gather, matmul, cat/stack, cumsum, softmax ...) over them, and a stack of 1-3 transforms (vmap with random
in_axes/out_axes and sizes, jvp, grad, jacfwd, jacrev, hessian; argnums), optionally under jit. About one case in
eight is stateful instead: input 0 becomes a closed-over buffer the program reads and then writes (whole, through a
view, or realized inside the function), eagerly or under jit, over four calls that carry the state; JAX's twin returns
the new state, and every output and the state after each call are compared. `source(case)` renders
it as a standalone script defining `g` (tinygrad + tinyjax) and its JAX twin `gj`; `run` execs exactly that script, so
a failure's reproducer is the code that failed. `shrink` deletes transforms, ops, outputs, inputs and dimensions
while the failure keeps its signature.

Every mismatch should be a bug: inputs are uniform in [-2, 2], every value carries a bound on its magnitude and an op
is only generated where its input is in a safe range (exp, sin, prod, cumprod ...); log, sqrt, reciprocal and division
see x*x + 0.5; the ties that structure creates (max over padded zeros, maximum(x, x)) have the same convention in
tinyjax and JAX. Not generated: index patterns where tinygrad's semantics differ from numpy's (an int and a list
separated by a slice), and empty values (JAX's own grad fails on some). Compared: the number of outputs, their shapes,
dtypes and values, |tinyjax - jax| <= 1e-9 (|jax| + max|jax| + 1). Before each call, freed buffers of the outputs'
sizes are left full of NaN, so an output tinyjax never writes shows (`poison`). JAX runs under jax.jit (one XLA
compile per case costs much less than eager dispatch); jit calls run three times (trace, capture, replay), new inputs.

  python tests/fuzzer.py --count 2000 [--seed S] [--jobs 2]     # a campaign (scripts/fuzz.sh)
  python tests/fuzzer.py --seed S --cases 17,42 [--shrink 120]   # rerun (and shrink) the cases of a failure message
"""
import os, re, sys, math, time, signal, datetime, threading, traceback, contextlib, argparse
from dataclasses import dataclass, field, replace
import numpy as np

import jax
jax.config.update("jax_enable_x64", True)

MAX_NUMEL, MAX_DIM, MAX_RANK, MAX_MAG = 96, 6, 4, 1e4   # per value of the program
LEVELS = ["vmap", "jvp", "grad", "jacfwd", "jacrev", "hessian", "vjp", "value_and_grad", "linearize"]
LEVEL_W = [6, 3, 3, 3, 3, 1.5, 1.5, 1, 1]
ORDER, MAX_ORDER = {"vmap": 0, "hessian": 2}, 3         # derivative order of a stack (tinygrad's codegen time grows fast)
MAX_OUT = 768                                           # elements of all outputs at any transform level
RTOL = 1e-9
CMPS = ("<", ">", "<=", ">=", "==", "!=")

def default_seed() -> int:
  return int(os.environ.get("TINYJAX_FUZZ_SEED") or datetime.date.today().strftime("%Y%m%d"))

class Invalid(Exception): pass

def need(c):
  if not c: raise Invalid

def numel(s): return math.prod(s)


@dataclass
class Case:
  seed: int
  index: int
  inputs: list                  # shapes of f's inputs v0..v{n-1}
  consts: list                  # closed-over numpy arrays: float weights, int index arrays (ref -1-k)
  ops: list                     # (kind, refs, params); op i defines v{n+i}
  outs: list                    # refs f returns (a tuple)
  levels: list = field(default_factory=list)   # transforms, innermost first: dicts with "t" and parameters
  jit: int | None = None        # g{jit} is wrapped in tinyjax.jit (0: f itself)
  dup: tuple | None = None      # (i, j): g's argument j is the same Tensor as its argument i
  # a stateful program: input 0 is a closed-over buffer S that f reads, then writes v{src} into ("assign", "realize":
  # assigned and realized inside f, "view": S[:k] only), after computing its outputs from the old S; JAX's twin returns
  # the new state as a last output. No transform (jit or none); each call sees the state the last one left
  state: dict | None = None

  @property
  def name(self): return f"seed={self.seed} case={self.index}"


# ---- the ops: shape, magnitude bound and rendering of each kind -------------------------------------------------------

# name: (tinygrad, jax, magnitude bound of the result from the input's, largest safe input magnitude)
UNARY = {
  "neg": ("-{a}", "-{a}", lambda m: m, None),
  "sin": ("{a}.sin()", "jnp.sin({a})", lambda m: 1.0, 20),     # tinygrad's float64 sin and cos lose digits above ~30
  "cos": ("{a}.cos()", "jnp.cos({a})", lambda m: 1.0, 20),
  "exp": ("{a}.exp()", "jnp.exp({a})", math.exp, 5),
  "tanh": ("{a}.tanh()", "jnp.tanh({a})", lambda m: 1.0, None),
  "sigmoid": ("{a}.sigmoid()", "jax.nn.sigmoid({a})", lambda m: 1.0, None),
  "relu": ("{a}.relu()", "jax.nn.relu({a})", lambda m: m, None),
  "abs": ("{a}.abs()", "jnp.abs({a})", lambda m: m, None),
  "square": ("{a}.square()", "jnp.square({a})", lambda m: m * m, None),
  "log": ("({a}.square() + 0.5).log()", "jnp.log(jnp.square({a}) + 0.5)", lambda m: 1 + math.log(m * m + 0.5), None),
  "sqrt": ("({a}.square() + 0.5).sqrt()", "jnp.sqrt(jnp.square({a}) + 0.5)", lambda m: math.sqrt(m * m + 0.5), None),
  "recip": ("({a}.square() + 0.5).reciprocal()", "1 / (jnp.square({a}) + 0.5)", lambda m: 2.0, None),
  "pow1.5": ("({a}.square() + 0.5) ** 1.5", "(jnp.square({a}) + 0.5) ** 1.5", lambda m: (m * m + 0.5) ** 1.5, None),
  "pow-0.5": ("({a}.square() + 0.5) ** -0.5", "(jnp.square({a}) + 0.5) ** -0.5", lambda m: 1.5, None),
  "pow3": ("{a} ** 3", "{a} ** 3", lambda m: m ** 3, None),
  "silu": ("{a}.silu()", "jax.nn.silu({a})", lambda m: m, None),
  "softplus": ("{a}.softplus()", "jax.nn.softplus({a})", lambda m: m + 1, None),
  "clip": ("{a}.clip(-0.5, 0.7)", "jnp.clip({a}, -0.5, 0.7)", lambda m: 0.7, None),
}
SCALAR = {"mul": ("({a} * {c})", lambda m, c: m * abs(c)), "add": ("({a} + {c})", lambda m, c: m + abs(c)),
          "rsub": ("({c} - {a})", lambda m, c: m + abs(c)), "div": ("({a} / {c})", lambda m, c: m / abs(c))}
SCALARS = (-1.5, -0.5, 0.25, 2.0, 3.0)
BINARY = {
  "add": ("({a} + {b})", "({a} + {b})", lambda m, n: m + n),
  "sub": ("({a} - {b})", "({a} - {b})", lambda m, n: m + n),
  "mul": ("({a} * {b})", "({a} * {b})", lambda m, n: m * n),
  "div": ("({a} / ({b}.square() + 0.5))", "({a} / (jnp.square({b}) + 0.5))", lambda m, n: 2 * m),
  "maximum": ("{a}.maximum({b})", "jnp.maximum({a}, {b})", max),
  "minimum": ("{a}.minimum({b})", "jnp.minimum({a}, {b})", max),
}
# name: (tinygrad method, jax function, magnitude bound from (input bound, reduced count))
REDUCE = {
  "sum": ("sum", "jnp.sum", lambda m, n: m * n), "mean": ("mean", "jnp.mean", lambda m, n: m),
  "max": ("max", "jnp.max", lambda m, n: m), "min": ("min", "jnp.min", lambda m, n: m),
  "prod": ("prod", "jnp.prod", lambda m, n: m ** n), "var": ("var", "jnp.var", lambda m, n: 4 * m * m),
  "logsumexp": ("logsumexp", "jax.scipy.special.logsumexp", lambda m, n: m + math.log(n)),
}
REDUCE_W = {"sum": 4, "mean": 2, "max": 2, "min": 1, "prod": 1, "var": 1, "logsumexp": 1}

def _axis(ax, nd, extra=0):
  need(isinstance(ax, int) and -nd - extra <= ax < nd + extra)
  return ax % (nd + extra)

def _axes(axis, nd):
  if axis is None: return tuple(range(nd))
  axes = tuple(_axis(a, nd) for a in (axis if isinstance(axis, tuple) else (axis,)))
  need(len(set(axes)) == len(axes))
  return axes

def _bcast(*shapes):
  try: return tuple(np.broadcast_shapes(*shapes))
  except ValueError: raise Invalid from None

def _np_index(idx, consts):
  """The index as numpy understands it (for its shape and bounds)."""
  conv = {"i": lambda c: c[1], "s": lambda c: slice(*c[1:]), "l": lambda c: np.array(c[1], dtype=np.intp),
          "t": lambda c: consts[c[1]], "n": lambda c: None, "e": lambda c: Ellipsis}
  return tuple(conv[c[0]](c) for c in idx)

def _index_ok(idx):
  """tinygrad removes int-indexed dims before placing list indices; numpy treats ints as advanced indices when lists
  are present, so the two agree only when the ints and lists are adjacent (or there are no lists)."""
  pos = [i for i, c in enumerate(idx) if c[0] in "ilt"]
  return not any(c[0] in "lt" for c in idx) or pos == list(range(pos[0], pos[-1] + 1))

def op_shape(kind, shapes, p, consts):
  """The shape op `kind` makes from its operands' shapes; Invalid when the op does not apply."""
  s = shapes[0]
  nd = len(s)
  if kind in ("un", "sc", "scan", "smax"):
    if kind in ("scan", "smax"): _axis(p["axis"], nd)
    return s
  if kind in ("bin", "where", "wherek", "wheres", "cmp"): return _bcast(*shapes)
  if kind == "red":
    axes = _axes(p["axis"], nd)
    need(nd > 0 or p["axis"] is None)
    need(p["f"] != "var" or numel([s[a] for a in axes]) > p["corr"])
    return tuple(1 if i in axes else d for i, d in enumerate(s) if p["keep"] or i not in axes)
  if kind == "reshape":
    shp = p["shape"]
    known = numel([d for d in shp if d != -1])
    need(shp.count(-1) <= 1 and all(d > 0 or d == -1 for d in shp))
    if -1 in shp:
      need(known > 0 and numel(s) % known == 0)
      return tuple(numel(s) // known if d == -1 else d for d in shp)
    need(known == numel(s))
    return tuple(shp)
  if kind == "permute":
    need(sorted(p["perm"]) == list(range(nd)))
    return tuple(s[i] for i in p["perm"])
  if kind == "swap":
    d0, d1 = _axis(p["d0"], nd), _axis(p["d1"], nd)
    out = list(s)
    out[d0], out[d1] = s[d1], s[d0]
    return tuple(out)
  if kind == "pad":
    need(len(p["pads"]) == nd and nd > 0)
    return tuple(d + l + r for d, (l, r) in zip(s, p["pads"], strict=True))
  if kind == "flip":
    need(nd > 0)
    _axes(p["axis"], nd)
    return s
  if kind == "expand":
    shp = tuple(p["shape"])
    need(len(shp) >= nd and all(a == b or a == 1 for a, b in zip(s, shp[len(shp) - nd:], strict=True)))
    return shp
  if kind == "unsqueeze":
    d = _axis(p["dim"], nd, 1)
    return s[:d] + (1,) + s[d:]
  if kind == "squeeze":
    if p["dim"] is None: return tuple(d for d in s if d != 1)
    d = _axis(p["dim"], nd)
    need(s[d] == 1)
    return s[:d] + s[d + 1:]
  if kind == "index":
    need(_index_ok(p["idx"]))
    try: return np.empty(s)[_np_index(p["idx"], consts)].shape
    except IndexError: raise Invalid from None
  if kind == "gather":
    d, idx = _axis(p["dim"], nd), shapes[1]
    need(len(idx) == nd and all(a == b for i, (a, b) in enumerate(zip(s, idx, strict=True)) if i != d))
    need(consts[-1 - p["index"]].max() < s[d])
    return idx
  if kind == "matmul":
    need(nd > 0 and len(shapes[1]) > 0)
    try: return (np.zeros(s) @ np.zeros(shapes[1])).shape
    except ValueError: raise Invalid from None
  if kind == "cat":
    d, t = _axis(p["dim"], nd), shapes[1]
    need(len(t) == nd and all(a == b for i, (a, b) in enumerate(zip(s, t, strict=True)) if i != d))
    return s[:d] + (s[d] + t[d],) + s[d + 1:]
  if kind == "stack":
    need(shapes[1] == s)
    d = _axis(p["dim"], nd, 1)
    return s[:d] + (2,) + s[d:]
  raise AssertionError(kind)

def op_mag(kind, mags, shapes, p):
  """A bound on |result| from the operands' bounds; Invalid where an input could leave the op's safe range."""
  m = mags[0]
  if kind == "un":
    need(UNARY[p["f"]][3] is None or m <= UNARY[p["f"]][3])
    return UNARY[p["f"]][2](m)
  if kind == "sc": return SCALAR[p["f"]][1](m, p["c"])
  if kind == "bin": return BINARY[p["f"]][2](m, mags[1])
  if kind == "cmp": return 1.0
  if kind == "wheres": return max(mags[1], abs(p["s"]))
  if kind == "red":
    axes = _axes(p["axis"], len(shapes[0]))
    return REDUCE[p["f"]][2](m, numel([shapes[0][a] for a in axes]))
  if kind == "scan":
    n = shapes[0][p["axis"]]
    return m * n if p["f"] == "cumsum" else max(m, m ** n)
  if kind == "smax": return 1.0 if p["f"] == "softmax" else 2 * m + math.log(shapes[0][p["axis"]]) + 1
  if kind == "pad": return max(m, abs(p["value"]))
  if kind == "matmul": return m * mags[1] * (shapes[0][-1])
  if kind in ("where", "wherek", "cat", "stack"): return max(mags[:2])
  return m   # movement and indexing

def _idx_src(idx, jx):
  def one(c):
    if c[0] == "i": return str(c[1])
    if c[0] == "s": return ":".join("" if v is None else str(v) for v in c[1:3 if c[3] is None else 4])
    if c[0] == "l": return f"np.array({c[1]})" if jx else str(c[1])
    if c[0] == "t": return f"c{c[1]}" if jx else f"C{c[1]}"
    return "None" if c[0] == "n" else "..."
  return ", ".join(one(c) for c in idx)

def op_src(kind, names, p, jx):
  """The expression for op `kind` on operands `names`, for tinygrad (jx=False) or jax.numpy (jx=True)."""
  a, b = names[0], (names + [None])[1]
  if kind == "un": return UNARY[p["f"]][jx].format(a=a)
  if kind == "sc": return SCALAR[p["f"]][0].format(a=a, c=p["c"])
  if kind == "bin": return BINARY[p["f"]][jx].format(a=a, b=b)
  if kind == "cmp": return f"({a} {p['cmp']} {b}).{'astype(jnp.float64)' if jx else 'cast(dtypes.float64)'}"
  if kind in ("where", "wherek", "wheres"):
    cond = f"{a} {p['cmp']} {b if kind == 'where' else p['k']}"
    x, y = (b, p["s"]) if kind == "wheres" else (a, b)
    return f"jnp.where({cond}, {x}, {y})" if jx else f"({cond}).where({x}, {y})"
  if kind == "red":
    f, ax, keep = p["f"], p["axis"], p["keep"]
    corr = (f", ddof={p['corr']}" if jx else f", correction={p['corr']}") if f == "var" else ""
    return f"{REDUCE[f][1]}({a}, axis={ax}, keepdims={keep}{corr})" if jx else f"{a}.{REDUCE[f][0]}(axis={ax}, keepdim={keep}{corr})"
  if kind == "scan": return f"jnp.{p['f']}({a}, axis={p['axis']})" if jx else f"{a}.{p['f']}({p['axis']})"
  if kind == "smax": return f"jax.nn.{p['f']}({a}, axis={p['axis']})" if jx else f"{a}.{p['f']}({p['axis']})"
  if kind == "reshape": return f"jnp.reshape({a}, {p['shape']})" if jx else f"{a}.reshape({p['shape']})"
  if kind == "permute": return f"jnp.transpose({a}, {p['perm']})" if jx else f"{a}.permute({p['perm']})"
  if kind == "swap": return f"jnp.swapaxes({a}, {p['d0']}, {p['d1']})" if jx else f"{a}.transpose({p['d0']}, {p['d1']})"
  if kind == "pad":
    v = p["value"]
    if jx: return f"jnp.pad({a}, {p['pads']}{f', constant_values={v}' if v else ''})"
    return f"{a}.pad({p['pads']}{f', value={v}' if v else ''})"
  if kind == "flip": return f"jnp.flip({a}, {p['axis']})" if jx else f"{a}.flip({p['axis']})"
  if kind == "expand": return f"jnp.broadcast_to({a}, {p['shape']})" if jx else f"{a}.expand({p['shape']})"
  if kind == "unsqueeze": return f"jnp.expand_dims({a}, {p['dim']})" if jx else f"{a}.unsqueeze({p['dim']})"
  if kind == "squeeze":
    if p["dim"] is None: return f"jnp.squeeze({a})" if jx else f"{a}.squeeze()"
    return f"jnp.squeeze({a}, {p['dim']})" if jx else f"{a}.squeeze({p['dim']})"
  if kind == "index": return f"{a}[{_idx_src(p['idx'], jx)}]"
  if kind == "gather": return f"jnp.take_along_axis({a}, {b}, axis={p['dim']})" if jx else f"{a}.gather({p['dim']}, {b})"
  if kind == "matmul": return f"({a} @ {b})"
  if kind == "cat": return f"jnp.concatenate([{a}, {b}], axis={p['dim']})" if jx else f"{a}.cat({b}, dim={p['dim']})"
  if kind == "stack": return f"jnp.stack([{a}, {b}], axis={p['dim']})" if jx else f"{a}.stack({b}, dim={p['dim']})"
  raise AssertionError(kind)


# ---- analysis: shapes and bounds of every value, shapes through the transform levels ----------------------------------

def analyze(case):
  """Shapes and magnitude bounds of v0..vN; Invalid if an op does not apply or a value is too large."""
  shapes, mags = [tuple(s) for s in case.inputs], [2.0] * len(case.inputs)
  def cshape(r): return shapes[r] if r >= 0 else case.consts[-1 - r].shape
  def cmag(r): return mags[r] if r >= 0 else float(np.abs(case.consts[-1 - r]).max(initial=0))
  for kind, refs, p in case.ops:
    need(all(-len(case.consts) <= r < len(shapes) for r in refs))
    ins = [cshape(r) for r in refs]
    s = op_shape(kind, ins, p, case.consts)
    m = op_mag(kind, [cmag(r) for r in refs], ins, p)
    need(numel(s) <= MAX_NUMEL and len(s) <= MAX_RANK and all(1 <= d <= MAX_DIM for d in s) and m <= MAX_MAG)
    shapes.append(tuple(s))
    mags.append(m)
  if (st := case.state) is not None:
    need(0 < st["src"] < len(shapes) and shapes[st["src"]] == shapes[0] and not case.levels)
    need(st["how"] != "view" or len(shapes[0]) >= 1 and 0 < st["k"] < shapes[0][0])
  return shapes, mags


def _argnums(an, n):
  ans = an if isinstance(an, tuple) else (an,)
  need(ans and all(0 <= a < n for a in ans) and len(set(ans)) == len(ans))
  return ans

def level_shapes(case, shapes=None, fix=False):
  """[(arg shapes, out shapes)] of f and of each transform level; Invalid for parameters that do not fit. fix=True
  first repairs (in place, on copies of the levels) what shrinking breaks: vmap axes out of range, out_axes count."""
  shapes = shapes or analyze(case)[0]
  need(case.outs and all(0 <= r < len(shapes) for r in case.outs))
  args, outs = [tuple(s) for s in case.inputs], [shapes[r] for r in case.outs]
  res = [(args, outs)]
  if fix: case.levels = [dict(lv) for lv in case.levels]
  def clamp(x, nd): return None if x is None else max(-nd - 1, min(nd, x))
  def put(s, x, n): return s[:_axis(x, len(s), 1)] + (n,) + s[_axis(x, len(s), 1):]
  for lv in case.levels:
    t = lv["t"]
    if t == "vmap":
      if fix:
        lv["in_axes"] = [clamp(x, len(a)) for a, x in zip(args, lv["in_axes"], strict=True)]
        lv["out_axes"] = [clamp(x, len(o)) for o, x in zip(outs, (lv["out_axes"] + [0] * len(outs))[:len(outs)], strict=True)]
      ia, oa = lv["in_axes"], lv["out_axes"]
      need(len(ia) == len(args) and len(oa) == len(outs) and any(a is not None for a in ia))
      args = [a if x is None else put(a, x, lv["size"]) for a, x in zip(args, ia, strict=True)]
      outs = [put(o, x, lv["size"]) for o, x in zip(outs, oa, strict=True)]
    elif t in ("jvp", "linearize"): args, outs = args + args, outs + outs
    elif t == "vjp": args, outs = args + outs, outs + args
    elif t == "grad": outs = [args[a] for a in _argnums(lv["argnums"], len(args))]
    elif t == "value_and_grad": outs = [()] + [args[a] for a in _argnums(lv["argnums"], len(args))]
    elif t in ("jacfwd", "jacrev"): outs = [o + args[a] for o in outs for a in _argnums(lv["argnums"], len(args))]
    elif t == "hessian":
      ans = _argnums(lv["argnums"], len(args))
      outs = [o + args[j] + args[i] for o in ([()] if lv["scalar"] else outs) for j in ans for i in ans]
    need(sum(numel(o) for o in outs) <= MAX_OUT and all(numel(a) <= MAX_OUT for a in args))
    res.append((args, outs))
  need(case.jit is None or 0 <= case.jit <= len(case.levels))
  need(case.dup is None or max(case.dup) < len(args) and args[case.dup[0]] == args[case.dup[1]])
  return res


# ---- the generator ------------------------------------------------------------------------------------------------------

def _choice(rng, items, weights=None):
  items = list(items)
  if weights is not None: weights = np.asarray(weights, dtype=float) / sum(weights)
  return items[rng.choice(len(items), p=weights)]

class Gen:
  """Draws one case; `shapes`/`mags` grow with each op."""
  def __init__(self, seed, index):
    self.rng = np.random.default_rng([seed, index])
    self.case = Case(seed, index, [], [], [], [])

  def ri(self, lo, hi): return int(self.rng.integers(lo, hi))   # in [lo, hi)

  def rand_shape(self, rank=None):
    rank = _choice(self.rng, range(4), [1, 3, 4, 2]) if rank is None else rank
    return tuple(int(d) for d in self.rng.choice([1, 2, 3, 4], rank, p=[0.1, 0.35, 0.35, 0.2]))

  def const(self, arr):
    self.case.consts.append(arr)
    return -len(self.case.consts)

  def cshape(self, r): return self.shapes[r] if r >= 0 else self.case.consts[-1 - r].shape

  def operand(self, ok, const_shape=None, p_const=0.3):
    """An earlier value whose shape satisfies `ok`, or a new constant of shape `const_shape()`."""
    cands = [r for r, s in enumerate(self.shapes) if ok(s)]
    fresh = [r for r in cands if r in self.unused()]
    if cands and (const_shape is None or self.rng.random() > p_const): return _choice(self.rng, fresh if fresh and self.rng.random() < 0.6 else cands)
    return None if const_shape is None else self.const(self.rng.uniform(-1.5, 1.5, const_shape()))

  def unused(self):
    """The values no op uses yet."""
    used = {r for _, refs, _ in self.case.ops for r in refs}
    return [r for r in range(len(self.shapes)) if r not in used]

  def bcast_shape(self, s):
    s = s[int(self.rng.integers(0, len(s) + 1)):]   # drop leading dims, set some dims to 1
    return tuple(1 if self.rng.random() < 0.3 else d for d in s)

  def op(self, a):
    """(kind, refs, params) of a random op with first operand v{a}, or None."""
    rng, ri, s = self.rng, self.ri, self.shapes[a]
    nd = len(s)
    kind = _choice(rng, ["un", "sc", "bin", "where", "wherek", "wheres", "cmp", "red", "scan", "smax", "reshape", "permute",
                         "swap", "pad", "flip", "expand", "unsqueeze", "squeeze", "index", "gather", "matmul", "cat", "stack"],
                   [18, 5, 12, 3, 2, 2, 2, 12, 4, 4, 5, 3, 2, 4, 3, 3, 2, 1, 8, 2, 6, 3, 3])
    cmp = _choice(rng, CMPS, [3, 3, 1, 1, 1, 1])
    def bop(): return self.operand(lambda t: _ok(lambda: _bcast(s, t)), lambda: self.bcast_shape(s))
    if kind == "un": return kind, [a], {"f": _choice(rng, UNARY)}
    if kind == "sc": return kind, [a], {"f": _choice(rng, SCALAR), "c": _choice(rng, SCALARS)}
    if kind == "bin": return kind, [a, bop()], {"f": _choice(rng, BINARY)}
    if kind in ("where", "cmp"): return kind, [a, bop()], {"cmp": cmp}
    if kind == "wherek": return kind, [a, bop()], {"cmp": cmp, "k": _choice(rng, (0.0, 0.5, -0.3))}
    if kind == "wheres": return kind, [a, bop()], {"cmp": cmp, "k": _choice(rng, (0.0, 0.5, -0.3)), "s": _choice(rng, (0.0, 1.5, -0.5))}
    axis = ri(-nd, nd) if nd else None
    if kind == "red":
      f = _choice(rng, REDUCE_W, list(REDUCE_W.values()))
      if nd and f != "logsumexp" and rng.random() < 0.25: axis = tuple(sorted({ri(-nd, nd) % nd, ri(-nd, nd) % nd}))
      elif rng.random() < 0.2: axis = None
      return kind, [a], {"f": f, "axis": axis, "keep": bool(rng.random() < 0.4), "corr": ri(0, 2)}
    if nd == 0 and kind not in ("reshape", "expand", "unsqueeze", "index", "matmul"): return None
    if kind == "scan": return kind, [a], {"f": _choice(rng, ("cumsum", "cumprod"), [3, 1]), "axis": axis}
    if kind == "smax": return kind, [a], {"f": _choice(rng, ("softmax", "log_softmax")), "axis": axis}
    if kind == "reshape":
      shp = [1] * ri(0 if numel(s) == 1 else 1, 5)
      for f in _factors(numel(s)): shp[ri(0, len(shp))] *= f
      if shp and rng.random() < 0.25: shp[ri(0, len(shp))] = -1
      return kind, [a], {"shape": tuple(shp)}
    if kind == "permute": return (kind, [a], {"perm": tuple(int(i) for i in rng.permutation(nd))}) if nd >= 2 else None
    if kind == "swap": return (kind, [a], {"d0": ri(-nd, nd), "d1": ri(-nd, nd)}) if nd >= 2 else None
    if kind == "pad":
      return kind, [a], {"pads": tuple((ri(0, 3), ri(0, 3)) if rng.random() < 0.6 else (0, 0) for _ in s),
                         "value": _choice(rng, (0.0, 0.0, 1.0, -0.5))}
    if kind == "flip": return kind, [a], {"axis": axis if rng.random() < 0.6 else tuple(sorted({ri(0, nd), ri(0, nd)}))}
    if kind == "expand":
      shp = tuple(ri(1, 4) if d == 1 else d for d in s)
      if shp == s or rng.random() < 0.4: shp = (ri(2, 4),) + shp
      return kind, [a], {"shape": shp}
    if kind == "unsqueeze": return kind, [a], {"dim": ri(-nd - 1, nd + 1)}
    if kind == "squeeze":
      ones = [i for i, d in enumerate(s) if d == 1]
      return (kind, [a], {"dim": _choice(rng, ones) if rng.random() < 0.7 else None}) if ones else None
    if kind == "index": return kind, [a], {"idx": self.index(s)}
    if kind == "gather":
      d = axis % nd
      idx = rng.integers(0, s[d], s[:d] + (ri(1, 4),) + s[d + 1:])
      return kind, [a, self.const(idx)], {"dim": axis, "index": -len(self.case.consts)}
    if kind == "matmul":
      if nd == 0: return None
      k = s[-1]
      def const_shape():
        m = ri(1, 5)
        return _choice(rng, [(k,), (k, m), s[:-2] + (k, m)])
      return kind, [a, self.operand(lambda t: len(t) > 0 and _ok(lambda: np.zeros(s) @ np.zeros(t)), const_shape)], {}
    if kind == "cat":
      d = axis % nd
      return kind, [a, self.operand(lambda t: len(t) == nd and t[:d] == s[:d] and t[d + 1:] == s[d + 1:],
                                    lambda: s[:d] + (ri(1, 4),) + s[d + 1:])], {"dim": axis}
    if kind == "stack": return kind, [a, self.operand(lambda t: t == s, lambda: s)], {"dim": ri(-nd - 1, nd + 1)}
    return None

  def index(self, s):
    """An index tuple for shape s: ints, slices, lists, int Tensors, None and Ellipsis."""
    rng, ri, nd = self.rng, self.ri, len(s)
    ell = nd and rng.random() < 0.15
    k = ri(1, nd + 1) if nd else 0
    comps, n_adv, adv_len = [], 0, ri(1, 4)
    for n in (s[nd - k:] if ell else s[:k]):
      if rng.random() < 0.08: comps.append(("n",))
      r = rng.random()
      if r < 0.25: comps.append(("i", ri(-n, n)))
      elif r < 0.65 or n_adv >= 2:
        step = _choice(rng, (None, None, 1, 2, -1, -2))
        comps.append(("s", _choice(rng, (None, ri(-n, n + 1))), _choice(rng, (None, ri(-n, n + 1))), step))
      else:
        n_adv += 1
        if rng.random() < 0.6: comps.append(("l", [ri(-n, n) for _ in range(adv_len)]))
        else: comps.append(("t", -1 - self.const(rng.integers(0, n, adv_len))))
    if ell: comps.insert(0, ("e",))
    return comps or [("n",)]

  def levels(self, depth):
    """Transform levels (and jit) on top of the program; Invalid if their shapes get too large."""
    rng, ri, c = self.rng, self.ri, self.case
    c.levels = []
    for _ in range(depth):
      args, outs = level_shapes(c, self.shapes)[-1]
      t = _choice(rng, LEVELS, LEVEL_W)
      def argnums():
        ans = [i for i in range(len(args)) if rng.random() < 0.5] or [ri(0, len(args))]
        if len(ans) > 1 and rng.random() < 0.2: ans = ans[::-1]
        return ans[0] if len(ans) == 1 and rng.random() < 0.5 else tuple(ans)
      if t == "vmap":
        ia = [None if rng.random() < 0.25 else ri(-len(a) - 1, len(a) + 1) for a in args]
        if all(x is None for x in ia): ia[ri(0, len(ia))] = 0
        lv = {"t": t, "size": _choice(rng, (1, 2, 3), [1, 3, 3]), "in_axes": ia,
              "out_axes": [ri(-len(o) - 1, len(o) + 1) for o in outs], "prefix": rng.random() < 0.3}
      elif t in ("jvp", "linearize", "vjp"): lv = {"t": t}
      else: lv = {"t": t, "argnums": argnums(), "scalar": rng.random() < 0.7}
      c.levels.append(lv)
    need(sum(ORDER.get(lv["t"], 1) for lv in c.levels) <= MAX_ORDER)
    args = level_shapes(c, self.shapes)[-1][0]
    c.jit = None if rng.random() > 0.3 else (depth if rng.random() < 0.6 else ri(0, depth + 1))
    same = [(i, j) for j in range(len(args)) for i in range(j) if args[i] == args[j]]
    c.dup = _choice(rng, same) if same and rng.random() < 0.15 else None

  def stateful(self):
    """The program as a stateful one (Case.state) writing one of its values of v0's shape into v0, or None."""
    rng, c = self.rng, self.case
    srcs = [r for r in range(len(c.inputs), len(self.shapes)) if self.shapes[r] == self.shapes[0]]
    if not srcs or not any(0 in refs for _, refs, _ in c.ops): return None
    how = _choice(rng, ("assign", "realize", "view"), [4, 2, 2 if self.shapes[0] and self.shapes[0][0] > 1 else 0])
    st = {"src": _choice(rng, srcs), "how": how, "state_first": rng.random() < 0.5}
    if how == "view": st["k"] = self.ri(1, self.shapes[0][0])
    case = replace(c, state=st, levels=[], jit=0 if rng.random() < 0.6 else None, dup=None)
    try: analyze(case)
    except Invalid: return None
    return case

  def draw(self):
    rng, c = self.rng, self.case
    c.inputs = [self.rand_shape() for _ in range(_choice(rng, (1, 2, 3), [5, 4, 2]))]
    self.shapes, self.mags = analyze(c)
    for _ in range(_choice(rng, range(1, 7), [3, 3, 3, 2, 2, 2])):
      for _ in range(30):
        r, fresh = rng.random(), self.unused()   # mostly the last value or one not used yet: little dead code
        a = len(self.shapes) - 1 if r < 0.5 else _choice(rng, fresh) if r < 0.85 else self.ri(0, len(self.shapes))
        n_ops, n_consts = len(c.ops), len(c.consts)
        try:
          if (o := self.op(a)) is None or None in o[1]: raise Invalid
          c.ops.append(o)
          self.shapes, self.mags = analyze(c)
          break
        except Invalid:
          del c.ops[n_ops:], c.consts[n_consts:]
    c.outs = [len(self.shapes) - 1]
    if (fresh := [r for r in self.unused()[:-1] if r >= len(c.inputs)]) and rng.random() < 0.5: c.outs.append(_choice(rng, fresh))
    if rng.random() < 0.08: c.outs.insert(self.ri(0, 2), self.ri(0, len(c.inputs)))   # an input returned as it is
    self.case = c = _dce(c)
    self.shapes, self.mags = analyze(c)
    if rng.random() < 0.12 and (s := self.stateful()) is not None: return s
    for depth in (_choice(rng, (1, 2, 3), [7, 4, 1]), 2, 1, 1, 1):
      try:
        self.levels(depth)
        return c
      except Invalid: pass
    c.outs = [len(self.shapes) - 1]
    c.levels = [{"t": "vmap", "size": 2, "in_axes": [0] * len(c.inputs), "out_axes": [0], "prefix": False}]
    level_shapes(c, self.shapes)
    return c


def _ok(fn):
  try:
    fn()
    return True
  except (Invalid, ValueError): return False

def _factors(n):
  out, p = [], 2
  while n > 1:
    while n % p == 0:
      out.append(p)
      n //= p
    p += 1
  return out

def generate(seed, index) -> Case: return Gen(seed, index).draw()


# ---- rendering a case as a standalone script ------------------------------------------------------------------------

def _arr(a):
  return f"np.array({a.tolist()!r}, dtype=np.{a.dtype})"

def weights(case, k, shapes):
  """The fixed cotangent weights that make level k's outputs a scalar (grad, and hessian when scalar)."""
  rng = np.random.default_rng([case.seed, case.index, 1000 + k])
  return [rng.uniform(-1.5, 1.5, s) for s in shapes]

def _scalar(lv):
  """Whether level lv differentiates loss(outputs, weights) (a scalar) instead of the outputs."""
  return lv["t"] in ("grad", "value_and_grad") or lv["t"] == "hessian" and lv["scalar"]

def source(case, calls=None) -> str:
  """The case as Python: f/fj, the levels g1/gj1 ..., g/gj; with `calls` (lists of inputs), code that runs them."""
  shapes = analyze(case)[0]
  lv_shapes = level_shapes(case, shapes)
  n = len(case.inputs)
  used = {-1 - r for _, refs, _ in case.ops for r in refs if r < 0} | {c[1] for _, _, p in case.ops for c in p.get("idx", ()) if c[0] == "t"}
  L = [f"# tinyjax fuzz case {case.name}", "import numpy as np", "import jax, jax.numpy as jnp", "import jax.scipy.special",
       "from tinygrad import Tensor, dtypes",
       "from tinygrad.uop.ops import Ops, GroupOp", "import tinyjax", 'jax.config.update("jax_enable_x64", True)', ""]
  for k in sorted(used): L += [f"c{k} = {_arr(case.consts[k])}", f"C{k} = Tensor(c{k})"]
  if (st := case.state) is not None:
    L += [f"S = Tensor({_arr(draw_state(case))}).contiguous().realize()   # the state", "",
          "def own(t):   # a view of S (S.T, or an op tinygrad folds to one) sees S's write, as views do; JAX's value does not",
          "  u = t.uop",
          "  while u.op in GroupOp.Movement | {Ops.DETACH, Ops.AFTER}: u = u.src[0]",
          "  return t.clone() if u is S.uop.base.buf_uop else t"]
  for jx in (False, True):
    def name(r, jx=jx): return (f"c{-1 - r}" if jx else f"C{-1 - r}") if r < 0 else f"v{r}"
    params = range(1 if st is not None and not jx else 0, n)
    L += ["", f"def {'fj' if jx else 'f'}({', '.join(f'v{i}' for i in params)}):"] + (["  v0 = S"] if 0 not in params else [])
    L += [f"  v{n + i} = {op_src(kind, [name(r) for r in refs], p, jx)}" for i, (kind, refs, p) in enumerate(case.ops)]
    outs = [f"v{r}" for r in case.outs]
    if st is not None and not jx:   # each output as it is before the write
      L += [f"  o{k} = own({o})" for k, o in enumerate(outs)]
      outs = [f"o{k}" for k in range(len(outs))]
    L += [f"  {_state_write(st, jx)}"] if st is not None else []
    L += [f"  return ({''.join(f'{o}, ' for o in outs)}{'new, ' if st is not None and jx else ''})"]
  L += ["", "def flat(t): return tuple(y for x in t for y in flat(x)) if isinstance(t, (tuple, list)) else (t,)",
        "def loss(outs, ws): return sum((o * w).sum() for o, w in zip(outs, ws, strict=True))",
        "def vjp_(mod, f, n): return lambda *a: (lambda out, fn: flat((out, fn(tuple(a[n:])))))(*mod.vjp(f, *a[:n]))",
        "def linearize_(mod, f, n): return lambda *a: (lambda out, fn: flat((out, fn(*a[n:]))))(*mod.linearize(f, *a[:n]))",
        "g0, gj0 = f, fj"]
  if case.jit == 0: L.append("g0 = tinyjax.jit(g0)")
  for k, lv in enumerate(case.levels, 1):
    t, (args, outs) = lv["t"], lv_shapes[k - 1]
    if _scalar(lv):
      L += [f"w{k} = [{', '.join(_arr(w) for w in weights(case, k, outs))}]", f"W{k} = [Tensor(w) for w in w{k}]"]
    for jx in (False, True):
      mod, g, prev, W = ("jax", f"gj{k}", f"gj{k - 1}", f"w{k}") if jx else ("tinyjax", f"g{k}", f"g{k - 1}", f"W{k}")
      if t == "vmap":
        ia, oa = lv["in_axes"], lv["out_axes"]
        ia = ia[0] if lv["prefix"] and len(set(ia)) == 1 else tuple(ia)
        oa = oa[0] if lv["prefix"] and len(set(oa)) == 1 else tuple(oa)
        L.append(f"{g} = {mod}.vmap({prev}, in_axes={ia}, out_axes={oa})")
      elif t == "jvp": L.append(f"{g} = lambda *a: flat({mod}.jvp({prev}, a[:{len(args)}], a[{len(args)}:]))")
      elif t in ("vjp", "linearize"): L.append(f"{g} = {t}_({mod}, {prev}, {len(args)})")
      else:
        fn = f"lambda *b: loss({prev}(*b), {W})" if _scalar(lv) else prev
        L.append(f"{g} = lambda *a: flat({mod}.{t}({fn}, argnums={lv['argnums']})(*a))")
    if case.jit == k: L.append(f"g{k} = tinyjax.jit(g{k})")
  L.append(f"g, gj = g{len(case.levels)}, jax.jit(gj{len(case.levels)})")
  if calls is not None and st is not None:
    L += ["", "state = S.numpy()", "for args in ["] + [f"    [{', '.join(_arr(a) for a in args)}]," for args in calls] + ["]:",
          "  *want, state = [np.asarray(w) for w in gj(state, *args)]",
          "  outs = g(*[Tensor(a) for a in args])",
          "  s = S.numpy()" if st["state_first"] else "  got = [t.numpy() for t in outs]",
          "  got = [t.numpy() for t in outs]" if st["state_first"] else "  s = S.numpy()",
          "  print('outputs agree:', all(np.allclose(x, y, rtol=1e-9, atol=1e-9) for x, y in zip(got, want, strict=True)),",
          "        'state agrees:', np.allclose(s, state, rtol=1e-9, atol=1e-9))"]
  elif calls is not None:
    L += ["", "from tinygrad import Device", "from tinygrad.device import Buffer",
          "def poison(sizes):   # freed buffers full of NaN: an output tinyjax never writes shows as NaN",
          "  bufs = [Buffer(Device.DEFAULT, n, dtypes.float64, initial_value=np.full(n, np.nan).tobytes()).ensure_allocated()",
          "          for n in sorted(sizes) for _ in range(2)]",
          "  for b in bufs: b.deallocate()", ""]
    L += ["for args in ["] + [f"    [{', '.join(_arr(a) for a in args)}]," for args in calls] + ["]:",
          "  want = [np.asarray(w) for w in gj(*args)]",
          "  poison({w.size for w in want} | {a.size for a in args})",
          "  ts = [Tensor(a) for a in args]" + ("" if case.dup is None else f"; ts[{case.dup[1]}] = ts[{case.dup[0]}]"),
          "  got = [t.numpy() for t in g(*ts)]",
          "  for i, (x, y) in enumerate(zip(got, want, strict=True)):",
          "    print(f'output {i}: tinyjax {x.dtype}{x.shape}, jax {y.dtype}{y.shape}')",
          "    if x.shape == y.shape and not np.allclose(x, y, rtol=1e-9, atol=1e-9): print('tinyjax', x, 'jax', y, sep='\\n')"]
  return "\n".join(L) + "\n"

def _state_write(st, jx):
  """The line that writes the state: into S (tinygrad), or the new state's value (JAX). The value written is
  2 tanh(v), in the inputs' range [-2, 2], so the magnitude bounds hold on every call."""
  v, k = f"v{st['src']}", st.get("k")
  if jx:
    w = f"jnp.tanh({v}.astype(jnp.float64)) * 2"
    return f"new = v0.at[:{k}].set(({w})[:{k}])" if st["how"] == "view" else f"new = {w}"
  w = f"({v}.cast(dtypes.float64).tanh() * 2)"
  if st["how"] == "view": return f"S[:{k}].assign({w}[:{k}])"
  return f"S.assign({w})" + (".realize()" if st["how"] == "realize" else "")

def draw_state(case):
  """The state's value before the first call."""
  return np.random.default_rng([case.seed, case.index, 2]).uniform(-2, 2, case.inputs[0])

def draw_calls(case):
  """The inputs of each call of g: one call, or three (trace, capture, replay) under jit."""
  rng = np.random.default_rng([case.seed, case.index, 1])
  args = level_shapes(case)[-1][0]
  if case.state is not None: return [[rng.uniform(-2, 2, s) for s in args[1:]] for _ in range(4)]   # calls 1-4: state carried
  calls = [[rng.uniform(-2, 2, s) for s in args] for _ in range(1 if case.jit is None else 3)]
  if case.dup is not None:
    for c in calls: c[case.dup[1]] = c[case.dup[0]]
  return calls


# ---- running and comparing ----------------------------------------------------------------------------------------------

class Timeout(Exception): pass

@contextlib.contextmanager
def time_limit(seconds):
  if not seconds or threading.current_thread() is not threading.main_thread():
    yield
    return
  def handler(*_): raise Timeout(f"no result in {seconds} s")
  old = signal.signal(signal.SIGALRM, handler)
  signal.setitimer(signal.ITIMER_REAL, seconds)
  try: yield
  finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)

@dataclass
class Outcome:
  kind: str          # "mismatch", "crash", "timeout", "invalid" (the generator's fault: JAX rejected or got non-finite)
  sig: str           # what a shrunk case must keep
  detail: str
  seconds: float = 0.0

def _norm(msg):
  msg = (msg.strip().splitlines() or [""])[0]
  return re.sub(r"\d+", "#", re.sub(r"(<[^>]*>|'[^']*'|\"[^\"]*\")", "…", msg))[:120]

def _tinyjax_frames(tb):
  return [f for f in traceback.extract_tb(tb) if f"{os.sep}tinyjax{os.sep}" in f.filename and f.name != "guarded"]

def _where(tb):
  """The innermost tinyjax frame of a traceback (file:function, not the read guard), the likely place of the bug."""
  frames = _tinyjax_frames(tb)
  return f"{os.path.basename(frames[-1].filename)}:{frames[-1].name}" if frames else "tinygrad"

def _crash_detail(e):
  """The exception, the tinyjax frames it passed through and the innermost frames."""
  tj = " > ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in _tinyjax_frames(e.__traceback__))
  inner = "".join(traceback.format_list(traceback.extract_tb(e.__traceback__)[-3:]))
  return f"{type(e).__name__}: {str(e)[:500]}\ntinyjax frames: {tj or '-'}\ninnermost frames:\n{inner}"

def _fmt(a, limit=400):
  s = np.array2string(np.asarray(a), precision=6, threshold=40, max_line_width=120)
  return s if len(s) <= limit else s[:limit] + " ..."

def compare(got, want):
  """None, or (subkind, description) of the first difference."""
  if len(got) != len(want): return "count", f"{len(got)} outputs, jax has {len(want)}"
  for i, (x, y) in enumerate(zip(got, want, strict=True)):
    if x.shape != y.shape: return "shape", f"output {i}: tinyjax shape {x.shape}, jax {y.shape}"
    if x.dtype != y.dtype: return "dtype", f"output {i}: tinyjax dtype {x.dtype}, jax {y.dtype}"
    err = np.abs(x - y)
    bad = ~(err <= RTOL * (np.abs(y) + np.abs(y).max(initial=0) + 1))
    if bad.any():
      j = np.unravel_index(np.argmax(np.where(bad, err, -1)), bad.shape) if bad.ndim else ()
      return "value", (f"output {i} {y.shape}: {int(bad.sum())} of {bad.size} differ, worst at {tuple(int(v) for v in j)}: "
                       f"tinyjax {x[j]!r} jax {y[j]!r}\n  tinyjax: {_fmt(x)}\n  jax:     {_fmt(y)}")
  return None

def poison(sizes):
  """Leave freed float64 buffers of these sizes, full of NaN, in tinygrad's allocator cache: an output (or
  intermediate) that tinyjax allocates but never writes reads as NaN instead of as stale data from earlier work."""
  from tinygrad import Device, dtypes
  from tinygrad.device import Buffer
  bufs = [Buffer(Device.DEFAULT, n, dtypes.float64, initial_value=np.full(n, np.nan).tobytes()).ensure_allocated()
          for n in sorted(sizes) for _ in range(2)]
  for b in bufs: b.deallocate()

def run(case, timeout=60.0):
  """Run the case in this process: None if tinyjax agrees with JAX on every call, else an Outcome."""
  from tinygrad import Tensor
  from tinygrad.engine.realize import capturing
  import tinyjax
  t0 = time.perf_counter()
  def out(kind, sig, detail): return Outcome(kind, sig, detail, time.perf_counter() - t0)
  try:
    ns = {}
    exec(compile(source(case), f"<fuzz {case.name}>", "exec"), ns)
    calls = draw_calls(case)
  except Exception as e: return out("invalid", f"source: {type(e).__name__}", traceback.format_exc())
  state = draw_state(case) if case.state is not None else None
  for call, args in enumerate(calls):
    try:
      want = [np.asarray(w) for w in ns["gj"](*(args if state is None else (state, *args)))]
      if state is not None: state = want[-1]
    except Exception as e: return out("invalid", f"jax: {type(e).__name__}", traceback.format_exc())
    if not all(np.isfinite(w).all() for w in want): return out("invalid", "jax: non-finite", "")
    try:
      poison({w.size for w in want} | {a.size for a in args})
      ts = [Tensor(a) for a in args]
      if case.dup is not None: ts[case.dup[1]] = ts[case.dup[0]]
      with time_limit(timeout):
        res = ns["g"](*ts)
        # the state read first realizes the write while the outputs, computed from the old state, are still lazy
        s = [ns["S"].numpy()] if state is not None and case.state["state_first"] else []
        got = [t.numpy() for t in res] + s
        if state is not None and not s: got.append(ns["S"].numpy())
    except Timeout as e: return out("timeout", "timeout", str(e))
    except Exception as e:
      return out("crash", f"{type(e).__name__} at {_where(e.__traceback__)}: {_norm(str(e))}", _crash_detail(e))
    finally:
      leak = tinyjax.is_tracing() or capturing
      capturing.clear()
    if leak: return out("crash", "state leaked: still tracing or capturing after a call", "")
    if (d := compare(got, want)) is not None:
      return out("mismatch", f"{d[0]} mismatch{' (jit call %d)' % (call + 1) if call else ''}", d[1])
  return None


# ---- shrinking --------------------------------------------------------------------------------------------------------

def _dce(case):
  """Drop ops no output needs, then unused consts; refs renumbered."""
  n, keep = len(case.inputs), set(case.outs) | ({case.state["src"]} if case.state else set())
  for i in reversed(range(len(case.ops))):
    if n + i in keep: keep |= {r for r in case.ops[i][1] if r >= 0}
  live = [i for i in range(len(case.ops)) if n + i in keep]
  vmap_ = {r: r for r in range(n)} | {n + i: n + j for j, i in enumerate(live)}
  cused = sorted({-1 - r for i in live for r in case.ops[i][1] if r < 0} |
                 {c[1] for i in live for c in case.ops[i][2].get("idx", ()) if c[0] == "t"})
  cmap = {k: j for j, k in enumerate(cused)}
  def ref(r): return vmap_[r] if r >= 0 else -1 - cmap[-1 - r]
  def params(p):
    p = dict(p)
    if "idx" in p: p["idx"] = [("t", cmap[c[1]]) if c[0] == "t" else c for c in p["idx"]]
    if "index" in p: p["index"] = -1 - cmap[-1 - p["index"]]
    return p
  ops = [(case.ops[i][0], [ref(r) for r in case.ops[i][1]], params(case.ops[i][2])) for i in live]
  state = None if case.state is None else {**case.state, "src": vmap_[case.state["src"]]}
  return replace(case, consts=[case.consts[k] for k in cused], ops=ops, outs=[vmap_[r] for r in case.outs], state=state)

def _drop_input(case, j):
  """The case without f's input j (unused by the ops), its positions removed through every level; None if impossible."""
  n = len(case.inputs)
  if any(r == j for _, refs, _ in case.ops for r in refs) or j in case.outs or n == 1 or case.state: return None
  def ref(r): return r - (r > j) if r >= 0 else r
  ops = [(k, [ref(r) for r in refs], p) for k, refs, p in case.ops]
  gone, levels = {j}, []
  if case.dup is not None: return None
  for lv, (args, _) in zip(case.levels, level_shapes(case), strict=False):
    lv, cnt = dict(lv), len(args)
    keep = [i for i in range(cnt) if i not in gone]
    new = {i: k for k, i in enumerate(keep)}
    if lv["t"] == "vmap":
      lv["in_axes"] = [lv["in_axes"][i] for i in keep]
      if all(a is None for a in lv["in_axes"]): return None
    elif lv["t"] in ("jvp", "linearize"): gone = gone | {g + cnt for g in gone}
    elif lv["t"] == "vjp": pass
    else:
      an = lv["argnums"]
      ans = [new[a] for a in (an if isinstance(an, tuple) else (an,)) if a in new]
      if not ans: return None
      lv["argnums"] = tuple(ans) if isinstance(an, tuple) else ans[0]
    levels.append(lv)
  return replace(case, inputs=case.inputs[:j] + case.inputs[j + 1:], ops=ops, outs=[ref(r) for r in case.outs], levels=levels)

def candidates(case):
  """Smaller variants of the case, roughly biggest cut first."""
  n, L = len(case.inputs), case.levels
  for k in range(len(L)):   # drop a level (jit index follows); keep at least one level or jit
    if len(L) > 1 or case.jit is not None:
      jit = case.jit if case.jit is None or case.jit <= k else case.jit - 1
      yield replace(case, levels=L[:k] + L[k + 1:], jit=jit)
  if case.dup is not None: yield replace(case, dup=None)
  if case.jit is not None and (L or case.state): yield replace(case, jit=None)
  if case.state and case.state["how"] != "assign": yield replace(case, state={**case.state, "how": "assign"})
  if case.jit is not None and case.jit < len(L): yield replace(case, jit=len(L))
  if len(case.outs) > 1:
    for r in case.outs: yield replace(case, outs=[r])
  for v in range(n + len(case.ops) - 1, -1, -1):   # the output is an earlier value (or an input); bypass an op
    if v not in case.outs: yield replace(case, outs=[v])
  shapes = _shapes_or_none(case)
  for i in reversed(range(len(case.ops))):
    for r in case.ops[i][1]:
      if r >= 0 and shapes and shapes[r] == shapes[n + i]:
        def sub(x, r=r, v=n + i): return r if x == v else x
        state = None if case.state is None else {**case.state, "src": sub(case.state["src"])}
        yield replace(case, ops=[(k, [sub(x) for x in refs], p) for k, refs, p in case.ops], outs=[sub(x) for x in case.outs],
                      state=state)
  for j in range(n):
    if (c := _drop_input(case, j)) is not None: yield c
  for i, (kind, refs, p) in enumerate(case.ops):   # fewer index components
    if kind == "index" and len(p["idx"]) > 1:
      for j in range(len(p["idx"])):
        yield replace(case, ops=case.ops[:i] + [(kind, refs, {"idx": p["idx"][:j] + p["idx"][j + 1:]})] + case.ops[i + 1:])
  for k, lv in enumerate(L):   # simpler transform parameters
    simpler = []
    if lv["t"] == "vmap":
      simpler += [{"size": s} for s in (1, 2) if s < lv["size"]] + [{"prefix": False}] * lv["prefix"]
      simpler += [{"in_axes": lv["in_axes"][:i] + [x] + lv["in_axes"][i + 1:]} for i, a in enumerate(lv["in_axes"])
                  for x in (None, 0) if a not in (x, None) and (x == 0 or a != 0)]
      simpler += [{"out_axes": lv["out_axes"][:i] + [0] + lv["out_axes"][i + 1:]} for i, a in enumerate(lv["out_axes"]) if a != 0]
    elif "argnums" in lv:
      an = lv["argnums"]
      if isinstance(an, tuple): simpler += [{"argnums": a} for a in an]
      if lv["t"] == "hessian" and not lv["scalar"]: simpler.append({"scalar": True})
    for s in simpler: yield replace(case, levels=L[:k] + [{**lv, **s}] + L[k + 1:])
  for j, s in enumerate(case.inputs):   # smaller inputs
    for d in range(len(s)):
      for new in [s[:d] + s[d + 1:]] + [s[:d] + (m,) + s[d + 1:] for m in range(1, s[d])]:
        yield replace(case, inputs=case.inputs[:j] + [new] + case.inputs[j + 1:])

def _shapes_or_none(case):
  try: return analyze(case)[0]
  except Invalid: return None

def _size(case):
  """What shrinking minimizes, most important first."""
  def params(lv):
    if lv["t"] == "vmap":
      return lv["size"] + lv["prefix"] + sum(a is not None for a in lv["in_axes"]) + sum(a not in (0, None) for a in lv["in_axes"] + lv["out_axes"])
    return len(lv["argnums"]) if isinstance(lv.get("argnums"), tuple) else 0 + (lv["t"] == "hessian" and not lv["scalar"])
  return (len(case.levels) + (case.jit is not None), len(case.ops), len(case.inputs), len(case.outs),
          sum(numel(s) + len(s) for s in case.inputs),
          sum(map(params, case.levels)) + (case.jit not in (None, len(case.levels))) + (case.dup is not None))

def shrink(case, outcome, budget=120.0, timeout=60.0, log=None):
  """The smallest case found within `budget` seconds that still fails with outcome's signature."""
  t_end, tried = time.perf_counter() + budget, set()
  progress = True
  while progress and time.perf_counter() < t_end:
    progress = False
    for c in candidates(case):
      if time.perf_counter() > t_end: break
      try:
        c = _dce(c)
        level_shapes(c, fix=True)
      except (Invalid, KeyError, IndexError): continue
      if (key := repr(c)) in tried or _size(c) >= _size(case): continue
      tried.add(key)
      o = run(c, timeout=min(timeout, max(1.0, t_end - time.perf_counter())))
      if o is not None and o.sig == outcome.sig:
        case, outcome, progress = c, o, True
        if log: log(f"  shrunk to {len(c.levels)} levels, {len(c.ops)} ops, inputs {c.inputs}")
        break
  return case, outcome


# ---- reports, campaigns ---------------------------------------------------------------------------------------------------

def describe(case):
  ts = [lv["t"] for lv in case.levels] + ([] if case.jit is None else [f"jit@{case.jit}"])
  ts += [] if case.state is None else [f"state:{case.state['how']}"]
  ops = ", ".join(k + ("." + p["f"] if "f" in p else "") for k, _, p in case.ops)
  return f"[{', '.join(ts)}] ops: {ops}"

def report(case, outcome, base=None):
  """A failure for people: signature, case, the difference or traceback, whether plain tinygrad (no transform) agrees
  with JAX (`base`: its Outcome, None if it agrees, omitted if not run), and the standalone reproducer."""
  plain = "" if base is False else "plain tinygrad (no transform, no jit) agrees with JAX\n" if base is None else \
    f"plain tinygrad (no transform, no jit) fails as well: {base.kind} {base.sig}\n"
  return (f"=== {outcome.kind}: {outcome.sig}\n{case.name} {describe(case)}\n{outcome.detail.rstrip()}\n{plain}"
          f"--- reproducer ---\n{source(case, draw_calls(case))}")

def run_range(seed, start, count, timeout=60.0, log=None):
  """[(case, outcome)] of the failing cases seed/start..start+count-1."""
  fails = []
  for i in range(start, start + count):
    case, t0 = generate(seed, i), time.perf_counter()
    o = run(case, timeout)
    if log: log(f"case {i}: {'ok' if o is None else o.kind + ' ' + o.sig} ({time.perf_counter() - t0:.1f} s) {describe(case)}")
    if o is not None: fails.append((case, o))
  return fails

def shrink_distinct(fails, budget, timeout=60.0, log=None, per_sig=3):
  """Shrink up to `per_sig` cases of each distinct signature (the most different programs first; one error message
  can have several causes), sharing `budget` seconds. [(case, outcome, plain, count)], one per distinct shrunk program,
  plain: the Outcome of the shrunk case without transforms (None: plain tinygrad agrees with JAX)."""
  groups, picks = {}, []
  for case, o in fails: groups.setdefault(o.sig, []).append((case, o))
  for sig, cs in groups.items():
    seen, mine = [], []
    for case, o in sorted(cs, key=lambda co: len(co[0].ops)):
      kinds = {k for k, _, _ in case.ops} | {lv["t"] for lv in case.levels}
      if len(mine) < per_sig and all(kinds - k2 for k2 in seen):
        seen.append(kinds)
        mine.append((case, o))
    picks += [(case, o, len(cs)) for case, o in mine]
  res, found, t_end = [], set(), time.perf_counter() + budget
  for k, (case, o, count) in enumerate(picks):
    left = (t_end - time.perf_counter()) / (len(picks) - k)
    if log: log(f"shrinking {case.name}: {o.sig} ({count} cases with it, {max(left, 0):.0f} s)")
    case, o = shrink(case, o, budget=left, timeout=timeout, log=log) if left > 1 else (case, o)
    if (key := (o.sig, describe(case))) in found: continue
    found.add(key)
    res.append((case, o, run(replace(case, levels=[], jit=None, dup=None), timeout), count))
  return res

def _worker(a):
  from tinygrad.helpers import Context
  seed, start, count, timeout, verbose = a
  with Context(PARALLEL=0): return run_range(seed, start, count, timeout, (lambda m: print(m, flush=True)) if verbose else None)

def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--seed", type=int, default=None, help="default: TINYJAX_FUZZ_SEED, else today's date")
  ap.add_argument("--start", type=int, default=0)
  ap.add_argument("--count", type=int, default=2000)
  ap.add_argument("--cases", type=str, default=None, help="comma-separated case indices (instead of start/count)")
  ap.add_argument("--jobs", type=int, default=1, help="processes")
  ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
  ap.add_argument("--shrink", type=float, default=600.0, help="seconds to spend shrinking, shared by the distinct failures")
  ap.add_argument("-v", "--verbose", action="store_true", help="a line per case")
  args = ap.parse_args()
  from tinygrad.helpers import Context
  signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # `kill` stops the worker processes too
  seed = args.seed if args.seed is not None else default_seed()
  t0 = time.perf_counter()
  idx = [int(i) for i in args.cases.split(",")] if args.cases else list(range(args.start, args.start + args.count))
  tasks = [(seed, i, 1, args.timeout, args.verbose) for i in idx] if args.cases else \
    [(seed, s, min(20, idx[-1] + 1 - s), args.timeout, args.verbose) for s in range(idx[0], idx[-1] + 1, 20)]
  fails, done = [], 0
  with contextlib.ExitStack() as stack:
    if args.jobs > 1:
      import multiprocessing as mp
      results = stack.enter_context(mp.get_context("spawn").Pool(args.jobs)).imap(_worker, tasks)
    else: results = map(_worker, tasks)
    for t, f in zip(tasks, results, strict=True):
      fails, done = fails + f, done + t[2]
      print(f"[{done}/{len(idx)}] {len(fails)} failing, {time.perf_counter() - t0:.0f} s", flush=True)
  print(f"\nseed {seed}: {len(idx)} programs in {time.perf_counter() - t0:.0f} s, {len(fails)} failing")
  groups = {}
  for case, o in fails: groups.setdefault(o.sig, []).append(case.index)
  for sig, cs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
    print(f"  {len(cs):4d} x {sig}   cases {','.join(map(str, cs[:12]))}{' ...' if len(cs) > 12 else ''}")
  def log(m): print(m, flush=True)
  with Context(PARALLEL=0):
    for case, o, plain, count in shrink_distinct(fails, args.shrink, args.timeout, log):
      print(f"\n{count} case(s) with this signature; shrunk:\n{report(case, o, plain)}")
  return 1 if fails else 0

if __name__ == "__main__": sys.exit(main())

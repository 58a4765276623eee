"""The transform core: interpret a traced tinygrad graph with a per-transform rule table.

Every transform traces the user function on placeholders (see `_tg.placeholder`), then calls `interpret`: a
topological walk over the traced graph in which only the nodes that depend on the transform's sources go through its
rule, memoised in `env`. Nodes that do not depend on them (constants, closed-over weights) stay as they are.
"""
from __future__ import annotations
from typing import Callable, Any
from tinyjax._tg import UOp, Ops, inline_call, custom_rule_of
from tinyjax.errors import no_rule

Rule = Callable[[UOp, list], Any]


def interpret(roots: list[UOp], env: dict[UOp, Any], rule: Rule, is_source: Callable[[UOp], bool] = lambda u: False,
              inline_custom: bool = False) -> list[Any]:
  """Transform every node under `roots` that depends on a key of `env` (or is a source by `is_source`).

  `env` maps a node to its transformed value and is updated in place (it is the memo). `rule(node, vals)` gets the
  values of the node's sources, None for sources that do not depend on the transform's inputs; a rule may return None
  for "nothing to carry" (a symbolic zero tangent), and then the node counts as independent. A root that does not
  depend on the inputs maps to None. With `inline_custom`, custom_jvp/custom_vjp calls are inlined like @functions.
  """
  def inlined(fn: UOp) -> bool: return inline_custom or custom_rule_of(fn) is None
  for u in UOp.sink(*roots).toposort(enter_calls=False):
    if u in env or u.op is Ops.SINK or (u.op is Ops.FUNCTION and inlined(u)): continue
    if u.op is Ops.GETTUPLE and u.src[0].op is Ops.FUNCTION and inlined(u.src[0]):
      # a tinygrad @function: transform its body inlined with the call's arguments, like any other graph.
      # (tinyjax's custom_jvp/custom_vjp calls are FUNCTIONs too, but they go through the rule table: their rules
      # must survive transforms)
      if not any(a in env for a in u.src[0].src[1:]): continue
      body = inline_call(u)
      val, = interpret([body], env, rule, is_source, inline_custom)
      if val is not None: env[u] = val
      continue
    vals = [env.get(s) for s in u.src]
    if (any(v is not None for v in vals) or is_source(u)) and (val := rule(u, vals)) is not None: env[u] = val
  return [env.get(r) for r in roots]


def table_rule(table: dict[Ops, Callable], transform: str) -> Callable:
  """Look a node's rule up in `table`; an op without one is an error that names the op and the transform."""
  def lookup(op: Ops) -> Callable:
    if (fn := table.get(op)) is None: raise no_rule(op, transform)
    return fn
  return lookup

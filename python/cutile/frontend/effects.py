"""Calls with an effect where Python evaluates them conditionally, or once.

The lowering evaluates every operand of `a and b` / `a or b` and both branches of
`x if c else y` (a `select` of the two), and a chained comparison `a < f(x) < b` is the
`and` of two comparisons that each hold `f(x)`. For values that is Python's meaning; for a
call with an effect (an atomic, a store, a print, a device function with one of those or an
`assert`) it is not: Python would skip it, or run it once, and the kernel would run it
always, or twice. Such a call there is refused (CT0001) with the statement to write
instead, so no kernel means one thing to its author and another on the device.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from functools import cache
from typing import Any

from . import kast as K
from .diagnostics import FrontendError, fail

# Calls whose effect is not their value (besides the atomics, read from the op table)
_EFFECT_CALLS = {"store_ptr", "scatter", "builtins.print"}
_EFFECT_METHODS = {"store", "store_unchecked"}


@cache
def _atomics() -> frozenset[str]:
    from .. import _native

    raw = json.loads(_native.OP_TABLE_JSON)
    return frozenset(s["name"] for s in raw["functions"] if s.get("atomic"))


def _nodes(node: Any) -> Iterator[Any]:
    """`node` and every kernel-AST node under it (device functions are not entered)."""
    if isinstance(node, list):
        for x in node:
            yield from _nodes(x)
        return
    if not dataclasses.is_dataclass(node) or isinstance(node, (K.Span, type)):
        return
    yield node
    for f in dataclasses.fields(node):
        yield from _nodes(getattr(node, f.name))


def _own_effect(node: Any, effectful: set[str]) -> bool:
    if isinstance(node, K.Call):
        return node.func in _EFFECT_CALLS or node.func in _atomics()
    if isinstance(node, K.Method):
        return node.method in _EFFECT_METHODS
    if isinstance(node, K.CallDevice):
        return node.func in effectful
    return isinstance(node, K.Assert)


def _first_effect(node: Any, effectful: set[str]) -> Any:
    return next((n for n in _nodes(node) if _own_effect(n, effectful)), None)


def _effectful_functions(functions: list[K.Function]) -> set[str]:
    """The device functions that (through their calls too) have an effect."""
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for f in functions:
            if f.name not in out and _first_effect(f.body, out) is not None:
                out.add(f.name)
                changed = True
    return out


def _what(node: Any) -> str:
    if isinstance(node, K.Call):
        return f"`{node.func.removeprefix('builtins.')}(...)`"
    if isinstance(node, K.Method):
        return f"`.{node.method}(...)`"
    if isinstance(node, K.CallDevice):
        return f"`{node.func.split('#')[0]}(...)` (a device function with an effect)"
    return "an `assert`"


def check_lazy_effects(functions: list[K.Function], chains: set[int]) -> None:
    """Refuse a call with an effect in an operand Python evaluates only sometimes (the
    right side of `and`/`or`, a branch of a conditional expression) or twice (the middle of
    a chained comparison: `chains` holds the ids of the `and`s made from chains)."""
    effectful = _effectful_functions(functions)
    for f in functions:
        for node in _nodes(f.body):
            _check(node, effectful, chains)


def _check(node: Any, effectful: set[str], chains: set[int]) -> None:
    if isinstance(node, K.BoolOp):
        for v in node.values[1:]:
            hit = _first_effect(v, effectful)
            if hit is None:
                continue
            if id(node) in chains:
                raise _refuse(hit, "sits in the middle of a chained comparison, which the "
                              "kernel evaluates twice (Python once)",
                              "assign it to a name first: `v = ...`, then `a < v < b`")
            raise _refuse(hit, f"sits on the right of `{node.op}`, which Python evaluates only "
                          "when the left side does not decide it (the kernel always does)",
                          "write an `if` statement around the call")
    if isinstance(node, K.IfExp) and not isinstance(node.test, K.Const):
        for branch in (node.body, node.orelse):
            hit = _first_effect(branch, effectful)
            if hit is not None:
                raise _refuse(hit, "sits in a branch of a conditional expression, which the "
                              "kernel evaluates whichever way the condition goes (Python "
                              "only the branch taken)", "write an `if` statement instead")


def _refuse(hit: Any, where: str, hint: str) -> FrontendError:
    return fail("CT0001", f"{_what(hit)} has an effect and {where}", hit.span,
                "evaluated unconditionally in the kernel", help=hint)

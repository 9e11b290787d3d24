"""The rule registry and the type predicates the rule families share."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core import Op, Value
from ..types import PointerType, TileType, Type

Rule = Callable[[Op], list[str]]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return register


def check_op(op: Op) -> list[str]:
    fn = RULES.get(op.name)
    if fn is None:
        return [f"unknown op `{op.name}`"]
    return fn(op)


def tile_of(v: Value) -> TileType | None:
    return v.type if isinstance(v.type, TileType) else None


def is_kind(t: Type, kind: str) -> bool:
    """Numeric tile of a given element kind: "float", "int" (signless ints, not i1)."""
    if not isinstance(t, TileType) or isinstance(t.element, PointerType):
        return False
    return t.element.kind == kind


def is_scalar_int(t: Type) -> bool:
    return isinstance(t, TileType) and t.shape == () and is_kind(t, "int")


def is_i1(t: Type) -> bool:
    return (
        isinstance(t, TileType)
        and not isinstance(t.element, PointerType)
        and t.element.kind == "bool"
    )


def is_ptr_tile(t: Type) -> bool:
    return isinstance(t, TileType) and isinstance(t.element, PointerType)


def counts(op: Op, operands: int | None, results: int | None) -> list[str]:
    out = []
    if operands is not None and len(op.operands) != operands:
        out.append(f"expects {operands} operands, has {len(op.operands)}")
    if results is not None and len(op.results) != results:
        out.append(f"expects {results} results, has {len(op.results)}")
    return out


def same_types(values: Sequence[Value], what: str) -> list[str]:
    types = {str(v.type) for v in values}
    return [] if len(types) <= 1 else [f"{what} types differ: {', '.join(sorted(types))}"]


# Tile IR's arithmetic, math and comparisons take these floats (`BaseFloatTileType`): not
# tf32 or the f8 formats, which only convert, move and multiply in `mmaf`.
ARITH_FLOATS = frozenset({"f16", "bf16", "f32", "f64"})


def is_arith_float(t: Type) -> bool:
    return is_kind(t, "float") and isinstance(t, TileType) and t.dtype.name in ARITH_FLOATS


def elementwise(op: Op, n: int, kind: str) -> list[str]:
    problems = counts(op, n, 1)
    if problems:
        return problems
    problems += same_types([*op.operands, op.results[0]], "operand and result")
    ok = is_arith_float if kind == "float" else lambda t: is_kind(t, kind)
    if not ok(op.operands[0].type):
        want = "float tiles (f16, bf16, f32, f64)" if kind == "float" else f"{kind} tiles"
        problems.append(f"expects {want}, got {op.operands[0].type}")
    return problems


def same_shape(a: Type, b: Type) -> bool:
    return isinstance(a, TileType) and isinstance(b, TileType) and a.shape == b.shape

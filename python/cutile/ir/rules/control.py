"""Constants, assumptions, grid queries, assert/print, control flow and reductions."""

from __future__ import annotations

from ...dtypes import DType
from ..attrs import Bounded, Dense, DivBy, SameElements
from ..core import Op
from ..types import PointerType, TileType, TokenType, Type
from .base import counts, is_i1, is_kind, is_scalar_int, rule, same_types, tile_of

# -- constants, assumptions, grid ------------------------------------------------------


@rule("constant")
def _constant(op: Op) -> list[str]:
    problems = counts(op, 0, 1)
    if problems:
        return problems
    t = op.results[0].type
    value = op.attrs.get("value")
    if not isinstance(t, TileType) or isinstance(t.element, PointerType):
        return [f"constant must be a numeric tile, got {t}"]
    if not isinstance(value, Dense):
        return ["`value` must be a Dense attribute"]
    if value.array.size != 1 and tuple(value.array.shape) != t.shape:
        problems.append(f"data of shape {value.array.shape} for {t}")
    return problems


@rule("assume")
def _assume(op: Op) -> list[str]:
    problems = counts(op, 1, 1)
    if problems:
        return problems
    if op.operands[0].type != op.results[0].type:
        problems.append("result type must equal the operand type")
    pred = op.attrs.get("predicate")
    if not isinstance(pred, DivBy | Bounded | SameElements):
        problems.append(f"`predicate` must be DivBy, Bounded or SameElements, got {pred!r}")
    elif isinstance(pred, DivBy) and (pred.divisor <= 0 or pred.divisor & (pred.divisor - 1)):
        problems.append(f"div_by needs a power-of-two divisor, got {pred.divisor}")
    return problems


@rule("get_tile_block_id", "get_num_tile_blocks")
def _grid(op: Op) -> list[str]:
    problems = counts(op, 0, 3)
    if any(str(r.type) != "tile<i32>" for r in op.results):
        problems.append("results must be tile<i32>")
    return problems


@rule("iota")
def _iota(op: Op) -> list[str]:
    problems = counts(op, 0, 1)
    t = op.results[0].type if op.results else None
    if not (t is not None and isinstance(t, TileType) and t.rank == 1 and is_kind(t, "int")):
        problems.append(f"iota yields a 1-D integer tile, got {t}")
    return problems


@rule("assert")
def _assert(op: Op) -> list[str]:
    problems = counts(op, 1, 0)
    if not problems and not is_i1(op.operands[0].type):
        problems.append("condition must be an i1 tile")
    if not isinstance(op.attrs.get("message"), str):
        problems.append("missing `message`")
    return problems


@rule("print_tko")
def _print(op: Op) -> list[str]:
    problems = counts(op, None, 1)
    has_token = bool(op.attrs.get("has_token"))
    args = op.operands[:-1] if has_token else op.operands
    if has_token and (not op.operands or not isinstance(op.operands[-1].type, TokenType)):
        problems.append("`has_token` set but the last operand is not a token")
    if any(not isinstance(a.type, TileType) for a in args):
        problems.append("print arguments must be tiles")
    if op.results and not isinstance(op.results[0].type, TokenType):
        problems.append("result must be a token")
    if not isinstance(op.attrs.get("str"), str):
        problems.append("missing `str`")
    return problems


# -- control flow (operand/result types; regions are checked by `verify`) -------------


@rule("for")
def _for(op: Op) -> list[str]:
    if len(op.operands) < 3 or len(op.regions) != 1:
        return ["expects bounds, a step and one region"]
    lb, ub, step = op.operands[:3]
    init = op.operands[3:]
    problems = same_types([lb, ub, step], "bound and step")
    if not is_scalar_int(lb.type):
        problems.append("bounds must be rank-0 integer tiles")
    args = op.regions[0].args
    want = [lb.type, *(v.type for v in init)]
    if [str(a.type) for a in args] != [str(t) for t in want]:
        problems.append("body arguments must be (induction variable, carried values...)")
    if [str(r.type) for r in op.results] != [str(v.type) for v in init]:
        problems.append("results must match the carried values")
    return problems


@rule("if")
def _if(op: Op) -> list[str]:
    problems = counts(op, 1, None)
    if not problems and not (is_i1(op.operands[0].type) and _tile_rank0(op.operands[0].type)):
        problems.append("condition must be tile<i1>")
    if len(op.regions) not in (1, 2) or any(r.args for r in op.regions):
        problems.append("has a then region, an optional else region, no arguments")
    if op.results and len(op.regions) != 2:
        problems.append("an `if` with results needs an else region")
    return problems


def _tile_rank0(t: Type) -> bool:
    return isinstance(t, TileType) and t.shape == ()


@rule("loop")
def _loop(op: Op) -> list[str]:
    if len(op.regions) != 1:
        return ["expects one region"]
    args = op.regions[0].args
    if [str(a.type) for a in args] != [str(v.type) for v in op.operands]:
        return ["body arguments must match the initial values"]
    return []


def _reduction(op: Op) -> list[str]:
    if not op.operands or len(op.regions) != 1:
        return ["expects operands and one region"]
    tiles = [tile_of(v) for v in op.operands]
    if any(t is None for t in tiles):
        return ["operands must be tiles"]
    first = tiles[0]
    assert first is not None
    problems = []
    if any(t is not None and t.shape != first.shape for t in tiles):
        problems.append("operands must share one shape")
    dim = op.attrs.get("dim")
    if not isinstance(dim, int) or not 0 <= dim < first.rank:
        return [*problems, f"bad `dim` {dim!r}"]
    if len(op.attrs.get("identities", ())) != len(tiles):
        problems.append("one identity per operand")
    elems: list[DType] = [t.dtype for t in tiles if t is not None]
    want_args = [str(TileType((), e)) for e in elems for _ in (0, 1)]
    if [str(a.type) for a in op.regions[0].args] != want_args:
        problems.append("body takes (element, accumulator) rank-0 pairs per operand")
    keep = first.shape if op.name == "scan" else first.shape[:dim] + first.shape[dim + 1 :]
    want_results = [str(TileType(keep, e)) for e in elems]
    if [str(r.type) for r in op.results] != want_results:
        problems.append(f"results must be {', '.join(want_results)}")
    return problems


@rule("reduce")
def _reduce(op: Op) -> list[str]:
    return _reduction(op)


@rule("scan")
def _scan(op: Op) -> list[str]:
    return _reduction(op)


@rule("yield", "continue", "break", "return")
def _terminator(op: Op) -> list[str]:
    return [] if not op.results else ["terminators have no results"]

"""Arithmetic, comparison, selection, matrix multiply, math and conversion ops."""

from __future__ import annotations

from ..core import Op
from ..types import TileType
from .base import (
    counts,
    elementwise,
    is_arith_float,
    is_i1,
    is_kind,
    is_ptr_tile,
    rule,
    same_shape,
    same_types,
    tile_of,
)

# -- arithmetic and math ---------------------------------------------------------------

FLOAT_BINARY = ("addf", "subf", "mulf", "divf", "remf", "maxf", "minf", "pow", "atan2")
INT_BINARY = (
    "addi", "subi", "muli", "divi", "remi", "andi", "ori", "xori",
    "shli", "shri", "maxi", "mini", "mulhii",
)  # fmt: skip
FLOAT_UNARY = (
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan",
    "sinh", "cosh", "tanh", "floor", "ceil", "absf", "negf",
)  # fmt: skip


@rule(*FLOAT_BINARY)
def _float_binary(op: Op) -> list[str]:
    return elementwise(op, 2, "float")


@rule(*INT_BINARY)
def _int_binary(op: Op) -> list[str]:
    if op.name in ("andi", "ori", "xori") and op.operands and is_i1(op.operands[0].type):
        return counts(op, 2, 1) + same_types([*op.operands, *op.results], "operand and result")
    return elementwise(op, 2, "int")


@rule(*FLOAT_UNARY)
def _float_unary(op: Op) -> list[str]:
    return elementwise(op, 1, "float")


@rule("absi", "negi")
def _int_unary(op: Op) -> list[str]:
    return elementwise(op, 1, "int")


@rule("fma")
def _fma(op: Op) -> list[str]:
    return elementwise(op, 3, "float")


@rule("fpowi")
def _fpowi(op: Op) -> list[str]:
    problems = counts(op, 2, 1)
    if not problems:
        src, exp = op.operands
        problems += same_types([src, op.results[0]], "source and result")
        if not is_kind(src.type, "float") or not is_kind(exp.type, "int"):
            problems.append("expects a float base and an integer exponent")
        if not same_shape(src.type, exp.type):
            problems.append("base and exponent shapes differ")
    return problems


@rule("cmpf", "cmpi")
def _cmp(op: Op) -> list[str]:
    problems = counts(op, 2, 1)
    if problems:
        return problems
    lhs, rhs = op.operands
    problems += same_types([lhs, rhs], "operand")
    if op.name == "cmpf" and not is_arith_float(lhs.type):
        problems.append(f"expects float tiles (f16, bf16, f32, f64), got {lhs.type}")
    if op.name == "cmpi" and not is_kind(lhs.type, "int"):
        problems.append(f"expects int tiles, got {lhs.type}")
    res = op.results[0].type
    if not (is_i1(res) and same_shape(res, lhs.type)):
        problems.append(f"result must be an i1 tile of the operand shape, got {res}")
    if "comparison_predicate" not in op.attrs:
        problems.append("missing `comparison_predicate`")
    return problems


@rule("select")
def _select(op: Op) -> list[str]:
    problems = counts(op, 3, 1)
    if problems:
        return problems
    cond, a, b = op.operands
    problems += same_types([a, b, op.results[0]], "branch and result")
    if not (is_i1(cond.type) and same_shape(cond.type, a.type)):
        problems.append(f"condition must be an i1 tile of the value shape, got {cond.type}")
    return problems


# lhs/rhs element -> allowed accumulator elements (Ops.td MmaFOp constraints)
_MMAF_PAIRS = {
    "f16": ("f16", "f32"),
    "bf16": ("f32",),
    "tf32": ("f32",),
    "f32": ("f32",),
    "f64": ("f64",),
    "f8e4m3fn": ("f16", "f32"),
    "f8e5m2": ("f16", "f32"),
}


def _mma_shapes(op: Op) -> list[str]:
    a, b, c = (tile_of(v) for v in op.operands)
    if a is None or b is None or c is None:
        return ["operands must be tiles"]
    if not (a.rank == b.rank == c.rank and a.rank in (2, 3)):
        return ["operands must all be 2-D (or batched 3-D)"]
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    ok = k == k2 and c.shape[-2:] == (m, n)
    if a.rank == 3:
        ok = ok and a.shape[0] == b.shape[0] == c.shape[0]
    problems = [] if ok else [f"shapes {a.shape} x {b.shape} -> {c.shape} do not multiply"]
    if op.results[0].type != c:
        problems.append("result type must equal the accumulator type")
    return problems


@rule("mmaf")
def _mmaf(op: Op) -> list[str]:
    problems = counts(op, 3, 1)
    if problems:
        return problems
    problems = _mma_shapes(op)
    a, b, c = (tile_of(v) for v in op.operands)
    if a and b and c and not problems:
        ea, eb, ec = (str(t.element).lower() for t in (a, b, c))
        if ea != eb or ec not in _MMAF_PAIRS.get(ea, ()):
            problems.append(f"mmaf does not take {ea} x {eb} -> {ec}")
    return problems


@rule("mmai")
def _mmai(op: Op) -> list[str]:
    problems = counts(op, 3, 1)
    if problems:
        return problems
    problems = _mma_shapes(op)
    a, b, c = (tile_of(v) for v in op.operands)
    if a and b and c and not problems:
        # Signless in Tile IR: u8 operands are i8 tiles read with `signedness = unsigned`.
        names = [t.dtype.ir_name for t in (a, b, c)]
        if names != ["i8", "i8", "i32"]:
            problems.append(f"mmai takes i8 x i8 -> i32, got {' x '.join(names)}")
    return problems


# -- conversions -----------------------------------------------------------------------


def _conversion(op: Op, src_kind: str, dst_kind: str, width: str) -> list[str]:
    problems = counts(op, 1, 1)
    if problems:
        return problems
    src, dst = op.operands[0].type, op.results[0].type
    if not same_shape(src, dst):
        return [f"shape changes: {src} -> {dst}"]
    assert isinstance(src, TileType) and isinstance(dst, TileType)
    if not (is_kind(src, src_kind) or (src_kind == "int" and is_i1(src))):
        problems.append(f"source must be {src_kind}, got {src}")
    if not (is_kind(dst, dst_kind) or (dst_kind == "int" and is_i1(dst))):
        problems.append(f"result must be {dst_kind}, got {dst}")
    if problems:
        return problems
    sb, db = src.dtype.bits, dst.dtype.bits
    if (width == "wider" and db <= sb) or (width == "narrower" and db >= sb):
        problems.append(f"`{op.name}` cannot go from {src.dtype} to {dst.dtype}")
    return problems


@rule("exti")
def _exti(op: Op) -> list[str]:
    return _conversion(op, "int", "int", "wider")


@rule("trunci")
def _trunci(op: Op) -> list[str]:
    return _conversion(op, "int", "int", "narrower")


@rule("ftof")
def _ftof(op: Op) -> list[str]:
    return _conversion(op, "float", "float", "any")


@rule("ftoi")
def _ftoi(op: Op) -> list[str]:
    problems = _conversion(op, "float", "int", "any")
    # tileiras (13.5, sm_90) accepts only truncation for float -> int; any other mode is a
    # CompileError at assembly, long after the lowering could have said why.
    mode = op.attrs.get("rounding_mode", "nearest_int_to_zero")
    if mode != "nearest_int_to_zero":
        problems.append(f"ftoi rounds only toward zero (nearest_int_to_zero), not `{mode}`")
    return problems


@rule("itof")
def _itof(op: Op) -> list[str]:
    return _conversion(op, "int", "float", "any")


@rule("bitcast")
def _bitcast(op: Op) -> list[str]:
    problems = counts(op, 1, 1)
    if problems:
        return problems
    src, dst = op.operands[0].type, op.results[0].type
    if not same_shape(src, dst):
        return [f"shape changes: {src} -> {dst}"]
    assert isinstance(src, TileType) and isinstance(dst, TileType)
    if is_ptr_tile(src) or is_ptr_tile(dst) or src.dtype.bits != dst.dtype.bits:
        problems.append(f"bitcast needs equal-width numbers: {src} -> {dst}")
    return problems


@rule("int_to_ptr", "ptr_to_int", "ptr_to_ptr")
def _pointer_casts(op: Op) -> list[str]:
    problems = counts(op, 1, 1)
    if problems:
        return problems
    src, dst = op.operands[0].type, op.results[0].type
    if not same_shape(src, dst):
        return [f"shape changes: {src} -> {dst}"]
    want_src, want_dst = {
        "int_to_ptr": (False, True),
        "ptr_to_int": (True, False),
        "ptr_to_ptr": (True, True),
    }[op.name]
    if is_ptr_tile(src) != want_src or is_ptr_tile(dst) != want_dst:
        problems.append(f"`{op.name}` cannot convert {src} -> {dst}")
    elif not want_dst and not (isinstance(dst, TileType) and str(dst.element) == "i64"):
        problems.append("ptr_to_int yields i64")
    elif not want_src and not (isinstance(src, TileType) and str(src.element) == "i64"):
        problems.append("int_to_ptr takes i64")
    return problems

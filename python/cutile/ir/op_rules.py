"""Per-op operand/result type rules (the `Ops.td` constraints the bytecode reader and
tileiras would enforce), as one small checker per op family.

Each checker returns a list of problems (empty when the op is well typed). Structure
(SSA dominance, regions, terminators) is checked by `verify`; this module only looks at
one op at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..dtypes import DType
from .attrs import Bounded, Dense, DivBy, SameElements
from .core import Op, Value
from .types import (
    PartitionViewType,
    PointerType,
    TensorViewType,
    TileType,
    TokenType,
    Type,
)

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


# -- helpers -----------------------------------------------------------------------------


def _tile(v: Value) -> TileType | None:
    return v.type if isinstance(v.type, TileType) else None


def _is_kind(t: Type, kind: str) -> bool:
    """Numeric tile of a given element kind: "float", "int" (signless ints, not i1)."""
    if not isinstance(t, TileType) or isinstance(t.element, PointerType):
        return False
    return t.element.kind == kind


def _is_scalar_int(t: Type) -> bool:
    return isinstance(t, TileType) and t.shape == () and _is_kind(t, "int")


def _is_i1(t: Type) -> bool:
    return (
        isinstance(t, TileType)
        and not isinstance(t.element, PointerType)
        and t.element.kind == "bool"
    )


def _is_ptr_tile(t: Type) -> bool:
    return isinstance(t, TileType) and isinstance(t.element, PointerType)


def _count(op: Op, operands: int | None, results: int | None) -> list[str]:
    out = []
    if operands is not None and len(op.operands) != operands:
        out.append(f"expects {operands} operands, has {len(op.operands)}")
    if results is not None and len(op.results) != results:
        out.append(f"expects {results} results, has {len(op.results)}")
    return out


def _same_types(values: Sequence[Value], what: str) -> list[str]:
    types = {str(v.type) for v in values}
    return [] if len(types) <= 1 else [f"{what} types differ: {', '.join(sorted(types))}"]


def _elementwise(op: Op, n: int, kind: str) -> list[str]:
    problems = _count(op, n, 1)
    if problems:
        return problems
    problems += _same_types([*op.operands, op.results[0]], "operand and result")
    if not _is_kind(op.operands[0].type, kind):
        problems.append(f"expects {kind} tiles, got {op.operands[0].type}")
    return problems


def _same_shape(a: Type, b: Type) -> bool:
    return isinstance(a, TileType) and isinstance(b, TileType) and a.shape == b.shape


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
    return _elementwise(op, 2, "float")


@rule(*INT_BINARY)
def _int_binary(op: Op) -> list[str]:
    if op.name in ("andi", "ori", "xori") and op.operands and _is_i1(op.operands[0].type):
        return _count(op, 2, 1) + _same_types([*op.operands, *op.results], "operand and result")
    return _elementwise(op, 2, "int")


@rule(*FLOAT_UNARY)
def _float_unary(op: Op) -> list[str]:
    return _elementwise(op, 1, "float")


@rule("absi", "negi")
def _int_unary(op: Op) -> list[str]:
    return _elementwise(op, 1, "int")


@rule("fma")
def _fma(op: Op) -> list[str]:
    return _elementwise(op, 3, "float")


@rule("fpowi")
def _fpowi(op: Op) -> list[str]:
    problems = _count(op, 2, 1)
    if not problems:
        src, exp = op.operands
        problems += _same_types([src, op.results[0]], "source and result")
        if not _is_kind(src.type, "float") or not _is_kind(exp.type, "int"):
            problems.append("expects a float base and an integer exponent")
        if not _same_shape(src.type, exp.type):
            problems.append("base and exponent shapes differ")
    return problems


@rule("cmpf", "cmpi")
def _cmp(op: Op) -> list[str]:
    problems = _count(op, 2, 1)
    if problems:
        return problems
    lhs, rhs = op.operands
    problems += _same_types([lhs, rhs], "operand")
    kind = "float" if op.name == "cmpf" else "int"
    if not _is_kind(lhs.type, kind):
        problems.append(f"expects {kind} tiles, got {lhs.type}")
    res = op.results[0].type
    if not (_is_i1(res) and _same_shape(res, lhs.type)):
        problems.append(f"result must be an i1 tile of the operand shape, got {res}")
    if "comparison_predicate" not in op.attrs:
        problems.append("missing `comparison_predicate`")
    return problems


@rule("select")
def _select(op: Op) -> list[str]:
    problems = _count(op, 3, 1)
    if problems:
        return problems
    cond, a, b = op.operands
    problems += _same_types([a, b, op.results[0]], "branch and result")
    if not (_is_i1(cond.type) and _same_shape(cond.type, a.type)):
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
    a, b, c = (_tile(v) for v in op.operands)
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
    problems = _count(op, 3, 1)
    if problems:
        return problems
    problems = _mma_shapes(op)
    a, b, c = (_tile(v) for v in op.operands)
    if a and b and c and not problems:
        ea, eb, ec = (str(t.element).lower() for t in (a, b, c))
        if ea != eb or ec not in _MMAF_PAIRS.get(ea, ()):
            problems.append(f"mmaf does not take {ea} x {eb} -> {ec}")
    return problems


@rule("mmai")
def _mmai(op: Op) -> list[str]:
    problems = _count(op, 3, 1)
    if problems:
        return problems
    problems = _mma_shapes(op)
    a, b, c = (_tile(v) for v in op.operands)
    if a and b and c and not problems:
        names = [str(t.element) for t in (a, b, c)]
        if names != ["i8", "i8", "i32"]:
            problems.append(f"mmai takes i8 x i8 -> i32, got {' x '.join(names)}")
    return problems


# -- constants, assumptions, grid ------------------------------------------------------


@rule("constant")
def _constant(op: Op) -> list[str]:
    problems = _count(op, 0, 1)
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
    problems = _count(op, 1, 1)
    if problems:
        return problems
    if op.operands[0].type != op.results[0].type:
        problems.append("result type must equal the operand type")
    pred = op.attrs.get("predicate")
    if not isinstance(pred, DivBy | Bounded | SameElements):
        problems.append(f"`predicate` must be DivBy, Bounded or SameElements, got {pred!r}")
    elif isinstance(pred, DivBy) and pred.divisor <= 0:
        problems.append("div_by needs a positive divisor")
    return problems


@rule("get_tile_block_id", "get_num_tile_blocks")
def _grid(op: Op) -> list[str]:
    problems = _count(op, 0, 3)
    if any(str(r.type) != "tile<i32>" for r in op.results):
        problems.append("results must be tile<i32>")
    return problems


@rule("iota")
def _iota(op: Op) -> list[str]:
    problems = _count(op, 0, 1)
    t = op.results[0].type if op.results else None
    if not (t is not None and isinstance(t, TileType) and t.rank == 1 and _is_kind(t, "int")):
        problems.append(f"iota yields a 1-D integer tile, got {t}")
    return problems


@rule("assert")
def _assert(op: Op) -> list[str]:
    problems = _count(op, 1, 0)
    if not problems and not _is_i1(op.operands[0].type):
        problems.append("condition must be an i1 tile")
    if not isinstance(op.attrs.get("message"), str):
        problems.append("missing `message`")
    return problems


@rule("print_tko")
def _print(op: Op) -> list[str]:
    problems = _count(op, None, 1)
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


# -- conversions -----------------------------------------------------------------------


def _conversion(op: Op, src_kind: str, dst_kind: str, width: str) -> list[str]:
    problems = _count(op, 1, 1)
    if problems:
        return problems
    src, dst = op.operands[0].type, op.results[0].type
    if not _same_shape(src, dst):
        return [f"shape changes: {src} -> {dst}"]
    assert isinstance(src, TileType) and isinstance(dst, TileType)
    if not (_is_kind(src, src_kind) or (src_kind == "int" and _is_i1(src))):
        problems.append(f"source must be {src_kind}, got {src}")
    if not (_is_kind(dst, dst_kind) or (dst_kind == "int" and _is_i1(dst))):
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
    return _conversion(op, "float", "int", "any")


@rule("itof")
def _itof(op: Op) -> list[str]:
    return _conversion(op, "int", "float", "any")


@rule("bitcast")
def _bitcast(op: Op) -> list[str]:
    problems = _count(op, 1, 1)
    if problems:
        return problems
    src, dst = op.operands[0].type, op.results[0].type
    if not _same_shape(src, dst):
        return [f"shape changes: {src} -> {dst}"]
    assert isinstance(src, TileType) and isinstance(dst, TileType)
    if _is_ptr_tile(src) or _is_ptr_tile(dst) or src.dtype.bits != dst.dtype.bits:
        problems.append(f"bitcast needs equal-width numbers: {src} -> {dst}")
    return problems


@rule("int_to_ptr", "ptr_to_int", "ptr_to_ptr")
def _pointer_casts(op: Op) -> list[str]:
    problems = _count(op, 1, 1)
    if problems:
        return problems
    src, dst = op.operands[0].type, op.results[0].type
    if not _same_shape(src, dst):
        return [f"shape changes: {src} -> {dst}"]
    want_src, want_dst = {
        "int_to_ptr": (False, True),
        "ptr_to_int": (True, False),
        "ptr_to_ptr": (True, True),
    }[op.name]
    if _is_ptr_tile(src) != want_src or _is_ptr_tile(dst) != want_dst:
        problems.append(f"`{op.name}` cannot convert {src} -> {dst}")
    elif not want_dst and not (isinstance(dst, TileType) and str(dst.element) == "i64"):
        problems.append("ptr_to_int yields i64")
    elif not want_src and not (isinstance(src, TileType) and str(src.element) == "i64"):
        problems.append("int_to_ptr takes i64")
    return problems


# -- shape ops -------------------------------------------------------------------------


def _tiles(op: Op) -> tuple[list[TileType], list[str]]:
    ts = [v.type for v in (*op.operands, *op.results) if isinstance(v.type, TileType)]
    if len(ts) != len(op.operands) + len(op.results):
        return [], ["operands and results must be tiles"]
    return ts, []


@rule("reshape")
def _reshape(op: Op) -> list[str]:
    problems = _count(op, 1, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    src, dst = ts

    def size(t: TileType) -> int:
        n = 1
        for d in t.shape:
            n *= d
        return n

    if src.element != dst.element or size(src) != size(dst):
        problems.append(f"cannot reshape {src} to {dst}")
    return problems


@rule("broadcast")
def _broadcast(op: Op) -> list[str]:
    problems = _count(op, 1, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    src, dst = ts
    ok = src.element == dst.element and src.rank == dst.rank
    ok = ok and all(s in (1, d) for s, d in zip(src.shape, dst.shape, strict=False))
    if not ok:
        problems.append(f"cannot broadcast {src} to {dst} (insert size-1 dims with reshape)")
    return problems


@rule("permute")
def _permute(op: Op) -> list[str]:
    problems = _count(op, 1, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    src, dst = ts
    perm = tuple(op.attrs.get("permutation", ()))
    if sorted(perm) != list(range(src.rank)):
        return [f"`permutation` {perm} is not a permutation of {src.rank} dims"]
    if dst != TileType(tuple(src.shape[p] for p in perm), src.element):
        problems.append(f"permuting {src} by {perm} does not give {dst}")
    return problems


@rule("cat")
def _cat(op: Op) -> list[str]:
    problems = _count(op, 2, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    a, b, r = ts
    dim = op.attrs.get("dim")
    if not isinstance(dim, int) or not 0 <= dim < a.rank:
        return [f"bad `dim` {dim!r}"]
    want = list(a.shape)
    want[dim] += b.shape[dim]
    same_other = all(
        x == y for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=False)) if i != dim
    )
    if a.element != b.element or a.rank != b.rank or not same_other or r.shape != tuple(want):
        problems.append(f"cannot concatenate {a} and {b} along {dim} into {r}")
    return problems


@rule("extract")
def _extract(op: Op) -> list[str]:
    if len(op.operands) < 1 or len(op.results) != 1:
        return ["expects a source and one result"]
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, TileType) or not isinstance(dst, TileType):
        return ["source and result must be tiles"]
    problems = []
    indices = op.operands[1:]
    if len(indices) != src.rank:
        problems.append(f"{len(indices)} indices for a rank-{src.rank} tile")
    if any(str(i.type) != "tile<i32>" for i in indices):
        problems.append("indices must be tile<i32>")
    divides = all(d > 0 and s % d == 0 for s, d in zip(src.shape, dst.shape, strict=False))
    if src.element != dst.element or src.rank != dst.rank or not divides:
        problems.append(f"cannot extract {dst} from {src}")
    return problems


@rule("insert")
def _insert(op: Op) -> list[str]:
    if len(op.operands) < 2 or len(op.results) != 1:
        return ["expects a source, a destination and one result"]
    src, dst = op.operands[0].type, op.operands[1].type
    problems = []
    if op.results[0].type != dst:
        problems.append("result type must equal the destination type")
    if not isinstance(src, TileType) or not isinstance(dst, TileType) or src.rank != dst.rank:
        problems.append("source and destination must be tiles of one rank")
    return problems


# -- memory ----------------------------------------------------------------------------


@rule("make_token")
def _make_token(op: Op) -> list[str]:
    problems = _count(op, 0, 1)
    if op.results and not isinstance(op.results[0].type, TokenType):
        problems.append("result must be a token")
    return problems


@rule("join_tokens")
def _join_tokens(op: Op) -> list[str]:
    problems = _count(op, None, 1)
    if len(op.operands) < 2:
        problems.append("joins at least two tokens")
    if any(not isinstance(v.type, TokenType) for v in (*op.operands, *op.results)):
        problems.append("operands and result must be tokens")
    return problems


@rule("make_tensor_view")
def _make_tensor_view(op: Op) -> list[str]:
    if len(op.results) != 1 or not isinstance(op.results[0].type, TensorViewType):
        return ["result must be a tensor_view"]
    tv = op.results[0].type
    problems = []
    base = op.operands[0].type if op.operands else None
    if not (
        isinstance(base, TileType) and base.shape == () and isinstance(base.element, PointerType)
    ):
        return [f"base must be a rank-0 pointer tile, got {base}"]
    if base.element.pointee != tv.element:
        problems.append(f"base points to {base.element.pointee}, view holds {tv.element}")
    n_shape = sum(d is None for d in tv.shape)
    n_strides = sum(s is None for s in tv.strides)
    if op.attrs.get("num_dynamic_shape") != n_shape or len(op.operands) != 1 + n_shape + n_strides:
        problems.append("dynamic shape/stride operands do not match the `?`s of the view type")
    if len(tv.shape) != len(tv.strides):
        problems.append("shape and strides differ in rank")
    if any(not _is_scalar_int(v.type) for v in op.operands[1:]):
        problems.append("dynamic shapes and strides must be rank-0 integer tiles")
    return problems


@rule("make_partition_view")
def _make_partition_view(op: Op) -> list[str]:
    problems = _count(op, 1, 1)
    if problems:
        return problems
    pv, tv = op.results[0].type, op.operands[0].type
    if not isinstance(pv, PartitionViewType) or not isinstance(tv, TensorViewType):
        return ["makes a partition_view from a tensor_view"]
    if pv.tensor_view != tv:
        problems.append("result's tensor_view differs from the operand's")
    if len(pv.tile_shape) != tv.rank:
        problems.append(f"tile rank {len(pv.tile_shape)} for a rank-{tv.rank} tensor")
    if sorted(pv.dim_map) != list(range(tv.rank)):
        problems.append(f"`dim_map` {pv.dim_map} is not a permutation")
    return problems


def _view_index(op: Op, lead: int) -> tuple[Value | None, list[Value], Value | None, list[str]]:
    has_token = bool(op.attrs.get("has_token"))
    end = len(op.operands) - (1 if has_token else 0)
    if end < lead:
        return None, [], None, ["too few operands"]
    view = op.operands[lead - 1]
    index = list(op.operands[lead:end])
    token = op.operands[end] if has_token else None
    problems = []
    if token is not None and not isinstance(token.type, TokenType):
        problems.append("`has_token` set but the last operand is not a token")
    pv = view.type
    if not isinstance(pv, PartitionViewType):
        problems.append(f"view must be a partition_view, got {pv}")
    elif len(index) != len(pv.tile_shape):
        problems.append(f"{len(index)} indices for a rank-{len(pv.tile_shape)} view")
    if any(not _is_scalar_int(i.type) for i in index):
        problems.append("indices must be rank-0 integer tiles")
    return view, index, token, problems


def _view_tile(view: Value) -> TileType | None:
    pv = view.type
    if isinstance(pv, PartitionViewType):
        return TileType(pv.tile_shape, pv.tensor_view.element)
    return None


@rule("load_view_tko")
def _load_view(op: Op) -> list[str]:
    view, _, _, problems = _view_index(op, 1)
    if view is None:
        return problems
    want = _view_tile(view)
    got = [str(r.type) for r in op.results]
    if want is not None and got != [str(want), "token"]:
        problems.append(f"results must be ({want}, token), got ({', '.join(got)})")
    return problems


@rule("store_view_tko")
def _store_view(op: Op) -> list[str]:
    view, _, _, problems = _view_index(op, 2)
    if view is None:
        return problems
    want = _view_tile(view)
    if want is not None and op.operands[0].type != want:
        problems.append(f"stores {op.operands[0].type} into tiles of {want}")
    if [str(r.type) for r in op.results] != ["token"]:
        problems.append("result must be a token")
    return problems


@rule("get_index_space_shape", "get_tensor_shape")
def _view_shape(op: Op) -> list[str]:
    problems = _count(op, 1, None)
    if problems:
        return problems
    src = op.operands[0].type
    if op.name == "get_tensor_shape":
        rank = src.rank if isinstance(src, TensorViewType) else None
    else:
        rank = len(src.tile_shape) if isinstance(src, PartitionViewType) else None
    if rank is None:
        return [f"cannot query the shape of {src}"]
    if len(op.results) != rank or any(not _is_scalar_int(r.type) for r in op.results):
        problems.append(f"yields {rank} rank-0 integer tiles")
    return problems


def _optional(op: Op, fixed: int, markers: Sequence[str]) -> tuple[list[Value | None], list[str]]:
    rest = list(op.operands[fixed:])
    present = [bool(op.attrs.get(m)) for m in markers]
    if len(rest) != sum(present):
        return [], [f"{len(rest)} optional operands but markers say {sum(present)}"]
    it = iter(rest)
    return [next(it) if p else None for p in present], []


def _mask_ok(mask: Value | None, ptrs: Type) -> bool:
    return mask is None or (_is_i1(mask.type) and _same_shape(mask.type, ptrs))


def _token_ok(token: Value | None) -> bool:
    return token is None or isinstance(token.type, TokenType)


def _pointee_tile(ptrs: Type) -> TileType | None:
    if isinstance(ptrs, TileType) and isinstance(ptrs.element, PointerType):
        return TileType(ptrs.shape, ptrs.element.pointee)
    return None


@rule("load_ptr_tko")
def _load_ptr(op: Op) -> list[str]:
    if not op.operands or len(op.results) != 2:
        return ["expects pointers and two results"]
    (mask, pad, token), problems = _optional(op, 1, ("has_mask", "has_padding_value", "has_token"))
    if problems:
        return problems
    want = _pointee_tile(op.operands[0].type)
    if want is None:
        return [f"loads through a pointer tile, got {op.operands[0].type}"]
    if str(op.results[0].type) != str(want) or not isinstance(op.results[1].type, TokenType):
        problems.append(f"results must be ({want}, token)")
    if not _mask_ok(mask, want) or (pad is not None and pad.type != want) or not _token_ok(token):
        problems.append("mask, padding or token has the wrong type")
    return problems


@rule("store_ptr_tko")
def _store_ptr(op: Op) -> list[str]:
    if len(op.operands) < 2 or len(op.results) != 1:
        return ["expects pointers, a value and one result"]
    (mask, token), problems = _optional(op, 2, ("has_mask", "has_token"))
    if problems:
        return problems
    want = _pointee_tile(op.operands[0].type)
    if want is None or op.operands[1].type != want:
        problems.append(f"stores {op.operands[1].type} through {op.operands[0].type}")
    elif not _mask_ok(mask, want) or not _token_ok(token):
        problems.append("mask or token has the wrong type")
    if not isinstance(op.results[0].type, TokenType):
        problems.append("result must be a token")
    return problems


@rule("atomic_rmw_tko", "atomic_cas_tko")
def _atomic(op: Op) -> list[str]:
    fixed = 2 if op.name == "atomic_rmw_tko" else 3
    if len(op.operands) < fixed or len(op.results) != 2:
        return [f"expects {fixed} operands and two results"]
    (mask, token), problems = _optional(op, fixed, ("has_mask", "has_token"))
    if problems:
        return problems
    want = _pointee_tile(op.operands[0].type)
    values = op.operands[1:fixed]
    if want is None or any(v.type != want for v in values) or op.results[0].type != want:
        problems.append(f"values must be {want} for pointers {op.operands[0].type}")
    if not _mask_ok(mask, op.operands[0].type) or not _token_ok(token):
        problems.append("mask or token has the wrong type")
    if op.attrs.get("memory_ordering_semantics") == "weak":
        problems.append("atomics cannot be `weak`")
    return problems


@rule("offset")
def _offset(op: Op) -> list[str]:
    problems = _count(op, 2, 1)
    if problems:
        return problems
    ptr, off = op.operands
    if not _is_ptr_tile(ptr.type) or not _is_kind(off.type, "int"):
        problems.append("offsets a pointer tile by an integer tile")
    elif not _same_shape(ptr.type, off.type) or op.results[0].type != ptr.type:
        problems.append("pointer, offset and result shapes must match")
    return problems


# -- control flow (operand/result types; regions are checked by `verify`) -------------


@rule("for")
def _for(op: Op) -> list[str]:
    if len(op.operands) < 3 or len(op.regions) != 1:
        return ["expects bounds, a step and one region"]
    lb, ub, step = op.operands[:3]
    init = op.operands[3:]
    problems = _same_types([lb, ub, step], "bound and step")
    if not _is_scalar_int(lb.type):
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
    problems = _count(op, 1, None)
    if not problems and not (_is_i1(op.operands[0].type) and _tile_rank0(op.operands[0].type)):
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
    tiles = [_tile(v) for v in op.operands]
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

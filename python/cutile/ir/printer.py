"""An MLIR-like text form of the IR, for debugging and test failures.

It follows `tileirdisasm`'s syntax op by op (same keywords, attribute spelling and type
lists), so after renaming SSA values the two texts of a module can be compared. Value
names differ: we number values (`%0`, `%1`, ...) where the disassembler uses hints such as
`%tview` or `%cst_0_i32`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from .. import minifloat
from ..dtypes import DType
from .attrs import Bounded, Dense, DivBy, OptimizationHints, SameElements
from .core import Block, Function, Module, Op, Value
from .types import (
    FunctionType,
    PartitionViewType,
    PointerType,
    TensorViewType,
    TileType,
    TokenType,
    Type,
)


def format_type(ty: Type | DType | PointerType) -> str:
    if isinstance(ty, DType):
        return ty.ir_name
    if isinstance(ty, PointerType):
        return f"ptr<{ty.pointee.ir_name}>"
    if isinstance(ty, TokenType):
        return "token"
    if isinstance(ty, TileType):
        dims = "".join(f"{d}x" for d in ty.shape)
        return f"tile<{dims}{format_type(ty.element)}>"
    if isinstance(ty, TensorViewType):
        dims = "".join(f"{'?' if d is None else d}x" for d in ty.shape)
        strides = ",".join("?" if s is None else str(s) for s in ty.strides)
        return f"tensor_view<{dims}{ty.element.ir_name}, strides=[{strides}]>"
    if isinstance(ty, PartitionViewType):
        tile = "x".join(str(d) for d in ty.tile_shape)
        pad = f", padding_value = {ty.padding}" if ty.padding else ""
        dim_map = ""
        if tuple(ty.dim_map) != tuple(range(len(ty.dim_map))):
            dim_map = f", dim_map=[{', '.join(str(d) for d in ty.dim_map)}]"
        return f"partition_view<tile=({tile}){pad}, {format_type(ty.tensor_view)}{dim_map}>"
    if isinstance(ty, FunctionType):
        ins = ", ".join(format_type(t) for t in ty.inputs)
        outs = ", ".join(format_type(t) for t in ty.results)
        return f"({ins}) -> ({outs})"
    raise TypeError(f"cannot print type {ty!r}")


def format_float(value: float, dtype: DType) -> str:
    """MLIR's style: `1.500000e+00` when that reads back exactly, else the raw bits."""
    if math.isfinite(value):
        # Six significant digits, ties away from zero (APFloat::toString), in %e layout.
        exact = Decimal(value)
        if exact == 0:
            text = f"{'-' if math.copysign(1.0, value) < 0 else ''}0.000000e+00"
        else:
            exponent = exact.adjusted()
            digits = exact.scaleb(-exponent).quantize(Decimal("1.00000"), ROUND_HALF_UP)
            if abs(digits) >= 10:  # rounding carried into a new digit
                digits, exponent = digits / 10, exponent + 1
            text = f"{digits:.6f}e{exponent:+03d}"
        if _round_trips(float(text), value, dtype):
            return text
        shortest = repr(_in_precision(value, dtype))
        if "." in shortest and "e" not in shortest:
            return shortest
    return f"0x{_float_bits(value, dtype):0{(_FLOAT_WIDTH[dtype.name] + 3) // 4}X}"


# Printed bit patterns are for values that do not read back from decimal (infinities, NaNs,
# rounding casualties); truncating the f32 pattern is exact for bf16/tf32 infinities/NaNs.
_FLOAT_WIDTH = {"f16": 16, "bf16": 16, "tf32": 19, "f32": 32, "f64": 64, "f8e4m3fn": 8,
                "f8e5m2": 8}


def _float_bits(value: float, dtype: DType) -> int:
    if minifloat.is_minifloat(dtype.name):
        return int(minifloat.to_bits(value, dtype.name))
    if dtype.name == "f64":
        return int(np.array([value], dtype="<f8").view("<u8")[0])
    if dtype.name == "f16":
        return int(np.array([value], dtype="<f2").view("<u2")[0])
    f32 = int(np.array([value], dtype="<f4").view("<u4")[0])
    return {"f32": f32, "bf16": f32 >> 16, "tf32": f32 >> 13}[dtype.name]


def _round_trips(parsed: float, value: float, dtype: DType) -> bool:
    with np.errstate(over="ignore"):
        return bool(_in_precision(parsed, dtype) == _in_precision(value, dtype))


def _in_precision(value: float, dtype: DType) -> float:
    """`value` rounded (to nearest even) to the precision of `dtype`."""
    if dtype.name == "f64":
        return value
    if minifloat.is_minifloat(dtype.name):
        return float(minifloat.round_to(value, dtype.name))
    if dtype.name == "f16":
        return float(np.float16(value))
    f32 = np.array([value], dtype="<f4")
    keep = {"f32": 23, "bf16": 7, "tf32": 10}[dtype.name]
    if keep == 23:
        return float(f32[0])
    drop = 23 - keep
    bits = int(f32.view("<u4")[0])
    bits = ((bits + (1 << (drop - 1)) - 1 + ((bits >> drop) & 1)) >> drop) << drop
    return float(np.array([bits & 0xFFFFFFFF], dtype="<u4").view("<f4")[0])


def format_scalar(value: Any, dtype: DType) -> str:
    if dtype.kind == "bool":
        return "true" if bool(value) else "false"
    if dtype.kind == "float":
        return format_float(float(value), dtype)
    v = int(value)
    if dtype.unsigned and v >= 1 << (dtype.bits - 1):  # Tile IR integers are signless
        v -= 1 << dtype.bits
    return str(v)


def format_dense(value: Dense, ty: TileType) -> str:
    dtype = ty.dtype
    if value.is_splat:
        return f"<{dtype.ir_name}: {format_scalar(value.array.reshape(-1)[0], dtype)}>"
    arr = np.asarray(value.array)

    def nested(a: np.ndarray) -> str:
        if a.ndim == 1:
            return "[" + ", ".join(format_scalar(x, dtype) for x in a.tolist()) + "]"
        return "[" + ", ".join(nested(sub) for sub in a) + "]"

    return f"<{dtype.ir_name}: {nested(arr)}>"


def format_predicate(pred: DivBy | Bounded | SameElements) -> str:
    if isinstance(pred, DivBy):
        extra = ""
        if pred.every is not None:
            extra += f", every {pred.every}"
            if pred.along is not None:
                extra += f" along {pred.along}"
        return f"div_by<{pred.divisor}{extra}>"
    if isinstance(pred, Bounded):
        lb = "?" if pred.lb is None else str(pred.lb)
        ub = "?" if pred.ub is None else str(pred.ub)
        return f"bounded<{lb}, {ub}>"
    return f"same_elements<[{', '.join(str(d) for d in pred.shape)}]>"


def format_hints(hints: OptimizationHints | dict[str, dict[str, int | bool]]) -> str:
    if isinstance(hints, OptimizationHints):
        by_arch = [(arch, dict(kv)) for arch, kv in hints.by_arch]
    else:
        by_arch = [(arch, dict(kv)) for arch, kv in hints.items()]
    parts = []
    for arch, kv in sorted(by_arch):
        items = ", ".join(
            f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(kv.items())
        )
        parts.append(f"{arch} = {{{items}}}")
    return "<" + ", ".join(parts) + ">"


def _escape(text: str) -> str:
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\' or not 0x20 <= byte < 0x7F:
            out.append(f"\\{byte:02X}")
        else:
            out.append(ch)
    return "".join(out)


# Ops whose several results MLIR prints as one group (`%0:2`, used as `%0#1`).
_GROUPED = frozenset(
    {"get_index_space_shape", "get_tensor_shape", "reduce", "scan", "for", "if", "loop"}
)
# Terminators that MLIR leaves implicit when they carry nothing.
_IMPLICIT_TERMINATOR = {"if": "yield", "for": "continue"}


class _Printer:
    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.counter = 0
        self.lines: list[str] = []
        self.indent = 0

    # -- names -------------------------------------------------------------------------

    def name(self, v: Value) -> str:
        found = self.names.get(v)
        return found if found is not None else f"<<undefined {v!r}>>"

    def bind(self, values: Sequence[Value], group: bool) -> str:
        if not values:
            return ""
        if group and len(values) > 1:
            base = f"%{self.counter}"
            self.counter += 1
            for i, v in enumerate(values):
                self.names[v] = f"{base}#{i}"
            return f"{base}:{len(values)} = "
        for v in values:
            self.names[v] = f"%{self.counter}"
            self.counter += 1
        return ", ".join(self.names[v] for v in values) + " = "

    def names_of(self, values: Sequence[Value]) -> str:
        return ", ".join(self.name(v) for v in values)

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    # -- structure ---------------------------------------------------------------------

    def function(self, fn: Function) -> None:
        for i, p in enumerate(fn.params):
            self.names[p] = f"%arg{i}"
        params = ", ".join(f"%arg{i}: {format_type(p.type)}" for i, p in enumerate(fn.params))
        hints = f" optimization_hints={format_hints(fn.hints)}" if fn.hints else ""
        keyword = "entry" if fn.is_entry else "func"
        self.emit(f"{keyword} @{fn.name}({params}){hints} {{")
        self.block_ops(fn.body, parent=None)
        self.emit("}")

    def block_ops(self, block: Block, parent: Op | None) -> None:
        self.indent += 1
        ops = block.ops
        implicit = _IMPLICIT_TERMINATOR.get(parent.name) if parent is not None else None
        if implicit and ops and ops[-1].name == implicit and not ops[-1].operands:
            ops = ops[:-1]
        for op in ops:
            self.op(op)
        self.indent -= 1

    def region_args(self, block: Block) -> str:
        for a in block.args:
            self.names[a] = f"%{self.counter}"
            self.counter += 1
        return ", ".join(f"{self.name(a)}: {format_type(a.type)}" for a in block.args)

    def op(self, op: Op) -> None:
        printer = _OP_PRINTERS.get(op.name, _generic)
        printer(self, op)


Printer = Callable[[_Printer, Op], None]
_OP_PRINTERS: dict[str, Printer] = {}


def _prints(*names: str) -> Callable[[Printer], Printer]:
    def register(fn: Printer) -> Printer:
        for n in names:
            _OP_PRINTERS[n] = fn
        return fn

    return register


def _t(v: Value) -> str:
    return format_type(v.type)


def _rounding(op: Op, default: str, key: str = "rounding_mode") -> str:
    mode = op.attrs.get(key, default)
    return f" rounding<{mode}>" if mode != default else ""


def _unit(op: Op, *names: str) -> str:
    return "".join(f" {n}" for n in names if op.attrs.get(n))


def _overflow(op: Op) -> str:
    o = op.attrs.get("overflow", "none")
    long = {"nsw": "no_signed_wrap", "nuw": "no_unsigned_wrap", "nw": "no_wrap"}.get(o, o)
    return f" overflow<{long}>" if long != "none" else ""


def _generic(p: _Printer, op: Op) -> None:
    lhs = p.bind(op.results, group=True)
    attrs = ", ".join(f"{k} = {v!r}" for k, v in sorted(op.attrs.items()))
    ins = ", ".join(_t(v) for v in op.operands)
    outs = ", ".join(_t(v) for v in op.results)
    p.emit(f'{lhs}"{op.name}"({p.names_of(op.operands)}) {{{attrs}}} : ({ins}) -> ({outs})')


@_prints("addf", "subf", "mulf", "divf", "fma")
def _float_arith(p: _Printer, op: Op) -> None:
    extra = _rounding(op, "nearest_even") + _unit(op, "flush_to_zero")
    p.emit(f"{p.bind(op.results, False)}{op.name} {p.names_of(op.operands)}{extra} : "
           f"{_t(op.result)}")  # fmt: skip


@_prints(
    "remf", "pow", "atan2", "andi", "ori", "xori", "mulhii", "log", "log2", "sin",
    "cos", "tan", "sinh", "cosh", "floor", "ceil", "absf", "negf", "absi",
)  # fmt: skip
def _plain(p: _Printer, op: Op) -> None:
    name = "fpowf" if op.name == "pow" else op.name  # the 13.4+ dialect spells it fpowf
    p.emit(f"{p.bind(op.results, False)}{name} {p.names_of(op.operands)} : {_t(op.result)}")


@_prints("fpowi")
def _fpowi(p: _Printer, op: Op) -> None:
    types = ", ".join(_t(v) for v in op.operands)
    p.emit(f"{p.bind(op.results, False)}fpowi {p.names_of(op.operands)} : {types}")


@_prints("insert")
def _insert(p: _Printer, op: Op) -> None:
    src, dst, *idx = op.operands
    p.emit(f"{p.bind(op.results, False)}insert {p.name(src)}, {p.name(dst)}[{p.names_of(idx)}]"
           f" : {_t(src)}, {_t(dst)}")  # fmt: skip


@_prints("maxf", "minf", "exp2", "rsqrt")
def _ftz_family(p: _Printer, op: Op) -> None:
    extra = _unit(op, "propagate_nan", "flush_to_zero")
    p.emit(f"{p.bind(op.results, False)}{op.name} {p.names_of(op.operands)}{extra} : "
           f"{_t(op.result)}")  # fmt: skip


@_prints("exp", "tanh", "sqrt")
def _rounded_math(p: _Printer, op: Op) -> None:
    default = "nearest_even" if op.name == "sqrt" else "full"
    extra = _rounding(op, default) + _unit(op, "flush_to_zero")
    p.emit(f"{p.bind(op.results, False)}{op.name} {p.names_of(op.operands)}{extra} : "
           f"{_t(op.result)}")  # fmt: skip


@_prints("addi", "subi", "muli", "shli", "negi")
def _int_overflow(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, False)}{op.name} {p.names_of(op.operands)}{_overflow(op)} : "
           f"{_t(op.result)}")  # fmt: skip


@_prints("remi", "maxi", "mini", "shri", "divi")
def _int_signed(p: _Printer, op: Op) -> None:
    extra = f" {op.attrs.get('signedness', 'signed')}"
    if op.name == "divi":
        extra += _rounding(op, "zero", "rounding")
    p.emit(f"{p.bind(op.results, False)}{op.name} {p.names_of(op.operands)}{extra} : "
           f"{_t(op.result)}")  # fmt: skip


@_prints("cmpf", "cmpi")
def _cmp(p: _Printer, op: Op) -> None:
    pred = op.attrs.get("comparison_predicate")
    lhs, rhs = (p.name(v) for v in op.operands)
    if op.name == "cmpf":
        body = f"{pred} {op.attrs.get('comparison_ordering', 'ordered')} {lhs}, {rhs}"
    else:
        body = f"{pred} {lhs}, {rhs}, {op.attrs.get('signedness', 'signed')}"
    p.emit(f"{p.bind(op.results, False)}{op.name} {body} : {_t(op.operands[0])} -> "
           f"{_t(op.result)}")  # fmt: skip


@_prints("select")
def _select(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, False)}select {p.names_of(op.operands)} : "
           f"{_t(op.operands[0])}, {_t(op.result)}")  # fmt: skip


@_prints("mmaf", "mmai")
def _mma(p: _Printer, op: Op) -> None:
    extra = _unit(op, "fast_acc")
    if op.name == "mmai":
        extra = (f" {op.attrs.get('signedness_lhs', 'signed')}"
                 f" {op.attrs.get('signedness_rhs', 'signed')}")  # fmt: skip
    types = ", ".join(_t(v) for v in op.operands)
    p.emit(f"{p.bind(op.results, False)}{op.name} {p.names_of(op.operands)}{extra} : {types}")


@_prints("ftof", "ftoi", "itof", "exti", "trunci", "bitcast", "int_to_ptr", "ptr_to_int",
         "ptr_to_ptr", "reshape", "broadcast")  # fmt: skip
def _conversion(p: _Printer, op: Op) -> None:
    extra = ""
    if op.name in ("ftoi", "itof", "exti"):
        extra += f" {op.attrs.get('signedness', 'signed')}"
    if op.name in ("ftof", "itof"):
        extra += _rounding(op, "nearest_even")
    if op.name == "ftoi":
        extra += _rounding(op, "nearest_int_to_zero")
    if op.name == "trunci":
        extra += _overflow(op)
    p.emit(f"{p.bind(op.results, False)}{op.name} {p.names_of(op.operands)}{extra} : "
           f"{_t(op.operands[0])} -> {_t(op.result)}")  # fmt: skip


@_prints("permute")
def _permute(p: _Printer, op: Op) -> None:
    perm = ", ".join(str(i) for i in op.attrs.get("permutation", ()))
    p.emit(f"{p.bind(op.results, False)}permute {p.name(op.operands[0])} [{perm}] : "
           f"{_t(op.operands[0])} -> {_t(op.result)}")  # fmt: skip


@_prints("cat")
def _cat(p: _Printer, op: Op) -> None:
    types = ", ".join(_t(v) for v in op.operands)
    p.emit(f"{p.bind(op.results, False)}cat {p.names_of(op.operands)} dim = "
           f"{op.attrs.get('dim')} : {types} -> {_t(op.result)}")  # fmt: skip


@_prints("extract")
def _extract(p: _Printer, op: Op) -> None:
    src, *idx = op.operands
    p.emit(f"{p.bind(op.results, False)}extract {p.name(src)}[{p.names_of(idx)}] : "
           f"{_t(src)} -> {_t(op.result)}")  # fmt: skip


@_prints("iota", "make_token")
def _nullary(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, False)}{op.name} : {_t(op.result)}")


@_prints("constant")
def _constant(p: _Printer, op: Op) -> None:
    ty = op.result.type
    value = op.attrs.get("value")
    assert isinstance(ty, TileType) and isinstance(value, Dense)
    p.emit(f"{p.bind(op.results, False)}constant {format_dense(value, ty)} : {_t(op.result)}")


@_prints("assume")
def _assume(p: _Printer, op: Op) -> None:
    pred = format_predicate(op.attrs["predicate"])
    p.emit(f"{p.bind(op.results, False)}assume {pred}, {p.name(op.operands[0])} : "
           f"{_t(op.result)}")  # fmt: skip


@_prints("get_tile_block_id", "get_num_tile_blocks")
def _grid(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, False)}{op.name} : {_t(op.results[0])}")


@_prints("join_tokens")
def _join(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, False)}join_tokens {p.names_of(op.operands)} : token")


@_prints("assert")
def _assert(p: _Printer, op: Op) -> None:
    msg = _escape(op.attrs.get("message", ""))
    p.emit(f'assert {p.name(op.operands[0])}, "{msg}" : {_t(op.operands[0])}')


@_prints("gdc_wait_tko", "gdc_launch_dependents_tko")
def _gdc(p: _Printer, op: Op) -> None:
    token = f" token = {p.name(op.operands[0])}" if op.operands else ""
    p.emit(f"{p.bind(op.results, False)}{op.name}{token} -> token")


@_prints("print_tko")
def _print(p: _Printer, op: Op) -> None:
    has_token = bool(op.attrs.get("has_token"))
    args = op.operands[:-1] if has_token else op.operands
    text = f'print_tko "{_escape(op.attrs.get("str", ""))}"'
    if args:
        text += ", " + p.names_of(args)
    if has_token:
        text += f" token={p.name(op.operands[-1])}"
    types = ", ".join(_t(a) for a in args)
    text += f" : {types} -> token" if args else " -> token"
    p.emit(p.bind(op.results, False) + text)


@_prints("make_tensor_view")
def _make_tensor_view(p: _Printer, op: Op) -> None:
    tv = op.result.type
    assert isinstance(tv, TensorViewType)
    dyn = iter(op.operands[1:])
    shape = ", ".join(str(d) if d is not None else p.name(next(dyn)) for d in tv.shape)
    strides = ", ".join(str(s) if s is not None else p.name(next(dyn)) for s in tv.strides)
    index_ty = f"{_t(op.operands[1])} -> " if len(op.operands) > 1 else ""
    p.emit(f"{p.bind(op.results, False)}make_tensor_view {p.name(op.operands[0])}, "
           f"shape = [{shape}], strides = [{strides}] : {index_ty}{_t(op.result)}")  # fmt: skip


@_prints("make_partition_view")
def _make_partition_view(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, False)}make_partition_view {p.name(op.operands[0])} : "
           f"{_t(op.result)}")  # fmt: skip


@_prints("get_index_space_shape", "get_tensor_shape")
def _view_shape(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, True)}{op.name} {p.name(op.operands[0])} : "
           f"{_t(op.operands[0])} -> {_t(op.results[0])}")  # fmt: skip


def _memory_prefix(op: Op) -> str:
    scope = op.attrs.get("memory_scope")
    return f"{op.attrs.get('memory_ordering_semantics', 'weak')}" + (f" {scope}" if scope else "")


def _view_access(p: _Printer, op: Op, lead: int) -> None:
    has_token = bool(op.attrs.get("has_token"))
    end = len(op.operands) - (1 if has_token else 0)
    head, view, index = op.operands[: lead - 1], op.operands[lead - 1], op.operands[lead:end]
    text = f"{op.name} {_memory_prefix(op)} "
    text += "".join(f"{p.name(v)}, " for v in head)
    text += f"{p.name(view)}[{p.names_of(index)}]"
    if has_token:
        text += f" token = {p.name(op.operands[-1])}"
    if op.attrs.get("optimization_hints") is not None:
        text += f" optimization_hints = {format_hints(op.attrs['optimization_hints'])}"
    types = [*(_t(v) for v in head), _t(view)] + ([_t(index[0])] if index else [])
    text += f" : {', '.join(types)} -> {', '.join(_t(r) for r in op.results)}"
    p.emit(p.bind(op.results, False) + text)


@_prints("load_view_tko")
def _load_view(p: _Printer, op: Op) -> None:
    _view_access(p, op, 1)


@_prints("store_view_tko")
def _store_view(p: _Printer, op: Op) -> None:
    _view_access(p, op, 2)


def _pointer_access(p: _Printer, op: Op, fixed: int, markers: Sequence[str]) -> None:
    present = [m for m in markers if op.attrs.get(m)]
    values = list(op.operands[:fixed])
    token = op.operands[-1] if "has_token" in present else None
    optional = op.operands[fixed : len(op.operands) - (1 if token is not None else 0)]
    shown = values + list(optional)
    names = [p.name(v) for v in shown]
    # The type list names each distinct operand role once: cas's `val` shares `cmp`'s type.
    typed = [v for i, v in enumerate(shown) if not (op.name == "atomic_cas_tko" and i == 2)]
    if op.name == "atomic_rmw_tko":
        names.insert(1, str(op.attrs.get("mode")))
    text = f"{op.name} {_memory_prefix(op)} {', '.join(names)}"
    if token is not None:
        text += f" token={p.name(token)}"
    text += f" : {', '.join(_t(v) for v in typed)} -> {', '.join(_t(r) for r in op.results)}"
    p.emit(p.bind(op.results, False) + text)


@_prints("load_ptr_tko")
def _load_ptr(p: _Printer, op: Op) -> None:
    _pointer_access(p, op, 1, ("has_mask", "has_padding_value", "has_token"))


@_prints("store_ptr_tko")
def _store_ptr(p: _Printer, op: Op) -> None:
    _pointer_access(p, op, 2, ("has_mask", "has_token"))


@_prints("atomic_rmw_tko")
def _atomic_rmw(p: _Printer, op: Op) -> None:
    _pointer_access(p, op, 2, ("has_mask", "has_token"))


@_prints("atomic_cas_tko")
def _atomic_cas(p: _Printer, op: Op) -> None:
    _pointer_access(p, op, 3, ("has_mask", "has_token"))


@_prints("offset")
def _offset(p: _Printer, op: Op) -> None:
    p.emit(f"{p.bind(op.results, False)}offset {p.names_of(op.operands)} : "
           f"{_t(op.operands[0])}, {_t(op.operands[1])} -> {_t(op.result)}")  # fmt: skip


@_prints("yield", "continue", "break", "return")
def _terminator(p: _Printer, op: Op) -> None:
    if op.operands:
        types = ", ".join(_t(v) for v in op.operands)
        p.emit(f"{op.name} {p.names_of(op.operands)} : {types}")
    else:
        p.emit(op.name)


@_prints("for")
def _for(p: _Printer, op: Op) -> None:
    lb, ub, step, *init = op.operands
    body = op.regions[0]
    lhs = p.bind(op.results, True)
    names_in = [p.name(v) for v in init]
    iv, *carried = body.args
    p.names[iv] = f"%{p.counter}"
    p.counter += 1
    for a in carried:
        p.names[a] = f"%{p.counter}"
        p.counter += 1
    unsigned = " unsigned" if op.attrs.get("unsignedCmp") else ""
    text = (f"{lhs}for{unsigned} {p.name(iv)} in ({p.name(lb)} to {p.name(ub)}, step "
            f"{p.name(step)}) : {_t(lb)}")  # fmt: skip
    if init:
        pairs = ", ".join(f"{p.name(a)} = {n}" for a, n in zip(carried, names_in, strict=True))
        text += f" iter_values({pairs}) -> ({', '.join(_t(r) for r in op.results)})"
    p.emit(text + " {")
    p.block_ops(body, op)
    p.emit("}")


@_prints("if")
def _if(p: _Printer, op: Op) -> None:
    lhs = p.bind(op.results, True)
    results = f" -> ({', '.join(_t(r) for r in op.results)})" if op.results else ""
    p.emit(f"{lhs}if {p.name(op.operands[0])}{results} {{")
    p.block_ops(op.regions[0], op)
    if len(op.regions) > 1:
        p.emit("} else {")
        p.block_ops(op.regions[1], op)
    p.emit("}")


@_prints("loop")
def _loop(p: _Printer, op: Op) -> None:
    lhs = p.bind(op.results, True)
    body = op.regions[0]
    names_in = [p.name(v) for v in op.operands]
    for a in body.args:
        p.names[a] = f"%{p.counter}"
        p.counter += 1
    text = f"{lhs}loop"
    if op.operands:
        pairs = ", ".join(f"{p.name(a)} = {n}" for a, n in zip(body.args, names_in, strict=True))
        text += f" iter_values({pairs}) : {', '.join(_t(v) for v in op.operands)}"
    if op.results:
        text += f" -> {', '.join(_t(r) for r in op.results)}"
    p.emit(text + " {")
    p.block_ops(body, op)
    p.emit("}")


@_prints("reduce", "scan")
def _reduction(p: _Printer, op: Op) -> None:
    lhs = p.bind(op.results, True)
    idents = []
    for value, v in zip(op.attrs.get("identities", ()), op.operands, strict=False):
        assert isinstance(v.type, TileType)
        idents.append(f"{format_scalar(value, v.type.dtype)} : {v.type.dtype.ir_name}")
    reverse = ""
    if op.name == "scan":
        reverse = f" reverse={'true' if op.attrs.get('reverse') else 'false'}"
    ins = ", ".join(_t(v) for v in op.operands)
    outs = ", ".join(_t(r) for r in op.results)
    p.emit(f"{lhs}{op.name} {p.names_of(op.operands)} dim={op.attrs.get('dim')}{reverse} "
           f"identities=[{', '.join(idents)}] : {ins} -> {outs}")  # fmt: skip
    p.emit(f"({p.region_args(op.regions[0])}) {{")
    p.block_ops(op.regions[0], op)
    p.emit("}")


def print_function(fn: Function) -> str:
    p = _Printer()
    p.function(fn)
    return "\n".join(p.lines) + "\n"


def print_module(module: Module) -> str:
    return "".join(print_function(fn) for fn in module.functions)

"""Self-contained ("tagged") attribute encodings (`BytecodeAttrOpcodes.td`).

An op's fixed attributes (enums, ints, strings) are written bare by its encoder; these are
the attributes whose kind is not implied by the op: assume predicates, reduce/scan
identities, and optimization hint dictionaries.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...dtypes import DType, i32
from ...ir.attrs import Bounded, DivBy, OptimizationHints, SameElements
from .constants import float_bits
from .tables import StringTable, TypeTable
from .wire import signed_varint, varint

TAG_INTEGER = 0x01
TAG_FLOAT = 0x02
TAG_BOOL = 0x03
TAG_ARRAY = 0x06
TAG_DIV_BY = 0x08
TAG_SAME_ELEMENTS = 0x09
TAG_DICTIONARY = 0x0A
TAG_OPTIMIZATION_HINTS = 0x0B
TAG_BOUNDED = 0x0C

# Float payload widths (APInt bit widths): tf32 is a 19-bit format.
_FLOAT_WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "tf32": 19, "f64": 64, "f8e4m3fn": 8,
                "f8e5m2": 8}


def encode_predicate(pred: DivBy | Bounded | SameElements, out: bytearray) -> None:
    """`assume` predicates: div_by, bounded, same_elements."""
    if isinstance(pred, DivBy):
        out.append(TAG_DIV_BY)
        varint(pred.divisor, out)
        out.append((pred.every is not None) | ((pred.along is not None) << 1))
        if pred.every is not None:
            signed_varint(pred.every, out)
        if pred.along is not None:
            signed_varint(pred.along, out)
    elif isinstance(pred, Bounded):
        out.append(TAG_BOUNDED)
        out.append((pred.lb is not None) | ((pred.ub is not None) << 1))
        if pred.lb is not None:
            signed_varint(pred.lb, out)
        if pred.ub is not None:
            signed_varint(pred.ub, out)
    elif isinstance(pred, SameElements):
        out.append(TAG_SAME_ELEMENTS)
        varint(len(pred.shape), out)
        for n in pred.shape:
            out += int(n).to_bytes(8, "little", signed=True)
    else:
        raise TypeError(f"not an assume predicate: {pred!r}")


def encode_integer(value: int, dtype: DType, types: TypeTable, out: bytearray) -> None:
    out.append(TAG_INTEGER)
    varint(types.id(dtype), out)
    varint(int(value) & ((1 << dtype.bits) - 1), out)  # the reader takes the zero-extension


def _ap_int(bits: int, width: int, out: bytearray) -> None:
    """APInt payload: one raw byte up to 8 bits, else a signed varint of the raw bits."""
    if width <= 8:
        out.append(bits & 0xFF)
    elif width <= 64:
        signed_varint(bits, out)
    else:
        raise ValueError("APInts wider than 64 bits are not used by cutile")


def encode_float(value: float, dtype: DType, types: TypeTable, out: bytearray) -> None:
    width = _FLOAT_WIDTH.get(dtype.name)
    if width is None:
        raise TypeError(f"no float attribute encoding for `{dtype.name}`")
    out.append(TAG_FLOAT)
    varint(types.id(dtype), out)
    _ap_int(float_bits(value, dtype), width, out)


def encode_scalar(
    value: int | float | bool, dtype: DType, types: TypeTable, out: bytearray
) -> None:
    """A typed scalar attribute (reduce/scan identities): Float for float types, Integer
    otherwise (i1 included, as MLIR spells `true : i1`)."""
    if dtype.is_float:
        encode_float(float(value), dtype, types, out)
    else:
        encode_integer(int(value), dtype, types, out)


def encode_hint_value(value: int | bool, types: TypeTable, out: bytearray) -> None:
    if isinstance(value, bool):
        out.append(TAG_BOOL)
        out.append(int(value))
    else:
        encode_integer(value, i32, types, out)


HintMap = Mapping[str, Mapping[str, int | bool]]


HintPairs = list[tuple[str, list[tuple[str, int | bool]]]]


def hints_by_arch(hints: HintMap | OptimizationHints) -> HintPairs:
    """Normalize hints to sorted (arch, sorted (key, value)) pairs: MLIR dictionaries are
    sorted by key, and sorting keeps the bytes deterministic."""
    if isinstance(hints, OptimizationHints):
        pairs: HintPairs = [(arch, list(kv)) for arch, kv in hints.by_arch]
    else:
        pairs = [(arch, list(kv.items())) for arch, kv in hints.items()]
    return sorted((arch, sorted(kv)) for arch, kv in pairs)


def encode_hints_body(
    hints: HintMap | OptimizationHints, strings: StringTable, types: TypeTable, out: bytearray
) -> None:
    """The untagged dictionary {arch: {key: value}} inside an OptimizationHints attribute."""
    by_arch = hints_by_arch(hints)
    varint(len(by_arch), out)
    for arch, entries in by_arch:
        varint(strings.id(arch), out)
        out.append(TAG_DICTIONARY)
        varint(len(entries), out)
        for key, value in entries:
            varint(strings.id(key), out)
            encode_hint_value(value, types, out)


def encode_hints_tagged(
    hints: HintMap | OptimizationHints, strings: StringTable, types: TypeTable, out: bytearray
) -> None:
    out.append(TAG_OPTIMIZATION_HINTS)
    encode_hints_body(hints, strings, types, out)


def encode_empty_array(out: bytearray) -> None:
    out.append(TAG_ARRAY)
    varint(0, out)

"""The String, Type and Constant tables, with the type encodings (`BytecodeTypeOpcodes.td`).

Every reference in the format is an index into one of these tables; each table
deduplicates identical items, so writing a module twice gives identical bytes.
"""

from __future__ import annotations

from ...dtypes import DType
from ...ir.types import (
    FunctionType,
    PartitionViewType,
    PointerType,
    TensorViewType,
    TileType,
    TokenType,
    Type,
)
from .version import V13_3, V13_4, BytecodeVersion
from .wire import INT64_MIN, Table, int_list, varint

# Scalar type tags, keyed by Tile IR spelling (lower case) -> (tag bytes, first version).
_SCALAR_TAGS: dict[str, tuple[bytes, str]] = {
    "i1": (b"\x00", "13.1"),
    "i8": (b"\x01", "13.1"),
    "i16": (b"\x02", "13.1"),
    "i32": (b"\x03", "13.1"),
    "i64": (b"\x04", "13.1"),
    "f16": (b"\x05", "13.1"),
    "bf16": (b"\x06", "13.1"),
    "f32": (b"\x07", "13.1"),
    "tf32": (b"\x08", "13.1"),
    "f64": (b"\x09", "13.1"),
    "f8e4m3fn": (b"\x0a", "13.1"),
    "f8e5m2": (b"\x0b", "13.1"),
    "f8e8m0fnu": (b"\x12", "13.2"),
    "f4e2m1fn": (b"\x13", "13.3"),
    "i4": (b"\x16", "13.3"),
    "f8e5m3fnu": (b"\x82\x01", "13.4"),
}
_TOKEN = b"\x11"
_POINTER = b"\x0c"
_TILE = b"\x0d"
_TENSOR_VIEW = b"\x0e"
_PARTITION_VIEW = b"\x0f"
_FUNCTION = b"\x10"

PADDING_CODES = {"zero": 0, "neg_zero": 1, "nan": 2, "pos_inf": 3, "neg_inf": 4}


class StringTable(Table):
    def id(self, text: str) -> int:
        return self.intern(text.encode("utf-8"))


class ConstantTable(Table):
    """Constant items are a varint byte length followed by raw little-endian data."""

    def id(self, data: bytes) -> int:
        if not data:
            raise ValueError("a constant needs at least one byte")  # the reader rejects empty
        item = bytearray()
        varint(len(data), item)
        return self.intern(bytes(item + data))


def _dims(values: tuple[int | None, ...]) -> list[int]:
    return [INT64_MIN if v is None else v for v in values]


class TypeTable(Table):
    """Types are encoded children-first, so a type's id is larger than its parts' ids."""

    def __init__(self, version: BytecodeVersion) -> None:
        super().__init__()
        self.version = version

    def id(self, ty: Type | DType | PointerType) -> int:
        return self.intern(self._encode(ty))

    def _encode(self, ty: Type | DType | PointerType) -> bytes:
        out = bytearray()
        if isinstance(ty, DType):
            out += self._scalar(ty)
        elif isinstance(ty, TokenType):
            out += _TOKEN
        elif isinstance(ty, PointerType):
            pointee = self.id(ty.pointee)
            out += _POINTER
            if self.version >= V13_4:
                varint(0, out)  # optional-flags: no pointer attribute
            varint(pointee, out)
        elif isinstance(ty, TileType):
            elem = self.id(ty.element)
            out += _TILE
            varint(elem, out)
            int_list(ty.shape, 8, out)
        elif isinstance(ty, TensorViewType):
            elem = self.id(ty.element)
            out += _TENSOR_VIEW
            if self.version >= V13_4:
                varint(0, out)  # optional-flags: no pointer attribute
            varint(elem, out)
            int_list(_dims(ty.shape), 8, out)
            int_list(_dims(ty.strides), 8, out)
        elif isinstance(ty, PartitionViewType):
            tview = self.id(ty.tensor_view)
            out += _PARTITION_VIEW
            if self.version < V13_3:
                raise ValueError("partition_view encoding before 13.3 is not supported")
            varint(1 if ty.padding is not None else 0, out)
            int_list(ty.tile_shape, 4, out)
            varint(tview, out)
            int_list(ty.dim_map, 4, out)
            if ty.padding is not None:
                out.append(PADDING_CODES[ty.padding])
        elif isinstance(ty, FunctionType):
            inputs = [self.id(t) for t in ty.inputs]
            results = [self.id(t) for t in ty.results]
            out += _FUNCTION
            varint(len(inputs), out)
            for i in inputs:
                varint(i, out)
            varint(len(results), out)
            for r in results:
                varint(r, out)
        else:
            raise TypeError(f"no bytecode encoding for type {ty!r}")
        return bytes(out)

    def _scalar(self, dtype: DType) -> bytes:
        # Tile IR's spelling: integers are signless (`u32` is `i32`), f8 names are cased.
        entry = _SCALAR_TAGS.get(dtype.ir_name.lower())
        if entry is None:
            raise TypeError(f"element type `{dtype.name}` has no bytecode encoding")
        tag, since = entry
        if not self.version.at_least(since):
            raise ValueError(f"`{dtype.name}` needs bytecode {since}+, writing {self.version}")
        return tag

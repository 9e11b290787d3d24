"""Writes one function's op stream: SSA numbering, regions and per-op dispatch.

Op layout (the order `cuda-tile-tblgen` generates from `Ops.td`): opcode, result types
(a count first when the op's results are variadic), a flags varint when the op has optional
or unit attributes or optional operands, attributes in declaration order, operands (a count
first for variadic groups; a present optional operand is just its id), then regions.

SSA numbering: entry parameters are 0..n-1, each op result takes the next number in
textual order; a region's block arguments continue the numbering, and when the region
closes the counter returns to where it was, so the op's own results come after that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...dtypes import DType
from ...errors import InternalCompilerError
from ...ir.attrs import Bounded, Dense, DivBy, OptimizationHints, SameElements
from ...ir.core import Block, Op, Value
from ...ir.op_table import OPS
from ...ir.types import PointerType, TileType, Type
from . import enums
from .attributes import HintMap, encode_hints_body, encode_predicate, encode_scalar
from .constants import dense_bytes
from .debug import FunctionDebugInfo
from .tables import ConstantTable, StringTable, TypeTable
from .version import BytecodeVersion
from .wire import int_list, varint


class EncodeError(InternalCompilerError):
    """The IR handed to the writer cannot be encoded (a bug upstream of the writer)."""


Encoder = Callable[["OpWriter", Op], None]


@dataclass(frozen=True)
class OpSpec:
    name: str
    opcode: int
    since: str  # first bytecode version that has the op
    encode: Encoder


ENCODERS: dict[str, OpSpec] = {}


def encodes(name: str) -> Callable[[Encoder], Encoder]:
    """Register the encoder of op `name`; its opcode and the version that introduced it come
    from the op table (`ir/op_table.py`). The dispatcher writes the opcode; the encoder
    writes the rest."""
    d = OPS[name]  # an op missing from the table is an error at import

    def register(fn: Encoder) -> Encoder:
        if name in ENCODERS:
            raise RuntimeError(f"two encoders for `{name}`")
        ENCODERS[name] = OpSpec(name, d.opcode, d.since, fn)
        return fn

    return register


_REQUIRED: Any = object()


@dataclass
class ModuleTables:
    version: BytecodeVersion
    strings: StringTable
    types: TypeTable
    constants: ConstantTable


class OpWriter:
    def __init__(self, tables: ModuleTables, debug: FunctionDebugInfo) -> None:
        self.tables = tables
        self.version = tables.version
        self.debug = debug
        self.out = bytearray()
        self._ids: dict[Value, int] = {}
        self._next_id = 0

    # -- values ----------------------------------------------------------------------------

    def define(self, value: Value) -> None:
        if value in self._ids:
            raise EncodeError(f"value {value!r} is defined twice")
        self._ids[value] = self._next_id
        self._next_id += 1

    def value_id(self, value: Value) -> int:
        found = self._ids.get(value)
        if found is None:
            raise EncodeError(f"value {value!r} is used where it is not defined (dominance)")
        return found

    # -- ops and regions -------------------------------------------------------------------

    def write_op(self, op: Op) -> None:
        spec = ENCODERS.get(op.name)
        if spec is None:
            raise EncodeError(f"no bytecode encoder for op `{op.name}`")
        if not self.version.at_least(spec.since):
            raise EncodeError(f"`{op.name}` needs bytecode {spec.since}+, writing {self.version}")
        varint(spec.opcode, self.out)
        # The reader pairs locations with ops in pre-order, so record before any region.
        self.debug.record(op.loc)
        try:
            spec.encode(self, op)
        except (KeyError, ValueError, TypeError) as exc:
            where = f" at {op.loc}" if op.loc else ""
            raise EncodeError(f"cannot encode `{op.name}`{where}: {exc}") from exc
        for result in op.results:
            self.define(result)

    def regions(self, op: Op) -> None:
        varint(len(op.regions), self.out)
        for block in op.regions:
            self.block(block)

    def block(self, block: Block) -> None:
        varint(1, self.out)  # Tile IR regions hold exactly one block
        varint(len(block.args), self.out)
        for arg in block.args:
            self.type(arg.type)
        saved_next = self._next_id
        scope_start = len(self._ids)  # dicts keep insertion order: later entries are inner
        for arg in block.args:
            self.define(arg)
        varint(len(block.ops), self.out)
        for op in block.ops:
            self.write_op(op)
        # Values defined inside the region go out of scope, and their numbers are reused.
        for value in list(self._ids)[scope_start:]:
            del self._ids[value]
        self._next_id = saved_next

    # -- attribute access ------------------------------------------------------------------

    @staticmethod
    def attr(op: Op, name: str, default: Any = _REQUIRED) -> Any:
        if name in op.attrs:
            return op.attrs[name]
        if default is _REQUIRED:
            raise KeyError(f"missing attribute `{name}`")
        return default

    @staticmethod
    def has(op: Op, name: str) -> bool:
        """A unit attribute or an optional-operand marker (`has_token`, ...)."""
        return bool(op.attrs.get(name, False))

    # -- field writers ---------------------------------------------------------------------

    def varint(self, n: int) -> None:
        varint(n, self.out)

    def type(self, ty: Type | DType | PointerType) -> None:
        varint(self.tables.types.id(ty), self.out)

    def result(self, op: Op) -> None:
        """The single fixed result's type."""
        if len(op.results) != 1:
            raise ValueError(f"expected one result, got {len(op.results)}")
        self.type(op.results[0].type)

    def fixed_results(self, op: Op, count: int) -> None:
        if len(op.results) != count:
            raise ValueError(f"expected {count} results, got {len(op.results)}")
        for r in op.results:
            self.type(r.type)

    def sized_results(self, op: Op) -> None:
        """Results of an op whose ODS results are variadic: a count, then the types."""
        varint(len(op.results), self.out)
        for r in op.results:
            self.type(r.type)

    def flags(self, *bits: bool) -> None:
        varint(sum(1 << i for i, bit in enumerate(bits) if bit), self.out)

    def enum(self, op: Op, name: str, default: str | None = None) -> None:
        spelling = self.attr(op, name, default if default is not None else _REQUIRED)
        self.out.append(enums.code(name, spelling))

    def int_attr(self, value: int) -> None:
        varint(int(value), self.out)

    def bool_attr(self, value: bool) -> None:
        self.out.append(1 if value else 0)

    def string(self, text: str) -> None:
        varint(self.tables.strings.id(text), self.out)

    def dense(self, value: Dense, ty: Type) -> None:
        if not isinstance(ty, TileType) or isinstance(ty.element, PointerType):
            raise TypeError(f"constant of non-numeric type {ty}")
        varint(self.tables.constants.id(dense_bytes(value, ty.element)), self.out)

    def predicate(self, pred: DivBy | Bounded | SameElements) -> None:
        encode_predicate(pred, self.out)

    def hints(self, hints: HintMap | OptimizationHints) -> None:
        """An op's optimization_hints attribute (untagged: its kind is implied)."""
        encode_hints_body(hints, self.tables.strings, self.tables.types, self.out)

    def scalar_array(self, values: Sequence[int | float | bool], dtypes: Sequence[DType]) -> None:
        """An ArrayAttr of typed scalars (reduce/scan identities)."""
        varint(len(values), self.out)
        for value, dtype in zip(values, dtypes, strict=True):
            encode_scalar(value, dtype, self.tables.types, self.out)

    def i32_array(self, values: Sequence[int]) -> None:
        int_list(values, 4, self.out)

    def bool_array(self, values: Sequence[bool]) -> None:
        int_list([1 if v else 0 for v in values], 1, self.out)

    def operand(self, value: Value) -> None:
        varint(self.value_id(value), self.out)

    def operands(self, values: Sequence[Value]) -> None:
        for v in values:
            self.operand(v)

    def sized_operands(self, values: Sequence[Value]) -> None:
        varint(len(values), self.out)
        self.operands(values)

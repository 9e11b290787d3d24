"""The in-memory Tile IR: values, ops, blocks, functions, modules.

Op names and attribute names are the `cuda_tile` dialect's (NVIDIA/cuda-tile `Ops.td`), so
the bytecode writer and the interpreter can each be read against the spec op by op. Both
consume the same verified `Module`: there is one meaning per op.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .types import FunctionType, Type


@dataclass(frozen=True)
class Location:
    """Where an op came from in the user's Python source (for the Debug section and errors)."""

    file: str
    line: int
    col: int
    function: str = ""
    # Where an inlined `@cutile.device` function was called from (Tile IR's CallSiteLoc):
    # tileiras requires every op's outermost scope to be the function it sits in.
    inlined_at: Location | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


class Value:
    """An SSA value: a function parameter, a block argument, or an op result."""

    __slots__ = ("name", "type")

    def __init__(self, type: Type, name: str = "") -> None:
        self.type = type
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.name or id(self) % 10000}: {self.type}"


@dataclass(eq=False)
class Block:
    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)

    def walk(self) -> Iterator[Op]:
        for op in self.ops:
            yield op
            for region in op.regions:
                yield from region.walk()


@dataclass(eq=False)
class Op:
    name: str
    operands: list[Value]
    results: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    # Each region is a single block (Tile IR regions have exactly one block).
    regions: list[Block] = field(default_factory=list)
    loc: Location | None = None

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"`{self.name}` has {len(self.results)} results, not one")
        return self.results[0]

    def __repr__(self) -> str:
        return f"Op({self.name}, {len(self.operands)} operands, {len(self.results)} results)"


@dataclass(eq=False)
class Function:
    name: str
    params: list[Value]
    body: Block
    is_entry: bool = True
    loc: Location | None = None
    # Entry optimization hints keyed by arch ("sm_90") or "default".
    hints: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def type(self) -> FunctionType:
        return FunctionType(tuple(p.type for p in self.params), ())

    def walk(self) -> Iterator[Op]:
        return self.body.walk()


@dataclass(eq=False)
class Module:
    name: str
    functions: list[Function] = field(default_factory=list)

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

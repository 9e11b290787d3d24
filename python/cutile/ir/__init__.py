"""Tile IR: types, values and ops (`core`), attribute values (`attrs`), a builder, a
verifier and a text printer. The bytecode writer (`cutile.backend.bytecode`) and the CPU
interpreter (`cutile.interpreter`) both consume the same verified `Module`."""

from .attrs import Bounded, Dense, DivBy, OptimizationHints, SameElements
from .builder import Builder
from .core import Block, Function, Location, Module, Op, Value
from .printer import print_module
from .types import (
    TOKEN,
    FunctionType,
    PartitionViewType,
    PointerType,
    TensorViewType,
    TileType,
    TokenType,
    Type,
    scalar,
    tile,
)
from .verify import VerificationError, verify

__all__ = [
    "TOKEN",
    "Block",
    "Bounded",
    "Builder",
    "Dense",
    "DivBy",
    "Function",
    "FunctionType",
    "Location",
    "Module",
    "Op",
    "OptimizationHints",
    "PartitionViewType",
    "PointerType",
    "SameElements",
    "TensorViewType",
    "TileType",
    "TokenType",
    "Type",
    "Value",
    "VerificationError",
    "print_module",
    "scalar",
    "tile",
    "verify",
]

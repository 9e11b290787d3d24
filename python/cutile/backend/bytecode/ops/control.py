"""Structured control flow and the region-carrying reductions (for, if, loop, reduce, scan)
with their terminators."""

from __future__ import annotations

from ....dtypes import DType
from ....ir.core import Op
from ....ir.types import TileType
from ..opwriter import OpWriter, encodes


def _terminator(w: OpWriter, op: Op) -> None:
    """Terminators have variadic (here: zero) results and variadic operands."""
    w.sized_results(op)
    w.sized_operands(op.operands)


def _elements(op: Op) -> list[DType]:
    out = []
    for v in op.operands:
        if not isinstance(v.type, TileType):
            raise TypeError(f"`{op.name}` operand of type {v.type} is not a tile")
        out.append(v.type.dtype)
    return out


@encodes("for")
def encode_for(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.flags(w.has(op, "unsignedCmp"))  # the flags field exists from 13.2
    w.sized_operands(op.operands)  # lowerBound, upperBound, step, initValues...
    w.regions(op)


@encodes("if")
def encode_if(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.operands(op.operands)
    if len(op.regions) == 1:
        # An `if` without else still has two regions; the else region holds no block.
        w.varint(2)
        w.block(op.regions[0])
        w.varint(0)
    else:
        w.regions(op)


@encodes("loop")
def encode_loop(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.sized_operands(op.operands)
    w.regions(op)


@encodes("yield")
def encode_yield(w: OpWriter, op: Op) -> None:
    _terminator(w, op)


@encodes("continue")
def encode_continue(w: OpWriter, op: Op) -> None:
    _terminator(w, op)


@encodes("break")
def encode_break(w: OpWriter, op: Op) -> None:
    _terminator(w, op)


@encodes("return")
def encode_return(w: OpWriter, op: Op) -> None:
    _terminator(w, op)


@encodes("reduce")
def encode_reduce(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.int_attr(w.attr(op, "dim"))
    w.scalar_array(w.attr(op, "identities"), _elements(op))
    w.sized_operands(op.operands)
    w.regions(op)


@encodes("scan")
def encode_scan(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.int_attr(w.attr(op, "dim"))
    w.bool_attr(bool(w.attr(op, "reverse", False)))
    w.scalar_array(w.attr(op, "identities"), _elements(op))
    w.sized_operands(op.operands)
    w.regions(op)

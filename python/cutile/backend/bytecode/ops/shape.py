"""Ops that move elements around inside tiles: shape changes, slicing, concatenation."""

from __future__ import annotations

from ....ir.core import Op
from ..opwriter import OpWriter, encodes


@encodes("broadcast")
def encode_broadcast(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.operands(op.operands)


@encodes("reshape")
def encode_reshape(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.operands(op.operands)


@encodes("permute")
def encode_permute(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.i32_array(w.attr(op, "permutation"))
    w.operands(op.operands)


@encodes("cat")
def encode_cat(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.int_attr(w.attr(op, "dim"))
    w.operands(op.operands)


@encodes("extract")
def encode_extract(w: OpWriter, op: Op) -> None:
    # source, then the variadic indices; the generated format counts all operands at once.
    w.sized_results(op)
    w.sized_operands(op.operands)


@encodes("insert")
def encode_insert(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.sized_operands(op.operands)  # source, destination, indices...


@encodes("iota")
def encode_iota(w: OpWriter, op: Op) -> None:
    w.result(op)

"""Constants, value assumptions, grid queries, assertions and printing."""

from __future__ import annotations

from ....ir.core import Op
from ..opwriter import OpWriter, encodes


@encodes("constant")
def encode_constant(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.dense(w.attr(op, "value"), op.result.type)


@encodes("assume")
def encode_assume(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.predicate(w.attr(op, "predicate"))
    w.operands(op.operands)


@encodes("get_tile_block_id")
def encode_get_tile_block_id(w: OpWriter, op: Op) -> None:
    w.fixed_results(op, 3)


@encodes("get_num_tile_blocks")
def encode_get_num_tile_blocks(w: OpWriter, op: Op) -> None:
    w.fixed_results(op, 3)


@encodes("assert")
def encode_assert(w: OpWriter, op: Op) -> None:
    w.string(w.attr(op, "message"))
    w.operands(op.operands)


@encodes("print_tko")
def encode_print_tko(w: OpWriter, op: Op) -> None:
    has_token = w.has(op, "has_token")
    args = op.operands[:-1] if has_token else op.operands
    w.sized_results(op)  # the result token exists from 13.2
    w.flags(has_token)
    w.string(w.attr(op, "str"))
    w.sized_operands(args)
    if has_token:
        w.operand(op.operands[-1])

"""Conversions between element types, and between pointers and integers."""

from __future__ import annotations

from ....ir.core import Op
from ..opwriter import OpWriter, encodes
from ..version import V13_4


def _plain(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.operands(op.operands)


@encodes("exti")
def encode_exti(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "signedness")
    w.operands(op.operands)


@encodes("trunci")
def encode_trunci(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "overflow", "none")
    w.operands(op.operands)


@encodes("ftof")
def encode_ftof(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "rounding_mode", "nearest_even")
    w.operands(op.operands)


@encodes("ftoi")
def encode_ftoi(w: OpWriter, op: Op) -> None:
    w.result(op)
    if w.version >= V13_4:
        w.flags(w.has(op, "saturating"))  # 13.4 added the unit attribute and its flags
    elif w.has(op, "saturating"):
        raise ValueError("`saturating` needs bytecode 13.4+")
    w.enum(op, "signedness")
    # Python's int() truncates toward zero, which is the natural default here.
    w.enum(op, "rounding_mode", "nearest_int_to_zero")
    w.operands(op.operands)


@encodes("itof")
def encode_itof(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "signedness")
    w.enum(op, "rounding_mode", "nearest_even")
    w.operands(op.operands)


@encodes("bitcast")
def encode_bitcast(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("int_to_ptr")
def encode_int_to_ptr(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("ptr_to_int")
def encode_ptr_to_int(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("ptr_to_ptr")
def encode_ptr_to_ptr(w: OpWriter, op: Op) -> None:
    _plain(w, op)

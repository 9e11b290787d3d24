"""Arithmetic, comparison, selection and matrix-multiply ops."""

from __future__ import annotations

from ....ir.core import Op
from ..opwriter import OpWriter, encodes


def _float_binary(w: OpWriter, op: Op) -> None:
    """lhs, rhs with a rounding mode and a flush-to-zero unit attribute."""
    w.result(op)
    w.flags(w.has(op, "flush_to_zero"))
    w.enum(op, "rounding_mode", "nearest_even")
    w.operands(op.operands)


def _plain(w: OpWriter, op: Op) -> None:
    """One fixed result and fixed operands, no attributes."""
    w.result(op)
    w.operands(op.operands)


def _with_overflow(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "overflow", "none")
    w.operands(op.operands)


def _with_signedness(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "signedness")
    w.operands(op.operands)


def _float_minmax(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.flags(w.has(op, "propagate_nan"), w.has(op, "flush_to_zero"))
    w.operands(op.operands)


@encodes("addf")
def encode_addf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("subf")
def encode_subf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("mulf")
def encode_mulf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("divf")
def encode_divf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("remf")
def encode_remf(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("fma")
def encode_fma(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)  # lhs, rhs, acc: same attributes as the binary ops


@encodes("absf")
def encode_absf(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("negf")
def encode_negf(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("maxf")
def encode_maxf(w: OpWriter, op: Op) -> None:
    _float_minmax(w, op)


@encodes("minf")
def encode_minf(w: OpWriter, op: Op) -> None:
    _float_minmax(w, op)


@encodes("addi")
def encode_addi(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("subi")
def encode_subi(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("muli")
def encode_muli(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("shli")
def encode_shli(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("shri")
def encode_shri(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("divi")
def encode_divi(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "signedness")
    w.enum(op, "rounding", "zero")
    w.operands(op.operands)


@encodes("remi")
def encode_remi(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("maxi")
def encode_maxi(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("mini")
def encode_mini(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("mulhii")
def encode_mulhii(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("andi")
def encode_andi(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("ori")
def encode_ori(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("xori")
def encode_xori(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("absi")
def encode_absi(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("negi")
def encode_negi(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)  # the overflow attribute exists from 13.2; we write 13.3+


@encodes("cmpf")
def encode_cmpf(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "comparison_predicate")
    w.enum(op, "comparison_ordering", "ordered")
    w.operands(op.operands)


@encodes("cmpi")
def encode_cmpi(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "comparison_predicate")
    w.enum(op, "signedness", "signed")
    w.operands(op.operands)


@encodes("select")
def encode_select(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("mmaf")
def encode_mmaf(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.flags(w.has(op, "fast_acc"))  # the flags field exists from 13.3
    w.operands(op.operands)


@encodes("mmai")
def encode_mmai(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "signedness_lhs", "signed")
    w.enum(op, "signedness_rhs", "signed")
    w.operands(op.operands)

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


@encodes("addf", 0x02, since="13.1")
def encode_addf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("subf", 0x67, since="13.1")
def encode_subf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("mulf", 0x4C, since="13.1")
def encode_mulf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("divf", 0x14, since="13.1")
def encode_divf(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)


@encodes("remf", 0x59, since="13.1")
def encode_remf(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("fma", 0x28, since="13.1")
def encode_fma(w: OpWriter, op: Op) -> None:
    _float_binary(w, op)  # lhs, rhs, acc: same attributes as the binary ops


@encodes("absf", 0x00, since="13.1")
def encode_absf(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("negf", 0x4F, since="13.1")
def encode_negf(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("maxf", 0x45, since="13.1")
def encode_maxf(w: OpWriter, op: Op) -> None:
    _float_minmax(w, op)


@encodes("minf", 0x47, since="13.1")
def encode_minf(w: OpWriter, op: Op) -> None:
    _float_minmax(w, op)


@encodes("addi", 0x03, since="13.1")
def encode_addi(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("subi", 0x68, since="13.1")
def encode_subi(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("muli", 0x4E, since="13.1")
def encode_muli(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("shli", 0x60, since="13.1")
def encode_shli(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)


@encodes("shri", 0x61, since="13.1")
def encode_shri(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("divi", 0x15, since="13.1")
def encode_divi(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "signedness")
    w.enum(op, "rounding", "zero")
    w.operands(op.operands)


@encodes("remi", 0x5A, since="13.1")
def encode_remi(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("maxi", 0x46, since="13.1")
def encode_maxi(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("mini", 0x48, since="13.1")
def encode_mini(w: OpWriter, op: Op) -> None:
    _with_signedness(w, op)


@encodes("mulhii", 0x4D, since="13.1")
def encode_mulhii(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("andi", 0x04, since="13.1")
def encode_andi(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("ori", 0x52, since="13.1")
def encode_ori(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("xori", 0x6C, since="13.1")
def encode_xori(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("absi", 0x01, since="13.1")
def encode_absi(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("negi", 0x50, since="13.1")
def encode_negi(w: OpWriter, op: Op) -> None:
    _with_overflow(w, op)  # the overflow attribute exists from 13.2; we write 13.3+


@encodes("cmpf", 0x0E, since="13.1")
def encode_cmpf(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "comparison_predicate")
    w.enum(op, "comparison_ordering", "ordered")
    w.operands(op.operands)


@encodes("cmpi", 0x0F, since="13.1")
def encode_cmpi(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "comparison_predicate")
    w.enum(op, "signedness", "signed")
    w.operands(op.operands)


@encodes("select", 0x5F, since="13.1")
def encode_select(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("mmaf", 0x49, since="13.1")
def encode_mmaf(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.flags(w.has(op, "fast_acc"))  # the flags field exists from 13.3
    w.operands(op.operands)


@encodes("mmai", 0x4A, since="13.1")
def encode_mmai(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "signedness_lhs", "signed")
    w.enum(op, "signedness_rhs", "signed")
    w.operands(op.operands)

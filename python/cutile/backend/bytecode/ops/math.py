"""Elementwise math on float tiles (transcendentals, roots, rounding to integers)."""

from __future__ import annotations

from ....ir.core import Op
from ..opwriter import OpWriter, encodes


def _plain(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.operands(op.operands)


def _ftz_only(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.flags(w.has(op, "flush_to_zero"))
    w.operands(op.operands)


@encodes("exp", 0x17, since="13.1")
def encode_exp(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "rounding_mode", "full")  # attribute added in 13.3
    w.operands(op.operands)


@encodes("exp2", 0x18, since="13.1")
def encode_exp2(w: OpWriter, op: Op) -> None:
    _ftz_only(w, op)


@encodes("log", 0x3F, since="13.1")
def encode_log(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("log2", 0x40, since="13.1")
def encode_log2(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("sqrt", 0x64, since="13.1")
def encode_sqrt(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.flags(w.has(op, "flush_to_zero"))
    w.enum(op, "rounding_mode", "nearest_even")
    w.operands(op.operands)


@encodes("rsqrt", 0x5D, since="13.1")
def encode_rsqrt(w: OpWriter, op: Op) -> None:
    _ftz_only(w, op)


@encodes("sin", 0x62, since="13.1")
def encode_sin(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("cos", 0x12, since="13.1")
def encode_cos(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("tan", 0x69, since="13.1")
def encode_tan(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("sinh", 0x63, since="13.1")
def encode_sinh(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("cosh", 0x13, since="13.1")
def encode_cosh(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("tanh", 0x6A, since="13.1")
def encode_tanh(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "rounding_mode", "full")  # attribute added in 13.2
    w.operands(op.operands)


@encodes("pow", 0x54, since="13.1")
def encode_pow(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("atan2", 0x6E, since="13.2")
def encode_atan2(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("fpowi", 0x79, since="13.4")
def encode_fpowi(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("floor", 0x27, since="13.1")
def encode_floor(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("ceil", 0x0D, since="13.1")
def encode_ceil(w: OpWriter, op: Op) -> None:
    _plain(w, op)

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


@encodes("exp")
def encode_exp(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "rounding_mode", "full")  # attribute added in 13.3
    w.operands(op.operands)


@encodes("exp2")
def encode_exp2(w: OpWriter, op: Op) -> None:
    _ftz_only(w, op)


@encodes("log")
def encode_log(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("log2")
def encode_log2(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("sqrt")
def encode_sqrt(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.flags(w.has(op, "flush_to_zero"))
    w.enum(op, "rounding_mode", "nearest_even")
    w.operands(op.operands)


@encodes("rsqrt")
def encode_rsqrt(w: OpWriter, op: Op) -> None:
    _ftz_only(w, op)


@encodes("sin")
def encode_sin(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("cos")
def encode_cos(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("tan")
def encode_tan(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("sinh")
def encode_sinh(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("cosh")
def encode_cosh(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("tanh")
def encode_tanh(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.enum(op, "rounding_mode", "full")  # attribute added in 13.2
    w.operands(op.operands)


@encodes("pow")
def encode_pow(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("atan2")
def encode_atan2(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("fpowi")
def encode_fpowi(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("floor")
def encode_floor(w: OpWriter, op: Op) -> None:
    _plain(w, op)


@encodes("ceil")
def encode_ceil(w: OpWriter, op: Op) -> None:
    _plain(w, op)

"""Conversions: ftof, ftoi, itof, exti, trunci, bitcast.

ftof to an f8 format rounds to nearest even and saturates to the largest finite value
(infinities too; NaN stays NaN), as the GPU's `cvt.rn.satfinite` (`cutile.minifloat`).
ftoi rounds toward zero; NaN, infinities and values out of the target's range are
undefined in Tile IR (tileiras compiled a kernel converting a constant 3e9 to i32 to a lone
EXIT), so the interpreter stops there: the lowering clamps first (NaN to 0, saturating, as
the GPU's cvt.rzi would), and a run that reaches an unclamped one is a lowering bug.
itof rounds to nearest even, once, also from 64-bit integers (other modes are approximated
through f64).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..dtypes import DType
from ..errors import InterpreterError
from ..ir.core import Op
from .ops_arith import operand_dtype, result_dtype
from .registry import handler
from .values import (
    Array,
    float_bits,
    float_from_bits,
    float_values,
    freeze,
    round_directed,
    signed,
    storage,
    to_float,
    unsigned,
    unsigned_dtype,
    wrap_int,
)

if TYPE_CHECKING:
    from .machine import Machine

_NEAREST = frozenset({"nearest_even", "approx", "full"})


def _out(x: Any, d: DType) -> list[Any]:
    return [freeze(np.asarray(x, dtype=storage(d)))]


@handler("ftof")
def _ftof(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    mode = op.attrs.get("rounding_mode", "nearest_even")
    x = float_values(args[0], operand_dtype(op))
    if mode in _NEAREST:
        out = to_float(x, d)
    else:
        out = round_directed(np.asarray(x, dtype=np.float64), d, mode)
    return _out(_canonical_nan(out, d), d)


# What the H200's f32 -> f16 / bf16 conversion writes for any NaN (measured by
# tests/gpu/test_differential_ops.py): 0x7fff, where numpy would keep a quiet NaN 0x7e00
# (f16) or 0x7fc0 (bf16).
_NAN_BITS = {"f16": (np.uint16, np.float16, 0x7FFF), "bf16": (np.uint32, np.float32, 0x7FFF0000)}


def _canonical_nan(out: Any, d: DType) -> Any:
    spec = _NAN_BITS.get(d.name)
    a = np.asarray(out)
    if spec is None or not np.isnan(a).any():
        return out
    bits_t, float_t, bits = spec
    nan = np.array(bits, dtype=bits_t).view(float_t)
    return np.where(np.isnan(a), nan, a).astype(a.dtype)


def _int_range(d: DType, is_signed: bool) -> tuple[int, int]:
    if is_signed:
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


@handler("ftoi")
def _ftoi(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    is_signed = op.attrs.get("signedness", "signed") == "signed"
    x = np.trunc(np.asarray(float_values(args[0], operand_dtype(op)), dtype=np.float64))
    lo, hi = _int_range(d, is_signed)
    # f64 bounds that convert exactly: hi + 1 is a power of two, lo is one or 0
    bad = np.isnan(x) | (x < float(lo)) | (x >= float(hi + 1))
    if bad.any():
        first = float(np.asarray(float_values(args[0], operand_dtype(op))).flat[
            int(np.flatnonzero(bad)[0])])
        kind = "unsigned " if not is_signed else ""
        raise InterpreterError(
            f"`ftoi` of {first!r} to {kind}{d.name}: NaN, infinite or out of range "
            "(undefined in Tile IR: tileiras deletes the code that reaches it; the lowering "
            "clamps first)")
    work = np.int64 if is_signed else np.uint64
    return _out(wrap_int(x.astype(work), d), d)


@handler("itof")
def _itof(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    src = operand_dtype(op)
    mode = op.attrs.get("rounding_mode", "nearest_even")
    is_signed = op.attrs.get("signedness", "signed") == "signed"
    x = signed(args[0], src) if is_signed else unsigned(args[0], src)
    if mode not in _NEAREST:
        return _out(round_directed(x.astype(np.float64), d, mode), d)
    if d.name in ("f32", "f64"):
        return _out(x.astype(storage(d)), d)  # one correctly rounded C conversion
    return _out(to_float(_to_f64_round_to_odd(x, src), d), d)


def _to_f64_round_to_odd(x: Array, src: DType) -> Array:
    """Integers as f64 rounded to odd: exact up to 2^53, and past it a value that rounds
    once more (to f16, bf16, tf32) as the integer itself would. A nearest-even f64 first
    rounded 2^62 + 2^54 + 1 to the tie 2^62 + 2^54, and then bf16 to 2^62, not 2^62 + 2^55."""
    if src.bits <= 32:
        return x.astype(np.float64)  # exact
    neg = x < 0
    mag = np.where(neg, -(x.astype(np.int64)).astype(np.uint64), x.astype(np.uint64)) \
        if x.dtype.kind == "i" else x.astype(np.uint64)  # (-INT64_MIN wraps to 2^63: right)
    t = mag.astype(np.float64)
    big = t >= 2.0**64
    over = big | (np.where(big, 0.0, t).astype(np.uint64) > mag)
    t = np.where(over, np.nextafter(t, 0.0), t)  # now the magnitude cut toward zero
    inexact = t.astype(np.uint64) != mag
    bits = t.view(np.uint64) | inexact.astype(np.uint64)
    out = bits.view(np.float64)
    return np.asarray(np.where(neg, -out, out))


@handler("exti")
def _exti(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    src = operand_dtype(op)
    if d.bits <= src.bits:
        raise InterpreterError(f"exti must widen, not {src.name} -> {d.name}")
    if op.attrs.get("signedness", "signed") == "signed":
        return _out(signed(args[0], src).astype(storage(d)), d)
    wide = unsigned(args[0], src).astype(unsigned_dtype(d))
    return _out(wide.view(storage(d)), d)


@handler("trunci")
def _trunci(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    src = operand_dtype(op)
    if d.bits >= src.bits:
        raise InterpreterError(f"trunci must narrow, not {src.name} -> {d.name}")
    return _out(wrap_int(unsigned(args[0], src), d), d)


def _bits(x: Array, d: DType) -> Array:
    return float_bits(x, d) if d.is_float else unsigned(x, d)


@handler("bitcast")
def _bitcast(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    src = operand_dtype(op)
    if d.bits != src.bits:
        raise InterpreterError(f"bitcast between {src.name} and {d.name} changes the width")
    x = np.asarray(args[0])
    bits = _bits(np.ascontiguousarray(x).reshape(x.shape), src)  # (a scalar stays rank 0)
    if d.is_float:
        return _out(float_from_bits(bits, d), d)
    return _out(wrap_int(bits, d), d)

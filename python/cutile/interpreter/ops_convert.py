"""Conversions: ftof, ftoi, itof, exti, trunci, bitcast.

ftof to an f8 format rounds to nearest even and saturates to the largest finite value
(infinities too; NaN stays NaN), as the GPU's `cvt.rn.satfinite` (`cutile.minifloat`).
ftoi rounds toward zero and, like the GPU's cvt.rzi, saturates out-of-range values to the
target range and turns NaN into 0 (Tile IR leaves those undefined); as measured on the
H200, results narrower than 32 bits saturate to the 32-bit range and then wrap (300.0 -> i8
44), so the lowering clamps in i32 before narrowing. itof rounds to nearest
even (other modes are approximated through f64).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes as dt
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
    # narrow results: the GPU saturates to 32 bits, then keeps the low bits (wrap_int below)
    lo, hi = _int_range(d if d.bits >= 32 else dt.i32, is_signed)
    nan = np.isnan(x)
    # Clip inside the range with f64 bounds that convert exactly, then pin the ends.
    hi_f = float(np.nextafter(np.float64(hi + 1), -np.inf)) if hi > 2**53 else float(hi)
    clipped = np.clip(np.where(nan, 0.0, x), float(lo), hi_f)
    work = np.int64 if is_signed else np.uint64
    r = clipped.astype(work)
    r = np.where(x > hi_f, work(hi), r)
    return _out(wrap_int(r, d), d)


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
    return _out(to_float(x.astype(np.float64), d), d)


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

"""Elementwise float, integer and bitwise arithmetic, math functions, comparisons, select.

Floats: f16 and bf16 compute in f32 and round once to the result type after each op (the
spec emulates them in f32 too); f32 computes in f32 and f64 in f64. `rounding_mode`
nearest_even (and approx/full, which the GPU may compute less exactly) is IEEE
round-to-nearest-even; zero/negative_inf/positive_inf are computed through f64 and rounded
in the requested direction (exact for add/sub/mul/fma on f16/bf16/f32; for f64 results the
f64 value is used as is). `flush_to_zero` flushes f32 subnormal inputs and results.

Integers are signless bits; `signedness` picks the interpretation and every result wraps.
Division by zero, signed MIN / -1 and shifts by the width or more are undefined in Tile IR
(tileiras deletes code that reaches a constant one): the interpreter stops there, so a
lowering that let one through fails every run that reaches it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dtypes import DType
from ..errors import InterpreterError
from ..ir.core import Op
from ..ir.types import TileType
from .registry import handler
from .values import (
    Array,
    compute_float,
    flush_subnormals,
    freeze,
    round_directed,
    signed,
    storage,
    to_float,
    unsigned,
    wrap_int,
)

if TYPE_CHECKING:
    from .machine import Machine

_NEAREST = frozenset({"nearest_even", "approx", "full"})


def result_dtype(op: Op, i: int = 0) -> DType:
    ty = op.results[i].type
    assert isinstance(ty, TileType)
    return ty.dtype


def operand_dtype(op: Op, i: int = 0) -> DType:
    ty = op.operands[i].type
    assert isinstance(ty, TileType)
    return ty.dtype


def _out(x: Any, d: DType) -> list[Any]:
    return [freeze(np.asarray(x, dtype=storage(d)))]


# -- exact helpers for directed rounding -------------------------------------------------


def _two_sum_rto(x: Array, y: Array) -> Array:
    """x + y (f64) rounded to odd in f64: correct input for one more rounding to <= f32."""
    s = x + y
    bb = s - x
    err = (x - (s - bb)) + (y - bb)
    inexact = (err != 0) & np.isfinite(s)
    if not inexact.any():
        return s
    bits = s.view(np.uint64)
    even = (bits & np.uint64(1)) == 0
    fix = inexact & even
    toward = np.where(err > 0, np.inf, -np.inf)
    return np.where(fix, np.nextafter(s, toward), s)


def _f64(x: Array) -> Array:
    return np.asarray(x, dtype=np.float64)


# -- float binary ----------------------------------------------------------------------------

_FLOAT_BINARY: dict[str, Callable[..., Any]] = {
    "addf": np.add,
    "subf": np.subtract,
    "mulf": np.multiply,
    "divf": np.divide,
}


@handler("addf", "subf", "mulf", "divf")
def _float_binary(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a, b = args
    mode = op.attrs.get("rounding_mode", "nearest_even")
    ftz = bool(op.attrs.get("flush_to_zero", False)) and d.name == "f32"
    if ftz:
        a, b = flush_subnormals(a), flush_subnormals(b)
    ufunc = _FLOAT_BINARY[op.name]
    if mode in _NEAREST or d.name == "f64":
        c = compute_float(d)
        out = to_float(ufunc(a.astype(c, copy=False), b.astype(c, copy=False)), d)
    else:
        x, y = _f64(a), _f64(b)
        if op.name == "addf":
            r = _two_sum_rto(x, y)
        elif op.name == "subf":
            r = _two_sum_rto(x, -y)
        else:
            r = ufunc(x, y)  # products of <= f32 are exact in f64; quotients are close
        out = round_directed(r, d, mode)
    if ftz:
        out = flush_subnormals(np.asarray(out))
    return _out(out, d)


@handler("fma")
def _fma(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a, b, c = args
    mode = op.attrs.get("rounding_mode", "nearest_even")
    ftz = bool(op.attrs.get("flush_to_zero", False)) and d.name == "f32"
    if ftz:
        a, b, c = flush_subnormals(a), flush_subnormals(b), flush_subnormals(c)
    if d.name == "f64":
        out = a * b + c  # rounds twice: f64 fma is an approximation here
    else:
        # The product of two <= f32 values is exact in f64; the sum, rounded to odd, then
        # rounds once to the result type: a correctly rounded fused multiply-add.
        r = _two_sum_rto(_f64(a) * _f64(b), _f64(c))
        out = to_float(r, d) if mode in _NEAREST else round_directed(r, d, mode)
    if ftz:
        out = flush_subnormals(np.asarray(out))
    return _out(out, d)


def _canonical_nan(x: Array) -> Array:
    nan = np.isnan(x)
    return np.where(nan, x.dtype.type(np.nan), x) if nan.any() else x


@handler("maxf", "minf")
def _maxmin_f(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    c = compute_float(d)
    a, b = (x.astype(c, copy=False) for x in args)
    if op.attrs.get("flush_to_zero", False) and d.name == "f32":
        a, b = flush_subnormals(a), flush_subnormals(b)
    is_max = op.name == "maxf"
    if op.attrs.get("propagate_nan", False):
        r = np.maximum(a, b) if is_max else np.minimum(a, b)
    else:
        r = np.fmax(a, b) if is_max else np.fmin(a, b)
    # IEEE 754-2019: +0 > -0 (numpy keeps whichever operand came first).
    zeros = (a == 0) & (b == 0)
    if zeros.any():
        r = np.where(zeros, a + b if is_max else -((-a) + (-b)), r)
    return _out(to_float(_canonical_nan(np.asarray(r)), d), d)


@handler("remf", "pow", "atan2")
def _float_binary_math(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    c = compute_float(d)
    a, b = (x.astype(c, copy=False) for x in args)
    if op.name == "remf":
        r = np.fmod(a, b)
    elif op.name == "pow":
        r = np.power(a, b)
    else:
        r = np.arctan2(a, b)
    return _out(to_float(r, d), d)


@handler("fpowi")
def _fpowi(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    """A float base to an integer power (13.4): `pow` with the exponent as a float."""
    d = result_dtype(op)
    c = compute_float(d)
    base, exp = args
    r = np.power(base.astype(c, copy=False), np.asarray(exp, dtype=np.float64).astype(c))
    return _out(to_float(r, d), d)


# -- float unary -----------------------------------------------------------------------------


def _rsqrt(x: Array) -> Array:
    return np.asarray(1 / np.sqrt(x))


_FLOAT_UNARY: dict[str, Callable[..., Any]] = {
    "absf": np.abs,
    "negf": np.negative,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "floor": np.floor,
    "ceil": np.ceil,
}


@handler(*_FLOAT_UNARY)
def _float_unary(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    (a,) = args
    ftz = bool(op.attrs.get("flush_to_zero", False)) and d.name == "f32"
    if ftz:
        a = flush_subnormals(a)
    mode = op.attrs.get("rounding_mode", "nearest_even")
    if op.name == "sqrt" and mode not in _NEAREST and d.name != "f64":
        out = round_directed(np.sqrt(_f64(a)), d, mode)
    else:
        out = to_float(_FLOAT_UNARY[op.name](a.astype(compute_float(d), copy=False)), d)
    if ftz:
        out = flush_subnormals(np.asarray(out))
    return _out(out, d)


# -- comparisons and select ------------------------------------------------------------------

_PREDICATES: dict[str, Callable[..., Any]] = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less_than": np.less,
    "less_than_or_equal": np.less_equal,
    "greater_than": np.greater,
    "greater_than_or_equal": np.greater_equal,
}


def _predicate(op: Op) -> Callable[..., Any]:
    name = op.attrs.get("comparison_predicate")
    if name not in _PREDICATES:
        raise InterpreterError(f"unknown comparison predicate {name!r}")
    return _PREDICATES[name]


@handler("cmpf")
def _cmpf(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    a, b = args
    r = _predicate(op)(a, b)
    nan = np.isnan(a) | np.isnan(b)
    ordering = op.attrs.get("comparison_ordering", "ordered")
    if ordering == "ordered":
        r = r & ~nan
    elif ordering == "unordered":
        r = r | nan
    else:
        raise InterpreterError(f"unknown comparison ordering {ordering!r}")
    return [freeze(np.asarray(r, dtype=np.bool_))]


def _view(x: Array, d: DType, op: Op) -> Array:
    s = op.attrs.get("signedness", "signed")
    if s == "signed":
        return signed(x, d)
    if s == "unsigned":
        return unsigned(x, d)
    raise InterpreterError(f"unknown signedness {s!r}")


@handler("cmpi")
def _cmpi(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = operand_dtype(op)
    a, b = (_view(x, d, op) for x in args)
    return [freeze(np.asarray(_predicate(op)(a, b), dtype=np.bool_))]


@handler("select")
def _select(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    c, a, b = args
    return [freeze(np.asarray(np.where(c, a, b), dtype=a.dtype))]


# -- integers --------------------------------------------------------------------------------


def _bool_safe(d: DType, x: Array) -> Array:
    # numpy's + and * on bools are logical; i1 arithmetic must wrap mod 2.
    return x.astype(np.uint8) if d.name == "i1" else x


@handler("addi", "subi", "muli")
def _int_arith(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a, b = (_bool_safe(d, x) for x in args)
    if op.name == "addi":
        r = np.add(a, b)
    elif op.name == "subi":
        r = np.subtract(a, b)
    else:
        r = np.multiply(a, b)
    return _out(wrap_int(r, d), d)


@handler("andi", "ori", "xori")
def _bitwise(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a, b = args
    f = {"andi": np.bitwise_and, "ori": np.bitwise_or, "xori": np.bitwise_xor}[op.name]
    return _out(f(a, b), d)


@handler("negi", "absi")
def _int_unary(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a = signed(args[0], d)
    r = np.negative(a) if op.name == "negi" else np.abs(a)
    return _out(wrap_int(r, d), d)


@handler("maxi", "mini")
def _maxmin_i(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a, b = args
    va, vb = _view(a, d, op), _view(b, d, op)
    pick_a = va >= vb if op.name == "maxi" else va <= vb
    return _out(np.where(pick_a, a, b), d)


def _check_divisor(a: Array, b: Array, d: DType, is_signed: bool) -> None:
    if (b == 0).any():
        raise InterpreterError("integer division by zero (undefined behavior in Tile IR)")
    if is_signed and d.bits > 1:
        lo = -(1 << (d.bits - 1))
        if ((a == lo) & (b == -1)).any():
            raise InterpreterError(
                f"signed division overflow: {lo} / -1 (undefined behavior in Tile IR)"
            )


@handler("divi")
def _divi(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    is_signed = op.attrs.get("signedness", "signed") == "signed"
    rounding = op.attrs.get("rounding", op.attrs.get("rounding_mode", "zero"))
    a, b = (_view(x, d, op) for x in args)
    if d.name == "i1":
        a, b = a.astype(np.int16), b.astype(np.int16)
    _check_divisor(a, b, d, is_signed)
    q = np.floor_divide(a, b)
    inexact = (a - q * b) != 0
    one = q.dtype.type(1)
    if rounding in ("zero", "nearest_int_to_zero"):
        if is_signed:
            q = q + np.where(inexact & ((a < 0) != (b < 0)), one, q.dtype.type(0))
    elif rounding == "positive_inf":
        q = q + np.where(inexact, one, q.dtype.type(0))
    elif rounding == "negative_inf":
        if not is_signed:
            raise InterpreterError("divi: rounding negative_inf with unsigned is invalid")
    else:
        raise InterpreterError(f"divi: unsupported rounding {rounding!r}")
    return _out(wrap_int(q, d), d)


@handler("remi")
def _remi(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    is_signed = op.attrs.get("signedness", "signed") == "signed"
    a, b = (_view(x, d, op) for x in args)
    if d.name == "i1":
        a, b = a.astype(np.int16), b.astype(np.int16)
    if (b == 0).any():
        raise InterpreterError("integer remainder by zero (undefined behavior in Tile IR)")
    if is_signed:
        # Truncated remainder (sign of the dividend); MIN % -1 is 0, not a trap.
        safe_b = np.where(b == -1, b.dtype.type(1), b)
        r = np.fmod(a, safe_b)
    else:
        r = np.remainder(a, b)
    return _out(wrap_int(r, d), d)


_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@handler("mulhii")
def _mulhii(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a, b = (unsigned(x, d).astype(np.uint64) for x in args)
    if d.bits <= 32:
        r = (a * b) >> np.uint64(d.bits)
    else:
        al, ah, bl, bh = a & _M32, a >> _S32, b & _M32, b >> _S32
        ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
        mid = (ll >> _S32) + (lh & _M32) + (hl & _M32)
        r = hh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)
    return _out(wrap_int(r, d), d)


@handler("shli", "shri")
def _shift(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = result_dtype(op)
    a, b = args
    amount = unsigned(b, d).astype(np.uint64)
    if (amount >= d.bits).any():
        worst = int(amount.max())
        raise InterpreterError(
            f"`{op.name}` by {worst}, not below the {d.bits}-bit width (undefined in Tile "
            "IR: tileiras deletes the code that reaches it; the lowering clamps amounts)")
    r: Array
    if op.name == "shli":
        r = unsigned(a, d).astype(np.uint64) << amount
    elif op.attrs.get("signedness", "signed") == "signed":
        r = signed(a, d).astype(np.int64) >> amount.astype(np.int64)
    else:
        r = unsigned(a, d).astype(np.uint64) >> amount
    return _out(wrap_int(r, d), d)

"""Constants and shape ops: constant, iota, reshape, broadcast, permute, extract, cat;
and the matrix ops mmaf / mmai.

These work on any element type, pointers included (a pointer tile is an int64 array).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InterpreterError
from ..ir.attrs import Dense
from ..ir.core import Op
from ..ir.types import TileType
from .ops_arith import operand_dtype, result_dtype
from .registry import handler
from .values import (
    float_values,
    freeze,
    from_host,
    signed,
    to_float,
    unsigned,
    wrap_int,
)

if TYPE_CHECKING:
    from .machine import Machine


def _tile_type(op: Op, i: int = 0) -> TileType:
    ty = op.results[i].type
    assert isinstance(ty, TileType)
    return ty


@handler("constant")
def _constant(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    cached = m.cache.get(op)
    if cached is None:
        ty = _tile_type(op)
        value = op.attrs.get("value")
        data = value.array if isinstance(value, Dense) else value
        if data is None:
            raise InterpreterError("constant without a `value`")
        arr = np.asarray(data)
        if arr.size != 1 and arr.shape != ty.shape:
            raise InterpreterError(f"constant data of shape {arr.shape} for {ty}")
        if arr.size == 1:
            arr = arr.reshape(())
        cached = freeze(from_host(arr, ty))
        m.cache[op] = cached
    return [cached]


@handler("iota")
def _iota(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    cached = m.cache.get(op)
    if cached is None:
        ty = _tile_type(op)
        if len(ty.shape) != 1:
            raise InterpreterError(f"iota makes a 1-d tile, not {ty}")
        cached = freeze(wrap_int(np.arange(ty.shape[0], dtype=np.int64), ty.dtype))
        m.cache[op] = cached
    return [cached]


@handler("reshape")
def _reshape(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    shape = _tile_type(op).shape
    (x,) = args
    if x.size != int(np.prod(shape, dtype=np.int64)):
        raise InterpreterError(f"reshape of {x.shape} to {shape} changes the element count")
    return [freeze(np.reshape(x, shape))]


@handler("broadcast")
def _broadcast(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    shape = _tile_type(op).shape
    (x,) = args
    if x.ndim != len(shape) or any(a not in (1, b) for a, b in zip(x.shape, shape, strict=False)):
        raise InterpreterError(f"cannot broadcast {x.shape} to {shape} (only size-1 dims grow)")
    return [np.broadcast_to(x, shape)]


@handler("permute")
def _permute(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    perm = tuple(int(p) for p in op.attrs["permutation"])
    return [freeze(np.transpose(args[0], perm))]


@handler("extract")
def _extract(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    x, *indices = args
    shape = _tile_type(op).shape
    if len(indices) != x.ndim:
        raise InterpreterError(f"extract needs {x.ndim} indices, got {len(indices)}")
    slices = []
    for dim, (i, n, total) in enumerate(zip(indices, shape, x.shape, strict=False)):
        j = int(unsigned(i, operand_dtype(op, dim + 1)))
        if total % n or not 0 <= j < total // n:
            raise InterpreterError(
                f"extract slice {j} of size {n} is outside dimension {dim} of size {total}"
            )
        slices.append(slice(j * n, (j + 1) * n))
    return [freeze(np.ascontiguousarray(x[tuple(slices)]))]


@handler("insert")
def _insert(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    """The destination with the source tile written at slot `indices` (in source-sized
    steps, as `extract` counts them): the inverse of `extract`."""
    src, dst, *indices = args
    if len(indices) != dst.ndim:
        raise InterpreterError(f"insert needs {dst.ndim} indices, got {len(indices)}")
    slices = []
    for dim, (i, n, total) in enumerate(zip(indices, src.shape, dst.shape, strict=False)):
        j = int(unsigned(i, operand_dtype(op, dim + 2)))
        if total % n or not 0 <= j < total // n:
            raise InterpreterError(
                f"insert slot {j} of size {n} is outside dimension {dim} of size {total}"
            )
        slices.append(slice(j * n, (j + 1) * n))
    out = np.array(dst, copy=True)
    out[tuple(slices)] = src
    return [freeze(out)]


@handler("cat")
def _cat(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    a, b = args
    return [freeze(np.concatenate([a, b], axis=int(op.attrs["dim"])))]


# -- matrix multiply-accumulate ----------------------------------------------------------


def _check_mma(a: Any, b: Any, c: Any) -> None:
    ok = a.ndim == b.ndim == c.ndim and a.ndim in (2, 3)
    ok = ok and a.shape[-1] == b.shape[-2] and c.shape[-2:] == (a.shape[-2], b.shape[-1])
    ok = ok and (a.ndim == 2 or a.shape[0] == b.shape[0] == c.shape[0])
    if not ok:
        raise InterpreterError(f"mma shapes do not fit: {a.shape} x {b.shape} + {c.shape}")


@handler("mmaf")
def _mmaf(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    # Inputs (f8, f16, bf16, tf32, f32, f64) are exact in f64; products and sums are done
    # in f64 and rounded once to the accumulator type: never less accurate than the GPU
    # (whose f8 tensor cores accumulate in less than f32's precision).
    a, b, c = args
    _check_mma(a, b, c)
    d = result_dtype(op)
    a = float_values(a, operand_dtype(op, 0))
    b = float_values(b, operand_dtype(op, 1))
    r = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c.astype(np.float64)
    return [freeze(to_float(r, d))]


@handler("mmai")
def _mmai(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    a, b, c = args
    _check_mma(a, b, c)
    da, db = operand_dtype(op, 0), operand_dtype(op, 1)
    sa = op.attrs.get("signedness_lhs", "signed") == "signed"
    sb = op.attrs.get("signedness_rhs", "signed") == "signed"
    x = (signed(a, da) if sa else unsigned(a, da)).astype(np.int64)
    y = (signed(b, db) if sb else unsigned(b, db)).astype(np.int64)
    acc = signed(c, result_dtype(op)).astype(np.int64)
    _no_overflowing_sum(x, y, acc)
    r = np.matmul(x, y) + acc
    return [freeze(wrap_int(r, result_dtype(op)))]


I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _no_overflowing_sum(x: Any, y: Any, acc: Any) -> None:
    """Stop where the i32 sum of an `mmai` could leave the 32-bit range on its way. The GPU
    does not wrap there: tileiras puts tensor-core tiles on instructions that saturate
    each partial sum (sm_90 `IGMMA...SAT`, sm_80/sm_120 `IMMA...SAT`) and small ones on
    `IMAD`, which wraps, and splits K as it chooses, so the result depends on the shape,
    the architecture and the order: undefined. Any order of the products stays within
    [acc + the negative products, acc + the positive ones], so where both ends fit, every
    backend gives the exact sum."""
    k = x.shape[-1]
    if not x.size or not y.size:
        return
    most = int(np.abs(x).max()) * int(np.abs(y).max()) * k
    if int(acc.max(initial=0)) + most <= I32_MAX and int(acc.min(initial=0)) - most >= I32_MIN:
        return  # (the common case, without a matmul)
    xp, xn, yp, yn = np.maximum(x, 0), np.minimum(x, 0), np.maximum(y, 0), np.minimum(y, 0)
    high = acc + np.matmul(xp, yp) + np.matmul(xn, yn)
    low = acc + np.matmul(xp, yn) + np.matmul(xn, yp)
    if (high > I32_MAX).any() or (low < I32_MIN).any():
        worst = int(high.max()) if (high > I32_MAX).any() else int(low.min())
        raise InterpreterError(
            f"the i32 sum of `mma` can reach {worst}, outside the 32-bit range (the GPU's "
            "tensor cores saturate there and its other paths wrap, in an order tileiras "
            "chooses: undefined); keep accumulators within i32")

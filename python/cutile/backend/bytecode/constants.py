"""Constant data in MLIR's DenseElements raw layout: row-major, little-endian, one element
when the constant is a splat.

The host keeps bf16 and tf32 values as f32 and f8 values as f64 (numpy has no such
types), so they are narrowed here with round-to-nearest-even (f8: saturating). i1 is
0xFF/0x00 for a splat and bit-packed (bit i of the buffer is element i) otherwise, as MLIR
stores it.
"""

from __future__ import annotations

import numpy as np

from ... import minifloat
from ...dtypes import DType
from ...ir.attrs import Dense


def dense_bytes(value: Dense, dtype: DType) -> bytes:
    flat = np.ascontiguousarray(value.array).reshape(-1)
    if flat.size == 0:
        raise ValueError("an empty constant cannot be encoded")
    return element_bytes(flat, dtype)


def element_bytes(flat: np.ndarray, dtype: DType) -> bytes:
    name = dtype.name
    if name == "i1":
        bools = flat.astype(bool)
        if bools.size == 1:
            return b"\xff" if bool(bools[0]) else b"\x00"
        return np.packbits(bools, bitorder="little").tobytes()
    if dtype.is_int:
        return _int_bytes(flat, dtype.bits)
    if name == "f16":
        return flat.astype("<f2").tobytes()
    if name == "f32":
        return flat.astype("<f4").tobytes()
    if name == "f64":
        return flat.astype("<f8").tobytes()
    if name == "bf16":
        return _narrow_f32(flat, keep_bits=7).astype("<u2").tobytes()
    if minifloat.is_minifloat(name):  # rounded and saturated as a conversion to it is
        return minifloat.to_bits(flat.astype(np.float64), name).tobytes()
    if name == "tf32":
        # 19 significant bits (1 sign, 8 exponent, 10 mantissa) stored in 3 bytes.
        bits = _narrow_f32(flat, keep_bits=10)
        return b"".join(int(b).to_bytes(3, "little") for b in bits)
    raise TypeError(f"constants of `{name}` cannot be encoded")


def _int_bytes(flat: np.ndarray, bits: int) -> bytes:
    if bits not in (8, 16, 32, 64):
        raise TypeError(f"constants of i{bits} cannot be encoded")
    # Tile IR integers are signless: wrap Python/unsigned values into the width's bits.
    mask = (1 << bits) - 1
    width = bits // 8
    return b"".join((int(v) & mask).to_bytes(width, "little") for v in flat.tolist())


def _narrow_f32(flat: np.ndarray, keep_bits: int) -> np.ndarray:
    """Round f32 values to a format with the same exponent and `keep_bits` mantissa bits;
    returns the narrow format's bit patterns (sign in the top bit) as uint32."""
    drop = 23 - keep_bits
    bits = flat.astype("<f4").view("<u4").astype(np.uint64)
    is_nan = np.isnan(flat.astype(np.float32))
    halfway = (np.uint64(1) << np.uint64(drop - 1)) - np.uint64(1)
    lsb = (bits >> np.uint64(drop)) & np.uint64(1)
    rounded = (bits + halfway + lsb) >> np.uint64(drop)
    # A NaN must stay a NaN: rounding could carry its payload into the exponent (or drop
    # it to an infinity), so emit a quiet NaN with the original sign instead.
    sign = (bits >> np.uint64(31)) << np.uint64(8 + keep_bits)
    quiet_nan = (
        sign
        | (np.uint64(0xFF) << np.uint64(keep_bits))
        | (np.uint64(1) << np.uint64(keep_bits - 1))
    )
    return np.where(is_nan, quiet_nan, rounded).astype(np.uint32)


def float_bits(value: float, dtype: DType) -> int:
    """The bit pattern of one float in `dtype` (for Float attributes, e.g. reduce
    identities)."""
    data = element_bytes(np.asarray([value], dtype=np.float64), dtype)
    return int.from_bytes(data, "little")

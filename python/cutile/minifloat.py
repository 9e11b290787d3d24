"""The 8-bit float formats (`f8e4m3fn`, `f8e5m2`): their bit patterns, and the rounding a
conversion to them does on the GPU, without ml_dtypes.

A conversion to an f8 format rounds to nearest even and saturates to the largest finite
value, as Tile IR's `ftof` compiles for sm_90 (`F2FP.SATFINITE`, PTX's
`cvt.rn.satfinite`): a value past the largest finite one, an infinity included, becomes
+-448 (e4m3fn) or +-57344 (e5m2), and NaN stays NaN (the canonical pattern 0x7F). It is
one rounding from the exact source value, subnormals included: the GPU converts f16 and
f32 directly and f64 through a round-to-odd f32, which rounds the same.

ml_dtypes' `astype` rounds the same way but does not saturate (e4m3fn overflows to NaN,
e5m2 to infinity): `clip` to the finite range first and the two agree bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]


@dataclass(frozen=True)
class Format:
    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    max_finite: float
    has_inf: bool

    @property
    def min_exponent(self) -> int:
        """The exponent of the smallest normal value (subnormals share it)."""
        return 1 - self.bias


FORMATS: dict[str, Format] = {
    "f8e4m3fn": Format("f8e4m3fn", 4, 3, 7, 448.0, False),
    "f8e5m2": Format("f8e5m2", 5, 2, 15, 57344.0, True),
}
NAN_BITS = 0x7F  # the canonical NaN of both formats (e4m3fn has no other positive one)


def is_minifloat(name: str) -> bool:
    return name in FORMATS


def round_to(x: Array | float, name: str) -> Array:
    """Round values (any float dtype, exact in f64) to the format's nearest value, ties to
    even, saturating past the largest finite value; returns f64 values (NaN stays NaN)."""
    f = FORMATS[name]
    a = np.asarray(x, dtype=np.float64)
    mag = np.minimum(np.abs(a), 2.0 * f.max_finite)  # infinities too; keeps a/q finite
    with np.errstate(divide="ignore", invalid="ignore"):
        _, exp2 = np.frexp(mag)  # mag = m * 2**exp2 with m in [0.5, 1): floor(log2) = exp2 - 1
    e = np.maximum(np.where(mag > 0, exp2 - 1, f.min_exponent), f.min_exponent)
    quantum = np.ldexp(1.0, e - f.mantissa_bits)
    with np.errstate(invalid="ignore"):
        r = np.minimum(np.round(mag / quantum) * quantum, f.max_finite)
    out = np.copysign(r, a)
    return np.where(np.isnan(a), np.nan, out)


def to_bits(x: Array | float, name: str) -> Array:
    """The bit patterns (uint8) of values rounded to the format (`round_to`)."""
    f = FORMATS[name]
    r = round_to(x, name)
    nan = np.isnan(r)
    mag = np.where(nan, 0.0, np.abs(r))
    _, exp2 = np.frexp(mag)
    e = exp2 - 1
    normal = (mag > 0) & (e >= f.min_exponent)
    exp_field = np.where(normal, e + f.bias, 0)
    unit = np.where(normal, np.ldexp(1.0, e - f.mantissa_bits),
                    np.ldexp(1.0, f.min_exponent - f.mantissa_bits))
    mantissa = np.round(mag / unit).astype(np.int64) - np.where(normal, 1 << f.mantissa_bits, 0)
    bits = (exp_field.astype(np.int64) << f.mantissa_bits) | mantissa
    bits |= np.where(np.signbit(r), 0x80, 0)
    bits = np.where(nan, NAN_BITS, bits)
    return np.asarray(bits, dtype=np.uint8)


@cache
def _table(name: str) -> Array:
    """The value of each of the 256 bit patterns, as float32 (exact)."""
    f = FORMATS[name]
    b = np.arange(256, dtype=np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp_field = (b >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1)
    mantissa = b & ((1 << f.mantissa_bits) - 1)
    top = (1 << f.exponent_bits) - 1
    normal = np.ldexp(1.0 + mantissa / (1 << f.mantissa_bits), exp_field - f.bias)
    sub = np.ldexp(mantissa / (1 << f.mantissa_bits), f.min_exponent)
    v = sign * np.where(exp_field == 0, sub, normal)
    if f.has_inf:
        v = np.where((exp_field == top) & (mantissa == 0), sign * np.inf, v)
        nan = (exp_field == top) & (mantissa != 0)
    else:
        nan = (exp_field == top) & (mantissa == (1 << f.mantissa_bits) - 1)
    v = np.where(nan, np.copysign(np.nan, sign), v)  # a NaN keeps its sign
    out = v.astype(np.float32)
    out.flags.writeable = False
    return out


def from_bits(bits: Array, name: str) -> Array:
    """The values (float32, exact) of bit patterns."""
    return _table(name)[np.asarray(bits).astype(np.uint8)]

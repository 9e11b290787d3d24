"""Constant data in the DenseElements layout, including bf16/tf32 narrowing."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from cutile import dtypes as dt
from cutile.backend.bytecode.constants import dense_bytes, element_bytes, float_bits
from cutile.ir import Dense

f32s = st.floats(width=32, allow_nan=False, allow_infinity=False)


def _f32_bits(x: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def _nearest_by_fractions(x: float, keep: int) -> int:
    """Reference narrowing from f32 to (8-bit exponent, `keep`-bit mantissa), computed
    with exact rationals: pick the nearer of the two neighbours, ties to even."""
    drop = 23 - keep
    bits = _f32_bits(x)
    low = bits >> drop
    high = low + 1

    def value(narrow: int) -> Fraction:
        wide = narrow << drop
        as_float = struct.unpack("<f", struct.pack("<I", wide & 0xFFFFFFFF))[0]
        # Past the largest finite value IEEE rounds as if the next value were 2**128.
        if math.isfinite(as_float):
            return Fraction(as_float)
        return Fraction(2) ** 128 * (1 if as_float > 0 else -1)

    exact = Fraction(x)
    d_low, d_high = abs(exact - value(low)), abs(value(high) - exact)
    if d_low < d_high:
        return low
    if d_high < d_low:
        return high
    return low if low % 2 == 0 else high


@given(f32s)
@example(1.00390625)  # halfway between 1 and the next bf16: stays at the even 1.0
@example(1.01171875)  # halfway again, now rounds up to the even neighbour
@example(3.39617752923046e38)  # rounds past the largest bf16 to +inf
@example(-3.39617752923046e38)  # and to -inf
def test_bf16_rounds_to_nearest_even(x: float) -> None:
    got = int.from_bytes(element_bytes(np.array([x], np.float32), dt.bf16), "little")
    assert got == _nearest_by_fractions(x, 7)


@given(f32s)
@example(3.401992901712019e38)  # rounds past the largest tf32 to +inf
@example(1.0 + 2.0**-11)  # a tie between 1.0 and the next tf32
def test_tf32_rounds_to_nearest_even_in_three_bytes(x: float) -> None:
    data = element_bytes(np.array([x], np.float32), dt.tf32)
    assert len(data) == 3
    assert int.from_bytes(data, "little") == _nearest_by_fractions(x, 10)


@pytest.mark.parametrize("dtype", [dt.bf16, dt.tf32])
def test_narrowing_keeps_nan_and_infinities(dtype: dt.DType) -> None:
    keep = 7 if dtype is dt.bf16 else 10
    values = np.array([np.nan, -np.nan, np.inf, -np.inf], np.float32)
    width = 2 if dtype is dt.bf16 else 3
    data = element_bytes(values, dtype)
    words = [int.from_bytes(data[i : i + width], "little") for i in range(0, len(data), width)]
    exp_all_ones = 0xFF << keep
    mantissa = (1 << keep) - 1
    assert all(w & exp_all_ones == exp_all_ones for w in words)
    assert words[0] & mantissa and words[1] & mantissa  # NaNs stay NaNs
    assert words[2] & mantissa == 0 and words[3] & mantissa == 0  # infinities stay infinite
    # A NaN whose payload sits only in the dropped bits must not become an infinity.
    sneaky = np.array([0x7F800001], np.uint32).view(np.float32)
    word = int.from_bytes(element_bytes(sneaky, dtype), "little")
    assert word & mantissa


@given(st.lists(st.floats(width=16, allow_nan=False), min_size=1, max_size=8))
def test_f16_is_little_endian_ieee(values: list[float]) -> None:
    data = dense_bytes(Dense(np.array(values, np.float16)), dt.f16)
    assert data == np.array(values, "<f2").tobytes()


@given(st.lists(st.integers(-(2**31), 2**32 - 1), min_size=1, max_size=8))
def test_i32_wraps_into_32_bits(values: list[int]) -> None:
    data = dense_bytes(Dense(np.array(values, dtype=object)), dt.i32)
    assert data == b"".join((v & 0xFFFFFFFF).to_bytes(4, "little") for v in values)


def test_i1_splat_is_ff_and_arrays_are_bit_packed() -> None:
    assert dense_bytes(Dense(np.array(True)), dt.bool_) == b"\xff"
    assert dense_bytes(Dense(np.array([False])), dt.bool_) == b"\x00"
    bits = [True, False, False, True, True, True, False, False, True]
    # element i is bit i: 0b00111001 then 0b1
    assert dense_bytes(Dense(np.array(bits)), dt.bool_) == bytes([0b00111001, 0b1])


def test_row_major_order() -> None:
    arr = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert dense_bytes(Dense(arr), dt.i16) == arr.astype("<i2").tobytes(order="C")


def test_empty_constant_is_refused() -> None:
    with pytest.raises(ValueError):
        dense_bytes(Dense(np.array([], np.float32)), dt.f32)


@given(st.floats(allow_nan=False))
def test_float_bits_f64(x: float) -> None:
    assert float_bits(x, dt.f64) == struct.unpack("<Q", struct.pack("<d", x))[0]


@given(f32s)
def test_float_bits_f32(x: float) -> None:
    assume(not math.isnan(x))
    assert float_bits(x, dt.f32) == _f32_bits(x)

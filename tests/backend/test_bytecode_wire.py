"""Primitive encodings: varints, zig-zag signed varints, int lists, tables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cutile.backend.bytecode.wire import (
    PAD_BYTE,
    Table,
    int_list,
    pad_to,
    read_signed_varint,
    read_table,
    read_varint,
    signed_varint,
    varint,
    write_table,
)

u64 = st.integers(min_value=0, max_value=(1 << 64) - 1)
i64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


def enc(fn, value) -> bytes:  # type: ignore[no-untyped-def]
    out = bytearray()
    fn(value, out)
    return bytes(out)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (16384, b"\x80\x80\x01"),
        ((1 << 64) - 1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_varint_known_encodings(value: int, expected: bytes) -> None:
    assert enc(varint, value) == expected


def test_varint_rejects_negative() -> None:
    with pytest.raises(ValueError):
        varint(-1, bytearray())


@given(u64)
def test_varint_round_trip(value: int) -> None:
    data = enc(varint, value)
    assert read_varint(data, 0) == (value, len(data))
    # Only the last byte lacks the continuation bit, and no byte is wasted.
    assert all(b & 0x80 for b in data[:-1]) and not data[-1] & 0x80
    assert len(data) == max(1, -(-value.bit_length() // 7))


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (63, b"\x7e"), (-64, b"\x7f"),
     (64, b"\x80\x01")],
)  # fmt: skip
def test_signed_varint_zigzag(value: int, expected: bytes) -> None:
    assert enc(signed_varint, value) == expected


@given(i64)
def test_signed_varint_round_trip(value: int) -> None:
    data = enc(signed_varint, value)
    assert read_signed_varint(data, 0) == (value, len(data))


@given(u64)
def test_signed_varint_takes_raw_uint64_bits(bits: int) -> None:
    # Float attribute payloads are raw bits passed as uint64 (C++ writeSignedVarInt):
    # a pattern with the top bit set encodes as its two's complement value.
    signed = bits - (1 << 64) if bits >> 63 else bits
    assert enc(signed_varint, bits) == enc(signed_varint, signed)


@given(st.lists(i64, max_size=20))
def test_int_list_8_bytes(values: list[int]) -> None:
    data = enc(lambda v, out: int_list(v, 8, out), values)
    count, pos = read_varint(data, 0)
    assert count == len(values)
    assert len(data) == pos + 8 * len(values)
    decoded = [int.from_bytes(data[pos + 8 * i : pos + 8 * i + 8], "little", signed=True)
               for i in range(count)]  # fmt: skip
    assert decoded == values


def test_int_list_rejects_values_too_wide() -> None:
    with pytest.raises(OverflowError):
        int_list([1 << 31], 4, bytearray())


@given(st.integers(0, 40), st.sampled_from([1, 2, 4, 8]))
def test_pad_to(length: int, alignment: int) -> None:
    out = bytearray(b"\x01" * length)
    pad_to(out, alignment)
    assert len(out) % alignment == 0
    assert len(out) - length < alignment
    assert set(out[length:]) <= {PAD_BYTE}


@given(st.lists(st.binary(max_size=12), max_size=30), st.sampled_from([1, 0]))
def test_table_dedups_and_numbers_in_insertion_order(items: list[bytes], first: int) -> None:
    table = Table(first_id=first)
    ids = [table.intern(i) for i in items]
    distinct = list(dict.fromkeys(items))
    assert table.items == distinct
    assert ids == [distinct.index(i) + first for i in items]
    assert len(table) == len(distinct)


@given(st.lists(st.binary(max_size=12), max_size=30), st.sampled_from([4, 8]))
def test_table_layout_round_trip(items: list[bytes], width: int) -> None:
    out = bytearray()
    write_table(items, width, out)
    assert read_table(bytes(out), 0, width) == items
    _, pos = read_varint(bytes(out), 0)
    offsets_at = pos + (-pos % width)
    assert offsets_at % width == 0  # offsets are aligned to their width
    if items:
        assert int.from_bytes(out[offsets_at : offsets_at + width], "little") == 0

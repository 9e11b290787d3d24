"""Primitive encodings of Tile IR bytecode: LEB128 varints, zig-zag signed varints,
little-endian int lists, alignment padding and indexed, deduplicated tables.

Every multi-byte fixed-width integer in the format is little-endian. The readers here exist
so the encodings can be checked by round trip; the assembler never reads our output back
through them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

PAD_BYTE = 0xCB  # what the reference writer fills alignment gaps with
INT64_MIN = -(1 << 63)  # the dynamic-dimension marker in shapes and strides
_MASK64 = (1 << 64) - 1


def varint(value: int, out: bytearray) -> None:
    """Unsigned LEB128: 7 bits per byte, high bit set on every byte but the last."""
    if value < 0:
        raise ValueError(f"varint of a negative value {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def signed_varint(value: int, out: bytearray) -> None:
    """Zig-zag then LEB128, on the 64-bit two's complement of `value`.

    The reference writer applies this to the raw bits of APInts up to 64 bits wide (float
    attribute payloads included), so the input is taken modulo 2**64 like a `uint64_t`.
    """
    bits = value & _MASK64
    as_signed = bits - (1 << 64) if bits >> 63 else bits
    varint(((bits << 1) & _MASK64) ^ ((as_signed >> 63) & _MASK64), out)


def int_list(values: Sequence[int], width: int, out: bytearray) -> None:
    """A varint count, then each value as a `width`-byte signed little-endian integer."""
    varint(len(values), out)
    for v in values:
        out += int(v).to_bytes(width, "little", signed=True)


def pad_to(out: bytearray, alignment: int) -> None:
    """Pad with PAD_BYTE until len(out) is a multiple of `alignment`.

    Section bodies start at an offset aligned to the section's alignment, so padding a
    section's own buffer aligns the absolute file offset too.
    """
    out += bytes([PAD_BYTE]) * (-len(out) % alignment)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode one unsigned LEB128 at `pos`; returns (value, next position)."""
    value = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def read_signed_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode one zig-zag varint into a signed 64-bit value."""
    raw, pos = read_varint(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


class Table:
    """Items deduplicated by their encoded bytes; an item's id is its insertion order plus
    `first_id` (the Debug table reserves id 0 for "unknown location")."""

    def __init__(self, first_id: int = 0) -> None:
        self.first_id = first_id
        self._ids: dict[bytes, int] = {}
        self._items: list[bytes] = []

    def intern(self, item: bytes) -> int:
        found = self._ids.get(item)
        if found is not None:
            return found
        new_id = len(self._items) + self.first_id
        self._ids[item] = new_id
        self._items.append(item)
        return new_id

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> list[bytes]:
        return list(self._items)


def write_table(items: Iterable[bytes], index_width: int, out: bytearray) -> None:
    """Table layout: varint count, pad to `index_width`, one offset per item (u32 or u64),
    then the concatenated item bytes."""
    items = list(items)
    varint(len(items), out)
    pad_to(out, index_width)
    offset = 0
    for item in items:
        out += offset.to_bytes(index_width, "little")
        offset += len(item)
    for item in items:
        out += item


def read_table(data: bytes, pos: int, index_width: int) -> list[bytes]:
    """Inverse of `write_table` for a table that runs to the end of `data`; `pos` must be
    relative to an aligned section start."""
    count, pos = read_varint(data, pos)
    if count == 0:
        return []
    pos += -pos % index_width
    offsets = [
        int.from_bytes(data[pos + i * index_width : pos + (i + 1) * index_width], "little")
        for i in range(count)
    ]
    base = pos + count * index_width
    ends = [*offsets[1:], len(data) - base]
    return [data[base + start : base + end] for start, end in zip(offsets, ends, strict=True)]

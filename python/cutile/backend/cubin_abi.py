"""A kernel's parameter layout as the CUDA compiler laid it out, read from its cubin.

Every kernel in a cubin has an ELF section `.nv.info.<symbol>` of attribute records; one
`EIATTR_KPARAM_INFO` record per parameter gives its ordinal, its byte offset in the
parameter buffer and its size (what `cuobjdump -elf` prints). A raw kernel's declared
parameters are checked against these (count and sizes) and packed at these offsets, so
the host never guesses the C++ ABI. A record is `u8 format, u8 attribute` and a value:
two bytes for the fixed-size formats, or a `u16` length and that many bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_EIFMT_SVAL = 0x04
_EIATTR_KPARAM_INFO = 0x17
_ELF_MAGIC = b"\x7fELF\x02\x01"  # 64-bit, little-endian


@dataclass(frozen=True)
class ParamSlot:
    ordinal: int
    offset: int
    size: int


def kernel_params(cubin: bytes, symbol: str) -> list[ParamSlot] | None:
    """The parameters of kernel `symbol` in ordinal order, or None when the cubin has no
    readable parameter table for it (not an ELF cubin, no `.nv.info.<symbol>` section,
    or records this reader does not know)."""
    try:
        info = _section(cubin, f".nv.info.{symbol}")
        return None if info is None else _kparams(info)
    except (struct.error, ValueError, IndexError):
        return None


def _section(elf: bytes, wanted: str) -> bytes | None:
    if not elf.startswith(_ELF_MAGIC):
        return None
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    for name_off, _type, _flags, _addr, offset, size in headers:
        start = names_at + name_off
        end = elf.index(b"\0", start)
        if elf[start:end].decode(errors="replace") == wanted:
            if offset + size > len(elf):
                raise ValueError("section past the end of the file")
            return elf[offset : offset + size]
    return None


def _kparams(info: bytes) -> list[ParamSlot] | None:
    slots: list[ParamSlot] = []
    at = 0
    while at + 4 <= len(info):
        fmt, attr = info[at], info[at + 1]
        if fmt != _EIFMT_SVAL:
            if fmt not in (1, 2, 3):
                return None
            at += 4
            continue
        (n,) = struct.unpack_from("<H", info, at + 2)
        value = info[at + 4 : at + 4 + n]
        at += 4 + n
        if attr == _EIATTR_KPARAM_INFO:
            if len(value) < 12:
                return None
            _index, ordinal, offset, packed = struct.unpack_from("<IHHI", value)
            slots.append(ParamSlot(ordinal, offset, packed >> 18))
    slots.sort(key=lambda s: s.ordinal)
    if [s.ordinal for s in slots] != list(range(len(slots))):
        return None
    return slots

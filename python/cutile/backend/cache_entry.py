"""The cubin cache's key and its on-disk entry format.

A key is a set of fields: everything a cubin depends on (the bytecode's hash and version,
the target, the optimization level, the `tileiras --version` text, the cutile version) and,
for a kernel, what it is (its name, the hash of its kernel AST, its Const values and the
argument facts it was specialized on). The entry's file name is the SHA-256 of the fields'
canonical JSON, and the entry stores the fields themselves: an entry is served only when
its stored fields equal the ones asked for, so a file that landed under the wrong name (a
copy, a swap, a hash collision) is recompiled, never launched as another kernel.

    magic (14 B, format version in the last byte) | u32 length of the key JSON | key JSON
    | u64 length of the cubin | SHA-256 of key JSON + cubin | cubin

Anything truncated, flipped or of another format decodes to None.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._version import __version__
from .bytecode.version import MAGIC as _BYTECODE_MAGIC

ENTRY_MAGIC = b"CUTILE-CUBIN\x00\x02"
FORMAT = 2


def bytecode_version(bytecode: bytes) -> str:
    """`13.3` from a Tile IR bytecode header (`unknown` for anything else)."""
    n = len(_BYTECODE_MAGIC)
    if len(bytecode) < n + 2 or not bytecode.startswith(_BYTECODE_MAGIC):
        return "unknown"
    return f"{bytecode[n]}.{bytecode[n + 1]}"


def key_fields(
    bytecode: bytes,
    arch: str,
    opt_level: int,
    tool_version: str,
    kernel: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every input of one cubin (see the module docstring); `kernel` is what
    `pipeline.kernel_identity` says of the kernel, None for bare bytecode."""
    fields: dict[str, Any] = {
        "format": FORMAT,
        "cutile": __version__,
        "target": arch,
        "opt_level": opt_level,
        "tileiras": tool_version,
        "bytecode_version": bytecode_version(bytecode),
        "bytecode_sha256": hashlib.sha256(bytecode).hexdigest(),
    }
    if kernel is not None:
        fields["kernel"] = dict(kernel)
    return fields


def canonical(fields: Mapping[str, Any]) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def key_hash(fields: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(fields)).hexdigest()


@dataclass(frozen=True)
class Entry:
    fields: dict[str, Any]
    cubin: bytes


def encode_entry(fields: Mapping[str, Any], cubin: bytes) -> bytes:
    key = canonical(fields)
    digest = hashlib.sha256(key + cubin).digest()
    return (ENTRY_MAGIC + len(key).to_bytes(4, "little") + key
            + len(cubin).to_bytes(8, "little") + digest + cubin)


def decode_entry(data: bytes) -> Entry | None:
    """The stored key and cubin of a well-formed entry, or None for anything truncated,
    corrupt or of another format."""
    at = len(ENTRY_MAGIC)
    if len(data) < at + 4 or not data.startswith(ENTRY_MAGIC):
        return None
    key_len = int.from_bytes(data[at : at + 4], "little")
    at += 4
    key = data[at : at + key_len]
    at += key_len
    if len(key) != key_len or len(data) < at + 8 + 32:
        return None
    cubin_len = int.from_bytes(data[at : at + 8], "little")
    digest = data[at + 8 : at + 40]
    cubin = data[at + 40 :]
    if len(cubin) != cubin_len or hashlib.sha256(key + cubin).digest() != digest:
        return None
    try:
        fields = json.loads(key)
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    return Entry(fields, cubin)


def differing(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """The names of the fields in which two keys differ (for the log line)."""
    names = sorted(set(stored) | set(wanted))
    return [n for n in names if stored.get(n) != wanted.get(n)]

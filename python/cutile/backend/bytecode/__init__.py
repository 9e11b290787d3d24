"""Tile IR bytecode writer: `write_bytecode(module, version="13.3") -> bytes`.

Layout: `wire` (varints, tables), `tables` (strings, types, constants), `constants`
(dense data), `attributes` (tagged attributes), `debug` (the Debug section), `enums`,
`opwriter` (SSA numbering, regions, dispatch), `ops/` (one encoder per op, by family),
`writer` (sections and the file envelope), `version` (which versions we write).
"""

from __future__ import annotations

import importlib
from typing import Any

from .version import (
    DEFAULT_VERSION,
    SUPPORTED_VERSIONS,
    BytecodeVersion,
    newest_common,
)

# The writer loads on first use: the assembler's version check (`version`) is read by
# every launch, the writer only by a launch that compiles.
_LAZY = {"ENCODERS": "opwriter", "EncodeError": "opwriter", "write_bytecode": "writer",
         "needed_version": "writer"}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_VERSION",
    "ENCODERS",
    "SUPPORTED_VERSIONS",
    "BytecodeVersion",
    "EncodeError",
    "needed_version",
    "newest_common",
    "write_bytecode",
]

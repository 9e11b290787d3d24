"""Tile IR bytecode writer: `write_bytecode(module, version="13.3") -> bytes`.

Layout: `wire` (varints, tables), `tables` (strings, types, constants), `constants`
(dense data), `attributes` (tagged attributes), `debug` (the Debug section), `enums`,
`opwriter` (SSA numbering, regions, dispatch), `ops/` (one encoder per op, by family),
`writer` (sections and the file envelope), `version` (which versions we write).
"""

from .opwriter import ENCODERS, EncodeError
from .version import (
    DEFAULT_VERSION,
    SUPPORTED_VERSIONS,
    BytecodeVersion,
    newest_common,
)
from .writer import write_bytecode

__all__ = [
    "DEFAULT_VERSION",
    "ENCODERS",
    "SUPPORTED_VERSIONS",
    "BytecodeVersion",
    "EncodeError",
    "newest_common",
    "write_bytecode",
]

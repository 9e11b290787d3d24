"""The Debug section: where each op came from in the user's Python source.

tileiras refuses bytecode without it ("failed to read function location"), and it prints
these locations in its diagnostics, which is how a `CompileError` finds the Python line.

Layout: per function, a list of debug-attribute ids, one for the function and then one per
op in pre-order (an op before the ops nested in its regions); id 0 is "unknown location".
The attributes themselves (DIFile, DICompileUnit, DISubprogram, DILoc, CallSite) live in a
table whose ids start at 1.
"""

from __future__ import annotations

import os

from ...ir.core import Location
from .tables import StringTable
from .version import V13_5, BytecodeVersion
from .wire import Table, pad_to, varint, write_table

UNKNOWN_LOC = 0

_DI_COMPILE_UNIT = 1
_DI_FILE = 2
_DI_LOC = 4
_DI_SUBPROGRAM = 5
_CALL_SITE = 6


class DebugTable(Table):
    def __init__(self, strings: StringTable, version: BytecodeVersion) -> None:
        super().__init__(first_id=1)
        self.strings = strings
        self.version = version

    def _attr(self, tag: int, *fields: int) -> int:
        out = bytearray([tag])
        for f in fields:
            varint(f, out)
        return self.intern(bytes(out))

    def file(self, path: str) -> int:
        directory, name = os.path.split(path)
        return self._attr(_DI_FILE, self.strings.id(name), self.strings.id(directory))

    def subprogram(self, path: str, line: int, name: str, linkage_name: str) -> int:
        file = self.file(path)
        unit = self._attr(_DI_COMPILE_UNIT, file)
        fields = [file, line, self.strings.id(name), self.strings.id(linkage_name), unit, line]
        if self.version >= V13_5:
            fields.append(0)  # DISubprogram flags (13.5); no flag is defined for our use
        return self._attr(_DI_SUBPROGRAM, *fields)

    def loc(self, scope: int, path: str, line: int, col: int) -> int:
        return self._attr(_DI_LOC, scope, self.strings.id(path), line, col)

    def call_site(self, callee: int, caller: int) -> int:
        return self._attr(_CALL_SITE, callee, caller)


class FunctionDebugInfo:
    """Collects the location ids of one function's ops, in the order they are written."""

    def __init__(self, table: DebugTable, symbol: str, fn_loc: Location | None) -> None:
        self.table = table
        self.symbol = symbol
        self.fn_loc = fn_loc
        self._scopes: dict[tuple[str, str], int] = {}
        self.ids: list[int] = [self.loc_id(fn_loc)]

    def _scope(self, loc: Location) -> int:
        name = loc.function or (self.fn_loc.function if self.fn_loc else "") or self.symbol
        key = (loc.file, name)
        scope = self._scopes.get(key)
        if scope is None:
            # The kernel's own subprogram starts at its `def` line and keeps the exported
            # symbol as linkage name; inlined device functions get their own subprogram.
            is_kernel = (
                self.fn_loc is not None
                and loc.file == self.fn_loc.file
                and (name == (self.fn_loc.function or self.symbol))
            )
            line = self.fn_loc.line if is_kernel and self.fn_loc else loc.line
            linkage = self.symbol if is_kernel else name
            scope = self.table.subprogram(loc.file, line, name, linkage)
            self._scopes[key] = scope
        return scope

    def loc_id(self, loc: Location | None) -> int:
        if loc is None:
            return UNKNOWN_LOC
        # Python columns are 0-based; MLIR locations (and every compiler message) are 1-based.
        here = self.table.loc(self._scope(loc), loc.file, loc.line, loc.col + 1)
        if loc.inlined_at is None:
            return here
        # An op of an inlined device function: its own line in the device function's scope,
        # called from the chain of call sites that ends in the kernel's scope.
        return self.table.call_site(here, self.loc_id(loc.inlined_at))

    def record(self, loc: Location | None) -> None:
        self.ids.append(self.loc_id(loc))


def write_debug_section(
    functions: list[FunctionDebugInfo], table: DebugTable, out: bytearray
) -> None:
    varint(len(functions), out)
    pad_to(out, 4)
    offset = 0
    for fn in functions:
        out += offset.to_bytes(4, "little")
        offset += len(fn.ids)
    varint(offset, out)
    pad_to(out, 8)
    for fn in functions:
        for attr_id in fn.ids:
            out += attr_id.to_bytes(8, "little")
    items = table.items
    if not items:
        # The reader rejects an empty attribute table; one unreferenced unknown-tag entry
        # keeps it well formed when no op has a location.
        items = [b"\x00"]
    write_table(items, 4, out)

"""`write_bytecode`: a `cutile.ir.Module` to Tile IR bytecode.

File layout: magic, version (u8 major, u8 minor, u16 tag), then sections, each a u8 id
(bit 7 set when aligned), a varint length, for aligned sections a varint alignment and
0xCB padding up to it, then the body; a 0x00 byte ends the file. We write Func, Constant,
Debug, Type, Producer (optional), String, in that order (any order is accepted).
"""

from __future__ import annotations

from ...ir.core import Function, Module
from ...ir.op_table import OPS
from . import ops as _ops  # noqa: F401  (registers every op encoder)
from .attributes import encode_empty_array, encode_hints_tagged
from .debug import DebugTable, FunctionDebugInfo, write_debug_section
from .opwriter import EncodeError, ModuleTables, OpWriter
from .tables import ConstantTable, StringTable, TypeTable
from .version import DEFAULT_VERSION, MAGIC, V13_5, BytecodeVersion, check_supported
from .wire import pad_to, varint, write_table

SECTION_END = 0x00
SECTION_STRING = 0x01
SECTION_FUNC = 0x02
SECTION_DEBUG = 0x03
SECTION_CONSTANT = 0x04
SECTION_TYPE = 0x05
SECTION_PRODUCER = 0x07  # 13.3+

FLAG_KERNEL = 0x02
FLAG_HAS_HINTS = 0x04  # before 13.5 only; 13.5 always writes the hints


def needed_version(module: Module) -> tuple[BytecodeVersion, str | None]:
    """The lowest version this module can be written in: the default (13.3) unless an op
    arrived later (the grid-dependency ops of a PDL kernel: 13.4), and the first such op,
    to name in an error. Kernels without such ops keep the default, so their bytes do not
    change."""
    version, why = DEFAULT_VERSION, None
    for fn in module.functions:
        for op in fn.walk():
            since = BytecodeVersion.parse(OPS[op.name].since)
            if since > version:
                version, why = since, op.name
    return version, why


def write_bytecode(
    module: Module,
    version: str | BytecodeVersion = "13.3",
    *,
    producer: str | None = "cutile",
) -> bytes:
    """Encode `module` (entries only: Tile IR bytecode has no device functions) as bytecode
    of `version` ("13.3" by default, "13.4" or "13.5"). The same module always gives the
    same bytes, so the bytes can key a cache."""
    v = check_supported(version)
    tables = ModuleTables(v, StringTable(), TypeTable(v), ConstantTable())
    debug = DebugTable(tables.strings, v)

    func_body = bytearray()
    varint(len(module.functions), func_body)
    debug_infos: list[FunctionDebugInfo] = []
    for fn in module.functions:
        info = FunctionDebugInfo(debug, fn.name, fn.loc)
        debug_infos.append(info)
        _write_function(fn, tables, info, len(debug_infos), func_body)

    out = bytearray(MAGIC)
    out += bytes([v.major, v.minor]) + v.tag.to_bytes(2, "little")
    _section(out, SECTION_FUNC, func_body, 8)
    if len(tables.constants):
        body = bytearray()
        write_table(tables.constants.items, 8, body)
        _section(out, SECTION_CONSTANT, body, 8)
    body = bytearray()
    write_debug_section(debug_infos, debug, body)
    _section(out, SECTION_DEBUG, body, 8)
    if producer is not None:
        # The producer string goes into the string table, so build it before writing that.
        body = bytearray()
        varint(tables.strings.id(producer), body)
        producer_body: bytearray | None = body
    else:
        producer_body = None
    body = bytearray()
    write_table(tables.types.items, 4, body)
    _section(out, SECTION_TYPE, body, 4)
    if producer_body is not None:
        _section(out, SECTION_PRODUCER, producer_body, 1)
    body = bytearray()
    write_table(tables.strings.items, 4, body)
    _section(out, SECTION_STRING, body, 4)
    out.append(SECTION_END)
    return bytes(out)


def _write_function(
    fn: Function, tables: ModuleTables, info: FunctionDebugInfo, debug_index: int, out: bytearray
) -> None:
    if not fn.is_entry:
        # tileiras reads only kernel entries; device functions are inlined before this.
        raise EncodeError(f"`{fn.name}` is not an entry; Tile IR bytecode holds entries only")
    w = OpWriter(tables, info)
    for param in fn.params:
        w.define(param)
    for op in fn.body.ops:  # the top level has no op count: the body length bounds it
        w.write_op(op)

    v = tables.version
    varint(tables.strings.id(fn.name), out)
    varint(tables.types.id(fn.type), out)
    if v >= V13_5:
        out.append(FLAG_KERNEL)
    else:
        out.append(FLAG_KERNEL | (FLAG_HAS_HINTS if fn.hints else 0))
    varint(debug_index, out)  # 1-based: 0 would mean "no debug info for this function"
    if fn.hints or v >= V13_5:
        encode_hints_tagged(fn.hints, tables.strings, tables.types, out)
    if v >= V13_5:
        encode_empty_array(out)  # argument attributes (13.5): none
    varint(len(w.out), out)
    out += w.out


def _section(out: bytearray, section_id: int, body: bytes | bytearray, alignment: int) -> None:
    out.append(section_id | (0x80 if alignment > 1 else 0))
    varint(len(body), out)
    if alignment > 1:
        varint(alignment, out)
        pad_to(out, alignment)
    out += body

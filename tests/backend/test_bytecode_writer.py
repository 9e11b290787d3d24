"""The file envelope, sections, tables, SSA numbering and version gates of the writer,
checked by reading our own bytes back (no assembler needed)."""

from __future__ import annotations

import pytest
import sample_kernels as sk

from cutile import dtypes as dt
from cutile.backend.bytecode import (
    DEFAULT_VERSION,
    SUPPORTED_VERSIONS,
    BytecodeVersion,
    EncodeError,
    newest_common,
    write_bytecode,
)
from cutile.backend.bytecode.wire import read_table, read_varint
from cutile.ir import Block, Builder, Function, Module, TileType, Value
from cutile.ir.types import I32

SECTION_NAMES = {1: "String", 2: "Func", 3: "Debug", 4: "Constant", 5: "Type", 7: "Producer"}


def sections(data: bytes) -> dict[str, tuple[int, bytes]]:
    """Walk the envelope: {section name: (body offset, body)}."""
    assert data[:8] == b"\x7fTileIR\x00"
    pos = 12
    found: dict[str, tuple[int, bytes]] = {}
    while True:
        head = data[pos]
        pos += 1
        if head == 0:
            assert pos == len(data), "bytes after EndOfBytecode"
            return found
        length, pos = read_varint(data, pos)
        if head & 0x80:
            alignment, pos = read_varint(data, pos)
            while pos % alignment:
                assert data[pos] == 0xCB
                pos += 1
        name = SECTION_NAMES[head & 0x7F]
        assert name not in found
        found[name] = (pos, data[pos : pos + length])
        pos += length


def strings(data: bytes) -> list[str]:
    return [s.decode() for s in read_table(sections(data)["String"][1], 0, 4)]


def types(data: bytes) -> list[bytes]:
    return read_table(sections(data)["Type"][1], 0, 4)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=str)
def test_envelope_and_sections(version: BytecodeVersion) -> None:
    data = write_bytecode(sk.matmul_f16(), version)
    assert data[8:12] == bytes([13, version.minor, 0, 0])
    found = sections(data)
    assert set(found) == {"Func", "Constant", "Debug", "Type", "Producer", "String"}
    for name, alignment in (("Func", 8), ("Debug", 8), ("Constant", 8), ("Type", 4)):
        assert found[name][0] % alignment == 0, f"{name} body not aligned"
    names = strings(data)
    assert {"matmul", "sample.py", "/src/kernels", "cutile"} <= set(names)
    assert names[read_varint(found["Producer"][1], 0)[0]] == "cutile"


def test_optional_sections_are_left_out() -> None:
    # No constants -> no Constant section (as the reference writer does); no producer
    # string -> no Producer section.
    found = sections(write_bytecode(sk.vector_add_f32(), producer=None))
    assert set(found) == {"Func", "Debug", "Type", "String"}


def test_default_version_is_13_3() -> None:
    assert str(DEFAULT_VERSION) == "13.3"
    assert write_bytecode(sk.saxpy())[8:10] == bytes([13, 3])


@pytest.mark.parametrize("bad", ["13.2", "13.6", "12.9", "x.y", "13"])
def test_unsupported_versions_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        write_bytecode(sk.saxpy(), bad)


def test_version_parsing_and_order() -> None:
    assert BytecodeVersion.parse("13.4") == BytecodeVersion(13, 4)
    assert BytecodeVersion.parse("13.5.1").tag == 1
    assert BytecodeVersion(13, 3) < BytecodeVersion(13, 4) < BytecodeVersion(13, 5)
    assert str(BytecodeVersion(13, 5, 1)) == "13.5.1"
    assert newest_common(["13.1", "13.2", "13.3", "13.4"]) == BytecodeVersion(13, 4)
    assert newest_common(["13.1", "13.2", "13.3", "13.4", "13.5", "13.6"]) == BytecodeVersion(13, 5)
    with pytest.raises(ValueError):
        newest_common(["13.1", "13.2"])


@pytest.mark.parametrize("name", sorted(sk.REPRESENTATIVE))
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=str)
def test_deterministic(name: str, version: BytecodeVersion) -> None:
    # Same module -> same bytes, and an identical module built again -> same bytes: the
    # cache key is a hash of these bytes.
    build = sk.REPRESENTATIVE[name]
    module = build()
    first = write_bytecode(module, version)
    assert write_bytecode(module, version) == first
    assert write_bytecode(build(), version) == first


def test_different_modules_differ() -> None:
    assert write_bytecode(sk.vector_add_f32(1024)) != write_bytecode(sk.vector_add_f32(512))


def test_pointer_and_tensor_view_types_gain_flags_in_13_4() -> None:
    # ptr<f32> is 0x0c <f32 id> up to 13.3, then 0x0c <flags=0> <f32 id>.
    def pointer_items(version: str) -> list[bytes]:
        return [t for t in types(write_bytecode(sk.vector_add_f32(), version)) if t[0] == 0x0C]

    (p33,) = pointer_items("13.3")
    (p34,) = pointer_items("13.4")
    assert len(p33) == 2 and len(p34) == 3 and p34[1] == 0 and p34[2] == p33[1]
    tv33 = [t for t in types(write_bytecode(sk.vector_add_f32(), "13.3")) if t[0] == 0x0E]
    tv34 = [t for t in types(write_bytecode(sk.vector_add_f32(), "13.4")) if t[0] == 0x0E]
    assert len(tv34[0]) == len(tv33[0]) + 1 and tv34[0][1] == 0


def _function_header(data: bytes) -> tuple[int, int, bytes]:
    body = sections(data)["Func"][1]
    count, pos = read_varint(body, 0)
    assert count == 1
    _, pos = read_varint(body, pos)  # name
    _, pos = read_varint(body, pos)  # signature
    flags = body[pos]
    debug_index, pos = read_varint(body, pos + 1)
    return flags, debug_index, body[pos:]


def test_entry_header_13_3_without_and_with_hints() -> None:
    module = sk.saxpy()
    flags, debug_index, rest = _function_header(write_bytecode(module, "13.3"))
    assert (flags, debug_index) == (0x02, 1)  # kernel, no hints; debug info is 1-based
    module.functions[0].hints = {"sm_90": {"occupancy": 2}}
    flags, _, rest = _function_header(write_bytecode(module, "13.3"))
    assert flags == 0x06 and rest[0] == 0x0B  # hints bit, then an OptimizationHints attr


def test_entry_header_13_5_always_has_hints_and_arg_attrs() -> None:
    flags, _, rest = _function_header(write_bytecode(sk.saxpy(), "13.5"))
    assert flags == 0x02
    assert rest[:4] == bytes([0x0B, 0x00, 0x06, 0x00])  # empty hints, empty arg-attr array


def test_debug_section_has_one_location_per_op_in_preorder() -> None:
    module = sk.matmul_f16()
    data = write_bytecode(module)
    body = sections(data)["Debug"][1]
    n_funcs, pos = read_varint(body, 0)
    pos += -pos % 4
    assert n_funcs == 1 and int.from_bytes(body[pos : pos + 4], "little") == 0
    total, pos = read_varint(body, pos + 4)
    n_ops = sum(1 for _ in module.functions[0].walk())
    assert total == 1 + n_ops  # the function, then every op including nested ones
    pos += -pos % 8
    ids = [int.from_bytes(body[pos + 8 * i : pos + 8 * i + 8], "little") for i in range(total)]
    assert all(ids), "every op of the sample has a location"
    table = read_table(body, pos + 8 * total, 4)
    assert max(ids) <= len(table)
    assert {t[0] for t in table} == {1, 2, 4, 5}  # compile unit, file, loc, subprogram


def test_op_without_location_gets_unknown_loc() -> None:
    b = Builder()
    b.entry("k", [])
    b.make_token()
    b.return_()
    body = sections(write_bytecode(b.module))["Debug"][1]
    total, pos = read_varint(body, 4 + 4)
    pos += -pos % 8
    ids = [int.from_bytes(body[pos + 8 * i : pos + 8 * i + 8], "little") for i in range(total)]
    assert ids == [0, 0, 0]
    assert read_table(body, pos + 8 * total, 4) == [b"\x00"]  # never an empty table


def test_region_values_are_renumbered_after_the_region() -> None:
    # for-loop results come after the values used inside the loop body; the body's own
    # values reuse numbers (the writer restores the counter when the region closes).
    b = Builder()
    b.entry("k", [I32])
    zero = b.scalar_const(0, dt.i32)  # value 1
    with b.for_(zero, zero, zero, [zero]) as loop:  # iv = 2, carried = 3
        inner = b.binary("addi", loop.iter_args[0], loop.iter_args[0])  # value 4
        b.continue_([inner])
    after = b.binary("addi", loop.results[0], zero)  # loop result = 2, this = 3
    b.return_()
    data = write_bytecode(b.module)
    body = _function_header(data)[2]
    i32 = body[-7]
    # Inside: addi(3, 3) -> 4, then `continue 4` (opcode 0x11, no results, 1 operand).
    assert bytes([0x03, i32, 0x00, 0x03, 0x03, 0x11, 0x00, 0x01, 0x04]) in body
    # After: addi(loop result 2, zero 1), then `return` (0x5c, no results, no operands).
    assert body.endswith(bytes([0x03, i32, 0x00, 0x02, 0x01, 0x5C, 0x00, 0x00]))
    assert after is not None


def _module_with(op_name: str, **attrs: object) -> Module:
    b = Builder()
    b.entry("k", [])
    x = b.constant(1.0, TileType((16,), dt.f32))
    b.op(op_name, [x], [x.type], dict(attrs))
    b.return_()
    return b.module


def test_unknown_op_is_an_encode_error() -> None:
    with pytest.raises(EncodeError, match="no bytecode encoder for op `frobnicate`"):
        write_bytecode(_module_with("frobnicate"))


def test_bad_enum_is_an_encode_error() -> None:
    with pytest.raises(EncodeError, match="rounding_mode"):
        write_bytecode(_module_with("exp", rounding_mode="sideways"))


def test_op_newer_than_target_version_is_refused() -> None:
    b = Builder()
    b.entry("k", [])
    x = b.constant(1.0, TileType((16,), dt.f32))
    n = b.constant(2, TileType((16,), dt.i32))
    b.op("fpowi", [x, n], [x.type])
    b.return_()
    with pytest.raises(EncodeError, match=r"needs bytecode 13\.4\+"):
        write_bytecode(b.module, "13.3")
    assert write_bytecode(b.module, "13.4")


def test_use_outside_defining_region_is_refused() -> None:
    b = Builder()
    b.entry("k", [])
    zero = b.scalar_const(0, dt.i32)
    with b.for_(zero, zero, zero) as loop:
        leaked = b.binary("addi", loop.iv, zero)
    b.binary("addi", leaked, zero)
    b.return_()
    with pytest.raises(EncodeError, match="dominance"):
        write_bytecode(b.module)


def test_non_entry_function_is_refused() -> None:
    fn = Function("helper", [], Block(), is_entry=False)
    with pytest.raises(EncodeError, match="not an entry"):
        write_bytecode(Module("m", [fn]))


def test_inbounds_needs_13_4() -> None:
    b = Builder()
    p = b.entry("k", [sk.ptr(dt.f32)]).params
    tv = b.make_tensor_view(p[0], [64], [1])
    pv = b.make_partition_view(tv, [16])
    z = b.scalar_const(0, dt.i32)
    b.load_view(pv, [z], None, inbounds=(True,))
    b.return_()
    with pytest.raises(EncodeError, match="inbounds"):
        write_bytecode(b.module, "13.3")
    plain, inb = write_bytecode(b.module, "13.4"), write_bytecode(b.module, "13.5")
    assert plain and inb


def test_values_are_identity_hashed() -> None:
    # Two distinct values with equal types are distinct SSA values.
    a, c = Value(TileType((), dt.i32)), Value(TileType((), dt.i32))
    assert a != c and len({a, c}) == 2

"""tileiras failures become CompileErrors with the tool's log and, when tileiras names
one, the Python source line (from the Debug section we wrote)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sample_kernels as sk

from cutile import dtypes as dt
from cutile.backend.bytecode import write_bytecode
from cutile.backend.tileiras import (
    Tileiras,
    assemble,
    disassemble,
    parse_diagnostics,
    time_limit,
)
from cutile.errors import CompileError
from cutile.ir import Builder, Location, TileType
from cutile.ir.types import I32

F8 = dt.f8e4m3fn


def test_parse_mlir_location_error() -> None:
    log = (
        '#cuda_tile.di_loc<loc("/src/k.py":7:9) in #cuda_tile.di_subprogram<file = <"k.py" in '
        "\"/src\">, line = 3>>: error: Incompatibility with architecture 'sm_80': bad type\n"
        "error: failed to compile Tile IR program\n"
    )
    assert parse_diagnostics(log) == (
        "Incompatibility with architecture 'sm_80': bad type",
        "/src/k.py:7:9",
    )


def test_parse_plain_loc_error() -> None:
    assert parse_diagnostics('loc("/a/b.py":12:3): error: oops\n') == ("oops", "/a/b.py:12:3")


def test_parse_rustc_style_error() -> None:
    log = 'error[E1]: too many registers\n  --> "/src/k.py":3:1\n   |\n'
    assert parse_diagnostics(log) == ("too many registers", "/src/k.py:3:1")


def test_parse_error_without_location() -> None:
    log = "error: error at offset 14: bad section\nerror: input does not correspond\n"
    assert parse_diagnostics(log) == ("error at offset 14: bad section", None)


def test_warnings_do_not_become_the_message() -> None:
    log = (
        'warning[]: High register usage\n  --> "/src/k.py":3:1\n'
        "error: failed to compile Tile IR program\n"
    )
    assert parse_diagnostics(log) == ("failed to compile Tile IR program", None)


@pytest.mark.tileiras
def test_invalid_bytecode_is_a_compile_error(tool: Tileiras) -> None:
    with pytest.raises(CompileError) as err:
        assemble(b"\x7fTileIR\x00\x0d\x03\x00\x00\x02\x05junk", "sm_90", tool=tool)
    e = err.value
    assert e.code == "CT7004" and e.location is None
    assert "section length" in e.message
    assert "input does not correspond to Tile IR bytecode" in e.log
    assert "--gpu-name sm_90" in e.log  # the command line is part of the log


@pytest.mark.tileiras
def test_truncated_bytecode_is_a_compile_error(tool: Tileiras) -> None:
    data = write_bytecode(sk.vector_add_f32())
    with pytest.raises(CompileError) as err:
        assemble(data[: len(data) // 2], "sm_90", tool=tool)
    assert err.value.code == "CT7004"


@pytest.mark.tileiras
def test_type_error_found_by_tileiras_reports_its_message(tool: Tileiras) -> None:
    b = Builder()
    b.entry("bad", [])
    x = b.constant(1, TileType((16,), dt.i32))
    b.op("addf", [x, x], [x.type], {"rounding_mode": "nearest_even"})  # addf on integers
    b.return_()
    with pytest.raises(CompileError, match=r"'cuda_tile\.addf' op operand #0 must be"):
        assemble(write_bytecode(b.module), "sm_90", tool=tool)


def f8_on_sm80() -> bytes:
    """f8 tiles are fine for sm_90 but not sm_80: tileiras rejects the op during
    compilation and names its location."""
    b = Builder()
    fn = b.entry("f8", [sk.ptr(F8), I32], loc=Location("/src/f8.py", 3, 0, "f8"))
    with b.location(Location("/src/f8.py", 7, 8, "f8")):
        tv = b.make_tensor_view(fn.params[0], [fn.params[1], 64], [64, 1])
        pv = b.make_partition_view(tv, [64, 64])
        zero = b.scalar_const(0, dt.i32)
        x, _ = b.load_view(pv, [zero, zero], None)
    with b.location(Location("/src/f8.py", 9, 12, "f8")):
        acc = b.mmaf(x, x, b.constant(0.0, TileType((64, 64), dt.f32)))
        b.print_("%f", [acc])
        b.return_()
    return write_bytecode(b.module)


@pytest.mark.tileiras
def test_python_location_is_recovered(tool: Tileiras) -> None:
    data = f8_on_sm80()
    assert assemble(data, "sm_90", tool=tool)[:4] == b"\x7fELF"
    with pytest.raises(CompileError) as err:
        assemble(data, "sm_80", tool=tool)
    e = err.value
    assert e.location == str(Location("/src/f8.py", 7, 8))  # 1-based column, as printed
    assert "sm_80" in e.message
    assert f"--> {e.location}" in str(e)


@pytest.mark.tileiras
def test_timeout_is_a_compile_error(tool: Tileiras) -> None:
    # A 2**20-element tile round trip keeps tileiras busy for minutes.
    b = Builder()
    fn = b.entry("slow", [sk.ptr(dt.f32), I32])
    tv = b.make_tensor_view(fn.params[0], [fn.params[1]], [1])
    pv = b.make_partition_view(tv, [1 << 20])
    zero = b.scalar_const(0, dt.i32)
    x, t = b.load_view(pv, [zero], None)
    b.store_view(x, pv, [zero], t)
    b.return_()
    with pytest.raises(CompileError) as err:
        assemble(write_bytecode(b.module), "sm_90", tool=tool, timeout=1.0)
    assert err.value.code == "CT7005"
    assert "CUTILE_TILEIRAS_TIMEOUT" in str(err.value)


@pytest.mark.tileiras
def test_disassembler_rejects_garbage(tool: Tileiras) -> None:
    if not tool.disassembler.exists():   # a packed toolchain may carry tileiras alone
        pytest.skip(f"no tileirdisasm next to {tool.path}")
    with pytest.raises(CompileError, match="tileirdisasm could not read"):
        disassemble(b"\x7fTileIR\x00garbage", tool=tool)


def test_missing_disassembler_is_reported(tmp_path: Path) -> None:
    fake = tmp_path / "tileiras"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    tool = Tileiras(fake, "CUTILE_TILEIRAS", {})
    with pytest.raises(CompileError) as err:
        disassemble(b"", tool=tool)
    assert err.value.code == "CT7006"


def test_a_time_limit_stops_tileiras_and_names_what_raises_it(tmp_path: Path) -> None:
    """`time_limit` (the autotuner's per-candidate `compile_timeout`) stops a tileiras that
    runs past it with CT7005 naming the limit to raise; outside the block, an assemble
    has the usual limit and hint again."""
    slow = tmp_path / "tileiras"
    slow.write_text("#!/bin/sh\nsleep 60\n")
    slow.chmod(0o755)
    tool = Tileiras(slow, "CUTILE_TILEIRAS", {})
    start = time.perf_counter()
    with time_limit(0.5, "`compile_timeout`"), pytest.raises(CompileError) as err:
        assemble(b"", "sm_90", tool=tool)
    assert time.perf_counter() - start < 30
    assert err.value.code == "CT7005"
    assert "within 0.5 s" in str(err.value) and "`compile_timeout` raises" in str(err.value)
    with pytest.raises(CompileError) as err:
        assemble(b"", "sm_90", tool=tool, timeout=0.3)
    assert "CUTILE_TILEIRAS_TIMEOUT raises" in str(err.value)
    with time_limit(None, "`compile_timeout`"), pytest.raises(CompileError) as err:
        assemble(b"", "sm_90", tool=tool, timeout=0.3)   # None and an explicit timeout
    assert "within 0.3 s" in str(err.value)


def test_a_hanging_or_broken_tool_is_a_compile_error(tmp_path: Path) -> None:
    """A tileiras that never answers `--version` (CT7003), and one that cannot be started
    at all (CT7004), are typed errors, not a raw subprocess exception."""
    from cutile.backend.tileiras import _query

    hung = tmp_path / "hung" / "tileiras"
    hung.parent.mkdir()
    hung.write_text("#!/bin/sh\nsleep 60\n")
    hung.chmod(0o755)
    with pytest.raises(CompileError) as err:
        _query(Tileiras(hung, "CUTILE_TILEIRAS", {}), "--version", timeout=0.5)
    assert err.value.code == "CT7003" and "did not answer within 0.5 s" in str(err.value)
    broken = tmp_path / "broken" / "tileiras"
    broken.parent.mkdir()
    broken.write_bytes(b"\x00\x01 not a program")
    broken.chmod(0o755)
    with pytest.raises(CompileError) as err:
        assemble(b"", "sm_90", tool=Tileiras(broken, "CUTILE_TILEIRAS", {}), timeout=5)
    assert err.value.code == "CT7004" and "could not run" in str(err.value)

"""Per-op round trip: an entry using the op is written, `tileirdisasm` reads it back, and
the op with its attributes must appear. `tileirdisasm` verifies the module as it reads it,
so a field out of place fails here, not only a wrong opcode."""

from __future__ import annotations

import pytest
import sample_kernels as sk

from cutile.backend.bytecode import ENCODERS, SUPPORTED_VERSIONS, BytecodeVersion, write_bytecode
from cutile.backend.tileiras import Tileiras, assemble, disassemble
from cutile.ir.verify import check_module

CASES = {c.name: c for c in sk.OP_CASES}


def test_every_encoder_is_exercised() -> None:
    covered: set[str] = set()
    for case in sk.OP_CASES:
        covered |= sk.ops_in(case.module())
    assert set(ENCODERS) - covered == set()


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases_verify(name: str) -> None:
    assert check_module(CASES[name].module()) == []


@pytest.mark.tileiras
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_round_trips_through_tileirdisasm(
    name: str, version: BytecodeVersion, tool: Tileiras
) -> None:
    case = CASES[name]
    if version < BytecodeVersion.parse(case.since):
        pytest.skip(f"{name} needs {case.since}")
    text = disassemble(write_bytecode(case.module(), version), tool=tool)
    missing = [e for e in case.expect if e not in text]
    assert not missing, f"missing {missing} in:\n{text}"


@pytest.mark.tileiras
def test_all_op_cases_assemble_for_sm_90(tool: Tileiras) -> None:
    # One module holding every case's body would hide which op failed; assembling each
    # small entry is quick (about 0.1 s each).
    for case in sk.OP_CASES:
        if case.since != "13.3":
            continue
        cubin = assemble(write_bytecode(case.module()), "sm_90", tool=tool)
        assert cubin[:4] == b"\x7fELF", case.name


@pytest.mark.tileiras
def test_new_ops_assemble_at_13_5(tool: Tileiras) -> None:
    for case in sk.OP_CASES:
        if case.since == "13.4":
            cubin = assemble(write_bytecode(case.module(), "13.5"), "sm_90", tool=tool)
            assert cubin[:4] == b"\x7fELF", case.name


@pytest.mark.tileiras
def test_debug_locations_reach_the_disassembler(tool: Tileiras) -> None:
    text = disassemble(write_bytecode(sk.matmul_f16()), tool=tool, debug_info=True)
    assert 'loc("/src/kernels/sample.py":34:9)' in text  # mmaf: line 34, column 8 (0-based)
    assert 'di_file<"sample.py" in "/src/kernels">' in text
    assert 'name = "matmul", linkageName = "matmul"' in text

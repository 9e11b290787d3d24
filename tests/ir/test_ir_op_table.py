"""The op table (`cutile/ir/op_table.py`) describes each Tile IR op once; every other reader
agrees with it: the bytecode encoders (registered by name, opcode and version from the
table), the verifier's per-op rules, the printer, the interpreter, and the builder and the
lowering (which create only table ops, through the builder)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from cutile import dtypes as dt
from cutile.backend.bytecode import ENCODERS, SUPPORTED_VERSIONS, BytecodeVersion
from cutile.ir import Builder, Module, TileType
from cutile.ir.op_table import OPS
from cutile.ir.verify import check_module

PKG = Path(__file__).resolve().parents[2] / "python" / "cutile"


def test_every_op_has_one_encoder_with_the_tables_opcode_and_version() -> None:
    importlib.import_module("cutile.backend.bytecode.writer")  # loads the encoders
    assert set(ENCODERS) == set(OPS)
    for name, spec in ENCODERS.items():
        assert (spec.opcode, spec.since) == (OPS[name].opcode, OPS[name].since), name
    opcodes = [d.opcode for d in OPS.values()]
    assert len(opcodes) == len(set(opcodes)), "two ops share an opcode"
    newest = max(SUPPORTED_VERSIONS)
    assert all(BytecodeVersion.parse(d.since) <= newest for d in OPS.values())


def test_the_verifier_printer_and_interpreter_cover_every_op() -> None:
    from cutile.interpreter import (  # noqa: F401 - fill the handler table
        machine,
        ops_arith,
        ops_control,
        ops_convert,
        ops_memory,
        ops_reduce,
        ops_shape,
    )
    from cutile.interpreter.registry import HANDLERS, TERMINATORS
    from cutile.ir.printer import _OP_PRINTERS
    from cutile.ir.rules import RULES

    assert set(RULES) == set(OPS)
    assert set(_OP_PRINTERS) == set(OPS)
    assert set(HANDLERS) | set(TERMINATORS) == set(OPS)


# `.op("name"`, `.binary("name"`, ... : every op name the builder and the lowering write
_CREATES = re.compile(r'\.(?:op|binary|unary|convert|cmp)\(\s*"(\w+)"')


def test_the_builder_and_the_lowering_create_only_table_ops() -> None:
    files = [PKG / "ir" / "builder.py", *(PKG / "lowering").rglob("*.py")]
    created: dict[str, str] = {}
    for f in files:
        text = f.read_text()
        for name in _CREATES.findall(text):
            created.setdefault(name, f.name)
        if f.parent.name != "ir":
            # the lowering builds ops through the builder, never by hand
            assert not re.search(r"(?<![\w.])Op\(", text), f"{f.name} constructs an Op"
    unknown = {n: f for n, f in created.items() if n not in OPS}
    assert not unknown, unknown
    assert len(created) > 40  # the pattern still finds the builder's calls


def _module_with(build: object) -> Module:
    b = Builder(Module("m"))
    fn = b.entry("k", [], None)
    with b.at(fn.body):
        build(b)  # type: ignore[operator]
        b.return_()
    return b.module


@pytest.mark.parametrize(("build", "needle"), [
    (lambda b: b.op("addf", [b.constant(1.0, TileType((), dt.f32))] * 2,
                    [TileType((), dt.f32)], {"rounding_mode": "nearest_even",
                                             "flush_to_zero": False, "fast": True}),
     "`addf` has no attribute `fast`"),
    (lambda b: b.op("negf", [b.constant(1.0, TileType((), dt.f32))] * 2,
                    [TileType((), dt.f32)]),
     "`negf` takes 1 operands, got 2"),
])
def test_the_verifier_holds_ops_to_their_row(build: object, needle: str) -> None:
    problems = [p.message for p in check_module(_module_with(build))]
    assert any(needle in p for p in problems), problems


def test_every_impure_op_is_known_to_touch_memory_or_not() -> None:
    """A PDL kernel orders every op of `MEMORY_OPS` after its grid-dependency wait
    (`lowering/pdl.py`); a new op that touches memory must land there, not slip through."""
    from cutile.ir.op_table import IMPURE, MEMORY_OPS, NO_MEMORY_IMPURE

    assert MEMORY_OPS.isdisjoint(NO_MEMORY_IMPURE)
    assert IMPURE == MEMORY_OPS | NO_MEMORY_IMPURE
    # each memory op takes an optional token, the last operand, marked by `has_token`
    assert all("has_token" in OPS[n].attrs for n in MEMORY_OPS)

"""The text printer: a golden example, float spelling, and agreement with `tileirdisasm`
on every sample kernel and op case once SSA names are normalized."""

from __future__ import annotations

import difflib
import itertools
import re

import pytest
import sample_kernels as sk

from cutile import dtypes as dt
from cutile.backend.bytecode import write_bytecode
from cutile.backend.tileiras import Tileiras, disassemble
from cutile.ir import Builder, Module
from cutile.ir.printer import format_float, print_module

_DEF_LHS = re.compile(r"^\s*((?:%[\w]+(?::\d+)?)(?:, %[\w]+)*) = ")
_NAME = re.compile(r"%([\w]+)(#\d+|:\d+)?")


def normalize(text: str) -> str:
    """Rename SSA values to %v0, %v1, ... in definition order and collapse whitespace.

    A name is (re)bound where it is defined: results left of `=`, typed region arguments
    (`%x: type`), a `for` induction variable (`%i in (`) and `iter_values(%x = ...)`
    bindings; other occurrences are uses. MLIR reuses names across sibling regions, so
    binding at definitions (not first sight) keeps both texts aligned.
    """
    mapping: dict[str, str] = {}
    fresh = itertools.count()
    lines = []
    for line in text.splitlines():
        line = re.sub(r"\s*loc\([^)]*\)", "", line)
        if not line.strip() or line.lstrip().startswith(("//", "#")):
            continue
        lhs = _DEF_LHS.match(line)
        lhs_end = lhs.end(1) if lhs else -1
        out, pos = [], 0
        for tok in _NAME.finditer(line):
            name, suffix = tok.group(1), tok.group(2) or ""
            rest = line[tok.end() :]
            is_def = (
                tok.start() < lhs_end
                or (rest.startswith(": ") and not suffix)
                or rest.startswith(" in (")
                or (rest.startswith(" = ") and "iter_values(" in line[: tok.start()])
            )
            if is_def:
                mapping[name] = f"%v{next(fresh)}"
            out.append(line[pos : tok.start()] + mapping.get(name, f"%?{name}") + suffix)
            pos = tok.end()
        out.append(line[pos:])
        lines.append(re.sub(r"\s+", " ", "".join(out)).strip())
    return "\n".join(lines)


def test_golden_vector_add() -> None:
    text = print_module(sk.vector_add_f32(tile=256))
    lines = text.splitlines()
    assert lines[0] == (
        "entry @vector_add(%arg0: tile<ptr<f32>>, %arg1: tile<i32>, %arg2: tile<i32>, "
        "%arg3: tile<ptr<f32>>, %arg4: tile<i32>, %arg5: tile<i32>, %arg6: tile<ptr<f32>>, "
        "%arg7: tile<i32>, %arg8: tile<i32>) {"
    )
    assert lines[1:5] == [
        "  %0 = make_token : token",
        "  %1 = assume div_by<16>, %arg0 : tile<ptr<f32>>",
        "  %2 = assume bounded<0, ?>, %arg1 : tile<i32>",
        "  %3 = make_tensor_view %1, shape = [%2], strides = [1] : tile<i32> -> "
        "tensor_view<?xf32, strides=[1]>",
    ]
    assert "  %4 = make_partition_view %3 : partition_view<tile=(256), " in text
    assert "  %13, %14, %15 = get_tile_block_id : tile<i32>" in lines
    assert (
        "  %16, %17 = load_view_tko weak %4[%13] token = %0 : partition_view<tile=(256), "
        "tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<256xf32>, token"
    ) in lines
    assert "  %20 = addf %16, %18 : tile<256xf32>" in lines
    assert lines[-2:] == ["  return", "}"]


def test_regions_print_nested_and_hide_empty_terminators() -> None:
    b = Builder()
    b.entry("k", [])
    zero = b.scalar_const(0, dt.i32)
    with b.for_(zero, zero, zero):
        with b.if_(b.cmp("cmpi", "equal", zero, zero)) as branch, branch.then_():
            b.print_("hi")
    b.return_()
    assert print_module(b.module).splitlines()[2:9] == [
        "  for %1 in (%0 to %0, step %0) : tile<i32> {",
        "    %2 = cmpi equal %0, %0, signed : tile<i32> -> tile<i1>",
        "    if %2 {",
        '      %3 = print_tko "hi" -> token',
        "    } else {",
        "    }",
        "  }",
    ]


@pytest.mark.parametrize(
    ("value", "dtype", "text"),
    [
        (1.5, dt.f32, "1.500000e+00"),
        (0.1, dt.f32, "1.000000e-01"),
        (-2.5, dt.f16, "-2.500000e+00"),
        (65504.0, dt.f16, "6.550400e+04"),
        (3.140625, dt.bf16, "3.140630e+00"),  # six significant digits, ties away from zero
        (0.0, dt.f32, "0.000000e+00"),
        (float("-inf"), dt.f32, "0xFF800000"),
        (float("inf"), dt.f16, "0x7C00"),
        (float("nan"), dt.f32, "0x7FC00000"),
        (float("-inf"), dt.bf16, "0xFF80"),
    ],
)
def test_float_spelling(value: float, dtype: dt.DType, text: str) -> None:
    assert format_float(value, dtype) == text


def _compare(module: Module, version: str, tool: Tileiras) -> None:
    ours = normalize(print_module(module))
    theirs = normalize(disassemble(write_bytecode(module, version), tool=tool))
    diff = "\n".join(difflib.unified_diff(theirs.splitlines(), ours.splitlines(),
                                          "tileirdisasm", "printer", lineterm=""))  # fmt: skip
    assert ours == theirs, diff


@pytest.mark.tileiras
@pytest.mark.parametrize("name", sorted(sk.REPRESENTATIVE))
def test_printer_matches_disassembler_on_kernels(name: str, tool: Tileiras) -> None:
    _compare(sk.REPRESENTATIVE[name](), "13.3", tool)


@pytest.mark.tileiras
@pytest.mark.parametrize("case", sk.OP_CASES, ids=lambda c: c.name)
def test_printer_matches_disassembler_on_op_cases(case: sk.OpCase, tool: Tileiras) -> None:
    _compare(case.module(), "13.5", tool)


def test_normalize_binds_names_at_definitions() -> None:
    text = "%a = x\n(%r: t) {\n%b = y %r, %a\n}\n(%r: t) {\n%b = y %r\n}"
    assert normalize(text) == "%v0 = x\n(%v1: t) {\n%v2 = y %v1, %v0\n}\n(%v3: t) {\n%v4 = y %v3\n}"

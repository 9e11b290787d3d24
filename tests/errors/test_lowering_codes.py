"""Every lowering error code (CT3xxx) has a UI test and a doc page (issue 8): a kernel in
`tests/ui/lowering/` that raises it, with the whole rendered diagnostic next to it, and a
long explanation (`python -m cutile explain CODE`) saying what it means, with an example and
the fix. The example of every page is itself a test: it raises the code it shows, with the
message it quotes (as rustc's `compile_fail,E0499` blocks). Codes no kernel can raise any
more are listed below, and their pages say so; they keep their numbers, so that a code never
changes meaning."""

from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

import cutile
from cutile.core import Const, Mut, Tensor, f32
from cutile.error_codes import PYTHON_CODES, all_codes, explain
from cutile.errors import KernelCheckError, LaunchError
from cutile.explanations import long_text
from cutile.frontend.signatures import table

UI = Path(__file__).resolve().parents[1] / "ui" / "lowering"
LOWERING = sorted(c for c in all_codes() if c.startswith("CT3"))

# Codes nothing raises from user input in this release (and why).
UNREACHABLE = {
    # A launch, `kernel.compile()` and `cutile compile -D` refuse a missing Const first
    # (CT6104, CT8013); only a lowering asked for with a hand-built Specialization meets it.
    "CT3011": "no value for a `Const`",
    # No operation of the op table has `lowered: false` (tests/frontend/test_op_table.py).
    "CT3030": "an operation the compiler does not lower yet",
    # The checker refuses a chain of device calls past the depth it follows first (CT1012).
    "CT3019": "device function calls nested too deep",
}
# Pages whose example is cut short (the whole kernel is the UI test).
ABBREVIATED: set[str] = set()


def ui_codes() -> set[str]:
    return {p.name.split("_", 1)[0] for p in UI.glob("CT*.py")}


def test_every_lowering_code_has_a_ui_test_or_is_listed_unreachable() -> None:
    assert len(LOWERING) >= 50
    assert sorted(ui_codes() | set(UNREACHABLE)) == LOWERING
    assert ui_codes().isdisjoint(UNREACHABLE)


@pytest.mark.parametrize("code", LOWERING)
def test_every_lowering_code_has_a_doc_page(code: str) -> None:
    text = explain(code)
    assert text is not None
    body = " ".join(text.split("\n", 1)[1].split())
    assert "Example" in body, f"{code}'s page has no example"
    assert "Fix:" in body or "help:" in body, f"{code}'s page does not say how to fix it"
    assert (code in UNREACHABLE) == ("cannot be raised in this release" in body), code


def test_the_unreachable_codes_stay_unreachable() -> None:
    # CT3030: an op with `lowered: false` would make it reachable (then give it a UI test).
    ops = [*table().functions.values(), *table().methods.values()]
    assert [s.name for s in ops if not s.lowered] == []

    # CT3011: a missing Const is refused before the lowering runs.
    @cutile.entry
    def k(z: Mut[Tensor[f32, [16]]], S: Const[float]):
        z.store(z.load() * S)

    with pytest.raises(LaunchError) as info:
        k.specialization({})
    assert info.value.code == "CT6104"


def example_of(code: str) -> str:
    text = long_text(code)
    assert text is not None
    return textwrap.dedent(text.split("Example:")[1].split("Fix:")[0].strip("\n"))


@pytest.mark.parametrize("code", sorted(c for c in PYTHON_CODES if c.startswith("CT3")
                                        and c not in UNREACHABLE and c not in ABBREVIATED))
def test_the_example_raises_its_code(code: str, tmp_path: Path) -> None:
    example = example_of(code)
    path = tmp_path / f"example_{code}.py"
    path.write_text("import cutile\nfrom cutile.core import *\n\n" + example + "\n")
    spec = importlib.util.spec_from_file_location(f"example_{code}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    with pytest.raises(KernelCheckError) as info:
        spec.loader.exec_module(mod)  # an example may build the kernel itself (`k.compile`)
        mod.k.check()
        mod.k.lowered(mod.k.specialization({}))
    assert info.value.codes == [code]
    quoted = re.search(rf"error\[{code}\]: (.*?)(?:\n|$)", example)
    assert quoted is not None, f"{code}'s example does not quote its message"
    # a quote cut short ends with "..."
    assert quoted.group(1).strip().removesuffix("...").rstrip(", ") in str(info.value)

"""UI tests of the compiler's diagnostics, as rustc's `tests/ui`: each `lowering/CODE_slug.py`
holds a kernel `k` that the compiler refuses with CODE, and `CODE_slug.stderr` next to it the
whole diagnostic a user reads (code, message, the source line with its caret, notes and
the help line every one has), compared byte for byte. The line the diagnostic points at
ends with `#~ ERROR`, so a caret that moves fails even where the expected file would be
blessed. Paths read `$DIR`.

A case needs `Const` values when its first lines say `# consts: B=16 S=48`; the kernel is
checked (`k.check()`, as `python -m cutile check` does) and lowered for them (as
`k.compile(...)` does).

    CUTILE_BLESS=1 python -m pytest tests/ui     # rewrite the .stderr files
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

from cutile.errors import KernelCheckError

HERE = Path(__file__).resolve().parent
CASES = sorted(HERE.glob("*/CT*.py"))
BLESS = os.environ.get("CUTILE_BLESS") == "1"
MARK = "#~ ERROR"


def case_code(case: Path) -> str:
    return case.name.split("_", 1)[0]


def consts_of(text: str) -> dict[str, int]:
    m = re.search(r"^# consts: (.*)$", text, re.M)
    if m is None:
        return {}
    return {k: int(v) for k, v in (item.split("=") for item in m.group(1).split())}


def diagnose(case: Path) -> KernelCheckError:
    """The error the compiler raises for the case's kernel."""
    spec = importlib.util.spec_from_file_location(f"ui_{case.stem}", case)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(KernelCheckError) as info:
        mod.k.check()
        mod.k.lowered(mod.k.specialization(consts_of(case.read_text())))
    return info.value


def normalized(err: KernelCheckError, case: Path) -> str:
    return str(err).replace(str(case.parent), "$DIR").rstrip("\n") + "\n"


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_ui(case: Path) -> None:
    err = diagnose(case)
    assert err.codes == [case_code(case)], str(err)
    marked = [i for i, line in enumerate(case.read_text().splitlines(), 1)
              if line.rstrip().endswith(MARK)]
    primary = err.diagnostics[0].primary
    assert Path(primary.file) == case, f"points into {primary.file}"
    assert marked == [primary.line], f"points at line {primary.line}, marked {marked}\n{err}"
    assert err.diagnostics[0].help, f"no hint:\n{err}"  # every user mistake says what to do
    got = normalized(err, case)
    expected = case.with_suffix(".stderr")
    if BLESS:
        expected.write_text(got)
        return
    assert expected.is_file(), f"no {expected.name}: run with CUTILE_BLESS=1"
    assert expected.read_text() == got, f"{expected.name} differs:\n{got}"


def test_every_expected_file_has_its_case() -> None:
    stale = [p.name for p in HERE.glob("*/*.stderr") if not p.with_suffix(".py").is_file()]
    assert stale == []
    assert len(CASES) >= 50

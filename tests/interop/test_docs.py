"""The code blocks of docs/interop.md run and pass their own assertions: those with numpy
alone here on the interpreter, those with torch where torch is installed (the `gpu` tests
run the torch ones on a GPU)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "interop.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
BLOCKS = BLOCK.findall(DOC.read_text())


def test_the_guide_has_its_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("code", [b for b in BLOCKS if "torch" not in b],
                         ids=lambda c: c.splitlines()[-1][:40])
def test_numpy_block_runs(code: str, tmp_path: Path) -> None:
    path = tmp_path / "interop_block.py"  # a real file: cutile reads a kernel's source
    path.write_text(code)
    runpy.run_path(str(path), run_name="__guide__")


@pytest.mark.gpu
@pytest.mark.parametrize("code", [b for b in BLOCKS if "import torch" in b])
def test_torch_block_runs(code: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "interop_torch_block.py"
    path.write_text(code)
    runpy.run_path(str(path), run_name="__guide__")

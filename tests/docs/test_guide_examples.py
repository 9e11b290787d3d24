"""Every Python code block of docs/dsl.md runs and passes its own assertions (on the CPU
interpreter without a GPU): the guide cannot drift from the language."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "dsl.md"
BLOCK = re.compile(r"^### (?P<title>.+?)$|^```python\n(?P<code>.*?)^```$", re.M | re.S)


def blocks() -> list[tuple[str, str]]:
    out, title = [], "intro"
    for m in BLOCK.finditer(GUIDE.read_text()):
        if m.group("title"):
            title = m.group("title")
        else:
            out.append((title, m.group("code")))
    return out


def test_the_guide_has_its_tutorial() -> None:
    titles = [t for t, _ in blocks()]
    assert len(titles) >= 6, titles


@pytest.mark.parametrize("title,code", blocks(), ids=[t for t, _ in blocks()])
def test_guide_block_runs(title: str, code: str, tmp_path: Path) -> None:
    # A real file: cutile reads a kernel's source from its module.
    path = tmp_path / (re.sub(r"\W+", "_", title).strip("_").lower() + ".py")
    path.write_text(code)
    runpy.run_path(str(path), run_name="__guide__")

"""Every Python code block of the language guide (docs/tutorial.md, dsl.md, autotuning.md,
unsafe.md) runs and passes its own assertions (on the CPU interpreter without a GPU): the
guide cannot drift from the language."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ("tutorial.md", "dsl.md", "autotuning.md", "unsafe.md")
BLOCK = re.compile(r"^#{2,3} (?P<title>.+?)$|^```python\n(?P<code>.*?)^```$", re.M | re.S)


def blocks(page: str) -> list[tuple[str, str]]:
    """(the heading above it, the code) of each Python block of `page`."""
    out, title = [], "intro"
    for m in BLOCK.finditer((DOCS / page).read_text()):
        if m.group("title"):
            title = m.group("title")
        else:
            out.append((title, m.group("code")))
    return out


ALL = [(page, title, code) for page in PAGES for title, code in blocks(page)]


def test_the_tutorial_has_its_programs() -> None:
    titles = [t for t, _ in blocks("tutorial.md")]
    assert len(titles) >= 7, titles


def test_every_page_of_the_guide_has_runnable_blocks() -> None:
    assert {page for page, _, _ in ALL} == set(PAGES) - {"autotuning.md"}


def test_no_python_block_is_left_unfenced() -> None:
    """A block whose opening fence got lost renders as prose and never runs here."""
    for page in PAGES:
        text = (DOCS / page).read_text()
        prose = re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S)
        stray = [ln for ln in prose.splitlines()
                 if re.match(r"(import |from \S+ import |@cutile\.|def \w+\()", ln)]
        assert not stray, f"{page}: code outside a fence: {stray}"


@pytest.mark.parametrize("page,title,code", ALL, ids=[f"{p}:{t}" for p, t, _ in ALL])
def test_guide_block_runs(page: str, title: str, code: str, tmp_path: Path) -> None:
    # A real file: cutile reads a kernel's source from its module.
    path = tmp_path / (re.sub(r"\W+", "_", f"{page}_{title}").strip("_").lower() + ".py")
    path.write_text(code)
    runpy.run_path(str(path), run_name="__guide__")

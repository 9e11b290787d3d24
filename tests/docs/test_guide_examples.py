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


ROOT = DOCS.parent
MARKDOWN = sorted([*DOCS.glob("*.md"), *DOCS.glob("errors/*.md"), ROOT / "README.md",
                   *ROOT.glob("examples/**/README.md")])


@pytest.mark.parametrize("doc", MARKDOWN, ids=[str(p.relative_to(ROOT)) for p in MARKDOWN])
def test_no_code_is_left_unfenced(doc: Path) -> None:
    """A block whose opening fence got lost (a merge once did it to dsl.md) renders as
    prose, swallows the text after it into a code block, and never runs as a test."""
    text = doc.read_text()
    assert text.count("```") % 2 == 0, f"{doc.name}: an unpaired code fence"
    prose = re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S)
    stray = [ln for ln in prose.splitlines()
             if re.match(r"(import |from \S+ import |@cutile\.|def \w+\()", ln)]
    assert not stray, f"{doc.name}: code outside a fence: {stray}"


@pytest.mark.parametrize("page,title,code", ALL, ids=[f"{p}:{t}" for p, t, _ in ALL])
def test_guide_block_runs(page: str, title: str, code: str, tmp_path: Path) -> None:
    # A real file: cutile reads a kernel's source from its module.
    path = tmp_path / (re.sub(r"\W+", "_", f"{page}_{title}").strip("_").lower() + ".py")
    path.write_text(code)
    runpy.run_path(str(path), run_name="__guide__")

"""One corpus, two producers: each corpus kernel's `.py` goes through the real frontend
(`EntryKernel.kast_json()`), and the checker must report the expected codes and render
exactly the blessed `.stderr` (the hand-written generator `gen_kast.py` made the checked-in
JSON; this test keeps the two producers in agreement)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from cutile import _native

CORPUS = Path(__file__).resolve().parents[2] / "rust" / "cutile-check" / "tests" / "corpus"
KERNELS = sorted(p for p in CORPUS.glob("*.py") if not p.name.startswith("gen_"))
UNSAFE_ONLY = (
    "load_ptr",
    "store_ptr",
    "atomic_",
    "scatter",
    "gather",
    "int_to_ptr",
    "ptr_offset",
    "assume_",
)


def frontend_json(py: Path) -> str:
    spec = importlib.util.spec_from_file_location(f"corpus_{py.stem}", py)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    entry = next(v for v in vars(mod).values() if hasattr(v, "__cutile_entry__"))
    return str(entry.kast_json())


@pytest.mark.parametrize("py", KERNELS, ids=lambda p: p.stem)
def test_frontend_and_checker_agree(py: Path) -> None:
    frontend = pytest.importorskip("cutile.frontend.to_kast")
    del frontend
    try:
        js = frontend_json(py)
    except Exception as e:  # the frontend refuses some unsafe-only DSL names for now
        text = str(e)
        if "CT0002" in text and any(name in text for name in UNSAFE_ONLY):
            pytest.skip(
                f"frontend does not resolve this unsafe-only op yet: {text.splitlines()[0]}"
            )
        raise
    want = [
        c for c in re.search(r"^# expect:(.*)$", py.read_text(), re.M).group(1).split() if c != "ok"
    ]
    result = _native.check_kernel(js)
    assert [d.code for d in result.diagnostics] == want
    if want:
        path = json.loads(js)["files"][0]["path"]
        rendered = result.rendered().replace(path, f"$DIR/{py.name}")
        assert rendered == py.with_suffix(".stderr").read_text()

"""The corpus the Rust tests replay is the frontend's output: each corpus kernel's `.py` goes
through the real frontend, the JSON must equal the checked-in `.json` (regenerate with
`python rust/cutile-check/tests/corpus/gen_kast.py`), and the checker must report the
expected codes and render exactly the blessed `.stderr`."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from cutile import _native

CORPUS = Path(__file__).resolve().parents[2] / "rust" / "cutile-check" / "tests" / "corpus"
KERNELS = sorted(p for p in CORPUS.glob("*.py") if not p.name.startswith("gen_"))


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("corpus_gen_kast", CORPUS / "gen_kast.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


@pytest.mark.parametrize("py", KERNELS, ids=lambda p: p.stem)
def test_frontend_and_checker_agree(py: Path) -> None:
    js = GEN.kast_json(py)
    assert js == py.with_suffix(".json").read_text(), (
        f"{py.name}: the checked-in JSON is stale; run gen_kast.py"
    )
    want = [
        c for c in re.search(r"^# expect:(.*)$", py.read_text(), re.M).group(1).split() if c != "ok"
    ]
    result = _native.check_kernel(js)
    assert [d.code for d in result.diagnostics] == want
    if want:
        path = json.loads(js)["files"][0]["path"]
        rendered = result.rendered().replace(path, f"$DIR/{py.name}")
        assert rendered == py.with_suffix(".stderr").read_text()

"""`check_kernel`, `render_diagnostics` and `list_error_codes` against the corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cutile import _native, errors
from cutile.frontend import kast

CORPUS = Path(__file__).resolve().parents[2] / "rust" / "cutile-check" / "tests" / "corpus"
KERNELS = sorted(CORPUS.glob("*.json"))


def expected_codes(json_path: Path) -> list[str]:
    text = json_path.with_suffix(".py").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("# expect:"))
    return [c for c in line.split(":", 1)[1].split() if c != "ok"]


def test_constants() -> None:
    assert _native.KAST_SCHEMA == "cutile.kast"
    assert _native.KAST_VERSION == 3 == kast.VERSION


def test_corpus_is_large() -> None:
    assert len(KERNELS) >= 60


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_corpus_kernel(path: Path) -> None:
    result = _native.check_kernel(path.read_text())
    codes = [d.code for d in result.diagnostics]
    assert codes == expected_codes(path)
    assert result.ok == (not codes)
    for d in result.diagnostics:
        assert d.severity == "error"
        assert re.fullmatch(r"CT[0-9]{4}", d.code)
        assert d.message and not d.message[0].isupper() and not d.message.endswith(".")
        assert d.primary.line >= 1 and d.primary.lo <= d.primary.hi
        assert d.primary.file.endswith(path.stem + ".py")
        text = d.render()
        assert f"error[{d.code}]" in text and f":{d.primary.line}:{d.primary.col + 1}" in text
    for o in result.obligations:
        assert o.discharged in {"static", "launch", "device", "failed"}
        assert (o.predicate is not None) == (
            o.discharged in {"launch", "device"}
        ) or o.discharged == "failed"
    if codes:
        # The rendering matches the blessed .stderr up to the file path.
        stderr = path.with_suffix(".stderr").read_text()
        rendered = result.rendered().replace(
            str(json.loads(path.read_text())["files"][0]["path"]), f"$DIR/{path.stem}.py"
        )
        assert rendered == stderr


def test_use_after_move_labels() -> None:
    r = _native.check_kernel((CORPUS / "err_use_after_move.json").read_text())
    (d,) = r.diagnostics
    assert d.code == "CT1002"
    assert d.message == "use of moved mutable tensor `z`"
    assert d.primary.message == "value used here after move"
    assert [lab.message for lab in d.secondary] == ["value moved here"]
    assert d.help and "`" not in d.help[:1]
    assert "\x1b[" in d.render(color=True)
    assert "\x1b[" not in d.render()


def test_launch_predicates_are_reported() -> None:
    r = _native.check_kernel((CORPUS / "ok_store_index_transpose.json").read_text())
    assert r.ok
    (o,) = [o for o in r.obligations if o.kind == "store-index-injective"]
    assert o.discharged == "launch"
    assert o.predicate == "grid(1) <= grid(0) && grid(0) <= grid(1)"
    assert o.span.line == 10


def test_collision_names_two_blocks() -> None:
    r = _native.check_kernel((CORPUS / "err_store_collision.json").read_text())
    (d,) = r.diagnostics
    assert d.message == "blocks (0, 1) and (1, 0) both store to tile (1, 0) of `z`"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "not a JSON object"),
        ("[]", "not a JSON object"),
        ('{"schema": "other", "version": 1}', "schema is `other`"),
        ('{"schema": "cutile.kast", "version": 7}', "version 7"),
        ('{"schema": "cutile.kast", "version": 3}', "missing field"),
        ('{"schema": "cutile.kast", "version": 1}', "version 1 is not supported"),
        ('{"schema": "cutile.kast", "version": 2}', "version 2 is not supported"),
    ],
)
def test_malformed_input_raises_value_error(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        _native.check_kernel(text)


def test_mutated_documents_never_crash() -> None:
    base = (CORPUS / "ok_gemm.json").read_text()
    doc = json.loads(base)
    # Spans outside the file, unknown node kinds, wrong types: ValueError, never a crash.
    bad = json.loads(base)
    bad["functions"][0]["body"][0]["span"]["hi"] = 10**9
    with pytest.raises(ValueError):
        _native.check_kernel(json.dumps(bad))
    bad = json.loads(base)
    bad["functions"][0]["body"][0]["kind"] = "lambda"
    with pytest.raises(ValueError):
        _native.check_kernel(json.dumps(bad))
    for cut in range(0, len(base), max(1, len(base) // 50)):
        try:
            _native.check_kernel(base[:cut])
        except ValueError:
            pass
    assert _native.check_kernel(json.dumps(doc)).ok


def test_render_diagnostics_from_python() -> None:
    src = "@cutile.entry\ndef k(z):\n    lambda: 0\n"
    lo = src.index("lambda")
    doc = {
        "files": [{"path": "k.py", "source": src}],
        "diagnostics": [
            {
                "code": "CT0001",
                "severity": "error",
                "message": "unsupported syntax `lambda`",
                "primary": {
                    "span": {
                        "file": 0,
                        "lo": lo,
                        "hi": lo + 6,
                        "line": 3,
                        "col": 4,
                        "end_line": 3,
                        "end_col": 10,
                    },
                    "message": "not supported in a kernel",
                },
                "secondary": [],
                "notes": ["kernels are a subset of Python"],
                "help": "use a device function",
            }
        ],
    }
    text = _native.render_diagnostics(json.dumps(doc))
    assert text.splitlines()[:6] == [
        "error[CT0001]: unsupported syntax `lambda`",
        " --> k.py:3:5",
        "  |",
        "3 |     lambda: 0",
        "  |     ^^^^^^ not supported in a kernel",
        "  |",
    ]
    assert "= note: kernels are a subset of Python" in text
    assert "= help: use a device function" in text
    with pytest.raises(ValueError):
        _native.render_diagnostics("{}")


def test_list_error_codes() -> None:
    codes = _native.list_error_codes()
    assert len(codes) >= 25
    names = [c for c, _ in codes]
    assert names == sorted(names) and len(set(names)) == len(names)
    assert all(c[:3] in {"CT1", "CT2", "CT3", "CT4"} for c in names)
    for _code, summary in codes:
        assert summary and not summary.endswith(".")
    # Every kernel code is exercised by the corpus.
    used = {c for p in KERNELS for c in expected_codes(p)}
    assert set(names) <= used


def test_mapped_schedule_is_a_bijection() -> None:
    for grid in ([7], [5, 3], [2, 3, 4]):
        total = 1
        for g in grid:
            total *= g
        for nb in (1, 2, total):
            sched = _native.mapped_schedule(grid, nb, 2)
            tiles = [tuple(t) for per_block in sched for t in per_block]
            assert len(tiles) == len(set(tiles)) == total
    with pytest.raises(ValueError):
        _native.mapped_schedule([2, 2], 5)


def test_error_classes_are_the_package_ones() -> None:
    assert issubclass(errors.BorrowError, errors.CutileError)


def test_launch_predicates_are_facts_with_text() -> None:
    r = _native.check_kernel((CORPUS / "ok_gemm.json").read_text())
    preds = [o.predicate for o in r.obligations if o.discharged == "launch"]
    assert "grid(0) <= cdiv(dim(x, 0), BM)" in preds
    # the launcher evaluates the checker's typed predicates itself; nothing parses text
    assert not hasattr(_native, "eval_predicate")
    assert r.outputs == [("z", "partitioned")] and r.index_width == 32

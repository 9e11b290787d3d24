"""`benchmarks/speed_table.py` turns each benchmark's JSON into issue 8's table: the right
peer for each row, ratios in the right direction (a compile time is better when lower), a
target per row, and a missing part reported as missing (the timing itself needs the GPU)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import speed_table as st


def write(d: Path, part: str, data: Any) -> None:
    (d / f"{part}.json").write_text(json.dumps(data))


def test_rows_compare_with_the_right_peer_in_the_right_direction(tmp_path: Path) -> None:
    write(tmp_path, "gemm", [
        {"shape": [8192, 8192, 8192], "dtype": "f16", "cutile": {"a": {"tflops": 700.0}},
         "cublas": {"tflops": 650.0},
         "duel": {"config": "a", "cutile": 690.0, "cublas": 700.0}},
        {"shape": [1024, 1024, 1024], "dtype": "f16", "cutile": {"a": {"tflops": 240.0},
                                                                 "b": {"error": "x"}},
         "cublas": {"tflops": 200.0}},
    ])
    write(tmp_path, "compile", {"cutile": {"add": {"add": 0.2}},
                                "cutile_python": {"add": {"compile_s": 0.3}}})
    write(tmp_path, "norms", [
        {"op": "rmsnorm", "dtype": "bf16", "n": 16384, "plan": "p",
         "cutile": {"p": {"tbps": 3.6}, "q": {"tbps": 3.9}}, "torch": {"tbps": 3.0},
         "triton": {"tbps": 3.8}, "copy": {"tbps": 4.0}},
    ])
    rows, missing = st.table(st.load([tmp_path]))
    by = {(r["workload"], r["peer_name"]): r for r in rows}
    head = by[("GEMM f16 8192x8192x8192 (a)", "cuBLAS")]
    assert head["cutile"] == 690.0 and abs(head["ratio"] - 690 / 700) < 1e-12
    assert head["met"] is False                      # the duel's numbers, not the first pass
    sweep = by[("GEMM f16 sweep, geomean of 2 shapes (1k-16k)", "cuBLAS")]
    assert abs(sweep["ratio"] - (690 / 700 * 240 / 200) ** 0.5) < 1e-12 and sweep["met"]
    comp = by[("cold compile add/add", "cuTile Python add")]
    assert abs(comp["ratio"] - 1.5) < 1e-12 and comp["met"]     # faster compile: ratio > 1
    norm = by[("rmsnorm bf16 4096x16384", "triton (the faster)")]
    assert norm["cutile"] == 3.6                     # the example's plan, not the best config
    assert abs(norm["ratio"] - 3.6 / 3.8) < 1e-12 and norm["met"] is False
    copy = by[("rmsnorm bf16 4096x16384", "copy")]
    assert copy["target"] == 0.9 and copy["met"] is True
    assert set(missing) == {"fp8", "add", "attention"}
    text = st.markdown(rows, missing)
    assert "parts missing: fp8, add, attention" in text
    assert f"{sum(1 for r in rows if r['met'])} of {len(rows)} rows met" in text


def test_a_later_directory_replaces_a_part(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    add = {"cutile": [{"tbps": 4.3, "correct": True}, {"tbps": 9.0, "correct": False}],
           "cutile_python": [{"tbps": 4.2, "correct": True}], "torch": {"tbps": 4.4}}
    write(a, "add", add)
    write(b, "add", {**add, "cutile": [{"tbps": 4.5, "correct": True}]})
    rows, _ = st.table(st.load([a, b]))
    ours = {r["peer_name"]: r for r in rows if r["workload"] == "f32 add 2^28"}
    assert ours["cuTile Python"]["cutile"] == 4.5    # b's run; a wrong result never counts
    assert ours["torch"]["met"] is True

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
        {"op": "rmsnorm", "dtype": "bf16", "m": 4096, "n": 16384, "plan": "p", "bytes": 1,
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


def test_alternating_re_times_decide_the_ratio_and_its_spread(tmp_path: Path) -> None:
    m, n = 4096, 32768
    moved = 2 * m * n * 2 + n * 2                  # x, y and the weight, bf16
    copy = 2 * m * n * 2

    def vs(ratio: float, low: float, high: float, ours: float) -> dict[str, float]:
        return {"ratio": ratio, "low": low, "high": high, "ours_s": ours,
                "peer_s": ours * ratio}

    write(tmp_path, "norms", [{
        "op": "rmsnorm", "dtype": "bf16", "m": m, "n": n, "plan": "p", "bytes": moved,
        "cutile": {"p": {"tbps": 3.0}}, "torch": {"tbps": 2.0}, "triton": {"tbps": 3.1},
        "copy": {"tbps": 4.0},
        # re-timed alternately, torch came out the faster peer and cutile ahead of it
        "duel": {"torch": vs(1.01, 0.99, 1.03, 1e-4), "triton": vs(1.05, 1.04, 1.06, 1e-4),
                 "copy": vs(0.9, 0.89, 0.91, 1e-4)}}])
    write(tmp_path, "attention", [{
        "bh": 32, "seq": 1024, "d": 64, "causal": True,
        "cutile": {"a": {"tflops": 100.0}, "b": {"tflops": 90.0}},
        "torch_cudnn": {"tflops": 120.0}, "cutile_python": {"tflops": 80.0, "config": "c"},
        "duel": {"config": "a", "vs": {"torch_cudnn": vs(0.97, 0.95, 1.01, 2e-4)}}}])
    rows, _ = st.table(st.load([tmp_path]))
    by = {(r["workload"], r["peer_name"]): r for r in rows}
    faster = by[("rmsnorm bf16 4096x32768", "torch (the faster)")]
    assert (faster["ratio"], faster["low"], faster["high"], faster["met"]) == (1.01, 0.99,
                                                                               1.03, True)
    assert abs(faster["cutile"] - moved / 1e-4 / 1e12) < 1e-9
    cp = by[("rmsnorm bf16 4096x32768", "copy")]
    scale = moved / copy                           # a ratio of TB/s, not of times
    assert abs(cp["ratio"] - 0.9 * scale) < 1e-12 and abs(cp["low"] - 0.89 * scale) < 1e-12
    assert abs(cp["peer"] - copy / 0.9e-4 / 1e12) < 1e-9 and cp["met"] is True
    name = "attention d64 causal seq 1024 (a)"
    cudnn = by[(name, "cuDNN")]
    assert cudnn["ratio"] == 0.97 and cudnn["met"] is False and cudnn["high"] == 1.01
    assert abs(cudnn["cutile"] - 4 * 32 * 1024**2 * 64 / 2 / 2e-4 / 1e12) < 1e-9
    sample = by[(name, "cuTile Python sample (c)")]   # no re-times: the first pass
    assert sample["ratio"] == 100.0 / 80.0 and sample["low"] is None
    text = st.markdown(rows, [])
    assert "0.950–1.010 | ≥ 1.0 | **no** (within spread) |" in text   # its best round met it
    assert st.within_spread(cudnn) and not st.within_spread(sample)
    assert not st.within_spread(faster)                                # met: not "within"
    assert "(1 more not met but within the spread of their rounds)" in text


def test_a_gemm_duel_with_rounds_gives_the_row_its_spread(tmp_path: Path) -> None:
    write(tmp_path, "gemm", [
        {"shape": [8192, 8192, 8192], "dtype": "bf16", "cutile": {"a": {"tflops": 700.0}},
         "cublas": {"tflops": 650.0},
         "duel": {"config": "a", "cutile": 660.0, "cublas": 650.0, "ratio": 1.012,
                  "low": 0.998, "high": 1.02}}])
    rows, _ = st.table(st.load([tmp_path]))
    head, sweep = rows
    assert (head["ratio"], head["low"], head["high"]) == (1.012, 0.998, 1.02)
    assert head["cutile"] == 660.0 and head["met"] is True
    assert sweep["ratio"] == 1.012                    # the paired ratio, not 660 / 650


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


def test_the_add_rows_take_the_alternating_re_times(tmp_path: Path) -> None:
    """`elementwise.py --rounds`: each peer's row is cutile's speed over that peer's from the
    re-times (the median of the per-round ratios, with its spread); a peer without them
    keeps the first pass; a peer whose result was wrong has no row."""
    n = 1 << 28
    duel = {"cutile_python": {"ratio": 1.002, "low": 0.998, "high": 1.004,
                              "ours_s": 12 * n / 4.35e12, "peer_s": 12 * n / 4.34e12}}
    write(tmp_path, "add", {
        "n": n, "cutile": [{"tbps": 4.30, "correct": True}],
        "cutile_python": [{"tbps": 4.36, "correct": True}], "torch": {"tbps": 4.2, "correct": True},
        "triton": {"tbps": 9.0, "correct": False}, "duel": duel})
    rows, _ = st.table(st.load([tmp_path]))
    by = {r["peer_name"]: r for r in rows if r["workload"] == "f32 add 2^28"}
    assert set(by) == {"cuTile Python", "torch"}
    ct = by["cuTile Python"]
    assert (ct["ratio"], ct["low"], ct["high"], ct["met"]) == (1.002, 0.998, 1.004, True)
    assert abs(ct["cutile"] - 4.35) < 1e-9 and abs(ct["peer"] - 4.34) < 1e-9
    assert by["torch"]["ratio"] == 4.30 / 4.2 and by["torch"]["low"] is None


def test_the_fp8_rows_take_the_alternating_re_times(tmp_path: Path) -> None:
    """`fp8_gemm.py --focus --rounds`: the re-times' config and ratios (per accumulation and
    peer) decide the rows; the first pass gives the rest."""
    n = 8192
    tf = 2 * n**3 / 1e12

    def vs(ratio: float, ours: float, peer: float) -> dict[str, float]:
        return {"ratio": ratio, "low": ratio - 0.01, "high": ratio + 0.01,
                "ours_s": tf / ours, "peer_s": tf / peer}

    write(tmp_path, "fp8", {
        "n": n, "torch_scaled_mm_rowwise": {"tflops": 1300.0},
        "torch_scaled_mm_rowwise_fast_accum": {"tflops": 1350.0},
        "cutile": {"f32 a": {"tflops": 1200.0}, "fast b": {"tflops": 1400.0},
                   "fast c": {"tflops": 1390.0}},
        "duel": {"fast": {"config": "fast c", "vs": {
            "torch_scaled_mm_rowwise_fast_accum": vs(1.02, 1380.0, 1353.0),
            "torch_scaled_mm_rowwise": vs(1.06, 1380.0, 1302.0)}}}})
    rows, _ = st.table(st.load([tmp_path]))
    by = {(r["workload"], r["peer_name"]): r for r in rows}
    fast = by[("FP8 GEMM 8192^3, fast accumulation (fast c)", "_scaled_mm rowwise fast_accum")]
    assert (fast["ratio"], fast["low"], fast["met"]) == (1.02, 1.01, True)
    assert abs(fast["cutile"] - 1380.0) < 1e-6 and abs(fast["peer"] - 1353.0) < 1e-6
    default = by[("FP8 GEMM 8192^3, fast accumulation (fast c)", "_scaled_mm rowwise (default)")]
    assert default["ratio"] == 1.06
    f32 = by[("FP8 GEMM 8192^3, f32 accumulation (f32 a)", "_scaled_mm rowwise")]
    assert f32["ratio"] == 1200.0 / 1300.0 and f32["low"] is None     # no re-times: first pass
    assert len(rows) == 3


def test_alternate_rotates_the_order_and_pairs_each_round(monkeypatch: Any) -> None:
    """Each round times every contender once, starting one further along; a peer's ratio
    is taken within each round, so a GPU that slows down from round to round moves both
    sides of a ratio alike."""
    import timing

    order: list[str] = []
    slow = {"ours": 1.0, "a": 1.1, "b": 0.5}        # seconds in round 0

    def fake(enqueue: Any, stream: Any, **kw: Any) -> float:
        name = enqueue()
        order.append(name)
        r = len(order) // 3 if len(order) % 3 else len(order) // 3 - 1   # the round
        return slow[name] * (1 + r)                 # every round slower than the last

    monkeypatch.setattr(timing, "time_on_stream", fake)
    got = timing.alternate({n: timing.Timed(lambda n=n: n, None) for n in slow}, "ours",
                           rounds=3)
    assert order == ["ours", "a", "b", "a", "b", "ours", "b", "ours", "a"]
    assert got["a"]["ratio"] == got["a"]["low"] == got["a"]["high"] == 1.1
    assert abs(got["b"]["ratio"] - 0.5) < 1e-12 and got["b"]["peer_s"] == 1.0
    assert set(got) == {"a", "b"} and got["a"]["ours_s"] == 2.0

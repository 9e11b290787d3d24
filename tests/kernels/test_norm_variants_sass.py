"""The SASS of the row-reduction variants picked from the SASS (2026-12, fourth round:
benchmarks/norms.py SASS_CONFIGS): every candidate the lead times on the H200 assembles for
sm_90 without a spill and writes from registers, and each variant does what it was written
for (the weight loaded with the row, the next row in flight during this row's shuffles,
fewer instructions for softmax), read from the real tileiras's output."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_example_sass import sass_of
from test_examples import load

from cutile.core import bf16, f32

pytestmark = pytest.mark.tileiras

ROOT = Path(__file__).resolve().parents[2]
DTYPES = {"bf16": bf16, "f32": f32}


def norms() -> ModuleType:
    load("softmax")                     # examples/ (and row_kernels) on the path
    sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module("norms")


def _cases(table: str = "SASS_CONFIGS") -> list[tuple[str, str, int, Any]]:
    bench = norms()
    return [(op, dtype, n, cfg) for n, cfgs in getattr(bench, table).items() for cfg in cfgs
            for op in ("softmax", "rmsnorm", "layernorm") for dtype in ("bf16", "f32")
            if (DTYPES[dtype], cfg.variant) in bench.EXAMPLES[op].KERNELS
            and (op == "rmsnorm" or not cfg.tma)]  # as benchmarks/norms.py `configs_for`


def compiled(op: str, dtype: str, n: int, cfg: Any) -> str:
    bench = norms()
    k = bench.kernel_for(op, dtype, cfg)
    return sass_of(k.compile(target="sm_90", **bench.consts_for(n, cfg)).cubin)


def instructions(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", line)]


def wide_loads_before(text: str, stop: str) -> int:
    """16-byte global loads issued before the first instruction matching `stop`."""
    count = 0
    for line in instructions(text):
        if re.search(stop, line):
            break
        count += bool(re.search(r"\bLDG\.E\.128\b", line))
    return count


@pytest.mark.parametrize(("op", "dtype", "n", "cfg"),
                         _cases() + _cases("FFMA_CONFIGS"),
                         ids=lambda v: v.label() if hasattr(v, "label") else str(v))
def test_sass_candidates_keep_rows_in_registers(op: str, dtype: str, n: int, cfg: Any) -> None:
    """Without a spill, but for those benchmarks/norms.py leaves out as spilling."""
    text = compiled(op, dtype, n, cfg)
    where = f"{op} {dtype} {n} {cfg.label()}"
    spills = bool(re.search(r"\bLDL\b", text))
    assert spills == ((op, dtype, n, cfg.label()) in norms().SASS_SPILLS), f"{where}: {spills=}"
    if spills:
        return
    assert "LDG.E.128" in text and "STG.E.128" in text, f"{where}: not 128-bit"
    assert cfg.tma or "UTMA" not in text, f"{where}: a TMA access"
    if dict(cfg.hints).get("num_worker_warps") == 1:
        assert "BAR.SYNC" not in text, f"{where}: a block barrier on one warp"


def test_one_warp_rmsnorm_loads_the_weight_with_the_row_under_a_loose_cap() -> None:
    """bf16 1k on one warp: the row is 4 16-byte chunks a lane and so is the weight.
    Without `occupancy` the gathered weight goes out with the row (8 loads before the
    first shuffle); at `occupancy` 16 (the plan's, 64 registers) tileiras sinks it below
    the reduction (4 before), where each chunk waits for the one before."""
    bench = norms()
    w1 = (("num_worker_warps", 1),)
    capped = (("num_worker_warps", 1), ("occupancy", 16))
    new = compiled("rmsnorm", "bf16", 1024, bench.Config("row", 1, None, False, False, w1,
                                                         "gather_w"))
    old = compiled("rmsnorm", "bf16", 1024, bench.Config("row", 1, None, False, False,
                                                         capped, "gather_w"))
    assert wide_loads_before(new, r"SHFL\.BFLY") == 8
    assert wide_loads_before(old, r"SHFL\.BFLY") == 4


def test_across_warps_tileiras_sinks_the_weight_below_the_barrier() -> None:
    """Why gather_w alone is not expected to help past one warp, on today's tileiras: in
    LayerNorm bf16 4k over 4 warps the gathered weight and bias are still loaded after the
    block barrier of the reduction, a chunk at a time (the "rows" variants pay that once a
    block). When this fails, tileiras keeps them ahead: time gather_w_shifted at 4k-32k."""
    bench = norms()
    cfg = bench.Config("row", 1, None, False, False, (("occupancy", 8),), "gather_w_shifted")
    text = compiled("layernorm", "bf16", 4096, cfg)
    before = wide_loads_before(text, r"BAR\.SYNC")
    total = len(re.findall(r"\bLDG\.E\.128\b", text))
    assert before == 4 and total > before, (before, total)


def test_rows_issue_the_next_row_before_this_rows_shuffles() -> None:
    """The "rows" variant on one warp, bf16 1k, 4 rows a block: the first two rows' 8
    chunks a lane are in flight before the first row's reduction starts."""
    bench = norms()
    cfg = bench.rows(4, num_worker_warps=1, occupancy=4)
    for op in ("softmax", "rmsnorm"):
        text = compiled(op, "bf16", 1024, cfg)
        assert wide_loads_before(text, r"SHFL\.BFLY") >= 8, op


def test_softmax_gather_fma_takes_fewer_instructions() -> None:
    """One FFMA before each exp2 in place of an FMUL and an FADD: 32 elements a lane at
    bf16 1k on one warp, at least that many fewer instructions, and FFMAs for them."""
    bench = norms()
    hints = (("num_worker_warps", 1), ("occupancy", 16))
    fma = compiled("softmax", "bf16", 1024, bench.Config("row", 1, None, False, False, hints,
                                                         "gather_fma"))
    plain = compiled("softmax", "bf16", 1024, bench.Config("row", 1, None, False, False,
                                                           hints, "gather"))
    assert len(instructions(plain)) - len(instructions(fma)) >= 32
    assert len(re.findall(r"\bFFMA\b", fma)) >= 32


def test_ffma_variants_fuse_the_products_into_adds() -> None:
    """tileiras does not contract `a * b + c` into an FFMA (Triton's ptxas does); the
    `_ffma` variants write the fused multiply-adds out: LayerNorm bf16 4k over 4 warps
    (32 elements a thread) loses at least 48 FMULs and FADDs a thread and gains FFMAs,
    RMSNorm's rows at 1k lose at least 16 instructions, and neither needs shared memory
    where a thread holds both halves of its row (one warp at 1k)."""
    bench = norms()
    occ = (("occupancy", 8),)
    text = {v: compiled("layernorm", "bf16", 4096,
                        bench.Config("row", 1, None, False, False, occ, v))
            for v in ("gather_shifted", "gather_ffma")}
    assert len(instructions(text["gather_shifted"])) - len(instructions(text["gather_ffma"])) >= 48
    ffma = {v: len(re.findall(r"\bFFMA\b", t)) for v, t in text.items()}
    assert ffma["gather_ffma"] - ffma["gather_shifted"] >= 32, ffma
    w1 = (("num_worker_warps", 1),)
    one_warp = compiled("layernorm", "bf16", 1024,
                        bench.Config("row", 1, None, False, False, w1, "gather_w_ffma"))
    assert "STS" not in one_warp and "BAR.SYNC" not in one_warp
    rows = {v: compiled("rmsnorm", "bf16", 1024, bench.rows(8, num_worker_warps=1, occupancy=4)
                        ._replace(variant=v)) for v in ("rows", "rows_ffma")}
    assert len(instructions(rows["rows"])) - len(instructions(rows["rows_ffma"])) >= 16

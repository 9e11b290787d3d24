"""Softmax, RMSNorm and LayerNorm over the rows of an M x N matrix (M = 4096, N = 1k, 4k,
16k, 32k) in bf16 and f32: cutile's kernels from examples/softmax.py, rmsnorm.py and
layernorm.py against torch (F.softmax, F.rms_norm, F.layer_norm) and straightforward Triton
kernels (one program per row, the whole row in one block), one process, random inputs.
A torch clone of x gives the copy bandwidth for reference.

TB/s counts the bytes read and written once (x and the output; the weight and bias too)
over the time; times are CUDA-event medians (timing.py) with a spin kernel ahead of each
trial, so that short kernels are timed without the host's launch cost between them (at
1k columns x and the output fit in L2: those TB/s can pass HBM's). Each cutile config is
checked against torch's f32 result before it is timed (max |y - ref| / (1 + |ref|), printed
with it; a config past 1e-2 in bf16 or 1e-4 in f32 does not count as the best).

    python benchmarks/norms.py [--ops softmax,rmsnorm,layernorm] [--cols 1024,4096,16384,32768]
        [--dtypes bf16,f32] [--rows 4096] [--quick] [--json out.json]
        [--variants gather,gather_shifted] [--with-best results/earlier.json ...]
    python benchmarks/norms.py --compile-only     # every config through tileiras, no GPU

cutile configs: each case runs the example's own plan (`plan(n, dtype)`, marked `*`) and
then CONFIGS[N]. "row" is the one-pass kernel, (BM, BN >= N) tiles of whole rows kept in
registers, its row (and weight) loads straight into registers or through the TMA unit
(`tma`), its store through the TMA unit or straight from registers (`stg`); "loop" walks
whole rows in (BM, BK) column tiles, once for the statistics and once to write. Hints are
`occupancy` (blocks per multiprocessor: it caps the registers), `num_worker_warps` and
`num_ctas` (a cluster that splits the tile). The best config per case is reported, and where
it is not the example's plan, the ROW_PLANS line that would make it so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import layernorm as layernorm_ex
import rmsnorm as rmsnorm_ex
import softmax as softmax_ex
from row_kernels.plans import hinted, next_pow2
from timing import Timed, alternate, spin, time_launch, time_on_stream

import cutile
from cutile.core import bf16, f32

EXAMPLES = {"softmax": softmax_ex, "rmsnorm": rmsnorm_ex, "layernorm": layernorm_ex}
EPS = {"rmsnorm": 1e-6, "layernorm": 1e-5}
DTYPES = {"bf16": bf16, "f32": f32}



class Config(NamedTuple):
    kind: str                        # "row" (one pass) or "loop" (two passes over BK tiles)
    BM: int
    BK: int | None = None
    tma: bool = False                # the row's load through the TMA unit (row kind only)
    store_tma: bool = True           # False: the row's store straight from registers (row)
    hints: tuple[tuple[str, int], ...] = ()
    variant: str = ""                # a named one-pass variant (the example's KERNELS)
    contract: bool = False           # compiled with `fp_contract=True` (products fused)

    def label(self) -> str:
        text = f"{self.variant or self.kind} BM={self.BM}" + (f" BK={self.BK}" if self.BK else "")
        text += " tma" if self.tma else ""
        text += " stg" if not self.store_tma else ""
        names = {"occupancy": "occ", "num_worker_warps": "warps", "num_ctas": "ctas"}
        return (text + "".join(f" {names[k]}={v}" for k, v in self.hints)
                + (" fp_contract" if self.contract else ""))


def row(bm: int, tma: bool = False, **hints: int) -> Config:
    return Config("row", bm, None, tma, True, tuple(sorted(hints.items())))


def stg(bm: int, tma: bool = False, **hints: int) -> Config:
    """A one-pass config whose store goes straight out of registers (`allow_tma=False`)."""
    return Config("row", bm, None, tma, False, tuple(sorted(hints.items())))


def shifted(bm: int, tma: bool = False, store_tma: bool = False, **hints: int) -> Config:
    """LayerNorm's one-round variant (examples/layernorm.py `make_layernorm_shifted`): the
    sum and the sum of squares of the row shifted by its first element, stacked and reduced
    together (2 BAR.SYNC instead of 5); by default straight to and from registers."""
    return Config("row", bm, None, tma, store_tma, tuple(sorted(hints.items())), "shifted")


def loop(bm: int, bk: int, **hints: int) -> Config:
    return Config("loop", bm, bk, False, True, tuple(sorted(hints.items())))


def gathered(bm: int, tma: bool = False, variant: str = "gather", **hints: int) -> Config:
    """The "gather" variants (examples/row_kernels/loads.py): the row read by a `gather`,
    predicated 16-byte loads all in flight together, where tileiras makes the padded tile
    load of a bf16 row one memory round trip per 16-byte chunk. `tma` brings only the
    weight and bias through the TMA unit; the store goes straight from registers.
    `variant="gather_shifted"`: LayerNorm's one-round reduction with that load."""
    return Config("row", bm, None, tma, False, tuple(sorted(hints.items())), variant)


# Candidates per N besides the example's plan (each checked with --compile-only; registers,
# blocks per multiprocessor and spills from `cutile.dump.resources` and the SASS are in the
# commit notes). `stg` writes the result straight from registers (the store's
# `allow_tma=False`): no shared-memory staging and, with the row and weights loaded without
# TMA too, no extra TMA warpgroup (128 threads instead of 256 per 4-warp block), so more
# blocks share a multiprocessor. `row` keeps the TMA store. Controls: the configs that won a
# case on 2026-11-30 (benchmarks/results/2026-11-30-norms-stores.json). New (2026-12):
# - one worker warp (`warps=1`): the row's reductions are warp shuffles only, no BAR.SYNC
#   and no shared memory; at 1k, 4096 one-warp blocks all fit at once (32 a multiprocessor),
#   with 2 rows a warp too (softmax without a spill at `occupancy` 8); at 4k, 168-246
#   registers, 8-12 blocks a multiprocessor. Two warps: one exchange through shared memory.
# - 32 worker warps for 16k and 32k (16-32 values a thread, 37-64 registers, no spill).
# - LayerNorm's `shifted` variant: the sum and sum of squares reduced in one round (2
#   BAR.SYNC against 5; no spill in the configs below unless noted in the commit).
# Clusters (`ctas`) lost every case and are left out but for the plans that use them. Each
# list starts with what --quick runs (a `shifted` config first: the other ops skip it).
CONFIGS: dict[int, list[Config]] = {
    1024: [shifted(4, occupancy=4), stg(4, occupancy=6), stg(1, num_worker_warps=1, occupancy=8),
           stg(8, occupancy=4), stg(2, occupancy=8), stg(1, occupancy=16),
           stg(2, num_worker_warps=1, occupancy=8), stg(2, num_worker_warps=1),
           stg(1, num_worker_warps=2, occupancy=8),
           shifted(8, occupancy=4), shifted(2, num_worker_warps=4, occupancy=8),
           shifted(1, num_worker_warps=1, occupancy=8),
           shifted(1, num_worker_warps=2, occupancy=8)],
    4096: [shifted(1, num_worker_warps=8, occupancy=5), row(1, occupancy=6),
           stg(1, num_worker_warps=1), stg(1, occupancy=6),
           stg(1, num_worker_warps=8, occupancy=5), stg(1, occupancy=8),
           stg(1, True, occupancy=4), stg(2, num_worker_warps=8, occupancy=4),
           stg(1, num_worker_warps=2), stg(1, num_worker_warps=8, occupancy=6),
           shifted(1, num_worker_warps=4, occupancy=8), shifted(1, num_worker_warps=4, occupancy=6),
           shifted(1, num_worker_warps=8, occupancy=4), shifted(1, num_worker_warps=1)],
    16384: [shifted(1, num_worker_warps=16, occupancy=2), row(1, num_worker_warps=16, occupancy=2),
            stg(1, num_worker_warps=32),
            stg(1, True, num_worker_warps=16, occupancy=2),
            stg(1, num_worker_warps=16, occupancy=2), stg(1, num_worker_warps=16),
            row(1, num_worker_warps=8, occupancy=2), row(1, num_worker_warps=32),
            stg(1, True, num_worker_warps=32), loop(1, 2048, occupancy=4),
            shifted(1, num_worker_warps=16), shifted(1, num_worker_warps=32),
            shifted(1, True, num_worker_warps=16, occupancy=2),
            shifted(1, False, True, num_worker_warps=16, occupancy=2)],
    32768: [shifted(1, num_worker_warps=32), stg(1, True, num_worker_warps=16),
            stg(1, num_worker_warps=32),
            row(1, True, num_worker_warps=16), stg(1, num_worker_warps=16),
            stg(1, num_ctas=2, num_worker_warps=16), stg(1, True, num_worker_warps=32),
            row(1, num_worker_warps=32),
            loop(1, 4096, num_worker_warps=8, occupancy=2),
            loop(1, 8192, num_worker_warps=16, occupancy=2),
            shifted(1, num_worker_warps=16), shifted(1, True, num_worker_warps=16),
            shifted(1, False, True, num_worker_warps=16),
            shifted(1, num_ctas=2, num_worker_warps=16)],
}
# The gather variants (2026-12, third helper): in bf16 the padded tile load's chunks are
# loaded one round trip after another (4 at 4k over 4 warps, 8 at 32k over 16), in f32
# they go out together; `gather` sends them together in both. None of these spills
# (tests/kernels/test_example_sass.py; `tma`, the weight through TMA: RMSNorm only). 32k
# over a 2-block cluster: a block holds half a row, so two rows share a multiprocessor
# (softmax: 61 registers, 2 blocks).
GATHER_CONFIGS: dict[int, list[Config]] = {
    1024: [gathered(2, occupancy=8), gathered(1, num_worker_warps=1, occupancy=16),
           gathered(1, num_worker_warps=2, occupancy=16), gathered(4, occupancy=6),
           gathered(2, variant="gather_shifted", occupancy=8)],
    4096: [gathered(1, occupancy=6), gathered(1, num_worker_warps=8, occupancy=8),
           gathered(1), gathered(1, True, occupancy=6),
           gathered(1, variant="gather_shifted", occupancy=8),
           gathered(1, variant="gather_shifted", num_worker_warps=8, occupancy=8)],
    16384: [gathered(1, num_worker_warps=16, occupancy=2), gathered(1, num_worker_warps=32),
            gathered(1, True, num_worker_warps=16, occupancy=2),
            gathered(1, variant="gather_shifted", num_worker_warps=16, occupancy=2)],
    32768: [gathered(1, num_worker_warps=16), gathered(1, num_worker_warps=32),
            gathered(1, num_ctas=2, num_worker_warps=16),
            gathered(1, variant="gather_shifted", num_worker_warps=16),
            gathered(1, variant="gather_shifted", num_worker_warps=32)],
}
for _n, _extra in GATHER_CONFIGS.items():
    CONFIGS[_n] += _extra


def rows(bm: int, **hints: int) -> Config:
    """The "rows" variants: BM rows a block, one after another, the next row's loads
    issued before this row's reductions, the weights read once a block."""
    return gathered(bm, variant="rows", **hints)


# From the SASS (2026-12, fourth helper; no spills, tests/kernels/test_example_sass.py):
# - `gather_w` (RMSNorm) and `gather_w_shifted` (LayerNorm): the weight (and bias) by a
#   gather too. Their bf16 tile loads went out one 16-byte chunk at a time after the
#   reductions (RMSNorm 1k on one warp at `occupancy` 16: 4 round trips a row after the
#   shuffles). What decides it is the register cap more than the load: on one warp without
#   `occupancy` (87 registers) the weight goes out with the row, gathered or not; at 16
#   (59) it is sunk below the shuffles, gathered or not. Across warps tileiras sinks it
#   below the block barrier at every cap tried (LayerNorm 4k, 4 warps, `occupancy` 4-8),
#   so the one-warp and `rows` configs are the ones expected to gain at 4k and beyond.
# - `gather_fma` (softmax): an FFMA before each exp2 instead of an FMUL and an FADD, the
#   sum's reciprocal approximate (1k bf16, one warp: 616 instructions against 712).
# - `rows`: one warp a block at 1k (no barrier, the next row in flight during this one's
#   shuffles, a block's start paid once for BM rows); 2 rows a block over 16-32 warps at
#   16k-32k (one block a multiprocessor whose loads do not stop during its reductions).
#   One-warp blocks take `occupancy` 4 (a cap of 128 registers: the next row's 4 chunks
#   all go out before this row's shuffles; without the hint only one of them does, and
#   at 8-16 the cap is 64, which spills two rows); RMSNorm and LayerNorm, which hold the
#   weights too, mostly spill at 4 (SASS_SPILLS) and run without the hint as well.
SASS_CONFIGS: dict[int, list[Config]] = {
    1024: [gathered(1, variant="gather_w", num_worker_warps=1),
           gathered(2, variant="gather_w", occupancy=8),
           gathered(1, variant="gather_w_shifted", num_worker_warps=1),
           gathered(2, variant="gather_w_shifted", occupancy=8),
           gathered(1, variant="gather_fma", num_worker_warps=1, occupancy=16),
           gathered(1, variant="gather_fma", num_worker_warps=2, occupancy=16),
           rows(4, num_worker_warps=1, occupancy=4), rows(8, num_worker_warps=1, occupancy=4),
           rows(4, num_worker_warps=1), rows(8, num_worker_warps=1)],
    4096: [gathered(1, variant="gather_w", occupancy=6),
           gathered(1, variant="gather_w", num_worker_warps=1),
           gathered(1, variant="gather_w_shifted", occupancy=4),
           gathered(1, variant="gather_w_shifted", num_worker_warps=8, occupancy=4),
           gathered(1, variant="gather_fma"),
           gathered(1, variant="gather_fma", num_worker_warps=8, occupancy=8),
           rows(2, occupancy=4), rows(4, num_worker_warps=8, occupancy=2)],
    16384: [gathered(1, variant="gather_w", num_worker_warps=16, occupancy=2),
            gathered(1, variant="gather_w_shifted", num_worker_warps=16, occupancy=2),
            gathered(1, variant="gather_fma", num_worker_warps=16, occupancy=2),
            rows(2, num_worker_warps=16, occupancy=1), rows(2, num_worker_warps=32,
                                                            occupancy=1)],
    32768: [gathered(1, variant="gather_w", num_worker_warps=32),
            gathered(1, variant="gather_w_shifted", num_worker_warps=32),
            gathered(1, variant="gather_fma", num_worker_warps=32),
            gathered(1, variant="gather_fma", num_worker_warps=16)],
}
for _n, _extra in SASS_CONFIGS.items():
    CONFIGS[_n] += _extra
# From the SASS against Triton's (2026-12, seventh helper; `_ffma` variants): tileiras
# does not contract a product into the add that follows it, where Triton's ptxas makes an
# FFMA. LayerNorm bf16 4k (4 warps) had 172 FADD + 99 FMUL + 10 FFMA a thread for 32
# elements against Triton's 31 + 23 + 48 for 16. `gather_ffma` / `gather_w_ffma`
# (LayerNorm; the plans' gather_shifted / gather_w_shifted) sum the squares as
# fma(lo, lo, hi * hi) of the row's two halves and write fma(d - mean, inv * w, b);
# `gather_ffma` / `rows_ffma` (RMSNorm; the plans' gather / rows) the squares only.
# Hot-path instructions a thread: LayerNorm 4k 769 -> 700, 1k one warp 713 -> 674 (120 ->
# 104 registers); RMSNorm 1k rows 718 -> 686, 4k 608 -> 597; no spill, no shared memory
# added (each thread's halves are its own chunks where it holds two or more: not on 4
# warps at 1k, where the halves cost an exchange). Triton's shape (8 warps at 4k, 16
# elements a thread) too.
FFMA_CONFIGS: dict[int, list[Config]] = {
    1024: [gathered(1, variant="gather_w_ffma", num_worker_warps=1),
           gathered(1, variant="gather_w_ffma", num_worker_warps=2),
           rows(8, num_worker_warps=1, occupancy=4)._replace(variant="rows_ffma"),
           rows(8, num_worker_warps=1)._replace(variant="rows_ffma")],
    4096: [gathered(1, variant="gather_ffma", occupancy=8),
           gathered(1, True, variant="gather_ffma", occupancy=6),
           gathered(1, variant="gather_w_ffma", occupancy=8),
           gathered(1, variant="gather_ffma", num_worker_warps=8, occupancy=4),
           gathered(1, variant="gather_w_ffma", num_worker_warps=8, occupancy=4)],
}
for _n, _extra in FFMA_CONFIGS.items():
    CONFIGS[_n] += _extra
# SASS_CONFIGS entries that spill for one op and dtype (LayerNorm f32 holds the row, the
# weight and the bias; at 32k the "rows" variants spilled for every op and are left out):
# not timed, and tests/kernels/test_norm_variants_sass.py checks that these and only these
# spill
SASS_SPILLS = {("rmsnorm", "bf16", 1024, "rows BM=4 stg warps=1 occ=4"),
               ("layernorm", "bf16", 1024, "rows BM=4 stg warps=1 occ=4"),
               ("layernorm", "f32", 1024, "rows BM=4 stg warps=1 occ=4"),
               ("layernorm", "bf16", 1024, "rows BM=8 stg warps=1 occ=4"),
               ("layernorm", "f32", 1024, "rows BM=8 stg warps=1 occ=4"),
               ("layernorm", "f32", 4096, "rows BM=2 stg occ=4"),
               ("layernorm", "f32", 16384, "rows BM=2 stg warps=16 occ=1"),
               ("layernorm", "bf16", 16384, "rows BM=2 stg warps=32 occ=1"),
               ("layernorm", "f32", 16384, "rows BM=2 stg warps=32 occ=1"),
               ("layernorm", "f32", 32768, "gather_w_shifted BM=1 stg warps=32"),
               ("rmsnorm", "f32", 4096, "gather_ffma BM=1 stg occ=8")}
QUICK = 3  # --quick: the plan and the first configs of each list


def plan_config(op: str, dtype: str, n: int) -> Config:
    """The example's own choice for this case."""
    p = EXAMPLES[op].plan(n, DTYPES[dtype])
    hints = tuple(h for h in p.hints if h[0] != "fp_contract")   # a Config flag of its own
    contract = bool(dict(p.hints).get("fp_contract", False))
    if p.BK is not None:
        return Config("loop", p.BM, p.BK, False, True, hints, contract=contract)
    return Config("row", p.BM, None, p.tma, p.store_tma, hints, p.variant, contract)


def configs_for(op: str, dtype: str, n: int, quick: bool, variants: set[str] | None = None,
                previous: dict[tuple[str, str, int], Config] | None = None) -> list[Config]:
    """The plan first, then the best config of an earlier run (`previous`), then the
    candidates for the nearest N (no repeats; a variant only for the examples that have
    it; with `variants`, only those whose variant, or kind "row" / "loop", is named)."""
    got = CONFIGS.get(n) or CONFIGS[min(CONFIGS, key=lambda c: abs(c - n))]
    got = [c for c in got if not c.variant or (DTYPES[dtype], c.variant) in EXAMPLES[op].KERNELS]
    got = [c for c in got if (op, dtype, n, c.label()) not in SASS_SPILLS]
    if variants is not None:
        got = [c for c in got if (c.variant or c.kind) in variants]
    if op != "rmsnorm":  # the gather variants' `tma` is for the weights: softmax has none,
        # LayerNorm's weight and bias through TMA spill
        got = [c for c in got if not (c.tma and c.variant.startswith("gather"))]
    out = [plan_config(op, dtype, n)]
    earlier = (previous or {}).get((op, dtype, n))
    if earlier is not None and earlier != out[0]:
        out.append(earlier)
    out += [c for c in (got[:QUICK] if quick else got) if c not in out]
    return out


def best_of(path: str) -> dict[tuple[str, str, int], Config]:
    """The best cutile config of each case in an earlier run's --json output."""
    out = {}
    for r in json.loads(Path(path).read_text()):
        if r.get("best"):
            cfg = dict(r["cutile"][r["best"]]["config"])
            cfg["hints"] = tuple(tuple(h) for h in cfg["hints"])
            out[(r["op"], r["dtype"], r["n"])] = Config(**cfg)
    return out


def kernel_for(op: str, dtype: str, cfg: Config) -> cutile.EntryKernel:
    """The example's kernel for this op, dtype and kind, with the config's hints."""
    key: bool | str = cfg.variant or cfg.kind == "loop"
    hints = tuple(sorted(cfg.hints + ((("fp_contract", True),) if cfg.contract else ())))
    return hinted(EXAMPLES[op].KERNELS[(DTYPES[dtype], key)], hints)


def consts_for(n: int, cfg: Config) -> dict[str, Any]:
    consts: dict[str, Any] = {"BM": cfg.BM, "BN": next_pow2(n)}
    if cfg.kind == "loop":
        assert cfg.BK is not None
        consts["BK"] = min(cfg.BK, next_pow2(n))
    else:
        consts["TMA"] = cfg.tma
        consts["STORE_TMA"] = cfg.store_tma
    return consts


def precompile(jobs: list[tuple[str, str, int, Config]], target: str, workers: int
               ) -> dict[tuple[str, str, int, str], str]:
    """Assemble every config with tileiras in parallel (a launch then finds its cubin in the
    cache: a launch on contiguous, 16-byte aligned tensors whose extents are multiples of 16
    has the ahead-of-time build's specialization). Returns the failures by job."""
    for op, dtype, _, cfg in jobs:  # the checker and the AST once per kernel, before threads
        kernel_for(op, dtype, cfg).check()

    def build(job: tuple[str, str, int, Config]) -> str | None:
        op, dtype, n, cfg = job
        try:
            kernel_for(op, dtype, cfg).compile(target=target, **consts_for(n, cfg))
            return None
        except Exception as exc:  # reported, not fatal
            return f"{type(exc).__name__}: {str(exc)[:200]}"

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(build, jobs))
    return {(op, dtype, n, cfg.label()): err
            for (op, dtype, n, cfg), err in zip(jobs, results, strict=True) if err}


# -- peers ---------------------------------------------------------------------------------


def triton_kernels() -> dict[str, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def tr_softmax(x, y, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64) * stride
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x + row + offs, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(v - tl.max(v, axis=0))
        out = e / tl.sum(e, axis=0)
        tl.store(y + row + offs, out.to(y.dtype.element_ty), mask=mask)

    @triton.jit
    def tr_rmsnorm(x, w, y, stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64) * stride
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x + row + offs, mask=mask, other=0.0).to(tl.float32)
        inv = tl.rsqrt(tl.sum(v * v, axis=0) / n + eps)
        ws = tl.load(w + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y + row + offs, (v * inv * ws).to(y.dtype.element_ty), mask=mask)

    @triton.jit
    def tr_layernorm(x, w, b, y, stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64) * stride
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x + row + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(v, axis=0) / n
        d = tl.where(mask, v - mean, 0.0)
        inv = tl.rsqrt(tl.sum(d * d, axis=0) / n + eps)
        ws = tl.load(w + offs, mask=mask, other=0.0).to(tl.float32)
        bs = tl.load(b + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y + row + offs, (d * inv * ws + bs).to(y.dtype.element_ty), mask=mask)

    return {"softmax": tr_softmax, "rmsnorm": tr_rmsnorm, "layernorm": tr_layernorm}


def triton_call(kernels: dict[str, Any], op: str, x: Any, w: Any, b: Any, y: Any
                ) -> Any:
    m, n = x.shape
    block = next_pow2(n)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    k = kernels[op]
    if op == "softmax":
        return lambda: k[(m,)](x, y, x.stride(0), n, BLOCK=block, num_warps=warps)
    if op == "rmsnorm":
        return lambda: k[(m,)](x, w, y, x.stride(0), n, EPS[op], BLOCK=block, num_warps=warps)
    return lambda: k[(m,)](x, w, b, y, x.stride(0), n, EPS[op], BLOCK=block, num_warps=warps)


def torch_call(op: str, x: Any, w: Any, b: Any) -> Any:
    import torch.nn.functional as F

    n = x.shape[1]
    if op == "softmax":
        return lambda: F.softmax(x, dim=-1)
    if op == "rmsnorm":
        return lambda: F.rms_norm(x, (n,), w, EPS[op])
    return lambda: F.layer_norm(x, (n,), w, b, EPS[op])


def reference(op: str, x: Any, w: Any, b: Any) -> Any:
    """torch's result in f32 (the error of every peer is measured against it)."""
    return torch_call(op, x.float(), None if w is None else w.float(),
                      None if b is None else b.float())()


# -- one case ------------------------------------------------------------------------------


def bench(op: str, dtype: str, m: int, n: int, configs: list[Config], tr: dict[str, Any] | None,
          failed: dict[tuple[str, str, int, str], str]) -> dict[str, Any]:
    import torch

    from cutile import api
    from cutile.runtime import driver

    tdt = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    torch.manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=tdt) * 2 + 0.5
    w = (torch.rand(n, device="cuda", dtype=tdt) + 0.5) if op != "softmax" else None
    b = torch.randn(n, device="cuda", dtype=tdt) if op == "layernorm" else None
    size = x.element_size()
    moved = 2 * m * n * size + (0 if w is None else n * size) + (0 if b is None else n * size)
    ref = reference(op, x, w, b)
    tol = 1e-2 if dtype == "bf16" else 1e-4  # on |y - ref| / (1 + |ref|): bf16 keeps 8 bits
    out: dict[str, Any] = {"op": op, "dtype": dtype, "m": m, "n": n, "bytes": moved,
                           "cutile": {}}
    s = torch.cuda.current_stream()
    prelude = spin(s)

    def error(y: Any) -> float:
        return float(((y.float() - ref).abs() / (1 + ref.abs())).max())

    peers: dict[str, Timed] = {}

    def peer(name: str, call: Any, nbytes: int, check: bool = True) -> None:
        try:
            y = call()
            torch.cuda.synchronize()
            t = time_on_stream(call, s, prelude=prelude)
            out[name] = {"tbps": nbytes / t / 1e12, "us": t * 1e6}
            if check:
                out[name]["err"] = error(y)
            peers[name] = Timed(call, s, prelude)
        except Exception as exc:  # a peer that fails is reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}

    peer("copy", lambda: x.clone(), 2 * m * n * size, check=False)
    peer("torch", torch_call(op, x, w, b), moved)
    if tr is not None:
        y = torch.empty_like(x)
        call = triton_call(tr, op, x, w, b, y)

        def run_triton() -> Any:
            call()
            return y

        peer("triton", run_triton, moved)

    def to_ct(t: Any) -> Any:  # through raw bytes: numpy has no bf16
        raw = t.contiguous().view(torch.int16 if size == 2 else torch.int32).cpu().numpy()
        tt = api.empty(list(t.shape), DTYPES[dtype])
        tt._alloc.write(0, raw.reshape(-1).view("uint8"))
        return tt

    def to_torch(t: Any) -> Any:
        host = t._alloc.read(0, t.nbytes)
        raw = torch.from_numpy(host.view("int16" if size == 2 else "int32").reshape(m, n).copy())
        return raw.view(tdt).cuda()

    def fresh() -> tuple[list[Any], Any]:
        """cutile copies of the inputs, and an output (again after a failure that kept them)."""
        return [to_ct(t) for t in (x, w, b) if t is not None], api.empty([m, n], DTYPES[dtype])

    ins, result = fresh()
    scalars = [EPS[op]] if op in EPS else []
    stream = driver.state().stream
    ct_prelude = spin(stream)
    for i, cfg in enumerate(configs):
        name = cfg.label() + (" *" if i == 0 else "")   # the first is the example's plan
        if (op, dtype, n, cfg.label()) in failed:
            out["cutile"][name] = {"error": failed[(op, dtype, n, cfg.label())]}
            continue
        kernel = kernel_for(op, dtype, cfg)
        consts = consts_for(n, cfg)
        part = [consts.pop("BM"), consts.pop("BN")]     # the output's tiles; BK is passed
        try:
            result._alloc.fill_bytes(b"\xff")   # NaN: an element left unwritten fails the check
            back = kernel(result.partition(part), *ins, *scalars, **consts).sync()
            result, ins = back[0].unpartition(), list(back[1:1 + len(ins)])
            err = error(to_torch(result))
            timed = kernel(result.partition(part), *ins, *scalars, **consts)
            try:
                t = time_launch(kernel, timed, prelude=ct_prelude)
            finally:
                back = timed.sync()   # the op runs once more and hands the tensors back
                result, ins = back[0].unpartition(), list(back[1:1 + len(ins)])
            out["cutile"][name] = {"tbps": moved / t / 1e12, "us": t * 1e6, "err": err,
                                   "ok": err <= tol, "config": cfg._asdict()}
        except Exception as exc:  # a config that fails is reported, not fatal
            out["cutile"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            ins, result = fresh()
    ok = {k: v for k, v in out["cutile"].items() if v.get("ok")}
    out["best"] = max(ok, key=lambda k: ok[k]["tbps"]) if ok else None
    out["plan"] = next(iter(out["cutile"]), None)
    if out["plan"] in ok and peers:    # the plan and the peers again, alternating
        kernel = kernel_for(op, dtype, configs[0])
        consts = consts_for(n, configs[0])
        part = [consts.pop("BM"), consts.pop("BN")]
        timed = kernel(result.partition(part), *ins, *scalars, **consts)
        try:
            out["duel"] = alternate({"plan": Timed.of_launch(kernel, timed, ct_prelude), **peers},
                                    "plan", reps=20, trials=11)
        finally:
            back = timed.sync()
            result, ins = back[0].unpartition(), list(back[1:1 + len(ins)])
    del x, w, b, ref, ins, result
    torch.cuda.empty_cache()
    return out


def tbps(v: dict[str, Any] | None) -> float | None:
    return v["tbps"] if v and "tbps" in v else None


def show(r: dict[str, Any]) -> str:
    """One line of the summary: the best cutile config, the peers, the ratio to the faster
    of torch and Triton, and the fraction of the copy bandwidth."""
    def cell(v: float | None, width: int = 6) -> str:
        return f"{v:{width}.2f}" if v is not None else f"{'-':>{width}}"

    best = tbps(r["cutile"][r["best"]]) if r["best"] else None
    plan = tbps(r["cutile"].get(r["plan"] or "")) if r.get("plan") else None
    peers = [v for v in (tbps(r.get("torch")), tbps(r.get("triton"))) if v is not None]
    copy = tbps(r.get("copy"))
    ratio = best / max(peers) if best is not None and peers else None
    frac = best / copy if best is not None and copy else None
    name = r["best"] or "none passed"
    return (f"{r['op']:<9} {r['dtype']:<4} {r['n']:>5} {name:<44} {cell(best)} {cell(plan)} "
            f"{cell(tbps(r.get('torch')))} {cell(tbps(r.get('triton')))} {cell(copy)} "
            f"{cell(ratio, 5)} {cell(frac, 5)}")


HEADER = (f"{'op':<9} {'dtype':<4} {'cols':>5} {'best cutile config (* = the plan)':<44} "
          f"{'cutile':>6} {'plan':>6} {'torch':>6} {'triton':>6} {'copy':>6} {'/peer':>5} "
          f"{'/copy':>5}")


def plan_updates(results: list[dict[str, Any]]) -> list[str]:
    """Where a one-pass config beat the example's plan: the ROW_PLANS line that adopts it."""
    lines = []
    for r in results:
        if not r["best"] or r["best"] == r.get("plan"):
            continue
        cfg = r["cutile"][r["best"]]["config"]
        size = 2 if r["dtype"] == "bf16" else 4
        gain = r["cutile"][r["best"]]["tbps"] / (tbps(r["cutile"].get(r["plan"])) or 1e-9)
        if cfg["kind"] == "row":
            hints = dict(cfg["hints"]) | ({"fp_contract": True} if cfg.get("contract") else {})
            variant = f", {cfg['variant']!r}" if cfg.get("variant") else ""
            lines.append(f"{r['op']}: ROW_PLANS[({next_pow2(r['n'])}, {size})] = "
                         f"({cfg['BM']}, {cfg['tma']}, {cfg['store_tma']}, {hints}{variant})"
                         f"  # x{gain:.2f} over the plan")
        else:
            lines.append(f"{r['op']} {r['dtype']} {r['n']}: the looped kernel won "
                         f"({r['best']}, x{gain:.2f} over the plan)")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="softmax,rmsnorm,layernorm")
    ap.add_argument("--cols", default="1024,4096,16384,32768")
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--quick", action="store_true",
                    help=f"the example's plan and the first {QUICK} configs per size")
    ap.add_argument("--compile-only", action="store_true",
                    help="assemble every config for sm_90 with tileiras and stop (no GPU)")
    ap.add_argument("--variants",
                    help="only the candidates of these kinds or variants (comma-separated: "
                         "row, loop, shifted, gather, gather_shifted, gather_w, "
                         "gather_w_shifted, gather_fma, rows, gather_ffma, gather_w_ffma, "
                         "rows_ffma); the plan always runs")
    ap.add_argument("--with-best", metavar="JSON", action="append",
                    help="also run the best config of each case in this earlier --json output "
                         "(repeatable: one file per dtype)")
    ap.add_argument("--fp-contract", action="store_true",
                    help="also run every config compiled with fp_contract=True (its twin, "
                         "labelled `fp_contract`, products fused into their adds)")
    ap.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    ap.add_argument("--json")
    args = ap.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    cols = [int(c) for c in args.cols.split(",") if c]
    dtypes = [d for d in args.dtypes.split(",") if d]
    variants = set(args.variants.split(",")) if args.variants else None
    previous = ({k: v for path in args.with_best for k, v in best_of(path).items()}
                if args.with_best else None)
    cases = [(op, d, n, configs_for(op, d, n, args.quick, variants, previous))
             for op in ops for d in dtypes for n in cols]
    if args.fp_contract:    # the plan stays first: the examples' own, unfused
        cases = [(op, d, n, cfgs + [c._replace(contract=True) for c in cfgs])
                 for op, d, n, cfgs in cases]
    jobs = [(op, d, n, cfg) for op, d, n, cfgs in cases for cfg in cfgs]
    if args.compile_only:
        failed = precompile(jobs, "sm_90", args.workers)
        for (op, d, n, name), err in failed.items():
            print(f"FAILED {op} {d} {n} {name}: {err}")
        print(f"norms: {len(jobs) - len(failed)} of {len(jobs)} configs assembled for sm_90")
        return

    from cutile.runtime import driver

    if driver.backend() != "gpu":
        sys.exit("norms.py times on the GPU; `--compile-only` checks the configs without one")
    failed = precompile(jobs, driver.arch(), args.workers)
    try:
        tr: dict[str, Any] | None = triton_kernels()
    except Exception as exc:  # a missing peer is reported, not fatal
        print(f"triton unavailable: {exc}")
        tr = None
    results = []
    print(HEADER, flush=True)
    for op, d, n, cfgs in cases:
        r = bench(op, d, args.rows, n, cfgs, tr, failed)
        results.append(r)
        print(show(r), flush=True)
        for name, v in r["cutile"].items():
            if "error" in v:
                print(f"     {name}: {v['error']}", flush=True)
            elif not v["ok"]:
                print(f"     {name}: error {v['err']:.2e} (too large)", flush=True)
        for peer in ("torch", "triton", "copy"):
            if "error" in r.get(peer, {}):
                print(f"     {peer}: {r[peer]['error']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print("\nper config: TB/s (error vs torch f32); torch and triton errors")
    for r in results:
        cells = "  ".join(f"{k} {v['tbps']:.2f} ({v['err']:.0e})"
                          for k, v in r["cutile"].items() if "tbps" in v)
        peers = "  ".join(f"{p} {r[p]['err']:.0e}" for p in ("torch", "triton")
                          if "err" in r.get(p, {}))
        print(f"  {r['op']} {r['dtype']} {r['n']}: {cells}  |  {peers}")
    updates = plan_updates(results)
    if updates:
        print("\nconfigs that beat the examples' plans (examples/*.py ROW_PLANS):")
        for line in updates:
            print(f"  {line}")
    print(f"\nnorms over {args.rows} rows: TB/s = (bytes read + written) / time; copy = torch "
          f"clone; /peer = best cutile / the faster of torch and Triton; /copy = best cutile / "
          f"copy; plan = the example's own config")
    print(HEADER)
    for r in results:
        print(show(r))


if __name__ == "__main__":
    main()

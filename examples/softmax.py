"""Row softmax of an (M, N) matrix whose rows are not a tile multiple, in f32 and bf16 (the
arithmetic is f32 either way), with two kernels:

- `softmax`, one pass: a block owns (BM, BN) whole rows with BN >= N (an `assert` checks it
  on the device). It loads them padded with -inf (exp(-inf) = 0, so the padding drops out
  of the max and the sum), normalizes them in registers and stores them: x is read once and
  the output written once, all the memory traffic there is. exp(x - max) is computed as
  exp2(x * log2(e) - max * log2(e)), which is the GPU's own instruction, and the row is
  scaled by one reciprocal of its sum instead of divided element by element.
- `softmax_looped`, for rows too long to keep in registers: the block still owns whole rows,
  (BM, BN) with BN >= N, and walks them in (BM, BK) column tiles twice: once for the running
  max and sum (online softmax), once to write exp(x - max) / sum through a sub-partition of
  its own tile (`z.partition_mut((BM, BK))`).

How fast it runs is decided on the host, by `plan(n, dtype)`: how many rows a block takes,
whether the row comes in through the TMA unit or straight into registers (the load's
`allow_tma`) and goes out through it or straight from registers (the store's `allow_tma`),
and the hints (`occupancy`: blocks per multiprocessor, which caps each thread's registers;
`num_worker_warps`; `num_ctas`: a cluster of blocks that shares one tile). The plans are
timed against the alternatives by `benchmarks/norms.py` on an H200 (sm_90).

Every element is checked against a float64 reference on random inputs.

    python examples/softmax.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    bf16,
    block_id,
    exp2,
    f32,
    fma,
    full,
    load_tile_like,
    maximum,
    num_tiles,
    truediv,
    zeros,
)
from cutile.dtypes import DType

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared row_kernels package
from row_kernels.loads import gather_row_neg_inf, gather_rows_neg_inf
from row_kernels.plans import Plan, RowPlan, next_pow2, plan_rows

LOG2E = 1.4426950408889634  # exp(x) = exp2(x * log2(e))


def make_softmax(dt: DType) -> cutile.EntryKernel:
    """One (BM, BN) tile of whole rows per block; `dt` is the element type in and out."""

    @cutile.entry
    def softmax(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]], BM: Const[int],
                BN: Const[int], TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        row = load_tile_like(x, z, padding="neg_inf", allow_tma=TMA).astype(f32) * LOG2E
        e = exp2(row - row.max(axis=1, keepdims=True), flush_to_zero=True)
        z.store((e * (1.0 / e.sum(axis=1, keepdims=True))).astype(dt), allow_tma=STORE_TMA)

    return softmax


def make_softmax_gather(dt: DType) -> cutile.EntryKernel:
    """`softmax` with the row read by a `gather` (row_kernels/loads.py: predicated 16-byte
    loads, all in flight at once in bf16 too); the same arguments, TMA unused."""

    @cutile.entry
    def softmax_gather(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                       BM: Const[int], BN: Const[int], TMA: Const[bool],
                       STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        row = gather_rows_neg_inf(x, BM, BN).astype(f32) * LOG2E
        e = exp2(row - row.max(axis=1, keepdims=True), flush_to_zero=True)
        z.store((e * (1.0 / e.sum(axis=1, keepdims=True))).astype(dt), allow_tma=STORE_TMA)

    return softmax_gather


@cutile.device
def normalized(row):
    """exp(row - max) / sum in f32 with one fused multiply-add before each exp2 (the max
    taken of the unscaled row: exp2(x * log2(e) - max * log2(e))) and the sum's reciprocal
    by the GPU's fast division, once per row."""
    m = row.max(axis=1, keepdims=True) * LOG2E
    e = exp2(fma(row, LOG2E, -m), flush_to_zero=True)
    return e * truediv(1.0, e.sum(axis=1, keepdims=True), rounding="approx")


def make_softmax_gather_fma(dt: DType) -> cutile.EntryKernel:
    """`softmax_gather` with `normalized`: per element an FFMA where the kernel above has
    an FMUL (x * log2(e), at the load) and an FADD (minus the max)."""

    @cutile.entry
    def softmax_gather_fma(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                           BM: Const[int], BN: Const[int], TMA: Const[bool],
                           STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        z.store(normalized(gather_rows_neg_inf(x, BM, BN).astype(f32)).astype(dt),
                allow_tma=STORE_TMA)

    return softmax_gather_fma


def make_softmax_rows(dt: DType) -> cutile.EntryKernel:
    """BM rows a block, one after another, the next row's loads issued before this row's
    reductions (its raw elements carried to the next step): a block pays its start (the
    index arithmetic, the shape check) once for BM rows, and its memory traffic does not
    stop while a row is reduced. Written through a (1, BN) sub-partition of the block's
    own tile; the last row is peeled off so that no row past the block's is asked for."""

    @cutile.entry
    def softmax_rows(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                     BM: Const[int], BN: Const[int], TMA: Const[bool],
                     STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        out = z.partition_mut((1, BN))
        first = block_id(0) * BM
        ahead = gather_row_neg_inf(x, first, BN)
        for r in range(BM - 1):
            row = ahead.astype(f32)
            ahead = gather_row_neg_inf(x, first + r + 1, BN)
            out.store(normalized(row).astype(dt), (r, 0), allow_tma=STORE_TMA)
        out.store(normalized(ahead.astype(f32)).astype(dt), (BM - 1, 0), allow_tma=STORE_TMA)

    return softmax_rows


def make_softmax_looped(dt: DType) -> cutile.EntryKernel:
    """Whole rows per block, read in (BM, BK) column tiles: one pass for the max and the sum,
    one to write."""

    @cutile.entry
    def softmax_looped(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                       BM: Const[int], BN: Const[int], BK: Const[int]):
        i = block_id(0)
        m_i = full((BM, 1), -math.inf, f32)      # running max, in log2 units
        l_i = zeros((BM, 1), f32)                # running sum of exp2(t - m_i)
        for j in range(num_tiles(x, 1, (BM, BK))):
            t = x.load_tile((BM, BK), (i, j), padding="neg_inf").astype(f32) * LOG2E
            m_new = maximum(m_i, t.max(axis=1, keepdims=True))
            l_i = l_i * exp2(m_i - m_new) + exp2(t - m_new).sum(axis=1, keepdims=True)
            m_i = m_new
        inv = 1.0 / l_i
        out = z.partition_mut((BM, BK))
        for j in range(num_tiles(x, 1, (BM, BK))):
            t = x.load_tile((BM, BK), (i, j), padding="neg_inf").astype(f32) * LOG2E
            out.store((exp2(t - m_i, flush_to_zero=True) * inv).astype(dt), (0, j))

    return softmax_looped


softmax = make_softmax(f32)
softmax_bf16 = make_softmax(bf16)
softmax_looped = make_softmax_looped(f32)
softmax_looped_bf16 = make_softmax_looped(bf16)
softmax_gather = make_softmax_gather(f32)
softmax_gather_bf16 = make_softmax_gather(bf16)
softmax_gather_fma = make_softmax_gather_fma(f32)
softmax_gather_fma_bf16 = make_softmax_gather_fma(bf16)
softmax_rows = make_softmax_rows(f32)
softmax_rows_bf16 = make_softmax_rows(bf16)
KERNELS = {(f32, False): softmax, (bf16, False): softmax_bf16,
           (f32, True): softmax_looped, (bf16, True): softmax_looped_bf16,
           (f32, "gather"): softmax_gather, (bf16, "gather"): softmax_gather_bf16,
           (f32, "gather_fma"): softmax_gather_fma, (bf16, "gather_fma"): softmax_gather_fma_bf16,
           (f32, "rows"): softmax_rows, (bf16, "rows"): softmax_rows_bf16}


# One-pass plans for sm_90, by the row's padded length BN and the element size in bytes:
# (BM, tma, store_tma, hints). Short rows go several to a block so that each block moves
# enough bytes; `occupancy` caps the registers so that several blocks share a multiprocessor
# (past what the row needs, a spill); long rows spread over 16 worker warps, the longest
# over a 2-block cluster. `tma` brings the row in through the TMA unit, `store_tma` writes
# it out through it; both False keep the kernel in registers: no shared-memory staging and
# no extra TMA warpgroup, so 128 threads instead of 256 per 4-warp block, and more blocks
# per multiprocessor (bf16 1k, 2 rows: 10 instead of 8). Picked from the SASS (registers,
# blocks per multiprocessor, no spills; `cutile.dump.resources`); benchmarks/norms.py
# times them against the alternatives. Entries ending in "gather" (x: the gain over the
# entry they replaced, 2026-12-01) read the rows with a gather: tileiras then issues every
# 16-byte load of a bf16 row before converting any (examples/row_kernels/loads.py).
ROW_PLANS: dict[tuple[int, int], RowPlan] = {
    (1024, 2): (1, False, False, {"num_worker_warps": 1, "occupancy": 16}, "gather_fma"),
    (1024, 4): (1, False, False, {"num_worker_warps": 1, "occupancy": 16}, "gather_fma"),
    (4096, 2): (1, False, False, {}, "gather"),  # x1.07
    (4096, 4): (1, False, False, {}, "gather_fma"),
    (16384, 2): (1, False, False, {"num_worker_warps": 16, "occupancy": 2}, "gather_fma"),
    (16384, 4): (1, False, False, {"num_worker_warps": 16, "occupancy": 2}, "gather_fma"),
    (32768, 2): (1, False, False, {"num_worker_warps": 32}, "gather"),  # x1.17
    (32768, 4): (1, False, False, {"num_worker_warps": 32}, "gather_fma"),
}
MAX_ROW = 32768  # longer rows take the looped kernel


def plan(n: int, dt: DType, max_row: int = MAX_ROW, bk: int = 4096) -> Plan:
    """The plan for rows of `n` columns of `dt`: that of the shortest measured row length at
    or above BN (for a shorter row, with BM scaled up to keep the tile's size), and past
    `max_row` columns the looped kernel in (1, bk) steps."""
    return plan_rows(n, dt, KERNELS, ROW_PLANS, min(max_row, MAX_ROW), bk)


def run(xs: np.ndarray, dt: DType, p: Plan) -> np.ndarray:
    m, n = xs.shape
    z = api.full([m, n], np.nan, dt).partition([p.BM, p.BN])
    z, _ = p.kernel(dt)(z, api.from_numpy(xs), **p.consts()).sync()
    return z.unpartition().to_numpy().astype(np.float64)


def reference(xs: np.ndarray) -> np.ndarray:
    x = xs.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check(xs: np.ndarray, dt: DType, p: Plan) -> float:
    out = run(xs, dt, p)
    ref = reference(xs)
    assert np.isfinite(out).all(), "unwritten (NaN) elements"
    tol = 8e-3 if dt is bf16 else 1e-5          # bf16 keeps 8 significant bits
    rel = float((np.abs(out - ref) / (np.abs(ref) + 1e-30)).max())
    assert rel < tol, f"max relative error {rel:.3g}"
    return rel


def main(m: int = 300, n: int = 1000, long_n: int = 20000, bk: int = 2048) -> None:
    rng = np.random.default_rng(11)
    worst = 0.0
    for dt, host in ((f32, np.float32), (bf16, ml_dtypes.bfloat16)):
        xs = (rng.standard_normal((m, n)) * 4).astype(host)
        worst = max(worst, check(xs, dt, plan(n, dt)))                # one tile per row
        xs = (rng.standard_normal((max(1, m // 8), long_n)) * 4).astype(host)
        looped = plan(long_n, dt, max_row=next_pow2(long_n) // 2, bk=bk)
        worst = max(worst, check(xs, dt, looped))
    print(f"softmax: {m}x{n} rows in one pass, {max(1, m // 8)}x{long_n} in column tiles of "
          f"{bk}, f32 and bf16: max relative error {worst:.2e}")


if __name__ == "__main__":
    main()

"""LayerNorm over the rows of an (M, N) matrix whose rows are not a tile multiple, with a
weight and a bias, in f32 and bf16 (statistics in f32 either way):
y = (x - mean) / sqrt(var + eps) * w + b, var the biased variance (torch's).

- `layernorm`, one pass: a block owns (BM, BN) whole rows with BN >= N (an `assert` checks
  it on the device) and keeps them in registers, so x is read once and y written once. The
  padding is zero; the mean divides by N, and the centred values are masked to the row
  (`where`) before they are squared, so the padding adds nothing to the variance (two
  reductions over registers, no cancellation as in E[x^2] - E[x]^2).
- `layernorm_shifted`, the same one pass with one round of reductions: the sum and the sum
  of squares of the row shifted by its first element, stacked and reduced together
  (`make_layernorm_shifted`); a ROW_PLANS entry runs it when it names the variant
  "shifted" (a fifth element).
- `layernorm_looped`, for rows too long to keep in registers: whole rows per block, walked
  in (BM, BK) column tiles twice. The first pass merges each tile's count, mean and sum of
  squared deviations into the running ones (Chan et al.'s parallel variance), the second
  normalizes and writes through a sub-partition of the block's own tile.

`plan(n, dtype)` picks the tiles and hints on the host, as in examples/softmax.py.
Every element is checked against a float64 reference on random inputs.

    python examples/layernorm.py
"""

from __future__ import annotations

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
    arange,
    bf16,
    block_id,
    cat,
    extract,
    f32,
    fma,
    gather,
    load_tile_like,
    maximum,
    num_tiles,
    reshape,
    rsqrt,
    where,
    zeros,
)
from cutile.dtypes import DType

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared row_kernels package
from row_kernels.loads import gather_row, gather_rows, gather_vector
from row_kernels.plans import Plan, RowPlan, next_pow2, plan_rows


@cutile.device
def centered_stats(t, n, BN):
    """d = t minus its row means (zero past the row) and the rows' variances: two dependent
    rounds of reductions."""
    mean = t.sum(axis=1, keepdims=True) / n
    d = where(arange(BN)[None, :] < n, t - mean, 0.0)
    return d, (d * d).sum(axis=1, keepdims=True) / n


@cutile.device
def shifted_stats(t, k, n, BM, BN):
    """The row's mean minus k and 1 / sqrt(var + eps)'s argument, of d = t - k (zero past
    the row), in one round of reductions (as `make_layernorm_shifted`); returns (d, s1,
    var)."""
    d = where(arange(BN)[None, :] < n, t - k, 0.0)
    both = cat((reshape(d, (1, BM, BN)), reshape(d * d, (1, BM, BN))), axis=0)
    sums = both.sum(axis=2, keepdims=True)          # (2, BM, 1); divided apart (below):
    # a division of the stacked sums costs tileiras a second exchange and a spill
    s1 = reshape(extract(sums, (0, 0, 0), (1, BM, 1)), (BM, 1)) / n    # mean - k
    s2 = reshape(extract(sums, (1, 0, 0), (1, BM, 1)), (BM, 1)) / n    # mean of d^2
    return d, s1, maximum(s2 - s1 * s1, 0.0)


@cutile.device
def fma_stats(t, k, n, BM, BN):
    """As `shifted_stats`, with the squares summed by fused multiply-adds: the two halves
    of d (each thread's first and last chunks of the row, so no data moves between
    threads where a thread holds two or more chunks) as fma(lo, lo, hi * hi), one FMUL,
    one FFMA and one FADD per pair where the plain sum costs two FMULs and two FADDs
    (tileiras does not contract a product into the sum that follows it)."""
    d = where(arange(BN)[None, :] < n, t - k, 0.0)
    lo = extract(d, (0, 0), (BM, BN // 2))
    hi = extract(d, (0, 1), (BM, BN // 2))
    both = cat((reshape(lo + hi, (1, BM, BN // 2)),
                reshape(fma(lo, lo, hi * hi), (1, BM, BN // 2))), axis=0)
    sums = both.sum(axis=2, keepdims=True)
    s1 = reshape(extract(sums, (0, 0, 0), (1, BM, 1)), (BM, 1)) / n    # mean - k
    s2 = reshape(extract(sums, (1, 0, 0), (1, BM, 1)), (BM, 1)) / n    # mean of d^2
    return d, s1, maximum(s2 - s1 * s1, 0.0)


@cutile.device
def normalized(d, s1, inv, ws, bs):
    """(d - mean) * inv * w + b as written: an FMUL and an FADD where a product meets a
    sum (tileiras does not contract them)."""
    return (d - s1) * inv * ws + bs


@cutile.device
def normalized_fma(d, s1, inv, ws, bs):
    """`normalized` as fma(d - mean, inv * w, b): 3 instructions an element, not 4."""
    return fma(d - s1, inv * ws, bs)


def make_layernorm(dt: DType) -> cutile.EntryKernel:
    @cutile.entry
    def layernorm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                  w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32, BM: Const[int],
                  BN: Const[int], TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        n = x.shape[1]
        t = load_tile_like(x, z, allow_tma=TMA).astype(f32)
        d, var = centered_stats(t, n, BN)
        inv = rsqrt(var + eps)
        ws = w.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        bs = b.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        z.store((d * inv * ws + bs).astype(dt), allow_tma=STORE_TMA)

    return layernorm


def make_layernorm_shifted(dt: DType) -> cutile.EntryKernel:
    """The one-pass kernel with one round of reductions instead of two dependent ones: the
    row's sum and sum of squares, both of the row shifted by its first element k (x[:, 0],
    a (BM, 1) load beside the row's), stacked into one (2, BM, BN) tile and reduced
    together (one shuffle tree of two values and one shared-memory exchange, as RMSNorm's
    single reduction, instead of two dependent ones: 2 BAR.SYNC instead of 5 on sm_90).
    With d = x - k, mean = k + sum(d) / N and var = sum(d^2) / N - (sum(d) / N)^2: the
    shift keeps both terms of the difference near var (|mean - k| is about one standard
    deviation), where the unshifted E[x^2] - E[x]^2 cancels for a mean far from zero."""

    @cutile.entry
    def layernorm_shifted(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                          w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32, BM: Const[int],
                          BN: Const[int], TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        n = x.shape[1]
        k = x.load_tile((BM, 1), (block_id(0), 0), allow_tma=False).astype(f32)
        t = load_tile_like(x, z, allow_tma=TMA).astype(f32)
        d, s1, var = shifted_stats(t, k, n, BM, BN)
        inv = rsqrt(var + eps)
        ws = w.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        bs = b.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        z.store(((d - s1) * inv * ws + bs).astype(dt), allow_tma=STORE_TMA)

    return layernorm_shifted


def make_layernorm_gather(dt: DType) -> cutile.EntryKernel:
    """`layernorm` with the row read by a `gather` (row_kernels/loads.py: predicated
    16-byte loads, all in flight at once in bf16 too); the same arguments, TMA for the
    weight and the bias only."""

    @cutile.entry
    def layernorm_gather(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                         w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32, BM: Const[int],
                         BN: Const[int], TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        n = x.shape[1]
        t = gather_rows(x, BM, BN).astype(f32)
        d, var = centered_stats(t, n, BN)
        inv = rsqrt(var + eps)
        ws = w.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        bs = b.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        z.store((d * inv * ws + bs).astype(dt), allow_tma=STORE_TMA)

    return layernorm_gather


def make_layernorm_gather_shifted(dt: DType, fused: bool = False) -> cutile.EntryKernel:
    """`layernorm_shifted` (one round of reductions) with the row read by a `gather`, as
    `make_layernorm_gather`. `fused`: the squares summed by `fma_stats` and the output by
    `normalized_fma`, fused multiply-adds where tileiras left an FMUL and an FADD (Triton's
    ptxas contracts them; the "gather_ffma" variant)."""
    stats = fma_stats if fused else shifted_stats
    out = normalized_fma if fused else normalized

    @cutile.entry
    def layernorm_gather_shifted(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                                 w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32,
                                 BM: Const[int], BN: Const[int], TMA: Const[bool],
                                 STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        n = x.shape[1]
        k = x.load_tile((BM, 1), (block_id(0), 0), allow_tma=False).astype(f32)
        t = gather_rows(x, BM, BN).astype(f32)
        d, s1, var = stats(t, k, n, BM, BN)
        inv = rsqrt(var + eps)
        ws = w.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        bs = b.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        z.store(out(d, s1, inv, ws, bs).astype(dt), allow_tma=STORE_TMA)

    return layernorm_gather_shifted


def make_layernorm_gather_w_shifted(dt: DType, fused: bool = False) -> cutile.EntryKernel:
    """`layernorm_gather_shifted` with the weight and the bias read by gathers too, ahead
    of the reductions (row_kernels/loads.py `gather_vector`): their tile loads in bf16 went
    out one 16-byte chunk at a time, after the reductions (4k over 4 warps: 4 round trips
    of a weight and a bias chunk each); the same arguments, TMA unused. `fused`: as in
    `make_layernorm_gather_shifted` (the "gather_w_ffma" variant)."""
    stats = fma_stats if fused else shifted_stats
    out = normalized_fma if fused else normalized

    @cutile.entry
    def layernorm_gather_w_shifted(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                                   w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32,
                                   BM: Const[int], BN: Const[int], TMA: Const[bool],
                                   STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        ws = gather_vector(w, BN).astype(f32)
        bs = gather_vector(b, BN).astype(f32)
        k = x.load_tile((BM, 1), (block_id(0), 0), allow_tma=False).astype(f32)
        t = gather_rows(x, BM, BN).astype(f32)
        d, s1, var = stats(t, k, x.shape[1], BM, BN)
        z.store(out(d, s1, rsqrt(var + eps), ws, bs).astype(dt), allow_tma=STORE_TMA)

    return layernorm_gather_w_shifted


def make_layernorm_rows(dt: DType) -> cutile.EntryKernel:
    """BM rows a block, one after another, as examples/softmax.py `make_softmax_rows`: the
    next row (and its first element, the shift) is loaded before this row's one round of
    reductions, the weight and bias once a block."""

    @cutile.entry
    def layernorm_rows(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                       w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32, BM: Const[int],
                       BN: Const[int], TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        n = x.shape[1]
        out = z.partition_mut((1, BN))
        first = block_id(0) * BM
        ahead = gather_row(x, first, BN)
        ahead_k = gather(x, (first + arange(1)[:, None], arange(1)[None, :]))
        ws = gather_vector(w, BN).astype(f32)
        bs = gather_vector(b, BN).astype(f32)
        for r in range(BM - 1):
            t = ahead.astype(f32)
            k = ahead_k.astype(f32)
            ahead = gather_row(x, first + r + 1, BN)
            ahead_k = gather(x, (first + r + 1 + arange(1)[:, None], arange(1)[None, :]))
            d, s1, var = shifted_stats(t, k, n, 1, BN)
            out.store(((d - s1) * rsqrt(var + eps) * ws + bs).astype(dt), (r, 0),
                      allow_tma=STORE_TMA)
        d, s1, var = shifted_stats(ahead.astype(f32), ahead_k.astype(f32), n, 1, BN)
        out.store(((d - s1) * rsqrt(var + eps) * ws + bs).astype(dt), (BM - 1, 0),
                  allow_tma=STORE_TMA)

    return layernorm_rows


def make_layernorm_looped(dt: DType) -> cutile.EntryKernel:
    @cutile.entry
    def layernorm_looped(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                         w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32, BM: Const[int],
                         BN: Const[int], BK: Const[int]):
        i = block_id(0)
        n = x.shape[1]
        count = zeros((1, 1), f32)
        mean = zeros((BM, 1), f32)
        m2 = zeros((BM, 1), f32)
        for j in range(num_tiles(x, 1, (BM, BK))):
            inside = j * BK + arange(BK)[None, :] < n
            t = x.load_tile((BM, BK), (i, j)).astype(f32)
            c = inside.astype(f32).sum(axis=1, keepdims=True)      # this tile's columns
            t_mean = t.sum(axis=1, keepdims=True) / c
            d = where(inside, t - t_mean, 0.0)
            total = count + c
            delta = t_mean - mean
            mean = mean + delta * (c / total)
            m2 = m2 + (d * d).sum(axis=1, keepdims=True) + delta * delta * (count * c / total)
            count = total
        inv = rsqrt(m2 / n + eps)
        out = z.partition_mut((BM, BK))
        for j in range(num_tiles(x, 1, (BM, BK))):
            t = x.load_tile((BM, BK), (i, j)).astype(f32)
            ws = w.load_tile((BK,), (j,)).astype(f32)[None, :]
            bs = b.load_tile((BK,), (j,)).astype(f32)[None, :]
            out.store(((t - mean) * inv * ws + bs).astype(dt), (0, j))

    return layernorm_looped


layernorm = make_layernorm(f32)
layernorm_bf16 = make_layernorm(bf16)
layernorm_looped = make_layernorm_looped(f32)
layernorm_looped_bf16 = make_layernorm_looped(bf16)
layernorm_shifted = make_layernorm_shifted(f32)
layernorm_shifted_bf16 = make_layernorm_shifted(bf16)
layernorm_gather = make_layernorm_gather(f32)
layernorm_gather_bf16 = make_layernorm_gather(bf16)
layernorm_gather_shifted = make_layernorm_gather_shifted(f32)
layernorm_gather_shifted_bf16 = make_layernorm_gather_shifted(bf16)
KERNELS = {(f32, False): layernorm, (bf16, False): layernorm_bf16,
           (f32, True): layernorm_looped, (bf16, True): layernorm_looped_bf16,
           (f32, "shifted"): layernorm_shifted, (bf16, "shifted"): layernorm_shifted_bf16,
           (f32, "gather"): layernorm_gather, (bf16, "gather"): layernorm_gather_bf16,
           (f32, "gather_shifted"): layernorm_gather_shifted,
           (bf16, "gather_shifted"): layernorm_gather_shifted_bf16,
           (f32, "gather_w_shifted"): make_layernorm_gather_w_shifted(f32),
           (bf16, "gather_w_shifted"): make_layernorm_gather_w_shifted(bf16),
           (f32, "rows"): make_layernorm_rows(f32), (bf16, "rows"): make_layernorm_rows(bf16),
           (f32, "gather_w_ffma"): make_layernorm_gather_w_shifted(f32, fused=True),
           (bf16, "gather_w_ffma"): make_layernorm_gather_w_shifted(bf16, fused=True),
           (f32, "gather_ffma"): make_layernorm_gather_shifted(f32, fused=True),
           (bf16, "gather_ffma"): make_layernorm_gather_shifted(bf16, fused=True)}


# One-pass plans for sm_90 by (BN, element bytes): (BM, tma, store_tma, hints), as in
# examples/softmax.py; `tma` also brings the weight and bias in through the TMA unit. Through
# TMA they cost a block 2 * BN elements of shared memory (bf16 16k: 64 KB, f32 32k: more
# than 200 KB) and a producer warpgroup; straight into registers they cost nothing extra,
# and tileiras issues their loads ahead of the two reductions where the registers allow.
# benchmarks/norms.py times them against the alternatives.
ROW_PLANS: dict[tuple[int, int], RowPlan] = {
    (1024, 2): (1, False, False, {"num_worker_warps": 1}, "gather_w_shifted"),
    (1024, 4): (4, False, False, {"num_worker_warps": 1}, "rows"),
    (4096, 2): (1, False, False, {"occupancy": 8, "fp_contract": True},
                "gather_w_ffma"),  # x1.02 over "gather_shifted" (RESULTS.md, eighth session)
    (4096, 4): (1, False, False, {"num_worker_warps": 8, "occupancy": 5}),
    (16384, 2): (1, False, False, {"num_worker_warps": 16, "occupancy": 2}, "gather_shifted"),
    (16384, 4): (1, False, False, {"num_worker_warps": 16, "occupancy": 2}, "gather_w_shifted"),
    (32768, 2): (1, False, False, {"num_worker_warps": 32}, "gather_shifted"),
    (32768, 4): (1, False, False, {"num_worker_warps": 16}, "shifted"),
}
MAX_ROW = 32768  # longer rows take the looped kernel


def plan(n: int, dt: DType, max_row: int = MAX_ROW, bk: int = 4096) -> Plan:
    """The plan for rows of `n` columns of `dt`, as in examples/softmax.py."""
    return plan_rows(n, dt, KERNELS, ROW_PLANS, min(max_row, MAX_ROW), bk)


def reference(xs: np.ndarray, ws: np.ndarray, bs: np.ndarray, eps: float) -> np.ndarray:
    x = xs.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * ws.astype(np.float64) + bs.astype(np.float64)


def check(xs: np.ndarray, ws: np.ndarray, bs: np.ndarray, dt: DType, p: Plan,
          eps: float = 1e-5) -> float:
    m, n = xs.shape
    z = api.full([m, n], np.nan, dt).partition([p.BM, p.BN])
    z, *_ = p.kernel(dt)(z, api.from_numpy(xs), api.from_numpy(ws), api.from_numpy(bs), eps,
                         **p.consts()).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    ref = reference(xs, ws, bs, eps)
    assert np.isfinite(out).all(), "unwritten (NaN) elements"
    # bf16 rounds the output to 8 significant bits; f32 accumulates over the row
    rtol, atol = (8e-3, 1e-2) if dt is bf16 else (1e-5, 1e-5)
    err = np.abs(out - ref) - rtol * np.abs(ref)
    assert err.max() < atol, f"max error {err.max():.3g} past rtol {rtol}"
    return float(np.abs(out - ref).max())


def main(m: int = 300, n: int = 1000, long_n: int = 20000, bk: int = 2048) -> None:
    rng = np.random.default_rng(12)
    worst = 0.0
    for dt, host in ((f32, np.float32), (bf16, ml_dtypes.bfloat16)):
        for rows, cols, p in ((m, n, plan(n, dt)),
                              (max(1, m // 8), long_n,
                               plan(long_n, dt, max_row=next_pow2(long_n) // 2, bk=bk))):
            # a mean far from zero: the variance must not cancel
            xs = (rng.standard_normal((rows, cols)) * 2 + 5).astype(host)
            ws = rng.uniform(0.5, 1.5, cols).astype(host)
            bs = rng.standard_normal(cols).astype(host)
            worst = max(worst, check(xs, ws, bs, dt, p))
    print(f"layernorm: {m}x{n} rows in one pass, {max(1, m // 8)}x{long_n} in column tiles "
          f"of {bk}, f32 and bf16: max abs error {worst:.2e}")


if __name__ == "__main__":
    main()

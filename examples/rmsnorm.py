"""RMSNorm over the rows of an (M, N) matrix whose rows are not a tile multiple, with a
weight, in f32 and bf16 (the sum of squares in f32 either way):
y = x / sqrt(mean(x^2) + eps) * w.

- `rmsnorm`, one pass: a block owns (BM, BN) whole rows with BN >= N (an `assert` checks it
  on the device) and keeps them in registers, so x is read once and y written once; the
  zero padding adds nothing to the sum of squares, which is divided by N.
- `rmsnorm_looped`, for rows too long to keep in registers: whole rows per block, walked in
  (BM, BK) column tiles twice, once for the sum of squares (kept per lane, reduced once at
  the end) and once to write through a sub-partition of the block's own tile.

`plan(n, dtype)` picks the tiles and hints on the host, as in examples/softmax.py.
Every element is checked against a float64 reference on random inputs.

    python examples/rmsnorm.py
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
    bf16,
    block_id,
    extract,
    f32,
    fma,
    load_tile_like,
    num_tiles,
    rsqrt,
    zeros,
)
from cutile.dtypes import DType

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared row_kernels package
from row_kernels.loads import gather_row, gather_rows, gather_vector
from row_kernels.plans import Plan, RowPlan, next_pow2, plan_rows


@cutile.device
def sum_sq(t, BM, BN):
    """The rows' sums of squares by fused multiply-adds: fma(lo, lo, hi * hi) of the two
    halves of the row (each thread's first and last chunks where it holds two or more, so
    nothing moves between threads), one FMUL, one FFMA and one FADD per pair where
    `(t * t).sum()` costs two FMULs and two FADDs (tileiras does not contract them)."""
    lo = extract(t, (0, 0), (BM, BN // 2))
    hi = extract(t, (0, 1), (BM, BN // 2))
    return fma(lo, lo, hi * hi).sum(axis=1, keepdims=True)


@cutile.device
def sum_sq_plain(t, BM, BN):
    """The rows' sums of squares as written: an FMUL and an FADD an element."""
    return (t * t).sum(axis=1, keepdims=True)


def make_rmsnorm(dt: DType) -> cutile.EntryKernel:
    @cutile.entry
    def rmsnorm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]], w: Tensor[dt, [-1]],
                eps: f32, BM: Const[int], BN: Const[int], TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        t = load_tile_like(x, z, allow_tma=TMA).astype(f32)
        inv = rsqrt((t * t).sum(axis=1, keepdims=True) / x.shape[1] + eps)
        ws = w.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        z.store((t * inv * ws).astype(dt), allow_tma=STORE_TMA)

    return rmsnorm


def make_rmsnorm_gather(dt: DType, fused: bool = False) -> cutile.EntryKernel:
    """`rmsnorm` with the row read by a `gather` (row_kernels/loads.py: predicated 16-byte
    loads, all in flight at once in bf16 too); the same arguments, TMA for the weight
    only. `fused`: the sum of squares by `sum_sq` (fused multiply-adds, as Triton's ptxas
    contracts them; the "gather_ffma" variant)."""
    squares = sum_sq if fused else sum_sq_plain

    @cutile.entry
    def rmsnorm_gather(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                       w: Tensor[dt, [-1]], eps: f32, BM: Const[int], BN: Const[int],
                       TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        t = gather_rows(x, BM, BN).astype(f32)
        inv = rsqrt(squares(t, BM, BN) / x.shape[1] + eps)
        ws = w.load_tile((BN,), (0,), allow_tma=TMA).astype(f32)[None, :]
        z.store((t * inv * ws).astype(dt), allow_tma=STORE_TMA)

    return rmsnorm_gather


def make_rmsnorm_gather_w(dt: DType) -> cutile.EntryKernel:
    """`rmsnorm_gather` with the weight read by a gather too, ahead of the reduction
    (row_kernels/loads.py `gather_vector`): its tile load in bf16 went out one 16-byte
    chunk at a time, after the reduction (one warp at 1k: 4 round trips a row); the same
    arguments, TMA unused."""

    @cutile.entry
    def rmsnorm_gather_w(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                         w: Tensor[dt, [-1]], eps: f32, BM: Const[int], BN: Const[int],
                         TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        ws = gather_vector(w, BN).astype(f32)
        t = gather_rows(x, BM, BN).astype(f32)
        inv = rsqrt((t * t).sum(axis=1, keepdims=True) / x.shape[1] + eps)
        z.store((t * inv * ws).astype(dt), allow_tma=STORE_TMA)

    return rmsnorm_gather_w


def make_rmsnorm_rows(dt: DType, fused: bool = False) -> cutile.EntryKernel:
    """BM rows a block, one after another, as examples/softmax.py `make_softmax_rows`: the
    next row's loads go out before this row's reduction, the weight is read once a block,
    and a block's start is paid once for BM rows. `fused`: the sums of squares by `sum_sq`
    (the "rows_ffma" variant)."""
    squares = sum_sq if fused else sum_sq_plain

    @cutile.entry
    def rmsnorm_rows(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                     w: Tensor[dt, [-1]], eps: f32, BM: Const[int], BN: Const[int],
                     TMA: Const[bool], STORE_TMA: Const[bool]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        out = z.partition_mut((1, BN))
        first = block_id(0) * BM
        ahead = gather_row(x, first, BN)
        ws = gather_vector(w, BN).astype(f32)
        scale = 1.0 / x.shape[1]
        for r in range(BM - 1):
            t = ahead.astype(f32)
            ahead = gather_row(x, first + r + 1, BN)
            inv = rsqrt(squares(t, 1, BN) * scale + eps)
            out.store((t * inv * ws).astype(dt), (r, 0), allow_tma=STORE_TMA)
        t = ahead.astype(f32)
        inv = rsqrt(squares(t, 1, BN) * scale + eps)
        out.store((t * inv * ws).astype(dt), (BM - 1, 0), allow_tma=STORE_TMA)

    return rmsnorm_rows


def make_rmsnorm_looped(dt: DType) -> cutile.EntryKernel:
    @cutile.entry
    def rmsnorm_looped(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                       w: Tensor[dt, [-1]], eps: f32, BM: Const[int], BN: Const[int],
                       BK: Const[int]):
        i = block_id(0)
        sq = zeros((BM, BK), f32)
        for j in range(num_tiles(x, 1, (BM, BK))):
            t = x.load_tile((BM, BK), (i, j)).astype(f32)
            sq = sq + t * t
        inv = rsqrt(sq.sum(axis=1, keepdims=True) / x.shape[1] + eps)
        out = z.partition_mut((BM, BK))
        for j in range(num_tiles(x, 1, (BM, BK))):
            t = x.load_tile((BM, BK), (i, j)).astype(f32)
            ws = w.load_tile((BK,), (j,)).astype(f32)[None, :]
            out.store((t * inv * ws).astype(dt), (0, j))

    return rmsnorm_looped


rmsnorm = make_rmsnorm(f32)
rmsnorm_bf16 = make_rmsnorm(bf16)
rmsnorm_looped = make_rmsnorm_looped(f32)
rmsnorm_looped_bf16 = make_rmsnorm_looped(bf16)
rmsnorm_gather = make_rmsnorm_gather(f32)
rmsnorm_gather_bf16 = make_rmsnorm_gather(bf16)
rmsnorm_gather_w = make_rmsnorm_gather_w(f32)
rmsnorm_gather_w_bf16 = make_rmsnorm_gather_w(bf16)
rmsnorm_rows = make_rmsnorm_rows(f32)
rmsnorm_rows_bf16 = make_rmsnorm_rows(bf16)
KERNELS = {(f32, False): rmsnorm, (bf16, False): rmsnorm_bf16,
           (f32, True): rmsnorm_looped, (bf16, True): rmsnorm_looped_bf16,
           (f32, "gather"): rmsnorm_gather, (bf16, "gather"): rmsnorm_gather_bf16,
           (f32, "gather_w"): rmsnorm_gather_w, (bf16, "gather_w"): rmsnorm_gather_w_bf16,
           (f32, "rows"): rmsnorm_rows, (bf16, "rows"): rmsnorm_rows_bf16,
           (f32, "gather_ffma"): make_rmsnorm_gather(f32, fused=True),
           (bf16, "gather_ffma"): make_rmsnorm_gather(bf16, fused=True),
           (f32, "rows_ffma"): make_rmsnorm_rows(f32, fused=True),
           (bf16, "rows_ffma"): make_rmsnorm_rows(bf16, fused=True)}


# One-pass plans for sm_90 by (BN, element bytes): (BM, tma, store_tma, hints), as in
# examples/softmax.py; `tma` also brings the weight in through the TMA unit (False: straight
# into registers, where tileiras loads it ahead of the reduction when the registers allow).
# benchmarks/norms.py times them against the alternatives.
ROW_PLANS: dict[tuple[int, int], RowPlan] = {
    (1024, 2): (8, False, False, {"num_worker_warps": 1, "occupancy": 4, "fp_contract": True},
                "rows_ffma"),  # x1.03 over "rows" (RESULTS.md, eighth session)
    (1024, 4): (4, False, False, {"num_worker_warps": 1}, "rows"),
    (4096, 2): (1, True, False, {"occupancy": 6}, "gather"),  # x1.25
    (4096, 4): (1, True, False, {"occupancy": 4}),
    (16384, 2): (1, False, False, {"num_worker_warps": 16, "occupancy": 2}, "gather"),  # x1.11
    (16384, 4): (1, True, False, {"num_worker_warps": 16, "occupancy": 2}, "gather"),  # x1.02
    (32768, 2): (1, False, False, {"num_worker_warps": 32}, "gather"),  # x1.25
    (32768, 4): (1, False, False, {"num_worker_warps": 32}),
}
MAX_ROW = 32768  # longer rows take the looped kernel


def plan(n: int, dt: DType, max_row: int = MAX_ROW, bk: int = 4096) -> Plan:
    """The plan for rows of `n` columns of `dt`, as in examples/softmax.py."""
    return plan_rows(n, dt, KERNELS, ROW_PLANS, min(max_row, MAX_ROW), bk)


def reference(xs: np.ndarray, ws: np.ndarray, eps: float) -> np.ndarray:
    x = xs.astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * ws.astype(np.float64)


def check(xs: np.ndarray, ws: np.ndarray, dt: DType, p: Plan, eps: float = 1e-6) -> float:
    m, n = xs.shape
    z = api.full([m, n], np.nan, dt).partition([p.BM, p.BN])
    z, *_ = p.kernel(dt)(z, api.from_numpy(xs), api.from_numpy(ws), eps, **p.consts()).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    ref = reference(xs, ws, eps)
    assert np.isfinite(out).all(), "unwritten (NaN) elements"
    rtol, atol = (8e-3, 1e-3) if dt is bf16 else (1e-5, 1e-6)
    err = np.abs(out - ref) - rtol * np.abs(ref)
    assert err.max() < atol, f"max error {err.max():.3g} past rtol {rtol}"
    return float(np.abs(out - ref).max())


def main(m: int = 300, n: int = 1000, long_n: int = 20000, bk: int = 2048) -> None:
    rng = np.random.default_rng(13)
    worst = 0.0
    for dt, host in ((f32, np.float32), (bf16, ml_dtypes.bfloat16)):
        for rows, cols, p in ((m, n, plan(n, dt)),
                              (max(1, m // 8), long_n,
                               plan(long_n, dt, max_row=next_pow2(long_n) // 2, bk=bk))):
            xs = (rng.standard_normal((rows, cols)) * 3).astype(host)
            ws = rng.uniform(0.5, 1.5, cols).astype(host)
            worst = max(worst, check(xs, ws, dt, p))
    print(f"rmsnorm: {m}x{n} rows in one pass, {max(1, m // 8)}x{long_n} in column tiles of "
          f"{bk}, f32 and bf16: max abs error {worst:.2e}")


if __name__ == "__main__":
    main()

"""RMSNorm over the rows of an (M, N) matrix whose rows are not a tile multiple, with a
weight, in f32 and bf16 (the sum of squares in f32 either way):
y = x / sqrt(mean(x^2) + eps) * w.

- `rmsnorm`: a block owns (BM, BN) with BN >= N (an `assert` checks it on the device), one
  tile per row; the zero padding adds nothing to the sum of squares, which is divided by N.
- `rmsnorm_looped`, for long rows: whole rows per block, walked in (BM, BK) column tiles
  twice, once for the sum of squares (kept per lane, reduced once at the end) and once to
  write through a sub-partition of the block's own tile.

Every element is checked against a float64 reference on random inputs.

    python examples/rmsnorm.py
"""

from __future__ import annotations

from typing import Any

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
    f32,
    load_tile_like,
    num_tiles,
    rsqrt,
    zeros,
)
from cutile.dtypes import DType


def make_rmsnorm(dt: DType) -> cutile.EntryKernel:
    @cutile.entry
    def rmsnorm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]], w: Tensor[dt, [-1]],
                eps: f32, BM: Const[int], BN: Const[int]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        t = load_tile_like(x, z).astype(f32)
        inv = rsqrt((t * t).sum(axis=1, keepdims=True) / x.shape[1] + eps)
        ws = w.load_tile((BN,), (0,)).astype(f32)[None, :]
        z.store((t * inv * ws).astype(dt))

    return rmsnorm


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
KERNELS = {(f32, False): rmsnorm, (bf16, False): rmsnorm_bf16,
           (f32, True): rmsnorm_looped, (bf16, True): rmsnorm_looped_bf16}


def next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def plan(n: int, max_row: int = 8192, bk: int = 2048, bm: int | None = None
         ) -> tuple[bool, int, int, dict[str, Any]]:
    """(looped, BM, BN, consts) for rows of `n` columns, as in examples/softmax.py."""
    bn = next_pow2(n)
    looped = bn > max_row
    if bm is None:
        bm = max(1, min(16, 4096 // (bk if looped else bn)))
    return looped, bm, bn, ({"BK": min(bk, bn)} if looped else {})


def reference(xs: np.ndarray, ws: np.ndarray, eps: float) -> np.ndarray:
    x = xs.astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * ws.astype(np.float64)


def check(xs: np.ndarray, ws: np.ndarray, dt: DType, eps: float = 1e-6,
          **plan_args: Any) -> float:
    m, n = xs.shape
    looped, bm, bn, consts = plan(n, **plan_args)
    z = api.full([m, n], np.nan, dt).partition([bm, bn])
    z, *_ = KERNELS[(dt, looped)](z, api.from_numpy(xs), api.from_numpy(ws), eps,
                                  **consts).sync()
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
        for rows, cols, args in ((m, n, {}),
                                 (max(1, m // 8), long_n,
                                  {"max_row": min(8192, next_pow2(long_n) // 2), "bk": bk})):
            xs = (rng.standard_normal((rows, cols)) * 3).astype(host)
            ws = rng.uniform(0.5, 1.5, cols).astype(host)
            worst = max(worst, check(xs, ws, dt, **args))
    print(f"rmsnorm: {m}x{n} rows in one tile, {max(1, m // 8)}x{long_n} in column tiles of "
          f"{bk}, f32 and bf16: max abs error {worst:.2e}")


if __name__ == "__main__":
    main()

"""LayerNorm over the rows of an (M, N) matrix whose rows are not a tile multiple, with a
weight and a bias, in f32 and bf16 (statistics in f32 either way):
y = (x - mean) / sqrt(var + eps) * w + b, var the biased variance (torch's).

- `layernorm`: a block owns (BM, BN) with BN >= N (an `assert` checks it on the device),
  one tile per row. The padding is zero; the mean divides by N, and the centred values are
  masked to the row (`where`) before they are squared, so the padding adds nothing to the
  variance.
- `layernorm_looped`, for long rows: whole rows per block, walked in (BM, BK) column tiles
  twice. The first pass merges each tile's count, mean and sum of squared deviations into the
  running ones (Chan et al.'s parallel variance: no cancellation, unlike E[x^2] - E[x]^2),
  the second normalizes and writes through a sub-partition of the block's own tile.

Every element is checked against a float64 reference on random inputs.

    python examples/layernorm.py
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
    arange,
    bf16,
    block_id,
    f32,
    load_tile_like,
    num_tiles,
    rsqrt,
    where,
    zeros,
)
from cutile.dtypes import DType


def make_layernorm(dt: DType) -> cutile.EntryKernel:
    @cutile.entry
    def layernorm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                  w: Tensor[dt, [-1]], b: Tensor[dt, [-1]], eps: f32, BM: Const[int],
                  BN: Const[int]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        n = x.shape[1]
        t = load_tile_like(x, z).astype(f32)
        mean = t.sum(axis=1, keepdims=True) / n
        d = where(arange(BN)[None, :] < n, t - mean, 0.0)
        inv = rsqrt((d * d).sum(axis=1, keepdims=True) / n + eps)
        ws = w.load_tile((BN,), (0,)).astype(f32)[None, :]
        bs = b.load_tile((BN,), (0,)).astype(f32)[None, :]
        z.store((d * inv * ws + bs).astype(dt))

    return layernorm


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
KERNELS = {(f32, False): layernorm, (bf16, False): layernorm_bf16,
           (f32, True): layernorm_looped, (bf16, True): layernorm_looped_bf16}


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


def reference(xs: np.ndarray, ws: np.ndarray, bs: np.ndarray, eps: float) -> np.ndarray:
    x = xs.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * ws.astype(np.float64) + bs.astype(np.float64)


def check(xs: np.ndarray, ws: np.ndarray, bs: np.ndarray, dt: DType, eps: float = 1e-5,
          **plan_args: Any) -> float:
    m, n = xs.shape
    looped, bm, bn, consts = plan(n, **plan_args)
    z = api.full([m, n], np.nan, dt).partition([bm, bn])
    z, *_ = KERNELS[(dt, looped)](z, api.from_numpy(xs), api.from_numpy(ws),
                                  api.from_numpy(bs), eps, **consts).sync()
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
        for rows, cols, args in ((m, n, {}),
                                 (max(1, m // 8), long_n,
                                  {"max_row": min(8192, next_pow2(long_n) // 2), "bk": bk})):
            # a mean far from zero: the variance must not cancel
            xs = (rng.standard_normal((rows, cols)) * 2 + 5).astype(host)
            ws = rng.uniform(0.5, 1.5, cols).astype(host)
            bs = rng.standard_normal(cols).astype(host)
            worst = max(worst, check(xs, ws, bs, dt, **args))
    print(f"layernorm: {m}x{n} rows in one tile, {max(1, m // 8)}x{long_n} in column tiles of "
          f"{bk}, f32 and bf16: max abs error {worst:.2e}")


if __name__ == "__main__":
    main()

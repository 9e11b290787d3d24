"""Row softmax of an (M, N) matrix whose rows are not a tile multiple, in f32 and bf16 (the
arithmetic is f32 either way), with two kernels:

- `softmax`: a block owns (BM, BN) with BN >= N (an `assert` checks it on the device), so
  a row is one tile: load it padded with -inf (exp(-inf) = 0, so the padding drops out of
  the max and the sum), normalize, store.
- `softmax_looped`, for rows too long for one tile (32k columns): the block still owns whole
  rows, (BM, BN) with BN >= N, and walks them in (BM, BK) column tiles twice: once for the
  running max and sum (online softmax), once to write exp(x - max) / sum through a
  sub-partition of its own tile (`z.partition_mut((BM, BK))`).

Every element is checked against a float64 reference on random inputs.

    python examples/softmax.py
"""

from __future__ import annotations

import math
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
    exp,
    f32,
    full,
    load_tile_like,
    maximum,
    num_tiles,
    zeros,
)
from cutile.dtypes import DType


def make_softmax(dt: DType) -> cutile.EntryKernel:
    """One (BM, BN) tile of whole rows per block; `dt` is the element type in and out."""

    @cutile.entry
    def softmax(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]], BM: Const[int],
                BN: Const[int]):
        assert x.shape[1] <= BN, "a row must fit one tile"
        row = load_tile_like(x, z, padding="neg_inf").astype(f32)
        e = exp(row - row.max(axis=1, keepdims=True))
        z.store((e / e.sum(axis=1, keepdims=True)).astype(dt))

    return softmax


def make_softmax_looped(dt: DType) -> cutile.EntryKernel:
    """Whole rows per block, read in (BM, BK) column tiles: one pass for the max and the sum,
    one to write."""

    @cutile.entry
    def softmax_looped(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                       BM: Const[int], BN: Const[int], BK: Const[int]):
        i = block_id(0)
        m_i = full((BM, 1), -math.inf, f32)
        l_i = zeros((BM, 1), f32)
        for j in range(num_tiles(x, 1, (BM, BK))):
            t = x.load_tile((BM, BK), (i, j), padding="neg_inf").astype(f32)
            m_new = maximum(m_i, t.max(axis=1, keepdims=True))
            l_i = l_i * exp(m_i - m_new) + exp(t - m_new).sum(axis=1, keepdims=True)
            m_i = m_new
        inv = 1.0 / l_i
        out = z.partition_mut((BM, BK))
        for j in range(num_tiles(x, 1, (BM, BK))):
            t = x.load_tile((BM, BK), (i, j), padding="neg_inf").astype(f32)
            out.store((exp(t - m_i) * inv).astype(dt), (0, j))

    return softmax_looped


softmax = make_softmax(f32)
softmax_bf16 = make_softmax(bf16)
softmax_looped = make_softmax_looped(f32)
softmax_looped_bf16 = make_softmax_looped(bf16)
KERNELS = {(f32, False): softmax, (bf16, False): softmax_bf16,
           (f32, True): softmax_looped, (bf16, True): softmax_looped_bf16}


def next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def plan(n: int, max_row: int = 8192, bk: int = 2048, bm: int | None = None
         ) -> tuple[bool, int, int, dict[str, Any]]:
    """(looped, BM, BN, consts) for rows of `n` columns: one tile per row up to `max_row`
    columns, else column tiles of `bk`; BM keeps a block's tile near 4k elements."""
    bn = next_pow2(n)
    looped = bn > max_row
    if bm is None:
        bm = max(1, min(16, 4096 // (bk if looped else bn)))
    return looped, bm, bn, ({"BK": min(bk, bn)} if looped else {})


def run(xs: np.ndarray, dt: DType, **plan_args: Any) -> np.ndarray:
    m, n = xs.shape
    looped, bm, bn, consts = plan(n, **plan_args)
    z = api.full([m, n], np.nan, dt).partition([bm, bn])
    z, _ = KERNELS[(dt, looped)](z, api.from_numpy(xs), **consts).sync()
    return z.unpartition().to_numpy().astype(np.float64)


def reference(xs: np.ndarray) -> np.ndarray:
    x = xs.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check(xs: np.ndarray, dt: DType, **plan_args: Any) -> float:
    out = run(xs, dt, **plan_args)
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
        worst = max(worst, check(xs, dt))                           # one tile per row
        xs = (rng.standard_normal((max(1, m // 8), long_n)) * 4).astype(host)
        worst = max(worst, check(xs, dt, max_row=min(8192, next_pow2(long_n) // 2), bk=bk))
    print(f"softmax: {m}x{n} rows in one tile, {max(1, m // 8)}x{long_n} in column tiles of "
          f"{bk}, f32 and bf16: max relative error {worst:.2e}")


if __name__ == "__main__":
    main()

"""A batched GEMM, z[b] = x[b] @ y[b] for 3-D bf16 tensors x: [B, M, K] and y: [B, K, N]:
block (b, i, j) owns the (1, BM, BN) tile of batch b, loads (1, BM, BK) and (1, BK, BN)
tiles, reshapes them to 2-D for `mma` (f32 accumulator) and the result back to 3-D.

Every element is checked against a float64 reference on ragged shapes.

    python examples/batched_gemm.py
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, bf16, block_id, f32, mma, num_tiles, zeros


@cutile.entry
def batched_gemm(z: Mut[Tensor[bf16, [1, "BM", "BN"]]], x: Tensor[bf16, [-1, -1, -1]],
                 y: Tensor[bf16, [-1, -1, -1]], BM: Const[int], BN: Const[int],
                 BK: Const[int]):
    b, i, j = block_id(0), block_id(1), block_id(2)
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 2, (1, BM, BK))):
        xs = x.load_tile((1, BM, BK), (b, i, k)).reshape((BM, BK))
        ys = y.load_tile((1, BK, BN), (b, k, j)).reshape((BK, BN))
        acc = mma(xs, ys, acc)
    z.store(acc.astype(bf16).reshape((1, BM, BN)))


def main(batch: int = 6, m: int = 200, n: int = 150, k: int = 100,
         tiles: tuple[int, int, int] = (64, 64, 32)) -> None:
    rng = np.random.default_rng(22)
    a = rng.standard_normal((batch, m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((batch, k, n)).astype(ml_dtypes.bfloat16)
    bm, bn, bk = tiles
    z = api.full([batch, m, n], np.nan, bf16).partition([1, bm, bn])
    z, _, _ = batched_gemm(z, api.from_numpy(a), api.from_numpy(b), BK=bk).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.isfinite(out).all(), "unwritten (NaN) elements"
    # the bf16 output keeps 8 significant bits
    err = np.abs(out - ref) - 8e-3 * np.abs(ref)
    assert err.max() < 1e-3 * np.sqrt(k), f"max error {err.max():.3g} past the bf16 rounding"
    print(f"batched_gemm: {batch} x ({m}x{k} @ {k}x{n}) in tiles of {bm}x{bn}x{bk}: "
          f"max abs error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()

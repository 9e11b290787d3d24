"""Split-K GEMM, z = x @ y with f16 inputs into an f32 `Atomic` output: for a short, wide
output and a long K there are too few output tiles to fill the GPU, so the K dimension is
cut into S splits too. Block (i, j, s) owns no tile: it multiplies its share of the K tiles
(`K tiles // S` consecutive ones; split 0 also takes the few left over) into a (BM, BN) f32
accumulator and adds it into z with `atomic_add` at the tile's (row, column) indices,
broadcast together. Lanes past the end of z (the ragged edges) do nothing,
so no mask is written, and the S partial products of a tile meet in z without a race.

The output has no `Mut` partition to decide the grid, so the call gives it,
`grid=(cdiv(M, BM), cdiv(N, BN), S)`, and z starts at zero. Every element is checked
against a float64 reference. Every tile index is proved in bounds or checked once at the
launch: there is no check inside the loops.

    python examples/split_k_gemm.py
"""

from __future__ import annotations

import numpy as np

import cutile
from cutile import api
from cutile.core import (
    Atomic,
    Const,
    Tensor,
    arange,
    atomic_add,
    block_id,
    f16,
    f32,
    i32,
    mma,
    num_blocks,
    num_tiles,
    zeros,
)


@cutile.entry
def split_k_gemm(z: Atomic[Tensor[f32, [-1, -1]]], x: Tensor[f16, [-1, -1]],
                 y: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int]):
    i, j, s = block_id(0), block_id(1), block_id(2)
    k_tiles = num_tiles(x, 1, (BM, BK))
    per_split = k_tiles // num_blocks(2)              # K tiles per split
    acc = zeros((BM, BN), f32)
    for kk in range(per_split):
        k = s * per_split + kk
        acc = mma(x.load_tile((BM, BK), (i, k)), y.load_tile((BK, BN), (k, j)), acc)
    if s == 0:                                        # the K tiles left over, fewer than S
        for k in range(num_blocks(2) * per_split, k_tiles):
            acc = mma(x.load_tile((BM, BK), (i, k)), y.load_tile((BK, BN), (k, j)), acc)
    rows = (i * BM + arange(BM, i32)).reshape((BM, 1))
    cols = (j * BN + arange(BN, i32)).reshape((1, BN))
    atomic_add(z, (rows, cols), acc, memory_order="relaxed")


def cdiv_host(a: int, b: int) -> int:
    return -(-a // b)


def main(m: int = 200, n: int = 150, k: int = 2000, tiles: tuple[int, int, int] = (64, 64, 32),
         splits: int = 5) -> None:
    rng = np.random.default_rng(23)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bm, bn, bk = tiles
    grid = (cdiv_host(m, bm), cdiv_host(n, bn), splits)
    z, _, _ = split_k_gemm(api.zeros([m, n], f32), api.from_numpy(a), api.from_numpy(b),
                           BM=bm, BN=bn, BK=bk, grid=grid).sync()
    out = z.to_numpy().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(out - ref)
    # f32 sums of f16 products, added in an unspecified order
    bound = 1e-5 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) + 1e-5
    assert (err <= bound).all(), f"max error {err.max():.3g}"
    print(f"split_k_gemm: {m}x{n}x{k} in tiles of {bm}x{bn}x{bk}, K in {splits} splits "
          f"(grid {grid}): max abs error {err.max():.2e}")


if __name__ == "__main__":
    main()

"""A persistent GEMM, z = x @ y in f16 with an f32 accumulator: the launch has a fixed number
of blocks (`Partition.persistent(n)`, by default one per multiprocessor) and each walks its
share of the output tiles in a grouped order (`z.iter_indices(group=8)`: eight tile rows at a
time, so that neighbouring blocks reuse the same rows of x and columns of y from L2). The
minted index is read as `idx[0]` (the tile row) and `idx[1]` (the tile column); the checker
knows each component's range, so the input bounds are launch predicates, not device checks.

Every element is checked against a float64 reference on ragged shapes (no dimension a tile
multiple) with fewer blocks than tiles.

    python examples/persistent_gemm.py
"""

from __future__ import annotations

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f16, f32, mma, num_tiles, zeros
from cutile.dtypes import DType


def gemm_kernel(dt: DType) -> cutile.EntryKernel:
    """The persistent GEMM for `dt` tensors (f16, bf16) with an f32 accumulator; the tuned
    configurations (benchmarks/RESULTS.md) run it with 128x128x64 tiles, one block per
    multiprocessor. `examples/multi_gpu.py` runs the bf16 one on every GPU."""

    @cutile.entry
    def persistent_gemm(z: Mut[Tensor[dt, ["BM", "BN"]]], x: Tensor[dt, [-1, -1]],
                        y: Tensor[dt, [-1, -1]], BM: Const[int], BN: Const[int],
                        BK: Const[int]):
        for idx in z.iter_indices(group=8):
            acc = zeros((BM, BN), f32)
            for k in range(num_tiles(x, 1, (BM, BK))):
                a = x.load_tile((BM, BK), (idx[0], k))
                b = y.load_tile((BK, BN), (k, idx[1]))
                acc = mma(a, b, acc)
            z.store(acc.astype(dt), index=idx)

    return persistent_gemm


persistent_gemm = gemm_kernel(f16)


def main(m: int = 1000, n: int = 700, k: int = 300, tiles: tuple[int, int, int] = (64, 64, 32),
         blocks: int = 7) -> None:
    rng = np.random.default_rng(21)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bm, bn, bk = tiles
    z = api.full([m, n], np.nan, f16).partition([bm, bn]).persistent(blocks)
    z, _, _ = persistent_gemm(z, api.from_numpy(a), api.from_numpy(b), BK=bk).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.isfinite(out).all(), "unwritten (NaN) elements"
    # the f16 output keeps 11 significant bits; the f32 sum is exact to far less than that
    err = np.abs(out - ref) - 1e-3 * np.abs(ref)
    assert err.max() < 1e-3 * np.sqrt(k), f"max error {err.max():.3g} past the f16 rounding"
    tiles_total = -(-m // bm) * -(-n // bn)
    print(f"persistent_gemm: {m}x{n}x{k}, {tiles_total} tiles of {bm}x{bn} on {blocks} blocks: "
          f"max abs error {np.abs(out - ref).max():.2e}")


if __name__ == "__main__":
    main()

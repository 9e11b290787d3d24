"""The kernels the autotuning tests tune (`test_autotune.py`, `test_autotune_adversarial.py`)."""

from __future__ import annotations

import cutile
from cutile.core import (
    Const,
    Mut,
    Tensor,
    block_id,
    f16,
    f32,
    load_tile_like,
    mma,
    num_tiles,
    zeros,
)


@cutile.entry
def matmul(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]],
           y: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        a = x.load_tile((BM, BK), (block_id(0), k))
        b = y.load_tile((BK, BN), (k, block_id(1)))
        acc = mma(a, b, acc)
    z.store(acc)


@cutile.entry
def scale(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a)

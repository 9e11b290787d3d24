"""Sub-partitions of the own tile (`z.partition_mut(shape)`) on the active backend, against
numpy on random inputs, including ragged tensors whose last tile holds sub-tiles wholly
past the end (they read as padding and write nothing)."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like

rng = np.random.default_rng(99)


@cutile.entry
def scale_sub_tiles(z: Mut[Tensor[f32, ["T"]]], x: Tensor[f32, [-1]], T: Const[int],
                          S: Const[int]):
    z.store(load_tile_like(x, z))
    p = z.partition_mut((S,))
    for i in range(T // S):
        p.store(p.load((i,)) * (i + 1), (i,))


@pytest.mark.parametrize("n", [64, 60, 49, 12])
def test_sub_tiles_of_a_ragged_tensor(n: int) -> None:
    xs = rng.standard_normal(n).astype(np.float32)
    z = api.full([n], np.nan, f32).partition([16])
    z, _ = scale_sub_tiles(z, api.from_numpy(xs), S=4).sync()
    scale = (np.arange(n) % 16) // 4 + 1
    np.testing.assert_allclose(z.unpartition().to_numpy(), xs * scale, rtol=1e-6)

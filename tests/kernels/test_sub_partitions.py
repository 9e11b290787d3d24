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


@cutile.entry
def halves(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
           BN: Const[int]):
    # The sub-tile shape is computed from the Consts (`BN // 2`), as a user writes it.
    z.store(load_tile_like(x, z))
    p = z.partition_mut((BM, BN // 2))
    p.store(p.load((0, 0)) + 1.0, (0, 0))
    p.store(p.load((0, 1)) * 2.0, (0, 1))


@pytest.mark.parametrize(("m", "n"), [(100, 200), (64, 128), (33, 65)])
def test_sub_partition_shape_computed_from_consts(m: int, n: int) -> None:
    xs = rng.standard_normal((m, n)).astype(np.float32)
    z = api.full([m, n], np.nan, f32).partition([32, 64])
    z, _ = halves(z, api.from_numpy(xs)).sync()
    left = (np.arange(n) % 64) < 32
    np.testing.assert_allclose(z.unpartition().to_numpy(), np.where(left, xs + 1.0, xs * 2.0),
                               rtol=1e-6)


@pytest.mark.tileiras
def test_sub_partition_shape_computed_from_consts_assembles() -> None:
    assert halves.compile(target="sm_90", BM=32, BN=64).cubin[:4] == b"\x7fELF"

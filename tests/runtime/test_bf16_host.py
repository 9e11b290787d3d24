"""bf16 host tensors: `ml_dtypes` is a declared dependency, so they work out of the box,
round-trip through numpy, and feed a kernel that widens them to f32."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import cutile
from cutile import api
from cutile.core import Mut, Tensor, bf16, f32, load_tile_like


@cutile.entry
def widen(z: Mut[Tensor[f32, [16]]], x: Tensor[bf16, [-1]]):
    z.store(load_tile_like(x, z).astype(f32) * 2.0)


def test_bf16_host_arrays_round_trip_and_run() -> None:
    xs = np.random.default_rng(3).standard_normal(48).astype(ml_dtypes.bfloat16)
    t = api.from_numpy(xs)
    back = t.to_numpy()
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back.view(np.uint16), xs.view(np.uint16))
    z = api.zeros([48], f32).partition([16])
    (z, _) = widen(z, t).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs.astype(np.float32) * 2)
    assert api.zeros([4], bf16).to_numpy().dtype == ml_dtypes.bfloat16

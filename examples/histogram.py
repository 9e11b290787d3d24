"""A histogram of f32 values into `bins` bins of width 1/scale from `lo`, with atomics into
an i32 `Atomic` tensor that every block shares, in two kernels:

- `histogram`: each block loads a tile of B values, computes their bins and adds 1 at each
  with `atomic_add`; bins outside the counts (values out of range, NaN padding past the
  end of x) do nothing.
- `histogram_local`: each block first counts its B values into NB >= bins bins itself (a
  one-hot (B, NB) comparison summed over the values), then adds the NB counts with one
  atomic each instead of B: far fewer atomics on one address when there are few bins.

The grid is given at the call (the kernels have no `Mut` output). The values lie on a grid
of 2^-10, so their bins are exact in f32 and in float64; the counts are checked against
numpy's bincount, exactly.

    python examples/histogram.py
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
    f32,
    floor,
    i32,
    where,
)


@cutile.entry
def histogram(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[f32, [-1]], lo: f32, scale: f32,
              B: Const[int]):
    q = (x.load_tile((B,), (block_id(0),), padding="nan") - lo) * scale
    inside = (q >= 0.0) & (q < counts.shape[0])     # NaN compares false
    bins = floor(where(inside, q, -1.0)).astype(i32)
    atomic_add(counts, bins, 1, memory_order="relaxed")


@cutile.entry
def histogram_local(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[f32, [-1]], lo: f32,
                    scale: f32, B: Const[int], NB: Const[int]):
    q = (x.load_tile((B,), (block_id(0),), padding="nan") - lo) * scale
    inside = (q >= 0.0) & (q < counts.shape[0])
    bins = floor(where(inside, q, -1.0)).astype(i32)
    hits = bins.reshape((B, 1)) == arange(NB, i32).reshape((1, NB))
    atomic_add(counts, arange(NB, i32), hits.astype(i32).sum(axis=0),
               memory_order="relaxed")   # the slots past `bins` are out of range: dropped


def main(n: int = 100_000, bins: int = 50, tile: int = 1024) -> None:
    rng = np.random.default_rng(26)
    lo, scale = -bins / 16, 8.0                      # bins of 1/8 over [lo, -lo)
    xs = (rng.integers(-1100 * bins // 16, 1100 * bins // 16, n) / 1024).astype(np.float32)
    grid = (-(-n // tile),)
    x = api.from_numpy(xs)
    q = (xs.astype(np.float64) - lo) * scale
    want = np.bincount(np.floor(q[(q >= 0) & (q < bins)]).astype(np.int64), minlength=bins)
    counts, x, *_ = histogram(api.zeros([bins], i32), x, lo, scale, B=tile, grid=grid).sync()
    np.testing.assert_array_equal(counts.to_numpy(), want)
    nb = 1 << (bins - 1).bit_length()
    counts, x, *_ = histogram_local(api.zeros([bins], i32), x, lo, scale, B=tile, NB=nb,
                                grid=grid).sync()
    np.testing.assert_array_equal(counts.to_numpy(), want)
    print(f"histogram: {n} values into {bins} bins, {int(want.sum())} in range, by atomics "
          f"per value and per block-local bin: exact")


if __name__ == "__main__":
    main()

"""Elementwise exp on 2-D tiles with ragged edges in both dimensions; every element checked
against a float64 reference.

    python examples/exp2d.py
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, exp, f32, load_tile_like


@cutile.entry
def exp2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]],
          BM: Const[int], BN: Const[int]):
    z.store(exp(load_tile_like(x, z)))


def main(m: int = 1000, n: int = 1500, tile: tuple[int, int] = (64, 128)) -> None:
    rng = np.random.default_rng(2)
    xs = rng.uniform(-10, 10, size=(m, n)).astype(np.float32)
    x = api.from_numpy(xs)
    z = api.full([m, n], np.nan, f32).partition(list(tile))
    z, x = exp2d(z, x).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    ref = np.exp(xs.astype(np.float64))
    rel = np.abs(out - ref) / ref
    assert np.isfinite(out).all(), "unwritten (NaN) elements"
    assert rel.max() < 4e-6, f"max relative error {rel.max():.3g}"
    print(f"exp2d: {m}x{n} in tiles of {tile[0]}x{tile[1]}: max rel error {rel.max():.2e}")


if __name__ == "__main__":
    main()

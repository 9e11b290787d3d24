"""Vector add: the example of docs/design.md §1, on random inputs, every element checked.

Runs on the GPU when there is one, else on the CPU interpreter:
    python examples/add.py
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]],     # exclusive output: the block's own tile, shape B
        x: Tensor[f32, [-1]],           # shared, read-only input; -1 = dynamic dimension
        y: Tensor[f32, [-1]],
        B: Const[int]):                 # compile-time constant, inferred from the partition
    tx = load_tile_like(x, z)           # tile of x at z's tile position and shape
    ty = load_tile_like(y, z)
    z.store(tx + ty)


def main(n: int = 1_000_003, tile: int = 1024) -> None:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(n, dtype=np.float32)
    ys = rng.standard_normal(n, dtype=np.float32)
    x = api.from_numpy(xs)
    y = api.from_numpy(ys)
    z = api.full([n], np.nan, f32).partition([tile])   # poisoned: every element must be written
    z, x, y = add(z, x, y).sync()                      # grid inferred from the partition
    out = z.unpartition().to_numpy()
    expected = xs + ys
    bad = np.flatnonzero(out != expected)
    assert bad.size == 0, f"{bad.size} wrong elements, first at {bad[0]}: {out[bad[0]]}"
    print(f"add: {n} elements in {-(-n // tile)} tiles of {tile}: all correct")


if __name__ == "__main__":
    main()

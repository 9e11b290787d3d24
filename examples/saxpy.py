"""SAXPY, y <- a * x + y, with a runtime scalar parameter; every element checked.

    python examples/saxpy.py
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like


@cutile.entry
def saxpy(y: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    y.store(a * load_tile_like(x, y) + y.load())


def main(n: int = 777_777, tile: int = 512) -> None:
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(n, dtype=np.float32)
    ys = rng.standard_normal(n, dtype=np.float32)
    a = np.float32(rng.uniform(-3, 3))
    y = api.from_numpy(ys).partition([tile])
    x = api.from_numpy(xs)
    y, x, _ = saxpy(y, x, float(a)).sync()
    out = y.unpartition().to_numpy()
    expected = (a * xs + ys).astype(np.float32)
    # one rounding per op on both sides; an FMA contraction on the GPU may differ by 1 ulp
    err = np.abs(out.astype(np.float64) - expected.astype(np.float64))
    tol = 2 * np.finfo(np.float32).eps * (np.abs(a * xs) + np.abs(ys) + 1e-30)
    bad = np.flatnonzero(err > tol)
    assert bad.size == 0, f"{bad.size} wrong elements, first at {bad[0]}"
    print(f"saxpy: a={a:.4f}, {n} elements: all within 2 ulp of numpy")


if __name__ == "__main__":
    main()

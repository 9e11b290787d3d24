"""Cost of the interpreter's race detector: the same launches with and without
`cutile.check_races()`, on the CPU interpreter (no GPU needed).

    python benchmarks/race_detector.py [--n 1048576] [--tile 1024] [--trials 7]

Kernels: the f32 add of docs/design.md §1 on n elements (one load of x, one of y and one store of
z per block), and a 256 x 256 GEMM in 32 x 32 tiles (every block reads a whole row of x's
tiles and a column of y's: shared inputs read by many blocks). Reported: the median wall time
of `.sync()` per launch, unchecked and checked, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ["CUTILE_BACKEND"] = "interpreter"
os.environ.setdefault("CUTILE_QUIET", "1")

import numpy as np

import cutile
from cutile import api
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
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def gemm(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]], y: Tensor[f16, [-1, -1]],
         BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        acc = mma(x.load_tile((BM, BK), (block_id(0), k)), y.load_tile((BK, BN), (k, block_id(1))),
                  acc)
    z.store(acc)


def median_time(run: Callable[[], None], trials: int) -> float:
    run()  # warm-up: compile and cache the lowering
    samples = []
    for _ in range(trials):
        t0 = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--tile", type=int, default=1024)
    ap.add_argument("--trials", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(args.n, dtype=np.float32)
    a = rng.standard_normal((256, 256)).astype(np.float16)

    def run_add() -> None:
        z = api.zeros([args.n], f32).partition([args.tile])
        add(z, api.from_numpy(xs), api.from_numpy(xs)).sync()

    def run_gemm() -> None:
        z = api.zeros([256, 256], f32).partition([32, 32])
        gemm(z, api.from_numpy(a), api.from_numpy(a), BK=32).sync()

    for name, run in [(f"add n={args.n} tile={args.tile}", run_add),
                      ("gemm 256x256x256 tiles 32", run_gemm)]:
        plain = median_time(run, args.trials)
        with cutile.check_races():
            checked = median_time(run, args.trials)
        print(f"{name}: unchecked {plain * 1e3:.1f} ms, checked {checked * 1e3:.1f} ms, "
              f"x{checked / plain:.2f}")


if __name__ == "__main__":
    main()

"""A GEMM split across GPUs, one process each: C = A @ B in bf16 (f32 accumulation). Each
rank computes a band of C's rows with the persistent GEMM of `persistent_gemm.py` (its
tuned configuration: 128x128x64 tiles, grouped schedule, one block per multiprocessor),
and `cutile.distributed.all_gather` puts every band on every rank. Every rank checks the
gathered C against a float64 reference on random inputs (sampled rows of every band on a
GPU, all of C on the interpreter) and prints the time per multiplication.

    python examples/multi_gpu.py                          # one process: one GPU
    torchrun --nproc-per-node=2 examples/multi_gpu.py     # the GPUs of one host (NCCL)
    torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d \\
        --rdzv-endpoint=HOST:29500 examples/multi_gpu.py  # every host runs the same

Without a GPU it runs on the CPU interpreter as one process, at a small size: the same
program, its collectives local (a world of one needs no torch or NCCL).

With `chunks` > 1, each rank computes its band in pieces, and the all-gather of piece c
runs on its own stream while the GEMM of piece c + 1 runs: the ledger makes each gather
wait for the GEMM that wrote its piece, and nothing else waits. So that the pieces gather
into contiguous rows, piece c of every rank forms rows [c * W * R, (c + 1) * W * R) of C,
rank r's share being rows [(c * W + r) * R, (c * W + r + 1) * R) (W ranks, R rows each).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

import cutile
from cutile import api
from cutile.core import bf16
from cutile.runtime import driver

sys.path.insert(0, str(Path(__file__).resolve().parent))  # persistent_gemm.py beside it
from persistent_gemm import gemm_kernel

gemm = gemm_kernel(bf16)
BF16 = np.dtype(ml_dtypes.bfloat16)


class SplitGemm:
    """This rank's share of C = A @ B (`chunks` pieces of `rows` rows each) and the
    gathered C, with the tensors kept between runs (each run hands them back)."""

    def __init__(self, world: cutile.distributed.World, a: np.ndarray, b: np.ndarray,
                 chunks: int, tiles: tuple[int, int, int], blocks: int | None) -> None:
        m, n = a.shape[0], b.shape[1]
        w = world.size
        if m % (w * chunks):
            raise SystemExit(f"multi_gpu: M = {m} rows do not split into {w} ranks x "
                             f"{chunks} chunks")
        self.rows, self.chunks, self.tiles, self.blocks = m // (w * chunks), chunks, tiles, blocks
        self.xs = [api.from_numpy(a[band(world.rank, w, self.rows, c)]) for c in range(chunks)]
        y = api.from_numpy(b)
        self.ys = [y[:] for _ in range(chunks)]  # one shared view per GEMM in flight
        self.parts = [api.empty([self.rows, n], bf16) for _ in range(chunks)]
        self.out = api.empty([m, n], bf16)
        span = w * self.rows
        self.outs = [self.out[c * span:(c + 1) * span] for c in range(chunks)]
        self.compute, self.comm = cutile.Stream("gemm"), cutile.Stream("all-gather")

    def run(self) -> cutile.DeviceOp:
        """One multiplication: per piece, the GEMM on one stream, then its all-gather on
        another (started as soon as the GEMM is enqueued: `then` does not wait)."""
        bm, bn, bk = self.tiles
        ops = []
        for c in range(self.chunks):
            z = self.parts[c].partition([bm, bn]).persistent(self.blocks)

            def gather(z: Any, x: Any, y: Any, c: int = c) -> cutile.DeviceOp:
                self.xs[c], self.ys[c] = x, y
                return cutile.distributed.all_gather(self.outs[c], z.unpartition()).on(self.comm)

            ops.append(gemm(z, self.xs[c], self.ys[c], BK=bk).on(self.compute).then(gather))
        return cutile.zip(*ops)

    def keep(self, results: tuple[Any, ...]) -> None:
        for c, (out_c, part) in enumerate(results):
            self.outs[c], self.parts[c] = out_c, part


def band(rank: int, size: int, rows: int, c: int) -> slice:
    """Rank `rank`'s rows of piece `c` (of `rows` rows) among `size` ranks."""
    first = (c * size + rank) * rows
    return slice(first, first + rows)


def random_bf16(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32).astype(BF16)


def check(out: np.ndarray, a: np.ndarray, b: np.ndarray, rows: np.ndarray) -> float:
    """`out[rows]` against float64 on the same bf16 inputs: within bf16's rounding of the
    result plus f32 accumulation; returns the largest error relative to |ref| + 1."""
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    got = out[rows].astype(np.float64)
    assert np.isfinite(got).all(), "unwritten (NaN) elements"
    bound = 2.0**-8 * np.abs(ref) + 1e-3 * np.sqrt(a.shape[1])
    assert (np.abs(got - ref) <= bound).all(), \
        f"max error {np.abs(got - ref).max():.3g} past bf16's rounding"
    return float((np.abs(got - ref) / (np.abs(ref) + 1)).max())


def main(m: int = 8192, n: int = 8192, k: int = 8192, tiles: tuple[int, int, int] = (128, 128, 64),
         chunks: int = 2, blocks: int | None = None, reps: int = 5) -> None:
    # More NCCL channels (SMs) for the all-gather, unless the caller chose: on the two-H200
    # machine the gather of the result then takes ~0.6 ms instead of ~1 ms and the split
    # GEMM went from 1.73x to 1.81x one GPU (2026-12-01, benchmarks/RESULTS.md)
    os.environ.setdefault("NCCL_MIN_NCHANNELS", "32")
    world = cutile.distributed.init()
    rng = np.random.default_rng(2026)  # the same A and B on every rank
    a, b = random_bf16(rng, (m, k)), random_bf16(rng, (k, n))
    split = SplitGemm(world, a, b, chunks, tiles, blocks)
    times = []
    for _ in range(reps + 1):  # the first compiles and warms up
        cutile.distributed.barrier()
        t0 = time.perf_counter()
        split.keep(split.run().sync())
        times.append(time.perf_counter() - t0)
    out = split.out.to_numpy()  # waits for every gather (the ledger)
    small = m * n <= 1 << 16
    # every row on the interpreter; else the first 16 rows of every rank's every piece
    firsts = [band(r, world.size, split.rows, c).start for c in range(chunks)
              for r in range(world.size)]
    rows = np.arange(m) if small else np.concatenate([np.arange(f, f + 16) for f in firsts])
    err = check(out, a, b, rows)
    t = statistics.median(times[1:])
    print(f"multi_gpu: {m}x{n}x{k} bf16 on {world.size} rank(s) (rank {world.rank}, "
          f"device {world.device}, {world.backend}), {chunks} chunk(s): "
          f"{t * 1e3:.2f} ms, {2 * m * n * k / t / 1e12:.1f} TFLOP/s; {rows.size} rows "
          f"checked, max rel error {err:.1e}")
    cutile.distributed.destroy()


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    # (no option name that prefixes one of torchrun's, e.g. --m or --n: its parser would
    # take it as its own, ambiguous, option)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=8192)
    ap.add_argument("--depth", type=int, default=8192)
    ap.add_argument("--chunks", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    if driver.backend() != "gpu":  # the interpreter: a small problem
        main(m=96, n=64, k=48, tiles=(32, 32, 16), chunks=2, reps=1)
    else:
        main(args.rows, args.cols, args.depth, chunks=args.chunks, reps=args.reps)

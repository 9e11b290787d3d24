"""A GEMM split across the GPUs of one host (issue 9: 16384^3 bf16 over 2 GPUs >= 1.8x one
GPU). One process per GPU (torchrun). The same persistent bf16 GEMM (128x128x64, group 8,
one block per multiprocessor) runs

- on one GPU: rank 0 multiplies all of C = A @ B (the other ranks wait);
- on every GPU: each rank multiplies its band of rows and `cutile.distributed.all_gather`
  (NCCL) puts every band on every rank (`examples/multi_gpu.py`'s SplitGemm), for a few
  choices of pieces per band (each piece's gather overlapping the next piece's GEMM) and
  of blocks (fewer than the multiprocessors leaves room for NCCL's kernels).

Timing: CUDA events on cutile's streams (the split: from the GEMM stream's start to the
all-gather stream's end, so the time covers both), after warm-up, median of the trials;
for the split, the slowest rank's median (an all-reduce of the times). Both results are
checked against float64 on sampled rows. Prints the ratio of one GPU's time to the
fastest split's.

    torchrun --nproc-per-node=2 benchmarks/multi_gpu.py [--size 16384] [--json out.json]
    python benchmarks/multi_gpu.py --size 4096     # one process: the split is one GPU too
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from cuda.bindings import driver as cu

import cutile
from cutile import api
from cutile.core import bf16
from cutile.runtime import driver


def _example() -> Any:
    """examples/multi_gpu.py (by path: this file has its name)."""
    path = Path(__file__).resolve().parents[1] / "examples" / "multi_gpu.py"
    spec = importlib.util.spec_from_file_location("multi_gpu_example", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


example = _example()
SplitGemm, band, check, gemm, random_bf16 = (example.SplitGemm, example.band, example.check,
                                             example.gemm, example.random_bf16)

TILES = (128, 128, 64)


def _ok(res: Any) -> Any:
    if res[0] != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA error {res[0]}")
    return res[1] if len(res) > 1 else None


def timed(run: Callable[[], Callable[[], None]], first: cutile.Stream, last: cutile.Stream,
          trials: int, warmup: int, together: bool) -> float:
    """Median seconds of `run()` (which enqueues the work and returns its waiter) between an
    event on `first` before it and one on `last` after it; `together`: every rank starts
    each trial at a barrier."""
    start, stop = _ok(cu.cuEventCreate(0)), _ok(cu.cuEventCreate(0))
    samples = []
    for i in range(warmup + trials):
        if together:
            cutile.distributed.barrier()
        _ok(cu.cuEventRecord(start, cu.CUstream(first.handle)))
        wait = run()
        _ok(cu.cuEventRecord(stop, cu.CUstream(last.handle)))
        _ok(cu.cuEventSynchronize(stop))
        wait()
        if i >= warmup:
            samples.append(_ok(cu.cuEventElapsedTime(start, stop)) * 1e-3)
    cu.cuEventDestroy(start)
    cu.cuEventDestroy(stop)
    return statistics.median(samples)


def slowest(seconds: float) -> float:
    """The largest of every rank's `seconds` (an all-reduce through cutile)."""
    t = api.from_numpy(np.array([seconds], np.float64))
    (t,) = cutile.distributed.all_reduce(t, "max").sync()
    return float(t.to_numpy()[0])


def one_gpu(a: np.ndarray, b: np.ndarray, rows: np.ndarray, trials: int) -> dict[str, Any]:
    """All of C on this GPU: median seconds per multiplication, and the check."""
    bm, bn, bk = TILES
    s = cutile.Stream("one gpu")
    state = {"z": api.empty([a.shape[0], b.shape[1]], bf16).partition([bm, bn]).persistent(),
             "x": api.from_numpy(a), "y": api.from_numpy(b)}

    def run() -> Callable[[], None]:
        h = gemm(state["z"], state["x"], state["y"], BK=bk).on(s).submit()

        def wait() -> None:
            state["z"], state["x"], state["y"] = h.wait()
        return wait

    t = timed(run, s, s, trials, warmup=2, together=False)  # the other ranks wait
    out = state["z"].unpartition().to_numpy()
    return {"s": t, "rel_err": check(out, a, b, rows)}


def split_gpus(a: np.ndarray, b: np.ndarray, rows: np.ndarray, chunks: int,
               blocks: int | None, trials: int) -> dict[str, Any]:
    split = SplitGemm(cutile.distributed.world(), a, b, chunks, TILES, blocks)

    def run() -> Callable[[], None]:
        h = split.run().submit()
        return lambda: split.keep(h.wait())

    t = slowest(timed(run, split.compute, split.comm, trials, warmup=2, together=True))
    return {"chunks": chunks, "blocks": blocks, "s": t,
            "rel_err": check(split.out.to_numpy(), a, b, rows)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=16384)  # not --n: torchrun would take it
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    if driver.backend() != "gpu":
        raise SystemExit("benchmarks/multi_gpu.py times GPUs; this machine has none")
    # More NCCL channels (SMs) for the all-gather, unless the caller chose: on the two-H200
    # machine the gather of the result then takes ~0.6 ms instead of ~1 ms and the split
    # GEMM went from 1.73x to 1.81x one GPU (2026-12-01, benchmarks/RESULTS.md)
    os.environ.setdefault("NCCL_MIN_NCHANNELS", "32")
    world = cutile.distributed.init()
    n, w = args.size, world.size
    rng = np.random.default_rng(2026)  # the same A and B on every rank
    a, b = random_bf16(rng, (n, n)), random_bf16(rng, (n, n))
    sms = driver.device_info(world.device).sm_count
    configs = [(1, None), (2, None), (4, None), (4, sms - 16)]
    # four rows of every rank's every piece, for the largest piece count
    rows = np.concatenate([np.arange(f, f + 4) for f in
                           (band(r, w, n // (w * 4), c).start for c in range(4)
                            for r in range(w))])
    flops = 2 * n**3
    result: dict[str, Any] = {"n": n, "dtype": "bf16", "world": w, "tiles": TILES,
                              "gpu": driver.device_info(world.device).name}
    one = one_gpu(a, b, rows, args.trials) if world.rank == 0 else {"s": 0.0}
    one["s"] = slowest(one["s"])  # rank 0's: the others gave 0
    result["one_gpu"] = {**one, "tflops": flops / one["s"] / 1e12}
    result["split"] = []
    for chunks, blocks in configs:
        got = split_gpus(a, b, rows, chunks, blocks, args.trials)
        got["tflops"] = flops / got["s"] / 1e12
        got["speedup"] = one["s"] / got["s"]
        result["split"].append(got)
    best = min(result["split"], key=lambda r: r["s"])
    result["speedup"] = best["speedup"]
    if world.rank == 0:
        print(f"\nGEMM {n}^3 bf16, {TILES[0]}x{TILES[1]}x{TILES[2]} persistent, "
              f"{result['gpu']}: one GPU {one['s'] * 1e3:.2f} ms "
              f"({result['one_gpu']['tflops']:.1f} TFLOP/s, rel err {one.get('rel_err', 0):.1e})")
        for r in result["split"]:
            print(f"  {w} GPUs, {r['chunks']} piece(s), blocks {r['blocks'] or 'one per SM'}: "
                  f"{r['s'] * 1e3:.2f} ms ({r['tflops']:.1f} TFLOP/s), {r['speedup']:.3f}x "
                  f"(rel err {r['rel_err']:.1e})")
        print(f"speedup of {w} GPUs over one: {result['speedup']:.3f}x (target >= 1.8 on 2)")
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
    cutile.distributed.destroy()


if __name__ == "__main__":
    main()

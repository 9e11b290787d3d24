"""The runtime's speed and footprint (issue 9), cutile vs torch in one process on one GPU:

1. 1,000 dependent tiny kernels (`z += 1` on 1024 floats): sync each, one sync (a `then`
   chain), await each, one await of a `then` chain, CUDA Graph replay; the same kernel with
   programmatic dependent launch (`pdl=True`, docs/pdl.md: each kernel's blocks start while
   the previous one finishes) as a `then` chain and in a graph; torch eager (sync each,
   one sync) and a torch CUDA graph. Per op, median of rounds.
2. allocate + free 1 MiB x 10,000: `api.empty` + drop vs `torch.empty` + drop; how many
   allocations reused a freed block the runtime kept (no driver call). Without a GPU also
   on the GPU code path with a null driver, with the driver calls per allocate + free.
3. the host thread during a 100 ms kernel under `await`: event-loop ticks (1 ms sleeps).
4. device memory after 10,000 launches and frees: the pool's used bytes before and after.
5. ledger host memory with 1,000 live tensors, and after 10,000 more ops (O(live), not
   O(history)).

    python benchmarks/runtime.py [--json out.json] [--rounds 7]
    python benchmarks/runtime.py --no-gpu     # the interpreter, small counts: a smoke run

(The launch row, host us per launch against `ct.launch` and raw `cuLaunchKernel`, is
benchmarks/launch_overhead.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if "--no-gpu" in sys.argv:
    os.environ["CUTILE_BACKEND"] = "interpreter"
    os.environ.setdefault("CUTILE_QUIET", "1")

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, i32, load_tile_like
from cutile.runtime import memory, streams


@cutile.entry
def inc(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    z.store(z.load() + 1.0)


# `inc` with programmatic dependent launch (its twin: same body and proof, `pdl=True`)
inc_pdl = inc.with_hints(pdl=True)


@cutile.entry
def smooth(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], steps: i32, B: Const[int]):
    v = load_tile_like(x, z)
    acc = v
    for _ in range(steps):
        acc = acc * 0.5 + v * 0.25
    z.store(acc)


def median_of(rounds: int, sample: Callable[[], float]) -> float:
    sample()  # warm-up
    out = []
    for _ in range(rounds):
        gc.disable()
        try:
            out.append(sample())
        finally:
            gc.enable()
    return statistics.median(out)


# -- 1. dependent tiny kernels ----------------------------------------------------------------


def cutile_chain(ops: int, rounds: int) -> dict[str, float]:
    n = 1024
    st = {"z": api.zeros([n], f32).partition([n])}

    def sync_each() -> float:
        z = st["z"]
        t0 = time.perf_counter()
        for _ in range(ops):
            (z,) = inc(z).sync()
        dt = time.perf_counter() - t0
        st["z"] = z
        return dt / ops

    def one_sync() -> float:
        t0 = time.perf_counter()
        op = inc(st["z"])
        for _ in range(ops - 1):
            op = op.then(inc)
        (st["z"],) = op.sync()
        return (time.perf_counter() - t0) / ops

    def await_each() -> float:
        async def go() -> float:
            z = st["z"]
            t0 = time.perf_counter()
            for _ in range(ops):
                (z,) = await inc(z)
            dt = time.perf_counter() - t0
            st["z"] = z
            return dt / ops

        return asyncio.run(go())

    def await_chain() -> float:
        async def go() -> float:
            t0 = time.perf_counter()
            op = inc(st["z"])
            for _ in range(ops - 1):
                op = op.then(inc)
            (st["z"],) = await op
            return (time.perf_counter() - t0) / ops

        return asyncio.run(go())

    out = {name: median_of(rounds, f) for name, f in [
        ("cutile_sync_each", sync_each), ("cutile_one_sync", one_sync),
        ("cutile_await_each", await_each), ("cutile_then_one_await", await_chain)]}
    out["cutile_graph_replay"] = graph_replay(inc, st, ops, rounds)

    # The same chain with programmatic dependent launch: on one stream (`then`) and in a
    # graph, where it matters most (no host gap left to hide behind).
    def pdl_one_sync() -> float:
        t0 = time.perf_counter()
        op = inc_pdl(st["z"])
        for _ in range(ops - 1):
            op = op.then(inc_pdl)
        (st["z"],) = op.sync()
        return (time.perf_counter() - t0) / ops

    before = float(st["z"].to_numpy()[0])
    out["cutile_pdl_one_sync"] = median_of(rounds, pdl_one_sync)
    after = float(st["z"].to_numpy()[0])
    assert after == before + ops * (rounds + 1), (before, after)
    out["cutile_pdl_graph_replay"] = graph_replay(inc_pdl, st, ops, rounds)
    return out


def graph_replay(kernel: Any, st: dict[str, Any], ops: int, rounds: int) -> float:
    """Seconds per op of `ops` launches of `kernel` captured with `cutile.graph` and
    replayed (each replay waited for); checks that every replay ran every op."""
    def chain(z: api.Partition) -> Any:
        for _ in range(ops):
            (z,) = kernel(z).sync()  # recorded, in order
        return z

    before = float(st["z"].to_numpy()[0])
    g = cutile.graph(chain, st["z"])

    def replay() -> float:
        t0 = time.perf_counter()
        g.replay().wait()
        return (time.perf_counter() - t0) / ops

    sec = median_of(rounds, replay)
    after = float(g.read(0)[0])
    assert after == before + ops * (rounds + 1), (before, after)  # every replay ran every op
    st["z"] = g.into_inner()  # what `chain` returned: the partition after the last op
    return sec


def torch_chain(ops: int, rounds: int) -> tuple[dict[str, float], str | None]:
    try:
        import torch
    except ImportError as exc:
        return {}, f"torch: {exc}"
    a = torch.zeros(1024, device="cuda")
    sync = torch.cuda.synchronize

    def sync_each() -> float:
        t0 = time.perf_counter()
        for _ in range(ops):
            a.add_(1.0)
            sync()
        return (time.perf_counter() - t0) / ops

    def one_sync() -> float:
        t0 = time.perf_counter()
        for _ in range(ops):
            a.add_(1.0)
        sync()
        return (time.perf_counter() - t0) / ops

    out = {"torch_sync_each": median_of(rounds, sync_each),
           "torch_one_sync": median_of(rounds, one_sync)}
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            a.add_(1.0)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(ops):
            a.add_(1.0)

    def replay() -> float:
        t0 = time.perf_counter()
        g.replay()
        sync()
        return (time.perf_counter() - t0) / ops

    out["torch_graph_replay"] = median_of(rounds, replay)
    return out, None


# -- 2. allocate + free ------------------------------------------------------------------------


def alloc_free(count: int, rounds: int, gpu: bool) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per allocate + free, and per allocate + free: the blocks reused, and (null
    driver) the driver calls made."""

    def cutile_loop() -> float:
        t0 = time.perf_counter()
        for _ in range(count):
            t = api.empty([1 << 18], f32)
            del t
        return (time.perf_counter() - t0) / count

    def reused() -> float:
        before = streams.stats()["blocks_reused"]
        cutile_loop()
        return (streams.stats()["blocks_reused"] - before) / count

    out = {"cutile_alloc_free": median_of(rounds, cutile_loop)}
    per = {"blocks_reused": reused()}
    if not gpu:
        from cutile.runtime.null_gpu import calls, null_gpu

        with null_gpu():
            out["null_cutile_alloc_free"] = median_of(rounds, cutile_loop)
            before = calls()
            per["null_blocks_reused"] = reused()
            after = calls()
            per["null_driver_calls"] = sum(after.values()) / count - sum(before.values()) / count
        return out, per
    try:
        import torch
    except ImportError:
        return out, per

    def torch_loop() -> float:
        t0 = time.perf_counter()
        for _ in range(count):
            t = torch.empty(1 << 18, device="cuda")
            del t
        return (time.perf_counter() - t0) / count

    out["torch_alloc_free"] = median_of(rounds, torch_loop)
    return out, per


# -- 3. the host during a long kernel ----------------------------------------------------------


def host_during_await(seconds: float, gpu: bool) -> dict[str, float]:
    n = 1 << 20 if gpu else 1 << 10
    x, z = api.from_numpy(np.ones(n, np.float32)), api.empty([n], f32).partition([1024])
    z, x, _ = smooth(z, x, 1000).sync()
    t0 = time.perf_counter()
    z, x, _ = smooth(z, x, 20_000 if gpu else 10).sync()
    per_step = (time.perf_counter() - t0) / (20_000 if gpu else 10)
    steps = max(10, int(seconds / per_step))

    async def go() -> tuple[int, float]:
        ticks, done = 0, False

        async def heartbeat() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0.001)

        beat = asyncio.ensure_future(heartbeat())
        await asyncio.sleep(0)
        t = time.perf_counter()
        await smooth(z, x, steps)
        took = time.perf_counter() - t
        done = True
        await beat
        return ticks, took

    ticks, took = asyncio.run(go())
    return {"kernel_s": took, "loop_ticks": ticks, "ticks_possible": took / 0.001}


# -- 4. device memory after launches and frees -------------------------------------------------


def memory_after(launches: int) -> dict[str, Any]:
    cutile.synchronize()
    before = memory.pool_usage()
    x = api.from_numpy(np.ones(1 << 16, np.float32))
    for _ in range(launches):
        z, x, _ = smooth(api.empty([1 << 16], f32).partition([1024]), x, 1).sync()
        del z
    del x
    cutile.synchronize()
    after = memory.pool_usage()
    return {"before": before, "after": after, "used_back": after["used"] == before["used"]}


# -- 5. the ledger's host memory ---------------------------------------------------------------


def ledger_memory(live: int, more: int) -> dict[str, int]:
    rt = streams.runtime()
    cutile.synchronize()
    tensors = [api.zeros([1024], f32).partition([1024]) for _ in range(live)]
    ops = [inc(t).submit() for t in tensors]  # 1,000 live tensors, each in a pending op
    with_live = rt.heap_bytes()
    pending_live = len(rt)
    tensors = [h.wait()[0] for h in ops]
    del ops
    for i in range(more):
        (tensors[i % live],) = inc(tensors[i % live]).sync()
    cutile.synchronize()
    return {"heap_bytes_live": with_live, "pending_accesses_live": pending_live,
            "heap_bytes_after_more": rt.heap_bytes(), "pending_after": len(rt)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-gpu", action="store_true", help="interpreter, small counts")
    ap.add_argument("--json")
    args = ap.parse_args()
    from cutile.runtime import driver

    gpu = not args.no_gpu and driver.backend() == "gpu"
    ops, allocs, launches = (1000, 10_000, 10_000) if gpu else (50, 500, 200)
    res: dict[str, Any] = {"backend": "gpu" if gpu else "interpreter", "ops": ops}
    chain = cutile_chain(ops, args.rounds)
    peer_error = None
    if gpu:
        peers, peer_error = torch_chain(ops, args.rounds)
        chain.update(peers)
    res["dependent_us_per_op"] = {k: v * 1e6 for k, v in chain.items()}
    times, per_alloc = alloc_free(allocs, args.rounds, gpu)
    res["alloc_free_us"] = {k: v * 1e6 for k, v in times.items()}
    res["per_alloc_free"] = per_alloc
    res["await_100ms"] = host_during_await(0.1, gpu)
    res["memory_after_launches"] = memory_after(launches)
    more = 10_000 if gpu else 300
    res["ledger"] = ledger_memory(1000, more)
    res["peer_error"] = peer_error
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    dep = res["dependent_us_per_op"]
    print(f"runtime, {res['backend']}: us per op of {ops} dependent tiny kernels")
    for k, v in dep.items():
        print(f"  {k:<26}{v:9.2f}")
    if "torch_graph_replay" in dep:
        ratio = dep["cutile_graph_replay"] / dep["torch_graph_replay"]
        print(f"  graph replay vs torch graph: {ratio:.2f}x")
        ratio = dep["cutile_pdl_graph_replay"] / dep["torch_graph_replay"]
        print(f"  graph replay with PDL vs torch graph: {ratio:.2f}x")
    af = res["alloc_free_us"]
    line = f"allocate + free 1 MiB: cutile {af['cutile_alloc_free']:.2f} us"
    if "torch_alloc_free" in af:
        line += (f", torch {af['torch_alloc_free']:.2f} us "
                 f"({af['cutile_alloc_free'] / af['torch_alloc_free']:.2f}x)")
    pa = res["per_alloc_free"]
    line += f"; {pa['blocks_reused']:.3f} kept blocks reused per allocation"
    print(line)
    if "null_cutile_alloc_free" in af:
        print(f"  GPU path, null driver: {af['null_cutile_alloc_free']:.2f} us, "
              f"{pa['null_driver_calls']:.3f} driver calls and {pa['null_blocks_reused']:.3f} "
              "kept blocks reused per allocate + free")
    aw = res["await_100ms"]
    print(f"await of a {aw['kernel_s'] * 1e3:.0f} ms kernel: event loop ticked "
          f"{aw['loop_ticks']} times of {aw['ticks_possible']:.0f} 1-ms sleeps")
    m = res["memory_after_launches"]
    print(f"pool after {launches} launches and frees: used {m['before']['used']} -> "
          f"{m['after']['used']} bytes (back: {m['used_back']}), reserved "
          f"{m['before']['reserved']} -> {m['after']['reserved']}")
    led = res["ledger"]
    print(f"ledger: {led['heap_bytes_live']} bytes with 1000 live tensors in pending ops "
          f"({led['pending_accesses_live']} accesses); {led['heap_bytes_after_more']} bytes "
          f"and {led['pending_after']} pending after {more} more ops")
    if peer_error:
        print(f"peer: {peer_error}")


if __name__ == "__main__":
    main()

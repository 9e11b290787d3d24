"""Host cost of one safe launch: cutile vs cuTile Python's `ct.launch` vs torch (and the raw
driver call through cuda.bindings, and cupy's RawKernel), on a tiny f32 add (1024 elements,
one block), all in one process on one GPU.

    python benchmarks/launch_overhead.py [--n 1024] [--launches 5000] [--json out.json]
    python benchmarks/launch_overhead.py --no-gpu   # no GPU: the host's work of a launch
                                                    # alone, on the CPU interpreter with a
                                                    # no-op kernel body, and on the GPU code
                                                    # path with a null driver (`null_*` rows:
                                                    # every driver call returns at once; one
                                                    # device, and two in use: `null2_*`)

Per peer:
- launch + sync: wall time of one launch and a stream synchronize (a chain of dependent
  tiny kernels; docs/design.md §5 compares this with `ct.launch`);
- launch only: N launches enqueued back to back, then one synchronize; the time to enqueue
  divided by N (the host's cost per launch when the GPU is not the bottleneck). A cutile op
  owns its tensors until it completes, so each of the N ops gets its own (z, x, y); the op
  is created (arguments bound, checked, moved in) and `_start()`ed (ledger, cuLaunchKernel)
  inside the timing; handing the tensors back (`_finish`) is timed separately;
- zip of N: `cutile.zip(*[add(...) for each set]).sync()` divided by N (the public API for
  many launches and one wait).

On a GPU two more rows tell the driver's share: cutile's launch with every op on one stream
(by default ops take the pool's streams in turn), and cuda.bindings' `cuLaunchKernel` taking
the pool's streams in turn as cutile does.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if "--no-gpu" in sys.argv:
    os.environ["CUTILE_BACKEND"] = "interpreter"
    os.environ.setdefault("CUTILE_QUIET", "1")
    # two modeled devices, for the null driver's two-device rows (the interpreter's rows
    # use one)
    os.environ.setdefault("CUTILE_INTERPRETER_DEVICES", "2")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like

try:  # the peer; cuTile resolves `ct.Constant` in this module's globals
    import cuda.tile as ct
except ImportError:  # pragma: no cover - reported as a missing peer
    ct = None


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


if ct is not None:

    @ct.kernel
    def ct_add(a, b, c, TILE: ct.Constant[int]):  # type: ignore[no-untyped-def]
        bid = ct.bid(0)
        ta = ct.load(a, index=(bid,), shape=(TILE,))
        tb = ct.load(b, index=(bid,), shape=(TILE,))
        ct.store(c, index=(bid,), tile=ta + tb)


Sampler = Callable[[], float]


def calls(call: Callable[[], Any], reps: int = 200) -> Sampler:
    """A sampler: wall-clock seconds per call of a synchronous `call`, over `reps` calls."""

    def sample() -> float:
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        return (time.perf_counter() - t0) / reps

    return sample


def launches_then_sync(enqueue: Callable[[int], Any], sync: Callable[[], Any], launches: int,
                       after: Callable[[], Any] | None = None) -> Sampler:
    """A sampler: seconds per `enqueue(i)` over `launches` back-to-back calls; then `sync()`
    and `after()`, untimed."""

    def sample() -> float:
        t0 = time.perf_counter()
        for i in range(launches):
            enqueue(i)
        t1 = time.perf_counter()
        sync()
        if after is not None:
            after()
        return (t1 - t0) / launches

    return sample


def cutile_samplers(n: int, launches: int, gpu: bool) -> dict[str, Sampler]:
    from cutile.runtime import driver, streams

    out: dict[str, Sampler] = {}
    ones = np.ones(n, np.float32)
    st = {"z": api.zeros([n], f32).partition([n]), "x": api.from_numpy(ones),
          "y": api.from_numpy(ones)}

    def one() -> None:
        st["z"], st["x"], st["y"] = add(st["z"], st["x"], st["y"]).sync()

    one()
    if gpu:
        whole = st["z"].unpartition()
        assert (whole.to_numpy() == 2).all()
        st["z"] = whole.partition([n])
    out["cutile_launch_sync"] = calls(one)

    sets = [(api.zeros([n], f32).partition([n]), api.from_numpy(ones), api.from_numpy(ones))
            for _ in range(launches)]
    ops: list[Any] = []

    def enqueue(i: int) -> None:
        z, x, y = sets[i]
        op = add(z, x, y)
        op._claim()
        op._start()
        ops.append(op)

    def wait() -> None:
        cutile.synchronize()  # every stream the ops took (the runtime learns they completed)

    finish_times: list[float] = []

    def finish() -> None:
        t0 = time.perf_counter()
        for i, op in enumerate(ops):
            sets[i] = op._finish()
        finish_times.append((time.perf_counter() - t0) / len(ops))
        ops.clear()

    out["cutile_launch"] = launches_then_sync(enqueue, wait, launches, after=finish)
    out["cutile_finish"] = lambda: finish_times[-1]  # measured by the cutile_launch sample

    def on_one_stream() -> float:
        with cutile.stream(streams.pool()[0]):
            return launches_then_sync(enqueue, wait, launches, after=finish)()

    out["cutile_launch_1stream"] = on_one_stream

    def create(i: int) -> None:
        z, x, y = sets[i]
        ops.append(add(z, x, y))

    def give_back() -> None:
        for op in ops:
            op._give_back()
        ops.clear()

    out["cutile_create"] = launches_then_sync(create, lambda: None, launches, after=give_back)

    def start_made() -> float:
        made = [add(z, x, y) for z, x, y in sets]
        t0 = time.perf_counter()
        for op in made:
            op._claim()
            op._start()
        t1 = time.perf_counter()
        ops[:] = made
        wait()
        finish()
        return (t1 - t0) / launches

    out["cutile_start"] = start_made

    def zipped() -> None:
        res = cutile.zip(*[add(z, x, y) for z, x, y in sets]).sync()
        sets[:] = list(res)

    zip_sample = calls(zipped, reps=1)
    out["cutile_zip_per_op"] = lambda: zip_sample() / launches

    if gpu:  # the same kernel through cuda.bindings' cuLaunchKernel, no checks at all
        from timing import raw_launch

        z, x, y = sets[0]
        op = add(z, x, y)
        run = raw_launch(add, op)
        op._give_back()
        d = driver._driver()
        out["raw_cuLaunchKernel"] = launches_then_sync(
            lambda i: run(),
            lambda: driver.check(d.cuStreamSynchronize(run.stream), "cuStreamSynchronize"),
            launches)
        # ... taking the pool's streams in turn, as cutile's ops do
        rt = streams.runtime()
        handles = [d.CUstream(rt.stream_info(s)[0]) for s in rt.pool]
        k = len(handles)

        def sync_all() -> None:  # (the runtime does not know of these launches)
            for h in handles:
                driver.check(d.cuStreamSynchronize(h), "cuStreamSynchronize")

        out["raw_cuLaunchKernel_rr"] = launches_then_sync(
            lambda i: run.launch(run.grid, run.flat, handles[i % k]), sync_all, launches)
    return out


def null_driver_samples(n: int, launches: int, rounds: int) -> dict[str, list[float]]:
    """The cutile rows on the GPU code path with a null driver (`cutile.runtime.null_gpu`):
    the host's whole part of a GPU launch, every driver call returning at once. Measured
    on their own, inside one null runtime (the interpreter's rows run outside it)."""
    from cutile.runtime.null_gpu import null_gpu

    with null_gpu():
        made = cutile_samplers(n, launches, gpu=False)
        made.pop("cutile_finish")
        samples = measure(made, rounds)
    out = {f"null_{k}": v for k, v in samples.items()}
    if cutile.device_count() < 2:
        return out
    # Two devices in use: driver calls may switch contexts. Ops on device 0 (the thread's
    # context: one cuCtxGetCurrent per driver call more) and on tensors of device 1 (each
    # driver call switches context and back).
    with null_gpu(devices=2):
        two: dict[str, Sampler] = {}
        for dev in (0, 1):
            with cutile.device(dev):  # (where the op's tensors are made)
                two[f"null2_d{dev}_cutile_launch"] = cutile_samplers(
                    n, launches, gpu=False)["cutile_launch"]
        out.update(measure(two, rounds))
    return out


def peer_samplers(n: int, launches: int) -> tuple[dict[str, Sampler], str | None]:
    try:
        import torch
    except ImportError as exc:
        return {}, f"torch: {exc}"
    out: dict[str, Sampler] = {}
    a = torch.ones(n, device="cuda")
    b = torch.ones(n, device="cuda")
    c = torch.empty_like(a)
    s = torch.cuda.current_stream()

    def torch_add() -> None:
        torch.add(a, b, out=c)
        s.synchronize()

    out["torch_launch_sync"] = calls(torch_add)
    out["torch_launch"] = launches_then_sync(lambda i: torch.add(a, b, out=c), s.synchronize,
                                             launches)
    if ct is None:
        return out, "cuda.tile (cuTile Python) is not installed"
    try:
        c.fill_(float("nan"))
        ct.launch(s, (1, 1, 1), ct_add, (a, b, c, n))
        s.synchronize()
        assert bool((c == 2).all())
    except Exception as exc:  # a peer failing is reported, not fatal
        return out, f"cuTile Python: {exc!r}"

    def theirs() -> None:
        ct.launch(s, (1, 1, 1), ct_add, (a, b, c, n))
        s.synchronize()

    out["ct_launch_sync"] = calls(theirs)
    out["ct_launch"] = launches_then_sync(lambda i: ct.launch(s, (1, 1, 1), ct_add, (a, b, c, n)),
                                          s.synchronize, launches)
    return out, None


CUPY_ADD = r"""
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def cupy_samplers(n: int, launches: int) -> tuple[dict[str, Sampler], str | None]:
    """cupy's RawKernel: a CUDA C++ add launched through cupy (the peer the issue names)."""
    try:
        import cupy as cp
    except ImportError as exc:
        return {}, f"cupy: {exc}"
    try:
        kernel = cp.RawKernel(CUPY_ADD, "add")
        a, b = cp.ones(n, cp.float32), cp.ones(n, cp.float32)
        c = cp.empty_like(a)
        grid, block, count = ((n + 255) // 256,), (256,), np.int32(n)
        kernel(grid, block, (a, b, c, count))
        s = cp.cuda.get_current_stream()
        s.synchronize()
        assert bool((c == 2).all())
    except Exception as exc:  # a peer failing is reported, not fatal
        return {}, f"cupy: {exc!r}"
    return {"cupy_launch": launches_then_sync(lambda i: kernel(grid, block, (a, b, c, count)),
                                              s.synchronize, launches)}, None


def measure(samplers: dict[str, Sampler], rounds: int) -> dict[str, list[float]]:
    """Interleaved rounds (the order rotates each round), so drift hits every peer alike;
    one warm-up round first. The garbage collector is off while a sample runs (as in
    `timeit`): a full collection in the middle of one peer's sample is noise."""
    names = list(samplers)
    samples: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds + 1):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            gc.disable()
            try:
                v = samplers[name]()
            finally:
                gc.enable()
            if r:
                samples[name].append(v)
    return samples


ROWS = [
    ("cutile_launch_sync", "cutile `add(z, x, y).sync()`", "ct_launch_sync"),
    ("ct_launch_sync", "cuTile Python `ct.launch` + synchronize", "ct_launch_sync"),
    ("torch_launch_sync", "torch add + synchronize", "ct_launch_sync"),
    ("cutile_launch", "cutile launch only (`add(...)` + `_start()`)", "ct_launch"),
    ("cutile_launch_1stream", "  the same, every op on one stream", "ct_launch"),
    ("cutile_create", "  `add(...)` alone (bind, check, move in)", "ct_launch"),
    ("cutile_start", "  `_start()` alone (ledger, pack, launch)", "ct_launch"),
    ("cutile_zip_per_op", "cutile `cutile.zip(*ops).sync()` per op", "ct_launch"),
    ("ct_launch", "cuTile Python `ct.launch` only", "ct_launch"),
    ("torch_launch", "torch add only", "ct_launch"),
    ("raw_cuLaunchKernel", "cuda.bindings `cuLaunchKernel` only", "ct_launch"),
    ("raw_cuLaunchKernel_rr", "  the same, the pool's streams in turn", "ct_launch"),
    ("cupy_launch", "cupy `RawKernel` only", "ct_launch"),
    ("null_cutile_launch_sync", "null driver: `add(z, x, y).sync()`", "ct_launch_sync"),
    ("null_cutile_launch", "null driver: launch only", "ct_launch"),
    ("null_cutile_launch_1stream", "  the same, every op on one stream", "ct_launch"),
    ("null_cutile_create", "  `add(...)` alone", "ct_launch"),
    ("null_cutile_start", "  `_start()` alone", "ct_launch"),
    ("null_cutile_zip_per_op", "null driver: `cutile.zip(*ops).sync()` per op", "ct_launch"),
    ("null2_d0_cutile_launch", "null driver, 2 devices in use: launch only, device 0",
     "ct_launch"),
    ("null2_d1_cutile_launch", "  tensors of device 1 (context switched per call)",
     "ct_launch"),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--launches", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--no-gpu", action="store_true",
                    help="interpreter backend with a no-op kernel: host work only")
    ap.add_argument("--json")
    args = ap.parse_args()
    from cutile.runtime import driver, launch

    gpu = not args.no_gpu and driver.backend() == "gpu"
    if not gpu:
        launch.interpret = lambda *a, **k: None  # type: ignore[assignment]
    samplers = cutile_samplers(args.n, args.launches, gpu)
    peer_error = None
    if gpu:
        peers, peer_error = peer_samplers(args.n, args.launches)
        samplers.update(peers)
        cupy_peer, cupy_error = cupy_samplers(args.n, args.launches)
        samplers.update(cupy_peer)
        if cupy_error:
            peer_error = f"{peer_error}; {cupy_error}" if peer_error else cupy_error
    finish = samplers.pop("cutile_finish")
    samples = measure(samplers, args.rounds)
    if not gpu:
        samples.update(null_driver_samples(args.n, args.launches, args.rounds))
    results: dict[str, Any] = {
        "n": args.n, "launches": args.launches, "rounds": args.rounds,
        "backend": "gpu" if gpu else "interpreter (no-op kernel)", "peer_error": peer_error,
        "median_s": {k: statistics.median(v) for k, v in samples.items()},
        "min_s": {k: min(v) for k, v in samples.items()},
        "samples_s": samples,
    }
    results["median_s"]["cutile_finish"] = finish()
    ratios: dict[str, float] = {}
    for key, _, ref in ROWS:
        if key in samples and ref in samples and key != ref:
            ratios[key] = statistics.median(a / b for a, b in zip(samples[key], samples[ref],
                                                                   strict=True))
    results["paired_ratio"] = ratios
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    med, low = results["median_s"], results["min_s"]
    print(f"host us per launch, f32 add of {args.n} elements, {results['backend']}, "
          f"{args.rounds} interleaved rounds; hand back (`_finish()`) "
          f"{med['cutile_finish'] * 1e6:.2f} us")
    print(f"{'ratio: median of paired rounds vs ct.launch (+ sync)':<52}{'median':>8}{'min':>7}"
          f"{'ratio':>7}")
    for key, label, _ in ROWS:
        if key not in med:
            continue
        lo = f"{low[key] * 1e6:7.2f}" if key in low else f"{'':>7}"
        ratio = f"{ratios[key]:7.2f}" if key in ratios else f"{'':>7}"
        print(f"{label:<52}{med[key] * 1e6:8.2f}{lo}{ratio}")
    if peer_error:
        print(f"peer: {peer_error}")


if __name__ == "__main__":
    main()

"""Timing helpers shared by the benchmarks: CUDA events on a given stream, warm-up, medians,
and a cutile op's launch as a bare enqueue.

Every peer is timed the same way: `reps` launches enqueued back to back between two events
on the peer's stream, repeated `trials` times after a warm-up; the median per-launch time
is reported (METHOD.md: events, warm-up, medians). A cutile kernel is timed through
`raw_launch`: the launch its op was bound to, with none of the launcher's checks, so that
the device time, not the host's, is measured (`launch_overhead.py` measures the host's)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cuda.bindings import driver as cu


def _check(res: Any) -> Any:
    err = res[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA error {err}")
    return res[1] if len(res) > 1 else None


def stream_handle(stream: Any) -> Any:
    """A cuda.bindings CUstream for our stream or a torch stream."""
    if hasattr(stream, "cuda_stream"):
        return cu.CUstream(stream.cuda_stream)
    return stream


def time_on_stream(enqueue: Callable[[], Any], stream: Any, reps: int = 20, trials: int = 11,
                   warmup: int = 5, prelude: Callable[[], Any] | None = None) -> float:
    """Median seconds per call of `enqueue` (which must only enqueue work on `stream`).
    `prelude`, if given, enqueues work on `stream` before each trial's start event (a spin
    kernel: the GPU waits there while the host enqueues the trial, so that short kernels
    are timed without the host's launch cost between them)."""
    s = stream_handle(stream)
    start = _check(cu.cuEventCreate(0))
    stop = _check(cu.cuEventCreate(0))
    for _ in range(warmup):
        enqueue()
    _check(cu.cuStreamSynchronize(s))
    samples = []
    for _ in range(trials):
        if prelude is not None:
            prelude()
        _check(cu.cuEventRecord(start, s))
        for _ in range(reps):
            enqueue()
        _check(cu.cuEventRecord(stop, s))
        _check(cu.cuEventSynchronize(stop))
        ms = _check(cu.cuEventElapsedTime(start, stop))
        samples.append(ms * 1e-3 / reps)
    cu.cuEventDestroy(start)
    cu.cuEventDestroy(stop)
    return statistics.median(samples)


def host_time(call: Callable[[], Any], reps: int = 200, trials: int = 7) -> float:
    """Median wall-clock seconds per call of a synchronous `call` (host overhead included)."""
    for _ in range(20):
        call()
    samples = []
    for _ in range(trials):
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        samples.append((time.perf_counter() - t0) / reps)
    return statistics.median(samples)


@dataclass(frozen=True)
class RawLaunch:
    """A cutile op's launch as a call that only enqueues it: `cuLaunchKernel` with the
    arguments the op was bound to, on `stream`. Valid while the op holds its tensors (their
    addresses are fixed until it runs or is given back)."""

    launch: Callable[..., None]
    grid: tuple[int, int, int]
    flat: list[Any]
    stream: Any

    def __call__(self) -> None:
        # as the safe launcher would launch it where nothing in flight writes the
        # parameters it loads ahead of its PDL wait (the benchmarks never write weights)
        self.launch(self.grid, self.flat, self.stream, early_ok=True)


def raw_launch(kernel: Any, op: Any, stream: Any = None) -> RawLaunch:
    """The launch `op` (a call of `kernel`, not yet run) would make, on `stream` (cutile's
    first stream by default)."""
    from cutile.runtime import driver
    from cutile.runtime.launch import flatten_args

    b = op.binding
    loaded = kernel._runnable(b.spec)
    flat = flatten_args(loaded.abi, [p.name for p in b.params], b.values)
    return RawLaunch(loaded.launch, b.grid, flat,
                     driver.state().stream if stream is None else stream)


def time_launch(kernel: Any, op: Any, reps: int = 20, trials: int = 11, warmup: int = 5,
                prelude: Callable[[], Any] | None = None) -> float:
    """Median seconds per launch of `op`'s kernel (`time_on_stream` of its `raw_launch`)."""
    run = raw_launch(kernel, op)
    return time_on_stream(run, run.stream, reps=reps, trials=trials, warmup=warmup,
                          prelude=prelude)


@dataclass(frozen=True)
class Timed:
    """One contender of `alternate`: what enqueues it, its stream, and its prelude."""

    enqueue: Callable[[], Any]
    stream: Any
    prelude: Callable[[], Any] | None = None


def alternate(contenders: dict[str, Timed], ours: str, rounds: int = 3, reps: int = 5,
              trials: int = 5) -> dict[str, dict[str, float]]:
    """`ours` against every other contender, all timed once a round with the order rotated
    each round, so that none runs on a cooler (faster-clocked) GPU than the others; a
    peer's ratio is taken round by round (ours' speed over the peer's, both from that
    round) and reported as the median with the lowest and highest round: the spread between
    runs that says whether a difference is noise (METHOD.md). Returns, per peer, {"ratio",
    "low", "high", "ours_s", "peer_s"} (seconds: medians over the rounds)."""
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            c = contenders[n]
            times[n].append(time_on_stream(c.enqueue, c.stream, reps=reps, trials=trials,
                                           prelude=c.prelude))
    out = {}
    for n in names:
        if n == ours:
            continue
        ratios = sorted(p / o for o, p in zip(times[ours], times[n], strict=True))
        out[n] = {"ratio": statistics.median(ratios), "low": ratios[0], "high": ratios[-1],
                  "ours_s": statistics.median(times[ours]),
                  "peer_s": statistics.median(times[n])}
    return out

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
from contextlib import AbstractContextManager, nullcontext
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


def spin(stream: Any) -> Callable[[], None] | None:
    """A prelude for time_on_stream: about 2 ms of spinning on `stream` (None without
    torch's spin kernel: then the timing includes what the host costs), so that the host
    has enqueued a trial's launches before the GPU reaches them."""
    import torch

    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    ext = stream if isinstance(stream, torch.cuda.Stream) else torch.cuda.ExternalStream(
        int(stream))

    def run() -> None:
        with torch.cuda.stream(ext):
            sleep(4_000_000)

    return run


@dataclass(frozen=True)
class Timed:
    """One contender of `alternate`: what enqueues it, its stream, its prelude, and a
    context it is timed in (e.g. torch's `sdpa_kernel(backend)`, entered once around a
    timing rather than once a call)."""

    enqueue: Callable[[], Any]
    stream: Any
    prelude: Callable[[], Any] | None = None
    context: Callable[[], AbstractContextManager[Any]] | None = None

    @classmethod
    def of_launch(cls, kernel: Any, op: Any, prelude: Callable[[], Any] | None = None
                  ) -> Timed:
        """A pending cutile op's launch (`raw_launch`) on cutile's stream: valid while the
        op holds its tensors, so the caller syncs it once the timing is done."""
        run = raw_launch(kernel, op)
        return cls(run, run.stream, prelude)


def alternate_times(contenders: dict[str, Timed], rounds: int = 3, reps: int = 5,
                    trials: int = 5) -> dict[str, list[float]]:
    """Every contender timed once a round, the order rotated each round, so that none runs
    on a cooler (faster-clocked) GPU than the others: per name, its seconds each round."""
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            c = contenders[n]
            with c.context() if c.context is not None else nullcontext():
                times[n].append(time_on_stream(c.enqueue, c.stream, reps=reps,
                                               trials=trials, prelude=c.prelude))
    return times


def paired(times: dict[str, list[float]], ours: str, peer: str) -> dict[str, float]:
    """`ours` against `peer` from `alternate_times`: the ratio taken round by round (ours'
    speed over the peer's, both from that round), as the median with the lowest and highest
    round (the spread between runs that says whether a difference is noise: METHOD.md), and
    each side's median seconds."""
    ratios = sorted(p / o for o, p in zip(times[ours], times[peer], strict=True))
    return {"ratio": statistics.median(ratios), "low": ratios[0], "high": ratios[-1],
            "ours_s": statistics.median(times[ours]), "peer_s": statistics.median(times[peer])}


def alternate(contenders: dict[str, Timed], ours: str, rounds: int = 3, reps: int = 5,
              trials: int = 5) -> dict[str, dict[str, float]]:
    """`ours` against every other contender (`alternate_times`, then `paired`)."""
    times = alternate_times(contenders, rounds, reps, trials)
    return {n: paired(times, ours, n) for n in contenders if n != ours}

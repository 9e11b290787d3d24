"""The GPU code path on a machine without a GPU, for tests and benchmarks of the host's part
of it: the runtime drives a driver that does nothing (`cutile._native.null_driver()`: every
call succeeds at once and is counted; allocations hand out addresses nothing touches). Ops
launch through `cuLaunchKernel`'s path (their parameters packed as for the GPU), tensors
are `DeviceAllocation`s from the pool's path, streams and events are ordered as on a GPU;
no kernel runs and no byte moves, so nothing may be read back. Never a backend a program
selects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import _native
from . import streams
from .ownership import registry


def calls() -> dict[str, int]:
    """Calls the null driver took so far, by entry point."""
    return dict(_native.null_driver()[1])


class Count:
    """`with Count() as c:` the null driver's calls made inside the block, by entry point
    (those made at least once), in `c.made` after it."""

    def __init__(self) -> None:
        self.before: dict[str, int] = {}
        self.made: dict[str, int] = {}

    def __enter__(self) -> Count:
        self.before = calls()
        return self

    def __exit__(self, *exc: object) -> None:
        after = calls()
        self.made = {k: after[k] - self.before[k] for k in after if after[k] != self.before[k]}


@contextmanager
def null_gpu(stream_count: int = 4, devices: int = 1) -> Iterator[Any]:
    """Within the block, the process's runtime is a GPU runtime of `devices` devices with
    `stream_count` streams each, on the null driver (kernels get new launchers for it),
    every device set up (its own streams, memory pool and context handles; with two or
    more, driver calls switch contexts as on GPUs, from device 0's, current on this
    thread); the runtime of the backend in use comes back after. Yields the runtime.
    (Python checks device ordinals against the backend's count: for more than one device,
    CUTILE_INTERPRETER_DEVICES.)"""
    # this thread works in the first device's context, as `streams.runtime()` leaves it
    symbols = _native.null_driver(0xC000)[0]

    def handles(device: int) -> list[tuple[int, int]]:
        return [(0x1000 + 0x100 * device + i, 0x2000 + 0x100 * device + i)
                for i in range(stream_count)]

    rt = _native.Runtime(registry(), stream_count, symbols, handles(0), 1, devices=devices,
                         device=0, context=0xC000)
    for d in range(1, devices):
        rt.add_device(d, handles(d), 1 + d, 0xC000 + d)
    with streams._lock:
        saved = streams._runtime, streams._pool
        streams._runtime, streams._pool = rt, None
    _native.invalidate_launchers()
    try:
        yield rt
    finally:
        with streams._lock:
            streams._runtime, streams._pool = saved
        _native.invalidate_launchers()

"""The GPU code path on a machine without a GPU, for tests and benchmarks of the host's part
of it: the runtime drives a driver that does nothing (`cutile._native.null_driver()`: every
call succeeds at once and is counted; allocations hand out addresses nothing touches). Ops
launch through `cuLaunchKernel`'s path, tensors are `DeviceAllocation`s from the pool's
path, streams and events are ordered as on a GPU; no kernel runs and no byte moves, so
nothing may be read back. Never a backend a program selects."""

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


@contextmanager
def null_gpu(stream_count: int = 4) -> Iterator[Any]:
    """Within the block, the process's runtime is a GPU runtime of `stream_count` streams
    on the null driver (kernels get new launchers for it); the runtime of the backend in
    use comes back after. Yields the runtime."""
    symbols = _native.null_driver()[0]
    handles = [(0x1000 + i, 0x2000 + i) for i in range(stream_count)]
    rt = _native.Runtime(registry(), stream_count, symbols, handles, 1)
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

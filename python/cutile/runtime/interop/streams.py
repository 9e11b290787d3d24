"""Stream order between cutile's streams and another library's (GPU only).

cutile queues its device work on the runtime's non-blocking streams (`runtime/streams.py`),
which do not wait for the legacy default stream by themselves. Across a hand-over the two
libraries are ordered with an event on the runtime's home stream of the tensor's device
(its pool's first):
recorded on the stream whose work must come first, waited on (`cuStreamWaitEvent`) by the
other; and the hand-over is recorded in the ledger as a write of the bytes on the home
stream, so cutile work on any other stream touching them waits for it too. Streams are
named as DLPack names them: an int that is a `CUstream` handle, 1 for the legacy default
stream, 2 for the per-thread default stream.
"""

from __future__ import annotations

from typing import Any

from .. import driver

LEGACY = 1
PER_THREAD = 2


def runtime_stream(device: int | None = None) -> Any:
    """The runtime's home stream of `device` (default: the current device; its pool's
    first), where hand-overs are ordered."""
    from .. import streams

    dev = driver.state().device if device is None else device
    return driver._driver().CUstream(streams.home_stream(dev))


def runtime_stream_id(device: int | None = None) -> int:
    """The runtime stream as DLPack and `__cuda_array_interface__` name a stream."""
    return int(runtime_stream(device))


def _handle(stream: int) -> Any:
    return driver._driver().CUstream(stream)


def _order(waiter: Any, first: Any, device: int | None) -> None:
    """Work queued on `waiter` from now on waits for the work queued on `first` so far
    (the event is made in `device`'s context, that of `first`)."""
    d = driver._driver()
    with driver.on_device(driver.state().device if device is None else device):
        flags = d.CUevent_flags.CU_EVENT_DISABLE_TIMING
        event = driver.check(d.cuEventCreate(flags), "cuEventCreate")
        try:
            driver.check(d.cuEventRecord(event, first), "cuEventRecord")
            driver.check(d.cuStreamWaitEvent(waiter, event, 0), "cuStreamWaitEvent")
        finally:
            d.cuEventDestroy(event)  # released once the wait is satisfied


def runtime_waits_for(stream: int, storage: int = 0, nbytes: int = 0,
                      device: int | None = None) -> None:
    """cutile's next work on `device` (default: the current one) waits for what is queued
    on another library's `stream` (an import whose producer cannot order itself, or an
    export the consumer released): the home stream waits, and, given the `storage` it is
    about, the ledger records that point so work on every other stream touching it waits
    as well."""
    if stream != runtime_stream_id(device):
        _order(runtime_stream(device), _handle(stream), device)
    if storage:
        note_foreign_write(storage, nbytes, device)


def note_foreign_write(storage: int, nbytes: int, device: int | None = None) -> None:
    """Record, at the current position of `device`'s home stream, that another library
    may have written `nbytes` of `storage` up to there: cutile work on any stream touching
    them is ordered after it (and a host read waits for it)."""
    from ..streams import runtime

    rt = runtime()
    rt.note(rt.pool_of(device)[0], [(storage, 0, nbytes, True)])


def stream_waits_for_runtime(stream: int, device: int | None = None) -> None:
    """Another library's next work on `stream` waits for what cutile queued so far on
    `device`'s home stream (an export: fills and kernels that wrote the tensor come
    first)."""
    if stream != runtime_stream_id(device):
        _order(_handle(stream), runtime_stream(device), device)


def consumer_streams(stream: int | None) -> tuple[int, ...]:
    """The streams a DLPack consumer's `stream=` argument names: `None` is the legacy
    default stream (the protocol's reading for CUDA), -1 asks for no ordering, and 0 (which
    the protocol forbids as ambiguous) is taken as both default streams, to be safe."""
    if stream is None:
        return (LEGACY,)
    if stream == -1:
        return ()
    if stream == 0:
        return (LEGACY, PER_THREAD)
    return (stream,)

"""Streams: where device work runs, and the runtime that orders it.

Every op runs on a stream of its device. By default ops take the streams of their
device's pool in turn (round-robin, `CUTILE_STREAMS` of them, 4 unless set), so
independent ops overlap; a thread's current stream (`with cutile.stream(s):`,
`op.sync_on(s)`, `op.submit(s)`) wins for work on its device, and a `then` chain stays on
the stream its first op took. Allocations, fills and host copies go to the thread's
current stream, else the first of their device's pool. One runtime serves every device:
each device's pool is made the first time work goes there (`devices.activate`).

Ordering is derived, never asked for: the native runtime (`cutile._native.Runtime`) keeps
the ledger of byte ranges each pending piece of work reads or writes, with its position on
its stream. Work that touches bytes pending on another stream waits for that stream's
event (recorded once, reused), a host read waits for the writers, and a free is ordered
after everything pending on the memory. On the interpreter the streams are virtual (work
runs when it is enqueued) and the same native code makes the same decisions, which
`stats()` counts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import environment
from ..errors import ConfigError
from . import driver

_lock = threading.Lock()
_runtime: Any = None
# `(runtime, {device: its pool's Stream objects})`
_pool: tuple[Any, dict[int, list[Stream]]] | None = None
# Streams made for this runtime that its Python objects still own (closed at exit).
_local = threading.local()

DEFAULT_STREAMS = 4
MAX_STREAMS = 64


def pool_size() -> int:
    """The pool's stream count: `CUTILE_STREAMS`, or 4 (ConfigError CT8007 otherwise)."""
    raw = (environment.get("CUTILE_STREAMS") or "").strip()
    if not raw:
        return DEFAULT_STREAMS
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_STREAMS:
        raise ConfigError(f"CUTILE_STREAMS={raw!r} is not a stream count from 1 to "
                          f"{MAX_STREAMS}", code="CT8007",
                          hint="e.g. CUTILE_STREAMS=1 runs every op on one stream")
    return int(raw)


def runtime() -> Any:
    """The native runtime of the current backend (made on first use)."""
    rt = _runtime
    if rt is not None:
        return rt
    with _lock:
        if _runtime is None:
            _make_runtime()
    return _runtime


def _make_runtime() -> None:
    global _runtime
    from .. import _native
    from .ownership import registry

    n = pool_size()
    st = driver.state()
    if driver.backend() != "gpu":
        _runtime = _native.Runtime(registry(), n, devices=st.count, device=st.default)
        return
    from . import memory

    dev = st.default
    symbols = {s: driver.proc_address(s) for s in _native.DRIVER_SYMBOLS}
    _runtime = _native.Runtime(registry(), n, symbols, device_handles(dev, n),
                               memory.device_pool(dev), devices=st.count, device=dev,
                               context=int(driver.context(dev)))
    driver.ensure_current(dev)  # this thread works on the default device from now on


def device_handles(device: int, n: int) -> list[tuple[int, int]]:
    """`n` new `(CUstream, CUevent)` pairs in the context of `device`."""
    with driver.on_device(device):
        return [(_new_stream(), _new_event()) for _ in range(n)]


def _new_stream() -> int:
    d = driver._driver()
    s = driver.check(d.cuStreamCreate(d.CUstream_flags.CU_STREAM_NON_BLOCKING),
                     "cuStreamCreate")
    return int(s)


def _new_event() -> int:
    d = driver._driver()
    e = driver.check(d.cuEventCreate(d.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    return int(e)


def reset() -> None:
    """Forget the runtime (the backend changed; tests)."""
    global _runtime, _pool
    with _lock:
        _runtime = None
        _pool = None


class Stream:
    """A stream of the runtime: `Stream()` makes a new one on `device` (default: the
    current device; a CUDA stream, or a virtual one on the interpreter). Use it with `with
    cutile.stream(s):`, `op.sync_on(s)` or `op.submit(s)`: it is current for work on its
    device (work on another device takes that device's pool). A stream made here is closed
    (after its work completes) when the object is collected or `close()` is called; the
    pool's streams stay open."""

    def __init__(self, name: str = "", device: int | None = None) -> None:
        from . import devices

        dev = devices.resolve(device)
        rt = runtime()
        if rt.gpu:
            with driver.on_device(dev):
                handles = (_new_stream(), _new_event())
        else:
            handles = (0, 0)
        self._rt = rt
        self._handles = handles
        self._owned = True
        self.device = dev
        self.slot: int = rt.add_stream(handles[0], handles[1], name or "stream", dev)
        self.name = name or f"stream {self.slot}"

    @classmethod
    def _of(cls, rt: Any, slot: int, name: str, device: int) -> Stream:
        s = cls.__new__(cls)
        s._rt, s._handles, s._owned, s.slot, s.name = rt, (0, 0), False, slot, name
        s.device = device
        return s

    def __repr__(self) -> str:
        return f"cutile.Stream({self.name!r}, slot={self.slot}, device={self.device})"

    @property
    def handle(self) -> int:
        """The `CUstream` (0 on the interpreter)."""
        return int(self._rt.stream_info(self.slot)[0])

    @property
    def is_open(self) -> bool:
        return bool(self._rt.stream_info(self.slot)[2])

    def synchronize(self) -> None:
        """Block until the work enqueued on this stream completed."""
        self._rt.synchronize(self.slot)

    def close(self) -> None:
        """Wait for this stream's work, then destroy it (idempotent; pool streams stay)."""
        if not self._owned:
            return
        self._owned = False
        self._rt.retire_stream(self.slot)
        if self._rt.gpu:
            d = driver._driver()
            with driver.on_device(self.device):
                d.cuStreamDestroy(d.CUstream(self._handles[0]))
                d.cuEventDestroy(d.CUevent(self._handles[1]))

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown, or a lost context: nothing to wait for
            pass

    def __enter__(self) -> Stream:
        entries: list[Any] = self.__dict__.setdefault("_entries", [])
        entries.append(_push(self))
        return self

    def __exit__(self, *exc: object) -> None:
        entries: list[Any] = self.__dict__.get("_entries", [])
        _pop(entries.pop() if entries else None)


def pool(device: int | None = None) -> list[Stream]:
    """The streams of `device`'s pool (default: the current device's): ops on that device
    without a current stream take them in turn."""
    global _pool
    from . import devices

    dev = devices.resolve(device)
    rt = runtime()
    if _pool is None or _pool[0] is not rt:
        _pool = (rt, {})
    got = _pool[1].get(dev)
    if got is None:
        got = [Stream._of(rt, s, f"device {dev} pool {i}", dev)
               for i, s in enumerate(rt.pool_of(dev))]
        _pool[1][dev] = got
    return list(got)


def _stack() -> list[list[Any]]:
    st: list[list[Any]] | None = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


def _push(s: Stream) -> list[Any]:
    """Make `s` this thread's current stream; returns the entry that `_pop` ends."""
    entry = [s._rt, s._rt.set_current(s.slot)]
    _stack().append(entry)
    return entry


def _pop(entry: list[Any] | None = None) -> None:
    """End `entry` (default: the last one). Blocks end in any order when asyncio tasks
    of one thread interleave them: a block that ends under one entered after it leaves
    the current stream to that one (whose block is still open), which returns, when it
    ends, to what the ended block returned to. So the current stream is always one an
    open block chose, never a stream whose block ended (and which may be closed since)."""
    st = _stack()
    if entry is None or (st and st[-1] is entry):
        rt, previous = st.pop()
        rt.set_current(previous)
        return
    i = next((i for i, e in enumerate(st) if e is entry), None)
    if i is None:
        return  # (ended already)
    st[i + 1][1] = entry[1]
    del st[i]


@contextmanager
def stream(s: Stream | None = None) -> Iterator[Stream]:
    """`with cutile.stream(s):` ops started in the block, on this thread, run on `s` (a new
    stream when none is given: `with cutile.stream() as s:`); allocations and host copies
    go there too. asyncio tasks of one thread share its current stream: while blocks of
    several tasks are open, ops go to the one entered last; `op.on(s)` chooses per op."""
    target = s if s is not None else Stream()
    entry = _push(target)
    try:
        yield target
    finally:
        _pop(entry)


@contextmanager
def on_slot(slot: int | None) -> Iterator[None]:
    """Make `slot` this thread's current stream for the block (None: leave it as it is)."""
    if slot is None:
        yield
        return
    rt = runtime()
    previous = rt.set_current(slot)
    try:
        yield
    finally:
        rt.set_current(previous)


def slot_of(s: Any) -> int:
    """The runtime slot of a `Stream` (a TypeError for anything else)."""
    if not isinstance(s, Stream):
        raise TypeError(f"expected a cutile.Stream, got {type(s).__name__}")
    return s.slot


def home_slot(device: int | None = None) -> int:
    """Where this thread's allocations and host copies on `device` (default: the current
    device, which must be set up) go: its current stream if on that device, else the
    device pool's first."""
    return int(runtime().home(device))


def home_stream(device: int) -> int:
    """The `CUstream` of `device`'s pool's first stream (set up on first use)."""
    from . import devices

    devices.activate(device)
    rt = runtime()
    return int(rt.stream_info(rt.pool_of(device)[0])[0])


def synchronize() -> None:
    """Block until every stream finished the work enqueued so far."""
    runtime().synchronize()


def stats() -> dict[str, int]:
    """What the ordering logic did so far: work `enqueued`, `events_recorded` and
    `stream_waits` for cross-stream dependencies, `host_waits`, `ordered_frees` (frees
    put after pending work), `polls`, and `pending_accesses` in the ledger; and of the
    freed device blocks kept for their stream, `blocks_kept`, `blocks_reused` and
    `cached_bytes` (the GPU; zeros on the interpreter)."""
    return dict(runtime().stats())

"""Devices: which one work goes to, and setting one up for the runtime.

A tensor lives on one device (`t.device`); a kernel launches on the device of its tensors
(tensors of two devices in one launch: LaunchError CT6113). Where nothing says, work goes
to the current device: the thread's (`with cutile.device(1):`), else the process default
(`CUTILE_DEVICE`, `cutile.set_device(i)`). Both are kept natively, where the launch path
reads them.

One runtime serves every device, so one ledger orders work across them: a device gets
its pool of streams, its memory pool and its primary context the first time work goes
there (`activate`), and peer access to every other device in use where the hardware
allows it (`cuDeviceCanAccessPeer`; then `cuCtxEnablePeerAccess` and access to each
other's memory pools), so copies between them (`t.to(i)`) go over the direct link; where
it does not, the driver stages them through the host.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np

from .. import _native
from ..errors import TensorError
from . import driver

_lock = threading.Lock()
# Pairs of devices with peer access on (both directions), for `peer_access`.
_peers: set[tuple[int, int]] = set()


def count() -> int:
    """How many devices there are: GPUs visible to this process, or the devices the
    interpreter models (`CUTILE_INTERPRETER_DEVICES`)."""
    return driver.device_count()


def check(device: Any) -> int:
    """`device` as an ordinal of a device there is; TensorError CT5036 otherwise."""
    n = count()
    ok = isinstance(device, (int, np.integer)) and not isinstance(device, (bool, np.bool_))
    if not ok or not 0 <= int(device) < n:
        where = "GPUs visible to this process" if driver.backend() == "gpu" else \
            "devices the interpreter models (CUTILE_INTERPRETER_DEVICES)"
        raise TensorError(
            f"{device!r} is not a device ordinal: there {'is' if n == 1 else 'are'} {n} "
            f"{where}, numbered 0 to {n - 1}", code="CT5036",
            hint="pass an int from 0 to the device count - 1 (`cutile.device_count()`); "
            "`CUDA_VISIBLE_DEVICES` decides which GPUs a process sees")
    return int(device)


def current() -> int:
    """The device work goes to where nothing else says: the thread's (`cutile.device`),
    else the process default."""
    driver.state()  # the default comes from CUTILE_DEVICE on first use
    return int(_native.thread_device())


def resolve(device: Any) -> int:
    """`device` checked and set up, or the current device when None (an allocation asks:
    kept to a few native calls)."""
    from . import streams

    rt = streams.runtime()  # (the default device is known once the runtime is)
    d = int(_native.thread_device()) if device is None else check(device)
    if not rt.has_device(d):
        activate(d)
    return d


def set_default(device: int) -> None:
    """Make `device` the process's default (threads without `cutile.device(i)` use it)."""
    d = check(device)
    driver.state().default = d
    _native.set_default_device(d)
    activate(d)
    if driver.backend() == "gpu" and _native.thread_device() == d:
        driver.ensure_current(d)


class DeviceScope:
    """`with cutile.device(i):` work started on this thread in the block goes to device
    `i` where its tensors do not say (allocations, launches without tensors); its CUDA
    context is current meanwhile. Leaving the block restores the thread's device and
    context as they were."""

    def __init__(self, device: Any) -> None:
        self.device = check(device)
        self._previous: list[tuple[int | None, ExitStack]] = []

    def __enter__(self) -> int:
        activate(self.device)
        context = ExitStack()
        context.enter_context(driver.on_device(self.device))
        self._previous.append((_native.set_thread_device(self.device), context))
        return self.device

    def __exit__(self, *exc: object) -> None:
        previous, context = self._previous.pop()
        _native.set_thread_device(previous)
        context.close()

    def __repr__(self) -> str:
        return f"cutile.device({self.device})"


def activate(device: int) -> None:
    """Set `device` up for the runtime (once): its pool of streams, memory pool and
    primary context, and peer access with the devices already in use."""
    from . import streams

    rt = streams.runtime()
    if rt.has_device(device):
        return
    with _lock:
        if rt.has_device(device):
            return
        if not rt.gpu:
            rt.add_device(device)
            return
        from . import memory

        handles = streams.device_handles(device, streams.pool_size())
        pool = memory.device_pool(device)
        others = [d for d in range(rt.device_count) if d != device and rt.has_device(d)]
        for other in others:
            _enable_peers(device, other)
        rt.add_device(device, handles, pool, int(driver.context(device)))


def _enable_peers(a: int, b: int) -> None:
    """Peer access between GPUs `a` and `b` (each way the hardware allows): the context
    of each may access the other's memory, and each memory pool grants the other device
    read/write access (pool memory is not covered by context peer access)."""
    from . import memory

    d = driver._driver()
    for src, dst in ((a, b), (b, a)):
        can = driver.check(d.cuDeviceCanAccessPeer(src, dst), "cuDeviceCanAccessPeer")
        if not can:
            continue
        with driver.on_device(src):
            err = d.cuCtxEnablePeerAccess(driver.context(dst), 0)[0]
        already = d.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
        if err not in (d.CUresult.CUDA_SUCCESS, already):
            driver.check((err,), "cuCtxEnablePeerAccess")
        desc = d.CUmemAccessDesc()
        desc.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        desc.location.id = src
        desc.flags = d.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        pool = d.CUmemoryPool(memory.device_pool(dst))
        driver.check(d.cuMemPoolSetAccess(pool, [desc], 1), "cuMemPoolSetAccess")
        _peers.add((src, dst))


def peer_access(a: int, b: int) -> bool:
    """Whether device `a` accesses device `b`'s memory directly (peer access is on);
    copies between devices without it are staged by the driver."""
    return (check(a), check(b)) in _peers


@contextmanager
def scoped(device: int | None) -> Iterator[None]:
    """`cutile.device(device)` for the block when `device` is given (else nothing)."""
    if device is None:
        yield
        return
    with DeviceScope(device):
        yield


def one_device(what: str, tensors: list[tuple[str, Any]]) -> int:
    """The device of every `(name, tensor)` (the current device when there is none);
    LaunchError CT6113 naming the first two on different devices (as the native launcher
    refuses a tile kernel's)."""
    from ..errors import LaunchError

    first: tuple[str, int] | None = None
    for name, t in tensors:
        if first is None:
            first = (name, t.device)
        elif t.device != first[1]:
            a, b = first, (name, t.device)
            raise LaunchError(
                f"{what} takes `{a[0]}` on device {a[1]} and `{b[0]}` on device {b[1]}: one "
                "launch runs on one device, and reads and writes only that device's memory",
                code="CT6113",
                hint=f"copy the tensor over first (`{b[0]}.to({a[1]})` makes a copy on "
                f"device {a[1]}), or run the work where the tensor is", tensor=b[0])
    return current() if first is None else first[1]

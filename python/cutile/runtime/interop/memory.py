"""Allocations over another library's memory: cutile reads and writes it in place, frees
nothing, and keeps the producer's objects (`keepers`: the DLPack managed tensor, the
producer's array) alive for as long as any cutile tensor views it."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import driver
from ..memory import DeviceAllocation, HostAllocation


class ForeignHostAllocation(HostAllocation):
    """Host memory of another library (the interpreter's tensors). The numpy buffer the
    interpreter reads views that memory; it is read-only unless the import is exclusive,
    so a write through a shared import fails in numpy rather than reaching the producer."""

    def __init__(self, address: int, nbytes: int, writable: bool,
                 keepers: tuple[Any, ...]) -> None:  # no super(): nothing to allocate
        self.nbytes = nbytes
        self.keepers = keepers
        if nbytes == 0 or address == 0:
            # An empty tensor's producer may give a null pointer; nothing is ever read.
            self.buffer = np.zeros(1, dtype=np.uint8)
            self.buffer.flags.writeable = writable
        else:
            raw = (ctypes.c_uint8 * nbytes).from_address(address)
            self.buffer = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
            if not writable:
                self.buffer.flags.writeable = False
        self.address = int(self.buffer.ctypes.data)

    def fill_bytes(self, pattern: bytes) -> None:
        raise AssertionError("foreign memory is never filled")  # only api builders fill


class ForeignDeviceAllocation(DeviceAllocation):
    """Device memory of another library (the GPU backend's tensors), read and written with
    the copies `DeviceAllocation` makes, never freed by cutile."""

    def __init__(self, address: int, nbytes: int,
                 keepers: tuple[Any, ...]) -> None:  # no super(): nothing to allocate
        self.nbytes = nbytes
        self.address = address
        self._ptr = None
        self._stream = driver.state().stream
        self.keepers = keepers

    def __del__(self) -> None:
        # The producer may reuse the memory as soon as its deleter runs, which is when
        # `keepers` go, right after this: let every cutile kernel queued on the runtime
        # stream that may still touch it finish first.
        try:
            driver.ensure_current()
            driver._driver().cuStreamSynchronize(self._stream)
        except Exception:  # interpreter shutdown: the context is going away anyway
            pass

    def fill_bytes(self, pattern: bytes) -> None:
        raise AssertionError("foreign memory is never filled")  # only api builders fill

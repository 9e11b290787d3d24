"""Allocations over another library's memory: cutile reads and writes it in place, frees
nothing, and keeps the producer's objects (`keepers`: the DLPack managed tensor, the
producer's array) alive for as long as any cutile tensor views it.

Each is a storage of the runtime's ledger like cutile's own memory (`attach` names it once
the registry made it): what cutile queues on it is ordered like any work, and when the
allocation dies, everything pending on it completes before the producer gets its memory
back."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import driver
from ..memory import Allocation, HostAllocation, copy_device, read_device
from ..streams import home_slot, runtime


class ForeignHostAllocation(HostAllocation):
    """Host memory of another library (the interpreter's tensors). The numpy buffer the
    interpreter reads views that memory; it is read-only unless the import is exclusive,
    so a write through a shared import fails in numpy rather than reaching the producer."""

    def __init__(self, address: int, nbytes: int, writable: bool,
                 keepers: tuple[Any, ...], device: int = 0) -> None:  # nothing to allocate
        self.nbytes = nbytes
        self.keepers = keepers
        self.device = device
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
        self._rt = runtime()

    def attach(self, storage: int) -> None:
        """The registry storage this memory is (set once, right after it is made)."""
        self.storage = storage
        self.slot = home_slot(self.device)

    def fill_bytes(self, pattern: bytes) -> None:
        raise AssertionError("foreign memory is never filled")  # only api builders fill


class ForeignDeviceAllocation(Allocation):
    """Device memory of another library (the GPU backend's tensors) on `device` (the
    producer's), read and written with the runtime's stream-ordered copies, never freed
    by cutile."""

    nbytes: int
    address: int
    storage: int
    slot: int
    device: int

    def __init__(self, address: int, nbytes: int,
                 keepers: tuple[Any, ...], device: int = 0) -> None:
        self.nbytes = nbytes
        self.address = address
        self.keepers = keepers
        self.device = device
        self._rt = runtime()
        self.storage = 0

    def attach(self, storage: int) -> None:
        """The registry storage this memory is (set once, right after it is made)."""
        self.storage = storage
        self.slot = home_slot(self.device)

    def __del__(self) -> None:
        # The producer may reuse the memory as soon as its deleter runs, which is when
        # `keepers` go, right after this: everything cutile queued that touches it
        # completes first, then the ledger forgets it.
        if not self.storage:
            return
        try:
            with driver.on_device(self.device):
                self._rt.host_access(self.storage, 0, self.nbytes, True)
            self._rt.free_storage(self.storage, self.slot)
        except Exception:  # interpreter shutdown: the context is going away anyway
            pass

    def write(self, offset: int, data: np.ndarray) -> None:
        src = np.ascontiguousarray(data)
        self._rt.copy_htod(home_slot(self.device), self.storage, self.address, offset,
                           src.ctypes.data, src.nbytes)

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        return read_device(self._rt, self.storage, self.address, self.device, offset, nbytes)

    def copy_from(self, offset: int, src: Allocation, src_offset: int, nbytes: int) -> None:
        copy_device(self, offset, src, src_offset, nbytes)

    def fill_bytes(self, pattern: bytes) -> None:
        raise AssertionError("foreign memory is never filled")  # only api builders fill

"""Allocations: a stream-ordered caching allocator on the GPU, numpy byte buffers on the
interpreter.

On the GPU memory comes from cutile's own CUDA memory pool of its device
(`cuMemAllocFromPoolAsync`; one pool per device), whose release threshold is unbounded:
freed memory stays with the pool and the next allocation of the stream reuses it, so
allocating and freeing in a loop costs what a caching allocator costs. An allocation is
recorded in the ledger as a write on the stream it was made on (a first use on another
stream waits for it), and freed (`cuMemFreeAsync`) when its last reference dies, ordered
after every piece of work still pending on it: a tensor dropped while an op uses it is
freed when the op completes. Fills (`api.full`, `zeros`, `ones`) run on the device; host
copies are stream-ordered too. Both run natively (`cutile._native.Runtime`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from . import devices, driver
from .ownership import registry
from .streams import home_slot, runtime


class Allocation:
    """One block of memory. `address` is a device pointer (GPU) or a host address;
    `storage` the registry storage it is; `slot` the stream it was made on; `device` the
    ordinal of the device whose memory it is."""

    if TYPE_CHECKING:  # attributes of subclasses (native properties on the GPU)

        @property
        def nbytes(self) -> int: ...
        @property
        def address(self) -> int: ...
        @property
        def storage(self) -> int: ...
        @property
        def slot(self) -> int: ...
        @property
        def device(self) -> int: ...

    def write(self, offset: int, data: np.ndarray) -> None:
        """Copy host bytes in at `offset` (after every pending use of those bytes)."""
        raise NotImplementedError

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        """Copy `nbytes` at `offset` out (after every pending writer of them)."""
        raise NotImplementedError

    def fill_bytes(self, pattern: bytes) -> None:
        """Fill the whole allocation with copies of `pattern` (1, 2, 4 or 8 bytes)."""
        raise NotImplementedError

    def copy_from(self, offset: int, src: Allocation, src_offset: int, nbytes: int) -> None:
        """Copy `nbytes` of `src` (of this device or another) in, on the device
        (stream-ordered)."""
        raise NotImplementedError


class HostAllocation(Allocation):
    """Interpreter memory: a numpy byte buffer standing in for device memory (of a
    modeled device: `device`). Every write goes through the runtime's ledger as on the GPU
    (on virtual streams)."""

    nbytes: int
    address: int
    storage: int
    slot: int
    device: int

    def __init__(self, nbytes: int, device: int | None = None) -> None:
        self.nbytes = nbytes
        self.device = int(_native.thread_device()) if device is None else device
        # Poisoned, as fresh device memory would hold garbage: a kernel that reads what it
        # never wrote shows NaN-like bytes instead of convenient zeros.
        self.buffer = np.full(max(nbytes, 1), 0xFF, dtype=np.uint8)
        self.address = int(self.buffer.ctypes.data)
        self._rt = runtime()
        self.storage = registry().new_storage(nbytes)
        self.slot = home_slot(device)
        self._rt.note(self.slot, [(self.storage, 0, nbytes, True)])

    def __del__(self) -> None:
        try:
            self._rt.free_storage(self.storage, self.slot)
        except Exception:  # interpreter shutdown
            pass

    def write(self, offset: int, data: np.ndarray) -> None:
        _refuse_in_capture(self._rt, "write a tensor from the host")
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        with _host_work(self._rt):
            self._rt.note(home_slot(self.device),
                          [(self.storage, offset, offset + raw.size, True)])
            self.buffer[offset : offset + raw.size] = raw

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        with host_read(self._rt, self.storage, offset, offset + nbytes):
            return self.buffer[offset : offset + nbytes].copy()

    def fill_bytes(self, pattern: bytes) -> None:
        pat = np.frombuffer(pattern, dtype=np.uint8)
        reps = -(-self.nbytes // pat.size)
        with _host_work(self._rt):
            self._rt.note(home_slot(self.device), [(self.storage, 0, self.nbytes, True)])
            self.buffer[: self.nbytes] = np.tile(pat, reps)[: self.nbytes]

    def copy_from(self, offset: int, src: Allocation, src_offset: int, nbytes: int) -> None:
        assert isinstance(src, HostAllocation)
        # (from another modeled device too: the same note orders it after the source's
        # writers and the destination's users, on a stream of this device)
        with _host_work(self._rt):
            self._rt.note(home_slot(self.device),
                          [(self.storage, offset, offset + nbytes, True),
                           (src.storage, src_offset, src_offset + nbytes, False)])
            self.buffer[offset : offset + nbytes] = src.buffer[src_offset : src_offset + nbytes]


@contextmanager
def _host_work(rt: Any) -> Iterator[None]:
    """The interpreter runs host copies and fills right after noting them: hold its host
    work meanwhile (`Runtime.begin_host_work`), so that another thread's wait for them
    waits until they ran."""
    rt.begin_host_work()
    try:
        yield
    finally:
        rt.end_host_work()


class DeviceAllocation(_native.DeviceBuffer, Allocation):
    """Device memory from cutile's pool of its device: `DeviceAllocation(runtime, registry,
    nbytes, device)` allocates (native; `registry` None: the process's, `device` None: the
    current device); the memory is freed, stream-ordered, with the last reference."""

    def write(self, offset: int, data: np.ndarray) -> None:
        _refuse_in_capture(runtime(), "write a tensor from the host")
        src = np.ascontiguousarray(data)
        runtime().copy_htod(home_slot(self.device), self.storage, self.address, offset,
                            src.ctypes.data, src.nbytes)

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        return read_device(runtime(), self.storage, self.address, self.device, offset, nbytes)

    def fill_bytes(self, pattern: bytes) -> None:
        if self.nbytes:
            runtime().fill(home_slot(self.device), self.storage, self.address, 0, self.nbytes,
                           list(pattern))

    def copy_from(self, offset: int, src: Allocation, src_offset: int, nbytes: int) -> None:
        copy_device(self, offset, src, src_offset, nbytes)


def read_device(rt: Any, storage: int, address: int, device: int, offset: int,
                nbytes: int) -> np.ndarray:
    """`nbytes` at `address + offset` of `device`'s memory, after their pending writers."""
    out = np.empty(nbytes, dtype=np.uint8)
    with host_read(rt, storage, offset, offset + nbytes):
        if nbytes:
            d = driver._driver()
            with driver.on_device(device):
                driver.check(d.cuMemcpyDtoH(out.ctypes.data, address + offset, nbytes),
                             "cuMemcpyDtoH")
    return out


# Rounds of "wait for the writers, then hold" a host read tries before it gives up: each
# round that fails saw a new writer enqueued (by another thread) between the two.
_HOLD_ROUNDS = 64


@contextmanager
def host_read(rt: Any, storage: int, lo: int, hi: int) -> Iterator[None]:
    """Bytes `lo..hi` of `storage` held for a host read while the body copies them:
    after their pending writers finished, and in the ledger as a reader with no stream
    (an external holder) until the copy is done, so work another thread enqueues meanwhile
    that writes them is refused (CT5008) rather than racing the copy. A writer enqueued
    between the wait and the hold is waited for in the next round."""
    from ..errors import BorrowError

    token = _native.next_op_id()
    for round_ in range(_HOLD_ROUNDS):
        rt.host_access(storage, lo, hi, False)
        try:
            rt.acquire(token, [(storage, lo, hi, False)], "a copy to the host in progress")
            break
        except BorrowError as e:
            if e.code != "CT5008" or round_ == _HOLD_ROUNDS - 1:
                raise
    try:
        yield
    finally:
        rt.release(token)


def copy_device(dst: Allocation, offset: int, src: Allocation, src_offset: int,
                nbytes: int) -> None:
    """Copy `nbytes` of device memory `src` into `dst`, on a stream of `dst`'s device:
    `cuMemcpyDtoDAsync` on one device, `cuMemcpyPeerAsync` between two."""
    if not nbytes:
        return
    rt = runtime()
    slot = home_slot(dst.device)
    if src.device == dst.device:
        rt.copy_dtod(slot, (dst.storage, dst.address, offset),
                     (src.storage, src.address, src_offset), nbytes)
    else:
        rt.copy_peer(slot, (dst.storage, dst.address, offset, dst.device),
                     (src.storage, src.address, src_offset, src.device), nbytes)


def _refuse_in_capture(rt: Any, what: str) -> None:
    """BorrowError CT5063 when this thread is capturing a graph: a graph records work on
    the tensors it was given; it allocates none, and bytes written from the host now would
    not be written at replay. (The native allocator asks this to word its refusal.)"""
    cur = rt.current()
    if cur is not None and rt.capturing(cur):
        from ..errors import BorrowError

        raise BorrowError(
            f"cannot {what} while a CUDA Graph is being captured: a graph records work on "
            "the tensors it was given, and runs none of it now",
            code="CT5063",
            hint="allocate every tensor the graph uses (intermediates too) before "
            "`cutile.graph(...)` and pass them in; new input values go in at replay "
            "(`g.replay(new_x)`)",
        )


def allocate(nbytes: int, device: int | None = None) -> Allocation:
    """`nbytes` of fresh memory of `device` (default: the current device; device memory,
    or host memory on the interpreter), registered as a new storage. Raises `MemoryError`
    when the device has no room, TensorError CT5036 for a device there is not, and
    BorrowError CT5063 inside a graph capture."""
    rt = runtime()
    if device is None and rt.gpu:
        # The common call, in one native call: the current device is found natively (it
        # was set up when it became current), and so is a capture in progress (refused).
        return DeviceAllocation(rt, None, nbytes)
    _refuse_in_capture(rt, f"allocate {nbytes} bytes")
    if device is not None:
        device = devices.check(device)
        if not rt.has_device(device):
            devices.activate(device)
    if rt.gpu:
        return DeviceAllocation(rt, None, nbytes, device)
    return HostAllocation(nbytes, device)


_pool_lock = threading.Lock()
_device_pool: dict[int, int] = {}


def device_pool(device: int | None = None) -> int:
    """cutile's CUDA memory pool on `device` (default: the current one; made once):
    device memory, release threshold unbounded, so freed blocks are kept and reused rather
    than returned."""
    dev = driver.state().device if device is None else device
    with _pool_lock:
        got = _device_pool.get(dev)
        if got is not None:
            return got
        d = driver._driver()
        driver.context(dev)  # the device's primary context exists first
        props = d.CUmemPoolProps()
        props.allocType = d.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        props.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        props.location.id = dev
        pool = driver.check(d.cuMemPoolCreate(props), "cuMemPoolCreate")
        attr = d.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
        driver.check(d.cuMemPoolSetAttribute(pool, attr, d.cuuint64_t(2**64 - 1)),
                     "cuMemPoolSetAttribute")
        _device_pool[dev] = int(pool)
        return int(pool)


def pool_usage(device: int | None = None) -> dict[str, int]:
    """`used` (bytes of live allocations), `reserved` (bytes the pool holds) and `cached`
    (freed blocks the runtime keeps for reuse on their stream: reserved, not used) of
    cutile's pool on `device` (default: the current one); the interpreter reports the
    storages it knows (`storages`) and zeros."""
    out = {"used": 0, "reserved": 0, "cached": 0,
           "storages": int(registry().storage_count())}
    if driver.backend() != "gpu":
        return out
    dev = driver.state().device if device is None else device
    d = driver._driver()
    pool = d.CUmemoryPool(device_pool(dev))
    a = d.CUmemPool_attribute
    for key, attr in (("used", a.CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
                      ("reserved", a.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)):
        value: Any = driver.check(d.cuMemPoolGetAttribute(pool, attr), "cuMemPoolGetAttribute")
        out[key] = int(value)
    out["cached"] = int(runtime().cached_bytes(dev))
    out["used"] -= out["cached"]  # the pool counts kept blocks as allocated
    return out


def trim(keep: int = 0, device: int | None = None) -> None:
    """Give the unused memory of `device`'s pool (default: the current device's) back to
    the device, keeping `keep` bytes reserved (after synchronizing: memory freed by
    pending work is released when it completes). The freed blocks of that device the
    runtime keeps go back to the pool first."""
    if driver.backend() != "gpu":
        return
    dev = driver.state().device if device is None else device
    runtime().release_cached(dev)
    runtime().synchronize()
    d = driver._driver()
    driver.check(d.cuMemPoolTrimTo(d.CUmemoryPool(device_pool(dev)), keep),
                 "cuMemPoolTrimTo")

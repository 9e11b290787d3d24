"""Allocations: stream-ordered device memory on the GPU, numpy byte buffers on the interpreter.

An allocation is freed when its last Python reference dies; on the GPU the free is
stream-ordered (`cuMemFreeAsync` on the runtime's stream), so a kernel that still runs on
that stream finishes first.
"""

from __future__ import annotations

import numpy as np

from . import driver


class Allocation:
    """One block of memory. `address` is a device pointer (GPU) or a host address."""

    nbytes: int
    address: int

    def write(self, offset: int, data: np.ndarray) -> None:
        raise NotImplementedError

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        raise NotImplementedError

    def fill_bytes(self, pattern: bytes) -> None:
        raise NotImplementedError


class HostAllocation(Allocation):
    """Interpreter memory: a numpy byte buffer standing in for device memory."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        # Poisoned, as fresh device memory would hold garbage: a kernel that reads what it
        # never wrote shows NaN-like bytes instead of convenient zeros.
        self.buffer = np.full(max(nbytes, 1), 0xFF, dtype=np.uint8)
        self.address = int(self.buffer.ctypes.data)

    def write(self, offset: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        self.buffer[offset : offset + raw.size] = raw

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        return self.buffer[offset : offset + nbytes].copy()

    def fill_bytes(self, pattern: bytes) -> None:
        pat = np.frombuffer(pattern, dtype=np.uint8)
        reps = -(-self.nbytes // pat.size)
        self.buffer[: self.nbytes] = np.tile(pat, reps)[: self.nbytes]


class DeviceAllocation(Allocation):
    def __init__(self, nbytes: int) -> None:
        d = driver._driver()
        st = driver.state()
        self.nbytes = nbytes
        self._stream = st.stream
        driver.ensure_current()
        ptr = driver.check(d.cuMemAllocAsync(max(nbytes, 1), st.stream), "cuMemAllocAsync")
        self.address = int(ptr)
        self._ptr = ptr

    def __del__(self) -> None:
        try:
            d = driver._driver()
            d.cuMemFreeAsync(self._ptr, self._stream)
        except Exception:  # interpreter shutdown: the context is going away anyway
            pass

    def write(self, offset: int, data: np.ndarray) -> None:
        d = driver._driver()
        src = np.ascontiguousarray(data)
        driver.ensure_current()
        driver.check(d.cuStreamSynchronize(self._stream), "cuStreamSynchronize")
        driver.check(d.cuMemcpyHtoD(self.address + offset, src.ctypes.data, src.nbytes),
                     "cuMemcpyHtoD")

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        d = driver._driver()
        out = np.empty(nbytes, dtype=np.uint8)
        driver.ensure_current()
        driver.check(d.cuStreamSynchronize(self._stream), "cuStreamSynchronize")
        driver.check(d.cuMemcpyDtoH(out.ctypes.data, self.address + offset, nbytes),
                     "cuMemcpyDtoH")
        return out

    def fill_bytes(self, pattern: bytes) -> None:
        d = driver._driver()
        driver.ensure_current()
        n = len(pattern)
        if len(set(pattern)) == 1:
            driver.check(d.cuMemsetD8Async(self.address, pattern[0], self.nbytes, self._stream),
                         "cuMemsetD8Async")
        elif n == 2 and self.nbytes % 2 == 0:
            v = int.from_bytes(pattern, "little")
            driver.check(d.cuMemsetD16Async(self.address, v, self.nbytes // 2, self._stream),
                         "cuMemsetD16Async")
        elif n == 4 and self.nbytes % 4 == 0:
            v = int.from_bytes(pattern, "little")
            driver.check(d.cuMemsetD32Async(self.address, v, self.nbytes // 4, self._stream),
                         "cuMemsetD32Async")
        else:
            reps = -(-self.nbytes // n)
            data = np.tile(np.frombuffer(pattern, dtype=np.uint8), reps)[: self.nbytes]
            self.write(0, data)


def allocate(nbytes: int) -> Allocation:
    if driver.backend() == "gpu":
        return DeviceAllocation(nbytes)
    return HostAllocation(nbytes)

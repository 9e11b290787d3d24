"""One launch of a raw kernel: a `DeviceOp` that holds its tensors as a tile kernel's
`KernelOp` does.

Made by the call: the tensors are moved into the op (host registry: a `write` or `atomic`
tensor exclusively, a `read` tensor shared; two uses of one tensor where either writes, or
overlapping bytes, are refused). `_start` loads the kernel (compiling it on a miss) and
launches it through the runtime like a tile kernel: on the stream the runtime picks,
ordered after conflicting work by the in-flight ledger, which records its byte ranges;
`_wait` waits for that position of the stream; `_finish` hands everything back and returns
the arguments in parameter order (`_hand_back` does so before completion, for `then` and
graph capture). Dropped before anything ran it, its tensors stay unusable and it warns
(`OpNeverRunWarning`), like every op.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BorrowError, DeviceError, LaunchError
from . import devices, driver, raw_args, streams
from .device_faults import KERNEL_FAULTS
from .ownership import next_op_id, registry
from .stream_op import StreamOp
from .unrun_ops import Site

if TYPE_CHECKING:
    from ..raw_kernel import RawKernel

# CUDA's limits on a launch (compute capability 9.x and every other since 3.0)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024
SHARED_DEFAULT_LIMIT = 48 * 1024  # above it a kernel must opt in (cuFuncSetAttribute)


@dataclass(frozen=True)
class LaunchDims:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int


def _dims(kernel: str, what: str, value: Any, least: int) -> tuple[int, int, int]:
    items = (value,) if isinstance(value, (int, np.integer)) else value
    ok = (isinstance(items, (tuple, list)) and 1 <= len(items) <= 3
          and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in items))
    if not ok or any(int(x) < least for x in items):
        raise LaunchError(
            f"`{what}` of raw kernel `{kernel}` is an int or 1 to 3 ints >= {least}, not "
            f"{value!r}", code="CT6121",
            hint=f"e.g. `{what}=256` or `{what}=(32, 8)`", kernel=kernel)
    padded = [int(x) for x in items] + [1] * (3 - len(items))
    return (padded[0], padded[1], padded[2])


def launch_dims(kernel: str, grid: Any, block: Any, shared_mem: Any) -> LaunchDims:
    """The grid (a 0 extent: nothing runs), the block and the dynamic shared memory of
    one launch, refused past CUDA's limits."""
    if block is None:
        raise LaunchError(f"raw kernel `{kernel}` has no block size", code="CT6121",
                          hint="pass `block=` to the call or to `raw_kernel(...)`",
                          kernel=kernel)
    g = _dims(kernel, "grid", grid, 0)
    b = _dims(kernel, "block", block, 1)
    if any(x > m for x, m in zip(g, MAX_GRID, strict=True)):
        raise LaunchError(f"grid {list(g)} of raw kernel `{kernel}` is past CUDA's limits "
                          f"({list(MAX_GRID)})", code="CT6109",
                          hint="launch fewer blocks, each doing more work", kernel=kernel)
    if any(x > m for x, m in zip(b, MAX_BLOCK, strict=True)) or b[0] * b[1] * b[2] > MAX_THREADS:
        raise LaunchError(f"block {list(b)} of raw kernel `{kernel}` is past CUDA's limits "
                          f"(x, y <= 1024, z <= 64, at most {MAX_THREADS} threads)",
                          code="CT6121", hint="use a smaller block", kernel=kernel)
    if (isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, np.integer))
            or not 0 <= shared_mem < 2**32):
        raise LaunchError(f"`shared_mem` of raw kernel `{kernel}` is a byte count >= 0, not "
                          f"{shared_mem!r}", code="CT6121",
                          hint="the dynamic shared memory per block, in bytes", kernel=kernel)
    return LaunchDims(g, b, int(shared_mem))


class RawOp(StreamOp):
    """One launch of a `cutile.unsafe.raw_kernel` (see the module docstring)."""

    def __init__(self, kernel: RawKernel, values: tuple[Any, ...], dims: LaunchDims,
                 site: Site | None) -> None:
        self.kernel = kernel
        self._values = values
        self.dims = dims
        self.op_id = next_op_id()
        self._name = f"`{kernel.name}` (op #{self.op_id})"
        self._site = site
        self._launched = False
        params = kernel.params
        raw_args.check_aliasing(kernel.name, self.op_id, params, values)
        # one device runs it: its tensors' (LaunchError CT6113 for two)
        self.device = devices.one_device(
            f"raw kernel `{kernel.name}`",
            [(p.name, v) for p, v in zip(params, values, strict=True) if p.is_pointer])
        try:
            registry().move_in(self.op_id, kernel.name, raw_args.moves(params, values))
        except BorrowError as err:
            if err.code in ("CT5005", "CT5006"):
                err.add_note(raw_args.argument_names(params))
            raise
        self._holding = True

    def __repr__(self) -> str:
        return f"<cutile.unsafe.RawOp {self._name}>"

    @property
    def values(self) -> tuple[Any, ...]:
        return self._values

    def _start(self) -> Callable[[], None]:
        self._started = True
        try:
            if 0 in self.dims.grid:  # no block: nothing to launch (as for a tile kernel)
                return self._wait
            loaded = self.kernel._loaded(self.dims.shared_mem, self.device)
            self._launch(loaded)
        except BaseException:
            self._release()
            raise
        return self._wait

    def _launch(self, loaded: Any) -> None:
        rt = streams.runtime()
        slot = rt.pick(self.device)
        buf, ptrs = raw_args.pack(self.kernel.params, loaded.layout, self.values)
        accesses = raw_args.accesses(self.kernel.params, self.values)
        with driver.on_device(self.device):
            # (a capture keeps the arguments alive with the graph: the record's last item)
            seq, _ = rt.launch_kernel(slot, self.op_id, accesses, int(loaded.function),
                                      self.dims.grid, self.dims.block, self.dims.shared_mem,
                                      ctypes.addressof(ptrs), (None, self.dims.grid, None,
                                                               self.values))
        del buf  # the driver copied the parameters
        self._position = (slot, seq)
        self._launched = True

    def _wait_on_stream(self, rt: Any, position: tuple[int, int]) -> None:
        code = rt.wait_code(*position)
        if code:
            self._fault(int(code))

    def _fault(self, code: int) -> None:
        try:
            driver.raise_cuda_error(code, "cuStreamSynchronize")
        except DeviceError as err:
            if code not in KERNEL_FAULTS:
                raise
            raise DeviceError(
                f"raw kernel `{self.kernel.name}` failed on the GPU: {err.message}",
                code="CT6903",
                hint="a raw kernel is unchecked: look for an index past a tensor's end or a "
                "parameter declared with the wrong type; the CUDA context cannot be used "
                "after a kernel fault, so restart the process") from None

    def _moved_names(self) -> list[tuple[Any, str]]:
        return [(v._handle, p.name) for p, v in zip(self.kernel.params, self.values,
                                                    strict=True) if p.is_pointer]


def interpreter_error(kernel: str) -> LaunchError:
    return LaunchError(
        f"raw kernel `{kernel}` is CUDA C++ and runs only on a GPU; this process runs kernels "
        f"on the CPU interpreter ({driver.state().reason})", code="CT6120",
        hint="run on a machine with an NVIDIA GPU and driver, or write the kernel as a tile "
        "kernel (`@cutile.entry`), which the interpreter runs; `compile()` still builds the "
        "cubin here", kernel=kernel)

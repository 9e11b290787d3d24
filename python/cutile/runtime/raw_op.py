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
from .device_op import DeviceOp
from .ownership import next_op_id, registry
from .unrun_ops import Site, warn_kernel_op

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


class RawOp(DeviceOp):
    """One launch of a `cutile.unsafe.raw_kernel` (see the module docstring)."""

    _holding = False  # (also for `__del__` of an op whose construction failed)

    def __init__(self, kernel: RawKernel, values: tuple[Any, ...], dims: LaunchDims,
                 site: Site | None) -> None:
        self.kernel = kernel
        self.values = values
        self.dims = dims
        self.op_id = next_op_id()
        self._name = f"`{kernel.name}` (op #{self.op_id})"
        self._site = site
        self._holding = False
        self._started = False
        self._launched = False
        self._position: tuple[int, int] | None = None
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
    def holding(self) -> bool:
        """Whether the arguments are still moved in."""
        return self._holding

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

    def _wait(self) -> None:
        if self._position is None:
            return
        try:
            with driver.on_device(self.device):
                code = streams.runtime().wait_code(*self._position)
            if code:
                self._fault(int(code))
        except BaseException:
            self._release()
            raise

    def _done(self) -> bool:
        return self._position is None or bool(streams.runtime().query(*self._position))

    def _last_slot(self) -> int | None:
        return None if self._position is None else self._position[0]

    def _hand_back(self) -> tuple[Any, ...]:
        """After `_start`: the arguments back now; the ledger orders what touches them next
        after the launch."""
        self._release()
        return self.values

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

    def _finish(self) -> tuple[Any, ...]:
        self._release()
        return self.values

    def _give_back(self) -> None:
        self._released = True
        self._release()

    def _release(self) -> None:
        """Hand the tensors back (idempotent). A launched op's ledger ranges stay until its
        stream is known to have completed it: what touches the tensors next, a free
        included, is ordered after it."""
        if self._holding:
            self._holding = False
            registry().give_back(self.op_id)

    def __del__(self) -> None:
        if not self._holding:
            return
        if self._started:
            # Ran but not finished: hand back without waiting (the ledger orders what
            # touches the tensors next after the launch).
            try:
                self._release()
            except Exception:  # interpreter shutdown: the registry is gone
                pass
            return
        self._holding = False
        names = [(v._handle, p.name) for p, v in zip(self.kernel.params, self.values,
                                                      strict=True) if p.is_pointer]
        try:
            registry().abandon(self.op_id, names)
        except Exception:  # interpreter shutdown
            return
        if not (self._adopted or self._released):
            # (under `-W error` this raises, and Python reports it as unraisable)
            warn_kernel_op(self._name, self._site, list(dict.fromkeys(n for _, n in names)))


def interpreter_error(kernel: str) -> LaunchError:
    return LaunchError(
        f"raw kernel `{kernel}` is CUDA C++ and runs only on a GPU; this process runs kernels "
        f"on the CPU interpreter ({driver.state().reason})", code="CT6120",
        hint="run on a machine with an NVIDIA GPU and driver, or write the kernel as a tile "
        "kernel (`@cutile.entry`), which the interpreter runs; `compile()` still builds the "
        "cubin here", kernel=kernel)

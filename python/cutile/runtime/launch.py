"""Running a compiled kernel: on the GPU through `cuLaunchKernel` (`cuLaunchKernelEx` with
the programmatic-stream-serialization attribute for a kernel compiled for programmatic
dependent launch), or on the interpreter.

This is the Python launch path (autotuning, benchmarks' raw replays); ops launch through
the native launcher (`rust/cutile-py/src/launch/pending.rs`), which makes the same choice
from the same compiled kernel.

GPU launches use block (1, 1, 1) and no dynamic shared memory (the cubin carries its real
CTA size); the grid is the tile grid. Parameters are packed once per launch into a reusable
buffer whose slot addresses were computed when the kernel was loaded.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Sequence
from typing import Any

from ..lowering.signature import KernelABI
from . import driver
from .tensor import _Handle


def flatten_args(abi: KernelABI, names: Sequence[str], values: Sequence[Any]) -> list[Any]:
    """One value per ABI slot, from the bound arguments (ptr, shape..., stride..., scalar)."""
    by_name = dict(zip(names, values, strict=True))
    out: list[Any] = []
    for slot in abi.slots:
        v = by_name[slot.param]
        if slot.kind == "ptr":
            assert isinstance(v, _Handle)
            out.append(v.address)
        elif slot.kind == "shape":
            out.append(v.shape[slot.axis])
        elif slot.kind == "stride":
            out.append(v.strides[slot.axis])
        else:
            out.append(v)
    return out


class LoadedKernel:
    """A cubin loaded into the context of `device` (default: the current device), ready
    to launch there: a CUfunction belongs to one context, so each device loads its own."""

    def __init__(self, cubin: bytes, symbol: str, abi: KernelABI, pdl: bool = False,
                 device: int | None = None, pdl_early: tuple[str, ...] = ()) -> None:
        d = driver._driver()
        self.device = driver.state().device if device is None else device
        with driver.on_device(self.device):
            self._module = driver.check(d.cuModuleLoadData(cubin), "cuModuleLoadData")
            self._fn = driver.check(d.cuModuleGetFunction(self._module, symbol.encode()),
                                    "cuModuleGetFunction")
            # Load the function now rather than at its first launch (lazy loading), which
            # may be inside a graph capture.
            load = getattr(d, "cuFuncLoad", None)
            if load is not None:
                driver.check(load(self._fn), "cuFuncLoad")
        self.abi = abi
        # Compiled with the PDL prologue (read from the compiled kernel, never re-derived):
        # only such a kernel may be launched with the attribute (`lowering/pdl.py`).
        self.pdl = pdl
        # Parameters it loads ahead of the PDL wait: this path cannot ask the ledger
        # whether the kernel before it writes them, so it launches such a kernel with the
        # attribute only when its caller says nothing does (`early_ok`).
        self.pdl_early = pdl_early
        self._config = _pdl_config(d) if pdl else None
        self._fmt = abi.struct_format
        size = max(struct.calcsize(self._fmt), 8)
        self._buf = ctypes.create_string_buffer(size)
        base = ctypes.addressof(self._buf)
        offsets = abi.offsets()
        self._ptrs = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        self._ptrs_addr = ctypes.addressof(self._ptrs) if offsets else 0
        self._lock = threading.Lock()
        self._launch = d.cuLaunchKernel
        self._launch_ex = d.cuLaunchKernelEx
        self._success = d.CUresult.CUDA_SUCCESS

    def launch(self, grid: tuple[int, int, int], flat: Sequence[Any], stream: Any,
               early_ok: bool = False) -> None:
        """Launch on `stream`; with the PDL attribute when compiled with the prologue,
        unless the kernel loads parameters ahead of the wait and `early_ok` does not say
        that no kernel before it on the stream writes them (then plainly, in full stream
        order: the wait returns at once)."""
        if 0 in grid:  # no tile, no block (cuLaunchKernel refuses an empty grid)
            return
        with self._lock:
            struct.pack_into(self._fmt, self._buf, 0, *flat)
            if self._config is not None and (early_ok or not self.pdl_early):
                cfg = self._config
                cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
                cfg.hStream = stream
                err = self._launch_ex(cfg, self._fn, self._ptrs_addr, 0)
                what = "cuLaunchKernelEx"
            else:
                err = self._launch(self._fn, grid[0], grid[1], grid[2], 1, 1, 1, 0, stream,
                                   self._ptrs_addr, 0)
                what = "cuLaunchKernel"
        if err[0] != self._success:
            driver.check(err, what)


def _pdl_config(d: Any) -> Any:
    """A `CUlaunchConfig` of block (1, 1, 1), no dynamic shared memory and the one
    attribute `PROGRAMMATIC_STREAM_SERIALIZATION = 1`; each launch sets grid and stream."""
    attr = d.CUlaunchAttribute()
    attr.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    cfg = d.CUlaunchConfig()
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1
    cfg.sharedMemBytes = 0
    cfg.attrs = [attr]
    cfg.numAttrs = 1
    return cfg


def interpret(module: Any, symbol: str, abi: KernelABI, grid: tuple[int, int, int],
              names: Sequence[str], values: Sequence[Any]) -> None:
    """Run a kernel on the CPU interpreter over the tensors' host buffers; under the race
    detector when `CUTILE_INTERPRET=check` or `cutile.check_races()` says so (read now, at
    launch, so that either can change between launches)."""
    from ..interpreter import Pointer, TensorArg, checking, run
    from .memory import HostAllocation

    if 0 in grid:
        # An output without tiles: no block runs, as on the GPU, where the launcher never
        # calls cuLaunchKernel (the machine, like the driver, refuses an empty grid).
        return
    check = checking()
    by_name = dict(zip(names, values, strict=True))
    args: list[Any] = []
    tensors: list[TensorArg | None] = []
    for slot in abi.slots:
        v = by_name[slot.param]
        if slot.kind == "ptr":
            assert isinstance(v, _Handle) and isinstance(v._alloc, HostAllocation)
            args.append(Pointer(v._alloc.buffer, v._offset))
            # The tensor's own layout, not the allocation: bytes of the buffer outside the
            # view are out of bounds for this argument.
            tensors.append(TensorArg(slot.param, tuple(v.shape), tuple(v.strides),
                                     v.dtype.itemsize))
            continue
        if slot.kind == "shape":
            args.append(v.shape[slot.axis])
        elif slot.kind == "stride":
            args.append(v.strides[slot.axis])
        else:
            args.append(v)
        tensors.append(None)
    if check:
        run(module, symbol, grid, args, check=True, tensors=tensors)
    else:
        run(module, symbol, grid, args)

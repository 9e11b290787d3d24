"""Timing autotuning candidates on the GPU, and the scratch copies of outputs they write.

A candidate is timed like `benchmarks/timing.py` times a kernel: its launch enqueued back to
back between two CUDA events on cutile's stream, after a warm-up, in several trials; the
median time per launch counts. The launches are raw `cuLaunchKernel`s of the op's own
packed arguments while the op holds every tensor (nothing else can touch them) and the
launch predicates were already evaluated for these arguments when the op was bound.
Trials write copies of the outputs, never the caller's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from ..errors import DeviceError
from ..runtime import driver
from ..runtime.memory import allocate
from ..runtime.streams import synchronize
from ..runtime.tensor import Partition, Tensor, _Handle

WARMUP = 3  # launches before anything is timed
TRIALS = 7  # timed batches; their median counts
TARGET_S = 2e-3  # each batch runs about this long
MAX_REPS = 200  # launches per batch at most
# Sticky errors: a kernel faulted and the context is lost (no later candidate can run).
_FAULTS = ("ILLEGAL_ADDRESS", "CUDA_ERROR_ASSERT", "HARDWARE_STACK_ERROR",
           "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS", "INVALID_ADDRESS_SPACE", "INVALID_PC",
           "LAUNCH_FAILED")


def can_time() -> bool:
    """Whether candidates can be timed (the GPU); the interpreter cannot."""
    return driver.backend() == "gpu"


def measure(launch: Callable[[], None]) -> float:
    """Median seconds per call of `launch`, which only enqueues work on cutile's home
    stream (raw launches, outside the ledger: everything else finishes first)."""
    synchronize()
    d = driver._driver()
    stream = driver.state().stream
    driver.ensure_current()
    start = driver.check(d.cuEventCreate(0), "cuEventCreate")
    stop = driver.check(d.cuEventCreate(0), "cuEventCreate")

    def batch(reps: int) -> float:
        driver.check(d.cuEventRecord(start, stream), "cuEventRecord")
        for _ in range(reps):
            launch()
        driver.check(d.cuEventRecord(stop, stream), "cuEventRecord")
        driver.check(d.cuEventSynchronize(stop), "cuEventSynchronize")
        ms = driver.check(d.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
        return float(ms) * 1e-3 / reps

    try:
        for _ in range(WARMUP):
            launch()
        one = batch(1)
        reps = max(1, min(MAX_REPS, int(TARGET_S / max(one, 1e-7))))
        return statistics.median(batch(reps) for _ in range(TRIALS))
    except DeviceError as err:
        if any(name in err.message for name in _FAULTS):
            raise DeviceError(f"a candidate faulted on the GPU while it was timed: "
                              f"{err.message}", code="CT6903",
                              hint="the CUDA context cannot be used after a kernel fault; "
                              "restart the process") from None
        raise  # a launch the device refused (resources): the tuner skips the candidate
    finally:
        d.cuEventDestroy(start)
        d.cuEventDestroy(stop)


def time_op(op: Any, runnable: Any) -> float:
    """Median seconds of one launch of a bound op's kernel (`runnable` is its loaded
    cubin); the op keeps holding its tensors and runs nothing itself."""
    from ..runtime.launch import flatten_args

    binding = op.binding
    flat = flatten_args(runnable.abi, [p.name for p in binding.params], binding.values)
    stream = driver.state().stream
    grid = binding.grid
    return measure(lambda: runnable.launch(grid, flat, stream))


ALIGN_KEPT = 256  # a scratch copy's address agrees with its tensor's modulo this


def scratch_copy(t: _Handle, with_data: bool) -> Tensor:
    """A new tensor with `t`'s layout (strides, and an address with the same residue
    modulo 256, in an allocation of the same size and more, so alignment and strides
    specialize alike: a trial compiles and times the kernel the launch runs), holding a
    copy of `t`'s bytes when `with_data` (a kernel may read its output). Never aliases
    `t`. (The residue matters where the tensor's memory is not the pool's: another
    library's, whose data may sit 4 bytes past a boundary.)"""
    t._ensure_live("read")
    t._ensure_no_pending_writer()
    src = t._alloc
    alloc = allocate(src.nbytes + ALIGN_KEPT, t.device)
    base = t.address - t._offset  # where `t`'s allocation starts
    shift = (base - alloc.address) % ALIGN_KEPT
    if with_data and src.nbytes:
        alloc.copy_from(shift, src, 0, src.nbytes)  # stream-ordered, through the ledger
    return Tensor(alloc, alloc.storage, t._offset + shift, t.shape, t.strides, t.dtype)


def scratch_like(arg: Any, with_data: bool) -> Any:
    """The stand-in a trial writes for an output argument: a copy of a `Tensor`, or of a
    `Partition` cut the same way (same tile shape and block count)."""
    if isinstance(arg, Partition):
        part = scratch_copy(arg, with_data).partition(arg.tile_shape)
        return part.persistent(arg.num_blocks) if arg.num_blocks is not None else part
    if isinstance(arg, Tensor):
        return scratch_copy(arg, with_data)
    return arg  # not a tensor: the binder says what is wrong with it

"""Importing another library's tensor, zero-copy: `cutile.from_dlpack` and
`cutile.unsafe.from_dlpack_exclusive`.

A shared import is a read-only cutile tensor: its storage is registered shared, so the
host registry refuses to partition it or to pass it where a kernel writes (BorrowError
CT5040), and on the interpreter its buffer is a read-only numpy view. Reads are safe with
no promise from the caller: cutile orders its runtime stream after the producer's pending
work (DLPack's `stream=`), and the producer stays alive while any view of it does.

An exclusive import is writable, so it can become an output partition. Nothing can check
that another library does not read or write the memory meanwhile: the caller promises it
by calling the `unsafe` function. What can be checked is: the producer did not mark the
memory read-only or hand out a copy (CT5046), no other live import or export views those
bytes (CT5047), and the layout has no two elements at one address (CT5044), which would
make two blocks of a launch write one element.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import InteropError
from .. import driver
from ..devices import activate
from ..ownership import registry
from ..tensor import Partition, Tensor, injective_layout
from . import aliases, sources, streams
from .memory import ForeignDeviceAllocation, ForeignHostAllocation
from .sources import Foreign


def target() -> sources.Target:
    s = driver.state()
    gpu = driver.backend() == "gpu"
    return sources.Target(gpu, s.device, s.count if gpu else 1)


def from_dlpack(obj: Any) -> Tensor:
    """A shared, read-only cutile tensor over `obj`'s memory (no copy)."""
    if isinstance(obj, Partition):
        raise _partition_given()
    if isinstance(obj, Tensor):
        # A cutile tensor already: a view under cutile's own rules (no foreign alias).
        obj._ensure_live("import it")
        return Tensor(obj._alloc, obj._storage, obj._offset, obj.shape, obj.strides,
                      obj.dtype)
    return _make(sources.read(obj, target()), exclusive=False)


def from_dlpack_exclusive(obj: Any) -> Tensor:
    """A writable cutile tensor over `obj`'s memory (no copy), on the caller's promise
    that nothing else reads or writes that memory while cutile holds it."""
    if isinstance(obj, Partition):
        raise _partition_given()
    if isinstance(obj, Tensor):
        raise InteropError(
            "this is a cutile tensor already; cutile's own rules say when it may be written",
            code="CT5042", hint="partition it directly: `t.partition(tile_shape)`",
        )
    foreign = sources.read(obj, target())
    if foreign.read_only or foreign.copied:
        what = "marked it read-only" if foreign.read_only else \
            "made a copy for this import (writes would not reach the original)"
        raise InteropError(
            f"cannot import a `{type(obj).__name__}` exclusively: its producer {what}",
            code="CT5046",
            hint="import it shared (`cutile.from_dlpack(x)`) to read it, and write into a "
            "tensor that is writable in place",
        )
    return _make(foreign, exclusive=True)


def _partition_given() -> InteropError:
    return InteropError(
        "a cutile Partition is an output a kernel writes, not a tensor to import",
        code="CT5042", hint="import the tensor it came from: `cutile.from_dlpack(p.unpartition())`",
    )


def _layout(f: Foreign, exclusive: bool) -> tuple[tuple[int, ...], int]:
    """The strides cutile uses (an axis of extent 0 or 1 has no real stride: a negative
    one becomes 0) and the byte span; InteropError CT5044 for a layout cutile cannot use."""
    strides = tuple(0 if n <= 1 and s < 0 else s for s, n in zip(f.strides, f.shape,
                                                                  strict=True))
    item = f.dtype.itemsize
    if any(s < 0 for s in strides):
        raise InteropError(
            f"the tensor has negative strides {list(strides)} (a reversed view); cutile's "
            "tensors step forward", code="CT5044",
            hint="copy it first (`np.ascontiguousarray(a)`; `x.flip(0).contiguous()` in "
            "torch); a reversed view is read forward by indexing from the end in the kernel",
        )
    size = math.prod(f.shape)
    if size and f.address % item:
        raise InteropError(
            f"the tensor's data at {f.address:#x} is not aligned to its {item}-byte "
            "element", code="CT5044", hint="copy it to a new (aligned) array first",
        )
    if exclusive and size and not injective_layout(f.shape, strides):
        raise InteropError(
            f"the tensor's strides {list(strides)} (shape {list(f.shape)}) put several "
            "elements at one address (a broadcast or overlapping view): blocks writing it "
            "would race", code="CT5044",
            hint="write into a tensor of its own memory (`torch.empty(shape)`), and "
            "broadcast that afterwards",
        )
    span = 0 if size == 0 else (sum(s * (n - 1) for s, n in zip(strides, f.shape,
                                                               strict=True)) + 1) * item
    return strides, span


def _make(f: Foreign, exclusive: bool) -> Tensor:
    strides, span = _layout(f, exclusive)
    where = target()
    device = sources.device_ordinal(f.device, where)  # the producer's device
    activate(device)
    if where.gpu:
        alloc: Any = ForeignDeviceAllocation(f.address, span, f.keepers, device)
    else:
        alloc = ForeignHostAllocation(f.address, span, exclusive, f.keepers, device)
    aliases.claim(f.device, f.address, f.address + span,
                  "exclusive" if exclusive else "shared", alloc)
    reg = registry()
    storage = reg.new_storage(span) if exclusive else reg.new_shared_storage(span)
    alloc.attach(storage)
    if where.gpu:
        # The producer's pending work was ordered before the runtime's home stream (the
        # protocol's `stream=`): record that point in the ledger as a write of the bytes,
        # so a kernel on any stream reading them waits for it.
        streams.note_foreign_write(storage, span, device)
    return Tensor(alloc, storage, 0, f.shape, strides, f.dtype)

"""Copies between devices: `Tensor.to(device)`.

A copy is one piece of device work through the runtime's ledger (source read, destination
written): it is ordered after the source's pending writers on any stream of either device
(an event wait, exactly as between two streams of one device), and the new tensor's next
user, a host read included, waits for it. On the GPU it is `cuMemcpyPeerAsync` on a stream
of the destination device (direct over NVLink or PCIe where peer access is on, staged by
the driver otherwise); on the interpreter, a copy between modeled devices' host buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import devices
from .memory import allocate

if TYPE_CHECKING:
    from .tensor import Tensor


def to_device(t: Tensor, device: int) -> Tensor:
    """`t.to(device)` (see `Tensor.to`)."""
    from .tensor import Tensor

    t._ensure_live("copy it to another device")  # CT5001 while an op holds it
    dst = devices.check(device)
    if dst == t.device:
        return t
    lo, hi = t._span_bytes()
    alloc = allocate(hi - lo, dst)
    # The view's whole byte span, so the copy keeps its layout (strides, offset).
    alloc.copy_from(0, t._alloc, lo, hi - lo)
    return Tensor(alloc, alloc.storage, t._offset - lo, t.shape, t.strides, t.dtype)

"""Exporting a cutile tensor to another library, zero-copy: `Tensor.__dlpack__`,
`Tensor.__dlpack_device__` and (GPU) `Tensor.__cuda_array_interface__`.

An export is a view another library holds, so while it lives cutile does not write the
tensor's storage (the registry's export pin: BorrowError CT5041 on `partition` or a
writing launch). A DLPack export ends when the consumer calls the capsule's deleter (its
tensor died), a `__cuda_array_interface__` export when the cutile tensor object dies (the
consumer keeps it alive to keep the memory). The capsule keeps cutile's memory alive.

Decisions: a tensor moved into an op is refused (BorrowError CT5001: the op owns it until
`.sync()`/`await` hands it back); one whose bytes pending work writes (a `then` chain, a
graph replay) is exported once that work finished, exactly as `to_numpy()` reads it
(a graph capture or an external holder refuses: CT5060, CT5008); and the consumer's stream
waits on an event of cutile's home stream. A tensor imported shared is exported
read-only (DLPack 1.x flag, `__cuda_array_interface__`'s readonly); a legacy (pre-1.0)
DLPack consumer cannot be told, and gets it as the protocol allows.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _native
from ...errors import InteropError
from .. import driver
from ..ownership import registry
from . import aliases, codes, streams
from .sources import row_major

if TYPE_CHECKING:
    from ..tensor import Tensor


def device_of(t: Tensor) -> tuple[int, int]:
    """`t.__dlpack_device__()`: `(kDLCUDA, its device)`, or `(kDLCPU, 0)` on the
    interpreter (host memory, whichever device it models)."""
    return (codes.CUDA, t.device) if driver.backend() == "gpu" else (codes.CPU, 0)


class _Export:
    """What an exported capsule keeps alive: the tensor (and so its memory), and the
    export pin on its storage, released when the consumer lets go. The consumer's queued
    work on its stream then comes before anything cutile queues next, so that a later
    write, or a stream-ordered free, cannot overtake the consumer's last reads."""

    __slots__ = ("__weakref__", "consumer_streams", "storage", "tensor")

    def __init__(self, tensor: Tensor, consumer_streams: tuple[int, ...]) -> None:
        self.tensor = tensor
        self.storage = tensor._storage
        self.consumer_streams = consumer_streams
        registry().pin_export(self.storage)

    def cancel(self) -> None:
        """The export failed before the consumer got it: unpin, and nothing at death."""
        self.consumer_streams = ()
        storage, self.storage = self.storage, 0
        if storage:
            registry().unpin_export(storage)

    def __del__(self) -> None:
        if not self.storage:
            return
        try:
            nbytes = self.tensor._alloc.nbytes
            for s in self.consumer_streams:
                streams.runtime_waits_for(s, self.storage, nbytes, self.tensor.device)
        except Exception:  # the consumer's stream is gone, or the context is
            pass
        try:
            registry().unpin_export(self.storage)
        except Exception:  # interpreter shutdown
            pass


def _check_exportable(t: Tensor, what: str) -> None:
    t._ensure_live(what)  # CT5001 (moved into an op), CT5002, CT5009
    shared, _ = registry().storage_sharing(t._storage)
    if shared:
        # a read-only export: pending readers may go on (CT5060 / CT5008 refuse)
        t._ensure_no_pending_writer()
    else:
        # a writable export: the consumer's writes are ordered after nothing of cutile's
        # on other streams, so every pending reader finishes first too
        t._ensure_no_pending_access()


def _check_pinned(t: Tensor, what: str, unpin: Any) -> None:
    """`_check_exportable` again, now that the storage is pinned: a check made before the
    pin can be stale by the time of the pin (another thread, or code the export ran in
    between, partitioned the tensor and started a writer), while once pinned no writer can
    start (CT5041), so what this check finds is what the consumer gets. On a refusal,
    `unpin()` first."""
    try:
        _check_exportable(t, what)
    except BaseException:
        unpin()
        raise


def _refuse(message: str, hint: str) -> InteropError:
    return InteropError(message, code="CT5045", hint=hint)


def _parse_device(dl_device: Any) -> tuple[int, int]:
    try:
        kind, index = dl_device
        return int(kind), int(index)
    except (TypeError, ValueError):
        raise _refuse(f"`dl_device` is a `(device_type, device_id)` pair, not {dl_device!r}",
                      "e.g. `dl_device=(1, 0)` for the CPU") from None


def _versioned(max_version: Any) -> bool:
    if max_version is None:
        return False
    try:
        return int(max_version[0]) >= 1
    except (TypeError, ValueError, IndexError):
        raise _refuse(f"`max_version` is a `(major, minor)` pair, not {max_version!r}",
                      "e.g. `max_version=(1, 0)`") from None


def dlpack(t: Tensor, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
    """`t.__dlpack__(stream=, max_version=, dl_device=, copy=)` as DLPack 1.x defines it."""
    _check_exportable(t, "export it through DLPack")
    ours = device_of(t)
    want = ours if dl_device is None else _parse_device(dl_device)
    versioned = _versioned(max_version)
    if copy is not None and not isinstance(copy, bool):
        raise _refuse(f"`copy` is True, False or None, not {copy!r}", "e.g. `copy=True`")
    if stream is not None and not isinstance(stream, int):
        raise _refuse(f"`stream` is an int or None, not {stream!r}",
                      "pass the consumer stream's handle as an int (1: the legacy default)")
    if want != ours:
        if copy is False:
            raise _refuse(f"the tensor is in {codes.device_name(ours)}; exporting it to "
                          f"{codes.device_name(want)} needs a copy, and `copy=False` forbids one",
                          "allow a copy (`copy=None` or `copy=True`)")
        if want != (codes.CPU, 0):
            raise _refuse(f"cutile exports to {codes.device_name(ours)}, or copies to the "
                          f"CPU; not to {codes.device_name(want)}",
                          "export to the CPU (`dl_device=(1, 0)`) or to the tensor's device")
        return _host_copy(t, versioned)
    if ours[0] == codes.CPU and stream not in (None, -1):
        raise _refuse(f"`stream={stream}` names a CUDA stream, but this tensor is in host "
                      "memory (the interpreter)", "pass `stream=None` for host memory")
    if copy:
        from ... import api

        t = api.from_numpy(t.to_numpy())  # a new contiguous tensor nothing else holds
    consumers = streams.consumer_streams(stream) if ours[0] == codes.CUDA else ()
    owner = _Export(t, consumers)
    _check_pinned(t, "export it through DLPack", owner.cancel)
    for s in consumers:
        streams.stream_waits_for_runtime(s, t.device)
    shared, _ = registry().storage_sharing(t._storage)
    flags = (codes.READ_ONLY if shared and not copy else 0) | (codes.IS_COPIED if copy else 0)
    lo, hi = t._span_bytes()
    aliases.claim(ours, t._alloc.address + lo, t._alloc.address + hi, "export", owner)
    return _native.dlpack_capsule(
        owner, t.address, ours, codes.dlpack_dtype(t.dtype), list(t.shape), list(t.strides),
        0, flags if versioned else 0, versioned,
    )


def _host_copy(t: Tensor, versioned: bool) -> Any:
    """A capsule over a host copy of `t` (DLPack's `dl_device=(kDLCPU, 0)` from the GPU):
    the copy waits for cutile's queued work, and belongs to the consumer alone."""
    arr = np.ascontiguousarray(t.to_numpy())
    return _native.dlpack_capsule(
        arr, int(arr.ctypes.data), (codes.CPU, 0), codes.dlpack_dtype(t.dtype),
        list(arr.shape), list(row_major(arr.shape)), 0,
        codes.IS_COPIED if versioned else 0, versioned,
    )


def _typestr(t: Tensor) -> str:
    if t.dtype.is_f8 or t.dtype.name == "bf16":
        raise _refuse(f"`__cuda_array_interface__` has no type string for `{t.dtype.name}`",
                      "export it through DLPack (`torch.from_dlpack(t)`, "
                      "`cupy.from_dlpack(t)`), which has codes for bf16 and f8")
    return str(t.dtype.numpy.str)


def cuda_array_interface(t: Tensor) -> dict[str, Any]:
    """`t.__cuda_array_interface__` (version 3). The storage stays pinned (no cutile
    writes) until the tensor object dies: the consumer keeps the object to keep the memory."""
    if driver.backend() != "gpu":
        raise AttributeError("`__cuda_array_interface__` describes CUDA memory; on the "
                             "interpreter a cutile tensor lives in host memory")
    what = "export it through `__cuda_array_interface__`"
    _check_exportable(t, what)
    typestr = _typestr(t)
    shared, _ = registry().storage_sharing(t._storage)
    _pin_for_lifetime(t, what)
    item = t.dtype.itemsize
    contiguous = t.strides == row_major(t.shape)
    return {
        "shape": tuple(t.shape),
        "typestr": typestr,
        "data": (int(t.address), bool(shared)),
        "version": 3,
        "strides": None if contiguous else tuple(s * item for s in t.strides),
        "descr": [("", typestr)],
        # Consumers wait for cutile's queued work on this stream before using the data.
        "stream": streams.runtime_stream_id(t.device),
    }


def _pin_for_lifetime(t: Tensor, what: str) -> None:
    """One export pin per tensor object, released when the object dies (checked again once
    pinned: `_check_pinned`)."""
    if t in _pinned:
        return
    storage = t._storage
    registry().pin_export(storage)
    _check_pinned(t, what, lambda: registry().unpin_export(storage))
    _pinned.add(t)
    weakref.finalize(t, _unpin, storage)
    lo, hi = t._span_bytes()
    aliases.claim(device_of(t), t._alloc.address + lo, t._alloc.address + hi, "export", t)


def _unpin(storage: int) -> None:
    try:
        registry().unpin_export(storage)
    except Exception:  # interpreter shutdown
        pass


_pinned: weakref.WeakSet[Any] = weakref.WeakSet()

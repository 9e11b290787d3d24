"""Reading another library's tensor: what memory it is, on which device, in which layout.

Three protocols, tried in this order: DLPack (`__dlpack__` / `__dlpack_device__`, stream-
aware and lifetime-managed: preferred), `__cuda_array_interface__` (CUDA memory; numba,
older cupy) and numpy's `__array_interface__` (host memory; also numpy arrays whose element
type DLPack cannot carry, such as ml_dtypes' bfloat16 and float8). Each gives a `Foreign`;
nothing is allocated or registered here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _native
from ... import dtypes as dt
from ...dtypes import DType
from ...errors import InteropError
from .. import driver
from . import codes, streams

# DLPack versions cutile asks for: 1.x structs (minor versions only add codes).
MAX_VERSION = (1, 1)


@dataclass(frozen=True)
class Foreign:
    """Another library's tensor as cutile reads it. `address` is element [0, ...];
    `strides` are in elements; `keepers` keep the memory valid while held."""

    protocol: str
    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: DType
    device: tuple[int, int]
    read_only: bool  # the producer said so (DLPack 1.x flag, numpy's writeable flag)
    copied: bool  # the producer made a copy for this import (DLPack 1.x flag)
    keepers: tuple[Any, ...]


@dataclass(frozen=True)
class Target:
    """Where imported tensors may live: a GPU of the process (`count` of them; `ordinal`
    is the current device, where memory that names no device goes), or host memory."""

    gpu: bool
    ordinal: int
    count: int = 1

    @property
    def name(self) -> str:
        return f"the GPU backend (CUDA devices 0 to {self.count - 1})" if self.gpu else \
            "the interpreter (host memory)"


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def check_device(device: tuple[int, int], target: Target) -> None:
    """InteropError CT5043 unless `target` can use memory of `device`."""
    kind, index = device
    if target.gpu:
        if (kind == codes.CUDA and 0 <= index < target.count) or kind == codes.CUDA_MANAGED:
            return
        if kind == codes.CUDA:
            hint = (f"this process sees {target.count} GPU(s) (`CUDA_VISIBLE_DEVICES` "
                    f"decides which): move the tensor to one of them, e.g. "
                    f"`x.to('cuda:{target.ordinal}')` in torch")
        elif kind in (codes.CPU, codes.CUDA_HOST):
            hint = ("copy it to the GPU first: `api.from_numpy(a)` copies a numpy array, "
                    "`x.cuda()` moves a torch tensor")
        else:
            hint = "copy it to host memory on the producer's side, then with `api.from_numpy`"
    else:
        if kind in (codes.CPU, codes.CUDA_HOST, codes.CUDA_MANAGED):
            return
        hint = ("the interpreter runs kernels on the CPU: copy the tensor to host memory "
                "(`x.cpu()`, `np.asarray(x)`), or run on the GPU (`CUTILE_BACKEND=gpu`)")
    raise InteropError(
        f"the tensor is in {codes.device_name(device)}, which {target.name} cannot use",
        code="CT5043", hint=hint,
    )


def read(obj: Any, target: Target) -> Foreign:
    """The tensor `obj` holds, by the first protocol it speaks; InteropError CT5042 for an
    object that speaks none, CT5043 for one on a device `target` cannot use."""
    cls = type(obj)
    if hasattr(cls, "__dlpack__"):
        try:
            return _from_dlpack(obj, target)
        except _Refused as refused:
            if isinstance(obj, np.ndarray) or hasattr(cls, "__array_interface__"):
                return _from_array_interface(obj, target)
            raise InteropError(
                f"the producer (`{cls.__name__}`) refused to export this tensor through "
                f"DLPack: {refused.reason}", code="CT5042",
                hint="convert it on the producer's side first (a supported element type, "
                "a contiguous copy)",
            ) from refused.__cause__
    if hasattr(cls, "__cuda_array_interface__"):
        return _from_cuda_array_interface(obj, target)
    if isinstance(obj, np.ndarray) or hasattr(cls, "__array_interface__"):
        return _from_array_interface(obj, target)
    raise InteropError(
        f"a `{cls.__name__}` is no tensor cutile can import: it has no `__dlpack__`, "
        "`__cuda_array_interface__` or `__array_interface__`", code="CT5042",
        hint="pass an array of a library that speaks DLPack (numpy, torch, cupy, jax), or "
        "make a cutile tensor from Python data with `api.from_numpy(np.asarray(data))`",
    )


class _Refused(Exception):
    """The producer raised BufferError: it cannot export this tensor through DLPack."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _dlpack_capsule(obj: Any, stream: int | None) -> Any:
    """`obj.__dlpack__(...)` as DLPack 1.x asks (no copy), or as an older producer takes it.
    A producer that cannot export raises BufferError (torch: RuntimeError, e.g. for a
    tensor that requires grad): a refusal, quoted in the error."""
    try:
        return obj.__dlpack__(stream=stream, max_version=MAX_VERSION, copy=False)
    except TypeError:
        pass  # a producer from before DLPack 1.0: no `max_version` or `copy`
    except (BufferError, RuntimeError) as exc:
        raise _Refused(str(exc)) from exc
    try:
        return obj.__dlpack__(stream=stream)
    except (BufferError, RuntimeError) as exc:
        raise _Refused(str(exc)) from exc


def _from_dlpack(obj: Any, target: Target) -> Foreign:
    device = tuple(obj.__dlpack_device__()) if hasattr(obj, "__dlpack_device__") else None
    if device is not None:
        check_device((int(device[0]), int(device[1])), target)  # before the producer works
    on_gpu = target.gpu and device is not None and device[0] in (codes.CUDA,
                                                                   codes.CUDA_MANAGED)
    # For CUDA memory the producer makes cutile's runtime stream (of the tensor's device)
    # wait for its own pending work on the tensor (the protocol's `stream=`), so kernels
    # queued later read it whole.
    ordinal = device_ordinal(device, target) if device is not None else target.ordinal
    if on_gpu:
        # the tensor's device current while the producer exports: torch refuses a stream
        # when its current device is another (a tensor of GPU 1 while GPU 0 is current)
        with driver.on_device(ordinal):
            capsule = _dlpack_capsule(obj, streams.runtime_stream_id(ordinal))
    else:
        capsule = _dlpack_capsule(obj, None)
    try:
        taken = _native.dlpack_take(capsule)
    except ValueError as exc:
        raise InteropError(f"`{type(obj).__name__}.__dlpack__()` gave no usable tensor: "
                           f"{exc}", code="CT5042") from None
    check_device(taken.device, target)
    dtype = codes.from_dlpack_dtype(*taken.dtype)
    shape = tuple(taken.shape)
    if any(n < 0 for n in shape):
        raise InteropError(f"the DLPack tensor has a negative extent {list(shape)}",
                           code="CT5042")
    strides = tuple(taken.strides) if taken.strides is not None else row_major(shape)
    version = taken.version
    return Foreign(
        protocol=f"DLPack {version[0]}.{version[1]}" if version else "DLPack (legacy)",
        address=taken.data + taken.byte_offset, shape=shape, strides=strides, dtype=dtype,
        device=taken.device, read_only=bool(taken.flags & codes.READ_ONLY),
        copied=bool(taken.flags & codes.IS_COPIED), keepers=(taken, obj),
    )


def _element_type(typestr: Any, protocol: str) -> DType:
    try:
        np_dtype = np.dtype(typestr)
    except TypeError:
        np_dtype = None
    if np_dtype is None or not np_dtype.isnative:
        raise InteropError(
            f"the {protocol} element type {typestr!r} is "
            + ("not in native byte order" if np_dtype is not None else "not a numpy type"),
            code="CT5031", hint="convert it on the producer's side first "
            "(`a.astype(a.dtype.newbyteorder('='))` in numpy)",
        )
    try:
        return dt.from_numpy(np_dtype)
    except TypeError:
        raise InteropError(
            f"the {protocol} element type `{np_dtype}` has no cutile element type",
            code="CT5031", hint="convert it on the producer's side first (`a.astype(np.float32)`)",
        ) from None


def _element_strides(byte_strides: Any, shape: tuple[int, ...], dtype: DType,
                     protocol: str) -> tuple[int, ...]:
    if byte_strides is None:
        return row_major(shape)
    item = dtype.itemsize
    out = []
    for s, n in zip(byte_strides, shape, strict=True):
        if int(s) % item and n > 1:
            raise InteropError(
                f"the {protocol} strides {list(byte_strides)} (bytes) are not multiples of "
                f"the {item}-byte element", code="CT5044",
                hint="copy it to a contiguous array first (`np.ascontiguousarray(a)`)",
            )
        out.append(int(s) // item)
    return tuple(out)


def _from_array_interface(obj: Any, target: Target) -> Foreign:
    arr = obj if isinstance(obj, np.ndarray) else np.asarray(obj)  # a view: no copy
    check_device((codes.CPU, 0), target)
    dtype = _element_type(arr.dtype, "numpy")
    shape = tuple(int(n) for n in arr.shape)
    return Foreign(
        protocol="__array_interface__", address=int(arr.ctypes.data), shape=shape,
        strides=_element_strides(arr.strides, shape, dtype, "numpy"), dtype=dtype,
        device=(codes.CPU, 0), read_only=not arr.flags.writeable, copied=False,
        keepers=(arr, obj),
    )


def _from_cuda_array_interface(obj: Any, target: Target) -> Foreign:
    iface = obj.__cuda_array_interface__
    protocol = f"__cuda_array_interface__ v{iface.get('version', '?')}"
    if not target.gpu:
        check_device((codes.CUDA, 0), target)  # raises: the interpreter reads host memory
    if iface.get("mask") is not None:
        raise InteropError(f"the {protocol} tensor has a mask", code="CT5044",
                           hint="fill the masked elements on the producer's side first")
    shape = tuple(int(n) for n in iface["shape"])
    dtype = _element_type(iface["typestr"], protocol)
    address, read_only = iface["data"]
    address = int(address or 0)
    device = (codes.CUDA, _pointer_device(address, target.ordinal))
    check_device(device, target)
    stream = iface.get("stream")
    if stream is not None:
        # The interface names the stream whose work the consumer must wait for.
        streams.runtime_waits_for(int(stream), device=device[1])
    return Foreign(
        protocol=protocol, address=address, shape=shape,
        strides=_element_strides(iface.get("strides"), shape, dtype, protocol), dtype=dtype,
        device=device, read_only=bool(read_only), copied=False, keepers=(obj,),
    )


def device_ordinal(device: tuple[int, int], target: Target) -> int:
    """The cutile device an import of memory on `device` belongs to: the CUDA ordinal it
    names (an import keeps the producer's device), else the current device (managed and
    host memory)."""
    kind, index = int(device[0]), int(device[1])
    return index if target.gpu and kind == codes.CUDA else target.ordinal


def _pointer_device(address: int, default: int) -> int:
    """The CUDA device `address` lives on (the interface does not say); `default` for a
    null pointer (an empty tensor) or memory the driver reports no device for."""
    if address == 0:
        return default
    d = driver._driver()
    driver.ensure_current()
    attr = d.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    err, ordinal = d.cuPointerGetAttribute(attr, address)
    if err != d.CUresult.CUDA_SUCCESS:
        return default
    return int(ordinal)

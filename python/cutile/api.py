"""Host-side tensor builders: `zeros`, `ones`, `full`, `empty`, `arange`, `from_numpy`,
`from_dlpack`. Tensors live on the GPU, or in host memory when the interpreter runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes as dt
from .dtypes import DType
from .runtime.memory import allocate
from .runtime.ownership import registry
from .runtime.tensor import Partition, Tensor, contiguous_strides

ShapeLike = int | Sequence[int]


def _shape(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    out = tuple(int(s) for s in shape)
    if any(s < 0 for s in out):
        raise ValueError(f"negative dimension in shape {list(out)}")
    return out


def _dtype(dtype: DType | str | Any) -> DType:
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        return dt.from_name(dtype)
    return dt.from_numpy(dtype)


def empty(shape: ShapeLike, dtype: DType | str = dt.f32) -> Tensor:
    """A tensor with undefined contents."""
    s, d = _shape(shape), _dtype(dtype)
    nbytes = math.prod(s) * d.itemsize
    alloc = allocate(nbytes)
    storage = registry().new_storage(nbytes)
    return Tensor(alloc, storage, 0, s, contiguous_strides(s), d)


def full(shape: ShapeLike, value: float | int | bool, dtype: DType | str = dt.f32) -> Tensor:
    t = empty(shape, dtype)
    pattern = np.array([value], dtype=t.dtype.numpy).tobytes()
    t._alloc.fill_bytes(pattern)
    return t


def zeros(shape: ShapeLike, dtype: DType | str = dt.f32) -> Tensor:
    return full(shape, 0, dtype)


def ones(shape: ShapeLike, dtype: DType | str = dt.f32) -> Tensor:
    return full(shape, 1, dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """Copy a numpy array into a new (contiguous) tensor."""
    arr = np.ascontiguousarray(array)
    t = empty(arr.shape, dt.from_numpy(arr.dtype))
    if arr.nbytes:
        t._alloc.write(0, arr.reshape(-1).view(np.uint8))
    return t


def arange(
    start: int | float, stop: int | float | None = None, step: int | float = 1,
    dtype: DType | str = dt.f32,
) -> Tensor:
    d = _dtype(dtype)
    if stop is None:
        start, stop = 0, start
    return from_numpy(np.arange(start, stop, step).astype(d.numpy))


def from_dlpack(obj: Any) -> Tensor:
    """Copy any DLPack / `__array__` host object into a new tensor.

    Device-resident producers (torch, cupy on the GPU) are copied through the host for now;
    zero-copy import is not implemented."""
    if hasattr(obj, "__dlpack__"):
        try:
            return from_numpy(np.from_dlpack(obj))
        except (RuntimeError, TypeError, BufferError):
            pass
    if hasattr(obj, "cpu"):
        return from_numpy(np.asarray(obj.cpu()))
    return from_numpy(np.asarray(obj))


__all__ = [
    "Partition",
    "Tensor",
    "arange",
    "empty",
    "from_dlpack",
    "from_numpy",
    "full",
    "ones",
    "zeros",
]

"""Host-side tensor builders: `zeros`, `ones`, `full`, `empty`, `arange`, `from_numpy`,
`from_dlpack`. Tensors live on a GPU, or in host memory when the interpreter runs; every
builder takes `device=` (an ordinal; default: the current device, `cutile.device(i)`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes as dt
from .dtypes import DType
from .errors import TensorError
from .runtime.memory import allocate
from .runtime.tensor import Partition, Tensor
from .runtime.tensor_args import dtype_of, fill_pattern, nbytes_of, shape_of

ShapeLike = int | Sequence[int]


def empty(shape: ShapeLike, dtype: DType | str = dt.f32, *, device: int | None = None
          ) -> Tensor:
    """A tensor with undefined contents on `device`. Raises `TensorError` for a shape that
    is not a sequence of non-negative ints (CT5030), an unknown element type (CT5031), a
    size no memory holds (CT5033) or a device there is not (CT5036)."""
    s = shape_of(shape)
    d = dtype if type(dtype) is DType else dtype_of(dtype)
    nbytes = nbytes_of(s, d)
    try:
        alloc = allocate(nbytes, device)
    except MemoryError:
        raise TensorError(f"cannot allocate {nbytes} bytes for a `{d.name}` tensor of "
                          f"shape {list(s)}", code="CT5033",
                          hint="free other tensors, or use a smaller one") from None
    return Tensor(alloc, alloc.storage, 0, s, None, d)  # (None: row-major strides)


def full(shape: ShapeLike, value: float | int | bool, dtype: DType | str = dt.f32, *,
         device: int | None = None) -> Tensor:
    """A tensor with every element `value`, filled on the device (on the stream it was
    allocated on); a value the element type cannot hold is a `TensorError` (CT5032)."""
    pattern = fill_pattern(value, dtype_of(dtype))
    t = empty(shape, dtype, device=device)
    t._alloc.fill_bytes(pattern)
    return t


def zeros(shape: ShapeLike, dtype: DType | str = dt.f32, *, device: int | None = None
          ) -> Tensor:
    return full(shape, 0, dtype, device=device)


def ones(shape: ShapeLike, dtype: DType | str = dt.f32, *, device: int | None = None
         ) -> Tensor:
    return full(shape, 1, dtype, device=device)


def from_numpy(array: np.ndarray, *, device: int | None = None) -> Tensor:
    """Copy a numpy array into a new (contiguous) tensor on `device`; an array of an
    element type cutile does not have (complex, object, strings) is a `TensorError`
    (CT5031)."""
    # (`ascontiguousarray` makes a 0-d array 1-d: keep the array's own shape)
    arr = np.ascontiguousarray(array).reshape(np.shape(array))
    t = empty(arr.shape, dtype_of(arr.dtype), device=device)
    if arr.nbytes:
        t._alloc.write(0, arr.reshape(-1).view(np.uint8))
    return t


def arange(
    start: int | float, stop: int | float | None = None, step: int | float = 1,
    dtype: DType | str = dt.f32, *, device: int | None = None,
) -> Tensor:
    d = dtype_of(dtype)
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TensorError(f"`arange` takes numbers, but {name} is {v!r}", code="CT5032",
                              hint="e.g. `api.arange(0, 1024, 1, f32)`")
    if step == 0:
        raise TensorError("`arange` needs a step other than 0", code="CT5032",
                          hint="a positive step counts up, a negative one down")
    return from_numpy(np.arange(start, stop, step).astype(d.numpy), device=device)


def from_dlpack(obj: Any) -> Tensor:
    """Import another library's tensor without copying: a shared, read-only cutile tensor
    over the same memory (`cutile.from_dlpack`; docs/interop.md).

    `obj` speaks DLPack (numpy, torch, cupy, jax), `__cuda_array_interface__` or numpy's
    `__array_interface__`, and lives where kernels run (a GPU of the process: the tensor
    keeps the producer's device; or host memory for the interpreter). The tensor keeps
    `obj` alive; kernels read it, never write it (a `partition` of it raises BorrowError
    CT5040). Mistakes raise `InteropError`: no tensor (CT5042), a device cutile cannot
    use (CT5043), a layout cutile cannot use (CT5044), an element type cutile does not
    have (CT5031). To copy instead, `from_numpy`."""
    from .runtime.interop import importing

    return importing.from_dlpack(obj)


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

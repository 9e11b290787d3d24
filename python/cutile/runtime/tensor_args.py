"""What the host tensor builders (`cutile.api`) accept: shapes, element types and values.
Each refusal is a `TensorError` with a code and a hint, raised before anything is
allocated."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..dtypes import DType
from ..errors import TensorError

# A tensor's byte count is a signed 64-bit number everywhere it travels (CUDA, numpy).
MAX_BYTES = (1 << 63) - 1


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def shape_of(shape: Any) -> tuple[int, ...]:
    """`shape` as a tuple of non-negative ints (an int is a 1-D shape)."""
    kind = type(shape)  # the common spellings first: this runs for every allocation
    if kind is int and shape >= 0:
        return (shape,)
    if kind is list or kind is tuple:
        for s in shape:
            if type(s) is not int or s < 0:
                break
        else:
            return tuple(shape)
    if _is_int(shape):
        shape = (shape,)
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
        raise TensorError(
            f"a tensor shape is an int or a sequence of ints, not {_describe(shape)}",
            code="CT5030", hint="e.g. `api.zeros([1024, 512], f32)` or `api.zeros(1024)`",
        )
    bad = [s for s in shape if not _is_int(s)]
    if bad:
        raise TensorError(
            f"tensor extents are ints, but shape {_show(shape)} has {_describe(bad[0])}",
            code="CT5030",
            hint="write each extent as an int (`int(x)` where it is computed as a float)",
        )
    out = tuple(int(s) for s in shape)
    if any(s < 0 for s in out):
        raise TensorError(
            f"tensor extents are >= 0, but shape {list(out)} has {min(out)}", code="CT5030",
            hint="an empty tensor has extent 0 on some axis; no extent is negative",
        )
    return out


def dtype_of(dtype: Any) -> DType:
    """`dtype` as a cutile element type: a `DType`, its name, or a numpy dtype / type."""
    if isinstance(dtype, DType):
        return dtype
    names = "the element types are " + ", ".join(
        f"`{d}`" for d in ("bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
                           "f16", "bf16", "f32", "f64", "tf32", "f8e4m3fn", "f8e5m2")
    ) + " (or the numpy dtype of one)"
    if isinstance(dtype, str):
        got = dt.BY_PUBLIC_NAME.get(dtype)
        if got is None:
            raise TensorError(f"there is no element type `{dtype}`", code="CT5031", hint=names)
        return got
    try:
        as_numpy = np.dtype(dtype)
    except TypeError:
        raise TensorError(f"{_describe(dtype)} is not an element type", code="CT5031",
                          hint=names) from None
    try:
        return dt.from_numpy(as_numpy)
    except TypeError:
        raise TensorError(f"numpy's `{as_numpy}` has no cutile element type", code="CT5031",
                          hint=names) from None


def nbytes_of(shape: tuple[int, ...], dtype: DType) -> int:
    """The byte count of a contiguous tensor, refused past what can be allocated."""
    n = math.prod(shape) * dtype.itemsize
    if n > MAX_BYTES:
        raise TensorError(
            f"{_a(dtype)} tensor of shape {list(shape)} needs {n} bytes, more than any "
            "memory holds", code="CT5033", hint="check the shape's extents",
        )
    return n


def fill_pattern(value: Any, dtype: DType) -> bytes:
    """The bytes of one element of `dtype` holding `value`, refused where the value is not a
    number or does not fit: an int out of range (or not integral), a finite float that
    would be infinite."""
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise TensorError(f"{_a(dtype)} tensor cannot be filled with {_describe(value)}",
                          code="CT5032", hint="fill it with a number")
    if dtype == dt.bool_:
        return np.array([bool(value)], dtype=dtype.numpy).tobytes()
    if dtype.is_float:
        try:
            f = float(value)
        except OverflowError:  # an int past any float
            f = math.inf
            overflows = True
        else:
            with np.errstate(over="ignore"):
                stored = np.array([f], dtype=dtype.numpy)
            # (ml_dtypes' f8e4m3fn has no infinity: it overflows to NaN)
            overflows = math.isfinite(f) and not np.isfinite(stored[0].astype(np.float32))
        if overflows:
            what = "not a number" if dtype == dt.f8e4m3fn else "infinite"
            raise TensorError(f"{value!r} overflows `{dtype.name}` (it would be {what})",
                              code="CT5032", hint="use a wider float type, or a smaller value")
        return stored.tobytes()
    if not _is_int(value) and not float(value).is_integer():
        raise TensorError(f"{value!r} is not an integer, and {_a(dtype)} tensor holds "
                          "integers", code="CT5032",
                          hint="round it first, or make a float tensor")
    info = np.iinfo(dtype.numpy)  # type: ignore[type-var]
    if not info.min <= int(value) <= info.max:
        raise TensorError(f"{value!r} does not fit in `{dtype.name}` ({info.min} to "
                          f"{info.max})", code="CT5032",
                          hint="use a wider integer type, or a value in range")
    return np.array([int(value)], dtype=dtype.numpy).tobytes()


def _a(dtype: DType) -> str:
    """"an `f32`", "a `bf16`": the article as the name is read."""
    return f"{'an' if dtype.name[0] in 'fi' else 'a'} `{dtype.name}`"


def _show(shape: Any) -> str:
    try:
        return repr(list(shape))
    except TypeError:
        return repr(shape)


def _describe(x: Any) -> str:
    r = repr(x)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"a `{type(x).__name__}` ({r})"

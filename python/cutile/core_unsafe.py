"""The unsafe-only operations of the kernel language that `cutile.core` exports: raw
pointers (`ptr_offset`, `load_ptr`, `store_ptr`, `int_to_ptr`) and the `assume` hints.
Each needs `with cutile.unsafe():` (or `@cutile.entry(unsafe=True)`): CT4001 for the pointer
operations, CT4005 for the hints (docs/dsl.md "Unsafe")."""

from __future__ import annotations

from typing import Any

from .core import _op
from .dtypes import DType


@_op("assume_div_by", unsafe=True)
def assume_div_by(x: Any, divisor: int) -> Any:
    """`x` (an integer tile or scalar, or pointers), with the promise that every element is
    a multiple of `divisor` (a compile-time int > 0; for pointers, of bytes): Tile IR's
    `assume div_by`, which lets tileiras vectorize and align. Unsafe and unchecked on the
    GPU (a false promise is undefined behaviour); the interpreter checks it and raises. The
    checker never uses it in a proof.

    Example::

        with cutile.unsafe():
            n = assume_div_by(n, 16)      # the extent is a multiple of 16
    """


@_op("assume_bounds", unsafe=True)
def assume_bounds(x: Any, lo: int | None = None, hi: int | None = None) -> Any:
    """`x` (an integer tile or scalar), with the promise that `lo <= x <= hi` elementwise
    (compile-time ints; None is an open end): Tile IR's `assume bounded`. Unsafe and
    unchecked on the GPU; the interpreter checks it. The checker never uses it in a proof.

    Example::

        with cutile.unsafe():
            i = assume_bounds(i, 0, 1023)
    """


@_op("load_ptr", unsafe=True)
def load_ptr(ptrs: Any, mask: Any = None, padding: Any = None) -> Any:
    """The elements `ptrs` (a tile of pointers, or one pointer) point at: a tile of their
    shape. With `mask` (a bool tile, broadcast to the pointers' shape) a lane whose mask is
    False reads nothing and gives `padding` (a number or a padding name, default zero).
    Unsafe: nothing checks the addresses on the device; the interpreter's detector reports
    an access outside the tensor the pointer came from (CT6913).

    Example::

        with cutile.unsafe():
            offs = block_id(0) * 128 + arange(128, i32)
            v = load_ptr(ptr_offset(x, offs * stride), mask=offs < n, padding=0.0)
    """


@_op("store_ptr", unsafe=True)
def store_ptr(ptrs: Any, value: Any, mask: Any = None) -> Any:
    """Store `value` (converted to the pointee type, broadcast to the pointers' shape)
    where `ptrs` point; lanes whose `mask` is False store nothing. Unsafe: two lanes or two
    blocks may write one element (a race) and nothing checks the addresses on the device;
    test it under the interpreter's race detector (`CUTILE_INTERPRET=check`).

    Example::

        with cutile.unsafe():
            store_ptr(ptr_offset(z, offs), v, mask=offs < n)
    """


@_op("ptr_offset", unsafe=True)
def ptr_offset(ptr: Any, offsets: Any) -> Any:
    """Pointer arithmetic in elements: `ptr + offsets` for a pointer (a `Ptr` parameter)
    or a tile of pointers and an integer tile or number, broadcast together; the result is
    a tile of pointers of their common shape.

    Example::

        with cutile.unsafe():
            ptrs = ptr_offset(p, arange(64, i32) * 2)     # every other element
    """


@_op("int_to_ptr", unsafe=True)
def int_to_ptr(value: Any, dtype: DType) -> Any:
    """Forge pointers to `dtype` elements from integer addresses (a tile or a scalar,
    converted to i64). Unsafe: nothing says what they point at, and the interpreter knows
    only the addresses of the launch's arguments.

    Example::

        with cutile.unsafe():
            p = int_to_ptr(addr, f32)
    """

"""A raw kernel's parameters: what each one is declared to be (a tensor it reads, writes or
updates atomically, or a scalar of a C type), and how a call's arguments are matched,
checked and packed against those declarations.

The declarations are the caller's promise about C++ that cutile cannot read: `read` says
the kernel only loads through the pointer, `write` that it may store, `atomic` that it
stores only with atomic operations. The host holds each tensor accordingly (a written or
atomic tensor exclusively, a read tensor shared), exactly as a tile kernel's `Mut`,
`Tensor` and `Atomic` parameters are held.
"""

from __future__ import annotations

import ctypes
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..dtypes import DType
from ..errors import BorrowError, LaunchError, TensorError
from .tensor import _Handle
from .tensor_args import dtype_of, fill_pattern

ACCESSES = ("read", "write", "atomic")
# Keywords of a raw kernel call that are not parameters.
RESERVED = ("grid", "block", "shared_mem")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# C spellings of the scalar types a raw kernel takes by value.
C_TYPES: dict[str, DType] = {
    "bool": dt.bool_,
    "int8_t": dt.i8, "signed char": dt.i8,
    "uint8_t": dt.u8, "unsigned char": dt.u8,
    "int16_t": dt.i16, "short": dt.i16,
    "uint16_t": dt.u16, "unsigned short": dt.u16,
    "int32_t": dt.i32, "int": dt.i32,
    "uint32_t": dt.u32, "unsigned": dt.u32, "unsigned int": dt.u32,
    "int64_t": dt.i64, "long": dt.i64, "long long": dt.i64,
    "uint64_t": dt.u64, "unsigned long": dt.u64, "unsigned long long": dt.u64,
    "size_t": dt.u64,
    "__half": dt.f16, "half": dt.f16,
    "__nv_bfloat16": dt.bf16,
    "float": dt.f32,
    "double": dt.f64,
}


def declaration_error(message: str, hint: str, kernel: str | None = None) -> LaunchError:
    return LaunchError(message, code="CT6122", hint=hint, kernel=kernel)


@dataclass(frozen=True)
class RawParam:
    """One declared parameter of a raw kernel (make one with `cutile.unsafe.read`,
    `write`, `atomic` or `scalar`)."""

    name: str
    access: str  # "read" | "write" | "atomic" | "scalar"
    dtype: DType | None  # a tensor's element type (None: any), a scalar's type
    ctype: str = ""  # a scalar's type as declared (`int`, `f32`)

    @property
    def is_pointer(self) -> bool:
        return self.access != "scalar"

    @property
    def exclusive(self) -> bool:
        """Held exclusively while the kernel runs (it may store through the pointer)."""
        return self.access in ("write", "atomic")

    @property
    def size(self) -> int:
        """Bytes in the parameter buffer: a device pointer, or the scalar itself."""
        if self.is_pointer:
            return 8
        assert self.dtype is not None
        return self.dtype.itemsize

    def describe(self) -> str:
        """`x` (read f32), `n` (int32_t)."""
        if not self.is_pointer:
            return f"`{self.name}` ({self.ctype})"
        if self.dtype is None:
            return f"`{self.name}` ({self.access})"
        return f"`{self.name}` ({self.access} {public_name(self.dtype)})"


def public_name(dtype: DType) -> str:
    return "bool" if dtype == dt.bool_ else dtype.name


def _pointer(name: str, access: str, dtype: Any) -> RawParam:
    _check_name(name)
    if dtype is None:
        return RawParam(name, access, None)
    try:
        return RawParam(name, access, dtype_of(dtype))
    except TensorError as err:
        raise declaration_error(f"`{name}`: {err.message}", err.hint or "") from None


def read(name: str, dtype: Any = None) -> RawParam:
    """A tensor the kernel only reads (`const T*`): shared with other readers while the
    kernel runs. `dtype` (optional) is the element type a tensor must have."""
    return _pointer(name, "read", dtype)


def write(name: str, dtype: Any = None) -> RawParam:
    """A tensor the kernel may write (`T*`): held exclusively while the kernel runs."""
    return _pointer(name, "write", dtype)


def atomic(name: str, dtype: Any = None) -> RawParam:
    """A tensor every block updates only with atomic operations (`atomicAdd(p, v)`): held
    exclusively while the kernel runs, like an `Atomic[Tensor]` parameter of a tile
    kernel."""
    return _pointer(name, "atomic", dtype)


def scalar(name: str, ctype: Any) -> RawParam:
    """A value passed by value: `ctype` is its C type (`"int"`, `"int64_t"`, `"float"`,
    `"double"`, `"bool"`, `"__half"`, ...) or a cutile element type (`i32`, `f32`)."""
    _check_name(name)
    if isinstance(ctype, str) and " ".join(ctype.split()) in C_TYPES:
        spelled = " ".join(ctype.split())
        return RawParam(name, "scalar", C_TYPES[spelled], spelled)
    try:
        d = dtype_of(ctype)
        return RawParam(name, "scalar", d, public_name(d))
    except TensorError:
        known = ", ".join(f"`{c}`" for c in C_TYPES)
        raise declaration_error(f"`{name}`: {ctype!r} is not a C scalar type cutile can pass",
                                f"use one of {known}, or a cutile element type") from None


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not _IDENT.match(name):
        raise declaration_error(f"a raw kernel parameter's name is an identifier, not {name!r}",
                                "name it as the C++ signature does, e.g. `read(\"x\", f32)`")
    if name in RESERVED:
        raise declaration_error(f"`{name}` cannot name a parameter: a raw kernel call takes "
                                f"`{name}=` for its launch", "rename the parameter")


def check_params(kernel: str, params: Any) -> tuple[RawParam, ...]:
    """The declared parameters, refused (CT6122) unless a sequence of `RawParam`s with
    distinct names."""
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise declaration_error(
            f"`params` of raw kernel `{kernel}` is a list of parameter declarations, not "
            f"{type(params).__name__}",
            "e.g. `params=[unsafe.read(\"x\", f32), unsafe.write(\"y\", f32), "
            "unsafe.scalar(\"n\", \"int\")]`", kernel)
    out: list[RawParam] = []
    for i, p in enumerate(params):
        if not isinstance(p, RawParam):
            raise declaration_error(
                f"parameter {i} of raw kernel `{kernel}` is {p!r}, not a declaration",
                "declare it with `cutile.unsafe.read`, `write`, `atomic` or `scalar`", kernel)
        if any(q.name == p.name for q in out):
            raise declaration_error(f"raw kernel `{kernel}` declares `{p.name}` twice",
                                    "give each parameter its own name", kernel)
        out.append(p)
    return tuple(out)


# -- a call's arguments ------------------------------------------------------------------


def _launch_error(kernel: str, message: str, code: str, hint: str, tensor: str | None = None
                  ) -> LaunchError:
    return LaunchError(message, code=code, hint=hint, kernel=kernel, tensor=tensor)


def bind(kernel: str, params: Sequence[RawParam], args: Sequence[Any],
         kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The arguments in parameter order, each checked against its declaration."""
    names = ", ".join(p.describe() for p in params)
    if len(args) > len(params):
        raise _launch_error(kernel, f"raw kernel `{kernel}` takes {len(params)} arguments "
                            f"({names}), got {len(args)}", "CT6104",
                            "pass one argument per declared parameter")
    by_name: dict[str, Any] = {p.name: a for p, a in zip(params, args, strict=False)}
    for key, value in kwargs.items():
        p = next((q for q in params if q.name == key), None)
        if p is None:
            raise _launch_error(kernel, f"raw kernel `{kernel}` has no parameter `{key}`",
                                "CT6104", f"its parameters are {names}")
        if key in by_name:
            raise _launch_error(kernel, f"`{key}` of raw kernel `{kernel}` is given twice "
                                "(by position and by name)", "CT6104",
                                "give each argument once", key)
        by_name[key] = value
    missing = [p.name for p in params if p.name not in by_name]
    if missing:
        raise _launch_error(kernel, f"raw kernel `{kernel}` is missing "
                            f"{', '.join(f'`{m}`' for m in missing)}", "CT6104",
                            f"its parameters are {names}", missing[0])
    return tuple(_check_value(kernel, p, by_name[p.name]) for p in params)


def _check_value(kernel: str, p: RawParam, v: Any) -> Any:
    if p.is_pointer:
        if not isinstance(v, _Handle):
            raise _launch_error(kernel, f"{p.describe()} of raw kernel `{kernel}` is a device "
                                f"pointer; it takes a Tensor or a Partition, not "
                                f"{type(v).__name__} {v!r:.40}", "CT6101",
                                "pass a cutile tensor (`api.from_numpy(...)`)", p.name)
        if p.dtype is not None and v.dtype != p.dtype:
            raise _launch_error(kernel, f"{p.describe()} of raw kernel `{kernel}` takes "
                                f"`{public_name(p.dtype)}` elements, got a "
                                f"`{public_name(v.dtype)}` tensor",
                                "CT6102", "convert the tensor, or declare the pointer with "
                                "its element type", p.name)
        return v
    assert p.dtype is not None
    if isinstance(v, _Handle):
        raise _launch_error(kernel, f"{p.describe()} of raw kernel `{kernel}` is a scalar; "
                            "got a tensor", "CT6101",
                            "pass a number (a tensor goes to a `read`/`write`/`atomic` "
                            "parameter)", p.name)
    is_bool = isinstance(v, (bool, np.bool_))
    is_int = isinstance(v, (int, np.integer)) and not is_bool
    is_float = isinstance(v, (float, np.floating))
    fits = (is_bool if p.dtype == dt.bool_ else
            (is_int or is_float) if p.dtype.is_float else is_int)
    if not fits:
        want = ("a bool" if p.dtype == dt.bool_ else
                "a number" if p.dtype.is_float else "an int")
        raise _launch_error(kernel, f"{p.describe()} of raw kernel `{kernel}` takes {want}, "
                            f"got {type(v).__name__} {v!r:.40}", "CT6102",
                            f"pass {want}", p.name)
    try:
        fill_pattern(v, p.dtype)  # range and overflow
    except TensorError as err:
        raise _launch_error(kernel, f"{p.describe()} of raw kernel `{kernel}`: {err.message}",
                            "CT6102", err.hint or "", p.name) from None
    return v


def moves(params: Sequence[RawParam], values: Sequence[Any]) -> list[tuple[int, bool]]:
    """`(handle, exclusive)` of every tensor argument, for the host registry's `move_in`."""
    return [(v._handle, p.exclusive) for p, v in zip(params, values, strict=True)
            if p.is_pointer]


def accesses(params: Sequence[RawParam], values: Sequence[Any]
             ) -> list[tuple[int, int, int, bool]]:
    """`(storage, lo, hi, exclusive)` byte ranges of every tensor argument, for the
    in-flight ledger."""
    out = []
    for p, v in zip(params, values, strict=True):
        if p.is_pointer:
            storage, lo, hi = v._ledger_range()
            out.append((storage, lo, hi, p.exclusive))
    return out


def check_aliasing(kernel: str, op_id: int, params: Sequence[RawParam],
                   values: Sequence[Any]) -> None:
    """One tensor passed to two parameters where either is written (or atomic): BorrowError
    CT5005 naming both. (Distinct views whose bytes overlap are the host registry's to
    find, CT5006.)"""
    pointers = [(p, v) for p, v in zip(params, values, strict=True) if p.is_pointer]
    for i, (p, v) in enumerate(pointers):
        for q, w in pointers[i + 1:]:
            if v._handle == w._handle and (p.exclusive or q.exclusive):
                held = p if p.exclusive else q
                raise BorrowError(
                    f"one tensor is passed to `{kernel}` (op #{op_id}) as both {p.describe()} "
                    f"and {q.describe()}; a tensor the kernel may {_verb(held)} is held "
                    "exclusively by the launch", code="CT5005",
                    hint="pass distinct tensors, or copy one of them; a kernel that updates "
                    "a tensor in place takes it once, declared `write`",
                    tensor=q.name, kernel=kernel, op_id=op_id)


def _verb(p: RawParam) -> str:
    return "update atomically" if p.access == "atomic" else "write"


def argument_names(params: Sequence[RawParam]) -> str:
    """How `move_in`'s argument numbers (tensor arguments only, in order) map to
    parameters, for a note on its errors."""
    pointers = [p for p in params if p.is_pointer]
    return "tensor arguments: " + ", ".join(f"{i} = {p.describe()}"
                                             for i, p in enumerate(pointers))


# -- the parameter buffer ----------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where each parameter goes in the buffer `cuLaunchKernel` reads (byte offsets)."""

    offsets: tuple[int, ...]
    size: int


def natural_layout(params: Sequence[RawParam]) -> Layout:
    """The C layout (each parameter aligned to its size), for a cubin whose own table
    cannot be read."""
    offsets: list[int] = []
    at = 0
    for p in params:
        at = -(-at // p.size) * p.size
        offsets.append(at)
        at += p.size
    return Layout(tuple(offsets), at)


def abi_layout(kernel: str, params: Sequence[RawParam], slots: Sequence[Any]) -> Layout:
    """The layout the compiler chose (`cubin_abi.kernel_params`), after checking that it
    has one parameter per declaration and each of the declared size (CT6123)."""
    if len(slots) != len(params):
        raise _launch_error(
            kernel, f"raw kernel `{kernel}` declares {len(params)} parameters, but its C++ "
            f"signature has {len(slots)}", "CT6123",
            "declare one parameter per C++ parameter, in the same order")
    for i, (p, s) in enumerate(zip(params, slots, strict=True)):
        if p.size != s.size:
            raise _launch_error(
                kernel, f"parameter {i} of raw kernel `{kernel}`, {p.describe()}, is "
                f"{p.size} bytes, but the C++ parameter {i} is {s.size} bytes", "CT6123",
                "declare the C type the C++ signature has (`int` is 4 bytes, `long long` "
                "and pointers 8)", p.name)
    return Layout(tuple(s.offset for s in slots),
                  max((s.offset + s.size for s in slots), default=0))


def pack(params: Sequence[RawParam], layout: Layout, values: Sequence[Any]
         ) -> tuple[Any, Any]:
    """`(buffer, pointers)`: the arguments at their offsets, and the array of pointers into
    the buffer `cuLaunchKernel` takes as `kernelParams` (keep both alive until it returns)."""
    buf = ctypes.create_string_buffer(max(layout.size, 8))
    base = ctypes.addressof(buf)
    for p, off, v in zip(params, layout.offsets, values, strict=True):
        if p.is_pointer:
            struct.pack_into("<Q", buf, off, v.address)
        else:
            assert p.dtype is not None
            ctypes.memmove(base + off, fill_pattern(v, p.dtype), p.size)
    ptrs = (ctypes.c_void_p * max(len(params), 1))(*[base + o for o in layout.offsets])
    return buf, ptrs

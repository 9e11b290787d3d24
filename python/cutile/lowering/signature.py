"""What a compiled kernel is specialized on, and the parameter layout (ABI) it is called with.

A tensor argument travels as base pointer, shape[0..N) and stride[0..N) in elements, all
of the index type (i32 unless a tensor needs i64). `Const` parameters are baked in and not
passed. Facts about the live arguments (alignment, unit last stride, divisibility) become
`assume` hints in the kernel and are part of the cache key, so the launcher must check them
on every launch; a kernel is only ever run with arguments that satisfy its facts.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..dtypes import DType

MAX_DIV = 16  # divisibility facts are capped here (enough for 16-byte vector/TMA paths)


def pow2_divisor(n: int, cap: int = MAX_DIV) -> int:
    """Largest power of two <= cap dividing n (n == 0 counts as divisible by cap)."""
    if n == 0:
        return cap
    d = 1
    while d < cap and n % (d * 2) == 0:
        d *= 2
    return d


@dataclass(frozen=True)
class TensorFacts:
    dtype: str
    rank: int
    base_align16: bool
    last_stride_one: bool
    shape_div: tuple[int, ...]
    stride_div: tuple[int, ...]
    _hash: int = field(init=False, compare=False, repr=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.dtype, self.rank, self.base_align16,
                                                self.last_stride_one, self.shape_div,
                                                self.stride_div)))

    def __hash__(self) -> int:
        return self._hash

    @staticmethod
    def of(
        dtype: DType, shape: tuple[int, ...], strides: tuple[int, ...], byte_address: int
    ) -> TensorFacts:
        return TensorFacts(
            dtype.name,
            len(shape),
            byte_address % 16 == 0,
            len(strides) > 0 and (strides[-1] == 1 or shape[-1] == 1),
            tuple(pow2_divisor(s) for s in shape),
            tuple(pow2_divisor(s) for s in strides),
        )


@dataclass(frozen=True)
class Specialization:
    consts: tuple[tuple[str, int | float | bool], ...]
    tensors: tuple[tuple[str, TensorFacts], ...]
    index_bits: int = 32
    # computed once: launches look kernels up by specialization on every call
    _hash: int = field(init=False, compare=False, repr=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.consts, self.tensors, self.index_bits)))

    def __hash__(self) -> int:
        return self._hash

    def const_dict(self) -> dict[str, int | float | bool]:
        return dict(self.consts)

    def tensor(self, name: str) -> TensorFacts:
        for n, f in self.tensors:
            if n == name:
                return f
        raise KeyError(name)


@dataclass(frozen=True)
class Slot:
    """One kernel parameter as the driver sees it."""

    kind: str  # "ptr" | "shape" | "stride" | "scalar"
    param: str
    axis: int = 0
    fmt: str = "Q"  # struct format character


@dataclass(frozen=True)
class KernelABI:
    slots: tuple[Slot, ...]

    @property
    def struct_format(self) -> str:
        return "@" + "".join(s.fmt for s in self.slots)

    def offsets(self) -> list[int]:
        """Byte offset of each slot in a naturally aligned parameter buffer."""
        out = []
        for i in range(len(self.slots)):
            prefix = "@" + "".join(s.fmt for s in self.slots[: i + 1])
            size = struct.calcsize("@" + self.slots[i].fmt)
            out.append(struct.calcsize(prefix) - size)
        return out


# A u64 travels as the i64 of the same bits (the binder takes 0 to 2^63 - 1).
SCALAR_FMT = {
    "i1": "?", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u8": "B", "u16": "H", "u32": "I", "u64": "q",
    "f16": "e", "f32": "f", "f64": "d",
}

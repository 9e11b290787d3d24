"""Global memory for the interpreter: host byte buffers, pointers, tensor views, partitions.

Address space. Each distinct host buffer a kernel receives becomes a *region* with its own
base address: region k starts at (k + 1) * 2^40, plus the buffer's real host address modulo
4096, so that an address is aligned to each power of two up to a page exactly as the real
one is (the launcher's `assume` facts, `align16`, are read from the real address). A
pointer value is an int64 address in this space, so `offset`, `ptr_to_int` and `int_to_ptr`
are plain integer arithmetic, and pointer arithmetic that walks off the end of one buffer
lands in the gap before the next one instead of silently in a neighbour: every access is
checked against its region and an access outside every region is an `InterpreterError`.
(Two different numpy views that overlap in host memory are two regions; they still share
the bytes.) Under the race detector every pointer argument is a region of its own, even
when arguments share a buffer, so that an address says which argument it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import DType
from .values import Array, decode, encode, full, memory_dtype, padding_value

REGION_SPACING = 1 << 40
ALIGNMENT_KEPT = 1 << 12  # the real address's residue modulo this is kept (see above)


class MemoryFault(Exception):
    """An access outside every buffer (turned into an InterpreterError with the op's loc)."""


class Pointer:
    """A `tile<ptr<T>>` kernel argument: `byte_offset` bytes into a host byte buffer.

    `buffer` is a 1-D, C-contiguous numpy uint8 array; it should be writable (a read-only
    buffer is accepted, and a write through it is an InterpreterError)."""

    __slots__ = ("buffer", "byte_offset")

    def __init__(self, buffer: Array, byte_offset: int = 0) -> None:
        if not isinstance(buffer, np.ndarray) or buffer.dtype != np.uint8 or buffer.ndim != 1:
            raise TypeError("Pointer needs a 1-D numpy uint8 buffer")
        if not buffer.flags.c_contiguous:
            raise TypeError("Pointer needs a contiguous buffer")
        if not 0 <= byte_offset <= buffer.size:
            raise ValueError(f"byte offset {byte_offset} is outside a {buffer.size}-byte buffer")
        self.buffer = buffer
        self.byte_offset = int(byte_offset)

    @classmethod
    def to(cls, array: Array, byte_offset: int = 0) -> Pointer:
        """A pointer to the first byte of a C-contiguous numpy array (any dtype); writes
        through it change `array`."""
        if not array.flags.c_contiguous:
            raise TypeError("Pointer.to needs a C-contiguous array")
        return cls(array.reshape(-1).view(np.uint8), byte_offset)

    def __repr__(self) -> str:
        return f"Pointer(<{self.buffer.size} bytes>, byte_offset={self.byte_offset})"


@dataclass(eq=False)
class Region:
    index: int
    buffer: Array  # 1-D uint8
    base: int

    @property
    def size(self) -> int:
        return int(self.buffer.size)

    @property
    def writable(self) -> bool:
        return bool(self.buffer.flags.writeable)


@dataclass(eq=False)
class Memory:
    regions: list[Region] = field(default_factory=list)
    _by_key: dict[tuple[int, int, int | None], Region] = field(default_factory=dict)

    def address_of(self, ptr: Pointer, tag: int | None = None) -> int:
        return self.region_for(ptr, tag).base + ptr.byte_offset

    def region_for(self, ptr: Pointer, tag: int | None = None) -> Region:
        """The region of `ptr`'s buffer. Pointers with the same buffer share a region unless
        `tag`s differ: the race detector gives each argument its own region, so a pointer
        that walks out of its argument lands in a gap even when the buffer goes on (the
        region index is the pointer's provenance)."""
        buf = ptr.buffer
        real = int(buf.__array_interface__["data"][0])
        key = (real, int(buf.size), tag)
        region = self._by_key.get(key)
        if region is None:
            residue = real % ALIGNMENT_KEPT
            if buf.size + residue >= REGION_SPACING:
                raise MemoryFault("a buffer of 1 TiB or more does not fit the address space")
            region = Region(len(self.regions), buf,
                            (len(self.regions) + 1) * REGION_SPACING + residue)
            self.regions.append(region)
            self._by_key[key] = region
        return region

    # -- checked access by address ---------------------------------------------------------

    def region_of(self, address: int, nbytes: int) -> tuple[Region, int]:
        """The region holding [address, address + nbytes) and the byte offset inside it."""
        k = address // REGION_SPACING - 1
        if 0 <= k < len(self.regions):
            region = self.regions[k]
            off = address - region.base
            if 0 <= off and off + nbytes <= region.size:
                return region, off
        raise MemoryFault(self._describe(address, nbytes))

    def _describe(self, address: int, nbytes: int) -> str:
        k = address // REGION_SPACING - 1
        if 0 <= k < len(self.regions):
            region = self.regions[k]
            off = address - region.base
            return (
                f"access of {nbytes} bytes at byte offset {off} of buffer #{k} "
                f"({region.size} bytes) is out of bounds"
            )
        return f"address {address:#x} is not inside any buffer passed to the kernel"

    def _locate(self, addrs: Array, nbytes: int) -> tuple[Array, Array]:
        """Region index and in-region byte offset of each address; every access is checked."""
        a = np.asarray(addrs, dtype=np.int64)
        k = a // REGION_SPACING - 1
        n = len(self.regions)
        valid = (k >= 0) & (k < n)
        kk = np.where(valid, k, 0)
        bases = np.array([r.base for r in self.regions] or [0], dtype=np.int64)
        sizes = np.array([r.size for r in self.regions] or [0], dtype=np.int64)
        off = a - bases[kk]
        valid &= (off >= 0) & (off + nbytes <= sizes[kk])
        if not valid.all():
            bad = np.flatnonzero(~valid.reshape(-1))
            first = int(a.reshape(-1)[bad[0]])
            raise MemoryFault(
                f"{bad.size} of {a.size} accesses out of bounds; first: "
                + self._describe(first, nbytes)
            )
        return kk, off

    def _check_aligned(self, addrs: Array, d: DType) -> None:
        if d.itemsize > 1:
            mis = np.asarray(addrs) % d.itemsize != 0
            if mis.any():
                first = int(np.asarray(addrs).reshape(-1)[np.flatnonzero(mis.reshape(-1))[0]])
                raise MemoryFault(f"misaligned {d.name} access at address {first:#x}")

    def read(self, addrs: Array, d: DType) -> Array:
        """Load one `d` element at each address (any shape); returns storage values."""
        flat = np.asarray(addrs, dtype=np.int64).reshape(-1)
        self._check_aligned(flat, d)
        k, off = self._locate(flat, d.itemsize)
        mdt = memory_dtype(d)
        raw = np.empty(flat.size, dtype=mdt)
        for ri in np.unique(k):
            sel = k == ri
            buf = self.regions[int(ri)].buffer
            raw[sel] = _gather(buf, off[sel], d.itemsize).view(mdt).reshape(-1)
        return decode(raw, d).reshape(np.shape(addrs))

    def write(self, addrs: Array, values: Array, d: DType) -> None:
        """Store `values[i]` at `addrs[i]` (flattened, same size). Duplicates: last wins."""
        flat = np.asarray(addrs, dtype=np.int64).reshape(-1)
        if flat.size == 0:
            return
        self._check_aligned(flat, d)
        k, off = self._locate(flat, d.itemsize)
        raw = np.ascontiguousarray(encode(np.asarray(values).reshape(-1), d))
        raw_bytes = raw.view(np.uint8).reshape(flat.size, d.itemsize)
        for ri in np.unique(k):
            region = self.regions[int(ri)]
            if not region.writable:
                raise MemoryFault(f"write to read-only buffer #{region.index}")
            sel = k == ri
            idx = off[sel][:, None] + np.arange(d.itemsize)
            region.buffer[idx] = raw_bytes[sel]


def _gather(buf: Array, offsets: Array, itemsize: int) -> Array:
    if itemsize == 1:
        return np.ascontiguousarray(buf[offsets])
    return np.ascontiguousarray(buf[offsets[:, None] + np.arange(itemsize)])


# -- views -------------------------------------------------------------------------------


@dataclass(eq=False)
class TensorView:
    """A strided tensor over one region: element (i0, i1, ...) is at byte
    `offset + itemsize * sum(i_k * strides[k])` of the region's buffer."""

    region: Region
    offset: int  # byte offset of element 0 inside the region
    dtype: DType
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    array: Array  # numpy strided view of the raw memory (memory_dtype), shape `shape`

    @staticmethod
    def make(
        memory: Memory,
        address: int,
        dtype: DType,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
    ) -> TensorView:
        if any(s < 0 for s in shape):
            raise MemoryFault(f"tensor_view shape {list(shape)} has a negative dimension")
        if any(s < 0 for s in strides):
            raise MemoryFault(f"tensor_view strides {list(strides)} have a negative stride")
        size = dtype.itemsize
        empty = any(s == 0 for s in shape)
        extent = (
            0 if empty else 1 + sum((n - 1) * st for n, st in zip(shape, strides, strict=False))
        )
        if address % size:
            raise MemoryFault(f"tensor_view base {address:#x} is not aligned to {size} bytes")
        region, off = memory.region_of(address, extent * size)
        mdt = memory_dtype(dtype)
        flat = region.buffer[off : off + extent * size].view(mdt)
        if empty:
            array = np.empty(shape, dtype=mdt)
        else:
            array = np.lib.stride_tricks.as_strided(
                flat,
                shape=shape,
                strides=tuple(st * size for st in strides),
                writeable=region.writable,
            )
        return TensorView(region, off, dtype, shape, strides, array)


@dataclass(eq=False)
class PartitionView:
    """A tensor view cut into `tile_shape` tiles; tile dim i walks tensor dim `dim_map[i]`.

    Tile at index (j0, j1, ...), element (t0, t1, ...) is tensor element e with
    e[dim_map[i]] = j_i * tile_shape[i] + t_i."""

    tensor: TensorView
    tile_shape: tuple[int, ...]
    dim_map: tuple[int, ...]
    padding: str | None

    def __post_init__(self) -> None:
        rank = len(self.tensor.shape)
        if len(self.tile_shape) != rank or sorted(self.dim_map) != list(range(rank)):
            raise MemoryFault(
                f"partition tile {list(self.tile_shape)} / dim_map {list(self.dim_map)} "
                f"do not fit a rank-{rank} tensor_view"
            )
        self.index_space: tuple[int, ...] = tuple(
            -(-self.tensor.shape[d] // t)
            for d, t in zip(self.dim_map, self.tile_shape, strict=False)
        )
        # inverse[d] = the tile dim that walks tensor dim d
        inverse = [0] * rank
        for i, d in enumerate(self.dim_map):
            inverse[d] = i
        self.inverse: tuple[int, ...] = tuple(inverse)

    def window(self, index: list[int]) -> tuple[tuple[slice, ...], tuple[int, ...]]:
        """Tensor-order slices of the in-bounds part of a tile, and its extent per tile dim."""
        if len(index) != len(self.tile_shape):
            raise MemoryFault(f"{len(index)} indices for a rank-{len(self.tile_shape)} view")
        for i, (j, n) in enumerate(zip(index, self.index_space, strict=False)):
            if not 0 <= j < n:
                raise MemoryFault(
                    f"tile index {list(index)} is outside the index space {list(self.index_space)} "
                    f"(dimension {i})"
                )
        slices: list[slice] = [slice(0)] * len(index)
        extent: list[int] = []
        for i, (j, t) in enumerate(zip(index, self.tile_shape, strict=False)):
            d = self.dim_map[i]
            start = j * t
            stop = min(start + t, self.tensor.shape[d])
            slices[d] = slice(start, stop)
            extent.append(stop - start)
        return tuple(slices), tuple(extent)

    def load(self, index: list[int]) -> Array:
        slices, extent = self.window(index)
        window = decode(self.tensor.array[slices].transpose(self.dim_map), self.tensor.dtype)
        if extent == self.tile_shape:
            return window
        fill = padding_value(self.padding, self.tensor.dtype)
        out = full(self.tile_shape, fill, self.tensor.dtype)
        out[tuple(slice(0, e) for e in extent)] = window
        return out

    def store(self, index: list[int], tile: Array) -> None:
        if not self.tensor.region.writable:
            raise MemoryFault(f"store to read-only buffer #{self.tensor.region.index}")
        slices, extent = self.window(index)
        part = np.asarray(tile)[tuple(slice(0, e) for e in extent)]
        self.tensor.array[slices] = encode(part, self.tensor.dtype).transpose(self.inverse)


def describe_value(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{v.shape} {v.dtype}"
    return type(v).__name__

"""Host handles to device tensors: `Tensor` (a strided view of an allocation) and `Partition`
(a tensor cut into equal tiles, the form a kernel writes).

Every handle is registered with the Rust host registry, which enforces the host rules:
`partition` consumes a tensor whose storage has no other live view (rule 1); a launch moves
its argument handles into the pending operation and they are dead until it hands them back
(rule 3); mutable arguments may not overlap any other argument (rule 2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from ..dtypes import DType
from ..errors import BorrowError, TensorError, TensorIndexError
from .memory import Allocation
from .ownership import ledger, registry
from .tensor_args import shape_of


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    if len(shape) == 1:
        return (1,)
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def injective_layout(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Does every index have its own address? Sufficient test: with the axes of extent > 1
    sorted by stride, each stride exceeds the farthest reach of the smaller ones (so no
    stride is 0 or negative). An empty tensor has no two elements to share one."""
    if 0 in shape:
        return True
    reach = 0
    for s, n in sorted((s, n) for s, n in zip(strides, shape, strict=True) if n > 1):
        if s <= reach:
            return False
        reach += s * (n - 1)
    return True


class _Handle(_native.HandleMeta):
    """Shared state of Tensor and Partition: where the bytes are and how they are laid out.

    Made in one native call, `Tensor(alloc, storage, offset, shape, strides, dtype,
    handle=None, tile_shape=None, num_blocks=None)`: the native base registers the view
    (a new registry handle, or the one given), keeps `shape`, `strides`, `dtype`, `_alloc`,
    `_storage`, `_offset`, `_handle`, `address`, `device` (the allocation's) and, for a
    partition, `tile_shape` and `num_blocks`, and releases the handle when the object dies.
    The launcher reads the same facts natively."""

    __slots__ = ("__weakref__",)

    if TYPE_CHECKING:  # the native base's attributes, as Python code reads them

        def __init__(self, alloc: Allocation, storage: int, offset: int,
                     shape: tuple[int, ...], strides: tuple[int, ...] | None,
                     dtype: DType, handle: int | None = None,
                     tile_shape: tuple[int, ...] | None = None,
                     num_blocks: int | None = None) -> None: ...
        @property
        def _alloc(self) -> Allocation: ...
        @property
        def _storage(self) -> int: ...
        @property
        def _offset(self) -> int: ...
        @property
        def _handle(self) -> int: ...
        @property
        def address(self) -> int:
            """Address of element [0, ..., 0] (device pointer on the GPU)."""
        @property
        def device(self) -> int:
            """The ordinal of the device whose memory this is (a launch runs on the
            device of its tensors)."""
        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def strides(self) -> tuple[int, ...]: ...
        @property
        def dtype(self) -> DType: ...
        def _span_bytes(self) -> tuple[int, int]:
            """Lowest and one-past-highest byte this view touches, relative to the
            allocation."""

    # -- facts the launcher needs ----------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def _ensure_live(self, what: str) -> None:
        registry().check_live(self._handle, what)

    def _ledger_range(self) -> tuple[int, int, int]:
        lo, hi = self._span_bytes()
        return self._storage, lo, hi

    def _ensure_no_pending_writer(self) -> None:
        """A host read must not observe bytes pending work may still be writing: wait for
        every writer on a stream (an op handed its tensors back before the device finished:
        `then`, a graph replay). Raises BorrowError for bytes a graph capture is recording
        (CT5060, nothing of it ran) or an external holder has (CT5008)."""
        storage, lo, hi = self._ledger_range()
        ledger().host_access(storage, lo, hi, False)

    def _ensure_no_pending_access(self) -> None:
        """A host write (or a hand-over to a consumer that may write) must not race pending
        work that reads the bytes either: wait for every reader and writer on a stream."""
        storage, lo, hi = self._ledger_range()
        ledger().host_access(storage, lo, hi, True)

    def _to_numpy(self) -> np.ndarray:
        lo, hi = self._span_bytes()
        raw = self._alloc.read(lo, hi - lo)
        item = self.dtype.itemsize
        # Stride through plain unsigned integers of the element's width (numpy's strided
        # views do not take every ml_dtypes type, f8 among them), then view as the dtype.
        base = raw.view(f"<u{item}")
        first = (self._offset - lo) // item
        view = np.lib.stride_tricks.as_strided(
            base[first:],
            shape=self.shape,
            strides=tuple(s * item for s in self.strides),
        )
        return np.array(view, copy=True).view(self.dtype.numpy)


class Tensor(_Handle):
    """A device tensor (or, on the interpreter, a host buffer that stands in for one)."""

    __slots__ = ()

    def __repr__(self) -> str:
        where = f", device={self.device}" if self.device else ""
        return f"cutile.Tensor(shape={list(self.shape)}, dtype={self.dtype.name}{where})"

    def to_numpy(self) -> np.ndarray:
        """Copy to a new numpy array, after any pending writer of its bytes finished."""
        self._ensure_live("read")
        self._ensure_no_pending_writer()
        return self._to_numpy()

    def numpy(self) -> np.ndarray:
        return self.to_numpy()

    def to(self, device: int) -> Tensor:
        """This tensor on `device`: itself if it is there, else a copy in new memory of
        that device (same shape, strides and element type). The copy is device work in the
        ledger like a launch: it reads this tensor after its pending writers (on any
        stream of any device), writes the new one, and whatever uses the new tensor next,
        a host read included, waits for it. It returns at once. Between GPUs it goes over
        the direct link where peer access is on (`devices.peer_access`), else the driver
        stages it."""
        from . import copies

        return copies.to_device(self, device)

    def partition(self, tile_shape: Sequence[int]) -> Partition:
        """Consume this tensor and cut it into tiles of `tile_shape` (host rule 1: its storage
        must have no other live view)."""
        shape = shape_of(tile_shape)  # CT5030 for 2.5 or "8": a tile size is an int
        if len(shape) != self.ndim:
            raise BorrowError(
                f"tile shape {list(shape)} has rank {len(shape)}; the tensor has rank "
                f"{self.ndim}",
                code="CT5010",
                hint="give one tile size per tensor dimension",
            )
        if any(s < 1 for s in shape):
            raise BorrowError(f"tile sizes must be >= 1, got {list(shape)}", code="CT5010")
        if self.ndim > 3:
            raise BorrowError(
                f"a partition has at most 3 dimensions (one per grid axis); this tensor has "
                f"{self.ndim}",
                code="CT5011",
                hint="reshape it to 3 or fewer dimensions first",
            )
        if not injective_layout(self.shape, self.strides):
            # An output's blocks (and the lanes of one store) write their elements at the
            # same time: two elements at one address would be written by two of them. A
            # view of cutile's never has such a layout; a copy of a broadcast import does
            # (`from_dlpack(...).to(device)` keeps its strides).
            raise BorrowError(
                f"cannot partition a tensor whose strides {list(self.strides)} (shape "
                f"{list(self.shape)}) put several elements at one address (a broadcast or "
                "overlapping layout): the blocks writing them would race",
                code="CT5013",
                hint="write into a tensor of its own memory (`api.empty(shape, dtype)`), or "
                "copy this one into one first (`api.from_numpy(t.to_numpy())`)",
            )
        new = registry().consume(self._handle, "partition", True)
        return Partition(self._alloc, self._storage, self._offset, self.shape, self.strides,
                         self.dtype, handle=new, tile_shape=shape)

    def __getitem__(self, key: Any) -> Tensor:
        """A view (shares storage): ints and slices with positive steps."""
        self._ensure_live("view")
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > self.ndim:
            raise TensorIndexError(f"too many indices for a tensor of rank {self.ndim}",
                                   code="CT5037", hint="give at most one index per axis")
        offset = self._offset
        shape: list[int] = []
        strides: list[int] = []
        for axis, k in enumerate(key):
            n, s = self.shape[axis], self.strides[axis]
            if isinstance(k, (int, np.integer)):
                i = int(k) + n if k < 0 else int(k)
                if not 0 <= i < n:
                    raise TensorIndexError(
                        f"index {k} out of range for axis {axis} of size {n}", code="CT5037",
                        hint=f"an index of axis {axis} is in [-{n}, {n})")
                offset += i * s * self.dtype.itemsize
            elif isinstance(k, slice):
                if k.step is not None and (not isinstance(k.step, (int, np.integer))
                                           or k.step <= 0):
                    raise TensorIndexError("a view needs a slice step of 1 or more",
                                           code="CT5037",
                                           hint="reverse a copy on the host instead")
                try:
                    start, stop, step = k.indices(n)
                except TypeError:
                    raise TensorIndexError(f"unsupported slice {k!r}: its bounds are ints",
                                           code="CT5037",
                                           hint="slice with ints, e.g. `t[1:3]`") from None
                count = max(0, -(-(stop - start) // step))
                offset += start * s * self.dtype.itemsize
                shape.append(count)
                strides.append(s * step)
            else:
                raise TensorIndexError(f"unsupported index {k!r}: a view takes ints and slices",
                                       code="CT5037", hint="index with ints and slices, e.g. "
                                       "`t[0]` or `t[:, 1:3]`")
        shape.extend(self.shape[len(key):])
        strides.extend(self.strides[len(key):])
        return Tensor(self._alloc, self._storage, offset, tuple(shape), tuple(strides),
                      self.dtype)

    def permute(self, *axes: int) -> Tensor:
        """A view (shares storage) with the axes in the order `axes`, as numpy's
        `transpose(axes)`: axis `k` of the view is axis `axes[k]` of this tensor. Partition
        a permuted view of an output to choose which tensor axis is the grid's x axis (the
        blocks the GPU starts first, side by side)."""
        self._ensure_live("permute")
        order = tuple(int(a) for a in axes) if all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes) else None
        if order is None or sorted(order) != list(range(self.ndim)):
            raise TensorError(
                f"permute({', '.join(map(repr, axes))}) is not an order of the {self.ndim} "
                f"axes of a tensor of shape {list(self.shape)}", code="CT5035",
                hint=f"name every axis 0..{self.ndim - 1} once, e.g. "
                     f"`permute({', '.join(map(str, reversed(range(self.ndim))))})`",
            )
        return Tensor(self._alloc, self._storage, self._offset,
                      tuple(self.shape[a] for a in order), tuple(self.strides[a] for a in order),
                      self.dtype)

    def reshape(self, shape: Sequence[int]) -> Tensor:
        """A view with a new shape (the tensor must be contiguous)."""
        self._ensure_live("reshape")
        new = shape_of(shape)
        if math.prod(new) != self.size:
            raise TensorError(
                f"cannot reshape {list(self.shape)} ({self.size} elements) to {list(new)} "
                f"({math.prod(new)} elements)", code="CT5034",
                hint="the new shape must hold the same number of elements",
            )
        if self.strides != contiguous_strides(self.shape):
            raise TensorError(
                "only contiguous tensors can be reshaped", code="CT5034",
                hint="reshape the tensor before taking a strided view of it",
            )
        return Tensor(self._alloc, self._storage, self._offset, new, contiguous_strides(new),
                      self.dtype)

    # -- interop (runtime/interop/exporting.py; docs/interop.md) ---------------------------

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule viewing this tensor (no copy unless `copy=True` or another
        `dl_device` asks for one). While the consumer holds it, cutile does not write the
        tensor (BorrowError CT5041); a tensor imported shared goes out read-only."""
        from .interop import exporting

        return exporting.dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        from .interop import exporting

        return exporting.device_of(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA array interface (version 3; GPU backend only). cutile does not write
        the tensor again while this object lives (BorrowError CT5041)."""
        from .interop import exporting

        return exporting.cuda_array_interface(self)


class Partition(_Handle):
    """A tensor cut into tiles; a kernel's `Mut` parameter takes one. Block (i, j, k) of the
    launch owns tile (i, j, k). Made as `Partition(alloc, storage, offset, shape, strides,
    dtype, handle=..., tile_shape=..., num_blocks=...)`."""

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def tile_shape(self) -> tuple[int, ...]: ...
        @property
        def num_blocks(self) -> int | None: ...

    def __repr__(self) -> str:
        return (f"cutile.Partition(shape={list(self.shape)}, tile={list(self.tile_shape)}, "
                f"dtype={self.dtype.name})")

    @property
    def grid(self) -> tuple[int, int, int]:
        g = [-(-d // t) for d, t in zip(self.shape, self.tile_shape, strict=True)]
        g += [1] * (3 - len(g))
        return (g[0], g[1], g[2])

    @property
    def num_tiles(self) -> int:
        return math.prod(self.grid)

    def persistent(self, num_blocks: int | None = None) -> Partition:
        """For kernels that walk this partition with `for idx in z.iter_indices()`: launch
        `num_blocks` blocks (default: one per multiprocessor, at most one per tile) that
        share the tiles by the checked schedule. Consumes this partition."""
        if num_blocks is not None and (isinstance(num_blocks, bool)
                                       or not isinstance(num_blocks, (int, np.integer))):
            raise BorrowError(f"num_blocks is an int, got {num_blocks!r}", code="CT5012",
                              hint="e.g. `.persistent(132)`, or `.persistent()` for one "
                              "block per multiprocessor")
        if num_blocks is not None and num_blocks < 1:
            raise BorrowError(f"num_blocks must be >= 1, got {num_blocks}", code="CT5012")
        if num_blocks is not None and num_blocks > 2**31 - 1:
            # CUDA's grid limit on x, and before the handle is consumed: a count past 64
            # bits reached the registry as an untyped OverflowError and lost the tensor.
            raise BorrowError(f"num_blocks must be at most 2^31 - 1 (CUDA's grid limit), got "
                              f"{num_blocks}", code="CT5012",
                              hint="`.persistent()` picks one block per multiprocessor")
        new = registry().consume(self._handle, "persistent", False)
        return Partition(self._alloc, self._storage, self._offset, self.shape, self.strides,
                         self.dtype, handle=new, tile_shape=self.tile_shape,
                         num_blocks=num_blocks)

    def unpartition(self) -> Tensor:
        """Give the whole tensor back (consumes the partition)."""
        new = registry().consume(self._handle, "unpartition", False)
        return Tensor(self._alloc, self._storage, self._offset, self.shape, self.strides,
                      self.dtype, handle=new)

    def to_numpy(self) -> np.ndarray:
        self._ensure_live("read")
        self._ensure_no_pending_writer()
        return self._to_numpy()

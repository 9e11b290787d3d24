"""Tile IR types (the `cuda_tile` dialect's type system, as the bytecode encodes it)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes as _dt
from ..dtypes import DType


@dataclass(frozen=True)
class PointerType:
    pointee: DType

    def __str__(self) -> str:
        return f"ptr<{self.pointee.name}>"


Element = DType | PointerType


@dataclass(frozen=True)
class TileType:
    """`tile<shape x elem>`; shape () is a scalar (rank-0 tile). Every dim is a power of two."""

    shape: tuple[int, ...]
    element: Element

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> DType:
        if isinstance(self.element, PointerType):
            raise TypeError("a tile of pointers has no numeric dtype")
        return self.element

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tile<{dims}{self.element}>"


@dataclass(frozen=True)
class TokenType:
    def __str__(self) -> str:
        return "token"


@dataclass(frozen=True)
class TensorViewType:
    """`tensor_view`: a strided global-memory tensor; None marks a dynamic dim or stride."""

    element: DType
    shape: tuple[int | None, ...]
    strides: tuple[int | None, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        strides = ",".join("?" if s is None else str(s) for s in self.strides)
        sep = "x" if self.shape else ""
        return f"tensor_view<{dims}{sep}{self.element.name}, strides=[{strides}]>"


PADDING_VALUES = ("zero", "neg_zero", "nan", "pos_inf", "neg_inf")


@dataclass(frozen=True)
class PartitionViewType:
    """`partition_view`: a tensor_view cut into a grid of `tile_shape` tiles.

    Loads past the end read `padding` (None: unspecified), stores past the end are masked.
    `dim_map[i]` is the tensor dimension that tile dimension i walks.
    """

    tile_shape: tuple[int, ...]
    tensor_view: TensorViewType
    dim_map: tuple[int, ...]
    padding: str | None = None

    def __str__(self) -> str:
        tile = "x".join(str(d) for d in self.tile_shape)
        pad = f", padding_value = {self.padding}" if self.padding else ""
        return f"partition_view<tile=({tile}){pad}, {self.tensor_view}>"


@dataclass(frozen=True)
class FunctionType:
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]


Type = TileType | TokenType | TensorViewType | PartitionViewType | FunctionType


def scalar(dtype: Element) -> TileType:
    """A rank-0 tile, e.g. an entry parameter (`tile<i32>`, `tile<ptr<f32>>`)."""
    return TileType((), dtype)


def tile(shape: tuple[int, ...] | list[int], dtype: Element) -> TileType:
    return TileType(tuple(shape), dtype)


TOKEN = TokenType()
I1 = scalar(_dt.bool_)
I32 = scalar(_dt.i32)
I64 = scalar(_dt.i64)
F32 = scalar(_dt.f32)


# The most elements a tile may hold: `maxTileNumElements` in NVIDIA/cuda-tile
# (include/cuda_tile/Dialect/CudaTile/IR/Types.h); tileiras refuses larger tiles.
MAX_TILE_ELEMENTS = 1 << 24


def is_power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0

"""What a kernel-AST expression evaluates to while lowering."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..dtypes import DType
from ..frontend.kast import Span
from ..ir import TileType, Value


class LVal:
    """Base class of lowering-time values."""


@dataclass
class TileV(LVal):
    """A Tile IR value (rank 0 for scalars)."""

    v: Value

    @property
    def type(self) -> TileType:
        t = self.v.type
        assert isinstance(t, TileType)
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> DType:
        return self.type.dtype


@dataclass
class ConstV(LVal):
    """A compile-time Python value (int, float, bool, str, None); weakly typed."""

    value: int | float | bool | str | None


@dataclass
class ByTargetV(LVal):
    """`ByTarget(...)`: a compile-time value per GPU architecture (`default` for the
    others); only a load hint takes one."""

    values: dict[str, LVal]
    spans: dict[str, Span]  # where each value is written, for errors


@dataclass
class TupleV(LVal):
    items: tuple[LVal, ...]


@dataclass
class DTypeV(LVal):
    dtype: DType


@dataclass
class TensorV(LVal):
    """A tensor parameter: its tensor_view and extents (constants when static, i32/i64
    values when dynamic). For a `Mut` parameter, `tile_shape` is its partition's tile."""

    param: str
    dtype: DType
    view: Value
    shape: tuple[LVal, ...]
    mutable: bool
    tile_shape: tuple[int, ...] | None = None
    # (tile shape, padding, dim_map) -> partition_view value, made once per kernel
    partitions: dict[tuple[tuple[int, ...], str | None, tuple[int, ...]], Value] = field(
        default_factory=dict
    )
    # The base pointer and element strides (ints when static), for element-indexed access
    # (`gather`, `scatter`, atomics); `atomic` for an `Atomic` parameter.
    base: Value | None = None
    strides: tuple[Value | int, ...] = ()
    atomic: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class SubPartitionV(LVal):
    """`z.partition_mut(shape)`: sub-tiles of the block's own tile of `parent`."""

    parent: TensorV
    tile_shape: tuple[int, ...]


@dataclass
class MappedRangeV(LVal):
    """`z.iter_indices(group=G)`: the persistent schedule over `z`'s tiles."""

    tensor: TensorV
    group: int


@dataclass
class RangeV(LVal):
    start: LVal
    stop: LVal
    step: LVal


@dataclass
class SliceV(LVal):
    """`a:b:c` in a subscript (or `slice(a, b, c)`): each part a value, or None."""

    start: LVal | None
    stop: LVal | None
    step: LVal | None


@dataclass
class TextV(LVal):
    """Text for `print`: literal pieces and (printf conversion, tile) pairs, in order."""

    parts: tuple[str | tuple[str, TileV], ...]

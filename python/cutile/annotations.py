"""Parameter annotations of kernels (`Tensor`, `Mut`, `Atomic`, `Const`, `Ptr`, `Tile`)
and the specs they stand for; `cutile.core` re-exports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .dtypes import DType

Dim = int | str


@dataclass(frozen=True)
class TensorSpec:
    dtype: DType
    shape: tuple[Dim, ...]


@dataclass(frozen=True)
class MutSpec:
    inner: TensorSpec


@dataclass(frozen=True)
class AtomicSpec:
    inner: TensorSpec


@dataclass(frozen=True)
class ConstSpec:
    type: type


@dataclass(frozen=True)
class PtrSpec:
    dtype: DType


@dataclass(frozen=True)
class TileSpec:
    dtype: DType
    shape: tuple[Dim, ...]


def _shape_of(shape: Any, what: str) -> tuple[Dim, ...]:
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{what}: the shape must be a list like [128] or [-1, 'BN'], got {shape!r}")
    dims: list[Dim] = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, str)):
            raise TypeError(f"{what}: shape entries are ints, -1, or Const names; got {d!r}")
        if isinstance(d, int) and d < 1 and d != -1:
            raise TypeError(f"{what}: a dimension must be >= 1 or -1 (dynamic); got {d}")
        dims.append(d)
    return tuple(dims)


class Tensor:
    """`Tensor[f32, [-1, 128]]`: a shared, read-only tensor parameter (full shape).

    Inside `Mut[...]` the shape is the tile shape of the partition the kernel writes."""

    def __class_getitem__(cls, params: Any) -> TensorSpec:
        if not isinstance(params, tuple) or len(params) != 2 or not isinstance(params[0], DType):
            raise TypeError("use Tensor[dtype, shape], e.g. Tensor[f32, [-1]]")
        return TensorSpec(params[0], _shape_of(params[1], "Tensor"))


class Mut:
    """`Mut[Tensor[f32, ["B"]]]`: the block's exclusive output partition."""

    def __class_getitem__(cls, inner: Any) -> MutSpec:
        if not isinstance(inner, TensorSpec):
            raise TypeError("use Mut[Tensor[dtype, tile_shape]]")
        return MutSpec(inner)


class Atomic:
    """`Atomic[Tensor[f32, [-1]]]`: a tensor every block updates with atomic operations only.

    The caller passes a `Tensor` (the launch holds it exclusively, like an output, but it is
    not partitioned and does not decide the grid); the shape is the full shape. Inside the
    kernel the only accesses are `atomic_add`, `atomic_max`, ..., `atomic_cas`: blocks share
    the tensor without a data race by construction."""

    def __class_getitem__(cls, inner: Any) -> AtomicSpec:
        if not isinstance(inner, TensorSpec):
            raise TypeError("use Atomic[Tensor[dtype, shape]]")
        return AtomicSpec(inner)


class Const:
    """`Const[int]`: a compile-time constant, inferred from shapes or given by keyword."""

    def __class_getitem__(cls, t: Any) -> ConstSpec:
        if t not in (int, float, bool):
            raise TypeError("use Const[int], Const[float] or Const[bool]")
        return ConstSpec(t)


class Ptr:
    """`Ptr[f32]`: a raw device pointer (only in `@cutile.entry(unsafe=True)` kernels)."""

    def __class_getitem__(cls, t: Any) -> PtrSpec:
        if not isinstance(t, DType):
            raise TypeError("use Ptr[dtype]")
        return PtrSpec(t)


class Tile:
    """`Tile[f32, [128]]`: annotation for tile values in device functions (optional)."""

    def __class_getitem__(cls, params: Any) -> TileSpec:
        if not isinstance(params, tuple) or len(params) != 2 or not isinstance(params[0], DType):
            raise TypeError("use Tile[dtype, shape]")
        return TileSpec(params[0], _shape_of(params[1], "Tile"))

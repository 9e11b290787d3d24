"""Parameter annotations of kernels (`Tensor`, `Mut`, `Atomic`, `Const`, `Ptr`, `Tile`)
and the specs they stand for; `cutile.core` re-exports them."""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from typing import Any

from .dtypes import DType
from .errors import AnnotationError

Dim = int | str
# Tensor extents are at most 2^31 - 1 (the launcher refuses larger ones, CT6111)
DIM_MAX = (1 << 31) - 1
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _wrong(message: str, hint: str) -> AnnotationError:
    """CT0003 for an annotation written wrong, pointing at the user's line (the frame that
    evaluates the annotation, outside cutile) with a caret under the subscript."""
    err = AnnotationError(message, hint=hint)
    err.rendered = _located(message, hint) or None
    return err


def _located(message: str, hint: str) -> str:
    try:
        frame = sys._getframe(2)
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
                _PACKAGE + os.sep):
            frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return ""
        path = frame.f_code.co_filename
        positions = list(frame.f_code.co_positions())
        line, end_line, col, end_col = positions[frame.f_lasti // 2]
        text = "".join(linecache.getlines(path))
        if not text or line is None or col is None:
            return ""
        from .frontend.diagnostics import Diagnostic, SpanLabel, render
        from .frontend.kast import SourceFile, Span

        starts = [0]
        for i, b in enumerate(text.encode("utf-8")):
            if b == 0x0A:
                starts.append(i + 1)
        end_line = end_line or line
        end_col = end_col if end_col is not None and end_line == line else col
        lo, hi = starts[line - 1] + col, starts[line - 1] + max(end_col, col)
        span = Span(0, lo, hi, line, col, line, max(end_col, col))
        d = Diagnostic("CT0003", message, SpanLabel(span, "this annotation"), help=hint)
        return render([SourceFile(path, text)], [d]).rstrip("\n")
    except Exception:  # the location is a courtesy: never hide the error itself
        return ""


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


_SHAPE_HINT = ("a shape is a list of ints >= 1, -1 (dynamic) or names of `Const[int]` "
               "parameters: `Tensor[f32, [-1, 'BN']]`")


def _shape_of(shape: Any, what: str) -> tuple[Dim, ...]:
    if not isinstance(shape, (list, tuple)):
        raise _wrong(f"{what}: the shape must be a list like [128] or [-1, 'BN'], got "
                     f"{shape!r}", _SHAPE_HINT)
    dims: list[Dim] = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, str)):
            raise _wrong(f"{what}: shape entries are ints, -1, or Const names; got {d!r}",
                         _SHAPE_HINT)
        if isinstance(d, int) and d < 1 and d != -1:
            raise _wrong(f"{what}: a dimension must be >= 1 or -1 (dynamic); got {d}",
                         _SHAPE_HINT)
        if isinstance(d, int) and d > DIM_MAX:
            raise _wrong(f"{what}: a dimension must be below 2^31; got {d}",
                         "tensor extents are at most 2^31 - 1 (the launch refuses larger)")
        dims.append(d)
    return tuple(dims)


class Tensor:
    """`Tensor[f32, [-1, 128]]`: a shared, read-only tensor parameter (full shape).

    Inside `Mut[...]` the shape is the tile shape of the partition the kernel writes."""

    def __class_getitem__(cls, params: Any) -> TensorSpec:
        if not isinstance(params, tuple) or len(params) != 2 or not isinstance(params[0], DType):
            raise _wrong("use Tensor[dtype, shape], e.g. Tensor[f32, [-1]]",
                         "the element type is a cutile dtype (`f32`, `i32`, ...), the shape a list")
        return TensorSpec(params[0], _shape_of(params[1], "Tensor"))


class Mut:
    """`Mut[Tensor[f32, ["B"]]]`: the block's exclusive output partition."""

    def __class_getitem__(cls, inner: Any) -> MutSpec:
        if not isinstance(inner, TensorSpec):
            raise _wrong("use Mut[Tensor[dtype, tile_shape]]",
                         "`Mut` wraps one `Tensor[...]`: `Mut[Tensor[f32, ['B']]]`")
        if not inner.shape:
            # every launch would refuse it (CT6004): an output's tiles make the grid
            raise _wrong("Mut[Tensor[...]]: an output's tile has at least one axis; got rank 0",
                         "the tiles of the outputs make the launch grid; one value is "
                         "`Mut[Tensor[f32, [1]]]`")
        unknown = [d for d in inner.shape if not isinstance(d, str) and d == -1]
        if unknown:
            # every launch would refuse it (CT6002): a partition's tile has no -1 size
            raise _wrong(f"Mut[Tensor[...]]: the shape is the tile each block writes; "
                         f"got {list(inner.shape)}, with -1",
                         "write each tile size as an int or a `Const` name: "
                         "`Mut[Tensor[f32, ['B']]]` with `B: Const[int]`")
        return MutSpec(inner)


class Atomic:
    """`Atomic[Tensor[f32, [-1]]]`: a tensor every block updates with atomic operations only.

    The caller passes a `Tensor` (the launch holds it exclusively, like an output, but it is
    not partitioned and does not decide the grid); the shape is the full shape. Inside the
    kernel the only accesses are `atomic_add`, `atomic_max`, ..., `atomic_cas`: blocks share
    the tensor without a data race by construction."""

    def __class_getitem__(cls, inner: Any) -> AtomicSpec:
        if not isinstance(inner, TensorSpec):
            raise _wrong("use Atomic[Tensor[dtype, shape]]",
                         "`Atomic` wraps one `Tensor[...]`: `Atomic[Tensor[i32, [-1]]]`")
        return AtomicSpec(inner)


class Const:
    """`Const[int]`: a compile-time constant, inferred from shapes or given by keyword."""

    def __class_getitem__(cls, t: Any) -> ConstSpec:
        if t not in (int, float, bool):
            raise _wrong("use Const[int], Const[float] or Const[bool]",
                         "a compile-time constant is an int, a float or a bool")
        return ConstSpec(t)


class Ptr:
    """`Ptr[f32]`: a raw device pointer (only in `@cutile.entry(unsafe=True)` kernels)."""

    def __class_getitem__(cls, t: Any) -> PtrSpec:
        if not isinstance(t, DType):
            raise _wrong("use Ptr[dtype]", "a pointer names its element type: `Ptr[f32]`")
        return PtrSpec(t)


class Tile:
    """`Tile[f32, [128]]`: annotation for tile values in device functions (optional)."""

    def __class_getitem__(cls, params: Any) -> TileSpec:
        if not isinstance(params, tuple) or len(params) != 2 or not isinstance(params[0], DType):
            raise _wrong("use Tile[dtype, shape]", "`Tile[f32, [128]]`: a cutile dtype and a list")
        return TileSpec(params[0], _shape_of(params[1], "Tile"))

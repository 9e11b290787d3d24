"""Tile IR's limits on a tile, checked where the lowering makes one so that the program's
line is named (CT3023, CT3024) before any tileiras call: every extent a power of two, and
at most 2^24 elements in all (`maxTileNumElements` in NVIDIA/cuda-tile
`include/cuda_tile/Dialect/CudaTile/IR/Types.h`; tileiras refuses a larger tile). The IR
verifier checks the same limits again as an internal invariant."""

from __future__ import annotations

import math

from ..frontend import kast as K
from ..frontend.diagnostics import fail
from ..ir.types import MAX_TILE_ELEMENTS, is_power_of_two

HINT_POW2 = "Tile IR tiles have power-of-two sizes"
HINT_SIZE = ("use smaller tiles (a Const tile size, or several tiles per block with "
             "`partition_mut`); a tile that large would not fit a block's registers anyway")


def check_tile_shape(shape: tuple[int, ...], span: K.Span, label: str = "tile shape") -> None:
    """Raise CT3023 / CT3024 (at `span`) unless `shape` is a valid Tile IR tile shape."""
    for d in shape:
        if not is_power_of_two(d):
            raise fail("CT3023", f"tile dimension {d} is not a power of two", span, label,
                       help=HINT_POW2)
    check_tile_size(shape, span, label)


def check_tile_size(shape: tuple[int, ...], span: K.Span, label: str = "this tile") -> None:
    """Raise CT3024 (at `span`) if a tile of `shape` has more elements than Tile IR allows."""
    n = math.prod(shape)
    if n > MAX_TILE_ELEMENTS:
        dims = f" ({'x'.join(str(d) for d in shape)})" if len(shape) > 1 else ""
        raise fail("CT3024", f"a tile of {n} elements{dims} is larger than Tile IR allows "
                   f"(at most 2^24 = {MAX_TILE_ELEMENTS})", span, label, help=HINT_SIZE)

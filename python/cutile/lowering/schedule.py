"""The persistent schedule of `for idx in z.iter_indices(group=G)`: a grid-stride loop over
flat tile ids, each mapped to a tile coordinate by the bijection the checker proves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes as dt
from ..frontend import kast as K
from ..ir import Value, scalar
from .values import LVal, MappedRangeV, TileV, TupleV

if TYPE_CHECKING:
    from .lower import Lowerer


class Schedule:
    def __init__(self, low: Lowerer) -> None:
        self.low = low
        self.b = low.b

    def bind_target(self, target: K.Target, it: LVal, iv: Value) -> None:
        """Bind the loop variable: the counter of a range, or the tile index that a mapped
        partition's schedule assigns to flat tile id `iv`."""
        if isinstance(it, MappedRangeV):
            coords = self.tile_of(iv, it)
            self.low.assign(target, TupleV(tuple(TileV(c) for c in coords)))
        else:
            self.low.assign(target, TileV(iv))

    def tile_counts(self, it: MappedRangeV) -> list[Value]:
        t = it.tensor
        assert t.tile_shape is not None
        pv = self.low.partition(t, t.tile_shape, None, K.Span(0, 0, 0, 0, 0, 0, 0))
        return self.b.get_index_space_shape(pv)

    def mapped_bounds(self, it: MappedRangeV) -> tuple[Value, Value, Value]:
        """Grid-stride loop over flat tile ids: block b visits b, b + nb, ... < total."""
        assert self.low.block_ids is not None
        counts = self.tile_counts(it)
        total = counts[0]
        for c in counts[1:]:
            total = self.b.binary("muli", total, c)
        nb = self.b.num_blocks()[0]
        return self.low.block_ids[0], total, nb

    def tile_of(self, flat: Value, it: MappedRangeV) -> list[Value]:
        """The schedule's map from flat tile id to tile coordinate (the same bijection the
        checker proves: rank 1 direct; rank 2 the grouped swizzle; rank 3 the leading axis
        linear and the trailing two swizzled)."""
        b = self.b
        counts = self.tile_counts(it)

        def div(x: Value, y: Value) -> Value:
            return b.op("divi", [x, y], [x.type], {"signedness": "signed",
                                                    "rounding": "zero"}).result

        def rem(x: Value, y: Value) -> Value:
            return b.op("remi", [x, y], [x.type], {"signedness": "signed"}).result

        def grouped(pid: Value, m: Value, n: Value) -> list[Value]:
            # A group of m rows or more is the same schedule as a group of m; taking the
            # smaller keeps g * n within the tile count, so no product wraps.
            g_max = b.constant(min(it.group, 2**31 - 1), scalar(dt.i32))
            g = b.op("mini", [g_max, m], [m.type], {"signedness": "signed"}).result
            per_group = b.binary("muli", g, n)
            first = b.binary("muli", div(pid, per_group), g)
            rest = b.binary("subi", m, first)
            size = b.op("mini", [rest, g], [g.type], {"signedness": "signed"}).result
            local = rem(pid, per_group)
            return [b.binary("addi", first, rem(local, size)), div(local, size)]

        if len(counts) == 1:
            return [flat]
        if len(counts) == 2:
            return grouped(flat, counts[0], counts[1])
        plane = b.binary("muli", counts[1], counts[2])
        return [div(flat, plane), *grouped(rem(flat, plane), counts[1], counts[2])]

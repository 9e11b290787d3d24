"""The persistent schedule of `for idx in z.iter_indices(group=G)`: a grid-stride loop over
flat tile ids, each mapped to a tile coordinate by the bijection the checker proves. The
checker's fact for the loop (`ScheduleFact`: the grid axis, the map, the group cap) says
which schedule; the lowering emits that one and refuses a loop it has no fact for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes as dt
from ..frontend import kast as K
from ..ir import Value, scalar
from .facts import ScheduleFact
from .values import LVal, MappedRangeV, TileV, TupleV

if TYPE_CHECKING:
    from .lower import Lowerer

# The maps the checker proves (`cutile-check/src/schedule.rs`), by partition rank; the
# schedule without the checker's facts (the compiler's own tests) is the one it proves.
MAPS = {1: "linear", 2: "grouped", 3: "linear-grouped"}
GROUP_MAX = 2**31 - 1


class Schedule:
    def __init__(self, low: Lowerer) -> None:
        self.low = low
        self.b = low.b

    def fact(self, it: MappedRangeV, span: K.Span) -> ScheduleFact:
        """The checker's schedule for the loop whose iterable (`op_node`) is `it`."""
        t = it.tensor
        facts = self.low.facts
        if facts is None:
            return ScheduleFact(t.param, t.rank, 0, MAPS[t.rank], GROUP_MAX)
        fact = facts.schedules.get((self.low.node(), t.param))
        if fact is None or fact.rank != t.rank or fact.map != MAPS.get(t.rank):
            why = "no schedule" if fact is None else f"a {fact.map} schedule of rank {fact.rank}"
            raise self.low.error(
                "CT9002", f"the checker has {why} for this walk of `{t.param}` (rank "
                f"{t.rank}); refusing to compile it", span, "unchecked schedule",
                help="this is a bug in cutile (the checker and the compiler disagree); "
                "please report it with the kernel",
            )
        return fact

    def bind_target(self, target: K.Target, it: LVal, iv: Value,
                    fact: ScheduleFact | None) -> None:
        """Bind the loop variable: the counter of a range, or the tile index that a mapped
        partition's schedule assigns to flat tile id `iv`."""
        if isinstance(it, MappedRangeV):
            assert fact is not None
            coords = self.tile_of(iv, it, fact)
            self.low.assign(target, TupleV(tuple(TileV(c) for c in coords)))
        else:
            self.low.assign(target, TileV(iv))

    def tile_counts(self, it: MappedRangeV) -> list[Value]:
        t = it.tensor
        assert t.tile_shape is not None
        pv = self.low.partition(t, t.tile_shape, None, K.Span(0, 0, 0, 0, 0, 0, 0))
        return self.b.get_index_space_shape(pv)

    def mapped_bounds(self, it: MappedRangeV, fact: ScheduleFact
                      ) -> tuple[Value, Value, Value]:
        """Grid-stride loop over flat tile ids: block b of the fact's axis visits b, b + nb,
        ... < total."""
        assert self.low.block_ids is not None
        counts = self.tile_counts(it)
        total = counts[0]
        for c in counts[1:]:
            total = self.b.binary("muli", total, c)
        nb = self.b.num_blocks()[fact.axis]
        return self.low.block_ids[fact.axis], total, nb

    def tile_of(self, flat: Value, it: MappedRangeV, fact: ScheduleFact) -> list[Value]:
        """The schedule's map from flat tile id to tile coordinate (the same bijection the
        checker proves: `linear` direct; `grouped` the grouped swizzle; `linear-grouped`
        the leading axis linear and the trailing two swizzled)."""
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
            g_max = b.constant(min(it.group, fact.group_max), scalar(dt.i32))
            g = b.op("mini", [g_max, m], [m.type], {"signedness": "signed"}).result
            per_group = b.binary("muli", g, n)
            first = b.binary("muli", div(pid, per_group), g)
            rest = b.binary("subi", m, first)
            size = b.op("mini", [rest, g], [g.type], {"signedness": "signed"}).result
            local = rem(pid, per_group)
            return [b.binary("addi", first, rem(local, size)), div(local, size)]

        if fact.map == "linear":
            return [flat]
        if fact.map == "grouped":
            return grouped(flat, counts[0], counts[1])
        plane = b.binary("muli", counts[1], counts[2])
        return [div(flat, plane), *grouped(rem(flat, plane), counts[1], counts[2])]

"""Loads and stores: tiles of shared inputs, own tiles and mapped tiles of outputs,
sub-partitions, and the persistent iteration of `iter_indices()`."""

from __future__ import annotations

from ... import dtypes as dt
from ...frontend import kast as K
from ...ir import TileType, Value, scalar
from ..arith import broadcast_shapes
from ..values import ConstV, LVal, MappedRangeV, SubPartitionV, TensorV, TileV
from .base import Bound, OpsBase


class MemoryOps(OpsBase):
    def f_load_tile_like(self, a: Bound, span: K.Span) -> LVal:
        src = a["src"]
        like = a["like"]
        padding = self.padding_arg(a["padding"], span)
        if not isinstance(like, TensorV) or not like.mutable or like.tile_shape is None:
            raise self.err("CT3042", "the second argument of `load_tile_like` must be a `Mut` "
                           "tensor (its partition gives the position)", span, "not a Mut tensor")
        if not isinstance(src, TensorV):
            raise self.err("CT3042", "`load_tile_like` reads a tensor parameter", span,
                           "not a tensor", help="`load_tile_like(x, z)` loads `x`'s tile at "
                           "`z`'s position; a tile is already loaded")
        if src.rank != like.rank:
            raise self.err("CT3022", f"`{src.param}` has rank {src.rank} but `{like.param}` "
                           f"has rank {like.rank}", span, "ranks differ",
                           help=f"give `{src.param}` the rank of `{like.param}` (reshape it on "
                           "the host), or load it with `load_tile(shape, index)`")
        if not src.mutable:
            self.low.require_fact(span, "tile access")
        pv = self.low.partition(src, like.tile_shape, padding, span)
        return self._load(src, pv, self.low.own_index(like, span), span, self.memory_hints(a, span))

    def bounds_check(self, pv: Value, index: list[Value], span: K.Span, what: str) -> None:
        """A device assert for an index whose bounds the checker could neither prove nor
        hoist to a launch predicate (`check_report()` lists it as `device`)."""
        self.low.require_fact(span, "tile access")
        path = self.low.doc.files[span.file].path
        if not self.low.needs_device_check():
            return
        counts = self.b.get_index_space_shape(pv)
        zero = self.b.constant(0, scalar(dt.i32))
        for axis, (i, n) in enumerate(zip(index, counts, strict=True)):
            ok = self.b.binary("andi", self.b.cmp("cmpi", "greater_than_or_equal", i, zero),
                               self.b.cmp("cmpi", "less_than", i, n))
            self.b.assert_(ok, f"{path}:{span.line}: tile index of {what} on axis {axis} is "
                               "out of bounds")

    def _load(self, t: TensorV, pv: Value, index: list[Value], span: K.Span,
              hints: dict[str, dict[str, int | bool]] | None = None) -> TileV:
        token = self.low.tokens.get(t.param) if t.mutable else None
        attrs = {"optimization_hints": hints} if hints else {}
        tile_v, tok = self.b.load_view(pv, index, token, **attrs)
        if t.mutable:
            self.low.tokens[t.param] = tok
        return TileV(tile_v)

    def _store(self, t: TensorV, pv: Value, index: list[Value], value: LVal,
               tile_shape: tuple[int, ...], span: K.Span,
               hints: dict[str, dict[str, int | bool]] | None = None) -> LVal:
        # A store converts to the tensor's element type, as an assignment into a numpy
        # array or Triton's `tl.store` does (round to nearest even; floats to ints toward
        # zero), so the checker has no element types to know.
        v = self.arith.convert(self.tile_arg(value, span, t.dtype), t.dtype)
        if v.shape != tile_shape:
            if broadcast_shapes(v.shape, tile_shape) != tile_shape:
                raise self.err(
                    "CT3044", f"storing a tile of shape {list(v.shape)} into tiles of shape "
                    f"{list(tile_shape)}", span, "shapes differ",
                    help="store a tile of the partition's tile shape (or one that broadcasts "
                    "to it); `partition_mut` stores smaller sub-tiles",
                )
            v = self.arith.broadcast_to(v, tile_shape, span)
        token = self.low.tokens.get(t.param)
        attrs = {"optimization_hints": hints} if hints else {}
        self.low.tokens[t.param] = self.b.store_view(v.v, pv, index, token, **attrs)
        return ConstV(None)

    def m_mut_store(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        value = a["tile"]
        assert t.tile_shape is not None
        hints = self.memory_hints(a, span)
        pv = self.low.partition(t, t.tile_shape, None, span)
        if not a.given("index"):
            self.low.require_fact(span, "store")
            idx = self.low.own_index(t, span)
        else:
            idx = self.index_values(a["index"], t.rank, span)
            self.bounds_check(pv, idx, span, f"`{t.param}`")
        return self._store(t, pv, idx, value, t.tile_shape, span, hints)

    def m_mut_store_unchecked(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        """`z.store_unchecked(tile, index)` inside `unsafe`: a store at any tile index, with
        no proof and no device assert (the checker asks for neither). Run the kernel under
        the interpreter's race detector (`CUTILE_INTERPRET=check`) to test it."""
        assert t.tile_shape is not None
        hints = self.memory_hints(a, span)
        pv = self.low.partition(t, t.tile_shape, None, span)
        return self._store(t, pv, self.index_values(a["index"], t.rank, span), a["tile"],
                           t.tile_shape, span, hints)

    def m_mut_load(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        assert t.tile_shape is not None
        hints = self.memory_hints(a, span)
        pv = self.low.partition(t, t.tile_shape, "zero", span)
        if not a.given("index"):
            # the checker's `load-own-tile` fact (a persistent output has no own tile)
            self.low.require_fact(span, "load")
            idx = self.low.own_index(t, span)
        else:
            idx = self.index_values(a["index"], t.rank, span)
            self.bounds_check(pv, idx, span, f"`{t.param}`")
        return self._load(t, pv, idx, span, hints)

    def m_mut_partition_mut(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        shape = self.shape_const(a["shape"], span)
        assert t.tile_shape is not None
        if len(shape) != t.rank or any(
            s < 1 or s > d or d % s for s, d in zip(shape, t.tile_shape, strict=True)
        ):
            raise self.err("CT3045", f"sub-tiles {list(shape)} do not divide the tile "
                           f"{list(t.tile_shape)} of `{t.param}`", span, "sub-partition shape",
                           help="choose a sub-tile shape whose extents divide the tile's")
        return SubPartitionV(t, shape)

    def _sub_index(self, p: SubPartitionV, index: LVal, span: K.Span) -> list[Value]:
        sub = self.index_values(index, p.parent.rank, span)
        own = self.low.own_index(p.parent, span)
        assert p.parent.tile_shape is not None
        self.low.require_fact(span, "sub-tile access")
        path = self.low.doc.files[span.file].path
        if self.low.needs_device_check():
            zero = self.b.constant(0, scalar(dt.i32))
            for axis, (s, full, part) in enumerate(
                zip(sub, p.parent.tile_shape, p.tile_shape, strict=True)
            ):
                n = self.b.constant(full // part, scalar(dt.i32))
                ok = self.b.binary("andi", self.b.cmp("cmpi", "greater_than_or_equal", s, zero),
                                   self.b.cmp("cmpi", "less_than", s, n))
                self.b.assert_(ok, f"{path}:{span.line}: sub-tile index on axis {axis} is "
                                   "outside the block's own tile")
        out = []
        for o, s, full, part in zip(own, sub, p.parent.tile_shape, p.tile_shape, strict=True):
            ratio = self.b.constant(full // part, scalar(dt.i32))
            out.append(self.b.binary("addi", self.b.binary("muli", o, ratio), s))
        return out

    def _sub_inside(self, p: SubPartitionV, pv: Value, index: list[Value]) -> Value | None:
        """Whether a sub-tile lies in the tensor's index space of sub-tiles. The own tile of
        the last block of a ragged tensor can hold sub-tiles wholly past the end (tile 8,
        sub-tiles 4, 12 elements: the last block's second sub-tile): such a sub-tile reads
        as padding and writes nothing, as the ragged part of a tile does, rather than
        indexing outside the partition (undefined in Tile IR). `None` when every sub-tile
        is the whole tile, which is always inside."""
        assert p.parent.tile_shape is not None
        if p.tile_shape == p.parent.tile_shape:
            return None
        counts = self.b.get_index_space_shape(pv)
        inside: Value | None = None
        for i, n, full, part in zip(index, counts, p.parent.tile_shape, p.tile_shape,
                                    strict=True):
            if full == part:
                continue
            ok = self.b.cmp("cmpi", "less_than", i, n)
            inside = ok if inside is None else self.b.binary("andi", inside, ok)
        return inside

    def m_sub_store(self, p: SubPartitionV, a: Bound, span: K.Span) -> LVal:
        value = a["tile"]
        index = a["index"]
        hints = self.memory_hints(a, span)
        pv = self.low.partition(p.parent, p.tile_shape, None, span)
        idx = self._sub_index(p, index, span)
        inside = self._sub_inside(p, pv, idx)
        if inside is None:
            return self._store(p.parent, pv, idx, value, p.tile_shape, span, hints)
        t = p.parent
        before = self.low.tokens.get(t.param)
        if before is None:
            before = self.b.make_token()
        with self.b.if_(inside, [before.type]) as branch:
            with branch.then_():
                self.low.tokens[t.param] = before
                self._store(t, pv, idx, value, p.tile_shape, span, hints)
                self.b.yield_([self.low.tokens[t.param]])
            with branch.else_():
                self.b.yield_([before])
        self.low.tokens[t.param] = branch.results[0]
        return ConstV(None)

    def m_sub_load(self, p: SubPartitionV, a: Bound, span: K.Span) -> LVal:
        index = a["index"]
        pv = self.low.partition(p.parent, p.tile_shape, "zero", span)
        idx = self._sub_index(p, index, span)
        inside = self._sub_inside(p, pv, idx)
        hints = self.memory_hints(a, span)
        if inside is None:
            return self._load(p.parent, pv, idx, span, hints)
        t = p.parent
        before = self.low.tokens.get(t.param)
        if before is None:
            before = self.b.make_token()
        tile_ty = TileType(p.tile_shape, t.dtype)
        with self.b.if_(inside, [tile_ty, before.type]) as branch:
            with branch.then_():
                self.low.tokens[t.param] = before
                loaded = self._load(t, pv, idx, span, hints)
                self.b.yield_([loaded.v, self.low.tokens[t.param]])
            with branch.else_():
                pad = self.arith.const_tile(0, t.dtype, p.tile_shape)
                self.b.yield_([pad.v, before])
        self.low.tokens[t.param] = branch.results[1]
        return TileV(branch.results[0])

    def m_tensor_load_tile(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        shape = self.shape_const(a["shape"], span)
        index = a["index"]
        padding = self.padding_arg(a["padding"], span)
        pv = self.low.partition(t, shape, padding, span)
        idx = self.index_values(index, t.rank, span)
        self.bounds_check(pv, idx, span, f"`{t.param}`")
        return self._load(t, pv, idx, span, self.memory_hints(a, span))

    m_mut_load_tile = m_tensor_load_tile

    def m_mut_iter_indices(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        group = self.int_const(a["group"], span,
                               "the group size")
        if group < 1:
            raise self.err("CT3050", f"group size must be >= 1, got {group}", span, "group",
                           help="`group` is how many rows of tiles a swizzle group takes; 1 "
                           "walks them in order")
        if t.rank > 3:
            raise self.err("CT3021", "a mapped partition has at most 3 dimensions", span,
                           "rank")
        return MappedRangeV(t, group)

    def m_tensor_store(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        raise self.err("CT1001", f"`{t.param}` is shared and read-only", span, "write here",
                       help="declare it `Mut[Tensor[...]]` to write its tiles")

"""Index ranges and pieces of tiles: `arange(start, stop, step)`, `extract`, `cat`, and
static tile slicing `t[a:b]`, `t[:, a:b]`, `t[i]` (Tile IR `extract`, `cat`, `reshape`)."""

from __future__ import annotations

import math

from ... import dtypes as dt
from ...frontend import kast as K
from ...ir import Value, scalar
from ..arith import is_pow2
from ..values import ConstV, LVal, SliceV, TileV, TupleV
from .base import Bound, OpsBase

# An unaligned slice (`t[2:10]`) is cut into aligned pieces and joined; past this many
# pieces it is refused rather than compiled into a long chain of extracts.
MAX_PIECES = 16


def _number(v: LVal | None) -> int | float | None:
    if isinstance(v, ConstV) and isinstance(v.value, (int, float)) and not isinstance(
            v.value, bool):
        return v.value
    return None


class SliceOps(OpsBase):
    # ------------------------------------------------------------------ arange

    def f_arange(self, a: Bound, span: K.Span) -> LVal:
        start, stop, step = (_number(a[n]) for n in ("start", "stop", "step"))
        if start is None or stop is None or step is None:
            raise self.err("CT3034", "`arange` bounds must be compile-time numbers", span,
                           "not a constant", help="add a runtime offset afterwards: "
                           "`arange(0, B) + off`")
        exact = all(isinstance(v, int) for v in (start, stop, step))
        d = self.dtype_arg(a["dtype"], span) if a.given("dtype") else (
            dt.i32 if exact else dt.f32)
        if step == 0:
            raise self.err("CT3070", "`arange` needs a step other than 0", span, "step 0")
        if d.is_bool:
            raise self.err("CT3070", "`arange` makes numbers, not booleans", span, "dtype")
        if not exact and not d.is_float:
            raise self.err("CT3070", f"`arange` with float bounds makes floats, not "
                           f"`{d.name}`", span, "float bounds",
                           help="use integer bounds, or a float dtype")
        if exact:
            n = len(range(int(start), int(stop), int(step)))
        else:
            n = max(0, math.ceil((stop - start) / step))
        if not is_pow2(n):
            raise self.err("CT3070", f"`arange` makes {n} elements; a tile has a power-of-two "
                           "size", span, "length", help="choose bounds whose length "
                           "`ceil((stop - start) / step)` is 1, 2, 4, 8, ...")
        self._check_shape((n,), span)
        if not exact:
            return self._float_range(float(start), float(step), n, d)
        last = int(start) + (n - 1) * int(step)
        wide = d if d.is_int and d.bits >= 32 else (dt.i64 if max(
            abs(int(start)), abs(last)) > 2**31 - 1 else dt.i32)
        target = wide if d.is_float else d
        for v in (int(start), last):
            lo, hi = -(2 ** (target.bits - 1)), 2 ** (target.bits - 1) - 1
            if not lo <= v <= hi:
                raise self.err("CT3070", f"`arange` reaches {v}, which `{target.name}` does "
                               "not hold", span, "out of range")
        t = TileV(self.b.iota(n, wide))
        if step != 1:
            t = TileV(self.b.binary("muli", t.v, self.arith.const_tile(step, wide, (n,)).v))
        if start != 0:
            t = TileV(self.b.binary("addi", t.v, self.arith.const_tile(start, wide, (n,)).v))
        return self.arith.convert(t, d)

    def _float_range(self, start: float, step: float, n: int, d: dt.DType) -> TileV:
        """`start + i * step`, computed in f32 (f64 for an f64 tile), then rounded to `d`."""
        c = dt.f64 if d == dt.f64 else dt.f32
        i = self.arith.convert(TileV(self.b.iota(n, dt.i32)), c)
        t = self.b.binary("mulf", i.v, self.arith.const_tile(step, c, (n,)).v)
        t = self.b.binary("addf", t, self.arith.const_tile(start, c, (n,)).v)
        return self.arith.convert(TileV(t), d)

    # ------------------------------------------------------------------ extract

    def f_extract(self, a: Bound, span: K.Span) -> LVal:
        return self._extract(self.tile_arg(a["x"], span), a, span)

    def m_tile_extract(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._extract(t, a, span)

    def _extract(self, x: TileV, a: Bound, span: K.Span) -> LVal:
        shape = self.shape_const(a["shape"], span, "the sub-tile shape")
        if len(shape) != len(x.shape) or any(
                s < 1 or d % s for s, d in zip(shape, x.shape, strict=True)):
            raise self.err("CT3073", f"sub-tiles {list(shape)} do not divide the tile "
                           f"{list(x.shape)}", span, "sub-tile shape",
                           help="give one extent per axis, each dividing the tile's")
        index = a["index"]
        items = index.items if isinstance(index, TupleV) else (index,)
        if len(items) != len(x.shape):
            raise self.err("CT3073", f"the index has {len(items)} entries; the tile has rank "
                           f"{len(x.shape)}", span, "index")
        idx: list[Value] = []
        for axis, (it, s, total) in enumerate(zip(items, shape, x.shape, strict=True)):
            count = total // s
            if isinstance(it, ConstV) and isinstance(it.value, int) and not isinstance(
                    it.value, bool):
                if not -count <= it.value < count:
                    raise self.err("CT3073", f"sub-tile {it.value} does not exist on axis "
                                   f"{axis} (there are {count})", span, "index",
                                   help=f"sub-tiles on axis {axis} are numbered 0 to "
                                   f"{count - 1}")
                idx.append(self._i32(it.value % count))
            elif isinstance(it, TileV) and it.shape == () and it.dtype.is_int:
                # A runtime index is taken modulo the (power-of-two) count: never out of
                # bounds, and -1 is the last sub-tile, as a constant index reads.
                i = self.arith.convert(it, dt.i32).v
                idx.append(self.b.binary("andi", i, self._i32(count - 1)))
            else:
                raise self.err("CT3073", "sub-tile indices are integers", span, "index")
        self._check_shape(shape, span)
        return TileV(self.b.extract(x.v, idx, shape))

    def _i32(self, v: int) -> Value:
        return self.b.constant(v, scalar(dt.i32))

    # ------------------------------------------------------------------ cat

    def f_cat(self, a: Bound, span: K.Span) -> LVal:
        tiles_v = a["tiles"]
        items = tiles_v.items if isinstance(tiles_v, TupleV) else (tiles_v,)
        if not items or not all(isinstance(t, TileV) for t in items):
            raise self.err("CT3072", "`cat` joins a tuple of tiles", span, "tiles",
                           help="write `cat((a, b), axis)`")
        tiles = [t for t in items if isinstance(t, TileV)]
        rank = len(tiles[0].shape)
        axis = self.int_const(a["axis"], span, "the axis")
        if not -rank <= axis < rank:
            raise self.err("CT3046", f"axis {axis} out of range for a rank-{rank} tile", span,
                           "axis")
        axis %= rank
        for t in tiles:
            if len(t.shape) != rank or any(
                    x != y for i, (x, y) in enumerate(zip(t.shape, tiles[0].shape, strict=True))
                    if i != axis):
                raise self.err("CT3072", f"tiles of shapes {[list(t.shape) for t in tiles]} "
                               f"do not line up along axis {axis}", span, "tiles",
                               help="all axes but the joined one must be equal")
        d = tiles[0].dtype
        for t in tiles[1:]:
            d = self.arith.promote(d, t.dtype, span)
        # Join equal neighbours pairwise (a binary counter): every cat makes a tile of a
        # power-of-two size, as Tile IR requires.
        stack: list[TileV] = []
        for t in tiles:
            stack.append(self.arith.convert(t, d))
            while len(stack) > 1 and stack[-1].shape[axis] == stack[-2].shape[axis]:
                right = stack.pop()
                left = stack.pop()
                stack.append(TileV(self.b.cat(left.v, right.v, axis)))
        if len(stack) != 1:
            sizes = [t.shape[axis] for t in tiles]
            raise self.err("CT3072", f"tiles of sizes {sizes} along axis {axis} cannot be "
                           "joined into power-of-two tiles", span, "tiles",
                           help="join equal tiles pairwise, e.g. sizes 4, 4, 8")
        return stack[0]

    # ------------------------------------------------------------------ slicing

    def f_py_slice(self, a: Bound, span: K.Span) -> LVal:
        def part(name: str) -> LVal | None:
            return a[name] if a.given(name) else None

        return SliceV(part("start"), part("stop"), part("step"))

    def subscript(self, base: LVal, idx: LVal, span: K.Span) -> LVal:
        if isinstance(base, TupleV) and isinstance(idx, SliceV):
            start, stop, step = (self._bound(p, span) for p in (idx.start, idx.stop, idx.step))
            if step == 0:
                raise self.err("CT3071", "slice step cannot be zero", span, "step")
            return TupleV(base.items[slice(start, stop, step)])
        if not isinstance(base, TileV):
            raise self.err("CT3018", "only tuples and tiles can be indexed in kernels", span,
                           "not indexable")
        return self._slice_tile(base, idx, span)

    def _bound(self, v: LVal | None, span: K.Span) -> int | None:
        if v is None or (isinstance(v, ConstV) and v.value is None):
            return None
        if isinstance(v, ConstV) and isinstance(v.value, int) and not isinstance(v.value, bool):
            return v.value
        raise self.err("CT3071", "slice bounds must be compile-time integers", span,
                       "not a constant", help="use `extract(t, index, shape)` for a sub-tile "
                       "at a runtime index")

    def _slice_tile(self, x: TileV, idx: LVal, span: K.Span) -> LVal:
        items = idx.items if isinstance(idx, TupleV) else (idx,)
        used = [it for it in items if not (isinstance(it, ConstV) and it.value is None)]
        if len(used) > len(x.shape):
            raise self.err("CT3071", f"{len(used)} indices for a tile of rank {len(x.shape)}",
                           span, "too many indices")
        shape: list[int] = []  # the result's shape, new axes (None) included
        axis = 0
        for it in items:
            if isinstance(it, ConstV) and it.value is None:
                shape.append(1)
                continue
            n = x.shape[axis]
            if isinstance(it, SliceV):
                start, stop, step = (self._bound(p, span) for p in (it.start, it.stop, it.step))
                if step is not None and step <= 0:
                    raise self.err("CT3071", f"slice step {step}: tiles are sliced forward",
                                   span, "step", help="use a positive step")
                first, _, stride = slice(start, stop, step).indices(n)
                length = len(range(*slice(start, stop, step).indices(n)))
                if not is_pow2(length):
                    raise self.err("CT3071", f"this slice has {length} elements on axis "
                                   f"{axis}; a tile has a power-of-two size", span, "length",
                                   help="slice 1, 2, 4, 8, ... elements")
                x = self._take(x, axis, first, length, stride, span)
                shape.append(length)
            elif isinstance(it, ConstV) and isinstance(it.value, int) and not isinstance(
                    it.value, bool):
                if not -n <= it.value < n:
                    raise self.err("CT3071", f"index {it.value} is out of range for axis "
                                   f"{axis} of size {n}", span, "index")
                x = self._take(x, axis, it.value % n, 1, 1, span)
            else:
                raise self.err("CT3071", "tile indices are compile-time integers, slices "
                               "`a:b` or None", span, "index",
                               help="use `extract(t, index, shape)` for a runtime index")
            axis += 1
        shape += list(x.shape[axis:])
        return TileV(self.b.reshape(x.v, tuple(shape)))

    def _take(self, x: TileV, axis: int, start: int, length: int, step: int, span: K.Span
              ) -> TileV:
        """Elements start, start + step, ... (`length` of them) along `axis`."""
        n = x.shape[axis]
        if length == 1:
            step = 1
        if step > 1:
            if not is_pow2(step):
                raise self.err("CT3071", f"slice step {step} is not a power of two", span,
                               "step", help="use a step of 1, 2, 4, ...")
            # [n] -> [n/step, step]: the elements of one residue are a column.
            rows = n // step
            split = (*x.shape[:axis], rows, step, *x.shape[axis + 1:])
            t = self.b.reshape(x.v, split)
            col = (*x.shape[:axis], rows, 1, *x.shape[axis + 1:])
            index = [0] * len(split)
            index[axis + 1] = start % step
            t = self.b.extract(t, [self._i32(i) for i in index], col)
            x = TileV(self.b.reshape(t, (*x.shape[:axis], rows, *x.shape[axis + 1:])))
            return self._take(x, axis, start // step, length, 1, span)
        if start == 0 and length == n:
            return x
        # Aligned pieces of `piece` elements: one extract when `start` is a multiple of the
        # length, else the largest power of two dividing `start`, joined pairwise.
        piece = min(length, start & -start) if start else length
        if length // piece > MAX_PIECES:
            raise self.err("CT3071", f"slicing {length} elements from {start} takes "
                           f"{length // piece} pieces", span, "unaligned slice",
                           help=f"start at a multiple of the length (at most {MAX_PIECES} "
                           "aligned pieces are joined)")
        parts = []
        for k in range(length // piece):
            index = [0] * len(x.shape)
            index[axis] = start // piece + k
            shape = (*x.shape[:axis], piece, *x.shape[axis + 1:])
            parts.append(self.b.extract(x.v, [self._i32(i) for i in index], shape))
        while len(parts) > 1:
            parts = [self.b.cat(parts[i], parts[i + 1], axis) for i in range(0, len(parts), 2)]
        return TileV(parts[0])


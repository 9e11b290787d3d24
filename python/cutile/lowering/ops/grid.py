"""Python builtins in kernels (range, min, max, abs, int, float, len) and the grid:
block ids, block counts, cdiv and tile counts."""

from __future__ import annotations

from ... import dtypes as dt
from ...frontend import kast as K
from ...ir import Value
from ..values import ConstV, LVal, RangeV, TensorV, TileV, TupleV
from .base import Bound, OpsBase


class GridOps(OpsBase):
    # ------------------------------------------------------------------ python builtins

    def f_py_range(self, a: Bound, span: K.Span) -> LVal:
        step = a["step"]
        if isinstance(step, ConstV) and (not isinstance(step.value, int) or step.value <= 0):
            raise self.err("CT3039", "range step must be a positive integer", span, "step",
                           help="a kernel's `range` counts up by a constant step of 1 or more")
        return RangeV(a["start"], a["stop"], step)

    def _minmax(self, which: str, a: Bound, span: K.Span) -> LVal:
        values = a["values"]
        args = list(values.items) if isinstance(values, TupleV) else [values]
        if len(args) < 2:
            raise self.err("CT3039", f"{which}() needs at least two values in a kernel", span,
                           which, help=f"for a reduction over a tile use `cutile.core.{which}`")
        acc = args[0]
        for v in args[1:]:
            acc = self._elementwise_minmax(which, acc, v, span)
        return acc

    def f_py_min(self, a: Bound, span: K.Span) -> LVal:
        return self._minmax("min", a, span)

    def f_py_max(self, a: Bound, span: K.Span) -> LVal:
        return self._minmax("max", a, span)

    def f_py_abs(self, a: Bound, span: K.Span) -> LVal:
        x = a["x"]
        if isinstance(x, ConstV) and isinstance(x.value, (int, float)):
            return ConstV(abs(x.value))
        t = self.tile_arg(x, span)
        self.arith.no_f8(t, span, "`abs`")
        if t.dtype.unsigned:  # already its own magnitude
            return t
        return TileV(self.b.unary("absf" if t.dtype.is_float else "absi", t.v))

    def f_py_int(self, a: Bound, span: K.Span) -> LVal:
        x = a["x"]
        if isinstance(x, ConstV) and isinstance(x.value, (int, float, bool, str)):
            try:
                return ConstV(self.arith.const_int_fits(int(x.value), span))
            except OverflowError:
                raise self.err("CT3003", f"int({x.value!r}) is not a finite number", span,
                               "here", help="`int()` of a constant takes a finite number"
                               ) from None
            except ValueError:
                raise self.err("CT3003", f"int({x.value!r}) is not a number", span,
                               "here", help="`int()` of a constant takes a number or the "
                               "text of one") from None
        return self.arith.convert(self.tile_arg(x, span), dt.i32)

    def f_py_float(self, a: Bound, span: K.Span) -> LVal:
        x = a["x"]
        if isinstance(x, ConstV) and isinstance(x.value, (int, float, bool, str)):
            try:
                return ConstV(float(x.value))
            except ValueError:
                raise self.err("CT3003", f"float({x.value!r}) is not a number", span,
                               "here", help="`float()` of a constant takes a number or the "
                               "text of one") from None
        return self.arith.convert(self.tile_arg(x, span), dt.f32)

    def f_py_len(self, a: Bound, span: K.Span) -> LVal:
        x = a["x"]
        if isinstance(x, TupleV):
            return ConstV(len(x.items))
        if isinstance(x, TileV) and x.shape:
            return ConstV(x.shape[0])
        raise self.err("CT3039", "len() of this value is not known at compile time", span, "len")

    # ------------------------------------------------------------------ grid

    def _axis_or_all(self, a: Bound, span: K.Span, vals: tuple[Value, Value, Value]) -> LVal:
        if not a.given("axis"):
            return TupleV(tuple(TileV(v) for v in vals))
        axis = self.int_const(a["axis"], span, "the axis")
        if axis not in (0, 1, 2):
            raise self.err("CT3040", f"grid axis {axis} does not exist (0, 1 or 2)", span,
                           "axis", help="the grid has at most three axes, one per output "
                           "dimension")
        return TileV(vals[axis])

    def f_block_id(self, a: Bound, span: K.Span) -> LVal:
        assert self.low.block_ids is not None
        return self._axis_or_all(a, span, self.low.block_ids)

    def f_num_blocks(self, a: Bound, span: K.Span) -> LVal:
        return self._axis_or_all(a, span, self.b.num_blocks())

    def f_cdiv(self, a: Bound, span: K.Span) -> LVal:
        return self._cdiv(a["a"], a["b"], span)

    def _cdiv(self, x: LVal, y: LVal, span: K.Span) -> LVal:
        if isinstance(x, ConstV) and isinstance(y, ConstV):
            d = int(y.value) or 1  # type: ignore[arg-type]  # a zero divisor reads as 1
            return ConstV(-(-int(x.value) // d))  # type: ignore[arg-type]
        # x // y + (x % y != 0): no intermediate can wrap (the checker counts on it, where
        # (x + y - 1) // y would overflow for x near the top of its type).
        q = self.arith.binop("floordiv", x, y, span)
        r = self.arith.binop("mod", x, y, span)
        nonzero = self.arith.compare("ne", r, ConstV(0), span)
        assert isinstance(q, TileV) and isinstance(nonzero, TileV)
        return self.arith.binop("add", q, self.arith.convert(nonzero, q.dtype), span)

    def f_num_tiles(self, a: Bound, span: K.Span) -> LVal:
        t = a["tensor"]
        axis = self.int_const(a["axis"], span, "the axis")
        if not isinstance(t, TensorV):
            raise self.err("CT3041", "num_tiles needs a tensor parameter", span, "tensor")
        if a.given("shape"):
            shape = self.shape_const(a["shape"], span)
        elif t.tile_shape is not None:
            shape = t.tile_shape  # a `Mut` output: its own partition's tiles
        else:
            raise self.err("CT3041", f"`num_tiles({t.param}, ...)` needs the tile shape", span,
                           "num_tiles", help="pass `shape=(...)`")
        if not 0 <= axis < t.rank or len(shape) != t.rank:
            raise self.err("CT3041", "axis or shape does not match the tensor's rank", span,
                           "num_tiles")
        return self._cdiv(t.shape[axis], ConstV(shape[axis]), span)

    # ------------------------------------------------------------------ memory

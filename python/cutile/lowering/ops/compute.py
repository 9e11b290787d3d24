"""Tile values: creation, elementwise math, where/maximum/minimum/pow/atan2/fma/isnan and
reductions."""

from __future__ import annotations

import math

import numpy as np

from ... import dtypes as dt
from ...frontend import kast as K
from ...ir import Block, TileType, Value, scalar
from ..arith import broadcast_shapes, sign
from ..values import ConstV, LVal, TileV
from .base import REDUCE_IDENTITY, Bound
from .modes import ModeOps


class ComputeOps(ModeOps):
    # ------------------------------------------------------------------ creation

    def f_full(self, a: Bound, span: K.Span) -> LVal:
        return self._full(a["shape"], a["value"], a["dtype"], span)

    def _full(self, shape_v: LVal, value: LVal, dtype_v: LVal, span: K.Span) -> LVal:
        shape = self.shape_const(shape_v, span)
        d = self.dtype_arg(dtype_v, span)
        self._check_shape(shape, span)
        if isinstance(value, ConstV) and isinstance(value.value, (int, float, bool)):
            return self.arith.const_tile(value.value, d, shape, span)
        t = self.arith.convert(self.tile_arg(value, span, d), d)
        return self.arith.broadcast_to(t, shape, span)

    def f_zeros(self, a: Bound, span: K.Span) -> LVal:
        return self._full(a["shape"], ConstV(0), a["dtype"], span)

    def f_ones(self, a: Bound, span: K.Span) -> LVal:
        return self._full(a["shape"], ConstV(1), a["dtype"], span)

    # ------------------------------------------------------------------ elementwise

    def math(self, name: str, a: Bound, span: K.Span) -> LVal:
        t = self.tile_arg(a["x"], span)
        self.arith.no_f8(t, span, f"`{name}`")
        if not t.dtype.is_float:
            t = self.arith.convert(t, dt.f32)
        return TileV(self.b.unary(name, t.v, **self.mode_attrs(name, a, t, span)))

    def f_where(self, a: Bound, span: K.Span) -> LVal:
        x, y = self.arith.unify(a["a"], a["b"], span)
        cond = self.arith.convert(self.tile_arg(a["cond"], span, dt.bool_), dt.bool_)
        shape = broadcast_shapes(cond.shape, x.shape)
        if shape is None:
            raise self.err("CT3002", "condition and values do not broadcast", span, "where")
        cond = self.arith.broadcast_to(cond, shape, span)
        x = self.arith.broadcast_to(x, shape, span)
        y = self.arith.broadcast_to(y, shape, span)
        return TileV(self.b.select(cond.v, x.v, y.v))

    def f_maximum(self, a: Bound, span: K.Span) -> LVal:
        return self._elementwise_minmax("max", a["a"], a["b"], span)

    def f_minimum(self, a: Bound, span: K.Span) -> LVal:
        return self._elementwise_minmax("min", a["a"], a["b"], span)

    def f_pow(self, a: Bound, span: K.Span) -> LVal:
        return self.arith.binop("pow", a["a"], a["b"], span)

    def f_atan2(self, a: Bound, span: K.Span) -> LVal:
        y, x = self.arith.unify(a["y"], a["x"], span)
        self.arith.no_f8(y, span, "`atan2`")
        if not y.dtype.is_float:
            y, x = self.arith.convert(y, dt.f32), self.arith.convert(x, dt.f32)
        return TileV(self.b.op("atan2", [y.v, x.v], [y.type]).result)

    def f_fma(self, a: Bound, span: K.Span) -> LVal:
        x, y = self.arith.unify(a["a"], a["b"], span)
        x, z = self.arith.unify(x, a["c"], span)
        y, _ = self.arith.unify(y, z, span)
        self.arith.no_f8(x, span, "`fma`")
        if x.dtype.is_float:
            return TileV(self.b.fma(x.v, y.v, z.v))
        if x.dtype.is_bool:
            raise self.err("CT3005", "`fma` on booleans", span, "bool operands")
        return TileV(self.b.binary("addi", self.b.binary("muli", x.v, y.v), z.v))

    def f_isnan(self, a: Bound, span: K.Span) -> LVal:
        v = a["x"]
        if isinstance(v, ConstV) and isinstance(v.value, (int, float)):
            return ConstV(math.isnan(v.value))
        x = self.tile_arg(v, span)
        if not x.dtype.is_float:
            return self.arith.const_tile(False, dt.bool_, x.shape)
        if x.dtype.is_f8:  # exact in f32, which compares
            x = self.arith.convert(x, dt.f32)
        # NaN is the one value unequal to itself (an unordered compare is true on NaN).
        return TileV(self.b.cmp("cmpf", "not_equal", x.v, x.v, comparison_ordering="unordered"))

    # ------------------------------------------------------------------ reductions

    def _reduce(self, kind: str, x_v: LVal, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(x_v, span)
        self.arith.no_f8(x, span, f"`{kind}`")
        keep = a["keepdims"]
        if not isinstance(keep, ConstV) or not isinstance(keep.value, bool):
            raise self.err("CT3034", "keepdims must be a compile-time bool", span, "keepdims")
        keepdims = keep.value
        if not a.given("axis"):
            axes = list(range(len(x.shape)))
        else:
            axis = self.int_const(a["axis"], span, "the axis")
            if not -len(x.shape) <= axis < len(x.shape):
                raise self.err("CT3046", f"axis {axis} out of range for a rank-{len(x.shape)} "
                               "tile", span, "axis", help=f"axes go from -{len(x.shape)} to "
                               f"{len(x.shape) - 1}")
            axes = [axis % len(x.shape)]
        # Sums of f16 and bf16 accumulate in f32 and round once at the end; the result
        # keeps the tile's dtype, as cuTile Python's `sum` does.
        wide = kind == "sum" and x.dtype in (dt.f16, dt.bf16)
        result = self.arith.convert(x, dt.f32) if wide else x
        for axis in sorted(axes, reverse=True):
            result = self._reduce_axis(kind, result, axis)
        result = self.arith.convert(result, x.dtype)
        if keepdims:
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
            result = TileV(self.b.reshape(result.v, shape))
        return result

    def _reduce_axis(self, kind: str, x: TileV, axis: int) -> TileV:
        d = x.dtype
        elem = scalar(d)
        body = Block(args=[Value(elem, "lhs"), Value(elem, "rhs")])
        combine = {
            "sum": "addf" if d.is_float else "addi",
            "prod": "mulf" if d.is_float else "muli",
            "max": "maxf" if d.is_float else "maxi",
            "min": "minf" if d.is_float else "mini",
        }[kind]
        with self.b.at(body):
            if combine in ("maxf", "minf"):
                r = self.b.op(combine, body.args, [elem],
                              {"propagate_nan": False, "flush_to_zero": False}).result
            elif combine in ("maxi", "mini"):
                r = self.b.op(combine, body.args, [elem], {"signedness": sign(d)}).result
            else:
                r = self.b.binary(combine, body.args[0], body.args[1])
            self.b.op("yield", [r], [])
        shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
        identity = np.asarray(REDUCE_IDENTITY[kind](d), dtype=d.numpy if d.numpy_name else
                              np.float32)
        op = self.b.op("reduce", [x.v], [TileType(shape, d)],
                       {"dim": axis, "identities": [identity]}, [body])
        return TileV(op.result)

    def f_sum(self, a: Bound, span: K.Span) -> LVal:
        return self._reduce("sum", a["x"], a, span)

    def f_max(self, a: Bound, span: K.Span) -> LVal:
        return self._reduce("max", a["x"], a, span)

    def f_min(self, a: Bound, span: K.Span) -> LVal:
        return self._reduce("min", a["x"], a, span)

    def f_prod(self, a: Bound, span: K.Span) -> LVal:
        return self._reduce("prod", a["x"], a, span)

    def m_tile_sum(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._reduce("sum", t, a, span)

    def m_tile_max(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._reduce("max", t, a, span)

    def m_tile_min(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._reduce("min", t, a, span)

    def m_tile_prod(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._reduce("prod", t, a, span)

"""Scans and reductions with a region body: cumsum/cumprod (Tile IR `scan`), argmax/argmin
(one `reduce` over (value, index) pairs) and `reduce` with a `@cutile.device` combiner
(its body inlined into the `reduce` region)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes as dt
from ...dtypes import DType
from ...frontend import kast as K
from ...ir import Block, Op, TileType, Value, scalar
from ..values import ConstV, LVal, TileV
from .base import Bound, OpsBase

I32_MAX = 2**31 - 1
# Ops a `reduce`/`scan` body may not hold: Tile IR allows only pure ops there, and a
# nested region (an `if`, a loop, another reduction) is not straight-line code.
_NOT_IN_BODY = frozenset({
    "load_view_tko", "store_view_tko", "load_ptr_tko", "store_ptr_tko", "atomic_rmw_tko",
    "atomic_cas_tko", "print_tko", "assert", "make_token", "join_tokens",
})
HINT_COMBINER = ("a combiner is straight-line code on its two scalars: assignments, "
                 "`where(c, a, b)` or `a if c else b` to choose, and a `return`")


def identity_value(value: Any, d: DType) -> Any:
    """A reduce/scan identity as the IR stores it (a host scalar of the element type)."""
    host = d.numpy if d.numpy_name else np.float32
    return np.asarray(value, dtype=host)


class ScanOps(OpsBase):
    # ------------------------------------------------------------------ arguments

    def _axis(self, a: Bound, rank: int, span: K.Span) -> int | None:
        """The `axis` argument: None when not given, else normalized into [0, rank)."""
        if not a.given("axis"):
            return None
        axis = self.int_const(a["axis"], span, "the axis")
        if not -rank <= axis < rank:
            raise self.err("CT3046", f"axis {axis} out of range for a rank-{rank} tile", span,
                           "axis")
        return axis % rank

    def _flag(self, a: Bound, name: str, span: K.Span) -> bool:
        v = a[name]
        if not isinstance(v, ConstV) or not isinstance(v.value, bool):
            raise self.err("CT3034", f"`{name}` must be a compile-time bool", span, name)
        return v.value

    def _counted(self, x_v: LVal, span: K.Span) -> TileV:
        """The operand of a scan or arg-reduction: booleans count as `i32` (as cuTile)."""
        x = self.tile_arg(x_v, span)
        self.arith.no_f8(x, span, "a scan or arg-reduction")
        return self.arith.convert(x, dt.i32) if x.dtype.is_bool else x

    # ------------------------------------------------------------------ cumsum, cumprod

    def _scan(self, kind: str, x_v: LVal, a: Bound, span: K.Span) -> LVal:
        x = self._counted(x_v, span)
        reverse = self._flag(a, "reverse", span)
        axis = self._axis(a, max(len(x.shape), 1), span)
        if axis is None or not x.shape:
            # numpy: without an axis the tile is flattened (row-major) first
            x = TileV(self.b.reshape(x.v, (int(np.prod(x.shape)),)))
            axis = 0
        d = x.dtype
        elem = scalar(d)
        body = Block(args=[Value(elem, "elem"), Value(elem, "acc")])
        combine = {"sum": "addf" if d.is_float else "addi",
                   "prod": "mulf" if d.is_float else "muli"}[kind]
        with self.b.at(body):
            self.b.yield_([self.b.binary(combine, body.args[1], body.args[0])])
        identity = identity_value(0 if kind == "sum" else 1, d)
        op = self.b.op("scan", [x.v], [x.type],
                       {"dim": axis, "reverse": reverse, "identities": [identity]}, [body])
        return TileV(op.result)

    def f_cumsum(self, a: Bound, span: K.Span) -> LVal:
        return self._scan("sum", a["x"], a, span)

    def f_cumprod(self, a: Bound, span: K.Span) -> LVal:
        return self._scan("prod", a["x"], a, span)

    def m_tile_cumsum(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._scan("sum", t, a, span)

    def m_tile_cumprod(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._scan("prod", t, a, span)

    # ------------------------------------------------------------------ argmax, argmin

    def _arg(self, which: str, x_v: LVal, a: Bound, span: K.Span) -> LVal:
        x = self._counted(x_v, span)
        keepdims = self._flag(a, "keepdims", span)
        rank = len(x.shape)
        axis = self._axis(a, max(rank, 1), span)
        if axis is None or not x.shape:
            kept: tuple[int, ...] = (1,) * rank
            x = TileV(self.b.reshape(x.v, (int(np.prod(x.shape)),)))
            axis = 0
        else:
            kept = tuple(1 if i == axis else s for i, s in enumerate(x.shape))
        n = x.shape[axis]
        along = tuple(n if i == axis else 1 for i in range(len(x.shape)))
        idx = self.b.broadcast(self.b.reshape(self.b.iota(n, dt.i32), along), x.shape)
        d = x.dtype
        if d.is_float:
            worst = -np.inf if which == "max" else np.inf
        else:
            lo, hi = -(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1
            if d.unsigned:
                lo, hi = 0, 2**d.bits - 1
            worst = lo if which == "max" else hi
        body = Block(args=[Value(scalar(d), "elem"), Value(scalar(d), "acc"),
                           Value(scalar(dt.i32), "elem_index"), Value(scalar(dt.i32), "acc_index")])
        with self.b.at(body):
            rv, lv, ri, li = body.args
            keep = self._first_wins(which, lv, rv, li, ri, d)
            self.b.yield_([self.b.select(keep, lv, rv), self.b.select(keep, li, ri)])
        out_shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
        op = self.b.op("reduce", [x.v, idx], [TileType(out_shape, d), TileType(out_shape, dt.i32)],
                       {"dim": axis, "identities": [identity_value(worst, d),
                                                    identity_value(I32_MAX, dt.i32)]}, [body])
        result = TileV(op.results[1])
        if keepdims:
            result = TileV(self.b.reshape(result.v, kept))
        return result

    def _first_wins(self, which: str, lv: Value, rv: Value, li: Value, ri: Value, d: DType
                    ) -> Value:
        """Whether (lv, li) beats (rv, ri): a better value, or an equal one at a smaller
        index (numpy's first index on ties). A NaN beats every number and two NaNs are
        equal, so the first NaN wins, as numpy's argmax and argmin return it."""
        b = self.b
        better = "greater_than" if which == "max" else "less_than"
        index_first = b.cmp("cmpi", "less_than", li, ri)
        if not d.is_float:
            wins = b.cmp("cmpi", better, lv, rv)
            same = b.cmp("cmpi", "equal", lv, rv)
            return b.binary("ori", wins, b.binary("andi", same, index_first))
        wins = b.cmp("cmpf", better, lv, rv)
        same = b.cmp("cmpf", "equal", lv, rv)
        l_nan = b.cmp("cmpf", "not_equal", lv, lv, comparison_ordering="unordered")
        r_nan = b.cmp("cmpf", "not_equal", rv, rv, comparison_ordering="unordered")
        true = self.arith.const_tile(True, dt.bool_).v
        wins = b.binary("ori", wins, b.binary("andi", l_nan, b.binary("xori", r_nan, true)))
        same = b.binary("ori", same, b.binary("andi", l_nan, r_nan))
        return b.binary("ori", wins, b.binary("andi", same, index_first))

    def f_argmax(self, a: Bound, span: K.Span) -> LVal:
        return self._arg("max", a["x"], a, span)

    def f_argmin(self, a: Bound, span: K.Span) -> LVal:
        return self._arg("min", a["x"], a, span)

    def m_tile_argmax(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._arg("max", t, a, span)

    def m_tile_argmin(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._arg("min", t, a, span)

    # ------------------------------------------------------------------ reduce(x, axis, f, id)

    def f_reduce(self, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(a["x"], span)
        keepdims = self._flag(a, "keepdims", span)
        combiner = a.nodes[a.sig.position("combiner")]
        if not isinstance(combiner, K.CallDevice):  # pragma: no cover - the frontend's
            raise self.err("CT9002", "`reduce` has no combiner", span, "reduce")
        identity = self._identity(a["identity"], x.dtype, span)
        rank = len(x.shape)
        axis = self._axis(a, max(rank, 1), span) if rank else None
        axes = list(range(rank)) if axis is None else [axis]
        result = x
        for ax in sorted(axes, reverse=True):  # the last axis first: row-major order
            result = self._reduce_with(combiner, result, ax, identity, span)
        if keepdims:
            result = TileV(self.b.reshape(
                result.v, tuple(1 if i in axes else s for i, s in enumerate(x.shape))))
        return result

    def _identity(self, v: LVal, d: DType, span: K.Span) -> Any:
        if not isinstance(v, ConstV) or not isinstance(v.value, (bool, int, float)):
            raise self.err("CT3074", "the identity of `reduce` must be a compile-time number",
                           span, "identity", help="e.g. 0 for a sum, -inf for a maximum")
        value = v.value
        if d.is_int:
            lo, hi = -(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1
            if not isinstance(value, int) or not lo <= value <= hi:
                raise self.err("CT3074", f"the identity {value!r} is not a `{d.name}` value",
                               span, "identity", help="give an integer the element type holds")
        return identity_value(value, d)

    def _reduce_with(self, combiner: K.CallDevice, x: TileV, axis: int, identity: Any,
                     span: K.Span) -> TileV:
        d = x.dtype
        body = Block(args=[Value(scalar(d), "elem"), Value(scalar(d), "acc")])
        with self.b.at(body):
            elem, acc = body.args
            got = self.low.inline_device(combiner, [TileV(acc), TileV(elem)])
            if isinstance(got, ConstV) and isinstance(got.value, (bool, int, float)):
                got = self.arith.const_tile(got.value, d, (), span)
            if not isinstance(got, TileV) or got.shape != () or got.dtype != d:
                what = f"a {got.type}" if isinstance(got, TileV) else "no scalar"
                raise self.err("CT3074", f"the combiner `{combiner.func}` returns {what}; "
                               f"reducing `{d.name}` elements needs a `{d.name}` scalar",
                               combiner.span, "combiner",
                               help="return one value of the element type (convert with "
                               "`.astype(...)`)")
            self.b.yield_([got.v])
        bad = _first_forbidden(body)
        if bad is not None:
            raise self.err("CT3074", f"the combiner `{combiner.func}` is not straight-line "
                           f"code (it needs a Tile IR `{bad.name}`)", combiner.span,
                           "combiner", help=HINT_COMBINER)
        out_shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
        op = self.b.op("reduce", [x.v], [TileType(out_shape, d)],
                       {"dim": axis, "identities": [identity]}, [body])
        return TileV(op.result)


def _first_forbidden(body: Block) -> Op | None:
    for op in body.ops:
        if op.regions or op.name in _NOT_IN_BODY:
            return op
    return None

"""Element-indexed memory operations: `gather` (shared inputs), `scatter` (unsafe) and the
atomic read-modify-writes (`Atomic` parameters, or any tensor inside `unsafe`).

Each becomes a tile of pointers, `base + sum(index_k * stride_k)`, and a mask that keeps
every lane inside the tensor (`0 <= index_k < shape[k]` on every axis): a gather's lanes
outside read the padding, a scatter's or an atomic's do nothing. So none of them needs a
bounds proof from the checker. Offsets are computed in 32 bits where they provably fit (a
1-D tensor with unit stride and 32-bit indices: the offset is the index, which the mask
bounds by an extent below 2^31), else in 64 bits.

Ordering: an atomic or a scatter threads its tensor's token (program order within a block,
as for an output's stores); a gather reads a shared input, which needs none.
"""

from __future__ import annotations

from ... import dtypes as dt
from ...dtypes import DType
from ...frontend import kast as K
from ...ir import Value
from ..arith import broadcast_shapes
from ..values import ConstV, LVal, TensorV, TileV, TupleV
from .base import PADDINGS, Bound, OpsBase

# DSL name -> (Tile IR mode for integers, for floats); None: not defined for that class.
RMW_MODES: dict[str, tuple[str | None, str | None]] = {
    "atomic_add": ("add", "addf"),
    "atomic_max": ("max", None),
    "atomic_min": ("min", None),
    "atomic_and": ("and", None),
    "atomic_or": ("or", None),
    "atomic_xor": ("xor", None),
    "atomic_xchg": ("xchg", "xchg"),
}
# Element types each operation takes (Tile IR's atomics: 32- and 64-bit words, and f16/bf16
# additions).
_WORDS = ("i32", "i64", "f32", "f64")
ATOMIC_DTYPES: dict[str, tuple[str, ...]] = {
    "atomic_add": (*_WORDS, "f16", "bf16"),
    "atomic_xchg": _WORDS,
    "atomic_cas": _WORDS,
}
MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = {"block": "tl_blk", "device": "device", "system": "sys"}
_PADDING_VALUES = {"zero": 0.0, "neg_zero": -0.0, "nan": float("nan"),
                   "pos_inf": float("inf"), "neg_inf": float("-inf")}


class AtomicOps(OpsBase):
    # ------------------------------------------------------------------ pointers and masks

    def _elements(self, t: LVal, indices: LVal, span: K.Span, what: str
                  ) -> tuple[TensorV, Value, Value, tuple[int, ...]]:
        """(tensor, pointer tile, in-bounds mask, shape) for `t[indices]`."""
        if not isinstance(t, TensorV) or t.base is None:
            raise self.err("CT3080", f"`{what}` takes a tensor parameter as its first argument",
                           span, "not a tensor")
        items = indices.items if isinstance(indices, TupleV) else (indices,)
        if len(items) != t.rank:
            raise self.err(
                "CT3080", f"`{what}` on the rank-{t.rank} tensor `{t.param}` needs "
                f"{t.rank} index tile{'s' * (t.rank != 1)}, got {len(items)}", span, "indices",
                help="pass one integer tile per axis, as a tuple: `(rows, cols)`")
        tiles: list[TileV] = []
        for it in items:
            tile = self.arith.to_tile(it, dt.i32, span) if not isinstance(it, TupleV) else None
            if tile is None or not tile.dtype.is_int:
                raise self.err("CT3080", f"the indices of `{what}` must be integer tiles",
                               span, "indices")
            tiles.append(tile)
        shape: tuple[int, ...] | None = ()
        for tile in tiles:
            shape = broadcast_shapes(shape, tile.shape) if shape is not None else None
        if shape is None:
            raise self.err("CT3002", f"the index tiles of `{what}` do not broadcast together",
                           span, "indices")
        self._check_shape(shape, span)
        unit = t.rank == 1 and t.strides[0] == 1
        wide = (not unit or self.low.index_dtype == dt.i64
                or any(x.dtype.bits > 32 for x in tiles))
        off_dt = dt.i64 if wide else dt.i32
        offset: TileV | None = None
        mask: Value | None = None
        zero = self.arith.const_tile(0, off_dt, shape)
        for k, tile in enumerate(tiles):
            idx = self.arith.broadcast_to(self.arith.convert(tile, off_dt), shape, span)
            extent = self._extent(t.shape[k], off_dt, shape, span)
            ok = self.b.binary("andi", self.b.cmp("cmpi", "greater_than_or_equal", idx.v, zero.v,
                                                  signedness="signed"),
                               self.b.cmp("cmpi", "less_than", idx.v, extent.v,
                                          signedness="signed"))
            mask = ok if mask is None else self.b.binary("andi", mask, ok)
            stride = t.strides[k]
            term = idx if stride == 1 else TileV(self.b.binary(
                "muli", idx.v, self._extent(stride, off_dt, shape, span).v))
            offset = term if offset is None else TileV(self.b.binary("addi", offset.v, term.v))
        if offset is None or mask is None:  # a rank-0 tensor, `()`: its one element
            offset, mask = zero, self.arith.const_tile(True, dt.bool_, shape).v
        base = t.base
        if shape:
            base = self.b.broadcast(self.b.reshape(base, (1,) * len(shape)), shape)
        return t, self.b.offset(base, offset.v), mask, shape

    def _extent(self, v: LVal | Value | int, to: DType, shape: tuple[int, ...],
                span: K.Span) -> TileV:
        """An extent or stride (an int, or a rank-0 integer value) as a tile of `shape`."""
        if isinstance(v, int):
            return self.arith.const_tile(v, to, shape, span)
        if isinstance(v, ConstV):
            return self.arith.const_tile(v.value, to, shape, span)
        tile = v if isinstance(v, TileV) else TileV(v) if isinstance(v, Value) else None
        if tile is None:
            raise self.err("CT3080", "an extent or stride that is not an integer", span)
        return self.arith.broadcast_to(self.arith.convert(tile, to), shape, span)

    def _values(self, v: LVal, dtype: DType, shape: tuple[int, ...], span: K.Span,
                what: str = "the indices'") -> Value:
        """An operand converted to the element type `dtype` (as a store converts) and
        broadcast to the indices' (or pointers') shape."""
        tile = self.arith.convert(self.tile_arg(v, span, dtype), dtype)
        if broadcast_shapes(tile.shape, shape) != shape:
            raise self.err("CT3002", f"a value of shape {list(tile.shape)} does not broadcast "
                           f"to {what} shape {list(shape)}", span, "value")
        return self.arith.broadcast_to(tile, shape, span).v

    def _padding(self, pad: LVal, dtype: DType, shape: tuple[int, ...], span: K.Span,
                 what: str = "the indices'") -> Value:
        """A load's padding (a padding name or a number) as a tile of `dtype` elements."""
        if isinstance(pad, ConstV) and isinstance(pad.value, str):
            if pad.value not in PADDINGS:
                raise self.err("CT3038", f"padding must be a number or one of "
                               f"{', '.join(PADDINGS)}", span, "padding")
            number = _PADDING_VALUES[pad.value]
            if not dtype.is_float and number != 0:
                raise self.err("CT3038", f"padding `{pad.value}` is not a value of "
                               f"`{dtype.name}` elements", span, "padding",
                               help="pass a number, e.g. `padding=-1`")
            pad = ConstV(number if dtype.is_float else 0)
        return self._values(pad, dtype, shape, span, what)

    def _token(self, key: str) -> Value:
        """The token that orders the accesses of `key` (a tensor parameter; the pointers)."""
        tok = self.low.tokens.get(key)
        return tok if tok is not None else self.b.make_token()

    # ------------------------------------------------------------------ gather / scatter

    def f_gather(self, a: Bound, span: K.Span) -> LVal:
        t, ptrs, mask, shape = self._elements(a["tensor"], a["indices"], span, "gather")
        padding = self._padding(a["padding"], t.dtype, shape, span)
        # A shared input (or, inside `unsafe`, anything): no token orders a read of it.
        token = self.low.tokens.get(t.param) if t.mutable or t.atomic else None
        value, tok = self.b.load_ptr(ptrs, mask, padding, token)
        if token is not None:
            self.low.tokens[t.param] = tok
        return TileV(value)

    def f_scatter(self, a: Bound, span: K.Span) -> LVal:
        t, ptrs, mask, shape = self._elements(a["tensor"], a["indices"], span, "scatter")
        value = self._values(a["value"], t.dtype, shape, span)
        self.low.tokens[t.param] = self.b.store_ptr(ptrs, value, mask, self._token(t.param))
        return ConstV(None)

    # ------------------------------------------------------------------ atomics

    def _ordering(self, a: Bound, span: K.Span) -> tuple[str, str]:
        order, scope = a["memory_order"], a["scope"]
        if not isinstance(order, ConstV) or order.value not in MEMORY_ORDERS:
            raise self.err("CT3081", f"memory_order must be one of {', '.join(MEMORY_ORDERS)}",
                           span, "memory order", help="`acq_rel` (the default) orders the "
                           "most; Tile IR has no `seq_cst`")
        if not isinstance(scope, ConstV) or scope.value not in SCOPES:
            raise self.err("CT3081", f"scope must be one of {', '.join(SCOPES)}", span,
                           "scope")
        return str(order.value), SCOPES[str(scope.value)]

    def _atomic_dtype(self, name: str, t: TensorV, span: K.Span) -> None:
        allowed = ATOMIC_DTYPES.get(name, ("i32", "i64"))
        if t.dtype.name not in allowed:
            raise self.err(
                "CT3080", f"`{name}` is not defined on `{t.dtype.name}` elements (`{t.param}`)",
                span, "element type", help=f"`{name}` takes {', '.join(allowed)} tensors")

    def _rmw(self, name: str, a: Bound, span: K.Span) -> LVal:
        t, ptrs, mask, shape = self._elements(a["tensor"], a["indices"], span, name)
        self._atomic_dtype(name, t, span)
        order, scope = self._ordering(a, span)
        int_mode, float_mode = RMW_MODES[name]
        mode = float_mode if t.dtype.is_float else int_mode
        assert mode is not None
        value = self._values(a["value"], t.dtype, shape, span)
        old, tok = self.b.atomic_rmw(ptrs, value, mode, mask, self._token(t.param), order,
                                     scope)
        self.low.tokens[t.param] = tok
        return TileV(old)

    def f_atomic_cas(self, a: Bound, span: K.Span) -> LVal:
        t, ptrs, mask, shape = self._elements(a["tensor"], a["indices"], span, "atomic_cas")
        self._atomic_dtype("atomic_cas", t, span)
        order, scope = self._ordering(a, span)
        expected = self._values(a["expected"], t.dtype, shape, span)
        value = self._values(a["value"], t.dtype, shape, span)
        old, tok = self.b.atomic_cas(ptrs, expected, value, mask, self._token(t.param), order,
                                     scope)
        self.low.tokens[t.param] = tok
        return TileV(old)

    def f_atomic_add(self, a: Bound, span: K.Span) -> LVal:
        return self._rmw("atomic_add", a, span)

    def f_atomic_max(self, a: Bound, span: K.Span) -> LVal:
        return self._rmw("atomic_max", a, span)

    def f_atomic_min(self, a: Bound, span: K.Span) -> LVal:
        return self._rmw("atomic_min", a, span)

    def f_atomic_and(self, a: Bound, span: K.Span) -> LVal:
        return self._rmw("atomic_and", a, span)

    def f_atomic_or(self, a: Bound, span: K.Span) -> LVal:
        return self._rmw("atomic_or", a, span)

    def f_atomic_xor(self, a: Bound, span: K.Span) -> LVal:
        return self._rmw("atomic_xor", a, span)

    def f_atomic_xchg(self, a: Bound, span: K.Span) -> LVal:
        return self._rmw("atomic_xchg", a, span)

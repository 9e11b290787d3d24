"""Lowering of the DSL's functions and methods (`cutile.core`) to Tile IR ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes as dt
from ..dtypes import DType
from ..frontend import kast as K
from ..frontend.signatures import Signature, is_absent, table
from ..ir import Block, TileType, Value, scalar
from .arith import broadcast_shapes
from .tile_limits import check_tile_shape
from .values import (
    ConstV,
    DTypeV,
    LVal,
    MappedRangeV,
    RangeV,
    SubPartitionV,
    TensorV,
    TileV,
    TupleV,
)

if TYPE_CHECKING:
    from .lower import Lowerer

Handler = Callable[["DslOps", list[LVal], dict[str, LVal], K.Span], LVal]

MATH_OPS = {
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "floor", "ceil",
}
PADDINGS = ("zero", "neg_zero", "nan", "pos_inf", "neg_inf")
REDUCE_IDENTITY: dict[str, Callable[[DType], Any]] = {
    "sum": lambda d: 0,
    "prod": lambda d: 1,
    "max": lambda d: -np.inf if d.is_float else -(2 ** (d.bits - 1)),
    "min": lambda d: np.inf if d.is_float else 2 ** (d.bits - 1) - 1,
}


class DslOps:
    def __init__(self, low: Lowerer) -> None:
        self.low = low
        self.b = low.b
        self.arith = low.arith

    def err(self, code: str, msg: str, span: K.Span, label: str = "", help: str | None = None
            ) -> Exception:
        return self.low.error(code, msg, span, label, help=help)

    # ------------------------------------------------------------------ dispatch

    def call(self, e: K.Call) -> LVal:
        name = e.func
        builtin = name.removeprefix("builtins.")
        sig = table().builtins[builtin] if builtin != name else table().functions[name]
        a = Bound(sig, e.args, [self.low.expr(x) for x in e.args])
        self.low.op_node = e.nid
        if name in MATH_OPS:
            return self.math(name, a, e.span)
        handler = getattr(self, "f_" + name.replace("builtins.", "py_"), None)
        if handler is None:
            raise self.err("CT3030", f"`{name}` is not supported by the compiler yet", e.span,
                           "unsupported operation")
        result: LVal = handler(a, e.span)
        return result

    def method(self, e: K.Method) -> LVal:
        recv = self.low.expr(e.receiver)
        a = Bound(table().methods[e.method], e.args, [self.low.expr(x) for x in e.args])
        self.low.op_node = e.nid
        if isinstance(recv, TensorV):
            prefix = "m_mut_" if recv.mutable else "m_tensor_"
        elif isinstance(recv, SubPartitionV):
            prefix = "m_sub_"
        elif isinstance(recv, TileV):
            prefix = "m_tile_"
        else:
            raise self.err("CT3031", f"`.{e.method}()` cannot be called on this value",
                           e.span, "receiver")
        handler = getattr(self, prefix + e.method, None)
        if handler is None:
            what = {"m_mut_": "an output tensor", "m_tensor_": "a shared tensor",
                    "m_sub_": "a sub-partition", "m_tile_": "a tile"}[prefix]
            raise self.err("CT3031", f"{what} has no method `{e.method}`", e.span,
                           "unknown method")
        result: LVal = handler(recv, a, e.span)
        return result

    def attribute(self, e: K.Attribute) -> LVal:
        recv = self.low.expr(e.value)
        if isinstance(recv, TensorV):
            if e.attr == "shape":
                return TupleV(recv.shape)
            if e.attr == "ndim":
                return ConstV(recv.rank)
            if e.attr == "dtype":
                return DTypeV(recv.dtype)
            if e.attr == "tile_shape" and recv.tile_shape is not None:
                return TupleV(tuple(ConstV(d) for d in recv.tile_shape))
        if isinstance(recv, TileV):
            if e.attr == "shape":
                return TupleV(tuple(ConstV(d) for d in recv.shape))
            if e.attr == "ndim":
                return ConstV(len(recv.shape))
            if e.attr == "dtype":
                return DTypeV(recv.dtype)
            if e.attr == "T":
                return self._transpose(recv, e.span)
        raise self.err("CT3032", f"no attribute `{e.attr}` here", e.span, "unknown attribute")

    # ------------------------------------------------------------------ argument helpers

    def int_const(self, v: LVal, span: K.Span, what: str) -> int:
        if isinstance(v, ConstV) and isinstance(v.value, int) and not isinstance(v.value, bool):
            return v.value
        raise self.err("CT3034", f"{what} must be a compile-time integer", span,
                       "not a constant", help="use a literal or a `Const[int]` parameter")

    def shape_const(self, v: LVal, span: K.Span, what: str = "a shape") -> tuple[int, ...]:
        if isinstance(v, ConstV) and isinstance(v.value, int):
            return (v.value,)
        if isinstance(v, TupleV):
            return tuple(self.int_const(x, span, what) for x in v.items)
        raise self.err("CT3034", f"{what} must be a tuple of compile-time integers", span,
                       "not a constant shape")

    def dtype_arg(self, v: LVal, span: K.Span) -> DType:
        if isinstance(v, DTypeV):
            return v.dtype
        raise self.err("CT3035", "expected a dtype such as `f32`", span, "not a dtype")

    def tile_arg(self, v: LVal, span: K.Span, like: DType = dt.f32) -> TileV:
        return self.arith.to_tile(v, like, span)

    def index_values(self, v: LVal, rank: int, span: K.Span) -> list[Value]:
        items = v.items if isinstance(v, TupleV) else (v,)
        if len(items) != rank:
            raise self.err("CT3036", f"index has {len(items)} entries; the partition has rank "
                           f"{rank}", span, "index")
        out = []
        for it in items:
            if isinstance(it, ConstV) and isinstance(it.value, int):
                if it.value < 0:
                    raise self.err("CT3037", f"tile index {it.value} is negative", span, "index")
                out.append(self.arith.const_tile(it.value, dt.i32, (), span).v)
            elif isinstance(it, TileV) and it.shape == () and it.dtype.is_int:
                out.append(self.arith.convert(it, dt.i32).v)
            else:
                raise self.err("CT3036", "tile indices are integers", span, "index")
        return out

    def padding_arg(self, v: LVal | None, span: K.Span) -> str:
        if v is None:
            return "zero"
        if isinstance(v, ConstV) and v.value in PADDINGS:
            return str(v.value)
        raise self.err("CT3038", f"padding must be one of {', '.join(PADDINGS)}", span,
                       "padding")

    # ------------------------------------------------------------------ python builtins

    def f_py_range(self, a: Bound, span: K.Span) -> LVal:
        step = a["step"]
        if isinstance(step, ConstV) and (not isinstance(step.value, int) or step.value <= 0):
            raise self.err("CT3039", "range step must be a positive integer", span, "step")
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

    def _elementwise_minmax(self, which: str, a: LVal, b: LVal, span: K.Span) -> LVal:
        if isinstance(a, ConstV) and isinstance(b, ConstV):
            return ConstV(max(a.value, b.value) if which == "max" else min(a.value, b.value))  # type: ignore[type-var]
        x, y = self.arith.unify(a, b, span)
        if x.dtype.is_float:
            name = "maxf" if which == "max" else "minf"
            return TileV(self.b.op(name, [x.v, y.v], [x.type],
                                   {"propagate_nan": False, "flush_to_zero": False}).result)
        name = "maxi" if which == "max" else "mini"
        return TileV(self.b.op(name, [x.v, y.v], [x.type], {"signedness": "signed"}).result)

    def f_py_min(self, a: Bound, span: K.Span) -> LVal:
        return self._minmax("min", a, span)

    def f_py_max(self, a: Bound, span: K.Span) -> LVal:
        return self._minmax("max", a, span)

    def f_py_abs(self, a: Bound, span: K.Span) -> LVal:
        x = a["x"]
        if isinstance(x, ConstV) and isinstance(x.value, (int, float)):
            return ConstV(abs(x.value))
        t = self.tile_arg(x, span)
        return TileV(self.b.unary("absf" if t.dtype.is_float else "absi", t.v))

    def f_py_int(self, a: Bound, span: K.Span) -> LVal:
        x = a["x"]
        if isinstance(x, ConstV) and isinstance(x.value, (int, float, bool, str)):
            try:
                return ConstV(int(x.value))
            except ValueError:
                raise self.err("CT3003", f"int({x.value!r}) is not a number", span,
                               "here") from None
        return self.arith.convert(self.tile_arg(x, span), dt.i32)

    def f_py_float(self, a: Bound, span: K.Span) -> LVal:
        x = a["x"]
        if isinstance(x, ConstV) and isinstance(x.value, (int, float, bool, str)):
            try:
                return ConstV(float(x.value))
            except ValueError:
                raise self.err("CT3003", f"float({x.value!r}) is not a number", span,
                               "here") from None
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
                           "axis")
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

    def f_load_tile_like(self, a: Bound, span: K.Span) -> LVal:
        src = a["src"]
        like = a["like"]
        padding = self.padding_arg(a["padding"], span)
        if not isinstance(like, TensorV) or not like.mutable or like.tile_shape is None:
            raise self.err("CT3042", "the second argument of `load_tile_like` must be a `Mut` "
                           "tensor (its partition gives the position)", span, "not a Mut tensor")
        if not isinstance(src, TensorV):
            raise self.err("CT3042", "`load_tile_like` reads a tensor parameter", span,
                           "not a tensor")
        if src.rank != like.rank:
            raise self.err("CT3022", f"`{src.param}` has rank {src.rank} but `{like.param}` "
                           f"has rank {like.rank}", span, "ranks differ")
        if not src.mutable:
            self.low.require_fact(span, "tile access")
        pv = self.low.partition(src, like.tile_shape, padding, span)
        return self._load(src, pv, self.low.own_index(like, span), span)

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

    def _load(self, t: TensorV, pv: Value, index: list[Value], span: K.Span) -> TileV:
        token = self.low.tokens.get(t.param) if t.mutable else None
        tile_v, tok = self.b.load_view(pv, index, token)
        if t.mutable:
            self.low.tokens[t.param] = tok
        return TileV(tile_v)

    def _store(self, t: TensorV, pv: Value, index: list[Value], value: LVal,
               tile_shape: tuple[int, ...], span: K.Span) -> LVal:
        # A store converts to the tensor's element type, as an assignment into a numpy
        # array or Triton's `tl.store` does (round to nearest even; floats to ints toward
        # zero), so the checker has no element types to know.
        v = self.arith.convert(self.tile_arg(value, span, t.dtype), t.dtype)
        if v.shape != tile_shape:
            if broadcast_shapes(v.shape, tile_shape) != tile_shape:
                raise self.err(
                    "CT3044", f"storing a tile of shape {list(v.shape)} into tiles of shape "
                    f"{list(tile_shape)}", span, "shapes differ",
                )
            v = self.arith.broadcast_to(v, tile_shape, span)
        token = self.low.tokens.get(t.param)
        self.low.tokens[t.param] = self.b.store_view(v.v, pv, index, token)
        return ConstV(None)

    def m_mut_store(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        value = a["tile"]
        assert t.tile_shape is not None
        pv = self.low.partition(t, t.tile_shape, None, span)
        if not a.given("index"):
            self.low.require_fact(span, "store")
            idx = self.low.own_index(t, span)
        else:
            idx = self.index_values(a["index"], t.rank, span)
            self.bounds_check(pv, idx, span, f"`{t.param}`")
        return self._store(t, pv, idx, value, t.tile_shape, span)

    def m_mut_store_unchecked(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        """`z.store_unchecked(tile, index)` inside `unsafe`: a store at any tile index, with
        no proof and no device assert (the checker asks for neither). Run the kernel under
        the interpreter's race detector (`CUTILE_INTERPRET=check`) to test it."""
        assert t.tile_shape is not None
        pv = self.low.partition(t, t.tile_shape, None, span)
        return self._store(t, pv, self.index_values(a["index"], t.rank, span), a["tile"],
                           t.tile_shape, span)

    def m_mut_load(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        assert t.tile_shape is not None
        pv = self.low.partition(t, t.tile_shape, "zero", span)
        if not a.given("index"):
            idx = self.low.own_index(t, span)
        else:
            idx = self.index_values(a["index"], t.rank, span)
            self.bounds_check(pv, idx, span, f"`{t.param}`")
        return self._load(t, pv, idx, span)

    def m_mut_partition_mut(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        shape = self.shape_const(a["shape"], span)
        assert t.tile_shape is not None
        if len(shape) != t.rank or any(
            s < 1 or s > d or d % s for s, d in zip(shape, t.tile_shape, strict=True)
        ):
            raise self.err("CT3045", f"sub-tiles {list(shape)} do not divide the tile "
                           f"{list(t.tile_shape)} of `{t.param}`", span, "sub-partition shape")
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
        pv = self.low.partition(p.parent, p.tile_shape, None, span)
        idx = self._sub_index(p, index, span)
        inside = self._sub_inside(p, pv, idx)
        if inside is None:
            return self._store(p.parent, pv, idx, value, p.tile_shape, span)
        t = p.parent
        before = self.low.tokens.get(t.param)
        if before is None:
            before = self.b.make_token()
        with self.b.if_(inside, [before.type]) as branch:
            with branch.then_():
                self.low.tokens[t.param] = before
                self._store(t, pv, idx, value, p.tile_shape, span)
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
        if inside is None:
            return self._load(p.parent, pv, idx, span)
        t = p.parent
        before = self.low.tokens.get(t.param)
        if before is None:
            before = self.b.make_token()
        tile_ty = TileType(p.tile_shape, t.dtype)
        with self.b.if_(inside, [tile_ty, before.type]) as branch:
            with branch.then_():
                self.low.tokens[t.param] = before
                loaded = self._load(t, pv, idx, span)
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
        return self._load(t, pv, idx, span)

    m_mut_load_tile = m_tensor_load_tile

    def m_mut_iter_indices(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        group = self.int_const(a["group"], span,
                               "the group size")
        if group < 1:
            raise self.err("CT3050", f"group size must be >= 1, got {group}", span, "group")
        if t.rank > 3:
            raise self.err("CT3021", "a mapped partition has at most 3 dimensions", span,
                           "rank")
        return MappedRangeV(t, group)

    def m_tensor_store(self, t: TensorV, a: Bound, span: K.Span) -> LVal:
        raise self.err("CT1001", f"`{t.param}` is shared and read-only", span, "write here",
                       help="declare it `Mut[Tensor[...]]` to write its tiles")

    # ------------------------------------------------------------------ creation

    def f_full(self, a: Bound, span: K.Span) -> LVal:
        return self._full(a["shape"], a["value"], a["dtype"], span)

    def _full(self, shape_v: LVal, value: LVal, dtype_v: LVal, span: K.Span) -> LVal:
        shape = self.shape_const(shape_v, span)
        d = self.dtype_arg(dtype_v, span)
        self._check_shape(shape, span)
        if isinstance(value, ConstV) and isinstance(value.value, (int, float, bool)):
            return self.arith.const_tile(value.value, d, shape)
        t = self.arith.convert(self.tile_arg(value, span, d), d)
        return self.arith.broadcast_to(t, shape, span)

    def f_zeros(self, a: Bound, span: K.Span) -> LVal:
        return self._full(a["shape"], ConstV(0), a["dtype"], span)

    def f_ones(self, a: Bound, span: K.Span) -> LVal:
        return self._full(a["shape"], ConstV(1), a["dtype"], span)

    def f_arange(self, a: Bound, span: K.Span) -> LVal:
        n = self.int_const(a["n"], span, "the length")
        d = self.dtype_arg(a["dtype"], span)
        self._check_shape((n,), span)
        if d.is_float:
            return self.arith.convert(TileV(self.b.iota(n, dt.i32)), d)
        return TileV(self.b.iota(n, d))

    def _check_shape(self, shape: tuple[int, ...], span: K.Span) -> None:
        check_tile_shape(shape, span)

    # ------------------------------------------------------------------ elementwise

    def math(self, name: str, a: Bound, span: K.Span) -> LVal:
        t = self.tile_arg(a["x"], span)
        if not t.dtype.is_float:
            t = self.arith.convert(t, dt.f32)
        attrs: dict[str, Any] = {}
        if name in ("exp", "tanh"):
            attrs["rounding_mode"] = "full"
        if name in ("exp2", "rsqrt"):
            attrs["flush_to_zero"] = False
        if name == "sqrt":
            attrs.update(rounding_mode="nearest_even", flush_to_zero=False)
        return TileV(self.b.unary(name, t.v, **attrs))

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

    # ------------------------------------------------------------------ reductions

    def _reduce(self, kind: str, x_v: LVal, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(x_v, span)
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
                               "tile", span, "axis")
            axes = [axis % len(x.shape)]
        result = x
        for axis in sorted(axes, reverse=True):
            result = self._reduce_axis(kind, result, axis)
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
                r = self.b.op(combine, body.args, [elem], {"signedness": "signed"}).result
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

    # ------------------------------------------------------------------ matrix and shape

    def f_mma(self, args: Bound, span: K.Span) -> LVal:
        a = self.tile_arg(args["a"], span)
        b = self.tile_arg(args["b"], span)
        acc = self.tile_arg(args["acc"], span)
        rank = len(a.shape)
        if rank not in (2, 3) or len(b.shape) != rank or acc.shape[:-2] != a.shape[:-2]:
            raise self.err("CT3047", "mma takes [M, K] x [K, N] + [M, N] tiles (optionally "
                           "batched)", span, "mma shapes")
        m, k = a.shape[-2:]
        k2, n = b.shape[-2:]
        if k != k2 or acc.shape[-2:] != (m, n):
            raise self.err("CT3047", f"mma shapes do not line up: {list(a.shape)} x "
                           f"{list(b.shape)} + {list(acc.shape)}", span, "mma shapes")
        if a.dtype != b.dtype:
            raise self.err("CT3047", f"mma operands differ: {a.dtype.name} and {b.dtype.name}",
                           span, "operand types", help="convert one with `.astype`")
        if a.dtype.is_float:
            if a.dtype == dt.f32:
                a = self.arith.convert(a, dt.tf32)
                b = self.arith.convert(b, dt.tf32)
            return TileV(self.b.op("mmaf", [a.v, b.v, acc.v], [acc.type]).result)
        return TileV(self.b.op("mmai", [a.v, b.v, acc.v], [acc.type],
                               {"signedness_lhs": "signed", "signedness_rhs": "signed"}).result)

    def f_astype(self, a: Bound, span: K.Span) -> LVal:
        return self._astype(a["x"], a, span)

    def m_tile_astype(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._astype(t, a, span)

    def _astype(self, x_v: LVal, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(x_v, span)
        return self.arith.convert(x, self.dtype_arg(a["dtype"], span))

    def f_reshape(self, a: Bound, span: K.Span) -> LVal:
        return self._reshape(a["x"], a, span)

    def m_tile_reshape(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._reshape(t, a, span)

    def _reshape(self, x_v: LVal, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(x_v, span)
        shape = self.shape_const(a["shape"], span)
        self._check_shape(shape, span)
        if int(np.prod(shape)) != int(np.prod(x.shape)):
            raise self.err("CT3048", f"cannot reshape {list(x.shape)} to {list(shape)}", span,
                           "element counts differ")
        return TileV(self.b.reshape(x.v, shape))

    def f_permute(self, a: Bound, span: K.Span) -> LVal:
        return self._permute(a["x"], a, span)

    def m_tile_permute(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._permute(t, a, span)

    def _permute(self, x_v: LVal, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(x_v, span)
        axes = self.shape_const(a["axes"], span, "the axes")
        if sorted(axes) != list(range(len(x.shape))):
            raise self.err("CT3049", f"{list(axes)} is not a permutation of the tile's axes",
                           span, "axes")
        return TileV(self.b.permute(x.v, axes))

    def _transpose(self, x: TileV, span: K.Span) -> LVal:
        if len(x.shape) != 2:
            raise self.err("CT3049", "transpose needs a 2-D tile", span, "tile")
        return TileV(self.b.permute(x.v, (1, 0)))

    def f_transpose(self, a: Bound, span: K.Span) -> LVal:
        return self._transpose(self.tile_arg(a["x"], span), span)

    def m_tile_transpose(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._transpose(t, span)

    def f_broadcast_to(self, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(a["x"], span)
        shape = self.shape_const(a["shape"], span)
        return self.arith.broadcast_to(x, shape, span)


class Bound:
    """A call's arguments as the frontend bound them (one per parameter of the op table's
    signature), evaluated, looked up by parameter name."""

    def __init__(self, sig: Signature, nodes: list[K.Expr], values: list[LVal]) -> None:
        self.sig = sig
        self.nodes = nodes
        self.values = values

    def __getitem__(self, name: str) -> LVal:
        return self.values[self.sig.position(name)]

    def given(self, name: str) -> bool:
        """Was the argument written (its slot is not the literal `None` of an absent one)?"""
        return not is_absent(self.nodes[self.sig.position(name)])

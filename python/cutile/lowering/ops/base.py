"""What every family of DSL-op lowerings shares: the lowerer's state, errors, argument
helpers and the bound arguments of a call."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import dtypes as dt
from ...dtypes import DType
from ...frontend import kast as K
from ...frontend.signatures import Signature, is_absent
from ...ir import Value
from ..arith import sign
from ..tile_limits import check_tile_shape
from ..values import ByTargetV, ConstV, DTypeV, LVal, TileV, TupleV

if TYPE_CHECKING:
    from ..lower import Lowerer

MATH_OPS = {
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "floor", "ceil",
}
PADDINGS = ("zero", "neg_zero", "nan", "pos_inf", "neg_inf")
REDUCE_IDENTITY: dict[str, Callable[[DType], Any]] = {
    "sum": lambda d: 0,
    "prod": lambda d: 1,
    "max": lambda d: -np.inf if d.is_float else 0 if d.unsigned else -(2 ** (d.bits - 1)),
    "min": lambda d: (np.inf if d.is_float else 2**d.bits - 1 if d.unsigned
                      else 2 ** (d.bits - 1) - 1),
}


class OpsBase:
    """The lowerer's state and the argument helpers every op family uses."""

    def __init__(self, low: Lowerer) -> None:
        self.low = low
        self.b = low.b
        self.arith = low.arith

    def err(self, code: str, msg: str, span: K.Span, label: str = "", help: str | None = None
            ) -> Exception:
        return self.low.error(code, msg, span, label, help=help)
    # ------------------------------------------------------------------ argument helpers

    def int_const(self, v: LVal, span: K.Span, what: str) -> int:
        if isinstance(v, ConstV) and isinstance(v.value, int) and not isinstance(v.value, bool):
            return v.value
        raise self.err("CT3034", f"{what} must be a compile-time integer", span,
                       "not a constant", help="use a literal or a `Const[int]` parameter (a "
                       "tensor's `.shape` is its extent, known at run time; a tile's "
                       "`.shape` is constant)")

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
        raise self.err("CT3035", "expected a dtype such as `f32`", span, "not a dtype",
                       help="pass the dtype itself (`from cutile.core import f32`), not its "
                       "name")

    def tile_arg(self, v: LVal, span: K.Span, like: DType = dt.f32) -> TileV:
        return self.arith.to_tile(v, like, span)

    def index_values(self, v: LVal, rank: int, span: K.Span) -> list[Value]:
        items = v.items if isinstance(v, TupleV) else (v,)
        if len(items) != rank:
            raise self.err("CT3036", f"index has {len(items)} entries; the partition has rank "
                           f"{rank}", span, "index", help=f"give one tile index per axis: "
                           f"{rank} entries")
        out = []
        for it in items:
            if isinstance(it, ConstV) and isinstance(it.value, int):
                if it.value < 0:
                    raise self.err("CT3037", f"tile index {it.value} is negative", span, "index",
                                   help="tile indices count from 0 (no negative indexing from "
                                   "the end)")
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
                       "padding", help="e.g. `padding=\"pos_inf\"` for infinity")

    def memory_hints(self, a: Bound, span: K.Span) -> dict[str, dict[str, int | bool]] | None:
        """The `optimization_hints` of a load or store, {architecture or "default": {hint:
        value}}: `latency=` (1-10: how long tileiras should expect the access to take, so it
        can schedule around it) and `allow_tma=` (False keeps it off the TMA unit: a load
        goes straight into registers, a store straight out of them, with no shared-memory
        staging), each one value or a `ByTarget(...)` of values per architecture. tileiras
        takes the hints of the architecture it compiles for, else those under `default`."""
        out: dict[str, dict[str, int | bool]] = {}
        for name in ("latency", "allow_tma"):
            if not a.given(name):
                continue
            v = a[name]
            if isinstance(v, ByTargetV):
                for arch, x in v.values.items():
                    out.setdefault(arch, {})[name] = self._memory_hint(name, x, v.spans[arch],
                                                                       arch)
            else:
                out.setdefault("default", {})[name] = self._memory_hint(
                    name, v, a.nodes[a.sig.position(name)].span, None)
        return {arch: out[arch] for arch in sorted(out)} or None

    def _memory_hint(self, name: str, v: LVal, span: K.Span, arch: str | None) -> int | bool:
        where = f"`{name}`" if arch is None else f"`{name}` for {arch}"
        if name == "latency":
            if not (isinstance(v, ConstV) and type(v.value) is int and 1 <= v.value <= 10):
                raise self.err("CT3060", f"{where} must be a compile-time integer from 1 to 10",
                               span, "latency", help="e.g. `latency=3`, or "
                               "`latency=ByTarget(sm_90=3, default=2)`; omit it to let "
                               "tileiras decide")
            return v.value
        if not (isinstance(v, ConstV) and isinstance(v.value, bool)):
            raise self.err("CT3060", f"{where} must be True or False", span, "allow_tma",
                           help="a compile-time bool (a literal or a `Const[bool]`), or "
                           "`allow_tma=ByTarget(sm_90=False, default=True)`; omit it to let "
                           "tileiras decide")
        return v.value

    def _check_shape(self, shape: tuple[int, ...], span: K.Span) -> None:
        check_tile_shape(shape, span)

    def _elementwise_minmax(self, which: str, a: LVal, b: LVal, span: K.Span) -> LVal:
        if isinstance(a, ConstV) and isinstance(b, ConstV):
            return ConstV(max(a.value, b.value) if which == "max" else min(a.value, b.value))  # type: ignore[type-var]
        x, y = self.arith.unify(a, b, span)
        self.arith.no_f8(x, span, f"`{which}imum`")
        if x.dtype.is_float:
            name = "maxf" if which == "max" else "minf"
            return TileV(self.b.op(name, [x.v, y.v], [x.type],
                                   {"propagate_nan": False, "flush_to_zero": False}).result)
        name = "maxi" if which == "max" else "mini"
        return TileV(self.b.op(name, [x.v, y.v], [x.type], {"signedness": sign(x.dtype)}).result)


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

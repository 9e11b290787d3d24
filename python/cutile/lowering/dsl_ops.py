"""Lowering of the DSL's functions and methods (`cutile.core`) to Tile IR ops: dispatch by
name to the op families in `lowering/ops/`."""

from __future__ import annotations

from ..frontend import kast as K
from ..frontend.signatures import table
from .ops.base import MATH_OPS, Bound
from .ops.bits import BitsOps
from .ops.compute import ComputeOps
from .ops.debug import DebugOps
from .ops.grid import GridOps
from .ops.memory import MemoryOps
from .ops.pointers import PointerOps
from .ops.scan import ScanOps
from .ops.shape import ShapeOps
from .ops.slicing import SliceOps
from .values import ConstV, DTypeV, LVal, SubPartitionV, TensorV, TileV, TupleV

__all__ = ["MATH_OPS", "Bound", "DslOps"]


class DslOps(
    GridOps, MemoryOps, ComputeOps, ShapeOps, PointerOps, ScanOps, SliceOps, DebugOps, BitsOps
):
    # ------------------------------------------------------------------ dispatch

    def call(self, e: K.Call) -> LVal:
        name = e.func
        builtin = name.removeprefix("builtins.")
        sig = table().builtins[builtin] if builtin != name else table().functions[name]
        # A device function passed to an op (`reduce`'s combiner) is inlined by the op,
        # into its region, not evaluated here.
        a = Bound(sig, e.args, [ConstV(None) if p.function else self.low.expr(x)
                                for p, x in zip(sig.params, e.args, strict=True)])
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
        raise self.err("CT3032", f"no attribute `{e.attr}` here", e.span, "unknown attribute",
                       help="tensors have `shape`, `ndim`, `dtype` (outputs `tile_shape`); "
                       "tiles have `shape`, `dtype`, `T`")

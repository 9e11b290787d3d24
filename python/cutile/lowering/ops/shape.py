"""Matrix and shape ops: mma, matmul (`@`), astype, reshape, permute, transpose,
broadcast_to, expand_dims and `.item()`."""

from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...frontend import kast as K
from ..arith import broadcast_shapes, sign
from ..values import ConstV, LVal, TileV
from .base import Bound, OpsBase

# The accumulator of `a @ b` for each operand dtype (the result converts back to it).
MATMUL_ACC = {"f16": dt.f32, "bf16": dt.f32, "tf32": dt.f32, "f32": dt.f32, "f64": dt.f64,
              "i8": dt.i32, "u8": dt.i32, "f8e4m3fn": dt.f32, "f8e5m2": dt.f32}
# The accumulators `mma` takes for each operand type (Tile IR's `mmaf` and `mmai` tables).
MMA_ACC = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "f32": ("f32",),
           "f64": ("f64",), "f8e4m3fn": ("f16", "f32"), "f8e5m2": ("f16", "f32"),
           "i8": ("i32",), "u8": ("i32",)}


class ShapeOps(OpsBase):
    # ------------------------------------------------------------------ matrix and shape

    def f_mma(self, args: Bound, span: K.Span) -> LVal:
        a = self.tile_arg(args["a"], span)
        b = self.tile_arg(args["b"], span)
        acc = self.tile_arg(args["acc"], span)
        fast = args["fast_acc"]
        if not (isinstance(fast, ConstV) and isinstance(fast.value, bool)):
            raise self.err("CT3034", "`fast_acc` must be a compile-time bool", span,
                           "fast_acc", help="pass True or False (or a Const[bool])")
        if fast.value and not (a.dtype.is_float and a.dtype.bits == 8):
            raise self.err("CT3047", f"`fast_acc` is for f8 operands, not {a.dtype.name}",
                           span, "fast_acc", help="the other tensor-core types accumulate "
                           "in full precision already: drop `fast_acc`")
        return self._mma(a, b, acc, span, fast.value)

    def _mma(self, a: TileV, b: TileV, acc: TileV, span: K.Span,
             fast_acc: bool = False) -> TileV:
        rank = len(a.shape)
        if rank not in (2, 3) or len(b.shape) != rank or acc.shape[:-2] != a.shape[:-2]:
            raise self.err("CT3047", "mma takes [M, K] x [K, N] + [M, N] tiles (optionally "
                           "batched)", span, "mma shapes")
        m, k = a.shape[-2:]
        k2, n = b.shape[-2:]
        if k != k2 or acc.shape[-2:] != (m, n):
            raise self.err("CT3047", f"mma shapes do not line up: {list(a.shape)} x "
                           f"{list(b.shape)} + {list(acc.shape)}", span, "mma shapes",
                           help="`mma(a, b, acc)` takes [M, K] x [K, N] + [M, N]")
        # i8 and u8 mix (each operand has its own signedness); other operands agree
        ints = {a.dtype.name, b.dtype.name} <= {"i8", "u8"}
        if a.dtype != b.dtype and not ints:
            raise self.err("CT3047", f"mma operands differ: {a.dtype.name} and {b.dtype.name}",
                           span, "operand types", help="convert one with `.astype`")
        if acc.dtype.name not in MMA_ACC.get(a.dtype.name, ()):
            takes = ", ".join(f"{k} -> {'/'.join(v)}" for k, v in MMA_ACC.items())
            raise self.err("CT3047", f"mma does not take {a.dtype.name} x {b.dtype.name} -> "
                           f"{acc.dtype.name}", span, "operand types",
                           help=f"the tensor cores take (operands -> accumulator) {takes}")
        if a.dtype.is_float:
            if a.dtype == dt.f32:
                a = self.arith.convert(a, dt.tf32)
                b = self.arith.convert(b, dt.tf32)
            return TileV(self.b.mmaf(a.v, b.v, acc.v, fast_acc=fast_acc))
        return TileV(self.b.op("mmai", [a.v, b.v, acc.v], [acc.type],
                               {"signedness_lhs": sign(a.dtype),
                                "signedness_rhs": sign(b.dtype)}).result)

    def f_matmul(self, args: Bound, span: K.Span) -> LVal:
        return self.matmul(args["a"], args["b"], span)

    def matmul(self, a_v: LVal, b_v: LVal, span: K.Span) -> LVal:
        """`a @ b` as cuTile Python's `matmul`: a 1-D `a` is a row and a 1-D `b` a column
        (both squeezed from the result), batch axes broadcast, the operands promote to one
        dtype, which is the result's; the product is an `mma` into a zero accumulator."""
        if not (isinstance(a_v, TileV) and isinstance(b_v, TileV)):
            raise self.err("CT3004", "`@` multiplies two tiles", span, "matrix product",
                           help="load tiles first; a number has no matrix product")
        ra, rb = len(a_v.shape), len(b_v.shape)
        if not (1 <= ra <= 3 and 1 <= rb <= 3):
            raise self.err("CT3004", f"`@` takes tiles of rank 1 to 3, not {list(a_v.shape)} "
                           f"@ {list(b_v.shape)}", span, "matrix product",
                           help="rank 3 is a batch of matrices; use `*` for scalars")
        d = self.arith.promote(a_v.dtype, b_v.dtype, span)
        acc_dtype = MATMUL_ACC.get(d.name)
        if acc_dtype is None:
            raise self.err("CT3004", f"`@` does not multiply `{d.name}` tiles", span,
                           "matrix product", help="the tensor cores take f16, bf16, tf32, f32, "
                           "f64, f8e4m3fn, f8e5m2, i8 and u8: convert with `.astype`")
        a = self.arith.convert(a_v, d)
        b = self.arith.convert(b_v, d)
        if rb == 1:
            b = TileV(self.b.reshape(b.v, (*b.shape, 1)))
        a_shape = a.shape if ra > 1 else (1, *a.shape)
        m, k = a_shape[-2:]
        k2, n = b.shape[-2:]
        batch = broadcast_shapes(a_shape[:-2], b.shape[:-2])
        if k != k2 or batch is None:
            raise self.err("CT3004", f"shapes do not multiply: {list(a_v.shape)} @ "
                           f"{list(b_v.shape)}", span, "matrix product",
                           help="`[M, K] @ [K, N]`: the inner dimensions must be equal")
        a = self.arith.broadcast_to(a, (*batch, m, k), span)
        b = self.arith.broadcast_to(b, (*batch, k, n), span)
        acc = self.arith.const_tile(0, acc_dtype, (*batch, m, n))
        out = self.arith.convert(self._mma(a, b, acc, span), d)
        shape = (*batch, *((m,) if ra > 1 else ()), *((n,) if rb > 1 else ()))
        return out if out.shape == shape else TileV(self.b.reshape(out.v, shape))

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
                           "element counts differ", help="a reshape keeps the number of "
                           "elements")
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
                           span, "axes", help=f"name each axis 0 to {len(x.shape) - 1} once")
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

    def f_expand_dims(self, a: Bound, span: K.Span) -> LVal:
        x = self.tile_arg(a["x"], span)
        axis = self.int_const(a["axis"], span, "the axis")
        rank = len(x.shape) + 1
        if not -rank <= axis < rank:
            raise self.err("CT3046", f"axis {axis} out of range for a new axis of a "
                           f"rank-{len(x.shape)} tile", span, "axis",
                           help=f"the new axis goes at -{rank} to {rank - 1}")
        axis %= rank
        shape = (*x.shape[:axis], 1, *x.shape[axis:])
        self._check_shape(shape, span)
        return TileV(self.b.reshape(x.v, shape))

    def m_tile_item(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        if int(np.prod(t.shape)) != 1:
            raise self.err("CT3054", f"`.item()` needs a tile of one element, not one of "
                           f"shape {list(t.shape)}", span, "not one element",
                           help="reduce it first (`t.sum()`, `t.max()`), or take a "
                           "one-element tile")
        return t if t.shape == () else TileV(self.b.reshape(t.v, ()))

"""Matrix and shape ops: mma, astype, reshape, permute, transpose, broadcast_to."""

from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...frontend import kast as K
from ..values import LVal, TileV
from .base import Bound, OpsBase


class ShapeOps(OpsBase):
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

"""Bit-level ops: `bitcast` (Tile IR `bitcast`), and `pack_i4` / `unpack_i4`, two 4-bit
integers to a byte, written with shifts, masks, reshapes, `extract` and `cat`.

Tile IR 13.3 has an `i4` type, but only as the operand of `exti`, `trunci` and the rank-1
`pack` / `unpack`: no tensor holds it and no arithmetic takes it. Nibbles in bytes are what
memory holds, so the helpers work on bytes, for tiles of any rank.
"""

from __future__ import annotations

from ... import dtypes as dt
from ...frontend import kast as K
from ..values import ConstV, LVal, TileV
from .base import Bound, OpsBase


class BitsOps(OpsBase):
    # ------------------------------------------------------------------ bitcast

    def f_bitcast(self, a: Bound, span: K.Span) -> LVal:
        return self._bitcast(self.tile_arg(a["x"], span), a, span)

    def m_tile_bitcast(self, t: TileV, a: Bound, span: K.Span) -> LVal:
        return self._bitcast(t, a, span)

    def _bitcast(self, x: TileV, a: Bound, span: K.Span) -> LVal:
        to = self.dtype_arg(a["dtype"], span)
        if x.dtype.is_bool or to.is_bool or x.dtype.bits != to.bits:
            raise self.err(
                "CT3091", f"`bitcast` keeps the bits, so the widths must match: "
                f"`{x.dtype.name}` ({x.dtype.bits} bits) to `{to.name}` ({to.bits} bits)",
                span, "different widths", help="bitcast between types of one width (f32 and "
                "i32 or u32; f16, bf16, i16 and u16; f8 and i8 or u8), or convert the "
                "values with `.astype`" + ("; compare a bool tile with 0 or use `where`"
                                           if x.dtype.is_bool or to.is_bool else ""),
            )
        if x.dtype == to:
            return x
        return TileV(self.b.convert("bitcast", x.v, to))

    # ------------------------------------------------------------------ 4-bit packing

    def _pairs(self, x: TileV, span: K.Span, what: str) -> tuple[TileV, TileV]:
        """The even and odd elements along the last axis: [..., 2N] -> two [..., N]."""
        if not x.shape or x.shape[-1] < 2:
            raise self.err("CT3091", f"`{what}` pairs the elements of the last axis: it needs "
                           f"a tile whose last axis has 2 or more elements, not shape "
                           f"{list(x.shape)}", span, "no pairs",
                           help="reshape the values so the last axis holds the pairs")
        n = x.shape[-1] // 2
        pairs = self.b.reshape(x.v, (*x.shape[:-1], n, 2))
        zero = self.arith.const_tile(0, dt.i32).v
        one = self.arith.const_tile(1, dt.i32).v
        lead = [zero] * len(x.shape)
        piece = (*x.shape[:-1], n, 1)
        even = self.b.reshape(self.b.extract(pairs, [*lead, zero], piece), (*x.shape[:-1], n))
        odd = self.b.reshape(self.b.extract(pairs, [*lead, one], piece), (*x.shape[:-1], n))
        return TileV(even), TileV(odd)

    def f_pack_i4(self, a: Bound, span: K.Span) -> LVal:
        """`[..., 2N]` integers -> `[..., N]` u8: element 2i in the low nibble of byte i,
        element 2i + 1 in the high nibble (each value's low 4 bits: -1 packs as 0xF)."""
        x = self.tile_arg(a["x"], span)
        if not x.dtype.is_int:
            raise self.err("CT3091", f"`pack_i4` packs integers, not `{x.dtype.name}` "
                           "values", span, "not integers",
                           help="convert with `.astype(i8)` (values -8..7) or `.astype(u8)` "
                           "(0..15) first")
        even, odd = self._pairs(x, span, "pack_i4")
        lo, hi = self.arith.convert(even, dt.u8), self.arith.convert(odd, dt.u8)
        mask = self.arith.const_tile(0xF, dt.u8, lo.shape).v
        four = self.arith.const_tile(4, dt.u8, lo.shape).v
        lo_v = self.b.binary("andi", lo.v, mask)
        hi_v = self.b.binary("shli", self.b.binary("andi", hi.v, mask), four)
        return TileV(self.b.binary("ori", lo_v, hi_v))

    def f_unpack_i4(self, a: Bound, span: K.Span) -> LVal:
        """`[..., N]` bytes (u8 or i8) -> `[..., 2N]`: the low nibble of byte i is element
        2i, the high nibble element 2i + 1; `signed=True` reads nibbles as -8..7 (an i8
        tile), `signed=False` as 0..15 (a u8 tile)."""
        x = self.tile_arg(a["x"], span)
        signed = a["signed"]
        if not (isinstance(signed, ConstV) and isinstance(signed.value, bool)):
            raise self.err("CT3034", "`signed` must be a compile-time bool", span, "signed")
        if x.dtype not in (dt.u8, dt.i8):
            raise self.err("CT3091", f"`unpack_i4` reads bytes (u8 or i8), not "
                           f"`{x.dtype.name}` values", span, "not bytes",
                           help="load the packed tensor as u8, or `bitcast` to u8 first")
        if not x.shape:
            raise self.err("CT3091", "`unpack_i4` needs a tile with an axis to unpack along, "
                           "not a scalar", span, "scalar", help="reshape it to shape (1,)")
        u = self.arith.convert(x, dt.u8)  # a bitcast from i8: the shift below is logical
        mask = self.arith.const_tile(0xF, dt.u8, u.shape).v
        four = self.arith.const_tile(4, dt.u8, u.shape).v
        lo = self.b.binary("andi", u.v, mask)
        hi = self.b.op("shri", [u.v, four], [u.type], {"signedness": "unsigned"}).result
        if signed.value:  # sign-extend 4 bits: (v ^ 8) - 8
            eight = self.arith.const_tile(8, dt.i8, u.shape).v
            as_i8 = [self.arith.convert(TileV(v), dt.i8).v for v in (lo, hi)]
            lo, hi = (self.b.binary("subi", self.b.binary("xori", v, eight), eight)
                      for v in as_i8)
        self._check_shape((*x.shape[:-1], 2 * x.shape[-1]), span)
        col = (*x.shape, 1)
        both = self.b.cat(self.b.reshape(lo, col), self.b.reshape(hi, col), len(x.shape))
        return TileV(self.b.reshape(both, (*x.shape[:-1], 2 * x.shape[-1])))

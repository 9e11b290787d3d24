"""Math modes: the rounding and subnormal handling a kernel asks of one operation
(`truediv(a, b, rounding="approx")`, `exp2(x, flush_to_zero=True)`, `sqrt(x, rounding=...)`).

The fast modes exist on the GPU for f32 only (PTX `div.approx.f32`, `ex2.approx.ftz.f32`);
asking for them on another type is an error rather than a silent IEEE result."""

from __future__ import annotations

from typing import Any

from ... import dtypes as dt
from ...frontend import kast as K
from ..values import ConstV, LVal, TileV
from .base import Bound, OpsBase

DIVISION_ROUNDING = ("nearest_even", "zero", "negative_inf", "positive_inf", "approx", "full")
SQRT_ROUNDING = ("nearest_even", "zero", "negative_inf", "positive_inf", "approx")
_F32_ONLY = ("approx", "full")


class ModeOps(OpsBase):
    def mode_attrs(self, name: str, a: Bound, x: TileV, span: K.Span) -> dict[str, Any]:
        """The Tile IR attributes of unary math op `name` from its mode arguments."""
        attrs: dict[str, Any] = {}
        if name in ("exp", "tanh"):
            attrs["rounding_mode"] = "full"
        if name in ("exp2", "rsqrt", "sqrt"):
            attrs["flush_to_zero"] = self._ftz(a, x, span)
        if name == "sqrt":
            attrs["rounding_mode"] = self._rounding(a, x, SQRT_ROUNDING, span)
        return attrs

    def f_truediv(self, a: Bound, span: K.Span) -> LVal:
        x, y = self.arith.unify(a["a"], a["b"], span)
        if not x.dtype.is_float:
            x, y = self.arith.convert(x, dt.f32), self.arith.convert(y, dt.f32)
        mode = self._rounding(a, x, DIVISION_ROUNDING, span)
        return TileV(self.b.binary("divf", x.v, y.v, rounding_mode=mode,
                                   flush_to_zero=self._ftz(a, x, span)))

    def _rounding(self, a: Bound, x: TileV, allowed: tuple[str, ...], span: K.Span) -> str:
        v = a["rounding"]
        if not (isinstance(v, ConstV) and v.value in allowed):
            raise self.err("CT3061", f"`rounding` must be one of {', '.join(allowed)}", span,
                           "rounding", help="omit it for IEEE round-to-nearest-even")
        mode = str(v.value)
        if mode in _F32_ONLY and x.dtype != dt.f32:
            raise self.err("CT3061", f"rounding `{mode}` exists for f32 only, not "
                           f"{x.dtype.name}", span, "rounding",
                           help="convert with `.astype(f32)` first, or keep the IEEE rounding")
        return mode

    def _ftz(self, a: Bound, x: TileV, span: K.Span) -> bool:
        v = a["flush_to_zero"]
        if not (isinstance(v, ConstV) and isinstance(v.value, bool)):
            raise self.err("CT3061", "`flush_to_zero` must be True or False", span,
                           "flush_to_zero")
        if v.value and x.dtype != dt.f32:
            raise self.err("CT3061", f"`flush_to_zero` exists for f32 only, not "
                           f"{x.dtype.name}", span, "flush_to_zero",
                           help="convert with `.astype(f32)` first")
        return bool(v.value)

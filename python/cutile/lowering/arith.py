"""Operators on tiles: numpy-style broadcasting, dtype promotion, Python semantics for
`//`, `%` and `/`, and constant folding when both sides are compile-time values.

Tile IR's elementwise ops need identical operand types, so every implicit broadcast becomes
`reshape` + `broadcast` and every implicit promotion an explicit conversion here.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import dtypes as dt
from ..dtypes import DType
from ..frontend.kast import Span
from ..ir import TileType, Value
from .values import ConstV, LVal, TensorV, TextV, TileV

if TYPE_CHECKING:
    from .lower import Lowerer

FOLD: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": lambda a, b: _int_or_float(operator.floordiv, a, b),
    "mod": lambda a, b: _int_or_float(operator.mod, a, b), "pow": operator.pow,
    "lshift": operator.lshift, "rshift": operator.rshift, "bitand": operator.and_,
    "bitor": operator.or_, "bitxor": operator.xor,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge,
}
FLOAT_OPS = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf"}
INT_OPS = {
    "add": "addi", "sub": "subi", "mul": "muli", "bitand": "andi", "bitor": "ori",
    "bitxor": "xori", "lshift": "shli",
}
PREDICATES = {
    "eq": "equal", "ne": "not_equal", "lt": "less_than", "le": "less_than_or_equal",
    "gt": "greater_than", "ge": "greater_than_or_equal",
}


# compile-time ints: a 64-bit value, signed or unsigned (`u64` constants up to 2^64 - 1)
CONST_MIN, CONST_MAX = -(2**63), 2**64 - 1


def _int_or_float(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """Constant `//` and `%`: integers by zero as on the device (the divisor reads as 1)."""
    if isinstance(a, int) and isinstance(b, int) and b == 0:
        return op(a, 1)
    return op(a, b)


def _plain_divisor(v: LVal) -> bool:
    """A constant divisor other than 0 and -1 needs no guard."""
    return isinstance(v, ConstV) and isinstance(v.value, int) and v.value not in (0, -1)


def _int_exponent(a: LVal, b: LVal) -> bool:
    """`a ** b` with an integer (or bool) base and exponent, at least one on the device."""
    def is_int(v: LVal) -> bool:
        if isinstance(v, TileV):
            return not v.dtype.is_float
        return isinstance(v, ConstV) and isinstance(v.value, int)

    return is_int(a) and is_int(b) and (isinstance(a, TileV) or isinstance(b, TileV))


# significant bits and largest finite value of each float type (`_toward_zero`)
_FLOAT_FORMATS = {"f16": (11, 65504), "bf16": (8, (2**8 - 1) << 120),
                  "tf32": (11, (2**11 - 1) << 117), "f32": (24, (2**24 - 1) << 104),
                  "f64": (53, (2**53 - 1) << 971)}


def _toward_zero(v: int, d: DType) -> int:
    """The value of float type `d` nearest the integer `v` on the side of zero (`v` itself
    when `d` holds it): its significand cut to `d`'s bits, no larger than `d`'s largest."""
    bits, largest = _FLOAT_FORMATS[d.name]
    m = abs(v)
    drop = max(m.bit_length() - bits, 0)
    m = min((m >> drop) << drop, largest)
    return -m if v < 0 else m


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def sign(d: DType) -> str:
    """The `signedness` attribute of integer ops on `d` (Tile IR integers are signless)."""
    return "unsigned" if d.unsigned or d.is_bool else "signed"


class PromotionError(Exception):
    """Two element types with no implicit common type (`Arith.promote` reports CT3090)."""


def promote_types(a: DType, b: DType) -> DType:
    """The common type of two tile element types, as numpy promotes them (NEP 50), except
    that floats never widen past the wider float operand (f16 + i32 -> f16, as cuTile) and
    that these have no implicit common type (`PromotionError`): an f8 type with any other
    type, and u64 with a signed integer (numpy's answer, f64, loses bits)."""
    if a == b:
        return a
    if a.is_f8 or b.is_f8:
        raise PromotionError("f8 tiles convert only explicitly")
    if a.is_float and b.is_float:
        if {a.name, b.name} == {"f16", "bf16"}:
            return dt.f32
        return a if a.bits >= b.bits else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.unsigned == b.unsigned:
        return a if a.bits >= b.bits else b
    u, s = (a, b) if a.unsigned else (b, a)
    if s.bits > u.bits:  # u8 + i16 -> i16
        return s
    if u.bits == 64:
        raise PromotionError("no signed integer holds every u64")
    return dt.ALL[f"i{2 * u.bits}"]  # u8 + i8 -> i16, u32 + i32 -> i64


class Arith:
    def __init__(self, low: Lowerer) -> None:
        self.low = low
        self.b = low.b
        # where a constant without a span of its own is reported
        self._span = Span(0, 0, 0, 1, 0, 1, 0)

    # -- conversions -----------------------------------------------------------------------

    def const_tile(self, value: Any, dtype: DType, shape: tuple[int, ...] = (),
                   span: Span | None = None) -> TileV:
        if dtype.is_bool:
            value = bool(value)
        elif dtype.is_int:
            if isinstance(value, float) and not math.isfinite(value):
                # (`int(nan)` raised a bare ValueError, `int(inf)` an OverflowError)
                raise self.low.error(
                    "CT3003", f"the constant {value} is not an integer (the tile holds "
                    f"`{dtype.name}`)",
                    span or self._span, "not a finite number",
                    help="an integer tile holds finite numbers: choose one, or make a float "
                    "tile", )
            value = int(value)
            lo, hi = -(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1
            if dtype.unsigned:
                lo, hi = 0, 2**dtype.bits - 1
            if not lo <= value <= hi:
                # The checker's width model relies on this refusal (`width.rs`).
                kind = "unsigned " if dtype.unsigned else ""
                raise self.low.error(
                    "CT3052", f"the constant {value} does not fit the {dtype.bits}-bit "
                    f"{kind}integers this operation runs in", span or self._span,
                    "computed on the device",
                    help="keep constants that meet device values within their type's range",
                )
        else:
            value = float(value)
        return TileV(self.b.constant(value, TileType(shape, dtype)))

    def convert(self, t: TileV, to: DType) -> TileV:
        src = t.dtype
        if src == to:
            return t
        b = self.b
        if src.is_float and to.is_float:
            return TileV(b.convert("ftof", t.v, to, rounding_mode="nearest_even"))
        if src.is_f8 or to.is_f8:
            # Between f8 and integers through f32: exact from f8, and every integer that
            # an f8 type does not saturate (|v| < 2^16) is exact in f32, so it rounds once.
            return self.convert(self.convert(t, dt.f32), to)
        if src.is_bool and to.is_float:
            one = self.const_tile(1.0, to, t.shape)
            zero = self.const_tile(0.0, to, t.shape)
            return TileV(b.select(t.v, one.v, zero.v))
        if (src.is_int or src.is_bool) and to.is_float:
            return TileV(
                b.convert("itof", t.v, to, signedness=sign(src), rounding_mode="nearest_even")
            )
        if src.is_float and to.is_int:
            return self._float_to_int(t, to)
        if src.is_float and to.is_bool:
            zero = self.const_tile(0.0, src, t.shape)
            return TileV(b.cmp("cmpf", "not_equal", t.v, zero.v, comparison_ordering="unordered"))
        if to.is_bool:
            zero = self.const_tile(0, src, t.shape)
            return TileV(b.cmp("cmpi", "not_equal", t.v, zero.v))
        if src.bits < to.bits:  # zero-extends an unsigned source, sign-extends a signed one
            return TileV(b.convert("exti", t.v, to, signedness=sign(src)))
        if src.bits > to.bits:
            return TileV(b.convert("trunci", t.v, to, overflow="none"))
        return TileV(b.convert("bitcast", t.v, to))

    def _float_to_int(self, t: TileV, to: DType) -> TileV:
        """Float to integer, truncating, saturating at the type's ends, NaN to 0 (what the
        GPU's `cvt.rzi` computes). Tile IR's `ftoi` is undefined for NaN, infinities and
        values out of range, and tileiras uses that: it compiled a kernel converting a
        constant 3e9 to i32 to a lone EXIT, the bounds check on the result and the store
        gone. So `ftoi` only ever sees values in range: NaN becomes 0 and the rest is
        clamped to the range's ends as the source type holds them; where it cannot hold
        an end exactly, the values past it take that end afterwards."""
        b, src, shape = self.b, t.dtype, t.shape
        lo_v, hi_v = (0, 2**to.bits - 1) if to.unsigned else (
            -(2 ** (to.bits - 1)), 2 ** (to.bits - 1) - 1)
        lo_f, hi_f = _toward_zero(lo_v, src), _toward_zero(hi_v, src)
        x = t.v
        if lo_v < 0:  # (an unsigned target's lower clamp at 0 takes NaN to 0 by itself)
            nan = b.cmp("cmpf", "not_equal", x, x, comparison_ordering="unordered")
            x = b.select(nan, self.const_tile(0.0, src, shape).v, x)
        minmax = {"propagate_nan": False, "flush_to_zero": False}
        c = b.op("maxf", [x, self.const_tile(float(lo_f), src, shape).v], [t.type],
                 minmax).result
        c = b.op("minf", [c, self.const_tile(float(hi_f), src, shape).v], [t.type],
                 minmax).result
        r = b.convert("ftoi", c, to, signedness=sign(to), rounding_mode="nearest_int_to_zero")
        for end_v, end_f, pred in ((hi_v, hi_f, "greater_than"), (lo_v, lo_f, "less_than")):
            if end_f != end_v:
                past = b.cmp("cmpf", pred, x, self.const_tile(float(end_f), src, shape).v)
                r = b.select(past, self.const_tile(end_v, to, shape).v, r)
        return TileV(r)

    def to_tile(self, v: LVal, like: DType, span: Span) -> TileV:
        if isinstance(v, TileV):
            return v
        if isinstance(v, ConstV) and isinstance(v.value, (bool, int, float)):
            if isinstance(v.value, float) and not like.is_float:
                like = dt.f32
            return self.const_tile(v.value, like, (), span)
        hint = ("load a tile of the tensor first: `load_tile_like(x, z)` or "
                "`x.load_tile(shape, index)`" if isinstance(v, TensorV) else
                "arithmetic takes tiles and numbers (a tuple, a dtype or a tensor is none)")
        raise self.low.error("CT3001", "expected a tile or a number", span, "this value",
                             help=hint)

    def broadcast_to(self, t: TileV, shape: tuple[int, ...], span: Span) -> TileV:
        if t.shape == shape:
            return t
        if broadcast_shapes(t.shape, shape) != shape:
            raise self.low.error(
                "CT3002", f"cannot broadcast a tile of shape {list(t.shape)} to {list(shape)}",
                span, "shape mismatch",
            )
        padded = (1,) * (len(shape) - len(t.shape)) + t.shape
        r = self.b.reshape(t.v, padded)
        return TileV(self.b.broadcast(r, shape))

    def unify(self, a: LVal, b: LVal, span: Span) -> tuple[TileV, TileV]:
        """Bring two operands to one dtype and one shape."""
        if isinstance(a, TileV) and isinstance(b, TileV):
            target = self.promote(a.dtype, b.dtype, span)
        elif isinstance(a, TileV):
            target = self._weak(a.dtype, b)
        elif isinstance(b, TileV):
            target = self._weak(b.dtype, a)
        else:
            target = dt.f32
        ta = self.convert(self.to_tile(a, target, span), target)
        tb = self.convert(self.to_tile(b, target, span), target)
        shape = broadcast_shapes(ta.shape, tb.shape)
        if shape is None:
            raise self.low.error(
                "CT3002",
                f"shapes {list(ta.shape)} and {list(tb.shape)} do not broadcast",
                span, "operands of this expression",
                help="numpy rules: trailing dimensions must be equal or 1",
            )
        return self.broadcast_to(ta, shape, span), self.broadcast_to(tb, shape, span)

    def promote(self, a: DType, b: DType, span: Span) -> DType:
        """`promote_types`, with CT3090 where two types have no implicit common type."""
        try:
            return promote_types(a, b)
        except PromotionError:
            f8 = a.is_f8 or b.is_f8
            raise self.low.error(
                "CT3090", f"`{a.name}` and `{b.name}` have no implicit common type", span,
                "operands", help="convert one with `.astype(...)` first" + (
                    " (f8 tiles are storage: `.astype(f32)` to compute)" if f8 else
                    " (no signed type holds every u64)"),
            ) from None

    def no_f8(self, t: TileV, span: Span, what: str) -> None:
        """f8 tiles load, store, convert and feed `mma`; Tile IR has no arithmetic on them."""
        if t.dtype.is_f8:
            raise self.low.error(
                "CT3005", f"{what} is not defined for `{t.dtype.name}` tiles", span,
                "f8 operands", help="f8 is a storage type: compute in f32 (`.astype(f32)`) "
                "and convert back with `.astype(...)` or a store",
            )

    @staticmethod
    def _weak(tile_dtype: DType, other: LVal) -> DType:
        if isinstance(other, ConstV) and isinstance(other.value, float) and not tile_dtype.is_float:
            return dt.f32
        return tile_dtype

    # -- operators -------------------------------------------------------------------------

    def binop(self, op: str, a: LVal, b: LVal, span: Span) -> LVal:
        if op == "add" and (isinstance(a, TextV) or isinstance(b, TextV)):
            # pieces of an f-string (`"x = " + format(t)`)
            from .ops.debug import text_of

            ta, tb = text_of(a), text_of(b)
            if ta is None or tb is None:
                raise self.low.error("CT3001", "text can only be joined to text", span,
                                     "not text")
            return TextV(ta.parts + tb.parts)
        if isinstance(a, ConstV) and isinstance(b, ConstV):
            self._no_huge_fold(op, a.value, b.value, span)
            try:
                out = FOLD[op](a.value, b.value)
            except Exception as exc:
                raise self.low.error(
                    "CT3003", f"cannot evaluate this constant expression: {exc}", span, "here",
                    help="a constant expression is computed when the kernel is compiled, as "
                    "Python computes it: make it one Python can evaluate",
                ) from None
            return ConstV(self.const_int_fits(out, span))
        if op == "matmul":
            return self.low.ops.matmul(a, b, span)
        if op == "pow" and _int_exponent(a, b):
            return self._int_pow(a, b, span)
        if op == "div":
            x, y = self.unify(a, b, span)
            self.no_f8(x, span, "`/`")
            if not x.dtype.is_float:
                x, y = self.convert(x, dt.f32), self.convert(y, dt.f32)
            return TileV(self.b.binary("divf", x.v, y.v))
        x, y = self.unify(a, b, span)
        d = x.dtype
        self.no_f8(x, span, f"operator `{op}`")
        negate = None
        if op in ("floordiv", "mod") and not d.is_float and not d.is_bool and not _plain_divisor(b):
            y, negate = self._guarded_divisor(y)
        if op in ("add", "sub", "mul") and d.is_float:
            return TileV(self.b.binary(FLOAT_OPS[op], x.v, y.v))
        if op in INT_OPS and not d.is_float:
            if d.is_bool and op in ("add", "sub", "mul", "lshift"):
                raise self.low.error("CT3005", f"`{op}` on booleans", span, "bool operands")
            if op == "lshift":
                return self._shift("shli", x, y, b)
            return TileV(self.b.binary(INT_OPS[op], x.v, y.v))
        if op == "rshift" and d.is_int:  # arithmetic for signed types, logical for unsigned
            return self._shift("shri", x, y, b)
        if op == "floordiv":
            if d.is_float:
                q = self.b.binary("divf", x.v, y.v)
                return TileV(self.b.unary("floor", q))
            # (unsigned: the floor is the truncation, which is all an unsigned divi takes)
            q = self.b.op("divi", [x.v, y.v], [x.type],
                          {"signedness": sign(d),
                           "rounding": "zero" if d.unsigned else "negative_inf"}).result
            if negate is not None:
                zero = self.const_tile(0, d, x.shape).v
                q = self.b.select(negate, self.b.binary("subi", zero, q), q)
            return TileV(q)
        if op == "mod":
            return self._python_mod(x, y)
        if op == "pow" and d.is_float:
            return TileV(self.b.op("pow", [x.v, y.v], [x.type]).result)
        raise self.low.error(
            "CT3005", f"operator `{op}` is not defined for `{d.name}` tiles", span, "operands",
            help="bit operations take integer tiles: convert with `.astype(i32)`, or use "
            "`bitcast` to reinterpret the bits" if d.is_float else
            "convert the operands with `.astype(...)` to a type that has it",
        )

    def const_int_fits(self, v: Any, span: Span) -> Any:
        """A compile-time int the kernel can hold: within 64 bits (signed or unsigned), as a
        literal must be (CT0012); a float or a bool as it is."""
        if isinstance(v, int) and not isinstance(v, bool) and not CONST_MIN <= v <= CONST_MAX:
            shown = str(v) if v.bit_length() <= 200 else f"an integer of {v.bit_length()} bits"
            raise self.low.error(
                "CT3003", f"this constant expression is {shown}, which does not fit in 64 "
                "bits", span, "too large", help="kernel integers are at most 64-bit: keep "
                "compile-time arithmetic within them")
        return v

    def _no_huge_fold(self, op: str, a: Any, b: Any, span: Span) -> None:
        """`2 ** 10**9` or `1 << 10**12` would take Python minutes (or all memory) to fold
        into a number no kernel can hold: refused before it is computed."""
        if not (isinstance(a, int) and isinstance(b, int)):
            return
        huge = (op == "pow" and abs(a) > 1 and b > 0 and (abs(a).bit_length() - 1) * b > 64) \
            or (op == "lshift" and a != 0 and b > 64)
        if huge:
            raise self.low.error(
                "CT3003", "this constant expression does not fit in 64 bits", span,
                "too large", help="kernel integers are at most 64-bit: keep compile-time "
                "arithmetic within them")

    def _int_pow(self, a: LVal, b: LVal, span: Span) -> TileV:
        """`a ** b` of integers, in their promoted type (products wrap like `*`). A constant
        exponent unrolls into square-and-multiply; a device exponent runs the same over its
        bits in a loop (one trip per bit but the sign's). A negative device exponent gives
        the integer part of the true power: 1 for a base of 1, +-1 for -1, else 0."""
        if isinstance(b, ConstV):
            assert isinstance(b.value, int)  # `_int_exponent`
            n = int(b.value)
            if n < 0:
                raise self.low.error(
                    "CT3053", f"an integer raised to the negative power {n}", span,
                    "negative exponent", help="integers have no negative powers: convert "
                    "the base with `.astype(f32)` for a float result",
                )
            x = self.to_tile(a, dt.i32, span)
            if x.dtype.is_bool:
                raise self.low.error("CT3005", "`**` on booleans", span, "bool operands")
            result: TileV | None = None
            while n:
                if n & 1:
                    result = x if result is None else TileV(self.b.binary("muli", result.v, x.v))
                n >>= 1
                if n:
                    x = TileV(self.b.binary("muli", x.v, x.v))
            return result if result is not None else self.const_tile(1, x.dtype, x.shape)
        x, e = self.unify(a, b, span)
        d, shape = x.dtype, x.shape
        if d.is_bool:
            raise self.low.error("CT3005", "`**` on booleans", span, "bool operands")
        b_ = self.b
        one = self.const_tile(1, d, shape).v
        zero = self.const_tile(0, d, shape).v
        # every bit of an unsigned exponent; all but the sign bit of a signed one
        trips = d.bits if d.unsigned else d.bits - 1
        lower, upper, step = (b_.scalar_const(v, dt.i32) for v in (0, trips, 1))
        with b_.for_(lower, upper, step, init=[one, x.v, e.v]) as loop:
            _, acc, base, rest = loop.args
            odd = b_.cmp("cmpi", "not_equal", b_.binary("andi", rest, one), zero)
            acc = b_.select(odd, b_.binary("muli", acc, base), acc)
            rest = b_.op("shri", [rest, one], [rest.type], {"signedness": sign(d)}).result
            b_.continue_([acc, b_.binary("muli", base, base), rest])
        power = loop.results[0]
        if d.unsigned:
            return TileV(power)
        minus_one = self.const_tile(-1, d, shape).v
        odd_e = b_.cmp("cmpi", "not_equal", b_.binary("andi", e.v, one), zero)
        odd_sign = b_.select(odd_e, minus_one, one)
        unit = b_.select(b_.cmp("cmpi", "equal", x.v, minus_one), odd_sign,
                         b_.select(b_.cmp("cmpi", "equal", x.v, one), one, zero))
        negative = b_.cmp("cmpi", "less_than", e.v, zero)
        return TileV(b_.select(negative, unit, power))

    def _shift(self, name: str, x: TileV, y: TileV, amount: LVal) -> TileV:
        """`x << y` and `x >> y` with the amount read as unsigned, as Tile IR reads it, and
        defined for every amount: one of the width or more shifts every bit out (0, or the
        sign bits of a signed `>>`). tileiras takes a shift by the width or more for
        undefined behaviour (it deleted a whole kernel that shifted a constant 1 by 40,
        bounds checks and stores included), so such an amount never reaches `shli`/`shri`:
        a constant one gives its result here, a device one is clamped to width - 1 and
        the result then chosen. The interpreter stops at an unclamped one."""
        b, d = self.b, x.dtype
        arith_shr = name == "shri" and not d.unsigned
        attrs = {"signedness": sign(d)} if name == "shri" else {"overflow": "none"}
        top = d.bits - 1
        if isinstance(amount, ConstV) and isinstance(amount.value, int):
            if 0 <= amount.value <= top:
                return TileV(b.op(name, [x.v, y.v], [x.type], attrs).result)
            if not arith_shr:
                return self.const_tile(0, d, x.shape)
            by = self.const_tile(top, d, x.shape).v
            return TileV(b.op(name, [x.v, by], [x.type], attrs).result)
        last = self.const_tile(top, d, y.shape).v
        clamped = b.op("mini", [y.v, last], [y.type], {"signedness": "unsigned"}).result
        r = b.op(name, [x.v, clamped], [x.type], attrs).result
        if arith_shr:  # by width - 1 already leaves only sign bits
            return TileV(r)
        past = b.cmp("cmpi", "greater_than", y.v, last, signedness="unsigned")
        return TileV(b.select(past, self.const_tile(0, d, x.shape).v, r))

    def _guarded_divisor(self, y: TileV) -> tuple[TileV, Value | None]:
        """Integer division without Tile IR's undefined cases (a zero divisor, and the most
        negative integer by -1): divisors 0 and -1 read as 1, and the quotient by -1 is
        then negated (wrapping: `INT_MIN // -1 == INT_MIN`). So `x // 0 == x`, `x % 0 == 0`,
        `x % -1 == 0` (as in Python), and a kernel the checker accepted never reaches
        undefined behaviour through a divisor that happens to be 0 or -1 at run time. The
        checker, the interpreter and the fuzzer's model use the same definition
        (`sym::py_divmod`). Returns the divisor to use and where to negate the quotient."""
        b = self.b
        zero = self.const_tile(0, y.dtype, y.shape).v
        one = self.const_tile(1, y.dtype, y.shape).v
        is_zero = b.cmp("cmpi", "equal", y.v, zero)
        if y.dtype.unsigned:  # no -1, no overflowing quotient: only 0 needs a guard
            return TileV(b.select(is_zero, one, y.v)), None
        minus_one = self.const_tile(-1, y.dtype, y.shape).v
        negate = b.cmp("cmpi", "equal", y.v, minus_one)
        use_one = b.binary("ori", is_zero, negate)
        return TileV(b.select(use_one, one, y.v)), negate

    def _python_mod(self, x: TileV, y: TileV) -> TileV:
        """Python's `%`: the result takes the divisor's sign (Tile IR's rem truncates)."""
        b = self.b
        if x.dtype.is_float:
            r = b.op("remf", [x.v, y.v], [x.type]).result
            zero = self.const_tile(0.0, x.dtype, x.shape).v
            rneg = b.cmp("cmpf", "less_than", r, zero)
            yneg = b.cmp("cmpf", "less_than", y.v, zero)
            rnz = b.cmp("cmpf", "not_equal", r, zero)
            cmp = "cmpf"
        else:
            r = b.op("remi", [x.v, y.v], [x.type], {"signedness": sign(x.dtype)}).result
            if x.dtype.unsigned:  # never negative: Python's % is the remainder
                return TileV(r)
            zero = self.const_tile(0, x.dtype, x.shape).v
            rneg = b.cmp("cmpi", "less_than", r, zero)
            yneg = b.cmp("cmpi", "less_than", y.v, zero)
            rnz = b.cmp("cmpi", "not_equal", r, zero)
            cmp = "cmpi"
        del cmp
        differ = b.binary("xori", rneg, yneg)
        fix = b.binary("andi", differ, rnz)
        adjusted = b.binary("addf" if x.dtype.is_float else "addi", r, y.v)
        return TileV(b.select(fix, adjusted, r))

    def compare(self, op: str, a: LVal, b: LVal, span: Span) -> LVal:
        if isinstance(a, ConstV) and isinstance(b, ConstV):
            return ConstV(FOLD[op](a.value, b.value))
        a, b = self._bool_as_int(a, b), self._bool_as_int(b, a)
        x, y = self.unify(a, b, span)
        self.no_f8(x, span, f"comparison `{op}`")
        if x.dtype.is_float:
            ordering = "unordered" if op == "ne" else "ordered"
            return TileV(self.b.cmp("cmpf", PREDICATES[op], x.v, y.v,
                                    comparison_ordering=ordering))
        return TileV(self.b.cmp("cmpi", PREDICATES[op], x.v, y.v))

    def _bool_as_int(self, v: LVal, other: LVal) -> LVal:
        """A bool tile compared with an integer (or another bool) compares as 0/1, as numpy
        compares them: Tile IR's `cmpi` takes no `i1`, and a bool tile met by the constant
        2 became `True` (`mask == 2` was `mask`)."""
        if not (isinstance(v, TileV) and v.dtype.is_bool):
            return v
        if isinstance(other, TileV) and other.dtype.is_float:
            return v
        if isinstance(other, ConstV) and isinstance(other.value, float):
            return v
        to = other.dtype if isinstance(other, TileV) and other.dtype.is_int else dt.i32
        return self.convert(v, to)

    def unary(self, op: str, a: LVal, span: Span) -> LVal:
        if isinstance(a, ConstV):
            v = a.value
            if op == "neg" and isinstance(v, (int, float)):
                return ConstV(-v)
            if op == "pos":
                return a
            if op == "not":
                return ConstV(not v)
            if op == "invert" and isinstance(v, int):
                return ConstV(~v)
        if not isinstance(a, TileV):
            raise self.low.error("CT3001", f"`{op}` needs a tile or a number", span, "operand")
        if op == "pos":
            return a
        if op == "neg":
            self.no_f8(a, span, "`-`")
            if a.dtype.is_float:
                return TileV(self.b.unary("negf", a.v))
            return TileV(self.b.unary("negi", a.v, overflow="none"))
        if op in ("not", "invert"):
            if a.dtype.is_bool or op == "invert":
                if a.dtype.is_float:
                    raise self.low.error("CT3005", f"`~` is not defined for `{a.dtype.name}` "
                                         "tiles", span, "operand")
                every_bit = 2**a.dtype.bits - 1 if a.dtype.unsigned else -1
                ones = self.const_tile(True if a.dtype.is_bool else every_bit, a.dtype, a.shape)
                return TileV(self.b.binary("xori", a.v, ones.v))
            return self.compare("eq", a, ConstV(0), span)
        raise self.low.error("CT3005", f"unary `{op}` unsupported", span, "operand")

    def truthy(self, v: LVal, span: Span) -> LVal:
        """Condition value: a compile-time bool, or a rank-0 i1 tile."""
        if isinstance(v, ConstV):
            return ConstV(bool(v.value))
        if isinstance(v, TileV):
            if v.shape != ():
                raise self.low.error(
                    "CT3006", f"a condition must be a scalar, not a tile of shape {list(v.shape)}",
                    span, "tile condition", help="use `where(cond, a, b)` for elementwise choice",
                )
            if v.dtype.is_bool:
                return v
            return self.convert(v, dt.bool_)
        raise self.low.error("CT3006", "this value cannot be a condition", span, "condition")


def is_pow2(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0 and not math.isnan(n)

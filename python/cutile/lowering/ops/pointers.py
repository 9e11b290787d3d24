"""Raw pointers and `assume` hints, the unsafe half of the language (docs/unsafe.md):
`ptr_offset`, `load_ptr`, `store_ptr`, `int_to_ptr`, `assume_div_by`, `assume_bounds`.

A pointer is a Tile IR `tile<ptr<T>>` value: a `Ptr[T]` parameter is a rank-0 one, and
`ptr_offset` makes tiles of them (element offsets, broadcast with the pointers). `load_ptr`
and `store_ptr` are `load_ptr_tko` and `store_ptr_tko` with an optional mask (and, for a
load, the padding its masked-off lanes read), built with the helpers of gather and scatter
(`atomics.py`) but with no bounds mask: nothing checks a raw pointer on the device. The
interpreter's detector does (every address must lie inside the argument it was derived
from, CT6913).

Ordering: a block's pointer loads and stores thread one token (`PTR_TOKEN`, made in the
prologue of a kernel that has one), so they happen in program order. They are not ordered
with accesses through tensor parameters: a `Ptr` argument never overlaps another argument
of the launch (the launcher holds it exclusively), and what a pointer forged by
`int_to_ptr` points at is the program's business.

`assume_div_by` and `assume_bounds` are Tile IR `assume` ops (`DivBy`, `Bounded`): the GPU
compiler trusts them (a false one is undefined behaviour), the interpreter checks them (a
false one is an `InterpreterError`), and the checker never uses them in a proof.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ... import dtypes as dt
from ...frontend import kast as K
from ...ir import Bounded, DivBy, PointerType, Value
from ..arith import broadcast_shapes
from ..support import _all_exprs
from ..values import ConstV, LVal, TileV
from .atomics import AtomicOps
from .base import Bound

if TYPE_CHECKING:
    from ..lower import Lowerer

# The key of the pointer accesses' token among the lowerer's tokens (no parameter's name).
PTR_TOKEN = "<pointers>"
_ACCESSES = ("load_ptr", "store_ptr")
_MISUSE_HELP = ("offset pointers with `ptr_offset(p, offsets)`, read and write through them "
                "with `load_ptr` / `store_ptr`")


def uses_pointers(doc: K.Document) -> bool:
    """Does any function of the kernel load or store through a pointer?"""
    return any(isinstance(e, K.Call) and e.func in _ACCESSES
               for fn in doc.functions for e in _all_exprs(fn.body))


def is_pointer(v: LVal) -> bool:
    return isinstance(v, TileV) and isinstance(v.type.element, PointerType)


@contextmanager
def pointer_misuse(low: Lowerer, span: K.Span) -> Iterator[None]:
    """Arithmetic, comparisons or conversions of a pointer tile (which has no numeric
    element type) become a CT3082 at `span` instead of a Python TypeError."""
    try:
        yield
    except TypeError as exc:
        if "tile of pointers" not in str(exc):
            raise
        raise low.error("CT3082", "a pointer is not a number: it takes no arithmetic, "
                        "comparison or conversion", span, "pointer used as a number",
                        help=_MISUSE_HELP) from None


class PointerOps(AtomicOps):
    def bind_pointer_token(self) -> None:
        """In the entry's prologue: the token of the pointer accesses, if there are any
        (made before any loop or branch, so that control flow carries it)."""
        if uses_pointers(self.low.doc):
            self.low.tokens[PTR_TOKEN] = self.b.make_token()

    def _pointers(self, v: LVal, span: K.Span, what: str) -> TileV:
        if isinstance(v, TileV) and is_pointer(v):
            return v
        raise self.err("CT3082", f"`{what}` takes pointers: a `Ptr` parameter or a tile made "
                       "by `ptr_offset` or `int_to_ptr`", span, "not a pointer",
                       help=_MISUSE_HELP)

    def _integers(self, v: LVal, span: K.Span, what: str) -> TileV:
        """An integer operand as an integer tile (a literal as i32, or i64 past 32 bits;
        i8/i16 tiles widened to i32)."""
        if isinstance(v, ConstV) and type(v.value) is int:
            wide = not -(2**31) <= v.value < 2**31
            return self.arith.const_tile(v.value, dt.i64 if wide else dt.i32, (), span)
        if isinstance(v, TileV) and not is_pointer(v) and v.dtype.is_int:
            return v if v.dtype.bits >= 32 else self.arith.convert(v, dt.i32)
        raise self.err("CT3082", f"{what} must be integers", span, "not an integer")

    def _mask(self, v: LVal, shape: tuple[int, ...], span: K.Span, what: str) -> Value | None:
        if isinstance(v, ConstV) and v.value is None:
            return None
        if isinstance(v, ConstV) and isinstance(v.value, bool):
            return self.arith.const_tile(v.value, dt.bool_, shape, span).v
        if not (isinstance(v, TileV) and not is_pointer(v) and v.dtype.is_bool):
            raise self.err("CT3082", f"the mask of `{what}` must be a bool tile", span, "mask",
                           help="compare to make one, e.g. `mask=offs < n`")
        if broadcast_shapes(v.shape, shape) != shape:
            raise self.err("CT3002", f"a mask of shape {list(v.shape)} does not broadcast to "
                           f"the pointers' shape {list(shape)}", span, "mask")
        return self.arith.broadcast_to(v, shape, span).v

    # ------------------------------------------------------------------ pointers

    def f_ptr_offset(self, a: Bound, span: K.Span) -> LVal:
        ptr = self._pointers(a["ptr"], span, "ptr_offset")
        off = self._integers(a["offsets"], span, "the offsets of `ptr_offset` (in elements)")
        shape = broadcast_shapes(ptr.shape, off.shape)
        if shape is None:
            raise self.err("CT3002", f"pointers of shape {list(ptr.shape)} and offsets of "
                           f"shape {list(off.shape)} do not broadcast together", span,
                           "offsets")
        self._check_shape(shape, span)
        p = self.arith.broadcast_to(ptr, shape, span)
        o = self.arith.broadcast_to(off, shape, span)
        return TileV(self.b.offset(p.v, o.v))

    def f_int_to_ptr(self, a: Bound, span: K.Span) -> LVal:
        value = self._integers(a["value"], span, "the address of `int_to_ptr`")
        pointee = self.dtype_arg(a["dtype"], span)
        return TileV(self.b.int_to_ptr(self.arith.convert(value, dt.i64).v, pointee))

    def f_load_ptr(self, a: Bound, span: K.Span) -> LVal:
        ptrs = self._pointers(a["ptrs"], span, "load_ptr")
        element = ptrs.type.element
        assert isinstance(element, PointerType)
        mask = self._mask(a["mask"], ptrs.shape, span, "load_ptr")
        padding = None
        if mask is not None:  # masked-off lanes read the padding (zero unless given)
            pad = a["padding"] if a.given("padding") else ConstV("zero")
            padding = self._padding(pad, element.pointee, ptrs.shape, span, "the pointers'")
        elif a.given("padding"):
            raise self.err("CT3082", "`load_ptr` has a padding but no mask", span, "padding",
                           help="pass `mask=` too: the padding is what masked-off lanes read")
        value, tok = self.b.load_ptr(ptrs.v, mask, padding, self._token(PTR_TOKEN))
        self.low.tokens[PTR_TOKEN] = tok
        return TileV(value)

    def f_store_ptr(self, a: Bound, span: K.Span) -> LVal:
        ptrs = self._pointers(a["ptrs"], span, "store_ptr")
        element = ptrs.type.element
        assert isinstance(element, PointerType)
        value = self._values(a["value"], element.pointee, ptrs.shape, span, "the pointers'")
        mask = self._mask(a["mask"], ptrs.shape, span, "store_ptr")
        self.low.tokens[PTR_TOKEN] = self.b.store_ptr(ptrs.v, value, mask,
                                                      self._token(PTR_TOKEN))
        return ConstV(None)

    # ------------------------------------------------------------------ assume

    def _assumable(self, v: LVal, span: K.Span, what: str, pointers: bool) -> TileV | None:
        """The tile an assume applies to (None: a compile-time int, checked here)."""
        if isinstance(v, ConstV) and type(v.value) is int:
            return None
        if isinstance(v, TileV) and ((pointers and is_pointer(v))
                                     or (not is_pointer(v) and v.dtype.is_int)):
            return v
        kinds = "integers or pointers" if pointers else "integers"
        raise self.err("CT3083", f"`{what}` applies to {kinds}", span, "value")

    def f_assume_div_by(self, a: Bound, span: K.Span) -> LVal:
        divisor = self.int_const(a["divisor"], span, "the divisor of `assume_div_by`")
        if divisor <= 0 or divisor & (divisor - 1):
            # Tile IR's `div_by` takes a power of two (tileiras refused others, CT7004)
            raise self.err("CT3083", f"the divisor of `assume_div_by` must be a power of two, "
                           f"got {divisor}", span, "divisor", help="assume the largest power "
                           "of two that divides the values (1, 2, 4, ...)")
        x = a["x"]
        tile = self._assumable(x, span, "assume_div_by", pointers=True)
        if tile is None:
            assert isinstance(x, ConstV) and isinstance(x.value, int)
            if x.value % divisor:
                raise self.err("CT3083", f"{x.value} is not a multiple of {divisor}", span,
                               "false assumption")
            return x
        return TileV(self.b.assume(tile.v, DivBy(divisor)))

    def f_assume_bounds(self, a: Bound, span: K.Span) -> LVal:
        bounds: list[int | None] = []
        for name in ("lo", "hi"):
            v = a[name]
            bounds.append(None if isinstance(v, ConstV) and v.value is None else
                          self.int_const(v, span, f"`{name}` of `assume_bounds` (or None)"))
        lo, hi = bounds
        if lo is None and hi is None:
            raise self.err("CT3083", "`assume_bounds` needs `lo`, `hi` or both", span,
                           "no bounds")
        if lo is not None and hi is not None and lo > hi:
            raise self.err("CT3083", f"`assume_bounds` with lo = {lo} > hi = {hi}", span,
                           "empty range")
        x = a["x"]
        tile = self._assumable(x, span, "assume_bounds", pointers=False)
        if tile is None:
            assert isinstance(x, ConstV) and isinstance(x.value, int)
            if (lo is not None and x.value < lo) or (hi is not None and x.value > hi):
                raise self.err("CT3083", f"{x.value} is outside [{lo}, {hi}]", span,
                               "false assumption")
            return x
        bits = tile.dtype.bits
        for b in (lo, hi):
            if b is not None and not -(2 ** (bits - 1)) <= b < 2 ** (bits - 1):
                raise self.err("CT3083", f"the bound {b} does not fit `{tile.dtype.name}`",
                               span, "bound")
        return TileV(self.b.assume(tile.v, Bounded(lo, hi)))

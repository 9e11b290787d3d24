"""Device `print`: `print("x =", t)` and f-strings (`f"x = {t:.3f}"`, which the frontend
writes as `"x = " + format(t, ".3f")`) lowered to one Tile IR `print_tko`.

Compile-time values (literals, `Const`s, dtypes, shapes) are formatted here, by Python's own
`format`; tiles become printf conversions for their element type (`%d` for integers up to
32 bits and booleans, `%lld` for `i64`, `%f` for floats), with the flags, width, precision
and type of a format spec (`{t:+08.3f}`, `{n:x}`). The prints of a block are ordered by a
token of their own, so they come out in program order.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ... import dtypes as dt
from ...frontend import kast as K
from ..values import ConstV, DTypeV, LVal, TextV, TileV, TupleV
from .base import Bound, OpsBase

PRINT_TOKEN = "$print"

_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<alt>#)?(?P<zero>0)?"
    r"(?P<width>\d+)?(?P<group>[,_])?(?:\.(?P<prec>\d+))?(?P<type>[a-zA-Z%])?"
)
_FLOAT_TYPES = "eEfFgG"
_INT_TYPES = "dxXo"


def prints(doc: K.Document) -> bool:
    """Does any function of `doc` call `print`?"""

    def visit(node: Any) -> bool:
        if isinstance(node, K.Call) and node.func == "builtins.print":
            return True
        if isinstance(node, list):
            return any(visit(x) for x in node)
        if dataclasses.is_dataclass(node) and not isinstance(node, (K.Span, type)):
            return any(visit(getattr(node, f.name)) for f in dataclasses.fields(node))
        return False

    return visit(doc.functions)


def text_of(v: LVal) -> TextV | None:
    """`v` as text, if it is text (a string literal or formatted pieces)."""
    if isinstance(v, TextV):
        return v
    if isinstance(v, ConstV) and isinstance(v.value, str):
        return TextV((v.value,))
    return None


class DebugOps(OpsBase):
    def f_py_format(self, a: Bound, span: K.Span) -> LVal:
        spec = a["format_spec"]
        if not (isinstance(spec, ConstV) and isinstance(spec.value, str)):
            raise self.err("CT3039", "a format spec must be a string literal", span, "spec")
        return TextV(tuple(self._pieces(a["value"], spec.value, span)))

    def f_py_print(self, a: Bound, span: K.Span) -> LVal:
        seps = []
        for name, default in (("sep", " "), ("end", "\n")):
            v = a[name]
            if isinstance(v, ConstV) and v.value is None:
                seps.append(default)
            elif isinstance(v, ConstV) and isinstance(v.value, str):
                seps.append(v.value)
            else:
                raise self.err("CT3039", f"`print`'s `{name}` must be a string literal", span,
                               name)
        sep, end = seps
        values = a["values"]
        items = values.items if isinstance(values, TupleV) else (values,)
        pieces: list[str | tuple[str, TileV]] = []
        for i, v in enumerate(items):
            if i:
                pieces.append(sep)
            pieces.extend(self._pieces(v, "", span))
        pieces.append(end)
        fmt: list[str] = []
        operands = []
        for p in pieces:
            if isinstance(p, str):
                fmt.append(p.replace("%", "%%"))
            else:
                fmt.append(p[0])
                operands.append(p[1].v)
        tokens = self.low.tokens
        tokens[PRINT_TOKEN] = self.b.print_("".join(fmt), operands, tokens.get(PRINT_TOKEN))
        return ConstV(None)

    def _pieces(self, v: LVal, spec: str, span: K.Span) -> list[str | tuple[str, TileV]]:
        """The text of `v` formatted by `spec`: strings, and (conversion, tile) pairs."""
        text = text_of(v)
        if text is not None:
            if spec:
                raise self.err("CT3039", "text cannot take a format spec in a kernel", span,
                               "spec")
            return list(text.parts)
        if isinstance(v, ConstV):
            try:
                return [format(v.value, spec)]
            except (ValueError, TypeError) as exc:
                raise self.err("CT3039", f"cannot format {v.value!r} with {spec!r}: {exc}",
                               span, "format") from None
        if isinstance(v, DTypeV):
            return [format(v.dtype.name, spec)]
        if isinstance(v, TupleV):
            out: list[str | tuple[str, TileV]] = ["("]
            for i, x in enumerate(v.items):
                out += ([", "] if i else []) + self._pieces(x, spec, span)
            return [*out, ",)" if len(v.items) == 1 else ")"]
        if isinstance(v, TileV):
            conv, tile = self._conversion(v, spec, span)
            return [(conv, tile)]
        raise self.err("CT3039", "only tiles, numbers, strings, dtypes and tuples of them can be "
                       "printed in a kernel", span, "cannot print this",
                       help="print a tile loaded from a tensor (`print(z.load())`)")

    def _conversion(self, t: TileV, spec: str, span: K.Span) -> tuple[str, TileV]:
        """The printf conversion of format spec `spec` for tile `t` (converted where the
        spec asks for floats and the tile holds integers)."""
        m = _SPEC.fullmatch(spec)
        if m is None:
            raise self.err("CT3039", f"unknown format spec {spec!r}", span, "spec")
        g = m.groupdict()
        bad = []
        if g["align"] not in (None, "<", ">") or g["fill"] not in (None, " "):
            bad.append("fill and `=`/`^` alignment")
        if g["group"]:
            bad.append("digit grouping")
        ty = g["type"] or ("f" if t.dtype.is_float else "d")
        if ty not in _FLOAT_TYPES + _INT_TYPES:
            bad.append(f"type `{ty}`")
        if bad:
            raise self.err("CT3039", f"format spec {spec!r}: {', '.join(bad)} cannot be printed "
                           "by a kernel", span, "spec",
                           help="kernels print with C printf: flags `-+ #0`, a width, a "
                           "precision and one of the types d x X o e E f F g G")
        if ty in _INT_TYPES:
            if t.dtype.is_float:
                raise self.err("CT3039", f"format type `{ty}` needs integers, and this tile "
                               f"holds `{t.dtype.name}`", span, "float tile",
                               help="use `f`, `e` or `g`, or convert with `.astype(i32)`")
            if g["prec"] is not None:
                raise self.err("CT3039", "precision is not allowed with an integer format",
                               span, "spec")
            if t.dtype.is_bool:
                t = self.arith.convert(t, dt.i32)
            length = "ll" if t.dtype.bits == 64 else ""
        else:
            if not t.dtype.is_float:
                t = self.arith.convert(t, dt.f64 if t.dtype.bits == 64 else dt.f32)
            length = ""
        flags = ("-" if g["align"] == "<" else "") + (g["sign"] or "").replace("-", "")
        flags += (g["alt"] or "") + (g["zero"] or "")
        width = g["width"] or ""
        prec = f".{g['prec']}" if g["prec"] is not None else ""
        return f"%{flags}{width}{prec}{length}{ty}", t

"""Index maps built from integers narrower than 32 bits, unsigned, or of a type the checker
does not know (a tile's `.item()`, a merge through an `if`), for the generator
(`generate.py`).

The device computes such a value in its own type: `u8` (w + 200) + 100 - w is 44, not 300,
and `i8` w * 0 + 100 + 100 is -56. A checker that reads them as 32-bit integers cancels or
folds them to the mathematical value and proves an index the device does not compute
(the review of 2026-12-01: `test_known_classes.py`, narrow integers). The same shapes come
with constants too small to wrap and with clamps (`min`/`max` of a narrow value never
wrap), which are safe: they measure what the checker still proves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import UNSIGNED, Bin, Call, Cmp, Expr, IntOf, Lit, ScalarRef, Var
from .program import InParam, ItemDef, Pick

if TYPE_CHECKING:
    from .draw import Draw
    from .program import Stmt

# Launch values at the edges of each type, where arithmetic wraps (and a few that do not).
EDGES: dict[str, list[int]] = {
    "u8": [255, 254, 250, 200, 128, 127, 56, 3, 1, 0],
    "i8": [127, 126, 100, -128, -127, -100, -1, 0, 3],
    "i16": [32767, 32766, 20000, -32768, -1, 0, 5],
    "u32": [2**32 - 1, 2**32 - 5, 2**31 + 1, 2**31, 2**31 - 1, 7, 3, 0],
    "i32": [2**31 - 1, 2**31 - 100, -(2**31), -3, 0, 7],
    "i64": [2**32 - 5, 2**32 + 3, -(2**32) + 2, 2**31, -(2**31) - 1, 2**40, 3, 0],
}

# Two addends whose sum passes the type's top (`u8`: 200 + 100 = 300 is 44), by type; an
# `i32` tile value is not narrow on the device, and its sum cancels modulo 2^32.
WRAPS = {"u8": (200, 100), "i8": (100, 100), "i16": (20000, 20000), "u32": (2**31, 2**31),
         "i32": (2**30, 2**30)}
ITEM_TYPES = [("u8", 4), ("i8", 3), ("u32", 3), ("i32", 2)]
ITEM_LEN = 4  # elements of a data input: every `.item()` position is inside it


class NarrowGen:
    """The narrow-integer methods of the generator (mixed into `generate.Gen`)."""

    d: Draw
    rank: int
    features: set[str]
    bid_e: list[Expr]
    nb_e: list[Expr]
    body: list[Stmt]
    scalars: dict[str, str]
    scalar_values: dict[str, list[int]]
    data_ins: list[InParam]

    def tiles_of(self, k: int) -> Expr:
        raise NotImplementedError

    def fresh(self, base: str) -> str:
        raise NotImplementedError

    def typed_scalar(self, dtype: str) -> ScalarRef:
        name = f"s{len(self.scalars)}"
        self.scalars[name] = dtype
        self.scalar_values[name] = EDGES[dtype]
        if dtype in UNSIGNED:
            self.features.add("unsigned-scalar")
        return ScalarRef(name)

    def narrow_source(self) -> tuple[Expr, str]:
        """A device integer the checker must not follow through arithmetic, and its type:
        a scalar of a narrow or unsigned type, or a data input's `.item()`."""
        d = self.d
        if d.chance(0.4):
            self.features.add("narrow-item")
            dtype = d.weighted(ITEM_TYPES)
            name = f"y{len(self.data_ins)}"
            self.data_ins.append(InParam(name, 1, (-1,), dtype))
            v = self.fresh("w")
            self.body.append(ItemDef(v, name, d.between(0, ITEM_LEN - 1)))
            return Var(v), dtype
        dtype = d.weighted([("u8", 4), ("i8", 3), ("u32", 3), ("i16", 1)])
        return self.typed_scalar(dtype), dtype

    def narrow_merged(self) -> tuple[Expr, str]:
        """A narrow source, sometimes merged with itself plus one through an `if`: the merge
        has the source's type, which the checker does not track past the join."""
        d = self.d
        w, dtype = self.narrow_source()
        if not d.chance(0.3):
            return w, dtype
        self.features.add("narrow-merge")
        v = self.fresh("v")
        cond = Cmp(d.pick(["<", ">", "==", "!="]), w, Lit(d.pick([0, 1, 3, 100])))
        other: Expr = Bin("+", w, Lit(1)) if d.chance(0.7) else Bin("-", w, Lit(1))
        a, b = (other, w) if d.chance(0.5) else (w, other)
        self.body.append(Pick(v, cond, a, b, d.pick(["ifexp", "if-else", "if-only"])))
        return Var(v), dtype

    def narrow_index(self, k: int) -> Expr:
        """A component on axis k built from a narrow value."""
        d = self.d
        b, n = self.bid_e[k], self.tiles_of(k)
        how = d.weighted([("cancel", 5), ("difference", 2), ("fold", 3), ("int", 3),
                          ("clamp", 4)])
        if how == "int":
            return self.int_wrap(b)
        w, dtype = self.narrow_merged()
        if how == "clamp":
            # min/max compare values and never wrap: safe, and the checker follows them
            self.features.add("narrow-clamp")
            c = d.between(0, 3)
            clamped = Call("max", (Call("min", (w, Lit(c))), Lit(0)))
            return d.pick([Bin("%", Bin("+", b, clamped), n),
                           Bin("+", b, Call("max", (Call("min", (w, Lit(0))), Lit(0)))),
                           Call("min", (Bin("+", b, clamped), Bin("-", n, Lit(1))))])
        c1, c2 = WRAPS[dtype] if d.chance(0.75) else (d.between(1, 4), d.between(0, 4))
        if how == "difference":
            # `(w - c) - w` is 2^n - c in an unsigned type, not -c
            self.features.add("narrow-cancel")
            e = Bin("-", Bin("-", w, Lit(d.pick([1, 2]))), w)
            return Bin("+", b, Bin("+", Bin("//", e, Lit(2)), Lit(1)))
        if how == "fold":
            # `w * 0` is 0 of w's type, and what is added to it still wraps there
            self.features.add("narrow-fold")
            kept = Bin("+", Bin("+", Bin("*", w, Lit(0)), Lit(c1)), Lit(c2))
        else:
            self.features.add("narrow-cancel")
            kept = Bin("-", Bin("+", Bin("+", w, Lit(c1)), Lit(c2)), w)
        # A `u32` sum promotes `b + kept` to i64, whose wrap by 2^32 the index's truncation
        # to i32 undoes: only the clamp below shows it.
        if dtype != "u32" and d.chance(0.5):  # b + (c1 + c2) - (c1 + c2)
            return Bin("-", Bin("+", b, kept), Lit(c1 + c2))
        # min(b, nb + (c1 + c2) - (c1 + c2) - 1): the review's clamp to the last block
        return Call("min", (b, Bin("-", Bin("+", self.nb_e[k], kept), Lit(c1 + c2 + 1))))

    def int_wrap(self, b: Expr) -> Expr:
        """`int(s)` of an `i64` or `u32` scalar is its low 32 bits as `i32`: 2^32 - 5 is -5.
        Clamped to [-c, 0], the store moves by it only where the value truncates."""
        d = self.d
        self.features.add("int-wrap")
        s = self.typed_scalar(d.weighted([("i64", 3), ("u32", 2)]))
        lo = d.between(1, 4)
        clamp = Call("max", (Call("min", (IntOf(s), Lit(0))), Lit(-lo)))
        return Bin("+", b, clamp) if d.chance(0.7) else Bin("+", clamp, b)

    def item_data(self, d: Draw) -> dict[str, list[int]]:
        """One launch's values of the data inputs, mostly at the edges of their types."""
        out = {}
        for x in self.data_ins:
            edges = EDGES[x.dtype]
            out[x.name] = [d.pick(edges) if d.chance(0.8) else d.between(0, 100)
                           for _ in range(ITEM_LEN)]
        return out


"""Store-index maps for the generator (`generate.py`): the templates the checker is meant
to prove, the traps, random expression trees, near-miss mutations and the two-axis maps
(transposes, digits of a linearized id, digit swaps). `IndexGen` is the part of the
generator that writes them; `generate.Gen` holds the state they read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Bin, Call, ConstRef, Expr, Lit, Neg, ShapeOf, Var
from .program import Assign

if TYPE_CHECKING:
    from .draw import Draw
    from .model import ScalarRef
    from .program import InParam, Stmt

BIG = [2**31 - 1, 2**31, 2**31 + 1, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32, 2**32 + 1,
       2**30, 2**33, 2**40]
TEMPLATES = [("identity", 10), ("reverse", 14), ("modaffine", 14), ("clamp", 12),
             ("overflow", 10), ("scalar", 8), ("mutshape", 8), ("random", 14), ("constidx", 3),
             ("cancel", 7), ("narrow", 8)]
JOINT = ("transpose", "digits", "digit-swap")


def int_value(d: Draw) -> int:
    """A constant: mostly small, sometimes a power of two up to 2**40 or near 2**31/2**32."""
    kind = d.weighted([("small", 70), ("pow2", 15), ("big", 10), ("neg", 5)])
    if kind == "small":
        return d.between(0, 8)
    if kind == "pow2":
        return 1 << d.between(0, 40)
    if kind == "big":
        return d.pick(BIG)
    return -d.between(1, 4)


def spell(v: int, d: Draw) -> Lit:
    if v > 2 and v & (v - 1) == 0 and d.chance(0.5):
        return Lit(v, f"2 ** {v.bit_length() - 1}")
    return Lit(v)


class IndexGen:
    """The index-map methods of the generator (mixed into `generate.Gen`)."""

    d: Draw
    rank: int
    focus: str | None
    focus_axis: int
    features: set[str]
    bid_e: list[Expr]
    decl: list[int | str]
    out: str
    scalar_values: dict[str, list[int]]
    want_square: bool
    body: list[Stmt]
    x: InParam | None

    # what `generate.Gen` provides
    def tiles_of(self, k: int) -> Expr:
        raise NotImplementedError

    def number(self, v: int | None = None) -> Expr:
        raise NotImplementedError

    def scalar(self) -> ScalarRef:
        raise NotImplementedError

    def fresh(self, base: str) -> str:
        raise NotImplementedError

    def narrow_index(self, k: int) -> Expr:
        raise NotImplementedError

    # -- index maps ------------------------------------------------------------------------

    def component(self, k: int) -> Expr:
        """A store index on axis k of the output: a template, maybe mutated."""
        d = self.d
        b, n = self.bid_e[k], self.tiles_of(k)
        if self.focus is not None:  # one template on one axis, the identity elsewhere
            if self.focus in JOINT or k != self.focus_axis:
                return b
            t = self.focus
        else:
            t = d.weighted(TEMPLATES)
        self.features.add(t)
        e: Expr
        if t == "identity":
            e = b
        elif t == "reverse":
            e = Bin("-", Bin("-", n, Lit(1)), b) if d.chance(0.7) else \
                Bin("+", Neg(b), Bin("-", n, Lit(1)))
        elif t == "modaffine":
            a = d.weighted([(1, 5), (-1, 3), (3, 2), (2, 1)])
            c = self.number(d.between(0, 5))
            lhs: Expr = b if a == 1 else (Neg(b) if a == -1 and d.chance(0.5)
                                          else Bin("*", Lit(a), b))
            e = Bin("%", Bin("+", lhs, c), n)
        elif t == "clamp":
            off = d.weighted([(0, 6), (1, 2), (2, 1)])
            inner: Expr = b if off == 0 else Bin("+", b, Lit(off))
            e = d.pick([Call("min", (inner, Bin("-", n, Lit(1)))), Call("max", (b, Lit(-off))),
                        Call("max", (Call("min", (inner, Bin("-", n, Lit(1)))), Lit(0))),
                        Bin("-", Call("min", (Bin("+", inner, Lit(1)), n)), Lit(1))])
        elif t == "overflow":
            p = d.pick([30, 31, 29, 32, 16, 20, 33])
            big = self.number(2**p) if d.chance(0.4) else spell(2**p, d)
            e = d.pick([Bin("//", Bin("*", b, big), big), Bin("-", Bin("+", b, big), big),
                        Bin("%", Bin("+", b, big), n), Bin("//", Bin("*", big, b), big)])
        elif t == "scalar":
            s = self.scalar()
            self.scalar_values[s.name] = [self.d.pick([0, 1, 3, 2**31 - 1, -(2**31), 7, 2**20])]
            e = d.pick([Bin("-", Bin("+", b, s), s), Bin("%", Bin("+", b, s), n),
                        Bin("//", Bin("*", b, s), s), Bin("+", b, s)])
        elif t == "mutshape":
            tl = self.tile_expr(k)
            zs = ShapeOf(self.out, k)
            e = d.pick([Bin("//", Bin("*", b, zs), tl), Bin("-", Bin("+", b, tl), zs),
                        Bin("-", Bin("-", Bin("//", zs, tl), Lit(1)), b), Bin("%", b, zs),
                        Bin("//", Bin("*", b, Lit(128)), zs)])
        elif t == "cancel":
            c = self.number()
            e = d.pick([Bin("-", Bin("+", b, c), c), Bin("+", Bin("-", b, c), c),
                        Bin("//", Bin("*", b, c), c), Bin("%", b, Bin("+", n, c))])
        elif t == "narrow":  # narrow.py
            e = self.narrow_index(k)
        elif t == "constidx":
            e = Lit(d.between(0, 2))
        else:
            e = self.random_expr(d.between(1, 3), k)
        if self.focus is None and d.chance(0.2):
            e = self.mutate(e, k)
        return e

    def tile_expr(self, k: int) -> Expr:
        decl = self.decl[k]
        return ConstRef(decl) if isinstance(decl, str) else Lit(decl)

    def mutate(self, e: Expr, k: int) -> Expr:
        self.features.add("mutated")
        d = self.d
        m = d.between(0, 7)
        if m == 0:
            return Bin("+", e, Lit(1))
        if m == 1:
            return Bin("-", e, Lit(1))
        if m == 2:
            return Bin("*", e, Lit(2))
        if m == 3:
            return Bin("//", e, Lit(2))
        if m == 4:
            return Bin("%", e, Lit(2))
        if m == 5 and self.rank > 1:
            return Bin("+", e, self.bid_e[(k + 1) % self.rank])
        if m == 6:
            return Call(d.pick(["min", "max"]), (e, self.tiles_of(k)))
        return Bin("-", self.tiles_of(k), e)

    def atom(self, k: int) -> Expr:
        d = self.d
        a = d.weighted([("bid", 30), ("nb", 12), ("lit", 20), ("nt", 8), ("const", 8),
                        ("scalar", 4), ("xshape", 4), ("zshape", 4), ("otherbid", 10)])
        if a == "bid":
            return self.bid_e[k]
        if a == "otherbid":
            return self.bid_e[d.between(0, self.rank - 1)]
        if a == "nb":
            return self.nb_e[d.between(0, self.rank - 1)]
        if a == "lit":
            return spell(int_value(d), d)
        if a == "nt":
            return self.tiles_of(d.between(0, self.rank - 1))
        if a == "const":
            return self.number()
        if a == "scalar":
            s = self.scalar()
            self.scalar_values[s.name] = [int_value(d)]
            return s
        if a == "xshape" and self.x is not None:
            return ShapeOf(self.x.name, d.between(0, self.x.rank - 1))
        return ShapeOf(self.out, d.between(0, self.rank - 1))

    def random_expr(self, depth: int, k: int) -> Expr:
        if depth <= 0 or self.d.chance(0.25):
            return self.atom(k)
        op = self.d.weighted([("+", 25), ("-", 20), ("*", 20), ("//", 12), ("%", 12),
                              ("min", 4), ("max", 4), ("cdiv", 3)])
        a, b = self.random_expr(depth - 1, k), self.random_expr(depth - 1, k)
        if op in ("min", "max", "cdiv"):
            return Call(op, (a, b))
        return Bin(op, a, b)

    def joint(self, index: list[Expr]) -> list[Expr]:
        """Two-axis templates: a transpose, the digits of a linearized id, a digit swap."""
        d = self.d
        if self.focus is not None and self.focus not in JOINT:
            return index
        if self.rank < 2 or (self.focus is None and not d.chance(0.35)):
            return index
        i, j = sorted(d.pick([(0, 1), (0, 1), (1, 2), (0, 2)][: 1 if self.rank == 2 else 4]))
        bi, bj = self.bid_e[i], self.bid_e[j]
        t = self.focus or d.weighted([("transpose", 4), ("digits", 4), ("digit-swap", 2)])
        self.features.add(t)
        if t == "transpose":
            index[i], index[j] = bj, bi
            self.want_square = True
        elif t == "digits":
            nj = self.tiles_of(j)
            lin2: Expr = Bin("+", Bin("*", bi, nj), bj)
            if d.chance(0.5):
                v = self.fresh("l")
                self.body.append(Assign((v,), (lin2,)))
                lin2 = Var(v)
            index[i], index[j] = Bin("//", lin2, nj), Bin("%", lin2, nj)
        else:
            r = self.number(d.pick([2, 2, 3, 4, 1]))
            index[i] = Bin("+", Bin("*", Bin("//", bi, r), r), Bin("%", bj, r))
            index[j] = Bin("+", Bin("*", Bin("//", bj, r), r), Bin("%", bi, r))
        return index

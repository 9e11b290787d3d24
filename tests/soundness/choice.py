"""Kernels where one name is bound to different tensors on the two branches of an `if` (or
a conditional expression), for the generator (`generate.py`).

The compiler folds a compile-time test (`if C == 1:`, `if 0:`) to one branch and keeps that
branch's tensor; a checker that follows the first branch's (or either) proves the other
tensor's accesses against the wrong owner: a store through the name races with the other
output's own stores (the review of 2026-12-01, CT1010 in `test_known_classes.py`). The
checker folds such tests itself now (`KernelFacts.folded_branches`) and follows the tensor
of the live branch in each specialization: the tests here are of Consts (directly, through
arithmetic, a name or a device function), of a tensor's extent (static where declared so),
of literals, or known only on the device (still refused). Bodies under a test of literals
that runs nothing (`while False:`) hold a racy store: it must never run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Bin, Call, Cmp, ConstRef, Expr, Lit, NumTiles, ShapeOf
from .program import ChooseTensor, Dead, InParam, LoadTile, MutLoad, Store

if TYPE_CHECKING:
    from .draw import Draw
    from .program import Stmt


class ChoiceGen:
    """The tensor-choice kernel kind (mixed into `generate.Gen`)."""

    d: Draw
    rank: int
    out: str
    features: set[str]
    bid_e: list[Expr]
    decl: list[int | str]
    x: InParam | None
    data_ins: list[InParam]

    def index_store(self, recv: str, body: list[Stmt]) -> None:
        raise NotImplementedError

    def component(self, k: int) -> Expr:
        raise NotImplementedError

    def const(self, values: list[int]) -> ConstRef:
        raise NotImplementedError

    def store_style(self) -> str:
        raise NotImplementedError

    def disguise(self, e: Expr) -> Expr:
        raise NotImplementedError

    def outline(self, e: Expr) -> Expr:
        raise NotImplementedError

    def choose(self, target: str, a: str, b: str) -> ChooseTensor:
        d = self.d
        how = d.weighted([("const", 5), ("const-expr", 4), ("extent", 2), ("lit", 2),
                          ("lit-expr", 1), ("runtime", 1)])
        if how == "extent" and self.x is None:
            how = "const"
        if how != "const":
            self.features.add(f"tensor-choice-{how}")
        if how == "const":
            cond = Cmp(d.pick(["==", "<", "!="]), self.const([0, 1, 2]), Lit(1))
        elif how == "const-expr":
            # a value of the Consts, through arithmetic, a name or a device function
            c = self.const([0, 1, 2])
            e = d.pick([Bin("+", c, Lit(1)), Bin("*", c, Lit(2)), Bin("%", c, Lit(2)),
                        Call("max", (c, Lit(1)))])
            cond = Cmp(d.pick(["==", "<", "!=", ">="]), self.disguise(e), Lit(2))
        elif how == "extent":
            # static where `x` declares it (a literal, a Const), else a run-time test
            assert self.x is not None
            # (through a device function too, which may take `x` itself and test its extent)
            e: Expr = ShapeOf(self.x.name, 0)
            e = self.outline(e) if d.chance(0.5) else self.disguise(e)
            cond = Cmp(d.pick(["==", "<", ">"]), e, Lit(d.between(1, 64)))
        elif how == "lit":
            cond = Cmp("==", Lit(d.between(0, 1)), Lit(1))
        elif how == "lit-expr":  # literals, also through a name or a device function
            e = Bin("-", Lit(d.between(1, 2)), Lit(1))
            cond = Cmp(d.pick(["==", "!="]), self.disguise(e), Lit(1))
        else:  # the compiler refuses a merge of tensors on a run-time test
            cond = Cmp("<", self.bid_e[0], Lit(1))
        form = d.weighted([("if-else", 5), ("if-only", 2), ("ifexp", 2)])
        self.features.add(f"tensor-choice-{form}")
        return ChooseTensor(target, cond, a, b, form)

    def input_choice(self, body: list[Stmt]) -> None:
        """`s` = the input `x` or a short second input by a compile-time test, then loaded
        from at the block's own tile: in bounds of `x`, not of the other."""
        d = self.d
        assert self.x is not None
        self.features.add("input-choice")
        other = f"y{len(self.data_ins)}"
        self.data_ins.append(InParam(other, 1, (-1,), "i32"))
        a, b = (self.x.name, other) if d.chance(0.5) else (other, self.x.name)
        body.append(self.choose("s", a, b))
        body.append(LoadTile("t", "s", tuple(self.decl), tuple(self.bid_e[: self.rank]),
                             combine=True))

    def dead_body(self, body: list[Stmt], recv: str) -> None:
        """A store every block makes to tile 0 of `recv` (a race), under a test of literals
        that runs it in no specialization."""
        d = self.d
        self.features.add("dead-body")
        head = d.pick(["while False:", "for _ in range(0):", "if 0:", "if 1 - 1:",
                       "for _ in range(3, 1 + 2):", "while 2 < 1:"])
        body.append(Dead(head, [Store(recv, tuple(Lit(0) for _ in range(self.rank)))]))

    def tensor_choice(self, body: list[Stmt]) -> None:
        """Outputs `z` and `o2` stored by their own maps, then `w` = one of them by a
        compile-time test (a Const, so launches take either branch), stored through or
        loaded from: the other output's map decides whether that races."""
        d = self.d
        self.features.add("tensor-choice")
        if d.chance(0.3):
            self.dead_body(body, d.pick(["z", "o2"]))
        for name in ("z", "o2"):
            # mostly maps the checker proves, so that what decides is the store through `w`
            how = d.weighted([("own", 3), ("reverse", 3), ("map", 3), ("none", 1)])
            if how == "own":
                body.append(Store(name, None))
            elif how == "reverse":
                rev = list(self.bid_e[: self.rank])
                rev[0] = Bin("-", Bin("-", NumTiles(name, 0), Lit(1)), rev[0])
                body.append(Store(name, tuple(rev), style=self.store_style()))
            elif how == "map":
                saved, self.out = self.out, name
                self.index_store(name, body)
                self.out = saved
        a, b = ("z", "o2") if d.chance(0.5) else ("o2", "z")
        body.append(self.choose("w", a, b))
        use = d.weighted([("own", 4), ("map", 3), ("load", 2)])
        if use == "own":
            body.append(Store("w", None, style=d.pick(["kw", "allkw"])))
        elif use == "map":
            saved, self.out = self.out, "w"
            comps = tuple(self.component(k) for k in range(self.rank))
            self.out = saved
            body.append(Store("w", comps, style=self.store_style()))
        else:
            body.append(MutLoad("m", "w", None))

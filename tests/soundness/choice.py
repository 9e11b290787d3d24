"""Kernels where one name is bound to different tensors on the two branches of an `if` (or
a conditional expression), for the generator (`generate.py`).

The compiler folds a compile-time test (`if C == 1:`, `if 0:`) to one branch and keeps that
branch's tensor; a checker that follows the first branch's (or either) proves the other
tensor's accesses against the wrong owner: a store through the name races with the other
output's own stores (the review of 2026-12-01, CT1010 in `test_known_classes.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Bin, Cmp, ConstRef, Expr, Lit, NumTiles
from .program import ChooseTensor, InParam, LoadTile, MutLoad, Store

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

    def choose(self, target: str, a: str, b: str) -> ChooseTensor:
        d = self.d
        how = d.weighted([("const", 6), ("lit", 2), ("runtime", 1)])
        if how == "const":
            cond = Cmp(d.pick(["==", "<", "!="]), self.const([0, 1, 2]), Lit(1))
        elif how == "lit":
            cond = Cmp("==", Lit(d.between(0, 1)), Lit(1))
        else:  # the compiler refuses a merge of tensors on a run-time test
            self.features.add("tensor-choice-runtime")
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

    def tensor_choice(self, body: list[Stmt]) -> None:
        """Outputs `z` and `o2` stored by their own maps, then `w` = one of them by a
        compile-time test (a Const, so launches take either branch), stored through or
        loaded from: the other output's map decides whether that races."""
        d = self.d
        self.features.add("tensor-choice")
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

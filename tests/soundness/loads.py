"""Loads of the shared input `x` by the generator (mixed into `generate.Gen`): at a
computed index (directly, through a device function, at a `while` counter), in a loop
bounded by a `min`, `load_tile_like`, and loads of a `Mut`.
"""

from __future__ import annotations

from .genbase import GenBase
from .model import (
    Bin,
    Call,
    ConstRef,
    Expr,
    Lit,
    ShapeOf,
    Var,
)
from .program import (
    LoadLike,
    LoadTile,
    Loop,
    MutLoad,
    Stmt,
    While,
)


class LoadGen(GenBase):
    """The load methods of the generator."""

    def loads(self, body: list[Stmt]) -> None:
        d = self.d
        if self.x is not None and d.chance(0.6):
            self.features.add("load-tile")
            via = None
            if all(isinstance(t, int) for t in self.decl) and d.chance(0.3):
                self.nfn += 1
                via = (f"get{self.nfn}", self.module())
                self.features.add("device-load")
            calls = 2 if via is not None and d.chance(0.6) else 1
            if calls == 2:
                self.features.add("device-load-twice")
            for c in range(calls):
                comps = [self.component(k) if d.chance(0.4 + 0.3 * c) else self.bid_e[k]
                         for k in range(self.rank)]
                comps = [self.disguise(x) for x in comps]
                if via is None and d.chance(0.15):  # loads at a `while` counter
                    self.features.add("while")
                    self.features.add("while-load")
                    v = self.fresh("w")
                    k = d.between(0, self.rank - 1)
                    comps[k] = Bin("+", comps[k], Bin("-", Var(v), Lit(1)))
                    load = LoadTile("t", self.x.name, tuple(self.decl), tuple(comps),
                                    style=d.pick(["pos", "kw", "mixed"]), combine=True)
                    body.append(While(v, self.while_limit(3), self.with_exit([load], Var(v))))
                    continue
                body.append(LoadTile(f"t{c}" if calls > 1 else "t", self.x.name,
                                     tuple(self.decl), tuple(comps),
                                     style=d.pick(["pos", "kw", "mixed"]), combine=True,
                                     via=via))
        if self.x is not None and d.chance(0.15):
            self.loop_min_load(body)
        if self.x is not None and d.chance(0.3):
            style = d.weighted([("pos", 4), ("kw", 2), ("rev", 2), ("mixed", 1), ("badkw", 1)])
            self.features.add(f"like-{style}")
            body.append(LoadLike("u", self.x.name, self.out, style=style, combine=True))
        if d.chance(0.05):
            self.features.add("mut-load")
            idx = None if d.chance(0.5) else tuple(self.component(k) for k in range(self.rank))
            body.append(MutLoad("m", self.out, idx))

    def loop_min_load(self, body: list[Stmt]) -> None:
        """`for j in range(min(cdiv(x.shape[k], T), b + c)): t = x.load_tile(..., j, ...)`:
        a loop bounded by a `min` of a tile count and a block-dependent value (the checker
        bounds it through the `min`), sometimes one too far; sometimes starting at a
        product of runtime scalars, which the device computes in i32 and may wrap
        (`range(s * s, ...)` with s = 65535 starts at -131071)."""
        d = self.d
        assert self.x is not None
        self.features.add("load-loop-min")
        k = d.between(0, self.rank - 1)
        v = self.fresh("j")
        t = self.decl[k]
        count: Expr = Call("cdiv", (ShapeOf(self.x.name, k),
                                    Lit(t) if isinstance(t, int) else ConstRef(t)))
        if d.chance(0.15):
            count = Bin("+", count, Lit(1))
            self.features.add("mutated")
        other = Bin("+", self.bid_e[k], Lit(d.pick([0, 1, 2])))
        n = Call("min", (count, other) if d.chance(0.5) else (other, count))
        comps: list[Expr] = [self.bid_e[i] for i in range(self.rank)]
        comps[k] = Var(v)
        if d.chance(0.15):
            comps[k] = Bin("+", Var(v), Lit(1))
            self.features.add("mutated")
        start: Expr | None = None
        if d.chance(0.25):
            self.features.add("loop-start-product")
            s = self.scalar()
            self.scalar_values[s.name] = [0, 1, 2, 3, 65535, 65536, 46341]
            start = Bin("*", s, s)
        body.append(Loop(v, n, [LoadTile("t", self.x.name, tuple(self.decl), tuple(comps),
                                         combine=True)], start))


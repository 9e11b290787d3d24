"""The kinds of stores the generator writes (mixed into `generate.Gen`): a computed-index
store (in a loop, through a device procedure), the persistent `iter_indices()` schedule,
sub-partition stores in loops, and two stores of one output.
"""

from __future__ import annotations

from .genbase import GenBase
from .model import (
    Bin,
    Call,
    Cmp,
    Expr,
    Grid,
    Lit,
    ScalarRef,
    Var,
)
from .program import (
    Alias,
    CallProc,
    Dead,
    DevProc,
    Exit,
    LoadTile,
    Loop,
    Persist,
    Relay,
    Return,
    Stmt,
    Store,
    SubPart,
    SubStore,
    ValueDef,
    While,
)


class StoreGen(GenBase):
    """The store kinds of the generator."""

    def index_store(self, recv: str, body: list[Stmt]) -> None:
        comps = self.joint([self.component(k) for k in range(self.rank)])
        comps = [self.disguise(c) for c in comps]
        d = self.d
        if d.chance(0.06):  # (worlds.py)
            k = d.between(0, self.rank - 1)
            comps[k] = self.device_constant(comps[k], body)
        if d.chance(0.22):  # a loop around the store (its variable can meet another file's)
            self.features.add("loop-store")
            v = self.fresh("i")
            k = d.between(0, self.rank - 1)
            is_while = d.chance(0.45)
            # a `while` counter runs 1, 2, ...: `v - 1` is the iteration as for a range
            it: Expr = Bin("-", Var(v), Lit(1)) if is_while else Var(v)
            comps[k] = Bin("+", comps[k], it) if d.chance(0.5) else \
                Bin("-", Bin("+", comps[k], Var(v)), Var(v))
            inner: list[Stmt] = []
            if d.chance(0.5):
                self.relay(inner)
            inner.append(Store(recv, tuple(comps), style=self.store_style()))
            inner = self.with_exit(inner, Var(v))
            if is_while:
                self.features.add("while")
                body.append(While(v, self.while_limit(3), inner))
            else:
                body.append(Loop(v, Lit(d.pick([1, 1, 2])), inner))
            return
        if d.chance(0.2):
            self.features.add("device-store")
            proc = self.put_proc()
            body.append(CallProc(proc, (recv, "val", *comps), kw=d.chance(0.2)))
            if d.chance(0.4):  # a second call with other arguments
                self.features.add("device-called-twice")
                other = [self.component(k) for k in range(self.rank)] if d.chance(0.6) else comps
                body.append(CallProc(proc, (recv, "val", *other), kw=d.chance(0.2)))
            return
        body.append(Store(recv, tuple(comps), style=self.store_style()))

    def put_proc(self) -> DevProc:
        names = tuple(f"i{k}" for k in range(self.rank))
        annotate = {}
        if all(isinstance(x, int) for x in self.decl) and self.d.chance(0.5):
            dims = ", ".join(str(x) for x in self.decl)
            annotate["o"] = f"Mut[Tensor[i32, [{dims}]]]"
        self.nfn += 1
        stmts: list[Stmt] = [Store("o", tuple(Var(n) for n in names), value="v",
                                   style=self.store_style())]
        if self.d.chance(0.25):  # `if cond: return` before (or after) the store
            self.features.add("early-return")
            on = Var(self.d.pick(names)) if self.d.chance(0.6) else \
                Grid("block_id", self.d.between(0, self.rank - 1))
            ret = Return(Cmp(self.d.pick(["<", "==", ">=", "!="]), on,
                             Lit(self.d.between(0, 3))))
            stmts = [ret, *stmts] if self.d.chance(0.8) else [*stmts, ret]
        return DevProc(f"put{self.nfn}", ("o", "v", *names), ("tensor", "tile") + ("int",) *
                       self.rank, stmts, self.module(), annotate)

    def relay(self, body: list[Stmt], value: str = "val") -> None:
        self.features.add("relay-loop")
        self.align = self.align or self.d.chance(0.7)
        self.nfn += 1
        body.append(Relay(value, f"g{self.nfn}", self.d.pick([1, 2, 4]), self.module()))

    def persistent(self, recv: str, body: list[Stmt]) -> None:
        d = self.d
        self.features.add("persistent")
        where = d.weighted([("direct", 5), ("alias", 2), ("device", 2)])
        self.features.add(f"persistent-{where}")
        value = "v" if where == "device" else "val"
        group: Expr | None = None
        if d.chance(0.4):
            self.features.add("group")
            g = d.pick([1, 2, 3, 4, 8]) if d.chance(0.8) else d.pick([0, -1, 2**31])
            # a device function sees no Const of the entry: a literal there
            group = Lit(g) if where == "device" else self.number(g)
        tuple_target = self.rank > 1 and d.chance(0.35)
        # `idx[k]`: the minted index read component by component (not unpacked)
        subscript = not tuple_target and where != "device" and d.chance(0.3)
        if tuple_target:
            self.features.add("iter-tuple")
        if subscript:
            self.features.add("iter-subscript")
        names = tuple(f"t{k}" for k in range(self.rank))
        if subscript:
            names = tuple(f"idx[{k}]" for k in range(self.rank))
        target: str | tuple[str, ...] = names if tuple_target else "idx"
        tgt_rcv = "o" if where == "device" else recv
        inner: list[Stmt] = []
        if self.x is not None and where != "device" and d.chance(0.5):
            self.features.add("load-minted")
            by_parts = tuple_target or subscript
            inner.append(LoadTile("t", self.x.name, tuple(self.decl),
                                  tuple(Var(n) for n in names) if by_parts else None,
                                  style=d.pick(["pos", "kw", "mixed"]), combine=True,
                                  minted=None if by_parts else "idx"))
        if tuple_target or subscript:
            comps: tuple[Expr, ...] = tuple(Var(n) for n in names)
            if d.chance(0.2):
                comps = (Bin("+", comps[0], Lit(1)), *comps[1:])
                self.features.add("mutated")
            inner.append(Store(tgt_rcv, comps, value=value, style=self.store_style()))
        else:
            inner.append(Store(tgt_rcv, None, value=value, style=self.store_style(),
                               minted="idx"))
        if d.chance(0.25):  # a block may leave its schedule early (skipping tiles)
            self.features.add("persistent-break")
            on = Var(names[d.between(0, self.rank - 1)]) if tuple_target else None
            if where == "device":  # the device function sees no entry local
                on = on if on is not None else Grid("block_id", 0)
                ex = Exit("break", Cmp(d.pick(["<", ">=", "=="]), on, Lit(d.between(0, 2))))
                self.features.add("break")
                inner = [ex, *inner] if d.chance(0.5) else [*inner, ex]
            else:
                inner = self.with_exit(inner, on, p=1.0)
        loop = Persist(tgt_rcv, target, inner, group, group_kw=d.chance(0.8))
        if where == "alias":
            w = "w"
            body.append(Alias((w,), (recv,)))
            loop.recv = w
            for s in inner:
                if isinstance(s, Store):
                    s.recv = w
            body.extend(self.persist_shape(loop))
        elif where == "device":
            self.nfn += 1
            proc = DevProc(f"walk{self.nfn}", ("o", "v"), ("tensor", "tile"),
                           self.persist_shape(loop), self.module())
            body.append(CallProc(proc, (recv, "val")))
        else:
            body.extend(self.persist_shape(loop))

    def persist_shape(self, loop: Persist) -> list[Stmt]:
        """Where the walk sits: alone; in a `range(2)` loop (each block walks its tiles
        twice); in a loop that runs on odd blocks only (a conditional walk); inside a walk
        of the same output (every tile of the block, again per outer tile); or its schedule
        (or an enclosing range) bound to a name first, which the checker must refuse
        (CT2013: it would read an unknown loop variable where the compiler walks)."""
        d = self.d
        shape = d.weighted([("plain", 24), ("nested", 3), ("cond", 3), ("twice", 2),
                            ("named", 1), ("named-range", 1)])
        if shape == "plain":
            return [loop]
        self.features.add(f"persistent-{shape}")
        if shape == "named":
            loop.named = self.fresh("walk")
            return [loop]
        v = self.fresh("r")
        if shape == "twice":
            return [Persist(loop.recv, v, [loop])]
        n: Expr = Lit(2) if shape != "cond" else Bin("%", Grid("block_id", 0), Lit(2))
        return [Loop(v, n, [loop], named=self.fresh("rng") if shape == "named-range" else None)]

    def dead_walk(self, recv: str, body: list[Stmt]) -> None:
        """A walk in a branch that never runs (`if 0:`): no output is persistent, and the
        launch is a regular one (the checker reads the kernel again as not mapped)."""
        self.features.add("persistent-dead")
        body.append(Dead("if 0:", [Persist(recv, "idx", [Store(recv, None, minted="idx")])]))

    def sub_stores(self, recv: str, body: list[Stmt]) -> None:
        d = self.d
        self.features.add("subpartition")
        shape = tuple(max(1, t >> d.between(0, 2)) for t in self.tile)
        ratio = [t // s for t, s in zip(self.tile, shape, strict=True)]
        body.append(SubPart("p", recv, shape, kw=d.chance(0.2)))
        body.append(ValueDef("sval", shape))
        if d.chance(0.1):
            self.features.add("nested-subpartition")
            shape2 = tuple(max(1, s // 2) for s in shape)
            body.append(SubPart("q", "p", shape2))
            body.append(ValueDef("qval", shape2))
            body.append(SubStore("q", tuple(Lit(0) for _ in shape2), value="qval"))
            return
        loops = [k for k in range(self.rank) if ratio[k] > 1 or d.chance(0.3)]
        idx: list[Expr] = [Lit(d.between(0, r - 1)) for r in ratio]
        inner: list[Stmt] = []
        nest: list[tuple[str, int, bool]] = []
        tops: dict[str, ScalarRef] = {}
        for k in loops:
            v = self.fresh("i")
            n = ratio[k] + (1 if d.chance(0.15) else 0)
            is_while = d.chance(0.3)
            nest.append((v, n, is_while))
            it: Expr = Bin("-", Var(v), Lit(1)) if is_while else Var(v)
            if not is_while and d.chance(0.08):
                # `range(base, base + n, step)` with the index `v - base`, `base` up to
                # near 2^31: a 32-bit counter stepped past 2^31 - 1 wraps on the H200
                # (the lowering counts such loops in 64 bits)
                self.features.add("loop-top")
                base = tops[v] = self.scalar()
                self.scalar_values[base.name] = [0, 3, 2**31 - 17, 2**31 - 1 - n]
                it = Bin("-", Var(v), base)
            idx[k] = it if d.chance(0.7) else Bin("-", Lit(ratio[k] - 1), it)
        if d.chance(0.1):
            k = d.between(0, self.rank - 1)
            idx[k] = self.random_expr(2, k)
            self.features.add("sub-random")
        if nest and d.chance(0.4):
            self.relay(inner, "sval")
        inner.append(SubStore("p", tuple(idx), style=d.pick(["pos", "kw", "allkw"])))
        stmts: list[Stmt] = inner
        for v, n, is_while in reversed(nest):
            stmts = self.with_exit(stmts, Var(v), p=0.3)
            if is_while:
                self.features.add("while")
                self.features.add("while-subtile")
                limit = Lit(n) if d.chance(0.5) else Call("min", (self.while_limit(n), Lit(n)))
                stmts = [While(v, limit, stmts)]
            elif v in tops:
                base = tops[v]
                step: Expr = Lit(d.pick([1, 2, 2**30 + 1]))
                if d.chance(0.5):
                    step = self.scalar()
                    self.scalar_values[step.name] = [1, 2, 2**30 + 1, 2**31 - 1]
                stmts = [Loop(v, Bin("+", base, Lit(n)), stmts, start=base, step=step)]
            elif d.chance(0.15):
                # a step known only at launch: Tile IR's `for` needs it positive, which
                # the checker decides at launch (obligation `loop-step-positive`)
                self.features.add("loop-step")
                rstep = self.scalar()
                self.scalar_values[rstep.name] = [1, 2, 0, -1, 2**31 - 1]
                stmts = [Loop(v, Lit(n), stmts, step=rstep)]
            else:
                stmts = [Loop(v, Lit(n), stmts)]
        body.extend(stmts)

    def multi(self, body: list[Stmt]) -> None:
        """Two stores: the same map twice, two maps, or `a, b = z, z`."""
        d = self.d
        how = d.weighted([("same", 3), ("two-maps", 3), ("pair-alias", 2), ("own-plus", 2)])
        self.features.add(f"multi-{how}")
        if how == "pair-alias":  # the move comes first: the index names `c`, not `z`
            body.append(Alias(("a", "c"), (self.out, self.out)))
            self.out = "c"
        comps = tuple(self.disguise(c) for c in self.joint(
            [self.component(k) for k in range(self.rank)]))
        if how == "same":
            body.append(Store(self.out, comps, style=self.store_style()))
            body.append(Store(self.out, comps, style=self.store_style()))
        elif how == "two-maps":
            other = tuple(self.component(k) for k in range(self.rank))
            body.append(Store(self.out, comps, style=self.store_style()))
            body.append(Store(self.out, other, style=self.store_style()))
        elif how == "pair-alias":
            body.append(Store("a", tuple(self.bid_e[: self.rank]), style=self.store_style()))
            body.append(Store("c", comps, style=self.store_style()))
        else:
            body.append(Store(self.out, None))
            body.append(Store(self.out, comps, style=self.store_style()))


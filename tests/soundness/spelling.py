"""Spellings of the generator (mixed into `generate.Gen`) that must not change a kernel's
meaning: sub-expressions moved into device functions in another file (their locals,
`Const`s, scalars and extents, or an input passed whole, become parameters), hoisted
into locals, and the keyword forms of a store.
"""

from __future__ import annotations

from .genbase import GenBase
from .model import (
    Bin,
    Call,
    Cmp,
    ConstRef,
    DevCall,
    DevFn,
    Expr,
    Grid,
    Lit,
    Neg,
    NumTiles,
    ScalarRef,
    ShapeOf,
    TensorRef,
    Var,
)
from .program import (
    Assign,
)


class SpellGen(GenBase):
    """The spelling methods of the generator."""

    def outline(self, e: Expr) -> Expr:
        """Move `e` into a device function in another file; its locals, Consts, scalars
        and extents become parameters (and with some chance the grid atoms too). An
        identical body reuses the same function, so it is called from several sites."""
        d = self.d
        params: list[str] = []
        args: list[Expr] = []
        seen: dict[Expr, Var] = {}

        tensors: list[tuple[str, int]] = []  # (parameter, axis) of extents read inside
        inputs = {i.name for i in ([self.x] if self.x is not None else [])}

        def sub(x: Expr) -> Expr:
            if isinstance(x, ShapeOf) and x.tensor in inputs and d.chance(0.5):
                # the input itself is passed: the function reads its extent, a value of
                # the Consts where it is declared static (the call's key must name it)
                ref = TensorRef(x.tensor)
                if ref not in seen:
                    seen[ref] = Var(f"p{len(params)}")
                    params.append(seen[ref].name)
                    args.append(ref)
                self.features.add("device-tensor-param")
                tensors.append((seen[ref].name, x.axis))
                return ShapeOf(seen[ref].name, x.axis)
            lift = isinstance(x, (Var, ConstRef, ScalarRef, ShapeOf, NumTiles, DevCall)) or (
                isinstance(x, Grid) and d.chance(0.4))
            if lift:
                if x not in seen:
                    seen[x] = Var(f"p{len(params)}")
                    params.append(seen[x].name)
                    args.append(x)
                return seen[x]
            if isinstance(x, Bin):
                return Bin(x.op, sub(x.a), sub(x.b))
            if isinstance(x, Neg):
                return Neg(sub(x.a))
            if isinstance(x, Call):
                return Call(x.fn, tuple(sub(a) for a in x.args))
            return x

        body = sub(e)
        guard = None
        if d.chance(0.25):  # `if cond: return early` before the final `return`
            self.features.add("early-return")
            values = [p for p in params if p not in {t for t, _ in tensors}]
            on: Expr = Var(d.pick(values)) if values and d.chance(0.7) else \
                Grid("block_id", d.between(0, self.rank - 1))
            if tensors and d.chance(0.6):  # a test of the argument's extent
                self.features.add("early-return-on-extent")
                on = ShapeOf(*d.pick(tensors))
            lit = Lit(d.between(1, 64)) if isinstance(on, ShapeOf) else Lit(d.between(0, 3))
            cond = Cmp(d.pick(["<", "==", ">=", "!="]), on, lit)
            early = d.weighted([(body, 3), (Bin("+", body, Lit(1)), 2), (Lit(0), 1),
                                (on, 1)])
            if early == body:
                self.features.add("early-return-same")
            guard = (cond, early)
        key = repr((tuple(params), body, guard))
        fn = self.fns.get(key)
        if fn is None:
            self.nfn += 1
            fn = DevFn(f"f{self.nfn}", tuple(params), body, self.module(), guard)
            self.fns[key] = fn
        else:
            self.features.add("device-reused")
        self.features.add("device-fn")
        return DevCall(fn, tuple(args), kw=d.chance(0.2))

    def disguise(self, e: Expr) -> Expr:
        d = self.d
        if d.chance(0.2):
            e = self.outline(e)
        if d.chance(0.25):
            v = self.fresh("i")
            self.body.append(Assign((v,), (e,)))
            self.features.add("hoist")
            return Var(v)
        return e

    def store_style(self) -> str:
        s = self.d.weighted([("kw", 50), ("pos", 20), ("allkw", 12), ("rev", 12), ("badkw", 2)])
        if s != "kw":
            self.features.add(f"store-{s}")
        return s


"""Two kernel kinds about what the checker knows in each specialization of the `Const`s (mixed
into `generate.Gen`); each was a hand-written soundness bug before the generator could write it.

`extent-keys`: a device function that tests the extent of a tensor passed to it whole,
`if t.shape[0] == K: return n`, called on two inputs `e0` and `e1` whose extents are static
(a literal or a `Const`) and may differ; one call's result chooses which output `w` names,
the other's the index `w` is stored at. The checker once gave both calls one key (an
input's extent is `?` among the arguments) and took the second test to the first one's
branch: it proved `w = z` stored at `z`'s own tile and `w = o2` at `o2`'s map, while the
compiler took `w = z` at `o2`'s map, a race (f91ac9f, `test_worlds.py`). The same input
twice (`extent-keys-same-input`) is one value in every specialization and safe.

`const-product`: a product of `Const`s `A * B` meeting a device value, which the lowering
makes a constant of that value's type, next to an index built from the digits of
`b + C` recombined with the same `Const`s (`((b + C) % A) * B // B - C`), with values near
2^15 and 2^16 so that the product passes 2^31 and `% A * B` wraps in 32 bits. Next to a
block id, a block count or an `i32` scalar the constant is an `i32` one, which the lowering
refuses past 32 bits: a kernel that runs has `A * B < 2^31` and the digits fit. Next to an
`i64` scalar (an `i64` constant) or in the branch of a `Const` test that the specialization
never compiles, nothing refuses it, and the checker once took it as 32-bit all the same: the
device wrapped the index and stored at tile -65536 (08a35b3,
`tests/kernels/test_materialized_constants.py`).

`device-constant`: an index component moved by `(y + (2**30 - v) + 2**30) // 2**30 - 2`,
`y` a device value that is the number `v` on every block: `b - b`, a block id or a block
count past the grid's rank, or `v` on both paths of a test of the block id (an `if`, a
conditional expression, a device function's two returns). Read exactly, the move is 0; in
the `i32` the device computes `y` in, the sum wraps and the store moves by -4. The checker
once took every such `y` as a compile-time constant (its polynomial has no device atom),
and the lowering merged equal constants into an `i32` (`test_device_constants.py`).
"""

from __future__ import annotations

from .genbase import GenBase
from .model import (
    Bin,
    Cmp,
    ConstRef,
    DevCall,
    DevFn,
    Expr,
    Grid,
    Lit,
    NumTiles,
    ScalarRef,
    ShapeOf,
    TensorRef,
    Var,
)
from .program import Assign, ChooseTensor, InParam, Pick, Stmt, Store

# values of B (an extent) and C: near 2^15 and 2^16 (A * B passes 2^31), and small ones
PRODUCT_B = [2**16, 2**15, 2**14, 2**16 + 1, 4]
PRODUCT_C = [2**15, 2**15 - 1, 0, 3]


class WorldGen(GenBase):
    """The `extent-keys`, `const-product` and `device-constant` kinds."""

    extent_ins: dict[str, list[int]]  # input name -> the extents its launches draw from

    # -- extent-keys ------------------------------------------------------------------------

    def extent_input(self, k: int) -> InParam:
        """A rank-1 input whose extent is static: a literal, or a `Const` inferred from the
        launch; its extents are drawn around `k` (equal to it or not)."""
        d = self.d
        name = f"e{len(self.extent_ins)}"
        values = [k, k + 1] if d.chance(0.7) else [k, k - 1 if k > 1 else k + 2, 2 * k]
        if d.chance(0.5):
            self.features.add("extent-keys-const")
            cname = f"S{len(self.extent_ins)}"
            self.consts[cname] = None
            x = InParam(name, 1, (cname,))
        else:
            self.features.add("extent-keys-literal")
            lit = d.pick(values)
            if self.extent_ins and d.chance(0.7):  # mostly another extent than `e0`'s
                lit = d.pick([v for v in values if v not in self.extent_ins["e0"]] or [lit])
            values = [lit]
            x = InParam(name, 1, (lit,))
        self.extent_ins[name] = values
        return x

    def extent_test(self, k: int) -> DevFn:
        """`if t.shape[0] <op> k: return n` then `return n + 1` (or of literals)."""
        d = self.d
        self.nfn += 1
        op = d.weighted([("==", 4), ("<", 1), ("!=", 1), (">=", 1)])
        cond = Cmp(op, ShapeOf("t", 0), Lit(k))
        if d.chance(0.7):
            return DevFn(f"f{self.nfn}", ("t", "n"), Bin("+", Var("n"), Lit(1)),
                         self.module(), (cond, Var("n")))
        self.features.add("extent-keys-literal-returns")
        return DevFn(f"f{self.nfn}", ("t",), Lit(0), self.module(), (cond, Lit(1)))

    def extent_keys(self, body: list[Stmt]) -> list[InParam]:
        """Outputs `z` and `o2` stored at their own maps; `w` = one of them by the test of
        `e0`'s extent; `w` stored at the index one of the maps by the test of `e1`'s (or
        `e0`'s again). Returns the inputs."""
        d = self.d
        self.features.add("extent-keys")
        k = d.pick([1, 2, 4, 8])
        ins = [self.extent_input(k)]
        same = d.chance(0.25)
        if same:
            self.features.add("extent-keys-same-input")
        else:
            ins.append(self.extent_input(k))
        fn = self.extent_test(k)
        arg: Expr = self.const([1, 2]) if d.chance(0.6) else Lit(d.pick([1, 2]))
        if "n" in fn.params:
            want: Expr = arg

            def call(x: str) -> Expr:
                return DevCall(fn, (TensorRef(x), arg), kw=d.chance(0.2))
        else:
            want = Lit(1)

            def call(x: str) -> Expr:
                return DevCall(fn, (TensorRef(x),), kw=d.chance(0.2))

        b = list(self.bid_e[: self.rank])
        maps: dict[str, str] = {}
        hows = d.pick([("own", "reverse"), ("reverse", "own")]) if d.chance(0.8) else \
            tuple(d.weighted([("own", 3), ("reverse", 3), ("none", 1)]) for _ in range(2))
        for name, how in zip(("z", "o2"), hows, strict=True):
            if how == "own":
                body.append(Store(name, None))
            elif how == "reverse":
                rev = Bin("-", Bin("-", NumTiles(name, 0), Lit(1)), b[0])
                body.append(Store(name, (rev, *b[1:]), style=self.store_style()))
            maps[name] = "reverse" if how == "reverse" else "own"
        first, second = ("z", "o2") if d.chance(0.5) else ("o2", "z")
        test0 = Cmp("==", self.disguise(call(ins[0].name)), want)
        body.append(ChooseTensor("w", test0, first, second,
                                 d.weighted([("if-else", 5), ("if-only", 2), ("ifexp", 2)])))
        # where the second test holds, the map of `first` (the checker's pairing of the two
        # tests when they share a key), else of `second`; or the other way round
        pair = [maps[first], maps[second]]
        if d.chance(0.3):
            pair.reverse()
        at = [Bin("-", Bin("-", NumTiles("w", 0), Lit(1)), b[0]) if m == "reverse" else b[0]
              for m in pair]
        test1 = Cmp("==", self.disguise(call(ins[-1].name)), want)
        i = self.fresh("i")
        body.append(Pick(i, test1, at[0], at[1],
                         d.weighted([("if-else", 3), ("if-only", 2), ("ifexp", 3)])))
        body.append(Store("w", (Var(i), *b[1:]), style=self.store_style()))
        return ins

    # -- const-product ----------------------------------------------------------------------

    def product_partner(self) -> tuple[Expr, str]:
        """The device value `A * B` meets, and its name."""
        d = self.d
        how = d.weighted([("block", 3), ("grid", 1), ("i32-scalar", 2), ("i64-scalar", 4),
                          ("dead-branch", 4), ("none", 2)])
        e: Expr
        if how in ("block", "dead-branch"):
            e = self.bid_e[0]
        elif how == "grid":
            e = self.nb_e[0]
        elif how == "none":
            e = Lit(0)
        else:
            name = f"s{len(self.scalars)}"
            self.scalars[name] = how[:3]
            self.scalar_values[name] = [3, 0, -5, 2**20] + ([2**33] if how == "i64-scalar"
                                                            else [])
            if how == "i64-scalar":
                self.features.add("i64-scalar")
            e = ScalarRef(name)
        return e, how

    def const_product(self, recv: str, body: list[Stmt]) -> list[InParam]:
        """`w = <partner> + A * B` (or in a `Const` branch), then a store at the digits of
        `b + C` recombined. `A` is the output's tile (a `Const` of 2^14 to 2^18), which
        bounds the grid, and `B` an input's extent, which bounds `B`: what the checker needs
        to prove the recombination (tests/kernels/test_materialized_constants.py). Returns
        the input."""
        d = self.d
        self.features.add("const-product")
        tile = self.decl[0]
        assert isinstance(tile, str) and self.rank == 1
        a = ConstRef(tile)
        self.extent_ins["e0"] = PRODUCT_B
        self.consts["S0"] = None
        x = InParam("e0", 1, ("S0",))
        b, c = ConstRef("S0"), self.const(PRODUCT_C)
        prod = Bin("*", a, b) if d.chance(0.8) else Bin("*", b, a)
        partner, how = self.product_partner()
        self.features.add(f"const-product-{how}")
        w = self.fresh("w")
        if how == "dead-branch":
            # `A * B` is compiled only in the specializations where `D == 0`
            dc = self.const([0, 1])
            cond = Cmp("==", dc, Lit(0)) if d.chance(0.5) else Cmp("!=", dc, Lit(1))
            body.append(Pick(w, cond, Bin("+", partner, prod), Lit(0),
                             d.weighted([("if-only", 3), ("if-else", 2), ("ifexp", 2)])))
        elif how != "none":
            e = Bin("+", partner, prod) if d.chance(0.6) else Bin("-", prod, partner)
            body.append(Assign((w,), (e if d.chance(0.7) else self.disguise(e),)))
        bk = self.bid_e[0]
        form = d.weighted([("shift", 5), ("digits", 2), ("digits-shift", 2)])
        self.features.add(f"const-product-{form}")
        base = bk if form == "digits" else Bin("+", bk, c)
        comp: Expr = Bin("//", Bin("*", Bin("%", base, a), b), b)
        if form != "shift":
            comp = Bin("+", comp, Bin("*", Bin("//", base, a), a))
        if form != "digits":
            comp = Bin("-", comp, c)
        if d.chance(0.2):
            comp = self.disguise(comp)
        body.append(Store(recv, (comp,), style=self.store_style()))
        return [x]

    # -- device-constant --------------------------------------------------------------------

    def device_constant(self, comp: Expr, body: list[Stmt]) -> Expr:
        """`comp` moved by an expression that is 0 when `y` is read exactly and -4 when `y`
        is read as the `i32` it is on the device."""
        d = self.d
        b = self.bid_e[0]
        hows = ["cancel", "merge", "guard"] + (["block-past-rank", "grid-past-rank"]
                                               if self.rank < 3 else [])
        how = d.pick(hows)
        self.features.add("device-constant")
        self.features.add(f"device-constant-{how}")
        v = d.pick([0, 1, 5])
        y: Expr
        cond = Cmp(d.pick(["<", "==", ">="]), b, Lit(d.pick([0, 1, 2])))
        if how == "cancel":
            y, v = Bin("-", b, b), 0
        elif how == "block-past-rank":
            y, v = Grid("block_id", d.between(self.rank, 2)), 0
        elif how == "grid-past-rank":
            y, v = Grid("num_blocks", d.between(self.rank, 2)), 1
        elif how == "merge":
            name = self.fresh("y")
            body.append(Pick(name, cond, Lit(v), Lit(v),
                             d.weighted([("if-else", 2), ("if-only", 2), ("ifexp", 2)])))
            y = Var(name)
        else:
            self.nfn += 1
            fn = DevFn(f"f{self.nfn}", ("n",), Lit(v), self.module(),
                       (Cmp(cond.op, Var("n"), cond.b), Lit(v)))
            y = DevCall(fn, (b,), kw=d.chance(0.2))
        wrapped = Bin("+", Bin("+", y, Lit(2**30 - v)), Lit(2**30))
        return Bin("+", comp, Bin("-", Bin("//", wrapped, Lit(2**30)), Lit(2)))

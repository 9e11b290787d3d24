"""The kernel generator: random kernels (as `program.Kernel`, rendered to source text by
`program.render_kernel`) and random launches for them.

A kernel has one or two `Mut[Tensor[i32, ...]]` outputs of rank 1-3 and maybe a shared
input; every store writes `full(shape, lin + 1, i32)` where `lin` is the block's linear id.
Store indices come from templates of maps the checker is meant to prove (affine
permutations, modular rotations, clamps that never clamp, digits of a linearized id, the
persistent schedule, transposes), from known traps (32-bit wraparound, `z.shape` of a `Mut`,
`num_tiles` with a foreign shape, runtime scalars, integers narrower than 32 bits or unsigned
in `narrow.py`), and from random expression trees; a template is sometimes mutated into a
near miss. The same meaning is spelled many ways:
keywords or positions, locals and tuple assignments, aliases of the output, device
functions in two other files (called several times with different arguments), loops whose
variable sits at the same byte offset as a loop in another file.

A name bound to different tensors on the two branches of an `if` is `choice.py`'s.

Each kernel records `features` (template and spelling names) for the completeness report.
"""

from __future__ import annotations

import math

from .choice import ChoiceGen
from .draw import Draw
from .indices import JOINT, TEMPLATES, IndexGen, int_value, spell
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
    wrap_kind,
)
from .narrow import NarrowGen
from .program import (
    Alias,
    Assign,
    CallProc,
    DevProc,
    Exit,
    InParam,
    Kernel,
    Launch,
    LoadLike,
    LoadTile,
    Loop,
    MutLoad,
    OutParam,
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

TILE_SIZES = [(4, 30), (2, 25), (1, 15), (8, 20), (16, 8), (32, 2)]


# The mixins declare what they use from each other as stubs: NarrowGen's `narrow_index`
# must come before IndexGen's stub of it, IndexGen's `component` before ChoiceGen's.
class Gen(NarrowGen, IndexGen, ChoiceGen):
    def __init__(self, d: Draw, case_id: str) -> None:
        self.d = d
        self.case_id = case_id
        self.features: set[str] = set()
        self.consts: dict[str, list[int] | None] = {}  # name -> candidate values (None: tile)
        self.scalars: dict[str, str] = {}
        self.body: list[Stmt] = []
        self.fns: dict[str, DevFn] = {}
        self.nfn = 0
        self.nvar = 0
        self.bid_e: list[Expr] = []
        self.nb_e: list[Expr] = []
        self.rank = 1
        self.tile: list[int] = []
        self.decl: list[int | str] = []
        self.out = "z"
        self.x: InParam | None = None
        self.data_ins: list[InParam] = []  # inputs read by `.item()` (narrow.py)
        self.scalar_values: dict[str, list[int]] = {}
        self.want_square = False
        self.align = False
        self.focus: str | None = None
        self.focus_axis = 0

    # -- names -----------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        self.nvar += 1
        return f"{base}{self.nvar}"

    def module(self) -> str:
        return f"fz_{self.case_id}_d{self.d.between(1, 2)}"

    def const(self, values: list[int]) -> ConstRef:
        name = f"C{len(self.consts)}"
        self.consts[name] = values
        return ConstRef(name)

    def scalar(self) -> ScalarRef:
        name = f"s{len(self.scalars)}"
        self.scalars[name] = self.d.weighted([("i32", 74), ("i64", 14), ("i8", 3), ("i16", 3),
                                              ("u8", 3), ("u32", 3)])
        if self.scalars[name] == "i64":
            self.features.add("i64-scalar")
        if self.scalars[name] in ("i8", "i16", "u8", "u32"):
            # arithmetic wraps in 8 or 16 bits (or unsigned), which the checker does not follow
            self.features.add("narrow-scalar")
        if self.scalars[name] in ("u8", "u32"):
            self.features.add("unsigned-scalar")
        return ScalarRef(name)

    def number(self, v: int | None = None) -> Expr:
        """A literal, a `Const` or (rarely) a runtime scalar holding `v` (random if None)."""
        val = int_value(self.d) if v is None else v
        how = self.d.weighted([("lit", 70), ("const", 22), ("scalar", 8)])
        if how == "const":
            self.features.add("const-param")
            return self.const([val] if v is not None or self.d.chance(0.6)
                              else [val, int_value(self.d)])
        if how == "scalar":
            self.features.add("scalar-param")
            s = self.scalar()
            self.scalar_values[s.name] = [val]
            return s
        return spell(val, self.d)

    # -- atoms -----------------------------------------------------------------------------

    def setup_grid(self) -> None:
        d = self.d
        kw = d.chance(0.1)
        raw_b = [Grid("block_id", k, kw=kw) for k in range(3)]
        raw_n = [Grid("num_blocks", k, kw=kw) for k in range(3)]
        if kw:
            self.features.add("kw-axis")
        if d.chance(0.01):
            raw_b[0] = Grid("block_id", 0, bad_kw=True)
            self.features.add("bad-kw")
        self.bid_e, self.nb_e = list(raw_b), list(raw_n)
        if d.chance(0.4):
            names = [f"b{k}" for k in range(self.rank)]
            self.features.add("hoist")
            if d.chance(0.5) and self.rank > 1:
                self.features.add("tuple-assign")
                self.body.append(Assign(tuple(names), tuple(raw_b[: self.rank])))
            else:
                for k in range(self.rank):
                    self.body.append(Assign((names[k],), (raw_b[k],)))
            for k in range(self.rank):
                self.bid_e[k] = Var(names[k])
        if d.chance(0.25):
            for k in range(self.rank):
                self.body.append(Assign((f"n{k}",), (raw_n[k],)))
                self.nb_e[k] = Var(f"n{k}")
        lin: Expr = raw_b[2]
        lin = Bin("+", raw_b[1], Bin("*", raw_n[1], lin))
        lin = Bin("+", raw_b[0], Bin("*", raw_n[0], lin))
        self.body.append(Assign(("lin",), (lin,)))

    def tiles_of(self, k: int) -> Expr:
        """The number of tiles on axis k, spelled as the grid or as `num_tiles`."""
        how = self.d.weighted([("nb", 55), ("nt", 35), ("nt-shape", 5), ("nt-kw", 5)])
        if how == "nb":
            return self.nb_e[k]
        if how == "nt":
            return NumTiles(self.out, k)
        if how == "nt-kw":
            self.features.add("kw-num_tiles")
            return NumTiles(self.out, k, style=self.d.pick(["kw", "allkw"]))
        self.features.add("num_tiles-shape")
        shape = tuple(self.tile[j] if j != k or self.d.chance(0.5) else
                      max(1, self.tile[j] // 2) for j in range(self.rank))
        return NumTiles(self.out, k, shape=shape, style=self.d.pick(["pos", "kw"]))

    # -- control flow ----------------------------------------------------------------------

    def cond(self, var: Expr | None) -> Cmp:
        """A condition on a loop's variable (or, without one, on the block), against a
        small number, a block id or a scalar: all defined before the loop."""
        d = self.d
        op = d.pick(["<", "<=", "==", "!=", ">", ">="])
        k = d.between(0, self.rank - 1)
        left: Expr = var if var is not None and d.chance(0.8) else self.bid_e[k]
        how = d.weighted([("lit", 6), ("bid", 2), ("scalar", 1), ("const", 1)])
        right: Expr
        if how == "lit":
            right = Lit(d.between(0, 3))
        elif how == "bid":
            right = self.bid_e[k]
        elif how == "scalar":
            sc = self.scalar()
            self.scalar_values[sc.name] = [d.between(-1, 3)]
            right = sc
        else:
            right = self.const([d.between(0, 3)])
        return Cmp(op, left, right) if d.chance(0.8) else Cmp(op, right, left)

    def with_exit(self, body: list[Stmt], var: Expr | None, p: float = 0.4) -> list[Stmt]:
        """`body` with maybe an `if cond: break` / `continue` at its start or its end."""
        d = self.d
        if not d.chance(p):
            return body
        kind = d.weighted([("break", 3), ("continue", 2)])
        self.features.add(kind)
        ex = Exit(kind, self.cond(var))
        return [ex, *body] if kind == "continue" or d.chance(0.6) else [*body, ex]

    def while_limit(self, most: int) -> Expr:
        """A small trip count, often known only at launch (a scalar, the block id): a
        `while` runs at most `most` times."""
        d = self.d
        k = d.between(0, self.rank - 1)
        how = d.weighted([("lit", 2), ("scalar", 3), ("block", 3), ("grid", 1)])
        if how == "lit":
            return Lit(d.between(0, most))
        self.features.add("while-data-dependent")
        e: Expr
        if how == "scalar":
            sc = self.scalar()
            self.scalar_values[sc.name] = [d.between(-1, most + 2), 0, most]
            e = sc
        elif how == "block":
            e = Bin("+", Bin("%", self.bid_e[k], Lit(d.between(1, 3))), Lit(d.between(0, 1)))
        else:
            e = Bin("-", self.nb_e[k], self.bid_e[k])
        return Call("min", (e, Lit(most)))

    # -- spelling --------------------------------------------------------------------------

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

    # -- kernel kinds ----------------------------------------------------------------------

    def index_store(self, recv: str, body: list[Stmt]) -> None:
        comps = self.joint([self.component(k) for k in range(self.rank)])
        comps = [self.disguise(c) for c in comps]
        d = self.d
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
            body.append(loop)
        elif where == "device":
            self.nfn += 1
            proc = DevProc(f"walk{self.nfn}", ("o", "v"), ("tensor", "tile"), [loop],
                           self.module())
            body.append(CallProc(proc, (recv, "val")))
        else:
            body.append(loop)

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

    # -- the kernel ------------------------------------------------------------------------

    def kernel(self) -> Kernel:
        d = self.d
        self.rank = d.weighted([(1, 35), (2, 45), (3, 20)])
        # A focused kernel uses one template on one axis (the identity elsewhere), without
        # mutations: completeness per feature is measured on those.
        if d.chance(0.35):
            self.focus = d.pick([t for t, _ in TEMPLATES if t != "random"]
                                + (list(JOINT) if self.rank > 1 else []))
            self.features.add(f"focus:{self.focus}")
        self.focus_axis = d.between(0, self.rank - 1)
        self.tile = [d.weighted(TILE_SIZES) for _ in range(self.rank)]
        while self.rank > 1 and math.prod(self.tile) > 512:  # keep tiles small
            big = self.tile.index(max(self.tile))
            self.tile[big] //= 2
        for k in range(self.rank):
            if d.chance(0.35):
                self.decl.append(f"B{k}")
                self.consts[f"B{k}"] = None
            else:
                self.decl.append(self.tile[k])
        if d.chance(0.45):
            decl: list[int | str] = []
            for k in range(self.rank):
                how = d.weighted([("dyn", 6), ("lit", 2), ("const", 2)])
                if how == "lit":
                    decl.append(-2)  # filled in from the launch shape below
                elif how == "const":
                    decl.append(f"X{k}")
                    self.consts[f"X{k}"] = None
                else:
                    decl.append(-1)
            self.x = InParam("x", self.rank, tuple(decl))
        self.setup_grid()
        self.body.append(ValueDef("val", tuple(self.decl)))
        self.loads(self.body)
        if self.x is not None and self.rank == 1 and d.chance(0.08):
            self.input_choice(self.body)
        recv = self.out
        kind = d.weighted([("index", 40), ("persistent", 16), ("sub", 12), ("own", 6),
                           ("multi", 14), ("two-outputs", 6), ("choice", 5)]) \
            if self.focus is None else "index"
        self.features.add(f"kind-{kind}")
        outs = [OutParam("z", self.rank, tuple(self.decl))]
        if kind not in ("persistent", "multi", "two-outputs", "choice") and d.chance(0.15):
            self.features.add("alias")
            if d.chance(0.5) and self.x is not None:
                self.features.add("tuple-alias")
                self.body.append(Alias(("w", "y"), ("z", self.x.name)))
            else:
                self.body.append(Alias(("w",), ("z",)))
            recv = "w"
            self.out = "w"  # `z` is moved: later extents name the alias
        if kind == "index":
            self.index_store(recv, self.body)
        elif kind == "persistent":
            self.persistent(recv, self.body)
        elif kind == "sub":
            self.sub_stores(recv, self.body)
        elif kind == "own":
            own: list[Stmt] = [Store(recv, None, style=d.pick(["kw", "allkw"]))]
            if d.chance(0.3):  # the own tile, stored a data-dependent number of times
                self.features.add("while")
                v = self.fresh("w")
                own = [While(v, self.while_limit(3), self.with_exit(own, Var(v)))]
            self.body.extend(own)
        elif kind == "multi":
            self.multi(self.body)
        elif kind == "choice":
            outs.append(OutParam("o2", self.rank, tuple(self.decl)))
            self.tensor_choice(self.body)
        else:
            outs.append(OutParam("o2", self.rank, tuple(self.decl)))
            self.index_store("z", self.body)
            saved = self.out
            self.out = "o2"
            self.index_store("o2", self.body)
            self.out = saved
        kern = Kernel(self.case_id, outs, ([self.x] if self.x else []) + self.data_ins,
                      sorted(self.scalars.items()), sorted(self.consts), self.body, [],
                      self.features, self.align)
        kern.launches = [self.launch(kern) for _ in range(3)]
        if self.x is not None:  # literal dims of x: the first launch's extent, for all
            lits = {a for a, v in enumerate(self.x.decl) if v == -2}
            first = kern.launches[0].shapes["x"]
            fixed: list[int | str] = [
                (first[a] if first[a] > 0 else -1) if a in lits else v
                for a, v in enumerate(self.x.decl)]
            self.x.decl = tuple(fixed)
            for ln in kern.launches:
                ln.shapes["x"] = tuple(
                    f if a in lits and isinstance(f, int) and f > 0 else n
                    for a, (n, f) in enumerate(zip(ln.shapes["x"], fixed, strict=True)))
        return kern

    def launch(self, k: Kernel) -> Launch:
        d = self.d
        rank = self.rank
        if rank == 1 and d.chance(0.1):
            grid = [d.between(17, 300)]
            self.features.add("many-blocks")
        else:
            grid = [d.weighted([(1, 10), (2, 25), (3, 20), (4, 20), (5, 10), (6, 5), (8, 6),
                                (16, 4)]) for _ in range(rank)]
        if self.want_square and d.chance(0.8):
            grid = [grid[0]] * rank
        if d.chance(0.03):
            grid[d.between(0, rank - 1)] = 0
            self.features.add("zero-size")
        tile = list(self.tile)
        consts: dict[str, int] = {}
        for a, decl in enumerate(self.decl):
            if isinstance(decl, str):
                tile[a] = self.tile[a] if d.chance(0.7) else max(1, self.tile[a] * d.pick([2, 4])
                                                                  // d.pick([1, 2, 4]))
                consts[decl] = tile[a]
        shape = []
        for g, t in zip(grid, tile, strict=True):
            ragged = d.between(1, t - 1) if t > 1 and g > 0 and d.chance(0.3) else 0
            shape.append(max(0, g * t - ragged))
        shapes = {o.name: tuple(shape) for o in k.outs}
        tiles = {o.name: tuple(tile) for o in k.outs}
        if self.x is not None:
            xs = []
            for a, n in enumerate(shape):
                how = d.weighted([("same", 6), ("more", 2), ("less", 1), ("ragged", 1)])
                xs.append(n if how == "same" else n + tile[a] * d.between(1, 2) if how == "more"
                          else max(0, n - tile[a]) if how == "less" else n + d.between(1, 3))
            shapes["x"] = tuple(xs)
            for a, decl in enumerate(self.x.decl):
                if isinstance(decl, str):
                    consts[decl] = xs[a]
        given = {}
        for name, values in self.consts.items():
            if values is None:
                continue
            consts[name] = d.pick(values)
            given[name] = consts[name]
        for name in self.consts:
            if self.consts[name] is None and name in consts and d.chance(0.1):
                given[name] = consts[name]  # an inferable Const given again, consistently
        scalars = {}
        for name in self.scalars:
            vals = self.scalar_values.get(name) or [int_value(d)]
            value = d.pick(vals) if d.chance(0.8) else int_value(d)
            dtype = self.scalars[name]
            # the launcher refuses a narrow or unsigned value that does not fit, before
            # anything the model sees
            scalars[name] = value if dtype in ("i32", "i64") else int(wrap_kind(value, dtype))
        persistent = None
        if "persistent" in self.features:
            tiles_n = 1
            for g in grid:
                tiles_n *= g
            persistent = d.weighted([(0, 3), (1, 2), (2, 3), (3, 1), (tiles_n, 1),
                                     (tiles_n + d.between(1, 5), 2)])
        data = self.item_data(d)
        shapes |= {name: (len(v),) for name, v in data.items()}
        return Launch(shapes, tiles, consts, given, scalars, persistent, data)


def generate(d: Draw, case_id: str) -> Kernel:
    return Gen(d, case_id).kernel()

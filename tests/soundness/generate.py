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

A name bound to different tensors on the two branches of an `if` is `choice.py`'s. The
parts live by concept: index maps `indices.py`, narrow integers `narrow.py`, control flow
`flow.py`, spellings and device functions `spelling.py`, store kinds `stores.py`, loads
`loads.py`; what they share is declared in `genbase.py`. This file holds the kernel's
parameters, its grid atoms and its launches.

Each kernel records `features` (template and spelling names) for the completeness report.
"""

from __future__ import annotations

import math

from .choice import ChoiceGen
from .draw import Draw
from .flow import FlowGen
from .indices import JOINT, TEMPLATES, IndexGen, int_value, spell
from .loads import LoadGen
from .model import (
    Bin,
    ConstRef,
    DevFn,
    Expr,
    Grid,
    NumTiles,
    ScalarRef,
    Var,
    wrap_kind,
)
from .narrow import NarrowGen
from .program import (
    Alias,
    Assign,
    InParam,
    Kernel,
    Launch,
    OutParam,
    Stmt,
    Store,
    ValueDef,
    While,
)
from .spelling import SpellGen
from .stores import StoreGen
from .worlds import WorldGen

TILE_SIZES = [(4, 30), (2, 25), (1, 15), (8, 20), (16, 8), (32, 2)]


# The older mixins declare what they use from each other as stubs: NarrowGen's
# `narrow_index` must come before IndexGen's stub of it, IndexGen's `component` and the
# spelling and store methods before ChoiceGen's (the newer ones declare theirs in
# `genbase.GenBase`, for the type checker only).
class Gen(FlowGen, SpellGen, StoreGen, LoadGen, WorldGen, NarrowGen, IndexGen, ChoiceGen):
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
        self.extent_ins: dict[str, list[int]] = {}  # static extents (worlds.py)
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

    # -- the kernel ------------------------------------------------------------------------

    def kernel(self) -> Kernel:
        d = self.d
        # (a `const-product` kernel has one axis, whose tile, a Const, bounds the grid)
        product = d.chance(0.05)
        self.rank = 1 if product else d.weighted([(1, 35), (2, 45), (3, 20)])
        # A focused kernel uses one template on one axis (the identity elsewhere), without
        # mutations: completeness per feature is measured on those.
        if not product and d.chance(0.35):
            self.focus = d.pick([t for t, _ in TEMPLATES if t != "random"]
                                + (list(JOINT) if self.rank > 1 else []))
            self.features.add(f"focus:{self.focus}")
        self.focus_axis = d.between(0, self.rank - 1)
        self.tile = [d.weighted(TILE_SIZES) if not product else d.pick([2**15, 2**16])
                     for _ in range(self.rank)]
        while self.rank > 1 and math.prod(self.tile) > 512:  # keep tiles small
            big = self.tile.index(max(self.tile))
            self.tile[big] //= 2
        for k in range(self.rank):
            if product or d.chance(0.35):
                self.decl.append(f"B{k}")
                self.consts[f"B{k}"] = None
            else:
                self.decl.append(self.tile[k])
        if not product and d.chance(0.45):
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
                           ("multi", 14), ("two-outputs", 6), ("choice", 5),
                           ("extent-keys", 4)]) if self.focus is None else "index"
        kind = "const-product" if product else kind
        self.features.add(f"kind-{kind}")
        outs = [OutParam("z", self.rank, tuple(self.decl))]
        ins = [self.x] if self.x else []
        if kind not in ("persistent", "multi", "two-outputs", "choice", "extent-keys") and \
                d.chance(0.15):
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
            if d.chance(0.2):  # a walk that never runs beside the own tile
                self.dead_walk(recv, self.body)
            self.body.extend(own)
        elif kind == "multi":
            self.multi(self.body)
        elif kind == "choice":
            outs.append(OutParam("o2", self.rank, tuple(self.decl)))
            self.tensor_choice(self.body)
        elif kind == "extent-keys":
            outs.append(OutParam("o2", self.rank, tuple(self.decl)))
            ins += self.extent_keys(self.body)
        elif kind == "const-product":
            ins += self.const_product(recv, self.body)
        else:
            outs.append(OutParam("o2", self.rank, tuple(self.decl)))
            self.index_store("z", self.body)
            saved = self.out
            self.out = "o2"
            self.index_store("o2", self.body)
            self.out = saved
        kern = Kernel(self.case_id, outs, ins + self.data_ins,
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
        if "const-product" in self.features:  # tiles of 2^14 to 2^18 elements: few
            grid = [d.between(1, 4)]
        elif rank == 1 and d.chance(0.1):
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
        for x in k.ins:  # rank-1 inputs of static extents (a literal, or a Const inferred)
            if x.name in self.extent_ins:
                shapes[x.name] = (d.pick(self.extent_ins[x.name]),)
                if isinstance(x.decl[0], str):
                    consts[x.decl[0]] = shapes[x.name][0]
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

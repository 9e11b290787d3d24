"""Brute-force truth: run a generated kernel's statements on the fuzzer's model (model.py)
for every block of one launch, vectorized with numpy, and decide whether the launch is safe:
no access outside a partition's index space, no division by zero, no element written by two
blocks, no element one block reads while another writes it.

It also predicts the output: every stored tile holds the writer's linear block id + 1, so
the interpreter's output can be compared with the model element by element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .model import Env, Expr, ModelCompileError, Val, as_index, evaluate, merge, test, wrap_arr
from .program import (
    Alias,
    Assign,
    CallProc,
    ChooseTensor,
    Dead,
    Exit,
    ItemDef,
    Kernel,
    Launch,
    LoadLike,
    LoadTile,
    Loop,
    MutLoad,
    Persist,
    Pick,
    Relay,
    Return,
    Stmt,
    Store,
    SubPart,
    SubStore,
    ValueDef,
    While,
)

Array = np.ndarray
DEFAULT_SMS = 132  # the launcher's default persistent block count without a GPU
LOOP_LIMIT = 200_000  # iterations of one loop, over all blocks, the model unrolls


@dataclass
class Events:
    """Accesses of one tensor: one entry per batch, all rows of a batch share an extent."""

    writes: list[tuple[Array, Array, tuple[int, ...]]] = field(default_factory=list)
    reads: list[tuple[Array, Array, tuple[int, ...]]] = field(default_factory=list)


@dataclass
class Verdict:
    safe: bool
    reason: str = ""  # oob-store, oob-load, div-zero, race-ww, race-rw, compile, no-launch
    detail: str = ""
    grid: tuple[int, int, int] = (1, 1, 1)
    expected: dict[str, Array] = field(default_factory=dict)
    blocks: int = 0


class Fault(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def launch_grid(k: Kernel, launch: Launch, mapped: set[str]) -> tuple[int, int, int] | None:
    """The grid the launcher picks (host rule 6): the tile grid of the regular outputs, or
    for outputs walked by `iter_indices()` (as the launcher recognizes them: `mapped`) the
    persistent block count. None: the launcher refuses (the grids disagree)."""
    grids = []
    tiles_of: dict[str, int] = {}
    for o in k.outs:
        g = [cdiv(n, t) for n, t in zip(launch.shapes[o.name], launch.tiles[o.name], strict=True)]
        tiles_of[o.name] = math.prod(g)
        grids.append((o.name, tuple(g + [1] * (3 - len(g)))))
    regular = [g for name, g in grids if name not in mapped]
    persistent = [name for name, _ in grids if name in mapped]
    if persistent:
        nb = launch.persistent
        if not nb:
            nb = max(1, min(min(tiles_of[n] for n in persistent), DEFAULT_SMS))
        grid = (nb, 1, 1)
        return grid if all(g == grid for g in regular) else None
    if any(g != regular[0] for g in regular):
        return None
    return regular[0]  # type: ignore[return-value]


@dataclass
class Ctx:
    rows: int
    block: tuple[Array, Array, Array]
    lin: Array
    local: dict[str, Val | tuple[Val, ...]]
    alias: dict[str, str]  # tensor name in scope -> parameter name
    subs: dict[str, tuple[str, tuple[int, ...]]]
    moved: set[str] = field(default_factory=set)  # `Mut` names moved away (`w = z`)

    def take(self, sel: Array) -> Ctx:
        """The rows `sel` (a row may repeat: one copy per loop iteration)."""
        def pick(v: Val | tuple[Val, ...]) -> Val | tuple[Val, ...]:
            if isinstance(v, tuple):
                return tuple(pick(x) for x in v)  # type: ignore[misc]
            return v if v.kind == "c" else Val(np.asarray(v.v)[sel], v.kind)

        b = self.block
        return Ctx(len(sel), (b[0][sel], b[1][sel], b[2][sel]), self.lin[sel],
                   {n: pick(v) for n, v in self.local.items()}, dict(self.alias),
                   dict(self.subs), set(self.moved))


class Machine:
    def __init__(self, k: Kernel, launch: Launch, grid: tuple[int, int, int]) -> None:
        self.k = k
        self.launch = launch
        self.grid = grid
        self.outs = {o.name: o for o in k.outs}
        self.ins = {x.name: x for x in k.ins}
        self.events: dict[str, Events] = {o.name: Events() for o in k.outs}

    # -- environment -----------------------------------------------------------------------

    def env(self, ctx: Ctx) -> Env:
        shapes: dict[str, tuple[int, ...]] = {}
        static: dict[str, tuple[int | None, ...]] = {}
        tiles: dict[str, tuple[int, ...]] = {}
        for name, base in ctx.alias.items():
            shapes[name] = self.launch.shapes[base]
            if base in self.outs:
                tiles[name] = self.launch.tiles[base]
                static[name] = (None,) * len(shapes[name])
            else:
                decl = self.ins[base].decl
                static[name] = tuple(
                    None if d == -1 else (self.launch.consts[d] if isinstance(d, str) else d)
                    for d in decl)
        locals_ = {n: v for n, v in ctx.local.items() if isinstance(v, Val)}
        scalars = {n: (d, self.launch.scalars[n]) for n, d in self.k.scalars}
        return Env(ctx.rows, self.grid, ctx.block, self.launch.consts, scalars, shapes, static,
                   tiles, locals_)

    def eval(self, e: Expr, ctx: Ctx) -> Val:
        env = self.env(ctx)
        v = evaluate(e, env)
        assert env.undef is not None
        if env.undef.any():
            r = int(np.argmax(env.undef))
            raise Fault("div-zero", f"block {self.block_of(ctx, r)} divides by zero")
        return v

    def index(self, exprs: tuple[Expr, ...], ctx: Ctx) -> list[Array]:
        return [as_index(self.eval(e, ctx), ctx.rows) for e in exprs]

    @staticmethod
    def block_of(ctx: Ctx, r: int) -> tuple[int, int, int]:
        return (int(ctx.block[0][r]), int(ctx.block[1][r]), int(ctx.block[2][r]))

    def dims(self, name: str, ctx: Ctx) -> tuple[str, tuple[int, ...]]:
        base = ctx.alias.get(name)
        if base is None:
            raise ModelCompileError(f"`{name}` is not a tensor here")
        if name in ctx.moved:
            raise ModelCompileError(f"`{name}` is used after a move")
        return base, self.launch.shapes[base]

    # -- accesses --------------------------------------------------------------------------

    def access(self, ctx: Ctx, base: str, idx: list[Array], tile: tuple[int, ...],
               write: bool, what: str, own_box: Array | None = None) -> None:
        """Record one access per row; a tile outside the index space is a fault, except a
        sub-tile inside the block's own tile but wholly past the tensor's ragged end, which
        reads as padding and writes nothing (docs/dsl.md, sub-partitions)."""
        shape = self.launch.shapes[base]
        if len(idx) != len(shape):
            raise ModelCompileError("index rank")
        space = [cdiv(n, t) for n, t in zip(shape, tile, strict=True)]
        bad = np.zeros(ctx.rows, dtype=bool)
        for i, n in zip(idx, space, strict=True):
            bad |= i >= n
        if own_box is not None and bad.any():
            past_end = bad & own_box
            if past_end.any():
                keep = ~past_end
                idx = [i[keep] for i in idx]
                bad, lin = bad[keep], ctx.lin[keep]
            else:
                lin = ctx.lin
        else:
            lin = ctx.lin
        if bad.any():
            r = int(np.argmax(bad))
            tile_ix = tuple(int(i[r]) for i in idx)
            raise Fault(f"oob-{what}", f"block {self.block_of(ctx, r)} {what}s tile {tile_ix} "
                        f"of `{base}` outside its index space {tuple(space)}")
        if base not in self.events:
            return  # a shared input: reads cannot race
        lo = np.stack([i * t for i, t in zip(idx, tile, strict=True)], axis=1)
        batch = (lin, lo, tile)
        (self.events[base].writes if write else self.events[base].reads).append(batch)

    def own(self, ctx: Ctx, rank: int) -> list[Array]:
        return list(ctx.block[:rank])

    # -- statements ------------------------------------------------------------------------

    def run(self, body: list[Stmt], ctx: Ctx) -> None:
        for s in body:
            if not ctx.rows:
                return
            if isinstance(s, (Exit, Return)):
                # the rows where it fires skip the rest of the body (a `break` also skips
                # the later iterations: `_expand` took those rows out before the body ran)
                ctx = ctx.take(np.nonzero(~self.fires(s, ctx))[0])
                continue
            self.stmt(s, ctx)

    def fires(self, s: Exit | Return, ctx: Ctx) -> Array:
        t = test(s.cond, self.env(ctx))
        return np.broadcast_to(np.asarray(t, dtype=bool), (ctx.rows,))

    def stmt(self, s: Stmt, ctx: Ctx) -> None:
        if isinstance(s, Assign):
            vals = [self.eval(v, ctx) for v in s.values]
            for t, v in zip(s.targets, vals, strict=True):
                ctx.local[t] = v
        elif isinstance(s, Alias):
            for t, src in zip(s.targets, s.sources, strict=True):
                if ctx.alias[src] in self.outs:  # a `Mut` moves (docs/design.md §3 rule 3)
                    if src in ctx.moved:
                        raise ModelCompileError(f"`{src}` is moved twice")
                    ctx.moved.add(src)
                ctx.alias[t] = ctx.alias[src]
        elif isinstance(s, Pick):
            ctx.local[s.target] = merge(s.cond, s.a, s.b, self.env(ctx))
        elif isinstance(s, ChooseTensor):
            holds = test(s.cond, self.env(ctx))
            if not isinstance(holds, bool):
                raise ModelCompileError("a tensor chosen by a run-time test")
            self.stmt(Alias((s.target,), (s.a if holds else s.b,)), ctx)
        elif isinstance(s, ItemDef):
            base, _ = self.dims(s.src, ctx)
            self.access(ctx, base, [np.full(ctx.rows, s.pos, dtype=np.int64)], (1,), False,
                        "load")
            value = self.launch.data[base][s.pos]
            ctx.local[s.target] = Val(np.full(ctx.rows, value, dtype=np.int64),
                                      self.ins[base].dtype)
        elif isinstance(s, (ValueDef, Relay, Dead)):
            pass  # `Dead`: its body runs in no specialization
        elif isinstance(s, Store):
            if s.style == "badkw":
                raise ModelCompileError("unknown keyword of store")
            base, _ = self.dims(s.recv, ctx)
            tile = self.launch.tiles[base]
            if s.minted is not None:
                idx = self.minted(s.minted, ctx)
            elif s.index is None:
                idx = self.own(ctx, len(tile))
            else:
                idx = self.index(s.index, ctx)
            self.access(ctx, base, idx, tile, True, "store")
        elif isinstance(s, MutLoad):
            base, _ = self.dims(s.recv, ctx)
            tile = self.launch.tiles[base]
            idx = self.own(ctx, len(tile)) if s.index is None else self.index(s.index, ctx)
            self.access(ctx, base, idx, tile, False, "load")
        elif isinstance(s, SubPart):
            base, _ = self.dims(s.recv, ctx)
            tile = self.launch.tiles[base]
            if len(s.shape) != len(tile) or any(t % q for q, t in zip(s.shape, tile, strict=True)):
                raise ModelCompileError("sub-partition shape")
            ctx.subs[s.target] = (base, s.shape)
        elif isinstance(s, SubStore):
            self.sub_store(s, ctx)
        elif isinstance(s, LoadTile):
            self.load_tile(s, ctx)
        elif isinstance(s, LoadLike):
            if s.style == "badkw":
                raise ModelCompileError("unknown keyword of load_tile_like")
            base, _ = self.dims(s.src, ctx)
            like, _ = self.dims(s.like, ctx)
            if like not in self.outs:
                raise ModelCompileError("load_tile_like position is not a Mut")
            tile = self.launch.tiles[like]
            self.access(ctx, base, self.own(ctx, len(tile)), tile, False, "load")
        elif isinstance(s, Loop):
            self.loop(s, ctx)
        elif isinstance(s, While):
            self.while_(s, ctx)
        elif isinstance(s, Persist):
            self.persist(s, ctx)
        elif isinstance(s, CallProc):
            self.call(s, ctx)
        else:
            raise TypeError(f"no model for {s!r}")

    def minted(self, name: str, ctx: Ctx) -> list[Array]:
        v = ctx.local.get(name)
        if not isinstance(v, tuple):
            raise ModelCompileError(f"`{name}` is not a minted index")
        return [as_index(x, ctx.rows) for x in v]

    def sub_store(self, s: SubStore, ctx: Ctx) -> None:
        if s.recv not in ctx.subs:
            raise ModelCompileError(f"`{s.recv}` is not a sub-partition")
        base, shape = ctx.subs[s.recv]
        tile = self.launch.tiles[base]
        sub = [wrap_arr(i, 32) for i in self.index(s.index, ctx)]  # back to signed i32
        glob = []
        inside = np.ones(ctx.rows, dtype=bool)
        for o, q, t, ss in zip(self.own(ctx, len(tile)), shape, tile, sub, strict=True):
            glob.append(wrap_arr(o * (t // q) + ss, 32) % np.int64(1 << 32))
            inside &= (ss >= 0) & (ss < t // q)
        if not inside.all():
            # outside the block's own tile: the checker must refuse it or leave a device
            # check (which the interpreter launch then shows firing)
            r = int(np.argmin(inside))
            raise Fault("oob-subtile", f"block {self.block_of(ctx, r)} stores sub-tile "
                        f"{tuple(int(i[r]) for i in sub)} outside its own tile")
        self.access(ctx, base, glob, shape, True, "store", inside)

    def load_tile(self, s: LoadTile, ctx: Ctx) -> None:
        base, _ = self.dims(s.src, ctx)
        shape = tuple(self.launch.consts[d] if isinstance(d, str) else d for d in s.shape)
        if any(d < 1 or d & (d - 1) for d in shape):
            raise ModelCompileError("tile shape")
        idx = self.minted(s.minted, ctx) if s.minted is not None else \
            self.index(s.index or (), ctx)
        self.access(ctx, base, idx, shape, False, "load")

    def loop(self, s: Loop, ctx: Ctx) -> None:
        """The counter runs from the start to the stop as the device computed them (i32
        values, wrapped where a runtime product wraps)."""
        rows = (ctx.rows,)
        stop = np.broadcast_to(np.asarray(self.eval(s.n, ctx).v, dtype=np.int64), rows)
        start = np.zeros(rows, dtype=np.int64) if s.start is None else \
            np.broadcast_to(np.asarray(self.eval(s.start, ctx).v, dtype=np.int64), rows)
        step = np.ones(rows, dtype=np.int64)
        if s.step is not None:
            # the step the loop runs with: an i64 scalar truncated to the i32 counter
            step = wrap_arr(np.broadcast_to(np.asarray(self.eval(s.step, ctx).v,
                                                       dtype=np.int64), rows), 32)
            if (step <= 0).any():
                # Tile IR's `for` needs a positive step: the checker's obligation
                # `loop-step-positive` (at launch for a scalar step, else a device check)
                r = int(np.argmax(step <= 0))
                raise Fault("loop-step", f"block {self.block_of(ctx, r)} runs a range() "
                            f"with step {int(step[r])}")
        counts = np.maximum(-(-(stop - start) // step), 0)
        if int(counts.sum()) > LOOP_LIMIT:  # before `repeat` makes an array that long
            raise ModelCompileError("loop too long for the model")
        first = np.repeat(start, counts)
        stride = np.repeat(step, counts)
        self._expand(ctx, counts, lambda inner, k: inner.local.__setitem__(
            s.var, Val(first + k * stride, "i32")), s.body)

    def while_(self, s: While, ctx: Ctx) -> None:
        """`v = 0; while v < limit: v = v + 1; ...`: the body runs with v = 1 .. limit (the
        generator keeps `limit` small, so the i32 counter never wraps)."""
        n = self.eval(s.limit, ctx)
        counts = np.maximum(np.broadcast_to(np.asarray(n.v, dtype=np.int64), (ctx.rows,)), 0)
        self._expand(ctx, counts, lambda inner, k: inner.local.__setitem__(
            s.var, Val(k + 1, "i32")), s.body)

    def persist(self, s: Persist, ctx: Ctx) -> None:
        base, shape = self.dims(s.recv, ctx)
        tile = self.launch.tiles[base]
        group = 1
        if s.group is not None:
            g = self.eval(s.group, ctx)
            if g.kind != "c" or not isinstance(g.v, int) or g.v < 1:
                raise ModelCompileError("group must be a constant >= 1")
            group = g.v
        space = [cdiv(n, t) for n, t in zip(shape, tile, strict=True)]
        total = int(wrap_arr(np.array([math.prod(space)], dtype=np.int64), 32)[0])
        stride = self.grid[0]
        start = ctx.block[0]
        counts = np.maximum(-(-(total - start) // stride), 0)

        def bind(inner: Ctx, k: Array) -> None:
            flat = inner.block[0] + stride * k
            coords = schedule(flat, space, group)
            vals = tuple(Val(c, "i32") for c in coords)
            if isinstance(s.target, str):
                inner.local[s.target] = vals
                for i, v in enumerate(vals):  # `idx[i]` (the generator's Var name)
                    inner.local[f"{s.target}[{i}]"] = v
            else:
                if len(s.target) != len(vals):
                    raise ModelCompileError("unpacking the minted index")
                for n, v in zip(s.target, vals, strict=True):
                    inner.local[n] = v

        self._expand(ctx, counts, bind, s.body)

    def _expand(self, ctx: Ctx, counts: Array, bind: object, body: list[Stmt]) -> None:
        total = int(counts.sum())
        if total == 0:
            return
        if total > LOOP_LIMIT:
            raise ModelCompileError("loop too long for the model")
        sel = np.repeat(np.arange(ctx.rows), counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        k = np.arange(total, dtype=np.int64) - starts
        inner = ctx.take(sel)
        bind(inner, k)  # type: ignore[operator]
        breaks = [x for x in body if isinstance(x, Exit) and x.kind == "break"]
        if breaks:
            # An iteration runs if no earlier iteration of its block broke out (the
            # condition reads only the loop's variable and values from before the loop).
            fired = self.fires(breaks[0], inner).astype(np.int64)
            before = np.cumsum(fired) - fired
            first = np.repeat(np.cumsum(counts) - counts, counts)
            inner = inner.take(np.nonzero(before - before[first] == 0)[0])
        self.run(body, inner)

    def call(self, s: CallProc, ctx: Ctx) -> None:
        p = s.proc
        inner = Ctx(ctx.rows, ctx.block, ctx.lin, {}, {}, {})
        for name, kind, a in zip(p.params, p.kinds, s.args, strict=True):
            if kind == "tensor":
                assert isinstance(a, str)
                inner.alias[name] = ctx.alias[a]
            elif kind == "int":
                assert isinstance(a, Expr)
                inner.local[name] = self.eval(a, ctx)
        self.run(p.body, inner)


def schedule(flat: Array, space: list[int], group: int) -> list[Array]:
    """The persistent schedule (flat tile id -> tile index) as the lowering emits it:
    rank 1 direct, rank 2 a grouped swizzle, rank 3 the leading axis then the swizzle;
    truncating division on non-negative values, i32 arithmetic."""

    def grouped(pid: Array, m: int, n: int) -> list[Array]:
        g = min(group, 2**31 - 1, m)  # a group of m rows or more is a group of m
        per = wrap_arr(np.array([g * n], dtype=np.int64), 32)[0]
        if per == 0:
            raise Fault("div-zero", "the schedule divides by a zero group")
        first = (pid // per) * g
        size = np.minimum(m - first, g)
        local = pid % per
        if (size == 0).any():
            raise Fault("div-zero", "the schedule divides by a zero group size")
        return [first + local % size, local // size]

    if len(space) == 1:
        return [flat]
    if len(space) == 2:
        return grouped(flat, space[0], space[1])
    plane = space[1] * space[2]
    return [flat // plane, *grouped(flat % plane, space[1], space[2])]


def truth(k: Kernel, launch: Launch, mapped: set[str],
          grid: tuple[int, int, int] | None = None) -> Verdict:
    """Run the model for every block of `launch` (on `grid`, the launcher's, when given)
    and judge it."""
    if grid is None:
        grid = launch_grid(k, launch, mapped)
    if grid is None:
        return Verdict(True, "no-launch", "the outputs' grids differ")
    gx, gy, gz = grid
    n = gx * gy * gz
    if n == 0:
        return Verdict(True, "", "no blocks", grid)
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    bx, by, bz = x.ravel().astype(np.int64), y.ravel().astype(np.int64), z.ravel().astype(np.int64)
    lin = bx + gx * (by + gy * bz)
    alias = {o.name: o.name for o in k.outs} | {x_.name: x_.name for x_ in k.ins}
    ctx = Ctx(n, (bx, by, bz), lin, {}, alias, {})
    m = Machine(k, launch, grid)
    try:
        m.run(k.body, ctx)
    except Fault as f:
        return Verdict(False, f.reason, f.detail, grid, blocks=n)
    except ModelCompileError as e:
        return Verdict(True, "compile", str(e), grid, blocks=n)
    expected = {}
    for name, ev in m.events.items():
        bad = conflicts(ev, launch.shapes[name])
        if bad:
            return Verdict(False, bad[0], f"`{name}`: {bad[1]}", grid, blocks=n)
        expected[name] = paint(ev, launch.shapes[name])
    return Verdict(True, "", "", grid, expected, n)


def _units(batches: list[tuple[Array, Array, tuple[int, ...]]], g: tuple[int, ...],
           shape: tuple[int, ...]) -> tuple[Array, Array]:
    """(block, unit id) pairs covered by `batches`, units being `g`-sized cells."""
    nu = [cdiv(n, q) for n, q in zip(shape, g, strict=True)]
    blocks, units = [], []
    for lin, lo, ext in batches:
        per = [e // q for e, q in zip(ext, g, strict=True)]
        offs = np.stack(np.meshgrid(*[np.arange(p) for p in per], indexing="ij"), -1).reshape(
            -1, len(per))
        base = lo // np.asarray(g)
        cells = base[:, None, :] + offs[None, :, :]
        inside = np.all(cells < np.asarray(nu), axis=2)
        flat = np.ravel_multi_index(tuple(np.where(inside[..., None], cells, 0).transpose(2, 0, 1)),
                                    nu)
        b = np.broadcast_to(lin[:, None], flat.shape)
        blocks.append(b[inside])
        units.append(flat[inside])
    if not blocks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(blocks), np.concatenate(units)


def _granularity(ev: Events) -> tuple[int, ...] | None:
    exts = [e for _, _, e in ev.writes + ev.reads]
    if not exts:
        return None
    return tuple(min(col) for col in zip(*exts, strict=True))


def conflicts(ev: Events, shape: tuple[int, ...]) -> tuple[str, str] | None:
    g = _granularity(ev)
    if g is None or not ev.writes:
        return None
    wb, wu = _units(ev.writes, g, shape)
    pairs = np.unique(np.stack([wu, wb], 1), axis=0)
    same = pairs[1:, 0] == pairs[:-1, 0]
    if same.any():
        i = int(np.argmax(same))
        cells = [cdiv(n, q) for n, q in zip(shape, g, strict=True)]
        cell = tuple(int(c) for c in np.unravel_index(pairs[i, 0], cells))
        return ("race-ww", f"blocks #{pairs[i, 1]} and #{pairs[i + 1, 1]} (linear ids) both "
                f"write cell {cell} of {g}-cells")
    if ev.reads:
        rb, ru = _units(ev.reads, g, shape)
        writer = np.full(math.prod(cdiv(n, q) for n, q in zip(shape, g, strict=True)), -1)
        writer[pairs[:, 0]] = pairs[:, 1]
        w = writer[ru]
        bad = (w >= 0) & (w != rb)
        if bad.any():
            i = int(np.argmax(bad))
            return ("race-rw", f"block #{rb[i]} reads what block #{w[i]} writes")
    return None


def paint(ev: Events, shape: tuple[int, ...]) -> Array:
    """The output the model predicts: each written element holds its writer's id + 1."""
    out = np.zeros(shape, dtype=np.int64)
    for lin, lo, ext in ev.writes:
        for r in range(len(lin)):
            sl = tuple(slice(int(a), int(a) + e) for a, e in zip(lo[r], ext, strict=True))
            out[sl] = lin[r] + 1
    return out

"""Generated kernels as data: statements over the index expressions of `model.py`, the
parameters and launches, and the rendering to Python source files (the entry in one file,
device functions in a second and third, so that spans point into several files).

Every statement has one meaning, written down once in `brute.py`; the rendering may spell it
in several ways (keywords or positions, aliases, device functions) that must not change it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .model import Cmp, DevCall, DevFn, Expr, Var, dev_fns, render, render_cond, walk

HEADER = (
    "import cutile\n"
    "from cutile.core import (Const, Mut, Tensor, block_id, cdiv, full, i8, i16, i32, i64,\n"
    "                         load_tile_like, num_blocks, num_tiles, u8, u32)\n"
)


# --------------------------------------------------------------------------- statements


class Stmt:
    pass


@dataclass
class Assign(Stmt):
    """`a = e` or, with several targets, the tuple assignment `a, b = e1, e2`."""

    targets: tuple[str, ...]
    values: tuple[Expr, ...]


@dataclass
class Alias(Stmt):
    """`w = z` (a move of a `Mut`) or `a, b = z, x`."""

    targets: tuple[str, ...]
    sources: tuple[str, ...]


@dataclass
class ValueDef(Stmt):
    """`val = full(shape, lin + 1, i32)`: every store writes the writer's linear id + 1."""

    target: str
    shape: tuple[int | str, ...]


@dataclass
class Store(Stmt):
    """`recv.store(value)` (own tile, `index` None), `recv.store(value, index=...)`, or with
    `minted` the tuple variable of an `iter_indices()` loop. `style`: kw, pos, allkw, rev,
    badkw (an unknown keyword)."""

    recv: str
    index: tuple[Expr, ...] | None
    value: str = "val"
    style: str = "kw"
    minted: str | None = None


@dataclass
class MutLoad(Stmt):
    """`t = recv.load()` or `recv.load(index=...)` (must be provably the own tile)."""

    target: str
    recv: str
    index: tuple[Expr, ...] | None


@dataclass
class SubPart(Stmt):
    """`p = recv.partition_mut(shape)`."""

    target: str
    recv: str
    shape: tuple[int, ...]
    kw: bool = False


@dataclass
class SubStore(Stmt):
    recv: str
    index: tuple[Expr, ...]
    value: str = "sval"
    style: str = "pos"  # pos | kw | allkw


@dataclass
class LoadTile(Stmt):
    """`t = src.load_tile(shape, index)`; with `combine`, `val = val + t * 0` makes the
    stored value depend on the load."""

    target: str
    src: str
    shape: tuple[int | str, ...]
    index: tuple[Expr, ...] | None
    style: str = "pos"  # pos | kw | mixed
    combine: bool = False
    minted: str | None = None
    via: tuple[str, str] | None = None  # (device function, module) that does the load


@dataclass
class LoadLike(Stmt):
    target: str
    src: str
    like: str
    style: str = "pos"  # pos | kw | rev | mixed | badkw
    combine: bool = False


@dataclass
class ItemDef(Stmt):
    """`target = src.load_tile((1,), (pos,)).item()`: a device integer of `src`'s element
    type, whose value the launch's data gives (`Launch.data`)."""

    target: str
    src: str
    pos: int


@dataclass
class Pick(Stmt):
    """`target` is `a` where `cond` holds, else `b`: a merge of two values, spelled as a
    conditional expression (`ifexp`), an `if`/`else` (`if-else`) or a default rebound in
    an `if` (`if-only`)."""

    target: str
    cond: Cmp
    a: Expr
    b: Expr
    form: str = "ifexp"


@dataclass
class ChooseTensor(Stmt):
    """`target` names tensor `a` where `cond` holds, else `b` (forms as `Pick`); the compiler
    keeps one branch only where `cond` is a compile-time constant."""

    target: str
    cond: Cmp
    a: str
    b: str
    form: str = "if-else"


@dataclass
class Dead(Stmt):
    """`body` under a head that runs it in no specialization, a test of literals
    (`while False:`, `for _ in range(0):`, `if 0:`): the checker does not read it and the
    compiler emits nothing of it, so what it does (a racy store) never happens."""

    head: str
    body: list[Stmt]


@dataclass
class Loop(Stmt):
    """`for var in range(n):`, or `range(start, n)` with a start, or `range(start, n,
    step)` with a step (a start of None then renders as 0)."""

    var: str
    n: Expr
    body: list[Stmt]
    start: Expr | None = None
    step: Expr | None = None
    named: str | None = None  # `named = range(...)` first, then `for var in named:`


@dataclass
class While(Stmt):
    """`var = 0` then `while var < limit:` whose body starts with `var = var + 1` (so a
    `continue` cannot skip it): the body sees `var` = 1, 2, ..., limit."""

    var: str
    limit: Expr
    body: list[Stmt]


@dataclass
class Exit(Stmt):
    """`if cond: break` or `if cond: continue`, at the top level of a loop body; `cond`
    reads only the loop's variable and what is defined before the loop."""

    kind: str  # "break" | "continue"
    cond: Cmp


@dataclass
class Return(Stmt):
    """`if cond: return` at the top level of a device procedure's body."""

    cond: Cmp


@dataclass
class Persist(Stmt):
    """`for target in recv.iter_indices(...)`; `target` is one name or a tuple of names."""

    recv: str
    target: str | tuple[str, ...]
    body: list[Stmt]
    group: Expr | None = None
    group_kw: bool = True
    named: str | None = None  # `named = recv.iter_indices(...)` first, then `for ... in named:`


@dataclass
class DevProc:
    """A `@cutile.device` function with statements; `kinds` says what each parameter is:
    "tensor" (a `Mut` or shared tensor, reborrowed), "tile" or "int"."""

    name: str
    params: tuple[str, ...]
    kinds: tuple[str, ...]
    body: list[Stmt]
    module: str = ""
    annotate: dict[str, str] = field(default_factory=dict)  # param -> annotation text


@dataclass
class CallProc(Stmt):
    """`proc(args...)`; an arg is a tensor or tile name (str) or an integer Expr."""

    proc: DevProc
    args: tuple[str | Expr, ...]
    kw: bool = False


@dataclass
class Relay(Stmt):
    """`val = helper(val)`: a device function with a loop that returns its argument
    unchanged (`for j in range(n): v = v + 0`); its loop can share a byte offset with a loop
    of the entry file."""

    value: str
    helper: str
    n: int
    module: str = ""


# --------------------------------------------------------------------------- parameters


@dataclass
class OutParam:
    name: str
    rank: int
    decl: tuple[int | str, ...]  # declared tile dims: literal or Const name


@dataclass
class InParam:
    name: str
    rank: int
    decl: tuple[int | str, ...]  # -1, literal, or Const name
    dtype: str = "i32"


@dataclass
class Launch:
    shapes: dict[str, tuple[int, ...]]  # actual tensor shapes, by parameter name
    tiles: dict[str, tuple[int, ...]]  # partition tile shapes, by output name
    consts: dict[str, int]  # every Const's value
    given: dict[str, int]  # the Consts passed by keyword
    scalars: dict[str, int]
    persistent: int | None = None  # `.persistent(n)` on the outputs (0: `.persistent()`)
    data: dict[str, list[int]] = field(default_factory=dict)  # inputs not filled by arange


@dataclass
class Kernel:
    case_id: str
    outs: list[OutParam]
    ins: list[InParam]
    scalars: list[tuple[str, str]]  # (name, dtype)
    consts: list[str]
    body: list[Stmt]
    launches: list[Launch]
    features: set[str] = field(default_factory=set)
    align_loops: bool = False
    files: dict[str, str] = field(default_factory=dict)  # module name -> source

    @property
    def entry_module(self) -> str:
        return f"fz_{self.case_id}_k"

    def dev_module(self, i: int) -> str:
        return f"fz_{self.case_id}_d{i}"


# --------------------------------------------------------------------------- rendering


def _tuple(items: tuple[str, ...] | list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def _idx(index: tuple[Expr, ...]) -> str:
    return _tuple([render(e) for e in index])


def _shape(shape: tuple[int | str, ...]) -> str:
    return _tuple([str(s) for s in shape])


class Renderer:
    """Renders one kernel's statements; collects the device functions they use."""

    def __init__(self) -> None:
        self.fns: dict[str, DevFn] = {}
        self.procs: dict[str, DevProc] = {}
        self.relays: dict[str, Relay] = {}
        self.getters: dict[str, tuple[str, LoadTile]] = {}  # name -> (module, a call)

    def _note_exprs(self, exprs: list[Expr]) -> None:
        for e in exprs:
            for f in dev_fns(e):
                self.fns.setdefault(f.name, f)

    def stmts(self, body: list[Stmt], ind: str) -> list[str]:
        out: list[str] = []
        for s in body:
            out += self.stmt(s, ind)
        return out or [ind + "pass"]

    def stmt(self, s: Stmt, ind: str) -> list[str]:
        if isinstance(s, Assign):
            self._note_exprs(list(s.values))
            vals = ", ".join(render(v) for v in s.values)
            return [f"{ind}{', '.join(s.targets)} = {vals}"]
        if isinstance(s, Alias):
            return [f"{ind}{', '.join(s.targets)} = {', '.join(s.sources)}"]
        if isinstance(s, ValueDef):
            return [f"{ind}{s.target} = full({_shape(s.shape)}, lin + 1, i32)"]
        if isinstance(s, Store):
            return [ind + self._store(s)]
        if isinstance(s, MutLoad):
            if s.index is None:
                return [f"{ind}{s.target} = {s.recv}.load()"]
            self._note_exprs(list(s.index))
            return [f"{ind}{s.target} = {s.recv}.load(index={_idx(s.index)})"]
        if isinstance(s, SubPart):
            arg = f"shape={_shape(s.shape)}" if s.kw else _shape(s.shape)
            return [f"{ind}{s.target} = {s.recv}.partition_mut({arg})"]
        if isinstance(s, SubStore):
            self._note_exprs(list(s.index))
            i = _idx(s.index)
            call = {"pos": f"{s.value}, {i}", "kw": f"{s.value}, index={i}",
                    "allkw": f"tile={s.value}, index={i}"}[s.style]
            return [f"{ind}{s.recv}.store({call})"]
        if isinstance(s, LoadTile):
            return self._load_tile(s, ind)
        if isinstance(s, LoadLike):
            call = {"pos": f"{s.src}, {s.like}", "kw": f"src={s.src}, like={s.like}",
                    "rev": f"like={s.like}, src={s.src}", "mixed": f"{s.src}, like={s.like}",
                    "badkw": f"{s.src}, {s.like}, pad=\"zero\""}[s.style]
            lines = [f"{ind}{s.target} = load_tile_like({call})"]
            if s.combine:
                lines.append(f"{ind}val = val + {s.target} * 0")
            return lines
        if isinstance(s, ItemDef):
            return [f"{ind}{s.target} = {s.src}.load_tile((1,), ({s.pos},)).item()"]
        if isinstance(s, (Pick, ChooseTensor)):
            return self._pick(s, ind)
        if isinstance(s, Dead):
            return [f"{ind}{s.head}", *self.stmts(s.body, ind + "    ")]
        if isinstance(s, Loop):
            self._note_exprs([e for e in (s.start, s.n, s.step) if e is not None])
            bounds = render(s.n) if s.start is None else f"{render(s.start)}, {render(s.n)}"
            if s.step is not None:
                first = "0" if s.start is None else render(s.start)
                bounds = f"{first}, {render(s.n)}, {render(s.step)}"
            if s.named is not None:  # CT2013: the range is not written in the header
                return [f"{ind}{s.named} = range({bounds})", f"{ind}for {s.var} in {s.named}:",
                        *self.stmts(s.body, ind + "    ")]
            return [f"{ind}for {s.var} in range({bounds}):", *self.stmts(s.body, ind + "    ")]
        if isinstance(s, While):
            self._note_exprs([s.limit])
            return [f"{ind}{s.var} = 0", f"{ind}while {s.var} < {render(s.limit)}:",
                    f"{ind}    {s.var} = {s.var} + 1", *self.stmts(s.body, ind + "    ")]
        if isinstance(s, (Exit, Return)):
            self._note_exprs([s.cond.a, s.cond.b])
            what = s.kind if isinstance(s, Exit) else "return"
            return [f"{ind}if {render_cond(s.cond)}:", f"{ind}    {what}"]
        if isinstance(s, Persist):
            tgt = s.target if isinstance(s.target, str) else ", ".join(s.target)
            g = ""
            if s.group is not None:
                self._note_exprs([s.group])
                g = f"group={render(s.group)}" if s.group_kw else render(s.group)
            if s.named is not None:  # CT2013: the schedule is not written in the header
                return [f"{ind}{s.named} = {s.recv}.iter_indices({g})",
                        f"{ind}for {tgt} in {s.named}:", *self.stmts(s.body, ind + "    ")]
            return [f"{ind}for {tgt} in {s.recv}.iter_indices({g}):",
                    *self.stmts(s.body, ind + "    ")]
        if isinstance(s, CallProc):
            self.procs.setdefault(s.proc.name, s.proc)
            for a in s.args:
                if isinstance(a, Expr):
                    self._note_exprs([a])
            texts = [a if isinstance(a, str) else render(a) for a in s.args]
            if s.kw:
                texts = [f"{p}={t}" for p, t in zip(s.proc.params, texts, strict=True)]
            return [f"{ind}{s.proc.name}({', '.join(texts)})"]
        if isinstance(s, Relay):
            self.relays.setdefault(s.helper, s)
            return [f"{ind}{s.value} = {s.helper}({s.value})"]
        raise TypeError(f"cannot render {s!r}")

    def _pick(self, s: Pick | ChooseTensor, ind: str) -> list[str]:
        if isinstance(s, Pick):
            self._note_exprs([s.a, s.b, s.cond.a, s.cond.b])
            a, b = render(s.a), render(s.b)
        else:
            # (a test through a device function: it is imported as any other)
            self._note_exprs([s.cond.a, s.cond.b])
            a, b = s.a, s.b
        c = render_cond(s.cond)
        if s.form == "ifexp":
            return [f"{ind}{s.target} = {a} if {c} else {b}"]
        if s.form == "if-only":
            return [f"{ind}{s.target} = {b}", f"{ind}if {c}:", f"{ind}    {s.target} = {a}"]
        return [f"{ind}if {c}:", f"{ind}    {s.target} = {a}", f"{ind}else:",
                f"{ind}    {s.target} = {b}"]

    def _store(self, s: Store) -> str:
        if s.index is None and s.minted is None:
            return f"{s.recv}.store(tile={s.value})" if s.style == "allkw" else \
                f"{s.recv}.store({s.value})"
        if s.minted is not None:
            i = s.minted
        else:
            assert s.index is not None
            self._note_exprs(list(s.index))
            i = _idx(s.index)
        call = {"kw": f"{s.value}, index={i}", "pos": f"{s.value}, {i}",
                "allkw": f"tile={s.value}, index={i}", "rev": f"index={i}, tile={s.value}",
                "badkw": f"{s.value}, idx={i}"}[s.style]
        return f"{s.recv}.store({call})"

    def _load_tile(self, s: LoadTile, ind: str) -> list[str]:
        if s.via is not None:  # `t = get(x, i0, i1)`: the load is in a device function
            assert s.index is not None
            self._note_exprs(list(s.index))
            self.getters.setdefault(s.via[0], (s.via[1], s))
            args = ", ".join([s.src, *(render(e) for e in s.index)])
            lines = [f"{ind}{s.target} = {s.via[0]}({args})"]
            if s.combine:
                lines.append(f"{ind}val = val + {s.target} * 0")
            return lines
        if s.minted is not None:
            i = s.minted
        else:
            assert s.index is not None
            self._note_exprs(list(s.index))
            i = _idx(s.index)
        sh = _shape(s.shape)
        call = {"pos": f"{sh}, {i}", "kw": f"shape={sh}, index={i}",
                "mixed": f"{sh}, index={i}"}[s.style]
        lines = [f"{ind}{s.target} = {s.src}.load_tile({call})"]
        if s.combine:
            lines.append(f"{ind}val = val + {s.target} * 0")
        return lines


def _signature(k: Kernel) -> str:
    parts = []
    for o in k.outs:
        dims = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in o.decl)
        parts.append(f"{o.name}: Mut[Tensor[i32, [{dims}]]]")
    for x in k.ins:
        dims = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in x.decl)
        parts.append(f"{x.name}: Tensor[{x.dtype}, [{dims}]]")
    parts += [f"{n}: {d}" for n, d in k.scalars]
    parts += [f"{c}: Const[int]" for c in k.consts]
    return ", ".join(parts)


def _dev_text(fn: DevFn) -> list[str]:
    early = []
    if fn.guard is not None:
        early = [f"    if {render_cond(fn.guard[0])}:", f"        return {render(fn.guard[1])}"]
    return ["@cutile.device", f"def {fn.name}({', '.join(fn.params)}):", *early,
            f"    return {render(fn.body)}", ""]


def _module_imports(names_by_module: dict[str, list[str]], own: str) -> str:
    lines = []
    for mod in sorted(names_by_module):
        if mod != own and names_by_module[mod]:
            lines.append(f"from {mod} import {', '.join(sorted(set(names_by_module[mod])))}")
    return "".join(x + "\n" for x in lines)


_LOOP = re.compile(r"^[ ]*for (\w+)", re.M)


def _loop_offsets(text: str) -> list[int]:
    return [len(text[: m.start(1)].encode()) for m in _LOOP.finditer(text)]


def render_kernel(k: Kernel) -> dict[str, str]:
    """Source text of every file, entry module first. Device functions are spread over the
    two device modules as their `module` says; each file imports what it calls."""
    r = Renderer()
    body = r.stmts(k.body, "    ")
    # Device functions may call device functions; collect to a fixed point.
    bodies: dict[str, list[str]] = {}
    done: set[str] = set()
    while True:
        pending = [n for n in [*r.fns, *r.procs, *r.relays, *r.getters] if n not in done]
        if not pending:
            break
        for name in pending:
            done.add(name)
            if name in r.fns:
                guard = r.fns[name].guard
                r._note_exprs([r.fns[name].body] + ([guard[0].a, guard[0].b, guard[1]]
                                                    if guard is not None else []))
                bodies[name] = _dev_text(r.fns[name])
            elif name in r.getters:
                ld = r.getters[name][1]
                params = [f"i{a}" for a in range(len(ld.shape))]
                bodies[name] = ["@cutile.device", f"def {name}(src, {', '.join(params)}):",
                                f"    return src.load_tile({_shape(ld.shape)}, "
                                f"{_tuple(params)})", ""]
            elif name in r.procs:
                p = r.procs[name]
                params = [f"{q}: {p.annotate[q]}" if q in p.annotate else q for q in p.params]
                bodies[name] = ["@cutile.device", f"def {name}({', '.join(params)}):",
                                *r.stmts(p.body, "    "), ""]
            else:
                rl = r.relays[name]
                bodies[name] = ["@cutile.device", f"def {name}(v):",
                                f"    for j in range({rl.n}):", "        v = v + 0",
                                "    return v", ""]
    module_of: dict[str, str] = {}
    for name in bodies:
        mod = (r.fns[name].module if name in r.fns else
               r.procs[name].module if name in r.procs else
               r.getters[name][0] if name in r.getters else r.relays[name].module)
        module_of[name] = mod or k.dev_module(1)
    # who calls whom, for the imports of each file
    calls: dict[str, list[str]] = {}
    for name, lines in bodies.items():
        calls[name] = [n for n in bodies if n != name and re.search(rf"\b{n}\(", "\n".join(lines))]
    entry_calls = [n for n in bodies if re.search(rf"\b{n}\(", "\n".join(body))]

    def imports_for(names: list[str], own: str) -> str:
        by_mod: dict[str, list[str]] = {}
        for n in names:
            by_mod.setdefault(module_of[n], []).append(n)
        return _module_imports(by_mod, own)

    files: dict[str, str] = {}
    entry_text = (HEADER + imports_for(entry_calls, k.entry_module) + "\n@@PAD@@\n"
                  + "\n@cutile.entry\n"
                  + f"def kern({_signature(k)}):\n" + "".join(x + "\n" for x in body))
    files[k.entry_module] = entry_text
    for mod in sorted(set(module_of.values())):
        names = [n for n in bodies if module_of[n] == mod]
        needed = sorted({c for n in names for c in calls[n]})
        text = HEADER + imports_for(needed, mod) + "\n@@PAD@@\n\n"
        text += "\n".join("\n".join(bodies[n]) for n in names)
        files[mod] = text
    return _pad(files, k.align_loops)


def _pad(files: dict[str, str], align: bool) -> dict[str, str]:
    """Replace the `@@PAD@@` line. With `align`, pad so that the first loop variable of the
    entry file and of each device file start at the same byte offset (the checker once keyed
    loops by offset alone)."""
    base = {m: t.replace("@@PAD@@\n", "") for m, t in files.items()}
    if not align:
        return base
    firsts = {m: _loop_offsets(t)[0] for m, t in base.items() if _loop_offsets(t)}
    if len(firsts) < 2:
        return base
    target = max(firsts.values()) + 2
    out = {}
    for m, t in files.items():
        if m in firsts:
            n = target - firsts[m]
            out[m] = t.replace("@@PAD@@\n", "#" + "-" * (n - 2) + "\n")
        else:
            out[m] = t.replace("@@PAD@@\n", "")
    return out


def exprs_of(body: list[Stmt]) -> list[Expr]:
    """Every index expression in `body` (loops and procedures included)."""
    out: list[Expr] = []
    for s in body:
        if isinstance(s, Assign):
            out += list(s.values)
        elif isinstance(s, (Store, MutLoad, SubStore, LoadTile)) and s.index is not None:
            out += list(s.index)
        elif isinstance(s, Loop):
            out += [e for e in (s.n, s.start, s.step) if e is not None] + exprs_of(s.body)
        elif isinstance(s, While):
            out += [s.limit, *exprs_of(s.body)]
        elif isinstance(s, (Exit, Return, ChooseTensor)):
            out += [s.cond.a, s.cond.b]
        elif isinstance(s, Pick):
            out += [s.cond.a, s.cond.b, s.a, s.b]
        elif isinstance(s, Persist):
            out += ([s.group] if s.group is not None else []) + exprs_of(s.body)
        elif isinstance(s, CallProc):
            out += [a for a in s.args if isinstance(a, Expr)] + exprs_of(s.proc.body)
    return out


def uses_var(body: list[Stmt], name: str) -> bool:
    return any(isinstance(n, Var) and n.name == name for e in exprs_of(body) for n in walk(e))


__all__ = [
    "Alias", "Assign", "CallProc", "ChooseTensor", "Dead", "DevCall", "DevProc", "Exit",
    "InParam",
    "ItemDef", "Kernel", "Launch", "LoadLike", "LoadTile", "Loop", "MutLoad", "OutParam",
    "Persist", "Pick", "Relay",
    "Return", "Stmt", "Store", "SubPart", "SubStore", "ValueDef", "While", "render_kernel",
]

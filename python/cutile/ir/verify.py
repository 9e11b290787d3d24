"""The IR verifier: a module is checked before it is encoded or interpreted.

Checks, in one walk:
- entries take rank-0 tiles only (tensors travel as pointer, shapes, strides) and end with
  `return`;
- every tile dimension (of any value, and of partition-view tiles) is a power of two, and a
  tile holds at most 2**24 elements;
- SSA: each value is defined once and used only where its definition dominates (earlier in
  the same block, or in an enclosing block before the op that holds the region);
- regions end with the right terminator, whose operands match what the parent expects;
- per-op operand and result types (`rules`).

A module that fails is a bug in whatever built it, so the error is an internal one; it lists
every problem with the op's Python location.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InternalCompilerError
from .attrs import OptimizationHints
from .core import Block, Function, Location, Module, Op, Value
from .op_table import IMPURE, op_def
from .rules import check_op
from .types import MAX_TILE_ELEMENTS, PartitionViewType, TileType, Type, is_power_of_two


@dataclass(frozen=True)
class Problem:
    message: str
    function: str
    op: str | None = None
    loc: Location | None = None

    def __str__(self) -> str:
        where = f" at {self.loc}" if self.loc else ""
        what = f"`{self.op}`" if self.op else "entry"
        return f"{self.function}: {what}{where}: {self.message}"


class VerificationError(InternalCompilerError):
    """The IR is malformed; `problems` lists what is wrong."""

    code = "CT9002"

    def __init__(self, problems: list[Problem]) -> None:
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid Tile IR ({len(problems)} problems):\n{lines}")
        self.problems = problems


def verify(module: Module) -> None:
    found = check_module(module)
    if found:
        raise VerificationError(found)


def check_module(module: Module) -> list[Problem]:
    problems: list[Problem] = []
    names = [f.name for f in module.functions]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Problem(f"two functions named `{dup}`", dup))
    for fn in module.functions:
        problems += _FunctionChecker(fn).run()
    return problems


_LOOPS = ("for", "loop")


class _FunctionChecker:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.problems: list[Problem] = []
        self.defined: set[Value] = set()  # every value ever defined (to catch redefinition)

    def report(self, message: str, op: Op | None = None) -> None:
        loc = op.loc if op is not None else self.fn.loc
        self.problems.append(Problem(message, self.fn.name, op.name if op else None, loc))

    def run(self) -> list[Problem]:
        fn = self.fn
        if not fn.is_entry:
            self.report("only entries can be encoded (device functions must be inlined)")
        if fn.body.args != fn.params:
            self.report("the body's arguments must be the function parameters")
        for i, p in enumerate(fn.params):
            if not (isinstance(p.type, TileType) and p.type.shape == ()):
                self.report(f"parameter {i} is {p.type}; entry parameters must be rank-0 tiles")
        if not fn.body.ops or fn.body.ops[-1].name != "return":
            self.report("the entry body must end with `return`")
        for message in check_hints(fn.hints, ENTRY_HINTS):
            self.report(message)
        self.block(fn.body, visible=set(), parents=[])
        return self.problems

    def define(self, values: Iterable[Value], op: Op | None) -> None:
        for v in values:
            if v in self.defined:
                self.report(f"value {v!r} is defined twice", op)
            self.defined.add(v)
            self.check_type(v.type, op)

    def check_type(self, ty: Type, op: Op | None) -> None:
        if isinstance(ty, TileType):
            shape: tuple[int, ...] = ty.shape
        elif isinstance(ty, PartitionViewType):
            shape = ty.tile_shape
        else:
            return
        bad = [d for d in shape if not is_power_of_two(d)]
        if bad:
            self.report(f"{ty}: tile dimensions must be powers of two (got {bad})", op)
        elif math.prod(shape) > MAX_TILE_ELEMENTS:
            self.report(f"{ty}: a tile holds at most {MAX_TILE_ELEMENTS} elements", op)

    def block(self, block: Block, visible: set[Value], parents: list[Op]) -> None:
        scope = set(visible)
        self.define(block.args, parents[-1] if parents else None)
        scope.update(block.args)
        for i, op in enumerate(block.ops):
            for v in op.operands:
                if v not in scope:
                    self.report(f"operand {v!r} does not dominate this use", op)
            for message in _table_problems(op):
                self.report(message, op)
            for message in check_op(op):
                self.report(message, op)
            hints = op.attrs.get("optimization_hints")
            if hints is not None:
                by_arch = dict(hints.by_arch) if isinstance(hints, OptimizationHints) else hints
                for message in check_hints(by_arch, MEMORY_HINTS):
                    self.report(message, op)
            if op.name in TERMINATORS and i != len(block.ops) - 1:
                self.report("a terminator must be the last op of its block", op)
            if op.name == "return" and parents:
                self.report("`return` is only allowed at the top of the entry", op)
            for region in op.regions:
                self.block(region, scope, [*parents, op])
                self.check_terminator(op, region, parents)
            self.define(op.results, op)
            scope.update(op.results)

    def check_terminator(self, op: Op, region: Block, parents: list[Op]) -> None:
        last = region.ops[-1] if region.ops else None
        name = last.name if last is not None else None
        passed = _types(last.operands) if last is not None else ""
        if op.name == "for":
            if name != "continue":
                self.report("a `for` body must end with `continue`", op)
            elif passed != _types(op.results):
                self.report(
                    f"`continue` passes ({passed}), `for` carries ({_types(op.results)})", op
                )
        elif op.name == "loop":
            if name == "continue" and passed != _types(region.args):
                self.report(
                    f"`continue` passes ({passed}), `loop` carries ({_types(region.args)})", op
                )
            elif name == "break" and passed != _types(op.results):
                self.report(f"`break` passes ({passed}), `loop` yields ({_types(op.results)})", op)
            elif name not in ("continue", "break"):
                self.report("a `loop` body must end with `continue` or `break`", op)
        elif op.name == "if":
            if name == "yield":
                if passed != _types(op.results):
                    self.report(
                        f"`yield` passes ({passed}), `if` yields ({_types(op.results)})", op
                    )
            elif name in ("continue", "break"):
                # Leaving the enclosing loop from a branch; checked against that loop.
                loops = [p for p in parents if p.name in _LOOPS]
                if not loops:
                    self.report(f"`{name}` outside a loop", op)
                elif last is not None:
                    self.check_loop_exit(last, loops[-1])
            else:
                self.report("an `if` branch must end with `yield`", op)
        elif op.name in ("reduce", "scan"):
            want = ", ".join(
                str(TileType((), r.type.dtype)) for r in op.results if isinstance(r.type, TileType)
            )
            if name != "yield" or passed != want:
                self.report(f"the `{op.name}` body must `yield` ({want})", op)
            for inner in region.walk():
                if inner.name in _IMPURE:
                    self.report(f"`{inner.name}` is not pure; {op.name} bodies must be", op)

    def check_loop_exit(self, exit_op: Op, loop: Op) -> None:
        passed = _types(exit_op.operands)
        if exit_op.name == "break" and loop.name == "for":
            self.report("`for` loops cannot `break`; use `loop`", exit_op)
        elif exit_op.name == "break" and passed != _types(loop.results):
            self.report(
                f"`break` passes ({passed}), `loop` yields ({_types(loop.results)})", exit_op
            )
        elif exit_op.name == "continue":
            carried = loop.regions[0].args[1:] if loop.name == "for" else loop.regions[0].args
            if passed != _types(carried):
                self.report(
                    f"`continue` passes ({passed}), loop carries ({_types(carried)})", exit_op
                )


# tileiras ignores hints it does not know, so a misspelt one would silently do nothing.
ENTRY_HINTS = frozenset({"num_cta_in_cga", "occupancy", "num_worker_warps_per_cta"})
MEMORY_HINTS = frozenset({"latency", "allow_tma"})
_ARCH = re.compile(r"sm_\d+[a-z]?|default")


def check_hints(hints: Mapping[str, Any], known: frozenset[str]) -> list[str]:
    out = []
    for arch, entries in hints.items():
        if not _ARCH.fullmatch(arch):
            out.append(f"hint target `{arch}` is neither `default` nor an `sm_XY` name")
        for key, value in dict(entries).items():
            if key not in known:
                out.append(f"unknown optimization hint `{key}` (known: {', '.join(sorted(known))})")
            elif key == "allow_tma" and not isinstance(value, bool):
                out.append("`allow_tma` takes a bool")
            elif key != "allow_tma" and (isinstance(value, bool) or not isinstance(value, int)):
                out.append(f"`{key}` takes an integer")
    return out


def _table_problems(op: Op) -> list[str]:
    """The op against its row of the op table: known, counts in range, known attributes."""
    d = op_def(op.name)
    if d is None:
        return []  # `check_op` reports the unknown op
    out = d.check_counts(len(op.operands), len(op.results))
    extra = sorted(set(op.attrs) - d.attrs)
    if extra:
        out.append(f"`{op.name}` has no attribute {', '.join(f'`{a}`' for a in extra)}")
    return out


def _types(values: Iterable[Value]) -> str:
    return ", ".join(str(v.type) for v in values)


TERMINATORS = frozenset({"yield", "continue", "break", "return"})

_IMPURE = IMPURE

"""Replay the checker's counterexamples on the fuzzer's model.

CT2001 says two blocks store one tile ("with H = 2 and grid (3, 1): blocks (0, 0) and (2, 0)
both store to tile (0, 0) of `z`"; without a grid, a note names the smallest grid it holds
on). CT2002 says a block stores outside the partition grid, concretely ("with grid (1, 1),
block (0, 0) stores to tile (1, 0)") or symbolically ("block (grid(0) - 1,) stores to tile
index grid(0) on axis 0"). A counterexample is confirmed when the model, run on that launch,
finds the kernel unsafe there; a concrete CT2001 pair is also checked block by block.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from .brute import truth
from .program import Kernel, Launch

_PAIR = re.compile(
    r"blocks \((?P<a>[-\d, ]*)\) and \((?P<b>[-\d, ]*)\) both store to tile "
    r"\((?P<t>[-\d, ]*)\) of `(?P<tensor>\w+)`")
_GRID = re.compile(r"grid \((?P<g>[\d, ]+)\)")
_BIND = re.compile(r"\b([A-Za-z_]\w*(?:\.shape\[\d+\])?) = (-?\d+)")
_NOTE_GRID = re.compile(r"at least \((?P<g>[\d, ]+)\)")
_OFF = re.compile(r"block \((?P<b>[-\d, ]*)\) stores to tile \((?P<t>[-\d, ]*)\)")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.replace(" ", "").split(",") if x)


@dataclass
class Claim:
    code: str
    grid: tuple[int, ...] | None
    binds: dict[str, int]
    blocks: list[tuple[int, ...]]
    text: str


def claims(diagnostics: list[Any]) -> list[Claim]:
    """The replayable counterexamples among a KernelCheckError's diagnostics."""
    out = []
    for d in diagnostics:
        code = str(getattr(d, "code", ""))
        if code not in ("CT2001", "CT2002"):
            continue
        primary = getattr(getattr(d, "primary", None), "message", "") or ""
        notes = list(getattr(d, "notes", []) or [])
        if any("runs only on some paths" in n for n in notes):
            continue  # a race only if the blocks reach the store: nothing to replay
        text = f"{d.message} | {primary} | {' | '.join(notes)}"
        head = d.message if code == "CT2001" else primary
        grid = None
        m = _GRID.search(head.split(":")[0]) if ":" in head else None
        if m:
            grid = _ints(m.group("g"))
        binds = {k: int(v) for k, v in _BIND.findall(head.split(":")[0])} if ":" in head else {}
        blocks: list[tuple[int, ...]] = []
        if code == "CT2001":
            p = _PAIR.search(d.message)
            if p:
                blocks = [_ints(p.group("a")), _ints(p.group("b"))]
            if grid is None:
                for n in notes:
                    g = _NOTE_GRID.search(n)
                    if g:
                        grid = _ints(g.group("g"))
        else:
            o = _OFF.search(primary)
            if o:
                blocks = [_ints(o.group("b"))]
        out.append(Claim(code, grid, binds, blocks, text))
    return out


def _launch_for(k: Kernel, base: Launch, grid: tuple[int, ...], binds: dict[str, int]
                ) -> Launch:
    ln = dataclasses.replace(base, shapes=dict(base.shapes), consts=dict(base.consts),
                             given=dict(base.given), scalars=dict(base.scalars))
    for name, v in binds.items():
        if name in ln.consts:
            ln.consts[name] = v
            if name in ln.given:
                ln.given[name] = v
        if name in ln.scalars:
            ln.scalars[name] = v
    ln.tiles = dict(ln.tiles)
    for o in k.outs:
        ln.tiles[o.name] = tuple(ln.consts.get(d, t) if isinstance(d, str) else t
                                 for d, t in zip(o.decl, ln.tiles[o.name], strict=True))
        tile = ln.tiles[o.name]
        ln.shapes[o.name] = tuple(g * t for g, t in zip(grid, tile, strict=False))
    # extents the claim names (`z.shape[2] = 2`), on outputs and inputs alike
    for name, v in binds.items():
        m = re.fullmatch(r"(\w+)\.shape\[(\d+)\]", name)
        if m and m.group(1) in ln.shapes:
            shape = list(ln.shapes[m.group(1)])
            if int(m.group(2)) < len(shape):
                shape[int(m.group(2))] = v
                ln.shapes[m.group(1)] = tuple(shape)
    return ln


def confirm(k: Kernel, claim: Claim, mapped: set[str]) -> tuple[bool | None, str]:
    """Whether the model agrees that the claimed launch is unsafe (None: the model has no
    meaning for the kernel, e.g. a constant division by zero)."""
    rank = k.outs[0].rank
    grids: list[tuple[int, ...]] = []
    if claim.grid is not None:
        grids.append(tuple(claim.grid[:rank]))
    if claim.blocks:
        least = tuple(max(b[a] for b in claim.blocks) + 1 for a in range(rank))
        grids += [least, tuple(g + 1 for g in least)]
    if not grids or (claim.code == "CT2002" and claim.grid is None):
        grids += [tuple([g] * rank) for g in (1, 2, 3, 4)]
        grids += [tuple(g if a == 0 else 1 for a in range(rank)) for g in (2, 3, 5)]
    tried = []
    for base in k.launches:
        for g in grids:
            if any(x < 1 for x in g) or len(g) != rank:
                continue
            ln = _launch_for(k, base, g, claim.binds)
            v = truth(k, ln, mapped)
            if v.reason == "compile":
                return None, f"the model cannot run the kernel ({v.detail})"
            tried.append(f"grid {g}: {v.reason or 'safe'}")
            if not v.safe:
                return True, f"model: {v.reason} at grid {g} ({v.detail})"
    return False, "model finds no fault on " + "; ".join(tried[:6])

"""Shape ops: reshape, broadcast, permute, cat, extract, insert."""

from __future__ import annotations

from ..core import Op
from ..types import TileType
from .base import counts, rule

# -- shape ops -------------------------------------------------------------------------


def _tiles(op: Op) -> tuple[list[TileType], list[str]]:
    ts = [v.type for v in (*op.operands, *op.results) if isinstance(v.type, TileType)]
    if len(ts) != len(op.operands) + len(op.results):
        return [], ["operands and results must be tiles"]
    return ts, []


@rule("reshape")
def _reshape(op: Op) -> list[str]:
    problems = counts(op, 1, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    src, dst = ts

    def size(t: TileType) -> int:
        n = 1
        for d in t.shape:
            n *= d
        return n

    if src.element != dst.element or size(src) != size(dst):
        problems.append(f"cannot reshape {src} to {dst}")
    return problems


@rule("broadcast")
def _broadcast(op: Op) -> list[str]:
    problems = counts(op, 1, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    src, dst = ts
    ok = src.element == dst.element and src.rank == dst.rank
    ok = ok and all(s in (1, d) for s, d in zip(src.shape, dst.shape, strict=False))
    if not ok:
        problems.append(f"cannot broadcast {src} to {dst} (insert size-1 dims with reshape)")
    return problems


@rule("permute")
def _permute(op: Op) -> list[str]:
    problems = counts(op, 1, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    src, dst = ts
    perm = tuple(op.attrs.get("permutation", ()))
    if sorted(perm) != list(range(src.rank)):
        return [f"`permutation` {perm} is not a permutation of {src.rank} dims"]
    if dst != TileType(tuple(src.shape[p] for p in perm), src.element):
        problems.append(f"permuting {src} by {perm} does not give {dst}")
    return problems


@rule("cat")
def _cat(op: Op) -> list[str]:
    problems = counts(op, 2, 1)
    ts, bad = _tiles(op)
    if problems or bad:
        return problems + bad
    a, b, r = ts
    dim = op.attrs.get("dim")
    if not isinstance(dim, int) or not 0 <= dim < a.rank:
        return [f"bad `dim` {dim!r}"]
    want = list(a.shape)
    want[dim] += b.shape[dim]
    same_other = all(
        x == y for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=False)) if i != dim
    )
    if a.element != b.element or a.rank != b.rank or not same_other or r.shape != tuple(want):
        problems.append(f"cannot concatenate {a} and {b} along {dim} into {r}")
    return problems


@rule("extract")
def _extract(op: Op) -> list[str]:
    if len(op.operands) < 1 or len(op.results) != 1:
        return ["expects a source and one result"]
    src, dst = op.operands[0].type, op.results[0].type
    if not isinstance(src, TileType) or not isinstance(dst, TileType):
        return ["source and result must be tiles"]
    problems = []
    indices = op.operands[1:]
    if len(indices) != src.rank:
        problems.append(f"{len(indices)} indices for a rank-{src.rank} tile")
    if any(str(i.type) != "tile<i32>" for i in indices):
        problems.append("indices must be tile<i32>")
    divides = all(d > 0 and s % d == 0 for s, d in zip(src.shape, dst.shape, strict=False))
    if src.element != dst.element or src.rank != dst.rank or not divides:
        problems.append(f"cannot extract {dst} from {src}")
    return problems


@rule("insert")
def _insert(op: Op) -> list[str]:
    if len(op.operands) < 2 or len(op.results) != 1:
        return ["expects a source, a destination and one result"]
    src, dst = op.operands[0].type, op.operands[1].type
    problems = []
    if op.results[0].type != dst:
        problems.append("result type must equal the destination type")
    if not isinstance(src, TileType) or not isinstance(dst, TileType) or src.rank != dst.rank:
        problems.append("source and destination must be tiles of one rank")
    return problems

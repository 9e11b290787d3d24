"""A fallback race detector for the CPU interpreter, used until the interpreter's own
(`cutile.RaceError`, `CUTILE_INTERPRET=check`) is in the tree.

The interpreter runs tile blocks one after another, so a race cannot corrupt anything there;
it can only be *observed*: this wraps the interpreter's `load_view_tko` / `store_view_tko`
handlers and records, per element of every tensor, which block wrote it and which blocks
read it. A write to an element another block wrote or read, or a read of an element another
block wrote, is a race on the GPU. It reaches into interpreter internals (the handler table
and `PartitionView._window`); if those move, `install` returns False and the oracle relies
on comparing outputs with the model instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Array = np.ndarray


@dataclass
class Race:
    kind: str  # "write-write" | "read-write"
    element: tuple[int, ...]
    blocks: tuple[tuple[int, int, int], tuple[int, int, int]]
    op: str


@dataclass
class Tracker:
    writers: dict[tuple[Any, ...], Array] = field(default_factory=dict)
    readers: dict[tuple[Any, ...], Array] = field(default_factory=dict)
    races: list[Race] = field(default_factory=list)
    grid: tuple[int, int, int] = (1, 1, 1)

    def _arrays(self, view: Any) -> tuple[Array, Array]:
        arr = view.tensor.array
        key = (arr.__array_interface__["data"][0], arr.shape, arr.strides)
        w = self.writers.get(key)
        if w is None:
            w = self.writers[key] = np.full(arr.shape, -1, dtype=np.int64)
            self.readers[key] = np.full(arr.shape, -1, dtype=np.int64)
        return w, self.readers[key]

    def _block(self, lin: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return (lin % gx, (lin // gx) % gy, lin // (gx * gy))

    def _note(self, kind: str, mask: Array, other: Array, me: int, sl: Any, op: str) -> None:
        if len(self.races) >= 4:
            return
        pos = np.argwhere(mask)[0]
        element = tuple(int(s.start + p) for s, p in zip(sl, pos, strict=False))
        them = int(other[tuple(pos)])
        self.races.append(Race(kind, element, (self._block(them), self._block(me)), op))

    def access(self, view: Any, index: list[int], me: int, write: bool) -> None:
        sl, _ = view._window(index)
        w, r = self._arrays(view)
        ws, rs = w[sl], r[sl]
        foreign_w = (ws >= 0) & (ws != me)
        if foreign_w.any():
            self._note("write-write" if write else "read-write", foreign_w, ws, me, sl,
                       "store" if write else "load")
        if write:
            foreign_r = (rs >= 0) & (rs != me)
            if foreign_r.any():
                self._note("read-write", foreign_r, rs, me, sl, "store")
            many = rs == -2
            if many.any():
                self._note("read-write", many, np.full(rs.shape, me), me, sl, "store")
            w[sl] = me
        else:
            r[sl] = np.where(rs == -1, me, np.where(rs == me, me, -2))


_ACTIVE: list[Tracker] = []


def install() -> bool:
    """Wrap the interpreter's view load/store handlers once (idempotent)."""
    try:
        from cutile.interpreter import ops_memory
        from cutile.interpreter.registry import HANDLERS
    except ImportError:
        return False
    if getattr(HANDLERS.get("store_view_tko"), "__fuzz_wrapped__", False):
        return True
    view_and_index = getattr(ops_memory, "_view_and_index", None)
    if view_and_index is None or "store_view_tko" not in HANDLERS:
        return False

    def wrap(name: str, first: int, write: bool) -> Callable[..., list[Any]]:
        orig = HANDLERS[name]

        def handler(m: Any, op: Any, args: list[Any]) -> list[Any]:
            out: list[Any] = orig(m, op, args)  # faults (out of bounds) surface first
            if _ACTIVE:
                t = _ACTIVE[-1]
                view, index = view_and_index(op, args, first)
                gx, gy, _ = m.grid
                bx, by, bz = m.block_id
                t.grid = m.grid
                t.access(view, index, bx + gx * (by + gy * bz), write)
            return out

        handler.__fuzz_wrapped__ = True  # type: ignore[attr-defined]
        return handler

    HANDLERS["store_view_tko"] = wrap("store_view_tko", 1, True)
    if "load_view_tko" in HANDLERS:
        HANDLERS["load_view_tko"] = wrap("load_view_tko", 0, False)
    return True


@contextmanager
def tracking() -> Iterator[Tracker]:
    t = Tracker()
    _ACTIVE.append(t)
    try:
        yield t
    finally:
        _ACTIVE.pop()

"""Which bytes of which device other libraries share with cutile right now: every live
import (shared or exclusive) and export, by address range.

cutile's ownership rules see storages; another library's tensor imported twice would be
two storages over the same bytes, where the overlap rules cannot see it. So an exclusive
import is refused where its bytes overlap any live import or export, and a shared import
where they overlap a live exclusive one (InteropError CT5047). Each range lives as long as
its owner (the import's allocation, the export's keep-alive object).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from itertools import count
from typing import Any

from ...errors import InteropError

Device = tuple[int, int]

_lock = threading.Lock()
_ranges: dict[int, _Range] = {}
_ids = count(1)


@dataclass(frozen=True)
class _Range:
    device: Device
    lo: int
    hi: int
    kind: str  # "shared" | "exclusive" | "export"


def _clash(new: _Range, old: _Range) -> bool:
    if new.device != old.device or not (new.lo < old.hi and old.lo < new.hi):
        return False
    if new.kind == "export":
        return False  # an export is cutile's own memory; the registry guards its writes
    return new.kind == "exclusive" or old.kind == "exclusive"


def _describe(r: _Range) -> str:
    return {"shared": "a shared import (`cutile.from_dlpack`)",
            "exclusive": "an exclusive import (`cutile.unsafe.from_dlpack_exclusive`)",
            "export": "a cutile tensor exported to another library"}[r.kind]


def claim(device: Device, lo: int, hi: int, kind: str, owner: Any) -> None:
    """Record bytes `[lo, hi)` of `device` as shared with another library (`kind`: how)
    for as long as `owner` lives; InteropError CT5047 where that breaks the rule above."""
    if hi <= lo:
        return  # an empty tensor shares no byte
    new = _Range(device, lo, hi, kind)
    with _lock:
        for old in _ranges.values():
            if _clash(new, old):
                raise InteropError(
                    f"bytes {lo:#x}..{hi:#x} of this {kind} import are also viewed by "
                    f"{_describe(old)} that is still alive",
                    code="CT5047",
                    hint="an exclusive import must be the only view cutile has of its memory: "
                    "drop the other cutile tensor first, and pass the exclusive import "
                    "itself (or a view of it) where the kernel reads that memory",
                )
        token = next(_ids)
        _ranges[token] = new
    weakref.finalize(owner, _release, token)


def _release(token: int) -> None:
    with _lock:
        _ranges.pop(token, None)


def live() -> int:
    """How many ranges are recorded (tests)."""
    with _lock:
        return len(_ranges)

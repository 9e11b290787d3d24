"""Ops that were never run. Calling a kernel only builds an op; `.sync()` or `await` runs
it. An op dropped before that warns (`OpNeverRunWarning`, like Python's "coroutine was
never awaited") at the line of the program that made it, and the tensors moved into it stay
unusable (the host registry marks them; reading one raises `BorrowError` CT5009)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..errors import OpNeverRunWarning

# Frames in cutile's own files are not the program's call site.
_PACKAGE = str(Path(__file__).resolve().parents[1])

Site = tuple[str, int]


def call_site() -> Site | None:
    """`(file, line)` of the innermost frame outside the cutile package: the program's
    line that is making an op."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def _ticked(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def warn_never_ran(name: str, site: Site | None, lost: str) -> None:
    """Warn that op `name`, made at `site`, was dropped without running; `lost` says which
    tensors stay unusable. The warning is reported at `site`, so filters and tools point
    at the program's line."""
    made = f", made at {site[0]}:{site[1]}," if site else ""
    message = (f"[{OpNeverRunWarning.code}] {name}{made} was dropped without running: {lost}; "
               "run an op with `.sync()` or `await` (calling a kernel only builds it)")
    if site is None:
        warnings.warn(message, OpNeverRunWarning, stacklevel=2)
    else:
        warnings.warn_explicit(message, OpNeverRunWarning, site[0], site[1])


def warn_kernel_op(name: str, site: Site | None, tensors: Sequence[str]) -> None:
    """A kernel's op was dropped without running (called by the native `KernelOp`)."""
    stay = "stays" if len(tensors) == 1 else "stay"
    lost = (f"the kernel never ran, and {_ticked(tensors)} moved into it {stay} unusable"
            if tensors else "the kernel never ran")
    warn_never_ran(name, site, lost)


def warn_composite(name: str, site: Site | None, inner: Sequence[str]) -> None:
    """A `then` / `zip` op was dropped without running: `inner` names the ops inside it
    that never ran."""
    warn_never_ran(name, site, f"{', '.join(inner)} never ran, and the tensors moved into "
                   f"{'it' if len(inner) == 1 else 'them'} stay unusable")

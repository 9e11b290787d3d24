"""When interpreted launches run under the race detector: `CUTILE_INTERPRET=check`, or inside
`with cutile.check_races():`.

The environment is read at every launch (not at import) so that tests and long-lived processes
can switch it. The context manager is a process-wide counter, not a thread-local: a launch
may be waited on (and so interpreted) on another thread than the one that entered it, as
with `await op`, and checking a few launches too many is harmless where missing one is not.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import LaunchError

ENV = "CUTILE_INTERPRET"
MODES = ("check",)

_lock = threading.Lock()
_depth = 0


@contextmanager
def check_races() -> Iterator[None]:
    """Run every interpreted launch inside the block under the race and bounds detector:

        with cutile.check_races():
            z, x, y = add(z, x, y).sync()   # raises cutile.RaceError on a race

    Nests, and works from several threads at once."""
    global _depth
    with _lock:
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1


def env_mode() -> str | None:
    """The mode `CUTILE_INTERPRET` asks for (`"check"`), None when it is unset or empty;
    any other value is a LaunchError (CT6904) naming the accepted ones."""
    raw = os.environ.get(ENV)
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value in MODES:
        return value
    accepted = ", ".join(f"`{m}`" for m in MODES)
    raise LaunchError(
        f"{ENV}={raw!r} is not a mode the interpreter knows (accepted: {accepted}, or empty)",
        code="CT6904",
        hint=f"set {ENV}=check to run interpreted launches under the race and bounds "
        f"detector, or unset it (or leave it empty) for plain runs",
    )


def checking() -> bool:
    """Whether an interpreted launch starting now runs under the detector. A bad
    `CUTILE_INTERPRET` is an error even inside `check_races()`: a typo should not hide."""
    return env_mode() == "check" or _depth > 0

"""`assert_sound`: the oracle for one hand-written kernel and launch. The kernel may be
rejected by the checker (`KernelCheckError`), refused at launch (`LaunchError` or another
typed error before it runs), or stopped by a device check; if it runs, no two blocks may
race and nothing may fault. An untyped exception anywhere fails."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import cutile
from cutile.errors import KernelCheckError

from .oracle import classify


def outcome(kern: Any, make_args: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
            ) -> tuple[str, str]:
    """(what happened, details): rejected, refused ..., device-check, ran, or a finding kind
    (race, oob, div-zero, fault, untyped, internal, zero-grid)."""
    try:
        kern.check()
    except KernelCheckError as exc:
        return "rejected", str(exc)
    except cutile.CutileError as exc:
        return f"refused {exc.code}", str(exc)
    except Exception as exc:
        return "untyped", "check(): " + "".join(traceback.format_exception(exc)[-4:])
    try:
        args, kwargs = make_args()
        with cutile.check_races():
            kern(*args, **kwargs).sync()
    except Exception as exc:
        what, _ = classify(exc)
        return what, "".join(traceback.format_exception(exc)[-4:])
    return "ran", ""


SAFE = ("rejected", "ran", "device-check")


def assert_sound(kern: Any, make_args: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
                 ) -> None:
    what, detail = outcome(kern, make_args)
    assert what in SAFE or what.startswith("refused"), (
        f"`{kern.name}` was accepted by the checker and then: {what}\n{detail}")

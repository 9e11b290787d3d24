"""`assert_sound`: the oracle for one hand-written kernel and launch. The kernel may be
rejected by the checker (`KernelCheckError`), refused at launch (`LaunchError` or another
typed error before it runs), or stopped by a device check; if it runs, no two blocks may
race and nothing may fault. An untyped exception anywhere fails."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUTILE_BACKEND", "interpreter")
os.environ.setdefault("CUTILE_QUIET", "1")

import cutile
from cutile.errors import KernelCheckError

from . import detector
from .oracle import HAVE_RACE_ERROR, classify


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
    use_own = not HAVE_RACE_ERROR and detector.install()
    try:
        args, kwargs = make_args()
        with detector.tracking() as t:
            if HAVE_RACE_ERROR and hasattr(cutile, "check_races"):
                with getattr(cutile, "check_races")():  # noqa: B009 (not in the tree yet)
                    kern(*args, **kwargs).sync()
            else:
                kern(*args, **kwargs).sync()
    except Exception as exc:
        what, _ = classify(exc)
        return what, "".join(traceback.format_exception(exc)[-4:])
    if use_own and t.races:
        r = t.races[0]
        return "race", f"{r.kind} race on element {r.element} between blocks {r.blocks}"
    return "ran", ""


SAFE = ("rejected", "ran", "device-check")


def assert_sound(kern: Any, make_args: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
                 ) -> None:
    what, detail = outcome(kern, make_args)
    assert what in SAFE or what.startswith("refused"), (
        f"`{kern.name}` was accepted by the checker and then: {what}\n{detail}")

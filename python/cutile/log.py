"""cutile's logging: the standard `logging` module, logger `cutile` and its children
(`cutile.check`, `cutile.cache`, `cutile.compile`, `cutile.tileiras`, `cutile.dump`).

A library leaves logging to the program: by default the `cutile` logger has only a
`NullHandler`, and records propagate to whatever the program configured. `CUTILE_LOG=debug`
(or `info`, `warning`) sets the level of the `cutile` logger and, when the program has
configured no handler at all, adds one that writes to stderr, so the variable works on a
plain script too.

Separately from logging, a compile slower than `SLOW_COMPILE_S` prints one notice line on
stderr (unless `CUTILE_QUIET=1`): a first launch that stalls for seconds should say why.
"""

from __future__ import annotations

import logging
import sys
import warnings

from . import environment
from .errors import CutileWarning

ROOT = "cutile"
LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "warn": "WARNING"}
SLOW_COMPILE_S = 2.0

_handler: logging.Handler | None = None


def get(name: str) -> logging.Logger:
    """The child logger `cutile.<name>`."""
    return logging.getLogger(f"{ROOT}.{name}")


def configure() -> None:
    """Apply `CUTILE_LOG` (called on import of cutile; again by tests). An unknown level
    is reported with a CutileWarning (CT8004), not an exception: a logging setting must
    not stop the program it is meant to explain."""
    global _handler
    logger = logging.getLogger(ROOT)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
    if _handler is not None:
        logger.removeHandler(_handler)
        _handler = None
    raw = environment.get("CUTILE_LOG")
    if raw is None or not raw.strip():
        return
    level = LEVELS.get(raw.strip().lower())
    if level is None:
        accepted = ", ".join(f"`{w}`" for w in ("debug", "info", "warning"))
        warning = CutileWarning(f"[CT8004] CUTILE_LOG={raw!r} is not one of {accepted}; "
                                f"logging stays as the program configured it")
        warning.code = "CT8004"
        warnings.warn(warning, stacklevel=2)
        return
    logger.setLevel(level)
    if not logging.getLogger().handlers:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
        logger.addHandler(_handler)


def notice(message: str) -> None:
    """One line on stderr for the user at the terminal (not a log record), unless
    `CUTILE_QUIET=1`."""
    if not environment.quiet():
        print(f"cutile: {message}", file=sys.stderr)


def compile_finished(what: str, seconds: float, cached_in: str | None) -> None:
    """Log a finished compile; a slow one also gets a notice on stderr."""
    get("compile").info("compiled %s in %.3f s", what, seconds)
    if seconds > SLOW_COMPILE_S:
        later = f"; cached in {cached_in}" if cached_in else ""
        notice(f"compiling {what} took {seconds:.1f} s{later}")

"""Loading the Python files named on the command line and finding their kernels."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ConfigError


def existing_file(path: str) -> Path:
    """`path` resolved, or a ConfigError (CT8010) when there is no such file."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"no such file: {path}", code="CT8010",
                          hint="check the path (it is relative to the working directory)")
    if not p.is_file():
        raise ConfigError(f"not a file: {path}", code="CT8010",
                          hint="name a Python file that defines `@cutile.entry` kernels")
    return p.resolve()


def load(path: str) -> ModuleType:
    """Import a user's file as a module. What its import raises (a syntax error, a missing
    module, anything its top level does) is a ConfigError (CT8011) that names the file and
    the original error, chained to it."""
    p = existing_file(path)
    name = "_cutile_cli_" + p.stem
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path}: not a Python source file", code="CT8011")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(p.parent))
    try:
        spec.loader.exec_module(mod)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise ConfigError(
            f"cannot import {path}: {type(exc).__name__}: {exc}",
            code="CT8011",
            hint=f"`python {path}` shows the error with its traceback",
        ) from exc
    finally:
        sys.path.remove(str(p.parent))
    return mod


def kernels(mod: ModuleType) -> list[Any]:
    """The `@cutile.entry` kernels a module defines (not those it imports), autotuned ones
    included (`cutile.autotune`: the kernel it tunes)."""
    from ..kernel import EntryKernel
    from ..tuning import Autotuned

    seen: list[Any] = []
    for value in vars(mod).values():
        if isinstance(value, Autotuned):
            value = value.kernel
        if isinstance(value, EntryKernel) and value.fn.__module__ == mod.__name__:
            if value not in seen:
                seen.append(value)
    return seen

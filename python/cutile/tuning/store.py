"""Autotuning choices on disk: `<cache dir>/autotune/<key>.json`, one small JSON file per
(kernel, device, shape class, search space), reused by every later process.

The key is the SHA-256 of the entry's fields (the kernel's name and AST hash, its hints,
the device, the shape class, the whole search space, cutile's version); the file stores
the fields and is served only when they equal the ones asked for, as the cubin cache does
(`backend.cache_entry`). Files are written to a temporary name and renamed into place, so
a reader never sees half of one; `lock()` keeps two processes (or threads) from tuning one
key at once: the second waits and then reads the first one's choice. `CUTILE_CACHE_DIR=off`
keeps choices in memory only; a directory that cannot be written is logged once and the
choices stay in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import log

SUBDIR = "autotune"
FORMAT = 1
LOCK_TIMEOUT_S = 900.0  # a search space of many configs compiles for minutes
_log = log.get("autotune")
_ENTRY = re.compile(r"^[0-9a-f]{64}\.json$")
_unwritable: set[Path] = set()


def directory() -> Path | None:
    """Where choices are kept (None: `CUTILE_CACHE_DIR=off`)."""
    from ..backend.cache import cache_dir

    base = cache_dir()
    return None if base is None else base / SUBDIR


def key_of(fields: Mapping[str, Any]) -> str:
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def path_of(fields: Mapping[str, Any]) -> Path | None:
    where = directory()
    return None if where is None else where / f"{key_of(fields)}.json"


def load(fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """The choice stored for `fields`, or None (missing, unreadable, another key's)."""
    path = path_of(fields)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:  # (nesting past Python's stack)
        _log.warning("autotune cache entry %s is unreadable (%s); tuning again", path,
                     type(exc).__name__ if isinstance(exc, RecursionError) else exc)
        return None
    if not isinstance(data, dict) or data.get("fields") != json.loads(json.dumps(fields)):
        _log.warning("autotune cache entry %s was stored for another key; tuning again", path)
        return None
    choice = data.get("choice")
    return choice if isinstance(choice, dict) else None


def save(fields: Mapping[str, Any], choice: Mapping[str, Any]) -> Path | None:
    """Store a choice atomically; the path, or None when there is no usable directory."""
    path = path_of(fields)
    if path is None or path.parent in _unwritable:
        return None
    text = json.dumps({"format": FORMAT, "fields": fields, "choice": choice}, indent=1,
                      sort_keys=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem[:16]}-", suffix=".tmp",
                                   dir=path.parent)
    except OSError as exc:
        _unwritable.add(path.parent)
        _log.warning("autotuning choices cannot be kept in %s (%s); they stay in memory",
                      path.parent, exc.strerror or exc)
        return None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # readers see the old file or the new one, never half
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _unwritable.add(path.parent)
        _log.warning("autotuning choices cannot be kept in %s (%s); they stay in memory",
                     path.parent, exc.strerror or exc)
        return None
    return path


@contextmanager
def lock(fields: Mapping[str, Any]) -> Iterator[None]:
    """Tune one key at a time, across the threads of this process and the processes that
    share the cache directory (`backend.compile_lock`: bounded wait, released when a
    process dies)."""
    from ..backend.compile_lock import compile_lock

    where = directory()
    if where is not None and where in _unwritable:
        where = None
    with compile_lock(f"autotune-{key_of(fields)}", where, LOCK_TIMEOUT_S):
        yield


def entries(base: Path) -> list[Path]:
    """The stored choices under the cache directory `base` (files this module names)."""
    try:
        return [f for f in (base / SUBDIR).glob("*.json") if _ENTRY.match(f.name)]
    except OSError:
        return []


def clear(base: Path) -> int:
    """Remove every stored choice under the cache directory `base`; how many."""
    removed = 0
    for f in entries(base):
        try:
            f.unlink()
            removed += 1
        except OSError:
            continue
    return removed

"""The cubin cache on disk: one file per entry (`<dir>/<key[:2]>/<key>.cubin`, format in
`cache_entry`), bounded in size, least recently used first out.

Entries are written to a temporary file in the same directory and renamed into place, so a
reader never sees half an entry. A hit sets the entry's mtime to now: mtime is the time of
last use, which `prune` orders by (atime is unreliable under `noatime`/`relatime`). A
directory that cannot be written warns once (CacheWarning) and is not tried again by this
process: kernels still compile, without the disk cache.

Only files this module names are ever removed (`clear`, `prune`), so pointing
CUTILE_CACHE_DIR at a directory that holds other things loses none of them.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import log
from ..errors import CacheWarning
from . import stale
from .cache_entry import decode_entry, differing, encode_entry

_ENTRY = re.compile(r"^[0-9a-f]{64}\.cubin$")
_SHARD = re.compile(r"^[0-9a-f]{2}$")
_log = log.get("cache")
_warned_lock = threading.Lock()
_unusable: set[Path] = set()  # directories that failed a write in this process


@dataclass(frozen=True)
class EntryFile:
    path: Path
    size: int
    last_use: float  # mtime


@dataclass(frozen=True)
class Usage:
    entries: int
    bytes: int
    oldest_use: float | None
    newest_use: float | None


def unusable(directory: Path) -> bool:
    return directory in _unusable


def _give_up(directory: Path, what: str, exc: OSError) -> None:
    with _warned_lock:
        first = directory not in _unusable
        _unusable.add(directory)
    if first:
        message = (f"[CT8901] the cubin cache at {directory} cannot be used ({what}: "
                   f"{exc.strerror or exc}); compiling without it. Set CUTILE_CACHE_DIR to "
                   f"a writable directory, or to `off`")
        warnings.warn(CacheWarning(message), stacklevel=4)


class DiskCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.cubin"

    # -- one entry ---------------------------------------------------------------------

    def get(self, key: str, fields: Mapping[str, Any] | None = None) -> bytes | None:
        """The cubin stored under `key`, if its stored fields equal `fields` (when given).
        A corrupt entry is deleted; one holding another key is left to be overwritten by
        the compile that follows."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        entry = decode_entry(data)
        if entry is None:
            # Corrupt or truncated (a crash mid-copy, a full disk, tampering): drop it so
            # the fresh compile replaces it.
            _log.warning("cache entry %s is corrupt; recompiling", path)
            try:
                path.unlink()
            except OSError:
                pass
            return None
        if fields is not None and entry.fields != dict(fields):
            _log.warning("cache entry %s was stored for another key (differs in %s); "
                         "recompiling", path, ", ".join(differing(entry.fields, fields)))
            return None
        try:
            os.utime(path)  # last use, for the LRU bound
        except OSError:
            pass
        return entry.cubin

    def put(self, key: str, fields: Mapping[str, Any], cubin: bytes) -> bool:
        """Store an entry; False (after one CacheWarning per directory) if the directory
        cannot be written."""
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=stale.entry_temp_prefix(key), suffix=".tmp",
                                       dir=path.parent)
        except OSError as exc:
            _give_up(self.directory, "cannot create an entry", exc)
            return False
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(encode_entry(fields, cubin))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)  # atomic on POSIX: readers see the old entry or the new
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            _give_up(self.directory, "cannot write an entry", exc)
            return False
        return True

    # -- the whole cache ---------------------------------------------------------------

    def entries(self) -> Iterator[EntryFile]:
        try:
            shards = [p for p in self.directory.iterdir() if _SHARD.match(p.name)]
        except OSError:
            return
        for shard in shards:
            try:
                files = list(os.scandir(shard))
            except OSError:
                continue
            for f in files:
                if not _ENTRY.match(f.name):
                    continue
                try:
                    st = f.stat()
                except OSError:
                    continue
                yield EntryFile(Path(f.path), st.st_size, st.st_mtime)

    def usage(self) -> Usage:
        files = list(self.entries())
        uses = [f.last_use for f in files]
        return Usage(len(files), sum(f.size for f in files), min(uses, default=None),
                     max(uses, default=None))

    def prune(self, max_bytes: int) -> tuple[int, int]:
        """Remove least recently used entries until the cache holds at most `max_bytes`;
        (entries removed, bytes freed)."""
        files = sorted(self.entries(), key=lambda f: f.last_use)
        total = sum(f.size for f in files)
        removed = freed = 0
        for f in files:
            if total <= max_bytes:
                break
            try:
                f.path.unlink()
            except FileNotFoundError:
                pass  # another process pruned it first
            except OSError:
                continue
            total -= f.size
            removed += 1
            freed += f.size
        if removed:
            _log.info("pruned %d least recently used cache entries (%d bytes) to stay under "
                      "%d bytes", removed, freed, max_bytes)
        return removed, freed

    def clear(self) -> tuple[int, int]:
        """Remove every entry, what killed writers left and the memo of tileiras versions;
        (entries removed, bytes freed)."""
        removed = freed = 0
        for f in list(self.entries()):
            try:
                f.path.unlink()
            except OSError:
                continue
            removed += 1
            freed += f.size
        stale.clean_cache_temps(self.directory)  # a live writer's file stays
        for extra in (self.directory / "tileiras-versions.json",):
            try:
                extra.unlink()
            except OSError:
                pass
        return removed, freed

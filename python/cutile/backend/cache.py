"""Cubin cache: in memory (per process) and on disk.

Disk location: `$CUTILE_CACHE_DIR`, else `~/.cache/cutile`; `CUTILE_CACHE_DIR=off` turns
the disk cache off (the memory cache stays). Its size is bounded by `CUTILE_CACHE_MAX`
(default 2 GiB; least recently used entries go first). What a key covers and how an entry
proves it belongs to its key: `cache_entry`; the files, the bound and an unwritable
directory: `disk_cache`; one compile per key at a time: `compile_lock`; what killed
compiles leave behind: `stale`.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import environment, log
from . import stale
from .cache_entry import decode_entry, encode_entry, key_fields, key_hash
from .compile_lock import compile_lock
from .disk_cache import DiskCache, unusable
from .tileiras import Tileiras, _timeout_from_env, assemble, find_tileiras, tileiras_version

__all__ = [
    "MEMORY",
    "CompiledCubin",
    "DiskCache",
    "cache_dir",
    "cache_key",
    "cache_max",
    "cached_build",
    "compile_cubin",
    "decode_entry",
    "encode_entry",
    "key_fields",
]

MEMORY_ENTRIES = 256
DEFAULT_MAX_BYTES = 2 << 30
LOCK_MARGIN_S = 60.0
_log = log.get("cache")


@dataclass(frozen=True)
class CompiledCubin:
    cubin: bytes
    key: str
    from_cache: str  # "memory", "disk", or "" when it was just built
    compile_s: float = 0.0  # time spent building it (0 on a cache hit)


def cache_key(bytecode: bytes, arch: str, opt_level: int, tool_version: str,
              kernel: Mapping[str, Any] | None = None) -> str:
    """The entry name for these inputs: the SHA-256 of their `key_fields`."""
    return key_hash(key_fields(bytecode, arch, opt_level, tool_version, kernel))


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    configured = environment.get("CUTILE_CACHE_DIR", environ)
    if configured is not None and configured.strip().lower() in ("off", "0", "none"):
        return None
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "cutile"


def cache_max(environ: Mapping[str, str] | None = None) -> int:
    """The size bound in bytes (`CUTILE_CACHE_MAX`, CT8003 when it is not a size)."""
    return environment.size("CUTILE_CACHE_MAX", DEFAULT_MAX_BYTES, "CT8003", environ=environ)


class _MemoryCache:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: str, cubin: bytes) -> None:
        with self._lock:
            self._items[key] = cubin
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


MEMORY = _MemoryCache(MEMORY_ENTRIES)


def _lookup(key: str, fields: Mapping[str, Any], disk: DiskCache | None) -> CompiledCubin | None:
    cubin = MEMORY.get(key)
    if cubin is not None:
        _log.debug("cache hit (memory) %s", key[:16])
        return CompiledCubin(cubin, key, "memory")
    if disk is not None:
        cubin = disk.get(key, fields)
        if cubin is not None:
            _log.debug("cache hit (disk) %s", disk.path(key))
            MEMORY.put(key, cubin)
            return CompiledCubin(cubin, key, "disk")
    return None


def compile_cubin(
    bytecode: bytes,
    arch: str = "sm_90",
    opt_level: int = 3,
    *,
    tool: Tileiras | None = None,
    environ: Mapping[str, str] | None = None,
    kernel: Mapping[str, Any] | None = None,
) -> CompiledCubin:
    """The cubin for `bytecode`, from memory, disk, or a fresh tileiras run (in that
    order); a fresh cubin is stored in both caches. `kernel` (see `cache_entry.key_fields`)
    names what the bytecode is, so that an entry can prove it is this kernel's."""
    tool = tool or find_tileiras(environ)
    fields = key_fields(bytecode, arch, opt_level, tileiras_version(tool), kernel)
    timeout = _timeout_from_env(os.environ if environ is None else environ) + LOCK_MARGIN_S
    return cached_build(fields, lambda: assemble(bytecode, arch, opt_level, tool=tool),
                        what=f"running tileiras for {arch}", timeout=timeout, environ=environ)


def cached_build(fields: Mapping[str, Any], build: Callable[[], bytes], *, what: str,
                 timeout: float, environ: Mapping[str, str] | None = None) -> CompiledCubin:
    """The bytes stored under `fields` (every input they depend on), from memory, disk, or
    a fresh `build()` (in that order); fresh bytes are stored in both caches. One build
    per key at a time (`compile_lock`, waiting at most `timeout` seconds); `what` says in
    the log what a miss runs."""
    key = key_hash(fields)
    directory = cache_dir(environ)
    bound = cache_max(environ)  # a bad CUTILE_CACHE_MAX is an error even on a hit
    if directory is not None and unusable(directory):
        directory = None
    disk = DiskCache(directory) if directory is not None else None
    found = _lookup(key, fields, disk)
    if found is not None:
        return found
    stale.clean_once(directory)
    with compile_lock(key, directory, timeout):
        found = _lookup(key, fields, disk)  # another thread or process just built it
        if found is not None:
            return found
        _log.info("cache miss %s: %s", key[:16], what)
        start = time.perf_counter()
        data = build()
        elapsed = time.perf_counter() - start
        MEMORY.put(key, data)
        if disk is not None and disk.put(key, fields, data):
            disk.prune(bound)
    return CompiledCubin(data, key, "", elapsed)

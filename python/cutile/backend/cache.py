"""Cubin cache: in memory (per process) and on disk.

Disk location: `$CUTILE_CACHE_DIR`, else `~/.cache/cutile`; `CUTILE_CACHE_DIR=off` turns
the disk cache off (the memory cache stays). The key is a SHA-256 over the bytecode, the
target arch, the optimization level and the `tileiras --version` text, so a new assembler
never reuses an old cubin.

Entries are written to a temporary file in the same directory and renamed into place, so a
reader never sees half an entry. Each entry carries a magic, its length and the SHA-256 of
the cubin; an entry that fails any check is deleted and recompiled, never trusted.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import log
from .tileiras import Tileiras, assemble, find_tileiras, tileiras_version

_log = log.get("cache")

ENTRY_MAGIC = b"CUTILE-CUBIN\x00\x01"  # format version in the last byte
_HEADER = len(ENTRY_MAGIC) + 32 + 8  # magic, sha256(cubin), u64 length
MEMORY_ENTRIES = 256


@dataclass(frozen=True)
class CompiledCubin:
    cubin: bytes
    key: str
    from_cache: str  # "memory", "disk", or "" when tileiras just built it
    compile_s: float = 0.0  # time spent in tileiras (0 on a cache hit)


def cache_key(bytecode: bytes, arch: str, opt_level: int, tool_version: str) -> str:
    h = hashlib.sha256()
    for part in (b"cutile-cubin-v1", tool_version.encode(), arch.encode(), str(opt_level).encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    h.update(bytecode)
    return h.hexdigest()


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    configured = env.get("CUTILE_CACHE_DIR")
    if configured is not None and configured.strip().lower() in ("off", "0", "none"):
        return None
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "cutile"


def encode_entry(cubin: bytes) -> bytes:
    return ENTRY_MAGIC + hashlib.sha256(cubin).digest() + len(cubin).to_bytes(8, "little") + cubin


def decode_entry(data: bytes) -> bytes | None:
    """The cubin of a well-formed entry, or None for anything truncated or corrupt."""
    if len(data) < _HEADER or not data.startswith(ENTRY_MAGIC):
        return None
    digest = data[len(ENTRY_MAGIC) : len(ENTRY_MAGIC) + 32]
    length = int.from_bytes(data[len(ENTRY_MAGIC) + 32 : _HEADER], "little")
    cubin = data[_HEADER:]
    if len(cubin) != length or hashlib.sha256(cubin).digest() != digest:
        return None
    return cubin


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


class DiskCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.cubin"

    def get(self, key: str) -> bytes | None:
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        cubin = decode_entry(data)
        if cubin is None:
            # Corrupt or truncated (a crash mid-copy, a full disk, tampering): drop it so
            # the fresh compile replaces it.
            try:
                path.unlink()
            except OSError:
                pass
        return cubin

    def put(self, key: str, cubin: bytes) -> None:
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        except OSError:
            return  # an unwritable cache only costs speed
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(encode_entry(cubin))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)  # atomic on POSIX: readers see the old entry or the new
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def compile_cubin(
    bytecode: bytes,
    arch: str = "sm_90",
    opt_level: int = 3,
    *,
    tool: Tileiras | None = None,
    environ: Mapping[str, str] | None = None,
) -> CompiledCubin:
    """The cubin for `bytecode`, from memory, disk, or a fresh tileiras run (in that
    order); a fresh cubin is stored in both caches."""
    tool = tool or find_tileiras(environ)
    key = cache_key(bytecode, arch, opt_level, tileiras_version(tool))
    cubin = MEMORY.get(key)
    if cubin is not None:
        _log.debug("cache hit (memory) %s", key[:16])
        return CompiledCubin(cubin, key, "memory")
    directory = cache_dir(environ)
    disk = DiskCache(directory) if directory is not None else None
    if disk is not None:
        cubin = disk.get(key)
        if cubin is not None:
            _log.debug("cache hit (disk) %s", disk.path(key))
            MEMORY.put(key, cubin)
            return CompiledCubin(cubin, key, "disk")
    _log.info("cache miss %s: running tileiras for %s", key[:16], arch)
    start = time.perf_counter()
    cubin = assemble(bytecode, arch, opt_level, tool=tool)
    elapsed = time.perf_counter() - start
    MEMORY.put(key, cubin)
    if disk is not None:
        disk.put(key, cubin)
    return CompiledCubin(cubin, key, "", elapsed)

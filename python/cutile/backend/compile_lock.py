"""One compile per cache key at a time, across the threads of a process and across the
processes that share a cache directory: the others wait, then find the cubin in the cache
instead of running `tileiras` again (the launch storm of a freshly started multi-process
job, or a thread pool warming up, would otherwise assemble one kernel N times).

Between processes this is a file lock, `<cache>/locks/<key>.lock`, taken with the
`filelock` library: well kept (tox-dev; pip, virtualenv and huggingface_hub depend on it),
with timeouts, safe against symlink attacks on the lock path, falling back to a soft lock on
filesystems without `flock`, and removing the lock file on release. A lock the OS holds for
a process is released when that process dies, however it dies, so a killed compile never
blocks the next one. Between threads it is a lock per key in this process (a file lock
alone is per open file, which threads of one process could share).

Waiting is bounded: after `timeout` seconds (the tileiras timeout and a margin) a waiter
compiles anyway; the cache's atomic writes make two compiles of one key harmless.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from .. import log

_log = log.get("cache")
_guard = threading.Lock()
_per_key: dict[str, tuple[threading.Lock, int]] = {}  # lock, number of users


@contextmanager
def _thread_lock(key: str) -> Iterator[None]:
    with _guard:
        lock, users = _per_key.get(key, (threading.Lock(), 0))
        _per_key[key] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _guard:
            lock, users = _per_key[key]
            if users == 1:
                del _per_key[key]
            else:
                _per_key[key] = (lock, users - 1)


def _acquire_file_lock(directory: Path, key: str, timeout: float) -> filelock.FileLock | None:
    """The held file lock, or None when it cannot be had (timeout, unwritable directory:
    the compile goes on without it)."""
    path = directory / "locks" / f"{key}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(path, timeout=timeout)
        lock.acquire()
    except filelock.Timeout:
        _log.warning("waited %.0f s for another process compiling the same kernel (%s); "
                     "compiling here too", timeout, path)
        return None
    except OSError as exc:
        _log.debug("no compile lock in %s (%s); compiling without one", directory, exc)
        return None
    return lock


@contextmanager
def compile_lock(key: str, directory: Path | None, timeout: float) -> Iterator[None]:
    """Hold the compile of `key`: against threads always, against other processes when
    there is a cache directory to share a lock file in."""
    with _thread_lock(key):
        held = _acquire_file_lock(directory, key, timeout) if directory is not None else None
        try:
            yield
        finally:
            if held is not None:
                held.release()

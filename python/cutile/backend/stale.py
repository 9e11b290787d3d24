"""Temporary files that outlive the process that made them, and their removal.

A compile writes in two places: a directory per `tileiras` run in the system temp directory
(`cutile-tileiras-<pid>-*`; `cutile-disasm-<pid>-*` and `cutile-dump-<pid>-*` for
`tileirdisasm` and `cuobjdump`) and a temporary file per cache entry it writes
(`.<key>.<pid>.*.tmp`, renamed into place when complete). A process that ends
normally, or by an exception, removes them; one that is killed (SIGKILL, OOM killer, a lost
node) cannot. Every name carries the writer's pid, so the first compile of the next process
removes what belongs to processes that no longer exist (`clean_once`), and `python -m cutile
cache prune` does the same on demand.

A pid can be reused, and a cache directory can be shared by machines or containers with
their own pid spaces: a file whose pid looks dead but which is younger than `MIN_AGE_S` is
left alone (a live writer renames its file within a compile), and anything older than
`MAX_AGE_S` goes whatever its pid says.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

from .. import log

MIN_AGE_S = 60.0
MAX_AGE_S = 24 * 3600.0

_PID_IN_DIR = re.compile(r"^cutile-(?:tileiras|disasm|dump)-(\d+)-")
_PID_IN_TMP = re.compile(r"^\.[0-9a-f]+\.(\d+)\..*\.tmp$")
_PID_IN_MEMO = re.compile(r"^\.tileiras-versions\.json\.(\d+)\.tmp$")  # tileiras._write_memo
_log = log.get("cache")
_lock = threading.Lock()
_cleaned: set[Path] = set()
_temp_dirs_cleaned = False


def temp_prefix(kind: str) -> str:
    """The prefix of a temporary directory for one `tileiras`/`tileirdisasm` run."""
    return f"cutile-{kind}-{os.getpid()}-"


def entry_temp_prefix(key: str) -> str:
    """The prefix of a cache entry's temporary file."""
    return f".{key[:16]}.{os.getpid()}."


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    try:  # a zombie has exited; only its exit status is left for its parent
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def _stale(path: Path, pid: int, now: float) -> bool:
    try:
        age = now - path.lstat().st_mtime
    except OSError:
        return False
    if age > MAX_AGE_S:
        return True
    return age > MIN_AGE_S and not pid_alive(pid)


def clean_temp_dirs(directory: Path | None = None, now: float | None = None) -> int:
    """Remove the run directories of dead processes in the system temp directory."""
    root = Path(directory or tempfile.gettempdir())
    now = time.time() if now is None else now
    removed = 0
    try:
        children = list(root.iterdir())
    except OSError:
        return 0
    for child in children:
        m = _PID_IN_DIR.match(child.name)
        if m and _stale(child, int(m[1]), now):
            shutil.rmtree(child, ignore_errors=True)
            removed += not child.exists()
    return removed


def clean_cache_temps(cache: Path, now: float | None = None) -> int:
    """Remove the half-written entries (and memo files) of dead processes in a cache
    directory."""
    now = time.time() if now is None else now
    removed = 0
    try:
        shards = [p for p in cache.iterdir() if p.is_dir()]
    except OSError:
        return 0
    for shard in [cache, *shards]:
        try:
            files = list(shard.iterdir())
        except OSError:
            continue
        for f in files:
            m = _PID_IN_TMP.match(f.name) or _PID_IN_MEMO.match(f.name)
            if m and _stale(f, int(m[1]), now):
                try:
                    f.unlink()
                    removed += 1
                except OSError:
                    pass
    return removed


def clean_once(cache: Path | None) -> None:
    """At the first compile of a process (and of each cache directory): remove what killed
    processes left behind. Best effort; never raises."""
    global _temp_dirs_cleaned
    with _lock:
        temp_dirs = not _temp_dirs_cleaned
        _temp_dirs_cleaned = True
        cache_temps = cache is not None and cache not in _cleaned
        if cache is not None:
            _cleaned.add(cache)
    removed = clean_temp_dirs() if temp_dirs else 0
    if cache_temps and cache is not None:
        removed += clean_cache_temps(cache)
    if removed:
        _log.info("removed %d temporary file(s) left by killed compiles", removed)

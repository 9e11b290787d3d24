"""`python -m cutile cache [info|clear|prune]`: look at the cubin cache, empty it (and the
autotuning choices kept beside it), or bring it under its size bound (`CUTILE_CACHE_MAX`,
or `prune --max SIZE`)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .. import environment
from ..backend import cache, stale
from ..backend.disk_cache import DiskCache
from ..errors import ConfigError
from ..tuning import store as autotune_store


def add_cache_parser(sub: Any) -> None:
    p = sub.add_parser("cache", help="cubin cache: info (default), clear, prune")
    p.add_argument("action", nargs="?", choices=("info", "clear", "prune"), default="info")
    p.add_argument("--max", metavar="SIZE",
                   help="prune: the bound to prune to (default CUTILE_CACHE_MAX, else 2G)")
    p.set_defaults(fn=cmd_cache)


def _ago(when: float | None) -> str:
    if when is None:
        return "never"
    seconds = max(0.0, time.time() - when)
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= length:
            n = int(seconds // length)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def _bound(args: argparse.Namespace) -> int:
    if args.max is None:
        return cache.cache_max()
    parsed = environment.parse_size(args.max)
    if parsed is None:
        raise ConfigError(f"--max {args.max}: not a size", code="CT8003",
                          hint="e.g. --max 500M or --max 2G")
    return parsed


def cmd_cache(args: argparse.Namespace) -> int:
    directory = cache.cache_dir()
    if directory is None:
        print("cache: in memory only (CUTILE_CACHE_DIR=off); nothing on disk")
        return 0
    disk = DiskCache(directory)
    size = environment.format_size
    if args.action == "clear":
        removed, freed = disk.clear()
        choices = autotune_store.clear(directory)
        print(f"cache: {directory}: removed {removed} entries ({size(freed)}) and {choices} "
              f"autotuning choices")
        return 0
    if args.action == "prune":
        bound = _bound(args)
        removed, freed = disk.prune(bound)
        temps = stale.clean_cache_temps(directory) + stale.clean_temp_dirs()
        left = disk.usage()
        print(f"cache: {directory}: removed {removed} least recently used entries "
              f"({size(freed)}) and {temps} stale temporary files; {left.entries} entries "
              f"({size(left.bytes)}) of {size(bound)} remain")
        return 0
    usage = disk.usage()
    print(f"cache: {directory}")
    print(f"entries: {usage.entries} ({size(usage.bytes)} of a {size(cache.cache_max())} bound)")
    print(f"last used: {_ago(usage.newest_use)}; least recently used: {_ago(usage.oldest_use)}")
    print(f"autotuning choices: {len(autotune_store.entries(directory))}")
    return 0

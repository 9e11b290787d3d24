"""`python -m cutile info`: what cutile would use, in plain text: the backend and GPU,
the assembler, the cache, and every environment variable cutile reads with its value.

Each section is worked out before anything is printed, and a section that fails says why
in its line: this is the command to run when something is wrong, so it always answers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from .. import environment
from ..errors import CutileError

SOURCES = {
    "CUTILE_TILEIRAS": "from $CUTILE_TILEIRAS",
    "pip": "from the pip wheels",
    "PATH": "found on PATH",
    "CUDA_HOME": "from $CUDA_HOME/bin",
}


def _problem(exc: Exception) -> str:
    if isinstance(exc, CutileError):
        return f"error[{exc.code}]: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def _section(lines: list[str], build: Callable[[list[str]], None], label: str) -> None:
    """Run one section; what it appended before failing stays, and the failure is one
    more line."""
    try:
        build(lines)
    except Exception as exc:  # report, never crash: this is the diagnostic command
        lines.append(f"{label}: {_problem(exc)}")


def _backend(lines: list[str]) -> None:
    from ..runtime import driver

    s = driver.state()
    if s.backend != "gpu":
        lines += ["backend: CPU interpreter", f"driver: none ({s.reason})"]
        return
    major, minor = s.driver_version // 1000, (s.driver_version % 1000) // 10
    lines += ["backend: GPU", f"driver: CUDA {major}.{minor}"]
    for i in range(s.count):
        d = driver.device_info(i)
        default = " (default)" if i == s.default else ""
        lines.append(f"gpu {i}: {d.name} (sm_{d.cc[0]}{d.cc[1]}, {d.sm_count} SMs){default}")


def _tileiras(lines: list[str]) -> None:
    from ..backend import tileiras

    tool = tileiras.find_tileiras()
    lines.append(f"tileiras: {tool.path} ({SOURCES.get(tool.source, tool.source)})")
    lines.append(f"tileiras version: {tileiras.tileiras_version(tool)}")
    lines.append(f"bytecode versions: {', '.join(tileiras.list_versions(tool))}")


def _nvrtc(lines: list[str]) -> None:
    from ..backend import nvrtc

    lines.append(f"nvrtc: {nvrtc.nvrtc_version()} (raw CUDA C++ kernels), nvjitlink: "
                 f"{nvrtc.nvjitlink_version()}")


def _cache(lines: list[str]) -> None:
    from ..backend import cache

    directory = cache.cache_dir()
    if directory is None:
        lines.append("cache: in memory only (CUTILE_CACHE_DIR=off)")
        return
    from ..backend.disk_cache import DiskCache, unusable

    usage = DiskCache(directory).usage()
    size = environment.format_size
    state = " (not writable: compiling without it)" if unusable(directory) else ""
    lines.append(f"cache: {directory}{state}, {usage.entries} entries, {size(usage.bytes)} "
                 f"of a {size(cache.cache_max())} bound")


def _environment(lines: list[str]) -> None:
    lines.append("environment:")
    width = max(len(v.name) for v in environment.VARIABLES)
    for var in environment.VARIABLES:
        value = environment.get(var.name)
        if value is not None:
            shown = f"= {value}"
        else:
            shown = f"unset ({var.default.replace('`', '')})" if var.default else "unset"
        lines.append(f"  {var.name:<{width}} {shown}")


def cmd_info(args: argparse.Namespace) -> int:
    import cutile

    lines = [f"cutile {cutile.__version__} ({Path(cutile.__file__).parent})",
             f"python {sys.version.split()[0]} ({sys.executable})"]
    _section(lines, _backend, "backend")
    _section(lines, _tileiras, "tileiras")
    _section(lines, _nvrtc, "nvrtc")
    _section(lines, _cache, "cache")
    _environment(lines)
    print("\n".join(lines))
    return 0

"""Kernels ready to load, keyed by what they are rather than by their bytecode: the first
launch of a cached kernel in a fresh process reads its cubin without lowering it or
writing its bytecode (and without importing the lowering and the bytecode writer).

The key is the kernel's identity (`pipeline.kernel_identity`: its AST hash, `Const`
values, argument facts, index width), the target, the opt level, the assembler's version,
and a stamp of cutile's own code (every module and the native extension: size and
modification time), because the lowering that turns an identity into bytecode is cutile's
code. An entry holds the cubin, the entry symbol, the parameter layout (the ABI) and
whether the kernel was compiled for programmatic dependent launch (its launches then
carry the PDL attribute). It is
written next to the bytecode-keyed entry (`cache.compile_cubin`) whenever a kernel is
assembled for a launch, in the same directory, under the same size bound, and proves its
key the same way (`cache_entry`).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import log
from ..lowering.signature import KernelABI, Slot
from .cache import cache_dir
from .cache_entry import key_hash
from .disk_cache import DiskCache, unusable
from .tileiras import find_tileiras, tileiras_version

_log = log.get("cache")
_MAGIC = b"cutile-launch\0"
_stamp: str | None = None


@dataclass(frozen=True)
class LaunchEntry:
    cubin: bytes
    entry_name: str
    abi: KernelABI
    pdl: bool  # compiled with the PDL prologue: launched with the PDL attribute
    # parameters loaded ahead of the PDL wait (`LoweredKernel.pdl_early`)
    pdl_early: tuple[str, ...] = ()


def code_stamp() -> str:
    """cutile's code as of this process: the size and modification time of every module
    and of the native extension (computed once; about a hundred `stat` calls)."""
    global _stamp
    if _stamp is None:
        root = Path(__file__).resolve().parents[1]
        parts = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".py", ".so")):
                    st = os.stat(os.path.join(dirpath, name))
                    rel = os.path.relpath(os.path.join(dirpath, name), root)
                    parts.append(f"{rel}:{st.st_size}:{st.st_mtime_ns}")
        _stamp = key_hash({"files": parts})
    return _stamp


def fields(identity: Mapping[str, Any], arch: str, opt_level: int,
           environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "kind": "launch",
        "kernel": dict(identity),
        "arch": arch,
        "opt_level": opt_level,
        "tileiras": tileiras_version(find_tileiras(environ)),
        "cutile_code": code_stamp(),
    }


def _disk(environ: Mapping[str, str] | None) -> DiskCache | None:
    directory = cache_dir(environ)
    if directory is None or unusable(directory):
        return None
    return DiskCache(directory)


def load(identity: Mapping[str, Any], arch: str, opt_level: int = 3,
         environ: Mapping[str, str] | None = None) -> LaunchEntry | None:
    """The kernel stored for this identity, if any (never raises for a cache problem: the
    caller compiles instead)."""
    disk = _disk(environ)
    if disk is None:
        return None
    try:
        want = fields(identity, arch, opt_level, environ)
    except Exception as exc:  # no tileiras, no version: the compile path says why
        _log.debug("no launch-cache lookup: %s", exc)
        return None
    key = key_hash(want)
    payload = disk.get(key, want)
    if payload is None:
        return None
    entry = _decode(payload)
    if entry is None:
        _log.warning("launch-cache entry %s is malformed; recompiling", disk.path(key))
        return None
    _log.debug("launch-cache hit %s", key[:16])
    return entry


def store(identity: Mapping[str, Any], arch: str, opt_level: int, entry: LaunchEntry,
          environ: Mapping[str, str] | None = None) -> None:
    disk = _disk(environ)
    if disk is None:
        return
    want = fields(identity, arch, opt_level, environ)
    disk.put(key_hash(want), want, _encode(entry))


def _encode(entry: LaunchEntry) -> bytes:
    header = json.dumps({
        "entry_name": entry.entry_name,
        "pdl": entry.pdl,
        "pdl_early": list(entry.pdl_early),
        "slots": [[s.kind, s.param, s.axis, s.fmt] for s in entry.abi.slots],
    }).encode()
    return _MAGIC + struct.pack("<I", len(header)) + header + entry.cubin


def _decode(payload: bytes) -> LaunchEntry | None:
    if not payload.startswith(_MAGIC) or len(payload) < len(_MAGIC) + 4:
        return None
    at = len(_MAGIC)
    (n,) = struct.unpack_from("<I", payload, at)
    try:
        header = json.loads(payload[at + 4:at + 4 + n])
        slots = tuple(Slot(str(k), str(p), int(a), str(f)) for k, p, a, f in header["slots"])
        name = str(header["entry_name"])
        pdl = header["pdl"]
        early = header["pdl_early"]
        if (not isinstance(pdl, bool) or not isinstance(early, list)
                or not all(isinstance(e, str) for e in early)):
            return None
    except (ValueError, KeyError, TypeError):
        return None
    cubin = payload[at + 4 + n:]
    if not cubin:
        return None
    return LaunchEntry(cubin, name, KernelABI(slots), pdl, tuple(early))

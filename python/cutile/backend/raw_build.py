"""Raw kernels' device code, built once: NVRTC's cubin (or LTO-IR linked by nvJitLink),
kept in cutile's cubin cache (memory and disk, `cache.cached_build`).

An entry's key is everything the cubin depends on: the program's text (its SHA-256), the
kernel's name expression, the NVRTC options, the target, the NVRTC version and cutile's
version; for a linked kernel also each linked program's text (or LTO-IR) and the
nvJitLink version. An entry holds the kernel's symbol (its mangled name) and NVRTC's
warnings next to the cubin, so a hit needs no NVRTC at all.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._version import __version__
from . import nvrtc
from .cache import cached_build

FORMAT = 1
_MAGIC = b"cutile-nvrtc\0"
# NVRTC has no time limit of its own: the compile lock waits this long for another
# process's compile of the same key before compiling too.
LOCK_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class RawBinary:
    """A raw kernel built for one target: the cubin, the kernel's symbol in it, NVRTC's
    warnings, the cache key, and where it came from ("memory", "disk", or "" when NVRTC
    just built it)."""

    cubin: bytes
    symbol: str
    arch: str
    key: str
    from_cache: str
    log: str


@dataclass(frozen=True)
class Program:
    """What a raw kernel is made of: its CUDA C++ text, the kernel's name expression, the
    NVRTC options, and the device code it links with (None: no link step; a `str` is CUDA
    C++ that NVRTC compiles to LTO-IR, `bytes` is LTO-IR)."""

    source: str
    name: str
    options: tuple[str, ...]
    link: tuple[str | bytes, ...] | None


def build(program: Program, arch: str, environ: Mapping[str, str] | None = None
          ) -> RawBinary:
    """The cubin of `program` for `arch`, from the cache or freshly built."""
    if program.link is None:
        fields = _fields(program.source, program.name, program.options, arch, "cubin")
        return _cached(fields, arch, environ, lambda: _compile(program.source, program.name,
                                                               program.options, arch, False))
    fields = {
        **_fields(program.source, program.name, program.options, arch, "linked-cubin"),
        "link": [_input_identity(x) for x in program.link],
        "nvjitlink": nvrtc.nvjitlink_version(),
    }
    return _cached(fields, arch, environ, lambda: _link(program, arch, environ))


def _fields(source: str, name: str | None, options: Sequence[str], arch: str, output: str
            ) -> dict[str, Any]:
    return {
        "kind": "nvrtc",
        "format": FORMAT,
        "cutile": __version__,
        "output": output,
        "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
        "name": name,
        "options": list(options),
        "arch": arch,
        "nvrtc": nvrtc.nvrtc_version(),
    }


def _input_identity(item: str | bytes) -> dict[str, str]:
    if isinstance(item, str):
        return {"source_sha256": hashlib.sha256(item.encode()).hexdigest()}
    return {"ltoir_sha256": hashlib.sha256(item).hexdigest()}


def _cached(fields: Mapping[str, Any], arch: str, environ: Mapping[str, str] | None,
            make: Callable[[], tuple[bytes, str | None, str]]) -> RawBinary:
    got = cached_build(fields, lambda: _encode(*make()), what=f"running NVRTC for {arch}",
                       timeout=LOCK_TIMEOUT_S, environ=environ)
    decoded = _decode(got.cubin)
    if decoded is None:  # the entry proved its key, so this is a cutile bug
        from ..errors import InternalCompilerError

        raise InternalCompilerError(f"the raw-kernel cache entry {got.key[:16]} is malformed")
    data, symbol, log = decoded
    return RawBinary(data, symbol or "", arch, got.key, got.from_cache, log)


def _compile(source: str, name: str | None, options: Sequence[str], arch: str, lto: bool
             ) -> tuple[bytes, str | None, str]:
    code = nvrtc.compile_program(source, name, options, arch, lto=lto)
    return code.data, code.symbol, code.log


def _ltoir(source: str, name: str | None, options: Sequence[str], arch: str,
           environ: Mapping[str, str] | None) -> RawBinary:
    """One program as LTO-IR, itself cached (a program linked into many kernels is
    compiled once)."""
    fields = _fields(source, name, options, arch, "ltoir")
    return _cached(fields, arch, environ, lambda: _compile(source, name, options, arch, True))


def _link(program: Program, arch: str, environ: Mapping[str, str] | None
          ) -> tuple[bytes, str | None, str]:
    main = _ltoir(program.source, program.name, program.options, arch, environ)
    inputs = [("raw_kernel.cu", main.cubin)]
    logs = [main.log] if main.log else []
    for i, item in enumerate(program.link or ()):
        if isinstance(item, str):
            part = _ltoir(item, None, program.options, arch, environ)
            inputs.append((f"link[{i}].cu", part.cubin))
            if part.log:
                logs.append(part.log)
        else:
            inputs.append((f"link[{i}].ltoir", item))
    return nvrtc.link(inputs, arch), main.symbol, "\n".join(logs)


def _encode(data: bytes, symbol: str | None, log: str) -> bytes:
    header = json.dumps({"symbol": symbol, "log": log}).encode()
    return _MAGIC + struct.pack("<I", len(header)) + header + data


def _decode(payload: bytes) -> tuple[bytes, str | None, str] | None:
    at = len(_MAGIC)
    if not payload.startswith(_MAGIC) or len(payload) < at + 4:
        return None
    (n,) = struct.unpack_from("<I", payload, at)
    try:
        header = json.loads(payload[at + 4 : at + 4 + n])
        symbol = header["symbol"]
        log = str(header["log"])
    except (ValueError, KeyError, TypeError):
        return None
    data = payload[at + 4 + n :]
    if not data or not (symbol is None or isinstance(symbol, str)):
        return None
    return data, symbol, log

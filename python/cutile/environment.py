"""Every environment variable cutile reads, in one table, and the parsers that turn their
text into values or `ConfigError`s.

`python -m cutile info` prints this table with the current values; the README's table is
tested to list the same names; and a test fails if a module reads a `CUTILE_*` variable
that is not here. Each variable is read where it takes effect, at the time it takes effect
(not at import), so tests and long-lived processes can change it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import ConfigError


@dataclass(frozen=True)
class Variable:
    name: str
    default: str  # what an unset variable means, in words ("" when nothing in particular)
    meaning: str


VARIABLES: tuple[Variable, ...] = (
    Variable("CUTILE_BACKEND", "the GPU if a driver is found, else the interpreter",
             "`gpu` or `interpreter` (`cpu` is the same); anything else is an error (CT8001)"),
    Variable("CUTILE_DEVICE", "0",
             "ordinal of the process's default device (`cutile.device(i)` and "
             "`cutile.set_device(i)` choose others)"),
    Variable("CUTILE_INTERPRETER_DEVICES", "1",
             "devices the interpreter models (1 to 16): host memory tagged with an "
             "ordinal, to run device bookkeeping without a GPU"),
    Variable("CUTILE_STREAMS", "4",
             "streams in the pool ops take in turn (1 to 64; `1` runs every op on one "
             "stream)"),
    Variable("CUTILE_PDL", "each kernel's `pdl=` decides",
             "`0`: no kernel is compiled or launched with programmatic dependent launch, "
             "whatever its `pdl=`; `1`: as each kernel asks (read when a kernel is "
             "compiled)"),
    Variable("CUTILE_INTERPRET", "plain interpreted runs",
             "`check`: interpreted launches run under the race and bounds detector"),
    Variable("CUTILE_TILEIRAS", "the pip wheel, then `PATH`, then `$CUDA_HOME/bin`",
             "path of the `tileiras` to use; wins over every other place"),
    Variable("CUTILE_TILEIRAS_TIMEOUT", "300", "seconds one `tileiras` run may take"),
    Variable("CUDA_HOME", "", "the last place `tileiras` is looked for (`bin/tileiras`)"),
    Variable("CUDA_PATH", "", "read like `CUDA_HOME` when that is unset"),
    Variable("CUTILE_CACHE_DIR", "`~/.cache/cutile`",
             "where compiled cubins and autotuning choices are kept; `off` keeps them in "
             "memory only"),
    Variable("CUTILE_CACHE_MAX", "2G",
             "size bound of the cubin cache (`500M`, `2G`, bytes); least recently used "
             "entries go first"),
    Variable("CUTILE_AUTOTUNE", "1",
             "`cutile.autotune`: `1` benchmarks the configs of a call not tuned before, `0` "
             "uses the first valid config without benchmarking, `retune` benchmarks again "
             "even where a choice is cached"),
    Variable("CUTILE_LOG", "warning",
             "level of the `cutile` logger when nothing else configured logging: `debug`, "
             "`info` or `warning`"),
    Variable("CUTILE_QUIET", "notices on", "`1`: no notices on stderr (interpreter in use, "
             "slow compiles)"),
    Variable("CUTILE_DUMP", "nothing dumped",
             "stages of every compiled kernel to write, comma-separated: `kast`, `facts`, "
             "`ir`, `bytecode`, `cubin`, `sass` (or `all`)"),
    Variable("CUTILE_DUMP_DIR", "`cutile-dump/` in the working directory",
             "where `CUTILE_DUMP` writes"),
)

NAMES = frozenset(v.name for v in VARIABLES)


def get(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The raw value of a registered variable (None when unset)."""
    assert name in NAMES, f"{name} is not in cutile.environment.VARIABLES"
    env = os.environ if environ is None else environ
    return env.get(name)


def choice(name: str, accepted: Mapping[str, str], code: str, *,
           environ: Mapping[str, str] | None = None) -> str | None:
    """The canonical value of a variable that takes one of a few words (`accepted` maps
    every spelling, lowercased, to its canonical value); None when unset or empty."""
    raw = get(name, environ)
    if raw is None or not raw.strip():
        return None
    value = accepted.get(raw.strip().lower())
    if value is not None:
        return value
    words = ", ".join(f"`{w}`" for w in dict.fromkeys(accepted))
    raise ConfigError(
        f"{name}={raw!r} is not one of {words}",
        code=code,
        hint=f"set {name} to one of {words}, or unset it",
    )


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int | None:
    """Bytes in `500M`, `2G`, `1.5GiB`, `4096` (binary units); None if it is not a size."""
    m = _SIZE.match(text)
    if m is None:
        return None
    return int(float(m[1]) * _UNITS[m[2].lower()])


def size(name: str, default: int, code: str, *,
         environ: Mapping[str, str] | None = None) -> int:
    raw = get(name, environ)
    if raw is None or not raw.strip():
        return default
    parsed = parse_size(raw)
    if parsed is None:
        raise ConfigError(
            f"{name}={raw!r} is not a size",
            code=code,
            hint=f"write a number of bytes with an optional unit, e.g. {name}=500M or 2G",
        )
    return parsed


def format_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover - the loop always returns


def quiet(environ: Mapping[str, str] | None = None) -> bool:
    """`CUTILE_QUIET=1`: no notices on stderr."""
    return (get("CUTILE_QUIET", environ) or "").strip() not in ("", "0")

"""Kernel hints: what `@cutile.entry(num_ctas=..., occupancy=..., num_worker_warps=...,
opt_level=...)` asks of tileiras, per GPU architecture (`ByTarget`, which load hints take
too: `frontend/by_target.py`, `lowering/ops/base.py`).

Hints change how a kernel is compiled, never what it computes: the checker's proof and the
launch grid do not depend on them. They become the entry's `optimization_hints` attribute
(Tile IR), so each value is part of the bytecode and of the kernel's cache identity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from .errors import ConfigError

# A GPU architecture as tileiras names it (the keys of an `optimization_hints` attribute).
ARCH_NAME = re.compile(r"sm_\d+[a-z]?")


@dataclass(frozen=True)
class ByTarget:
    """A hint value that depends on the GPU: `ByTarget(sm_90=2, sm_100=4, default=1)`.
    Architectures not named take `default` (or tileiras' own choice without one).

    Kernel hints (`@cutile.entry(num_ctas=ByTarget(...))`) and the hints of a load
    (`x.load_tile(..., latency=ByTarget(sm_90=3, sm_100=5), allow_tma=ByTarget(...))`,
    written in the kernel or taken from the enclosing scope) accept one. Every value goes
    into the bytecode under its architecture; tileiras takes those of the architecture it
    compiles for."""

    default: int | None = None
    per_arch: Mapping[str, int] = field(default_factory=dict)

    def __init__(self, default: int | None = None, **per_arch: int) -> None:
        for arch in per_arch:
            if not ARCH_NAME.fullmatch(arch):
                raise ConfigError(
                    f"`ByTarget({arch}=...)`: `{arch}` is not a GPU architecture like `sm_90`",
                    code="CT8020", hint="name architectures as sm_90, sm_100, sm_120a, ...")
        object.__setattr__(self, "default", default)
        object.__setattr__(self, "per_arch", dict(sorted(per_arch.items())))


# DSL name -> (Tile IR entry hint, allowed values, what the values mean)
_ENTRY_HINTS: dict[str, tuple[str, tuple[int, ...], str]] = {
    "num_ctas": ("num_cta_in_cga", (1, 2, 4, 8, 16), "a power of two from 1 to 16"),
    "occupancy": ("occupancy", tuple(range(1, 33)), "an integer from 1 to 32"),
    "num_worker_warps": ("num_worker_warps_per_cta", (1, 2, 4, 8, 16, 32),
                         "a power of two from 1 to 32"),
}

HintValue = int | ByTarget | None


def _check(name: str, value: Any, allowed: tuple[int, ...], meaning: str) -> int:
    # numpy integers too, as `Const`s take them (a swept value is often one)
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) not in allowed:
        raise ConfigError(f"`{name}={value!r}` is not {meaning}", code="CT8020",
                          hint=f"`{name}` takes {meaning}, or `cutile.ByTarget(...)` of those")
    return int(value)


def entry_hints(**given: HintValue) -> dict[str, dict[str, int]]:
    """The Tile IR `optimization_hints` of an entry, {arch or "default": {hint: value}},
    from the decorator's keywords (None: leave it to tileiras)."""
    out: dict[str, dict[str, int]] = {}
    for name, value in given.items():
        if value is None:
            continue
        ir_name, allowed, meaning = _ENTRY_HINTS[name]
        if isinstance(value, ByTarget):
            if value.default is not None:
                out.setdefault("default", {})[ir_name] = _check(name, value.default, allowed,
                                                                meaning)
            for arch, v in value.per_arch.items():
                out.setdefault(arch, {})[ir_name] = _check(f"{name}[{arch}]", v, allowed,
                                                           meaning)
        else:
            out.setdefault("default", {})[ir_name] = _check(name, value, allowed, meaning)
    return {arch: dict(sorted(kv.items())) for arch, kv in sorted(out.items())}


def check_opt_level(opt_level: Any) -> int:
    return _check("opt_level", opt_level, (0, 1, 2, 3), "an integer from 0 to 3")

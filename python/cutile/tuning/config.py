"""`cutile.Config`: one point of an autotuning search space: `Const` values, compiler hints,
and the block count of persistent outputs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..hints import ByTarget, HintValue, check_opt_level, entry_hints

HINTS = ("num_ctas", "occupancy", "num_worker_warps")


def _const_value(name: str, value: Any) -> int | float | bool:
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, (bool, int, float)):
        return value
    raise ConfigError(f"`Config`: `{name}={value!r}` is not a Const value",
                      code="CT8021", hint="a Const value is an int, a float or a bool")


def _hint_json(value: HintValue) -> Any:
    if isinstance(value, ByTarget):
        return {"default": value.default, **dict(value.per_arch)}
    return value


class Config:
    """One configuration an autotuned kernel may run with, Triton's `triton.Config` for
    cutile: `Config({"BM": 128, "BN": 128, "BK": 64}, occupancy=2)`.

    `consts` are `Const` values; a tile size of an output (`Mut[Tensor[f32, ["BM", "BN"]]]`)
    that the config sets also cuts the output the caller passed unpartitioned. `num_ctas`,
    `occupancy`, `num_worker_warps` and `opt_level` are the compiler hints of
    `@cutile.entry` (an int or `cutile.ByTarget`), which replace the kernel's own.
    `num_blocks` is the block count of outputs the kernel walks with `iter_indices()`
    (default: `occupancy` blocks per multiprocessor with an int `occupancy`, else what
    `Partition.persistent()` picks)."""

    __slots__ = ("_json", "consts", "hints", "num_blocks", "opt_level")

    _json: str
    consts: dict[str, int | float | bool]
    hints: dict[str, HintValue]
    opt_level: int | None
    num_blocks: int | None

    def __init__(self, consts: Mapping[str, Any] | None = None, *,
                 num_ctas: HintValue = None, occupancy: HintValue = None,
                 num_worker_warps: HintValue = None, opt_level: int | None = None,
                 num_blocks: int | None = None) -> None:
        if consts is not None and not isinstance(consts, Mapping):
            raise ConfigError(f"`Config` takes a dict of Const values, got {consts!r}",
                              code="CT8021", hint='e.g. `cutile.Config({"BM": 128})`')
        values: dict[str, int | float | bool] = {}
        for name, value in (consts or {}).items():
            if not isinstance(name, str):
                raise ConfigError(f"`Config`: a Const is named by a string, got {name!r}",
                                  code="CT8021")
            values[name] = _const_value(name, value)
        hints = {"num_ctas": num_ctas, "occupancy": occupancy,
                 "num_worker_warps": num_worker_warps}
        entry_hints(**hints)  # CT8020 here, not at the first call
        if opt_level is not None:
            check_opt_level(opt_level)
        if num_blocks is not None and (isinstance(num_blocks, bool)
                                       or not isinstance(num_blocks, (int, np.integer))
                                       or num_blocks < 1):
            raise ConfigError(f"`Config`: `num_blocks={num_blocks!r}` is not a block count",
                              code="CT8021", hint="an int >= 1, or None for the default")
        object.__setattr__(self, "consts", dict(sorted(values.items())))
        object.__setattr__(self, "hints", {k: v for k, v in hints.items() if v is not None})
        object.__setattr__(self, "opt_level", opt_level)
        object.__setattr__(self, "num_blocks", None if num_blocks is None else int(num_blocks))
        object.__setattr__(self, "_json", json.dumps(self.to_json(), sort_keys=True))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Config is immutable")

    def to_json(self) -> dict[str, Any]:
        """The config as plain values (what the disk cache stores and compares)."""
        return {"consts": dict(self.consts),
                "hints": {k: _hint_json(v) for k, v in sorted(self.hints.items())},
                "opt_level": self.opt_level, "num_blocks": self.num_blocks}

    def kernel_hints(self) -> dict[str, Any]:
        """The keywords of `EntryKernel.with_hints` this config asks for."""
        out: dict[str, Any] = dict(self.hints)
        if self.opt_level is not None:
            out["opt_level"] = self.opt_level
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other._json == self._json

    def __hash__(self) -> int:
        return hash(self._json)

    def __repr__(self) -> str:
        parts = [repr(dict(self.consts))] if self.consts else []
        parts += [f"{k}={v!r}" for k, v in sorted(self.hints.items())]
        if self.opt_level is not None:
            parts.append(f"opt_level={self.opt_level}")
        if self.num_blocks is not None:
            parts.append(f"num_blocks={self.num_blocks}")
        return f"Config({', '.join(parts)})"

"""The `Const` values given to an ahead-of-time build (`kernel.compile(B=128)`), held to the
rules the launch binder applies to the same values at a call (`cutile-host`
`launch_plan/bind.rs`): one per `Const` parameter (CT6104), of its type (CT6102), and for an
int `Const` at least 1 where a shape names it and within 32 bits (CT6103). Each refusal is a
`LaunchError` with a hint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import LaunchError
from ..frontend import kast as K

_TYPES = {"int": "an int", "float": "a float", "bool": "a bool"}


def checked_consts(kernel: str, params: Sequence[K.Param], given: Mapping[str, Any]
                   ) -> dict[str, int | float | bool]:
    """`given` as plain Python values, or the `LaunchError` a launch would raise."""
    consts = {p.name: p for p in params if p.kind == "const"}
    unknown = sorted(set(given) - set(consts))
    if unknown:
        known = ", ".join(f"`{n}`" for n in consts) or "none"
        raise LaunchError(f"`{kernel}` has no Const parameter `{unknown[0]}`", code="CT6104",
                          hint=f"its Const parameters: {known}", kernel=kernel)
    in_shape = {d for p in params for d in (p.shape or []) if isinstance(d, str)}
    out: dict[str, int | float | bool] = {}
    for name, p in consts.items():
        if name not in given:
            raise LaunchError(f"compile() needs a value for `{name}`", code="CT6104",
                              hint=f"pass `{name}=...`", kernel=kernel)
        out[name] = _value(kernel, name, p.dtype or "int", given[name], name in in_shape)
    return out


def _value(kernel: str, name: str, ty: str, v: Any, in_shape: bool) -> int | float | bool:
    v = v.item() if isinstance(v, np.generic) else v
    if ty == "bool" and isinstance(v, bool):
        return v
    if ty == "float" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if ty == "int" and isinstance(v, int) and not isinstance(v, bool):
        if in_shape and v < 1:
            raise LaunchError(f"`{name}` must be >= 1, got {v}", code="CT6103",
                              hint=f"`{name}` is a tile size of `{kernel}`", kernel=kernel)
        if not -(1 << 31) <= v < 1 << 31:
            raise LaunchError(f"`{name}` = {v} does not fit in 32 bits", code="CT6103",
                              hint="int Consts are 32-bit integers; compute larger values "
                              "from them", kernel=kernel)
        return v
    shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
    raise LaunchError(f"`{name}` expects {_TYPES.get(ty, ty)}, got a `{type(v).__name__}` "
                      f"({shown})", code="CT6102",
                      hint=f"`{name}` is declared `Const[{ty}]` in `{kernel}`", kernel=kernel)

"""`cutile.ByTarget(...)` in a kernel: a load hint's value per GPU architecture, written in
the call (`latency=ByTarget(sm_90=3, default=2)`, values any compile-time expression, a
`Const` included) or taken from the enclosing scope (`latency=LATENCY`). Both become one
`by_target` node; the lowering checks each value (CT3060) and writes them all into the
load's `optimization_hints`, where tileiras takes those of the architecture it compiles for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..hints import ARCH_NAME, ByTarget
from . import kast as K
from .diagnostics import fail

KwArgs = list[tuple[str, K.Expr, K.Span]]


def by_target_call(args: list[K.Expr], kwargs: KwArgs, sp: K.Span) -> K.ByTarget:
    """`ByTarget(default, sm_90=..., ...)` written in a kernel."""
    if len(args) > 1:
        raise fail("CT3060", "`ByTarget` takes one positional value, the default", sp,
                   f"{len(args)} positional values",
                   help="name the others by architecture: `ByTarget(2, sm_90=3, sm_100=5)`")
    archs: list[str] = ["default"] if args else []
    values: list[K.Expr] = list(args)
    for name, value, at in kwargs:
        if name != "default" and not ARCH_NAME.fullmatch(name):
            raise fail("CT3060", f"`{name}` is not a GPU architecture like `sm_90`", at,
                       "not an architecture",
                       help="name architectures as sm_90, sm_100, sm_120a, ...; `default=` "
                       "for the others")
        if name in archs:
            raise fail("CT3060", "the default of `ByTarget` is given twice", at, "again")
        archs.append(name)
        values.append(value)
    if not archs:
        raise fail("CT3060", "`ByTarget()` gives no value", sp, "empty",
                   help="e.g. `ByTarget(sm_90=3, default=2)`, or leave the hint out")
    return K.ByTarget(archs, values, sp)


def fold_by_target(value: ByTarget, fold: Callable[[Any], K.Expr], sp: K.Span) -> K.ByTarget:
    """A `ByTarget` from the enclosing scope (its architectures were checked when it was
    made); `fold` turns each value into a kernel-AST literal."""
    items: list[tuple[str, Any]] = [("default", value.default)] if value.default is not None \
        else []
    items += list(value.per_arch.items())
    return K.ByTarget([a for a, _ in items], [fold(v) for _, v in items], sp)

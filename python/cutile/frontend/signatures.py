"""Bind DSL calls to their signatures: the one table of the kernel language's operations.

The table is `rust/cutile-kast/ops.json`, compiled into the extension
(`cutile._native.OP_TABLE_JSON`), so the frontend binds against the same table the checker
reads. A bound call carries one argument per parameter, in order: keywords are placed,
defaults filled in (an absent optional argument is the literal `None`), variadic arguments
packed into a tuple. Neither the checker nor the lowering ever sees a keyword, so they
cannot disagree about which argument is which.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from . import kast as K
from .diagnostics import FrontendError, fail


@dataclass(frozen=True)
class ParamSig:
    name: str
    required: bool
    default: Any  # a JSON literal, or {"dtype": name}
    variadic: bool
    # > 0: takes a `@cutile.device` function of this many parameters (`reduce`'s combiner)
    function: int = 0


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[ParamSig, ...]
    receivers: tuple[str, ...]
    unsafe: bool
    lowered: bool
    positional_only: bool

    def position(self, name: str) -> int:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        raise KeyError(f"`{self.name}` has no parameter `{name}`")

    def describe(self) -> str:
        def one(p: ParamSig) -> str:
            if p.variadic:
                return f"*{p.name}"
            return p.name if p.required else f"{p.name}={_show(p.default)}"

        return f"{self.name}({', '.join(one(p) for p in self.params)})"


@dataclass(frozen=True)
class OpTable:
    functions: dict[str, Signature]
    methods: dict[str, Signature]
    builtins: dict[str, Signature]


def _signature(raw: dict[str, Any]) -> Signature:
    params = tuple(
        ParamSig(p["name"], "default" not in p, p.get("default"), bool(p.get("variadic")),
                 int(p.get("function", 0)))
        for p in raw["params"]
    )
    return Signature(
        raw["name"], params, tuple(raw.get("receivers", ())), bool(raw.get("unsafe")),
        bool(raw.get("lowered", True)), bool(raw.get("positional_only")),
    )


@functools.cache
def table() -> OpTable:
    from .. import _native

    raw = json.loads(_native.OP_TABLE_JSON)
    return OpTable(
        {s["name"]: _signature(s) for s in raw["functions"]},
        {s["name"]: _signature(s) for s in raw["methods"]},
        {s["name"]: _signature(s) for s in raw["builtins"]},
    )


def _show(v: Any) -> str:
    if isinstance(v, dict) and "dtype" in v:
        return str(v["dtype"])
    return repr(v) if v is not None else "None"


def default_node(value: Any, span: K.Span) -> K.Expr:
    """The kernel-AST literal of a table default."""
    if value is None:
        return K.Const(None, "none", span)
    if isinstance(value, dict) and "dtype" in value:
        return K.DTypeRef(str(value["dtype"]), span)
    if isinstance(value, bool):
        return K.Const(value, "bool", span)
    if isinstance(value, int):
        return K.Const(value, "int", span)
    if isinstance(value, float):
        return K.Const(value, "float", span)
    if isinstance(value, str):
        return K.Const(value, "str", span)
    raise TypeError(f"ops.json: unsupported default {value!r}")


def is_absent(e: K.Expr) -> bool:
    """An optional argument that was not given (its slot holds the literal `None`)."""
    return isinstance(e, K.Const) and e.type == "none"


def bind(
    sig: Signature,
    args: list[K.Expr],
    kwargs: list[tuple[str, K.Expr, K.Span]],
    span: K.Span,
    *,
    code: str = "CT3039",
    what: str | None = None,
) -> list[K.Expr]:
    """One argument per parameter of `sig`, in order; a mistake is a FrontendError at the
    call (`code`: CT3039 for DSL operations, CT3020 for device functions)."""
    shown = what or f"`{sig.name}`"

    def wrong(message: str, at: K.Span, label: str) -> FrontendError:
        return fail(code, f"{shown} {message}", at, label, help=f"the signature is "
                    f"`{sig.describe()}`")

    slots: list[K.Expr | None] = [None] * len(sig.params)
    variadic = next((i for i, p in enumerate(sig.params) if p.variadic), None)
    fixed = len(sig.params) if variadic is None else variadic
    for i, a in enumerate(args):
        if i < fixed:
            slots[i] = a
        elif variadic is None:
            raise wrong(f"takes at most {fixed} positional argument{'s' * (fixed != 1)} "
                        f"but {len(args)} were given", a.span, "extra argument")
    if variadic is not None:
        rest = args[fixed:]
        slots[variadic] = rest[0] if len(rest) == 1 else K.Tuple(list(rest), span)
    if kwargs and sig.positional_only:
        name, _, at = kwargs[0]
        raise wrong(f"takes no keyword arguments (got `{name}=`)", at, "keyword")
    for name, value, at in kwargs:
        try:
            i = sig.position(name)
        except KeyError:
            raise wrong(f"has no parameter `{name}`", at, "unknown keyword") from None
        if sig.params[i].variadic:
            raise wrong(f"takes `{name}` only positionally", at, "keyword")
        if slots[i] is not None:
            raise wrong(f"got argument `{name}` twice", at, "given again")
        slots[i] = value
    out: list[K.Expr] = []
    for p, got in zip(sig.params, slots, strict=True):
        if got is None:
            if p.required:
                raise wrong(f"is missing argument `{p.name}`", span, "call")
            got = default_node(p.default, span)
        out.append(got)
    return out

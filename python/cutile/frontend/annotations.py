"""Turn a kernel's parameter annotations into kernel-AST parameters."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from ..core import AtomicSpec, ConstSpec, MutSpec, PtrSpec, TensorSpec, TileSpec
from ..dtypes import DType
from .capture import CapturedSource
from .diagnostics import fail
from .kast import Param

_CONST_TYPES = {int: "int", float: "float", bool: "bool"}


def _eval_annotation(fn: Callable[..., Any], annotation: Any) -> Any:
    if not isinstance(annotation, str):
        return annotation
    scope: dict[str, Any] = dict(getattr(fn, "__globals__", {}))
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None)
    if code is not None and closure:
        for name, cell in zip(code.co_freevars, closure, strict=False):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    return eval(annotation, scope)  # the user's own annotation text, in the user's scope


def read_params(fn: Callable[..., Any], src: CapturedSource, kind: str) -> list[Param]:
    sig = inspect.signature(fn)
    arg_nodes = {a.arg: a for a in src.tree.args.args + src.tree.args.kwonlyargs}
    if src.tree.args.vararg or src.tree.args.kwarg:
        extra = src.tree.args.vararg or src.tree.args.kwarg
        assert extra is not None
        raise fail(
            "CT0001", "kernels cannot take `*args` or `**kwargs`", src.span(extra),
            "not supported", help="list every parameter by name",
        )
    params: list[Param] = []
    for name, p in sig.parameters.items():
        node: ast.arg | None = arg_nodes.get(name)
        span = src.span(node) if node is not None else src.name_span()
        ann_span = src.span(node.annotation) if node is not None and node.annotation else span
        if p.default is not inspect.Parameter.empty:
            raise fail(
                "CT0003", f"parameter `{name}` has a default value", span, "default given here",
                help="kernel parameters take no defaults; pass every value at the call",
            )
        if p.annotation is inspect.Parameter.empty:
            if kind == "device":
                params.append(Param(name, span, "value", None, None))
                continue
            raise fail(
                "CT0003", f"kernel parameter `{name}` has no annotation", span,
                "annotation needed",
                help="annotate it: `Mut[Tensor[f32, ['B']]]` (output), `Tensor[f32, [-1]]` "
                "(input), `f32` (scalar) or `Const[int]` (compile-time constant)",
            )
        try:
            spec = _eval_annotation(fn, p.annotation)
        except Exception as exc:
            raise fail(
                "CT0003", f"cannot evaluate the annotation of `{name}`: {exc}", ann_span,
                "this annotation", help="an annotation written as text (or under `from "
                "__future__ import annotations`) is evaluated in the module's globals and "
                "the function's closure: define the names it uses there",
            ) from None
        params.append(_param_of(name, spec, span, ann_span, kind))
    consts = {p.name: p.dtype for p in params if p.kind == "const"}
    for q in params:
        for d in q.shape or []:
            if isinstance(d, str) and d not in consts:
                raise fail(
                    "CT0005", f"shape of `{q.name}` names `{d}`, which is not a `Const` parameter",
                    q.span, f"`{d}` unknown",
                    help=f"add a parameter `{d}: Const[int]`, or write the size as an int",
                )
            if isinstance(d, str) and consts[d] != "int":
                # the checker reads the name as the extent; only an int is matched against
                # the tensor at launch
                raise fail(
                    "CT0005", f"shape of `{q.name}` names `{d}`, a `Const[{consts[d]}]`; a size "
                    "is a `Const[int]`", q.span, f"`{d}` is not an int",
                    help=f"declare `{d}: Const[int]`",
                )
    return params


def _param_of(name: str, spec: Any, span: Any, ann_span: Any, kind: str) -> Param:
    if isinstance(spec, MutSpec):
        t = spec.inner
        return Param(name, span, "mut_tensor", t.dtype.name, list(t.shape))
    if isinstance(spec, AtomicSpec):
        t = spec.inner
        return Param(name, span, "atomic_tensor", t.dtype.name, list(t.shape))
    if isinstance(spec, TensorSpec):
        return Param(name, span, "tensor", spec.dtype.name, list(spec.shape))
    if isinstance(spec, ConstSpec):
        return Param(name, span, "const", _CONST_TYPES[spec.type], None)
    if isinstance(spec, PtrSpec):
        return Param(name, span, "ptr", spec.dtype.name, None)
    if isinstance(spec, DType):
        return Param(name, span, "scalar", spec.name, None)
    if isinstance(spec, TileSpec) and kind == "device":
        return Param(name, span, "value", spec.dtype.name, list(spec.shape))
    if spec is float and kind == "entry":
        # As in Triton, where a Python float argument is an fp32 scalar: `a: float` is a
        # runtime `f32` (a compile-time float is spelled `Const[float]`).
        return Param(name, span, "scalar", "f32", None)
    if spec in (int, float, bool):
        runtime = {"int": "`i32` (or `i64`)", "bool": "`bool_`", "float": "`f32`"}
        raise fail(
            "CT0003", f"`{name}: {spec.__name__}` is ambiguous in a kernel", ann_span,
            "plain Python type",
            help=f"write `Const[{spec.__name__}]` for a compile-time constant (such as a tile "
            f"size), or {runtime[spec.__name__]} for a runtime scalar",
        )
    raise fail(
        "CT0003", f"unsupported annotation for `{name}`: {spec!r}", ann_span, "not a kernel type",
        help="use Mut[Tensor[...]], Tensor[...], Atomic[Tensor[...]], Const[...], Ptr[...] or an "
        "element type",
    )

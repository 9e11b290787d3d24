"""The kernel AST (schema `cutile.kast` v2, documented in docs/kernel-ast.md).

Plain dataclasses, one per node kind; `to_json` writes the documented JSON that the Rust
checker reads. The lowering to Tile IR walks the same objects. Every statement and
expression carries a node id (`nid`), unique in its document, by which the checker's facts
name it; `number_nodes` assigns them once the tree is built.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

SCHEMA = "cutile.kast"
VERSION = 3


@dataclass(frozen=True)
class Span:
    file: int
    lo: int
    hi: int
    line: int
    col: int
    end_line: int
    end_col: int


# ----------------------------------------------------------------------------- expressions


@dataclass
class Name:
    kind: ClassVar[str] = "name"
    id: str
    span: Span
    nid: int = 0


@dataclass
class Const:
    kind: ClassVar[str] = "const"
    value: int | float | bool | str | None
    type: str  # "int" | "float" | "bool" | "str" | "none"
    span: Span
    nid: int = 0


@dataclass
class DTypeRef:
    kind: ClassVar[str] = "dtype"
    name: str
    span: Span
    nid: int = 0


@dataclass
class Tuple:
    kind: ClassVar[str] = "tuple"
    elts: list[Expr]
    span: Span
    nid: int = 0


@dataclass
class BinOp:
    kind: ClassVar[str] = "binop"
    op: str
    left: Expr
    right: Expr
    span: Span
    nid: int = 0


@dataclass
class Unary:
    kind: ClassVar[str] = "unary"
    op: str
    operand: Expr
    span: Span
    nid: int = 0


@dataclass
class Compare:
    kind: ClassVar[str] = "compare"
    op: str
    left: Expr
    right: Expr
    span: Span
    nid: int = 0


@dataclass
class BoolOp:
    kind: ClassVar[str] = "boolop"
    op: str
    values: list[Expr]
    span: Span
    nid: int = 0


@dataclass
class IfExp:
    kind: ClassVar[str] = "ifexp"
    test: Expr
    body: Expr
    orelse: Expr
    span: Span
    nid: int = 0


@dataclass
class Call:
    kind: ClassVar[str] = "call"
    func: str
    args: list[Expr]  # one per parameter of the signature, in order (absent: Const None)
    span: Span
    nid: int = 0


@dataclass
class CallDevice:
    kind: ClassVar[str] = "call_device"
    func: str
    args: list[Expr]  # one per parameter of the signature, in order (absent: Const None)
    span: Span
    nid: int = 0


@dataclass
class Method:
    kind: ClassVar[str] = "method"
    receiver: Expr
    method: str
    args: list[Expr]  # one per parameter of the signature, in order (absent: Const None)
    span: Span
    nid: int = 0


@dataclass
class Attribute:
    kind: ClassVar[str] = "attribute"
    value: Expr
    attr: str
    span: Span
    nid: int = 0


@dataclass
class Subscript:
    kind: ClassVar[str] = "subscript"
    value: Expr
    index: Expr
    span: Span
    nid: int = 0


@dataclass
class ByTarget:
    """`cutile.ByTarget(sm_90=3, default=2)`: a compile-time value per GPU architecture
    (`archs[k]` takes `values[k]`, `default` names the fallback), for a load hint."""

    kind: ClassVar[str] = "by_target"
    archs: list[str]
    values: list[Expr]
    span: Span
    nid: int = 0


Expr = (
    Name | Const | DTypeRef | Tuple | BinOp | Unary | Compare | BoolOp | IfExp | Call
    | CallDevice | Method | Attribute | Subscript | ByTarget
)

# ----------------------------------------------------------------------------- statements


@dataclass
class NameTarget:
    kind: ClassVar[str] = "name"
    id: str
    span: Span


@dataclass
class TupleTarget:
    kind: ClassVar[str] = "tuple"
    elts: list[Target]
    span: Span


Target = NameTarget | TupleTarget


@dataclass
class Assign:
    kind: ClassVar[str] = "assign"
    targets: list[Target]
    value: Expr
    span: Span
    nid: int = 0


@dataclass
class AugAssign:
    kind: ClassVar[str] = "augassign"
    target: Target
    op: str
    value: Expr
    span: Span
    nid: int = 0


@dataclass
class ExprStmt:
    kind: ClassVar[str] = "expr"
    value: Expr
    span: Span
    nid: int = 0


@dataclass
class If:
    kind: ClassVar[str] = "if"
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt]
    span: Span
    nid: int = 0


@dataclass
class For:
    kind: ClassVar[str] = "for"
    target: Target
    iter: Expr
    body: list[Stmt]
    span: Span
    nid: int = 0


@dataclass
class While:
    kind: ClassVar[str] = "while"
    test: Expr
    body: list[Stmt]
    span: Span
    nid: int = 0


@dataclass
class Break:
    kind: ClassVar[str] = "break"
    span: Span
    nid: int = 0


@dataclass
class Continue:
    kind: ClassVar[str] = "continue"
    span: Span
    nid: int = 0


@dataclass
class Pass:
    kind: ClassVar[str] = "pass"
    span: Span
    nid: int = 0


@dataclass
class Return:
    kind: ClassVar[str] = "return"
    value: Expr | None
    span: Span
    nid: int = 0


@dataclass
class Unsafe:
    kind: ClassVar[str] = "unsafe"
    body: list[Stmt]
    span: Span
    nid: int = 0


@dataclass
class Assert:
    kind: ClassVar[str] = "assert"
    test: Expr
    msg: str | None
    span: Span
    nid: int = 0


Stmt = (
    Assign | AugAssign | ExprStmt | If | For | While | Break | Continue | Pass | Return | Unsafe
    | Assert
)

# ----------------------------------------------------------------------------- functions


@dataclass
class Param:
    name: str
    span: Span
    kind: str  # mut_tensor | tensor | atomic_tensor | const | scalar | ptr | value
    dtype: str | None
    shape: list[int | str] | None


@dataclass
class Function:
    name: str
    kind: str  # "entry" | "device"
    unsafe: bool
    span: Span
    name_span: Span
    params: list[Param]
    body: list[Stmt]
    options: dict[str, bool] = field(default_factory=dict)


@dataclass
class SourceFile:
    path: str
    source: str


@dataclass
class Document:
    files: list[SourceFile]
    entry: str
    functions: list[Function]

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_json(self) -> str:
        return json.dumps(
            {
                "schema": SCHEMA,
                "version": VERSION,
                "files": [{"path": f.path, "source": f.source} for f in self.files],
                "entry": self.entry,
                "functions": [_encode(f) for f in self.functions],
            },
            separators=(",", ":"),
        )


def _encode(node: Any) -> Any:
    # The same dicts as `dataclasses.asdict` with each node's `kind` first (the kernel's
    # hash is of this text), without `asdict`'s deep copies: a 12,000-line kernel took
    # 1.4 s per encoding, and a kernel is encoded for the checker and for its hash.
    fields = _FIELDS.get(type(node))
    if fields is not None:
        out: dict[str, Any] = {}
        kind = getattr(type(node), "kind", None)
        if isinstance(kind, str):
            out["kind"] = kind
        for name in fields:
            out[name] = _encode(getattr(node, name))
        return out
    if isinstance(node, list):
        return [_encode(x) for x in node]
    if isinstance(node, float) and not math.isfinite(node):
        return "nan" if math.isnan(node) else ("inf" if node > 0 else "-inf")
    if isinstance(node, Span):
        return {f: getattr(node, f) for f in _SPAN_FIELDS}
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
        return _encode(node)
    if isinstance(node, dict):
        return {k: _encode(v) for k, v in node.items()}
    return node


_FIELDS: dict[type, tuple[str, ...]] = {}
_SPAN_FIELDS = tuple(f.name for f in dataclasses.fields(Span))


def number_nodes(functions: list[Function]) -> None:
    """Give every statement and expression of `functions` its node id (1, 2, ... in
    document order)."""
    counter = 0

    def visit(node: Any) -> None:
        nonlocal counter
        if isinstance(node, list):
            for x in node:
                visit(x)
            return
        if not dataclasses.is_dataclass(node) or isinstance(node, Span):
            return
        if isinstance(node, (NameTarget, TupleTarget, Param, Function)):
            pass
        elif hasattr(node, "nid"):
            counter += 1
            node.nid = counter
        for f in dataclasses.fields(node):
            visit(getattr(node, f.name))

    visit(functions)

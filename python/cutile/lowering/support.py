"""What the compiler can emit, decided on the kernel AST before any `Const` is known.

`kernel.check()` (and `python -m cutile check`) runs these rules after the safety checker,
so a kernel that passes the linter does not fail to compile for a reason visible in its
text. The lowering raises the same codes where it meets the same constructs.
"""

from __future__ import annotations

from ..frontend import kast as K
from ..frontend.diagnostics import FrontendError, fail
from ..frontend.signatures import table


def check_support(doc: K.Document) -> None:
    """Raise a FrontendError for the first construct the compiler cannot lower yet."""
    for fn in doc.functions:
        _block(fn, fn.body, top=True)


def _block(fn: K.Function, body: list[K.Stmt], top: bool) -> None:
    for i, s in enumerate(body):
        if isinstance(s, K.Return):
            if fn.kind == "entry" and s.value is not None:
                raise fail("CT3012", "a kernel entry cannot return a value", s.span,
                           "returned here", help="store results with `z.store(...)`")
            if not top or i != len(body) - 1:
                where = "inside a branch or loop" if not top else "before the end of a function"
                raise _unsupported(f"`return` {where}", s.span,
                                   "compute the value and return it at the end")
        if isinstance(s, (K.While, K.Break, K.Continue)):
            raise _unsupported(f"`{type(s).kind}`", s.span,
                               "use a `for i in range(...)` loop without early exit")
        for e in _exprs(s):
            _expr(e)
        for inner in _bodies(s):
            _block(fn, inner, top=False)


def _unsupported(what: str, span: K.Span, hint: str) -> FrontendError:
    return fail("CT0001", f"{what} is not supported by the compiler yet", span,
                "not supported yet", help=hint)


def _expr(e: K.Expr) -> None:
    sig = None
    if isinstance(e, K.Call) and not e.func.startswith("builtins."):
        sig = table().functions.get(e.func)
    elif isinstance(e, K.Method):
        sig = table().methods.get(e.method)
    if sig is not None and not sig.lowered:
        raise fail("CT3030", f"`{sig.name}` is not supported by the compiler yet", e.span,
                   "unsupported operation",
                   help="the checker accepts it inside `unsafe`, but no code can be "
                   "generated for it yet")
    for child in _children(e):
        _expr(child)


def _children(e: K.Expr) -> list[K.Expr]:
    if isinstance(e, K.Tuple):
        return list(e.elts)
    if isinstance(e, (K.BinOp, K.Compare)):
        return [e.left, e.right]
    if isinstance(e, K.Unary):
        return [e.operand]
    if isinstance(e, K.BoolOp):
        return list(e.values)
    if isinstance(e, K.IfExp):
        return [e.test, e.body, e.orelse]
    if isinstance(e, (K.Call, K.CallDevice)):
        return list(e.args)
    if isinstance(e, K.Method):
        return [e.receiver, *e.args]
    if isinstance(e, K.Attribute):
        return [e.value]
    if isinstance(e, K.Subscript):
        return [e.value, e.index]
    return []


def _exprs(s: K.Stmt) -> list[K.Expr]:
    if isinstance(s, (K.Assign, K.AugAssign, K.ExprStmt)):
        return [s.value]
    if isinstance(s, (K.If, K.While, K.Assert)):
        return [s.test]
    if isinstance(s, K.For):
        return [s.iter]
    if isinstance(s, K.Return) and s.value is not None:
        return [s.value]
    return []


def _bodies(s: K.Stmt) -> list[list[K.Stmt]]:
    if isinstance(s, K.If):
        return [s.body, s.orelse]
    if isinstance(s, (K.For, K.While, K.Unsafe)):
        return [s.body]
    return []

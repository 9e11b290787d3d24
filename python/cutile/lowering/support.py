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
    _check_combiners(doc)


def _check_combiners(doc: K.Document) -> None:
    """A device function passed to an op (`reduce`'s combiner) becomes the body of a Tile
    IR region, which holds straight-line pure code: no `if` statement, loop, `assert` or
    `unsafe` block, in it or in a device function it calls (CT3074)."""
    todo: list[str] = []
    for fn in doc.functions:
        for e in _all_exprs(fn.body):
            if isinstance(e, K.Call) and not e.func.startswith("builtins."):
                sig = table().functions.get(e.func)
                for p, arg in zip(sig.params if sig else (), e.args, strict=False):
                    if p.function and isinstance(arg, K.CallDevice):
                        todo.append(arg.func)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        fn = doc.function(name)
        for s in _all_stmts(fn.body):
            if isinstance(s, (K.If, K.For, K.While, K.Assert, K.Unsafe)):
                kind = type(s).kind
                raise fail(
                    "CT3074", f"`{fn.name}` is used as a combiner, so its body must be "
                    f"straight-line code, but it has {'an' if kind[0] in 'aeiou' else 'a'} "
                    f"`{kind}` statement", s.span,
                    "not straight-line", help="a combiner is straight-line code on its two "
                    "scalars: assignments, `where(c, a, b)` or `a if c else b` to choose, and "
                    "a `return`",
                )
        todo += [e.func for e in _all_exprs(fn.body) if isinstance(e, K.CallDevice)]


def _all_stmts(body: list[K.Stmt]) -> list[K.Stmt]:
    out: list[K.Stmt] = []
    for s in body:
        out.append(s)
        for inner in _bodies(s):
            out += _all_stmts(inner)
    return out


def _all_exprs(body: list[K.Stmt]) -> list[K.Expr]:
    out: list[K.Expr] = []

    def walk(e: K.Expr) -> None:
        out.append(e)
        for c in _children(e):
            walk(c)

    for s in _all_stmts(body):
        for e in _exprs(s):
            walk(e)
    return out


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

"""What the compiler can emit, decided on the kernel AST before any `Const` is known.

`kernel.check()` (and `python -m cutile check`) runs these rules after the safety checker,
so a kernel that passes the linter does not fail to compile for a reason visible in its
text. The lowering raises the same codes where it meets the same constructs.
"""

from __future__ import annotations

from ..frontend import kast as K
from ..frontend.diagnostics import fail
from ..frontend.signatures import table


def check_support(doc: K.Document) -> None:
    """Raise a FrontendError for the first construct the compiler cannot lower yet."""
    for fn in doc.functions:
        _block(fn, fn.body, loops=0)
        if fn.kind == "device" and _returns_value(fn.body) and not _always_exits(fn.body):
            raise fail(
                "CT3015", f"`{fn.name}` returns a value on some paths and nothing on others",
                fn.name_span, "may end without `return`",
                help="end the function with a `return` (a loop may run to its end, so a "
                "`return` inside one does not count)",
            )
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


def _block(fn: K.Function, body: list[K.Stmt], loops: int) -> None:
    for i, s in enumerate(body):
        if i > 0 and _always_exits([body[i - 1]]):
            what = _exit_kind(body[i - 1])
            raise fail("CT0001", f"this code never runs: it follows `{what}`", s.span,
                       "unreachable", help=f"remove it, or move it before the `{what}`")
        if isinstance(s, K.Return) and fn.kind == "entry" and s.value is not None:
            raise fail("CT3012", "a kernel entry cannot return a value", s.span,
                       "returned here", help="store results with `z.store(...)`")
        if isinstance(s, (K.Break, K.Continue)) and loops == 0:
            raise fail("CT0001", f"`{s.kind}` outside a loop", s.span, "not in a loop")
        for e in _exprs(s):
            _expr(e)
        inner_loops = loops + isinstance(s, (K.For, K.While))
        for inner in _bodies(s):
            _block(fn, inner, inner_loops)


def _always_exits(body: list[K.Stmt]) -> bool:
    """Does every path through `body` end in `return`, `break` or `continue` (a loop may
    end normally, so it never does)?"""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (K.Return, K.Break, K.Continue)):
        return True
    if isinstance(last, K.If):
        return _always_exits(last.body) and _always_exits(last.orelse)
    if isinstance(last, K.Unsafe):
        return _always_exits(last.body)
    return False


def _exit_kind(s: K.Stmt) -> str:
    if isinstance(s, K.If):
        return "an `if` whose branches both leave"
    if isinstance(s, K.Unsafe):
        return _exit_kind(s.body[-1])
    return s.kind


def _returns_value(body: list[K.Stmt]) -> bool:
    for s in body:
        if isinstance(s, K.Return) and s.value is not None:
            return True
        if any(_returns_value(b) for b in _bodies(s)):
            return True
    return False


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
    if isinstance(e, (K.BoolOp, K.ByTarget)):
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

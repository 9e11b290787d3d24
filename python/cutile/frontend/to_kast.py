"""Python AST -> kernel AST: resolve names, keep spans, reject what kernels cannot do.

Names are resolved once, here: locals and parameters stay names; globals and closure
variables are looked up in the function's scope and become DSL op names, device-function
calls, dtypes or folded constants. Anything else is an error with a code and a hint.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types
from collections.abc import Callable
from typing import Any

from ..dtypes import DType
from ..errors import KernelCheckError
from ..hints import ByTarget
from . import kast as K
from .annotations import read_params
from .by_target import by_target_call, fold_by_target
from .capture import CapturedSource, capture
from .diagnostics import FrontendError, fail, to_check_error
from .effects import check_lazy_effects
from .foreign_calls import foreign_call
from .signatures import ParamSig, Signature, bind, table

BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
    ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor", ast.MatMult: "matmul",
}
UNARY: dict[type[ast.unaryop], str] = {
    ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert",
}
CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge",
}
PY_BUILTINS = {"range", "min", "max", "abs", "int", "float", "len", "slice", "print", "format"}
# Nesting limits: the kernel AST travels as JSON, which the checker reads with a nesting
# limit of 128; these keep every document well inside it (5 + 2 * 24 + 2 * 32 levels).
MAX_EXPR_DEPTH = 32
MAX_BLOCK_DEPTH = 24
INT64 = 2**63


def device_of(value: Any) -> Any:
    """The DeviceFunction behind `value`, if it is one (duck-typed to avoid an import cycle)."""
    return getattr(value, "__cutile_device__", None)


class _Resolved:
    """A name resolved at compile time to something that is not a kernel-local value."""

    def __init__(self, value: Any) -> None:
        self.value = value


class FunctionConverter:
    def __init__(
        self,
        fn: Callable[..., Any],
        src: CapturedSource,
        kind: str,
        name: str,
        unsafe: bool,
        options: dict[str, bool],
        on_device_call: Callable[[Any], str],
    ) -> None:
        self.fn = fn
        self.src = src
        self.kind = kind
        self.name = name
        self.unsafe = unsafe
        self.options = options
        self.on_device_call = on_device_call
        self.scope = self._scope()
        self.locals: set[str] = set()
        self.expr_depth = 0
        self.block_depth = 0
        # ids of the `and`s made from chained comparisons (`effects.check_lazy_effects`)
        self.chains: set[int] = set()

    def _scope(self) -> dict[str, Any]:
        scope: dict[str, Any] = dict(getattr(self.fn, "__globals__", {}))
        code = getattr(self.fn, "__code__", None)
        closure = getattr(self.fn, "__closure__", None)
        if code is not None and closure:
            for n, cell in zip(code.co_freevars, closure, strict=False):
                try:
                    scope[n] = cell.cell_contents
                except ValueError:
                    pass
        return scope

    def span(self, node: ast.AST) -> K.Span:
        return self.src.span(node)

    # ------------------------------------------------------------------ function

    def convert(self) -> K.Function:
        tree = self.src.tree
        params = read_params(self.fn, self.src, self.kind)
        self.locals = {p.name for p in params} | _assigned_names(tree)
        body = self.block(tree.body, top=True)
        return K.Function(
            name=self.name,
            kind=self.kind,
            unsafe=self.unsafe,
            span=self.span(tree),
            name_span=self.src.name_span(),
            params=params,
            body=body,
            options=dict(self.options),
        )

    # ------------------------------------------------------------------ statements

    def block(self, stmts: list[ast.stmt], top: bool = False) -> list[K.Stmt]:
        self.block_depth += 1
        try:
            if self.block_depth > MAX_BLOCK_DEPTH and stmts:
                raise fail(
                    "CT0011", f"statements nested more than {MAX_BLOCK_DEPTH} blocks deep",
                    self.span(stmts[0]), "too deep", help="move inner blocks into a "
                    "`@cutile.device` function",
                )
            return self._block(stmts)
        finally:
            self.block_depth -= 1

    def _block(self, stmts: list[ast.stmt]) -> list[K.Stmt]:
        out: list[K.Stmt] = []
        for i, s in enumerate(stmts):
            if (
                i == 0
                and isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Constant)
                and isinstance(s.value.value, str)
            ):
                continue  # docstring
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: ast.stmt) -> list[K.Stmt]:
        sp = self.span(s)
        if isinstance(s, ast.Assign):
            return [K.Assign([self.target(t) for t in s.targets], self.expr(s.value), sp)]
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                return []
            return [K.Assign([self.target(s.target)], self.expr(s.value), sp)]
        if isinstance(s, ast.AugAssign):
            op = BINOPS.get(type(s.op))
            if op is None:  # pragma: no cover - every Python operator is listed
                raise fail("CT0001", "unsupported operator", sp)
            return [K.AugAssign(self.target(s.target), op, self.expr(s.value), sp)]
        if isinstance(s, ast.Expr):
            return [K.ExprStmt(self.expr(s.value), sp)]
        if isinstance(s, ast.If):
            return [K.If(self.expr(s.test), self.block(s.body), self.block(s.orelse), sp)]
        if isinstance(s, ast.For):
            if s.orelse:
                raise fail(
                    "CT0001", "`for ... else` is not supported in kernels", self.span(s.orelse[0]),
                    "else branch", help="move the code after the loop and use a flag",
                )
            return [K.For(self.target(s.target), self.expr(s.iter), self.block(s.body), sp)]
        if isinstance(s, ast.While):
            if s.orelse:
                raise fail(
                    "CT0001", "`while ... else` is not supported in kernels",
                    self.span(s.orelse[0]), "else branch",
                    help="move the code after the loop and use a flag",
                )
            return [K.While(self.expr(s.test), self.block(s.body), sp)]
        if isinstance(s, ast.Break):
            return [K.Break(sp)]
        if isinstance(s, ast.Continue):
            return [K.Continue(sp)]
        if isinstance(s, ast.Pass):
            return [K.Pass(sp)]
        if isinstance(s, ast.Return):
            return [K.Return(self.expr(s.value) if s.value is not None else None, sp)]
        if isinstance(s, ast.With):
            return [self.with_stmt(s)]
        if isinstance(s, ast.Assert):
            msg = None
            if s.msg is not None:
                if not (isinstance(s.msg, ast.Constant) and isinstance(s.msg.value, str)):
                    raise fail(
                        "CT0001", "an assert message in a kernel must be a string literal",
                        self.span(s.msg), "not a literal",
                        help="write the message out: `assert x > 0, \"x must be positive\"`",
                    )
                msg = s.msg.value
            return [K.Assert(self.expr(s.test), msg, sp)]
        kind = type(s).__name__
        hint = {
            "FunctionDef": "define helpers at module level with `@cutile.device`",
            "Global": "kernels cannot write Python globals",
            "Nonlocal": "kernels cannot write enclosing variables",
            "Try": "kernels cannot raise or catch exceptions",
            "Raise": "use `assert` for a device-side check",
            "Delete": "names go out of scope by themselves",
            "Import": "import at module level",
            "ImportFrom": "import at module level",
        }.get(kind, "kernels take assignments, `if`, `for ... in range(...)`, `while`, "
                    "`break`, `continue`, `return`, `assert` and `with cutile.unsafe():`")
        raise fail(
            "CT0001", f"`{kind}` statements are not supported in kernels", sp, "not supported",
            help=hint,
        )

    def with_stmt(self, s: ast.With) -> K.Stmt:
        sp = self.span(s)
        if len(s.items) == 1 and s.items[0].optional_vars is None:
            ctx = s.items[0].context_expr
            if isinstance(ctx, ast.Call) and not ctx.args and not ctx.keywords:
                target = self.static_value(ctx.func)
                if target is not None and getattr(target.value, "__cutile_unsafe__", False):
                    return K.Unsafe(self.block(s.body), sp)
        raise fail(
            "CT0001", "the only `with` a kernel accepts is `with cutile.unsafe():`", sp,
            "unsupported `with`", help="write `with cutile.unsafe():` (one item, no `as`), "
            "or move the code out of the `with`",
        )

    def target(self, t: ast.expr) -> K.Target:
        sp = self.span(t)
        if isinstance(t, ast.Name):
            return K.NameTarget(t.id, sp)
        if isinstance(t, (ast.Tuple, ast.List)):
            return K.TupleTarget([self.target(e) for e in t.elts], sp)
        if isinstance(t, ast.Subscript):
            raise fail(
                "CT0001", "kernels cannot assign into a subscript", sp, "item assignment",
                help="tiles are immutable values; write tensors with `z.store(tile)`",
            )
        if isinstance(t, ast.Attribute):
            raise fail(
                "CT0001", "kernels cannot assign to an attribute", sp, "attribute assignment",
                help="assign to a new name: `y = ...`",
            )
        raise fail("CT0001", f"cannot assign to `{type(t).__name__}`", sp, "unsupported target",
                   help="assign to names or a tuple of names: `a, b = t`")

    # ------------------------------------------------------------------ expressions

    def static_value(self, node: ast.expr) -> _Resolved | None:
        """Resolve a Name/Attribute chain that does not start at a kernel local."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return None
            if node.id in self.scope:
                return _Resolved(self.scope[node.id])
            if hasattr(builtins, node.id):
                return _Resolved(getattr(builtins, node.id))
            raise fail(
                "CT0002", f"cannot find `{node.id}` in this scope", self.span(node),
                "not found", help="define or import it before the kernel",
            )
        if isinstance(node, ast.Attribute):
            base = self.static_value(node.value)
            if base is None:
                return None
            try:
                return _Resolved(getattr(base.value, node.attr))
            except AttributeError:
                raise fail(
                    "CT0002", f"`{_dotted(node.value)}` has no attribute `{node.attr}`",
                    self.span(node), "unknown attribute",
                    help="check the spelling, or define it before the kernel",
                ) from None
            except Exception as exc:  # a property or `__getattr__` of the user's that raises
                raise fail(
                    "CT0002", f"reading `{_dotted(node)}` raised {type(exc).__name__}: {exc}",
                    self.span(node), "raised while the kernel was compiled",
                    help="a kernel reads globals once, when it is compiled: give it a plain "
                    "value (an int, a float, a dtype)",
                ) from None
        return None

    def fold(self, value: Any, node: ast.expr) -> K.Expr:
        sp = self.span(node)
        if isinstance(value, bool):
            return K.Const(value, "bool", sp)
        if isinstance(value, int):
            return self.int_literal(value, sp)
        if isinstance(value, float):
            return K.Const(value, "float", sp)
        # None and strings fold like the literals (a closure's `latency=None` is an absent
        # hint, `padding=mode` a padding name), so a kernel factory can parametrize them.
        if value is None:
            return K.Const(None, "none", sp)
        if isinstance(value, str):
            return K.Const(value, "str", sp)
        if isinstance(value, DType):
            return K.DTypeRef(value.name, sp)
        if isinstance(value, ByTarget):
            return fold_by_target(value, lambda v: self.fold(v, node), sp)
        if isinstance(value, tuple) and all(isinstance(v, (int, float, bool)) for v in value):
            return K.Tuple([self.fold(v, node) for v in value], sp)
        if getattr(value, "__cutile_op__", None):
            raise fail(
                "CT0006", f"`{value.__cutile_op__}` is an operation; call it",
                sp, "used as a value", help=f"call it where it is used: "
                f"`{value.__cutile_op__}(...)`",
            )
        what = type(value).__name__
        raise fail(
            "CT0006", f"`{_dotted(node)}` is a `{what}`, which a kernel cannot use", sp,
            f"`{what}` value",
            help="kernels can use ints, floats, bools, dtypes, cutile.core functions and "
            "@cutile.device functions from the enclosing scope",
        )

    def int_literal(self, v: int, sp: K.Span) -> K.Expr:
        if not -INT64 <= v < INT64:
            raise fail(
                "CT0012", f"the integer {v} does not fit in 64 bits", sp, "too large",
                help="kernel integers are at most 64-bit (indices are 32-bit)",
            )
        return K.Const(v, "int", sp)

    def expr(self, e: ast.expr) -> K.Expr:
        self.expr_depth += 1
        try:
            if self.expr_depth > MAX_EXPR_DEPTH:
                raise fail(
                    "CT0011", f"expression nested more than {MAX_EXPR_DEPTH} levels deep",
                    self.span(e), "too deep", help="split it into several assignments",
                )
            return self._expr(e)
        finally:
            self.expr_depth -= 1

    def _expr(self, e: ast.expr) -> K.Expr:
        sp = self.span(e)
        if isinstance(e, ast.Name):
            if e.id in self.locals:
                return K.Name(e.id, sp)
            r = self.static_value(e)
            assert r is not None
            return self.fold(r.value, e)
        if isinstance(e, ast.Constant):
            v = e.value
            if isinstance(v, bool):
                return K.Const(v, "bool", sp)
            if isinstance(v, int):
                return self.int_literal(v, sp)
            if isinstance(v, float):
                return K.Const(v, "float", sp)
            if isinstance(v, str):
                return K.Const(v, "str", sp)
            if v is None:
                return K.Const(None, "none", sp)
            raise fail("CT0006", f"constant {v!r} cannot be used in a kernel", sp, "constant",
                       help="kernel constants are ints, floats, bools, strings and None")
        if isinstance(e, ast.Attribute):
            r = self.static_value(e)
            if r is not None:
                return self.fold(r.value, e)
            return K.Attribute(self.expr(e.value), e.attr, sp)
        if isinstance(e, (ast.Tuple, ast.List)):
            return K.Tuple([self.expr(x) for x in e.elts], sp)
        if isinstance(e, ast.BinOp):
            return K.BinOp(BINOPS[type(e.op)], self.expr(e.left), self.expr(e.right), sp)
        if isinstance(e, ast.UnaryOp):
            return K.Unary(UNARY[type(e.op)], self.expr(e.operand), sp)
        if isinstance(e, ast.BoolOp):
            op = "and" if isinstance(e.op, ast.And) else "or"
            return K.BoolOp(op, [self.expr(v) for v in e.values], sp)
        if isinstance(e, ast.Compare):
            return self.compare(e)
        if isinstance(e, ast.IfExp):
            return K.IfExp(self.expr(e.test), self.expr(e.body), self.expr(e.orelse), sp)
        if isinstance(e, ast.Subscript):
            items = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            if any(_is_none(x) or _is_ellipsis(x) or isinstance(x, ast.Starred)
                   for x in items) and all(_is_none(x) or _is_ellipsis(x) or _is_colon(x)
                                           or isinstance(x, ast.Starred) for x in items):
                return self.new_axes(e, items)
            return K.Subscript(self.expr(e.value), self.index(e.slice), sp)
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, ast.JoinedStr):
            return self.fstring(e)
        kind = type(e).__name__
        raise fail(
            "CT0001", f"`{kind}` expressions are not supported in kernels", sp, "not supported",
            help=_EXPR_HINTS.get(kind, "kernels take arithmetic, comparisons, `and`/`or`/`not`, "
                                 "conditional expressions, tuples, subscripts and calls"),
        )

    def index(self, e: ast.expr) -> K.Expr:
        """A subscript's index; `a:b:c` is spelled `builtins.slice(a, b, c)` (absent parts
        the literal None), as the call `slice(a, b, c)` is."""
        if isinstance(e, ast.Slice):
            sp = self.span(e)
            parts = [self.expr(x) if x is not None else K.Const(None, "none", sp)
                     for x in (e.lower, e.upper, e.step)]
            return K.Call("builtins.slice", parts, sp)
        if _is_ellipsis(e):
            raise fail(
                "CT0001", "`...` is accepted only among `None` and `:` (new axes)", self.span(e),
                "`...`", help="write out the `:` of each axis before the slice or index",
            )
        if isinstance(e, ast.Tuple) and any(
                isinstance(x, ast.Slice) or _is_none(x) or _is_ellipsis(x) for x in e.elts):
            return K.Tuple([self.index(x) for x in e.elts], self.span(e))
        return self.expr(e)
    def new_axes(self, e: ast.Subscript, items: list[ast.expr]) -> K.Expr:
        """`t[None]`, `t[:, None]`, `t[..., None]`: size-1 axes inserted where the `None`s
        stand, written as the `expand_dims` calls they are (one reading for the checker and
        the lowering). Every other entry is a full `:` or one `...`; a subscript with bounds
        or indices is a slice (`index`, lowered by `lowering/ops/slicing.py`)."""
        sp = self.span(e)
        for x in items:
            if not (_is_none(x) or isinstance(x, ast.Slice) or _is_ellipsis(x)):
                raise fail(
                    "CT0001", "a subscript mixing indices with `None` or `:` is not "
                    "supported in kernels", self.span(x), "index",
                    help="in a subscript with `None` or `:` every entry is `None`, `:` or `...`",
                )
        if sum(_is_ellipsis(x) for x in items) > 1:
            raise fail("CT0001", "a subscript can have one `...`", sp, "second `...`",
                       help="keep one `...` and write out the `:` of the other axes")
        if not any(_is_none(x) for x in items):
            raise fail("CT0001", "a subscript of only `:` and `...` is not supported in "
                       "kernels", sp, "subscript", help="it is the value itself: drop it")
        cut = next((i for i, x in enumerate(items) if _is_ellipsis(x)), len(items))
        before, after = items[:cut], items[cut + 1:]
        # Axes before `...` are counted from the front in increasing order, axes after it
        # from the back (negative), nearest the end first: each call puts its axis where
        # the whole subscript does.
        axes = [i for i, x in enumerate(before) if _is_none(x)]
        axes += [i - len(after) for i, x in reversed(list(enumerate(after))) if _is_none(x)]
        out = self.expr(e.value)
        sig = table().functions["expand_dims"]
        for axis in axes:
            out = K.Call("expand_dims", bind(sig, [out, K.Const(axis, "int", sp)], [], sp), sp)
        return out

    def fstring(self, e: ast.JoinedStr) -> K.Expr:
        """`f"x = {t:.3f}"` is `"x = " + format(t, ".3f")`: string literals and
        `builtins.format` calls joined by `add` (the lowering's print reads them)."""
        sp = self.span(e)
        parts: list[K.Expr] = []
        for v in e.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(K.Const(v.value, "str", self.span(v)))
                continue
            assert isinstance(v, ast.FormattedValue)
            if v.conversion != -1:
                raise fail("CT0001", "conversions (`!r`, `!s`, `!a`) are not supported in "
                           "kernel f-strings", self.span(v), "conversion",
                           help="write `{x}` or `{x:.3f}`")
            spec: K.Expr = K.Const("", "str", sp)
            if v.format_spec is not None:
                assert isinstance(v.format_spec, ast.JoinedStr)
                inner = self.fstring(v.format_spec)
                if not (isinstance(inner, K.Const) and isinstance(inner.value, str)):
                    raise fail("CT0001", "a format spec in a kernel f-string must be written "
                               "out (no `{}` inside it)", self.span(v.format_spec), "spec",
                               help="write the spec as text: `{x:8.3f}`")
                spec = inner
            parts.append(K.Call("builtins.format", [self.expr(v.value), spec], self.span(v)))
        if not parts:
            return K.Const("", "str", sp)
        out = parts[0]
        for p in parts[1:]:
            if isinstance(out, K.Const) and isinstance(p, K.Const):
                out = K.Const(f"{out.value}{p.value}", "str", sp)
            else:
                out = K.BinOp("add", out, p, sp)
        return out

    def compare(self, e: ast.Compare) -> K.Expr:
        sp = self.span(e)
        parts: list[K.Expr] = []
        left = e.left
        for op, right in zip(e.ops, e.comparators, strict=True):
            name = CMPOPS.get(type(op))
            if name is None:
                raise fail(
                    "CT0001", f"`{type(op).__name__}` comparisons are not supported in kernels",
                    sp, "unsupported comparison",
                    help="compare values with `==`, `!=`, `<`, `<=`, `>`, `>=` (`x == a or "
                    "x == b` for `x in (a, b)`)",
                )
            parts.append(K.Compare(name, self.expr(left), self.expr(right), sp))
            left = right
        if len(parts) == 1:
            return parts[0]
        chain = K.BoolOp("and", parts, sp)
        self.chains.add(id(chain))
        return chain

    def call(self, e: ast.Call) -> K.Expr:
        sp = self.span(e)
        target = self.static_value(e.func)
        # Parameters that take a device function (`reduce`'s combiner), by position and name.
        op_name = getattr(target.value, "__cutile_op__", None) if target is not None else None
        op_sig = table().functions.get(op_name) if isinstance(op_name, str) else None
        takes_fn = {p.name: (i, p.function) for i, p in enumerate(op_sig.params)
                    if p.function} if op_sig is not None else {}
        by_pos = dict(takes_fn.values())
        args = []
        for i, a in enumerate(e.args):
            if isinstance(a, ast.Starred):
                raise fail("CT0001", "`*args` calls are not supported in kernels", self.span(a),
                           "unpacked", help="pass each argument by itself: `f(t[0], t[1])`")
            args.append(self.function_arg(a, by_pos[i], str(op_name)) if i in by_pos
                        else self.expr(a))
        kwargs: list[tuple[str, K.Expr, K.Span]] = []
        for kw in e.keywords:
            if kw.arg is None:
                raise fail("CT0001", "`**kwargs` calls are not supported in kernels",
                           self.span(kw.value), "unpacked",
                           help="pass each keyword argument by itself: `f(a=1)`")
            value = (self.function_arg(kw.value, takes_fn[kw.arg][1], str(op_name))
                     if kw.arg in takes_fn else self.expr(kw.value))
            kwargs.append((kw.arg, value, self.span(kw)))
        if target is None:
            if isinstance(e.func, ast.Attribute):
                return self.method(e.func, args, kwargs, sp)
            raise fail(
                "CT0001", "only functions and methods can be called in kernels",
                self.span(e.func), "not callable here",
                help="call a cutile operation, a `@cutile.device` function or a method; a "
                "local name (a parameter or a variable) shadows a function of the same name",
            )
        value = target.value
        if value is ByTarget:
            return by_target_call(args, kwargs, sp)
        op = getattr(value, "__cutile_op__", None)
        if isinstance(op, str):
            sig = table().functions.get(op)
            if sig is None:  # pragma: no cover - tests/frontend/test_op_table.py
                raise fail("CT9002", f"`{op}` is missing from the op table", sp)
            bound = bind(sig, args, kwargs, sp)
            if op == "arange":
                bound = _arange_spelling(bound, sp)
            return K.Call(op, bound, sp)
        dev = device_of(value)
        if dev is not None:
            return K.CallDevice(self.on_device_call(dev), self.bind_device(dev, args, kwargs, sp),
                                sp)
        if isinstance(value, types.BuiltinFunctionType) or value in (range, int, float, slice):
            name = getattr(value, "__name__", "")
            if name in PY_BUILTINS and getattr(builtins, name, None) is value:
                if name == "print":
                    # every positional argument is one value printed (a tuple included)
                    args = [K.Tuple(args, sp)]
                bound = bind(table().builtins[name], args, kwargs, sp, what=f"`{name}()`")
                if name == "range" and isinstance(bound[1], K.Const) and bound[1].type == "none":
                    # `range(n)` is `range(0, n, 1)`: one spelling for every reader
                    bound = [K.Const(0, "int", sp), bound[0], bound[2]]
                if name == "slice" and isinstance(bound[1], K.Const) and bound[1].type == "none":
                    # `slice(n)` is `slice(None, n, None)`, as `t[:n]` is
                    bound = [K.Const(None, "none", sp), bound[0], bound[2]]
                return K.Call(f"builtins.{name}", bound, sp)
        if isinstance(value, DType):
            raise fail(
                "CT0001", f"`{value.name}(...)` is not a conversion in kernels", sp,
                "dtype called", help=f"use `x.astype({value.name})`",
            )
        if getattr(value, "__cutile_entry__", None) is not None:
            raise fail(
                "CT0007", "a kernel cannot launch another kernel", sp, "entry called",
                help="mark shared code `@cutile.device` and call that",
            )
        raise foreign_call(value, sp, PY_BUILTINS)

    def method(self, func: ast.Attribute, args: list[K.Expr],
               kwargs: list[tuple[str, K.Expr, K.Span]], sp: K.Span) -> K.Expr:
        sig: Signature | None = table().methods.get(func.attr)
        if sig is None:
            known = ", ".join(f"`.{m}()`" for m in sorted(table().methods))
            raise fail(
                "CT3031", f"no kernel value has a method `{func.attr}`", sp, "unknown method",
                help=f"the methods are {known}",
            )
        receiver = self.expr(func.value)
        return K.Method(receiver, func.attr, bind(sig, args, kwargs, sp, what=f"`.{func.attr}()`"),
                        sp)

    def function_arg(self, node: ast.expr, arity: int, op: str) -> K.Expr:
        """A `@cutile.device` function passed to `op` (`reduce`'s combiner): written as a
        `call_device` of it with `arity` None arguments, which the checker reads with
        opaque arguments and the lowering inlines into the op's region."""
        sp = self.span(node)
        r = self.static_value(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        dev = device_of(r.value) if r is not None else None
        if dev is None:
            raise fail(
                "CT3074", f"`{op}` takes a `@cutile.device` function here", sp,
                "not a device function", help="define `@cutile.device def combine(a, b): "
                "return ...` at module level and pass `combine` itself (not a call, a lambda "
                "or a kernel value)",
            )
        try:
            names = list(inspect.signature(dev.fn).parameters)
        except (TypeError, ValueError):
            names = []
        if len(names) != arity:
            raise fail(
                "CT3074", f"`{dev.__name__}` takes {len(names)} parameter"
                f"{'s' * (len(names) != 1)}, but `{op}` calls it with {arity}", sp,
                "wrong number of parameters",
                help="the combiner takes two scalars (the values it combines) and returns one",
            )
        name = self.on_device_call(dev)
        return K.CallDevice(name, [K.Const(None, "none", sp) for _ in range(arity)], sp)

    def bind_device(self, dev: Any, args: list[K.Expr],
                    kwargs: list[tuple[str, K.Expr, K.Span]], sp: K.Span) -> list[K.Expr]:
        """A device call's arguments in the callee's parameter order (its parameters have
        no defaults and no `*args`; the callee's own conversion reports those)."""
        try:
            names = list(inspect.signature(dev.fn).parameters)
        except (TypeError, ValueError):
            names = []
        params = tuple(ParamSig(n, True, None, False) for n in names)
        sig = Signature(dev.__name__, params, (), False, True, False)
        return bind(sig, args, kwargs, sp, code="CT3020", what=f"`{dev.__name__}`")


_EXPR_HINTS = {
    "Lambda": "define a `@cutile.device` function at module level",
    "NamedExpr": "assign on a line of its own: `t = ...`, then use `t`",
    "Starred": "write the items out: `(t[0], t[1], 3)`",
    "ListComp": "build the values with a `for` loop, or use tile operations",
    "SetComp": "build the values with a `for` loop, or use tile operations",
    "DictComp": "build the values with a `for` loop, or use tile operations",
    "GeneratorExp": "use a `for` loop, or a reduction such as `sum(t)` on a tile",
    "Set": "use a tuple `(a, b)`",
    "Dict": "use separate names, or a tuple",
    "Yield": "kernels are not generators: store results with `z.store(...)`",
    "YieldFrom": "kernels are not generators: store results with `z.store(...)`",
    "Await": "kernels are not coroutines; `await` the launched op on the host",
}


def _arange_spelling(bound: list[K.Expr], sp: K.Span) -> list[K.Expr]:
    """`arange(start, stop, step, dtype)` in one spelling, as numpy reads the call:
    `arange(n)` is `arange(0, n, 1)`, and `arange(n, f32)` (a dtype where `stop` goes) is
    `arange(0, n, 1, f32)`."""
    start, stop, step, dtype = bound
    if isinstance(stop, K.DTypeRef):
        if not (isinstance(dtype, K.Const) and dtype.type == "none"):
            raise fail("CT3039", "`arange` got a dtype twice", stop.span, "a dtype",
                       help="the signature is `arange(start, stop=None, step=1, dtype=None)`")
        stop, dtype = K.Const(None, "none", sp), stop
    if isinstance(stop, K.Const) and stop.type == "none":
        start, stop = K.Const(0, "int", sp), start
    return [start, stop, step, dtype]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _is_colon(node: ast.expr) -> bool:
    """A full `:` (no bounds, no step)."""
    return isinstance(node, ast.Slice) and not (node.lower or node.upper or node.step)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "expression"


def _assigned_names(tree: ast.FunctionDef) -> set[str]:
    names: set[str] = set()

    def add_target(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for x in t.elts:
                add_target(x)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                add_target(t)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            add_target(node.target)
        elif isinstance(node, ast.For):
            add_target(node.target)
        elif isinstance(node, ast.NamedExpr):
            add_target(node.target)
    return names


class DocumentBuilder:
    """Builds the document for one entry: the entry plus every device function it reaches."""

    def __init__(self) -> None:
        self.files: list[K.SourceFile] = []
        self.file_index: dict[str, int] = {}
        self.functions: list[K.Function] = []
        self.device_names: dict[int, str] = {}
        self.pending: list[Any] = []
        # The entry's name too: a device function imported under another name may share
        # it (`from helpers import add as helper` inside `def add`), and the document
        # names every function once.
        self.entry_name: str | None = None
        self.chains: set[int] = set()

    def add_file(self, src: CapturedSource) -> None:
        idx = self.file_index.get(src.path)
        if idx is None:
            idx = len(self.files)
            self.file_index[src.path] = idx
            self.files.append(K.SourceFile(src.path, src.text))
        src.file_index = idx

    def device_name(self, dev: Any) -> str:
        key = id(dev)
        if key not in self.device_names:
            base = dev.__name__
            taken = {n for n in self.device_names.values()} | {self.entry_name}
            name = base if base not in taken else f"{base}#{len(taken)}"
            self.device_names[key] = name
            self.pending.append(dev)
        return self.device_names[key]

    def convert(
        self, fn: Callable[..., Any], kind: str, name: str, unsafe: bool,
        options: dict[str, bool],
    ) -> K.Function:
        src = capture(fn)
        self.add_file(src)
        if kind == "entry":
            self.entry_name = name
        conv = FunctionConverter(fn, src, kind, name, unsafe, options, self.device_name)
        func = conv.convert()
        self.chains |= conv.chains
        self.functions.append(func)
        return func


def build_document(
    fn: Callable[..., Any], name: str, unsafe: bool, options: dict[str, bool]
) -> K.Document:
    """The kernel AST of an entry and its device functions; a mistake in the source raises
    `KernelCheckError` (CT0xxx) rendered against the file."""
    b = DocumentBuilder()
    try:
        b.convert(fn, "entry", name, unsafe, options)
        done: set[int] = set()
        while b.pending:
            dev = b.pending.pop()
            if id(dev) in done:
                continue
            done.add(id(dev))
            b.convert(dev.fn, "device", b.device_names[id(dev)], False, {})
        check_lazy_effects(b.functions, b.chains)
    except FrontendError as err:
        raise to_check_error(b.files, err) from None
    except RecursionError:
        raise KernelCheckError(
            f"`{name}` is nested too deeply to compile", [], code="CT0011",
        ) from None
    K.number_nodes(b.functions)
    return K.Document(b.files, name, b.functions)


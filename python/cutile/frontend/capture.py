"""Capture a kernel's source: the file text, the function's Python AST, and spans.

Spans use absolute UTF-8 byte offsets into the file (docs/kernel-ast.md). The function is
found in the parse of its whole file, so a function nested in a class or another function
keeps its own columns and string literals. Only where the file's text is not at hand is its
own source parsed dedented, its columns shifted back so that every span points at the real
text of the real file.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CutileError
from .kast import Span


@dataclass
class CapturedSource:
    path: str
    text: str  # the whole file
    tree: ast.FunctionDef
    first_line: int  # 1-based line of the first source line of the function (decorators incl.)
    indent: int  # bytes removed from every line before parsing
    file_index: int = 0
    _line_starts: list[int] | None = None

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            data = self.text.encode("utf-8")
            for i, b in enumerate(data):
                if b == 0x0A:
                    starts.append(i + 1)
            self._line_starts = starts
        return self._line_starts

    def span(self, node: ast.AST) -> Span:
        """The span of a node of `tree`, in file coordinates."""
        line = getattr(node, "lineno", None)
        if line is None:
            return self.span(self.tree)
        col = int(getattr(node, "col_offset", 0))
        end_line = int(getattr(node, "end_lineno", line) or line)
        end_col = int(getattr(node, "end_col_offset", col) or col)
        fline = line + self.first_line - 1
        fend = end_line + self.first_line - 1
        col += self.indent
        end_col += self.indent
        starts = self.line_starts()
        lo = starts[fline - 1] + col if fline - 1 < len(starts) else 0
        hi = starts[fend - 1] + end_col if fend - 1 < len(starts) else lo
        return Span(self.file_index, lo, hi, fline, col, fend, end_col)

    def name_span(self) -> Span:
        """The span of the function's name in `def name(`."""
        whole = self.span(self.tree)
        line_no = self.tree.lineno + self.first_line - 1
        line = self.text.splitlines()[line_no - 1] if self.text else ""
        raw = line.encode("utf-8")
        key = f"def {self.tree.name}".encode()
        at = raw.find(key)
        if at < 0:
            return whole
        col = at + 4
        lo = self.line_starts()[line_no - 1] + col
        n = len(self.tree.name.encode("utf-8"))
        return Span(self.file_index, lo, lo + n, line_no, col, line_no, col + n)


# (path, lines, first line, file text) of each decorated function, read when its decorator
# ran: the text Python had just compiled it from. A kernel is parsed at its first check,
# which may be long after; the file may have been edited on disk in between.
_Source = tuple[str, list[str], int, str]
_remembered: weakref.WeakKeyDictionary[Callable[..., Any], _Source] = (
    weakref.WeakKeyDictionary())
# path -> (linecache's list of the file's lines, their text joined): one copy of a file's
# text for all the functions read from it while linecache holds the same lines
_file_texts: dict[str, tuple[list[str], str]] = {}


def _read(fn: Callable[..., Any]) -> _Source:
    path = inspect.getsourcefile(fn) or inspect.getfile(fn)
    lines, first_line = inspect.getsourcelines(fn)
    cached = linecache.getlines(path)
    known = _file_texts.get(path)
    if known is None or known[0] is not cached:
        known = (cached, "".join(cached))
        _file_texts[path] = known
    return path, lines, first_line, known[1] or "".join(lines)


def remember_source(fn: Callable[..., Any]) -> None:
    """Read `fn`'s source now (its decorator runs right after Python compiled it), for
    `capture` to parse later. The first reading stays (`with_hints` makes another kernel
    of the same function). A source that cannot be read is left to `capture`'s CT0004."""
    try:
        if fn not in _remembered:
            _remembered[fn] = _read(fn)
    except (OSError, TypeError):
        pass


def capture(fn: Callable[..., Any]) -> CapturedSource:
    """Parse `fn`'s source, as read when it was decorated (`remember_source`), else now.
    Raises CT0004 if the source is not available."""
    try:
        path, lines, first_line, text = _remembered.get(fn) or _read(fn)
    except (OSError, TypeError) as exc:
        raise CutileError(
            f"cannot read the source of `{getattr(fn, '__qualname__', fn)}`: {exc}",
            code="CT0004",
            hint="cutile compiles a kernel from its source text; define it in a .py file",
        ) from None
    if first_line == 0:
        first_line = 1
    qualname = getattr(fn, "__qualname__", fn)
    found = _in_file(path, text, first_line)
    tree: ast.FunctionDef | None
    if found is not None:
        # Parsed in place: spans are the file's own, and string literals keep the text
        # Python compiled (dedenting would strip their continuation lines too).
        tree, first_line, indent = found, 1, 0
    else:
        src = "".join(lines)
        dedented = textwrap.dedent(src)
        indent = _common_indent(src, dedented)
        try:
            module = ast.parse(dedented)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # a lambda's line cut out of a larger expression, or lines that share no
            # indentation (a multi-line string in a nested function)
            module = ast.parse("")
        tree = next((n for n in module.body if isinstance(n, ast.FunctionDef)), None)
    if tree is None:
        raise CutileError(
            f"`{qualname}` is not a plain `def` function",
            code="CT0004",
            hint="kernels are ordinary (not async, not lambda) Python functions defined "
            "with `def` in a .py file",
        )
    _check_same_function(fn, tree, path)
    return CapturedSource(path, text, tree, first_line, indent)


def _check_same_function(fn: Callable[..., Any], tree: ast.FunctionDef, path: str) -> None:
    """The source is read from the file as it is now, found by the line the function's
    code starts at: edited on disk since the module was loaded (lines inserted above), it
    may be another function's text, which would then be checked and run under this
    function's name. The code object's name and parameters (what the interpreter
    compiled) must be the parsed function's."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    a = tree.args
    parsed = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    compiled = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    if tree.name != code.co_name or parsed != compiled:
        raise CutileError(
            f"the source of `{getattr(fn, '__qualname__', code.co_name)}` in {path} is not "
            f"the function that was loaded (found `def {tree.name}({', '.join(parsed)})`)",
            code="CT0004",
            hint="put `@cutile.entry` (or `@cutile.device`) directly above the `def`: "
            "another decorator wraps the function" if hasattr(fn, "__wrapped__") else
            "the file changed on disk after the module was imported; reload it",
        )


# path -> (the file text parsed, its module AST): one parse of a file for every function
# captured from the same text
_parsed: dict[str, tuple[str, ast.Module | None]] = {}


def _in_file(path: str, text: str, first_line: int) -> ast.FunctionDef | None:
    """The `def` (not async) whose first line (its first decorator's) is `first_line`
    in the whole file `text`, or None (no text, a text that does not parse, a lambda)."""
    if not text:
        return None
    known = _parsed.get(path)
    if known is None or known[0] is not text:
        try:
            module: ast.Module | None = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            module = None
        known = (text, module)
        _parsed[path] = known
    if known[1] is None:
        return None
    for node in ast.walk(known[1]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            decorators = getattr(node, "decorator_list", [])
            start = min([node.lineno, *(d.lineno for d in decorators)])
            if start == first_line:
                return node if isinstance(node, ast.FunctionDef) else None
    return None


def _common_indent(src: str, dedented: str) -> int:
    for a, b in zip(src.splitlines(), dedented.splitlines(), strict=False):
        if b.strip():
            return len(a.encode("utf-8")) - len(b.encode("utf-8"))
    return 0

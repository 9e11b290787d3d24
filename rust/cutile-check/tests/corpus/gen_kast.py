#!/usr/bin/env python3
"""Write the kernel AST JSON (docs/kernel-ast.md, schema `cutile.kast` v1) of each corpus kernel.

A stand-in for `cutile.frontend.kast_json(fn)` until the real frontend lands: it reads a
corpus `.py` file with `ast` (no import of cutile), resolves the few names the corpus uses,
and writes `<name>.json` beside it. Once the frontend exists, regenerate with it instead:

    python gen_kast.py            # every *.py in this folder
    python gen_kast.py a.py b.py  # some

Each corpus file holds one `@cutile.entry` kernel (plus any `@cutile.device` helpers) and a
first line `# expect: ok` or `# expect: CT1002 CT1004` (the codes the checker must report,
in source order).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
DTYPES = {
    "f16",
    "bf16",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "bool_",
    "f8e4m3",
    "f8e5m2",
    "tf32",
}
MODULES = {"cutile", "ct", "core", "api"}
BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitAnd: "bitand",
    ast.BitOr: "bitor",
    ast.BitXor: "bitxor",
    ast.MatMult: "matmul",
}
UNOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}
CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}


class Writer:
    def __init__(self, path: Path, source: str) -> None:
        self.source = source
        raw = source.encode()
        self.line_starts = [0]
        for i, b in enumerate(raw):
            if b == 0x0A:
                self.line_starts.append(i + 1)
        self.device: set[str] = set()
        self.constants: dict[str, object] = {}

    def span(self, node: ast.AST) -> dict:
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        return {
            "file": 0,
            "lo": self.line_starts[line - 1] + col,
            "hi": self.line_starts[end_line - 1] + end_col,
            "line": line,
            "col": col,
            "end_line": end_line,
            "end_col": end_col,
        }

    # ---- functions and parameters ----------------------------------------------------

    def decorator(self, fn: ast.FunctionDef) -> tuple[str, dict] | None:
        for d in fn.decorator_list:
            call = d if isinstance(d, ast.Call) else None
            target = call.func if call else d
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name in ("entry", "device"):
                kw = {
                    k.arg: k.value.value
                    for k in (call.keywords if call else [])
                    if isinstance(k.value, ast.Constant)
                }
                return name, kw
        return None

    def shape(self, node: ast.expr) -> list:
        out = []
        for e in node.elts:  # type: ignore[attr-defined]
            if isinstance(e, ast.Constant):
                out.append(e.value)
            elif isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
                out.append(-e.operand.value)  # type: ignore[attr-defined]
            else:
                raise ValueError(f"bad shape item {ast.dump(e)}")
        return out

    def param(self, a: ast.arg) -> dict:
        p = {"name": a.arg, "span": self.span(a), "kind": "value", "dtype": None, "shape": None}
        ann = a.annotation
        if ann is None:
            return p
        head = (
            ann.value.id
            if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name)
            else None
        )
        if head == "Mut":
            inner = ann.slice  # Tensor[dtype, shape]
            dt, sh = inner.slice.elts  # type: ignore[attr-defined]
            p.update(kind="mut_tensor", dtype=dt.id, shape=self.shape(sh))
        elif head == "Tensor":
            dt, sh = ann.slice.elts  # type: ignore[attr-defined]
            p.update(kind="tensor", dtype=dt.id, shape=self.shape(sh))
        elif head == "Const":
            p.update(kind="const", dtype=ann.slice.id)  # type: ignore[attr-defined]
        elif head == "Ptr":
            p.update(kind="ptr", dtype=ann.slice.id)  # type: ignore[attr-defined]
        elif isinstance(ann, ast.Name) and ann.id in DTYPES:
            p.update(kind="scalar", dtype=ann.id)
        return p

    def function(self, fn: ast.FunctionDef, kind: str, kw: dict) -> dict:
        name_lo = self.line_starts[fn.lineno - 1] + fn.col_offset + len("def ")
        name_span = {
            "file": 0,
            "lo": name_lo,
            "hi": name_lo + len(fn.name),
            "line": fn.lineno,
            "col": fn.col_offset + 4,
            "end_line": fn.lineno,
            "end_col": fn.col_offset + 4 + len(fn.name),
        }
        return {
            "name": fn.name,
            "kind": kind,
            "unsafe": bool(kw.get("unsafe", False)),
            "options": {"deny_in_kernel_checks": bool(kw.get("deny_in_kernel_checks", False))},
            "span": self.span(fn),
            "name_span": name_span,
            "params": [self.param(a) for a in fn.args.args],
            "body": [s for st in fn.body for s in self.stmt(st)],
        }

    # ---- statements --------------------------------------------------------------------

    def target(self, t: ast.expr) -> dict:
        if isinstance(t, ast.Name):
            return {"kind": "name", "id": t.id, "span": self.span(t)}
        if isinstance(t, (ast.Tuple, ast.List)):
            return {"kind": "tuple", "elts": [self.target(e) for e in t.elts], "span": self.span(t)}
        raise ValueError(f"unsupported target {ast.dump(t)}")

    def stmt(self, s: ast.stmt) -> list[dict]:
        sp = self.span(s)
        if (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Constant)
            and isinstance(s.value.value, str)
        ):
            return []  # docstring
        if isinstance(s, ast.Assign):
            return [
                {
                    "kind": "assign",
                    "targets": [self.target(t) for t in s.targets],
                    "value": self.expr(s.value),
                    "span": sp,
                }
            ]
        if isinstance(s, ast.AugAssign):
            return [
                {
                    "kind": "augassign",
                    "target": self.target(s.target),
                    "op": BINOPS[type(s.op)],
                    "value": self.expr(s.value),
                    "span": sp,
                }
            ]
        if isinstance(s, ast.Expr):
            return [{"kind": "expr", "value": self.expr(s.value), "span": sp}]
        if isinstance(s, ast.If):
            return [
                {
                    "kind": "if",
                    "test": self.expr(s.test),
                    "body": self.body(s.body),
                    "orelse": self.body(s.orelse),
                    "span": sp,
                }
            ]
        if isinstance(s, ast.For):
            return [
                {
                    "kind": "for",
                    "target": self.target(s.target),
                    "iter": self.expr(s.iter),
                    "body": self.body(s.body),
                    "span": sp,
                }
            ]
        if isinstance(s, ast.While):
            return [
                {"kind": "while", "test": self.expr(s.test), "body": self.body(s.body), "span": sp}
            ]
        if isinstance(s, ast.Break):
            return [{"kind": "break", "span": sp}]
        if isinstance(s, ast.Continue):
            return [{"kind": "continue", "span": sp}]
        if isinstance(s, ast.Pass):
            return [{"kind": "pass", "span": sp}]
        if isinstance(s, ast.Return):
            return [
                {"kind": "return", "value": self.expr(s.value) if s.value else None, "span": sp}
            ]
        if isinstance(s, ast.With):
            return [{"kind": "unsafe", "body": self.body(s.body), "span": sp}]
        if isinstance(s, ast.Assert):
            msg = s.msg.value if isinstance(s.msg, ast.Constant) else None
            return [{"kind": "assert", "test": self.expr(s.test), "msg": msg, "span": sp}]
        raise ValueError(f"unsupported statement at line {s.lineno}")

    def body(self, stmts: list[ast.stmt]) -> list[dict]:
        return [x for s in stmts for x in self.stmt(s)]

    # ---- expressions -------------------------------------------------------------------

    def args(self, call: ast.Call) -> tuple[list, list]:
        return (
            [self.expr(a) for a in call.args],
            [{"name": k.arg, "value": self.expr(k.value)} for k in call.keywords],
        )

    def expr(self, e: ast.expr) -> dict:
        sp = self.span(e)
        if isinstance(e, ast.Name):
            if e.id in DTYPES:
                return {"kind": "dtype", "name": e.id, "span": sp}
            if e.id in self.constants:
                v = self.constants[e.id]
                return {"kind": "const", "value": v, "type": type(v).__name__, "span": sp}
            return {"kind": "name", "id": e.id, "span": sp}
        if isinstance(e, ast.Constant):
            v = e.value
            ty = {bool: "bool", int: "int", float: "float"}[type(v)]
            return {"kind": "const", "value": v, "type": ty, "span": sp}
        if isinstance(e, (ast.Tuple, ast.List)):
            return {"kind": "tuple", "elts": [self.expr(x) for x in e.elts], "span": sp}
        if isinstance(e, ast.BinOp):
            return {
                "kind": "binop",
                "op": BINOPS[type(e.op)],
                "left": self.expr(e.left),
                "right": self.expr(e.right),
                "span": sp,
            }
        if isinstance(e, ast.UnaryOp):
            return {
                "kind": "unary",
                "op": UNOPS[type(e.op)],
                "operand": self.expr(e.operand),
                "span": sp,
            }
        if isinstance(e, ast.Compare):
            parts = []
            left = e.left
            for op, right in zip(e.ops, e.comparators, strict=True):
                parts.append(
                    {
                        "kind": "compare",
                        "op": CMPOPS[type(op)],
                        "left": self.expr(left),
                        "right": self.expr(right),
                        "span": sp,
                    }
                )
                left = right
            return (
                parts[0]
                if len(parts) == 1
                else {"kind": "boolop", "op": "and", "values": parts, "span": sp}
            )
        if isinstance(e, ast.BoolOp):
            return {
                "kind": "boolop",
                "op": "and" if isinstance(e.op, ast.And) else "or",
                "values": [self.expr(v) for v in e.values],
                "span": sp,
            }
        if isinstance(e, ast.IfExp):
            return {
                "kind": "ifexp",
                "test": self.expr(e.test),
                "body": self.expr(e.body),
                "orelse": self.expr(e.orelse),
                "span": sp,
            }
        if isinstance(e, ast.Call):
            args, kwargs = self.args(e)
            f = e.func
            if isinstance(f, ast.Name):
                kind = "call_device" if f.id in self.device else "call"
                return {"kind": kind, "func": f.id, "args": args, "kwargs": kwargs, "span": sp}
            if isinstance(f, ast.Attribute):
                if isinstance(f.value, ast.Name) and f.value.id in MODULES:
                    return {
                        "kind": "call",
                        "func": f.attr,
                        "args": args,
                        "kwargs": kwargs,
                        "span": sp,
                    }
                return {
                    "kind": "method",
                    "receiver": self.expr(f.value),
                    "method": f.attr,
                    "args": args,
                    "kwargs": kwargs,
                    "span": sp,
                }
        if isinstance(e, ast.Attribute):
            return {"kind": "attribute", "value": self.expr(e.value), "attr": e.attr, "span": sp}
        if isinstance(e, ast.Subscript):
            return {
                "kind": "subscript",
                "value": self.expr(e.value),
                "index": self.expr(e.slice),
                "span": sp,
            }
        raise ValueError(f"unsupported expression at line {e.lineno}: {ast.dump(e)}")


def document(path: Path) -> dict:
    source = path.read_text()
    tree = ast.parse(source)
    w = Writer(path, source)
    kernels = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for t in node.targets:
                if isinstance(t, ast.Name) and isinstance(node.value.value, (int, float, bool)):
                    w.constants[t.id] = node.value.value
        if isinstance(node, ast.FunctionDef) and (d := w.decorator(node)):
            kernels.append((node, d))
            if d[0] == "device":
                w.device.add(node.name)
    entries = [n.name for n, (k, _) in kernels if k == "entry"]
    if len(entries) != 1:
        raise ValueError(f"{path.name}: expected one @cutile.entry, found {entries}")
    functions = [w.function(n, "entry" if k == "entry" else "device", kw) for n, (k, kw) in kernels]
    try:
        rel = str(path.resolve().relative_to(REPO))
    except ValueError:
        rel = path.name
    return {
        "schema": "cutile.kast",
        "version": 1,
        "files": [{"path": rel, "source": source}],
        "entry": entries[0],
        "functions": functions,
    }


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(HERE.glob("*.py"))
    for p in paths:
        if p.name.startswith("gen_"):
            continue
        doc = document(p)
        p.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

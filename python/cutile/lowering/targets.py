"""Assignment targets of the kernel AST: the names a target binds, the expression that
reads it back, and the names a block of statements assigns (carried through loops)."""

from __future__ import annotations

from ..frontend import kast as K


def target_names(t: K.Target) -> set[str]:
    if isinstance(t, K.NameTarget):
        return {t.id}
    out: set[str] = set()
    for x in t.elts:
        out |= target_names(x)
    return out


def target_expr(t: K.Target) -> K.Expr:
    if isinstance(t, K.NameTarget):
        return K.Name(t.id, t.span)
    return K.Tuple([target_expr(x) for x in t.elts], t.span)


def assigned_in(stmts: list[K.Stmt]) -> set[str]:
    out: set[str] = set()

    def tgt(t: K.Target) -> None:
        if isinstance(t, K.NameTarget):
            out.add(t.id)
        else:
            for x in t.elts:
                tgt(x)

    def walk(ss: list[K.Stmt]) -> None:
        for s in ss:
            if isinstance(s, K.Assign):
                for t in s.targets:
                    tgt(t)
            elif isinstance(s, K.AugAssign):
                tgt(s.target)
            elif isinstance(s, K.For):
                tgt(s.target)
                walk(s.body)
            elif isinstance(s, (K.If,)):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, (K.While, K.Unsafe)):
                walk(s.body)

    walk(stmts)
    return out

"""Control flow for the generator (mixed into `generate.Gen`): conditions on a loop's
variable or the block, `if cond: break` / `continue` around a body, and trip counts of
`while` loops known only at launch.
"""

from __future__ import annotations

from .genbase import GenBase
from .model import (
    Bin,
    Call,
    Cmp,
    Expr,
    Lit,
)
from .program import (
    Exit,
    Stmt,
)


class FlowGen(GenBase):
    """The control-flow methods of the generator."""

    def cond(self, var: Expr | None) -> Cmp:
        """A condition on a loop's variable (or, without one, on the block), against a
        small number, a block id or a scalar: all defined before the loop."""
        d = self.d
        op = d.pick(["<", "<=", "==", "!=", ">", ">="])
        k = d.between(0, self.rank - 1)
        left: Expr = var if var is not None and d.chance(0.8) else self.bid_e[k]
        how = d.weighted([("lit", 6), ("bid", 2), ("scalar", 1), ("const", 1)])
        right: Expr
        if how == "lit":
            right = Lit(d.between(0, 3))
        elif how == "bid":
            right = self.bid_e[k]
        elif how == "scalar":
            sc = self.scalar()
            self.scalar_values[sc.name] = [d.between(-1, 3)]
            right = sc
        else:
            right = self.const([d.between(0, 3)])
        return Cmp(op, left, right) if d.chance(0.8) else Cmp(op, right, left)

    def with_exit(self, body: list[Stmt], var: Expr | None, p: float = 0.4) -> list[Stmt]:
        """`body` with maybe an `if cond: break` / `continue` at its start or its end."""
        d = self.d
        if not d.chance(p):
            return body
        kind = d.weighted([("break", 3), ("continue", 2)])
        self.features.add(kind)
        ex = Exit(kind, self.cond(var))
        return [ex, *body] if kind == "continue" or d.chance(0.6) else [*body, ex]

    def while_limit(self, most: int) -> Expr:
        """A small trip count, often known only at launch (a scalar, the block id): a
        `while` runs at most `most` times."""
        d = self.d
        k = d.between(0, self.rank - 1)
        how = d.weighted([("lit", 2), ("scalar", 3), ("block", 3), ("grid", 1)])
        if how == "lit":
            return Lit(d.between(0, most))
        self.features.add("while-data-dependent")
        e: Expr
        if how == "scalar":
            sc = self.scalar()
            self.scalar_values[sc.name] = [d.between(-1, most + 2), 0, most]
            e = sc
        elif how == "block":
            e = Bin("+", Bin("%", self.bid_e[k], Lit(d.between(1, 3))), Lit(d.between(0, 1)))
        else:
            e = Bin("-", self.nb_e[k], self.bid_e[k])
        return Call("min", (e, Lit(most)))


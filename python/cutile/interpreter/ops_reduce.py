"""reduce and scan: the op's region is the combiner, run on whole slices at once.

The body's arguments are (elem_0, acc_0, elem_1, acc_1, ...). It is given numpy arrays holding
many rank-0 lanes at once, so one run of the body combines a whole slice:

* reduce folds the identity into element 0, then combines adjacent pairs (even = acc,
  odd = elem) level by level: log2(n) runs of the body, order-preserving, so any
  associative combiner (commutative or not) gives the spec's result;
* scan folds the identity into element 0, then runs a Hillis-Steele inclusive prefix
  (log2(n) runs), acc = earlier prefix, elem = later; `reverse` scans from the end.

When the body is a single op on the two arguments (addf, maxf, ...), its handler is called
directly on the slices, skipping the block machinery; the arithmetic is the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InterpreterError
from ..ir.attrs import Dense
from ..ir.core import Block, Op
from ..ir.types import TileType, scalar
from .registry import HANDLERS, TERMINATORS, Handler, handler
from .values import Array, freeze, from_host

if TYPE_CHECKING:
    from .machine import Machine


class _Combiner:
    """Runs a reduce/scan body on slices."""

    def __init__(self, m: Machine, op: Op) -> None:
        self.m = m
        self.op = op
        self.body: Block = op.regions[0]
        self.n = len(op.operands)
        if len(self.body.args) != 2 * self.n:
            raise InterpreterError(
                f"`{op.name}` body takes {len(self.body.args)} arguments; "
                f"{self.n} operands need {2 * self.n}"
            )
        self.fast: tuple[Handler, Op, list[int]] | None = None
        ops = self.body.ops
        if (
            len(ops) == 2
            and ops[1].name == "yield"
            and not ops[0].regions
            and ops[0].name not in TERMINATORS
            and ops[0].name in HANDLERS
            and len(ops[0].results) == 1
            and ops[1].operands == [ops[0].results[0]]
            and all(v in self.body.args for v in ops[0].operands)
        ):
            inner = ops[0]
            where = [self.body.args.index(v) for v in inner.operands]
            self.fast = (HANDLERS[inner.name], inner, where)

    def __call__(self, elems: list[Array], accs: list[Array]) -> list[Array]:
        args: list[Array] = []
        for e, a in zip(elems, accs, strict=False):
            args += [e, a]
        shape = np.broadcast_shapes(*(np.shape(x) for x in args))
        if self.fast is not None:
            fn, inner, where = self.fast
            try:
                out = list(fn(self.m, inner, [args[i] for i in where]))
            except InterpreterError:
                raise
            except (ValueError, TypeError, ArithmeticError, IndexError) as exc:
                raise self.m.error(inner, str(exc)) from exc
        else:
            sig = self.m.run_block(self.body, args)
            if sig.kind not in ("yield", "end"):
                raise InterpreterError(f"`{self.op.name}` body ended with `{sig.kind}`")
            out = sig.values
        if len(out) != self.n:
            raise InterpreterError(f"`{self.op.name}` body yielded {len(out)} of {self.n} values")
        return [np.broadcast_to(x, shape) for x in out]


def _identities(op: Op) -> list[Array]:
    raw = op.attrs.get("identities")
    if raw is None or len(raw) != len(op.operands):
        raise InterpreterError(f"`{op.name}` needs one identity per operand")
    out = []
    for v, ident in zip(op.operands, raw, strict=False):
        ty = v.type
        assert isinstance(ty, TileType)
        value = ident.array if isinstance(ident, Dense) else ident
        out.append(from_host(np.asarray(value).reshape(()), scalar(ty.dtype)))
    return out


def _dim(op: Op, rank: int) -> int:
    dim = int(op.attrs.get("dim", 0))
    if not 0 <= dim < rank:
        raise InterpreterError(f"`{op.name}` dim {dim} is outside a rank-{rank} tile")
    return dim


def _fold_identity(comb: _Combiner, xs: list[Array], idents: list[Array]) -> list[Array]:
    """x[..., 0] := body(elem=x[..., 0], acc=identity)."""
    first = comb([x[..., 0] for x in xs], [np.broadcast_to(i, xs[0].shape[:-1]) for i in idents])
    out = []
    for x, f in zip(xs, first, strict=False):
        y = np.array(x)
        y[..., 0] = f
        out.append(y)
    return out


@handler("reduce")
def _reduce(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    comb = _Combiner(m, op)
    dim = _dim(op, args[0].ndim)
    xs = [np.moveaxis(np.asarray(a), dim, -1) for a in args]
    xs = _fold_identity(comb, xs, _identities(op))
    while xs[0].shape[-1] > 1:
        n = xs[0].shape[-1]
        pairs = n // 2
        merged = comb(
            [x[..., 1 : 2 * pairs : 2] for x in xs], [x[..., 0 : 2 * pairs : 2] for x in xs]
        )
        if n % 2:
            merged = [
                np.concatenate([p, x[..., -1:]], axis=-1) for p, x in zip(merged, xs, strict=False)
            ]
        xs = merged
    return [freeze(np.array(x[..., 0], dtype=a.dtype)) for x, a in zip(xs, args, strict=False)]


@handler("scan")
def _scan(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    comb = _Combiner(m, op)
    dim = _dim(op, args[0].ndim)
    reverse = bool(op.attrs.get("reverse", False))
    xs = [np.moveaxis(np.asarray(a), dim, -1) for a in args]
    if reverse:
        xs = [x[..., ::-1] for x in xs]
    xs = _fold_identity(comb, xs, _identities(op))
    n = xs[0].shape[-1]
    step = 1
    while step < n:
        later = comb([x[..., step:] for x in xs], [x[..., :-step] for x in xs])
        xs = [np.concatenate([x[..., :step], y], axis=-1) for x, y in zip(xs, later, strict=False)]
        step *= 2
    if reverse:
        xs = [x[..., ::-1] for x in xs]
    return [
        freeze(np.array(np.moveaxis(x, -1, dim), dtype=a.dtype))
        for x, a in zip(xs, args, strict=False)
    ]

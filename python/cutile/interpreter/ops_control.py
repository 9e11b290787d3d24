"""Control flow and the grid: for, if, loop, assert, print_tko, assume, tile block ids.

`continue` / `break` / `return` end a block with a Signal; `if` hands any signal that is not
its own `yield` up to the enclosing loop (or, for `return`, to the entry).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InterpreterError
from ..ir.attrs import Bounded, DivBy, SameElements
from ..ir.core import Op
from ..ir.types import PointerType, TileType
from .ops_arith import operand_dtype
from .ops_memory import TOKEN
from .registry import handler
from .values import Array, freeze, signed, unsigned, wrap_int

if TYPE_CHECKING:
    from .machine import Machine


@handler("get_tile_block_id")
def _block_id(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    return [freeze(np.array(i, dtype=np.int32)) for i in m.block_id]


@handler("get_num_tile_blocks")
def _num_blocks(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    return [freeze(np.array(n, dtype=np.int32)) for n in m.grid]


# -- structured control flow ---------------------------------------------------------------


def _check_count(op: Op, values: list[Any], what: str) -> list[Any]:
    if len(values) != len(op.results):
        raise InterpreterError(
            f"`{op.name}` has {len(op.results)} results but its body {what} {len(values)} values"
        )
    return values


@handler("for")
def _for(m: Machine, op: Op, args: list[Any]) -> Any:
    lb, ub, step, *iters = args
    d = operand_dtype(op, 0)
    unsigned_cmp = bool(op.attrs.get("unsignedCmp", op.attrs.get("unsigned_cmp", False)))
    view = unsigned if unsigned_cmp else signed
    lo, hi, st = (int(view(v, d)) for v in (lb, ub, step))
    if st <= 0:
        raise InterpreterError(f"`for` step must be positive, got {st}")
    # The H200 steps the counter in its own width: past the type's top it wraps to a value
    # still below the bound, and the loop goes on outside its range (measured with tileiras
    # 13.5: `tests/kernels/test_loop_step.py`). A loop whose last step passes the top is
    # therefore a fault here, not the clean end a Python range would give.
    count = len(range(lo, hi, st))
    top = (1 << d.bits) - 1 if unsigned_cmp else (1 << (d.bits - 1)) - 1
    if count and lo + count * st > top:
        raise InterpreterError(
            f"`for` counter passes the top of {d.name}: {lo + (count - 1) * st} + step {st} "
            f"> {top}; the device's counter wraps and the loop runs outside [{lo}, {hi})")
    body = op.regions[0]
    for i in range(lo, hi, st):
        iv = freeze(wrap_int(np.array(i, dtype=np.int64), d))
        sig = m.run_block(body, [iv, *iters])
        if sig.kind == "continue" or (sig.kind == "end" and not iters):
            iters = sig.values
        elif sig.kind == "return":
            return sig
        else:
            raise InterpreterError(f"`for` body ended with `{sig.kind}`; it must `continue`")
        if len(iters) != len(op.results):
            raise InterpreterError(
                f"`for` carries {len(op.results)} values but `continue` gave {len(iters)}"
            )
    return _check_count(op, list(iters), "carried")


@handler("if")
def _if(m: Machine, op: Op, args: list[Any]) -> Any:
    (cond,) = args
    if bool(cond):
        region = op.regions[0]
    elif len(op.regions) > 1 and (op.regions[1].ops or op.regions[1].args):
        region = op.regions[1]
    else:
        return _check_count(op, [], "yielded")
    sig = m.run_block(region)
    if sig.kind in ("yield", "end"):
        return _check_count(op, sig.values, "yielded")
    return sig  # continue / break / return belong to an enclosing op


@handler("loop")
def _loop(m: Machine, op: Op, args: list[Any]) -> Any:
    body = op.regions[0]
    iters = list(args)
    while True:
        sig = m.run_block(body, iters)
        if sig.kind == "continue" or (sig.kind == "end" and not iters):
            iters = sig.values
        elif sig.kind == "break":
            return _check_count(op, sig.values, "broke with")
        elif sig.kind == "return":
            return sig
        else:
            raise InterpreterError(f"`loop` body ended with `{sig.kind}`")


# -- checks and debugging ------------------------------------------------------------------


@handler("assert")
def _assert(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    (cond,) = args
    ok = np.asarray(cond, dtype=bool)
    if not ok.all():
        message = str(op.attrs.get("message", "assertion failed"))
        bad = np.argwhere(~ok) if ok.ndim else np.zeros((1, 0), dtype=np.int64)
        where = ", ".join(str(tuple(int(i) for i in row)) for row in bad[:4])
        more = f" and {len(bad) - 4} more" if len(bad) > 4 else ""
        detail = f" (false at element {where}{more})" if ok.ndim else ""
        raise InterpreterError(f"assertion failed: {message}{detail}")
    return []


def _check_assume(pred: Any, x: Array) -> str | None:
    """Why `x` breaks the assumed predicate, or None when it holds."""
    if isinstance(pred, DivBy):
        v = x.astype(np.int64) if x.dtype.kind in "iub" else x
        if pred.every is not None and pred.along is not None and v.ndim:
            v = np.take(v, np.arange(0, v.shape[pred.along], pred.every), axis=pred.along)
        if (v % pred.divisor != 0).any():
            return f"a value is not a multiple of {pred.divisor}"
    elif isinstance(pred, Bounded):
        if pred.lb is not None and (x < pred.lb).any():
            return f"a value is below {pred.lb}"
        if pred.ub is not None and (x > pred.ub).any():
            return f"a value is above {pred.ub}"
    elif isinstance(pred, SameElements):
        if len(pred.shape) == x.ndim and all(
            n % c == 0 for n, c in zip(x.shape, pred.shape, strict=False)
        ):
            split: list[int] = []
            for n, c in zip(x.shape, pred.shape, strict=False):
                split += [n // c, c]
            chunks = x.reshape(split)
            inner = tuple(range(1, 2 * x.ndim, 2))
            first = chunks[
                tuple(slice(None) if i % 2 == 0 else slice(0, 1) for i in range(2 * x.ndim))
            ]
            if not (chunks == first).all(axis=inner).all():
                return f"chunks of shape {list(pred.shape)} hold different values"
    return None


@handler("assume")
def _assume(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    # Tile IR trusts an assume (a wrong one is undefined behavior); the interpreter checks it.
    (x,) = args
    pred = op.attrs.get("predicate")
    if isinstance(x, np.ndarray) and x.dtype.kind in "iubf":
        why = _check_assume(pred, x)
        if why is not None:
            raise InterpreterError(f"assume {pred} does not hold: {why}")
    return [x]


_SPEC = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\d*)(?P<prec>\.\d+)?(?:hh|h|ll|l|j|z|t|L)?"
    r"(?P<conv>[diouxXeEfFgGcsp%])"
)


def _format_one(flags: str, width: str, prec: str, conv: str, value: Any) -> str:
    if conv in "diu":
        return f"%{flags}{width}{prec}d" % int(value)
    if conv in "oxX":
        return f"%{flags}{width}{prec}{conv}" % int(value)
    if conv == "p":
        return f"%{flags}{width}#x" % int(value)
    if conv == "c":
        return chr(int(value))
    if conv == "s":
        return f"%{flags}{width}s" % str(value)
    return f"%{flags}{width}{prec}{conv}" % float(value)


def _format_tile(flags: str, width: str, prec: str, conv: str, value: Array) -> str:
    if value.ndim == 0:
        return _format_one(flags, width, prec, conv, value[()])
    return "[" + ", ".join(_format_tile(flags, width, prec, conv, v) for v in value) + "]"


@handler("print_tko")
def _print(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    """C printf subset: flags, width, precision, length modifiers are accepted; a tile
    operand prints as a bracketed list with the specifier applied to each element."""
    fmt = str(op.attrs.get("str", op.attrs.get("format", "")))
    operands = iter(
        (a, v.type) for v, a in zip(op.operands, args, strict=False) if isinstance(v.type, TileType)
    )
    out: list[str] = []
    pos = 0
    for match in _SPEC.finditer(fmt):
        out.append(fmt[pos : match.start()])
        pos = match.end()
        conv = match.group("conv")
        if conv == "%":
            out.append("%")
            continue
        try:
            value, ty = next(operands)
        except StopIteration:
            raise InterpreterError(
                f"print format {fmt!r} has more specifiers than operands"
            ) from None
        assert isinstance(ty, TileType)
        if conv in "uxXo" and not isinstance(ty.element, PointerType) and ty.dtype.is_int:
            value = unsigned(value, ty.dtype)
        flags, width, prec = match.group("flags"), match.group("width"), match.group("prec")
        out.append(_format_tile(flags, width, prec or "", conv, np.asarray(value)))
    out.append(fmt[pos:])
    sys.stdout.write("".join(out))
    sys.stdout.flush()
    return [TOKEN]

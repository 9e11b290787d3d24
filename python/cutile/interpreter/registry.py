"""The dispatch table: Tile IR op name -> handler.

A handler gets the machine, the op and its operand values (already looked up) and returns
the list of result values, or a `Signal` when control leaves the enclosing block (only
region-holding ops such as `if` do that). Handlers never mutate their operands: tiles are
shared, immutable numpy arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ir.core import Op

if TYPE_CHECKING:
    from .machine import Machine

Handler = Callable[["Machine", Op, list[Any]], Any]

HANDLERS: dict[str, Handler] = {}

# Ops that end a block and hand their operands to the parent op.
TERMINATORS = frozenset({"yield", "continue", "break", "return"})


def handler(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            if name in HANDLERS:
                raise RuntimeError(f"two interpreter handlers for `{name}`")
            HANDLERS[name] = fn
        return fn

    return register

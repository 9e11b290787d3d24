"""Per-op operand/result type rules (the `Ops.td` constraints the bytecode reader and
tileiras would enforce), one small checker per op family, registered by op name.

Each checker returns a list of problems (empty when the op is well typed). Structure (SSA
dominance, regions, terminators) is checked by `cutile.ir.verify`; these rules look at one
op at a time. Families: `compute` (arithmetic, math, conversions), `shape`, `memory`
(tokens, views, pointers, atomics), `control` (constants, grid queries, assert/print,
structured control flow and reductions).
"""

from __future__ import annotations

from . import compute, control, memory, shape  # noqa: F401  (register their rules)
from .base import RULES, check_op

__all__ = ["RULES", "check_op"]

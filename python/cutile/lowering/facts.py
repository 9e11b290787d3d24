"""The checker's facts as the lowering reads them.

The Rust checker decides, per node of the kernel AST (and per inlined instance: the path of
`call_device` node ids that leads to it), how each safety obligation is discharged. The
lowering emits exactly the device asserts those facts name, steps each `for` counter in
the width they give, folds exactly the tests the checker folded (to the branch it read),
walks each `iter_indices()` loop by exactly the schedule the checker proved, and refuses
to emit an access or a loop the checker has no fact for, or to fold a test otherwise (a
disagreement between the two readers of one kernel). It decides nothing about safety
itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# (call path, node id): one inlined instance of a kernel-AST node.
Node = tuple[tuple[int, ...], int]


@dataclass(frozen=True)
class ScheduleFact:
    """The persistent schedule of one `iter_indices()` loop instance
    (`cutile_facts::ScheduleFact`): start at `block_id(axis)`, stride by `num_blocks(axis)`
    over the flat tile ids of `param`'s partition, map each to a tile by `map` with the
    group size capped at `group_max`."""

    param: str
    rank: int
    axis: int
    map: str  # "linear" (rank 1), "grouped" (rank 2), "linear-grouped" (rank 3)
    group_max: int


@dataclass(frozen=True)
class LoweringFacts:
    device_checks: frozenset[Node]
    checked_nodes: frozenset[Node]
    # the bits of each `for` loop's counter (keyed by its iterable's node)
    loop_counters: dict[Node, int]
    # the tests the checker folded (an `if`, `while`, conditional expression, or a `for`
    # over a range of literals that runs nothing): True/False, the only branch it read
    # (literals), or None, a test of `Const`s whose branches it read as live each
    folded_branches: dict[Node, bool | None]
    # the schedules of the `iter_indices()` loops, keyed by the `iter_indices` call's node
    # and the output it walks there
    schedules: dict[tuple[Node, str], ScheduleFact]

    @staticmethod
    def of(check_result: Any) -> LoweringFacts:
        """From a `cutile._native.CheckResult` of an accepted kernel."""
        return LoweringFacts(
            frozenset((tuple(p), n) for p, n in check_result.device_checks),
            frozenset((tuple(p), n) for p, n in check_result.checked_nodes),
            {(tuple(p), n): bits for p, n, bits in check_result.loop_counters},
            {(tuple(p), n): b for p, n, b in check_result.folded_branches},
            {((tuple(p), n), param): ScheduleFact(param, rank, axis, how, cap)
             for p, n, param, rank, axis, how, cap in check_result.schedules},
        )


# Lowering without the checker's facts (tests of the compiler alone, the race detector's
# own tests): no device asserts, no cross-check.
UNCHECKED: LoweringFacts | None = None

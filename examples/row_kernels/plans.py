"""How the row-reduction examples cut their rows, decided on the host: one `Plan` per
(row length, element type), read from an example's table of measured one-pass plans
(`ROW_PLANS`), or past its longest row the looped kernel. Shared by examples/softmax.py,
rmsnorm.py and layernorm.py, which differ only in their kernels and their tables."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cutile
from cutile.dtypes import DType

# (dtype, looped) -> the example's kernel for it; (dtype, name) -> a named variant of the
# one-pass kernel (same arguments, another way to compute, e.g. LayerNorm's "shifted")
Kernels = Mapping[tuple[DType, bool | str], cutile.EntryKernel]
# (BN, element bytes) -> (BM, tma, store_tma, hints), or with a fifth element, the name of
# the one-pass variant to run; the hints are `with_hints` keywords (`fp_contract`: True
# compiles the kernel with its products fused into their adds)
RowPlan = (tuple[int, bool, bool, dict[str, int]]
           | tuple[int, bool, bool, dict[str, int], str])
RowPlans = Mapping[tuple[int, int], RowPlan]


@dataclass(frozen=True)
class Plan:
    """How a launch cuts the rows: (BM, BN) tiles, BK-column steps for the looped kernel
    (None: one pass), the TMA choices of the one-pass load and store, the hints, and the
    one-pass variant ("": the example's own one-pass kernel)."""

    BM: int
    BN: int
    BK: int | None
    tma: bool
    store_tma: bool
    hints: tuple[tuple[str, int], ...]
    kernels: Kernels = field(compare=False, repr=False)
    variant: str = ""

    def kernel(self, dt: DType) -> cutile.EntryKernel:
        key: bool | str = self.variant or self.BK is not None
        return hinted(self.kernels[(dt, key)], self.hints)

    def consts(self) -> dict[str, Any]:
        """The Consts a launch passes by keyword (BM and BN come from the partition)."""
        return ({"BK": self.BK} if self.BK is not None
                else {"TMA": self.tma, "STORE_TMA": self.store_tma})


@functools.cache
def hinted(kernel: cutile.EntryKernel, hints: tuple[tuple[str, int], ...]) -> cutile.EntryKernel:
    """The kernel with these hints (one object per combination: it keeps its compiled
    variants)."""
    return kernel.with_hints(**dict(hints))


def next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def plan_rows(n: int, dt: DType, kernels: Kernels, row_plans: RowPlans, max_row: int,
              bk: int = 4096) -> Plan:
    """The plan for rows of `n` columns of `dt`: that of the shortest measured row length at
    or above BN (for a shorter row, with BM scaled up to keep the tile's size), and past
    `max_row` columns the looped kernel in (1, bk) steps."""
    bn = next_pow2(n)
    if bn > max_row:
        return Plan(1, bn, min(bk, bn), False, True,
                    (("num_worker_warps", 8), ("occupancy", 2)), kernels)
    near = min(b for b, s in row_plans if s == dt.itemsize and b >= bn)
    bm, tma, store_tma, hints, *variant = row_plans[(near, dt.itemsize)]
    bm = bm * near // bn            # a shorter row: more of them, the same tile size
    return Plan(bm, bn, None, tma, store_tma, tuple(sorted(hints.items())), kernels,
                variant[0] if variant else "")

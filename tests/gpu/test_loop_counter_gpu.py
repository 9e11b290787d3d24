"""A `for` over a range whose counter would pass 2^31 - 1 if stepped naively in 32 bits.

Tile IR defines a `for`'s iterations as the values of `[start, stop)` separated by `step`;
the checker relies on that (the loop variable stays in `[start, stop)`). These loops make a
naive 32-bit `iv += step` wrap to a negative value that is still below `stop`, so a counter
that wrapped runs extra iterations (and walks the variable out of the range). The
interpreter's answer is in `tests/kernels/test_loop_step.py`."""

from __future__ import annotations

import pytest

import cutile
from cutile import api
from cutile.core import Mut, Tensor, full, i32

pytestmark = pytest.mark.gpu

LO, HI, STEP = 2**31 - 17, 2**31 - 16, 2**30 + 1   # one iteration; naively wrapped, four


@cutile.entry
def count_runtime_step(z: Mut[Tensor[i32, [16]]], lo: i32, hi: i32, s: i32):
    c = 0
    low = 0
    for j in range(lo, hi, s):
        c += 1
        low = min(low, j)
    z.store(full((16,), c * 1000 + (low < 0), i32))


@cutile.entry
def count_constant_step(z: Mut[Tensor[i32, [16]]], lo: i32, hi: i32):
    c = 0
    low = 0
    for j in range(lo, hi, 1073741825):
        c += 1
        low = min(low, j)
    z.store(full((16,), c * 1000 + (low < 0), i32))


def _run(kernel: object, *args: int) -> int:
    z = api.zeros([16], i32).partition([16])
    out = kernel(z, *args).sync()[0]  # type: ignore[operator]
    return int(out.unpartition().to_numpy()[0])


def test_a_runtime_step_counter_does_not_wrap() -> None:
    assert _run(count_runtime_step, LO, HI, STEP) == 1000


def test_a_constant_step_counter_does_not_wrap() -> None:
    assert _run(count_constant_step, LO, HI) == 1000

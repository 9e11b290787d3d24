"""The persistent schedule of `for idx in z.iter_indices()` is the checker's fact.

The checker proves the stores of a persistent kernel disjoint under one schedule (block b
visits the flat tile ids b, b + nb, ... below the tile count; each id becomes a tile by the
grouped swizzle, `cutile-check/src/schedule.rs`) and writes it as a fact per loop
(`KernelFacts.schedules`): the lowering emits that schedule, and refuses a walk it has no
fact for. A loop whose range or schedule is not written in its header would be read by the
checker as an unknown loop variable while the compiler walks it: refused (CT2013). A kernel
whose only schedule loop is never reached is read as a regular launch. An own-tile `load()`
needs the checker's fact, as every other access does."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import _native, api, pipeline
from cutile.core import Const, Mut, Tensor, block_id, full, i32
from cutile.errors import CutileError, KernelCheckError
from cutile.lowering.facts import LoweringFacts

# Each visited tile records (block, visit number): `block * STEP + k`.
STEP = 4096


@cutile.entry
def visits1(z: Mut[Tensor[i32, [1]]], G: Const[int]):
    k = 0
    for idx in z.iter_indices(group=G):
        z.store(full((1,), block_id(0) * STEP + k, i32), index=idx)
        k += 1


@cutile.entry
def visits2(z: Mut[Tensor[i32, [1, 1]]], G: Const[int]):
    k = 0
    for i, j in z.iter_indices(group=G):
        z.store(full((1, 1), block_id(0) * STEP + k, i32), index=(i, j))
        k += 1


@cutile.entry
def visits3(z: Mut[Tensor[i32, [1, 1, 1]]], G: Const[int]):
    k = 0
    for idx in z.iter_indices(group=G):
        z.store(full((1, 1, 1), block_id(0) * STEP + k, i32), index=idx)
        k += 1


KERNELS = {1: visits1, 2: visits2, 3: visits3}
GRIDS = [[7], [1], [5, 3], [4, 4], [7, 2], [1, 5], [2, 3, 4], [3, 2, 5]]
GROUPS = [1, 2, 3, 5, 2**31 - 1]


def _lowered_schedule(grid: list[int], nb: int, group: int) -> list[list[tuple[int, ...]]]:
    """The tiles each block visits, in order, as the compiled kernel walks them on the
    interpreter."""
    z = api.zeros(grid, i32).partition([1] * len(grid)).persistent(nb)
    (z,) = KERNELS[len(grid)](z, G=group).sync()
    got = z.unpartition().to_numpy()
    per_block: list[list[tuple[int, ...]]] = [[] for _ in range(nb)]
    for tile in np.ndindex(*grid):
        b, k = divmod(int(got[tile]), STEP)
        per_block[b].append((k, *tile))
    return [[t[1:] for t in sorted(ts)] for ts in per_block]


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: "x".join(map(str, g)))
def test_the_lowered_schedule_is_the_checked_one(interpreter: None, grid: list[int]) -> None:
    total = math.prod(grid)
    for nb in sorted({1, 2, 3, total} & set(range(1, total + 1))):
        for group in GROUPS:
            want = [[tuple(t) for t in ts] for ts in _native.mapped_schedule(grid, nb, group)]
            assert _lowered_schedule(grid, nb, group) == want, (grid, nb, group)


def test_each_walk_has_the_checkers_schedule() -> None:
    facts = LoweringFacts.of(visits3.check())
    assert [(f.param, f.rank, f.axis, f.map, f.group_max)
            for f in facts.schedules.values()] == [("z", 3, 0, "linear-grouped", 2**31 - 1)]
    assert [f.map for f in LoweringFacts.of(visits2.check()).schedules.values()] == ["grouped"]
    assert [f.map for f in LoweringFacts.of(visits1.check()).schedules.values()] == ["linear"]


def test_a_walk_without_the_checkers_schedule_is_refused() -> None:
    facts = dataclasses.replace(LoweringFacts.of(visits2.check()), schedules={})
    with pytest.raises(CutileError) as info:
        pipeline.lower(visits2.document(), visits2.specialization({"G": 2}), facts)
    assert info.value.code == "CT9002"
    assert "no schedule for this walk of `z`" in str(info.value)


@cutile.entry
def bump(z: Mut[Tensor[i32, [8]]]):
    t = z.load()
    z.store(t + 1)


def test_an_own_tile_load_needs_the_checkers_fact(interpreter: None) -> None:
    facts = LoweringFacts.of(bump.check())
    # the checker's fact for the load, and the store's
    assert len(facts.checked_nodes) == 2
    load_only = frozenset(n for n in facts.checked_nodes
                          if n != min(facts.checked_nodes, key=lambda n: n[1]))
    with pytest.raises(CutileError) as info:
        pipeline.lower(bump.document(), bump.specialization({}),
                       dataclasses.replace(facts, checked_nodes=load_only))
    assert info.value.code == "CT9002"
    assert "no fact for this load" in str(info.value)
    xs = np.random.default_rng(3).integers(-1000, 1000, 24).astype(np.int32)
    z = api.from_numpy(xs).partition([8])
    (z,) = bump(z).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs + 1)


NAMED = {
    "a named range": ("r = range(2)\n    for i in r:", "for i in r:", "r"),
    "a named schedule": ("r = z.iter_indices()\n    for i in r:", "r = z.iter_indices()",
                         "z.iter_indices()"),
    "a chosen range": ("for i in (range(2) if C == 1 else range(3)):",
                       "(range(2) if C == 1 else range(3))", "range(2) if C"),
    "a range from a device function": ("for i in span(C):", "span(C)", "span(C)"),
    "a schedule passed on": ("walk(z.iter_indices())", "z.iter_indices()",
                             "z.iter_indices()"),
}

NAMED_SRC = """
@cutile.device
def span(n):
    return range(n)


@cutile.device
def walk(it):
    for i in it:
        pass


@cutile.entry
def k(z: Mut[Tensor[i32, [4]]], C: Const[int]):
    {loop}
        z.store(full((4,), 1, i32))
"""


@pytest.mark.parametrize("case", sorted(NAMED))
def test_a_loop_range_not_written_in_the_header_is_refused(tmp_path: Any, case: str) -> None:
    loop, line, caret = NAMED[case]
    src = NAMED_SRC.format(loop=loop)
    if "walk(" in loop:
        src = src.replace("\n        z.store", "\n    z.store")
    k = load_kernel(tmp_path, src)
    with pytest.raises(KernelCheckError) as info:
        k.check()
    e = info.value
    assert e.code == "CT2013", str(e)
    text = str(e)
    assert line in text and caret in text
    assert "help: write the iterable in the header" in text


@cutile.entry
def dead_walk(z: Mut[Tensor[i32, [4]]]):
    if False:
        for idx in z.iter_indices():
            z.store(full((4,), 2, i32), index=idx)
    z.store(full((4,), 1, i32), index=(num_tiles_of(z) - 1 - block_id(0),))


@cutile.device
def num_tiles_of(o):
    return cutile.core.num_tiles(o, 0)


def test_a_schedule_loop_never_reached_leaves_a_regular_launch(interpreter: None) -> None:
    r = dead_walk.check()
    # no output is persistent, and the checker read the grid as the output's tile grid:
    # one axis, and a reversed index proved in bounds on every launch
    assert r.outputs == [("z", "partitioned")]
    assert r.grid_rank == 1 and r.schedules == []
    assert [o.discharged for o in r.obligations] == ["static"]
    z = api.zeros([12], i32).partition([4])
    (z,) = dead_walk(z).sync()
    assert (z.unpartition().to_numpy() == 1).all()

"""The extremes of a launch: outputs with no element launch nothing and succeed on every
path (sync, await, then, zip, the interpreter itself), with no compile; grids past CUDA's
limits are a `LaunchError` (CT6109) before anything runs or moves."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, i8, load_tile_like
from cutile.kernel import EntryKernel
from cutile.lowering.signature import Specialization
from cutile.runtime import launch
from cutile.runtime.binding import specialization
from cutile.runtime.ownership import registry


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def copy2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
           BN: Const[int]):
    z.store(load_tile_like(x, z))


@cutile.entry
def walk(z: Mut[Tensor[f32, [4, 8]]], x: Tensor[f32, [-1, -1]], G: Const[int]):
    for idx in z.iter_indices(group=G):
        z.store(x.load_tile((4, 8), idx), index=idx)


@cutile.entry
def fill3d(z: Mut[Tensor[i8, [1, 1, 1]]]):
    z.store(z.load() + 1)


def empty_add(n: int = 0) -> cutile.KernelOp:
    return add(api.zeros([n], f32).partition([16]), api.ones([n], f32), api.ones([n], f32))


@pytest.fixture
def nothing_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch with no tile must not need a kernel: compiling (tileiras on a GPU) fails."""

    def refuse(self: EntryKernel, spec: Specialization, device: int | None = None) -> Any:
        raise AssertionError("an empty launch compiled its kernel")

    monkeypatch.setattr(EntryKernel, "_runnable", refuse)
    for k in (add, copy2d, walk):
        k._launcher = None


@pytest.mark.usefixtures("nothing_compiles")
@pytest.mark.parametrize("check", [False, True], ids=["plain", "race-detector"])
def test_empty_outputs_launch_nothing(check: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_INTERPRET", "check" if check else "")
    op = empty_add()
    assert op.grid == (0, 0, 0)
    z, _, _ = op.sync()
    assert z.unpartition().to_numpy().shape == (0,)
    for shape in ([0, 64], [64, 0], [0, 0]):
        op = copy2d(api.zeros(shape, f32).partition([16, 16]), api.ones(shape, f32))
        assert op.grid == (0, 0, 0)
        z, _ = op.sync()
        assert z.unpartition().to_numpy().shape == tuple(shape)
    for blocks in (None, 4):  # a persistent output with no tile: no block at all
        z = api.zeros([0, 64], f32).partition([4, 8]).persistent(blocks)
        op = walk(z, api.ones([0, 64], f32), G=1)
        assert op.grid == (0, 0, 0)
        z, _ = op.sync()
        assert z.unpartition().to_numpy().shape == (0, 64)


@pytest.mark.usefixtures("nothing_compiles")
def test_empty_launches_run_through_every_op() -> None:
    async def awaited() -> Any:
        return await empty_add()

    assert asyncio.run(awaited())[0].shape == (0,)
    z, _, _ = empty_add().then(lambda z, x, y: add(z, x, y)).sync()
    assert z.shape == (0,)
    (a, _, _), (b, _, _) = cutile.zip(empty_add(), empty_add()).sync()
    assert a.shape == b.shape == (0,)
    z, _, _ = empty_add()._run()
    op = empty_add()
    op._claim()
    op._start()()
    z, _, _ = op._finish()
    assert z.unpartition().to_numpy().shape == (0,)


def test_the_interpreter_runs_no_block_for_an_empty_grid() -> None:
    from cutile.runtime import driver

    if driver.backend() == "gpu":
        pytest.skip("drives the interpreter over host buffers")
    op = empty_add(16)
    runnable = add._runnable(specialization(*op.specialization))
    z, _, y = op.sync()
    np.testing.assert_array_equal(z.to_numpy(), np.full(16, 2.0))
    for grid in ((0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)):
        with cutile.check_races():
            launch.interpret(runnable.module, runnable.entry_name, runnable.abi, grid,
                             ("z", "x", "y"), (z, api.full([16], 5.0, f32), y))
    np.testing.assert_array_equal(z.to_numpy(), np.full(16, 2.0))  # nothing was written


@pytest.mark.parametrize("shape", [[1, 65_536, 1], [1, 1, 65_536]], ids=["y", "z"])
def test_grids_past_cudas_limits_are_refused_before_anything_runs(shape: list[int]) -> None:
    z = api.zeros(shape, i8).partition([1, 1, 1])
    with pytest.raises(cutile.LaunchError) as info:
        fill3d(z)
    assert info.value.code == "CT6109"
    axis = shape.index(65_536)
    assert str(info.value).startswith(
        f"[CT6109] `fill3d`: the grid needs 65536 blocks on axis {axis}; CUDA allows at most "
        "65535")
    assert registry().holder(z._handle) is None  # nothing moved
    np.testing.assert_array_equal(z.to_numpy(), np.zeros(shape, np.int8))
    # the limit itself launches
    at_limit = [min(s, 65_535) for s in shape]
    op = fill3d(api.zeros(at_limit, i8).partition([1, 1, 1]))
    assert op.grid == tuple(at_limit)
    op._give_back()


@cutile.entry
def first_tile(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    z.store(x.load_tile((4,), (0,)))


@pytest.mark.parametrize("step", [2**31, 2**32 + 1])
def test_a_stride_past_i32_on_an_extent_1_axis_is_passed_in_i64(step: int) -> None:
    # The axis spans nothing, but its stride is still passed: in i32 it wrapped (the
    # interpreter faulted; the GPU packing raised an untyped struct.error).
    data = np.arange(8, dtype=np.float32) + 5
    view = api.from_numpy(data)[0:1:step]
    assert view.shape == (1,)
    with cutile.check_races():
        z = first_tile(api.zeros([4], f32).partition([4]), view).sync()[0]
    assert z.unpartition().to_numpy().tolist()[0] == 5.0


@pytest.mark.parametrize("blocks", [2**31, 2**64, 2**64 + 5])
def test_a_persistent_block_count_past_cudas_limit_is_ct5012_and_keeps_the_partition(
        blocks: int) -> None:
    # A count past 64 bits reached the host registry as an untyped OverflowError, after
    # the partition had been consumed (the tensor was lost).
    p = api.full([64], 3, i8).partition([4])
    with pytest.raises(cutile.BorrowError) as info:
        p.persistent(blocks)
    assert info.value.code == "CT5012"
    assert "at most 2^31 - 1" in str(info.value)
    q = p.persistent(2**31 - 1)  # still live, and the limit itself is a count
    assert q.num_blocks == 2**31 - 1
    np.testing.assert_array_equal(q.unpartition().to_numpy(), np.full(64, 3, np.int8))

"""The GPU code path of the runtime on the null driver (`cutile.runtime.null_gpu`): what the
host asks of the driver for launches, allocations and frees, counted. No kernel runs and no
byte moves there; these tests check the host's decisions (which calls, on which stream),
the GPU tests check the results."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.runtime import streams
from cutile.runtime.null_gpu import Count, null_gpu


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@pytest.fixture
def rt() -> Iterator[Any]:
    with null_gpu() as r:
        yield r


def test_the_null_runtime_is_the_gpu_path(rt: Any) -> None:
    assert rt.gpu and streams.runtime() is rt
    t = api.empty([256], f32)
    assert type(t._alloc).__name__ == "DeviceAllocation" and t.address % 256 == 0


def test_allocating_and_freeing_in_a_loop_calls_the_driver_once(rt: Any) -> None:
    with Count() as c:
        for _ in range(100):
            t = api.empty([1 << 18], f32)
            del t
    assert c.made == {"cuMemAllocFromPoolAsync": 1}  # then the freed block, kept
    s = streams.stats()
    assert s["blocks_reused"] >= 99 and s["cached_bytes"] == 1 << 20
    with Count() as c:  # nearby sizes share the block (512-byte granules)
        t = api.empty([(1 << 18) - 7], f32)
        del t
    assert c.made == {}
    with Count() as c:
        assert rt.release_cached() == 1
    assert c.made == {"cuMemFreeAsync": 1} and rt.cached_bytes() == 0


def test_a_freed_block_goes_back_out_only_on_its_stream(rt: Any) -> None:
    s0, s1 = streams.pool()[:2]
    with cutile.stream(s0):
        t = api.empty([1024], f32)
    freed = t.address
    del t  # nothing pending on it: kept for s0, where it was made
    with cutile.stream(s1), Count() as c:
        other = api.empty([1024], f32)
    assert c.made == {"cuMemAllocFromPoolAsync": 1} and other.address != freed
    with cutile.stream(s0), Count() as c:
        again = api.empty([1024], f32)
    assert c.made == {} and again.address == freed
    del other, again


def test_a_block_freed_under_a_pending_op_is_kept_for_the_op_s_stream(rt: Any) -> None:
    s0, s1 = streams.pool()[:2]
    with cutile.stream(s0):
        x, y = api.empty([1024], f32), api.empty([1024], f32)
        z = api.empty([1024], f32).partition([1024])
    held = x.address
    h = add(z, x, y).submit(s1)  # reads x on s1 (after an event on s0's allocations)
    with Count() as c:
        del h, x  # x dies while the op may still read it: its free is ordered on s1
    assert c.made == {}
    with cutile.stream(s0), Count() as c:
        fresh = api.empty([1024], f32)  # s0 may not reuse it: no order after the op there
    assert c.made == {"cuMemAllocFromPoolAsync": 1} and fresh.address != held
    with cutile.stream(s1), Count() as c:
        after = api.empty([1024], f32)  # s1 may: the op runs before it there
    assert c.made == {} and after.address == held
    del fresh, after, y, z


def test_a_launch_is_one_driver_call_and_cross_stream_work_one_event(rt: Any) -> None:
    s0, s1 = streams.pool()[:2]
    with cutile.stream(s0):
        z = api.zeros([1024], f32).partition([256])
        x, y = api.ones([1024], f32), api.ones([1024], f32)
        z, x, y = add(z, x, y).sync()  # the first launch of this runtime (compiles)
        with Count() as c:
            for _ in range(10):
                z, x, y = add(z, x, y).submit().wait()
    assert c.made == {"cuLaunchKernel": 10, "cuStreamSynchronize": 10}
    with Count() as c:  # done work needs no event, even on another stream
        z, x, y = add(z, x, y).submit(s1).wait()
    assert c.made == {"cuLaunchKernel": 1, "cuStreamSynchronize": 1}
    with Count() as c:  # z still being written on s0: the launch on s1 waits for it, once
        with cutile.stream(s0):
            op = add(z, x, y).then(lambda z, x, y: add(z, x, y).on(s1))
        z, x, y = op.sync()
    made = dict(c.made)
    assert made.pop("cuStreamSynchronize") >= 1
    assert made == {"cuLaunchKernel": 2, "cuEventRecord": 1, "cuStreamWaitEvent": 1}


def test_a_writable_export_waits_for_pending_readers_on_other_streams(rt: Any) -> None:
    # An adversarial review (2026-12-01): the export waited for pending writers only, so a
    # consumer could write `x` while a kernel on another stream still read it.
    s1 = streams.pool()[1]
    x, y = api.empty([1024], f32), api.empty([1024], f32)
    add(api.empty([1024], f32).partition([256]), x, y).submit(s1)  # handed back, unwaited
    lo, hi = x._span_bytes()
    assert rt.conflicts(x._storage, lo, hi, True)       # a pending reader of x
    cap = x.__dlpack__(stream=-1, max_version=(1, 0))
    assert not rt.conflicts(x._storage, lo, hi, True)   # it finished before the hand-over
    del cap

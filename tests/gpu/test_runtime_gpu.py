"""The runtime on a GPU: cross-stream events, host reads and frees ordered after work that
is still running (a long kernel makes a missing wait visible as wrong data), fills on the
device, the memory pool returning to its level, CUDA Graph replays, and `await` leaving
the event loop free during a long kernel."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from gpu_kernels import axpb, rand, smooth

import cutile
from cutile import api
from cutile import dtypes as dt
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.runtime import memory, streams

pytestmark = pytest.mark.gpu

N = 1 << 20
TILE = 1024


def _rand(n: int = N, seed: int = 0) -> np.ndarray:
    return rand(n, seed)


_STEPS: dict[float, int] = {}


def steps_for(seconds: float) -> int:
    """Loop steps for which `smooth` over N elements takes about `seconds` on this GPU."""
    if seconds not in _STEPS:
        x, z = api.from_numpy(_rand()), api.empty([N], f32).partition([TILE])
        z, x, _ = smooth(z, x, 1000).sync()  # compiled and warm
        t0 = time.perf_counter()
        smooth(z, x, 20_000).sync()
        per_step = (time.perf_counter() - t0) / 20_000
        _STEPS[seconds] = max(1000, int(seconds / per_step))
    return _STEPS[seconds]


def _halves(got: np.ndarray, x: np.ndarray) -> None:
    np.testing.assert_allclose(got, x / 2, rtol=1e-5, atol=1e-6)


def test_a_reader_on_another_stream_waits_for_a_long_writer() -> None:
    s1, s2 = cutile.Stream(), cutile.Stream()
    xs = _rand(seed=1)
    x, z, out = api.from_numpy(xs), api.empty([N], f32).partition([TILE]), api.zeros(
        [N], f32).partition([TILE])
    steps = steps_for(0.05)
    cutile.synchronize()
    before = streams.stats()
    readers: list[cutile.DeviceOp] = []

    def read_on_s2(z: api.Partition, x: api.Tensor, n: int) -> cutile.DeviceOp:
        op = axpb(out, z.unpartition(), 1.0)  # reads z while the writer may still run
        readers.append(op)
        return op.on(s2)

    w, _, _ = smooth(z, x, steps).on(s1).then(read_on_s2).sync()
    assert readers[0]._position[0] == s2.slot
    assert streams.stats()["stream_waits"] > before["stream_waits"]
    _halves(w.unpartition().to_numpy() - 1, xs)


def test_a_host_read_waits_for_a_long_writer() -> None:
    xs = _rand(seed=2)
    seen: list[np.ndarray] = []
    steps = steps_for(0.05)

    def peek(z: api.Partition, x: api.Tensor, n: int) -> None:
        seen.append(z.to_numpy())  # the kernel is still running when this is called

    smooth(api.empty([N], f32).partition([TILE]), api.from_numpy(xs), steps).then(peek).sync()
    _halves(seen[0], xs)


def test_memory_freed_under_a_running_kernel_is_not_reused_early() -> None:
    big = 1 << 24
    steps = max(1000, steps_for(0.05) // 16)
    x = api.from_numpy(_rand(big, seed=3))
    # a long writer, dropped unwaited: its output's memory is freed after it finishes
    smooth(api.empty([big], f32).partition([TILE]), x, steps).submit()
    fresh = [api.full([big], 7.0, f32) for _ in range(4)]  # may reuse that memory
    cutile.synchronize()
    for t in fresh:
        assert (t.to_numpy() == 7.0).all()


def test_a_kept_block_is_reused_only_after_the_work_that_used_it() -> None:
    """A freed block the runtime keeps goes back out on its stream only, after the work
    pending on it there: a long kernel reads `x` on s1, `x` is dropped, and an allocation
    of the same size on s1 (the same block) is filled right away; one on s0 gets another
    block. The reader saw x, the filled tensor holds its value."""
    s0, s1 = streams.pool()[:2]
    xs = _rand(seed=6)
    steps = steps_for(0.05)
    with cutile.stream(s0):
        x = api.from_numpy(xs)
    cutile.synchronize()
    kept = streams.stats()["blocks_kept"]
    address = x.address
    z = api.empty([N], f32).partition([TILE])
    h = smooth(z, x, steps).submit(s1)
    del h, x  # the op dropped unwaited hands z back; x, freed under it: kept for s1
    assert streams.stats()["blocks_kept"] == kept + 1
    with cutile.stream(s0):
        elsewhere = api.full([N], -1.0, f32)
    with cutile.stream(s1):
        fresh = api.full([N], 7.0, f32)
    assert fresh.address == address and elsewhere.address != address
    _halves(z.unpartition().to_numpy(), xs)  # (the host read waits for the writer)
    assert (fresh.to_numpy() == 7.0).all() and (elsewhere.to_numpy() == -1.0).all()


FILLS = [
    (dt.f32, -2.5), (dt.f64, 1.0 / 3.0), (dt.f16, 0.1), (dt.bf16, -7.25), (dt.i8, -3),
    (dt.i16, 12345), (dt.i32, -(2**31)), (dt.i64, 2**40 + 7), (dt.u64, 2**63 - 1),
    (dt.bool_, True), (dt.f8e4m3fn, 1.5), (dt.u8, 0xAB),
]


@pytest.mark.parametrize(("dtype", "value"), FILLS, ids=[d.name for d, _ in FILLS])
def test_full_fills_every_element_type_on_the_device(dtype: dt.DType, value: float) -> None:
    for n in (1, 37, 1 << 20):
        got = api.full([n], value, dtype).to_numpy()
        want = np.full(n, value, dtype=dtype.numpy)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_allocating_and_freeing_in_a_loop_returns_the_pool_to_its_level() -> None:
    cutile.synchronize()
    start = memory.pool_usage()
    for _ in range(10_000):
        t = api.empty([1 << 18], f32)  # 1 MiB
        del t
    x = api.from_numpy(_rand(seed=4))
    for _ in range(1000):  # and launches whose outputs are freed
        z, x, _ = axpb(api.empty([N], f32).partition([TILE]), x, 1.0).sync()
        del z
    del x
    cutile.synchronize()
    end = memory.pool_usage()
    assert end["used"] == start["used"], (start, end)
    assert end["reserved"] <= start["reserved"] + (64 << 20), (start, end)
    memory.trim()
    assert memory.pool_usage()["reserved"] <= end["reserved"]


def test_a_thousand_dependent_ops_and_one_sync() -> None:
    a = api.zeros([N], f32).partition([TILE])
    b = api.zeros([N], f32)
    op = axpb(a, b, 1.0)
    for _ in range(999):  # each op writes what the previous one read, and reads its output
        op = op.then(lambda z, x, _a: axpb(x.partition([TILE]), z.unpartition(), 1.0))
    z, _, _ = op.sync()
    assert (z.unpartition().to_numpy() == 1000.0).all()


def _layers() -> tuple[api.Tensor, api.Partition, api.Partition]:
    return (api.from_numpy(_rand(seed=5)), api.zeros([N], f32).partition([TILE]),
            api.zeros([N], f32).partition([TILE]))


def two_layers(x: api.Tensor, h: api.Partition, y: api.Partition) -> object:
    h, x, _ = axpb(h, x, 2.0).sync()
    y, h, _ = axpb(y, h.unpartition(), -0.5).sync()
    return y, h, x


def test_graph_replays_with_new_inputs() -> None:
    g = cutile.graph(two_layers, *_layers())
    for seed in range(20):
        xs = _rand(seed=seed)
        g.replay(xs)
        want = (xs.astype(np.float64) * 2 + 1) * -0.5 + 1
        np.testing.assert_allclose(g.read(0), want, rtol=1e-6, atol=1e-6)
    src = api.from_numpy(_rand(seed=99))
    g.replay(src).wait()
    np.testing.assert_allclose(g.read(0), (_rand(seed=99) * 2 + 1) * -0.5 + 1, rtol=1e-6,
                               atol=1e-6)
    _, _, x = g.into_inner()
    np.testing.assert_array_equal(x.to_numpy(), _rand(seed=99))


def test_a_graph_captures_a_kernel_compiled_inside_the_capture() -> None:
    @cutile.entry
    def negate(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(-load_tile_like(x, z))

    xs = _rand(seed=6)
    g = cutile.graph(negate(api.zeros([N], f32).partition([TILE]), api.from_numpy(xs)))
    g.replay().wait()
    np.testing.assert_array_equal(g.read(0), -xs)


def test_a_graph_replay_orders_a_kernel_on_another_stream() -> None:
    kept: list[api.Tensor] = []
    steps = steps_for(0.02)

    def long_then_view(x: api.Tensor, h: api.Partition) -> object:
        h, x, _ = smooth(h, x, steps).sync()
        kept.append(h.unpartition()[0:TILE])  # a view that escapes the graph
        return h

    xs = _rand(seed=7)
    x, h = api.from_numpy(xs), api.zeros([N], f32).partition([TILE])
    out = api.zeros([TILE], f32).partition([TILE])
    g = cutile.graph(long_then_view, x, h)
    g.replay()
    z, _, _ = axpb(out, kept[0], 1.0).sync_on(cutile.Stream())  # waits on the replay
    _halves(z.unpartition().to_numpy() - 1, xs[:TILE])


def test_await_leaves_the_event_loop_free_during_a_long_kernel() -> None:
    steps = steps_for(0.1)
    x, z = api.from_numpy(_rand(seed=8)), api.empty([N], f32).partition([TILE])

    async def go() -> tuple[int, float]:
        ticks = 0
        done = False

        async def heartbeat() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0.001)

        beat = asyncio.ensure_future(heartbeat())
        t0 = time.perf_counter()
        await smooth(z, x, steps)
        took = time.perf_counter() - t0
        done = True
        await beat
        return ticks, took

    ticks, took = asyncio.run(go())
    assert took > 0.05
    assert ticks >= 0.3 * took / 0.001, (ticks, took)

"""Streams and scheduling on the interpreter's virtual streams: the pool's round-robin
policy, named streams, `then` handing results back before completion, `submit`, and the
ledger's cross-stream ordering (events), host-read waits and stream-ordered frees. The
native runtime makes the same decisions as on the GPU; `stats()` counts them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

import cutile
from cutile import _native, api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.runtime import driver, streams
from cutile.runtime.ownership import ledger, registry


@cutile.entry
def axpb(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a + 1.0)


def _x(n: int = 256, seed: int = 0) -> api.Tensor:
    return api.from_numpy(np.random.default_rng(seed).standard_normal(n).astype(np.float32))


def _out(n: int = 256) -> api.Partition:
    return api.zeros([n], f32).partition([128])


def _delta(before: dict[str, int]) -> dict[str, int]:
    after = streams.stats()
    return {k: after[k] - before[k] for k in before}


@pytest.fixture
def pool3(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh interpreter runtime with a pool of three streams."""
    monkeypatch.setenv("CUTILE_STREAMS", "3")
    monkeypatch.setenv("CUTILE_BACKEND", "interpreter")
    driver.reset_for_tests()
    yield
    monkeypatch.undo()
    driver.reset_for_tests()


def test_ops_take_the_pool_streams_in_turn(pool3: None) -> None:
    pool = [s.slot for s in streams.pool()]
    assert len(pool) == 3
    x = _x()
    slots = []
    for _ in range(6):
        op = axpb(_out(), x, 2.0)
        z, x, _ = op.sync()
        slots.append(op._position[0])
    assert slots == pool + pool
    np.testing.assert_allclose(z.unpartition().to_numpy(), x.to_numpy() * 2 + 1)


def test_a_stream_context_pins_ops_and_restores(pool3: None) -> None:
    x = _x()
    s, t = cutile.Stream("mine"), cutile.Stream()
    with cutile.stream(s):
        op = axpb(_out(), x, 1.0)
        _, x, _ = op.sync()
        assert op._position[0] == s.slot
        with cutile.stream(t):
            inner = axpb(_out(), x, 1.0)
            _, x, _ = inner.sync()
        again = axpb(_out(), x, 1.0)
        _, x, _ = again.sync()
    assert (inner._position[0], again._position[0]) == (t.slot, s.slot)
    after = axpb(_out(), x, 1.0)
    after.sync()
    assert after._position[0] in [p.slot for p in streams.pool()]
    with cutile.stream() as fresh:  # a new stream when none is given
        assert fresh.slot not in (s.slot, t.slot) and fresh.is_open
    assert "mine" in repr(s)


def test_sync_on_and_submit_run_on_the_given_stream() -> None:
    s = cutile.Stream()
    x = _x()
    op = axpb(_out(), x, 3.0)
    z, x, _ = op.sync_on(s)
    assert op._position[0] == s.slot
    op2 = axpb(z, x, 0.5)
    h = op2.submit(s)
    assert op2._position[0] == s.slot and h.op is op2
    z, x, _ = h.wait()
    bad = axpb(z, x, 1.0)
    with pytest.raises(TypeError):
        bad.sync_on(3)  # type: ignore[arg-type]
    _, x, _ = bad.sync()  # the refused call did not run it


def test_submit_holds_the_tensors_until_waited() -> None:
    x = _x(seed=3)
    h = axpb(_out(), x, 2.0).submit()
    with pytest.raises(cutile.BorrowError) as info:
        x.to_numpy()
    assert info.value.code == "CT5001"
    assert h.done()  # the interpreter ran it when it was enqueued
    z, x2, _ = h.wait()
    assert h.wait()[0] is z  # waiting again returns the same results
    np.testing.assert_allclose(z.unpartition().to_numpy(), x2.to_numpy() * 2 + 1)
    assert "finished" in repr(h)

    async def go() -> np.ndarray:
        z, _, _ = await axpb(_out(), x2, -1.0).submit()
        return z.unpartition().to_numpy()

    np.testing.assert_allclose(asyncio.run(go()), -x2.to_numpy() + 1)


def test_then_hands_results_back_early_on_one_stream() -> None:
    x = _x(seed=1)
    seen: list[int] = []

    def second(z: api.Partition, x: api.Tensor, a: float) -> object:
        # handed back before anyone waited: the first op's writes are still in the ledger
        seen.append(streams.stats()["pending_accesses"])
        return axpb(_out(), z.unpartition(), 0.5)

    chain = axpb(_out(), x, 3.0).then(second).then(
        lambda w, z, a: axpb(_out(), w.unpartition(), 2.0))
    w, _, _ = chain.sync()
    assert seen[0] > 0
    np.testing.assert_allclose(w.unpartition().to_numpy(),
                               ((x.to_numpy() * 3 + 1) * 0.5 + 1) * 2 + 1, rtol=1e-6)
    # every op of the chain ran on the stream its first op took
    assert len({op._position[0] for op in chain._started}) == 1
    with pytest.raises(cutile.BorrowError) as info:
        chain.sync()
    assert info.value.code == "CT5020"


def test_a_chain_of_a_thousand_thens_runs_without_recursion() -> None:
    x = _x(16)
    z = api.zeros([16], f32).partition([16])
    cutile.synchronize()
    pending: list[int] = []

    def again(z: api.Partition, x: api.Tensor, a: float) -> object:
        pending.append(streams.stats()["pending_accesses"])
        return axpb(z, x, a)

    chain = axpb(z, x, 1.0)
    for _ in range(999):
        chain = chain.then(again)
    z, x, _ = chain.sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), x.to_numpy() + 1)
    # none of the 1,000 ops was waited for until the end, yet the ledger holds one entry
    # per range (each write of `z` on the chain's stream replaces the one before)
    assert max(pending) <= 4, max(pending)


def test_a_reader_on_another_stream_waits_on_the_writers_event() -> None:
    s1, s2 = cutile.Stream(), cutile.Stream()
    x, out = _x(seed=2), _out()
    cutile.synchronize()  # the allocations are done: only the writer is pending below
    got: list[dict[str, int]] = []

    def read_on_s2(z: api.Partition, x: api.Tensor, a: float) -> object:
        before = streams.stats()
        with cutile.stream(s2):
            w, _, _ = axpb(out, z.unpartition(), 1.0).sync()
        got.append(_delta(before))
        return w

    with cutile.stream(s1):
        w = axpb(_out(), x, 2.0).then(read_on_s2).sync()
    assert got[0]["events_recorded"] == 1 and got[0]["stream_waits"] == 1
    np.testing.assert_allclose(w.unpartition().to_numpy(), (x.to_numpy() * 2 + 1) + 1)


def test_a_dependency_already_in_place_costs_nothing() -> None:
    s1, s2 = cutile.Stream(), cutile.Stream()
    xs = [_x(seed=i) for i in range(3)]
    cutile.synchronize()
    rt = streams.runtime()
    slot1 = s1.slot
    before = streams.stats()
    # three writes on s1, then one reader on s2 of the last: one record, one wait; a second
    # reader of an earlier write on s2 needs nothing more
    for x in xs:
        rt.note(slot1, [(x._storage, 0, x.nbytes, True)])
    rt.note(s2.slot, [(xs[2]._storage, 0, 4, False)])
    rt.note(s2.slot, [(xs[0]._storage, 0, 4, False)])
    d = _delta(before)
    assert (d["events_recorded"], d["stream_waits"]) == (1, 1)


def test_a_host_read_waits_for_a_pending_writer() -> None:
    x, out = _x(seed=4), _out()
    cutile.synchronize()  # the allocations are done: only the kernel is pending below
    read: list[np.ndarray] = []
    waits: list[int] = []

    def peek(z: api.Partition, x: api.Tensor, a: float) -> None:
        before = streams.stats()["host_waits"]
        read.append(z.to_numpy())  # the op that wrote z is still pending
        waits.append(streams.stats()["host_waits"] - before)

    axpb(out, x, 4.0).then(peek).sync()
    assert waits == [1]
    np.testing.assert_allclose(read[0], x.to_numpy() * 4 + 1)


def test_zip_runs_independent_ops_on_different_streams(pool3: None) -> None:
    x1, x2, x3 = _x(seed=5), _x(seed=6), _x(seed=7)
    ops = [axpb(_out(), x, float(i)) for i, x in enumerate((x1, x2, x3))]
    results = cutile.zip(*ops).sync()
    assert len({op._position[0] for op in ops}) == 3
    for i, ((z, _, _), src) in enumerate(zip(results, (x1, x2, x3), strict=True)):
        np.testing.assert_allclose(z.unpartition().to_numpy(), src.to_numpy() * i + 1)


def test_zip_then_join_waits_for_both_streams(pool3: None) -> None:
    xa, xb, out = _x(seed=8), _x(seed=9), api.zeros([256], f32).partition([128])
    cutile.synchronize()
    before = streams.stats()

    def join(ra: tuple[object, ...], rb: tuple[object, ...]) -> object:
        za, zb = ra[0], rb[0]
        return axpb(out, za.unpartition(), 1.0).then(  # type: ignore[attr-defined]
            lambda o, a, _: (o, a, zb))

    o, _, zb = cutile.zip(axpb(_out(), xa, 2.0), axpb(_out(), xb, 3.0)).then(join).sync()
    # the join ran on the last zip member's stream and waited for the other's event
    assert _delta(before)["stream_waits"] >= 1
    np.testing.assert_allclose(o.unpartition().to_numpy(), xa.to_numpy() * 2 + 2, rtol=1e-6)
    np.testing.assert_allclose(zb.unpartition().to_numpy(), xb.to_numpy() * 3 + 1)


def test_a_tensor_dropped_in_flight_is_freed_after_the_work(settled: None) -> None:
    storages = registry().storage_count()
    before = streams.stats()
    # started and dropped unwaited: its tensors are handed back and die with the op, while
    # the ledger still has its writes pending: the frees are ordered after them
    axpb(_out(), _x(seed=10), 2.0).submit()
    assert _delta(before)["ordered_frees"] >= 2
    cutile.synchronize()
    assert registry().storage_count() == storages
    assert streams.stats()["pending_accesses"] <= before["pending_accesses"]


def test_an_external_holder_refuses_reads_and_launches() -> None:
    x = _x(seed=11)
    cutile.synchronize()
    token = _native.next_op_id()
    ledger().acquire(token, [(x._storage, 0, x.nbytes, True)])
    try:
        with pytest.raises(cutile.BorrowError) as info:
            x.to_numpy()
        assert info.value.code == "CT5008"
        op = axpb(_out(), x, 1.0)
        with pytest.raises(cutile.BorrowError) as info:
            op.sync()
        assert info.value.code == "CT5008"
    finally:
        ledger().release(token)
    assert x.to_numpy().shape == (256,)


def test_a_closed_stream_takes_no_work() -> None:
    s = cutile.Stream()
    s.close()
    s.close()  # idempotent
    assert not s.is_open
    x = _x()
    with pytest.raises(cutile.BorrowError) as info:
        axpb(_out(), x, 1.0).sync_on(s)
    assert info.value.code == "CT5061" and "closed" in str(info.value)
    x.to_numpy()  # the failed op gave everything back
    with pytest.raises(ValueError):
        streams.runtime().retire_stream(streams.pool()[0].slot)


def test_a_bad_stream_count_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("0", "65", "many", "-1"):
        monkeypatch.setenv("CUTILE_STREAMS", bad)
        with pytest.raises(cutile.ConfigError) as info:
            streams.pool_size()
        assert info.value.code == "CT8007"
    monkeypatch.setenv("CUTILE_STREAMS", "1")
    assert streams.pool_size() == 1
    monkeypatch.delenv("CUTILE_STREAMS")
    assert streams.pool_size() == streams.DEFAULT_STREAMS


def test_the_ledger_holds_live_work_not_history() -> None:
    rt = _native.Runtime(None, 2)
    keep = [(i + 1, 0, 4096, False) for i in range(1000)]  # 1,000 live tensors read
    rt.note(0, keep)
    for i in range(20_000):  # work nobody waits for: polling drops what completed
        rt.note(i % 2, [((i % 1000) + 1, 0, 64, True)])
    assert len(rt) < 2 * 1024 + 1000
    assert rt.heap_bytes() < 1 << 20, rt.heap_bytes()
    rt.synchronize()
    assert len(rt) == 0 and rt.stats()["polls"] >= 18
    assert rt.heap_bytes() < 1 << 20


def test_await_polls_then_returns_the_results() -> None:
    x = _x(seed=12)

    async def go() -> tuple[np.ndarray, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            ticks += 1

        z, _, _ = await axpb(_out(), x, 5.0)
        await asyncio.gather(tick(), tick())
        return z.unpartition().to_numpy(), ticks

    out, ticks = asyncio.run(go())
    np.testing.assert_allclose(out, x.to_numpy() * 5 + 1)
    assert ticks == 2


def test_on_starts_an_op_on_a_chosen_stream_wherever_it_runs() -> None:
    s1, s2 = cutile.Stream(), cutile.Stream()
    x1, x2 = _x(seed=13), _x(seed=14)
    a, b = axpb(_out(), x1, 2.0), axpb(_out(), x2, 3.0)
    (za, _, _), (zb, _, _) = cutile.zip(a.on(s1), b.on(s2)).sync()
    assert (a._position[0], b._position[0]) == (s1.slot, s2.slot)
    np.testing.assert_allclose(za.unpartition().to_numpy(), x1.to_numpy() * 2 + 1)
    np.testing.assert_allclose(zb.unpartition().to_numpy(), x2.to_numpy() * 3 + 1)
    c = axpb(_out(), x1, 1.0)
    h = c.on(s2).submit()  # `submit` of the wrapper starts the op on s2
    h.wait()
    assert c._position[0] == s2.slot
    with pytest.warns(cutile.OpNeverRunWarning):
        d = axpb(_out(), x2, 1.0).on(s1)
        del d


def test_stream_blocks_of_interleaved_tasks_end_in_any_order() -> None:
    # An adversarial review (2026-12-07): the thread's stream stack was popped last in,
    # first out. Task A's `with cutile.stream()` ended while task B's (entered after it)
    # was open: B's block went on with A's stream, closed when A dropped it, and B's next
    # allocation failed (CT5061) though B did nothing wrong.
    done: dict[str, np.ndarray] = {}

    async def task(name: str, pause: float, seed: int) -> None:
        with cutile.stream() as s:
            await asyncio.sleep(pause)
            assert streams.runtime().current() is not None
            z, _, _ = await axpb(_out(), _x(seed=seed), 2.0)
            done[name] = z.unpartition().to_numpy()
        del s  # A's stream is closed while B's block is still open

    async def both() -> None:
        await asyncio.gather(task("A", 0.0, 1), task("B", 0.05, 2))

    asyncio.run(both())
    for name, seed in (("A", 1), ("B", 2)):
        np.testing.assert_allclose(done[name], _x(seed=seed).to_numpy() * 2 + 1, rtol=1e-6)
    assert streams.runtime().current() is None  # every block ended: back to the pool
    with cutile.Stream() as s, cutile.stream(cutile.Stream()):  # nested blocks still nest
        pass
    assert streams.runtime().current() is None and s.is_open

"""`cutile.graph` on the interpreter: a captured chain of ops replays with new inputs, and
owns every tensor it touches for its whole life. Each test below is a program that tries
to break that (use a handed-in tensor, replay after `into_inner`, free or read while a
replay is in flight, allocate or read during the capture, feed a replay the wrong input,
touch a captured tensor from outside the capture) and fails with a typed error, or is
ordered by the ledger so that no race or stale read can happen."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.runtime import streams
from cutile.runtime.ownership import registry


@cutile.entry
def axpb(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a + 1.0)


N = 256


def _rand(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def _layers() -> tuple[api.Tensor, api.Partition, api.Partition]:
    """An input and two layer outputs, allocated before the capture."""
    return (api.from_numpy(_rand(0)), api.zeros([N], f32).partition([128]),
            api.zeros([N], f32).partition([128]))


def two_layers(x: api.Tensor, h: api.Partition, y: api.Partition) -> Any:
    h, x, _ = axpb(h, x, 2.0).sync()  # returns at once inside a capture
    y, h, _ = axpb(y, h.unpartition(), -0.5).sync()
    return y, h, x


def _close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _expected(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.float64) * 2 + 1) * -0.5 + 1).astype(np.float32)


def test_replay_runs_the_captured_chain_with_new_inputs() -> None:
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    assert g.num_launches == 2 and "alive" in repr(g)
    np.testing.assert_array_equal(g.read(0), 0)  # a capture runs nothing
    g.replay().wait()
    _close(g.read(0), _expected(_rand(0)))
    for seed in (1, 2, 3):  # new values through the graph's own input tensor
        g.replay(_rand(seed)).wait()
        _close(g.read(0), _expected(_rand(seed)))
    src = api.from_numpy(_rand(4))  # or from a cutile tensor, copied on the device
    g.replay(src, None, None).wait()
    _close(g.read(0), _expected(_rand(4)))
    src.to_numpy()  # the source stays the caller's
    y2, _, x2 = g.into_inner()
    _close(y2.unpartition().to_numpy(), _expected(_rand(4)))
    np.testing.assert_array_equal(x2.to_numpy(), _rand(4))
    assert x2 is x  # the same tensors come back


def test_a_graph_of_an_op_replays_it() -> None:
    x = api.from_numpy(_rand(5))
    g = cutile.graph(axpb(api.zeros([N], f32).partition([128]), x, 3.0))
    g.replay(None, _rand(6)).wait()  # the op's arguments are the inputs
    _close(g.read(0), _rand(6) * 3 + 1)
    z, x, a = g.into_inner()
    assert a == 3.0
    _close(z.unpartition().to_numpy(), _rand(6) * 3 + 1)


def test_a_graph_of_a_then_chain() -> None:
    x, h, y = _layers()
    chain = axpb(h, x, 2.0).then(lambda h, x, a: axpb(y, h.unpartition(), -0.5))
    g = cutile.graph(chain)
    g.replay().wait()
    _close(g.read(0), _expected(_rand(0)))


def test_tensors_handed_to_a_graph_cannot_be_used() -> None:
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    attempts = [
        lambda: x.to_numpy(),
        lambda: x[0:8],
        lambda: x.reshape([16, 16]),
        lambda: x.partition([128]),
        lambda: y.unpartition(),
        lambda: axpb(api.zeros([N], f32).partition([128]), x, 1.0),
        lambda: axpb(y, api.zeros([N], f32), 1.0),
    ]
    for attempt in attempts:
        with pytest.raises(cutile.BorrowError) as info:
            attempt()
        assert info.value.code == "CT5001", attempt
        assert "held by `cutile.graph(two_layers)`" in str(info.value)
    with pytest.raises(cutile.BorrowError) as info:
        h.unpartition()  # the capture consumed this handle (`two_layers` unpartitions it)
    assert info.value.code == "CT5002"
    del g  # dropping the graph gives the tensors back
    np.testing.assert_array_equal(x.to_numpy(), _rand(0))


def test_a_spent_graph_cannot_replay_read_or_give_back_again() -> None:
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    g.replay()
    g.into_inner()
    for attempt in (g.replay, lambda: g.read(0), g.into_inner):
        with pytest.raises(cutile.BorrowError) as info:
            attempt()
        assert info.value.code == "CT5062"
    assert "spent" in repr(g)


def test_memory_of_a_graph_lives_as_long_as_the_graph(settled: None) -> None:
    base = registry().storage_count()
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    del x, h, y  # the caller drops every name: the graph still holds the memory
    replay = g.replay(_rand(7))
    assert registry().storage_count() == base + 3
    _close(g.read(0), _expected(_rand(7)))
    replay.wait()
    del g  # gives the tensors back after the replays; nobody holds them: freed
    assert registry().storage_count() == base


def test_dropping_a_graph_waits_for_its_replays() -> None:
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    g.replay()
    before = streams.stats()["host_waits"]
    del g
    assert streams.stats()["host_waits"] == before + 1
    _close(y.unpartition().to_numpy(), _expected(_rand(0)))


def test_a_replay_is_ordered_by_the_ranges_of_its_capture() -> None:
    """The capture's ranges, merged per tensor and kind of access, are what each replay is
    ordered and recorded by (held natively: a replay converts nothing)."""
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    ranges = g._accesses.tuples()
    # x read; h written by the first launch and read by the second; y written
    assert len(g._accesses) == len(ranges) == 4
    assert sorted(w for *_, w in ranges) == [False, False, True, True]
    assert all(lo < hi for _, lo, hi, _ in ranges)
    g.replay(_rand(5))
    _close(g.read(0).reshape(-1), _expected(_rand(5)))


def test_a_view_kept_from_the_capture_is_ordered_after_replays() -> None:
    x, h, y = _layers()
    kept: list[api.Tensor] = []

    def keep_a_view(x: api.Tensor, h: api.Partition, y: api.Partition) -> Any:
        out = two_layers(x, h, y)
        kept.append(out[1][0:16])  # a view of `h` that escapes the capture
        return out

    g = cutile.graph(keep_a_view, x, h, y)
    g.replay(_rand(8))
    before = streams.stats()["host_waits"]
    # not handed in, so not held: reading it waits for the replay that writes it
    got = kept[0].to_numpy()
    assert streams.stats()["host_waits"] == before + 1
    _close(got, _rand(8)[:16] * 2 + 1)
    # and a kernel on another stream reading it is ordered after the next replay
    out = api.zeros([16], f32).partition([16])
    cutile.synchronize()
    g.replay(_rand(9))
    before = streams.stats()
    z, _, _ = axpb(out, kept[0], 1.0).sync_on(cutile.Stream())
    assert streams.stats()["stream_waits"] == before["stream_waits"] + 1
    _close(z.unpartition().to_numpy(), (_rand(9)[:16] * 2 + 1) + 1)


def test_reading_what_the_capture_writes_is_refused_during_the_capture() -> None:
    x, h, y = _layers()
    codes: list[str] = []

    def peek(x: api.Tensor, h: api.Partition, y: api.Partition) -> Any:
        h, x, _ = axpb(h, x, 2.0).sync()
        for read in (lambda: h.to_numpy(), lambda: x.to_numpy()):
            try:
                read()
            except cutile.BorrowError as err:
                codes.append(err.code)
        with cutile.stream(cutile.Stream()):  # another stream, outside the capture
            with pytest.raises(cutile.BorrowError) as info:
                axpb(y, h.unpartition(), 1.0).sync()
            codes.append(info.value.code)
        return x

    cutile.graph(peek, x, h, y)
    # the write is refused (nothing ran), the read-only input is readable
    assert codes == ["CT5060", "CT5060"]


def test_what_cannot_be_captured_is_refused() -> None:
    x, h, y = _layers()
    op = axpb(h, x, 1.0)
    h, x, _ = op.sync()
    with pytest.raises(cutile.BorrowError) as info:
        cutile.graph(op)
    assert info.value.code == "CT5065" and "already ran" in str(info.value)
    with pytest.raises(cutile.BorrowError) as info:
        cutile.graph(42)  # type: ignore[arg-type]
    assert info.value.code == "CT5065"
    with pytest.raises(cutile.BorrowError) as info:
        cutile.graph(lambda: None)
    assert info.value.code == "CT5065" and "no op" in str(info.value)

    def nested(x: api.Tensor, h: api.Partition, y: api.Partition) -> Any:
        with pytest.raises(cutile.BorrowError) as info:
            cutile.graph(two_layers, x, h, y)
        assert info.value.code == "CT5065"
        return two_layers(x, h, y)

    g = cutile.graph(nested, x, h, y)
    g.replay().wait()
    _close(g.read(0), _expected(_rand(0)))


def test_a_failed_capture_gives_everything_back() -> None:
    x, h, y = _layers()

    def fails(x: api.Tensor, h: api.Partition, y: api.Partition) -> Any:
        axpb(h, x, 2.0).sync()
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        cutile.graph(fails, x, h, y)
    np.testing.assert_array_equal(x.to_numpy(), _rand(0))
    np.testing.assert_array_equal(y.unpartition().to_numpy(), 0)  # nothing ran
    assert streams.runtime().current() is None


def test_replay_inputs_that_do_not_fit_are_refused_before_any_copy() -> None:
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    g.replay().wait()
    bad = [
        (_rand(1), None, None, None),  # four inputs for three
        (np.zeros(N // 2, np.float32),),  # shape
        (np.zeros(N, np.float64),),  # element type
        ([1.0] * N,),  # not an array
        (api.zeros([2 * N], f32)[::2],),  # a strided source
    ]
    for inputs in bad:
        with pytest.raises(cutile.BorrowError) as info:
            g.replay(*inputs)
        assert info.value.code == "CT5064", inputs
    with pytest.raises(cutile.BorrowError):
        g.replay(_rand(2), np.zeros(3, np.float32))  # the first is fine, the second not
    _close(g.read(0), _expected(_rand(0)))  # nothing copied


def test_a_replay_input_held_by_an_op_or_consumed_is_refused() -> None:
    # Host rule 3: a tensor moved into an op is dead until the op hands it back; a replay
    # read it (and a consumed one) as if the program still held it.
    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)
    g.replay().wait()
    src = api.from_numpy(_rand(1))
    op = axpb(api.zeros([N], f32).partition([128]), src, 2.0)
    with pytest.raises(cutile.BorrowError) as info:
        g.replay(src)
    assert info.value.code == "CT5001"
    op.sync()
    p = api.from_numpy(_rand(1))
    p.partition([128])
    with pytest.raises(cutile.BorrowError) as info:
        g.replay(p)
    assert info.value.code == "CT5002"
    _close(g.read(0), _expected(_rand(0)))  # nothing copied


def test_replays_can_be_awaited() -> None:
    import asyncio

    x, h, y = _layers()
    g = cutile.graph(two_layers, x, h, y)

    async def go() -> np.ndarray:
        await g.replay(_rand(11))
        return g.read(0)

    _close(asyncio.run(go()), _expected(_rand(11)))
    r = g.replay()
    assert r.done() and "done" in repr(r)
    g.wait()


def test_a_replay_does_not_write_memory_another_library_may_see() -> None:
    # An adversarial review (2026-12-01): the copy-in of a replay wrote an input that was
    # exported (numpy saw 7.0 appear), or an input imported shared (the user's own array).
    x = api.from_numpy(_rand(1))
    exported = np.from_dlpack(x)
    before = exported.copy()
    g = cutile.graph(axpb(api.zeros([N], f32).partition([128]), x, 2.0))
    with pytest.raises(cutile.BorrowError) as info:
        g.replay(None, np.full(N, 7.0, np.float32))
    assert info.value.code == "CT5041"
    np.testing.assert_array_equal(exported, before)
    del exported          # the export ends: the replay may write again
    g.replay(None, np.full(N, 7.0, np.float32)).wait()
    _close(g.read(0), np.full(N, 15.0, np.float32))

    mine = _rand(2)
    g = cutile.graph(axpb(api.zeros([N], f32).partition([128]), mine, 2.0))  # imported shared
    with pytest.raises(cutile.BorrowError) as info:
        g.replay(None, np.full(N, 7.0, np.float32))
    assert info.value.code == "CT5040"
    np.testing.assert_array_equal(mine, _rand(2))


def test_a_replay_does_not_write_an_output_exported_since_the_capture() -> None:
    def capture(x: api.Tensor, z: api.Partition) -> Any:
        z, x, _ = axpb(z, x, 2.0).sync()
        kept.append(z.unpartition())
        return z

    kept: list[Any] = []
    g = cutile.graph(capture, api.from_numpy(_rand(3)), api.zeros([N], f32).partition([128]))
    seen = np.from_dlpack(kept[0])
    with pytest.raises(cutile.BorrowError) as info:
        g.replay()
    assert info.value.code == "CT5041"
    del seen
    g.replay().wait()


def test_memory_a_graph_uses_cannot_be_written_through_a_handle_made_in_the_capture() -> None:
    # An adversarial review (2026-12-07): a graph held only the handles live at the end
    # of its capture. Its output, partitioned anew during the capture and kept, could be
    # written by the caller's launch; the next replay silently overwrote what it wrote.
    kept: list[Any] = []

    def capture(x: api.Tensor, z: api.Partition) -> Any:
        z, x, _ = axpb(z, x, 2.0).sync()
        kept.append(z.unpartition().partition([64]))  # not handed in: not held
        return x

    g = cutile.graph(capture, api.from_numpy(_rand(3)), api.zeros([N], f32).partition([128]))
    mine = api.from_numpy(_rand(4))
    with pytest.raises(cutile.BorrowError) as info:
        axpb(kept[0], mine, 5.0)
    assert info.value.code == "CT5001"
    assert "held by `cutile.graph(capture)`" in str(info.value)
    whole = kept.pop().unpartition()
    with pytest.raises(cutile.BorrowError) as info:
        whole.partition([128])
    assert info.value.code == "CT5001"
    g.replay().wait()
    _close(whole.to_numpy(), _rand(3) * 2 + 1)  # reading it is ordered, and allowed
    del g  # the graph gives its memory back: the caller may write it now
    z, _, _ = axpb(whole.partition([128]), mine, 5.0).sync()
    _close(z.unpartition().to_numpy(), _rand(4) * 5 + 1)

"""Collectives (`cutile.distributed`) as ops that own their tensors, on the interpreter:
a world of one process, where they are local (an all-gather copies, an all-reduce or a
broadcast of one rank changes nothing) and need no torch. The ledger's hold of work that
another library enqueues (NCCL through torch, `begin_external`/`end_external`) is tested
here on the native runtime directly; the NCCL path itself runs in tests/gpu."""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, bf16, f32, i16, i32, load_tile_like
from cutile.distributed import all_gather, all_reduce, broadcast
from cutile.runtime import streams


@cutile.entry
def scale(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) * 2.0)


pytestmark = pytest.mark.usefixtures("one_process_two_devices")


def _rand(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_a_world_of_one_process_needs_no_torch() -> None:
    w = cutile.distributed.init()
    assert (w.rank, w.size, w.backend) == (0, 1, "local")
    assert cutile.distributed.init() is w and cutile.distributed.world() is w
    cutile.distributed.barrier()  # nothing to wait for


def test_local_collectives_give_a_world_of_ones_results() -> None:
    xs = _rand((6, 5))
    out = api.full([6, 5], np.nan, f32)
    out, x = all_gather(out, api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(out.to_numpy(), xs)
    for op in ("sum", "prod", "min", "max", "avg"):
        (x,) = all_reduce(x, op).sync()
        np.testing.assert_array_equal(x.to_numpy(), xs)
    (x,) = broadcast(x, 0).sync()
    np.testing.assert_array_equal(x.to_numpy(), xs)


def test_a_collective_is_a_device_op_holding_its_tensors() -> None:
    xs = _rand((4, 8))
    x, out = api.from_numpy(xs), api.empty([4, 8], f32)
    op = all_gather(out, x)
    assert isinstance(op, cutile.DeviceOp) and op.holding and op.device == 0
    for use in (lambda: x.to_numpy(), lambda: out.partition([4, 8]), lambda: all_reduce(out)):
        with pytest.raises(cutile.BorrowError) as err:
            use()
        assert err.value.code == "CT5001" and "`all_gather` (op #" in err.value.message
    # a chain: the kernel reads what the gather wrote, ordered by the ledger, no wait
    z = api.empty([32], f32).partition([8])
    chained = op.then(lambda out, x: scale(z, out.reshape([32])))
    z, flat = chained.sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs.reshape(-1) * 2)
    assert not op.holding and flat.to_numpy().tolist() == xs.reshape(-1).tolist()

    async def run() -> tuple[object, ...]:
        return await all_reduce(api.from_numpy(xs), "max")  # type: ignore[no-any-return]

    (y,) = asyncio.run(run())
    np.testing.assert_array_equal(y.to_numpy(), xs)
    h = broadcast(api.from_numpy(xs)).submit()
    (y,) = h.wait()
    np.testing.assert_array_equal(y.to_numpy(), xs)


def test_a_host_read_waits_for_a_pending_collective() -> None:
    xs = _rand((8, 4))
    out = api.empty([8, 4], f32)
    alias = out[:]  # a view kept by the program, outside the op
    h = all_gather(out, api.from_numpy(xs)).submit()
    waits = streams.stats()["host_waits"]
    np.testing.assert_array_equal(alias.to_numpy(), xs)  # waits for the gather
    assert streams.stats()["host_waits"] == waits + 1
    h.wait()


def test_a_collective_dropped_before_it_ran_warns_and_keeps_its_tensors() -> None:
    x = api.from_numpy(_rand((2, 2)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op = all_reduce(x)
        del op
    assert any(issubclass(w.category, cutile.OpNeverRunWarning) for w in caught)
    with pytest.raises(cutile.BorrowError) as err:
        x.to_numpy()
    assert err.value.code == "CT5009"


def test_collective_arguments_that_do_not_fit_are_typed_errors() -> None:
    x = api.from_numpy(_rand((4, 6)))
    cases = [
        lambda: all_gather(api.empty([5, 6], f32), x),
        lambda: all_gather(api.empty([4, 6], bf16), x),
        lambda: all_gather(np.zeros((4, 6), np.float32), x),
        lambda: all_gather(api.empty([4, 3], f32), x[:, ::2]),
        lambda: all_reduce(x, "median"),
        lambda: all_reduce(api.zeros([4], i32), "avg"),
        lambda: all_reduce(api.zeros([4], i16)),
        lambda: broadcast(x, 1),
        lambda: broadcast(x, True),
    ]
    for case in cases:
        with pytest.raises(cutile.LaunchError) as err:
            case()
        assert err.value.code == "CT6131", err.value
    x.partition([4, 6])  # none of them took it
    with pytest.raises(cutile.LaunchError) as err:
        all_gather(api.empty([4, 6], f32, device=1), api.from_numpy(_rand((4, 6))))
    assert err.value.code == "CT6113"


def test_a_collective_cannot_be_captured_into_a_graph() -> None:
    out, x = api.empty([4], f32), api.from_numpy(_rand((4,)))
    with pytest.raises(cutile.BorrowError) as err:
        cutile.graph(lambda out, x: all_gather(out, x).sync(), out, x)
    assert err.value.code == "CT5066"


def test_several_processes_need_nccl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(cutile.DistributedError) as err:
        cutile.distributed.init()
    assert err.value.code == "CT6130" and "interpreter" in err.value.message


def test_work_another_library_enqueues_is_held_until_it_is_on_its_stream() -> None:
    """The two steps of an NCCL collective on the ledger: between ordering the stream and
    the work landing on it, conflicting work and host access are refused, never ordered
    before a position the work has not reached; afterwards they wait for it."""
    rt = streams.runtime()
    slot = rt.pool_of(0)[1]
    xs = _rand((256,))
    t = api.from_numpy(xs)
    cutile.synchronize()  # the copy in is done: only the external work is pending below
    view = t[:]
    storage, lo, hi = view._ledger_range()
    token = cutile.runtime.ownership.next_op_id()
    rt.begin_external(token, slot, [(storage, lo, hi, True)], "the collective `all_reduce`")
    with pytest.raises(cutile.BorrowError) as err:
        view.to_numpy()
    assert err.value.code == "CT5008"
    assert f"being written by the collective `all_reduce` (op #{token})" in str(err.value)
    with pytest.raises(cutile.BorrowError) as err:
        scale(api.empty([256], f32).partition([128]), view).sync()
    assert err.value.code == "CT5008"
    rt.end_external(token, slot, [(storage, lo, hi, True)])
    waits = streams.stats()["host_waits"]
    np.testing.assert_array_equal(view.to_numpy(), xs)
    assert streams.stats()["host_waits"] == waits + 1
    # an aborted one leaves nothing behind
    token = cutile.runtime.ownership.next_op_id()
    rt.begin_external(token, slot, [(storage, lo, hi, True)])
    assert rt.abort_external(token) == 1
    z, _ = scale(api.empty([256], f32).partition([128]), view).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs * 2)

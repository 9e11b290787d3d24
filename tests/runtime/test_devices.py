"""Devices on the interpreter, which models two (`CUTILE_INTERPRETER_DEVICES=2`): host
memory tagged with an ordinal, so that the bookkeeping runs here exactly as on GPUs (the
same native runtime: per-device stream pools, the launch device check, the ledger across
devices). Every tensor knows its device; the current device is the thread's
(`cutile.device(i)`) else the default; a launch runs on its tensors' device and refuses
two (CT6113) without taking any tensor; bad ordinals are typed errors (CT5036); a copy
between devices is ledger work (ordered after the source's writers on another device's
stream, a free of the source after it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.runtime import driver, streams


@cutile.entry
def axpb(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a + 1.0)


@pytest.fixture(autouse=True)
def two_devices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CUTILE_INTERPRETER_DEVICES", "2")
    monkeypatch.delenv("CUTILE_DEVICE", raising=False)
    driver.reset_for_tests("interpreter")
    yield
    monkeypatch.undo()
    driver.reset_for_tests(None)


def _rand(n: int = 512, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def test_tensors_know_their_device_and_builders_take_one() -> None:
    assert cutile.device_count() == 2 and cutile.current_device() == 0
    assert api.zeros([4]).device == 0
    for make in (lambda: api.empty([4], device=1), lambda: api.full([4], 2.0, device=1),
                 lambda: api.ones([4], f32, device=1), lambda: api.arange(4, device=1),
                 lambda: api.from_numpy(_rand(4), device=1)):
        t = make()
        assert t.device == 1 and "device=1" in repr(t)
    x = api.from_numpy(_rand(8), device=1)
    assert x[2:6].device == 1 and x.reshape([2, 4]).device == 1
    assert x.partition([4]).device == 1


def test_the_current_device_is_the_threads_then_the_default() -> None:
    seen: list[int] = []

    def other_thread() -> None:
        seen.append(cutile.current_device())
        seen.append(api.zeros([2]).device)

    with cutile.device(1) as d:
        assert d == 1 and cutile.current_device() == 1
        assert api.zeros([2]).device == 1
        with cutile.device(0):
            assert api.zeros([2]).device == 0
        assert api.zeros([2]).device == 1
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen == [0, 0]  # another thread keeps the default
    assert cutile.current_device() == 0
    cutile.set_device(1)
    try:
        assert cutile.current_device() == 1 and api.zeros([2]).device == 1
    finally:
        cutile.set_device(0)


@pytest.mark.parametrize("bad", [2, -1, True, "1", 1.0, None])
def test_bad_ordinals_are_typed_errors(bad: Any) -> None:
    x = api.zeros([4])
    calls = [lambda: api.zeros([4], device=bad), lambda: cutile.set_device(bad),
             lambda: x.to(bad), lambda: cutile.Stream(device=bad)]
    if not callable(bad):
        calls.append(lambda: cutile.device(bad))
    for call in calls:
        if bad is None and call is not calls[1] and call is not calls[2]:
            continue  # None means "the current device" where a device is optional
        with pytest.raises(cutile.TensorError) as err:
            call()
        assert err.value.code == "CT5036", err.value
        assert "numbered 0 to 1" in err.value.message


def test_a_launch_runs_on_the_device_of_its_tensors() -> None:
    xs = _rand()
    x = api.from_numpy(xs, device=1)
    op = axpb(api.empty([512], f32, device=1).partition([128]), x, 3.0)
    assert op.device == 1
    z, x, _ = op.sync()
    rt = streams.runtime()
    assert op._position[0] in rt.pool_of(1) and op._position[0] not in rt.pool_of(0)
    assert z.device == 1
    np.testing.assert_allclose(z.unpartition().to_numpy(), xs * 3 + 1, rtol=1e-6)


def test_tensors_of_two_devices_are_refused_and_nothing_is_taken() -> None:
    xs = _rand()
    x = api.from_numpy(xs, device=1)
    z = api.empty([512], f32, device=0).partition([128])
    with pytest.raises(cutile.LaunchError) as err:
        axpb(z, x, 2.0)
    e = err.value
    assert e.code == "CT6113" and e.kernel == "axpb" and e.tensor == "x"
    assert "`z` on device 0 and `x` on device 1" in e.message
    assert "x.to(0)" in (e.hint or "")
    # nothing was moved in: both tensors work, and the fix in the hint does
    z, _, _ = axpb(z, x.to(0), 2.0).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), xs * 2 + 1, rtol=1e-6)
    assert x.to_numpy().tolist() == xs.tolist()


def test_to_copies_between_devices_keeping_the_layout() -> None:
    xs = _rand(64).reshape(8, 8)
    x = api.from_numpy(xs)
    assert x.to(0) is x  # already there
    view = x[1:7:2, ::3]
    moved = view.to(1)
    assert moved.device == 1 and moved.shape == view.shape and moved.strides == view.strides
    np.testing.assert_array_equal(moved.to_numpy(), xs[1:7:2, ::3])
    np.testing.assert_array_equal(moved.to(0).to_numpy(), xs[1:7:2, ::3])
    # a tensor moved into an op cannot be copied meanwhile
    z = api.empty([64], f32).partition([64])
    flat = x.reshape([64])
    op = axpb(z, flat, 1.0)
    with pytest.raises(cutile.BorrowError) as err:
        flat.to(1)
    assert err.value.code == "CT5001"
    op.sync()


def test_a_copy_waits_for_the_writer_on_the_other_device_and_the_free_for_the_copy() -> None:
    xs = _rand()
    x = api.from_numpy(xs)
    cutile.synchronize()
    z = api.empty([512], f32).partition([128])
    cutile.synchronize()
    before = streams.stats()
    # `then` hands the result on before the device finished: the write is pending on a
    # device-0 stream when the copy, on a device-1 stream, is enqueued: it waits for it
    copy = axpb(z, x, 2.0).then(lambda z, x, a: z.unpartition().to(1)).sync()
    after = streams.stats()
    assert after["stream_waits"] - before["stream_waits"] == 1  # device 1 waits for 0
    assert copy.device == 1
    rt = streams.runtime()
    np.testing.assert_allclose(copy.to_numpy(), xs * 2 + 1, rtol=1e-6)
    # the source dropped while the copy's read may be pending: its free is ordered after
    y = api.from_numpy(xs)
    cutile.synchronize()
    frees = streams.stats()["ordered_frees"]
    moved = y.to(1)
    del y
    assert streams.stats()["ordered_frees"] == frees + 1
    np.testing.assert_array_equal(moved.to_numpy(), xs)
    assert len(rt.pool_of(1)) == len(rt.pool_of(0))


def test_a_stream_is_current_for_work_on_its_own_device() -> None:
    s1 = cutile.Stream("on one", device=1)
    assert s1.device == 1 and "device=1" in repr(s1)
    rt = streams.runtime()
    with cutile.stream(s1):
        op0 = axpb(api.empty([256], f32, device=0).partition([128]),
                   api.from_numpy(_rand(256), device=0), 1.0)
        op1 = axpb(api.empty([256], f32, device=1).partition([128]),
                   api.from_numpy(_rand(256), device=1), 1.0)
        op0.sync()
        op1.sync()
    assert op1._position[0] == s1.slot
    assert op0._position[0] in rt.pool_of(0)


def test_an_import_of_host_memory_belongs_to_the_current_device() -> None:
    a = _rand(16)
    with cutile.device(1):
        t = cutile.from_dlpack(a)
    assert t.device == 1
    np.testing.assert_array_equal(t.to_numpy(), a)
    z, t, _ = axpb(api.empty([16], f32, device=1).partition([16]), t, 2.0).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), a * 2 + 1, rtol=1e-6)


def test_a_raw_kernel_refuses_tensors_of_two_devices() -> None:
    k = cutile.unsafe.raw_kernel("__global__ void k(float* y, const float* x) {}", "k",
                                 [cutile.unsafe.write("y", f32), cutile.unsafe.read("x", f32)],
                                 block=128)
    y, x = api.zeros([8], device=0), api.zeros([8], device=1)
    with pytest.raises(cutile.LaunchError) as err:
        k(y, x, grid=1)
    assert err.value.code == "CT6113" and err.value.tensor == "x"
    y.partition([8])  # not taken: still unique and live
    assert x.to_numpy().tolist() == [0.0] * 8

"""Allocations on the interpreter: every allocation is a registry storage and a write in
the ledger on its stream (a first use on another stream waits for it), fills hold the
value of every element type, storages go when the memory does, and nothing is allocated
or written from the host during a graph capture."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import cutile
from cutile import api
from cutile import dtypes as dt
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.runtime import memory, streams
from cutile.runtime.ownership import registry


@cutile.entry
def copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))


FILLS = [
    (dt.f32, -2.5), (dt.f64, 1.0 / 3.0), (dt.f16, 0.1), (dt.bf16, -7.25), (dt.i8, -3),
    (dt.i16, 12345), (dt.i32, -(2**31)), (dt.i64, 2**40 + 7), (dt.u8, 255),
    (dt.u64, 2**63 - 1), (dt.bool_, True), (dt.f8e4m3fn, 1.5),
]


@pytest.mark.parametrize(("dtype", "value"), FILLS, ids=[d.name for d, _ in FILLS])
def test_full_holds_the_value_of_every_element_type(dtype: dt.DType, value: float) -> None:
    t = api.full([37], value, dtype)  # an odd count: no element is left out
    got = t.to_numpy()
    want = np.full(37, value, dtype=dtype.numpy)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_from_numpy_keeps_a_0d_array_0d() -> None:
    value = np.random.default_rng(3).standard_normal(())
    t = api.from_numpy(np.array(value, np.float64))
    assert t.shape == () and t.to_numpy().shape == ()
    assert t.to_numpy() == value


def test_zeros_and_ones_fill_with_random_data_around() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(100).astype(np.float32)
    t = api.from_numpy(a)
    z, o = api.zeros([100], dt.bf16), api.ones([3, 5], dt.i32)
    np.testing.assert_array_equal(t.to_numpy(), a)
    assert (z.to_numpy() == np.zeros(100, ml_dtypes.bfloat16)).all()
    assert (o.to_numpy() == 1).all() and o.to_numpy().shape == (3, 5)


def test_every_allocation_is_a_storage_that_goes_with_its_memory(settled: None) -> None:
    base = registry().storage_count()
    ts = [api.zeros([64], f32) for _ in range(10)]
    assert registry().storage_count() == base + 10
    views = [t[2:10] for t in ts]  # views share their tensor's storage
    assert registry().storage_count() == base + 10
    del ts
    assert registry().storage_count() == base + 10  # the views keep the memory
    del views
    assert registry().storage_count() == base
    assert memory.pool_usage()["storages"] == base


def test_a_first_use_on_another_stream_waits_for_the_allocation() -> None:
    s = cutile.Stream()
    x = api.from_numpy(np.arange(128, dtype=np.float32))  # on the pool's first stream
    z = api.empty([128], f32).partition([128])
    before = streams.stats()
    z, x = copy(z, x).sync_on(s)[:2]
    assert streams.stats()["stream_waits"] - before["stream_waits"] == 1
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(128))


def test_allocations_follow_the_current_stream() -> None:
    s = cutile.Stream()
    with cutile.stream(s):
        t = api.zeros([8], f32)
    assert t._alloc.slot == s.slot
    assert api.zeros([8], f32)._alloc.slot == streams.pool()[0].slot


def test_an_allocation_during_a_capture_is_refused() -> None:
    x = api.from_numpy(np.arange(128, dtype=np.float32))
    z = api.zeros([128], f32).partition([128])
    seen: list[str] = []

    def step(z: api.Partition, x: api.Tensor) -> object:
        for make in (lambda: api.zeros([4], f32), lambda: api.from_numpy(np.ones(4)),
                     lambda: x._alloc.write(0, np.zeros(4, np.float32))):
            with pytest.raises(cutile.BorrowError) as info:
                make()
            seen.append(info.value.code)
        return copy(z, x)

    g = cutile.graph(step, z, x)
    assert seen == ["CT5063"] * 3
    g.replay().wait()
    np.testing.assert_array_equal(g.read(0), np.arange(128))

"""A `range` bound that does not fit the i32 loop counter: a product `a * b` of scalars the
device computes in i32 and that may wrap, or an i64 bound the lowering truncates. The loop
runs from the device's value, not the exact one, so the checker takes the exact bound only
under a launch predicate that it fits 32 bits (obligation `loop-bounds-fit`), or keeps the
device check of every index built from the loop counter. (Before, the launch checked
`0 <= a * b` over the integers: a = b = 46341 got through, and the device's start,
-2147479015, read and wrote far outside the tensors; an i64 start of 2**32 - 5 ran from -5.)

Every launch here runs on the interpreter under the race and bounds detector, which reports
an access outside a tensor or a partition's index space (CT6913)."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Mut, Tensor, f32, full, i32, i64, zeros
from cutile.errors import InterpreterError

rng = np.random.default_rng(2024)


@pytest.fixture(autouse=True)
def _interpreted(interpreter: None) -> None:
    """On the interpreter, whose detector sees every access (conftest.py)."""


@cutile.entry
def sum_from_product(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], a: i32, b: i32, n: i32):
    acc = zeros((16,), f32)
    for i in range(a * b, n):
        acc += x.load_tile((16,), (i,))
    z.store(acc)


@cutile.entry
def sum_to_product(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], a: i32, b: i32):
    acc = zeros((16,), f32)
    for i in range(0, a * b):
        acc += x.load_tile((16,), (i,))
    z.store(acc)


@cutile.entry
def sum_from_i64(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], s: i64, n: i32):
    acc = zeros((16,), f32)
    for j in range(s, n):
        acc += x.load_tile((16,), (j,))
    z.store(acc)


@cutile.entry
def sub_tiles_from_product(z: Mut[Tensor[i32, [8]]], a: i32, b: i32, n: i32):
    p = z.partition_mut((4,))
    for j in range(a * b, n):
        p.store(full((4,), j + 1, i32), (j,))


@cutile.entry
def sum_from_data_product(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]],
                          s: Tensor[i32, [1]], a: i32, n: i32):
    first = s.load_tile((1,), (0,)).item()
    acc = zeros((16,), f32)
    for i in range(first * a, n):
        acc += x.load_tile((16,), (i,))
    z.store(acc)


def _wraps(a: int, b: int) -> int:
    """`a * b` as the device's i32 multiply computes it."""
    return int(np.array([a], np.int64)[0] * b + 2**31) % 2**32 - 2**31


def _tiles(count: int) -> tuple[np.ndarray, object]:
    data = rng.standard_normal(16 * count).astype(np.float32)
    return data, api.from_numpy(data)


def _obligation(kernel: cutile.EntryKernel, kind: str, about: str = "") -> object:
    found = [o for o in kernel.check_report() if o.kind == kind and about in o.description]
    assert len(found) == 1, kernel.check_report()
    return found[0]


def test_a_product_loop_start_runs_its_exact_range() -> None:
    data, x = _tiles(10)
    z = api.full([16], np.nan, f32).partition([16])
    with cutile.check_races():
        z = sum_from_product(z, x, 2, 3, 9).sync()[0]
    ref = data.astype(np.float64).reshape(10, 16)[6:9].sum(axis=0)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-6)


def test_the_start_fits_by_a_launch_predicate_not_over_the_integers() -> None:
    fit = _obligation(sum_from_product, "loop-bounds-fit")
    assert fit.discharged == "launch"
    assert fit.predicate == "0 <= a * b + 2147483648 && a * b <= 2147483647"
    assert "`range(a * b, n)`" in fit.description
    load = _obligation(sum_from_product, "bounds")
    assert load.discharged == "launch" and "0 <= a * b" in load.predicate


def test_a_start_that_wraps_is_refused_before_any_block_runs() -> None:
    assert 46341 * 46341 >= 0 and _wraps(46341, 46341) < 0  # the exact check passed
    data, x = _tiles(4)
    z = api.zeros([16], f32).partition([16])
    with cutile.check_races(), pytest.raises(cutile.LaunchError) as info:
        sum_from_product(z, x, 46341, 46341, 2)
    assert info.value.code == "CT6200"
    assert "a = 46341, b = 46341" in info.value.message
    assert "the bounds of `range(a * b, n)` fit the 32-bit loop counter" in info.value.message
    assert np.array_equal(z.unpartition().to_numpy(), np.zeros(16, np.float32))
    assert np.array_equal(x.to_numpy(), data)


def test_a_stop_that_wraps_from_negative_to_positive_is_refused() -> None:
    # -4 * 1073741823 = -2**32 + 4: no iteration over the integers, four on the device
    assert _wraps(-4, 1073741823) == 4
    _, x = _tiles(2)
    with cutile.check_races():
        sum_to_product(api.zeros([16], f32).partition([16]), x, 1, 2).sync()
    with cutile.check_races(), pytest.raises(cutile.LaunchError) as info:
        sum_to_product(api.zeros([16], f32).partition([16]), x, -4, 1073741823)
    assert info.value.code == "CT6200" and "range(0, a * b)" in info.value.message


def test_an_i64_start_the_counter_would_truncate_is_refused() -> None:
    data, x = _tiles(4)
    with cutile.check_races():
        z = sum_from_i64(api.zeros([16], f32).partition([16]), x, 1, 3).sync()[0]
    ref = data.astype(np.float64).reshape(4, 16)[1:3].sum(axis=0)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-6)
    # 2**32 - 5 >= 0 over the integers; as the i32 counter it is -5
    with cutile.check_races(), pytest.raises(cutile.LaunchError) as info:
        sum_from_i64(api.zeros([16], f32).partition([16]), x, 2**32 - 5, 3)
    assert info.value.code == "CT6200" and "s = 4294967291" in info.value.message


def test_sub_tile_stores_from_a_product_start() -> None:
    # The write case: a wrapped start would store outside the block's own tile.
    assert _obligation(sub_tiles_from_product, "subtile-bounds").discharged == "launch"
    with cutile.check_races():
        z = sub_tiles_from_product(api.zeros([32], i32).partition([8]), 1, 1, 2).sync()[0]
    assert z.unpartition().to_numpy().tolist() == [0, 0, 0, 0, 2, 2, 2, 2] * 4
    with cutile.check_races(), pytest.raises(cutile.LaunchError) as info:
        sub_tiles_from_product(api.zeros([32], i32).partition([8]), 46341, 46341, 2)
    assert info.value.code == "CT6200"


def test_a_start_from_memory_keeps_the_device_check() -> None:
    # No launch can know whether `first * a` wraps: the load keeps its device assert,
    # which checks the index the device computed.
    load = _obligation(sum_from_data_product, "bounds", "of `x`")
    assert load.discharged == "device"
    assert [o.kind for o in sum_from_data_product.check_report()].count("loop-bounds-fit") == 0
    data, x = _tiles(8)
    s = api.from_numpy(np.array([3], np.int32))
    with cutile.check_races():
        z = sum_from_data_product(api.zeros([16], f32).partition([16]), x, s, 2, 8).sync()[0]
    ref = data.astype(np.float64).reshape(8, 16)[6:8].sum(axis=0)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-6)
    wrapping = api.from_numpy(np.array([46341], np.int32))
    with cutile.check_races(), pytest.raises(InterpreterError) as info:
        sum_from_data_product(api.zeros([16], f32).partition([16]), x, wrapping, 46341,
                              2).sync()
    assert info.value.code == "CT6910"  # the device assert, not the detector's CT6913
    assert not isinstance(info.value, cutile.RaceError)
    assert "tile index of `x` on axis 0 is out of bounds" in info.value.message

"""Host rules (docs/design.md §3): moves into ops, unique storage for partitions, no overlapping
mutable arguments, launch shape checks. Each misuse is a typed error with a code."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f16, f32, load_tile_like


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def fixed(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [256]]):
    z.store(load_tile_like(x, z))


def _inputs(n: int = 256) -> tuple[api.Tensor, api.Tensor]:
    return api.from_numpy(np.arange(n, dtype=np.float32)), api.ones([n], f32)


def test_moved_tensor_is_dead_until_the_op_hands_it_back() -> None:
    x, y = _inputs()
    z = api.zeros([256], f32).partition([128])
    op = add(z, x, y)
    with pytest.raises(cutile.BorrowError) as info:
        x.to_numpy()
    assert "add" in str(info.value) and f"op #{op.op_id}" in str(info.value)
    z, x, y = op.sync()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(256, dtype=np.float32))
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(256) + 1.0)


def test_a_moved_tensor_cannot_go_into_a_second_launch() -> None:
    x, y = _inputs()
    op = add(api.zeros([256], f32).partition([128]), x, y)
    with pytest.raises(cutile.BorrowError):
        add(api.zeros([256], f32).partition([128]), x, y)
    op.sync()


def test_an_op_runs_once() -> None:
    x, y = _inputs()
    op = add(api.zeros([256], f32).partition([128]), x, y)
    op.sync()
    with pytest.raises(cutile.BorrowError):
        op.sync()


def test_partition_needs_unique_storage() -> None:
    t = api.zeros([256], f32)
    view = t[:128]
    with pytest.raises(cutile.BorrowError) as info:
        t.partition([128])
    assert info.value.code.startswith("CT5")
    del view
    p = t.partition([128])  # now the tensor is the only handle
    with pytest.raises(cutile.BorrowError):
        t.to_numpy()  # consumed by partition
    assert p.unpartition().to_numpy().shape == (256,)


def test_output_overlapping_an_input_is_refused() -> None:
    base = api.from_numpy(np.zeros(512, np.float32))
    x = base[256:]  # noqa: F841 - a live view that must block the partition below
    out = base[:256]
    del base
    with pytest.raises(cutile.BorrowError):
        out.partition([128])  # `x` views the same storage


def test_same_tensor_twice_as_inputs_is_fine() -> None:
    x, _ = _inputs()
    z, x, x2 = add(api.zeros([256], f32).partition([128]), x, x).sync()
    assert x is x2
    np.testing.assert_array_equal(z.unpartition().to_numpy(), 2 * np.arange(256))


def test_output_needs_a_partition() -> None:
    x, y = _inputs()
    with pytest.raises(cutile.LaunchError) as info:
        add(api.zeros([256], f32), x, y)
    assert info.value.code == "CT6101" and "partition" in (info.value.hint or "")


def test_tile_shape_must_match_declaration() -> None:
    x, _ = _inputs()
    with pytest.raises(cutile.LaunchError) as info:
        fixed(api.zeros([256], f32).partition([64]), x)
    assert info.value.code.startswith("CT6")


def test_static_input_shape_is_checked() -> None:
    x = api.zeros([300], f32)
    with pytest.raises(cutile.LaunchError) as info:
        fixed(api.zeros([256], f32).partition([128]), x)
    assert info.value.code == "CT6105"


def test_contradicting_const_keyword() -> None:
    x, y = _inputs()
    with pytest.raises(cutile.LaunchError) as info:
        add(api.zeros([256], f32).partition([128]), x, y, B=64)
    assert info.value.code == "CT6103" and "128" in str(info.value)


def test_dtype_mismatch() -> None:
    x, y = _inputs()
    with pytest.raises(cutile.LaunchError) as info:
        add(api.zeros([256], f16).partition([128]), x, y)
    assert info.value.code == "CT6102"


def test_arguments_come_back_after_a_failed_launch_check() -> None:
    x, y = _inputs()
    with pytest.raises(cutile.LaunchError):
        add(api.zeros([256], f32).partition([128]), x, y, B=7)
    # nothing was moved: the inputs are still usable
    assert x.to_numpy()[3] == 3


@cutile.entry
def two_outputs(a: Mut[Tensor[f32, [128]]], b: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, a)
    a.store(t)
    b.store(t + 1)


def test_same_partition_as_two_outputs_is_refused() -> None:
    x, _ = _inputs()
    p = api.zeros([256], f32).partition([128])
    with pytest.raises(cutile.BorrowError):
        two_outputs(p, p, x)
    # refused before anything moved: p is still usable
    assert p.to_numpy().shape == (256,)


def test_two_outputs_on_distinct_storage() -> None:
    x, _ = _inputs()
    _, b, x = two_outputs(api.zeros([256], f32).partition([128]),
                          api.zeros([256], f32).partition([128]), x).sync()
    np.testing.assert_array_equal(b.unpartition().to_numpy(), np.arange(256) + 1.0)

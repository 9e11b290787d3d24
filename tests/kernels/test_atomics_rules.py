"""What the rules of `Atomic` parameters, `gather` and `scatter` refuse, each with its code
(the checker's CT1013-CT1018, CT4002, CT4003; the lowering's CT3080, CT3081; the launcher's
CT6107, CT6001, CT6101), and what the race detector sees: atomics of two blocks on one
element are no race, an atomic and a plain access are, and so are block-scoped atomics and
scatters that collide."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import (
    Atomic,
    Const,
    Mut,
    Tensor,
    arange,
    atomic_add,
    atomic_max,
    block_id,
    f32,
    gather,
    i32,
    load_tile_like,
    scatter,
    zeros,
)

rng = np.random.default_rng(5)


def codes_of(fn: Callable[..., Any]) -> list[str]:
    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(fn).check()
    return list(info.value.codes)


# ------------------------------------------------------------------ the checker


def test_a_plain_load_of_an_atomic_tensor_is_ct1013() -> None:
    def k(z: Mut[Tensor[i32, [16]]], a: Atomic[Tensor[i32, [-1]]]):
        z.store(a.load_tile((16,), (block_id(0),)))

    def like(z: Mut[Tensor[i32, [16]]], a: Atomic[Tensor[i32, [-1]]]):
        z.store(load_tile_like(a, z))

    def gathered(z: Mut[Tensor[i32, [16]]], a: Atomic[Tensor[i32, [-1]]]):
        z.store(gather(a, arange(16, i32)))

    assert codes_of(k) == codes_of(like) == codes_of(gathered) == ["CT1013"]


def test_a_plain_store_to_an_atomic_tensor_is_ct1014() -> None:
    def k(a: Atomic[Tensor[f32, [16]]]):
        a.store(zeros((16,), f32))

    def scattered(a: Atomic[Tensor[f32, [-1]]]):
        with cutile.unsafe():  # unsafe does not make a plain write to an Atomic tensor safe
            scatter(a, arange(16, i32), 1.0)

    assert codes_of(k) == codes_of(scattered) == ["CT1014"]


def test_an_atomic_tensor_has_no_tiles_ct1015() -> None:
    def k(a: Atomic[Tensor[f32, [-1]]]):
        a.partition_mut((16,))

    def schedule(a: Atomic[Tensor[f32, [-1]]]):
        for _idx in a.iter_indices():
            atomic_add(a, arange(16, i32), 1.0)

    assert codes_of(k) == codes_of(schedule) == ["CT1015"]


def test_an_atomic_tensor_that_escapes_is_ct1016() -> None:
    def tupled(a: Atomic[Tensor[f32, [-1]]]):
        atomic_add((a, 1)[0], arange(16, i32), 1.0)

    def arithmetic(a: Atomic[Tensor[f32, [-1]]]):
        atomic_add(a, arange(16, i32), a + 1)

    def chosen(a: Atomic[Tensor[f32, [-1]]], b: Atomic[Tensor[f32, [-1]]], c: i32):
        atomic_add(a if c > 0 else b, arange(16, i32), 1.0)

    assert codes_of(tupled) == codes_of(arithmetic) == ["CT1016"]
    assert codes_of(chosen) == ["CT1016", "CT1016"]


@cutile.device
def reads_tensor(t: Tensor[f32, [-1]]):
    return t.load_tile((16,), (0,))


@cutile.device
def adds(a: Atomic[Tensor[f32, [-1]]], idx):
    return atomic_add(a, idx, 1.0)


def test_device_parameters_keep_atomic_and_plain_tensors_apart_ct1017() -> None:
    def plain_param(z: Mut[Tensor[f32, [16]]], a: Atomic[Tensor[f32, [-1]]]):
        z.store(reads_tensor(a))

    def atomic_param(x: Tensor[f32, [-1]]):
        adds(x, arange(16, i32))

    def fine(a: Atomic[Tensor[f32, [-1]]]):
        adds(a, arange(16, i32))

    assert codes_of(plain_param) == codes_of(atomic_param) == ["CT1017"]
    cutile.entry(fine).check()


def test_a_block_scoped_atomic_on_a_shared_tensor_is_ct1018() -> None:
    def k(a: Atomic[Tensor[f32, [-1]]]):
        atomic_add(a, arange(16, i32), 1.0, scope="block")

    def unsafe_k(a: Atomic[Tensor[f32, [-1]]]):
        with cutile.unsafe():  # the author vouches for it (and the detector tests it)
            atomic_add(a, arange(16, i32), 1.0, scope="block")

    assert codes_of(k) == ["CT1018"]
    cutile.entry(unsafe_k).check()


def test_an_atomic_on_an_output_outside_unsafe_is_ct4002_with_a_hint() -> None:
    def k(z: Mut[Tensor[f32, [16]]]):
        z.store(zeros((16,), f32))
        atomic_add(z, arange(16, i32), 1.0)

    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(k).check()
    assert info.value.codes == ["CT4002"]
    assert "declare the parameter `z: Atomic[Tensor[...]]`" in str(info.value)

    def shared(x: Tensor[f32, [-1]]):
        atomic_max(x, arange(16, i32), 1.0)

    def shared_unsafe(x: Tensor[f32, [-1]]):
        with cutile.unsafe():  # a shared input is never written, unsafe or not
            atomic_add(x, arange(16, i32), 1.0)

    assert codes_of(shared) == ["CT4002"]
    assert codes_of(shared_unsafe) == ["CT1001"]


def test_scatter_outside_unsafe_and_gather_from_an_output_are_ct4003() -> None:
    def scattered(z: Mut[Tensor[f32, ["B"]]], idx: Tensor[i32, [-1]], B: Const[int]):
        scatter(z, load_tile_like(idx, z), 1.0)

    def gathered(z: Mut[Tensor[f32, ["B"]]], idx: Tensor[i32, [-1]], B: Const[int]):
        z.store(gather(z, load_tile_like(idx, z)))

    assert codes_of(scattered) == codes_of(gathered) == ["CT4003"]


# ------------------------------------------------------------------ the lowering


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        ("atomic_max(a, arange(16, i32), 1.0)", "CT3080", "not defined on `f32`"),
        ("atomic_add(a, (arange(16, i32), arange(16, i32)), 1.0)", "CT3080",
         "needs 1 index tile"),
        ("atomic_add(a, arange(16, i32) * 1.5, 1.0)", "CT3080", "integer tiles"),
        ("atomic_add(a, arange(16, i32), 1.0, memory_order='seq_cst')", "CT3081",
         "memory_order must be one of"),
        ("atomic_add(a, arange(16, i32), 1.0, scope='cluster')", "CT3081",
         "scope must be one of"),
    ],
)
def test_what_the_compiler_refuses(body: str, code: str, needle: str,
                                   tmp_path: pathlib.Path) -> None:
    k = load_kernel(tmp_path, f"@cutile.entry\ndef k(a: Atomic[Tensor[f32, [-1]]]):\n    {body}\n")
    k.check()  # the checker has nothing against it: the lowering knows the types
    with pytest.raises(cutile.KernelCheckError) as info:
        k.lowered(k.specialization({}))
    assert info.value.codes == [code] and needle in str(info.value)


# ------------------------------------------------------------------ the launch


@cutile.entry
def count(a: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]], B: Const[int]):
    atomic_add(a, gather(x, block_id(0) * B + arange(B, i32), padding=-1), 1)


@cutile.entry
def count_with_output(z: Mut[Tensor[i32, ["B"]]], a: Atomic[Tensor[i32, [-1]]],
                      x: Tensor[i32, [-1]], B: Const[int]):
    z.store(atomic_add(a, load_tile_like(x, z), 1))


def test_a_kernel_without_mut_outputs_needs_a_grid() -> None:
    x = api.from_numpy(np.arange(10, dtype=np.int32))
    with pytest.raises(cutile.LaunchError) as info:
        count(api.zeros([10], i32), x, B=16)
    assert info.value.code == "CT6107" and "grid=" in str(info.value)
    for bad in ((1, 2, 3, 4), (-1,), (), "8", 2.0, True, None):
        with pytest.raises(cutile.LaunchError) as info:
            count(api.zeros([10], i32), x, B=16, grid=bad)
        assert info.value.code == "CT6104"
    a, x = count(api.zeros([10], i32), x, B=16, grid=1).sync()
    assert a.to_numpy().tolist() == [1] * 10
    a, x = count(a, x, B=16, grid=[np.int64(1), 1]).sync()  # numpy ints and lists too
    assert a.to_numpy().tolist() == [2] * 10


def test_grid_may_only_repeat_the_outputs_grid() -> None:
    x = api.from_numpy(np.arange(32, dtype=np.int32) % 4)

    def run(**kw: Any) -> Any:
        return count_with_output(api.zeros([32], i32).partition([16]), api.zeros([4], i32), x,
                                 **kw).sync()

    z, a, _ = run(grid=(2,))
    assert a.to_numpy().tolist() == [8, 8, 8, 8]
    assert sorted(z.unpartition().to_numpy().tolist()) == [i for i in range(8) for _ in range(4)]
    with pytest.raises(cutile.LaunchError) as info:
        run(grid=(3,))
    assert info.value.code == "CT6001"


def test_an_atomic_argument_is_a_tensor_held_exclusively() -> None:
    x = api.from_numpy(np.arange(10, dtype=np.int32))
    with pytest.raises(cutile.LaunchError) as info:
        count(api.zeros([16], i32).partition([8]), x, B=16, grid=1)
    assert info.value.code == "CT6101" and "atomic" in str(info.value)
    a = api.zeros([10], i32)
    op = count(a, x, B=16, grid=1)
    with pytest.raises(cutile.BorrowError):
        a.to_numpy()  # moved into the op until it hands it back
    a, x = op.sync()
    with pytest.raises(cutile.BorrowError) as info:
        count(x, x, B=16, grid=1)  # one tensor as the atomic and a shared argument
    assert info.value.code == "CT5005"


# ------------------------------------------------------------------ the race detector




@cutile.entry
def atomics_into_others_tiles(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    z.store(zeros((B,), f32))
    with cutile.unsafe():  # an atomic into the next block's tile, which it stores plainly
        atomic_add(z, (block_id(0) + 1) * B + arange(B, i32), 1.0)


@cutile.entry
def block_scoped(a: Atomic[Tensor[f32, [-1]]], B: Const[int]):
    with cutile.unsafe():  # atomic within one block only: blocks 0 and 1 race on a[0]
        atomic_add(a, arange(B, i32) * 0, 1.0, scope="block")


@cutile.entry
def scatter_collides(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    with cutile.unsafe():  # every block writes element 0
        scatter(z, arange(B, i32) * 0, 1.0)


def test_atomics_of_many_blocks_on_one_element_are_no_race(interpreter: None) -> None:
    x = api.from_numpy(np.zeros(256, np.int32))  # every lane of every block adds to a[0]
    with cutile.check_races():
        a, _ = count(api.zeros([3], i32), x, B=32, grid=(8,)).sync()
    assert a.to_numpy().tolist() == [256, 0, 0]


def test_an_atomic_and_a_plain_store_of_one_element_race(interpreter: None) -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        atomics_into_others_tiles(api.zeros([64], f32).partition([16])).sync()
    err = info.value
    assert err.tensor == "z" and err.kind in ("write-write", "read-write")
    assert "atomically updates" in str(err)


def test_block_scoped_atomics_of_two_blocks_race(interpreter: None) -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        block_scoped(api.zeros([4], f32), B=16, grid=(2,)).sync()
    assert info.value.tensor == "a" and info.value.element == (0,)


def test_colliding_scatters_race(interpreter: None) -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        scatter_collides(api.zeros([64], f32).partition([16])).sync()
    assert (info.value.kind, info.value.element) == ("write-write", (0,))


def test_out_of_range_lanes_touch_nothing_around_a_view(interpreter: None) -> None:
    """An atomic tensor that is a view inside a bigger buffer: lanes past either end are
    masked off, so the bytes around it stay as they were (and the detector, which knows the
    view's bounds, sees no out-of-bounds access)."""
    big = api.full([20], 7, i32)
    view = big[5:15]
    xs = np.array([-6, -1, 0, 3, 9, 10, 14, 100] * 4, np.int32)
    with cutile.check_races():
        view, _ = count(view, api.from_numpy(xs), B=16, grid=(2,)).sync()
    got = big.to_numpy()
    assert got[:5].tolist() == [7] * 5 and got[15:].tolist() == [7] * 5
    assert got[5:15].tolist() == [11, 7, 7, 11, 7, 7, 7, 7, 7, 11]


@cutile.entry
def scatter_within(z: Mut[Tensor[f32, ["B"]]], idx: Tensor[i32, [-1]], B: Const[int]):
    with cutile.unsafe():  # each block scatters into its own tile, at indices it reads
        scatter(z, block_id(0) * B + load_tile_like(idx, z), arange(B, i32).astype(f32))


@pytest.mark.parametrize("collide", [True, False])
def test_lanes_of_one_scatter_that_collide_race(collide: bool, interpreter: None) -> None:
    """docs/unsafe.md: scatter lanes that collide race, within one block too."""
    perm = rng.permutation(16).astype(np.int32)
    if collide:
        perm[5] = perm[11]  # two lanes of block 0 (and of block 1) write one element
    z = api.zeros([32], f32).partition([16])
    with cutile.check_races():
        if collide:
            with pytest.raises(cutile.RaceError) as info:
                scatter_within(z, api.from_numpy(np.tile(perm, 2))).sync()
            assert info.value.kind == "write-write"
            assert info.value.blocks == ((0, 0, 0), (0, 0, 0))
            assert info.value.element == (int(perm[5]),)
            return
        z, _ = scatter_within(z, api.from_numpy(np.tile(perm, 2))).sync()
    want = np.zeros(16, np.float32)
    want[perm] = np.arange(16)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.tile(want, 2))

"""The lanes of one store race each other (docs/unsafe.md: scatter lanes that collide race).

Within a tile block, accesses are ordered by program order, but the lanes of one operation
run concurrently on the GPU: two lanes of a plain store that write the same bytes leave
either value. The detector reports that as a write-write race of the block with itself,
through pointers (a scatter) and through a view whose layout puts two elements at one
address, and stays quiet where lanes may meet: an atomic's, an ordered (release) store's,
masked-off lanes, and two separate stores of one block. Each probe is a racy kernel and a
near-identical quiet one, hand-built Tile IR run with `run(..., check=True)`
(tests/kernels/test_atomics_rules.py has a real kernel's scatter)."""

from __future__ import annotations

import numpy as np
import pytest

from cutile import RaceError
from cutile.interpreter import Pointer, TensorArg, run
from cutile.ir import Builder, Value

from .kit import TOKEN, const, dt, new_kernel, ptr, ptr_tile, raw, splat, store, store_ptr, view
from .kit import atomic_rmw as rmw
from .kit import i32 as c32


def scatter_by(build: object, n: int = 8) -> Builder:
    b, (hp,) = new_kernel([ptr(dt.i32)], "k")
    bx, _, _ = b.block_ids()
    build(b, hp, b.iota(n, dt.i32), bx)  # type: ignore[operator]
    return b


def launch(b: Builder, grid: int = 2, n: int = 8) -> np.ndarray:
    h = np.zeros(n, np.int32)
    run(b.module, "k", (grid, 1, 1), [Pointer.to(h)], check=True, tensors=[TensorArg("h")])
    return h


def idx(b: Builder, lanes: Value, bx: Value, collide: bool) -> Value:
    """Block x's lanes 0..7 -> 8x/8 .. (lanes, or lanes // 2 * 2 when they collide)."""
    if collide:
        lanes = b.binary("muli", b.binary("divi", lanes, const(b, 2, dt.i32, (8,)),
                                          signedness="signed"), const(b, 2, dt.i32, (8,)))
    return lanes


@pytest.mark.parametrize("collide", [True, False])
def test_a_scatter_whose_lanes_collide(collide: bool) -> None:
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        store_ptr(b, ptr_tile(b, hp, idx(b, lanes, bx, collide)), lanes)

    k = scatter_by(build)
    if not collide:
        assert launch(k, grid=1).tolist() == list(range(8))
        return
    with pytest.raises(RaceError) as info:
        launch(k, grid=1)
    err = info.value
    assert (err.kind, err.tensor, err.element, err.blocks) == (
        "write-write", "h", (0,), ((0, 0, 0), (0, 0, 0)))
    assert err.code == "CT6911" and "two lanes of one store in block (0, 0, 0)" in str(err)


@pytest.mark.parametrize("live", [2, 1])
def test_masked_off_duplicates_are_no_access(live: int) -> None:
    # every lane points at h[0]; the mask keeps `live` of them
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        keep = b.cmp("cmpi", "less_than", lanes, const(b, live, dt.i32, (8,)),
                     signedness="signed")
        store_ptr(b, ptr_tile(b, hp, b.binary("muli", lanes, const(b, 0, dt.i32, (8,)))),
                  lanes, keep)

    k = scatter_by(build)
    if live == 2:
        with pytest.raises(RaceError, match="two lanes of one store"):
            launch(k, grid=1)
    else:
        assert launch(k, grid=1).tolist() == [0] * 8


@pytest.mark.parametrize(("how", "racy"), [("weak", True), ("release", False),
                                           ("atomic", False), ("atomic-tl_blk", False)])
def test_lanes_that_may_meet(how: str, racy: bool) -> None:
    # all 8 lanes of the one block at h[0]: an ordered store's and an atomic's lanes are
    # atomic among themselves (a block-scoped atomic too: they are one block's threads)
    def build(b: Builder, hp: Value, lanes: Value, bx: Value) -> None:
        p = ptr_tile(b, hp, splat(b, bx, (8,)))
        if how in ("weak", "release"):
            raw(b, "store_ptr_tko", [p, lanes], [TOKEN], memory_ordering_semantics=how,
                memory_scope="device", has_mask=False, has_token=False)
        elif how == "atomic":
            rmw(b, p, lanes, "add")
        else:
            raw(b, "atomic_rmw_tko", [p, lanes], [ptr_tile(b, hp, lanes).type, TOKEN],
                mode="add", memory_ordering_semantics="relaxed", memory_scope="tl_blk",
                has_mask=False, has_token=False)

    k = scatter_by(build)
    if racy:
        with pytest.raises(RaceError, match="two lanes of one store"):
            launch(k, grid=1)
    else:
        launch(k, grid=1)


@pytest.mark.parametrize(("strides", "racy"), [((1, 1), True), ((0, 1), True), ((2, 1), False)])
def test_a_tile_of_a_view_whose_elements_alias(strides: tuple[int, int], racy: bool) -> None:
    # one block stores a 2 x 2 tile of a view over z: with row stride 1 element (0, 1) and
    # element (1, 0) are both z[1]; with row stride 0 the two rows are the same bytes
    def body(b: Builder, z: Value) -> None:
        pv = view(b, z, [2, 2], list(strides), [2, 2])
        store(b, const(b, 1.0, dt.f32, (2, 2)), pv, [c32(b, 0), c32(b, 0)])

    b, (z,) = new_kernel([ptr(dt.f32)], "k")
    body(b, z)
    mem = np.zeros(8, np.float32)
    go = lambda: run(b.module, "k", (1, 1, 1), [Pointer.to(mem)], check=True,  # noqa: E731
                     tensors=[TensorArg("z")])
    if racy:
        with pytest.raises(RaceError) as info:
            go()
        assert info.value.kind == "write-write" and info.value.blocks[0] == info.value.blocks[1]
    else:
        go()


def test_two_arguments_over_one_buffer_meet_in_one_store() -> None:
    # x = mem[0:8], y = mem[4:12]: one store's lane 0 writes y[0] and lane 1 writes x[4]
    b, (xp, yp) = new_kernel([ptr(dt.f32), ptr(dt.f32)], "k")
    pair = b.cat(b.reshape(yp, (1,)), b.reshape(b.offset(xp, c32(b, 4)), (1,)), 0)
    store_ptr(b, pair, const(b, 1.0, dt.f32, (2,)))
    mem = np.zeros(16, np.float32)
    with pytest.raises(RaceError, match="two lanes of one store"):
        run(b.module, "k", (1, 1, 1), [Pointer.to(mem[0:8]), Pointer.to(mem[4:12])],
            check=True)

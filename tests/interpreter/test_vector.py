"""Whole kernels over 1-D tensors: vector add with a ragged last tile, saxpy, block order."""

from __future__ import annotations

import numpy as np
import pytest

from cutile.interpreter import Pointer, run
from cutile.ir import scalar

from .kit import (
    POISON_BYTE,
    atomic_rmw,
    dt,
    i32,
    load,
    new_kernel,
    offset,
    poisoned,
    ptr,
    splat,
    store,
    store_ptr,
    view,
)

RNG = np.random.default_rng(1234)


def vector_add_module(tile: int):
    b, (z, x, y, n) = new_kernel([ptr(dt.f32), ptr(dt.f32), ptr(dt.f32), scalar(dt.i32)], "add")
    bx, _, _ = b.block_ids()
    pz, px, py = (view(b, p, [n], [1], [tile]) for p in (z, x, y))
    s = b.binary("addf", load(b, px, [bx]), load(b, py, [bx]))
    store(b, s, pz, [bx])
    b.return_()
    return b.module


def test_vector_add_ragged_last_tile_leaves_bytes_past_the_end_untouched() -> None:
    n, tile = 1000, 128
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    zbuf = poisoned(4 * 1024)  # room for 1024 floats; only 1000 belong to the tensor
    grid = (-(-n // tile), 1, 1)
    run(vector_add_module(tile), "add", grid, [Pointer(zbuf), Pointer.to(x), Pointer.to(y), n])
    z = zbuf[: 4 * n].view(np.float32)
    np.testing.assert_array_equal(z, x + y)
    assert (zbuf[4 * n :] == POISON_BYTE).all()


def test_vector_add_large_grid() -> None:
    n, tile = 1 << 20, 1024
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    run(
        vector_add_module(tile),
        "add",
        (n // tile, 1, 1),
        [Pointer.to(z), Pointer.to(x), Pointer.to(y), n],
    )
    np.testing.assert_array_equal(z, x + y)


def test_saxpy_with_scalar_parameter() -> None:
    n, tile = 777, 64
    b, (yp, xp, a, nn) = new_kernel(
        [ptr(dt.f32), ptr(dt.f32), scalar(dt.f32), scalar(dt.i32)], "saxpy"
    )
    bx, _, _ = b.block_ids()
    py, px = view(b, yp, [nn], [1], [tile]), view(b, xp, [nn], [1], [tile])
    ax = b.binary("mulf", splat(b, a, (tile,)), load(b, px, [bx]))
    store(b, b.binary("addf", ax, load(b, py, [bx])), py, [bx])
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    expect = np.float32(2.5) * x + y
    run(b.module, "saxpy", (-(-n // tile), 1, 1), [Pointer.to(y), Pointer.to(x), 2.5, n])
    np.testing.assert_array_equal(y, expect)


def test_tile_blocks_run_x_fastest() -> None:
    # Each block takes a ticket from an atomic counter and files it under its linear id.
    b, (counter, out) = new_kernel([ptr(dt.i32), ptr(dt.i32)], "order")
    bx, by, bz = b.block_ids()
    gx, gy, _ = b.num_blocks()
    lin = b.binary("addi", bx, b.binary("muli", gx, b.binary("addi", by, b.binary("muli", gy, bz))))
    ticket = atomic_rmw(b, counter, i32(b, 1), "add")
    store_ptr(b, offset(b, out, lin), ticket)
    grid = (3, 4, 2)
    cnt = np.zeros(1, np.int32)
    out_arr = np.full(24, -1, np.int32)
    run(b.module, "order", grid, [Pointer.to(cnt), Pointer.to(out_arr)])
    np.testing.assert_array_equal(out_arr, np.arange(24))
    assert cnt[0] == 24


@pytest.mark.parametrize("grid", [(0, 1, 1), (1, 1)])
def test_bad_grid_is_refused(grid: tuple[int, ...]) -> None:
    from cutile.interpreter import InterpreterError

    with pytest.raises(InterpreterError, match="grid"):
        run(vector_add_module(8), "add", grid, [])

"""Elementwise kernels through the public API on the active backend (the CPU interpreter
without a GPU), checked against numpy float64 references on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    block_id,
    exp,
    f16,
    f32,
    i32,
    load_tile_like,
    maximum,
    num_blocks,
    sqrt,
    where,
)

rng = np.random.default_rng(1234)


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def saxpy(y: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    y.store(a * load_tile_like(x, y) + y.load())


@cutile.entry
def exp2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
          BN: Const[int]):
    z.store(exp(load_tile_like(x, z)))


@cutile.entry
def mixed(z: Mut[Tensor[f32, [16, 32]]], x: Tensor[f16, [-1, -1]], r: Tensor[f32, [-1, 32]]):
    tx = load_tile_like(x, z).astype(f32)
    row = r.load_tile((1, 32), (0, 0))            # [1, 32] broadcast over 16 rows
    z.store(where(tx > 0, sqrt(maximum(tx, 0.0)) + row, tx * 0.5 - 1))


@pytest.mark.parametrize(("n", "tile"), [(1000, 128), (4096, 1024), (1, 64), (129, 128)])
def test_add_ragged_every_element(n: int, tile: int) -> None:
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    z = api.full([n], np.nan, f32).partition([tile])
    z, x, _ = add(z, api.from_numpy(xs), api.from_numpy(ys)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs + ys)
    np.testing.assert_array_equal(x.to_numpy(), xs)  # inputs untouched


def test_add_leaves_bytes_past_a_view_untouched() -> None:
    n, tile = 300, 128
    big = api.from_numpy(np.full(n + 100, -7.0, np.float32))
    view = big[:n]
    del big  # the view is now the only live handle on the storage
    xs = rng.standard_normal(n).astype(np.float32)
    z = view.partition([tile])
    z, _, _ = add(z, api.from_numpy(xs), api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), 2 * xs)


def test_saxpy_scalar_parameter() -> None:
    n = 2000
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    y, _, a = saxpy(api.from_numpy(ys).partition([256]), api.from_numpy(xs), 1.75).sync()
    assert a == 1.75
    ref = 1.75 * xs.astype(np.float64) + ys
    np.testing.assert_allclose(y.unpartition().to_numpy(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("m", "n", "bm", "bn"), [(100, 70, 32, 64), (64, 64, 64, 64),
                                                  (3, 300, 4, 128)])
def test_exp_2d_tiles(m: int, n: int, bm: int, bn: int) -> None:
    xs = rng.uniform(-5, 5, size=(m, n)).astype(np.float32)
    z = api.full([m, n], np.nan, f32).partition([bm, bn])
    z, _ = exp2d(z, api.from_numpy(xs)).sync()
    out = z.unpartition().to_numpy()
    np.testing.assert_allclose(out, np.exp(xs.astype(np.float64)), rtol=2e-6)


def test_mixed_dtypes_broadcasting_where() -> None:
    xs = rng.standard_normal((40, 64)).astype(np.float16)
    rs = rng.standard_normal((3, 32)).astype(np.float32)
    z = api.full([40, 64], np.nan, f32).partition([16, 32])
    z, _, _ = mixed(z, api.from_numpy(xs), api.from_numpy(rs)).sync()
    tx = xs.astype(np.float64)
    ref = np.where(tx > 0, np.sqrt(np.maximum(tx, 0)) + np.tile(rs[0], 2), tx * 0.5 - 1)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-5, atol=1e-6)


def test_integer_kernel_with_block_ids() -> None:
    @cutile.entry
    def ids(z: Mut[Tensor[i32, [4, 8]]]):
        z.store(block_id(0) * 100 + block_id(1))

    z = api.zeros([12, 24], i32).partition([4, 8])
    (z,) = ids(z).sync()
    out = z.unpartition().to_numpy()
    bi, bj = np.meshgrid(np.arange(12) // 4, np.arange(24) // 8, indexing="ij")
    np.testing.assert_array_equal(out, bi * 100 + bj)


@cutile.entry
def int_divmod(q: Mut[Tensor[i32, ["B"]]], r: Mut[Tensor[i32, ["B"]]], x: Tensor[i32, [-1]],
               y: Tensor[i32, [-1]], B: Const[int]):
    a = load_tile_like(x, q)
    d = load_tile_like(y, q)
    q.store(a // d)
    r.store(a % d)


def test_integer_division_is_pythons_and_a_zero_divisor_reads_as_one() -> None:
    # Tile IR leaves `x / 0` and `INT_MIN / -1` undefined; the kernel language defines them
    # (`x // 0 == x`, `x % 0 == 0`, `INT_MIN // -1 == INT_MIN` wrapping, `x % -1 == 0`), so
    # an accepted kernel never reaches undefined behaviour.
    xs = rng.integers(-1000, 1000, 256).astype(np.int32)
    ys = rng.integers(-9, 10, 256).astype(np.int32)
    ys[::7] = 0
    ys[3::11] = -1
    xs[3] = np.iinfo(np.int32).min
    q = api.zeros([256], i32).partition([64])
    r = api.zeros([256], i32).partition([64])
    q, r, _, _ = int_divmod(q, r, api.from_numpy(xs), api.from_numpy(ys)).sync()
    safe = np.where(ys == 0, 1, ys).astype(np.int64)
    want_q = (xs.astype(np.int64) // safe).astype(np.int32)  # wraps 2**31 to INT_MIN
    np.testing.assert_array_equal(q.unpartition().to_numpy(), want_q)
    np.testing.assert_array_equal(r.unpartition().to_numpy(), xs.astype(np.int64) % safe)


@cutile.entry
def ragged_row_divsum(z: Mut[Tensor[i32, [1, "B"]]], x: Tensor[i32, [-1, -1]],
                      y: Tensor[i32, [-1, -1]], B: Const[int]):
    # Past the ragged end both loads read the padding (0): the padded divisor reads as 1,
    # so the padded lanes hold 0 // 1 == 0 and 0 % 1 == 0 and the row sums see only data.
    a = load_tile_like(x, z)
    d = load_tile_like(y, z)
    s = (a // d + a % d).sum(axis=1, keepdims=True)
    z.store(a // d + s)


@pytest.mark.parametrize("cols", [100, 128, 1])
def test_integer_division_on_a_ragged_last_tile(cols: int) -> None:
    xs = rng.integers(-10_000, 10_000, (5, cols)).astype(np.int32)
    ys = rng.integers(1, 50, (5, cols)).astype(np.int32) * rng.choice([-1, 1], (5, cols))
    z = api.full([5, cols], -1, i32).partition([1, 128])
    z, _, _ = ragged_row_divsum(z, api.from_numpy(xs), api.from_numpy(ys.astype(np.int32))).sync()
    x64, y64 = xs.astype(np.int64), ys.astype(np.int64)
    rows = (x64 // y64 + x64 % y64).sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), x64 // y64 + rows)


@cutile.entry
def bump_reversed(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    i = num_blocks(0) - 1 - block_id(0)
    t = z.load(index=(i,))
    z.store(t * 2.0 + i, index=(i,))


def test_a_block_reads_the_tile_it_stores_through_a_computed_map() -> None:
    xs = rng.standard_normal(64).astype(np.float32)
    z = api.from_numpy(xs).partition([8])
    (z,) = bump_reversed(z).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), xs * 2 + np.arange(64) // 8,
                               rtol=1e-6)

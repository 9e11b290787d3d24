"""Tensors past 32-bit byte offsets and element extents on the GPU: tile stores, loads of a
ragged last tile, gathers and atomics at the very end of (1) an i32 tensor of 1.6e9
elements (element offsets fit 32 bits, byte offsets pass 2^32), (2) an i8 tensor of 2^30
+ 1000 rows of 2 (element span past 2^31: the launcher compiles with 64-bit shapes and
strides), (3) a view of the first 2^31 - 1 i8 elements of a longer buffer, the largest
32-bit extent. The interpreter cannot hold these sizes."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import (
    Atomic,
    Const,
    Mut,
    Tensor,
    arange,
    atomic_add,
    block_id,
    gather,
    i8,
    i32,
    zeros,
)

pytestmark = [pytest.mark.gpu]

B = 1024


@cutile.entry
def iota(z: Mut[Tensor[i32, ["B"]]], B: Const[int]):
    z.store(block_id(0) * B + arange(B, i32))


@cutile.entry
def pick(z: Mut[Tensor[i32, ["B"]]], x: Tensor[i32, [-1]], s: i32, B: Const[int]):
    z.store(gather(x, s + arange(B, i32), padding=-1))


@cutile.entry
def tail(z: Mut[Tensor[i32, ["B"]]], x: Tensor[i32, [-1]], t: i32, B: Const[int]):
    z.store(x.load_tile((B,), (t,), padding="zero"))


@cutile.entry
def bump(c: Atomic[Tensor[i32, [-1]]], s: i32, B: Const[int]):
    atomic_add(c, s + arange(B, i32), 1)


@cutile.entry
def rows(z: Mut[Tensor[i8, ["B", 2]]], B: Const[int]):
    r = block_id(0) * B + arange(B, i32)
    z.store(((r % 97).astype(i8)).reshape((B, 1)) + zeros((B, 2), i8))


@cutile.entry
def pick2(z: Mut[Tensor[i8, ["B", 2]]], x: Tensor[i8, [-1, 2]], s: i32, B: Const[int]):
    r = (s + arange(B, i32)).reshape((B, 1))
    c = arange(2, i32).reshape((1, 2))
    z.store(gather(x, (r, c), padding=-1))


@cutile.entry
def tail2(z: Mut[Tensor[i8, ["B", 2]]], x: Tensor[i8, [-1, 2]], t: i32, B: Const[int]):
    z.store(x.load_tile((B, 2), (t, 0)))


@cutile.entry
def fill8(z: Mut[Tensor[i8, ["B"]]], B: Const[int]):
    z.store(((block_id(0) * B + arange(B, i32)) % 101 + 1).astype(i8))


def test_an_i32_tensor_whose_byte_offsets_pass_2_to_the_32() -> None:
    n = 1_600_000_000                     # 6.4 GB; the last tile is ragged
    z = iota(api.empty([n], i32).partition([B])).sync()[0].unpartition()
    np.testing.assert_array_equal(z[n - 5:].to_numpy(), np.arange(n - 5, n))
    s = n - B // 2
    got, z = pick(api.empty([B], i32).partition([B]), z, s).sync()[:2]
    want = np.arange(s, s + B)
    want[want >= n] = -1
    np.testing.assert_array_equal(got.unpartition().to_numpy(), want)
    t = (n - 1) // B
    got, z = tail(api.empty([B], i32).partition([B]), z, t).sync()[:2]
    want = np.arange(t * B, t * B + B)
    want[want >= n] = 0
    np.testing.assert_array_equal(got.unpartition().to_numpy(), want)
    z = bump(z, n - 3, B=8, grid=(1,)).sync()[0]   # 3 lanes in bounds, 5 masked
    np.testing.assert_array_equal(z[n - 5:].to_numpy(), [n - 5, n - 4, n - 2, n - 1, n])


def test_an_i8_tensor_whose_element_span_passes_2_to_the_31() -> None:
    r = (1 << 30) + 1000                  # 2 r - 1 > 2^31 - 1: 64-bit indices
    y = rows(api.empty([r, 2], i8).partition([B, 2])).sync()[0].unpartition()
    last = np.arange(r - 3, r) % 97
    np.testing.assert_array_equal(y[r - 3:].to_numpy(), np.repeat(last[:, None], 2, 1))
    s = r - B // 2
    got, y = pick2(api.empty([B, 2], i8).partition([B, 2]), y, s).sync()[:2]
    idx = np.arange(s, s + B)
    want = np.repeat((idx % 97)[:, None], 2, 1)
    want[idx >= r] = -1
    np.testing.assert_array_equal(got.unpartition().to_numpy(), want)
    t = (r - 1) // B
    got, y = tail2(api.empty([B, 2], i8).partition([B, 2]), y, t).sync()[:2]
    idx = np.arange(t * B, t * B + B)
    want = np.repeat((idx % 97)[:, None], 2, 1)
    want[idx >= r] = 0
    np.testing.assert_array_equal(got.unpartition().to_numpy(), want)


def test_the_largest_32_bit_extent() -> None:
    m = (1 << 31) - 1
    buf = api.zeros([m + 64], i8)
    v = buf[0:m]
    del buf                               # the view alone: partitioning needs a unique handle
    v = fill8(v.partition([B])).sync()[0].unpartition()
    np.testing.assert_array_equal(v[m - 3:].to_numpy(), np.arange(m - 3, m) % 101 + 1)

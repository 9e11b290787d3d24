"""Atomics on `Atomic` parameters, `gather` from shared inputs and `scatter` (unsafe), on the
active backend (the GPU, or the interpreter under the race detector), against numpy on
random inputs: out-of-range indices do nothing (atomics, scatter) or read the padding
(gather), duplicate indices within a tile and across blocks all count, and every result is
checked in a way that does not depend on the order the blocks ran in."""

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
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
    block_id,
    f16,
    f32,
    gather,
    i32,
    i64,
    load_tile_like,
    mma,
    scatter,
    where,
    zeros,
)

rng = np.random.default_rng(2024)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------ kernels


@cutile.entry
def histogram(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]], B: Const[int]):
    # Lanes past the end of `x` read -1, a bin outside `counts`: their add does nothing.
    bins = gather(x, block_id(0) * B + arange(B, i32), padding=-1)
    atomic_add(counts, bins, 1)


@cutile.entry
def column_sums(out: Atomic[Tensor[f32, [-1]]], x: Tensor[f32, [-1, -1]], BR: Const[int],
                BC: Const[int]):
    # Split-K style: every block of rows adds its partial column sums into `out`.
    part = x.load_tile((BR, BC), (block_id(0), block_id(1))).sum(axis=0)
    atomic_add(out, block_id(1) * BC + arange(BC, i32), part)


@cutile.entry
def splitk_matmul(z: Atomic[Tensor[f32, [-1, -1]]], x: Tensor[f16, [-1, -1]],
                  y: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int],
                  KS: Const[int]):
    bm, bn, split = block_id(0), block_id(1), block_id(2)
    acc = zeros((BM, BN), f32)
    for kk in range(KS):
        k = split * KS + kk
        acc = mma(x.load_tile((BM, BK), (bm, k)), y.load_tile((BK, BN), (k, bn)), acc)
    rows = (bm * BM + arange(BM, i32)).reshape((BM, 1))
    cols = (bn * BN + arange(BN, i32)).reshape((1, BN))
    atomic_add(z, (rows, cols), acc)  # ragged edges: lanes past `z` do nothing


@cutile.entry
def extremes(hi: Atomic[Tensor[i32, [-1]]], lo: Atomic[Tensor[i64, [-1]]],
             keys: Tensor[i32, [-1]], vals: Tensor[i32, [-1]], B: Const[int]):
    lanes = block_id(0) * B + arange(B, i32)
    k = gather(keys, lanes, padding=-1)
    v = gather(vals, lanes)
    atomic_max(hi, k, v, memory_order="relaxed")
    atomic_min(lo, k, v, scope="system")


@cutile.entry
def bit_ops(any_set: Atomic[Tensor[i32, [-1]]], all_set: Atomic[Tensor[i32, [-1]]],
            parity: Atomic[Tensor[i32, [-1]]], last: Atomic[Tensor[f32, [-1]]],
            keys: Tensor[i32, [-1]], vals: Tensor[i32, [-1]], B: Const[int]):
    lanes = block_id(0) * B + arange(B, i32)
    k = gather(keys, lanes, padding=-1)
    v = gather(vals, lanes)
    atomic_or(any_set, k, v)
    atomic_and(all_set, k, v)
    atomic_xor(parity, k, v, memory_order="release")
    atomic_xchg(last, k, v.astype(f32), memory_order="acquire")


@cutile.entry
def claim(won: Mut[Tensor[i32, ["B"]]], slots: Atomic[Tensor[i32, [-1]]],
          keys: Tensor[i32, [-1]], B: Const[int]):
    lanes = block_id(0) * B + arange(B, i32)
    k = gather(keys, lanes, padding=-1)
    old = atomic_cas(slots, k, -1, lanes)  # the first lane to reach a free slot takes it
    valid = (k >= 0) & (k < slots.shape[0])
    won.store(where(valid & (old == -1), 1, 0))


@cutile.entry
def embed(z: Mut[Tensor[f32, ["BR", "D"]]], table: Tensor[f32, [-1, "D"]],
          ids: Tensor[i32, [-1]], BR: Const[int], D: Const[int]):
    rows = ids.load_tile((BR,), (block_id(0),)).reshape((BR, 1))
    cols = arange(D, i32).reshape((1, D))
    z.store(gather(table, (rows, cols), padding=-7.0))  # unknown ids read -7


@cutile.entry
def windows(z: Mut[Tensor[f32, ["B", 4]]], x: Tensor[f32, [-1]], fill: f32, B: Const[int]):
    # A 2-D tile of indices into a 1-D tensor: row r holds x[r - 2 : r + 2], `fill` outside.
    starts = (block_id(0) * B + arange(B, i32) - 2).reshape((B, 1))
    z.store(gather(x, starts + arange(4, i32).reshape((1, 4)), padding=fill))


@cutile.entry
def permute_scatter(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]],
                    perm: Tensor[i32, [-1]], B: Const[int]):
    # Lanes past the end read -1 from `perm`, an index outside `z`: they write nothing.
    to = gather(perm, block_id(0) * B + arange(B, i32), padding=-1)
    with cutile.unsafe():  # `perm` is a permutation: every element of `z` is written once
        scatter(z, to, load_tile_like(x, z))


@cutile.entry
def rank0(total: Atomic[Tensor[f32, []]], first: Atomic[Tensor[i32, []]],
          z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], scale: Tensor[f32, []],
          B: Const[int]):
    # A rank-0 tensor has one element, indexed by the empty tuple.
    t = load_tile_like(x, z) * gather(scale, ())
    z.store(t)
    atomic_add(total, (), t.sum())
    atomic_cas(first, (), -1, block_id(0))


# ------------------------------------------------------------------ numerics


@pytest.mark.parametrize(("n", "bins"), [(1000, 37), (64, 5), (4097, 300)])
def test_histogram_counts_every_in_range_value(n: int, bins: int) -> None:
    xs = rng.integers(-5, bins + 5, n).astype(np.int32)  # out of range on both sides
    counts, _ = histogram(api.zeros([bins], i32), api.from_numpy(xs), B=64,
                          grid=(cdiv(n, 64),)).sync()
    inside = xs[(xs >= 0) & (xs < bins)]
    np.testing.assert_array_equal(counts.to_numpy(), np.bincount(inside, minlength=bins))


@pytest.mark.parametrize(("m", "n"), [(200, 96), (37, 40)])
def test_split_k_column_sums(m: int, n: int) -> None:
    xs = rng.standard_normal((m, n)).astype(np.float32)
    out, _ = column_sums(api.zeros([n], f32), api.from_numpy(xs), BR=16, BC=32,
                         grid=(cdiv(m, 16), cdiv(n, 32))).sync()
    np.testing.assert_allclose(out.to_numpy(), xs.astype(np.float64).sum(axis=0),
                               rtol=1e-4, atol=1e-4)


def test_split_k_matmul_into_an_atomic_output() -> None:
    m, n, k = 96, 80, 128
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bm, bn, bk, ks = 32, 32, 16, 2
    grid = (cdiv(m, bm), cdiv(n, bn), cdiv(k, bk * ks))
    z, _, _ = splitk_matmul(api.zeros([m, n], f32), api.from_numpy(a), api.from_numpy(b),
                            BM=bm, BN=bn, BK=bk, KS=ks, grid=grid).sync()
    np.testing.assert_allclose(z.to_numpy(), a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-2, atol=1e-2)


def test_atomic_max_and_min() -> None:
    n, slots = 777, 23
    keys = rng.integers(-2, slots + 2, n).astype(np.int32)
    vals = rng.integers(-1000, 1000, n).astype(np.int32)
    hi0 = np.full(slots, -5000, np.int32)
    lo0 = np.full(slots, 5000, np.int64)
    hi, lo, _, _ = extremes(api.from_numpy(hi0), api.from_numpy(lo0), api.from_numpy(keys),
                            api.from_numpy(vals), B=32, grid=(cdiv(n, 32),)).sync()
    ok = (keys >= 0) & (keys < slots)
    want_hi, want_lo = hi0.copy(), lo0.copy()
    np.maximum.at(want_hi, keys[ok], vals[ok])
    np.minimum.at(want_lo, keys[ok], vals[ok].astype(np.int64))
    np.testing.assert_array_equal(hi.to_numpy(), want_hi)
    np.testing.assert_array_equal(lo.to_numpy(), want_lo)


def test_bitwise_atomics_and_exchange() -> None:
    n, slots = 500, 17
    keys = rng.integers(-1, slots + 1, n).astype(np.int32)
    vals = rng.integers(0, 1 << 20, n).astype(np.int32)
    outs = bit_ops(api.zeros([slots], i32), api.full([slots], -1, i32), api.zeros([slots], i32),
                   api.full([slots], np.nan, f32), api.from_numpy(keys), api.from_numpy(vals),
                   B=64, grid=(cdiv(n, 64),)).sync()
    any_set, all_set, parity, last = (t.to_numpy() for t in outs[:4])
    for s in range(slots):
        mine = vals[keys == s]
        assert any_set[s] == np.bitwise_or.reduce(mine, initial=0)
        assert all_set[s] == np.bitwise_and.reduce(mine, initial=-1)
        assert parity[s] == np.bitwise_xor.reduce(mine, initial=0)
        # the last exchange wins: whichever ran last, one of the values written there
        assert (np.isnan(last[s]) and mine.size == 0) or last[s] in mine.astype(np.float32)


def test_compare_and_swap_elects_one_winner_per_slot() -> None:
    n, slots = 300, 40
    keys = rng.integers(-3, slots + 3, n).astype(np.int32)
    won, table, _ = claim(api.zeros([n], i32).partition([64]), api.full([slots], -1, i32),
                          api.from_numpy(keys)).sync()
    won, table = won.unpartition().to_numpy(), table.to_numpy()
    for s in range(slots):
        lanes = np.flatnonzero(keys == s)
        winners = lanes[won[lanes] == 1]
        if lanes.size == 0:
            assert table[s] == -1
        else:
            assert winners.size == 1 and table[s] == winners[0]
    assert won[(keys < 0) | (keys >= slots)].sum() == 0


def test_embedding_gather_reads_padding_for_unknown_ids() -> None:
    vocab, d, n = 50, 16, 37
    table = rng.standard_normal((vocab, d)).astype(np.float32)
    ids = rng.integers(-4, vocab + 4, n).astype(np.int32)
    z, _, _ = embed(api.zeros([n, d], f32).partition([8, d]), api.from_numpy(table),
                    api.from_numpy(ids)).sync()
    ok = (ids >= 0) & (ids < vocab)
    want = np.where(ok[:, None], table[np.clip(ids, 0, vocab - 1)], -7.0)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)


def test_gather_with_a_2d_index_tile_and_a_runtime_padding() -> None:
    n = 45
    xs = rng.standard_normal(n).astype(np.float32)
    z, _, _ = windows(api.zeros([n, 4], f32).partition([16, 4]), api.from_numpy(xs),
                      9.5).sync()
    idx = np.arange(n)[:, None] - 2 + np.arange(4)[None, :]
    want = np.where((idx >= 0) & (idx < n), xs[np.clip(idx, 0, n - 1)], 9.5)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)


def test_unsafe_scatter_of_a_permutation() -> None:
    n = 300
    xs = rng.standard_normal(n).astype(np.float32)
    perm = rng.permutation(n).astype(np.int32)
    z, _, _ = permute_scatter(api.full([n], np.nan, f32).partition([64]), api.from_numpy(xs),
                              api.from_numpy(perm)).sync()
    want = np.empty(n, np.float32)
    want[perm] = xs
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)


def test_rank0_tensors_take_the_empty_index() -> None:
    n = 300
    xs = rng.standard_normal(n).astype(np.float32)
    total, first, z, _, _ = rank0(api.zeros([], f32), api.full([], -1, i32),
                                  api.zeros([n], f32).partition([64]), api.from_numpy(xs),
                                  api.full([], 2.5, f32)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs * np.float32(2.5))
    assert total.shape == () and first.shape == ()
    np.testing.assert_allclose(total.to_numpy(), (xs * np.float32(2.5)).sum(), rtol=1e-5)
    assert 0 <= int(first.to_numpy()) < cdiv(n, 64)  # one block's id: whichever came first


# ------------------------------------------------------------------ assembly


KERNELS = [
    (histogram, {"B": 64}),
    (column_sums, {"BR": 16, "BC": 32}),
    (splitk_matmul, {"BM": 32, "BN": 32, "BK": 16, "KS": 2}),
    (extremes, {"B": 32}),
    (bit_ops, {"B": 64}),
    (claim, {"B": 64}),
    (embed, {"BR": 8, "D": 16}),
    (windows, {"B": 16}),
    (permute_scatter, {"B": 64}),
    (rank0, {"B": 64}),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("kernel", "consts"), KERNELS, ids=lambda k: getattr(k, "name", ""))
def test_each_kernel_assembles_for_sm_90(kernel: cutile.EntryKernel, consts: dict[str, int]
                                         ) -> None:
    assert kernel.compile(target="sm_90", **consts).cubin[:4] == b"\x7fELF"

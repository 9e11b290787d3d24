"""Device values the checker read as compile-time constants (an adversarial review of the
one-reading rule, 2026-12). The checker takes a value whose polynomial has no device atom
as one the lowering folds exactly; the lowering folds only `ConstV`s. Where the device holds
the number in an `i32` (`b - b`, a block id past the grid's rank, a tile count, a merge of
equal constants into an `if` result, a device function's result carried out of a loop),
`(r * 2**30) // 2**30` wrapped on the device and not in the proof: each kernel below was
accepted and then stored at tile -4 (CT6913). Each is now rejected, or runs safely."""

from __future__ import annotations

import numpy as np

import cutile
from cutile import api
from cutile.core import Mut, Tensor, block_id, full, i32, num_blocks, num_tiles

from .harness import assert_sound, outcome


def part(n: int, tile: int) -> api.Partition:  # type: ignore[name-defined]
    return api.zeros([n], i32).partition([tile])


# -- a device result whose polynomial cancelled ------------------------------------------


@cutile.entry
def cancelled(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    y = b - b                          # 0, an i32 on the device
    z.store(full((4,), b + 1, i32), index=(b + (y + 2**30 + 2**30) // 2**30 - 2,))


@cutile.entry
def cancelled_in_ring(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    b = block_id(0)
    y = b - b
    z.store(x.load_tile((4,), (b + y,)) + (b * 0 + 3), index=(b + y,))


def test_a_cancelled_device_result_stays_a_device_value() -> None:
    assert_sound(cancelled, lambda: ((part(32, 4),), {}))
    # the exact value is still followed where the index is taken modulo 2^32
    xs = np.random.default_rng(7).integers(1, 1000, 32).astype(np.int32)
    what, detail = outcome(cancelled_in_ring, lambda: ((part(32, 4), api.from_numpy(xs)), {}))
    assert what == "ran", (what, detail)
    z, _ = cancelled_in_ring(part(32, 4), api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs + 3)


# -- grid queries past the grid's rank ---------------------------------------------------


@cutile.entry
def block_id_past_rank(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    y = block_id(1)                    # 0 on a rank-1 grid, but an i32 on the device
    z.store(full((4,), b + 1, i32), index=(b + (y + 2**30 + 2**30) // 2**30 - 2,))


@cutile.entry
def num_blocks_past_rank(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    y = num_blocks(1)
    z.store(full((4,), b + 1, i32), index=(b + (y * 2**30 + 2**30) // 2**30 - 2,))


@cutile.entry
def num_tiles_past_rank(z: Mut[Tensor[i32, [4, 4]]], o: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    y = num_tiles(z, 1)                # 1 where the grid has rank 1 (o's), an i32 count
    o.store(full((4,), b + 1, i32), index=(b + (y * 2**30 + 2**30) // 2**30 - 2,))
    z.store(full((4, 4), b + 1, i32))


@cutile.entry
def block_id_past_rank_in_index(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(b + block_id(1) * num_blocks(1),))


def test_grid_queries_past_the_rank_are_device_values() -> None:
    assert_sound(block_id_past_rank, lambda: ((part(32, 4),), {}))
    assert_sound(num_blocks_past_rank, lambda: ((part(32, 4),), {}))
    assert_sound(num_tiles_past_rank,
                 lambda: ((api.zeros([32, 4], i32).partition([4, 4]), part(32, 4)), {}))
    what, detail = outcome(block_id_past_rank_in_index, lambda: ((part(32, 4),), {}))
    assert what == "ran", (what, detail)


# -- equal constants merged into a device value ------------------------------------------


@cutile.entry
def bool_and_int(z: Mut[Tensor[i32, [4]]], s: i32):
    b = block_id(0)
    r = 1
    if s > 0:
        r = True                       # 1 on both paths; the merge was an i32
    z.store(full((4,), b + 1, i32), index=(b + (r * 2**30 + 2**30) // 2**30 - 2,))


@cutile.entry
def equal_tuples(z: Mut[Tensor[i32, [4]]], s: i32):
    b = block_id(0)
    t = (5, 1)
    if s > 0:
        t = (5, 1)                     # a new tuple: its items were merged as i32s
    z.store(full((4,), b + 1, i32), index=(b + (t[0] * 2**30) // 2**30 - 5,))


@cutile.entry
def equal_arms(z: Mut[Tensor[i32, [4]]], s: i32):
    b = block_id(0)
    r = int(5 if s > 0 else 5)  # noqa: RUF034, RUF046  (it was a select of two f32 fives)
    z.store(full((4,), b + 1, i32), index=(b + (r * 2**30) // 2**30 - 5,))


@cutile.device
def five_after_a_test(s):
    if s > 0:
        return 5
    return 5


@cutile.device
def five_in_a_loop(s):
    for _ in range(s):
        return 5
    return 5


@cutile.entry
def result_after_a_test(z: Mut[Tensor[i32, [4]]], s: i32):
    b = block_id(0)
    r = five_after_a_test(s)
    z.store(full((4,), b + 1, i32), index=(b + (r * 2**30) // 2**30 - 5,))


@cutile.entry
def result_from_a_loop(z: Mut[Tensor[i32, [4]]], s: i32):
    b = block_id(0)
    r = five_in_a_loop(s)
    z.store(full((4,), b + 1, i32), index=(b + (r * 2**30) // 2**30 - 5,))


@cutile.entry
def result_from_a_loop_in_ring(z: Mut[Tensor[i32, [4]]], s: i32):
    b = block_id(0)
    z.store(full((4,), b + 1, i32), index=(b + five_in_a_loop(s) - 5,))


def test_equal_constants_on_two_paths() -> None:
    for k in (bool_and_int, equal_tuples, equal_arms, result_after_a_test,
              result_from_a_loop):
        for s in (1, 0):
            assert_sound(k, lambda s=s: ((part(32, 4), s), {}))
    # the compiler keeps a constant that every path gives: these run, tile b at b
    for k in (bool_and_int, equal_tuples, result_after_a_test):
        what, detail = outcome(k, lambda: ((part(32, 4), 3), {}))
        assert what == "ran", (k.name, what, detail)
    (z,) = result_from_a_loop_in_ring(part(32, 4), 2).sync()[:1]
    assert z.unpartition().to_numpy().tolist() == [b + 1 for b in range(8) for _ in range(4)]

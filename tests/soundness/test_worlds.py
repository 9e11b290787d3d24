"""Regressions for tests of `Const`s read as worlds (`check/paths.rs`): the checker reads
each branch of `if C == 2:` as the live one and takes two tests with one key to the same
branch, so a key must name one value in every specialization (an adversarial review,
2026-12-02). Each kernel is judged by the interpreter's race detector (`assert_sound`)."""

from __future__ import annotations

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, full, i32

from .harness import assert_sound, outcome


def part(n: int, tile: int) -> api.Partition:  # type: ignore[name-defined]
    return api.zeros([n], i32).partition([tile])


def arange(n: int) -> object:
    return api.from_numpy(np.arange(n, dtype=np.int32))


@cutile.device
def is_four(x, n):
    if x.shape[0] == 4:
        return n
    return n + 1


# `is_four(x, C)` and `is_four(y, C)` had one key, `is_four(?, $C)[$C, ($C Add 1)]` (an
# input's extent is `?` among the arguments), so the second test was taken to the branch of
# the first; with S = 5 and T = 4 the compiler took the other: `p` over `z2` (one sub-tile
# of 2) stored four sub-tiles, into the neighbours' tiles.


@cutile.entry
def calls_on_two_inputs(z1: Mut[Tensor[i32, [8]]], z2: Mut[Tensor[i32, [2]]],
                        x: Tensor[i32, ["S"]], y: Tensor[i32, ["T"]], C: Const[int],
                        S: Const[int], T: Const[int]):
    if is_four(x, C) == C:
        w = z1
    else:
        w = z2
    p = w.partition_mut((2,))
    if is_four(y, C) == C:
        for j in range(4):
            p.store(full((2,), block_id(0) + 1, i32), (j,))
    else:
        p.store(full((2,), block_id(0) + 1, i32), (0,))


@cutile.entry
def calls_on_one_input(z1: Mut[Tensor[i32, [8]]], z2: Mut[Tensor[i32, [2]]],
                       x: Tensor[i32, ["S"]], C: Const[int], S: Const[int]):
    if is_four(x, C) == C:
        w = z1
    else:
        w = z2
    p = w.partition_mut((2,))
    if is_four(x, C) == C:          # the same value: the same branch as above
        for j in range(4):
            p.store(full((2,), block_id(0) + 1, i32), (j,))
    else:
        p.store(full((2,), block_id(0) + 1, i32), (0,))


def test_a_device_result_key_names_the_tests_that_select_it() -> None:
    what, detail = outcome(calls_on_two_inputs, lambda: (
        (part(32, 8), part(8, 2), arange(5), arange(4)), {"C": 1, "S": 5, "T": 4}))
    assert what == "rejected" and "CT2006" in detail, (what, detail)
    # one input twice: one value, one branch, and the kernel is accepted and right
    for s in (4, 5):
        assert_sound(calls_on_one_input, lambda s=s: (
            (part(32, 8), part(8, 2), arange(s)), {"C": 1, "S": s}))
        z1, z2, _ = calls_on_one_input(part(32, 8), part(8, 2), arange(s), C=1, S=s).sync()
        got1, got2 = z1.unpartition().to_numpy(), z2.unpartition().to_numpy()
        if s == 4:
            np.testing.assert_array_equal(got1, np.repeat(np.arange(1, 5), 8))
            assert not got2.any()
        else:
            np.testing.assert_array_equal(got2, np.arange(1, 5).repeat(2))
            assert not got1.any()


@cutile.device
def pick(a, b, n):
    if n == 1:
        return a
    return b


# A device function that returned input `a` in one world and `b` in the other gave its
# caller a value the checker did not follow as a tensor: the load through it had no fact,
# and the compiler refused it as an internal error (CT9002) instead of a checker error.


@cutile.entry
def load_through_a_chosen_return(z: Mut[Tensor[i32, [4]]], a: Tensor[i32, [64]],
                                 b: Tensor[i32, [4]], C: Const[int]):
    x = pick(a, b, C)
    z.store(x.load_tile((4,), (block_id(0) + 3,)))


def test_a_device_function_returning_two_tensors_is_refused_by_the_checker() -> None:
    what, detail = outcome(load_through_a_chosen_return,
                           lambda: ((part(16, 4), arange(64), arange(4)), {"C": 2}))
    assert what == "rejected" and "CT1010" in detail and "returns a different tensor" in detail, (
        what, detail)

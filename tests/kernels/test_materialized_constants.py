"""A product of `Const`s the device receives as one constant: the checker takes it as 32-bit
(`width::materialized`: the lowering refuses an `i32` constant past 32 bits, CT3052), which
proves recombined digits such as `(x % A) * B` fit. That holds only where the constant is an
`i32` one of code that is compiled. Before, three kernels got it without that, and each was
accepted and stored at tile -65536 (the interpreter's detector, CT6913): the product met an
`i64` scalar (an `i64` constant), an extent of a launch with 64-bit indices (an `i64`
constant too), or sat in the branch of a `Const` test that the specialization never
compiles. With A = B = 2^16 and C = 2^15, `((b + C) % A) * B` is 2^31 + b * 2^16, which
wraps in 32 bits, so `... // B - C` is b - 2^16 on the device, not b."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f32, full, i8, i64


@pytest.fixture(autouse=True)
def _interpreted(interpreter: None) -> None:
    """On the interpreter, whose detector sees every access (conftest.py)."""


@cutile.entry
def next_to_i64(z: Mut[Tensor[i8, ["A"]]], x: Tensor[i8, ["B"]], s: i64, C: Const[int],
                A: Const[int], B: Const[int]):
    w = s + A * B  # noqa: F841  (an i64 constant: never refused past 32 bits)
    z.store(full((A,), 1, i8), index=((((block_id(0) + C) % A) * B) // B - C,))


@cutile.entry
def in_a_dead_branch(z: Mut[Tensor[i8, ["A"]]], x: Tensor[i8, ["B"]], C: Const[int],
                     D: Const[int], A: Const[int], B: Const[int]):
    if D == 0:  # compiled only where D == 0
        w = block_id(0) + A * B  # noqa: F841
    z.store(full((A,), 1, i8), index=((((block_id(0) + C) % A) * B) // B - C,))


@cutile.entry
def in_a_conditional_expression(z: Mut[Tensor[i8, ["A"]]], x: Tensor[i8, ["B"]],
                                C: Const[int], D: Const[int], A: Const[int], B: Const[int]):
    # the same as a conditional expression, whose arms the checker does not split by D
    # (found by the fuzzer's `const-product` kernels, tests/soundness/worlds.py)
    w = block_id(0) + A * B if D == 0 else 0  # noqa: F841
    z.store(full((A,), 1, i8), index=((((block_id(0) + C) % A) * B) // B - C,))


@cutile.entry
def next_to_an_extent(z: Mut[Tensor[i8, ["A"]]], x: Tensor[i8, ["B"]], y: Tensor[f32, [-1]],
                      C: Const[int], A: Const[int], B: Const[int]):
    w = y.shape[0] + A * B  # noqa: F841  (i64 where the launch has 64-bit indices)
    z.store(full((A,), 1, i8), index=((((block_id(0) + C) % A) * B) // B - C,))


A = B = 2**16


def launch(kernel: Any, *extra: Any, **consts: Any) -> np.ndarray | None:
    """The output's first element per tile, or None where the checker or the launcher
    refused the kernel (either is sound; a store outside `z` is a RaceError)."""
    z = api.zeros([3 * A], i8).partition([A])
    x = api.from_numpy(np.arange(B, dtype=np.int64).astype(np.int8))
    try:
        with cutile.check_races():
            out = kernel(z, x, *extra, C=2**15, **consts).sync()
    except (cutile.KernelCheckError, cutile.LaunchError):
        return None
    got: np.ndarray = out[0].unpartition().to_numpy()[::A]
    return got


def test_a_const_product_next_to_an_i64_scalar_proves_nothing_in_32_bits() -> None:
    got = launch(next_to_i64, 5)
    assert got is None or got.tolist() == [1, 1, 1]


def test_a_const_product_in_a_branch_never_compiled_proves_nothing() -> None:
    got = launch(in_a_dead_branch, D=1)
    assert got is None or got.tolist() == [1, 1, 1]


def test_a_const_product_in_an_arm_of_a_conditional_expression_proves_nothing() -> None:
    got = launch(in_a_conditional_expression, D=1)
    assert got is None or got.tolist() == [1, 1, 1]


def test_a_const_product_next_to_a_64_bit_extent_proves_nothing() -> None:
    data = api.from_numpy(np.arange(8, dtype=np.float32))
    y = data[0:1:2**31]  # a stride past i32: the launch's indices are 64-bit
    got = launch(next_to_an_extent, y)
    assert got is None or got.tolist() == [1, 1, 1]


@cutile.entry
def digits(z: Mut[Tensor[i8, ["A"]]], x: Tensor[i8, ["B"]], A: Const[int], B: Const[int]):
    w = block_id(0) + A * B  # noqa: F841  (an i32 constant: refused past 32 bits)
    b = block_id(0)
    z.store(full((A,), 1, i8), index=(((b % A) * B) // B + (b // A) * A,))


def test_a_const_product_next_to_a_block_id_still_proves_recombined_digits() -> None:
    # the rule stays where it holds: `b + A * B` is an i32 constant, so `(b % A) * B` fits
    # with no launch check (without that line: `A * B <= B + 2147483647` at launch)
    assert [o.discharged for o in digits.check_report()] == ["static"]
    z = api.zeros([3 * 16], i8).partition([16])
    with cutile.check_races():
        z = digits(z, api.zeros([4], i8)).sync()[0]
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.ones(48, np.int8))

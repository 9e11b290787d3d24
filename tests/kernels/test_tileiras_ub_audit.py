"""Tile IR's undefined cases, audited op by op against what the lowering emits (the shift
and float -> int cases are in `test_int_semantics.py`).

Each kernel below reaches one edge case of an op whose result the language defines: the
defined value is pinned on the active backend, and with tileiras each compiles to code that
keeps its store (tileiras compiled kernels that reached undefined behaviour to a lone
`EXIT`, bounds check and store gone). An i32 `mma` sum past the 32-bit range is undefined
in cutile (the GPU saturates it on the tensor cores and wraps it elsewhere): the interpreter
stops there."""

from __future__ import annotations

import numpy as np
import pytest
from test_int_semantics import assert_store_kept, sass_instructions

import cutile
from cutile import api
from cutile.core import (
    Atomic,
    Mut,
    Tensor,
    arange,
    atomic_add,
    atomic_cas,
    cdiv,
    cumsum,
    extract,
    full,
    gather,
    i8,
    i32,
    i64,
    mma,
    prod,
    sum,
    u32,
)
from cutile.errors import InterpreterError


@cutile.entry
def abs_of_int_min(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), (abs(full((), -2**31, i32)) - (-2**31),)))


@cutile.entry
def neg_of_int_min(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), (-full((), -2**31, i32) - (-2**31),)))


@cutile.entry
def wrapping_mul_add_pow(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    w = full((), 2**30, i32) * 4 + (full((), 2**31 - 1, i32) + 1 - (-2**31))
    z.store(x.load_tile((4,), (w + full((), 2, i32) ** full((), 40, i32),)))


@cutile.entry
def divisions_by_zero_and_minus_one(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    q = full((), -2**31, i32) // full((), -1, i32) - (-2**31)
    r = full((), 5, i32) % full((), 0, i32) + cdiv(full((), 0, i32), full((), 0, i32))
    z.store(x.load_tile((4,), (q + r,)))


@cutile.entry
def wide_and_unsigned_indices(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), (full((), 2**32, i64).astype(i32) + (full((), 2**32 - 1, u32)
                                                                   + 1).astype(i32),)))


@cutile.entry
def wrapping_reductions(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    s = sum(full((4,), 2**30, i32)) + prod(full((4,), 2**16, i32))
    c = extract(cumsum(full((4,), 2**30, i32)), (3,), (1,)).reshape(())
    e = extract(full((8,), 0, i32), (full((), 2**31 - 1, i32),), (1,)).reshape(())
    z.store(x.load_tile((4,), (s + c + e,)))


@cutile.entry
def gather_with_overflowing_offsets_outside(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    # lanes 1-3 lie outside (masked off) and their byte offsets pass 2^63 (`offset` is
    # undefined there, but only its result, which no masked-off lane reads)
    i = gather(x, arange(0, 4, dtype=i64) * 2**61)
    z.store(x.load_tile((4,), (extract(i, (0,), (1,)).reshape(()) - 100,)))


@cutile.entry
def atomic_outside_returns_unspecified(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]],
                                       c: Atomic[Tensor[i32, [-1]]]):
    # an unspecified value (not a poison one): the index is checked on the device
    old = atomic_add(c, full((), -1, i32), 1)
    swapped = atomic_cas(c, full((), -1, i32), 3, 1)  # outside: gives `expected` back
    z.store(x.load_tile((4,), (old * 0 + swapped - 3,)))


DEFINED = [abs_of_int_min, neg_of_int_min, wrapping_mul_add_pow,
           divisions_by_zero_and_minus_one, wide_and_unsigned_indices, wrapping_reductions,
           gather_with_overflowing_offsets_outside, atomic_outside_returns_unspecified]


def _args(kernel: cutile.EntryKernel) -> list[object]:
    x = api.from_numpy(np.arange(16, dtype=np.int32) + 100)
    out: list[object] = [api.full([4], -1, i32).partition([4]), x]
    if kernel is atomic_outside_returns_unspecified:
        out.append(api.zeros([8], i32))
    return out


@pytest.mark.parametrize("kernel", DEFINED, ids=lambda k: k.name)
def test_defined_edge_cases_load_tile_zero(kernel: cutile.EntryKernel) -> None:
    z = kernel(*_args(kernel)).sync()[0]
    assert z.unpartition().to_numpy().tolist() == [100, 101, 102, 103]


@pytest.mark.tileiras
@pytest.mark.parametrize("kernel", DEFINED, ids=lambda k: k.name)
def test_tileiras_keeps_the_store_of_defined_edge_cases(kernel: cutile.EntryKernel) -> None:
    assert_store_kept(kernel)


# -- the i32 sum of `mma` --------------------------------------------------------------------


@cutile.entry
def mma_i8(z: Mut[Tensor[i32, [64, 64]]], a: Tensor[i8, [64, 64]], b: Tensor[i8, [64, 64]]):
    z.store(mma(a.load_tile((64, 64), (0, 0)), b.load_tile((64, 64), (0, 0)), z.load()))


def _mma(acc: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    z = mma_i8(api.full([64, 64], acc, i32).partition([64, 64]), api.from_numpy(a),
               api.from_numpy(b)).sync()[0]
    return z.unpartition().to_numpy()


def test_mma_sums_that_stay_in_i32_are_exact() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (64, 64), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 64), dtype=np.int8)
    top = 2**31 - 1 - 64 * 128 * 128  # no order of the products passes 2^31 - 1
    want = a.astype(np.int64) @ b.astype(np.int64) + top
    np.testing.assert_array_equal(_mma(top, a, b), want)


def test_an_mma_sum_past_i32_stops_the_interpreter() -> None:
    # The GPU saturates it (IGMMA.SAT), or wraps it on IMAD for small tiles: the
    # interpreter wrapped and gave one of the answers as the only one
    from cutile.runtime import driver

    if driver.backend() != "interpreter":
        pytest.skip("the interpreter's check (a GPU gives its own answer)")
    a = np.full((64, 64), 127, np.int8)
    b = np.full((64, 64), 127, np.int8)
    with pytest.raises(InterpreterError) as info:
        _mma(2**31 - 64 * 127 * 127, a, b)  # the exact sum is 2^31
    assert info.value.code == "CT6910" and "outside the 32-bit range" in str(info.value)
    c = np.full((64, 64), -128, np.int8)
    with pytest.raises(InterpreterError):  # the exact sum is -2^31 - 1
        _mma(-(2**31) + 64 * 127 * 128 - 1, a, c)
    # The products cancel to -4064 and the exact sum -2^31 + 936 fits, but an order that
    # adds the negative ones first passes -2^31 on the way: undefined too
    d = np.where(np.arange(64)[:, None] % 2 == 0, 127, -128).astype(np.int8) * np.ones(
        (64, 64), np.int8)
    with pytest.raises(InterpreterError):
        _mma(-(2**31) + 5000, a, d)


@pytest.mark.tileiras
def test_tileiras_saturates_i8_mma_on_the_tensor_cores() -> None:
    # why the interpreter cannot pick one answer past the range
    code = sass_instructions(mma_i8.compile("sm_90").cubin)
    assert any(ins.startswith("IGMMA") and ".SAT" in ins for ins in code), code


@pytest.mark.gpu
def test_the_gpu_saturates_an_mma_sum_past_i32() -> None:
    # The fact behind the interpreter's stop, on hardware: the tensor cores clamp at
    # 2^31 - 1 where the interpreter used to wrap to -2^31
    a = np.full((64, 64), 127, np.int8)
    got = _mma(2**31 - 64 * 127 * 127, a, a)
    assert (got == 2**31 - 1).all(), got[:2, :4]

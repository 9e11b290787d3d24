"""Tiled matrix multiply: a `for` loop over K carrying an mmaf accumulator."""

from __future__ import annotations

import numpy as np
import pytest

from cutile.dtypes import DType
from cutile.interpreter import Pointer, run
from cutile.ir import TileType, scalar

from .kit import const, dt, for_loop, i32, load, mmaf, new_kernel, ptr, raw, store, term, view

RNG = np.random.default_rng(3)


def gemm_module(in_d: DType, acc_d: DType, bm: int, bn: int, bk: int):
    b, (cp, ap, bp, m, n, k) = new_kernel(
        [ptr(acc_d), ptr(in_d), ptr(in_d), scalar(dt.i32), scalar(dt.i32), scalar(dt.i32)], "gemm"
    )
    bx, by, _ = b.block_ids()
    pa = view(b, ap, [m, k], [k, 1], [bm, bk], padding="zero")
    pb = view(b, bp, [k, n], [n, 1], [bk, bn], padding="zero")
    pc = view(b, cp, [m, n], [n, 1], [bm, bn])
    _, num_k = raw(b, "get_index_space_shape", [pa], [scalar(dt.i32)] * 2).results
    acc0 = const(b, 0.0, acc_d, (bm, bn))
    with for_loop(b, i32(b, 0), num_k, i32(b, 1), [acc0]) as (kk, (acc,), op):
        ta, tb = load(b, pa, [bx, kk]), load(b, pb, [kk, by])
        term(b, "continue", [mmaf(b, ta, tb, acc)])
    store(b, op.results[0], pc, [bx, by])
    return b.module


@pytest.mark.parametrize(("m", "n", "k"), [(100, 72, 88), (64, 64, 64)])
def test_f16_gemm_against_float64(m: int, n: int, k: int) -> None:
    a = RNG.standard_normal((m, k)).astype(np.float16)
    bm_ = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    mod = gemm_module(dt.f16, dt.f32, 32, 32, 16)
    run(
        mod,
        "gemm",
        (-(-m // 32), -(-n // 32), 1),
        [Pointer.to(c), Pointer.to(a), Pointer.to(bm_), m, n, k],
    )
    ref = a.astype(np.float64) @ bm_.astype(np.float64)
    rel = np.abs(c - ref).max() / np.abs(ref).max()
    assert rel < 1e-3
    # f32 accumulation of exact f16 products: much better than 1e-3 in fact
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_f16_accumulator_rounds_each_step_to_f16() -> None:
    m = n = k = 32
    a = RNG.standard_normal((m, k)).astype(np.float16)
    bm_ = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    mod = gemm_module(dt.f16, dt.f16, 16, 16, 8)
    run(mod, "gemm", (2, 2, 1), [Pointer.to(c), Pointer.to(a), Pointer.to(bm_), m, n, k])
    acc = np.zeros((m, n), np.float16)
    for kk in range(0, k, 8):  # each mmaf rounds once to f16
        acc = (
            a[:, kk : kk + 8].astype(np.float64) @ bm_[kk : kk + 8].astype(np.float64) + acc
        ).astype(np.float16)
    np.testing.assert_array_equal(c, acc)


def test_batched_mmaf_and_mmai() -> None:
    b, (op_, ap, bp) = new_kernel([ptr(dt.i32), ptr(dt.i8), ptr(dt.i8)], "mmai")
    c0 = i32(b, 0)
    ta = load(b, view(b, ap, [2, 8, 16], [128, 16, 1], [2, 8, 16]), [c0] * 3)
    tb = load(b, view(b, bp, [2, 16, 4], [64, 4, 1], [2, 16, 4]), [c0] * 3)
    acc = const(b, 7, dt.i32, (2, 8, 4))
    r = raw(
        b,
        "mmai",
        [ta, tb, acc],
        [TileType((2, 8, 4), dt.i32)],
        signedness_lhs="signed",
        signedness_rhs="unsigned",
    ).result
    store(b, r, view(b, op_, [2, 8, 4], [32, 4, 1], [2, 8, 4]), [c0] * 3)
    a = RNG.integers(-128, 128, (2, 8, 16)).astype(np.int8)
    bb = RNG.integers(-128, 128, (2, 16, 4)).astype(np.int8)
    out = np.zeros((2, 8, 4), np.int32)
    run(b.module, "mmai", (1, 1, 1), [Pointer.to(out), Pointer.to(a), Pointer.to(bb)])
    expect = a.astype(np.int64) @ bb.view(np.uint8).astype(np.int64) + 7
    np.testing.assert_array_equal(out, expect)

"""reduce and scan: the region body is the combiner (fast single-op path and general path)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cutile.dtypes import DType
from cutile.interpreter import Pointer, run
from cutile.ir import TileType

from .kit import dt, i32, load, new_kernel, ptr, reduction, store, term, view

RNG = np.random.default_rng(5)


def run_2d(
    build: Any, x: np.ndarray, d: DType, outs: list[tuple[tuple[int, ...], DType]]
) -> list[np.ndarray]:
    """Load all of `x` as one tile, `build(b, tile) -> [values]`, store each result."""
    b, ps = new_kernel([ptr(d)] + [ptr(od) for _, od in outs], "r")
    c0 = i32(b, 0)
    shape = list(x.shape)
    strides = [int(s // x.itemsize) for s in x.strides]
    tile = load(b, view(b, ps[0], shape, strides, shape), [c0] * x.ndim)
    results = build(b, tile)
    bufs = []
    for r, p, (oshape, od) in zip(results, ps[1:], outs, strict=True):
        ostr = [int(np.prod(oshape[i + 1 :])) for i in range(len(oshape))]
        store(b, r, view(b, p, list(oshape), ostr, list(oshape)), [c0] * len(oshape))
        bufs.append(np.zeros(oshape, od.numpy_name))
    run(
        b.module,
        "r",
        (1, 1, 1),
        [Pointer.to(np.ascontiguousarray(x))] + [Pointer.to(o) for o in bufs],
    )
    return bufs


def simple_reduce(name: str, dim: int, ident: Any, **attrs: Any):
    def build(b, t):  # type: ignore[no-untyped-def]
        with reduction(b, "reduce", [t], dim, [ident]) as (args, op):
            term(b, "yield", [b.binary(name, args[0], args[1], **attrs)])
        return op.results

    return build


def test_row_sum_and_row_max() -> None:
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    (s,) = run_2d(simple_reduce("addf", 1, 0.0), x, dt.f32, [((64,), dt.f32)])
    np.testing.assert_allclose(s, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    (m,) = run_2d(simple_reduce("maxf", 1, -np.inf), x, dt.f32, [((64,), dt.f32)])
    np.testing.assert_array_equal(m, x.max(1))
    (c,) = run_2d(simple_reduce("addf", 0, 0.0), x, dt.f32, [((128,), dt.f32)])
    np.testing.assert_allclose(c, x.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


def test_integer_reductions_wrap() -> None:
    x = RNG.integers(-(2**31), 2**31 - 1, (8, 64)).astype(np.int32)
    (s,) = run_2d(simple_reduce("addi", 1, 0), x, dt.i32, [((8,), dt.i32)])
    expect = [((int(v) + 2**31) % 2**32) - 2**31 for v in x.astype(np.int64).sum(1)]
    assert s.tolist() == expect
    (m,) = run_2d(simple_reduce("maxi", 1, 0, signedness="unsigned"), x, dt.i32, [((8,), dt.i32)])
    np.testing.assert_array_equal(m.view(np.uint32), x.view(np.uint32).max(1))


def test_general_body_runs_as_a_region() -> None:
    x = RNG.standard_normal((16, 32)).astype(np.float32)

    def build(b, t):  # type: ignore[no-untyped-def]
        with reduction(b, "reduce", [t], 1, [-np.inf]) as (args, op):
            gt = b.cmp("cmpf", "greater_than", args[0], args[1])
            term(b, "yield", [b.select(gt, args[0], args[1])])
        return op.results

    (m,) = run_2d(build, x, dt.f32, [((16,), dt.f32)])
    np.testing.assert_array_equal(m, x.max(1))


def test_variadic_argmax_reduce() -> None:
    x = RNG.integers(0, 20, (8, 64)).astype(np.float32)  # many ties: first index must win

    def build(b, t):  # type: ignore[no-untyped-def]
        idx = b.broadcast(b.reshape(b.iota(64, dt.i32), (1, 64)), (8, 64))
        with reduction(b, "reduce", [t, idx], 1, [-np.inf, 2**31 - 1]) as (a, op):
            ve, va, ie, ia = a
            gt = b.cmp("cmpf", "greater_than", ve, va)
            eq = b.cmp("cmpf", "equal", ve, va)
            lt = b.cmp("cmpi", "less_than", ie, ia)
            take = b.binary("ori", gt, b.binary("andi", eq, lt))
            term(b, "yield", [b.select(take, ve, va), b.select(take, ie, ia)])
        return op.results

    vals, idx = run_2d(build, x, dt.f32, [((8,), dt.f32), ((8,), dt.i32)])
    np.testing.assert_array_equal(vals, x.max(1))
    np.testing.assert_array_equal(idx, x.argmax(1))


def test_non_commutative_combiner_keeps_order() -> None:
    # acc (+) elem := elem is associative but not commutative: reduce -> last, scan -> x.
    x = RNG.standard_normal((4, 32)).astype(np.float32)

    def build(b, t):  # type: ignore[no-untyped-def]
        with reduction(b, "reduce", [t], 1, [0.0]) as (args, op):
            term(b, "yield", [args[0]])
        with reduction(b, "scan", [t], 1, [0.0], reverse=False) as (args, sop):
            term(b, "yield", [args[0]])
        return [op.results[0], sop.results[0]]

    last, same = run_2d(build, x, dt.f32, [((4,), dt.f32), ((4, 32), dt.f32)])
    np.testing.assert_array_equal(last, x[:, -1])
    np.testing.assert_array_equal(same, x)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_cumsum(reverse: bool) -> None:
    x = RNG.integers(-1000, 1000, (8, 64)).astype(np.int32)

    def build(b, t):  # type: ignore[no-untyped-def]
        with reduction(b, "scan", [t], 1, [0], reverse=reverse) as (args, op):
            term(b, "yield", [b.binary("addi", args[0], args[1])])
        return op.results

    (s,) = run_2d(build, x, dt.i32, [((8, 64), dt.i32)])
    expect = np.cumsum(x[:, ::-1], 1)[:, ::-1] if reverse else np.cumsum(x, 1)
    np.testing.assert_array_equal(s, expect)


def test_scan_with_general_body_along_dim0() -> None:
    x = RNG.standard_normal((32, 4)).astype(np.float32)

    def build(b, t):  # type: ignore[no-untyped-def]
        with reduction(b, "scan", [t], 0, [-np.inf]) as (args, op):
            gt = b.cmp("cmpf", "greater_than", args[0], args[1])
            term(b, "yield", [b.select(gt, args[0], args[1])])
        return op.results

    (s,) = run_2d(build, x, dt.f32, [((32, 4), dt.f32)])
    np.testing.assert_array_equal(s, np.maximum.accumulate(x, 0))


def test_reduce_result_type() -> None:
    x = np.ones((4, 8), np.float32)

    def build(b, t):  # type: ignore[no-untyped-def]
        with reduction(b, "reduce", [t], 0, [0.0]) as (args, op):
            term(b, "yield", [b.binary("addf", args[0], args[1])])
        assert op.results[0].type == TileType((8,), dt.f32)
        return op.results

    (s,) = run_2d(build, x, dt.f32, [((8,), dt.f32)])
    assert (s == 4).all()

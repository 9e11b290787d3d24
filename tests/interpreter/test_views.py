"""tensor_view / partition_view semantics: dim_map, padding, masked stores, strides, bounds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile.interpreter import InterpreterError, Pointer, poison, run
from cutile.ir import scalar

from .kit import (
    POISON_BYTE,
    dt,
    i32,
    load,
    new_kernel,
    offset,
    poisoned,
    ptr,
    raw,
    store,
    store_ptr,
    view,
)

RNG = np.random.default_rng(99)


def test_2d_exp_through_a_transposing_dim_map() -> None:
    m, n, t0, t1 = 50, 37, 8, 16  # ragged in both dimensions
    b, (ap, bp, cp) = new_kernel([ptr(dt.f32)] * 3, "exp2d")
    bx, by, _ = b.block_ids()
    # Tile dim 0 (8) walks tensor dim 1 (columns), tile dim 1 (16) walks rows.
    pa = view(b, ap, [m, n], [n, 1], [t0, t1], dim_map=[1, 0], padding="zero")
    pb = view(b, bp, [m, n], [n, 1], [t0, t1], dim_map=[1, 0])
    # C is A transposed (n x m, row-major), cut with the identity dim_map.
    pc = view(b, cp, [n, m], [m, 1], [t0, t1])
    tile = load(b, pa, [bx, by])
    store(b, b.unary("exp", tile), pb, [bx, by])
    store(b, tile, pc, [bx, by])
    a = RNG.standard_normal((m, n)).astype(np.float32)
    out_b = np.zeros((m, n), np.float32)
    out_c = np.zeros((n, m), np.float32)
    grid = (math.ceil(n / t0), math.ceil(m / t1), 1)
    run(b.module, "exp2d", grid, [Pointer.to(a), Pointer.to(out_b), Pointer.to(out_c)])
    np.testing.assert_allclose(out_b, np.exp(a.astype(np.float64)), rtol=1e-6)
    np.testing.assert_array_equal(out_c, a.T)


PADS = {"zero": 0.0, "neg_zero": -0.0, "nan": np.nan, "pos_inf": np.inf, "neg_inf": -np.inf}


@pytest.mark.parametrize("padding", [*PADS, None])
def test_float_padding_modes(padding: str | None) -> None:
    b, (xp, op) = new_kernel([ptr(dt.f32), ptr(dt.f32)], "pad")
    c0 = i32(b, 0)
    tile = load(b, view(b, xp, [10], [1], [16], padding=padding), [c0])
    store(b, tile, view(b, op, [16], [1], [16]), [c0])
    x = RNG.standard_normal(10).astype(np.float32)
    out = np.zeros(16, np.float32)
    run(b.module, "pad", (1, 1, 1), [Pointer.to(x), Pointer.to(out)])
    np.testing.assert_array_equal(out[:10], x)
    expect = np.float32(PADS[padding] if padding else np.nan)
    np.testing.assert_array_equal(out[10:], np.full(6, expect))
    np.testing.assert_array_equal(np.signbit(out[10:]), np.signbit(np.full(6, expect)))


@pytest.mark.parametrize("padding", ["zero", None])
def test_integer_padding_is_zero_or_a_visible_poison(padding: str | None) -> None:
    b, (xp, op) = new_kernel([ptr(dt.i32), ptr(dt.i32)], "pad")
    c0 = i32(b, 0)
    tile = load(b, view(b, xp, [5], [1], [8], padding=padding), [c0])
    store(b, tile, view(b, op, [8], [1], [8]), [c0])
    x = RNG.integers(-100, 100, 5).astype(np.int32)
    out = np.zeros(8, np.int32)
    run(b.module, "pad", (1, 1, 1), [Pointer.to(x), Pointer.to(out)])
    np.testing.assert_array_equal(out[:5], x)
    expect = 0 if padding else poison(dt.i32)
    assert expect != 0 or padding
    assert (out[5:] == expect).all()
    if padding is None:
        assert out[5:].view(np.uint8).tolist() == [0xA5] * 12


def test_integer_view_with_float_padding_is_an_error() -> None:
    b, (xp,) = new_kernel([ptr(dt.i32)], "pad")
    load(b, view(b, xp, [5], [1], [8], padding="nan"), [i32(b, 0)])
    with pytest.raises(InterpreterError, match="padding"):
        run(b.module, "pad", (1, 1, 1), [Pointer.to(np.zeros(5, np.int32))])


def test_column_major_tensor_view() -> None:
    m, n = 24, 20
    b, (ap, op) = new_kernel([ptr(dt.f64), ptr(dt.f64)], "colmajor")
    bx, by, _ = b.block_ids()
    pa = view(b, ap, [m, n], [1, m], [8, 4])  # element (i, j) at i + j*m
    po = view(b, op, [m, n], [n, 1], [8, 4])
    store(b, load(b, pa, [bx, by]), po, [bx, by])
    a = RNG.standard_normal((m, n))
    a_colmajor = np.asfortranarray(a)
    buf = a_colmajor.T.copy()  # row-major bytes of A^T are A's column-major bytes
    out = np.zeros((m, n))
    run(b.module, "colmajor", (3, 5, 1), [Pointer.to(buf), Pointer.to(out)])
    np.testing.assert_array_equal(out, a)


def test_dynamic_shapes_and_shape_queries() -> None:
    b, (ap, qp, m, n, s0) = new_kernel(
        [ptr(dt.f32), ptr(dt.i64), scalar(dt.i32), scalar(dt.i32), scalar(dt.i64)], "q"
    )
    tv = b.make_tensor_view(ap, [m, n], [s0, 1])
    pv = b.make_partition_view(tv, [4, 8], dim_map=[1, 0])
    dims = raw(b, "get_tensor_shape", [tv], [scalar(dt.i64)] * 2).results
    space = raw(b, "get_index_space_shape", [pv], [scalar(dt.i64)] * 2).results
    for k, v in enumerate([*dims, *space]):
        store_ptr(b, offset(b, qp, i32(b, k)), v)
    a = np.zeros(13 * 16, np.float32)
    q = np.zeros(4, np.int64)
    run(b.module, "q", (1, 1, 1), [Pointer.to(a), Pointer.to(q), 13, 10, 16])
    # tile dim 0 (4) walks tensor dim 1 (10 -> 3 tiles), tile dim 1 (8) walks dim 0 (13 -> 2)
    assert q.tolist() == [13, 10, 3, 2]


def test_tensor_view_past_the_buffer_raises_with_location() -> None:
    b, (ap, n) = new_kernel([ptr(dt.f32), scalar(dt.i32)], "oob")
    view(b, ap, [n], [1], [16])
    with pytest.raises(InterpreterError) as info:
        run(b.module, "oob", (1, 1, 1), [Pointer.to(np.zeros(100, np.float32)), 101])
    err = info.value
    assert err.op == "make_tensor_view"
    assert err.location == "kernel.py:42:9"
    assert "out of bounds" in str(err) and "kernel.py:42:9" in str(err)
    # exactly the buffer is fine
    run(b.module, "oob", (1, 1, 1), [Pointer.to(np.zeros(100, np.float32)), 100])


def test_tile_index_outside_the_index_space_raises() -> None:
    b, (ap,) = new_kernel([ptr(dt.f32)], "idx")
    bx, _, _ = b.block_ids()
    load(b, view(b, ap, [64], [1], [16]), [bx])
    run(b.module, "idx", (4, 1, 1), [Pointer.to(np.zeros(64, np.float32))])
    with pytest.raises(InterpreterError, match="index space") as info:
        run(b.module, "idx", (5, 1, 1), [Pointer.to(np.zeros(64, np.float32))])
    assert info.value.block_id == (4, 0, 0)


def test_store_to_a_read_only_buffer_raises() -> None:
    b, (ap,) = new_kernel([ptr(dt.f32)], "ro")
    c0 = i32(b, 0)
    pv = view(b, ap, [8], [1], [8])
    store(b, load(b, pv, [c0]), pv, [c0])
    buf = np.zeros(32, np.uint8)
    buf.flags.writeable = False
    with pytest.raises(InterpreterError, match="read-only"):
        run(b.module, "ro", (1, 1, 1), [Pointer(buf)])


# -- partition semantics on random shapes, tiles, dim_maps and layouts ----------------------


@st.composite
def partitions(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], str]:
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 12), min_size=rank, max_size=rank)))
    tile = tuple(draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=rank, max_size=rank)))
    dim_map = tuple(draw(st.permutations(range(rank))))
    layout = draw(st.sampled_from(["row", "col", "gappy"]))
    return shape, tile, dim_map, layout


def _strides(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    order = range(len(shape) - 1, -1, -1) if layout != "col" else range(len(shape))
    strides = [0] * len(shape)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= shape[d] + (3 if layout == "gappy" else 0)
    return tuple(strides)


@settings(max_examples=60, deadline=None)
@given(partitions(), st.sampled_from(["zero", None]))
def test_partition_load_store_matches_reference(
    p: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], str], padding: str | None
) -> None:
    shape, tile, dim_map, layout = p
    rank = len(shape)
    strides = _strides(shape, layout)
    space = tuple(-(-shape[d] // t) for d, t in zip(dim_map, tile, strict=True))
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    src = RNG.integers(-(2**31), 2**31 - 1, extent + 5, dtype=np.int64).astype(np.int32)
    dense_shape = tuple(s * t for s, t in zip(space, tile, strict=True))
    dense = np.zeros(dense_shape, np.int32)
    copy_buf = poisoned(4 * (extent + 5))

    b, (ap, dp, cp) = new_kernel([ptr(dt.i32)] * 3, "copy")
    ids = list(b.block_ids())[:rank]
    src_view = view(b, ap, list(shape), list(strides), tile, dim_map, padding)
    t = load(b, src_view, ids)
    store(b, t, view(b, dp, list(dense_shape), _strides(dense_shape, "row"), tile), ids)
    store(b, t, view(b, cp, list(shape), list(strides), tile, dim_map), ids)
    grid = tuple(space) + (1,) * (3 - rank)
    run(b.module, "copy", grid, [Pointer.to(src), Pointer.to(dense), Pointer(copy_buf)])

    def elem(e: tuple[int, ...]) -> int:
        return int(src[sum(i * s for i, s in zip(e, strides, strict=True))])

    fill = 0 if padding == "zero" else poison(dt.i32)
    expect = np.empty(dense_shape, np.int32)
    for j in itertools.product(*(range(n) for n in space)):
        for tt in itertools.product(*(range(n) for n in tile)):
            e = [0] * rank
            for i in range(rank):
                e[dim_map[i]] = j[i] * tile[i] + tt[i]
            inside = all(e[d] < shape[d] for d in range(rank))
            expect[tuple(j[i] * tile[i] + tt[i] for i in range(rank))] = (
                elem(tuple(e)) if inside else fill
            )
    np.testing.assert_array_equal(dense, expect)

    # The masked store through the same partition rewrote exactly the tensor's elements.
    copy = copy_buf.view(np.int32)
    touched = np.zeros(extent + 5, bool)
    for e in itertools.product(*(range(n) for n in shape)):
        k = sum(i * s for i, s in zip(e, strides, strict=True))
        touched[k] = True
        assert copy[k] == src[k]
    assert (copy_buf.reshape(-1, 4)[~touched] == POISON_BYTE).all()

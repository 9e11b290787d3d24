"""Shape ops (reshape, broadcast, permute, extract, cat, iota, dense constants) and
mmaf on bf16 / tf32 inputs."""

from __future__ import annotations

import numpy as np

from cutile.interpreter import Pointer, run
from cutile.ir import TileType

from .kit import const, dt, i32, load, new_kernel, ptr, raw, store, view

RNG = np.random.default_rng(17)


def test_reshape_permute_broadcast_extract_cat() -> None:
    b, (xp, op_) = new_kernel([ptr(dt.f32), ptr(dt.f32)], "shape")
    c0 = i32(b, 0)
    x = load(b, view(b, xp, [4, 8], [8, 1], [4, 8]), [c0, c0])  # 4x8
    r = b.reshape(x, (2, 2, 8))
    p = b.permute(r, (2, 0, 1))  # 8x2x2
    flat = b.reshape(p, (32,))
    ex = raw(b, "extract", [x, i32(b, 1), i32(b, 1)], [TileType((2, 4), dt.f32)]).result
    col = b.broadcast(b.reshape(b.reshape(ex, (8,)), (8, 1)), (8, 4))  # 8x4
    cat = raw(b, "cat", [b.reshape(flat, (8, 4)), col], [TileType((16, 4), dt.f32)], dim=0).result
    store(b, cat, view(b, op_, [16, 4], [4, 1], [16, 4]), [c0, c0])
    xs = RNG.standard_normal((4, 8)).astype(np.float32)
    out = np.zeros((16, 4), np.float32)
    run(b.module, "shape", (1, 1, 1), [Pointer.to(xs), Pointer.to(out)])
    expect_top = xs.reshape(2, 2, 8).transpose(2, 0, 1).reshape(8, 4)
    expect_bottom = np.broadcast_to(xs[2:4, 4:8].reshape(8, 1), (8, 4))
    np.testing.assert_array_equal(out, np.concatenate([expect_top, expect_bottom]))


def test_iota_and_dense_constants() -> None:
    b, (op_,) = new_kernel([ptr(dt.i8)], "c")
    c0 = i32(b, 0)
    io = b.iota(256, dt.i8)  # wraps: 128..255 are read as unsigned
    dense = const(b, np.arange(256, dtype=np.int64).astype(np.int8)[::-1].copy(), dt.i8, (256,))
    store(b, b.binary("addi", io, dense), view(b, op_, [256], [1], [256]), [c0])
    out = np.zeros(256, np.int8)
    run(b.module, "c", (1, 1, 1), [Pointer.to(out)])
    assert (out == -1).all()  # i + (255 - i) = 255 = -1 in i8


def test_bf16_and_tf32_mmaf() -> None:
    m = n = k = 16
    b, (cp, ap, bp, tp) = new_kernel([ptr(dt.f32), ptr(dt.bf16), ptr(dt.bf16), ptr(dt.f32)], "mm")
    c0 = i32(b, 0)
    ta = load(b, view(b, ap, [m, k], [k, 1], [m, k]), [c0, c0])
    tb = load(b, view(b, bp, [k, n], [n, 1], [k, n]), [c0, c0])
    acc = const(b, 0.0, dt.f32, (m, n))
    r1 = raw(b, "mmaf", [ta, tb, acc], [acc.type]).result
    # f32 data converted to tf32 before the mma, as cuTile does for tensor cores
    tf = b.convert("ftof", load(b, view(b, tp, [m, k], [k, 1], [m, k]), [c0, c0]), dt.tf32)
    r2 = raw(b, "mmaf", [tf, tf, r1], [acc.type]).result
    store(b, r2, view(b, cp, [m, n], [n, 1], [m, n]), [c0, c0])
    a32 = RNG.standard_normal((m, k)).astype(np.float32)
    b32 = RNG.standard_normal((k, n)).astype(np.float32)
    t32 = RNG.standard_normal((m, k)).astype(np.float32)
    abits = (a32.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bf16
    bbits = (b32.view(np.uint32) >> 16).astype(np.uint16)
    out = np.zeros((m, n), np.float32)
    run(
        b.module,
        "mm",
        (1, 1, 1),
        [Pointer.to(out), Pointer.to(abits), Pointer.to(bbits), Pointer.to(t32)],
    )
    a_bf = (abits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    b_bf = (bbits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    bits = t32.view(np.uint32).astype(np.uint64)
    t_tf = (
        ((bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000)
        .astype(np.uint32)
        .view(np.float32)
        .astype(np.float64)
    )
    expect = (a_bf @ b_bf).astype(np.float32).astype(np.float64) + t_tf @ t_tf
    np.testing.assert_allclose(out, expect.astype(np.float32), rtol=1e-6, atol=1e-6)
    # tf32 rounding matters: the unrounded product differs
    assert not np.allclose(out, (a_bf @ b_bf) + t32.astype(np.float64) @ t32, rtol=1e-7, atol=0)


def test_insert_writes_a_sub_tile_into_a_copy() -> None:
    b, (xp, sp, op_) = new_kernel([ptr(dt.f32), ptr(dt.f32), ptr(dt.f32)], "ins")
    c0 = i32(b, 0)
    x = load(b, view(b, xp, [4, 8], [8, 1], [4, 8]), [c0, c0])
    s = load(b, view(b, sp, [2, 4], [4, 1], [2, 4]), [c0, c0])
    ins = raw(b, "insert", [s, x, i32(b, 1), i32(b, 1)], [TileType((4, 8), dt.f32)]).result
    store(b, ins, view(b, op_, [4, 8], [8, 1], [4, 8]), [c0, c0])
    xs = RNG.standard_normal((4, 8)).astype(np.float32)
    ss = RNG.standard_normal((2, 4)).astype(np.float32)
    out = np.zeros((4, 8), np.float32)
    run(b.module, "ins", (1, 1, 1), [Pointer.to(xs), Pointer.to(ss), Pointer.to(out)])
    want = xs.copy()
    want[2:4, 4:8] = ss
    np.testing.assert_array_equal(out, want)

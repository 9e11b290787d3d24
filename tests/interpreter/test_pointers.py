"""Tiles of pointers: offset, masked gathers and scatters, atomics, casts, bounds."""

from __future__ import annotations

import numpy as np
import pytest

from cutile.interpreter import InterpreterError, Pointer, poison, run
from cutile.ir import TileType, scalar

from .kit import (
    POISON_BYTE,
    atomic_cas,
    atomic_rmw,
    const,
    dt,
    i32,
    load_ptr,
    new_kernel,
    offset,
    poisoned,
    ptr,
    ptr_tile,
    raw,
    splat,
    store_ptr,
)

RNG = np.random.default_rng(21)


def test_masked_gather_and_scatter() -> None:
    n = 64
    b, (xp, ip, op_, limit) = new_kernel(
        [ptr(dt.f32), ptr(dt.i32), ptr(dt.f32), scalar(dt.i32)], "gs"
    )
    lanes = b.iota(n, dt.i32)
    idx = load_ptr(b, ptr_tile(b, ip, lanes))
    mask = b.cmp("cmpi", "less_than", lanes, splat(b, limit, (n,)))
    pad = const(b, -1.0, dt.f32, (n,))
    vals = load_ptr(b, ptr_tile(b, xp, idx), mask, pad)  # gather x[idx] where lane < limit
    store_ptr(
        b, ptr_tile(b, op_, b.binary("subi", const(b, n - 1, dt.i32, (n,)), lanes)), vals, mask
    )  # scatter reversed, masked
    x = RNG.standard_normal(100).astype(np.float32)
    idx_h = RNG.integers(0, 100, n).astype(np.int32)
    out = poisoned(4 * n)
    run(b.module, "gs", (1, 1, 1), [Pointer.to(x), Pointer.to(idx_h), Pointer(out), 40])
    got = out.view(np.float32)
    np.testing.assert_array_equal(got[::-1][:40], x[idx_h[:40]])
    assert (out.reshape(n, 4)[: n - 40] == POISON_BYTE).all()  # masked lanes untouched


def test_masked_load_without_padding_reads_poison() -> None:
    b, (xp, op_) = new_kernel([ptr(dt.i32), ptr(dt.i32)], "p")
    lanes = b.iota(8, dt.i32)
    mask = b.cmp("cmpi", "less_than", lanes, const(b, 3, dt.i32, (8,)))
    v = load_ptr(b, ptr_tile(b, xp, lanes), mask)
    store_ptr(b, ptr_tile(b, op_, lanes), v)
    x = np.arange(3, dtype=np.int32) + 10  # lanes >= 3 would be out of bounds: never read
    out = np.zeros(8, np.int32)
    run(b.module, "p", (1, 1, 1), [Pointer.to(x), Pointer.to(out)])
    assert out.tolist() == [10, 11, 12] + [poison(dt.i32)] * 5


def test_out_of_buffer_pointer_access_raises_with_location() -> None:
    b, (xp, k) = new_kernel([ptr(dt.f32), scalar(dt.i32)], "oob")
    p = offset(b, xp, k)
    store_ptr(b, p, const(b, 1.0, dt.f32))
    x = np.zeros(4, np.float32)
    run(b.module, "oob", (1, 1, 1), [Pointer.to(x), 3])
    assert x[3] == 1.0
    for bad in (4, -1, 1 << 20):
        with pytest.raises(InterpreterError, match=r"out of bounds|not inside") as info:
            run(b.module, "oob", (1, 1, 1), [Pointer.to(x), bad])
        assert info.value.op == "store_ptr_tko"
        assert "kernel.py:42:9" in str(info.value)


def test_pointer_walking_off_one_buffer_never_reaches_another() -> None:
    b, (xp, _yp) = new_kernel([ptr(dt.i8), ptr(dt.i8)], "walk")
    store_ptr(b, offset(b, xp, i32(b, 16)), const(b, 1, dt.i8))
    mem = np.zeros(32, np.uint8)
    with pytest.raises(InterpreterError):
        run(b.module, "walk", (1, 1, 1), [Pointer(mem[:16]), Pointer(mem[16:])])
    assert (mem == 0).all()


def test_misaligned_access_raises() -> None:
    b, (xp,) = new_kernel([ptr(dt.f32)], "mis")
    load_ptr(b, xp)
    buf = np.zeros(16, np.uint8)
    run(b.module, "mis", (1, 1, 1), [Pointer(buf, 4)])
    with pytest.raises(InterpreterError, match="misaligned"):
        run(b.module, "mis", (1, 1, 1), [Pointer(buf, 2)])


def test_atomic_add_with_duplicate_addresses_and_cas() -> None:
    n = 128
    b, (hp, ip, op_) = new_kernel([ptr(dt.i32), ptr(dt.i32), ptr(dt.i32)], "hist")
    lanes = b.iota(n, dt.i32)
    bins = load_ptr(b, ptr_tile(b, ip, lanes))
    old = atomic_rmw(b, ptr_tile(b, hp, bins), const(b, 1, dt.i32, (n,)), "add")
    store_ptr(b, ptr_tile(b, op_, lanes), old)
    idx = RNG.integers(0, 8, n).astype(np.int32)
    hist = np.zeros(8, np.int32)
    olds = np.zeros(n, np.int32)
    run(b.module, "hist", (3, 1, 1), [Pointer.to(hist), Pointer.to(idx), Pointer.to(olds)])
    np.testing.assert_array_equal(hist, 3 * np.bincount(idx, minlength=8))
    # Last block's view: lanes hitting the same bin saw increasing old values, in lane order.
    for bin_ in range(8):
        seen = olds[idx == bin_]
        start = 2 * int((idx == bin_).sum())
        assert seen.tolist() == list(range(start, start + len(seen)))

    b2, (cp, rp) = new_kernel([ptr(dt.i32), ptr(dt.i32)], "cas")
    lanes = b2.iota(4, dt.i32)
    p = ptr_tile(b2, cp, lanes)
    got = atomic_cas(
        b2,
        p,
        const(b2, np.array([0, 5, 0, 5], np.int32), dt.i32, (4,)),
        const(b2, 9, dt.i32, (4,)),
        const(b2, np.array([1, 1, 0, 1], bool), dt.bool_, (4,)),
    )
    store_ptr(b2, ptr_tile(b2, rp, lanes), got)
    cells = np.array([0, 0, 0, 5], np.int32)
    res = np.zeros(4, np.int32)
    run(b2.module, "cas", (1, 1, 1), [Pointer.to(cells), Pointer.to(res)])
    assert cells.tolist() == [9, 0, 0, 9]
    assert res.tolist() == [0, 0, 0, 5]  # old values; the masked-off lane returns cmp (0)


@pytest.mark.parametrize(
    ("mode", "ref"),
    [
        ("max", np.maximum),
        ("min", np.minimum),
        ("xchg", lambda a, b: b),
        ("or", np.bitwise_or),
        ("and", np.bitwise_and),
        ("xor", np.bitwise_xor),
    ],
)
def test_atomic_modes(mode: str, ref: object) -> None:
    n = 16
    b, (cp, vp) = new_kernel([ptr(dt.i32), ptr(dt.i32)], "rmw")
    lanes = b.iota(n, dt.i32)
    atomic_rmw(b, ptr_tile(b, cp, lanes), load_ptr(b, ptr_tile(b, vp, lanes)), mode)
    cells = RNG.integers(-100, 100, n).astype(np.int32)
    vals = RNG.integers(-100, 100, n).astype(np.int32)
    expect = ref(cells, vals)  # type: ignore[operator]
    run(b.module, "rmw", (1, 1, 1), [Pointer.to(cells), Pointer.to(vals)])
    np.testing.assert_array_equal(cells, expect)


def test_atomic_addf_and_umax() -> None:
    b, (fp, up) = new_kernel([ptr(dt.f32), ptr(dt.i32)], "rmw")
    zero = i32(b, 0)
    p4 = ptr_tile(b, fp, b.binary("muli", b.iota(4, dt.i32), const(b, 0, dt.i32, (4,))))
    atomic_rmw(b, p4, const(b, 0.25, dt.f32, (4,)), "addf")
    atomic_rmw(b, offset(b, up, zero), const(b, -1, dt.i32), "umax")
    f = np.array([1.0], np.float32)
    u = np.array([5], np.int32)
    run(b.module, "rmw", (1, 1, 1), [Pointer.to(f), Pointer.to(u)])
    assert f[0] == 2.0
    assert u[0] == -1  # 0xFFFFFFFF is the unsigned maximum


def test_ptr_to_int_int_to_ptr_round_trip() -> None:
    b, (xp, op_) = new_kernel([ptr(dt.f64), ptr(dt.i64)], "cast")
    addr = raw(b, "ptr_to_int", [xp], [scalar(dt.i64)]).result
    store_ptr(b, op_, addr)
    addr8 = b.binary("addi", addr, b.scalar_const(8, dt.i64))
    p2 = raw(b, "int_to_ptr", [addr8], [TileType((), ptr(dt.f64).element)]).result
    store_ptr(b, p2, load_ptr(b, xp))
    x = np.array([3.5, 0.0])
    a = np.zeros(1, np.int64)
    run(b.module, "cast", (1, 1, 1), [Pointer.to(x), Pointer.to(a)])
    assert x.tolist() == [3.5, 3.5]
    assert a[0] % 8 == 0 and a[0] > 0


def test_pointer_argument_must_be_a_pointer() -> None:
    b, _ = new_kernel([ptr(dt.f32)], "k")
    with pytest.raises(InterpreterError, match="Pointer"):
        run(b.module, "k", (1, 1, 1), [np.zeros(4, np.float32)])
    with pytest.raises(InterpreterError, match="takes 1 arguments"):
        run(b.module, "k", (1, 1, 1), [])

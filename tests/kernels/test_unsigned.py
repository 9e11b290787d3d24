"""u8, u16, u32, u64: tensors, scalar parameters, and arithmetic with unsigned semantics
(`//`, `%`, comparisons, `>>`, max/min, reductions, arg-reductions: Tile IR's
`signedness = unsigned`), wrapping `+ - *`, conversions, and numpy's promotion between
signed and unsigned types, against numpy's unsigned types on values above 2^31; every
kernel assembles for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    argmax,
    block_id,
    cumsum,
    f32,
    full,
    i8,
    i16,
    i32,
    i64,
    load_tile_like,
    maximum,
    minimum,
    mma,
    reduce,
    u8,
    u16,
    u32,
    u64,
    where,
    zeros,
)

rng = np.random.default_rng(32)


def big_u32(n: int) -> np.ndarray:
    """Values over the whole u32 range, most above 2^31, with the edges and small ones."""
    xs = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    xs[:8] = [0, 1, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 1, 7, 3_000_000_000]
    return xs


@cutile.entry
def divmod_cmp(q: Mut[Tensor[u32, ["B"]]], r: Mut[Tensor[u32, ["B"]]],
               c: Mut[Tensor[u8, ["B"]]], s: Mut[Tensor[u32, ["B"]]],
               x: Tensor[u32, [-1]], y: Tensor[u32, [-1]], t: u32, B: Const[int]):
    a = load_tile_like(x, q)
    b = load_tile_like(y, q)
    q.store(a // b)
    r.store(a % b)
    # one bit per comparison: unsigned order, so 2^31 > 1 and 2^32 - 1 is the largest
    c.store((a < b).astype(u8) | ((a >= t).astype(u8) << 1) | ((a == b).astype(u8) << 2)
            | ((a // 3 > t // 3).astype(u8) << 3))
    s.store((a >> 28) + (b >> 1) * 2 - (a >> (b % 32)))


@cutile.entry
def wraps(z8: Mut[Tensor[u8, ["B"]]], z16: Mut[Tensor[u16, ["B"]]], z64: Mut[Tensor[u64, ["B"]]],
          a: Tensor[u8, [-1]], b: Tensor[u16, [-1]], c: Tensor[u64, [-1]], B: Const[int]):
    x = load_tile_like(a, z8)
    y = load_tile_like(b, z16)
    w = load_tile_like(c, z64)
    z8.store(x * x + 200 - ~x)                    # wraps modulo 256; ~ flips 8 bits
    z16.store(-y + y * 3 // 2)                    # negation wraps, as numpy's
    z64.store(w // 7 + (w >> 60) + w % 1000 + maximum(w, w // 2) - minimum(w, 5))


@cutile.entry
def promote(z16: Mut[Tensor[i16, ["B"]]], z64: Mut[Tensor[i64, ["B"]]], zf: Mut[Tensor[f32, ["B"]]],
            a: Tensor[u8, [-1]], b: Tensor[i8, [-1]], c: Tensor[u32, [-1]], d: Tensor[i32, [-1]],
            B: Const[int]):
    x, y = load_tile_like(a, z16), load_tile_like(b, z16)
    u, v = load_tile_like(c, z64), load_tile_like(d, z64)
    z16.store(x + y)                              # u8 + i8 -> i16
    z64.store(u - v)                              # u32 + i32 -> i64: no wrap at 2^31
    zf.store(u * 0.5)                             # a float makes it f32


@cutile.entry
def convert(f2u8: Mut[Tensor[u8, ["B"]]], f2u32: Mut[Tensor[u32, ["B"]]],
            u2f: Mut[Tensor[f32, ["B"]]], ext: Mut[Tensor[i64, ["B"]]],
            sext: Mut[Tensor[u32, ["B"]]], wrap: Mut[Tensor[i32, ["B"]]],
            f: Tensor[f32, [-1]], u: Tensor[u32, [-1]], s: Tensor[i8, [-1]], B: Const[int]):
    x = load_tile_like(f, f2u8)
    w = load_tile_like(u, f2u8)
    f2u8.store(x)                                 # clamps to 0..255, NaN -> 0
    f2u32.store(x.astype(u32))                    # saturates to 0..2^32 - 1, NaN -> 0
    u2f.store(w.astype(f32))                      # unsigned: 2^32 - 1 -> 4294967296.0
    ext.store(w.astype(i64))                      # zero-extends
    sext.store(load_tile_like(s, f2u8))           # i8 -> u32 sign-extends, then wraps
    wrap.store(w.astype(i32))                     # same bits


@cutile.entry
def reductions(mx: Mut[Tensor[u32, ["BM"]]], mn: Mut[Tensor[u32, ["BM"]]],
               am: Mut[Tensor[i32, ["BM"]]], sm: Mut[Tensor[u64, ["BM"]]],
               x: Tensor[u32, [-1, -1]], BM: Const[int], BN: Const[int]):
    t = x.load_tile((BM, BN), (block_id(0), 0))
    mx.store(t.max(axis=1))
    mn.store(t.min(axis=1))
    am.store(argmax(t, axis=1))
    sm.store(t.astype(u64).sum(axis=1))


@cutile.entry
def byte_mma(z: Mut[Tensor[i32, ["BM", "BN"]]], w: Mut[Tensor[i32, ["BM", "BN"]]],
             x: Tensor[u8, [-1, -1]], y: Tensor[u8, [-1, -1]], s: Tensor[i8, [-1, -1]],
             BM: Const[int], BN: Const[int], BK: Const[int]):
    a = x.load_tile((BM, BK), (block_id(0), 0))
    b = y.load_tile((BK, BN), (0, block_id(1)))
    z.store(mma(a, b, zeros((BM, BN), i32)))      # u8 x u8 -> i32
    w.store(mma(s.load_tile((BM, BK), (block_id(0), 0)), b, zeros((BM, BN), i32)))  # i8 x u8


@cutile.device
def larger(a, b):
    return maximum(a, b)


@cutile.entry
def misc(z: Mut[Tensor[u32, ["B"]]], c: Mut[Tensor[u8, ["B"]]], r: Mut[Tensor[u32, [1]]],
         x: Tensor[u32, [-1]], s: u32, B: Const[int]):
    t = load_tile_like(x, z)
    acc = zeros((B,), u32)
    for _ in range(s % 5):                        # an unsigned scalar bounds a loop
        acc = acc + arange(0, B, 1, u32)
    z.store(where(t > 2**31, t, acc) + full((B,), 2**32 - 1, u32))
    c.store(cumsum(t.astype(u8)))                 # wraps modulo 256
    r.store(reduce(t, 0, larger, 0).reshape((1,)))


def test_division_remainder_comparison_and_shifts_are_unsigned() -> None:
    n = 1000
    xs, ys = big_u32(n), big_u32(n)
    ys[8:12] = [0, 1, 2**31, 3]           # x // 0 == x and x % 0 == 0, as for signed types
    t = 3_000_000_000
    outs = [api.zeros([n], d).partition([256]) for d in (u32, u32, u8, u32)]
    q, r, c, s, *_ = divmod_cmp(*outs, api.from_numpy(xs), api.from_numpy(ys), t).sync()
    d = np.where(ys == 0, 1, ys)
    np.testing.assert_array_equal(q.unpartition().to_numpy(), xs // d)
    np.testing.assert_array_equal(r.unpartition().to_numpy(), np.where(ys == 0, 0, xs % d))
    want = ((xs < ys).astype(np.uint8) | ((xs >= t).astype(np.uint8) << 1)
            | ((xs == ys).astype(np.uint8) << 2) | ((xs // 3 > t // 3).astype(np.uint8) << 3))
    np.testing.assert_array_equal(c.unpartition().to_numpy(), want)
    with np.errstate(over="ignore"):
        shifted = (xs >> 28) + (ys >> 1) * 2 - (xs >> (ys % 32))
    np.testing.assert_array_equal(s.unpartition().to_numpy(), shifted)


def test_unsigned_loops_ranges_scans_and_custom_reductions() -> None:
    xs = big_u32(64)
    s = 3_000_000_002
    outs = (api.zeros([64], u32).partition([64]), api.zeros([64], u8).partition([64]),
            api.zeros([1], u32).partition([1]))
    z, c, r, *_ = misc(*outs, api.from_numpy(xs), s).sync()
    acc = np.arange(64, dtype=np.uint32) * np.uint32(s % 5)
    with np.errstate(over="ignore"):
        want = np.where(xs > 2**31, xs, acc) + np.uint32(2**32 - 1)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)
    np.testing.assert_array_equal(c.unpartition().to_numpy(),
                                  np.cumsum(xs.astype(np.uint8), dtype=np.uint8))
    assert r.unpartition().to_numpy().tolist() == [xs.max()]


def test_arithmetic_wraps_like_numpy_unsigned() -> None:
    n = 600
    a = rng.integers(0, 256, n).astype(np.uint8)
    b = rng.integers(0, 2**16, n).astype(np.uint16)
    c = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    c[:3] = [2**64 - 1, 2**63, 0]
    outs = [api.zeros([n], d).partition([128]) for d in (u8, u16, u64)]
    z8, z16, z64, *_ = wraps(*outs, api.from_numpy(a), api.from_numpy(b), api.from_numpy(c)).sync()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(z8.unpartition().to_numpy(),
                                      a * a + np.uint8(200) - ~a)
        np.testing.assert_array_equal(z16.unpartition().to_numpy(),
                                      (np.uint16(0) - b) + b * np.uint16(3) // np.uint16(2))
        want = (c // np.uint64(7) + (c >> np.uint64(60)) + c % np.uint64(1000)
                + np.maximum(c, c // np.uint64(2)) - np.minimum(c, np.uint64(5)))
    np.testing.assert_array_equal(z64.unpartition().to_numpy(), want)


def test_signed_and_unsigned_promote_as_numpy() -> None:
    n = 500
    a = rng.integers(0, 256, n).astype(np.uint8)
    b = rng.integers(-128, 128, n).astype(np.int8)
    c = big_u32(n)
    d = rng.integers(-(2**31), 2**31, n).astype(np.int32)
    outs = [api.zeros([n], t).partition([128]) for t in (i16, i64, f32)]
    z16, z64, zf, *_ = promote(*outs, *(api.from_numpy(v) for v in (a, b, c, d))).sync()
    assert (a + b).dtype == np.int16 and (c - d).dtype == np.int64  # numpy's own promotion
    np.testing.assert_array_equal(z16.unpartition().to_numpy(), a + b)
    np.testing.assert_array_equal(z64.unpartition().to_numpy(), c.astype(np.int64) - d)
    np.testing.assert_array_equal(zf.unpartition().to_numpy(), c.astype(np.float32) * 0.5)


def test_conversions_to_and_from_unsigned() -> None:
    n = 400
    f = (rng.standard_normal(n) * 1e9).astype(np.float32)
    f[:8] = [-1.0, 255.9, 300.0, np.nan, np.inf, -np.inf, 5e9, 0.99]
    u, s = big_u32(n), rng.integers(-128, 128, n).astype(np.int8)
    outs = [api.zeros([n], t).partition([128]) for t in (u8, u32, f32, i64, u32, i32)]
    f2u8, f2u32, u2f, ext, sext, wrap, *_ = convert(
        *outs, *(api.from_numpy(v) for v in (f, u, s))).sync()
    g = np.nan_to_num(f.astype(np.float64), nan=0.0, posinf=1e300, neginf=-1e300)
    np.testing.assert_array_equal(f2u8.unpartition().to_numpy(),
                                  np.clip(np.trunc(g), 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(f2u32.unpartition().to_numpy(),
                                  np.clip(np.trunc(g), 0, 2**32 - 1).astype(np.uint32))
    np.testing.assert_array_equal(u2f.unpartition().to_numpy(), u.astype(np.float32))
    np.testing.assert_array_equal(ext.unpartition().to_numpy(), u.astype(np.int64))
    np.testing.assert_array_equal(sext.unpartition().to_numpy(), s.astype(np.uint32))
    np.testing.assert_array_equal(wrap.unpartition().to_numpy(), u.view(np.int32))


def test_reductions_and_argmax_order_unsigned() -> None:
    x = big_u32(40 * 64).reshape(40, 64)
    x[3] = 2**31  # ties: the first index
    outs = [api.zeros([40], t).partition([8]) for t in (u32, u32, i32, u64)]
    mx, mn, am, sm, _ = reductions(*outs, api.from_numpy(x), BN=64).sync()
    np.testing.assert_array_equal(mx.unpartition().to_numpy(), x.max(1))
    np.testing.assert_array_equal(mn.unpartition().to_numpy(), x.min(1))
    np.testing.assert_array_equal(am.unpartition().to_numpy(), x.argmax(1))
    np.testing.assert_array_equal(sm.unpartition().to_numpy(), x.astype(np.uint64).sum(1))


def test_u8_mma_reads_bytes_unsigned() -> None:
    x = rng.integers(0, 256, (32, 64)).astype(np.uint8)
    y = rng.integers(0, 256, (64, 32)).astype(np.uint8)
    s = rng.integers(-128, 128, (32, 64)).astype(np.int8)
    z = api.zeros([32, 32], i32).partition([16, 16])
    w = api.zeros([32, 32], i32).partition([16, 16])
    z, w, *_ = byte_mma(z, w, api.from_numpy(x), api.from_numpy(y), api.from_numpy(s),
                        BK=64).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(),
                                  x.astype(np.int64) @ y.astype(np.int64))
    np.testing.assert_array_equal(w.unpartition().to_numpy(),
                                  s.astype(np.int64) @ y.astype(np.int64))


def test_unsigned_scalars_bind_their_whole_range() -> None:
    xs, ys = big_u32(64), big_u32(64) | np.uint32(1)
    for t in (2**32 - 1, np.uint32(2**31)):       # a numpy scalar too
        outs = [api.zeros([64], d).partition([64]) for d in (u32, u32, u8, u32)]
        _, _, c, *_ = divmod_cmp(*outs, api.from_numpy(xs), api.from_numpy(ys), t).sync()
        np.testing.assert_array_equal((c.unpartition().to_numpy() >> 1) & 1, xs >= t)
    for bad, needle in [(-1, "does not fit in `u32`"), (2**32, "does not fit in `u32`"),
                        (1.5, "expects an integer")]:
        outs = [api.zeros([64], d).partition([64]) for d in (u32, u32, u8, u32)]
        with pytest.raises(cutile.LaunchError, match=needle) as err:
            divmod_cmp(*outs, api.from_numpy(xs), api.from_numpy(ys), bad).sync()
        assert err.value.code == "CT6102"


@cutile.entry
def u64_mod(z: Mut[Tensor[u64, [4]]], s: u64):
    z.store(full((4,), s % 1000003, u64))


def test_a_u64_scalar_takes_up_to_2_to_the_63_and_says_why_not_past() -> None:
    got = u64_mod(api.zeros([4], u64).partition([4]), 2**63 - 1).sync()[0]
    assert got.unpartition().to_numpy().tolist() == [(2**63 - 1) % 1000003] * 4
    for big in (2**63, 2**64 - 1):
        with pytest.raises(cutile.LaunchError, match=r"above 2\*\*63 - 1, the largest") as err:
            u64_mod(api.zeros([4], u64).partition([4]), big).sync()
        assert err.value.code == "CT6102" and "top bit" in (err.value.hint or "")
    with pytest.raises(cutile.LaunchError, match="does not fit in `u64`"):
        u64_mod(api.zeros([4], u64).partition([4]), -1).sync()


def test_host_tensors_of_every_unsigned_type() -> None:
    for np_t, d in ((np.uint8, u8), (np.uint16, u16), (np.uint32, u32), (np.uint64, u64)):
        x = rng.integers(0, np.iinfo(np_t).max, (3, 5), dtype=np_t, endpoint=True)
        t = api.from_numpy(x)
        assert t.dtype is d
        np.testing.assert_array_equal(t.to_numpy(), x)
        assert api.full([2], np.iinfo(np_t).max, d).to_numpy().tolist() == [np.iinfo(np_t).max] * 2
        with pytest.raises(cutile.TensorError, match="does not fit"):
            api.full([2], -1, d)


@pytest.mark.parametrize(("src", "code"), [
    ("load_tile_like(x, z).astype(u64) + load_tile_like(y, z)", "CT3090"),
    ("load_tile_like(x, z) + (-1)", "CT3052"),
    ("load_tile_like(x, z) * 2**32", "CT3052"),
])
def test_what_has_no_unsigned_meaning_is_refused(src: str, code: str, tmp_path: object) -> None:

    k = load_kernel(tmp_path, "@cutile.entry\n"
                    "def k(z: Mut[Tensor[u32, ['B']]], x: Tensor[u32, [-1]], y: Tensor[i64, [-1]],"
                    " B: Const[int]):\n"
                    f"    z.store({src})\n")
    with pytest.raises(cutile.CutileError) as err:
        k.lowered(k.specialization({"B": 16}))
    assert err.value.code == code, err.value


KERNELS = {divmod_cmp: {"B": 256}, misc: {"B": 64}, wraps: {"B": 128}, promote: {"B": 128},
           convert: {"B": 128}, reductions: {"BM": 8, "BN": 64},
           byte_mma: {"BM": 64, "BN": 64, "BK": 64}}


@pytest.mark.tileiras
@pytest.mark.parametrize("kernel", list(KERNELS), ids=lambda k: k.name)
def test_unsigned_kernels_assemble_for_sm90(kernel: cutile.EntryKernel) -> None:
    compiled = kernel.compile(target="sm_90", **KERNELS[kernel])
    assert compiled.cubin[:4] == b"\x7fELF"

"""`bitcast(x, dtype)` / `t.bitcast(dtype)` keeps every bit between types of one width
(floats, signed and unsigned integers, f8; NaN payloads and -0.0 included), and
`pack_i4` / `unpack_i4` put two 4-bit integers in a byte and take them out again, signed
and unsigned, for tiles of any rank; every kernel assembles for sm_90."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    bf16,
    bitcast,
    block_id,
    f8e4m3fn,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    load_tile_like,
    mma,
    pack_i4,
    u8,
    u16,
    u32,
    u64,
    unpack_i4,
    zeros,
)

rng = np.random.default_rng(64)


@cutile.entry
def round_trips(a: Mut[Tensor[u32, ["B"]]], b: Mut[Tensor[f32, ["B"]]], c: Mut[Tensor[i16, ["B"]]],
                d: Mut[Tensor[bf16, ["B"]]], e: Mut[Tensor[u64, ["B"]]], f: Mut[Tensor[u8, ["B"]]],
                x: Tensor[f32, [-1]], h: Tensor[f16, [-1]], g: Tensor[f64, [-1]],
                q: Tensor[f8e4m3fn, [-1]], B: Const[int]):
    t = load_tile_like(x, a)
    a.store(bitcast(t, u32))
    b.store(t.bitcast(i32).bitcast(u32).bitcast(f32))     # every step keeps the bits
    c.store(load_tile_like(h, c).bitcast(i16))
    d.store(load_tile_like(h, c).bitcast(u16).bitcast(bf16))
    e.store(load_tile_like(g, e).bitcast(i64).bitcast(u64))
    f.store(load_tile_like(q, f).bitcast(u8))


@cutile.entry
def float_tricks(z: Mut[Tensor[f32, ["B"]]], e: Mut[Tensor[i32, ["B"]]], x: Tensor[f32, [-1]],
                 B: Const[int]):
    bits = load_tile_like(x, z).bitcast(u32)
    z.store((bits & 0x7FFFFFFF).bitcast(f32))              # |x| through the sign bit
    e.store(((bits >> 23) & 0xFF).astype(i32) - 127)       # the unbiased exponent


@cutile.entry
def nibbles(p: Mut[Tensor[u8, ["BM", "BH"]]], s: Mut[Tensor[i8, ["BM", "BN"]]],
            u: Mut[Tensor[u8, ["BM", "BN"]]], flat: Mut[Tensor[u8, [1, "BH"]]],
            x: Tensor[i32, [-1, -1]], BM: Const[int], BN: Const[int], BH: Const[int]):
    t = x.load_tile((BM, BN), (block_id(0), 0))
    packed = pack_i4(t)                                    # [BM, BN] -> [BM, BN // 2] u8
    p.store(packed)
    s.store(unpack_i4(packed))                             # low 4 bits, sign-extended
    u.store(unpack_i4(packed.bitcast(i8), signed=False))   # i8 bytes read the same
    flat.store(pack_i4(t.reshape((BM * BN,))).reshape((BM, BH))[0])


@cutile.entry
def int4_gemm(z: Mut[Tensor[i32, ["BM", "BN"]]], a: Tensor[i8, [-1, -1]],
              w: Tensor[u8, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int],
              BH: Const[int]):
    x = a.load_tile((BM, BK), (block_id(0), 0))
    weights = unpack_i4(w.load_tile((BK, BH), (0, block_id(1))))   # 4-bit weights, -8..7
    z.store(mma(x, weights, zeros((BM, BN), i32)))


def test_bitcasts_keep_every_bit() -> None:
    n = 300
    x = rng.standard_normal(n).astype(np.float32) * 1e3
    x[:5] = [np.nan, -0.0, np.inf, np.float32(1e-45), -np.nan]
    x.view(np.uint32)[5] = 0x7FA00001                      # a signalling NaN's payload
    h = rng.standard_normal(n).astype(np.float16)
    g = rng.standard_normal(n) * 1e300
    q = rng.integers(0, 256, n).astype(np.uint8).view(ml_dtypes.float8_e4m3fn)
    outs = [api.zeros([n], t).partition([128]) for t in (u32, f32, i16, bf16, u64, u8)]
    a, b, c, d, e, f, *_ = round_trips(*outs, *(api.from_numpy(v) for v in (x, h, g, q))).sync()
    np.testing.assert_array_equal(a.unpartition().to_numpy(), x.view(np.uint32))
    np.testing.assert_array_equal(b.unpartition().to_numpy().view(np.uint32), x.view(np.uint32))
    np.testing.assert_array_equal(c.unpartition().to_numpy(), h.view(np.int16))
    np.testing.assert_array_equal(d.unpartition().to_numpy().view(np.uint16), h.view(np.uint16))
    np.testing.assert_array_equal(e.unpartition().to_numpy(), g.view(np.uint64))
    np.testing.assert_array_equal(f.unpartition().to_numpy(), q.view(np.uint8))


def test_float_bit_tricks() -> None:
    x = (rng.standard_normal(256) * 1e4).astype(np.float32)
    z = api.zeros([256], f32).partition([64])
    e = api.zeros([256], i32).partition([64])
    z, e, _ = float_tricks(z, e, api.from_numpy(x)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.abs(x))
    np.testing.assert_array_equal(e.unpartition().to_numpy(), np.frexp(x)[1] - 1)


def test_pack_and_unpack_round_trip() -> None:
    v = rng.integers(-8, 8, (16, 32)).astype(np.int32)
    v[0, :4] = [-8, 7, -1, 0]
    outs = [api.zeros([16, 16], u8).partition([8, 16]), api.zeros([16, 32], i8).partition([8, 32]),
            api.zeros([16, 32], u8).partition([8, 32]), api.zeros([2, 16], u8).partition([1, 16])]
    p, s, u, flat, _ = nibbles(*outs, api.from_numpy(v)).sync()
    packed = ((v[:, 0::2] & 0xF) | ((v[:, 1::2] & 0xF) << 4)).astype(np.uint8)
    assert packed[0, :2].tolist() == [0x78, 0x0F]          # element 2i in the low nibble
    np.testing.assert_array_equal(p.unpartition().to_numpy(), packed)
    np.testing.assert_array_equal(s.unpartition().to_numpy(), v.astype(np.int8))
    np.testing.assert_array_equal(u.unpartition().to_numpy(), (v & 0xF).astype(np.uint8))
    np.testing.assert_array_equal(flat.unpartition().to_numpy(), packed[[0, 8]])


def test_int4_weights_multiply_on_the_tensor_cores() -> None:
    a = rng.integers(-128, 128, (64, 64)).astype(np.int8)
    w = rng.integers(-8, 8, (64, 32))
    packed = ((w[:, 0::2] & 0xF) | ((w[:, 1::2] & 0xF) << 4)).astype(np.uint8)
    z = api.zeros([64, 32], i32).partition([32, 32])
    z, _, _ = int4_gemm(z, api.from_numpy(a), api.from_numpy(packed), BK=64, BH=16).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), a.astype(np.int64) @ w)


@pytest.mark.parametrize(("src", "code"), [
    ("bitcast(t, i16)", "CT3091"), ("t.bitcast(f64)", "CT3091"),
    ("(t > 0.0).bitcast(i8)", "CT3091"), ("pack_i4(t)", "CT3091"),
    ("unpack_i4(t.bitcast(i32))", "CT3091"), ("pack_i4(t.bitcast(i32).reshape((16, 1)))",
                                              "CT3091"),
])
def test_misfits_are_refused(src: str, code: str, tmp_path: object) -> None:
    k = load_kernel(tmp_path, "@cutile.entry\n"
                    "def k(z: Mut[Tensor[f32, ['B']]], x: Tensor[f32, [-1]], B: Const[int]):\n"
                    f"    t = load_tile_like(x, z)\n    r = {src}\n")
    with pytest.raises(cutile.CutileError) as err:
        k.lowered(k.specialization({"B": 16}))
    assert err.value.code == code, err.value


KERNELS = {round_trips: {"B": 128}, float_tricks: {"B": 128},
           nibbles: {"BM": 8, "BN": 32, "BH": 16},
           int4_gemm: {"BM": 64, "BN": 64, "BK": 64, "BH": 32}}


@pytest.mark.tileiras
@pytest.mark.parametrize("kernel", list(KERNELS), ids=lambda k: k.name)
def test_bit_kernels_assemble_for_sm90(kernel: cutile.EntryKernel) -> None:
    compiled = kernel.compile(target="sm_90", **KERNELS[kernel])
    assert compiled.cubin[:4] == b"\x7fELF"

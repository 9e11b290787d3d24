"""Math ops of issue 8 item 5 through the public API on the active backend (the CPU
interpreter without a GPU): `.prod()`, `isnan`, `atan2`, `fma`, integer `**`, and f16/bf16
sums accumulated in f32; numerics against numpy float64 (or exact Python-int) references on
random inputs with a ragged last tile, typed errors for misuse, and an sm_90 cubin from
tileiras for each kernel."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    atan2,
    bf16,
    block_id,
    f16,
    f32,
    fma,
    full,
    i8,
    i32,
    i64,
    isnan,
    load_tile_like,
    pow,
    prod,
)

rng = np.random.default_rng(8005)


def _wrap(v: int, bits: int) -> int:
    """`v` as a `bits`-bit two's complement integer (what the device's products give)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _ipow(base: int, exp: int, bits: int) -> int:
    """The documented integer power: wrapping for exponents >= 0, the integer part of the
    true power for negative ones (1 for 1, +-1 for -1, otherwise 0)."""
    if exp >= 0:
        return _wrap(base**exp, bits)
    if base == 1:
        return 1
    if base == -1:
        return -1 if exp % 2 else 1
    return 0


def _lower_error(kernel: Any, **consts: Any) -> cutile.KernelCheckError:
    with pytest.raises(cutile.KernelCheckError) as info:
        kernel.lowered(kernel.specialization(consts))
    return info.value


# ------------------------------------------------------------------------------ prod


@cutile.entry
def row_prod(z: Mut[Tensor[f32, ["BM"]]], x: Tensor[f32, [-1, 8]], BM: Const[int]):
    z.store(x.load_tile((BM, 8), (block_id(0), 0)).prod(axis=1))


@cutile.entry
def prod_forms(z: Mut[Tensor[f32, ["BM", 4]]], x: Tensor[f32, [-1, 4]], BM: Const[int]):
    t = load_tile_like(x, z)
    col = prod(t, axis=0, keepdims=True)                 # [1, 4], the function form
    z.store(t.prod(axis=1, keepdims=True) + col * 0.0 + t.prod() * 0.0)


@cutile.entry
def int_prod(z: Mut[Tensor[i32, ["B"]]], x: Tensor[i32, [-1, 4]], B: Const[int]):
    z.store(x.load_tile((B, 4), (block_id(0), 0)).prod(axis=1))


def test_prod_method_along_rows_with_a_ragged_last_tile() -> None:
    rows = 50                                   # 4 tiles of 16 rows, the last has 2
    xs = rng.uniform(0.5, 1.5, (rows, 8)).astype(np.float32)
    z = api.full([rows], np.nan, f32).partition([16])
    z, _ = row_prod(z, api.from_numpy(xs)).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(),
                               xs.astype(np.float64).prod(axis=1), rtol=2e-6)


def test_prod_function_keepdims_and_all_axes() -> None:
    rows = 37
    xs = rng.uniform(-1.5, 1.5, (rows, 4)).astype(np.float32)
    z = api.full([rows, 4], np.nan, f32).partition([8, 4])
    z, _ = prod_forms(z, api.from_numpy(xs)).sync()
    ref = np.broadcast_to(xs.astype(np.float64).prod(axis=1, keepdims=True), (rows, 4))
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=2e-6, atol=1e-30)


def test_integer_prod_wraps_like_the_device() -> None:
    rows = 21
    xs = rng.integers(-300, 300, (rows, 4)).astype(np.int32)
    z = api.zeros([rows], i32).partition([8])
    z, _ = int_prod(z, api.from_numpy(xs)).sync()
    ref = [_wrap(int(np.prod(r.astype(object))), 32) for r in xs]
    assert z.unpartition().to_numpy().tolist() == ref


# ------------------------------------------------------------------------------ isnan


@cutile.entry
def nan_mask(z: Mut[Tensor[i32, ["B"]]], x: Tensor[f32, [-1]], h: Tensor[f16, [-1]],
             k: Tensor[i32, [-1]], B: Const[int]):
    t = load_tile_like(x, z)
    both = isnan(t).astype(i32) + 2 * isnan(load_tile_like(h, z)).astype(i32)
    z.store(both + 4 * isnan(load_tile_like(k, z)).astype(i32) + 8 * isnan(t + t).astype(i32))


def test_isnan_finds_exactly_the_nans() -> None:
    n = 300
    xs = rng.standard_normal(n).astype(np.float32) * 1e30
    xs[rng.choice(n, 40, replace=False)] = np.nan
    xs[:3] = [np.inf, -np.inf, 0.0]             # infinities are not NaN; inf + inf is not
    hs = rng.standard_normal(n).astype(np.float16)
    hs[rng.choice(n, 30, replace=False)] = np.nan
    ks = rng.integers(-9, 9, n).astype(np.int32)
    z = api.full([n], -1, i32).partition([128])
    z, *_ = nan_mask(z, api.from_numpy(xs), api.from_numpy(hs), api.from_numpy(ks)).sync()
    x64 = xs.astype(np.float64)
    ref = np.isnan(x64) + 2 * np.isnan(hs) + 8 * np.isnan(x64 + x64)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), ref.astype(np.int32))


# ------------------------------------------------------------------------------ atan2


@cutile.entry
def angle(z: Mut[Tensor[f32, ["B"]]], y: Tensor[f32, [-1]], x: Tensor[f32, [-1]],
          k: Tensor[i32, [-1]], B: Const[int]):
    a = atan2(load_tile_like(y, z), load_tile_like(x, z))
    z.store(a + 10.0 * atan2(load_tile_like(k, z), 2))      # integers become f32


def test_atan2_all_quadrants_against_numpy() -> None:
    n = 1000
    ys = rng.standard_normal(n).astype(np.float32)
    xs = rng.standard_normal(n).astype(np.float32)
    xs[:4], ys[:4] = [0.0, 0.0, -1.0, -1.0], [1.0, -1.0, 0.0, -0.0]
    ks = rng.integers(-50, 50, n).astype(np.int32)
    z = api.full([n], np.nan, f32).partition([256])
    z, *_ = angle(z, api.from_numpy(ys), api.from_numpy(xs), api.from_numpy(ks)).sync()
    ref = np.arctan2(ys.astype(np.float64), xs) + 10 * np.arctan2(ks.astype(np.float64), 2.0)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-6, atol=2e-6)


# ------------------------------------------------------------------------------ fma


@cutile.entry
def fused(z: Mut[Tensor[f32, ["B"]]], a: Tensor[f32, [-1]], b: Tensor[f32, [-1]],
          c: Tensor[f32, [-1]], B: Const[int]):
    z.store(fma(load_tile_like(a, z), load_tile_like(b, z), load_tile_like(c, z)))


@cutile.entry
def fused_mixed(z: Mut[Tensor[i32, ["B"]]], a: Tensor[i32, [-1]], h: Tensor[f16, [-1]],
                B: Const[int]):
    t = load_tile_like(a, z)
    f = fma(load_tile_like(h, z), 2.0, 1.0)           # f16 throughout (Python floats are weak)
    z.store(fma(t, t, 7) + f.astype(i32))              # integers multiply and add, wrapping


def test_fma_rounds_once_against_float64() -> None:
    n = 777
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    c = -(a.astype(np.float64) * b).astype(np.float32)  # a*b + c cancels: fused or not shows
    c[::3] = rng.standard_normal(len(c[::3])).astype(np.float32)
    z = api.full([n], np.nan, f32).partition([128])
    z, *_ = fused(z, api.from_numpy(a), api.from_numpy(b), api.from_numpy(c)).sync()
    exact = a.astype(np.float64) * b + c                # exact product, one rounding below
    np.testing.assert_array_equal(z.unpartition().to_numpy(), exact.astype(np.float32))
    assert np.count_nonzero(exact[1::3]) > 100          # the residues are not all zero


def test_fma_on_integers_and_with_python_numbers() -> None:
    n = 200
    a = rng.integers(-50000, 50000, n).astype(np.int32)
    h = rng.uniform(-100, 100, n).astype(np.float16)
    z = api.zeros([n], i32).partition([64])
    z, *_ = fused_mixed(z, api.from_numpy(a), api.from_numpy(h)).sync()
    f = (h.astype(np.float32) * 2 + 1).astype(np.float16).astype(np.float64)
    ref = [_wrap(int(x) * int(x) + 7, 32) + int(np.trunc(y)) for x, y in zip(a, f, strict=True)]
    assert z.unpartition().to_numpy().tolist() == ref


# ------------------------------------------------------------------------------ integer **


@cutile.entry
def ipow_device(z: Mut[Tensor[i32, ["B"]]], x: Tensor[i32, [-1]], e: Tensor[i32, [-1]],
                B: Const[int]):
    z.store(load_tile_like(x, z) ** load_tile_like(e, z))


@cutile.entry
def ipow_const(z: Mut[Tensor[i32, ["B"]]], x: Tensor[i32, [-1]], B: Const[int], C: Const[int]):
    t = load_tile_like(x, z)
    z.store(t ** C + pow(t, 2) - 3 ** (t % 4))          # scalar base, device exponent


@cutile.entry
def ipow_narrow(z: Mut[Tensor[i64, ["B"]]], x: Tensor[i8, [-1]], e: Tensor[i8, [-1]],
                w: Tensor[i64, [-1]], B: Const[int]):
    small = load_tile_like(x, z) ** load_tile_like(e, z)        # i8: wraps in 8 bits
    z.store(small.astype(i64) + load_tile_like(w, z) ** 3)      # i64: 64-bit products


@cutile.entry
def ipow_scalar(z: Mut[Tensor[i32, ["B"]]], s: i32, n: i32, B: Const[int]):
    z.store(full((B,), s ** n, i32))


@pytest.mark.parametrize("n", [300, 64])
def test_integer_power_with_device_exponents(n: int) -> None:
    xs = rng.integers(-7, 8, n).astype(np.int32)
    es = rng.integers(-4, 40, n).astype(np.int32)
    xs[:6], es[:6] = [2, 3, -1, -1, 0, 0], [31, 20, -3, -2, 0, -1]
    z = api.full([n], 99, i32).partition([64])
    z, *_ = ipow_device(z, api.from_numpy(xs), api.from_numpy(es)).sync()
    ref = [_ipow(int(b), int(e), 32) for b, e in zip(xs, es, strict=True)]
    assert z.unpartition().to_numpy().tolist() == ref


@pytest.mark.parametrize("c", [0, 1, 2, 3, 5, 7, 13])
def test_integer_power_with_a_constant_exponent_unrolls(c: int) -> None:
    n = 100
    xs = rng.integers(-20, 21, n).astype(np.int32)
    z = api.zeros([n], i32).partition([32])
    z, _ = ipow_const(z, api.from_numpy(xs), C=c).sync()
    ref = [_wrap(int(b) ** c + int(b) ** 2 - 3 ** (int(b) % 4), 32) for b in xs]
    assert z.unpartition().to_numpy().tolist() == ref


def test_integer_power_in_narrow_and_wide_types() -> None:
    n = 150
    xs = rng.integers(-5, 6, n).astype(np.int8)
    es = rng.integers(0, 12, n).astype(np.int8)
    ws = rng.integers(-(2**21), 2**21, n).astype(np.int64)
    z = api.zeros([n], i64).partition([64])
    z, *_ = ipow_narrow(z, api.from_numpy(xs), api.from_numpy(es), api.from_numpy(ws)).sync()
    ref = [_ipow(int(b), int(e), 8) + int(w) ** 3 for b, e, w in zip(xs, es, ws, strict=True)]
    assert z.unpartition().to_numpy().tolist() == ref


@pytest.mark.parametrize(("s", "n"), [(3, 19), (-2, 31), (7, 0), (5, -2), (-1, -7)])
def test_integer_power_of_runtime_scalars(s: int, n: int) -> None:
    z = api.zeros([40], i32).partition([16])
    z, _, _ = ipow_scalar(z, s, n).sync()
    assert z.unpartition().to_numpy().tolist() == [_ipow(s, n, 32)] * 40


@cutile.entry
def ipow_negative(z: Mut[Tensor[i32, [16]]], C: Const[int]):
    z.store(z.load() ** C)


@cutile.entry
def bool_pow(z: Mut[Tensor[i32, [16]]]):
    t = z.load() > 0
    z.store(t ** t)


def test_a_negative_constant_integer_exponent_is_ct3053() -> None:
    err = _lower_error(ipow_negative, C=-2)
    assert err.codes == ["CT3053"]
    assert "an integer raised to the negative power -2" in str(err)
    assert "z.store(z.load() ** C)" in str(err)
    assert _lower_error(bool_pow).codes == ["CT3005"]


# ------------------------------------------------------------------------------ f16 sums


@cutile.entry
def half_sums(z: Mut[Tensor[f32, ["BM"]]], x: Tensor[f16, [-1, 16]], BM: Const[int]):
    z.store(x.load_tile((BM, 16), (block_id(0), 0)).sum(axis=1))


@cutile.entry
def half_sums_keep(z: Mut[Tensor[f32, ["BM", 1]]], x: Tensor[bf16, [-1, 64]], BM: Const[int]):
    t = x.load_tile((BM, 64), (block_id(0), 0))
    z.store(t.sum(axis=1, keepdims=True))


def test_an_f16_sum_accumulates_in_f32_and_returns_f16() -> None:
    # 1024 + fifteen 0.25s: f32 accumulation gives 1027.75, rounded once to f16: 1028.
    # Accumulating in f16 gives 1027 (each 0.25 is lost next to 1024); an f32 result
    # would be 1027.75.
    row = np.array([1024.0] + [0.25] * 15, np.float16)
    xs = np.stack([row, row[::-1], rng.standard_normal(16).astype(np.float16)])
    z = api.full([3], np.nan, f32).partition([4])
    z, _ = half_sums(z, api.from_numpy(xs)).sync()
    got = z.unpartition().to_numpy()
    assert got[:2].tolist() == [1028.0, 1028.0]
    assert got[2] == np.float16(xs[2].astype(np.float64).sum())


def test_f16_and_bf16_sums_of_random_rows_with_a_ragged_last_tile() -> None:
    rows = 45
    xs = rng.uniform(0, 4, (rows, 16)).astype(np.float16)
    z = api.full([rows], np.nan, f32).partition([16])
    z, _ = half_sums(z, api.from_numpy(xs)).sync()
    ref = xs.astype(np.float64).sum(axis=1)
    got = z.unpartition().to_numpy()
    np.testing.assert_allclose(got, ref, rtol=2**-11)   # one f16 rounding of the exact sum
    assert np.array_equal(got, got.astype(np.float16))  # the result is an f16 value

    bs = rng.uniform(0, 4, (rows, 64)).astype(np.float32)
    bits = bs.view(np.uint32) & np.uint32(0xFFFF0000)   # exactly representable in bf16
    bs = bits.view(np.float32)
    z = api.full([rows, 1], np.nan, f32).partition([16, 1])
    z, _ = half_sums_keep(z, api.from_numpy(bs.astype(ml_dtypes.bfloat16))).sync()
    ref = bs.astype(np.float64).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=2**-8)


# ------------------------------------------------------------------------------ assembly

ASSEMBLED = [
    (row_prod, {"BM": 16}),
    (prod_forms, {"BM": 8}),
    (nan_mask, {"B": 128}),
    (angle, {"B": 256}),
    (fused, {"B": 128}),
    (fused_mixed, {"B": 64}),
    (ipow_device, {"B": 64}),
    (ipow_const, {"B": 32, "C": 5}),
    (ipow_narrow, {"B": 64}),
    (half_sums, {"BM": 16}),
    (half_sums_keep, {"BM": 16}),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("kernel", "consts"), ASSEMBLED,
                         ids=[k.__name__ for k, _ in ASSEMBLED])
def test_each_kernel_assembles_for_sm_90(kernel: Any, consts: dict[str, int]) -> None:
    assert kernel.compile(target="sm_90", **consts).cubin[:4] == b"\x7fELF"

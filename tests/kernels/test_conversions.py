"""`astype` and the implicit conversion of a store, on the active backend and through
tileiras: float -> int truncates toward zero (numpy's `astype`), int -> float rounds to
nearest even, float -> float rounds to nearest even; ragged last tiles included."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, bf16, f16, f32, i8, i16, i32, load_tile_like

rng = np.random.default_rng(31)


@cutile.entry
def to_i32(z: Mut[Tensor[i32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z).astype(i32))


@cutile.entry
def to_i16_implicit(z: Mut[Tensor[i16, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) * 3.0)        # the store converts f32 -> i16


@cutile.entry
def i32_to_f32(z: Mut[Tensor[f32, ["B"]]], x: Tensor[i32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z).astype(f32) * 0.5)


@cutile.entry
def round_trip_half(z: Mut[Tensor[f32, ["B"]]], h: Mut[Tensor[f16, ["B"]]],
                    b: Mut[Tensor[bf16, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, z)
    h.store(t.astype(f16))
    b.store(t.astype(bf16))
    z.store(t.astype(f16).astype(f32) + t.astype(bf16).astype(f32))


@cutile.entry
def to_i8(z: Mut[Tensor[i8, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z).astype(i8))


@pytest.mark.parametrize("n", [1000, 4096, 3])
def test_float_to_int_truncates_toward_zero(n: int) -> None:
    xs = (rng.standard_normal(n) * 1000).astype(np.float32)
    xs[:3] = [-0.5, 0.99, -2.999][:n]
    z = api.full([n], -7, i32).partition([256])
    z, _ = to_i32(z, api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.trunc(xs).astype(np.int32))


def test_store_converts_float_to_narrow_int() -> None:
    xs = (rng.standard_normal(1000) * 3000).astype(np.float32)
    z = api.zeros([1000], i16).partition([128])
    z, _ = to_i16_implicit(z, api.from_numpy(xs)).sync()
    want = np.trunc(xs.astype(np.float32) * np.float32(3.0)).astype(np.int16)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), want)


def test_float_to_int_saturates_and_nan_is_zero() -> None:
    # Defined where Tile IR and numpy leave it open: out of range saturates, NaN is 0 (what
    # the GPU's cvt.rzi.sat does; the interpreter does the same).
    xs = np.array([300.0, -300.0, 127.9, -128.9, np.nan, np.inf, -np.inf, 0.5], np.float32)
    z = api.zeros([8], i8).partition([8])
    z, _ = to_i8(z, api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(),
                                  np.array([127, -128, 127, -128, 0, 127, -128, 0], np.int8))


def test_int_to_float_and_half_round_trips() -> None:
    ints = rng.integers(-(2**24), 2**24, 777).astype(np.int32)
    z = api.zeros([777], f32).partition([128])
    z, _ = i32_to_f32(z, api.from_numpy(ints)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), ints.astype(np.float32) * 0.5)

    xs = (rng.standard_normal(1000) * 50).astype(np.float32)
    z = api.zeros([1000], f32).partition([128])
    h = api.zeros([1000], f16).partition([128])
    b = api.zeros([1000], bf16).partition([128])
    z, h, b, _ = round_trip_half(z, h, b, api.from_numpy(xs)).sync()
    want_h = xs.astype(np.float16)
    want_b = xs.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(h.unpartition().to_numpy(), want_h)
    np.testing.assert_array_equal(b.unpartition().to_numpy().view(np.uint16),
                                  want_b.view(np.uint16))
    np.testing.assert_array_equal(z.unpartition().to_numpy(),
                                  want_h.astype(np.float32) + want_b.astype(np.float32))


@pytest.mark.tileiras
@pytest.mark.parametrize("kernel", [to_i32, to_i16_implicit, i32_to_f32, round_trip_half, to_i8])
def test_conversions_assemble_for_sm90(kernel: cutile.EntryKernel) -> None:
    assert kernel.compile(target="sm_90", B=128).cubin[:4] == b"\x7fELF"


def test_a_nan_converts_to_the_gpus_half_precision_nan() -> None:
    # The H200 writes 0x7fff for a NaN converted to f16 or bf16 (numpy would write 0x7e00 /
    # 0x7fc0); the interpreter writes the same bits (tests/gpu/test_differential_ops.py).
    xs = np.array([np.nan, -np.nan, 1.0, -2.5] * 4, np.float32)
    z = api.zeros([16], f32).partition([16])
    h = api.zeros([16], f16).partition([16])
    b = api.zeros([16], bf16).partition([16])
    z, h, b, _ = round_trip_half(z, h, b, api.from_numpy(xs)).sync()
    hb = h.unpartition().to_numpy().view(np.uint16)
    bb = b.unpartition().to_numpy().view(np.uint16)
    assert hb[0] == hb[1] == 0x7FFF and bb[0] == bb[1] == 0x7FFF
    assert hb[2] == 0x3C00 and bb[3] == 0xC020

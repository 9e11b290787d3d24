"""f8e4m3fn and f8e5m2: host storage through ml_dtypes, conversions that round to nearest
even and saturate (the GPU's `cvt.rn.satfinite`: past the largest finite value, infinities
too, the result is +-448 / +-57344; NaN stays NaN), loads and stores that keep every bit,
`mma` of f8 tiles into f32 (and f16), and an FP8 GEMM with scales in the epilogue, against
ml_dtypes and float64 references; every kernel assembles for sm_90."""

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
    block_id,
    f8e4m3fn,
    f8e5m2,
    f16,
    f32,
    f64,
    full,
    load_tile_like,
    mma,
    num_tiles,
    where,
    zeros,
)

rng = np.random.default_rng(8)
ML = {"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}
MAX = {"f8e4m3fn": 448.0, "f8e5m2": 57344.0}


def reference(x: np.ndarray, name: str) -> np.ndarray:
    """ml_dtypes rounds like the GPU once values are inside the finite range (from f64 it
    goes through f32, rounding twice: see `round_to_odd`)."""
    return np.clip(x, -MAX[name], MAX[name]).astype(ML[name])


def round_to_odd(x: np.ndarray) -> np.ndarray:
    """f64 -> f32 rounding to odd (toward zero, the last bit set when inexact), after which
    one more rounding to a narrower format is the correct one (how the GPU converts f64)."""
    t = x.astype(np.float32)
    t = np.where(np.abs(t.astype(np.float64)) > np.abs(x), np.nextafter(t, np.float32(0)), t)
    inexact = (t.astype(np.float64) != x) & np.isfinite(x)
    return np.where(inexact, (t.view(np.uint32) | 1).view(np.float32), t)


def hard_values(dtype: type, name: str) -> np.ndarray:
    """Random values at every scale (subnormals of the format included), the midpoints
    between neighbouring f8 values (ties), values that saturate, and +-inf and NaN."""
    every = np.arange(256, dtype=np.uint8).view(ML[name]).astype(np.float64)
    finite = np.unique(every[np.isfinite(every)])
    mids = (finite[1:] + finite[:-1]) / 2
    scales = [MAX[name] * 2.0**-e for e in (0, 4, 8, 12, 16, 20)]
    xs = np.concatenate([rng.standard_normal(400) * s for s in scales]
                        + [mids, finite, [MAX[name] * 1.1, -MAX[name] * 3, 1e30, -1e30, np.inf,
                                          -np.inf, np.nan, 0.0, -0.0]])
    with np.errstate(over="ignore"):
        return xs.astype(dtype)


@cutile.entry
def to_f8(e4: Mut[Tensor[f8e4m3fn, ["B"]]], e5: Mut[Tensor[f8e5m2, ["B"]]],
          x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, e4)
    e4.store(t.astype(f8e4m3fn))
    e5.store(t)                       # the store converts, as astype does


@cutile.entry
def half_to_f8(e4: Mut[Tensor[f8e4m3fn, ["B"]]], e5: Mut[Tensor[f8e5m2, ["B"]]],
               x: Tensor[f16, [-1]], y: Tensor[bf16, [-1]], B: Const[int]):
    e4.store(load_tile_like(x, e4).astype(f8e4m3fn))
    e5.store(load_tile_like(y, e5).astype(f8e5m2))


@cutile.entry
def f64_to_f8(e4: Mut[Tensor[f8e4m3fn, ["B"]]], x: Tensor[f64, [-1]], B: Const[int]):
    e4.store(load_tile_like(x, e4).astype(f8e4m3fn))


@cutile.entry
def widen(a: Mut[Tensor[f32, ["B"]]], b: Mut[Tensor[f16, ["B"]]], c: Mut[Tensor[bf16, ["B"]]],
          d: Mut[Tensor[f8e5m2, ["B"]]], e: Mut[Tensor[f8e4m3fn, ["B"]]],
          x: Tensor[f8e4m3fn, [-1]], y: Tensor[f8e5m2, [-1]], B: Const[int]):
    t = load_tile_like(x, a)
    a.store(t.astype(f32))
    b.store(t.astype(f16))
    c.store(t.astype(bf16))
    d.store(t.astype(f8e5m2))         # between the formats: rounds and saturates once
    e.store(load_tile_like(y, e).astype(f8e4m3fn))


@cutile.entry
def copy(z: Mut[Tensor[f8e5m2, ["B"]]], x: Tensor[f8e5m2, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))


@cutile.entry
def constants(z: Mut[Tensor[f8e4m3fn, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    big = full((B,), 1000.0, f8e4m3fn)            # a constant saturates too
    z.store(where(load_tile_like(x, z) > 0.0, big, zeros((B,), f8e4m3fn)))


@pytest.mark.parametrize("n", [1000, 4096])
def test_f32_to_f8_rounds_to_nearest_even_and_saturates(n: int) -> None:
    xs = hard_values(np.float32, "f8e4m3fn")[:n]
    xs = np.concatenate([xs, hard_values(np.float32, "f8e5m2")[: n - len(xs)]])
    e4 = api.zeros([len(xs)], f8e4m3fn).partition([256])
    e5 = api.zeros([len(xs)], f8e5m2).partition([256])
    e4, e5, _ = to_f8(e4, e5, api.from_numpy(xs)).sync()
    for got, name in ((e4, "f8e4m3fn"), (e5, "f8e5m2")):
        g = got.unpartition().to_numpy()
        assert g.dtype == ML[name]
        want = reference(xs, name)
        nan = np.isnan(xs)
        np.testing.assert_array_equal(np.isnan(g.astype(np.float32)), nan)
        np.testing.assert_array_equal(g.view(np.uint8)[~nan], want.view(np.uint8)[~nan])


def test_f8_saturates_infinities_and_keeps_nan() -> None:
    xs = np.array([np.inf, -np.inf, 1e9, -500.0, 464.0, 465.0, np.nan, 1e-10], np.float32)
    e4 = api.zeros([8], f8e4m3fn).partition([8])
    e5 = api.zeros([8], f8e5m2).partition([8])
    e4, e5, _ = to_f8(e4, e5, api.from_numpy(xs)).sync()
    a = e4.unpartition().to_numpy().astype(np.float32)
    b = e5.unpartition().to_numpy().astype(np.float32)
    # 464 is the tie between 448 and 480 (a NaN pattern in e4m3fn): to even, 448
    np.testing.assert_array_equal(a[:6], [448, -448, 448, -448, 448, 448])
    np.testing.assert_array_equal(b[:6], [57344, -57344, 57344, -512, 448, 448])
    assert np.isnan(a[6]) and np.isnan(b[6])
    assert a[7] == 0 and b[7] == 0


def test_half_bf16_and_f64_round_once() -> None:
    h = hard_values(np.float16, "f8e4m3fn")
    n = len(h)
    bf = np.resize(hard_values(np.float32, "f8e5m2"), n).astype(ml_dtypes.bfloat16)
    e4 = api.zeros([n], f8e4m3fn).partition([512])
    e5 = api.zeros([n], f8e5m2).partition([512])
    e4, e5, _, _ = half_to_f8(e4, e5, api.from_numpy(h), api.from_numpy(bf)).sync()
    for got, src, name in ((e4, h, "f8e4m3fn"), (e5, bf, "f8e5m2")):
        x = src.astype(np.float64)
        keep = ~np.isnan(x)
        np.testing.assert_array_equal(got.unpartition().to_numpy().view(np.uint8)[keep],
                                      reference(x, name).view(np.uint8)[keep])
    d = hard_values(np.float64, "f8e4m3fn")
    d = np.concatenate([d, (np.arange(1, 300) * 2.0**-9 * (1 + 2.0**-30))])  # just past ties
    e4 = api.zeros([len(d)], f8e4m3fn).partition([512])
    e4, _ = f64_to_f8(e4, api.from_numpy(d)).sync()
    keep = ~np.isnan(d)
    want = reference(round_to_odd(d), "f8e4m3fn")  # not `reference(d)`: that rounds twice
    assert (want != reference(d, "f8e4m3fn")).any()
    np.testing.assert_array_equal(e4.unpartition().to_numpy().view(np.uint8)[keep],
                                  want.view(np.uint8)[keep])


def test_every_f8_value_widens_exactly() -> None:
    bits = np.arange(256, dtype=np.uint8)
    x4, x5 = bits.view(ml_dtypes.float8_e4m3fn), bits.view(ml_dtypes.float8_e5m2)
    outs = [api.zeros([256], d).partition([64]) for d in (f32, f16, bf16, f8e5m2, f8e4m3fn)]
    a, b, c, d, e, _, _ = widen(*outs, api.from_numpy(x4), api.from_numpy(x5)).sync()
    v4 = x4.astype(np.float32)
    for got in (a, b, c):
        g = got.unpartition().to_numpy().astype(np.float32)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(v4))
        np.testing.assert_array_equal(g[~np.isnan(v4)], v4[~np.isnan(v4)])
        np.testing.assert_array_equal(np.signbit(g)[~np.isnan(v4)], np.signbit(v4)[~np.isnan(v4)])
    for got, src, name in ((d, v4, "f8e5m2"), (e, x5.astype(np.float32), "f8e4m3fn")):
        keep = ~np.isnan(src)
        np.testing.assert_array_equal(got.unpartition().to_numpy().view(np.uint8)[keep],
                                      reference(src, name).view(np.uint8)[keep])


def test_loads_and_stores_keep_every_bit() -> None:
    x = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2)  # six NaNs, two infinities
    z = api.zeros([256], f8e5m2).partition([128])
    z, _ = copy(z, api.from_numpy(x)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy().view(np.uint8), x.view(np.uint8))


def test_f8_constants_round_and_saturate() -> None:
    xs = rng.standard_normal(300).astype(np.float32)
    z = api.full([300], 1.0, f8e4m3fn).partition([128])
    z, _ = constants(z, api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy().astype(np.float32),
                                  np.where(xs > 0, 448.0, 0.0))


@pytest.mark.parametrize("name", ["f8e4m3fn", "f8e5m2"])
def test_minifloat_matches_ml_dtypes(name: str) -> None:
    """The rounding the interpreter and the constant encoder share (`cutile.minifloat`)
    against ml_dtypes: every bit pattern decodes alike, and random f32 bit patterns (every
    exponent, subnormals included) round alike inside the finite range."""
    from cutile import minifloat

    every = np.arange(256, dtype=np.uint8)
    want = every.view(ML[name]).astype(np.float32)
    got = minifloat.from_bits(every, name)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    x = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) <= MAX[name])]
    np.testing.assert_array_equal(minifloat.to_bits(x, name), reference(x, name).view(np.uint8))


def test_host_tensors_hold_f8() -> None:
    x = rng.standard_normal((5, 7)).astype(ml_dtypes.float8_e5m2)
    t = api.from_numpy(x)
    assert t.dtype is f8e5m2 and t.dtype.itemsize == 1
    np.testing.assert_array_equal(t.to_numpy().view(np.uint8), x.view(np.uint8))
    np.testing.assert_array_equal(t[1:4, ::2].to_numpy().view(np.uint8),
                                  x[1:4, ::2].view(np.uint8))
    assert api.zeros([3], "f8e4m3fn").to_numpy().dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(api.full([2], -2.5, f8e4m3fn).to_numpy().astype(np.float32),
                                  [-2.5, -2.5])
    with pytest.raises(cutile.TensorError, match="overflows `f8e4m3fn`"):
        api.full([2], 1000.0, f8e4m3fn)


# -- mma and the FP8 GEMM -----------------------------------------------------------------------


@cutile.entry
def gemm_scaled(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f8e4m3fn, [-1, -1]],
                y: Tensor[f8e4m3fn, [-1, -1]], rows: Tensor[f32, [-1, 1]], sx: f32, sy: f32,
                BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        acc = mma(x.load_tile((BM, BK), (block_id(0), k)),
                  y.load_tile((BK, BN), (k, block_id(1))), acc)
    # per-tensor scales (scalars) and per-row scales (a column), in the epilogue
    z.store(acc * (sx * sy) * rows.load_tile((BM, 1), (block_id(0), 0)))


@cutile.entry
def gemm_e5m2_f16(z: Mut[Tensor[f16, ["BM", "BN"]]], w: Mut[Tensor[f8e5m2, ["BM", "BN"]]],
                  x: Tensor[f8e5m2, [-1, -1]], y: Tensor[f8e5m2, [-1, -1]], BM: Const[int],
                  BN: Const[int], BK: Const[int]):
    a = x.load_tile((BM, BK), (block_id(0), 0))
    b = y.load_tile((BK, BN), (0, block_id(1)))
    z.store(mma(a, b, zeros((BM, BN), f16)))      # f8 x f8 -> f16 accumulator
    w.store(a @ b)                                 # `@` of f8: f32 accumulator, back to f8


def quantize(x: np.ndarray, name: str) -> tuple[np.ndarray, float]:
    scale = float(np.abs(x).max()) / MAX[name]
    return reference(x / scale, name), scale


@pytest.mark.parametrize(("m", "n", "k"), [(96, 80, 200), (64, 64, 64)])
def test_fp8_gemm_with_scales_matches_float64(m: int, n: int, k: int) -> None:
    a = rng.standard_normal((m, k)) * 3
    b = rng.standard_normal((k, n)) / 3
    qa, sx = quantize(a, "f8e4m3fn")
    qb, sy = quantize(b, "f8e4m3fn")
    rows = rng.uniform(0.5, 2.0, (m, 1)).astype(np.float32)
    z = api.zeros([m, n], f32).partition([32, 16])
    z, *_ = gemm_scaled(z, api.from_numpy(qa), api.from_numpy(qb), api.from_numpy(rows),
                        sx, sy, BK=32).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    ref = (qa.astype(np.float64) @ qb.astype(np.float64)) * np.float32(np.float32(sx)
                                                                        * np.float32(sy)) * rows
    # f8 products are exact; the GPU's f8 tensor cores accumulate with fewer bits than f32
    np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-3 * np.abs(ref).max())
    assert np.abs(out - a @ b * rows).max() < 0.1 * np.abs(ref).max()  # quantization error


def test_e5m2_mma_into_f16_and_matmul_back_to_f8() -> None:
    x = (rng.standard_normal((32, 32)) * 4).astype(ml_dtypes.float8_e5m2)
    y = (rng.standard_normal((32, 64)) * 4).astype(ml_dtypes.float8_e5m2)
    z = api.zeros([32, 64], f16).partition([32, 32])
    w = api.zeros([32, 64], f8e5m2).partition([32, 32])
    z, w, _, _ = gemm_e5m2_f16(z, w, api.from_numpy(x), api.from_numpy(y), BK=32).sync()
    ref = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(z.unpartition().to_numpy().astype(np.float64), ref, rtol=1e-2,
                               atol=2e-2 * np.abs(ref).max())
    got = w.unpartition().to_numpy().astype(np.float64)
    np.testing.assert_allclose(got, reference(ref, "f8e5m2").astype(np.float64), rtol=0.26)


# -- what f8 does not do -------------------------------------------------------------------------


def _kernel(src: str, tmp_path: object) -> cutile.EntryKernel:

    kernel: cutile.EntryKernel = load_kernel(
        tmp_path, "@cutile.entry\n"
        "def k(z: Mut[Tensor[f32, ['B']]], x: Tensor[f8e4m3fn, [-1]], B: Const[int]):\n"
        f"    t = load_tile_like(x, z)\n    z.store({src})\n")
    return kernel


def _refusal(src: str, tmp_path: object) -> cutile.CutileError:
    k = _kernel(src, tmp_path)
    with pytest.raises(cutile.CutileError) as err:
        k.lowered(k.specialization({"B": 16}))
    return err.value


@pytest.mark.parametrize(("src", "code"), [
    ("t + t", "CT3005"), ("t * 2.0", "CT3005"), ("t < t", "CT3005"), ("-t", "CT3005"),
    ("exp(t)", "CT3005"), ("t.sum()", "CT3005"), ("cumsum(t)", "CT3005"),
    ("maximum(t, t)", "CT3005"), ("t + t.astype(f32)", "CT3090"),
    ("t.astype(f32) + t.astype(f8e5m2)", "CT3090"),
    ("x.load_tile((16,), (0,), padding='pos_inf').astype(f32)", "CT3038"),
])
def test_f8_is_storage_not_arithmetic(src: str, code: str, tmp_path: object) -> None:
    err = _refusal(src, tmp_path)
    assert err.code == code, err
    assert "astype" in str(err) or "infinity" in str(err)


def test_f8_arithmetic_through_f32_lowers(tmp_path: object) -> None:
    k = _kernel("t.astype(f32) * 2.0 + abs(t.astype(f32))", tmp_path)
    assert k.lowered(k.specialization({"B": 16})) is not None


KERNELS = {to_f8: {"B": 256}, half_to_f8: {"B": 256}, f64_to_f8: {"B": 256},
           widen: {"B": 64}, copy: {"B": 128}, constants: {"B": 128},
           gemm_scaled: {"BM": 64, "BN": 64, "BK": 64},
           gemm_e5m2_f16: {"BM": 64, "BN": 64, "BK": 32}}


@pytest.mark.tileiras
@pytest.mark.parametrize("kernel", list(KERNELS), ids=lambda k: k.name)
def test_fp8_kernels_assemble_for_sm90(kernel: cutile.EntryKernel) -> None:
    compiled = kernel.compile(target="sm_90", **KERNELS[kernel])
    assert compiled.cubin[:4] == b"\x7fELF"


@pytest.mark.tileiras
def test_sm90_converts_with_satfinite_and_multiplies_on_qgmma(tmp_path: object) -> None:
    """The instructions the interpreter's semantics stand for: `F2FP.SATFINITE` (round to
    nearest even, saturate to finite, NaN stays NaN) and the f8 tensor-core `QGMMA`."""
    import os
    import pathlib
    import subprocess

    from cutile.backend.tileiras import find_tileiras

    dump = find_tileiras().path.with_name("cuobjdump")
    if not (dump.is_file() and dump.with_name("nvdisasm").is_file()):
        pytest.skip("cuobjdump/nvdisasm are not installed next to tileiras")
    texts = []
    for kernel in (to_f8, gemm_scaled):
        path = pathlib.Path(str(tmp_path)) / f"{kernel.name}.cubin"
        path.write_bytes(kernel.compile(target="sm_90", **KERNELS[kernel]).cubin)
        env = dict(os.environ, PATH=f"{dump.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        texts.append(subprocess.run([str(dump), "-sass", str(path)], capture_output=True,
                                    text=True, env=env, timeout=120, check=True).stdout)
    assert "F2FP.SATFINITE.E4M3.F32" in texts[0] and "F2FP.SATFINITE.E5M2.F32" in texts[0]
    assert "QGMMA" in texts[1] and "E4M3.E4M3" in texts[1]

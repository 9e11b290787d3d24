"""Where an f8 GEMM keeps its K sum (`mma(..., fast_acc=...)` and the persistent FP8 GEMM's
`accumulate` variants in examples/fp8_gemm.py, the candidates of benchmarks/fp8_gemm.py
--focus): each variant against float64 on the interpreter, `fast_acc` accepted on f8
operands and refused elsewhere, and the SASS tileiras makes of each candidate (the f8
tensor-core QGMMA, no spill, and whether the next k-step's MMAs wait for f32 adds).

Error bound on the interpreter: it computes every `mma` exactly in f64 and rounds once to
the f32 accumulator, so the variants differ only by f32 roundings of partial sums (at most
K / BK of them, each 2^-24 of the sum of |terms|). The bf16 result rounds once more, by at
most half its unit in the last place, 2^-8 of the value. Accepted per element:
|out - ref| <= 2^-8 |ref| + 1e-5 (|A| |B|), the second term a hundred times the f32
bound. A missing or doubled k-tile, a wrong scale or a wrong output tile is off by far more.
On the GPU the "fast" and "promote" sums lose more (Hopper's f8 accumulator keeps fewer bits
than f32); tests/gpu/test_tensor_core_configs_gpu.py bounds that."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np
import pytest
from kernel_source import load_example, load_kernel

import cutile
from cutile import api
from cutile.core import bf16

ex = load_example("fp8_gemm", "acc")
rng = np.random.default_rng(81)

VARIANTS = [("f32", 1), ("fast", 1), ("promote", 2), ("promote", 4)]


def _inputs(m: int, n: int, k: int) -> tuple[Any, Any, Any, Any, np.ndarray, np.ndarray]:
    a = (rng.standard_normal((m, k)) * rng.uniform(0.1, 10, (m, 1))).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    qa, sa = ex.quantize(a)
    qb, sb = ex.quantize(np.ascontiguousarray(b.T))
    da = qa.to_numpy().astype(np.float64) * sa.to_numpy()[:, None]
    db = (qb.to_numpy().astype(np.float64) * sb.to_numpy()[:, None]).T
    return qa, qb, sa, sb, da, db


@pytest.mark.parametrize(("accumulate", "promote"), VARIANTS)
@pytest.mark.parametrize(("m", "n", "k", "bm", "bn", "bk"), [
    (200, 300, 1000, 64, 64, 64),    # ragged M, N and K: the last tiles pad with zeros
    (128, 192, 512, 64, 128, 128),   # K = 4 tiles: promote 4 is one f32 add a tile
])
def test_persistent_variants_match_float64(accumulate: str, promote: int, m: int, n: int,
                                           k: int, bm: int, bn: int, bk: int) -> None:
    qa, qb, sa, sb, da, db = _inputs(m, n, k)
    kernel = ex.make_fp8_gemm_persistent(None, accumulate, promote)
    z = api.zeros([m, n], bf16).partition([bm, bn]).persistent(5)
    z, *_ = kernel(z, qa, qb, sa, sb, BK=bk, G=2).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    ref = da @ db
    bound = 2.0**-8 * np.abs(ref) + 1e-5 * (np.abs(da) @ np.abs(db))
    worst = float((np.abs(out - ref) / bound).max())
    assert worst <= 1.0, f"{accumulate}/{promote}: error {worst:.2f} x the bound"
    assert np.abs(ref).min() < 0.1 * np.abs(ref).max()  # the bound is tested near zero too


def test_promote_needs_whole_groups_of_k_tiles() -> None:
    """"promote" loads k-tile `kk * promote + j`: a K of 11 tiles has no third group of 4,
    and the launch says so (a tile index past the tensor is refused, not padded)."""
    qa, qb, sa, sb, _, _ = _inputs(64, 64, 704)
    kernel = ex.make_fp8_gemm_persistent(None, "promote", 4)
    z = api.zeros([64, 64], bf16).partition([64, 64]).persistent(1)
    with pytest.raises(cutile.LaunchError) as info:
        kernel(z, qa, qb, sa, sb, BK=64, G=1)
    assert info.value.code == "CT6200" and "load_tile" in str(info.value)


def test_accumulate_must_be_known() -> None:
    with pytest.raises(ValueError, match="accumulate is one of"):
        ex.make_fp8_gemm_persistent(None, "bf16")


FAST_SRC = """
@cutile.entry
def k(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[{dt}, [-1, -1]], y: Tensor[{dt}, [-1, -1]],
      BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for i in range(num_tiles(x, 1, (BM, BK))):
        acc = mma(x.load_tile((BM, BK), (block_id(0), i)),
                  y.load_tile((BK, BN), (i, block_id(1))), acc, {fast})
    z.store(acc)
"""


def test_fast_acc_on_f8_sets_the_flag_and_sums_exactly_on_the_interpreter(tmp_path: Any
                                                                           ) -> None:
    import ml_dtypes

    from cutile.ir import print_module

    kern = load_kernel(tmp_path, FAST_SRC.format(dt="f8e5m2", fast="fast_acc=True"))
    x = (rng.standard_normal((96, 160)) * 4).astype(ml_dtypes.float8_e5m2)
    y = (rng.standard_normal((160, 80)) * 4).astype(ml_dtypes.float8_e5m2)
    z = api.zeros([96, 80], "f32").partition([32, 16])
    z, *_ = kern(z, api.from_numpy(x), api.from_numpy(y), BK=32).sync()
    ref = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-6,
                               atol=1e-6 * np.abs(ref).max())
    spec = kern.specialization({"BM": 32, "BN": 16, "BK": 32})
    text = print_module(kern.lowered(spec).module)
    assert "fast_acc" in text
    plain = load_kernel(tmp_path, FAST_SRC.format(dt="f8e5m2", fast="False"))
    assert "fast_acc" not in print_module(plain.lowered(spec).module)


@pytest.mark.parametrize(("dt", "fast", "code"), [
    ("f16", "fast_acc=True", "CT3047"),      # f16 sums in full precision already
    ("bf16", "True", "CT3047"),
    ("f8e4m3fn", "fast_acc=block_id(0) > 0", "CT3034"),  # must be known when compiling
    ("f8e4m3fn", "fast_acc=1", "CT3034"),    # a bool, not an int
])
def test_fast_acc_is_refused_where_it_means_nothing(tmp_path: Any, dt: str, fast: str,
                                                   code: str) -> None:
    kern = load_kernel(tmp_path, FAST_SRC.format(dt=dt, fast=fast))
    with pytest.raises(cutile.CutileError) as info:
        kern.lowered(kern.specialization({"BM": 64, "BN": 64, "BK": 32}))
    assert info.value.code == code, info.value
    assert "fast_acc" in str(info.value)


# -- the SASS of the benchmark's candidates (sm_90) --------------------------------------------

W8 = {"num_worker_warps": 8}
# (accumulate, promote, BM, BN, BK, hints) -> (QGMMA shape, FADDs, wait depths of the k-loop)
SASS = [
    (("f32", 1, 128, 128, 128, W8), ("64x128x32", True, {"0x0"})),
    (("fast", 1, 128, 256, 128, W8), ("64x256x32", False, {"0x0", "0x1"})),
    (("fast", 1, 256, 128, 128, W8), ("64x128x32", False, {"0x0", "0x1"})),
    (("fast", 1, 128, 256, 64, W8), ("64x256x32", False, {"0x0", "0x1"})),
    (("fast", 1, 256, 128, 64, W8), ("64x128x32", False, {"0x0", "0x1"})),
    (("fast", 1, 128, 256, 128, {"num_ctas": 2, **W8}), ("64x128x32", False, {"0x0", "0x1"})),
    (("fast", 1, 128, 128, 128, {}), ("64x128x32", False, {"0x0", "0x1"})),
    (("fast", 1, 128, 128, 128, W8), ("64x128x32", False, {"0x0"})),
    (("promote", 2, 128, 128, 128, W8), ("64x128x32", True, {"0x0"})),
    (("promote", 4, 128, 128, 128, W8), ("64x128x32", True, {"0x0"})),
    (("promote", 1, 128, 128, 256, W8), ("64x128x32", True, {"0x0"})),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("config", "want"), SASS)
def test_candidates_use_qgmma_without_spills(config: tuple[Any, ...],
                                             want: tuple[str, bool, set[str]]) -> None:
    """The wait depth is what the candidates differ in: 0x1 lets one k-step's MMAs run while
    the warpgroup issues the next; 0x0 drains the tensor cores first (for the f32 adds, or,
    where tileiras overlaps tiles instead, after each QGMMA)."""
    from cutile.dump import resources, sass

    accumulate, promote, bm, bn, bk, hints = config
    kernel = ex.make_fp8_gemm_persistent(None, accumulate, promote).with_hints(**hints)
    cubin = kernel.compile(target="sm_90", BM=bm, BN=bn, BK=bk, G=8).cubin
    text = sass(cubin)
    if text is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    shape, fadd, waits = want
    found = Counter(re.findall(r"QGMMA\.(\d+x\d+x\d+)\.F32\.E4M3\.E4M3", text))
    assert set(found) == {shape}, found
    assert (" FADD " in text) == fadd, f"{config}: FADD {'missing' if fadd else 'present'}"
    assert set(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", text)) == waits
    assert not re.search(r"\b(STL|LDL)\b", text), f"{config}: spills"
    used = resources(cubin)
    assert used is not None and used.local == 0

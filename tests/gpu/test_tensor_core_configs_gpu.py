"""The benchmarked tensor-core configurations compute the right thing on the GPU: flash
attention in both grid orders (2-CTA clusters with occupancy 2, 4-CTA clusters, 64x64 with
occupancy 4), causal and not, against float64 on a ragged sequence; the persistent fp8 GEMM
with two consumer warpgroups, and with 2-CTA clusters on a grid of SMs / 2 blocks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.gpu


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"gpu_cfg_{name}", EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("bm", "bn", "hints", "queries_on_x"), [
    (128, 128, {"num_ctas": 2, "occupancy": 2}, True),
    (128, 128, {"num_ctas": 2, "occupancy": 2}, False),
    (256, 128, {"num_ctas": 4, "occupancy": 2}, True),
    (64, 64, {"occupancy": 4}, True),
    (128, 64, {"occupancy": 2}, True),
])
@pytest.mark.parametrize("d", [64, 128])
def test_attention_configs(causal: bool, bm: int, bn: int, hints: dict[str, int],
                           queries_on_x: bool, d: int) -> None:
    ex = load("attention")
    kernel = ex.make_attention(causal, queries_on_x).with_hints(**hints)
    err = ex.run(3, 1000, d, causal, (bm, bn), kernel=kernel, queries_on_x=queries_on_x)
    assert err < 3e-2


# the candidates of benchmarks/attention.py --candidates (issue 8's SASS round), on a ragged
# sequence (the masked loop too) and on an even one (the even_keys kernel)
@pytest.mark.parametrize("seq", [1000, 1024])
@pytest.mark.parametrize(("causal", "d", "bm", "bn", "hints", "variant"), [
    (False, 128, 64, 128, {"occupancy": 2}, {}),
    (False, 128, 64, 128, {"occupancy": 2}, {"lazy_rescale": True}),
    (False, 128, 128, 128, {"num_worker_warps": 8, "occupancy": 1}, {}),
    (False, 128, 256, 128, {"num_ctas": 2, "num_worker_warps": 8, "occupancy": 1}, {}),
    (False, 128, 128, 64, {"num_ctas": 2, "occupancy": 2}, {"pipelined": True}),
    (True, 64, 64, 64, {"occupancy": 4}, {"lazy_rescale": True}),
    (True, 64, 128, 128, {"num_worker_warps": 8, "occupancy": 1}, {}),
    (True, 64, 128, 128, {"num_worker_warps": 8, "occupancy": 1}, {"lazy_rescale": True}),
    (True, 64, 256, 128, {"num_ctas": 2, "num_worker_warps": 8, "occupancy": 1}, {}),
])
def test_attention_candidates(seq: int, causal: bool, d: int, bm: int, bn: int,
                              hints: dict[str, int], variant: dict[str, bool]) -> None:
    ex = load("attention")
    kernel = ex.make_attention(causal, even_keys=seq % bn == 0, **variant).with_hints(**hints)
    assert ex.run(3, seq, d, causal, (bm, bn), kernel=kernel) < 3e-2


W8 = {"num_worker_warps": 8}


# The f32 configurations and the accumulation candidates of benchmarks/fp8_gemm.py --focus.
# One bound for all, 2e-2 of the largest element: bf16 rounding is 2^-8 of each value, and
# Hopper's f8 accumulator keeps about 14 bits (DeepSeek-V3's measurement), which over this K
# of 1024 ("fast": all of it in that accumulator) stays well under 1e-2 of the largest sum.
@pytest.mark.parametrize(("bm", "bn", "bk", "hints", "latency", "accumulate", "promote"), [
    (128, 128, 128, W8, None, "f32", 1),
    (128, 256, 128, {"num_ctas": 2, **W8}, None, "f32", 1),
    (128, 256, 128, {"num_ctas": 2, **W8}, 6, "f32", 1),
    (128, 256, 128, W8, None, "fast", 1),
    (256, 128, 128, W8, None, "fast", 1),
    (128, 256, 64, W8, None, "fast", 1),
    (256, 128, 64, W8, None, "fast", 1),
    (128, 256, 128, {"num_ctas": 2, **W8}, None, "fast", 1),
    (128, 128, 128, {}, None, "fast", 1),
    (128, 128, 128, W8, None, "fast", 1),
    (128, 128, 128, W8, None, "promote", 2),
    (128, 128, 128, W8, None, "promote", 4),
    (128, 128, 256, W8, None, "promote", 1),
])
def test_fp8_persistent_configs(bm: int, bn: int, bk: int, hints: dict[str, int],
                                latency: int | None, accumulate: str, promote: int) -> None:
    from cutile import api
    from cutile.core import bf16

    ex = load("fp8_gemm")
    rng = np.random.default_rng(12)
    m, n, k = 1000, 1300, 1024
    a = (rng.standard_normal((m, k)) * rng.uniform(0.1, 10, (m, 1))).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    qa, sa = ex.quantize(a)
    qb, sb = ex.quantize(np.ascontiguousarray(b.T))
    ref = ((qa.to_numpy().astype(np.float64) * sa.to_numpy()[:, None])
           @ (qb.to_numpy().astype(np.float64) * sb.to_numpy()[:, None]).T)
    kernel: Any = ex.make_fp8_gemm_persistent(latency, accumulate, promote).with_hints(**hints)
    blocks = 132 // hints.get("num_ctas", 1)
    z = api.zeros([m, n], bf16).partition([bm, bn]).persistent(blocks)
    z, *_ = kernel(z, qa, qb, sa, sb, BK=bk, G=8).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    assert np.abs(out - ref).max() / np.abs(ref).max() < 2e-2

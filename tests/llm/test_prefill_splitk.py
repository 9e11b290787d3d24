"""The atomic residual GEMMs (hs += x W^T, K split between blocks that add partial tiles
into hs: llm/kernels/prefill_splitk.py): split-K and stream-K against float64 numpy on
random inputs with ragged shapes (M = 37 rows of 16-row tiles, N = 80 of 32-column tiles,
K = 72 of 32-wide k tiles), the plans' launch rule covering every (tile, k-step) once, the
engine's prefill on each atomic variant filling the reference caches, and what tileiras
makes of them at Qwen3-4B's shapes (HGMMA, no spill, vectorized reductions)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from llm.config import preset
from llm.kernels.prefill_splitk import atomic_residual
from llm.model import Engine
from llm.plan import plan_for
from llm.prefill_plan import GemmTiles, best_splits, gemm_kernel, variants

from cutile import api

BF16 = ml_dtypes.bfloat16
M, N, K = 37, 80, 72
BM, BN, BK = 16, 32, 32


@pytest.fixture(scope="module")
def operands() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """x [M, K] and W [N, K] in bf16, hs [M, N] f32 (never zero), and hs + x W^T in f64."""
    rng = np.random.default_rng(41)
    x = (rng.standard_normal((M, K)) * 0.5).astype(BF16)
    w = (rng.standard_normal((N, K)) * 0.5).astype(BF16)
    hs = rng.standard_normal((M, N)).astype(np.float32)
    want = hs.astype(np.float64) + x.astype(np.float64) @ w.astype(np.float64).T
    return x, w, hs, want


def run_launches(kernel: Any, tiles: GemmTiles, ops: tuple[np.ndarray, ...], sms: int
                 ) -> np.ndarray:
    """hs after the plan's launches of `kernel` (one after the other, on one hs)."""
    x, w, hs, _ = ops
    t = api.from_numpy(hs)
    xs, ws = api.from_numpy(x), api.from_numpy(w)
    for launch in tiles.launches(M, N, K, sms):
        extra = () if tiles.atomic == "streamk" else (launch.J0, launch.KPS)
        t, *_ = kernel(t, xs, ws, *extra, BM=BM, BN=BN, BK=BK, grid=launch.grid).sync()
    return np.asarray(t.to_numpy())


@pytest.mark.parametrize("splits", [1, 2, 3, 5])
def test_splitk_adds_every_k_range_into_hs(operands: tuple[np.ndarray, ...],
                                           splits: int) -> None:
    """3 x 3 tiles of 3 k-steps in 1, 2 (2 + 1 k-steps), 3 or 5 splits (5: 3 splits of one
    k-step, the other two blocks find an empty range and add nothing)."""
    tiles = GemmTiles(BM, BN, BK, atomic="splitk", splits=splits)
    (launch,) = tiles.launches(M, N, K, 132)
    got = run_launches(atomic_residual().splitk, tiles, operands, 132)
    np.testing.assert_allclose(got, operands[3], rtol=1e-5, atol=1e-5)
    assert launch.grid == (3, 3, -(-3 // launch.KPS))


@pytest.mark.parametrize(("sms", "splits"), [(4, 2), (4, 0), (2, 3)])
def test_hybrid_splits_only_the_columns_past_the_whole_waves(
        operands: tuple[np.ndarray, ...], sms: int, splits: int) -> None:
    """9 tiles on 4 slots: 2 whole waves are 8 tiles, 2 column tiles of 3 unsplit; the
    last column tile (J0 = 2) split in `splits` (0: by the rule) in a second launch."""
    tiles = GemmTiles(BM, BN, BK, atomic="hybrid", splits=splits)
    launches = tiles.launches(M, N, K, sms)
    assert [(la.grid[1], la.J0) for la in launches] == [(2, 0), (1, 2)]
    got = run_launches(atomic_residual().splitk, tiles, operands, sms)
    np.testing.assert_allclose(got, operands[3], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("blocks", [1, 2, 4, 5, 7, 9, 20, 27])
def test_streamk_shares_tiles_and_k_steps_between_blocks(operands: tuple[np.ndarray, ...],
                                                         blocks: int) -> None:
    """9 tiles x 3 k-steps over G blocks: whole tiles only (G = 1, 9), whole waves and a
    shared remainder (2, 4, 5, 7), every tile shared (20: ranges across tile borders; 27:
    one k-step per block)."""
    tiles = GemmTiles(BM, BN, BK, atomic="streamk")
    assert tiles.launches(M, N, K, blocks)[0].grid == (blocks,)
    got = run_launches(atomic_residual().streamk, tiles, operands, blocks)
    np.testing.assert_allclose(got, operands[3], rtol=1e-5, atol=1e-5)


def covered(tiles: GemmTiles, rows: int, cols: int, k: int, sms: int) -> np.ndarray:
    """How often the plan's split-K launches visit each (row tile, column tile, k-step)."""
    tm, tn, kt = -(-rows // tiles.BM), -(-cols // tiles.BN), -(-k // tiles.BK)
    seen = np.zeros((tm, tn, kt), int)
    for la in tiles.launches(rows, cols, k, sms):
        gm, gj, gs = la.grid
        assert gm == tm and la.J0 + gj <= tn
        for s in range(gs):
            seen[:, la.J0:la.J0 + gj, s * la.KPS:min(kt, (s + 1) * la.KPS)] += 1
    return seen


@pytest.mark.parametrize("kind", ["splitk", "hybrid"])
@pytest.mark.parametrize(("rows", "cols", "k", "sms"), [
    (2048, 2560, 4096, 132), (2047, 2560, 9728, 132), (300, 2560, 9728, 132),
    (37, 80, 72, 4), (5000, 1024, 3072, 108), (128, 128, 64, 132)])
def test_launches_visit_every_tile_and_k_step_once(kind: str, rows: int, cols: int, k: int,
                                                   sms: int) -> None:
    tiles = GemmTiles(256, 128, 64, atomic=kind) if rows > 100 else \
        GemmTiles(BM, BN, BK, atomic=kind)
    assert (covered(tiles, rows, cols, k, sms) == 1).all()


def test_split_rule_at_the_4b_shapes() -> None:
    """160 tiles of 256x128 on 132 SMs: S = 4 (5 waves of a quarter of K) for o_proj and
    down; a hybrid launch keeps 16 column tiles (128 tiles) whole and splits the other 4
    in 4; tiles that fill the waves are not split."""
    assert best_splits(160, 64, 132) == 4 and best_splits(160, 152, 132) == 4
    assert best_splits(264, 64, 132) == 1
    pp = variants(preset("qwen3-4b"), 132)["hybrid"]
    launches = pp.down.launches(2048, 2560, 9728, 132)
    assert [(la.grid, la.J0, la.KPS) for la in launches] == [((8, 16, 1), 0, 152),
                                                             ((8, 4, 4), 16, 38)]
    assert pp.o.describe() == "hybrid(auto) 256x128x64 num_worker_warps=8"
    assert variants(preset("qwen3-4b"), 132)["streamk"].o.launches(2048, 2560, 4096, 132)[
        0].grid == (132,)


# -- the engine -----------------------------------------------------------------------------

MAX_SEQ = 64


@pytest.mark.parametrize(("variant", "sms", "splits"), [
    ("splitk", 132, 0), ("splitk2", 132, 2), ("splitk", 132, 3), ("hybrid", 4, 2),
    ("streamk", 4, 0), ("streamk", 20, 0)])
def test_atomic_prefill_variants_fill_the_reference_caches(
        tiny_weights: Any, prompt: list[int], want: list[np.ndarray], variant: str,
        sms: int, splits: int) -> None:
    """37 prompt tokens through the atomic residual GEMMs (the residual stream in one
    buffer), the tiny model's 3 x 3 output tiles split over K, in two launches (hybrid on
    4 SMs) or streamed (4 blocks: 2 whole waves and a shared tile; 20: all shared), then
    a decode step: the same caches and greedy token as the stored-residual plan."""
    pp = variants(tiny_weights.cfg, sms)[variant]
    pp = pp.with_(o=replace(pp.o, splits=splits), down=replace(pp.down, splits=splits))
    eng = Engine(tiny_weights, MAX_SEQ, plan_for(tiny_weights.cfg).with_(prefill=pp))
    eng.load_prompt(prompt)
    n = len(prompt) - 1
    for c, w in zip(eng.k_cache + eng.v_cache, want, strict=True):
        g = np.asarray(c.numpy()).astype(np.float32)
        np.testing.assert_allclose(g[:, :n], w[:, :n], rtol=2e-2, atol=2e-2)
        assert not g[:, n:].any(), "rows past the prompt were written"
    base = Engine(tiny_weights, MAX_SEQ, plan_for(tiny_weights.cfg, prefill="wide"))
    base.load_prompt(prompt)
    eng.decode_step()
    base.decode_step()
    assert eng.token_ids()[-1] == base.token_ids()[-1]
    np.testing.assert_allclose(eng.read_logits(), base.read_logits(), rtol=2e-2, atol=2e-2)


# -- what tileiras makes of them at the 4B shapes -------------------------------------------

def opcodes(text: str) -> list[str]:
    return re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.x]*)", text)


@pytest.mark.tileiras
@pytest.mark.parametrize("variant", ["splitk", "hybrid", "streamk"])
def test_4b_atomic_residuals_use_hgmma_and_vector_reductions(variant: str) -> None:
    from cutile.dump import resources, sass

    pp = variants(preset("qwen3-4b"), 132)[variant]
    for t in (pp.o, pp.down):
        compiled = gemm_kernel("residual", t).compile(target="sm_90", BM=t.BM, BN=t.BN,
                                                      BK=t.BK)
        text = sass(compiled.cubin)
        if text is None:
            pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
        ops = opcodes(text)
        assert any(o.startswith("HGMMA.64x128x16.F32.BF16") for o in ops)
        assert resources(compiled.cubin).threads == 384    # a producer and two consumers
        # every atomic is a 16-byte vector reduction, no returning atomics
        reds = [o for o in ops if o.startswith(("RED", "ATOM"))]
        assert reds and all(o == "REDG.E.ADD.F32x4.RN.STRONG.GPU" for o in reds), reds
        assert "LDL" not in " ".join(ops), "spills"        # nothing is ever reloaded
        calls = ops.count("CALL.ABS.NOINC")
        if t.atomic == "streamk":
            # device checks: their failure paths call out (arguments stored to the
            # stack), which makes tileiras wait for every HGMMA
            assert calls > 0
        else:
            assert calls == 0 and not any(o.startswith("STL") for o in ops)


def test_the_benchmark_counts_each_hybrid_launch_its_columns(tiny_weights: Any,
                                                             prompt: list[int]) -> None:
    """benchmarks/llm_prefill.py's FLOPs of a residual GEMM launch: the hybrid's two
    launches (whole column tiles, then the split rest) add up to the whole GEMM's."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    pytest.importorskip("cuda.bindings")
    from llm_prefill import gemm_flops

    pp = variants(tiny_weights.cfg, 4)["hybrid"]
    eng = Engine(tiny_weights, MAX_SEQ, plan_for(tiny_weights.cfg).with_(prefill=pp))
    seen: list[tuple[Any, int]] = []
    eng.observer = lambda kernel, op: seen.append((op.binding, gemm_flops(op.binding))) \
        if kernel.name == "gemm_residual_splitk" else None
    eng.load_prompt(prompt)
    c, t = tiny_weights.cfg, len(prompt) - 1
    whole = {c.q_size: 2 * t * c.hidden_size * c.q_size,
             c.intermediate_size: 2 * t * c.hidden_size * c.intermediate_size}
    assert len(seen) == 4 * (c.num_layers - 1)           # two per residual GEMM
    for (b1, f1), (b2, f2) in zip(seen[::2], seen[1::2], strict=True):
        assert b1.grid[1] == 2 and b2.grid[1] == 1
        assert f1 + f2 == whole[b1.values[1].shape[1]]

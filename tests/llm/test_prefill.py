"""The prefill: its GEMMs (tiled and persistent, every fused epilogue) and causal attention
against numpy on random inputs with ragged shapes (rows, columns and the reduction not tile
multiples; persistent launches with fewer blocks than tiles), the engine's prefill variants
filling the same KV caches as the reference (chained or waited op by op, the last layer
whole or keys and values only), and the configurations the 4B plan picks assembled for
sm_90 without spills, on HGMMA."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from llm.config import preset
from llm.kernels import prefill
from llm.kernels.attention import attn_prefill
from llm.kernels.prefill_gemm import prefill_gemms
from llm.model import Engine, check_config
from llm.plan import plan_for
from llm.prefill_plan import GemmTiles, gemm_kernel, prefill_kernels, variants
from llm.reference import flash_attention
from llm_numerics import BF16, bf16_round, f32_of

from cutile import api
from cutile.core import bf16, f32
from cutile.runtime import streams

SCHEDULES = [pytest.param(False, None, id="tiled"), pytest.param(True, 3, id="persistent")]




@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(23)


def output(shape: list[int], dtype: Any, tile: list[int], blocks: int | None) -> Any:
    """A NaN-filled output (an element left unwritten shows), partitioned for a launch."""
    part = api.full(shape, np.nan, dtype).partition(tile)
    return part if blocks is None else part.persistent(blocks)


@pytest.mark.parametrize(("persistent", "blocks"), SCHEDULES)
def test_gemm_residual_adds_into_the_other_stream(rng: np.random.Generator, persistent: bool,
                                                  blocks: int | None) -> None:
    """out = hs + x W^T, M = 37 rows of 16-row tiles, N = 80 (ragged 32-column tiles),
    K = 72 (ragged 32-wide k tiles: the padding adds nothing)."""
    m, n, k = 37, 80, 72
    x = (rng.standard_normal((m, k)) * 0.5).astype(BF16)
    w = (rng.standard_normal((n, k)) * 0.5).astype(BF16)
    hs = rng.standard_normal((m, n)).astype(np.float32)
    kern = prefill_gemms(persistent).residual
    got, *_ = kern(output([m, n], f32, [16, 32], blocks), api.from_numpy(hs),
                   api.from_numpy(x), api.from_numpy(w), BK=32).sync()
    want = hs.astype(np.float64) + f32_of(x).astype(np.float64) @ f32_of(w).T
    np.testing.assert_allclose(got.unpartition().to_numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("persistent", "blocks"), SCHEDULES)
def test_gemm_swiglu_scales_rows_and_gates(rng: np.random.Generator, persistent: bool,
                                           blocks: int | None) -> None:
    """act = silu(inv g) * (inv u) in bf16; the up rows are UP column tiles down the fused
    [2 I, K] weight; M = 21 and K = 40 ragged."""
    m, i, k, bn = 21, 64, 40, 32
    x = (rng.standard_normal((m, k)) * 0.5).astype(BF16)
    w = (rng.standard_normal((2 * i, k)) * 0.5).astype(BF16)
    inv = rng.uniform(0.5, 2.0, m).astype(np.float32)
    kern = prefill_gemms(persistent).swiglu
    got, *_ = kern(output([m, i], bf16, [16, bn], blocks), api.from_numpy(x),
                   api.from_numpy(w), api.from_numpy(inv), BK=32, UP=i // bn).sync()
    xw = f32_of(x).astype(np.float64) @ f32_of(w).T.astype(np.float64) * inv[:, None]
    g, u = xw[:, :i], xw[:, i:]
    want = g / (1 + np.exp(-g)) * u
    np.testing.assert_allclose(f32_of(got.unpartition().to_numpy()), want, rtol=1e-2,
                               atol=1e-2)


def rope_ref(x: np.ndarray, w: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """RMSNorm of each head row, then rotate-half RoPE with per-row cos/sin."""
    d = x.shape[-1]
    x = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * f32_of(w)
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


@pytest.mark.parametrize(("persistent", "blocks"), SCHEDULES)
def test_gemm_qkv_norms_and_rotates_heads(rng: np.random.Generator, persistent: bool,
                                          blocks: int | None) -> None:
    """Fused QKV with one head per 32-wide tile: rows scaled by inv, query and key heads
    RMSNormed and rotated at their positions, values as they are; M = 19, K = 48 ragged."""
    m, k, d, nh, nkv = 19, 48, 32, 4, 2
    n = (nh + 2 * nkv) * d
    x = (rng.standard_normal((m, k)) * 0.5).astype(BF16)
    w = (rng.standard_normal((n, k)) * 0.5).astype(BF16)
    inv = rng.uniform(0.5, 2.0, m).astype(np.float32)
    qnw = rng.uniform(0.5, 1.5, d).astype(BF16)
    knw = rng.uniform(0.5, 1.5, d).astype(BF16)
    ang = np.arange(m + 5, dtype=np.float32)[:, None] * rng.uniform(0.01, 1, d // 2)[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    kern = prefill_gemms(persistent).qkv
    got, *_ = kern(output([m, n], bf16, [16, d], blocks), api.from_numpy(x), api.from_numpy(w),
                   api.from_numpy(inv), api.from_numpy(qnw), api.from_numpy(knw),
                   api.from_numpy(cos), api.from_numpy(sin), 1e-6, BK=32, NH=nh,
                   NKV=nkv).sync()
    y = (f32_of(x).astype(np.float64) @ f32_of(w).T * inv[:, None]).reshape(m, nh + 2 * nkv, d)
    want = np.concatenate([rope_ref(y[:, :nh], qnw, cos[:m], sin[:m]),
                           rope_ref(y[:, nh:nh + nkv], knw, cos[:m], sin[:m]),
                           y[:, nh + nkv:]], axis=1).reshape(m, n)
    np.testing.assert_allclose(f32_of(got.unpartition().to_numpy()), want, rtol=1e-2,
                               atol=2e-2)


@pytest.mark.parametrize(("rows", "bk"), [(4, 32), (8, 64)])
def test_looped_norm_prep_matches_the_one_pass_norm(rng: np.random.Generator, rows: int,
                                                    bk: int) -> None:
    """37 rows (ragged against the row tile) of 160 columns (ragged against the column
    tile and its 256-wide block tile): rsqrt(mean(h^2) + eps) and bf16(h * w) per row."""
    t, h, hb, eps = 37, 160, 256, 1e-6
    hs = rng.standard_normal((t, h)).astype(np.float32) * 3
    nw = rng.uniform(0.5, 1.5, h).astype(BF16)
    xw = api.full([t, h], np.nan, bf16).partition([rows, hb])
    inv = api.full([t], np.nan, f32).partition([rows])
    xw, inv, *_ = prefill.norm_prep_looped(xw, inv, api.from_numpy(hs), api.from_numpy(nw), eps,
                                           BK=bk).sync()
    h64 = hs.astype(np.float64)
    want_inv = 1 / np.sqrt((h64 * h64).mean(axis=1) + eps)
    np.testing.assert_allclose(f32_of(inv.unpartition().numpy()), want_inv, rtol=1e-5)
    np.testing.assert_array_equal(f32_of(xw.unpartition().numpy()),
                                  bf16_round(hs * f32_of(nw)))


@pytest.mark.parametrize("hinted", [False, True])
@pytest.mark.parametrize("t", [37, 48])
def test_causal_attention_matches_the_flash_reference(rng: np.random.Generator, t: int,
                                                      hinted: bool) -> None:
    """Query head j against key/value head j // G read from the fused QKV buffer; T = 37
    leaves a ragged last tile (masked keys past the prompt), T = 48 none."""
    d, nh, nkv, bm = 32, 4, 2, 16
    qkv = (rng.standard_normal((t, (nh + 2 * nkv) * d))).astype(BF16)
    kern = attn_prefill.with_hints(num_ctas=2, occupancy=2) if hinted else attn_prefill
    got, *_ = kern(output([t, nh * d], bf16, [bm, d], None), api.from_numpy(qkv),
                   1.0 / np.sqrt(d), G=nh // nkv, NH=nh, NKV=nkv).sync()
    got = f32_of(got.unpartition().to_numpy()).reshape(t, nh, d)
    q = f32_of(qkv).reshape(t, nh + 2 * nkv, d)
    for h in range(nh):
        kv = h // (nh // nkv)
        want = flash_attention(q[:, h], q[:, nh + kv], q[:, nh + nkv + kv], bm)
        np.testing.assert_allclose(got[:, h], want, rtol=2e-2, atol=2e-2)
        exact = q[:, h] @ q[:, nh + kv].T / np.sqrt(d)
        exact = np.where(np.tril(np.ones((t, t), bool)), exact, -np.inf)
        p = np.exp(exact - exact.max(axis=1, keepdims=True))
        np.testing.assert_allclose(got[:, h], (p / p.sum(1, keepdims=True)) @ q[:, nh + nkv + kv],
                                   rtol=5e-2, atol=5e-2)


# -- the engine -----------------------------------------------------------------------------

MAX_SEQ = 64


def caches(eng: Engine) -> list[np.ndarray]:
    return [f32_of(c.numpy()) for c in eng.k_cache + eng.v_cache]


def prefill_caches(weights: Any, prompt: list[int], prefill: Any
                   ) -> tuple[Engine, list[np.ndarray]]:
    eng = Engine(weights, MAX_SEQ, plan_for(weights.cfg).with_(prefill=prefill))
    eng.load_prompt(prompt)
    return eng, caches(eng)


@pytest.mark.parametrize("variant", ["old", "new", "persistent", "wide", "wide_n4x32",
                                     "wide_n2x0o4"])
def test_prefill_variants_fill_the_reference_caches(tiny_weights: Any, prompt: list[int],
                                                    want: list[np.ndarray],
                                                    variant: str) -> None:
    """37 prompt tokens (ragged against every 16-row tile) through each variant; the
    persistent GEMMs with two blocks per launch, so each block walks several tiles."""
    pp = variants(tiny_weights.cfg, 132)[variant]
    if variant == "persistent":
        pp = pp.with_(sms=2)
    _, got = prefill_caches(tiny_weights, prompt, pp)
    for g, w in zip(got, want, strict=True):
        n = len(prompt) - 1
        np.testing.assert_allclose(g[:, :n], w[:, :n], rtol=2e-2, atol=2e-2)
        assert not g[:, n:].any(), "rows past the prompt were written"


def test_chained_prefill_is_the_op_by_op_prefill(tiny_weights: Any, prompt: list[int]) -> None:
    """The same kernels chained with one wait, or waited for one by one: the same bits;
    the op by op path waits on the host after every op, the chain (after set_prompt's
    wait) at its end only."""
    pp = variants(tiny_weights.cfg, 132)["new"]
    runs = []
    for chained in (False, True):
        before = streams.stats()["host_waits"]
        eng, got = prefill_caches(tiny_weights, prompt, pp.with_(chained=chained))
        runs.append((got, eng.ops, streams.stats()["host_waits"] - before))
    (one_by_one, ops, waits), (chain, chain_ops, chain_waits) = runs
    assert all((a == b).all() for a, b in zip(chain, one_by_one, strict=True))
    assert ops == chain_ops == 2 + 8 * tiny_weights.cfg.num_layers - 5
    assert waits == ops and chain_waits <= 3


def test_keys_and_values_only_in_the_last_layer(tiny_weights: Any, prompt: list[int]) -> None:
    """The last layer's attention and MLP feed nothing the caches hold: skipping them
    leaves the same caches, and the decode step after them the same logits."""
    pp = variants(tiny_weights.cfg, 132)["new"]
    outs = []
    for kv_only in (False, True):
        eng, got = prefill_caches(tiny_weights, prompt, pp.with_(kv_only_last=kv_only))
        eng.decode_step()
        outs.append((got, eng.read_logits(), eng.ops))
    (full, lf, of), (kv, lk, ok) = outs
    assert all((a == b).all() for a, b in zip(full, kv, strict=True))
    assert (lf == lk).all() and of - ok == 5


def test_observer_sees_every_chained_launch(tiny_weights: Any, prompt: list[int]) -> None:
    eng = Engine(tiny_weights, MAX_SEQ)
    seen: list[str] = []
    eng.observer = lambda kernel, op: seen.append(kernel.name)
    eng.load_prompt(prompt)
    assert len(seen) == eng.ops
    assert seen[:3] == ["set_prompt", "embed_rows", "norm_prep_looped"]  # the default plan's
    assert seen.count("cache_fill") == tiny_weights.cfg.num_layers


def test_prefill_plan_checks(tiny: Any) -> None:
    plan = plan_for(tiny)
    check_config(tiny, plan)
    with pytest.raises(ValueError, match="one head wide"):
        check_config(tiny, plan.with_(prefill=plan.prefill.with_(
            qkv=replace(plan.prefill.qkv, BN=16))))
    with pytest.raises(ValueError, match="SwiGLU"):
        check_config(tiny, plan.with_(prefill=plan.prefill.with_(
            gate_up=replace(plan.prefill.gate_up, BN=64))))
    with pytest.raises(KeyError, match="no prefill variant"):
        plan_for(tiny, prefill="fastest")
    t = GemmTiles(128, 128, 64, persistent=True, occupancy=2, ctas=2)
    assert t.blocks(2048, 2560, 132) == 132 and t.blocks(100, 100, 132) == 1
    assert GemmTiles(128, 128, 64).blocks(2048, 2560, 132) is None


# -- what tileiras makes of the 4B plan -----------------------------------------------------

def sass_facts(kernel: Any, **consts: int) -> tuple[str, Any]:
    from cutile.dump import resources, sass

    compiled = kernel.compile(target="sm_90", **consts)
    text = sass(compiled.cubin)
    if text is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    return text, resources(compiled.cubin)


FOUR_B = preset("qwen3-4b")


def four_b_gemms(variant: str) -> list[tuple[str, GemmTiles, dict[str, int]]]:
    c, pp = FOUR_B, variants(FOUR_B, 132)[variant]
    return [("qkv", pp.qkv, {"BM": pp.qkv.BM, "D": c.head_dim, "BK": pp.qkv.BK,
                             "NH": c.num_heads, "NKV": c.num_kv_heads}),
            ("residual", pp.o, {"BM": pp.o.BM, "BN": pp.o.BN, "BK": pp.o.BK}),
            ("residual", pp.down, {"BM": pp.down.BM, "BN": pp.down.BN, "BK": pp.down.BK}),
            ("swiglu", pp.gate_up, {"BM": pp.gate_up.BM, "BN": pp.gate_up.BN,
                                    "BK": pp.gate_up.BK,
                                    "UP": c.intermediate_size // pp.gate_up.BN})]


@pytest.mark.tileiras
@pytest.mark.parametrize("variant", ["new", "persistent", "wide"])
def test_4b_prefill_gemms_use_hgmma_and_do_not_spill(variant: str) -> None:
    for which, tiles, consts in four_b_gemms(variant):
        text, res = sass_facts(gemm_kernel(which, tiles), **consts)
        name = f"{which} {tiles.describe()}"
        assert "HGMMA" in text and "UTMALDG" in text, name
        assert not re.search(r"\b(LDL|STL)\b", text), f"{name} spills"
        if tiles.warps == 8:
            assert res.threads == 384, name          # a producer and two consumer WGs


@pytest.mark.tileiras
def test_4b_prefill_attention_uses_hgmma_and_does_not_spill() -> None:
    c, pp = FOUR_B, variants(FOUR_B, 132)["new"]
    text, res = sass_facts(prefill_kernels(pp).attn, BM=pp.attn_bm, D=c.head_dim, G=c.group,
                           NH=c.num_heads, NKV=c.num_kv_heads)
    assert "HGMMA" in text and "UTMALDG" in text
    assert not re.search(r"\b(LDL|STL)\b", text)
    assert res.blocks_per_sm() >= 2                  # the occupancy 2 the plan asks for

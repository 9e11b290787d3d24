"""The decode GEMVs with their first 1, 2 or 4 weight steps loaded ahead of everything else
(`gemv_kernels(..., ahead)`, `Plan.early_steps`): the same GEMV for every split size,
including splits (and whole rows) of fewer column tiles than the steps ahead, against numpy
in float64 on random inputs; the loads ahead of the PDL wait are exactly those steps, before
any load of the activations; a count out of range is refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from llm.config import preset
from llm.kernels.gemv import AHEAD_MAX, gemv_kernels
from llm.kernels.gemv_ss import gemv_ss_kernels
from llm.kernels.pdl import with_pdl
from llm.plan import plan_for, pow2_at_least
from llm_numerics import BF16, f32_of, swiglu_want

from cutile import api
from cutile.core import bf16, f32, i32

AHEAD = (1, 2, 4)
N, BO, BK, TILES = 100, 32, 32, 6          # 4 row tiles (the last ragged), 6 column tiles
K = BK * TILES


def inputs(seed: int, n: int = N, k: int = K) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w": (rng.standard_normal((n, k)) * 0.1).astype(BF16),
            "h": rng.standard_normal(k).astype(np.float32),
            "nw": rng.uniform(0.5, 1.5, k).astype(BF16),
            "x": rng.standard_normal(k).astype(BF16),
            "y0": rng.standard_normal(n).astype(np.float32)}


def numerator(h: np.ndarray, nw: np.ndarray) -> np.ndarray:
    """bf16(h * w_norm) as float64, what the kernels multiply by."""
    return f32_of(f32_of(h * f32_of(nw)).astype(BF16)).astype(np.float64)


def w64(w: np.ndarray) -> np.ndarray:
    return f32_of(w).astype(np.float64)


def assert_split_sums(got: np.ndarray, w: np.ndarray, x: np.ndarray, kps: int) -> None:
    """Row s of `got` holds the sums of split s's columns (kps column tiles each)."""
    for s in range(got.shape[0]):
        cols = slice(s * kps * BK, (s + 1) * kps * BK)
        np.testing.assert_allclose(got[s], w64(w)[:, cols] @ x[cols], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ahead", AHEAD)
@pytest.mark.parametrize("kps", [1, 3, 6])       # fewer, between and more tiles than ahead
@pytest.mark.parametrize("loop", [False, True])
def test_split_gemv_with_the_norm_numerator(ahead: int, kps: int, loop: bool) -> None:
    d = inputs(3 + kps)
    splits = TILES // kps
    g = gemv_kernels(None, None, ahead)
    part = api.full([splits, N], np.nan, f32).partition([1, BO])
    args = (part, api.from_numpy(d["w"]), api.from_numpy(d["h"]), api.from_numpy(d["nw"]))
    op = (g.norm_partial_loop(*args, kps, BK=BK) if loop
          else g.norm_partial(*args, BK=BK, KPS=kps))
    part, *_ = op.sync()
    assert_split_sums(part.unpartition().to_numpy(), d["w"], numerator(d["h"], d["nw"]), kps)


@pytest.mark.parametrize("ahead", AHEAD)
@pytest.mark.parametrize("kps", [1, 3, 6])
@pytest.mark.parametrize("loop", [False, True])
def test_split_gemv_with_the_sums_of_squares(ahead: int, kps: int, loop: bool) -> None:
    d = inputs(13 + kps)
    splits, row_tiles = TILES // kps, -(-N // BO)
    g = gemv_ss_kernels(None, None, ahead)
    part = api.full([splits, N], np.nan, f32).partition([1, BO])
    ss = api.full([splits, row_tiles], np.nan, f32).partition([1, 1])
    args = (part, ss, api.from_numpy(d["w"]), api.from_numpy(d["h"]),
            api.from_numpy(d["nw"]))
    op = (g.norm_partial_ss_loop(*args, kps, BK=BK) if loop
          else g.norm_partial_ss(*args, BK=BK, KPS=kps))
    part, ss, *_ = op.sync()
    assert_split_sums(part.unpartition().to_numpy(), d["w"], numerator(d["h"], d["nw"]), kps)
    got_ss, h = ss.unpartition().to_numpy(), d["h"].astype(np.float64)
    for s in range(splits):
        cols = slice(s * kps * BK, (s + 1) * kps * BK)
        np.testing.assert_allclose(got_ss[s], np.full(row_tiles, h[cols] @ h[cols]),
                                   rtol=1e-5)


@pytest.mark.parametrize("ahead", AHEAD)
@pytest.mark.parametrize("kps", [1, 3, 6])
@pytest.mark.parametrize("loop", [False, True])
def test_gemv_adds_into_the_residual(ahead: int, kps: int, loop: bool) -> None:
    d = inputs(23 + kps)
    g = gemv_kernels(2, None, ahead)
    args = (api.from_numpy(d["y0"]), api.from_numpy(d["w"]), api.from_numpy(d["x"]))
    grid = (-(-N // BO), TILES // kps)
    op = (g.add_loop(*args, kps, BO=BO, BK=BK, grid=grid) if loop
          else g.add(*args, BO=BO, BK=BK, KPS=kps, grid=grid))
    y, *_ = op.sync()
    want = d["y0"] + w64(d["w"]) @ f32_of(d["x"]).astype(np.float64)
    np.testing.assert_allclose(y.to_numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ahead", AHEAD)
@pytest.mark.parametrize("k", [32, 80, 200])     # 1, 3 (the last padded) and 7 column tiles
def test_lm_head_over_whole_rows(ahead: int, k: int) -> None:
    v = 150
    d = inputs(33 + k, v, k)
    nb = -(-v // BO)
    outs = (api.full([v], np.nan, f32).partition([BO]), api.zeros([nb], f32).partition([1]),
            api.zeros([nb], i32).partition([1]))
    logits, bmax, barg, *_ = gemv_kernels(None, None, ahead).lm_head_argmax(
        *outs, api.from_numpy(d["w"]), api.from_numpy(d["h"]), api.from_numpy(d["nw"]), 1e-6,
        BO=BO, BK=BK, HB=256).sync()
    h = d["h"].astype(np.float64)
    want = (w64(d["w"]) @ numerator(d["h"], d["nw"])) / np.sqrt((h * h).mean() + 1e-6)
    np.testing.assert_allclose(logits.unpartition().to_numpy(), want, rtol=1e-5, atol=1e-5)
    maxima, where = bmax.unpartition().to_numpy(), barg.unpartition().to_numpy()
    for b in range(nb):                            # each block's maximum and where it is
        rows = want[b * BO:(b + 1) * BO]
        assert where[b] == b * BO + int(np.argmax(rows))
        np.testing.assert_allclose(maxima[b], rows.max(), rtol=1e-5)


@pytest.mark.parametrize("ahead", AHEAD)
@pytest.mark.parametrize("k", [32, 80, 200])
def test_fused_gate_up_swiglu(ahead: int, k: int) -> None:
    i, bo = 48, 16
    d = inputs(43 + k, 2 * i, k)
    w = (d["w"].astype(np.float32) * 2).astype(BF16)
    act = api.full([i], np.nan, bf16).partition([bo])
    act, *_ = gemv_kernels(2, None, ahead).swiglu(
        act, api.from_numpy(w), api.from_numpy(d["h"]), api.from_numpy(d["nw"]), 1e-6, BK=BK,
        HB=256, UP=i // bo).sync()
    x, h = numerator(d["h"], d["nw"]), d["h"].astype(np.float64)
    want = swiglu_want(w64(w), x, h, i)
    got = f32_of(act.unpartition().to_numpy())
    np.testing.assert_allclose(got, want, rtol=8e-3, atol=1e-3 * np.abs(want).max())
    assert np.abs(want).max() > 0.1                  # not a test of zeros


def ops_before_the_wait(kernel: Any, consts: dict[str, int]) -> list[Any]:
    twin = with_pdl(kernel)
    low = twin.lowered(twin.specialization(consts))
    assert low.pdl and low.pdl_early == ("w",)
    ops = low.module.functions[0].body.ops
    return ops[:next(i for i, op in enumerate(ops) if op.name == "gdc_wait_tko")]


@pytest.mark.parametrize("ahead", AHEAD)
def test_the_steps_ahead_are_the_only_loads_before_the_wait(ahead: int) -> None:
    """Every kernel's first `ahead` weight loads (min(ahead, KPS) where KPS is a constant;
    gate and up each for SwiGLU) and nothing else come before the wait; the checker proves
    each kernel without `unsafe`."""
    g, s = gemv_kernels(None, None, ahead), gemv_ss_kernels(None, None, ahead)
    split = dict(BO=BO, BK=BK)
    rows = dict(BO=BO, BK=BK, HB=256)
    cases = [(g.norm_partial, {**split, "KPS": 3}, min(ahead, 3)),
             (g.norm_partial, {**split, "KPS": 1}, 1),
             (g.add, {**split, "KPS": 6}, ahead),
             (s.norm_partial_ss, {**split, "KPS": 2}, min(ahead, 2)),
             (g.norm_partial_loop, split, ahead), (g.add_loop, split, ahead),
             (s.norm_partial_ss_loop, split, ahead), (g.lm_head_argmax, rows, ahead),
             (g.swiglu, {**rows, "UP": 3}, 2 * ahead)]
    for kernel, consts, want in cases:
        assert not kernel.unsafe
        kernel.check()
        ahead_ops = ops_before_the_wait(kernel, consts)
        loads = [op for op in ahead_ops if op.name.startswith(("load", "atomic", "store"))]
        assert [op.name for op in loads] == ["load_view_tko"] * want, kernel.name
        assert not any(op.attrs.get("has_token") for op in loads)
        assert not any(op.regions for op in ahead_ops), kernel.name   # no control flow


@pytest.mark.parametrize("bad", [0, AHEAD_MAX + 1, -1])
def test_steps_ahead_out_of_range_are_refused(bad: int, tiny: Any) -> None:
    from llm.model import check_config
    from llm.plan import plan_for

    with pytest.raises(ValueError, match="ahead of the PDL wait"):
        gemv_kernels(None, None, bad)
    with pytest.raises(ValueError, match="ahead of the PDL wait"):
        gemv_ss_kernels(None, None, bad)
    with pytest.raises(ValueError, match="ahead of the PDL wait"):
        check_config(tiny, plan_for(tiny).with_(early_steps=bad))
    with pytest.raises(ValueError, match="ahead of the PDL wait"):
        check_config(tiny, plan_for(tiny).with_(early_steps=2, early_rows=bad))


@pytest.mark.tileiras
@pytest.mark.parametrize(("steps", "rows"), [(2, 2), (4, 2)])
def test_sass_keeps_the_steps_ahead_of_the_wait_without_spills(steps: int, rows: int) -> None:
    """Qwen3-4B's output projection, down projection, fused gate/up and LM head at the
    plan's tiles, `early_steps` ahead in the split GEMVs and `early_rows` in the whole-row
    ones (the named plans early2 and early4r2 of `benchmarks/llm_decode.py`): tileiras keeps
    a TMA load per step ahead (two for gate and up) above the wait (ACQBULK) and nothing
    spills (`benchmarks/llm_early_sass.py` prints the whole table)."""
    import re

    from cutile.dump import sass

    cfg = preset("qwen3-4b")
    plan = plan_for(cfg)
    hb = pow2_at_least(cfg.hidden_size)
    o, down, gu = plan.o, plan.down, plan.gate_up
    assert not o.loop and down.loop and plan.mlp_fused
    cases = [
        (gemv_kernels(o.occupancy, o.latency, steps).add, dict(BO=o.BO, BK=o.BK, KPS=o.KPS),
         steps),
        (gemv_kernels(down.occupancy, down.latency, steps).add_loop,
         dict(BO=down.BO, BK=down.BK), steps),
        (gemv_kernels(gu.occupancy, gu.latency, rows).swiglu,
         dict(BO=gu.BO, BK=gu.BK, HB=hb, UP=cfg.intermediate_size // gu.BO), 2 * rows),
        (gemv_kernels(plan.lm_occupancy, None, rows).lm_head_argmax,
         dict(BO=plan.lm_bo, BK=plan.lm_bk, HB=hb), rows)]
    for kernel, consts, tiles in cases:
        text = sass(with_pdl(kernel).compile(target="sm_90", **consts).cubin)
        if text is None:
            pytest.skip("cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
        lines = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
        wait = next(i for i, ln in enumerate(lines) if re.search(r"\bACQBULK\b", ln))
        ahead = sum(1 for ln in lines[:wait] if re.search(r"\bUTMALDG\b", ln))
        assert ahead >= tiles, f"{kernel.name}: {ahead} TMA loads ahead, {tiles} tiles"
        assert not re.search(r"\b(LDL|STL)\b", text), f"{kernel.name} spills"

"""The engine's kernels one by one against numpy on random inputs, on shapes that are not
tile multiples: the split GEMVs, the QKV finish (partial sums, norms, RoPE, cache rows),
decode attention with empty shares, the greedy choice on a tie across blocks, and sampling
against the host's copy of the same algorithm."""

from __future__ import annotations

import math

import numpy as np
import pytest
from llm.kernels import attention, qkv, sampling
from llm.kernels.gemv import gemv_kernels
from llm.reference import Sampling, sample
from llm_numerics import BF16, f32_of, swiglu_want

from cutile import api
from cutile.core import bf16, f32, i32


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(11)


@pytest.mark.parametrize("loop", [False, True])
def test_split_gemv_with_the_norm_numerator(rng: np.random.Generator, loop: bool) -> None:
    n, k = 100, 96                                   # 4 row tiles (the last ragged), 3 splits
    w = (rng.standard_normal((n, k)) * 0.1).astype(BF16)
    h = rng.standard_normal(k).astype(np.float32)
    nw = rng.uniform(0.5, 1.5, k).astype(BF16)
    part = api.full([3, n], np.nan, f32).partition([1, 32])
    g = gemv_kernels(None)
    args = (part, api.from_numpy(w), api.from_numpy(h), api.from_numpy(nw))
    op = (g.norm_partial_loop(*args, 1, BK=32) if loop else g.norm_partial(*args, BK=32, KPS=1))
    part, *_ = op.sync()
    got = part.unpartition().to_numpy()
    x = f32_of(f32_of(h * f32_of(nw)).astype(BF16))
    for s in range(3):                               # each split holds its columns' sums
        cols = slice(32 * s, 32 * s + 32)
        np.testing.assert_allclose(got[s], f32_of(w)[:, cols] @ x[cols], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("loop", [False, True])
def test_gemv_adds_into_the_residual(rng: np.random.Generator, loop: bool) -> None:
    n, k = 70, 256
    w = (rng.standard_normal((n, k)) * 0.1).astype(BF16)
    x = rng.standard_normal(k).astype(BF16)
    y0 = rng.standard_normal(n).astype(np.float32)
    g = gemv_kernels(2)
    args = (api.from_numpy(y0), api.from_numpy(w), api.from_numpy(x))
    op = (g.add_loop(*args, 2, BO=32, BK=64, grid=(3, 2)) if loop
          else g.add(*args, BO=32, BK=64, KPS=2, grid=(3, 2)))
    y, *_ = op.sync()
    np.testing.assert_allclose(y.to_numpy(), y0 + f32_of(w) @ f32_of(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("latency", [None, 10])
def test_fused_gate_up_swiglu(rng: np.random.Generator, latency: int | None) -> None:
    """Whole rows of the gate and the up projection per block, the MLP norm's scale and
    SwiGLU in the epilogue; K = 80 is not a multiple of BK (the last tile is padded)."""
    i, k, bo = 48, 80, 16
    w = (rng.standard_normal((2 * i, k)) * 0.2).astype(BF16)
    h = rng.standard_normal(k).astype(np.float32)
    nw = rng.uniform(0.5, 1.5, k).astype(BF16)
    act = api.full([i], np.nan, bf16).partition([bo])
    act, *_ = gemv_kernels(2, latency).swiglu(
        act, api.from_numpy(w), api.from_numpy(h), api.from_numpy(nw), 1e-6, BK=32, HB=128,
        UP=i // bo).sync()
    x = f32_of(f32_of(h * f32_of(nw)).astype(BF16))
    want = swiglu_want(f32_of(w), x, h, i)
    got = f32_of(act.unpartition().to_numpy())
    np.testing.assert_allclose(got, want, rtol=8e-3, atol=1e-3 * np.abs(want).max())
    assert np.abs(want).max() > 0.5                  # not a test of zeros


def test_output_projection_with_the_attention_combine(rng: np.random.Generator) -> None:
    """h += Wo combine(shares): the NS flash-decoding shares of each kv head (two of them
    empty: maximum -inf, sum 0) rescaled, added and divided as `attn_combine` does, the
    result rounded to bf16, times Wo; two column tiles per head, a ragged last row tile."""
    kv, g, d, ns, n, bo, bk = 2, 2, 32, 4, 40, 16, 16
    o = rng.standard_normal((kv, ns, g * d)).astype(np.float32)
    m = rng.standard_normal((kv, ns, g)).astype(np.float32) * 3
    sums = rng.uniform(0.5, 4, (kv, ns, g)).astype(np.float32)
    m[1, 3], sums[1, 3], o[1, 3] = -np.inf, 0, 0
    m[0, 1], sums[0, 1], o[0, 1] = -np.inf, 0, 0
    w = (rng.standard_normal((n, kv * g * d)) * 0.1).astype(BF16)
    y0 = rng.standard_normal(n).astype(np.float32)
    y, *_ = gemv_kernels(None).attn_add(
        api.from_numpy(y0), api.from_numpy(w), api.from_numpy(o), api.from_numpy(m),
        api.from_numpy(sums), BO=bo, BK=bk, G=g, D=d, NS=ns, grid=(-(-n // bo), kv)).sync()
    scale = np.exp2(m - m.max(axis=1, keepdims=True))                 # [kv, ns, g]
    num = (scale[..., None] * o.reshape(kv, ns, g, d)).sum(axis=1)
    x = f32_of((num / (scale * sums).sum(axis=1)[..., None]).reshape(-1).astype(BF16))
    want = y0 + f32_of(w).astype(np.float64) @ x
    np.testing.assert_allclose(y.to_numpy(), want, rtol=1e-4, atol=1e-4)


def test_lm_head_and_greedy_choice_break_ties_to_the_lowest_id(rng: np.random.Generator
                                                               ) -> None:
    v, k, bo = 200, 64, 32
    w = (rng.standard_normal((v, k)) * 0.1).astype(BF16)
    h = rng.standard_normal(k).astype(np.float32)
    nw = np.ones(k, BF16)
    x = f32_of(h.astype(BF16))
    best = int(np.argmax(f32_of(w) @ x))
    w[150] = w[best]                                 # the same logit in a later block
    w[best + 1 if best + 1 != 150 else best + 2] = w[best]       # and later in its block
    logits = api.full([v], np.nan, f32).partition([bo])
    nb = -(-v // bo)
    bmax = api.zeros([nb], f32).partition([1])
    barg = api.zeros([nb], i32).partition([1])
    logits, bmax, barg, *_ = gemv_kernels(None).lm_head_argmax(
        logits, bmax, barg, api.from_numpy(w), api.from_numpy(h), api.from_numpy(nw), 1e-6,
        BK=32, HB=64).sync()
    inv = 1 / np.sqrt((h * h).mean() + 1e-6)
    want = inv * (f32_of(w) @ x)
    np.testing.assert_allclose(logits.unpartition().to_numpy(), want, rtol=1e-5, atol=1e-6)
    tokens = api.zeros([16], i32).partition([16])
    pos = api.from_numpy(np.array([4], np.int32)).partition([1])
    tokens, pos, *_ = sampling.select_greedy(tokens, pos, bmax.unpartition(), barg.unpartition(),
                                             NB=8).sync()
    assert pos.unpartition().to_numpy().tolist() == [5]
    assert tokens.unpartition().to_numpy().tolist() == [0] * 5 + [best] + [0] * 10


@pytest.mark.parametrize(("pos", "dc"), [(0, 32), (20, 16), (63, 16), (40, 32)])
def test_decode_attention_with_empty_shares(rng: np.random.Generator, pos: int, dc: int
                                            ) -> None:
    kv, g, d, cap, ns, bs = 2, 3, 32, 64, 8, 8      # 3 query heads per kv head, padded to 4
    kc = rng.standard_normal((kv, cap, d)).astype(BF16)
    vc = rng.standard_normal((kv, cap, d)).astype(BF16)
    q = rng.standard_normal((kv * g, d)).astype(np.float32)
    o = api.zeros([kv, ns, 4 * d], f32).partition([1, 1, 4 * d])
    m = api.zeros([kv, ns, 4], f32).partition([1, 1, 4])
    sums = api.zeros([kv, ns, 4], f32).partition([1, 1, 4])
    scale = 1 / math.sqrt(d)
    qpad = np.zeros((kv, 4, d), np.float32)          # G rows padded to a power of two
    qpad[:, :g] = q.reshape(kv, g, d)
    o, m, sums, *_ = attention.attn_decode(
        o, m, sums, api.from_numpy(qpad.reshape(kv * 4, d)), api.from_numpy(kc),
        api.from_numpy(vc), api.from_numpy(np.array([pos], np.int32)), scale, D=d,
        BS=bs, M=16, NS=ns).sync()
    out = api.zeros([kv * 4 * d], bf16).partition([dc])
    out, *_ = attention.attn_combine(out, o.unpartition(), m.unpartition(), sums.unpartition(),
                                     G=4, D=d, NS=ns).sync()
    got = f32_of(out.unpartition().to_numpy()).reshape(kv, 4, d)[:, :g]
    for head in range(kv * g):
        keys = f32_of(kc[head // g, :pos + 1]).astype(np.float64)
        s = keys @ q[head] * scale
        p = np.exp(s - s.max())
        want = p @ f32_of(vc[head // g, :pos + 1]) / p.sum()
        np.testing.assert_allclose(got[head // g, head % g], want, rtol=8e-3, atol=8e-3)


@pytest.mark.parametrize("setting", [Sampling(0.7, 20, 0.9, seed=3), Sampling(1.5, 32, 1.0, 9),
                                     Sampling(1.0, 5, 0.5, seed=2)])
def test_sampling_matches_the_host_algorithm(rng: np.random.Generator, setting: Sampling
                                             ) -> None:
    v, ch, k = 600, 128, 32
    for trial in range(2):
        logits = (rng.standard_normal(v) * 3).astype(np.float32)
        nc = -(-v // ch)
        cv = api.zeros([nc, k], f32).partition([1, k])
        ci = api.zeros([nc, k], i32).partition([1, k])
        cv, ci, _ = sampling.topk_partial(cv, ci, api.from_numpy(logits), CH=ch).sync()
        at = 3 + trial
        tokens = api.zeros([16], i32).partition([16])
        pos = api.from_numpy(np.array([at], np.int32)).partition([1])
        tokens, pos, *_ = sampling.sample_select(
            tokens, pos, cv.unpartition(), ci.unpartition(), 1.0 / setting.temperature,
            setting.top_p, setting.top_k, setting.seed, NC=8, K=k).sync()
        got = int(tokens.unpartition().to_numpy()[at + 1])
        assert got == sample(logits, at, setting, k)
        top = np.argsort(-logits, kind="stable")[:setting.top_k]
        assert got in top


@pytest.mark.parametrize(("splits", "pos"), [(5, 0), (5, 37), (4, 63), (1, 9)])
def test_qkv_finish_adds_the_splits_and_writes_the_cache_row(rng: np.random.Generator,
                                                             splits: int, pos: int) -> None:
    """The S partial-sum rows (S not a power of two: the padded rows of the one tile load
    must add nothing) scaled by the attention norm, q and k head-normed and rotated, k and
    v rounded to bf16 at row `pos` of each kv head's cache; other cache rows untouched."""
    kv, g, d, cap, hsz = 3, 2, 32, 64, 40
    nh = kv * g
    width = (nh + 2 * kv) * d
    part = rng.standard_normal((splits, width)).astype(np.float32)
    h = rng.standard_normal(hsz).astype(np.float32)
    qnw = rng.uniform(0.5, 1.5, d).astype(BF16)
    knw = rng.uniform(0.5, 1.5, d).astype(BF16)
    ang = np.arange(cap, dtype=np.float32)[:, None] * rng.uniform(0.01, 1, d // 2)[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    k0 = rng.standard_normal((kv, cap, d)).astype(BF16)
    v0 = rng.standard_normal((kv, cap, d)).astype(BF16)
    q, kc, vc, *_ = qkv.qkv_finish(
        api.full([nh, d], np.nan, f32).partition([g, d]),
        api.from_numpy(k0).partition([1, cap, d]), api.from_numpy(v0).partition([1, cap, d]),
        api.from_numpy(part), api.from_numpy(h), api.from_numpy(qnw), api.from_numpy(knw),
        api.from_numpy(cos), api.from_numpy(sin), api.from_numpy(np.array([pos], np.int32)),
        1e-6, HB=64, NH=nh, NKV=kv, SB=1 << (splits - 1).bit_length()).sync()
    x = part.astype(np.float64).sum(axis=0) / np.sqrt((h.astype(np.float64) ** 2).mean() + 1e-6)

    def norm_rope(rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        rows = rows / np.sqrt((rows * rows).mean(axis=1, keepdims=True) + 1e-6) * f32_of(w)
        c, s_ = cos[pos], sin[pos]
        x1, x2 = rows[:, :d // 2], rows[:, d // 2:]
        return np.concatenate([x1 * c - x2 * s_, x2 * c + x1 * s_], axis=1)

    want_q = norm_rope(x[:nh * d].reshape(nh, d), qnw)
    want_k = norm_rope(x[nh * d:(nh + kv) * d].reshape(kv, d), knw)
    want_v = x[(nh + kv) * d:].reshape(kv, d)
    np.testing.assert_allclose(q.unpartition().to_numpy(), want_q, rtol=1e-4, atol=1e-4)
    k1, v1 = kc.unpartition().to_numpy(), vc.unpartition().to_numpy()
    np.testing.assert_allclose(f32_of(k1[:, pos]), want_k, rtol=8e-3, atol=8e-3)
    np.testing.assert_allclose(f32_of(v1[:, pos]), want_v, rtol=8e-3, atol=8e-3)
    others = np.arange(cap) != pos
    assert (k1[:, others] == k0[:, others]).all() and (v1[:, others] == v0[:, others]).all()

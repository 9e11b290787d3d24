"""The decode step's latency kernels (`Plan.attn_path` "heads" and "fused") one by one
against numpy on random inputs, on shapes that are not tile multiples: the embedding row
with the step's cos/sin row, the QKV GEMV with the sums of squares of h, the per-head QKV
finish writing one cache row, decode attention with q from the buffer or finished inside
it (the new key from registers), and the two combines, one of which writes the new cache
row. Every one is checked without a device check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from llm.kernels import decode_attention as da
from llm.kernels.embed_rope import embed_row_rope
from llm.kernels.gemv_ss import gemv_ss_kernels
from llm.kernels.qkv_heads import qkv_heads
from llm_numerics import BF16, bf16_round, f32_of

from cutile import api
from cutile.core import bf16, f32

EPS = 1e-6




@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(23)


@pytest.mark.parametrize("kernel", [embed_row_rope, qkv_heads, da.attn_decode_q, da.attn_decode_qkv,
                                    da.attn_combine_heads, da.attn_combine_cache,
                                    gemv_ss_kernels(2).norm_partial_ss,
                                    gemv_ss_kernels(2).norm_partial_ss_loop])
def test_the_latency_kernels_need_no_device_check(kernel) -> None:  # type: ignore[no-untyped-def]
    """Loaded positions reach indices only through min/max clamps the checker proves."""
    result = kernel.check()
    assert not result.device_checks, kernel.name
    assert all(o.discharged != "device" for o in result.obligations), kernel.name


@pytest.mark.parametrize("loop", [False, True])
def test_qkv_gemv_writes_the_sums_of_squares_of_its_columns(rng: np.random.Generator,
                                                            loop: bool) -> None:
    n, k, bo, bk = 100, 90, 32, 32                 # 4 row tiles (the last ragged), 3 splits
    w = (rng.standard_normal((n, k)) * 0.1).astype(BF16)
    h = rng.standard_normal(k).astype(np.float32)
    nw = rng.uniform(0.5, 1.5, k).astype(BF16)
    part = api.full([3, n], np.nan, f32).partition([1, bo])
    ss = api.full([3, 4], np.nan, f32).partition([1, 1])
    g = gemv_ss_kernels(None)
    args = (part, ss, api.from_numpy(w), api.from_numpy(h), api.from_numpy(nw))
    op = g.norm_partial_ss_loop(*args, 1, BK=bk) if loop else g.norm_partial_ss(*args, BK=bk,
                                                                                 KPS=1)
    part, ss, *_ = op.sync()
    got, sq = part.unpartition().to_numpy(), ss.unpartition().to_numpy()
    x = f32_of(f32_of(h * f32_of(nw)).astype(BF16))
    for s in range(3):
        cols = slice(bk * s, bk * s + bk)
        np.testing.assert_allclose(got[s], f32_of(w)[:, cols] @ x[cols], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(sq[s], np.full(4, (h[cols] ** 2).sum()), rtol=1e-5)


def finish_reference(part: np.ndarray, ss: np.ndarray, qnw: np.ndarray, knw: np.ndarray,
                     cos: np.ndarray, sin: np.ndarray, pos: int, hsz: int, nh: int, kv: int,
                     d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q [NH, D], k and v [KV, D] as the QKV finish computes them (f64)."""
    x = part.astype(np.float64).sum(axis=0) / np.sqrt(ss[:, 0].sum() / hsz + EPS)

    def norm_rope(rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        rows = rows / np.sqrt((rows * rows).mean(axis=1, keepdims=True) + EPS) * f32_of(w)
        c, s_ = cos[pos], sin[pos]
        x1, x2 = rows[:, :d // 2], rows[:, d // 2:]
        return np.concatenate([x1 * c - x2 * s_, x2 * c + x1 * s_], axis=1)

    return (norm_rope(x[:nh * d].reshape(nh, d), qnw),
            norm_rope(x[nh * d:(nh + kv) * d].reshape(kv, d), knw),
            x[(nh + kv) * d:].reshape(kv, d))


def finish_inputs(rng: np.random.Generator, splits: int, kv: int, g: int, d: int, cap: int,
                  hsz: int) -> dict[str, np.ndarray]:
    nh = kv * g
    part = rng.standard_normal((splits, (nh + 2 * kv) * d)).astype(np.float32)
    ss = np.repeat(rng.uniform(2, 20, (splits, 1)), 3, axis=1).astype(np.float32)
    ang = np.arange(cap, dtype=np.float32)[:, None] * rng.uniform(0.01, 1, d // 2)[None, :]
    return {"part": part, "ss": ss, "qnw": rng.uniform(0.5, 1.5, d).astype(BF16),
            "knw": rng.uniform(0.5, 1.5, d).astype(BF16),
            "cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32),
            "k0": rng.standard_normal((kv, cap, d)).astype(BF16),
            "v0": rng.standard_normal((kv, cap, d)).astype(BF16)}


def cs_row(x: dict[str, np.ndarray], pos: int) -> np.ndarray:
    """What `embed_row_rope` writes: cos | sin of position pos, in every block's row (2)."""
    return np.tile(np.concatenate([x["cos"][pos], x["sin"][pos]])[None, :], (2, 1))


@pytest.mark.parametrize("tma", [False, True])
def test_the_step_starts_with_its_embedding_row_and_its_rotation_row(
        rng: np.random.Generator, tma: bool) -> None:
    """embed_row_rope: h = embedding[tokens[pos]] (a hidden size that is not a tile
    multiple), and every block's row of cs = cos[pos] | sin[pos]."""
    vocab, hsz, d, bh, cap, pos = 50, 40, 16, 16, 32, 11
    table = rng.standard_normal((vocab, hsz)).astype(BF16)
    tokens = rng.integers(0, vocab, cap).astype(np.int32)
    ang = np.arange(cap, dtype=np.float32)[:, None] * rng.uniform(0.01, 1, d // 2)[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    h, cs, *_ = embed_row_rope(
        api.full([hsz], np.nan, f32).partition([bh]), api.full([3, d], np.nan, f32).partition(
            [1, d]), api.from_numpy(table), api.from_numpy(tokens),
        api.from_numpy(np.array([pos], np.int32)), api.from_numpy(cos), api.from_numpy(sin),
        TMA=tma).sync()
    np.testing.assert_array_equal(h.unpartition().to_numpy(), f32_of(table[tokens[pos]]))
    want = np.concatenate([cos[pos], sin[pos]])
    np.testing.assert_array_equal(cs.unpartition().to_numpy(), np.tile(want, (3, 1)))


@pytest.mark.parametrize("tma", [False, True])
@pytest.mark.parametrize(("splits", "pos"), [(5, 0), (5, 37), (3, 63), (1, 31), (5, 32)])
def test_qkv_heads_finishes_every_head_and_writes_one_cache_row(
        rng: np.random.Generator, tma: bool, splits: int, pos: int) -> None:
    """A block per query head; the S partial-sum rows (S not a power of two: the padded
    rows add nothing), the attention norm from the sums of squares, q and k head-normed and
    rotated; k and v rounded to bf16 at row pos of each kv head's cache by the one block
    whose rows hold it; every other cache row untouched."""
    kv, g, d, cap, hsz = 3, 2, 32, 64, 40
    x = finish_inputs(rng, splits, kv, g, d, cap, hsz)
    q, kc, vc, *_ = qkv_heads(
        api.full([kv, g, d], np.nan, f32).partition([1, 1, d]),
        api.from_numpy(x["k0"]).partition([1, cap // g, d]),
        api.from_numpy(x["v0"]).partition([1, cap // g, d]), api.from_numpy(x["part"]),
        api.from_numpy(x["ss"]), api.from_numpy(x["qnw"]), api.from_numpy(x["knw"]),
        api.from_numpy(cs_row(x, pos)), api.from_numpy(np.array([pos], np.int32)), EPS, G=g,
        H=hsz, NH=kv * g, NKV=kv,
        SB=1 << (splits - 1).bit_length(), TMA=tma).sync()
    want_q, want_k, want_v = finish_reference(x["part"], x["ss"], x["qnw"], x["knw"],
                                              x["cos"], x["sin"], pos, hsz, kv * g, kv, d)
    np.testing.assert_allclose(q.unpartition().to_numpy().reshape(kv * g, d), want_q,
                               rtol=1e-4, atol=1e-4)
    k1, v1 = kc.unpartition().to_numpy(), vc.unpartition().to_numpy()
    np.testing.assert_allclose(f32_of(k1[:, pos]), want_k, rtol=8e-3, atol=8e-3)
    np.testing.assert_allclose(f32_of(v1[:, pos]), want_v, rtol=8e-3, atol=8e-3)
    others = np.arange(cap) != pos
    assert (k1[:, others] == x["k0"][:, others]).all()
    assert (v1[:, others] == x["v0"][:, others]).all()


def attention_reference(q: np.ndarray, keys: np.ndarray, values: np.ndarray, scale: float
                        ) -> np.ndarray:
    s = keys.astype(np.float64) @ q.astype(np.float64) * scale
    p = np.exp(s - s.max())
    return p @ values.astype(np.float64) / p.sum()


@pytest.mark.parametrize(("pos", "dc", "tma", "kv_tma", "exact", "counted"),
                         [(0, 32, False, True, True, False), (20, 16, False, False, True, False),
                          (63, 16, True, True, True, False), (41, 32, False, True, True, False),
                          (41, 32, False, True, False, False), (63, 16, True, False, False, False),
                          (0, 32, False, True, True, True), (8, 16, False, True, True, True),
                          (63, 16, False, True, False, True), (41, 32, True, False, True, True)])
def test_decode_attention_with_q_from_the_buffer(rng: np.random.Generator, pos: int, dc: int,
                                                 tma: bool, kv_tma: bool, exact: bool,
                                                 counted: bool) -> None:
    """attn_decode_q and attn_combine_heads (the combine's grid over (kv heads, chunks)),
    with empty shares (8 shares of 8-key tiles over up to 64 keys, or 2 of 4 tiles each);
    q and the probabilities in the MMAs as hi + lo bf16 halves (`exact`) or as bf16, within
    bf16's rounding; the loop over the share's tiles below the length (`counted`) or over
    the caches' extent."""
    kv, g, d, cap, bs = 2, 4, 32, 64, 8
    ns = 2 if counted else 8                 # counted: up to 4 tiles a share
    kc = rng.standard_normal((kv, cap, d)).astype(BF16)
    vc = rng.standard_normal((kv, cap, d)).astype(BF16)
    q = rng.standard_normal((kv * g, d)).astype(np.float32)
    o = api.zeros([kv, ns, g * d], f32).partition([1, 1, g * d])
    m = api.zeros([kv, ns, g], f32).partition([1, 1, g])
    sums = api.zeros([kv, ns, g], f32).partition([1, 1, g])
    scale = 1 / math.sqrt(d)
    o, m, sums, *_ = da.attn_decode_q(
        o, m, sums, api.from_numpy(q), api.from_numpy(kc), api.from_numpy(vc),
        api.from_numpy(np.array([pos], np.int32)), scale, D=d, BS=bs, M=16, NS=ns, TMA=tma,
        KV_TMA=kv_tma, EXACT=exact, COUNTED=counted).sync()
    per = g * d // dc
    out = api.full([kv, per, dc], np.nan, bf16).partition([1, 1, dc])
    out, *_ = da.attn_combine_heads(out, o.unpartition(), m.unpartition(), sums.unpartition(),
                                    G=g, D=d, NS=ns, TMA=tma, O_TMA=not kv_tma).sync()
    got = f32_of(out.unpartition().to_numpy()).reshape(kv * g, d)
    for head in range(kv * g):
        j = head // g
        want = attention_reference(q[head], f32_of(kc[j, :pos + 1]), f32_of(vc[j, :pos + 1]),
                                   scale)
        tol = 8e-3 if exact else 2e-2
        np.testing.assert_allclose(got[head], want, rtol=tol, atol=tol)


@pytest.mark.parametrize(("splits", "pos", "tma", "kv_tma"),
                         [(5, 0, False, True), (5, 23, False, True), (3, 63, False, False),
                          (1, 8, True, True), (5, 40, True, False)])
def test_fused_finish_and_attention_then_the_combine_writes_the_row(
        rng: np.random.Generator, splits: int, pos: int, tma: bool, kv_tma: bool) -> None:
    """attn_decode_qkv: q, k, v from the projection's partial sums inside attention, the
    cache's keys below pos from memory and the new one (rounded to bf16) from registers;
    kv_new holds it for attn_combine_cache, which combines the shares and stores the new
    key and value at row pos (block rows of 16: pos 0, 23, 40, 63 land in different
    blocks; pos 8 is the first key of a share)."""
    kv, g, d, cap, ns, bs, hsz, dc = 2, 2, 32, 64, 4, 8, 40, 16
    nh = kv * g
    x = finish_inputs(rng, splits, kv, g, d, cap, hsz)
    scale = 1 / math.sqrt(d)
    sb = 1 << (splits - 1).bit_length()
    o = api.zeros([kv, ns, g * d], f32).partition([1, 1, g * d])
    m = api.zeros([kv, ns, g], f32).partition([1, 1, g])
    sums = api.zeros([kv, ns, g], f32).partition([1, 1, g])
    kv_new = api.full([kv, ns, 2 * d], np.nan, bf16).partition([1, 1, 2 * d])
    pos_t = api.from_numpy(np.array([pos], np.int32))
    k_cache, v_cache = api.from_numpy(x["k0"]), api.from_numpy(x["v0"])
    o, m, sums, kv_new, *rest = da.attn_decode_qkv(
        o, m, sums, kv_new, api.from_numpy(x["part"]), api.from_numpy(x["ss"]),
        api.from_numpy(x["qnw"]), api.from_numpy(x["knw"]), api.from_numpy(cs_row(x, pos)),
        k_cache, v_cache, pos_t, scale, EPS, D=d, BS=bs, M=16,
        NS=ns, H=hsz, NH=nh, NKV=kv, SB=sb, TMA=tma, KV_TMA=kv_tma, EXACT=True,
        COUNTED=pos > 30).sync()
    k_cache, v_cache, pos_t = rest[5], rest[6], rest[7]
    want_q, want_k, want_v = finish_reference(x["part"], x["ss"], x["qnw"], x["knw"],
                                              x["cos"], x["sin"], pos, hsz, nh, kv, d)
    kv_new = kv_new.unpartition()
    new = f32_of(kv_new.to_numpy())[:, 0]                           # block (j, 0)'s copy
    np.testing.assert_allclose(new[:, :d], want_k, rtol=8e-3, atol=8e-3)
    np.testing.assert_allclose(new[:, d:], want_v, rtol=8e-3, atol=8e-3)
    per = g * d // dc
    out = api.full([kv, per, dc], np.nan, bf16).partition([1, 1, dc])
    out, kc, vc, *_ = da.attn_combine_cache(
        out, k_cache.partition([1, cap // per, d]), v_cache.partition([1, cap // per, d]),
        o.unpartition(), m.unpartition(), sums.unpartition(), kv_new, pos_t,
        G=g, D=d, NS=ns, TMA=tma, O_TMA=kv_tma).sync()
    k1, v1 = kc.unpartition().to_numpy(), vc.unpartition().to_numpy()
    np.testing.assert_array_equal(f32_of(k1[:, pos]), new[:, :d])    # the row = kv_new
    np.testing.assert_array_equal(f32_of(v1[:, pos]), new[:, d:])
    others = np.arange(cap) != pos
    assert (k1[:, others] == x["k0"][:, others]).all()
    assert (v1[:, others] == x["v0"][:, others]).all()
    got = f32_of(out.unpartition().to_numpy()).reshape(nh, d)
    for head in range(nh):
        j = head // g
        keys = np.concatenate([f32_of(x["k0"][j, :pos]), bf16_round(want_k[j])[None]])
        values = np.concatenate([f32_of(x["v0"][j, :pos]), bf16_round(want_v[j])[None]])
        want = attention_reference(want_q[head], keys, values, scale)
        np.testing.assert_allclose(got[head], want, rtol=1e-2, atol=1e-2)
    assert np.abs(got).max() > 0.1                   # not a test of zeros

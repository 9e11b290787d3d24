"""Grouped-query attention over the KV cache.

Decode (one query token at position `pos`, keys 0..pos), flash-decoding style:
- `attn_decode`: block (h, s) of a (KV heads, NS) grid takes key tiles s, s + NS, ... of
  key/value head h below the current length, for all G query heads that share it, and
  runs the online softmax over them in f32 (scores in base 2): it writes its unnormalized
  output [G, D], its running maximum and its sum of exponentials. NS is fixed per launch
  and the shares follow the current length, so one launch shape serves every position
  (what a captured CUDA graph needs); a block with no tile writes maximum -inf and sum 0.
  Every load index is proved when compiled or at launch (no device check in the loop). The
  scores and the weighted sum of the values run on the tensor cores (the G heads repeated
  to 16 rows; q and the probabilities split into bf16 hi + lo halves), in f32 accuracy.
- `attn_combine`: block b takes DC columns of one query head's output: it rescales the NS
  partial results to their common maximum, adds them and divides by the total sum; the
  output (bf16) is the input of the output projection.

Prefill (`attn_prefill`): causal flash attention of a prompt's queries against its own keys
and values, read straight from the fused QKV buffer [T, (H + 2 KV) D] in bf16 on the
tensor cores (query head j reads key/value head j // G); block (m, j) owns the (BM, D)
output tile of rows m and head j. Its softmax step and load hints are those of the tuned
`examples/attention.py` kernel; the plan (`prefill_plan.py`) gives its tile and hints.
"""

from __future__ import annotations

import math

import cutile
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    bf16,
    block_id,
    broadcast_to,
    cdiv,
    exp2,
    f32,
    fma,
    full,
    i32,
    maximum,
    mma,
    truediv,
    where,
    zeros,
)

LOG2E = 1.4426950408889634


@cutile.device
def split_bf16(x):
    """x (f32) as hi + lo, two bf16 tiles: an mma of each keeps ~16 bits of x."""
    hi = x.astype(bf16)
    return hi, (x - hi.astype(f32)).astype(bf16)


@cutile.device
def repeat_rows(x, M, G, D):
    """The G rows of x [G, D] repeated to the M rows of a tensor-core tile."""
    return broadcast_to(x[None, :, :], (M // G, G, D)).reshape((M, D))


@cutile.device
def kv_tiles(kc, vc, kvh, t, cap, BS, D, KV_TMA):
    """Key tile t of kv head kvh, transposed (D, BS), and its value tile (BS, D); the index
    clamped into the caches' extent (the callers load only t BS < n <= extent: the clamp
    is the proof, no device check)."""
    j = max(min(t, cap - 1), 0)
    kt = kc.load_tile((1, BS, D), (kvh, j, 0), allow_tma=KV_TMA).reshape((BS, D))
    vs = vc.load_tile((1, BS, D), (kvh, j, 0), allow_tma=KV_TMA).reshape((BS, D))
    return kt.transpose(), vs


@cutile.device
def attend_tile(q_hi, q_lo, kt, vs, t, n, m_i, l_i, acc, BS, M, EXACT):
    """One key tile's step of the online softmax (base 2): keys t BS.. below n."""
    sc = mma(q_hi, kt, zeros((M, BS), f32))
    if EXACT:
        sc = mma(q_lo, kt, sc)
    keys = t * BS + arange(BS, i32)
    sc = where(keys[None, :] < n, sc, -math.inf)
    m_new = maximum(m_i, sc.max(axis=1, keepdims=True))
    alpha = exp2(m_i - m_new)
    p = exp2(sc - m_new)
    l_new = l_i * alpha + p.sum(axis=1, keepdims=True)
    p_hi, p_lo = split_bf16(p)
    acc = mma(p_hi, vs, acc * alpha)
    if EXACT:
        acc = mma(p_lo, vs, acc)
    return m_new, l_new, acc


@cutile.device
def attend_cache(qs, kc, vc, kvh, s, n, BS, M, D, NS, KV_TMA, EXACT, COUNTED):
    """The online softmax (base 2) of this block's share of the cache: key tiles s,
    s + NS, ... of kv head kvh, keys below n; qs f32 (M, D), scaled. With EXACT, q and the
    probabilities enter the bf16 MMAs as hi + lo halves (f32 accuracy, two MMAs each);
    without, as bf16 (what a bf16 attention like torch's SDPA does: half the MMAs of the
    per-tile chain). With COUNTED, the loop runs over this share's tiles below n (a count
    read on the device) instead of over the caches' extent with a branch per tile.
    Returns the running maximum, the sum of exponentials and the unnormalized output."""
    q_hi, q_lo = split_bf16(qs)
    # Block s takes key tiles t = s, s + NS, s + 2 NS, ... below the current length. The
    # loop runs over the caches' extent (known at launch), its tile index clamped to it, and
    # skips the tiles past the length: every load is proved in bounds when compiled or at
    # launch, and the loop carries no device check (shares bounded by a length read on the
    # device could only be checked there, on every load).
    cap = min(cdiv(kc.shape[1], BS), cdiv(vc.shape[1], BS))
    m_i = full((M, 1), -math.inf, f32)
    l_i = zeros((M, 1), f32)
    acc = zeros((M, D), f32)
    if COUNTED:
        # only this share's tiles below n: a loop without a branch, so tileiras may
        # pipeline its loads like a GEMM's K loop (the clamp inside kv_tiles is the proof)
        for i in range(cdiv(max(n - s * BS, 0), NS * BS)):
            t = i * NS + s
            kt, vs = kv_tiles(kc, vc, kvh, t, cap, BS, D, KV_TMA)
            m_i, l_i, acc = attend_tile(q_hi, q_lo, kt, vs, t, n, m_i, l_i, acc, BS, M, EXACT)
    else:
        for i in range(cdiv(cap, NS)):
            t = i * NS + s
            if t * BS < n:
                kt, vs = kv_tiles(kc, vc, kvh, t, cap, BS, D, KV_TMA)
                m_i, l_i, acc = attend_tile(q_hi, q_lo, kt, vs, t, n, m_i, l_i, acc, BS, M,
                                            EXACT)
    return m_i, l_i, acc


# Two CTAs per SM: tileiras then fits a block in 128 registers without spilling (43 KB of
# shared memory each), and `plan.attn_splits` sizes the grid to two blocks per SM.
DECODE_OCCUPANCY = 2


@cutile.entry(occupancy=DECODE_OCCUPANCY)
def attn_decode(o: Mut[Tensor[f32, [1, 1, "GD"]]], m_out: Mut[Tensor[f32, [1, 1, "G"]]],
                l_out: Mut[Tensor[f32, [1, 1, "G"]]], q: Tensor[f32, [-1, -1]],
                kc: Tensor[bf16, [-1, -1, -1]], vc: Tensor[bf16, [-1, -1, -1]],
                pos: Tensor[i32, [-1]], scale: f32, GD: Const[int], G: Const[int],
                D: Const[int], BS: Const[int], M: Const[int], NS: Const[int]):
    kvh = block_id(0)
    s = block_id(1)
    n = pos.load_tile((1,), (0,)).item() + 1          # keys 0..pos
    # The G query heads repeated to the M = 16 rows of a tensor-core tile (rows past G are
    # copies, dropped at the end); q and the probabilities enter the bf16 MMAs as hi + lo
    # halves, so the scores and the weighted sum keep f32 accuracy.
    qs = q.load_tile((G, D), (kvh, 0)) * (scale * LOG2E)
    m_i, l_i, acc = attend_cache(repeat_rows(qs, M, G, D), kc, vc, kvh, s, n, BS, M, D, NS,
                                 True, True, False)
    o.store(acc[:G].reshape((1, 1, GD)))
    m_out.store(m_i[:G].reshape((1, 1, G)))
    l_out.store(l_i[:G].reshape((1, 1, G)))


@cutile.entry
def attn_combine(out: Mut[Tensor[bf16, ["DC"]]], o: Tensor[f32, [-1, -1, -1]],
                 m: Tensor[f32, [-1, -1, -1]], sums: Tensor[f32, [-1, -1, -1]],
                 DC: Const[int], G: Const[int], D: Const[int], NS: Const[int]):
    # Block b owns DC output columns: chunk b % (G D / DC) of key/value head b // (G D / DC),
    # inside query head g of that group. Many small blocks (Qwen3-4B: 128 of 2 KB) instead
    # of one per kv head: the 8-block grid spent its time streaming 64 KB per SM.
    per = (G * D) // DC
    kvh = block_id(0) // per
    c = block_id(0) % per
    g = c // (D // DC)
    ms = m.load_tile((1, NS, G), (kvh, 0, 0), padding="neg_inf").reshape((NS, G))
    mine = arange(G, i32)[None, :] == g
    mg = where(mine, ms, -math.inf).max(axis=1, keepdims=True)           # [NS, 1]
    sg = where(mine, sums.load_tile((1, NS, G), (kvh, 0, 0)).reshape((NS, G)), 0.0)
    w = exp2(mg - mg.max(axis=0, keepdims=True))                        # [NS, 1]
    den = (w * sg.sum(axis=1, keepdims=True)).sum(axis=0)             # [1]
    os_ = o.load_tile((1, NS, DC), (kvh, 0, c)).reshape((NS, DC))
    out.store(((w * os_).sum(axis=0) / den).astype(bf16))


@cutile.device
def softmax_step(s, qk_scale, vs, m_i, l_i, acc):
    """One key tile of the online softmax (base 2): rescale the sums to the new maximum,
    add this tile's exponentials and values. `s` is unscaled: the scale goes into the row
    maxima (a column) and into the exponent's argument (one FMA per score), as in
    examples/attention.py."""
    m_new = maximum(m_i, s.max(axis=1, keepdims=True) * qk_scale)
    alpha = exp2(m_i - m_new, flush_to_zero=True)
    p = exp2(fma(s, qk_scale, -m_new), flush_to_zero=True)
    return m_new, l_i * alpha + p.sum(axis=1, keepdims=True), mma(p.astype(bf16), vs, acc * alpha)


@cutile.entry
def attn_prefill(o: Mut[Tensor[bf16, ["BM", "D"]]], qkv: Tensor[bf16, [-1, -1]], scale: f32,
                 BM: Const[int], D: Const[int], G: Const[int], NH: Const[int],
                 NKV: Const[int]):
    m = block_id(0)
    head = block_id(1)
    kvh = head // G
    # the load latency hints of examples/attention.py's tuned kernel
    qs = qkv.load_tile((BM, D), (m, head), latency=2)
    qk_scale = scale * LOG2E
    m_i = full((BM, 1), -math.inf, f32)
    l_i = zeros((BM, 1), f32)
    acc = zeros((BM, D), f32)
    n = qkv.shape[0]
    rows = m * BM + arange(BM, i32)[:, None]
    # key tiles wholly below the diagonal need no mask; the diagonal tile and a ragged last
    # tile do (BN == BM)
    clear = min(n // BM, m)
    for j in range(clear):
        ks = qkv.load_tile((BM, D), (j, NH + kvh), latency=2)
        s = mma(qs, ks.transpose(), zeros((BM, BM), f32))
        vs = qkv.load_tile((BM, D), (j, NH + NKV + kvh), latency=4)
        m_i, l_i, acc = softmax_step(s, qk_scale, vs, m_i, l_i, acc)
    for j in range(clear, min(cdiv(n, BM), m + 1)):
        ks = qkv.load_tile((BM, D), (j, NH + kvh), latency=2)
        s = mma(qs, ks.transpose(), zeros((BM, BM), f32))
        cols = j * BM + arange(BM, i32)[None, :]
        s = where((cols < n) & (cols <= rows), s, -math.inf)
        vs = qkv.load_tile((BM, D), (j, NH + NKV + kvh), latency=4)
        m_i, l_i, acc = softmax_step(s, qk_scale, vs, m_i, l_i, acc)
    out = truediv(acc, l_i, rounding="approx", flush_to_zero=True)
    o.store(out.astype(bf16))

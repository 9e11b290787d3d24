"""Temperature, top-k and top-p sampling over the whole vocabulary, for the settings the
candidate path (`sampling.topk_partial` + `sample_select`, K = 64 largest logits) cannot
take: a top-k above K, or none (top_k = 0, pure nucleus sampling).

One block reads the logits tile by tile, many times over (it is the only way to agree on a
threshold without a grid-wide barrier, which no safe kernel has):

1. the largest logit (and its first index: the fallback draw);
2. top-k: the k-th largest logit, found bit by bit from the top of an i32 key whose signed
   order is the logits' order (32 counting passes); Hugging Face's `TopKLogitsWarper`
   keeps every logit >= that value, ties included, and so does this;
3. top-p: of those, token x is kept when the probability of the tokens above it is below
   top_p (Hugging Face's `TopPLogitsWarper`: the smallest set that reaches top_p, the
   largest always kept). The cut is again a key threshold, found bit by bit (32 passes
   summing the mass above a candidate);
4. one draw u in [0, kept mass), and the first token in vocabulary order whose running
   kept mass passes u. Any order gives the same distribution; this one needs no sort.

About 70 passes over a 600 KB row that stays in L2; the candidate path stays the default.
`reference.sample_exact` is the same algorithm on the host.
"""

from __future__ import annotations

import math

import cutile
from cutile.core import (
    Const,
    Mut,
    Tensor,
    argmax,
    cumsum,
    exp,
    f32,
    full,
    i32,
    maximum,
    u32,
    where,
    zeros,
)

from .sampling import advance, uniform

INT_MIN = -2147483647 - 1


@cutile.device
def order_key(x):
    """An i32 tile whose signed order is the order of the f32 tile `x`: a negative float's
    magnitude bits are flipped, so larger floats get larger keys."""
    b = x.bitcast(i32)
    return b ^ ((b >> 31) & 0x7FFFFFFF)


@cutile.device
def kept_weight(x, cut, inv_temp, mz):
    """exp(x / T - max / T) where x's key is at least `cut`, else 0."""
    return where(order_key(x) >= cut, exp(x * inv_temp - mz), 0.0)


@cutile.entry
def sample_exact(tokens: Mut[Tensor[i32, ["TS"]]], pos: Mut[Tensor[i32, [1]]],
                 logits: Tensor[f32, [-1]], inv_temp: f32, top_p: f32, top_k: i32, seed: u32,
                 TS: Const[int], CH: Const[int], NT: Const[int], BY_K: Const[int],
                 BY_P: Const[int]):
    m = full((1,), -math.inf, f32)
    best = zeros((1,), i32)
    for t in range(NT):                               # 1. the largest logit, first index
        x = logits.load_tile((CH,), (t,), padding="neg_inf")
        tm = x.max(keepdims=True)
        best = where(tm > m, argmax(x, keepdims=True) + t * CH, best)
        m = maximum(m, tm)
    mz = m * inv_temp

    kth = full((1,), INT_MIN, i32)                    # 2. the k-th largest key
    if BY_K:
        bit = full((1,), INT_MIN, i32)                # the sign bit first: is key >= 0?
        for _ in range(32):
            cand = where(bit == INT_MIN, 0, kth | bit)
            n = zeros((1,), i32)
            for t in range(NT):
                key = order_key(logits.load_tile((CH,), (t,), padding="neg_inf"))
                n = n + where(key >= cand, 1, 0).astype(i32).sum(keepdims=True)
            kth = where(n >= top_k, cand, kth)
            bit = where(bit == INT_MIN, 1073741824, bit >> 1)

    cut = kth                                         # 3. the top-p cut, above the k-th
    if BY_P:
        z = zeros((1,), f32)
        for t in range(NT):
            x = logits.load_tile((CH,), (t,), padding="neg_inf")
            z = z + kept_weight(x, kth, inv_temp, mz).sum(keepdims=True)
        need = z * top_p
        # s: the largest key with (mass of kept keys above s) >= need; keep keys above s
        s = full((1,), INT_MIN, i32)
        bit = full((1,), INT_MIN, i32)
        for _ in range(32):
            cand = where(bit == INT_MIN, 0, s | bit)
            above = zeros((1,), f32)
            for t in range(NT):
                x = logits.load_tile((CH,), (t,), padding="neg_inf")
                key = order_key(x)
                e = exp(x * inv_temp - mz)
                above = above + where((key > cand) & (key >= kth), e, 0.0).sum(keepdims=True)
            s = where(above >= need, cand, s)
            bit = where(bit == INT_MIN, 1073741824, bit >> 1)
        # s + 1 cannot wrap: the mass above the largest key is 0, below any need
        cut = maximum(kth, s + 1)

    w = zeros((1,), f32)                              # 4. the kept mass, then the draw
    for t in range(NT):
        x = logits.load_tile((CH,), (t,), padding="neg_inf")
        w = w + kept_weight(x, cut, inv_temp, mz).sum(keepdims=True)
    u = uniform(pos.load().astype(u32), seed) * w
    run = zeros((1,), f32)
    tok = best                       # if rounding leaves u past the last running sum
    found = zeros((1,), i32)
    for t in range(NT):
        x = logits.load_tile((CH,), (t,), padding="neg_inf")
        e = kept_weight(x, cut, inv_temp, mz)
        hit = where(cumsum(e) + run > u, 1, 0)
        take = (found == 0) & (hit.max(keepdims=True) > 0)
        tok = where(take, argmax(hit, keepdims=True) + t * CH, tok)
        found = where(take, 1, found)
        run = run + e.sum(keepdims=True)
    advance(tokens, pos, tok)

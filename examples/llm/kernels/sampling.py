"""Choosing the next token on the device, and the counter-based random numbers it (and the
random weights) use.

- `select_greedy`: the argmax over the LM head blocks' maxima (ties to the lower index, as
  numpy's argmax over all logits), then that block's row: tokens[pos + 1] = that id and
  pos += 1. The token buffer is one tile, and the new id is a one-element sub-tile of it
  (proved race-free; that pos + 1 is inside the buffer is checked on the device).
- `topk_partial` and `sample_select`: temperature, top-k and top-p (nucleus) sampling as
  Hugging Face's warpers apply them (divide by the temperature, keep the k largest, keep
  the smallest set of those whose probability reaches top_p, at least one), then one draw.
  Each `topk_partial` block takes the K largest logits of a CH-wide chunk (K argmax
  passes); `sample_select` merges every chunk's candidates into the global K largest,
  sorted, so top-k (k <= K) and top-p run on K values: Hugging Face's order of warpers
  with top_k <= K. No top-k, or a larger one, is `sample_exact`'s (the whole vocabulary).
- Random numbers: `mix32` is a 32-bit integer hash (xor-shift-multiply, "lowbias32"),
  `uniform(counter, seed)` = (mix32(mix32(counter) ^ seed) >> 8) / 2^24 in [0, 1), the
  same on the host (`reference.uniform`) bit for bit, so a seeded run is reproducible and
  checkable.
"""

from __future__ import annotations

import math

import cutile
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    argmax,
    block_id,
    cumsum,
    exp,
    f32,
    full,
    gather,
    i32,
    u32,
    where,
    zeros,
)


@cutile.device
def mix32(x):
    """A bijective 32-bit hash of a u32 tile (xor-shift-multiply). The products run in i32
    (the same bits modulo 2^32): the checker refuses the u32 literal 0x846CA68B
    (CT3052, as if u32 arithmetic took signed 32-bit constants), so it is written as the
    i32 with the same bits."""
    x = x ^ (x >> 16)
    x = (x.bitcast(i32) * 0x7FEB352D).bitcast(u32)
    x = x ^ (x >> 15)
    x = (x.bitcast(i32) * -2073254261).bitcast(u32)      # 0x846CA68B
    return x ^ (x >> 16)


@cutile.device
def uniform(counter, seed):
    """Uniform floats in [0, 1) from u32 counters and a u32 seed (24 random bits each)."""
    return (mix32(mix32(counter) ^ seed) >> 8).astype(f32) * (1.0 / 16777216.0)


@cutile.device
def advance(tokens, pos, tok):
    """tokens[pos + 1] = tok; pos += 1 (tok and pos are [1] tiles)."""
    nxt = pos.load() + 1
    row = tokens.partition_mut((1,))
    row.store(tok, (nxt.item(),))
    pos.store(nxt)


@cutile.entry
def select_greedy(tokens: Mut[Tensor[i32, ["TS"]]], pos: Mut[Tensor[i32, [1]]],
                  bmax: Tensor[f32, [-1]], barg: Tensor[i32, [-1]], TS: Const[int],
                  NB: Const[int]):
    best = argmax(bmax.load_tile((NB,), (0,), padding="neg_inf"), keepdims=True)
    advance(tokens, pos, gather(barg, best))


@cutile.entry
def topk_partial(cv: Mut[Tensor[f32, [1, "K"]]], ci: Mut[Tensor[i32, [1, "K"]]],
                 logits: Tensor[f32, [-1]], K: Const[int], CH: Const[int]):
    c = block_id(0)
    t = logits.load_tile((CH,), (c,), padding="neg_inf")
    lane = arange(CH, i32)
    slot = arange(K, i32)
    vals = full((K,), -math.inf, f32)
    ids = zeros((K,), i32)
    for r in range(K):
        best = argmax(t, keepdims=True)                              # [1]
        vals = where(slot == r, t.max(keepdims=True), vals)
        ids = where(slot == r, best + c * CH, ids)
        t = where(lane == best, -math.inf, t)
    cv.store(vals[None, :])
    ci.store(ids[None, :])


@cutile.entry
def sample_select(tokens: Mut[Tensor[i32, ["TS"]]], pos: Mut[Tensor[i32, [1]]],
                  cv: Tensor[f32, [-1, -1]], ci: Tensor[i32, [-1, -1]], inv_temp: f32,
                  top_p: f32, top_k: i32, seed: u32, TS: Const[int], NC: Const[int],
                  K: Const[int]):
    allv = cv.load_tile((NC, K), (0, 0), padding="neg_inf").reshape((NC * K,))
    alli = ci.load_tile((NC, K), (0, 0)).reshape((NC * K,))
    lane = arange(NC * K, i32)
    rank = arange(K, i32)
    vals = full((K,), -math.inf, f32)
    ids = zeros((K,), i32)
    for r in range(K):                                # the K largest, in order
        best = argmax(allv, keepdims=True)
        vals = where(rank == r, allv.max(keepdims=True), vals)
        ids = where(rank == r, where(lane == best, alli, 0).sum(keepdims=True), ids)
        allv = where(lane == best, -math.inf, allv)
    z = where(rank < top_k, vals * inv_temp, -math.inf)
    p = exp(z - z.max(keepdims=True))
    p = p / p.sum(keepdims=True)
    before = cumsum(p) - p                            # mass of the larger candidates
    p = where((before < top_p) | (rank == 0), p, 0.0)
    u = uniform(pos.load().astype(u32), seed) * p.sum(keepdims=True)
    pick = argmax(where(cumsum(p) > u, 1, 0), keepdims=True)        # the first past u
    advance(tokens, pos, where(rank == pick, ids, 0).sum(keepdims=True))

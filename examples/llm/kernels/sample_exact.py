"""Temperature, top-k and top-p sampling over the whole vocabulary, for the settings the
candidate path (`sampling.topk_partial` + `sample_select`, K = 64 largest logits) cannot
take: a top-k above K, or none (top_k = 0, pure nucleus sampling).

A grid of blocks, one CH-wide chunk of the logits each, and a short chain of kernels
(`launch_sample_exact`): a safe kernel has no grid-wide barrier, so the blocks agree on a
threshold through the next kernel, which reads every block's partial result. Each
threshold is a key (an i32 whose signed order is the logits' order, `order_key`) found
four bits per kernel from the top (radix select, 8 rounds of 16 bins):

1. `chunk_max`: each chunk's largest logit and its first index (the global one is the
   temperature's shift and the fallback draw);
2. top-k (`radix_count`, 8 rounds): the k-th largest key. Each round, every block counts
   its chunk's keys in the 16 bins of the next digit under the prefix decided so far; the
   next kernel sums the counts of all blocks (every block alike: each writes its own copy
   of the decided state, and the next kernel reads the first) and keeps the largest bin
   that still holds the k-th key. Hugging Face's `TopKLogitsWarper` keeps every logit >=
   that value, ties included, and so does this;
3. top-p (`radix_mass`, 8 rounds): of the kept keys, token x is kept when the probability
   of the tokens above it is below top_p (Hugging Face's `TopPLogitsWarper`: the smallest
   set that reaches top_p, the largest always kept): the cut is the largest key whose
   mass at and above it reaches top_p of the kept mass, found as the k-th key with the
   bins' masses (exp(x / T - max / T)) in place of counts;
4. `radix_finish`: the last digit, and each chunk's kept mass; `radix_draw` (one block):
   one draw u in [0, kept mass), the chunk where the running mass passes u, and in it the
   first token that does. Any order gives the same distribution; vocabulary order needs
   no sort.

The state and the histograms alternate between two buffers (a kernel reads one, writes
the other). `reference.sample_exact` is the same algorithm on the host (sorting, not bins).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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
    gather,
    i32,
    maximum,
    u32,
    where,
    zeros,
)

from .sampling import advance, uniform

INT_MIN = -2147483647 - 1
BINS = 16                      # 4 bits of the key per round
SHIFTS = tuple(range(28, -1, -4))


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


@cutile.device
def field(state, j):
    """Field `j` of the decided state (row 0: every block wrote the same row), a [1] tile."""
    return state.load_tile((1, 1), (0, j)).reshape((1,))


@cutile.device
def row4(a, b, c, d):
    lane = arange(4, i32)
    return where(lane == 0, a, where(lane == 1, b, where(lane == 2, c, d)))[None, :]


@cutile.device
def block_hists(hm, GP):
    """Every block's row of bin masses (padding blocks: zero)."""
    return hm.load_tile((GP, BINS), (0, 0), padding="zero")


@cutile.device
def global_max(bm, GP):
    return bm.load_tile((GP,), (0,), padding="neg_inf").max(keepdims=True)


@cutile.device
def chunk(logits, CH):
    """This block's logits, and which lanes are logits (not the last chunk's padding)."""
    c = block_id(0)
    x = logits.load_tile((CH,), (c,), padding="neg_inf")
    return x, c * CH + arange(CH, i32) < logits.shape[0]


@cutile.device
def in_bins(key, valid, lo, shift):
    """[16, CH]: lane i's key lies in bin b of the 16 under the prefix `lo` (keys lo ..
    lo + 16 * 2^shift - 1; in wrapping i32 the first round's range, from INT_MIN with
    shift 28, is every key)."""
    hi = lo + (16 << shift) - 1
    inside = valid & (key >= lo) & (key <= hi)
    digit = ((key - lo) >> shift) & 15
    return (digit[None, :] == arange(BINS, i32)[:, None]) & inside[None, :]


@cutile.device
def decide_count(hc, lo, need, shift, GP):
    """The bin (of the 16 at `shift` under `lo`) that holds the need-th largest key, over
    every block's counts: the new prefix, and how many keys it still needs."""
    h = hc.load_tile((GP, BINS), (0, 0), padding="zero").sum(axis=0)
    incl = cumsum(h, reverse=True)                    # keys in this bin and above
    b = arange(BINS, i32)
    d = where(incl >= need, b, 0).max(keepdims=True)
    above = where(b == d, incl - h, 0).sum(keepdims=True)
    return lo + (d << shift), need - above


@cutile.device
def decide_mass(hists, lo, above, need, shift):
    """The bin whose mass, with the mass above it, first reaches `need` (`hists`: every
    block's bin masses, a [GP, 16] tile): the new prefix, and the mass above it."""
    h = hists.sum(axis=0)
    incl = above + cumsum(h, reverse=True)
    b = arange(BINS, i32)
    d = where(incl >= need, b, 0).max(keepdims=True)
    return lo + (d << shift), where(b == d, incl - h, 0.0).sum(keepdims=True)


@cutile.entry
def chunk_max(bm: Mut[Tensor[f32, [1]]], ba: Mut[Tensor[i32, [1]]],
              logits: Tensor[f32, [-1]], CH: Const[int]):
    x, _ = chunk(logits, CH)
    bm.store(x.max(keepdims=True))
    ba.store(argmax(x, keepdims=True) + block_id(0) * CH)


@cutile.entry
def radix_count(st_out: Mut[Tensor[i32, [1, 4]]], hc_out: Mut[Tensor[i32, [1, 16]]],
                st_in: Tensor[i32, [-1, 4]], hc_in: Tensor[i32, [-1, 16]],
                logits: Tensor[f32, [-1]], top_k: i32, shift: i32, CH: Const[int],
                GP: Const[int], FIRST: Const[int]):
    """A top-k round: decide the previous digit (state: prefix, keys still needed), then
    count this chunk's keys in the bins of the digit at `shift`."""
    if FIRST:
        lo = zeros((1,), i32) + INT_MIN
        need = zeros((1,), i32) + top_k
    else:
        lo, need = decide_count(hc_in, field(st_in, 0), field(st_in, 1), shift + 4, GP)
    st_out.store(row4(lo, need, lo, need))
    x, valid = chunk(logits, CH)
    hits = where(in_bins(order_key(x), valid, lo, shift), 1, 0).astype(i32)
    hc_out.store(hits.sum(axis=1)[None, :])


@cutile.entry
def radix_mass(st_out: Mut[Tensor[i32, [1, 4]]], sf_out: Mut[Tensor[f32, [1, 4]]],
               hm_out: Mut[Tensor[f32, [1, 16]]], st_in: Tensor[i32, [-1, 4]],
               sf_in: Tensor[f32, [-1, 4]], hm_in: Tensor[f32, [-1, 16]],
               hc_in: Tensor[i32, [-1, 16]], bm: Tensor[f32, [-1]], logits: Tensor[f32, [-1]],
               inv_temp: f32, top_p: f32, shift: i32, CH: Const[int], GP: Const[int],
               FIRST: Const[int], BY_K: Const[int]):
    """A top-p round over the keys top-k kept: decide the previous digit (state: prefix,
    k-th key; mass above the prefix, mass needed), then sum this chunk's kept mass in the
    bins of the digit at `shift`. The first round takes the k-th key from the last top-k
    round; the second sets the mass needed, top_p of all kept mass (the first round's)."""
    mz = global_max(bm, GP) * inv_temp
    if FIRST:
        if BY_K:
            kth, _ = decide_count(hc_in, field(st_in, 0), field(st_in, 1), 0, GP)
        else:
            kth = zeros((1,), i32) + INT_MIN
        lo = zeros((1,), i32) + INT_MIN
        above = zeros((1,), f32)
        need = zeros((1,), f32)
    else:
        kth = field(st_in, 2)
        hists = block_hists(hm_in, GP)
        total = hists.sum(keepdims=True).reshape((1,))
        need = where(shift == 24, total * top_p, field(sf_in, 1))
        lo, above = decide_mass(hists, field(st_in, 0), field(sf_in, 0), need, shift + 4)
    st_out.store(row4(lo, kth, kth, kth))
    sf_out.store(row4(above, need, need, need))
    x, valid = chunk(logits, CH)
    key = order_key(x)
    e = where(key >= kth, exp(x * inv_temp - mz), 0.0)
    hm_out.store(where(in_bins(key, valid, lo, shift), e[None, :], 0.0).sum(axis=1)[None, :])


@cutile.entry
def radix_finish(wb: Mut[Tensor[f32, [1]]], cut_out: Mut[Tensor[i32, [1]]],
                 st_in: Tensor[i32, [-1, 4]], sf_in: Tensor[f32, [-1, 4]],
                 hm_in: Tensor[f32, [-1, 16]], hc_in: Tensor[i32, [-1, 16]],
                 bm: Tensor[f32, [-1]], logits: Tensor[f32, [-1]], inv_temp: f32,
                 CH: Const[int], GP: Const[int], BY_K: Const[int], BY_P: Const[int]):
    """The last digit (of top-p, else of top-k): the cut, and this chunk's kept mass."""
    if BY_P:
        t, _ = decide_mass(block_hists(hm_in, GP), field(st_in, 0), field(sf_in, 0),
                           field(sf_in, 1), 0)
        cut = maximum(field(st_in, 2), t)
    elif BY_K:
        cut, _ = decide_count(hc_in, field(st_in, 0), field(st_in, 1), 0, GP)
    else:
        cut = zeros((1,), i32) + INT_MIN
    x, _ = chunk(logits, CH)
    wb.store(kept_weight(x, cut, inv_temp, global_max(bm, GP) * inv_temp).sum(keepdims=True))
    cut_out.store(cut)


@cutile.entry
def radix_draw(tokens: Mut[Tensor[i32, ["TS"]]], pos: Mut[Tensor[i32, [1]]],
               wb: Tensor[f32, [-1]], cut: Tensor[i32, [-1]], bm: Tensor[f32, [-1]],
               ba: Tensor[i32, [-1]], logits: Tensor[f32, [-1]], inv_temp: f32, seed: u32,
               TS: Const[int], CH: Const[int], GP: Const[int]):
    """One draw u in [0, kept mass); the chunk where the running kept mass passes u, and
    in it the first token that does (else, if rounding leaves u past the last running sum,
    the largest logit's first index)."""
    w = wb.load_tile((GP,), (0,), padding="zero")
    u = uniform(pos.load().astype(u32), seed) * w.sum(keepdims=True)
    run = cumsum(w)
    past = where(run > u, 1, 0)
    c = argmax(past, keepdims=True)                   # the first chunk past u
    before = where(arange(GP, i32) == c, run - w, 0.0).sum(keepdims=True)
    m = bm.load_tile((GP,), (0,), padding="neg_inf")
    x = logits.load_tile((CH,), (c.item(),), padding="neg_inf")
    e = kept_weight(x, cut.load_tile((1,), (0,)), inv_temp, m.max(keepdims=True) * inv_temp)
    hit = where(cumsum(e) + before > u, 1, 0)
    found = (past.max(keepdims=True) > 0) & (hit.max(keepdims=True) > 0)
    best = gather(ba, argmax(m, keepdims=True))
    advance(tokens, pos, where(found, argmax(hit, keepdims=True) + c * CH, best))


def launch_sample_exact(run: Callable[..., None], out: Callable[..., Any], bufs: Any,
                        tokens: Any, pos: Any, logits: Any, vocab: int, inv_temp: float,
                        top_p: float, top_k: int, seed: int, ch: int) -> None:
    """The chain of kernels for one draw. `run(kernel, *args, **consts)` launches;
    `out(buf, *tile)` is a buffer written through a partition; `bufs` (`ExactBuffers`'
    fields, whatever `run` takes as a read-only argument) holds the partial results;
    `tokens`, `pos` are the outputs (already wrapped by `out`)."""
    grid = -(-vocab // ch)
    gp = 1 << max(0, grid - 1).bit_length()
    by_k, by_p = int(0 < top_k < vocab), int(top_p < 1.0)
    st, sf, hc, hm = bufs.st, bufs.sf, bufs.hc, bufs.hm
    run(chunk_max, out(bufs.bm, 1), out(bufs.ba, 1), logits, CH=ch)
    cur = 0
    for shift in SHIFTS if by_k else ():
        run(radix_count, out(st[1 - cur], 1, 4), out(hc[1 - cur], 1, BINS), st[cur],
            hc[cur], logits, top_k, shift, CH=ch, GP=gp, FIRST=int(shift == SHIFTS[0]))
        cur = 1 - cur
    for shift in SHIFTS if by_p else ():
        run(radix_mass, out(st[1 - cur], 1, 4), out(sf[1 - cur], 1, 4),
            out(hm[1 - cur], 1, BINS), st[cur], sf[cur], hm[cur], hc[cur], bufs.bm, logits,
            inv_temp, top_p, shift, CH=ch, GP=gp, FIRST=int(shift == SHIFTS[0]), BY_K=by_k)
        cur = 1 - cur
    run(radix_finish, out(bufs.wb, 1), out(bufs.cut, 1), st[cur], sf[cur], hm[cur], hc[cur],
        bufs.bm, logits, inv_temp, CH=ch, GP=gp, BY_K=by_k, BY_P=by_p)
    run(radix_draw, tokens, pos, bufs.wb, bufs.cut, bufs.bm, bufs.ba, logits, inv_temp,
        seed & 0xFFFFFFFF, CH=ch, GP=gp)


def buffer_shapes(vocab: int, ch: int) -> dict[str, tuple[Sequence[int], Any, int]]:
    """name -> (shape, dtype, copies) of the buffers `launch_sample_exact` uses."""
    g = -(-vocab // ch)
    return {"bm": ([g], f32, 1), "ba": ([g], i32, 1), "wb": ([g], f32, 1),
            "cut": ([g], i32, 1), "st": ([g, 4], i32, 2), "sf": ([g, 4], f32, 2),
            "hc": ([g, BINS], i32, 2), "hm": ([g, BINS], f32, 2)}

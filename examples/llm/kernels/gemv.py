"""Decode GEMVs, y = W x for a bf16 weight W [N, K] (Hugging Face's [out, in] layout) and
one token's activation x, at memory bandwidth: every weight byte is read once, by a grid
large enough to fill every SM.

The reduction is split: block (o, s) multiplies the (BO, BK) tiles o of W in its split's
KPS consecutive column tiles with x and keeps a (BO, BK) f32 accumulator (one reduction
across lanes at the end, none in the loop). KPS is a compile-time constant and divides the
number of column tiles (the plan picks it), so every tile index is proved in bounds by a
launch-time predicate: no check runs inside the loop, and tileiras unrolls it into KPS TMA
loads in flight at once.

- `gemv_norm_partial`: the input is RMSNorm's numerator, x = bf16(h * w_norm) (the residual
  stream h in f32, the norm weight in bf16): the per-token factor rsqrt(mean(h^2) + eps) is
  a scalar, so it is applied by the kernel that reduces the partial sums (`qkv_finish`,
  `swiglu_finish`), and the norm costs the GEMV nothing. Block (s, o) writes its partial
  sums to row s of a [S, N] f32 buffer (deterministic: the consumer adds the S rows in
  order). Used for the fused QKV projection (and gate/up when the MLP is not fused).
- `gemv_add`: y += W x into an `Atomic` f32 vector: the output and down projections add
  straight into the residual stream h (every block adds its partial sums; atomics of
  different blocks do not race), which saves a reduction kernel per projection.
- `gemv_attn_add`: the output projection with attention's combine folded in: block (o, j)
  takes the KPS = G D / BK column tiles of key/value head j, and for each it computes its
  slice of the attention output from the NS flash-decoding shares (rescaled to their common
  maximum, added, divided by the total sum, rounded to bf16: what `attn_combine` computes)
  before multiplying; then atomic adds into h as `gemv_add`. One kernel less per layer, for
  NS x BK f32 partial-output reads from L2 per weight tile.
- `gemv_swiglu`: the MLP's gate and up projections and SwiGLU in one kernel, whole rows
  per block (no split of the reduction): block i multiplies gate rows [i BO, (i+1) BO) and
  the matching up rows (UP = I / BO row tiles further down the fused [2 I, K] weight) with
  x = bf16(h * w_mlp_norm) and stores act = silu(g inv) * (u inv) in bf16, the input of the
  down projection. No partial sums, no second kernel; the grid (I / BO blocks of equal
  work) is meant to run as one wave.
- `lm_head_argmax`: logits = rsqrt(mean(h^2) + eps) * (E bf16(h * w_final)), whole rows per
  block (the vocabulary gives blocks enough), plus each block's maximum logit and its index,
  which `select_greedy` reduces to the next token.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import cutile
from cutile.core import (
    Atomic,
    Const,
    Mut,
    Tensor,
    arange,
    argmax,
    atomic_add,
    bf16,
    block_id,
    exp,
    exp2,
    extract,
    f32,
    fma,
    i32,
    minimum,
    num_tiles,
    rsqrt,
    where,
    zeros,
)


@cutile.device
def norm_x(h, nw, k, BK):
    """Column tile k of RMSNorm's numerator bf16(h * w_norm), as an f32 (1, BK) row."""
    x = (h.load_tile((BK,), (k,)) * nw.load_tile((BK,), (k,)).astype(f32)).astype(bf16)
    return x.astype(f32)[None, :]


@cutile.device
def row_x(x, k, BK):
    """Column tile k of a bf16 input vector as an f32 (1, BK) row."""
    return x.load_tile((BK,), (k,)).astype(f32)[None, :]


# Loads ahead of the PDL wait (`ahead`, `Plan.early_steps`): a kernel's first weight steps,
# loaded before any other memory access at the entry's top level (a loop would count as an
# access), so that with `pdl_early=("w",)` they all stream while the kernel before finishes.
# The split's tile count n may be smaller than the steps ahead: a compile-time KPS loads
# only min(ahead, KPS) of them; a run-time count (the looped kernels' kps, whole rows'
# num_tiles) loads `ahead` tiles at index k + min(j, n - 1), which stays inside the split
# (a stand-in repeats its last tile), and multiplies a step j >= n by a zero input row (a
# select, not a branch: a branch after the loads ahead made tileiras spill the fused
# gate/up kernel). So for every n >= 1 each output is exactly that of one step at a time
# wherever it is finite (a stand-in adds w * 0 = 0; only a non-finite weight, whose row is
# already inf or NaN, could turn into NaN).
AHEAD_MAX = 4


def check_ahead(ahead: int) -> None:
    if not (isinstance(ahead, int) and 1 <= ahead <= AHEAD_MAX):
        raise ValueError(f"weight steps ahead of the PDL wait: 1 to {AHEAD_MAX}, not {ahead!r}")


@functools.cache
def weight_steps(latency: int | None) -> cutile.DeviceFunction:
    """A device function (w, o, k, n, m, BO, BK) -> the weight tiles k, k+1, k+2, k+3 of
    row tile o: the first m (a compile-time 1..4) loaded, one after another, with the
    `latency` hint; the others stand-ins (tile k, never used)."""

    @cutile.device
    def steps(w, o, k, n, m, BO, BK):
        t0 = w.load_tile((BO, BK), (o, k), latency=latency)
        t1 = w.load_tile((BO, BK), (o, k + minimum(1, n - 1)), latency=latency) if m > 1 else t0
        t2 = w.load_tile((BO, BK), (o, k + minimum(2, n - 1)), latency=latency) if m > 2 else t0
        t3 = w.load_tile((BO, BK), (o, k + minimum(3, n - 1)), latency=latency) if m > 3 else t0
        return t0, t1, t2, t3

    return steps


@cutile.device
def unless_past(t, j, n):
    """t, or zeros where step j lies past a split of n column tiles (a select: no branch
    after the loads ahead; with a compile-time n, t itself)."""
    return t if j < n else t * 0.0


@cutile.device
def ahead_norm(acc, ws, h, nw, k, n, m, BK):
    """acc plus `weight_steps`' m tiles ws times the norm numerator's column tiles (a step
    past the split skipped: a branch here, where a select made tileiras sink the LM head's
    loads below the wait; see `benchmarks/llm_early_sass.py`)."""
    w0, w1, w2, w3 = ws
    acc = fma(w0.astype(f32), norm_x(h, nw, k, BK), acc)
    if m > 1 and n > 1:
        acc = fma(w1.astype(f32), norm_x(h, nw, k + minimum(1, n - 1), BK), acc)
    if m > 2 and n > 2:
        acc = fma(w2.astype(f32), norm_x(h, nw, k + minimum(2, n - 1), BK), acc)
    if m > 3 and n > 3:
        acc = fma(w3.astype(f32), norm_x(h, nw, k + minimum(3, n - 1), BK), acc)
    return acc


@cutile.device
def ahead_row(acc, ws, x, k, n, m, BK):
    """As `ahead_norm`, with a bf16 input vector x."""
    w0, w1, w2, w3 = ws
    acc = fma(w0.astype(f32), row_x(x, k, BK), acc)
    if m > 1:
        acc = fma(w1.astype(f32), unless_past(row_x(x, k + minimum(1, n - 1), BK), 1, n), acc)
    if m > 2:
        acc = fma(w2.astype(f32), unless_past(row_x(x, k + minimum(2, n - 1), BK), 2, n), acc)
    if m > 3:
        acc = fma(w3.astype(f32), unless_past(row_x(x, k + minimum(3, n - 1), BK), 3, n), acc)
    return acc


@cutile.device
def ahead_swiglu(g, u, gs, us, h, nw, n, m, BK):
    """Gate and up accumulators plus the m steps ahead of each (columns from 0)."""
    g0, g1, g2, g3 = gs
    u0, u1, u2, u3 = us
    x0 = norm_x(h, nw, 0, BK)
    g, u = fma(g0.astype(f32), x0, g), fma(u0.astype(f32), x0, u)
    if m > 1:
        x1 = unless_past(norm_x(h, nw, minimum(1, n - 1), BK), 1, n)
        g, u = fma(g1.astype(f32), x1, g), fma(u1.astype(f32), x1, u)
    if m > 2:
        x2 = unless_past(norm_x(h, nw, minimum(2, n - 1), BK), 2, n)
        g, u = fma(g2.astype(f32), x2, g), fma(u2.astype(f32), x2, u)
    if m > 3:
        x3 = unless_past(norm_x(h, nw, minimum(3, n - 1), BK), 3, n)
        g, u = fma(g3.astype(f32), x3, g), fma(u3.astype(f32), x3, u)
    return g, u


@cutile.device
def combined_x(o, scale, den, kvh, kk, BK, D, NS):
    """Columns [kk BK, (kk + 1) BK) of kv head kvh's attention output, combined from its NS
    flash-decoding shares (rescaled to their common maximum, added, divided by the total
    sum, rounded to bf16, as `attn_combine` stores it), as a [1, BK] f32 row."""
    head = kk * BK // D
    part = o.load_tile((1, NS, BK), (kvh, 0, kk)).reshape((NS, BK))
    num = (extract(scale, (0, head), (NS, 1)) * part).sum(axis=0)
    x = (num / extract(den, (0, head), (1, 1)).reshape((1,))).astype(bf16)
    return x.astype(f32)[None, :]


@cutile.device
def ahead_combined(acc, ws, o, scale, den, kvh, n, m, BK, D, NS):
    """As `ahead_row`, with the combined attention output as the input vector (n, the
    tiles per block, is a compile-time value here: steps past it are skipped)."""
    w0, w1, w2, w3 = ws
    acc = fma(w0.astype(f32), combined_x(o, scale, den, kvh, 0, BK, D, NS), acc)
    if m > 1 and n > 1:
        x1 = combined_x(o, scale, den, kvh, minimum(1, n - 1), BK, D, NS)
        acc = fma(w1.astype(f32), x1, acc)
    if m > 2 and n > 2:
        x2 = combined_x(o, scale, den, kvh, minimum(2, n - 1), BK, D, NS)
        acc = fma(w2.astype(f32), x2, acc)
    if m > 3 and n > 3:
        x3 = combined_x(o, scale, den, kvh, minimum(3, n - 1), BK, D, NS)
        acc = fma(w3.astype(f32), x3, acc)
    return acc


@dataclass(frozen=True)
class GemvKernels:
    norm_partial: cutile.EntryKernel
    add: cutile.EntryKernel
    lm_head_argmax: cutile.EntryKernel
    norm_partial_loop: cutile.EntryKernel
    add_loop: cutile.EntryKernel
    swiglu: cutile.EntryKernel
    attn_add: cutile.EntryKernel


@functools.cache
def gemv_kernels(occupancy: int | None = None, latency: int | None = None,
                 ahead: int = 1) -> GemvKernels:
    """The GEMV kernels compiled with tileiras' `occupancy` hint (CTAs per SM; None leaves
    it to tileiras, which gives one CTA the whole register file), the weight loads'
    `latency` hint (1-10; None: none; a higher one makes tileiras keep more stages of a
    loop's loads in flight) and `ahead`, the weight steps (1-4) each kernel loads before
    anything else (`weight_steps`: ahead of a PDL wait)."""
    check_ahead(ahead)
    steps = weight_steps(latency)

    @cutile.entry(occupancy=occupancy)
    def gemv_norm_partial(part: Mut[Tensor[f32, [1, "BO"]]], w: Tensor[bf16, [-1, -1]],
                          h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], BO: Const[int],
                          BK: Const[int], KPS: Const[int]):
        s = block_id(0)
        o = block_id(1)
        m = ahead if ahead < KPS else KPS
        ws = steps(w, o, s * KPS, KPS, m, BO, BK)    # ahead of a PDL wait
        acc = ahead_norm(zeros((BO, BK), f32), ws, h, nw, s * KPS, KPS, m, BK)
        for kk in range(ahead, KPS):
            k = s * KPS + kk
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), norm_x(h, nw, k, BK), acc)
        part.store(acc.sum(axis=1)[None, :])

    @cutile.entry(occupancy=occupancy)
    def gemv_add(y: Atomic[Tensor[f32, [-1]]], w: Tensor[bf16, [-1, -1]],
                 x: Tensor[bf16, [-1]], BO: Const[int], BK: Const[int], KPS: Const[int]):
        o = block_id(0)
        s = block_id(1)
        m = ahead if ahead < KPS else KPS
        ws = steps(w, o, s * KPS, KPS, m, BO, BK)    # ahead of a PDL wait
        acc = ahead_row(zeros((BO, BK), f32), ws, x, s * KPS, KPS, m, BK)
        for kk in range(ahead, KPS):
            k = s * KPS + kk
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), row_x(x, k, BK), acc)
        atomic_add(y, o * BO + arange(BO, i32), acc.sum(axis=1), memory_order="relaxed")

    @cutile.entry(occupancy=occupancy)
    def lm_head_argmax(logits: Mut[Tensor[f32, ["BO"]]], bmax: Mut[Tensor[f32, [1]]],
                       barg: Mut[Tensor[i32, [1]]], w: Tensor[bf16, [-1, -1]],
                       h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], eps: f32,
                       BO: Const[int], BK: Const[int], HB: Const[int]):
        o = block_id(0)
        nt = num_tiles(w, 1, (BO, BK))
        ws = steps(w, o, 0, nt, ahead, BO, BK)       # ahead of a PDL wait
        acc = ahead_norm(zeros((BO, BK), f32), ws, h, nw, 0, nt, ahead, BK)
        for k in range(ahead, nt):
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), norm_x(h, nw, k, BK), acc)
        hv = h.load_tile((HB,), (0,))
        inv = rsqrt((hv * hv).sum() / h.shape[0] + eps)
        y = acc.sum(axis=1) * inv
        rows = o * BO + arange(BO, i32)
        ranked = where(rows < w.shape[0], y, -math.inf)    # rows past the vocabulary lose
        logits.store(y)
        bmax.store(ranked.max(keepdims=True))
        barg.store(argmax(ranked, keepdims=True) + o * BO)

    # The same with the split's tile count `kps` a runtime value: tileiras keeps the loop
    # and pipelines its loads through a ring of shared-memory stages instead of unrolling
    # KPS loads (which of the two keeps HBM busier is measured per shape); the checker
    # cannot bound k from a runtime count, so each load's tile index is checked on the
    # device (a compare per iteration).
    @cutile.entry(occupancy=occupancy)
    def gemv_norm_partial_loop(part: Mut[Tensor[f32, [1, "BO"]]], w: Tensor[bf16, [-1, -1]],
                               h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], kps: i32,
                               BO: Const[int], BK: Const[int]):
        s = block_id(0)
        o = block_id(1)
        ws = steps(w, o, s * kps, kps, ahead, BO, BK)  # ahead of a PDL wait
        acc = ahead_norm(zeros((BO, BK), f32), ws, h, nw, s * kps, kps, ahead, BK)
        for k in range(s * kps + ahead, s * kps + kps):
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), norm_x(h, nw, k, BK), acc)
        part.store(acc.sum(axis=1)[None, :])

    @cutile.entry(occupancy=occupancy)
    def gemv_add_loop(y: Atomic[Tensor[f32, [-1]]], w: Tensor[bf16, [-1, -1]],
                      x: Tensor[bf16, [-1]], kps: i32, BO: Const[int], BK: Const[int]):
        o = block_id(0)
        s = block_id(1)
        ws = steps(w, o, s * kps, kps, ahead, BO, BK)  # ahead of a PDL wait
        acc = ahead_row(zeros((BO, BK), f32), ws, x, s * kps, kps, ahead, BK)
        for k in range(s * kps + ahead, s * kps + kps):
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), row_x(x, k, BK), acc)
        atomic_add(y, o * BO + arange(BO, i32), acc.sum(axis=1), memory_order="relaxed")

    @cutile.entry(occupancy=occupancy)
    def gemv_swiglu(act: Mut[Tensor[bf16, ["BO"]]], w: Tensor[bf16, [-1, -1]],
                    h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], eps: f32, BO: Const[int],
                    BK: Const[int], HB: Const[int], UP: Const[int]):
        i = block_id(0)
        nt = num_tiles(w, 1, (BO, BK))
        gs = steps(w, i, 0, nt, ahead, BO, BK)       # ahead of a PDL wait
        us = steps(w, UP + i, 0, nt, ahead, BO, BK)
        g, u = ahead_swiglu(zeros((BO, BK), f32), zeros((BO, BK), f32), gs, us, h, nw, nt,
                            ahead, BK)
        for k in range(ahead, nt):
            xs = norm_x(h, nw, k, BK)
            g = fma(w.load_tile((BO, BK), (i, k), latency=latency).astype(f32), xs, g)
            u = fma(w.load_tile((BO, BK), (UP + i, k), latency=latency).astype(f32), xs, u)
        hv = h.load_tile((HB,), (0,))
        inv = rsqrt((hv * hv).sum() / h.shape[0] + eps)
        gs = g.sum(axis=1) * inv
        act.store((gs / (1.0 + exp(-gs)) * (u.sum(axis=1) * inv)).astype(bf16))

    @cutile.entry(occupancy=occupancy)
    def gemv_attn_add(y: Atomic[Tensor[f32, [-1]]], w: Tensor[bf16, [-1, -1]],
                      o: Tensor[f32, [-1, -1, -1]], m: Tensor[f32, [-1, -1, -1]],
                      sums: Tensor[f32, [-1, -1, -1]], BO: Const[int], BK: Const[int],
                      G: Const[int], D: Const[int], NS: Const[int]):
        ob = block_id(0)
        kvh = block_id(1)
        nk = G * D // BK                                  # BK divides D: one head per tile
        na = ahead if ahead < nk else nk
        ws = steps(w, ob, kvh * nk, nk, na, BO, BK)       # ahead of a PDL wait
        ms = m.load_tile((1, NS, G), (kvh, 0, 0), padding="neg_inf").reshape((NS, G))
        scale = exp2(ms - ms.max(axis=0, keepdims=True))                  # [NS, G]
        den = (scale * sums.load_tile((1, NS, G), (kvh, 0, 0)).reshape((NS, G))).sum(
            axis=0, keepdims=True)                                          # [1, G]
        acc = ahead_combined(zeros((BO, BK), f32), ws, o, scale, den, kvh, nk, na, BK, D, NS)
        for kk in range(ahead, nk):
            wt = w.load_tile((BO, BK), (ob, kvh * nk + kk), latency=latency)
            acc = fma(wt.astype(f32), combined_x(o, scale, den, kvh, kk, BK, D, NS), acc)
        atomic_add(y, ob * BO + arange(BO, i32), acc.sum(axis=1), memory_order="relaxed")

    return GemvKernels(gemv_norm_partial, gemv_add, lm_head_argmax, gemv_norm_partial_loop,
                       gemv_add_loop, gemv_swiglu, gemv_attn_add)

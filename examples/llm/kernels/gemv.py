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
def gemv_kernels(occupancy: int | None = None, latency: int | None = None) -> GemvKernels:
    """The GEMV kernels compiled with tileiras' `occupancy` hint (CTAs per SM; None leaves
    it to tileiras, which gives one CTA the whole register file) and the weight loads'
    `latency` hint (1-10; None: none; a higher one makes tileiras keep more stages of a
    loop's loads in flight)."""

    @cutile.entry(occupancy=occupancy)
    def gemv_norm_partial(part: Mut[Tensor[f32, [1, "BO"]]], w: Tensor[bf16, [-1, -1]],
                          h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], BO: Const[int],
                          BK: Const[int], KPS: Const[int]):
        s = block_id(0)
        o = block_id(1)
        w0 = w.load_tile((BO, BK), (o, s * KPS), latency=latency)   # ahead of a PDL wait
        acc = fma(w0.astype(f32), norm_x(h, nw, s * KPS, BK), zeros((BO, BK), f32))
        for kk in range(1, KPS):
            k = s * KPS + kk
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), norm_x(h, nw, k, BK), acc)
        part.store(acc.sum(axis=1)[None, :])

    @cutile.entry(occupancy=occupancy)
    def gemv_add(y: Atomic[Tensor[f32, [-1]]], w: Tensor[bf16, [-1, -1]],
                 x: Tensor[bf16, [-1]], BO: Const[int], BK: Const[int], KPS: Const[int]):
        o = block_id(0)
        s = block_id(1)
        w0 = w.load_tile((BO, BK), (o, s * KPS), latency=latency)   # ahead of a PDL wait
        acc = fma(w0.astype(f32), row_x(x, s * KPS, BK), zeros((BO, BK), f32))
        for kk in range(1, KPS):
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
        w0 = w.load_tile((BO, BK), (o, 0), latency=latency)          # ahead of a PDL wait
        acc = fma(w0.astype(f32), norm_x(h, nw, 0, BK), zeros((BO, BK), f32))
        for k in range(1, num_tiles(w, 1, (BO, BK))):
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
        w0 = w.load_tile((BO, BK), (o, s * kps), latency=latency)   # ahead of a PDL wait
        acc = fma(w0.astype(f32), norm_x(h, nw, s * kps, BK), zeros((BO, BK), f32))
        for k in range(s * kps + 1, s * kps + kps):
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), norm_x(h, nw, k, BK), acc)
        part.store(acc.sum(axis=1)[None, :])

    @cutile.entry(occupancy=occupancy)
    def gemv_add_loop(y: Atomic[Tensor[f32, [-1]]], w: Tensor[bf16, [-1, -1]],
                      x: Tensor[bf16, [-1]], kps: i32, BO: Const[int], BK: Const[int]):
        o = block_id(0)
        s = block_id(1)
        w0 = w.load_tile((BO, BK), (o, s * kps), latency=latency)   # ahead of a PDL wait
        acc = fma(w0.astype(f32), row_x(x, s * kps, BK), zeros((BO, BK), f32))
        for k in range(s * kps + 1, s * kps + kps):
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc = fma(wt.astype(f32), row_x(x, k, BK), acc)
        atomic_add(y, o * BO + arange(BO, i32), acc.sum(axis=1), memory_order="relaxed")

    @cutile.entry(occupancy=occupancy)
    def gemv_swiglu(act: Mut[Tensor[bf16, ["BO"]]], w: Tensor[bf16, [-1, -1]],
                    h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], eps: f32, BO: Const[int],
                    BK: Const[int], HB: Const[int], UP: Const[int]):
        i = block_id(0)
        g0 = w.load_tile((BO, BK), (i, 0), latency=latency)          # ahead of a PDL wait
        u0 = w.load_tile((BO, BK), (UP + i, 0), latency=latency)
        x0 = norm_x(h, nw, 0, BK)
        g = fma(g0.astype(f32), x0, zeros((BO, BK), f32))
        u = fma(u0.astype(f32), x0, zeros((BO, BK), f32))
        for k in range(1, num_tiles(w, 1, (BO, BK))):
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
        ms = m.load_tile((1, NS, G), (kvh, 0, 0), padding="neg_inf").reshape((NS, G))
        scale = exp2(ms - ms.max(axis=0, keepdims=True))                  # [NS, G]
        den = (scale * sums.load_tile((1, NS, G), (kvh, 0, 0)).reshape((NS, G))).sum(
            axis=0, keepdims=True)                                          # [1, G]
        acc = zeros((BO, BK), f32)
        for kk in range(G * D // BK):                     # BK divides D: one head per tile
            head = kk * BK // D
            part = o.load_tile((1, NS, BK), (kvh, 0, kk)).reshape((NS, BK))
            num = (extract(scale, (0, head), (NS, 1)) * part).sum(axis=0)
            x = (num / extract(den, (0, head), (1, 1)).reshape((1,))).astype(bf16)
            wt = w.load_tile((BO, BK), (ob, kvh * (G * D // BK) + kk), latency=latency)
            acc = fma(wt.astype(f32), x.astype(f32)[None, :], acc)
        atomic_add(y, ob * BO + arange(BO, i32), acc.sum(axis=1), memory_order="relaxed")

    return GemvKernels(gemv_norm_partial, gemv_add, lm_head_argmax, gemv_norm_partial_loop,
                       gemv_add_loop, gemv_swiglu, gemv_attn_add)

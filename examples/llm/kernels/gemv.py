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
  order). Used for the fused QKV projection and the fused gate/up projection.
- `gemv_add`: y += W x into an `Atomic` f32 vector: the output and down projections add
  straight into the residual stream h (every block adds its partial sums; atomics of
  different blocks do not race), which saves a reduction kernel per projection.
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
    f32,
    fma,
    i32,
    num_tiles,
    rsqrt,
    where,
    zeros,
)


@dataclass(frozen=True)
class GemvKernels:
    norm_partial: cutile.EntryKernel
    add: cutile.EntryKernel
    lm_head_argmax: cutile.EntryKernel
    norm_partial_loop: cutile.EntryKernel
    add_loop: cutile.EntryKernel


@functools.cache
def gemv_kernels(occupancy: int | None = None) -> GemvKernels:
    """The GEMV kernels compiled with tileiras' `occupancy` hint (CTAs per SM; None leaves
    it to tileiras, which gives one CTA the whole register file)."""

    @cutile.entry(occupancy=occupancy)
    def gemv_norm_partial(part: Mut[Tensor[f32, [1, "BO"]]], w: Tensor[bf16, [-1, -1]],
                          h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], BO: Const[int],
                          BK: Const[int], KPS: Const[int]):
        s = block_id(0)
        o = block_id(1)
        acc = zeros((BO, BK), f32)
        for kk in range(KPS):
            k = s * KPS + kk
            x = (h.load_tile((BK,), (k,)) * nw.load_tile((BK,), (k,)).astype(f32)).astype(bf16)
            acc = fma(w.load_tile((BO, BK), (o, k)).astype(f32), x.astype(f32)[None, :], acc)
        part.store(acc.sum(axis=1)[None, :])

    @cutile.entry(occupancy=occupancy)
    def gemv_add(y: Atomic[Tensor[f32, [-1]]], w: Tensor[bf16, [-1, -1]],
                 x: Tensor[bf16, [-1]], BO: Const[int], BK: Const[int], KPS: Const[int]):
        o = block_id(0)
        s = block_id(1)
        acc = zeros((BO, BK), f32)
        for kk in range(KPS):
            k = s * KPS + kk
            xs = x.load_tile((BK,), (k,)).astype(f32)
            acc = fma(w.load_tile((BO, BK), (o, k)).astype(f32), xs[None, :], acc)
        atomic_add(y, o * BO + arange(BO, i32), acc.sum(axis=1), memory_order="relaxed")

    @cutile.entry(occupancy=occupancy)
    def lm_head_argmax(logits: Mut[Tensor[f32, ["BO"]]], bmax: Mut[Tensor[f32, [1]]],
                       barg: Mut[Tensor[i32, [1]]], w: Tensor[bf16, [-1, -1]],
                       h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], eps: f32,
                       BO: Const[int], BK: Const[int], HB: Const[int]):
        o = block_id(0)
        acc = zeros((BO, BK), f32)
        for k in range(num_tiles(w, 1, (BO, BK))):
            x = (h.load_tile((BK,), (k,)) * nw.load_tile((BK,), (k,)).astype(f32)).astype(bf16)
            acc = fma(w.load_tile((BO, BK), (o, k)).astype(f32), x.astype(f32)[None, :], acc)
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
        acc = zeros((BO, BK), f32)
        for k in range(s * kps, s * kps + kps):
            x = (h.load_tile((BK,), (k,)) * nw.load_tile((BK,), (k,)).astype(f32)).astype(bf16)
            acc = fma(w.load_tile((BO, BK), (o, k)).astype(f32), x.astype(f32)[None, :], acc)
        part.store(acc.sum(axis=1)[None, :])

    @cutile.entry(occupancy=occupancy)
    def gemv_add_loop(y: Atomic[Tensor[f32, [-1]]], w: Tensor[bf16, [-1, -1]],
                      x: Tensor[bf16, [-1]], kps: i32, BO: Const[int], BK: Const[int]):
        o = block_id(0)
        s = block_id(1)
        acc = zeros((BO, BK), f32)
        for k in range(s * kps, s * kps + kps):
            xs = x.load_tile((BK,), (k,)).astype(f32)
            acc = fma(w.load_tile((BO, BK), (o, k)).astype(f32), xs[None, :], acc)
        atomic_add(y, o * BO + arange(BO, i32), acc.sum(axis=1), memory_order="relaxed")

    return GemvKernels(gemv_norm_partial, gemv_add, lm_head_argmax, gemv_norm_partial_loop,
                       gemv_add_loop)

"""The split QKV GEMV of `gemv.py` (`gemv_norm_partial`) that also writes the sum of
squares of the residual stream it reads, for the attention norm's factor.

The norm's factor rsqrt(mean(h^2) + eps) is applied after the projection, by the kernel
that adds the partial sums. Without help, every block of that kernel reads the whole h
(Qwen3-4B: 10 KB, a 16 KB tile) to compute it: from registers (no TMA) tileiras loads such
a tile in chunks into the same registers, one L2 round trip after another. Here block
(s, o) of the GEMV, which reads the h columns of split s anyway, also stores the sum of
their squares to ss[s, o] ([S, row tiles] f32, one element per block: the copies along o
are equal); the consumer adds the S values of column 0 (`load_ss`, `ss_scale`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cutile
from cutile.core import Const, Mut, Tensor, bf16, block_id, f32, fma, i32, minimum, rsqrt, zeros

from .gemv import check_ahead, weight_steps


@cutile.device
def load_ss(ss, SB, TMA):
    """The S partial sums of squares, ss[:, 0] as an (SB, 1) tile (SB: S rounded up to a
    power of two; the rows past S read as zeros)."""
    return ss.load_tile((SB, 1), (0, 0), allow_tma=TMA)


@cutile.device
def ss_scale(sst, eps, H):
    """rsqrt(mean(h^2) + eps) from the loaded sums of squares (`load_ss`); H is h's
    length."""
    return rsqrt(sst.sum() / H + eps)


@cutile.device
def step_ss(wt, h, nw, k, acc, sq, BK, live):
    """One column tile k: acc += wt bf16(h w_norm), sq += h^2 (the weight tile loaded by
    the caller, so a kernel's first ones can come ahead of its PDL wait); h read as zeros
    unless `live` (`gemv.unless_past`)."""
    hk = h.load_tile((BK,), (k,))
    hk = hk if live else hk * 0.0
    x = (hk * nw.load_tile((BK,), (k,)).astype(f32)).astype(bf16)
    return fma(wt.astype(f32), x.astype(f32)[None, :], acc), fma(hk, hk, sq)


@cutile.device
def ahead_ss(acc, sq, ws, h, nw, k, n, m, BK):
    """`step_ss` over `gemv.weight_steps`' m tiles ws (as `gemv.ahead_norm`: zero for a step
    past the split)."""
    w0, w1, w2, w3 = ws
    acc, sq = step_ss(w0, h, nw, k, acc, sq, BK, True)
    if m > 1:
        acc, sq = step_ss(w1, h, nw, k + minimum(1, n - 1), acc, sq, BK, n > 1)
    if m > 2:
        acc, sq = step_ss(w2, h, nw, k + minimum(2, n - 1), acc, sq, BK, n > 2)
    if m > 3:
        acc, sq = step_ss(w3, h, nw, k + minimum(3, n - 1), acc, sq, BK, n > 3)
    return acc, sq


@dataclass(frozen=True)
class GemvSsKernels:
    norm_partial_ss: cutile.EntryKernel
    norm_partial_ss_loop: cutile.EntryKernel


@functools.cache
def gemv_ss_kernels(occupancy: int | None = None, latency: int | None = None,
                    ahead: int = 1) -> GemvSsKernels:
    """As `gemv.gemv_kernels` (tileiras' `occupancy` hint, the weight loads' `latency`, the
    weight steps loaded `ahead` of anything else)."""
    check_ahead(ahead)
    steps = weight_steps(latency)

    @cutile.entry(occupancy=occupancy)
    def gemv_norm_partial_ss(part: Mut[Tensor[f32, [1, "BO"]]], ss: Mut[Tensor[f32, [1, 1]]],
                             w: Tensor[bf16, [-1, -1]], h: Tensor[f32, [-1]],
                             nw: Tensor[bf16, [-1]], BO: Const[int], BK: Const[int],
                             KPS: Const[int]):
        s = block_id(0)
        o = block_id(1)
        m = ahead if ahead < KPS else KPS
        ws = steps(w, o, s * KPS, KPS, m, BO, BK)    # ahead of a PDL wait
        acc, sq = ahead_ss(zeros((BO, BK), f32), zeros((BK,), f32), ws, h, nw, s * KPS, KPS,
                           m, BK)
        for kk in range(ahead, KPS):
            k = s * KPS + kk
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc, sq = step_ss(wt, h, nw, k, acc, sq, BK, True)
        part.store(acc.sum(axis=1)[None, :])
        ss.store(sq.sum(keepdims=True).reshape((1, 1)))

    # The split's tile count at run time (see `gemv.py`'s loop kernels: a pipelined loop,
    # each load's index checked on the device).
    @cutile.entry(occupancy=occupancy)
    def gemv_norm_partial_ss_loop(part: Mut[Tensor[f32, [1, "BO"]]],
                                  ss: Mut[Tensor[f32, [1, 1]]], w: Tensor[bf16, [-1, -1]],
                                  h: Tensor[f32, [-1]], nw: Tensor[bf16, [-1]], kps: i32,
                                  BO: Const[int], BK: Const[int]):
        s = block_id(0)
        o = block_id(1)
        ws = steps(w, o, s * kps, kps, ahead, BO, BK)  # ahead of a PDL wait
        acc, sq = ahead_ss(zeros((BO, BK), f32), zeros((BK,), f32), ws, h, nw, s * kps, kps,
                           ahead, BK)
        for k in range(s * kps + ahead, s * kps + kps):
            wt = w.load_tile((BO, BK), (o, k), latency=latency)
            acc, sq = step_ss(wt, h, nw, k, acc, sq, BK, True)
        part.store(acc.sum(axis=1)[None, :])
        ss.store(sq.sum(keepdims=True).reshape((1, 1)))

    return GemvSsKernels(gemv_norm_partial_ss, gemv_norm_partial_ss_loop)

"""The prefill's GEMMs on the tensor cores (bf16 operands, f32 accumulators), each with its
epilogue fused, in two schedules:

- tiled: block (m, j) owns output tile (m, j) (`block_id`);
- persistent: a fixed number of blocks (`Partition.persistent(n)`) walk the output tiles in
  the grouped order of `iter_indices(group=G)` (G tile rows at a time, so neighbouring
  blocks share rows of x and of W in L2), the schedule of `examples/persistent_gemm.py`.

W is [N, K] (Hugging Face's [out, in]); a tile of the product multiplies (BM, BK) tiles of x
with transposed (BN, BK) tiles of W (the same HGMMA as a [K, N] operand).

- `gemm_qkv`: the fused QKV projection with D-wide output tiles (one head each); the
  epilogue scales rows by the attention norm's rsqrt(mean(h^2) + eps), normalizes and
  rotates query and key heads (`qkv.head_norm`, `qkv.rope`) and stores bf16.
- `gemm_residual`: hs += x W^T into the f32 residual stream (the output and down
  projections; a tile reads and writes its own tile of hs).
- `gemm_swiglu`: gate and up projections in one loop (two accumulators, the up rows UP
  column tiles further down the fused [2 I, K] weight) and silu(g) * u in the epilogue,
  stored bf16.

How a kernel is compiled (tileiras' `occupancy`, `num_worker_warps`, `num_ctas` hints) is
the plan's (`plan.GemmTiles`), applied with `with_hints`; the loads' `latency` hint and the
schedule are part of the kernel body, so each (schedule, latency) is its own kernel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cutile
from cutile.core import Const, Mut, Tensor, bf16, block_id, exp, f32, mma, num_tiles, zeros

from .qkv import head_norm, rope


@dataclass(frozen=True)
class PrefillGemms:
    qkv: cutile.EntryKernel
    residual: cutile.EntryKernel
    swiglu: cutile.EntryKernel


@cutile.device
def qkv_epilogue(acc, inv, qnw, knw, cos, sin, eps, m, j, BM, D, NH, NKV):
    """Row scale, then per-head RMSNorm and RoPE for query (j < NH) and key heads."""
    y = acc * inv.load_tile((BM,), (m,))[:, None]
    c = cos.load_tile((BM, D // 2), (m, 0))
    s = sin.load_tile((BM, D // 2), (m, 0))
    if j < NH:
        y = rope(head_norm(y, qnw.load_tile((D,), (0,)), eps, D), c, s, D // 2)
    elif j < NH + NKV:
        y = rope(head_norm(y, knw.load_tile((D,), (0,)), eps, D), c, s, D // 2)
    return y.astype(bf16)


@cutile.device
def swiglu_epilogue(g, u, inv, m, BM):
    scale = inv.load_tile((BM,), (m,))[:, None]
    g = g * scale
    return (g / (1.0 + exp(-g)) * (u * scale)).astype(bf16)


@functools.cache
def prefill_gemms(persistent: bool = False, latency: int | None = None,
                  group: int = 8) -> PrefillGemms:
    """The three GEMMs in one schedule, their x and W loads with the `latency` hint (None:
    none; `group`: the persistent schedule's tile rows per group)."""
    return _persistent(latency, group) if persistent else _tiled(latency)


def _x_wt(latency: int | None) -> cutile.DeviceFunction:
    """acc + x[m rows] @ w[j rows]^T over all of K, in (BM, BK) and (BN, BK) tiles: the
    K loop every prefill GEMM but gate/up's shares (`latency`: the loads' hint)."""

    @cutile.device
    def x_wt(x, w, m, j, acc, BM, BN, BK):
        for k in range(num_tiles(x, 1, (BM, BK))):
            a = x.load_tile((BM, BK), (m, k), latency=latency)
            b = w.load_tile((BN, BK), (j, k), latency=latency)
            acc = mma(a, b.transpose(), acc)
        return acc

    return x_wt


def _tiled(latency: int | None) -> PrefillGemms:
    x_wt = _x_wt(latency)

    @cutile.entry
    def gemm_qkv(out: Mut[Tensor[bf16, ["BM", "D"]]], x: Tensor[bf16, [-1, -1]],
                 w: Tensor[bf16, [-1, -1]], inv: Tensor[f32, [-1]], qnw: Tensor[bf16, [-1]],
                 knw: Tensor[bf16, [-1]], cos: Tensor[f32, [-1, -1]],
                 sin: Tensor[f32, [-1, -1]], eps: f32, BM: Const[int], D: Const[int],
                 BK: Const[int], NH: Const[int], NKV: Const[int]):
        m = block_id(0)
        j = block_id(1)
        acc = x_wt(x, w, m, j, zeros((BM, D), f32), BM, D, BK)
        out.store(qkv_epilogue(acc, inv, qnw, knw, cos, sin, eps, m, j, BM, D, NH, NKV))

    @cutile.entry
    def gemm_residual(out: Mut[Tensor[f32, ["BM", "BN"]]], hs: Tensor[f32, [-1, -1]],
                      x: Tensor[bf16, [-1, -1]], w: Tensor[bf16, [-1, -1]], BM: Const[int],
                      BN: Const[int], BK: Const[int]):
        m = block_id(0)
        j = block_id(1)
        acc = x_wt(x, w, m, j, zeros((BM, BN), f32), BM, BN, BK)
        out.store(acc + hs.load_tile((BM, BN), (m, j)))

    @cutile.entry
    def gemm_swiglu(act: Mut[Tensor[bf16, ["BM", "BN"]]], x: Tensor[bf16, [-1, -1]],
                    w: Tensor[bf16, [-1, -1]], inv: Tensor[f32, [-1]], BM: Const[int],
                    BN: Const[int], BK: Const[int], UP: Const[int]):
        m = block_id(0)
        j = block_id(1)
        g = zeros((BM, BN), f32)
        u = zeros((BM, BN), f32)
        for k in range(num_tiles(x, 1, (BM, BK))):
            xs = x.load_tile((BM, BK), (m, k), latency=latency)
            g = mma(xs, w.load_tile((BN, BK), (j, k), latency=latency).transpose(), g)
            u = mma(xs, w.load_tile((BN, BK), (UP + j, k), latency=latency).transpose(), u)
        act.store(swiglu_epilogue(g, u, inv, m, BM))

    return PrefillGemms(gemm_qkv, gemm_residual, gemm_swiglu)


def _persistent(latency: int | None, group: int) -> PrefillGemms:
    x_wt = _x_wt(latency)

    @cutile.entry
    def gemm_qkv_persistent(out: Mut[Tensor[bf16, ["BM", "D"]]], x: Tensor[bf16, [-1, -1]],
                            w: Tensor[bf16, [-1, -1]], inv: Tensor[f32, [-1]],
                            qnw: Tensor[bf16, [-1]], knw: Tensor[bf16, [-1]],
                            cos: Tensor[f32, [-1, -1]], sin: Tensor[f32, [-1, -1]], eps: f32,
                            BM: Const[int], D: Const[int], BK: Const[int], NH: Const[int],
                            NKV: Const[int]):
        for idx in out.iter_indices(group=group):
            acc = zeros((BM, D), f32)
            acc = x_wt(x, w, idx[0], idx[1], acc, BM, D, BK)
            out.store(qkv_epilogue(acc, inv, qnw, knw, cos, sin, eps, idx[0], idx[1], BM, D,
                                   NH, NKV), index=idx)

    @cutile.entry
    def gemm_residual_persistent(out: Mut[Tensor[f32, ["BM", "BN"]]],
                                 hs: Tensor[f32, [-1, -1]], x: Tensor[bf16, [-1, -1]],
                                 w: Tensor[bf16, [-1, -1]], BM: Const[int], BN: Const[int],
                                 BK: Const[int]):
        for idx in out.iter_indices(group=group):
            acc = zeros((BM, BN), f32)
            acc = x_wt(x, w, idx[0], idx[1], acc, BM, BN, BK)
            out.store(acc + hs.load_tile((BM, BN), (idx[0], idx[1])), index=idx)

    @cutile.entry
    def gemm_swiglu_persistent(act: Mut[Tensor[bf16, ["BM", "BN"]]],
                               x: Tensor[bf16, [-1, -1]], w: Tensor[bf16, [-1, -1]],
                               inv: Tensor[f32, [-1]], BM: Const[int], BN: Const[int],
                               BK: Const[int], UP: Const[int]):
        for idx in act.iter_indices(group=group):
            g = zeros((BM, BN), f32)
            u = zeros((BM, BN), f32)
            for k in range(num_tiles(x, 1, (BM, BK))):
                xs = x.load_tile((BM, BK), (idx[0], k), latency=latency)
                wg = w.load_tile((BN, BK), (idx[1], k), latency=latency)
                wu = w.load_tile((BN, BK), (UP + idx[1], k), latency=latency)
                g = mma(xs, wg.transpose(), g)
                u = mma(xs, wu.transpose(), u)
            act.store(swiglu_epilogue(g, u, inv, idx[0], BM), index=idx)

    return PrefillGemms(gemm_qkv_persistent, gemm_residual_persistent, gemm_swiglu_persistent)

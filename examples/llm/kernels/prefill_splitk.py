"""The prefill's residual GEMMs (hs += x W^T: the output and down projections) with the
reduction over K split between blocks, each adding its partial tile into the f32 residual
stream with atomics (`Atomic` hs: partial sums of different blocks do not race).

Why: at Qwen3-4B the residual GEMMs have N = 2560 output columns, 160 output tiles of
256x128 at 2048 tokens; on 132 SMs (one such block each) that is 1.2 waves, the second
one a fifth full. Splitting K makes more, shorter work units that fill the waves:

- `gemm_residual_splitk`: block (m, j, s) adds x[m] W[J0 + j]^T over the k-steps
  [s KPS, (s + 1) KPS) (grid (tiles_m, columns, S)). Launched once over every column tile
  (J0 = 0) with the plan's S splits, or twice (`prefill_plan.GemmTiles.launches`): the
  column tiles that fill whole waves unsplit, then the rest split. Every tile index is
  proved in bounds by launch predicates, so the K loop has no device check and tileiras
  keeps its wgmma pipeline (sm_90: HGMMA with one group in flight, no spill).
- `gemm_residual_streamk`: a persistent grid of G blocks (grid (G,)), "data-parallel +
  stream-K": of T output tiles, the last T // G full waves are whole tiles (block b owns
  tiles SK + b + i G, all blocks in step), and the first SK = T % G tiles (the ragged wave)
  are shared out by k-steps: their SK x KT (tile, k-step) iterations, flattened tile-major,
  are cut into G equal contiguous ranges, one per block, which adds one partial tile per
  output tile its range touches. The checker cannot prove `t % tiles_m` and the clamped
  k range in bounds, so its loads carry device checks; on sm_90 their failure paths (calls)
  make tileiras serialize the HGMMAs (each waited for): measured as a candidate only.

Tiles are numbered with m fastest (t -> m = t % tiles_m, j = t // tiles_m): consecutive
blocks share a column tile of W and walk all row tiles of x.

The atomic add of a (BM, BN) f32 tile takes a pair of index tiles (rows (BM/2, 1),
columns (1, BN)); rows past M (a ragged last row tile) and columns past N are masked off
by the atomic itself, and the loads' zero padding adds nothing for a ragged K. tileiras
stages the accumulator through shared memory and adds 4 consecutive columns per
instruction (sm_90: REDG.E.ADD.F32x4.RN.STRONG.GPU, one per 16 bytes).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cutile
from cutile.core import (
    Atomic,
    Const,
    Tensor,
    arange,
    atomic_add,
    bf16,
    block_id,
    cdiv,
    f32,
    i32,
    maximum,
    minimum,
    mma,
    num_blocks,
    num_tiles,
    zeros,
)


@dataclass(frozen=True)
class AtomicResidual:
    splitk: cutile.EntryKernel
    streamk: cutile.EntryKernel


@cutile.device
def add_tile(hs, acc, m, j, BM, BN):
    """hs[m-th BM rows, j-th BN columns] += acc, atomically (relaxed: nothing is ordered
    after it inside the kernel; the launch's end publishes it). In two halves of BM / 2
    rows: one (BM, BN) atomic inside a loop (the persistent schedule) makes tileiras keep
    the whole tile's addresses live and spill the accumulator at 256x128; halves do not."""
    H = BM // 2
    cols = (j * BN + arange(BN, i32)).reshape((1, BN))
    rows = (m * BM + arange(H, i32)).reshape((H, 1))
    atomic_add(hs, (rows, cols), acc[0:H], memory_order="relaxed")
    atomic_add(hs, (rows + H, cols), acc[H:BM], memory_order="relaxed")


@functools.cache
def atomic_residual(latency: int | None = None) -> AtomicResidual:
    """The two schedules, their x and W loads with the `latency` hint (None: none)."""

    @cutile.device
    def x_wt_range(x, w, m, j, k0, k1, BM, BN, BK):
        """x[m rows] @ w[j rows]^T over the k-steps [k0, k1) of (BM, BK), (BN, BK) tiles."""
        acc = zeros((BM, BN), f32)
        for k in range(k0, k1):
            a = x.load_tile((BM, BK), (m, k), latency=latency)
            b = w.load_tile((BN, BK), (j, k), latency=latency)
            acc = mma(a, b.transpose(), acc)
        return acc

    @cutile.device
    def tile_add(hs, x, w, t, k0, k1, tm, tn, BM, BN, BK):
        """Tile t (m fastest) over the k-steps [k0, k1) added into hs (t < tm tn and
        0 <= k0 <= k1 <= kt by construction; the checker cannot prove `t % tm`, the
        clamped column tile and k in bounds, so the loads are checked on the device)."""
        m = t % tm
        j = minimum(t // tm, tn - 1)
        if k0 < k1:
            add_tile(hs, x_wt_range(x, w, m, j, k0, k1, BM, BN, BK), m, j, BM, BN)

    @cutile.entry
    def gemm_residual_splitk(hs: Atomic[Tensor[f32, [-1, -1]]], x: Tensor[bf16, [-1, -1]],
                             w: Tensor[bf16, [-1, -1]], J0: i32, KPS: i32, BM: Const[int],
                             BN: Const[int], BK: Const[int]):
        m = block_id(0)
        j = J0 + block_id(1)
        k0 = block_id(2) * KPS
        k1 = minimum(k0 + KPS, num_tiles(x, 1, (BM, BK)))
        if k0 < k1:
            add_tile(hs, x_wt_range(x, w, m, j, k0, k1, BM, BN, BK), m, j, BM, BN)

    @cutile.entry
    def gemm_residual_streamk(hs: Atomic[Tensor[f32, [-1, -1]]], x: Tensor[bf16, [-1, -1]],
                              w: Tensor[bf16, [-1, -1]], BM: Const[int], BN: Const[int],
                              BK: Const[int]):
        b = block_id(0)
        g = num_blocks(0)
        tm = num_tiles(x, 0, (BM, BK))
        tn = num_tiles(w, 0, (BN, BK))
        kt = num_tiles(x, 1, (BM, BK))
        sk = (tm * tn) % g                   # tiles shared out by k-steps
        # this block's share of the sk tiles' (tile, k-step) iterations: [i0, i1), which
        # touches the ns tiles from s0; then its whole tiles, one per wave, all blocks in
        # step. One loop over both: two loops (two K loops and epilogues in the code)
        # spill the 256x128 accumulator.
        i0 = b * sk * kt // g
        i1 = (b + 1) * sk * kt // g
        s0 = i0 // kt
        ns = cdiv(i1, kt) - s0
        for u in range(ns + (tm * tn) // g):
            t = sk + b + (u - ns) * g
            k0 = 0
            k1 = kt
            if u < ns:
                t = s0 + u
                k0 = maximum(i0 - t * kt, 0)
                k1 = minimum(i1 - t * kt, kt)
            tile_add(hs, x, w, t, k0, k1, tm, tn, BM, BN, BK)

    return AtomicResidual(gemm_residual_splitk, gemm_residual_streamk)

"""Prefill: the prompt's tokens through every layer at once, with batched GEMMs on the
tensor cores (`prefill_gemm`) and causal flash attention (`attention.attn_prefill`). The
numerics are the decode path's: the GEMM input of a normed projection is bf16(h * w_norm)
and the rows are scaled by rsqrt(mean(h^2) + eps) in the epilogue, so a token gives the
same hidden states either way, up to summation order. The row kernels here:

- `set_prompt`: the prompt into the token buffer (one tile) and pos = len(prompt) - 1.
- `embed_rows`: the prompt's embedding rows into the residual stream hs [T, hidden] (f32).
- `norm_prep`: per row, rsqrt(mean(h^2) + eps) and bf16(h * w_norm), whole rows in one
  tile (HB: the hidden size rounded up to a power of two, so Qwen3-4B's 2560 columns take
  a 4096-wide tile and one row per block keeps it in registers).
- `norm_prep_looped`: the same for BT rows per block walked in (BT, BK) column tiles,
  twice: once for the sum of squares (kept per lane, reduced once), once to scale and
  store through a sub-partition of the block's own tile (the second pass reads h from L2).
  Fewer, fuller blocks: one row per block left `norm_prep` at a quarter of the copy
  bandwidth at 2048 tokens of Qwen3-4B.
- `cache_fill`: the prompt's keys and values from the QKV buffer into the caches; block
  (h, m) owns rows [m BT, (m+1) BT) of head h, and blocks past the prompt write nothing.
"""

from __future__ import annotations

import cutile
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    bf16,
    block_id,
    f32,
    gather,
    i32,
    num_tiles,
    rsqrt,
    zeros,
)


@cutile.entry
def set_prompt(tokens: Mut[Tensor[i32, ["TS"]]], pos: Mut[Tensor[i32, [1]]],
               prompt: Tensor[i32, [-1]], TS: Const[int]):
    tokens.store(prompt.load_tile((TS,), (0,)))
    pos.store(zeros((1,), i32) + (prompt.shape[0] - 1))


@cutile.entry
def embed_rows(hs: Mut[Tensor[f32, ["BT", "BH"]]], table: Tensor[bf16, [-1, -1]],
               tokens: Tensor[i32, [-1]], BT: Const[int], BH: Const[int]):
    rows = tokens.load_tile((BT,), (block_id(0),))
    cols = block_id(1) * BH + arange(BH, i32)
    hs.store(gather(table, (rows[:, None], cols[None, :])).astype(f32))


@cutile.entry
def norm_prep(xw: Mut[Tensor[bf16, ["BT", "HB"]]], inv: Mut[Tensor[f32, ["BT"]]],
              hs: Tensor[f32, [-1, -1]], nw: Tensor[bf16, [-1]], eps: f32, BT: Const[int],
              HB: Const[int]):
    x = hs.load_tile((BT, HB), (block_id(0), 0))
    inv.store(rsqrt((x * x).sum(axis=1) / hs.shape[1] + eps))
    xw.store((x * nw.load_tile((HB,), (0,)).astype(f32)[None, :]).astype(bf16))


@cutile.entry
def norm_prep_looped(xw: Mut[Tensor[bf16, ["BT", "HB"]]], inv: Mut[Tensor[f32, ["BT"]]],
                     hs: Tensor[f32, [-1, -1]], nw: Tensor[bf16, [-1]], eps: f32,
                     BT: Const[int], HB: Const[int], BK: Const[int]):
    i = block_id(0)
    sq = zeros((BT, BK), f32)
    for j in range(num_tiles(hs, 1, (BT, BK))):
        x = hs.load_tile((BT, BK), (i, j))
        sq = sq + x * x
    inv.store(rsqrt(sq.sum(axis=1) / hs.shape[1] + eps))
    out = xw.partition_mut((BT, BK))
    for j in range(num_tiles(hs, 1, (BT, BK))):
        x = hs.load_tile((BT, BK), (i, j))
        out.store((x * nw.load_tile((BK,), (j,)).astype(f32)[None, :]).astype(bf16), (0, j))


@cutile.entry
def cache_fill(kc: Mut[Tensor[bf16, [1, "BT", "D"]]], vc: Mut[Tensor[bf16, [1, "BT", "D"]]],
               qkv: Tensor[bf16, [-1, -1]], BT: Const[int], D: Const[int], NH: Const[int],
               NKV: Const[int]):
    kvh = block_id(0)
    m = block_id(1)
    if m * BT < qkv.shape[0]:
        # `gather` (masked per element) rather than a tile load: the checker does not read
        # the branch condition, so a tile index of qkv past its rows would need a launch
        # check that the cache's grid fails
        rows = (m * BT + arange(BT, i32))[:, None]
        cols = arange(D, i32)[None, :]
        kc.store(gather(qkv, (rows, (NH + kvh) * D + cols)).reshape((1, BT, D)))
        vc.store(gather(qkv, (rows, (NH + NKV + kvh) * D + cols)).reshape((1, BT, D)))

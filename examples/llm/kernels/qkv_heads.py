"""The QKV finish of the decode step over many small blocks, built for latency.

`qkv.qkv_finish` runs one block per key/value head (8 on Qwen3-4B): each adds the S
partial-sum rows of G + 2 heads, and the step waits on 8 SMs. Here:

- `qkv_heads`: block (j, g) of a (KV heads, G) grid finishes query head j G + g, and (the
  same arithmetic in every block of the group, so no block waits on another) key and value
  head j; the block whose rows of the caches hold position `pos` writes the new key and
  value there. Each cache is partitioned [1, capacity / G, D] per block, so the row is a
  sub-tile of the block's own tile; its index is clamped into the tile (proved when
  compiled: no device check), and only the block whose rows contain `pos` stores. A
  position past the cache writes nothing here (the engine's positions stay below its
  capacity: the token store of each step checks pos + 1 on the device).
  The attention norm's factor comes from the sums of squares the QKV GEMV wrote
  (`gemv_ss`), not from h.
- `qkv_heads_new`: the same query heads, with the new key and value left in `kv_new` for
  the "ahead" path (appended to the cache after attention), and no load of the position.

Every load is issued before the first use of any (the partial sums, the sums of squares,
the norm weights, the step's cos and sin rows, which `embed_rope.embed_row_rope` wrote),
and with `TMA` False each goes straight into registers (no shared-memory staging, no
barrier wait on the copy engine): a small kernel's time is its chain of dependent memory
round trips, here one (nothing waits on the position but the cache row's store), and the
stores.
"""

from __future__ import annotations

import cutile
from cutile.core import Const, Mut, Tensor, bf16, block_id, cat, f32, i32

from .embed_rope import load_cs
from .gemv_ss import load_ss, ss_scale
from .qkv import head_norm, rope


@cutile.device
def load_head_sums(part, ss, qnw, knw, cs, qt, kvh, eps, QW, D, SB, H, NH, NKV, TMA):
    """What finishing key/value head `kvh` reads, every load issued before any arithmetic
    (they are in flight together): the projection's S partial-sum rows of the queries
    (column tile `qt` of QW columns), of the key and of the value; the q and k norm
    weights; the step's cos and sin rows; and the attention norm's factor from the sums
    of squares. Returns (queries, key, value, q weight, k weight, cos, sin, factor)."""
    qs = part.load_tile((SB, QW), (0, qt), allow_tma=TMA)
    ks = part.load_tile((SB, D), (0, NH + kvh), allow_tma=TMA)
    vs = part.load_tile((SB, D), (0, NH + NKV + kvh), allow_tma=TMA)
    qw = qnw.load_tile((D,), (0,), allow_tma=TMA)
    kw = knw.load_tile((D,), (0,), allow_tma=TMA)
    sst = load_ss(ss, SB, TMA)
    c, sn = load_cs(cs, D, TMA)
    return qs, ks, vs, qw, kw, c, sn, ss_scale(sst, eps, H)


@cutile.entry
def qkv_heads(q: Mut[Tensor[f32, [1, 1, "D"]]], kc: Mut[Tensor[bf16, [1, "R", "D"]]],
              vc: Mut[Tensor[bf16, [1, "R", "D"]]], part: Tensor[f32, [-1, -1]],
              ss: Tensor[f32, [-1, -1]], qnw: Tensor[bf16, [-1]], knw: Tensor[bf16, [-1]],
              cs: Tensor[f32, [-1, -1]], pos: Tensor[i32, [-1]], eps: f32, G: Const[int],
              D: Const[int], R: Const[int], H: Const[int], NH: Const[int], NKV: Const[int],
              SB: Const[int], TMA: Const[bool]):
    kvh = block_id(0)
    g = block_id(1)
    t = pos.load_tile((1,), (0,), allow_tma=TMA).item()
    qs, ks, vs, qw, kw, c, sn, inv = load_head_sums(part, ss, qnw, knw, cs, kvh * G + g, kvh,
                                                    eps, D, D, SB, H, NH, NKV, TMA)
    qh = head_norm(qs.sum(axis=0, keepdims=True) * inv, qw, eps, D)
    q.store(rope(qh, c, sn, D // 2).reshape((1, 1, D)), allow_tma=TMA)
    if t // R == g:                       # this block's rows of the caches hold position t
        r = max(min(t - g * R, R - 1), 0)         # == t - g R; the clamp is the proof
        kh = head_norm(ks.sum(axis=0, keepdims=True) * inv, kw, eps, D)
        krow = kc.partition_mut((1, 1, D))
        krow.store(rope(kh, c, sn, D // 2).astype(bf16).reshape((1, 1, D)), (0, r, 0),
                   allow_tma=TMA)
        vrow = vc.partition_mut((1, 1, D))
        vrow.store((vs.sum(axis=0, keepdims=True) * inv).astype(bf16).reshape((1, 1, D)),
                   (0, r, 0), allow_tma=TMA)


@cutile.entry
def qkv_heads_new(q: Mut[Tensor[f32, [1, 1, "D"]]], kv_new: Mut[Tensor[bf16, [1, 1, "D2"]]],
                  part: Tensor[f32, [-1, -1]], ss: Tensor[f32, [-1, -1]],
                  qnw: Tensor[bf16, [-1]], knw: Tensor[bf16, [-1]], cs: Tensor[f32, [-1, -1]],
                  eps: f32, G: Const[int], D: Const[int], D2: Const[int], H: Const[int],
                  NH: Const[int], NKV: Const[int], SB: Const[int], TMA: Const[bool]):
    """`qkv_heads` for the "ahead" path: the new key and value go to `kv_new` [KV, G, 2 D]
    (block (j, 0) stores key | value of kv head j in its own tile), not into the cache, so
    the kernel after it may read the cache ahead of its PDL wait; `attn_combine_cache`
    appends them to the cache after attention. Reads no position."""
    kvh = block_id(0)
    g = block_id(1)
    qs, ks, vs, qw, kw, c, sn, inv = load_head_sums(part, ss, qnw, knw, cs, kvh * G + g, kvh,
                                                    eps, D, D, SB, H, NH, NKV, TMA)
    qh = head_norm(qs.sum(axis=0, keepdims=True) * inv, qw, eps, D)
    q.store(rope(qh, c, sn, D // 2).reshape((1, 1, D)), allow_tma=TMA)
    if g == 0:
        kh = rope(head_norm(ks.sum(axis=0, keepdims=True) * inv, kw, eps, D), c, sn, D // 2)
        vh = vs.sum(axis=0, keepdims=True) * inv
        kv_new.store(cat((kh.astype(bf16), vh.astype(bf16)), axis=1).reshape((1, 1, D2)),
                     allow_tma=TMA)

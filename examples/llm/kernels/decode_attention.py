"""Decode attention and its combine built for latency: the same flash-decoding arithmetic as
`attention.py` (`attn_decode`, `attn_combine`), with fewer dependent memory round trips
per block and, in one variant, one kernel less per layer.

A decode step's small kernels move a few KB each, so their time is the launch plus the
chain of dependent round trips to L2 inside a block, not bandwidth. Here every load a block
needs is issued before the first arithmetic on any of them (only what waits on the
position, the key and value tiles, comes one round trip later), and with `TMA` False
the small loads and stores go straight between registers and memory (no staging in shared
memory behind a copy-engine barrier). `KV_TMA` does the same for the key and value tiles.
The step's cos and sin rows come from `embed_rope.embed_row_rope` (read once per step), so
the finish waits on no load of the position.

- `attn_decode_q`: `attn.attn_decode` with q from the buffer `qkv_heads` wrote.
- `attn_decode_qkv`: `qkv_heads` and attention in one kernel. Block (j, s) adds the QKV
  projection's partial sums of its kv head's G query heads, key and value itself (the
  attention norm's factor from the GEMV's sums of squares, per-head RMSNorm, RoPE), runs
  the online softmax over the cache's keys *below* pos (the cache is a read-only input
  here: another block of this launch reads every row), and the block whose share holds
  position pos adds the new key and value from registers, rounded to bf16 as the cache
  holds them. Block (j, 0) also writes them to `kv_new` [KV, NS, 2 D] (its own tile):
  `attn_combine_cache`, the next kernel, puts them in the cache.
- `attn_decode_ahead` (the "ahead" path): `attn_decode_q` whose first loads, the position
  and the share's first key and value tiles, may run ahead of the PDL wait; the new key
  and value come from `kv_new` (`qkv_heads.qkv_heads_new`), added by the share holding pos
  as in `attn_decode_qkv`, and `attn_combine_cache` appends them to the cache.
- `attn_combine_heads`: `attn.attn_combine` on a (KV heads, G D / DC) grid, with every
  load first.
- `attn_combine_cache`: the same, and the block whose rows of the caches ([1, R, D] per
  block, R = capacity / (G D / DC)) hold position pos stores the new key and value row
  (the sub-tile index clamped into the own tile: proved when compiled, no device check).

Folding the combine into the attention kernel's last block is not done: a safe kernel may
not read the other blocks' outputs of the same launch (they are `Mut` tiles of theirs), and
an `Atomic` exchange of every partial output (read back by the last block with atomics,
after a counter) would serialize 16 K atomic reads in one block, no faster than the ~1 us
launch it saves; `gemv.gemv_attn_add` folds it into the output projection instead
(`Plan.attn_fused`).
"""

from __future__ import annotations

import math

import cutile
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    bf16,
    block_id,
    cat,
    cdiv,
    exp2,
    f32,
    full,
    i32,
    maximum,
    where,
    zeros,
)

from .attention import (
    DECODE_OCCUPANCY,
    LOG2E,
    attend_cache,
    attend_tile,
    kv_tiles,
    repeat_rows,
    split_bf16,
)
from .qkv import head_norm, rope
from .qkv_heads import load_head_sums


@cutile.entry(occupancy=DECODE_OCCUPANCY)
def attn_decode_q(o: Mut[Tensor[f32, [1, 1, "GD"]]], m_out: Mut[Tensor[f32, [1, 1, "G"]]],
                  l_out: Mut[Tensor[f32, [1, 1, "G"]]], q: Tensor[f32, [-1, -1]],
                  kc: Tensor[bf16, [-1, -1, -1]], vc: Tensor[bf16, [-1, -1, -1]],
                  pos: Tensor[i32, [-1]], scale: f32, GD: Const[int], G: Const[int],
                  D: Const[int], BS: Const[int], M: Const[int], NS: Const[int],
                  TMA: Const[bool], KV_TMA: Const[bool], EXACT: Const[bool],
                  COUNTED: Const[bool]):
    kvh = block_id(0)
    s = block_id(1)
    n = pos.load_tile((1,), (0,), allow_tma=TMA).item() + 1       # keys 0..pos
    qs = q.load_tile((G, D), (kvh, 0), allow_tma=TMA) * (scale * LOG2E)
    m_i, l_i, acc = attend_cache(repeat_rows(qs, M, G, D), kc, vc, kvh, s, n, BS, M, D, NS,
                                 KV_TMA, EXACT, COUNTED)
    store_share(o, m_out, l_out, m_i, l_i, acc, GD, G, TMA)


@cutile.entry(occupancy=DECODE_OCCUPANCY)
def attn_decode_qkv(o: Mut[Tensor[f32, [1, 1, "GD"]]], m_out: Mut[Tensor[f32, [1, 1, "G"]]],
                    l_out: Mut[Tensor[f32, [1, 1, "G"]]],
                    kv_new: Mut[Tensor[bf16, [1, 1, "D2"]]], part: Tensor[f32, [-1, -1]],
                    ss: Tensor[f32, [-1, -1]], qnw: Tensor[bf16, [-1]],
                    knw: Tensor[bf16, [-1]], cs: Tensor[f32, [-1, -1]],
                    kc: Tensor[bf16, [-1, -1, -1]],
                    vc: Tensor[bf16, [-1, -1, -1]], pos: Tensor[i32, [-1]], scale: f32,
                    eps: f32, GD: Const[int], G: Const[int], D: Const[int], D2: Const[int],
                    BS: Const[int], M: Const[int], NS: Const[int], H: Const[int],
                    NH: Const[int], NKV: Const[int], SB: Const[int], TMA: Const[bool],
                    KV_TMA: Const[bool], EXACT: Const[bool], COUNTED: Const[bool]):
    kvh = block_id(0)
    s = block_id(1)
    t = pos.load_tile((1,), (0,), allow_tma=TMA).item()
    # the projection's partial sums of this group's heads, all in flight together
    qp, kp, vp, qw, kw, c, sn, inv = load_head_sums(part, ss, qnw, knw, cs, kvh, kvh, eps,
                                                    GD, D, SB, H, NH, NKV, TMA)
    qh = head_norm(qp.sum(axis=0, keepdims=True).reshape((G, D)) * inv, qw, eps, D)
    qs = repeat_rows(rope(qh, c, sn, D // 2) * (scale * LOG2E), M, G, D)
    kb = rope(head_norm(kp.sum(axis=0, keepdims=True) * inv, kw, eps, D), c, sn,
              D // 2).astype(bf16)
    vb = (vp.sum(axis=0, keepdims=True) * inv).astype(bf16)
    if s == 0:
        kv_new.store(cat((kb, vb), axis=1).reshape((1, 1, D2)), allow_tma=TMA)
    m_i, l_i, acc = attend_cache(qs, kc, vc, kvh, s, t, BS, M, D, NS, KV_TMA, EXACT, COUNTED)
    finish_share(o, m_out, l_out, qs, kb, vb, m_i, l_i, acc, s, t, GD, G, BS, NS, TMA)


@cutile.device
def store_share(o, m_out, l_out, m_i, l_i, acc, GD, G, TMA):
    """A share's unnormalized output, running maximum and sum for its G query heads (the
    rows past G of the tensor-core tile are copies, dropped)."""
    o.store(acc[:G].reshape((1, 1, GD)), allow_tma=TMA)
    m_out.store(m_i[:G].reshape((1, 1, G)), allow_tma=TMA)
    l_out.store(l_i[:G].reshape((1, 1, G)), allow_tma=TMA)


@cutile.device
def finish_share(o, m_out, l_out, qs, kn, vn, m_i, l_i, acc, s, t, GD, G, BS, NS, TMA):
    """The share that holds position t adds the new key and value (not in the cache it
    read); then every share stores its part."""
    if s == (t // BS) % NS:
        m_i, l_i, acc = add_new_key(qs, kn, vn, m_i, l_i, acc)
    store_share(o, m_out, l_out, m_i, l_i, acc, GD, G, TMA)


@cutile.device
def add_new_key(qs, kn, vn, m_i, l_i, acc):
    """The online softmax's step for one more key and value (rows (1, D), bf16 as the cache
    holds them), exact in f32: what the share holding the new position adds."""
    sc = (qs * kn.astype(f32)).sum(axis=1, keepdims=True)          # [M, 1]
    m_new = maximum(m_i, sc)
    alpha = exp2(m_i - m_new)
    p = exp2(sc - m_new)
    return m_new, l_i * alpha + p, acc * alpha + p * vn.astype(f32)


@cutile.entry(occupancy=DECODE_OCCUPANCY)
def attn_decode_ahead(o: Mut[Tensor[f32, [1, 1, "GD"]]], m_out: Mut[Tensor[f32, [1, 1, "G"]]],
                      l_out: Mut[Tensor[f32, [1, 1, "G"]]], pos: Tensor[i32, [-1]],
                      kc: Tensor[bf16, [-1, -1, -1]], vc: Tensor[bf16, [-1, -1, -1]],
                      q: Tensor[f32, [-1, -1]], kv_new: Tensor[bf16, [-1, -1, -1]],
                      scale: f32, GD: Const[int], G: Const[int], D: Const[int],
                      BS: Const[int], M: Const[int], NS: Const[int], TMA: Const[bool],
                      KV_TMA: Const[bool], EXACT: Const[bool]):
    """Decode attention whose first memory accesses are the position and the share's first
    key and value tiles: with `pdl_early=("pos", "kc", "vc")` they are loaded ahead of the
    PDL wait, while `qkv_heads_new` still runs (it writes neither; the cache row of the new
    position is appended after attention, by `attn_combine_cache`, and the position by the
    previous step's sampling). The keys below pos come from the cache, the new key and
    value from `kv_new`, added exactly by the share that holds position pos."""
    kvh = block_id(0)
    s = block_id(1)
    t = pos.load_tile((1,), (0,), allow_tma=TMA).item()            # keys 0..t-1 cached
    cap = min(cdiv(kc.shape[1], BS), cdiv(vc.shape[1], BS))
    kt, vs = kv_tiles(kc, vc, kvh, s, cap, BS, D, KV_TMA)            # the share's first tile
    qs = repeat_rows(q.load_tile((G, D), (kvh, 0), allow_tma=TMA) * (scale * LOG2E), M, G, D)
    kn = kv_new.load_tile((1, 1, D), (kvh, 0, 0), allow_tma=TMA).reshape((1, D))
    vn = kv_new.load_tile((1, 1, D), (kvh, 0, 1), allow_tma=TMA).reshape((1, D))
    q_hi, q_lo = split_bf16(qs)
    m_i = full((M, 1), -math.inf, f32)
    l_i = zeros((M, 1), f32)
    acc = zeros((M, D), f32)
    if s * BS < t:
        m_i, l_i, acc = attend_tile(q_hi, q_lo, kt, vs, s, t, m_i, l_i, acc, BS, M, EXACT)
    for i in range(1, cdiv(cap, NS)):
        j = i * NS + s
        if j * BS < t:
            kj, vj = kv_tiles(kc, vc, kvh, j, cap, BS, D, KV_TMA)
            m_i, l_i, acc = attend_tile(q_hi, q_lo, kj, vj, j, t, m_i, l_i, acc, BS, M, EXACT)
    finish_share(o, m_out, l_out, qs, kn, vn, m_i, l_i, acc, s, t, GD, G, BS, NS, TMA)


@cutile.device
def combine_columns(o, m, sums, kvh, c, DC, G, D, NS, TMA, O_TMA):
    """Columns [c DC, (c + 1) DC) of kv head kvh's G D attention outputs: the NS shares
    rescaled to their common maximum, added, divided by the total sum; bf16 (DC,). The
    shares' outputs are needed only after the maxima's reduction, and loaded into registers
    tileiras issues them there, a second round trip; `O_TMA` loads them through TMA, which
    a producer warp issues at the start."""
    os_ = o.load_tile((1, NS, DC), (kvh, 0, c), allow_tma=O_TMA).reshape((NS, DC))
    ms = m.load_tile((1, NS, G), (kvh, 0, 0), padding="neg_inf", allow_tma=TMA).reshape((NS, G))
    sa = sums.load_tile((1, NS, G), (kvh, 0, 0), allow_tma=TMA).reshape((NS, G))
    mine = arange(G, i32)[None, :] == c // (D // DC)              # this chunk's query head
    mg = where(mine, ms, -math.inf).max(axis=1, keepdims=True)       # [NS, 1]
    sg = where(mine, sa, 0.0)
    w = exp2(mg - mg.max(axis=0, keepdims=True))                    # [NS, 1]
    den = (w * sg.sum(axis=1, keepdims=True)).sum(axis=0)           # [1]
    return ((w * os_).sum(axis=0) / den).astype(bf16)


@cutile.entry
def attn_combine_heads(out: Mut[Tensor[bf16, [1, 1, "DC"]]], o: Tensor[f32, [-1, -1, -1]],
                       m: Tensor[f32, [-1, -1, -1]], sums: Tensor[f32, [-1, -1, -1]],
                       DC: Const[int], G: Const[int], D: Const[int], NS: Const[int],
                       TMA: Const[bool], O_TMA: Const[bool]):
    out.store(combine_columns(o, m, sums, block_id(0), block_id(1), DC, G, D, NS, TMA,
                              O_TMA).reshape((1, 1, DC)), allow_tma=TMA)


@cutile.entry
def attn_combine_cache(out: Mut[Tensor[bf16, [1, 1, "DC"]]],
                       kc: Mut[Tensor[bf16, [1, "R", "D"]]],
                       vc: Mut[Tensor[bf16, [1, "R", "D"]]], o: Tensor[f32, [-1, -1, -1]],
                       m: Tensor[f32, [-1, -1, -1]], sums: Tensor[f32, [-1, -1, -1]],
                       kv_new: Tensor[bf16, [-1, -1, -1]], pos: Tensor[i32, [-1]],
                       DC: Const[int], G: Const[int], D: Const[int], NS: Const[int],
                       R: Const[int], TMA: Const[bool], O_TMA: Const[bool]):
    kvh = block_id(0)
    c = block_id(1)
    t = pos.load_tile((1,), (0,), allow_tma=TMA).item()
    kn = kv_new.load_tile((1, 1, D), (kvh, 0, 0), allow_tma=TMA)     # issued with the rest
    vn = kv_new.load_tile((1, 1, D), (kvh, 0, 1), allow_tma=TMA)
    out.store(combine_columns(o, m, sums, kvh, c, DC, G, D, NS, TMA, O_TMA).reshape(
        (1, 1, DC)), allow_tma=TMA)
    if t // R == c:                      # this block's rows of the caches hold position t
        r = max(min(t - c * R, R - 1), 0)              # == t - c R; the clamp is the proof
        kc.partition_mut((1, 1, D)).store(kn, (0, r, 0), allow_tma=TMA)
        vc.partition_mut((1, 1, D)).store(vn, (0, r, 0), allow_tma=TMA)

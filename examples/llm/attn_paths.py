"""The decode step's attention on the latency paths (`Plan.attn_path`), from the QKV
projection to the combined attention output in `engine.attn` (the output projection's
input):

The step starts with `embed_row_rope` (the embedding row, and the position's cos and sin
row for every layer's finish). Per layer:

- "heads": the QKV GEMV (with h's sums of squares, `gemv_ss`), `qkv_heads` (a block per
  query head: q, and the new key and value into the cache), `attn_decode_q`,
  `attn_combine_heads`: four kernels, as the "split" path; three with `Plan.attn_fused`
  (the combine inside the output projection, `gemv_attn_add`).
- "fused": the QKV GEMV, `attn_decode_qkv` (q, k and v finished inside attention, the new
  key and value used from registers), `attn_combine_cache` (the combine, and the new key
  and value into the cache): three kernels.
- "ahead": as "heads", but `qkv_heads_new` leaves the new key and value in `kv_new` and
  `attn_combine_cache` appends them to the cache after attention, so `attn_decode_ahead`
  reads nothing its predecessor writes before the query: with PDL it loads the position and
  its share's first key and value tiles ahead of the wait (`kernels/pdl.py`), while
  `qkv_heads_new` still runs. Four kernels.

Query, attention output and cache buffers are the engine's; "heads" and "fused" partition
views of them whose tile grid matches the kernel's grid (q as [KV, G, D], the attention
output as [KV, G D / DC, DC], a cache as [KV, capacity, D] in R-row blocks).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from .kernels import decode_attention as da
from .kernels.embed_rope import embed_row_rope
from .kernels.gemv_ss import gemv_ss_kernels
from .kernels.qkv_heads import qkv_heads, qkv_heads_new
from .plan import pow2_at_least


@functools.cache
def hinted(kernel: Any, warps: int | None = None, occupancy: int | None = None) -> Any:
    """`kernel` with tileiras' `num_worker_warps` and `occupancy` hints (`Plan.small_warps`,
    `Plan.attn_warps`, `Plan.attn_occupancy`; None: the kernel's own), built once."""
    hints = {k: v for k, v in (("num_worker_warps", warps), ("occupancy", occupancy))
             if v is not None}
    return kernel.with_hints(**hints) if hints else kernel


def attention(eng: Any, i: int, lw: Any) -> None:
    """Layer i's attention, from h to `eng.attn`."""
    qkv_projection(eng, lw)
    if eng.plan.attn_path == "heads":
        heads(eng, i, lw)
    elif eng.plan.attn_path == "ahead":
        ahead(eng, i, lw)
    else:
        fused(eng, i, lw)


def embed(eng: Any) -> None:
    """The step's first kernel: h = embedding[tokens[pos]], and the cos/sin row of pos."""
    from .model import out

    p = eng.plan
    eng._run(hinted(embed_row_rope, warps=p.small_warps), out(eng.h, p.embed_tile),
             out(eng.rope_cs, 1, eng.cfg.head_dim), eng.w.embed, eng.tokens, eng.pos, eng.cos,
             eng.sin, TMA=p.small_tma)


def qkv_projection(eng: Any, lw: Any) -> None:
    """The split QKV GEMV's partial sums, and the sums of squares of h per split."""
    from .model import out

    t = eng.plan.qkv
    g = gemv_ss_kernels(t.occupancy, t.latency, eng.plan.early_of("qkv"))
    outs = (out(eng.qkv_part, 1, t.BO), out(eng.qkv_ss, 1, 1))
    if t.loop:
        eng._run(g.norm_partial_ss_loop, *outs, lw.wqkv, eng.h, lw.attn_norm, t.KPS, BK=t.BK)
    else:
        eng._run(g.norm_partial_ss, *outs, lw.wqkv, eng.h, lw.attn_norm, BK=t.BK, KPS=t.KPS)


def _shape(eng: Any) -> dict[str, int]:
    c, p = eng.cfg, eng.plan
    return {"G": c.group, "D": c.head_dim, "KV": c.num_kv_heads,
            "SB": pow2_at_least(p.qkv.splits(c.hidden_size)),
            "per": c.group * c.head_dim // p.combine_chunk}


def heads(eng: Any, i: int, lw: Any) -> None:
    from .model import out

    c, p = eng.cfg, eng.plan
    s = _shape(eng)
    g, d, kv, cap = s["G"], s["D"], s["KV"], eng.capacity
    eng._run(hinted(qkv_heads, warps=p.small_warps), out(eng.q, 1, 1, d, view=(kv, g, d)),
             out(eng.k_cache[i], 1, cap // g, d), out(eng.v_cache[i], 1, cap // g, d),
             eng.qkv_part, eng.qkv_ss, lw.q_norm, lw.k_norm, eng.rope_cs, eng.pos,
             c.rms_norm_eps, G=g, H=c.hidden_size, NH=c.num_heads, NKV=kv, SB=s["SB"],
             TMA=p.small_tma)
    eng._run(hinted(da.attn_decode_q, warps=p.attn_warps, occupancy=p.attn_occupancy),
             out(eng.attn_o, 1, 1, g * d), out(eng.attn_m, 1, 1, g),
             out(eng.attn_l, 1, 1, g), eng.q, eng.k_cache[i], eng.v_cache[i], eng.pos,
             1.0 / math.sqrt(d), D=d, BS=p.attn_bs, M=max(16, g), NS=p.attn_splits,
             TMA=p.small_tma, KV_TMA=p.kv_tma, EXACT=p.attn_exact,
             COUNTED=p.attn_counted)
    if p.attn_fused:             # the output projection combines the shares itself
        return
    dc = p.combine_chunk
    eng._run(hinted(da.attn_combine_heads, warps=p.small_warps),
             out(eng.attn, 1, 1, dc, view=(kv, s["per"], dc)), eng.attn_o, eng.attn_m,
             eng.attn_l, G=g, D=d, NS=p.attn_splits, TMA=p.small_tma, O_TMA=p.combine_o_tma)


def ahead(eng: Any, i: int, lw: Any) -> None:
    from .model import out

    c, p = eng.cfg, eng.plan
    s = _shape(eng)
    g, d, kv = s["G"], s["D"], s["KV"]
    eng._run(hinted(qkv_heads_new, warps=p.small_warps), out(eng.q, 1, 1, d, view=(kv, g, d)),
             out(eng.kv_new, 1, 1, 2 * d), eng.qkv_part, eng.qkv_ss, lw.q_norm, lw.k_norm,
             eng.rope_cs, c.rms_norm_eps, G=g, D2=2 * d, H=c.hidden_size, NH=c.num_heads,
             NKV=kv, SB=s["SB"], TMA=p.small_tma)
    eng._run(hinted(da.attn_decode_ahead, warps=p.attn_warps, occupancy=p.attn_occupancy),
             out(eng.attn_o, 1, 1, g * d), out(eng.attn_m, 1, 1, g),
             out(eng.attn_l, 1, 1, g), eng.pos, eng.k_cache[i], eng.v_cache[i], eng.q,
             eng.kv_new, 1.0 / math.sqrt(d), D=d, BS=p.attn_bs, M=max(16, g),
             NS=p.attn_splits, TMA=p.small_tma, KV_TMA=p.kv_tma, EXACT=p.attn_exact)
    combine_cache(eng, i)


def combine_cache(eng: Any, i: int) -> None:
    """The shares combined into `eng.attn`, and the new key and value (`kv_new`) appended to
    layer i's caches at pos ("fused" and "ahead")."""
    from .model import out

    p = eng.plan
    s = _shape(eng)
    g, d, kv, per = s["G"], s["D"], s["KV"], s["per"]
    dc, rows = p.combine_chunk, eng.capacity // per
    eng._run(hinted(da.attn_combine_cache, warps=p.small_warps),
             out(eng.attn, 1, 1, dc, view=(kv, per, dc)), out(eng.k_cache[i], 1, rows, d),
             out(eng.v_cache[i], 1, rows, d), eng.attn_o, eng.attn_m, eng.attn_l, eng.kv_new,
             eng.pos, G=g, D=d, NS=p.attn_splits, TMA=p.small_tma, O_TMA=p.combine_o_tma)


def fused(eng: Any, i: int, lw: Any) -> None:
    from .model import out

    c, p = eng.cfg, eng.plan
    s = _shape(eng)
    g, d, kv = s["G"], s["D"], s["KV"]
    eng._run(hinted(da.attn_decode_qkv, warps=p.attn_warps, occupancy=p.attn_occupancy),
             out(eng.attn_o, 1, 1, g * d), out(eng.attn_m, 1, 1, g),
             out(eng.attn_l, 1, 1, g), out(eng.kv_new, 1, 1, 2 * d), eng.qkv_part,
             eng.qkv_ss, lw.q_norm, lw.k_norm, eng.rope_cs, eng.k_cache[i],
             eng.v_cache[i], eng.pos, 1.0 / math.sqrt(d), c.rms_norm_eps, D=d,
             BS=p.attn_bs, M=max(16, g), NS=p.attn_splits, H=c.hidden_size,
             NH=c.num_heads, NKV=kv, SB=s["SB"], TMA=p.small_tma, KV_TMA=p.kv_tma,
             EXACT=p.attn_exact, COUNTED=p.attn_counted)
    combine_cache(eng, i)


def check(cfg: Any, plan: Any, capacity: int) -> None:
    """What the latency paths need of the shapes (ValueError otherwise)."""
    if plan.attn_path == "split":
        return
    if plan.attn_path not in ("heads", "fused", "ahead"):
        raise ValueError(f"unknown attention path {plan.attn_path!r}: split, heads, fused or "
                         "ahead")
    g = cfg.group
    if g & (g - 1):
        raise ValueError(f"the {plan.attn_path} path needs a power-of-two group, got {g}")
    per = g * cfg.head_dim // plan.combine_chunk
    parts = g if plan.attn_path == "heads" else per       # who writes the cache rows
    if capacity % parts:
        raise ValueError(f"a cache of {capacity} positions does not split into {parts} "
                         f"row blocks")
    if plan.attn_fused and plan.attn_path in ("fused", "ahead"):
        raise ValueError(f"the {plan.attn_path} path writes the cache in its combine: "
                         "attn_fused must be off")

"""The first kernel of a decode step on the latency paths (`Plan.attn_path` "heads" and
"fused"): `decode_misc.embed_row`, and the cos and sin rows of the step's position.

Every layer's QKV finish rotates q and k by the angles of position pos, read from the
tables at row pos: a load that waits for the load of pos, one L2 round trip after another,
in 36 kernels per step. `embed_row_rope` reads them once per step, in the kernel that
already waits for pos (for the token and its embedding row, the same two round trips), and
writes them to `cs` [blocks, D] (cos in the first D / 2 columns, sin in the next: block j
writes its own row; the consumers read row 0), which the finish kernels load with
everything else, waiting on nothing.
"""

from __future__ import annotations

import cutile
from cutile.core import Const, Mut, Tensor, arange, bf16, block_id, cat, f32, gather, i32


@cutile.device
def rope_row(cos, sin, t, D, TMA):
    """The cos and sin rows of position t, (1, D / 2) each. The row index is clamped into
    the tables (proved in bounds when compiled, no device check); the engine's positions
    stay below the tables' length (its capacity)."""
    row = max(min(t, min(cos.shape[0], sin.shape[0]) - 1), 0)
    return (cos.load_tile((1, D // 2), (row, 0), allow_tma=TMA),
            sin.load_tile((1, D // 2), (row, 0), allow_tma=TMA))


@cutile.device
def load_cs(cs, D, TMA):
    """The step's cos and sin rows, (1, D / 2) each, from `embed_row_rope`'s row 0."""
    row = cs.load_tile((1, D), (0, 0), allow_tma=TMA)
    return row[:, :D // 2], row[:, D // 2:]


@cutile.entry
def embed_row_rope(h: Mut[Tensor[f32, ["BH"]]], cs: Mut[Tensor[f32, [1, "D"]]],
                   table: Tensor[bf16, [-1, -1]], tokens: Tensor[i32, [-1]],
                   pos: Tensor[i32, [-1]], cos: Tensor[f32, [-1, -1]],
                   sin: Tensor[f32, [-1, -1]], BH: Const[int], D: Const[int],
                   TMA: Const[bool]):
    p = pos.load_tile((1,), (0,), allow_tma=TMA)
    tok = gather(tokens, p)                                           # [1]
    c, sn = rope_row(cos, sin, p.item(), D, TMA)
    cols = block_id(0) * BH + arange(BH, i32)
    h.store(gather(table, (tok[:, None], cols[None, :])).reshape((BH,)).astype(f32))
    cs.store(cat((c, sn), axis=1), allow_tma=TMA)

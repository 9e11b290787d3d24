"""The small decode kernels around the GEMVs: the token's embedding row into the residual
stream, and SwiGLU after the fused gate/up projection.

- `embed_row`: h = f32(embedding[tokens[pos]]), block j owning columns [j BH, (j+1) BH).
  The token and its row are read with `gather`, masked to the tensors' bounds: an id
  outside the vocabulary reads zeros instead of another row.
- `swiglu_finish`: block i adds the S partial-sum rows of the gate and up projections for
  columns [i BI, (i+1) BI) (gate in the first I columns of the fused buffer, up in the
  next I), scales both by the MLP norm's rsqrt(mean(h^2) + eps) and stores
  silu(g) * u = g / (1 + exp(-g)) * u in bf16, the input of the down projection.
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
    exp,
    f32,
    gather,
    i32,
    rsqrt,
    zeros,
)


@cutile.entry
def embed_row(h: Mut[Tensor[f32, ["BH"]]], table: Tensor[bf16, [-1, -1]],
              tokens: Tensor[i32, [-1]], pos: Tensor[i32, [-1]], BH: Const[int]):
    tok = gather(tokens, pos.load_tile((1,), (0,)))                   # [1]
    cols = block_id(0) * BH + arange(BH, i32)
    h.store(gather(table, (tok[:, None], cols[None, :])).reshape((BH,)).astype(f32))


@cutile.entry
def swiglu_finish(act: Mut[Tensor[bf16, ["BI"]]], part: Tensor[f32, [-1, -1]],
                  h: Tensor[f32, [-1]], eps: f32, BI: Const[int], HB: Const[int],
                  UP: Const[int]):
    i = block_id(0)
    hv = h.load_tile((HB,), (0,))
    inv = rsqrt((hv * hv).sum() / h.shape[0] + eps)
    g = zeros((1, BI), f32)
    u = zeros((1, BI), f32)
    for s in range(part.shape[0]):
        g = g + part.load_tile((1, BI), (s, i))
        u = u + part.load_tile((1, BI), (s, UP + i))               # UP = I // BI tiles on
    g = g * inv
    act.store((g / (1.0 + exp(-g)) * (u * inv)).reshape((BI,)).astype(bf16))

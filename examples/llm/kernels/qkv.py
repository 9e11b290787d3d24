"""After the QKV projection: the attention norm's scale, Qwen3's per-head RMSNorm of q and
k, rotary position embedding, and the new key and value into the cache.

RoPE is Hugging Face's rotate-half form: with x = [x1, x2] split at head_dim / 2 and the
angles t * theta^(-2i / head_dim) of position t,
    rope(x) = [x1 cos - x2 sin, x2 cos + x1 sin],
cos and sin read from f32 tables [positions, head_dim / 2] made once on the host.

- `qkv_finish` (decode, one token at position `pos`): block h owns key/value head h. It adds
  the S partial-sum rows of the fused projection (one tile load per part) for its G query
  heads, its key head and its value head, scales them by rsqrt(mean(h^2) + eps) (the
  attention norm, whose weight the GEMV already applied), normalizes and rotates q and k,
  writes q (f32) and stores k and v (bf16) at row `pos` of its head of the caches. Each
  cache is partitioned one head per block ([1, max_seq, D] tiles), and the row is a
  sub-tile of the block's own tile: the store is proved race-free; that `pos` is inside
  the cache is checked on the device.
- `head_norm` and `rope` are shared with the prefill QKV GEMM's epilogue
  (`kernels/prefill.py`).
"""

from __future__ import annotations

import cutile
from cutile.core import Const, Mut, Tensor, bf16, block_id, cat, f32, i32, rsqrt


@cutile.device
def head_norm(x, w, eps, D):
    """RMSNorm of every row of x [R, D] (one head per row) with weight w [D] (bf16)."""
    inv = rsqrt((x * x).sum(axis=1, keepdims=True) / D + eps)
    return x * inv * w.astype(f32)[None, :]


@cutile.device
def rope(x, c, s, HD):
    """Rotate-half RoPE of x [R, 2 HD] with cos/sin c, s [R or 1, HD]."""
    x1 = x[:, :HD]
    x2 = x[:, HD:]
    return cat((x1 * c - x2 * s, x2 * c + x1 * s), axis=1)


@cutile.entry
def qkv_finish(q: Mut[Tensor[f32, ["G", "D"]]], kc: Mut[Tensor[bf16, [1, "SP", "D"]]],
               vc: Mut[Tensor[bf16, [1, "SP", "D"]]], part: Tensor[f32, [-1, -1]],
               h: Tensor[f32, [-1]], qnw: Tensor[bf16, [-1]], knw: Tensor[bf16, [-1]],
               cos: Tensor[f32, [-1, -1]], sin: Tensor[f32, [-1, -1]], pos: Tensor[i32, [-1]],
               eps: f32, G: Const[int], D: Const[int], SP: Const[int], HB: Const[int],
               NH: Const[int], NKV: Const[int], SB: Const[int]):
    kvh = block_id(0)
    hv = h.load_tile((HB,), (0,))
    inv = rsqrt((hv * hv).sum() / h.shape[0] + eps)
    # The S partial-sum rows as one (SB, *) tile each (SB: S rounded up to a power of two,
    # the rows past S read as zeros): three loads in flight at once, not 3 S loads in a loop
    # that waits on each (the loop was most of this kernel's time past the launch).
    qs = part.load_tile((SB, G * D), (0, kvh)).sum(axis=0, keepdims=True)
    ks = part.load_tile((SB, D), (0, NH + kvh)).sum(axis=0, keepdims=True)
    vs = part.load_tile((SB, D), (0, NH + NKV + kvh)).sum(axis=0, keepdims=True)
    t = pos.load_tile((1,), (0,)).item()
    c = cos.load_tile((1, D // 2), (t, 0))
    sn = sin.load_tile((1, D // 2), (t, 0))
    qh = head_norm(qs.reshape((G, D)) * inv, qnw.load_tile((D,), (0,)), eps, D)
    q.store(rope(qh, c, sn, D // 2))
    kh = head_norm(ks * inv, knw.load_tile((D,), (0,)), eps, D)
    krow = kc.partition_mut((1, 1, D))
    krow.store(rope(kh, c, sn, D // 2).astype(bf16).reshape((1, 1, D)), (0, t, 0))
    vrow = vc.partition_mut((1, 1, D))
    vrow.store((vs * inv).astype(bf16).reshape((1, 1, D)), (0, t, 0))

"""Flash attention, forward: softmax(Q K^T / sqrt(d)) V for every (batch, head), with an
optional causal mask, in one pass over K and V with a running max and sum (online softmax).

Q, K and V are (B*H, S, D) on the host; block (m, bh) owns the output rows
[m*BM, (m+1)*BM) of head bh and walks the key tiles (`make_attention` says why the query
tiles run along the grid's x axis). The scores are scaled into base 2
(`exp2` with `flush_to_zero`, the fast path) and the last division is approximate
(`truediv(..., rounding="approx")`): the math modes attention kernels use. Checked against
a float64 reference.

    python examples/attention.py
"""

import math

import ml_dtypes
import numpy as np

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    arange,
    bf16,
    block_id,
    cdiv,
    exp2,
    f32,
    fma,
    full,
    maximum,
    mma,
    truediv,
    where,
    zeros,
)

LOG2E = 1.4426950408889634


@cutile.device
def online_softmax_step(s, qk_scale, vs, m_i, l_i, acc):
    """One key tile of the online softmax: rescale what was summed so far to the new row
    maximum, add this tile's exponentials (base 2, subnormals flushed) and its values.
    `s` is unscaled: the scale is applied to the row maxima (a column, not the tile) and
    fused into the exponent's argument (one FMA per score instead of a multiply and a
    subtract)."""
    m_new = maximum(m_i, s.max(axis=1, keepdims=True) * qk_scale)
    alpha = exp2(m_i - m_new, flush_to_zero=True)
    p = exp2(fma(s, qk_scale, -m_new), flush_to_zero=True)
    return m_new, l_i * alpha + p.sum(axis=1, keepdims=True), mma(p.astype(bf16), vs, acc * alpha)


# A row's maximum may grow by up to 2^RESCALE_THRESHOLD (base 2) before the lazy step
# rescales: the stale maximum keeps every exponential at most 2^8, which bf16 and f32 hold
# exactly as well as values below 1 (the final division by the sum cancels the offset).
RESCALE_THRESHOLD = 8.0


@cutile.device
def lazy_softmax_step(s, qk_scale, vs, m_i, l_i, acc):
    """`online_softmax_step` that rescales the sum and the accumulator only when some row's
    maximum grew by more than 2^RESCALE_THRESHOLD (FA4's lazy rescale): most key tiles past
    the first few skip the multiply of the (BM, D) accumulator. The test is one reduction
    of the block's rows to a scalar, so every thread takes the same branch."""
    m_tile = s.max(axis=1, keepdims=True) * qk_scale
    if (m_tile - m_i).max() > RESCALE_THRESHOLD:
        m_new = maximum(m_i, m_tile)
        alpha = exp2(m_i - m_new, flush_to_zero=True)
        acc = acc * alpha
        l_i = l_i * alpha
        m_i = m_new
    p = exp2(fma(s, qk_scale, -m_i), flush_to_zero=True)
    return m_i, l_i + p.sum(axis=1, keepdims=True), mma(p.astype(bf16), vs, acc)


def make_attention(causal: bool, queries_on_x: bool = True, even_keys: bool = False, *,
                   pipelined: bool = False, lazy_rescale: bool = False,
                   select_mask: bool = False) -> cutile.EntryKernel:
    """The kernel for one masking mode (a module-level flag folds into the kernel: each
    mode is its own kernel, checked and compiled without the other's branch).

    `even_keys`: the caller promises the key count is a multiple of BN, so no key tile is
    ragged. Non-causal attention then has no masked loop at all (half the code for
    tileiras to compile), and causal attention masks only the diagonal. The promise is
    about results, not safety: every load stays bounds-checked, and a ragged last tile
    would only be left out of the softmax. `kernel_for` keeps it: it picks this variant
    only when the key count divides.

    `queries_on_x` (the default) puts one head's query tiles on the grid's x axis, which
    the GPU starts first and side by side: the blocks resident at once are mostly of one
    head and read the same K and V, so those stay in L2. The output is then given as the
    (S, B*H, D) view `o.permute(1, 0, 2)` of the (B*H, S, D) tensor, cut into
    (BM, 1, D) tiles.
    Without it, block (bh, m) owns the (1, BM, D) tile of the (B*H, S, D) tensor: the
    blocks resident at once span every head, and each head's K and V stream from memory
    for every few query tiles.

    Candidates, off by default (benchmarks/attention.py times them against the default):
    `pipelined` issues the scores of key tile j+1 (Q K_{j+1}^T) before the softmax of tile
    j in the unmasked loop, so that tileiras may keep that MMA in flight during the
    softmax (FA3's intra-warpgroup overlap); `lazy_rescale` takes `lazy_softmax_step`;
    `select_mask` masks a masked tile's scores with a select (`where(keep, s, -inf)`), as
    this kernel did before the default, an added tile of 0 and -inf: with the select,
    tileiras kept one predicate per score live across the scores' MMA (d = 64 causal,
    64x64 at occupancy 4: 13 P2R and a spill in the masked loop), and the H200 ran that
    shape 6-9% slower (benchmarks/RESULTS.md, seventh session)."""

    out_tile = ["BM", 1, "D"] if queries_on_x else [1, "BM", "D"]
    step = lazy_softmax_step if lazy_rescale else online_softmax_step

    @cutile.entry
    def attention(o: Mut[Tensor[bf16, out_tile]], q: Tensor[bf16, [-1, -1, "D"]],
                  k: Tensor[bf16, [-1, -1, "D"]], v: Tensor[bf16, [-1, -1, "D"]], scale: f32,
                  BM: Const[int], BN: Const[int], D: Const[int]):
        if queries_on_x:
            m = block_id(0)
            bh = block_id(1)
        else:
            bh = block_id(0)
            m = block_id(1)
        qs = q.load_tile((1, BM, D), (bh, m, 0), latency=2).reshape((BM, D))
        qk_scale = scale * LOG2E
        m_i = full((BM, 1), -math.inf, f32)
        l_i = zeros((BM, 1), f32)
        acc = zeros((BM, D), f32)
        rows = m * BM + arange(BM)[:, None]
        n_keys = k.shape[1]
        # Key tiles wholly inside the sequence (and, causal, wholly at or before this block's
        # first row) need no mask; the rest (a ragged last tile, the diagonal tiles) do.
        clear = n_keys // BN
        stop = cdiv(n_keys, BN)
        if causal:
            # key tile j is wholly below the diagonal when its last key precedes this
            # block's first row, (j + 1) * BN <= m * BM; tiles past its last row are skipped
            clear = min(clear, (m * BM) // BN)
            stop = min(stop, cdiv((m + 1) * BM, BN))
        if pipelined:
            # S_0 before the loop; each round issues S_{j+1} = Q K_{j+1}^T, then the softmax
            # and P V of tile j; the last tile's step is a one-round loop, whose index the
            # checker bounds (`clear - 1` alone would need a device check when causal)
            if clear > 0:
                ks = k.load_tile((1, BN, D), (bh, 0, 0), latency=2).reshape((BN, D))
                s = mma(qs, ks.transpose(), zeros((BM, BN), f32))
                for j in range(1, clear):
                    ks = k.load_tile((1, BN, D), (bh, j, 0), latency=2).reshape((BN, D))
                    s_next = mma(qs, ks.transpose(), zeros((BM, BN), f32))
                    vs = v.load_tile((1, BN, D), (bh, j - 1, 0), latency=4).reshape((BN, D))
                    m_i, l_i, acc = step(s, qk_scale, vs, m_i, l_i, acc)
                    s = s_next
                for last in range(max(clear - 1, 0), clear):
                    vs = v.load_tile((1, BN, D), (bh, last, 0), latency=4).reshape((BN, D))
                    m_i, l_i, acc = step(s, qk_scale, vs, m_i, l_i, acc)
        else:
            for j in range(clear):
                ks = k.load_tile((1, BN, D), (bh, j, 0), latency=2).reshape((BN, D))
                s = mma(qs, ks.transpose(), zeros((BM, BN), f32))
                vs = v.load_tile((1, BN, D), (bh, j, 0), latency=4).reshape((BN, D))
                m_i, l_i, acc = step(s, qk_scale, vs, m_i, l_i, acc)
        if causal or not even_keys:
            for j in range(clear, stop):
                ks = k.load_tile((1, BN, D), (bh, j, 0), latency=2).reshape((BN, D))
                s = mma(qs, ks.transpose(), zeros((BM, BN), f32))
                cols = j * BN + arange(BN)[None, :]
                if even_keys:
                    keep = cols <= rows
                elif causal:
                    keep = (cols < n_keys) & (cols <= rows)
                else:
                    keep = cols < n_keys
                if select_mask:
                    s = where(keep, s, -math.inf)
                else:   # a float tile added: no predicate held across the MMA
                    s = s + where(keep, 0.0, -math.inf)
                vs = v.load_tile((1, BN, D), (bh, j, 0), latency=4).reshape((BN, D))
                m_i, l_i, acc = step(s, qk_scale, vs, m_i, l_i, acc)
        out = truediv(acc, l_i, rounding="approx", flush_to_zero=True)
        o.store(out.astype(bf16).reshape(o.tile_shape))

    return attention


attention = make_attention(False)
attention_causal = make_attention(True)
attention_even = make_attention(False, even_keys=True)
attention_causal_even = make_attention(True, even_keys=True)


def kernel_for(causal: bool, seq: int, bn: int) -> cutile.EntryKernel:
    """The example's kernel for this mode and key count: the `even_keys` variant only when
    no key tile is ragged."""
    if seq % bn == 0:
        return attention_causal_even if causal else attention_even
    return attention_causal if causal else attention


def output(bh: int, seq: int, d: int, bm: int, queries_on_x: bool = True) -> api.Partition:
    """The (bh, seq, d) output, NaN-filled (an unwritten element shows), cut for the
    kernel: (bm, 1, d) tiles of its (seq, bh, d) view, or (1, bm, d) tiles of itself."""
    if queries_on_x:  # the view is the storage's only live handle: partition takes it
        return api.full([bh, seq, d], np.nan, bf16).permute(1, 0, 2).partition([bm, 1, d])
    return api.full([bh, seq, d], np.nan, bf16).partition([1, bm, d])


def result(o: api.Partition, queries_on_x: bool = True) -> api.Tensor:
    """The (bh, seq, d) tensor back from the kernel's output partition."""
    t = o.unpartition()
    return t.permute(1, 0, 2) if queries_on_x else t


def reference(qs: np.ndarray, ks: np.ndarray, vs: np.ndarray, causal: bool) -> np.ndarray:
    q, k, v = (a.astype(np.float64) for a in (qs, ks, vs))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((s.shape[1], n), bool)), s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def run(bh: int, seq: int, d: int, causal: bool, tiles: tuple[int, int] = (64, 64),
        kernel: cutile.EntryKernel | None = None, queries_on_x: bool = True) -> float:
    rng = np.random.default_rng(3)
    qs, ks, vs = (rng.standard_normal((bh, seq, d)).astype(ml_dtypes.bfloat16)
                  for _ in range(3))
    bm, bn = tiles
    kernel = kernel or kernel_for(causal, seq, bn)
    o, *_ = kernel(output(bh, seq, d, bm, queries_on_x), api.from_numpy(qs),
                   api.from_numpy(ks), api.from_numpy(vs), 1.0 / math.sqrt(d), BN=bn).sync()
    out = result(o, queries_on_x).to_numpy().astype(np.float64)
    ref = reference(qs, ks, vs, causal)
    assert np.isfinite(out).all(), "unwritten (NaN) elements"
    err = float(np.abs(out - ref).max())
    assert err < 3e-2, f"max abs error {err:.3g}"
    return err


def main(bh: int = 4, seqs: tuple[int, ...] = (200, 256), d: int = 64) -> None:
    for seq in seqs:  # a ragged last key tile, and none (the even_keys kernels)
        for causal in (False, True):
            err = run(bh, seq, d, causal)
            print(f"attention: {bh} heads x {seq} tokens x d={d}, causal={causal}: "
                  f"max abs error {err:.2e}")


if __name__ == "__main__":
    main()

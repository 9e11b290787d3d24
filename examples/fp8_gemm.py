"""An FP8 GEMM with per-row scales: one kernel quantizes each row of A and of B^T to
f8e4m3fn (scale = the row's largest magnitude / 448, the format's largest finite value), a
second multiplies the f8 tiles on the tensor cores (f8 x f8 -> f32) and applies the scales
in the epilogue. sm_90 has no block-scaled `mma` (Tile IR's `mmaf_scaled` needs sm_100), so
the scales multiply the f32 accumulator, as a per-row/per-column scaled GEMM does anyway.

Every element is checked against a float64 product of the dequantized inputs, and the
quantization error against the unquantized product.

    python examples/fp8_gemm.py
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    bf16,
    block_id,
    f8e4m3fn,
    f32,
    load_tile_like,
    maximum,
    mma,
    num_tiles,
    zeros,
)

E4M3_MAX = 448.0


@cutile.entry
def quantize_rows(q: Mut[Tensor[f8e4m3fn, [1, "K"]]], scale: Mut[Tensor[f32, [1, 1]]],
                  x: Tensor[f32, [-1, -1]], K: Const[int]):
    row = load_tile_like(x, q)                       # one row; past its end: zeros
    s = maximum(abs(row).max(axis=1, keepdims=True), 1e-30) / E4M3_MAX
    q.store(row / s)                                 # f32 -> f8e4m3fn: nearest even, saturating
    scale.store(s)


@cutile.entry
def fp8_gemm(z: Mut[Tensor[f32, ["BM", "BN"]]], a: Tensor[f8e4m3fn, [-1, -1]],
             bt: Tensor[f8e4m3fn, [-1, -1]], sa: Tensor[f32, [-1]], sb: Tensor[f32, [-1]],
             BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        x = a.load_tile((BM, BK), (block_id(0), k))
        w = bt.load_tile((BN, BK), (block_id(1), k))  # B stored K-major, as fp8 weights are
        acc = mma(x, w.T, acc)                        # f8 x f8 -> f32 on the tensor cores
    # the scales as vectors: a (BM,) tile of f32 is one TMA copy, a (BM, 1) one is not (its
    # rows are 4 bytes, below TMA's 16)
    rows = sa.load_tile((BM,), (block_id(0),)).reshape((BM, 1))
    cols = sb.load_tile((BN,), (block_id(1),)).reshape((1, BN))
    z.store(acc * rows * cols)


ACCUMULATE = ("f32", "fast", "promote")


@cutile.device
def scaled(acc, sa, sb, idx, BM, BN):
    """Output tile idx of the persistent kernels: the f32 sum times its rows' and columns'
    scales, in bf16."""
    rows = sa.load_tile((BM,), (idx[0],)).reshape((BM, 1))
    cols = sb.load_tile((BN,), (idx[1],)).reshape((1, BN))
    return (acc * rows * cols).astype(bf16)


def make_fp8_gemm_persistent(latency: int | None = None, accumulate: str = "f32",
                             promote: int = 2) -> cutile.EntryKernel:
    """The same product with a bf16 result (what `torch._scaled_mm` returns) on a
    persistent grid: each block walks output tiles in groups of G tile rows, so the tiles
    running at once share rows of A and columns of B in L2. `latency` is the A and B loads'
    hint: how many k-steps tileiras buffers ahead of the MMAs follows from it (None: its
    own choice, five stages for 128x128x128 tiles on sm_90 but two for 2-CTA tiles).

    `accumulate` says where the K sum is kept. Hopper's f8 MMA adds with fewer bits than f32:
    - "f32": each k-step's product goes into a zeroed tile that is added to the f32
      accumulator (tileiras does this for an f8 `mma`; the MMAs wait for the adds);
    - "fast": the whole sum stays on the tensor cores (`mma(..., fast_acc=True)`, as
      `torch._scaled_mm(use_fast_accum=True)`): no adds, the next k-step's MMAs overlap;
    - "promote": `promote` k-steps on the tensor cores, then one f32 add (a two-level
      accumulator: the adds and their wait 1/promote as often as "f32"); K must be a
      whole number of groups of `promote` k-tiles (the launch refuses others, CT6200)."""
    if accumulate not in ACCUMULATE:
        raise ValueError(f"accumulate is one of {ACCUMULATE}, not {accumulate!r}")
    if accumulate == "promote":
        return _persistent_promote(latency, promote)
    fast = accumulate == "fast"

    @cutile.entry
    def fp8_gemm_persistent(z: Mut[Tensor[bf16, ["BM", "BN"]]], a: Tensor[f8e4m3fn, [-1, -1]],
                            bt: Tensor[f8e4m3fn, [-1, -1]], sa: Tensor[f32, [-1]],
                            sb: Tensor[f32, [-1]], BM: Const[int], BN: Const[int],
                            BK: Const[int], G: Const[int]):
        for idx in z.iter_indices(group=G):
            acc = zeros((BM, BN), f32)
            for k in range(num_tiles(a, 1, (BM, BK))):
                x = a.load_tile((BM, BK), (idx[0], k), latency=latency)
                w = bt.load_tile((BN, BK), (idx[1], k), latency=latency)
                acc = mma(x, w.T, acc, fast_acc=fast)
            z.store(scaled(acc, sa, sb, idx, BM, BN), index=idx)

    return fp8_gemm_persistent


def _persistent_promote(latency: int | None, promote: int) -> cutile.EntryKernel:
    @cutile.entry
    def fp8_gemm_persistent(z: Mut[Tensor[bf16, ["BM", "BN"]]], a: Tensor[f8e4m3fn, [-1, -1]],
                            bt: Tensor[f8e4m3fn, [-1, -1]], sa: Tensor[f32, [-1]],
                            sb: Tensor[f32, [-1]], BM: Const[int], BN: Const[int],
                            BK: Const[int], G: Const[int]):
        for idx in z.iter_indices(group=G):
            acc = zeros((BM, BN), f32)
            for kk in range(num_tiles(a, 1, (BM, BK * promote))):
                part = zeros((BM, BN), f32)
                for j in range(promote):
                    x = a.load_tile((BM, BK), (idx[0], kk * promote + j), latency=latency)
                    w = bt.load_tile((BN, BK), (idx[1], kk * promote + j), latency=latency)
                    part = mma(x, w.T, part, fast_acc=True)
                acc = acc + part
            z.store(scaled(acc, sa, sb, idx, BM, BN), index=idx)

    return fp8_gemm_persistent


fp8_gemm_persistent = make_fp8_gemm_persistent()


def quantize(x: np.ndarray) -> tuple[api.Tensor, api.Tensor]:
    m, k = x.shape
    tile = 1 << max(0, (k - 1).bit_length())         # the whole row in one tile
    q = api.zeros([m, k], f8e4m3fn).partition([1, tile])
    s = api.zeros([m, 1], f32).partition([1, 1])
    q, s, _ = quantize_rows(q, s, api.from_numpy(x)).sync()
    return q.unpartition(), s.unpartition().reshape([m])  # the scales as an (m,) vector


def main(m: int = 1024, n: int = 1024, k: int = 1024, bm: int = 128, bn: int = 128,
         bk: int = 64, blocks: int = 8) -> None:
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((m, k)) * rng.uniform(0.1, 10, (m, 1))).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    qa, sa = quantize(a)
    qb, sb = quantize(np.ascontiguousarray(b.T))
    z = api.zeros([m, n], f32).partition([bm, bn])
    z, qa, qb, sa, sb = fp8_gemm(z, qa, qb, sa, sb, BK=bk).sync()
    out = z.unpartition().to_numpy().astype(np.float64)
    da = qa.to_numpy().astype(np.float64) * sa.to_numpy()[:, None]
    db = (qb.to_numpy().astype(np.float64) * sb.to_numpy()[:, None]).T
    ref = da @ db
    err = np.abs(out - ref).max() / np.abs(ref).max()
    # Hopper's f8 tensor cores accumulate with fewer bits than f32 (the interpreter, exactly)
    assert err < 1e-2, f"max error {err:.3g} of the largest element"
    quant = np.abs(out - a.astype(np.float64) @ b).max() / np.abs(ref).max()
    assert quant < 0.1, f"quantization error {quant:.3g}"
    print(f"fp8_gemm: {m}x{n}x{k} f8e4m3fn x f8e4m3fn -> f32 with row scales: max error "
          f"{err:.1e} of the largest element ({quant:.1e} against the unquantized product)")
    zb = api.zeros([m, n], bf16).partition([bm, bn]).persistent(blocks)
    zb, *_ = fp8_gemm_persistent(zb, qa, qb, sa, sb, BK=bk, G=4).sync()
    out_b = zb.unpartition().to_numpy().astype(np.float64)
    err_b = np.abs(out_b - ref).max() / np.abs(ref).max()
    assert err_b < 2e-2, f"persistent bf16: max error {err_b:.3g} of the largest element"
    print(f"fp8_gemm_persistent: {blocks} blocks, bf16 result: max error {err_b:.1e}")


if __name__ == "__main__":
    main()

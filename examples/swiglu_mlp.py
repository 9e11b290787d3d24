"""A SwiGLU MLP, out = (silu(x @ Wg) * (x @ Wu)) @ Wd in bf16 with f32 accumulators, in two
kernels:

- `swiglu_up`: the fused gate and up projections. Block (i, j) owns the (BM, BF) tile of the
  hidden activation h; one loop over K loads the x tile once and multiplies it with the
  gate and the up weights into two accumulators, then h = silu(g) * u, with
  silu(g) = g / (1 + exp(-g)), is stored in bf16.
- `down_proj`: h @ Wd, a tiled GEMM.

x is (M, D), Wg and Wu (D, F), Wd (F, D); no size is a tile multiple. Every element of h and
of the output is checked against a float64 reference.

    python examples/swiglu_mlp.py
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, bf16, block_id, exp, f32, mma, num_tiles, zeros


@cutile.entry
def swiglu_up(h: Mut[Tensor[bf16, ["BM", "BF"]]], x: Tensor[bf16, [-1, -1]],
              wg: Tensor[bf16, [-1, -1]], wu: Tensor[bf16, [-1, -1]], BM: Const[int],
              BF: Const[int], BK: Const[int]):
    i, j = block_id(0), block_id(1)
    g = zeros((BM, BF), f32)
    u = zeros((BM, BF), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        xs = x.load_tile((BM, BK), (i, k))
        g = mma(xs, wg.load_tile((BK, BF), (k, j)), g)
        u = mma(xs, wu.load_tile((BK, BF), (k, j)), u)
    h.store((g / (1.0 + exp(-g)) * u).astype(bf16))


@cutile.entry
def down_proj(z: Mut[Tensor[bf16, ["BM", "BN"]]], h: Tensor[bf16, [-1, -1]],
              wd: Tensor[bf16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(h, 1, (BM, BK))):
        acc = mma(h.load_tile((BM, BK), (block_id(0), k)),
                  wd.load_tile((BK, BN), (k, block_id(1))), acc)
    z.store(acc.astype(bf16))


BF16_EPS = 2.0**-8  # bf16 keeps 8 significant bits: rounding is within half of 2^-7


def main(m: int = 200, d: int = 160, f: int = 300, tiles: tuple[int, int, int] = (64, 64, 32)
         ) -> None:
    rng = np.random.default_rng(25)
    bf = ml_dtypes.bfloat16
    xs = rng.standard_normal((m, d)).astype(bf)
    wg = (rng.standard_normal((d, f)) / np.sqrt(d)).astype(bf)
    wu = (rng.standard_normal((d, f)) / np.sqrt(d)).astype(bf)
    wd = (rng.standard_normal((f, d)) / np.sqrt(f)).astype(bf)
    bm, bn, bk = tiles
    h = api.full([m, f], np.nan, bf16).partition([bm, bn])
    h, *_ = swiglu_up(h, *(api.from_numpy(a) for a in (xs, wg, wu)), BK=bk).sync()
    h = h.unpartition()
    z = api.full([m, d], np.nan, bf16).partition([bm, bn])
    z, h, _ = down_proj(z, h, api.from_numpy(wd), BK=bk).sync()

    x64, g64, u64, d64 = (a.astype(np.float64) for a in (xs, wg, wu, wd))
    g, u = x64 @ g64, x64 @ u64
    h_ref = g / (1.0 + np.exp(-g)) * u
    h_out = h.to_numpy().astype(np.float64)
    assert np.isfinite(h_out).all(), "unwritten (NaN) elements of h"
    h_err = np.abs(h_out - h_ref) - BF16_EPS * np.abs(h_ref)
    assert h_err.max() < 1e-3, f"h: max error {h_err.max():.3g} past bf16 rounding"
    ref = h_ref @ d64
    out = z.unpartition().to_numpy().astype(np.float64)
    assert np.isfinite(out).all(), "unwritten (NaN) elements of the output"
    # h was rounded to bf16 before the down projection: each term may be off by that much
    bound = BF16_EPS * (np.abs(out) + 2 * np.abs(h_ref) @ np.abs(d64)) + 1e-3
    err = np.abs(out - ref)
    assert (err <= bound).all(), f"output: max error {(err - bound).max():.3g} past the bound"
    print(f"swiglu_mlp: {m}x{d} -> {f} -> {d} in tiles of {bm}x{bn}x{bk}: max abs error "
          f"{err.max():.2e} (h {np.abs(h_out - h_ref).max():.2e})")


if __name__ == "__main__":
    main()
